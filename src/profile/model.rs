//! The normalized access profile: the contract between evidence (perf c2c, perf script memory
//! samples, hand-written sketches, lineup's own recording) and analysis.
//!
//! A profile holds accesses in one of two coordinate systems:
//! - [`LineProfile`]: a raw cache line by address, offsets within the line, as c2c and memory
//!   samples give them before anyone knows which struct the line belongs to;
//! - [`TypeProfile`]: a named type, accesses by field name and/or byte offset within the type,
//!   as a sketch gives them or as attribution produces them.
//!
//! Each [`Access`] carries counts (loads, stores, atomic read-modify-writes, HITM and peer
//! snoops), latency where the tool measured it, which CPUs / nodes / threads made it, and the
//! code location that made it. [`AccessGroup`]s record which bytes one code path touches
//! together, for the optimizer. The helpers at the end aggregate per byte range, which is the
//! question `diagnose` asks of a cache line.
//!
//! The JSON form is versioned by [`SCHEMA_VERSION`] and documented in `docs/profile.md`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::ProfileError;

/// Version of the JSON form; bumped on any change an older reader would misread.
pub const SCHEMA_VERSION: u32 = 1;
/// Cache line size assumed when the evidence does not say.
pub const DEFAULT_CACHELINE_SIZE: u64 = 64;

/// One access profile: one measurement (or one sketch) of one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Written as `schema`, the one version key of every lineup JSON output (docs/json.md);
    /// profiles written before that used `schema_version`, which is still read.
    #[serde(rename = "schema", alias = "schema_version")]
    pub schema_version: u32,
    /// Which table of a multi-table input this is ("Baseline", "With this change").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub provenance: Provenance,
    /// What the numbers in [`Counts`] mean.
    pub unit: Unit,
    /// Bytes per cache line that line addresses and offsets refer to.
    pub cacheline_size: u64,
    /// Tool-wide totals, by section then key (c2c's "Trace Event Information":
    /// `trace_events.load_local_hitm`). Keys are the tool's labels in snake_case; values given
    /// as percentages get a `_pct` suffix. A value the tool printed as not a number (c2c's
    /// `-nan%` for a share of zero LLC misses) is NaN here and `null` in JSON.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "summary_nan"
    )]
    pub summary: BTreeMap<String, BTreeMap<String, f64>>,
    /// Raw cache lines, before attribution to a type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineProfile>,
    /// Accesses already attributed to named types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<TypeProfile>,
    /// Bytes touched together on one code path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<AccessGroup>,
}

/// What access counts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Sampled events (perf c2c, perf mem): proportional to the real rates, not equal to them.
    Samples,
    /// Events per second (a sketch with rates).
    PerSecond,
    /// Relative weights with no absolute scale (a sketch with weights).
    Relative,
    /// Exact event counts over a whole run (`lineup record`: every instrumented access
    /// counted; transfers from a simulation of them).
    Count,
}

/// Where a profile came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `perf c2c report`, `perf script`, `lineup sketch`, ...
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The command line that produced the evidence, when the input records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The file it was read from; importers leave this to their caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Machine::is_unknown")]
    pub machine: Machine,
    /// Sampling events (`cpu/mem-loads,ldlat=30/P`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Tool settings that change what the numbers mean (c2c's sort order and grouping).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The file this copy was read from in this run (a saved profile's `input` names the
    /// file it was once imported from): what messages about it must name. Never saved.
    #[serde(skip)]
    pub loaded_from: Option<String>,
}

/// The machine the evidence was taken on, as far as the evidence says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_nodes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheline_size: Option<u64>,
    /// Free text: "Icelake 2S 80C/160T", the CPU model string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Machine {
    pub fn is_unknown(&self) -> bool {
        *self == Machine::default()
    }
}

/// Lines as the sample importers hand them over, most contended first, as `perf c2c` ranks
/// them: cache-to-cache transfers, then writes, then samples (the `records` detail, where an
/// importer counts it), then address; each gets its rank.
pub fn rank_lines(lines: impl IntoIterator<Item = LineProfile>) -> Vec<LineProfile> {
    let mut lines: Vec<LineProfile> = lines.into_iter().collect();
    let key = |l: &LineProfile| {
        let t = l.totals.unwrap_or_default();
        let n = l.details.get("records").copied().unwrap_or(0.0);
        (t.transfers(), t.writes(), n)
    };
    lines.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
            .then(a.address.cmp(&b.address))
    });
    for (rank, l) in lines.iter_mut().enumerate() {
        l.rank = Some(rank as u32);
    }
    lines
}

/// One cache line by address, with accesses at offsets within it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LineProfile {
    /// Address of the line's first byte (a virtual data address).
    #[serde(with = "hex")]
    pub address: u64,
    /// The tool's rank of this line (c2c's cache line index, 0 = most contended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// NUMA node(s) holding the line's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_nodes: Option<Vec<u32>>,
    /// Data symbol the tool resolved the address to (`nohz+0x10`), a hint for attribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_symbol: Option<String>,
    /// Totals for the whole line as the tool reported them (they include accesses too rare
    /// to be listed per offset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<Counts>,
    /// Other per-line numbers the tool reported, by snake_case name (`records`,
    /// `st_l1miss`, `ld_l2hit`, `pa_count`, `percent_costly_snoop`).
    #[serde(default, skip_serializing_if = "Details::is_empty")]
    pub details: Details,
    /// Which type the line was attributed to, once analysis decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<Binding>,
    /// Offsets in [`Access::offset`] are relative to `address`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<Access>,
}

/// A raw line attributed to a type: type offset = `line_start` + line offset, except for the
/// rows placed one by one (`rows`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    pub type_name: String,
    /// Offset within the type at which the cache line starts; negative when the object
    /// starts part-way into the line.
    pub line_start: i64,
    /// Rows (index into the line's accesses) placed at a type offset of their own: a joint
    /// placement puts the rows of functions taking different embedded structs in those
    /// members, which may lie at other distances in this layout than the report's line held
    /// them (`analysis::bind`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<(usize, i64)>,
}

