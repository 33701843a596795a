//! What `diagnose`, `optimize`, `predict` and `replay` share on the command line: the flags
//! naming the struct, its evidence, the code behind it and the machine, turned into calls of
//! the library's [`subject`] and [`model`].

use anyhow::Result;

use std::path::PathBuf;

use lineup::analysis::bind::Decoded;
use lineup::analysis::cost::Allocator;
use lineup::analysis::machine::MachineModel;
use lineup::analysis::model;
use lineup::analysis::subject;
use lineup::profile::{Access, Profile};
use lineup::readers::typing::Coverage;
use lineup::types::{TypeId, Types};

// The model, the evidence and their renderings live in the library; these names stay here
// for the commands that reach them through `subject::`.
pub use lineup::analysis::model::Model;
pub use lineup::analysis::subject::{Evidence, evidence_label};
pub use lineup::emit::binding::binding_text;
pub use lineup::emit::cost_table::cost_table;

/// What every command about one struct and its evidence takes: the struct, the evidence,
/// which report of it, where its line starts, and where the types come from.
#[derive(clap::Args, Clone, Debug)]
pub struct SubjectArgs {
    /// The struct the evidence is about
    #[arg(long = "type", value_name = "TYPE")]
    pub type_name: String,
    #[command(flatten)]
    pub evidence: super::evidence::EvidenceArgs,
    #[command(flatten)]
    pub pick: super::evidence::PickArgs,
    /// Struct offset at which the evidence's cache line starts, when lineup's inference
    /// (shown by `diagnose`) picks the wrong one
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub line_offset: Option<i64>,
    #[command(flatten)]
    pub source: super::source::SourceArgs,
}

/// The struct named `name`, or a one-line error with close names.
pub fn find_type(types: &Types<'_>, label: &str, name: &str) -> Result<TypeId> {
    subject::find_type(types, label, name).map_err(anyhow::Error::msg)
}

/// Binds raw lines of `profile` to struct `id` and returns its accesses ([`subject::gather`]),
/// with the binding in words in [`Evidence::binding`]: which line went where and why, which
/// row to which member. `earlier`: the reports before this one in its text
/// ([`super::evidence::EvidenceArgs::earlier`]), whose bindings carry over.
pub fn gather(
    profile: &mut Profile,
    (types, source): (&Types<'_>, &str),
    id: TypeId,
    type_name: &str,
    size: u64,
    (line_offset, earlier): (Option<i64>, Vec<Profile>),
) -> Result<Evidence> {
    let mut ev = subject::gather(
        profile,
        (types, source),
        id,
        type_name,
        size,
        (line_offset, earlier),
    )
    .map_err(anyhow::Error::msg)?;
    ev.binding = binding_text(profile, types, id, type_name, &ev);
    Ok(ev)
}

/// Where the code behind the evidence's rows is, to bind exactly.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CodeArgs {
    /// The code the rows name: a vmlinux or a .ko with symbols, a program, an object file,
    /// or /proc/kcore (with --kallsyms, as root): each row's instruction is decoded and its
    /// displacement binds the line exactly (x86-64 or AArch64)
    #[arg(long, value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// Runtime kernel symbols (/proc/kallsyms, read as root) to place raw code addresses
    /// of a kernel with KASLR in --vmlinux
    #[arg(long, value_name = "FILE", requires = "vmlinux")]
    pub kallsyms: Option<PathBuf>,
}

impl CodeArgs {
    /// Decodes the instruction of every row that names its code, when an image is given, and
    /// says what share of the rows it typed.
    pub fn decode(&self, profile: &Profile) -> Result<(Decoded, Option<Coverage>)> {
        let Some(path) = &self.vmlinux else {
            return Ok((Decoded::new(), None));
        };
        let image = lineup::readers::code::CodeSource::open(path, self.kallsyms.is_some())?;
        let kallsyms = match &self.kallsyms {
            Some(k) => {
                let text = lineup::input::read_text_lossy(k)?;
                Some(lineup::readers::code::Kallsyms::parse(k, &text)?)
            }
            None => None,
        };
        Ok(lineup::readers::code::decode_and_type_rows(
            &image,
            kallsyms.as_ref(),
            profile,
        ))
    }
}

/// The machine to model and the target line size.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArgs {
    /// Machine model: `host` (this machine: its `lineup calibrate` figures when cached, else
    /// its topology with generic latencies), a preset: icelake-2s, spr-1s, xeon-2s-480,
    /// nehalem-ex-8s, power10-96 (data/machines.toml), or a machine file (`lineup calibrate -o`)
    #[arg(long, default_value = "host", value_name = "NAME")]
    pub machine: String,
    /// Target cache-line size in bytes (default: the machine's)
    #[arg(long, value_name = "BYTES")]
    pub cacheline_size: Option<u64>,
    /// Utilization of the busiest line of the current layout, 0 to 0.95 (default: from the
    /// evidence's measured HITM latency, else 0.5); 0 turns queueing off
    #[arg(long, value_name = "U")]
    pub utilization: Option<f64>,
    /// How instances get their memory, which prices a layout's growth (docs/cost-model.md,
    /// size): lines (a global, an embedded member, an array element: whole cache lines),
    /// kmalloc (the kernel's slab size classes) or malloc (glibc's 16-byte chunks)
    #[arg(long, default_value = "lines", value_name = "KIND", value_parser = ["lines", "kmalloc", "malloc"])]
    pub allocator: String,
}

impl ModelArgs {
    /// The machine `--machine` names ([`model::machine_named`]).
    pub fn machine(&self) -> Result<MachineModel> {
        model::machine_named(&self.machine).map_err(anyhow::Error::msg)
    }

    /// The cost model of struct `id` on the machine and lines these flags name.
    pub fn build(
        &self,
        types: &Types<'_>,
        id: TypeId,
        profile: &Profile,
        accesses: &[Access],
    ) -> Result<Model> {
        let machine = self.machine()?;
        Model::build(
            types,
            id,
            profile,
            accesses,
            machine,
            self.cacheline_size,
            self.utilization,
        )
        .map(|mut m| {
            m.allocator = Allocator::parse(&self.allocator).unwrap_or_default();
            m
        })
        .map_err(anyhow::Error::msg)
    }
}
