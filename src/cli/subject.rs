//! What `diagnose`, `optimize` and `predict` share: find the struct, bind the evidence to it,
//! and collect its accesses with struct-relative offsets.

use anyhow::{Result, bail};

use std::path::PathBuf;

use lineup::analysis::bind::{self, BindInput, Decoded, Unbound};
use lineup::analysis::cost;
use lineup::analysis::diagnose::{self, LineBinding};
use lineup::analysis::machine::{self, MachineModel};
use lineup::profile::{Access, Profile};
use lineup::types::{TypeId, Types};

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
    let found = types.find_composites(name);
    let Some(&id) = found.first() else {
        let close = lineup::record::similar_program_names(types, name, 5);
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!("; did you mean: {}?", close.join(", "))
        };
        bail!("{label}: no struct or union named '{name}'{hint}");
    };
    Ok(id)
}

pub struct Evidence {
    pub bindings: Vec<LineBinding>,
    /// Raw lines that fit nothing of the struct, and why.
    pub unbound: Vec<Unbound>,
    pub accesses: Vec<Access>,
    /// Fields the profile names that the struct lacks.
    pub missing: Vec<String>,
    /// The binding in words ([`binding_text`]), for the command to print once it succeeds.
    pub binding: String,
}

/// Binds raw lines of `profile` to struct `id` and returns its accesses; an error when the
/// profile holds none for it.
///
/// The same rule as `diagnose` for the types' side ([`bind::types_domain`]), and the binding
/// in words in [`Evidence::binding`]: which line went where and why, which row to which
/// member.
pub fn gather(
    profile: &mut Profile,
    (types, source): (&Types<'_>, &str),
    id: TypeId,
    type_name: &str,
    size: u64,
    line_offset: Option<i64>,
) -> Result<Evidence> {
    let input = BindInput {
        domain: bind::types_domain(types, source, profile),
        line_start: line_offset,
        ..Default::default()
    };
    let mut ev = gather_with(profile, types, id, type_name, size, &input)?;
    ev.binding = binding_text(profile, types, id, type_name, &ev);
    Ok(ev)
}

/// The binding in words: per raw line bound, the struct bytes it covers, how (exact,
/// inferred, as given) and the evidence; per row, the member it landed on; the lines left
/// unbound and why. Empty when the evidence was already in struct coordinates.
pub fn binding_text(
    profile: &Profile,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
    ev: &Evidence,
) -> String {
    use std::fmt::Write;
    let mut text = String::new();
    let cls = profile.cacheline_size.max(1);
    let members = lineup::layout::layout(types, id, cls)
        .map(|l| l.members)
        .unwrap_or_default();
    let member_at = |x: i64| {
        members
            .iter()
            .find(|m| m.offset as i64 <= x && x < (m.offset + m.size.max(1)) as i64)
            .map(|m| m.name.to_string())
            .unwrap_or_else(|| "a hole".into())
    };
    for b in &ev.bindings {
        let _ = writeln!(
            text,
            "binding: data line {:#x} is bytes {}..{} of struct {type_name} ({}: {})",
            b.address,
            b.line_start,
            b.line_start + cls as i64 - 1,
            b.binding.label(),
            b.reasons.join("; ")
        );
        let Some(line) = profile.lines.iter().find(|l| l.address == b.address) else {
            continue;
        };
        if let Some(summary) = bind::rows_summary(b) {
            let _ = writeln!(text, "  {summary}");
        }
        for (i, a) in line.accesses.iter().enumerate().take(12) {
            let Some(off) = a.offset else { continue };
            let x = b.line_start + off as i64;
            let evidence = b
                .rows
                .iter()
                .find(|r| r.row == i)
                .map(|r| format!(" ({}: {})", r.placed_by.label(), r.why))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "  row {} at line offset {off:#x} -> struct offset {x}: {}{evidence}",
                a.code
                    .as_ref()
                    .map(|c| c.display())
                    .unwrap_or_else(|| "?".into()),
                member_at(x)
            );
        }
        if line.accesses.len() > 12 {
            let _ = writeln!(text, "  and {} more rows", line.accesses.len() - 12);
        }
    }
    for u in &ev.unbound {
        let _ = writeln!(
            text,
            "binding: data line {:#x} left unbound: {}",
            u.address, u.reason
        );
    }
    text
}