/// Accesses to one named type (struct, union, or a named anonymous object such as `nohz`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TypeProfile {
    pub type_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Offsets in [`Access::offset`] are relative to the start of the type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<Access>,
    /// Where the heap blocks of this type were allocated (recorded profiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<AllocationSite>,
    /// Physical lines where threads write different elements of one array of this type
    /// (recordings): which elements, by which threads. Offsets in the type's coordinates
    /// lose this, since every element is the same type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub element_lines: Vec<ElementLine>,
    /// Accesses to objects of this type that the memory budget of a recording counted per
    /// code site (`docs/record.md`): their count is exact, but which of the covered places
    /// each went to is not known, so they are not in [`TypeProfile::accesses`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<DegradedRange>,
    /// Where instances of the type start in their cache line, as the evidence states it (a
    /// sketch's `[type.instances]`); absent where it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<InstanceFacts>,
}

/// What the evidence states about where instances of a type start in their cache line
/// (`analysis::instances`): the offsets into a line, or an alignment (every multiple of it),
/// whether a larger alignment the type declares moves them, and where they are allocated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceFacts {
    /// Offsets into a line where instances start (`[16]`: calloc's 16 bytes into a line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offsets: Option<Vec<u64>>,
    /// Instances start at every multiple of this many bytes (8: an 8-byte aligned struct
    /// embedded anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align: Option<u64>,
    /// A larger alignment the type declares moves the instances with it (globals, per-CPU
    /// data, members of a struct allocated so); false or absent: the allocation ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honours_alignment: Option<bool>,
    /// Where the instances are allocated or embedded, in the evidence's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// How many instances live, where the evidence knows (a sketch's `count`: a global is 1;
    /// a recording that saw every access: the instances it saw touched); absent where it does
    /// not, and the size term takes them to be many (`cost::size_term`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Who counted them, with `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<CountSource>,
}

/// Where the number of instances the size term assumes came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// Nothing says: taken to be many, their hot lines filling the cache.
    #[default]
    Assumed,
    /// The sketch's `[type.instances] count`.
    Sketch,
    /// A recording that saw every access: the instances of the type it saw touched, live at
    /// once or one after another (an upper bound on those live at once).
    Recording,
    /// The type of per-CPU variables (BTF's `.data..percpu` section): one copy of each per
    /// CPU of the machine modeled.
    PerCpu,
}

/// One code site's accesses by one thread, counted as a whole over a range of one object's
/// bytes (a recording's memory budget gave up their per-place counts). Only ever lines one
/// thread had to itself, or only read since they were shared: lines that threads share and
/// write keep every place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DegradedRange {
    /// The object: a global's name, or the heap array's allocation (`main+42
    /// (hist.c:213)`).
    pub object: String,
    /// Bytes `[start, end)` covered, from the object's first byte.
    pub start: u64,
    pub end: u64,
    /// The same in the type's coordinates, when the range lies within one element
    /// (`[offset_start, offset_end)`); absent when it spans elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_start: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_end: Option<u64>,
    /// Physical cache lines the range touches.
    pub lines: u64,
    pub loads: f64,
    pub stores: f64,
    pub rmw: f64,
    /// The thread (kernel id) and the code site (`symbol+offset`, `file.c:line`).
    pub tid: i64,
    pub code: String,
}

/// A place in the recorded program that allocated heap blocks, and what lineup found they
/// are: the pointer their addresses go into and its element type (`docs/record.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocationSite {
    /// The allocating function (`main`, `ring::new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// `file.c:line` of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Link-time address of the call instruction.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
    pub address: Option<u64>,
    /// The variable or member the blocks' addresses are stored into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// The element type, from that pointer's type; none when nothing tells (untyped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
    /// `struct`, `float`, `int`, `bool`, `char`, `pointer`; absent when untyped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_size: Option<u64>,
    /// How the element type was found: `declaration` (a pointer declared on the call's
    /// line), `assignment` (the global or frame slot the code after the call stores the
    /// result into), `store` (the recorded store of the address), `function` (the one struct
    /// the allocating function handles pointers to that fits), `--heap-type`, or `none`.
    #[serde(default)]
    pub found_by: String,
    /// Blocks allocated there, and the largest.
    #[serde(default)]
    pub blocks: u64,
    #[serde(default)]
    pub max_bytes: u64,
    /// Bytes of the profile type's unit: one element, or for scalars and untyped blocks one
    /// piece (blocks over 4096 bytes are folded into pieces).
    #[serde(default)]
    pub type_size: u64,
    /// Allocation wrappers the blocks came through, innermost first (`xmalloc`): `function`
    /// and `source` are then the wrapper's caller, the call that says what the block is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<String>,
    /// How that caller was told from the wrapper's other callers: `only caller`, `size`
    /// (the only caller whose pointer's element fits the block), `use` (the only one whose
    /// element struct the code touching the block handles pointers to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_found_by: Option<String>,
    /// For blocks left at the wrapper's own call: the wrapper's callers that could have
    /// allocated them (`main (wrap.c:40)`), when nothing told them apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<String>,
}

impl AllocationSite {
    /// One line for people: `main at linreg.c:44: tid_args, an array of lreg_args (40 bytes
    /// each; found by declaration), 1 block of 80 bytes`.
    pub fn describe(&self) -> String {
        let mut s = match (&self.function, &self.source) {
            // No symbol and no line: a library's own allocation (a return address outside
            // the program's code), or a stripped program.
            (None, None) => match self.address {
                Some(a) => format!(
                    "an unnamed call site ({a:#x}: no symbol or line of the program holds it)"
                ),
                None => "an unnamed call site".to_string(),
            },
            (f, src) => format!(
                "{} at {}",
                f.as_deref().unwrap_or("?"),
                src.as_deref().unwrap_or("?")
            ),
        };
        if !self.through.is_empty() {
            s.push_str(&format!(
                " through {}{}",
                self.through.join(" and "),
                self.caller_found_by
                    .as_deref()
                    .map(|b| format!(" (caller found by {b})"))
                    .unwrap_or_default()
            ));
        }
        if !self.callers.is_empty() {
            s.push_str(&format!(
                ", an allocation wrapper called from {} (nothing in the recording tells which call allocated which block)",
                self.callers.join(", ")
            ));
        }
        if let Some(v) = &self.variable {
            s.push_str(&format!(": `{v}`"));
        } else {
            s.push(':');
        }
        match (&self.element_type, self.element_size) {
            (Some(t), Some(n)) => s.push_str(&format!(
                " an array of {t} ({n} bytes each; found by {})",
                self.found_by
            )),
            _ => s.push_str(" untyped (no pointer type tells; offsets in bytes)"),
        }
        s.push_str(&format!(
            ", {} block{} of up to {} bytes",
            self.blocks,
            if self.blocks == 1 { "" } else { "s" },
            self.max_bytes
        ));
        s
    }

    /// Does `--alloc SELECTOR` (`file.c:LINE`, `file.c`, or a function name) name this site?
    pub fn matches(&self, selector: &str) -> bool {
        let src = self.source.as_deref().unwrap_or("");
        let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
        if selector.contains(':') {
            let (f, l) = selector.rsplit_once(':').unwrap_or((selector, ""));
            return src == format!("{}:{l}", base(f));
        }
        if selector.contains('.') && src.split(':').next() == Some(base(selector).as_str()) {
            return true;
        }
        self.function.as_deref() == Some(selector)
    }
}

/// One physical cache line holding elements of one array that different threads write.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElementLine {
    /// The array's variable when it is a global or static (`g`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// Where a heap array was allocated: function (`main+42`), and `file:line` when the
    /// debug info tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_source: Option<String>,
    /// Byte offset of the line's start from the array's first element (negative when the
    /// array starts part-way into the line).
    pub line_offset: i64,
    /// The array's start modulo the line size (0: line-aligned).
    pub misalignment: u64,
    /// Elements written on the line, by index.
    pub writers: Vec<ElementWriter>,
    /// Elements only read on the line by a thread while another thread writes another
    /// element there (the end of one thread's element beside the start of the next's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<ElementReader>,
}

/// One element's reads on an [`ElementLine`] by one thread, which another thread's writes to
/// another element of the line take away from its cache.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElementReader {
    pub index: u64,
    pub tid: i64,
    /// Offsets within the element read on this line, and their field names.
    pub offsets: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    pub reads: f64,
}

/// One element's writes on an [`ElementLine`] by one thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElementWriter {
    pub index: u64,
    pub tid: i64,
    /// Offsets within the element written on this line, and their field names.
    pub offsets: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    pub writes: f64,
}

/// Accesses to one place (byte range or field) from one code location.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// Byte offset within the line ([`LineProfile`]) or the type ([`TypeProfile`]); unknown
    /// for sketch accesses named by field until resolved against a layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Access size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Field name or dotted path (`rto_count`, `cpupri.pri_to_cpu[0].count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default)]
    pub counts: Counts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// CPUs that made these accesses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuUse>,
    /// NUMA nodes of the CPUs that made them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// NUMA node(s) of the memory accessed, when the tool resolved physical addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_nodes: Option<Vec<u32>>,
    /// Boxed: most evidence names no thread, and the access is copied by the hundred thousand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Box<ThreadUse>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeLocation>,
    /// Names of co-access groups this access belongs to (see [`AccessGroup`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The lock every one of these accesses was made holding, where the evidence names one
    /// that is not a member of the struct (a shard's or a bucket's mutex, a lock in the
    /// parent object): a sketch's `under_lock`. Critical sections of one lock run one after
    /// another, so what they touch moves from holder to holder with the lock, and never
    /// falsely shares a line between them (`docs/cost-model.md`, "Data under a lock outside
    /// the struct").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_lock: Option<String>,
    /// What one run of the access's code path costs, in cycles, all its work included, where
    /// the evidence says (a sketch's `[[path]]`): a layout change's saving is weighed against
    /// it (`analysis::cost::RUN_COST_SHARE`), so a few cycles off a path that costs thousands
    /// per run (a VM entry and exit) are no finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_per_run: Option<f64>,
    /// Tool-specific extras by name (c2c's `pa_count`, `records`).
    #[serde(default, skip_serializing_if = "Details::is_empty")]
    pub details: Details,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Tool-specific numbers by name, kept sorted by name (a JSON object, as a map would write
/// it). A sorted vector rather than a map: a large report holds one per access, most with one
/// or two entries, and a map's node costs ~370 bytes where this costs 32 per entry. Names
/// importers use are static strings, not allocated per access.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details(Vec<(Cow<'static, str>, f64)>);

impl Details {
    pub fn new() -> Self {
        Details(Vec::new())
    }
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }
    pub fn get(&self, key: &str) -> Option<&f64> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }
    /// The value under `key`, inserted as `default` first when missing.
    pub fn get_or_insert(&mut self, key: impl Into<Cow<'static, str>>, default: f64) -> &mut f64 {
        let key = key.into();
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                // Exact growth: these stay small and there are many of them.
                self.0.reserve_exact(1);
                self.0.insert(i, (key, default));
                i
            }
        };
        &mut self.0[i].1
    }
    /// Sets `key`, returning the value it replaced.
    pub fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: f64) -> Option<f64> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(_) => {
                *self.get_or_insert(key, value) = value;
                None
            }
        }
    }
    /// Adds `value` to `key` (from 0 when missing).
    pub fn add(&mut self, key: impl Into<Cow<'static, str>>, value: f64) {
        *self.get_or_insert(key, 0.0) += value;
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), *v))
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for Details {
    type Output = f64;
    fn index(&self, key: &str) -> &f64 {
        self.get(key)
            .unwrap_or_else(|| panic!("no detail {key:?} in {self:?}"))
    }
}

impl<K: Into<Cow<'static, str>>> Extend<(K, f64)> for Details {
    fn extend<I: IntoIterator<Item = (K, f64)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Into<Cow<'static, str>>> FromIterator<(K, f64)> for Details {
    fn from_iter<I: IntoIterator<Item = (K, f64)>>(iter: I) -> Self {
        let mut d = Details::new();
        d.extend(iter);
        d
    }
}