/// [`gather`] with everything binding takes: the types' side, decoded instructions.
pub fn gather_with(
    profile: &mut Profile,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
    size: u64,
    input: &BindInput,
) -> Result<Evidence> {
    let outcome = bind::bind_type(profile, types, id, type_name, input);
    let (accesses, missing) = diagnose::accesses_for(profile, types, id, type_name);
    if accesses.iter().all(|a| a.offset.is_none()) {
        if !missing.is_empty() {
            bail!(
                "{}: the profile names fields struct {type_name} does not have: {}",
                evidence_label(profile),
                missing.join(", ")
            );
        }
        if !outcome.unbound.is_empty() {
            let why: Vec<String> = outcome
                .unbound
                .iter()
                .take(3)
                .map(|u| format!("line {:#x}: {}", u.address, u.reason))
                .collect();
            bail!(
                "{}: no line of the report fits struct {type_name} ({size} bytes): {}{}",
                evidence_label(profile),
                why.join("; "),
                if outcome.unbound.len() > 3 {
                    format!("; and {} more", outcome.unbound.len() - 3)
                } else {
                    String::new()
                }
            );
        }
        let about: Vec<&str> = profile.types.iter().map(|t| t.type_name.as_str()).collect();
        let hint = if about.is_empty() {
            String::new()
        } else {
            format!("; it describes {}", about.join(", "))
        };
        // A recording whose memory budget counted every access to the type per code site.
        if let Some(t) = profile.type_profile(type_name)
            && !t.degraded.is_empty()
        {
            let n: f64 = t.degraded.iter().map(|d| d.loads + d.stores + d.rmw).sum();
            bail!(
                "{}: every access to struct {type_name} ({n:.0}, over {} range(s): {}) was counted per code site by the memory budget (degraded: the profile's `degraded`), none per place; record again with a larger --memory for its members and lines",
                evidence_label(profile),
                t.degraded.len(),
                t.degraded
                    .iter()
                    .take(2)
                    .map(|d| format!(
                        "bytes {}..{} of {}, {} line(s)",
                        d.start,
                        d.end.saturating_sub(1),
                        d.object,
                        d.lines
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        bail!(
            "{}: the profile holds no access to struct {type_name} ({size} bytes){hint}",
            evidence_label(profile),
        );
    }
    Ok(Evidence {
        bindings: outcome.bound,
        unbound: outcome.unbound,
        accesses,
        missing,
        binding: String::new(),
    })
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
    /// Decodes the instruction of every row that names its code, when an image is given.
    pub fn decode(&self, profile: &Profile) -> Result<Decoded> {
        let Some(path) = &self.vmlinux else {
            return Ok(Decoded::new());
        };
        let image = lineup::readers::code::CodeSource::open(path, self.kallsyms.is_some())?;
        let kallsyms = match &self.kallsyms {
            Some(k) => {
                let text = lineup::input::read_text_lossy(k)?;
                Some(lineup::readers::code::Kallsyms::parse(k, &text)?)
            }
            None => None,
        };
        Ok(lineup::readers::code::decode_rows(
            &image,
            kallsyms.as_ref(),
            profile,
        ))
    }
}

/// The evidence file as given on the command line (not the one a saved profile was once
/// imported from).
pub fn evidence_label(p: &Profile) -> String {
    let name = p
        .provenance
        .loaded_from
        .clone()
        .or_else(|| p.provenance.input.clone())
        .unwrap_or_else(|| p.provenance.tool.clone());
    match p.report_place() {
        Some(place) => format!("{name} ({place})"),
        None => name,
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
}

/// Everything the cost model needs about one struct and one profile.
pub struct Model {
    pub layout: lineup::layout::Layout,
    pub units: Vec<cost::Unit>,
    pub streams: Vec<cost::Stream>,
    pub current: cost::Placement,
    pub machine: MachineModel,
    pub cls: u64,
    pub queueing: cost::Queueing,
    /// Where the utilization came from, for the report.
    pub utilization_source: String,
}

impl ModelArgs {
    pub fn machine(&self) -> Result<MachineModel> {
        if self.machine == "host" {
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            // The calibration comes from lineup's cache when there is one that only this
            // user can have written; with none, from a path under /dev/null, which holds
            // nothing (generic latencies).
            let cache = lineup::record::cc::existing_cache_dir().map_err(|e| anyhow::anyhow!(e))?;
            return Ok(lineup::readers::host::host_machine(
                std::path::Path::new("/sys"),
                &cpuinfo,
                cache
                    .as_deref()
                    .unwrap_or(std::path::Path::new("/dev/null")),
            ));
        }
        if let Some(m) = machine::preset(&self.machine) {
            return Ok(m);
        }
        // A machine file (`lineup calibrate -o FILE`, or one written by hand).
        let path = std::path::Path::new(&self.machine);
        if path.is_file() || self.machine.contains('/') || self.machine.ends_with(".toml") {
            let text = lineup::input::read_text_lossy(path)
                .map_err(|e| anyhow::anyhow!("--machine {e}"))?;
            let (mut m, _) = machine::parse_machine_file(&text)
                .map_err(|e| anyhow::anyhow!("--machine {}: {e}", self.machine))?;
            m.description = format!("{} (from {})", m.description, self.machine);
            return Ok(m);
        }
        let names: Vec<String> = machine::presets().into_iter().map(|m| m.name).collect();
        bail!(
            "--machine {}: no such preset or file; known: host, {}, or a machine file (lineup calibrate -o FILE)",
            self.machine,
            names.join(", ")
        )
    }

    pub fn build(
        &self,
        types: &Types<'_>,
        id: TypeId,
        profile: &Profile,
        accesses: &[Access],
    ) -> Result<Model> {
        let machine = self.machine()?;
        let cls = self.cacheline_size.unwrap_or(machine.cacheline_size);
        if !cls.is_power_of_two() || !(16..=4096).contains(&cls) {
            bail!("--cacheline-size {cls}: not a power of two between 16 and 4096");
        }
        let layout = lineup::layout::layout(types, id, cls).expect("a defined struct has a layout");
        let units = cost::units(types, &layout);
        let cpus = profile
            .provenance
            .machine
            .cpus
            .unwrap_or(machine.cpus)
            .min(machine.cpus)
            .max(1);
        let streams = cost::streams(&units, &layout, accesses, cpus);
        let current = cost::current_placement(&layout, &units);
        let reference = cost::busiest_line(&streams, &current, cls, &machine);
        let (utilization, utilization_source) = match self.utilization {
            Some(u) if (0.0..=cost::MAX_UTILIZATION).contains(&u) => (u, "given".to_string()),
            Some(u) => bail!(
                "--utilization {u}: must be between 0 and {}",
                cost::MAX_UTILIZATION
            ),
            None => match measured_hitm_latency(accesses).filter(|_| {
                // The evidence's latencies describe the evidence's machine: use them only
                // for a machine at least as wide as the evidence shows.
                let seen = accesses
                    .iter()
                    .filter_map(|a| a.cpus.as_ref().and_then(|c| c.distinct()))
                    .max()
                    .unwrap_or(0);
                profile.provenance.machine.cpus.unwrap_or(seen).max(seen) <= machine.cpus
            }) {
                Some(measured) => {
                    let widest = streams.iter().map(|s| s.cpus).max().unwrap_or(1);
                    let nominal = machine.transfer_cycles(widest);
                    let u = cost::Queueing::utilization_from_latency(measured, nominal);
                    (
                        u,
                        format!(
                            "measured HITM latency {measured:.0} cycles vs {nominal:.0} unloaded"
                        ),
                    )
                }
                None => (
                    cost::DEFAULT_UTILIZATION,
                    "assumed (no latency measured on this machine in the evidence)".to_string(),
                ),
            },
        };
        Ok(Model {
            layout,
            units,
            streams,
            current,
            machine,
            cls,
            queueing: cost::Queueing {
                reference,
                utilization,
            },
            utilization_source,
        })
    }
}

impl Model {
    pub fn evaluate(&self, p: &cost::Placement) -> cost::Cost {
        cost::evaluate(
            &self.units,
            &self.streams,
            p,
            self.cls,
            &self.machine,
            &self.queueing,
        )
    }
}

/// Mean cycles of HITM loads, weighted by their counts, when the evidence measured them.
fn measured_hitm_latency(accesses: &[Access]) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0.0);
    for a in accesses {
        let Some(l) = &a.latency else { continue };
        for (mean, count) in [
            (l.mean_lcl_hitm, a.counts.lcl_hitm),
            (l.mean_rmt_hitm, a.counts.rmt_hitm),
        ] {
            if let Some(m) = mean
                && count > 0.0
            {
                sum += m * count;
                n += count;
            }
        }
    }
    (n > 0.0).then(|| sum / n)
}

/// The comparison table `optimize` and `predict` print: one row per layout.
pub fn cost_table(rows: &[(String, &cost::Cost)]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let base = rows.first().map(|r| r.1.total_cycles()).unwrap_or(0.0);
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(6).max(6);
    let _ = writeln!(
        s,
        "{:<width$} {:>6} {:>5} {:>12} {:>12} {:>14} {:>14} {:>12} {:>14} {:>8}",
        "layout",
        "size",
        "lines",
        "false xfers",
        "true xfers",
        "false cycles",
        "true cycles",
        "locality",
        "total cycles",
        "vs current"
    );
    for (name, c) in rows {
        let total = c.total_cycles();
        let vs = if base > 0.0 {
            format!("{:+.1}%", (total - base) / base * 100.0)
        } else {
            "-".to_string()
        };
        let _ = writeln!(
            s,
            "{:<width$} {:>6} {:>5} {:>12.1} {:>12.1} {:>14.0} {:>14.0} {:>12.0} {:>14.0} {:>8}",
            name,
            c.size,
            c.cachelines,
            c.false_transfers,
            c.true_transfers,
            c.false_cycles,
            c.true_cycles,
            c.locality_cycles,
            total,
            vs
        );
    }
    s
}