impl<K: Into<Cow<'static, str>>, const N: usize> From<[(K, f64); N]> for Details {
    fn from(entries: [(K, f64); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl IntoIterator for Details {
    type Item = (Cow<'static, str>, f64);
    type IntoIter = std::vec::IntoIter<(Cow<'static, str>, f64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Detail names the importers write: a saved profile read back shares these instead of
/// allocating each name per access.
const KNOWN_DETAILS: &[&str] = &[
    "address_unknown",
    "pa_count",
    "period",
    "phys_addr",
    "records",
    "samples",
    "st_l1hit",
    "st_l1miss",
    "st_na",
];

impl Serialize for Details {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k.as_ref(), v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Details;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of numbers")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Details, A::Error> {
                let mut d = Details::new();
                while let Some((k, v)) = m.next_entry::<Cow<'de, str>, f64>()? {
                    let key: Cow<'static, str> = match KNOWN_DETAILS.iter().find(|n| **n == k) {
                        Some(n) => Cow::Borrowed(n),
                        None => Cow::Owned(k.into_owned()),
                    };
                    d.insert(key, v);
                }
                Ok(d)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Event counts, in the profile's [`Unit`]. `loads`, `stores` and `rmw` are disjoint: a locked
/// read-modify-write counts once, as `rmw`. HITM and peer counts are the subset of loads (and
/// rmw) that found the line modified in (HITM) or forwarded from (peer) another core's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loads: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stores: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rmw: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lcl_hitm: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rmt_hitm: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lcl_peer: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rmt_peer: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Counts {
    /// Stores plus read-modify-writes: everything that takes the line exclusive.
    pub fn writes(&self) -> f64 {
        self.stores + self.rmw
    }
    /// Loads plus read-modify-writes: everything that reads.
    pub fn reads(&self) -> f64 {
        self.loads + self.rmw
    }
    pub fn accesses(&self) -> f64 {
        self.loads + self.stores + self.rmw
    }
    pub fn hitm(&self) -> f64 {
        self.lcl_hitm + self.rmt_hitm
    }
    pub fn peer(&self) -> f64 {
        self.lcl_peer + self.rmt_peer
    }
    /// Cache-to-cache transfers of any kind (HITM or peer snoop).
    pub fn transfers(&self) -> f64 {
        self.hitm() + self.peer()
    }
    pub fn add(&mut self, o: &Counts) {
        self.loads += o.loads;
        self.stores += o.stores;
        self.rmw += o.rmw;
        self.lcl_hitm += o.lcl_hitm;
        self.rmt_hitm += o.rmt_hitm;
        self.lcl_peer += o.lcl_peer;
        self.rmt_peer += o.rmt_peer;
    }
    pub fn is_empty(&self) -> bool {
        self.accesses() == 0.0 && self.transfers() == 0.0
    }
}

/// Load latency in core cycles, as far as the tool measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean cycles of loads that were neither HITM nor peer (c2c's "load" cycles column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_load: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_lcl_hitm: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rmt_hitm: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_lcl_peer: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rmt_peer: Option<f64>,
    /// Cycles summed over all loads counted in the access (reported, or derived from the
    /// means and counts); what per-range aggregation adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cycles: Option<f64>,
    /// A range of cycles per load quoted by a human ("~10K to 59K").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(f64, f64)>,
}

impl Latency {
    /// From per-kind weight sums and counts of sampled loads (`load`, `lcl_hitm`, `rmt_hitm`,
    /// `lcl_peer`, `rmt_peer` → (sum of weights, samples)), as the sample importers gather
    /// them; None without any weighed sample.
    pub fn from_weight_sums(sums: &BTreeMap<&'static str, (f64, f64)>) -> Option<Latency> {
        let mean = |k: &str| sums.get(k).map(|(sum, n)| sum / n);
        (!sums.is_empty()).then(|| Latency {
            mean_load: mean("load"),
            mean_lcl_hitm: mean("lcl_hitm"),
            mean_rmt_hitm: mean("rmt_hitm"),
            mean_lcl_peer: mean("lcl_peer"),
            mean_rmt_peer: mean("rmt_peer"),
            total_cycles: Some(sums.values().map(|(sum, _)| sum).sum()),
            range: None,
        })
    }
}

/// Which CPUs made the accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuUse {
    /// Number of distinct CPUs (c2c's "cpu cnt").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Every CPU of the machine (a sketch's `cpus = "all"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// The CPUs themselves, sorted, when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<u32>,
}

impl CpuUse {
    pub fn count(n: u32) -> Self {
        CpuUse {
            count: Some(n),
            ..Default::default()
        }
    }
    pub fn list(cpus: impl IntoIterator<Item = u32>) -> Self {
        let list: Vec<u32> = cpus
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        CpuUse {
            count: Some(list.len() as u32),
            all: false,
            list,
        }
    }
    /// Distinct CPUs as far as known: the list, else the count.
    pub fn distinct(&self) -> Option<u32> {
        if !self.list.is_empty() {
            Some(self.list.len() as u32)
        } else {
            self.count
        }
    }
}

/// Which threads made the accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadUse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tids: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comms: Vec<String>,
}

impl ThreadUse {
    /// From the distinct processes, threads and command names samples named; None when the
    /// samples named no process or thread.
    pub fn from_sets(
        pids: BTreeSet<i64>,
        tids: BTreeSet<i64>,
        comms: BTreeSet<String>,
    ) -> Option<ThreadUse> {
        (!tids.is_empty() || !pids.is_empty()).then(|| ThreadUse {
            count: (!tids.is_empty()).then_some(tids.len() as u32),
            pids: pids.into_iter().collect(),
            tids: tids.into_iter().collect(),
            comms: comms.into_iter().collect(),
        })
    }
}

/// The code that made an access. Its names are shared ([`Arc<str>`]): a large report
/// repeats a few symbols, objects and source lines over hundreds of thousands of rows, and
/// importers hand out one copy of each (see [`Names`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeLocation {
    /// Function (`update_load_avg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<Arc<str>>,
    /// Byte offset of the instruction in the function (`update_load_avg+940` → 940).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_offset: Option<u64>,
    /// Instruction address.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
    pub address: Option<u64>,
    /// Binary or module (`[kernel.kallsyms]`, `libc.so.6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Arc<str>>,
    /// Source file and line (`fair.c:4021`), when debug info gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privilege: Option<Privilege>,
}

/// One shared copy of each name an importer meets (symbols, objects, source lines).
#[derive(Debug, Default)]
pub struct Names(std::collections::HashSet<Arc<str>>);

impl Names {
    pub fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.0.get(name) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(name);
        self.0.insert(n.clone());
        n
    }
}

/// perf's `[k]`, `[.]`, `[g]`, `[u]`, `[H]` markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privilege {
    Kernel,
    User,
    GuestKernel,
    GuestUser,
    Hypervisor,
}

impl Privilege {
    pub fn from_perf_marker(c: char) -> Option<Self> {
        Some(match c {
            'k' => Privilege::Kernel,
            '.' => Privilege::User,
            'g' => Privilege::GuestKernel,
            'u' => Privilege::GuestUser,
            'H' => Privilege::Hypervisor,
            _ => return None,
        })
    }
}

impl CodeLocation {
    /// A function name to rank and print: the symbol, else the address, else `?`.
    pub fn function(&self) -> String {
        match (&self.symbol, self.address) {
            (Some(s), _) => s.to_string(),
            (None, Some(a)) => format!("{a:#x}"),
            (None, None) => "?".to_string(),
        }
    }
    /// `symbol+offset` (decimal, as the kernel engineers' c2c pastes show it).
    pub fn display(&self) -> String {
        match self.symbol_offset {
            Some(off) if self.symbol.is_some() => format!("{}+{off}", self.function()),
            _ => self.function(),
        }
    }
}

/// A set of bytes one code path touches together, with how often it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessGroup {
    /// Code path or function (`set_task_cpu`), or a sketch's group name.
    pub name: String,
    /// How often the path runs, in the profile's unit (for derived groups: the accesses'
    /// total count).
    pub weight: f64,
    pub members: Vec<GroupMember>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMember {
    pub place: Place,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The coordinate system of an offset: a raw line or a named type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Place {
    Line {
        #[serde(with = "hex")]
        address: u64,
    },
    Type {
        name: String,
    },
}

/// Reads [`Profile::summary`], a `null` value as NaN (serde writes NaN as `null`).
fn summary_nan<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, BTreeMap<String, f64>>, D::Error> {
    let raw: BTreeMap<String, BTreeMap<String, Option<f64>>> = Deserialize::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(section, values)| {
            let values = values
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                .collect();
            (section, values)
        })
        .collect())
}

// ---------------------------------------------------------------------------------------
// Construction, JSON, lookups
// ---------------------------------------------------------------------------------------

impl Profile {
    /// Where this report lies in a text that holds several (`report 2 of 6, lines 40-55`),
    /// from the c2c importer's `report` and `report_lines` settings; `None` for a text of
    /// one report or evidence of another kind.
    pub fn report_place(&self) -> Option<String> {
        let s = &self.provenance.settings;
        let report = s.get("report")?;
        let (_, n) = report.split_once(" of ")?;
        if n.trim() == "1" {
            return None;
        }
        Some(match s.get("report_lines") {
            Some(lines) => format!("report {report}, lines {lines}"),
            None => format!("report {report}"),
        })
    }

    pub fn new(tool: impl Into<String>, unit: Unit, cacheline_size: u64) -> Self {
        Profile {
            schema_version: SCHEMA_VERSION,
            label: None,
            provenance: Provenance {
                tool: tool.into(),
                ..Default::default()
            },
            unit,
            cacheline_size,
            summary: BTreeMap::new(),
            lines: Vec::new(),
            types: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Reads a profile written by [`Profile::to_json`], refusing other schema versions.
    pub fn from_json(text: &str) -> Result<Profile, ProfileError> {
        // Look at the version first, so a newer file says so instead of failing on a field;
        // read only it (the rest is skipped, not built as a JSON tree: a large report's
        // profile is 150 MB of text, and its tree was 800 MB).
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            schema: Option<serde_json::Value>,
            #[serde(default)]
            schema_version: Option<serde_json::Value>,
        }
        let version = match serde_json::from_str::<Version>(text) {
            // (serde would also read a struct from an array)
            Ok(_) if !text.trim_start().starts_with('{') => None,
            Ok(v) => v.schema.or(v.schema_version).and_then(|v| v.as_u64()),
            // Valid JSON that is not an object: no version either.
            Err(e) if e.is_data() => None,
            Err(e) => return Err(ProfileError::Json(e.to_string())),
        }
        .ok_or_else(|| ProfileError::Json("no schema: not a lineup profile".into()))?;
        if version != u64::from(SCHEMA_VERSION) {
            return Err(ProfileError::Schema {
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: SCHEMA_VERSION,
            });
        }
        let profile: Profile =
            serde_json::from_str(text).map_err(|e| ProfileError::Json(e.to_string()))?;
        profile.validate()?;
        Ok(profile)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("profile serializes")
    }

    /// [`Profile::to_json`] written to `w` as it is produced: a 200k-line report's profile is
    /// ~150 MB of JSON, which need not be held in memory beside the profile.
    pub fn write_json(&self, w: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(w, self).map_err(std::io::Error::other)
    }

    /// Checks what serde cannot: a sane line size and line offsets inside their line.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(ProfileError::Schema {
                found: self.schema_version,
                supported: SCHEMA_VERSION,
            });
        }
        // The same bound as --cacheline-size: work is per line, and a line of 2^40 bytes
        // would never end.
        if !crate::input::valid_cacheline_size(self.cacheline_size) {
            return Err(ProfileError::Json(format!(
                "cacheline_size {} is not a power of two from {} to {}",
                self.cacheline_size,
                crate::input::CACHELINE_SIZES.start(),
                crate::input::CACHELINE_SIZES.end()
            )));
        }
        for line in &self.lines {
            if let Some(a) = line
                .accesses
                .iter()
                .find(|a| a.offset.is_some_and(|o| o >= self.cacheline_size))
            {
                return Err(ProfileError::Json(format!(
                    "line {:#x}: offset {:#x} is outside a {}-byte cache line",
                    line.address,
                    a.offset.unwrap_or(0),
                    self.cacheline_size
                )));
            }
        }
        Ok(())
    }

    /// No accesses and no line totals: nothing to diagnose.
    pub fn is_empty(&self) -> bool {
        self.lines
            .iter()
            .all(|l| l.accesses.is_empty() && l.totals.is_none_or(|t| t.is_empty()))
            && self.types.iter().all(|t| t.accesses.is_empty())
    }

    /// Start of the cache line holding `address`.
    pub fn line_start(&self, address: u64) -> u64 {
        address - address % self.cacheline_size.max(1)
    }

    /// The raw line holding `address` (any byte of it).
    pub fn line(&self, address: u64) -> Option<&LineProfile> {
        let start = self.line_start(address);
        self.lines.iter().find(|l| l.address == start)
    }

    pub fn line_mut(&mut self, address: u64) -> Option<&mut LineProfile> {
        let start = self.line_start(address);
        self.lines.iter_mut().find(|l| l.address == start)
    }

    pub fn type_profile(&self, name: &str) -> Option<&TypeProfile> {
        self.types.iter().find(|t| t.type_name == name)
    }

    /// The type's entry, created empty if missing.
    pub fn type_profile_mut(&mut self, name: &str) -> &mut TypeProfile {
        if let Some(i) = self.types.iter().position(|t| t.type_name == name) {
            &mut self.types[i]
        } else {
            self.types.push(TypeProfile {
                type_name: name.to_string(),
                ..Default::default()
            });
            self.types.last_mut().expect("just pushed")
        }
    }

    /// Records that raw line `address` is the part of `type_name` starting at `line_start`.
    /// Returns false when there is no such line.
    pub fn bind_line(&mut self, address: u64, type_name: &str, line_start: i64) -> bool {
        self.bind_line_rows(address, type_name, line_start, Vec::new())
    }

    /// [`Profile::bind_line`], with rows placed at type offsets of their own (row index,
    /// type offset) where a joint placement put them apart from `line_start`.
    pub fn bind_line_rows(
        &mut self,
        address: u64,
        type_name: &str,
        line_start: i64,
        rows: Vec<(usize, i64)>,
    ) -> bool {
        match self.line_mut(address) {
            Some(line) => {
                line.binding = Some(Binding {
                    type_name: type_name.to_string(),
                    line_start,
                    rows,
                });
                true
            }
            None => false,
        }
    }

    /// Every access known for `type_name`, offsets relative to the type: the type's own
    /// accesses plus those of raw lines bound to it (accesses that would land before the
    /// type's start are left out).
    pub fn type_accesses(&self, type_name: &str) -> Vec<Access> {
        let own = self.type_profile(type_name).map(|t| &t.accesses[..]);
        let bound = || {
            self.lines.iter().filter_map(|l| {
                l.binding
                    .as_ref()
                    .filter(|b| b.type_name == type_name)
                    .map(|b| (l, b))
            })
        };
        // Sized once: a full report's copy is tens of MB, and doubling would waste as much.
        let n =
            own.map_or(0, <[Access]>::len) + bound().map(|(l, _)| l.accesses.len()).sum::<usize>();
        let mut out: Vec<Access> = Vec::with_capacity(n);
        out.extend_from_slice(own.unwrap_or_default());
        for (line, b) in bound() {
            for (i, a) in line.accesses.iter().enumerate() {
                let own = b.rows.iter().find(|r| r.0 == i).map(|r| r.1);
                let offset = match a.offset {
                    Some(off) => match own.or_else(|| {
                        i64::try_from(off)
                            .ok()
                            .and_then(|o| b.line_start.checked_add(o))
                    }) {
                        Some(shifted) if shifted >= 0 => Some(shifted as u64),
                        _ => continue,
                    },
                    None => None,
                };
                out.push(Access {
                    offset,
                    ..a.clone()
                });
            }
        }
        out
    }

    /// Fills in offsets and sizes of accesses to `type_name` named only by field, using
    /// `resolve(field) -> (offset, size)` (typically a lookup in the type's layout). Returns
    /// the field names it could not resolve, sorted and once each.
    pub fn resolve_fields(
        &mut self,
        type_name: &str,
        resolve: impl Fn(&str) -> Option<(u64, u64)>,
    ) -> Vec<String> {
        let mut missing = BTreeSet::new();
        if let Some(t) = self.types.iter_mut().find(|t| t.type_name == type_name) {
            for a in &mut t.accesses {
                if a.offset.is_some() {
                    continue;
                }
                let Some(field) = &a.field else { continue };
                match resolve(field) {
                    Some((off, size)) => {
                        a.offset = Some(off);
                        if a.size.is_none() {
                            a.size = Some(size);
                        }
                    }
                    None => {
                        missing.insert(field.clone());
                    }
                }
            }
        }
        // Group members named by field follow their accesses.
        for g in &mut self.groups {
            for m in &mut g.members {
                let is_type = matches!(&m.place, Place::Type { name } if name == type_name);
                if !is_type || m.offset.is_some() {
                    continue;
                }
                if let Some((off, size)) = m.field.as_deref().and_then(&resolve) {
                    m.offset = Some(off);
                    m.size.get_or_insert(size);
                }
            }
        }
        missing.into_iter().collect()
    }

    /// Per byte range of raw line `address`: what `diagnose` prints for a line not yet
    /// bound to a type.
    pub fn line_ranges(&self, address: u64) -> Vec<RangeStats> {
        let machine_cpus = self.provenance.machine.cpus;
        self.line(address)
            .map(|l| summarize(l.accesses.iter(), machine_cpus))
            .unwrap_or_default()
    }

    /// Per byte range of cache line `line_index` of `type_name` (bytes
    /// `line_index * cacheline_size ..` of the type), from the type's accesses and bound
    /// lines. Accesses whose offset is unknown are left out (resolve fields first).
    pub fn type_line_ranges(&self, type_name: &str, line_index: u64) -> Vec<RangeStats> {
        let cls = self.cacheline_size.max(1);
        let lo = line_index.saturating_mul(cls);
        let hi = lo.saturating_add(cls);
        let accesses = self.type_accesses(type_name);
        let in_line = accesses.iter().filter(|a| {
            a.offset.is_some_and(|o| {
                let end = o.saturating_add(a.size.unwrap_or(1).max(1));
                o < hi && end > lo
            })
        });
        summarize(in_line, self.provenance.machine.cpus)
    }

    /// Adds one group per function that touches two or more distinct places (offsets or
    /// fields), across all lines and types: the co-access evidence a sampled profile holds.
    /// Groups already present by name are kept as they are.
    pub fn derive_function_groups(&mut self) {
        let mut by_fn: BTreeMap<String, (f64, BTreeSet<MemberKey>)> = BTreeMap::new();
        let mut note = |place: Place, a: &Access| {
            let Some(code) = &a.code else { return };
            let entry = by_fn.entry(code.function()).or_default();
            entry.0 += a.counts.accesses();
            entry.1.insert(MemberKey {
                place,
                offset: a.offset,
                size: a.size,
                field: a.field.clone(),
            });
        };
        for line in &self.lines {
            for a in &line.accesses {
                note(
                    Place::Line {
                        address: line.address,
                    },
                    a,
                );
            }
        }
        for t in &self.types {
            for a in &t.accesses {
                note(
                    Place::Type {
                        name: t.type_name.clone(),
                    },
                    a,
                );
            }
        }
        for (name, (weight, members)) in by_fn {
            if members.len() < 2 || self.groups.iter().any(|g| g.name == name) {
                continue;
            }
            self.groups.push(AccessGroup {
                name,
                weight,
                members: members
                    .into_iter()
                    .map(|k| GroupMember {
                        place: k.place,
                        offset: k.offset,
                        size: k.size,
                        field: k.field,
                    })
                    .collect(),
            });
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct MemberKey {
    place: Place,
    offset: Option<u64>,
    size: Option<u64>,
    field: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Aggregation per byte range
// ---------------------------------------------------------------------------------------

/// Everything known about one byte range (or one unresolved field) of a line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangeStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Widest access size seen at this offset, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Field names the accesses gave, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    pub counts: Counts,
    pub cpus: CpuStats,
    /// Load cycles summed over the range, when the evidence measured them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_cycles: Option<f64>,
    /// Functions by how much they access the range, most first.
    pub functions: Vec<FunctionStats>,
}

impl RangeStats {
    /// Mean cycles per load (loads and rmw), when cycles were measured.
    pub fn cycles_per_load(&self) -> Option<f64> {
        let n = self.counts.reads();
        self.load_cycles.filter(|_| n > 0.0).map(|c| c / n)
    }
    pub fn function(&self, name: &str) -> Option<&FunctionStats> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Distinct CPUs behind aggregated accesses. Counts of different records cannot be added
/// (the same CPU may appear in both), so without CPU lists only a lower bound is known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuStats {
    /// At least this many distinct CPUs (the largest count of any one record, or the size of
    /// the union when lists are known, or the machine's CPUs for "all").
    pub at_least: u32,
    /// The exact set, when every record listed its CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<Vec<u32>>,
    /// Some record said "all CPUs".
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

impl CpuStats {
    fn merge(&mut self, cpus: Option<&CpuUse>, machine_cpus: Option<u32>, first: bool) {
        let Some(c) = cpus else {
            self.exact = None;
            return;
        };
        if c.all {
            self.all = true;
            if let Some(n) = machine_cpus {
                self.at_least = self.at_least.max(n);
            }
        }
        self.at_least = self.at_least.max(c.distinct().unwrap_or(0));
        match (&mut self.exact, c.list.is_empty()) {
            (_, true) => self.exact = None,
            (Some(set), false) => {
                let union: BTreeSet<u32> = set.iter().chain(c.list.iter()).copied().collect();
                *set = union.into_iter().collect();
            }
            (None, false) if first => self.exact = Some(c.list.clone()),
            (None, false) => {}
        }
        if let Some(set) = &self.exact {
            self.at_least = self.at_least.max(set.len() as u32);
        }
    }
}

/// One function's part in a range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionStats {
    pub name: String,
    pub counts: Counts,
    pub cpus: CpuStats,
    /// Code locations (`set_task_cpu+279`) that made the accesses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<String>,
}

/// Groups accesses by byte range (offset and size; by field where the offset is unknown)
/// and adds them up. Ranges come out by offset, unresolved fields last.
pub fn summarize<'a>(
    accesses: impl IntoIterator<Item = &'a Access>,
    machine_cpus: Option<u32>,
) -> Vec<RangeStats> {
    // Key: offset when known (sizes merge: the widest wins), else the field name.
    let mut ranges: BTreeMap<(Option<u64>, Option<String>), Vec<&Access>> = BTreeMap::new();
    for a in accesses {
        let key = match a.offset {
            Some(o) => (Some(o), None),
            None => (None, a.field.clone()),
        };
        ranges.entry(key).or_default().push(a);
    }
    let mut out: Vec<RangeStats> = ranges
        .into_iter()
        .map(|((offset, _), group)| range_stats(offset, &group, machine_cpus))
        .collect();
    // BTreeMap puts None first; unresolved fields read better last.
    out.sort_by_key(|r| (r.offset.is_none(), r.offset));
    out
}

fn range_stats(offset: Option<u64>, group: &[&Access], machine_cpus: Option<u32>) -> RangeStats {
    let mut counts = Counts::default();
    let mut cpus = CpuStats::default();
    let mut cycles: Option<f64> = None;
    let mut fields = BTreeSet::new();
    let mut size: Option<u64> = None;
    let mut fns: BTreeMap<String, (Counts, CpuStats, BTreeSet<String>, bool)> = BTreeMap::new();
    for (i, a) in group.iter().enumerate() {
        counts.add(&a.counts);
        cpus.merge(a.cpus.as_ref(), machine_cpus, i == 0);
        if let Some(c) = a.latency.and_then(|l| l.total_cycles) {
            *cycles.get_or_insert(0.0) += c;
        }
        if let Some(f) = &a.field {
            fields.insert(f.clone());
        }
        if let Some(s) = a.size {
            size = Some(size.map_or(s, |old| old.max(s)));
        }
        let name = a
            .code
            .as_ref()
            .map(CodeLocation::function)
            .unwrap_or_else(|| "?".to_string());
        let entry = fns.entry(name).or_insert_with(|| {
            (
                Counts::default(),
                CpuStats::default(),
                BTreeSet::new(),
                true,
            )
        });
        entry.0.add(&a.counts);
        let first = entry.3;
        entry.1.merge(a.cpus.as_ref(), machine_cpus, first);
        entry.3 = false;
        if let Some(code) = &a.code {
            entry.2.insert(code.display());
        }
    }
    let mut functions: Vec<FunctionStats> = fns
        .into_iter()
        .map(|(name, (counts, cpus, locs, _))| FunctionStats {
            name,
            counts,
            cpus,
            locations: locs.into_iter().collect(),
        })
        .collect();
    functions.sort_by(|a, b| {
        b.counts
            .accesses()
            .total_cmp(&a.counts.accesses())
            .then_with(|| a.name.cmp(&b.name))
    });
    RangeStats {
        offset,
        size,
        fields: fields.into_iter().collect(),
        counts,
        cpus,
        load_cycles: cycles,
        functions,
    }
}

// ---------------------------------------------------------------------------------------
// Addresses as "0x..." strings in JSON: readable, and safe for readers whose numbers are
// doubles (kernel addresses do not fit 53 bits).
// ---------------------------------------------------------------------------------------

mod hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_hex(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a 0x address: {text:?}")))
    }
}

mod hex_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{v:#x}")),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| {
            super::parse_hex(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("not a 0x address: {t:?}")))
        })
        .transpose()
    }
}

/// `0x1f` / `0X1F` → 31.
pub(crate) fn parse_hex(s: &str) -> Option<u64> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(offset: u64, sym: &str, loads: f64, stores: f64, cpus: u32) -> Access {
        Access {
            offset: Some(offset),
            counts: Counts {
                loads,
                stores,
                ..Default::default()
            },
            cpus: Some(CpuUse::count(cpus)),
            code: Some(CodeLocation {
                symbol: Some(sym.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn details_write_and_read_as_a_sorted_object() {
        let mut d = Details::from([("records", 5.0), ("pa_count", 1.0)]);
        d.add("records", 2.0);
        d.add("zeta", 1.5);
        assert_eq!(d.insert(String::from("alpha"), 3.0), None);
        assert_eq!(d.insert("alpha", 4.0), Some(3.0));
        *d.get_or_insert("pa_count", 9.0) += 1.0;
        assert_eq!(d["records"], 7.0);
        assert_eq!(d.get("missing"), None);
        let names: Vec<&str> = d.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["alpha", "pa_count", "records", "zeta"]);
        // The JSON a BTreeMap<String, f64> wrote, in the same order.
        let map: BTreeMap<String, f64> = d.iter().map(|(k, v)| (k.to_string(), v)).collect();
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, serde_json::to_string(&map).unwrap());
        let back: Details = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
        // Read in any order, kept sorted.
        let back: Details = serde_json::from_str(r#"{"z": 1, "a": 2}"#).unwrap();
        assert_eq!(back.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "z"]);
    }

    #[test]
    fn ranges_add_counts_and_rank_functions() {
        let accs = [
            access(0, "a", 10.0, 0.0, 4),
            access(0, "b", 1.0, 50.0, 8),
            access(8, "a", 3.0, 0.0, 2),
        ];
        let r = summarize(accs.iter(), None);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].offset, Some(0));
        assert_eq!(r[0].counts.loads, 11.0);
        assert_eq!(r[0].counts.stores, 50.0);
        assert_eq!(r[0].cpus.at_least, 8);
        assert_eq!(r[0].cpus.exact, None);
        assert_eq!(r[0].functions[0].name, "b");
        assert_eq!(r[1].functions[0].name, "a");
    }

    #[test]
    fn cpu_lists_union() {
        let mut a = access(0, "a", 1.0, 0.0, 0);
        a.cpus = Some(CpuUse::list([1, 2]));
        let mut b = access(0, "b", 1.0, 0.0, 0);
        b.cpus = Some(CpuUse::list([2, 3]));
        let r = summarize([&a, &b], None);
        assert_eq!(r[0].cpus.exact, Some(vec![1, 2, 3]));
        assert_eq!(r[0].cpus.at_least, 3);
    }

    #[test]
    fn bound_lines_shift_into_type_coordinates() {
        let mut p = Profile::new("test", Unit::Samples, 64);
        p.lines.push(LineProfile {
            address: 0x1000,
            accesses: vec![access(8, "f", 1.0, 0.0, 1)],
            ..Default::default()
        });
        assert!(p.bind_line(0x1008, "task_group", 256));
        let r = p.type_line_ranges("task_group", 4);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].offset, Some(264));
        assert!(p.type_line_ranges("task_group", 3).is_empty());
    }

    #[test]
    fn json_rejects_other_versions() {
        let mut p = Profile::new("test", Unit::Relative, 64);
        p.schema_version = 2;
        let err = Profile::from_json(&serde_json::to_string(&p).unwrap()).unwrap_err();
        assert!(matches!(err, ProfileError::Schema { found: 2, .. }));
    }

    #[test]
    fn json_writes_schema_and_still_reads_schema_version() {
        let p = Profile::new("test", Unit::Relative, 64);
        let v: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(v["schema"], 1);
        assert!(v.get("schema_version").is_none(), "{v}");
        // A profile written before the key was unified.
        let mut old = v.clone();
        let o = old.as_object_mut().unwrap();
        let version = o.remove("schema").unwrap();
        o.insert("schema_version".into(), version);
        assert_eq!(Profile::from_json(&old.to_string()).unwrap(), p);
        old["schema_version"] = 2.into();
        assert!(matches!(
            Profile::from_json(&old.to_string()),
            Err(ProfileError::Schema { found: 2, .. })
        ));
    }
}
