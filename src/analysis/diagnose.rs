//! `diagnose`: for one struct and one access profile, who touches each member and what each
//! cache line suffers from, in the words the seeds' engineers use.
//!
//! A line's verdict is the cost model's (`contention::verdict_for`), for sampled, sketched
//! and recorded evidence alike: the class of its largest terms, false sharing when a fifth of
//! its modeled cycles are removable by moving, co-written, true sharing (a lock's critical
//! section included); locality and adjacent-line pairs are `findings` beside the lines. A
//! recording is priced at its threads' concurrent rates, its threads too rare on a line to
//! make it matter left out (`rare_threads_left_out`), and a line under the run's floor is
//! negligible or handed over under a lock. The rules below remain only where the model cannot
//! price a line: no CPU information at all (read-mostly next to write-hot), loads whose writer
//! was not sampled, and, for exact per-thread evidence (`judge_exact`, who writes what),
//! elements of an array and neighbouring instances (each its own object, one thread per
//! member in the type's view: the model's streams cannot see the threads sharing the physical
//! line), lines too rarely touched to count, and lines the model prices at nothing:
//! - **false sharing**: different members (or elements of different threads on one physical
//!   line), at least one written, touched from more than one CPU: removable by moving them
//!   apart or padding the elements;
//! - **true sharing**: one member written from many CPUs and nothing else of note on the line:
//!   no layout helps, only splitting the data (per CPU, per node) or sharding;
//! - **read-mostly next to write-hot**: a written member beside read members, without evidence
//!   that more than one CPU is involved (a sketch without CPU counts, a single-CPU profile);
//! - **not shared**: written by one CPU, touched by no other more than negligibly;
//! - **read-shared**: only loads: cheap, copies stay valid in every cache;
//! - **cold**: no recorded access.

pub use crate::analysis::run::RunTotals;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::instances::Instances;
use super::machine::MachineModel;
use super::{contention, cost};
use crate::layout::{Field, Layout};
use crate::profile::{Access, Counts, ElementLine, Profile};

/// Members whose share of a line's accesses is below this do not change its verdict.
const NEGLIGIBLE: f64 = 0.02;
/// With exact evidence and no run totals, lines touched less than this share of the busiest
/// line's accesses are too rare to judge.
const RARE: f64 = 0.001;
/// What the cost model prices a recorded line at, over the whole run (transfers, modeled
/// cycles): at the rates of the accesses that can meet another thread's (`concurrent`), and
/// at the whole rates, as if every access could (`whole`).
#[derive(Clone, Copy, Debug, Default)]
struct RunPrice {
    concurrent: (f64, f64),
    whole: (f64, f64),
    /// The line's accesses made inside critical sections of a lock every other thread on
    /// the line held there, or while no other thread was alive (`sequential_accesses`):
    /// they cannot meet another thread's.
    sequential: f64,
}

/// A line's price: the model's terms on the struct's own line, or, where threads use
/// distinct elements of an array (each element its own object, so the struct's view holds
/// one thread per member), the same model on the physical line those elements share: the
/// line's element writes as two writers of disjoint bytes on two CPUs, its element reads as
/// another CPU's loads beside them (beside `neighbour` writes, the type's element writes,
/// when the line holds none of its own).
fn line_price(
    line: Option<&contention::LineModel>,
    element_writes: f64,
    element_reads: f64,
    neighbour: f64,
    machine: &MachineModel,
) -> (f64, f64) {
    let own = line.map_or((0.0, 0.0), |m| (m.transfers, m.cycles));
    let stream = |unit: usize, reads: f64, writes: f64, cpu: u32| cost::Stream {
        unit,
        inner: 0,
        size: 8,
        field: String::new(),
        path: format!("thread {cpu}"),
        reads,
        writes,
        rmw: 0.0,
        cpus: 1,
        cpu_list: vec![cpu],
        lock: false,
        run_atomic: false,
        under_lock: None,
        cycles_per_run: None,
    };
    let mut streams = Vec::new();
    if element_writes > 0.0 {
        streams.push(stream(0, 0.0, element_writes / 2.0, 0));
        streams.push(stream(1, 0.0, element_writes / 2.0, 1));
    } else if element_reads > 0.0 && neighbour > 0.0 {
        streams.push(stream(0, 0.0, neighbour, 0));
    }
    if element_reads > 0.0 && !streams.is_empty() {
        streams.push(stream(2, element_reads, 0.0, 1));
    }
    if streams.is_empty() {
        return own;
    }
    let refs: Vec<&cost::Stream> = streams.iter().collect();
    let (ft, tt, fc, tc) = cost::line_terms(&refs, machine);
    if ft + tt > own.0 {
        (ft + tt, fc + tc)
    } else {
        own
    }
}

/// What a line's or a CPU's share is weighed against: the run, or the struct's busiest line.
#[derive(Clone, Copy, Debug)]
enum Scale {
    Run(RunTotals),
    Struct { rare: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    FalseSharing,
    TrueSharing,
    /// Members one path writes together: one stream; keep them together.
    CoWritten,
    /// A hot path's members spread over more lines than their bytes need.
    Locality,
    /// Two hot lines of one aligned 128-byte pair, coupled by the adjacent-line prefetcher.
    AdjacentPair,
    /// Instances that do not start a line: members the line-aligned layout keeps apart share
    /// a line in them.
    Misaligned,
    ReadMostlyNextToWriteHot,
    ReadShared,
    /// Exact evidence: written, but by one thread (CPU) only, and touched by no other.
    NotShared,
    /// Contended, but too little of the run's transfers to matter (recordings).
    Negligible,
    Cold,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::FalseSharing => "false sharing",
            Verdict::TrueSharing => "true sharing",
            Verdict::CoWritten => "co-written",
            Verdict::Locality => "locality",
            Verdict::AdjacentPair => "adjacent pair",
            Verdict::Misaligned => "misaligned instances",
            Verdict::ReadMostlyNextToWriteHot => "read-mostly next to write-hot",
            Verdict::ReadShared => "read-shared",
            Verdict::NotShared => "not shared",
            Verdict::Negligible => "negligible",
            Verdict::Cold => "cold",
        }
    }
}

/// What one member of the struct saw.
#[derive(Clone, Debug, Serialize)]
pub struct MemberUse {
    /// Member name as pahole shows it (inline anonymous members by their own names).
    pub name: String,
    pub offset: u64,
    pub size: u64,
    pub cacheline: u64,
    pub counts: Counts,
    /// At least this many distinct CPUs touched it (the evidence rarely gives exact sets).
    pub cpus: u32,
    /// Functions by accesses, most first: (name, writes, reads).
    pub functions: Vec<FunctionUse>,
    /// The CPUs themselves, when every access listed them (recordings, perf script).
    #[serde(skip)]
    pub cpu_set: Option<BTreeSet<u32>>,
    /// Writes and reads per CPU, when every access names exactly one CPU (a recording:
    /// `lineup record` numbers threads as CPUs): exact evidence, judged by who writes what.
    #[serde(skip)]
    pub per_cpu: Option<BTreeMap<u32, (f64, f64)>>,
    /// Simulated transfers split into (true, false) sharing, when the evidence has them.
    #[serde(skip)]
    pub sim_split: (f64, f64),
    /// Writes to its element while another thread writes another element on the same
    /// physical line (recordings: `element_line_writes`).
    #[serde(skip)]
    pub element_writes: f64,
    /// Reads of its element while another thread writes another element on the same
    /// physical line (recordings: `element_line_reads`).
    #[serde(skip)]
    pub element_reads: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FunctionUse {
    pub name: String,
    pub writes: f64,
    pub reads: f64,
    pub cpus: u32,
    #[serde(skip)]
    pub cpu_set: Option<BTreeSet<u32>>,
}

impl MemberUse {
    fn total(&self) -> f64 {
        self.counts.accesses()
    }
    fn writers(&self) -> impl Iterator<Item = &FunctionUse> {
        self.functions.iter().filter(|f| f.writes > 0.0)
    }
    fn readers(&self) -> impl Iterator<Item = &FunctionUse> {
        self.functions.iter().filter(|f| f.reads > 0.0)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LineDiagnosis {
    pub index: u64,
    pub start: u64,
    pub end: u64,
    pub verdict: Verdict,
    /// One or two sentences saying why.
    pub explanation: String,
    /// Estimated coherence cost, for ranking lines (see `docs/diagnose.md`).
    pub cost: f64,
    /// Members of the line that were touched, by offset.
    pub members: Vec<MemberUse>,
    /// Which elements of which array share a physical line, by which threads (recordings
    /// of per-thread elements: `g[0].v` by thread 11, `g[1].v` by thread 12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elements: Option<String>,
    /// The cost model's terms on the line, largest first (what decided the verdict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<contention::Term>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Diagnosis {
    pub type_name: String,
    pub size: u64,
    pub cacheline_size: u64,
    /// Lines with accesses, most costly first; cold lines are counted, not listed.
    pub lines: Vec<LineDiagnosis>,
    pub cold_lines: u64,
    /// Every touched member, by offset.
    pub members: Vec<MemberUse>,
    /// Accesses the profile names by field that the struct has no member for.
    pub unresolved_fields: Vec<String>,
    /// Accesses whose offsets do not fit this layout (evidence from another kernel or build),
    /// one sentence each, saying where they were placed, if anywhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misfits: Vec<String>,
    /// What the model finds beyond single lines: code paths whose members span more lines
    /// than their bytes need (locality), aligned pairs of hot lines (adjacent-line prefetch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The machine the lines were priced on.
    pub machine: String,
    /// The busiest line's queueing the lines' cycles include, as `predict` says it.
    pub queueing: String,
    /// Where instances do not all start a line: where they start, and what the lines cost
    /// as they are beside what they cost on line-aligned instances (the lines above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<InstancesPriced>,
}

/// The diagnosed layout's lines priced where the instances start (`instances::Instances`).
#[derive(Clone, Debug, Serialize)]
pub struct InstancesPriced {
    /// Offsets into a line where instances start, and the share at each.
    pub offsets_in_line: Vec<u64>,
    pub shares: Vec<f64>,
    /// Where that came from, in words.
    pub source: String,
    /// Modeled false- and true-sharing cycles of the lines on line-aligned instances (the
    /// sum of the lines' costs), and as the instances are (what `predict` prices).
    pub cycles_aligned: f64,
    pub cycles_as_allocated: f64,
}

/// A verdict of the model that is not about one line alone.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub verdict: Verdict,
    /// The cache lines it concerns.
    pub lines: Vec<u64>,
    pub members: Vec<String>,
    pub paths: Vec<String>,
    /// Modeled cycles, in the evidence's unit.
    pub cycles: f64,
    pub explanation: String,
}

impl Diagnosis {
    pub fn has_contention(&self) -> bool {
        // Co-written lines move between caches as much as truly shared ones do.
        self.lines.iter().any(|l| {
            matches!(
                l.verdict,
                Verdict::FalseSharing
                    | Verdict::TrueSharing
                    | Verdict::CoWritten
                    | Verdict::ReadMostlyNextToWriteHot
            )
        })
    }
}

/// The member shown by pahole that holds byte `offset`: inline anonymous structs and unions
/// are looked into, named members are not.
pub fn display_member(fields: &[Field], offset: u64) -> Option<&Field> {
    // Zero-size members (cache-line group markers, `_pad_[0]`) hold no bytes: only a byte no
    // sized member covers (a flexible array's) is theirs.
    let f = fields
        .iter()
        .rev()
        .find(|f| f.size > 0 && f.offset <= offset && offset < f.offset + f.size)
        .or_else(|| {
            fields
                .iter()
                .rev()
                .find(|f| f.size == 0 && f.offset <= offset)
                .filter(|_| {
                    fields
                        .iter()
                        .all(|g| g.size == 0 || g.offset + g.size <= offset)
                })
        })?;
    if f.inline.is_some() {
        display_member(&f.members, offset).or(Some(f))
    } else {
        Some(f)
    }
}

/// The members an access of `size` bytes (when known) at `offset` can be: one, as
/// [`display_member`] finds it, except where alternatives of an anonymous union overlap the
/// byte: those the access fits in, then those of exactly its size starting there (without a
/// size, those starting there), each looked into as [`display_member`] does. The offset does
/// not say which alternative the code used; the width may.
pub fn display_alternatives(fields: &[Field], offset: u64, size: Option<u64>) -> Vec<&Field> {
    let holding: Vec<&Field> = fields
        .iter()
        .filter(|f| f.size > 0 && f.offset <= offset && offset < f.offset + f.size)
        .collect();
    // Bitfields share their storage unit's bytes without being alternatives.
    if holding.is_empty() || holding.iter().any(|f| f.is_bitfield()) {
        return display_member(fields, offset).into_iter().collect();
    }
    fn narrow<'a>(all: Vec<&'a Field>, keep: impl Fn(&Field) -> bool) -> Vec<&'a Field> {
        let some: Vec<&Field> = all.iter().copied().filter(|f| keep(f)).collect();
        if some.is_empty() { all } else { some }
    }
    let chosen = match size {
        Some(s) => narrow(narrow(holding, |f| offset + s <= f.offset + f.size), |f| {
            f.offset == offset && f.size == s
        }),
        None => narrow(holding, |f| f.offset == offset),
    };
    chosen
        .into_iter()
        .flat_map(|f| {
            if f.inline.is_some() {
                let inner = display_alternatives(&f.members, offset, size);
                if inner.is_empty() { vec![f] } else { inner }
            } else {
                vec![f]
            }
        })
        .collect()
}

fn member_name(f: &Field) -> String {
    if f.name.is_empty() {
        format!("<anonymous @{}>", f.offset)
    } else {
        f.name.clone()
    }
}

/// For an array member (not an inline anonymous struct), the element holding byte `offset`
/// and the element size, from the declarator's first dimension (`hits[8]`).
fn array_element(f: &Field, offset: u64) -> Option<(u64, u64)> {
    if f.inline.is_some() || f.is_bitfield() {
        return None;
    }
    let dims = f.declarator.strip_prefix(f.name.as_str())?;
    let first = dims.strip_prefix('[')?.split(']').next()?;
    let count: u64 = first.trim().parse().ok()?;
    if count < 2 || f.size == 0 || !f.size.is_multiple_of(count) {
        return None;
    }
    let elem = f.size / count;
    Some(((offset - f.offset) / elem, elem))
}

/// The array member whose slots all of `names` are (`hits[0]`, `hits[3]`: `hits`), when
/// there are two or more of them and nothing else.
fn slots_of_one_array<'n>(names: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    let mut array = None;
    let mut n = 0;
    for name in names {
        let (base, index) = name.strip_suffix(']')?.rsplit_once('[')?;
        if base.is_empty() || base.contains(['[', '.']) || index.parse::<u64>().is_err() {
            return None;
        }
        if *array.get_or_insert(base) != base {
            return None;
        }
        n += 1;
    }
    array.filter(|_| n > 1)
}

/// For a byte of an array of inline structs (the line-sized slots `optimize` gives
/// per-thread array elements: `struct { long v; } hits[8]`), the element's member holding
/// it, named with its index (`hits[1].v`), with its offset and size.
fn inline_array_element(fields: &[Field], offset: u64) -> Option<(String, u64, u64)> {
    let f = fields
        .iter()
        .find(|f| f.size > 0 && f.offset <= offset && offset < f.end())?;
    f.inline?;
    let dims = f.declarator.strip_prefix(f.name.as_str())?;
    let count: u64 = dims
        .strip_prefix('[')?
        .split(']')
        .next()?
        .trim()
        .parse()
        .ok()?;
    if count < 2 || f.name.is_empty() || !f.size.is_multiple_of(count) {
        return None;
    }
    let elem = f.size / count;
    let index = (offset - f.offset) / elem;
    let m = display_member(&f.members, f.offset + (offset - f.offset) % elem)?;
    Some((
        format!("{}[{index}].{}", f.name, member_name(m)),
        m.offset + index * elem,
        m.size,
    ))
}

/// Diagnoses `layout` from `accesses` (offsets relative to the struct, as
/// [`Profile::type_accesses`] gives them). `machine_cpus` turns "all CPUs" into a number.
pub fn diagnose(layout: &Layout, accesses: &[Access], machine_cpus: Option<u32>) -> Diagnosis {
    diagnose_in_run(layout, accesses, machine_cpus, None)
}

/// [`diagnose`], weighing each line against the whole run when its totals are known
/// ([`RunTotals::from_profile`]): a line below [`RunTotals::floor`] is negligible, and a
/// CPU whose accesses to a member are below it neither writes nor shares that member.
pub fn diagnose_in_run(
    layout: &Layout,
    accesses: &[Access],
    machine_cpus: Option<u32>,
    run: Option<RunTotals>,
) -> Diagnosis {
    diagnose_on(layout, accesses, machine_cpus, run, None, false)
}

/// The machine a diagnosis is priced on when none is given: the evidence's CPUs, one node,
/// generic latencies (only the lines' terms relative to each other decide a verdict).
pub fn evidence_machine(machine_cpus: Option<u32>, cls: u64) -> MachineModel {
    let cpus = machine_cpus.unwrap_or(EVIDENCE_CPUS_UNKNOWN).max(1);
    let mut m = MachineModel::from_topology("evidence", cpus, 1, cpus, 1, cls);
    m.description = match machine_cpus {
        Some(n) => format!("the evidence's {n} CPUs, generic latencies"),
        None => "CPUs as the evidence counts them, generic latencies".to_string(),
    };
    m
}

/// CPUs of a machine the evidence does not describe: no cap on the CPUs its paths are
/// taken to run on.
const EVIDENCE_CPUS_UNKNOWN: u32 = 4096;

/// A code path seen on at least this many CPUs is taken to run on all of the machine's, when
/// the evidence does not say how many the machine has: its count is the machine's size.
const SPREAD_OVER_ALL: u32 = 16;

/// The machine's CPU count as the evidence implies it, when it does not state it: the widest
/// access's, when that is wide enough to be every CPU ([`SPREAD_OVER_ALL`]).
fn widest_evidence(accesses: &[Access]) -> Option<u32> {
    accesses
        .iter()
        .filter_map(|a| a.cpus.as_ref().and_then(|c| c.distinct()))
        .max()
        .filter(|&n| n >= SPREAD_OVER_ALL)
}

/// [`diagnose_in_run`] with each line's verdict priced by the cost model on `machine`
/// ([`evidence_machine`] when `None`): the verdict is the model's largest term on the line
/// (`contention::verdict`). Instances are taken to be line-aligned ([`diagnose_with`]).
pub fn diagnose_on(
    layout: &Layout,
    accesses: &[Access],
    machine_cpus: Option<u32>,
    run: Option<RunTotals>,
    machine: Option<&MachineModel>,
    per_cpu: bool,
) -> Diagnosis {
    diagnose_with(
        layout,
        accesses,
        machine_cpus,
        run,
        machine,
        per_cpu,
        &Instances::aligned(),
    )
}

/// [`diagnose_on`] with the instances where the evidence shows them: the lines are the
/// type's (line-aligned instances), the queueing and the adjacent pairs are priced as the
/// instances are, as `predict` prices them, and where the instances' offset makes members
/// share lines the line-aligned layout keeps apart, a `misaligned` finding says so.
pub fn diagnose_with(
    layout: &Layout,
    accesses: &[Access],
    machine_cpus: Option<u32>,
    run: Option<RunTotals>,
    machine: Option<&MachineModel>,
    per_cpu: bool,
    instances: &Instances,
) -> Diagnosis {
    let cls = layout.cacheline_size;
    let own;
    let machine = match machine {
        Some(m) => m,
        None => {
            own = evidence_machine(machine_cpus.or_else(|| widest_evidence(accesses)), cls);
            &own
        }
    };
    // A recording is priced at what its threads do at the same time (`concurrent_share`);
    // the whole rates say what the line would cost if their windows overlapped.
    // Threads of a recording too rare on a line's streams to make it matter are left out of
    // the model's view of it (`rare_threads_left_out`); the members still show every access.
    let kept = run.map(|r| rare_threads_left_out(accesses, cls, r.floor()));
    let priced = kept.as_deref().unwrap_or(accesses);
    let concurrent = run.and_then(|_| super::model::concurrent_accesses(priced));
    let model = Model::new(
        layout,
        concurrent.as_deref().unwrap_or(priced),
        machine_cpus,
        machine,
        instances,
    );
    let whole_model = concurrent
        .as_ref()
        .map(|_| Model::new(layout, priced, machine_cpus, machine, instances));
    // Per line: (element writes, element reads) at their concurrent share, and the
    // sequential accesses.
    let mut overlap_by_line: BTreeMap<u64, (f64, f64, f64)> = BTreeMap::new();
    // (line index, member name, member offset) -> accumulated use.
    let mut uses: Vec<(u64, MemberUse)> = Vec::new();
    let mut misfits: Vec<String> = Vec::new();
    let subs = cost::sub_field_names(layout, accesses);
    for a in accesses {
        let Some(off) = a.offset else { continue };
        let (off, misfit) = place(layout, a, off);
        if let Some(m) = misfit
            && !misfits.contains(&m)
        {
            misfits.push(m);
        }
        let alternatives = display_alternatives(&layout.members, off, a.size);
        let Some(&f) = alternatives.first() else {
            continue;
        };
        // An array member is shown per element: `hits[0]` and `hits[1]` written by different
        // CPUs falsely share a line as much as two named members do. Union alternatives the
        // access cannot be told between are shown together, over the bytes they span.
        let (name, f_offset, f_size) = if alternatives.len() > 1 {
            let start = alternatives
                .iter()
                .map(|f| f.offset)
                .min()
                .unwrap_or(f.offset);
            let end = alternatives
                .iter()
                .map(|f| f.offset + f.size)
                .max()
                .unwrap_or(f.offset + f.size);
            let names: Vec<String> = alternatives.iter().map(|f| member_name(f)).collect();
            (names.join(" | "), start, end - start)
        } else {
            match (
                array_element(f, off),
                inline_array_element(&layout.members, off),
            ) {
                (Some((index, elem)), _) => (
                    format!("{}[{index}]", member_name(f)),
                    f.offset + index * elem,
                    elem,
                ),
                (None, Some(named)) => named,
                // A sub-field of an embedded struct, where the evidence names it: its own
                // bytes, as the model prices them (`cost::sub_field_name`).
                // Not where the access was placed elsewhere (a misfit): its sub-field's bytes
                // are unknown there.
                (None, None) => {
                    match cost::sub_field_name(f, a, &subs).filter(|_| a.offset == Some(off)) {
                        Some(sub) => {
                            let size = a.size.unwrap_or(1).max(1).min(f.offset + f.size - off);
                            (sub, off, size)
                        }
                        None => (member_name(f), f.offset, f.size),
                    }
                }
            }
        };
        let line = off / cls;
        if run.is_some() {
            let c = super::model::concurrent_share(a);
            let e = overlap_by_line.entry(line).or_default();
            e.0 += a.details.get("element_line_writes").copied().unwrap_or(0.0) * c;
            e.1 += a.details.get("element_line_reads").copied().unwrap_or(0.0) * c;
            e.2 += a.details.get("sequential_accesses").copied().unwrap_or(0.0);
        }
        let cpus = a
            .cpus
            .as_ref()
            .map(|c| {
                if c.all {
                    machine_cpus.unwrap_or(2).max(c.distinct().unwrap_or(0))
                } else {
                    c.distinct().unwrap_or(0)
                }
            })
            .unwrap_or(0);
        let slot = match uses
            .iter()
            .position(|(l, u)| *l == line && u.offset == f_offset && u.name == name)
        {
            Some(i) => i,
            None => {
                uses.push((
                    line,
                    MemberUse {
                        name,
                        offset: f_offset,
                        size: f_size,
                        cacheline: f_offset / cls,
                        counts: Counts::default(),
                        cpus: 0,
                        functions: Vec::new(),
                        cpu_set: Some(Default::default()),
                        per_cpu: Some(Default::default()),
                        sim_split: (0.0, 0.0),
                        element_writes: 0.0,
                        element_reads: 0.0,
                    },
                ));
                uses.len() - 1
            }
        };
        let u = &mut uses[slot].1;
        u.counts.add(&a.counts);
        u.cpus = u.cpus.max(cpus);
        match a.cpus.as_ref().filter(|c| !c.list.is_empty() && !c.all) {
            Some(c) => {
                if let Some(set) = &mut u.cpu_set {
                    set.extend(c.list.iter().copied());
                    u.cpus = u.cpus.max(set.len() as u32);
                }
            }
            None => u.cpu_set = None,
        }
        let single = a
            .cpus
            .as_ref()
            .filter(|c| !c.all && c.list.len() == 1)
            .map(|c| c.list[0]);
        match (single, &mut u.per_cpu) {
            (Some(cpu), Some(map)) => {
                let e = map.entry(cpu).or_default();
                e.0 += a.counts.writes();
                e.1 += a.counts.reads();
            }
            _ => u.per_cpu = None,
        }
        u.sim_split.0 += a.details.get("sim_true_sharing").copied().unwrap_or(0.0);
        u.sim_split.1 += a.details.get("sim_false_sharing").copied().unwrap_or(0.0);
        u.element_writes += a.details.get("element_line_writes").copied().unwrap_or(0.0);
        u.element_reads += a.details.get("element_line_reads").copied().unwrap_or(0.0);
        let listed = a
            .cpus
            .as_ref()
            .filter(|c| !c.all && !c.list.is_empty())
            .map(|c| c.list.clone());
        let function = a
            .code
            .as_ref()
            .map(|c| c.function())
            .unwrap_or_else(|| "?".into());
        match u.functions.iter_mut().find(|x| x.name == function) {
            Some(x) => {
                x.writes += a.counts.writes();
                x.reads += a.counts.reads();
                x.cpus = x.cpus.max(cpus);
                match (&mut x.cpu_set, listed) {
                    (Some(set), Some(l)) => {
                        set.extend(l);
                        x.cpus = x.cpus.max(set.len() as u32);
                    }
                    _ => x.cpu_set = None,
                }
            }
            None => u.functions.push(FunctionUse {
                name: function,
                writes: a.counts.writes(),
                reads: a.counts.reads(),
                cpus,
                cpu_set: listed.map(|l| l.into_iter().collect()),
            }),
        }
    }
    // Exact evidence: a member's CPUs are those that touched it more than negligibly.
    for (_, u) in &mut uses {
        if let Some(map) = &u.per_cpu {
            u.cpus = accessors(map).len() as u32;
        }
    }
    for (_, u) in &mut uses {
        u.functions.sort_by(|a, b| {
            (b.writes + b.reads)
                .total_cmp(&(a.writes + a.reads))
                .then(a.name.cmp(&b.name))
        });
    }
    uses.sort_by_key(|(l, u)| (*l, u.offset));

    let total_lines = layout.size.div_ceil(cls).max(1);
    let mut lines: Vec<(u64, Vec<MemberUse>)> = Vec::new();
    let mut i = 0;
    while i < uses.len() {
        let line = uses[i].0;
        let mut members = Vec::new();
        while i < uses.len() && uses[i].0 == line {
            members.push(uses[i].1.clone());
            i += 1;
        }
        lines.push((line, members));
    }
    // Exact evidence counts everything, including a handful of accesses (a table filled in
    // once); lines far below the busiest one do not get a contention verdict.
    let busiest = lines
        .iter()
        .map(|(_, ms)| ms.iter().map(MemberUse::total).sum::<f64>())
        .fold(0.0, f64::max);
    let scale = match run {
        Some(r) => Scale::Run(r),
        None => Scale::Struct {
            rare: busiest * RARE,
        },
    };
    // The type's element writes: the neighbours of a line whose elements are only read.
    let (neighbour_whole, neighbour_concurrent) = (
        uses.iter().map(|(_, u)| u.element_writes).sum::<f64>(),
        overlap_by_line.values().map(|e| e.0).sum::<f64>(),
    );
    let mut lines: Vec<LineDiagnosis> = lines
        .into_iter()
        .map(|(line, members)| {
            let m = model.lines.get(&line);
            let whole_ew: f64 = members.iter().map(|m| m.element_writes).sum();
            let whole_er: f64 = members.iter().map(|m| m.element_reads).sum();
            let price = match run {
                Some(_) => {
                    let (ew, er, sequential) =
                        overlap_by_line.get(&line).copied().unwrap_or_default();
                    let concurrent = line_price(m, ew, er, neighbour_concurrent, machine);
                    RunPrice {
                        concurrent,
                        whole: match &whole_model {
                            Some(w) => line_price(
                                w.lines.get(&line),
                                whole_ew,
                                whole_er,
                                neighbour_whole,
                                machine,
                            ),
                            None => concurrent,
                        },
                        sequential,
                    }
                }
                // Without a run every access is taken as concurrent.
                None => {
                    let whole = line_price(m, whole_ew, whole_er, neighbour_whole, machine);
                    RunPrice {
                        concurrent: whole,
                        whole,
                        sequential: 0.0,
                    }
                }
            };
            // The whole rates' line: what a recorded line whose accesses cannot meet would
            // be if they did.
            let whole_line = whole_model.as_ref().map_or(m, |w| w.lines.get(&line));
            judge(
                line,
                cls,
                members,
                scale,
                m.map(|m| (m, per_cpu)),
                whole_line,
                price,
                machine,
            )
        })
        .collect();
    // Each line queued at its share of the busiest line's cycles, as `predict` and
    // `optimize` price the same layout (docs/cost-model.md, queueing).
    // A line only one lock's holders touch waits at the lock, not at the line.
    for l in &mut lines {
        if model
            .lines
            .get(&l.index)
            .is_some_and(|m| m.under_lock.is_some())
        {
            continue;
        }
        l.cost *= model.queueing.factor(l.cost);
    }
    let mut findings = model.findings();
    // Where the evidence says what its runs cost, a term below a measurable share of that is
    // negligible, whatever its class (a few cycles off a path that costs thousands a run).
    if let Some(work) = &model.run_work {
        for l in lines.iter_mut().filter(|l| is_contention(l.verdict)) {
            weigh_against_runs(&mut l.verdict, &mut l.explanation, l.cost, work);
        }
        for f in &mut findings {
            weigh_against_runs(&mut f.verdict, &mut f.explanation, f.cycles, work);
        }
    }
    lines.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.index.cmp(&b.index)));
    let cold_lines = total_lines.saturating_sub(lines.len() as u64);

    // Per member over the whole struct (a member spanning lines appears once).
    let mut members: Vec<MemberUse> = Vec::new();
    for (_, u) in uses {
        match members
            .iter_mut()
            .find(|m| m.offset == u.offset && m.name == u.name)
        {
            Some(m) => {
                m.counts.add(&u.counts);
                m.cpus = m.cpus.max(u.cpus);
                match (&mut m.cpu_set, &u.cpu_set) {
                    (Some(a), Some(b)) => {
                        a.extend(b.iter().copied());
                        if m.per_cpu.is_none() {
                            m.cpus = m.cpus.max(a.len() as u32);
                        }
                    }
                    _ => m.cpu_set = None,
                }
                match (&mut m.per_cpu, &u.per_cpu) {
                    (Some(a), Some(b)) => {
                        for (cpu, (w, r)) in b {
                            let e = a.entry(*cpu).or_default();
                            e.0 += w;
                            e.1 += r;
                        }
                        m.cpus = accessors(a).len() as u32;
                    }
                    _ => m.per_cpu = None,
                }
                m.sim_split.0 += u.sim_split.0;
                m.sim_split.1 += u.sim_split.1;
                m.element_writes += u.element_writes;
                m.element_reads += u.element_reads;
                for f in u.functions {
                    match m.functions.iter_mut().find(|x| x.name == f.name) {
                        Some(x) => {
                            x.writes += f.writes;
                            x.reads += f.reads;
                            x.cpus = x.cpus.max(f.cpus);
                        }
                        None => m.functions.push(f),
                    }
                }
            }
            None => members.push(u),
        }
    }
    members.sort_by_key(|m| m.offset);

    Diagnosis {
        type_name: layout.name.clone(),
        size: layout.size,
        cacheline_size: cls,
        lines,
        cold_lines,
        members,
        unresolved_fields: Vec::new(),
        misfits,
        findings,
        instances: model.as_allocated.as_ref().map(|m| m.priced.clone()),
        machine: format!("{} ({})", machine.name, machine.description),
        queueing: format!(
            "the busiest line of the current layout runs at utilization {:.2} ({})",
            model.queueing.utilization, model.utilization_source
        ),
    }
}

/// A recording's accesses less, on each line, the rarest of its threads' shares of the
/// line's streams (one thread's accesses to some bytes from one code path) while those left
/// out together, twice (each access at most its own miss and the miss of the writer it took
/// the line from), stay under the run's `floor`: together they cannot make the line matter,
/// and the model would price them at their stream's rate, since a stream spreads its
/// accesses evenly over every CPU it was seen on (main's one store to each element it fills
/// in beside a worker's million from the same site, a worker's one read of its neighbour's
/// slot at the end). The line's largest share always stays. Accesses that do not name one
/// thread are kept.
fn rare_threads_left_out(accesses: &[Access], cls: u64, floor: f64) -> Vec<Access> {
    // (offset, size, code path, thread)
    type Share = (u64, u64, String, u32);
    let share = |a: &Access| -> Option<(u64, Share)> {
        let thread = a
            .cpus
            .as_ref()
            .filter(|c| !c.all && c.list.len() == 1)
            .map(|c| c.list[0])?;
        let off = a.offset?;
        let path = a.code.as_ref().map(|c| c.function()).unwrap_or_default();
        Some((off / cls, (off, a.size.unwrap_or(0), path, thread)))
    };
    let mut per_line: BTreeMap<u64, BTreeMap<Share, f64>> = BTreeMap::new();
    for a in accesses {
        if let Some((line, key)) = share(a) {
            *per_line.entry(line).or_default().entry(key).or_default() += a.counts.accesses();
        }
    }
    let mut left_out: BTreeSet<(u64, Share)> = BTreeSet::new();
    for (line, shares) in per_line {
        let mut by_use: Vec<(Share, f64)> = shares.into_iter().collect();
        by_use.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        by_use.pop();
        let mut together = 0.0;
        for (key, n) in by_use {
            together += n;
            if 2.0 * together >= floor {
                break;
            }
            left_out.insert((line, key));
        }
    }
    accesses
        .iter()
        .filter(|a| share(a).is_none_or(|k| !left_out.contains(&k)))
        .cloned()
        .collect()
}

/// The cost model's view of the diagnosed layout in place.
struct Model<'m> {
    lines: BTreeMap<u64, contention::LineModel>,
    locality: Vec<contention::PathLocality>,
    pairs: Vec<contention::PairModel>,
    /// Where instances do not all start a line: the lines as they are.
    as_allocated: Option<Misaligned>,
    /// Embedded members whose own sub-fields falsely share a line that another offset parts:
    /// each with the member's name and type.
    embedded: Vec<(contention::EmbeddedModel, String, String)>,
    cls: u64,
    machine: &'m MachineModel,
    /// The busiest line's queueing, chosen as `predict` chooses it
    /// ([`super::model::evidence_utilization`]), and where its utilization came from.
    queueing: cost::Queueing,
    utilization_source: String,
    /// What the runs cost, where the evidence says ([`cost::RunWork`]).
    run_work: Option<cost::RunWork>,
}

impl<'m> Model<'m> {
    fn new(
        layout: &Layout,
        accesses: &[Access],
        machine_cpus: Option<u32>,
        machine: &'m MachineModel,
        instances: &Instances,
    ) -> Self {
        let cls = layout.cacheline_size;
        let units = cost::units_in_place(layout);
        let cpus = machine_cpus
            .unwrap_or(machine.cpus)
            .min(machine.cpus)
            .max(1);
        let streams = cost::streams(&units, layout, accesses, cpus);
        let mut placement = cost::current_placement(layout, &units);
        // The struct's alignment as the command's model knows it (natural alignments need
        // the types, which `units_in_place` does without).
        if instances.layout_align > 0 {
            placement.align = instances.layout_align;
        }
        let reference = instances.busiest_line(&streams, &placement, cls, machine);
        let u = super::model::evidence_utilization(
            accesses,
            machine_cpus,
            machine,
            &streams,
            reference,
        );
        let (utilization, utilization_source) = (u.utilization, u.source);
        let queueing = cost::Queueing {
            reference,
            utilization,
        };
        let as_allocated = instances.misaligned().then(|| {
            misaligned(
                &units, &streams, &placement, cls, machine, &queueing, instances,
            )
        });
        let embedded = contention::embedded(&units, &streams, &placement, cls, machine, &queueing)
            .into_iter()
            .map(|e| {
                let name = units[e.unit].name.clone();
                let ty = layout
                    .members
                    .iter()
                    .find(|f| f.name == name)
                    .map(|f| f.type_name.clone())
                    .unwrap_or_default();
                (e, name, ty)
            })
            .collect();
        Model {
            embedded,
            lines: contention::lines(&units, &streams, &placement, cls, machine),
            locality: contention::locality(&units, &streams, &placement, cls, machine),
            pairs: instances.pairs(&streams, &placement, cls, machine, &queueing),
            as_allocated,
            cls,
            machine,
            queueing,
            utilization_source,
            run_work: cost::RunWork::of(&streams),
        }
    }

    /// Locality and adjacent pairs that matter next to the lines' own cycles.
    fn findings(&self) -> Vec<Finding> {
        let on_lines: f64 = self.lines.values().map(|l| l.cycles).sum();
        let pairs: f64 = self.pairs.iter().map(|p| p.cycles).sum();
        let extra: f64 = self.locality.iter().map(|p| p.cycles).sum();
        let total = on_lines + pairs + extra;
        let mut out = Vec::new();
        for p in &self.pairs {
            // A pair matters when it costs as much as a quarter of its two lines' own cycles.
            let own: f64 = [p.first, p.first + 1]
                .iter()
                .filter_map(|i| self.lines.get(i))
                .map(|l| l.cycles)
                .sum();
            if p.cycles < 0.25 * own || p.cycles < 0.01 * total {
                continue;
            }
            out.push(Finding {
                verdict: Verdict::AdjacentPair,
                lines: vec![p.first, p.first + 1],
                members: p.members.clone(),
                paths: p.paths.clone(),
                cycles: p.cycles,
                explanation: format!(
                    "lines {} and {} are one aligned 128-byte pair: on {} the L2 fetches both lines of a pair, so writes on one invalidate what the other's users prefetched ({}; modeled {:.0} cycles, {} the pair costs {:.0}% of one line's false sharing). Keep writers and other paths' members 128 bytes apart (align the hot groups to 128, as crossbeam's CachePadded and the kernel's CACHELINE_PADDING do on x86)",
                    p.first,
                    p.first + 1,
                    self.machine.name,
                    p.members
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    p.cycles,
                    if self.machine.pair_share.is_some() {
                        "as measured by lineup calibrate:"
                    } else {
                        "assuming"
                    },
                    self.machine.pair_share() * 100.0
                ) + &if p.share < 1.0 - 1e-9 {
                    format!(
                        "; in {:.0}% of the instances: those that start {} bytes into a 128-byte pair (a {}-byte aligned instance starts either half of one)",
                        100.0 * p.share,
                        p.start,
                        self.cls
                    )
                } else {
                    String::new()
                },
            });
        }
        if let Some(m) = &self.as_allocated {
            let extra = m.priced.cycles_as_allocated - m.priced.cycles_aligned;
            if extra > 0.0 && extra >= 0.01 * total && !m.members.is_empty() {
                out.push(Finding {
                    verdict: Verdict::Misaligned,
                    lines: m.lines.clone(),
                    members: m.members.clone(),
                    paths: m.paths.clone(),
                    cycles: extra,
                    explanation: m.explain(extra, self.cls),
                });
            }
        }
        for (e, name, ty) in &self.embedded {
            out.push(embedded_finding(e, name, ty, self.cls));
        }
        for p in &self.locality {
            if total > 0.0 && p.cycles < contention::LOCALITY_SHARE * total {
                continue;
            }
            out.push(Finding {
                verdict: Verdict::Locality,
                lines: p.line_indices.clone(),
                members: p.members.clone(),
                paths: vec![p.path.clone()],
                cycles: p.cycles,
                explanation: format!(
                    "{} {} {} members over {} cache lines; their bytes fit in {}: gathering them saves an L2 miss per run per extra line (modeled {:.0} cycles, {:.0}% of the struct's modeled cycles)",
                    p.path,
                    if p.reads_only { "reads" } else { "touches" },
                    p.members.len(),
                    p.lines,
                    p.fewest,
                    p.cycles,
                    if total > 0.0 { 100.0 * p.cycles / total } else { 100.0 }
                ),
            });
        }
        out
    }
}

/// An embedded member whose sub-fields falsely share a line at its offset: what a layout can
/// do is move the member (its own members stay in their order), not part them by reordering.
fn embedded_finding(e: &contention::EmbeddedModel, name: &str, ty: &str, cls: u64) -> Finding {
    let quoted: Vec<String> = e.members.iter().map(|m| format!("`{m}`")).collect();
    let align = if e.best_phase == 0 {
        format!(", or align `{name}` (or its type) to {cls} bytes")
    } else {
        String::new()
    };
    Finding {
        verdict: Verdict::FalseSharing,
        lines: e.lines.clone(),
        members: e.members.clone(),
        paths: e.paths.clone(),
        cycles: e.false_cycles,
        explanation: format!(
            "{} share a line with `{name}` ({}) at offset {}: false sharing between {} inside one embedded member, {:.0} of its sub-fields' {:.0} modeled cycles among themselves. Its members keep their order, so no order of the outer struct parts them; its offset does: {} bytes into a line (offset {}, the nearest such) puts them on different lines, {:.0} modeled cycles. Move `{name}` there by reordering or padding the members before it{align} (`lineup optimize` tries the orders that do)",
            quoted.join(", "),
            if ty.is_empty() {
                "an embedded struct"
            } else {
                ty
            },
            e.offset,
            match e.paths.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                _ => e.paths.join(""),
            },
            e.false_cycles,
            e.cycles,
            e.best_phase,
            e.best_offset,
            e.best_cycles
        ),
    }
}

/// The diagnosed layout as its instances are: the lines' cost there against line-aligned
/// instances, and the members that share a line there which line-aligned instances keep
/// apart (a writer and another path's member: what the offset costs).
struct Misaligned {
    priced: InstancesPriced,
    starts: String,
    site: Option<String>,
    members: Vec<String>,
    paths: Vec<String>,
    /// The type's lines (on line-aligned instances) those members are on.
    lines: Vec<u64>,
    /// The share in which the offset brings another path's member onto a writer's line.
    joined_share: f64,
    /// Where the struct fits in a line: its size rounded up to a power of two.
    fits_in: Option<u64>,
    /// The share that straddles a line boundary and splits what one run touches on a line
    /// handed between CPUs over two lines.
    split_share: f64,
}

impl Misaligned {
    /// The finding's words: what the offset does (brings members onto one line, or splits
    /// what one run touches over two), what it costs, and the fix.
    fn explain(&self, extra: f64, cls: u64) -> String {
        let members = self
            .members
            .iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let of = |share: f64| {
            if share >= 1.0 - 1e-9 {
                "every instance".to_string()
            } else {
                format!("{:.0}% of the instances", 100.0 * share)
            }
        };
        let mut what = Vec::new();
        if self.joined_share > 0.0 {
            what.push(format!(
                "members share a line in {} though the line-aligned layout keeps them apart",
                of(self.joined_share)
            ));
        }
        if self.split_share > 0.0 {
            what.push(format!(
                "{} straddle a line boundary, which splits what one run touches on a line handed between CPUs ({}) over two lines, so each hand-off moves both",
                of(self.split_share),
                self.paths.join(" and ")
            ));
        }
        let site = self
            .site
            .as_ref()
            .map(|s| format!(" at {s}"))
            .unwrap_or_default();
        format!(
            "instances start {} ({}): {members}: {}: the lines cost {:.0} modeled cycles as the instances are, {:.0} on line-aligned instances ({extra:.0} more, from the offset). Align the instances{site} to {}, or lay the struct out so that it holds at every start (`lineup optimize` prices the instances as they are)",
            self.starts,
            self.priced.source,
            what.join("; "),
            self.priced.cycles_as_allocated,
            self.priced.cycles_aligned,
            match self.fits_in {
                Some(a) if a < cls => format!(
                    "{a} bytes (the struct's size rounded up to a power of two: no instance then straddles a line) or {cls}"
                ),
                _ => format!("{cls} bytes"),
            }
        )
    }
}

fn misaligned(
    units: &[cost::Unit],
    streams: &[cost::Stream],
    placement: &cost::Placement,
    cls: u64,
    machine: &MachineModel,
    q: &cost::Queueing,
    instances: &Instances,
) -> Misaligned {
    let sharing = |c: &cost::Cost| c.false_cycles + c.true_cycles;
    let aligned = sharing(&cost::evaluate(units, streams, placement, cls, machine, q));
    let as_allocated = sharing(&instances.evaluate(units, streams, placement, cls, machine, q));
    let cls = cls.max(1);
    let line_at = |s: &cost::Stream, by: u64| (placement.offsets[s.unit] + s.inner + by) / cls;
    let mut members: Vec<(u64, String)> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut lines: Vec<u64> = Vec::new();
    // A line another path writes, on line-aligned instances: what one run touches there is
    // handed between CPUs with it.
    let handed = |s: &cost::Stream| {
        streams.iter().any(|o| {
            o.writes > 0.0
                && o.path != s.path
                && line_at(o, 0) == line_at(s, 0)
                && (o.cpu_list.is_empty() || o.cpu_list.iter().all(|c| !s.cpu_list.contains(c)))
        })
    };
    let mut joined_share = 0.0;
    let mut split_share = 0.0;
    for (start, w) in instances.phases(placement.align, cls, false) {
        let (mut joined, mut split) = (false, false);
        for (i, a) in streams.iter().enumerate() {
            for b in &streams[i + 1..] {
                let together = line_at(a, 0) == line_at(b, 0);
                let apart_here = line_at(a, start) != line_at(b, start);
                // Another path's member brought onto a writer's line by the offset.
                let joins = !together
                    && !apart_here
                    && (a.writes > 0.0 || b.writes > 0.0)
                    && a.path != b.path;
                // What one run touches on one handed-over line, split over two by an instance
                // that straddles a line boundary: each hand-off moves both lines.
                let splits = together
                    && apart_here
                    && a.path == b.path
                    && cost::same_run(a, b)
                    && (handed(a) || handed(b));
                if !joins && !splits {
                    continue;
                }
                joined |= joins;
                split |= splits;
                let mut involved = vec![a.path.clone()];
                if splits {
                    // The paths that hand the line over with it.
                    for o in streams.iter().filter(|o| {
                        o.writes > 0.0 && o.path != a.path && line_at(o, 0) == line_at(a, 0)
                    }) {
                        involved.push(o.path.clone());
                    }
                }
                for p in involved {
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                for s in [a, b] {
                    let name = if s.field.is_empty() {
                        units[s.unit].name.clone()
                    } else {
                        s.field.clone()
                    };
                    let at = placement.offsets[s.unit] + s.inner;
                    if !members.iter().any(|(_, n)| *n == name) {
                        members.push((at, name));
                    }
                    if !paths.contains(&s.path) {
                        paths.push(s.path.clone());
                    }
                    if !lines.contains(&line_at(s, 0)) {
                        lines.push(line_at(s, 0));
                    }
                }
            }
        }
        if joined {
            joined_share += w;
        }
        if split {
            split_share += w;
        }
    }
    members.sort();
    lines.sort_unstable();
    Misaligned {
        priced: InstancesPriced {
            offsets_in_line: instances.starts.iter().map(|s| s.offset).collect(),
            shares: instances.starts.iter().map(|s| s.share).collect(),
            source: instances.describe_source(),
            cycles_aligned: aligned,
            cycles_as_allocated: as_allocated,
        },
        starts: instances.describe_starts(cls),
        site: instances.site.clone(),
        members: members.into_iter().map(|(_, n)| n).collect(),
        paths,
        lines,
        joined_share,
        split_share,
        fits_in: (placement.size <= cls).then(|| placement.size.max(1).next_power_of_two()),
    }
}

/// Where an access belongs in `layout`, and why not at its offset when it does not fit there.
/// An offset fits when it lands in a member and, for a scalar member (no struct, union or
/// array that could be read in parts), at its start, and the access's size, when known, ends
/// inside the member. Evidence taken on another kernel breaks this: a hole, padding or a point
/// past the end, the middle of a pointer. Where the evidence names the member (`field`: perf's
/// data-type profiling, a sketch) and this layout has it, the access goes there instead.
fn place(layout: &Layout, a: &Access, off: u64) -> (u64, Option<String>) {
    let who = a
        .code
        .as_ref()
        .map(|c| format!(" by {}", c.function()))
        .unwrap_or_default();
    let reason = match display_member(&layout.members, off) {
        None if off >= layout.size => Some(format!(
            "is past the end of the {}-byte struct",
            layout.size
        )),
        None => Some("falls in a hole or padding".to_string()),
        Some(f) => {
            let aggregate = f.inline.is_some()
                || f.declarator.contains('[')
                || f.type_name.starts_with("struct ")
                || f.type_name.starts_with("union ")
                || f.size > 16;
            if !aggregate && off != f.offset {
                Some(format!(
                    "is {} bytes into `{}` ({} bytes, {}), not at its start",
                    off - f.offset,
                    f.name,
                    f.size,
                    f.type_name
                ))
            } else if let Some(size) = a.size.filter(|s| off + s > f.offset + f.size) {
                Some(format!(
                    "is a {size}-byte access that straddles `{}` ({} bytes at {})",
                    f.name, f.size, f.offset
                ))
            } else {
                None
            }
        }
    };
    let Some(reason) = reason else {
        return (off, None);
    };
    let named = a.field.as_deref().and_then(|name| {
        let top = name.split(['.', '[']).next().unwrap_or(name);
        layout.members.iter().find(|m| m.name == top)
    });
    match named {
        Some(m) => (
            m.offset,
            Some(format!(
                "offset {off}{who} {reason} in this layout: placed on `{}` at {} by the member \
                 the evidence names (the evidence's layout differs: another kernel or build?)",
                m.name, m.offset
            )),
        ),
        None if let Some((name, m, why)) = renamed(layout, a, off) => (
            m.offset,
            Some(format!(
                "offset {off}{who} {reason} in this layout, and the evidence names `{name}`, \
                 which this layout does not have: mapped to `{}` at {}, inferred ({why}; \
                 renamed between kernels?)",
                m.name, m.offset
            )),
        ),
        None => {
            let placed = match display_member(&layout.members, off) {
                Some(f) => format!("counted on `{}`, where it lands", f.name),
                None => "not counted on any member".to_string(),
            };
            (
                off,
                Some(format!(
                    "offset {off}{who} {reason} in this layout (evidence from another kernel or \
                     build?): {placed}"
                )),
            )
        }
    }
}

/// The member of this layout a renamed one most likely is, when the evidence names a member
/// this layout lacks: a name alike (`state` and `__state`), within a line of the evidence's
/// offset, not less than half the access (a member narrowed from `long` to `int`); the
/// nearest of the most alike. With the reason.
fn renamed<'l>(
    layout: &'l Layout,
    a: &Access,
    off: u64,
) -> Option<(String, &'l crate::layout::Field, String)> {
    let name = a.field.as_deref()?;
    let top = name.split(['.', '[']).next().unwrap_or(name);
    let cls = layout.cacheline_size.max(1);
    let best = layout
        .members
        .iter()
        .filter(|m| !m.name.is_empty() && m.offset.abs_diff(off) < cls)
        .filter(|m| a.size.is_none_or(|s| s <= m.size.max(1) * 2))
        .map(|m| (strsim::normalized_damerau_levenshtein(top, &m.name), m))
        .filter(|(sim, _)| *sim >= 0.6)
        .max_by(|x, y| {
            x.0.total_cmp(&y.0)
                .then(y.1.offset.abs_diff(off).cmp(&x.1.offset.abs_diff(off)))
        })?;
    let (sim, m) = best;
    let d = m.offset.abs_diff(off);
    let why = format!(
        "the name is {:.0}% alike, {}",
        sim * 100.0,
        if d == 0 {
            "at the evidence's offset".to_string()
        } else {
            format!("{d} bytes from the evidence's offset")
        }
    );
    Some((top.to_string(), m, why))
}

/// CPUs that wrote a member more than negligibly. Negligible next to the busiest CPU: 64 threads sharing a counter equally all count, the
/// main thread's one initializing store next to a worker's million does not.
fn writers_of(map: &BTreeMap<u32, (f64, f64)>) -> BTreeSet<u32> {
    let top = map.values().map(|v| v.0).fold(0.0, f64::max);
    map.iter()
        .filter(|(_, v)| v.0 > 0.0 && v.0 >= NEGLIGIBLE * top)
        .map(|(c, _)| *c)
        .collect()
}

/// CPUs that touched a member more than negligibly: its writers, and the CPUs that read it
/// more than negligibly next to its busiest reader (a spinning reader's millions of loads do
/// not make the other side's steady reads negligible).
fn accessors(map: &BTreeMap<u32, (f64, f64)>) -> BTreeSet<u32> {
    let top = map.values().map(|v| v.1).fold(0.0, f64::max);
    let mut out = writers_of(map);
    out.extend(
        map.iter()
            .filter(|(_, v)| v.1 > 0.0 && v.1 >= NEGLIGIBLE * top)
            .map(|(c, _)| *c),
    );
    out
}

/// A line as the model classes it (`contention::verdict_for`): the class of its largest
/// terms, its explanation and terms, at the model's cycles; `None` where it prices nothing.
/// The model's streams are the struct's members, so an array member is one stream: where
/// the line's false sharing is between slots of one array (`hits[0]`, `hits[1]`, each
/// thread its own), the explanation names the slots and says what parts them, padding each
/// slot, since moving members cannot.
fn modeled_line(
    index: u64,
    cls: u64,
    members: &[MemberUse],
    significant: &[&MemberUse],
    line: &contention::LineModel,
    per_cpu: bool,
) -> Option<LineDiagnosis> {
    let (verdict, mut explanation) = contention::verdict_for(line, per_cpu)?;
    if verdict == Verdict::FalseSharing
        && let Some(array) = slots_of_one_array(significant.iter().map(|m| m.name.as_str()))
    {
        let (written, read): (Vec<&MemberUse>, Vec<&MemberUse>) = significant
            .iter()
            .copied()
            .partition(|m| m.counts.writes() > 0.0);
        let mut text = written
            .iter()
            .map(|w| describe_writes(w))
            .collect::<Vec<_>>()
            .join(", and ");
        if !read.is_empty() {
            text.push_str(&format!(
                " while {} on the same line {} {}",
                names(&read),
                if read.len() == 1 { "is" } else { "are" },
                describe_reads(&read)
            ));
        }
        explanation = format!(
            "{text}: {:.0}% of the line's modeled cycles are misses of one thread on a slot another thread writes{}",
            pct(
                line.class_cycles(contention::TermClass::FalseSharing),
                line.cycles
            ),
            slots_advice(array, cls)
        );
    }
    Some(LineDiagnosis {
        index,
        start: index * cls,
        end: (index + 1) * cls - 1,
        verdict,
        explanation,
        cost: line.cycles,
        members: members.to_vec(),
        elements: None,
        terms: line.terms.clone(),
    })
}

/// What parts slots of one array member that different threads use: not a move.
fn slots_advice(array: &str, cls: u64) -> String {
    format!(
        ". They are slots of one array member, `{array}`: moving members cannot part them, padding each slot to a line of its own does (an element type of a whole line, `struct {{ alignas({cls}) T v; }} {array}[N]`; `lineup optimize` prices it and, where the model prices it below the layout as it is and the best order without it, writes the patch)"
    )
}

fn judge(
    index: u64,
    cls: u64,
    members: Vec<MemberUse>,
    scale: Scale,
    model: Option<(&contention::LineModel, bool)>,
    whole: Option<&contention::LineModel>,
    price: RunPrice,
    machine: &MachineModel,
) -> LineDiagnosis {
    // The model's line, and whether the struct is per CPU already.
    let (model, per_cpu) = match model {
        Some((m, p)) => (Some(m), p),
        None => (None, false),
    };
    let total: f64 = members.iter().map(MemberUse::total).sum();
    let significant: Vec<&MemberUse> = members
        .iter()
        .filter(|m| total > 0.0 && m.total() / total >= NEGLIGIBLE)
        .collect();
    if !significant.is_empty() && significant.iter().all(|m| m.per_cpu.is_some()) {
        // Elements of an array (a recording's `element_line_writes`/`element_line_reads`):
        // each element is its own object, so the struct's view holds one thread per member
        // and the model's streams cannot see the threads sharing the physical line; its
        // price there is `line_price`'s, totals without terms. Exact evidence's own rules
        // class those lines until the model has streams per element.
        let elements = members
            .iter()
            .any(|m| m.element_writes > 0.0 || m.element_reads > 0.0);
        return match scale {
            Scale::Struct { rare } => {
                // The model's verdict where it prices the line, as for any other evidence:
                // which CPUs write which bytes is what its terms already class (a member
                // written by two CPUs beside members other CPUs write is false sharing
                // between those writers, not true sharing of the line). Exact evidence's own
                // rules below only where the model has nothing to price, for a line too
                // rarely touched to count, or for elements of an array (simulated transfers
                // without a run: neighbouring instances, `between_objects`).
                let simulated = members.iter().any(|m| m.sim_split.0 + m.sim_split.1 > 0.0);
                if total >= rare
                    && !elements
                    && !simulated
                    && let Some(d) = model
                        .and_then(|m| modeled_line(index, cls, &members, &significant, m, per_cpu))
                {
                    return LineDiagnosis {
                        cost: price.whole.1,
                        ..d
                    };
                }
                // Who writes what names the class; the model prices it (never an access
                // count: a cost is the model's cycles, as `predict` prices the same line).
                let mut d = judge_exact(index, cls, &members, &significant, total, rare, 0.0);
                if is_contention(d.verdict) {
                    d.cost = price.whole.1;
                    d.terms = model.map(|m| m.terms.clone()).unwrap_or_default();
                }
                d
            }
            Scale::Run(run) => {
                // The model's verdict, as for sampled and sketched evidence, so that a
                // recording and the same accesses given any other way get one answer, and
                // never this run's interleaving (its simulated split): the class of the
                // line's terms at the rates of the accesses that can meet another thread's;
                // for a line under the run's floor, what it would be, at those rates or,
                // where none of its accesses can meet (handed over under a lock), at the
                // whole rates. The model, priced at the concurrent rates, says whether it
                // matters and what it costs.
                let matters = run.matters(price.concurrent.0);
                let modeled = if elements {
                    None
                } else {
                    model
                        .and_then(|m| modeled_line(index, cls, &members, &significant, m, per_cpu))
                        .or_else(|| {
                            whole.filter(|_| !matters).and_then(|w| {
                                modeled_line(index, cls, &members, &significant, w, per_cpu)
                            })
                        })
                };
                // Exact evidence's rules where the model has nothing to price: elements
                // (above), neighbouring instances of the type, each used by its own thread
                // (the struct's view holds one thread per member, so the model finds one CPU
                // on the line; `between_objects` reads the simulated split), and a line whose
                // other threads were too rare to keep (`rare_threads_left_out`): a thread
                // under the run's floor neither writes nor shares a member. Only a line too
                // small to matter as a whole is judged with every thread, to say what it
                // would be.
                let mut d = modeled.unwrap_or_else(|| {
                    let whole_line_rare = 2.0 * total < run.floor();
                    let cpu_floor = if matters || !whole_line_rare {
                        run.floor()
                    } else {
                        0.0
                    };
                    judge_exact(index, cls, &members, &significant, total, 0.0, cpu_floor)
                });
                if matters {
                    priced_in_run(&mut d, total, &run, &price);
                } else {
                    // What it would be, named negligible or handed over.
                    not_contended_in_run(&mut d, total, &run, &price);
                }
                d
            }
        };
    }
    let written: Vec<&MemberUse> = significant
        .iter()
        .copied()
        .filter(|m| m.counts.writes() > 0.0)
        .collect();
    let transfers: f64 = members.iter().map(|m| m.counts.transfers()).sum();
    // A HITM or peer transfer moves the line between two CPUs by definition, whatever the
    // per-member CPU counts say (each member of a per-thread array has one CPU); and when
    // the evidence lists the CPUs, members touched from different ones involve several.
    let listed: Option<std::collections::BTreeSet<u32>> = significant.iter().try_fold(
        Default::default(),
        |mut all: std::collections::BTreeSet<u32>, m| {
            all.extend(m.cpu_set.as_ref()?.iter().copied());
            Some(all)
        },
    );
    let multi_cpu = significant.iter().any(|m| m.cpus > 1)
        || transfers > 0.0
        || listed.is_some_and(|s| s.len() > 1);
    let rmt: f64 = members
        .iter()
        .map(|m| m.counts.rmt_hitm + m.counts.rmt_peer)
        .sum();

    // The model's verdict where it prices the line; the evidence's own rules below only
    // where it cannot: no access, loads whose writer was not sampled, or transfers the
    // evidence measured where the model, from its CPU counts, expects none.
    // Evidence with no CPU information at all (perf's data-type profiles) cannot tell one
    // CPU's traffic from several: the evidence's rules say so, with the model's verdict as
    // what it would be on different CPUs.
    let no_cpus = members.iter().all(|m| m.cpus == 0) && transfers <= 0.0;
    let modeled = model
        .filter(|_| !no_cpus)
        .and_then(|m| contention::verdict_for(m, per_cpu).map(|v| (v, m.cycles)));
    if let Some(((verdict, explanation), cycles)) = modeled {
        return LineDiagnosis {
            index,
            start: index * cls,
            end: (index + 1) * cls - 1,
            verdict,
            explanation,
            cost: cycles,
            members,
            elements: None,
            terms: model.map(|m| m.terms.clone()).unwrap_or_default(),
        };
    }
    if let Some(m) = model
        && !no_cpus
        && total > 0.0
        && transfers <= 0.0
        && !written.is_empty()
    {
        let who: Vec<String> = written.iter().map(|w| describe_writes(w)).collect();
        return LineDiagnosis {
            index,
            start: index * cls,
            end: (index + 1) * cls - 1,
            verdict: Verdict::NotShared,
            explanation: format!(
                "{}: the model finds no other CPU touching the line between these writes ({:.0} CPU(s) on the line{}), so nothing moves between caches",
                who.join(", and "),
                m.cpus,
                if m.cpus_assumed {
                    ", the paths taken to run on different CPUs"
                } else {
                    ""
                }
            ),
            cost: 0.0,
            members,
            elements: None,
            terms: Vec::new(),
        };
    }
    let (verdict, explanation) = if total <= 0.0 {
        (Verdict::Cold, "no recorded access".to_string())
    } else if written.is_empty() && transfers > 0.0 {
        loads_only_verdict(&significant, transfers)
    } else if written.is_empty() {
        (
            Verdict::ReadShared,
            format!(
                "{} only loaded: read sharing keeps a valid copy in every cache",
                names(&significant)
            ),
        )
    } else if significant.len() == 1 {
        let m = significant[0];
        if m.cpus > 1 {
            (
                Verdict::TrueSharing,
                format!(
                    "{}; no layout helps: only splitting `{}` (per CPU, per LLC or per node) or sharding it does",
                    describe_writes(m),
                    m.name
                ),
            )
        } else {
            (
                Verdict::ReadShared,
                format!(
                    "{} and nothing else on the line is touched",
                    describe_writes(m)
                ),
            )
        }
    } else {
        let others: Vec<&MemberUse> = significant
            .iter()
            .copied()
            .filter(|m| {
                !written
                    .iter()
                    .any(|w| w.offset == m.offset && w.name == m.name)
            })
            .collect();
        let mut text = written
            .iter()
            .map(|w| describe_writes(w))
            .collect::<Vec<_>>()
            .join(", and ");
        if !others.is_empty() {
            text.push_str(&format!(
                " while {} on the same line {} {}",
                names(&others),
                if others.len() == 1 { "is" } else { "are" },
                describe_reads(&others)
            ));
        } else if written.len() > 1 {
            text.push_str(": different members written on one line");
        }
        let truly: Vec<&&MemberUse> = written.iter().filter(|w| w.cpus > 1).collect();
        if multi_cpu {
            if !truly.is_empty() {
                let list: Vec<&MemberUse> = truly.iter().map(|w| **w).collect();
                text.push_str(&format!(
                    ". Moving them apart removes the false sharing; {} {} truly shared (written from many CPUs): only splitting helps there",
                    names(&list),
                    if list.len() == 1 { "itself stays" } else { "stay" }
                ));
            }
            (Verdict::FalseSharing, text)
        } else {
            match model.and_then(contention::verdict) {
                Some((v, _)) => text.push_str(&format!(
                    ". The evidence does not say how many CPUs: on one, nothing moves; if these paths run on different CPUs, the model's verdict is {}",
                    v.label()
                )),
                None => text.push_str(
                    ". The evidence does not say how many CPUs: on one, nothing moves; the model finds nothing to price on several either",
                ),
            }
            (Verdict::ReadMostlyNextToWriteHot, text)
        }
    };
    // Cost, in the model's cycles as everywhere: the transfers the evidence measured, each
    // at the machine's latency for its kind (local or remote), when it has them; else what
    // the model prices the line at on different CPUs (never an access count).
    let cost = if transfers > 0.0 {
        (transfers - rmt).max(0.0) * machine.local_hitm + rmt * machine.remote_hitm
    } else {
        model.map_or(0.0, |m| m.cycles)
    };
    LineDiagnosis {
        index,
        start: index * cls,
        end: (index + 1) * cls - 1,
        verdict,
        explanation,
        cost: if matches!(verdict, Verdict::ReadShared | Verdict::Cold) {
            0.0
        } else {
            cost
        },
        members,
        elements: None,
        terms: Vec::new(),
    }
}

/// The verdict from exact evidence (every access names its one CPU; counts are exact), where
/// the cost model has nothing to price (`judge`: elements of an array, neighbouring
/// instances, rare lines, lines priced at nothing): a line falsely shares when a member
/// written by one CPU sits beside a member another CPU touches; a member is truly shared
/// when several CPUs write it, or one writes and another reads it. A CPU's writes (reads)
/// below [`NEGLIGIBLE`] of the busiest writer's (reader's) do not count (main filling in a table before the workers start, summing per-thread
/// counts after they stop). A line whose every written member has several writers is true
/// sharing even where members differ (a lock and the data it guards). Simulated transfers,
/// split into true and false sharing, are quoted when the evidence has them.
/// Below this share of a line's simulated transfers, false sharing beside truly shared
/// members is not worth a move.
const FALSE_SHARE_NEGLIGIBLE: f64 = 0.2;

/// Below this share of a line's simulated transfers, members only read beside members that
/// several CPUs write are not worth a move. Lower than [`FALSE_SHARE_NEGLIGIBLE`]: a move that
/// removes a sixth of a hot line's transfers is worth making, and the share swings with how
/// the threads happened to interleave (seed 000's replica: 17.6% in a run that 0.2 called true
/// sharing, above 20% in others).
const READ_NEIGHBOURS_NEGLIGIBLE: f64 = 0.05;

/// Recorded evidence numbers threads per object (per array element), so one thread per
/// element reads as one CPU. When no two members of the struct explain the line's simulated
/// transfers yet most of them are false sharing, and they are not rare next to the line's
/// writes, the line is shared between elements or neighbouring instances: distinct objects.
fn between_objects(sim_true: f64, sim_false: f64, members: &[MemberUse]) -> bool {
    let writes: f64 = members.iter().map(|m| m.counts.writes()).sum();
    // Deterministic evidence first: threads writing distinct elements of one physical line.
    // A share, not a majority: in an array of per-thread elements the last element's end
    // (or the first's start) has no neighbour, so at two threads half the writes are on a
    // shared line, and a 64-byte element calloc'd 16 or 32 bytes into a line (`lreg_args`)
    // sat right on a rule of half, on either side of it from run to run.
    let elements: f64 = members.iter().map(|m| m.element_writes).sum();
    (elements > 0.0 && elements >= ELEMENT_WRITE_SHARE * writes)
        || (sim_false > 0.0
            && sim_true < FALSE_SHARE_NEGLIGIBLE * (sim_true + sim_false)
            && sim_false >= 0.01 * writes)
}

/// Of a line's writes, the share to elements on physical lines shared with other threads'
/// elements that makes it false sharing between elements.
const ELEMENT_WRITE_SHARE: f64 = 0.25;

/// Of a read-only line's accesses, the share of reads of elements on physical lines where
/// another thread writes another element (the end of one thread's element beside the start
/// of the next's) that makes it false sharing between elements.
const ELEMENT_READ_SHARE: f64 = 0.01;

/// Members of a line only read here, each by its own element's thread, while another
/// thread writes a neighbouring element on the same physical line: what reads that and
/// how often.
fn read_beside_written_element(members: &[MemberUse], total: f64, cpu_floor: f64) -> bool {
    let reads: f64 = members.iter().map(|m| m.element_reads).sum();
    reads > 0.0 && reads >= cpu_floor && reads >= ELEMENT_READ_SHARE * total
}

/// `verdict` negligible, with the weighing said, where `cycles` are below
/// [`cost::RUN_COST_SHARE`] of what the evidence's runs cost.
fn weigh_against_runs(
    verdict: &mut Verdict,
    explanation: &mut String,
    cycles: f64,
    work: &cost::RunWork,
) {
    if work.negligible(cycles) {
        *explanation = format!(
            "{} (negligible: {}; no layout helps here)",
            explanation,
            work.weighed(cycles)
        );
        *verdict = Verdict::Negligible;
    }
}

fn is_contention(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::FalseSharing
            | Verdict::TrueSharing
            | Verdict::CoWritten
            | Verdict::ReadMostlyNextToWriteHot
    )
}

fn pct(x: f64, of: f64) -> f64 {
    if of > 0.0 { 100.0 * x / of } else { 0.0 }
}

/// A contended line of a recording that matters: its cost is the model's, and the
/// explanation says what the model priced beside what this run's simulation measured.
fn priced_in_run(d: &mut LineDiagnosis, accesses: f64, run: &RunTotals, price: &RunPrice) {
    if !is_contention(d.verdict) {
        return;
    }
    let simulated: f64 = d.members.iter().map(|m| m.counts.transfers()).sum();
    d.cost = price.concurrent.1;
    d.explanation.push_str(&format!(
        ". Priced by the model at the threads' rates (what they do, whichever way they interleave): {:.0} transfers over the run ({:.0} of the line's {accesses:.0} accesses made under a lock every thread there held, or while no other thread was alive, which cannot meet), at least {:.0} ({}) to matter; this run's simulation measured {simulated:.0} ({:.2}% of its {:.0}), which depends on how the threads happened to interleave",
        price.concurrent.0,
        price.sequential,
        run.floor(),
        run.floor_basis(),
        pct(simulated, run.transfers),
        run.transfers,
    ));
}

/// A contention verdict whose line the model prices under the run's floor: handed from
/// thread to thread under a lock when it would matter at the whole rates (a lock every
/// thread on the line holds orders their accesses), else negligible. Cost 0 either way.
fn not_contended_in_run(d: &mut LineDiagnosis, accesses: f64, run: &RunTotals, price: &RunPrice) {
    if !is_contention(d.verdict) {
        return;
    }
    let simulated: f64 = d.members.iter().map(|m| m.counts.transfers()).sum();
    let measured = format!(
        "this run's simulation measured {simulated:.0} transfers ({:.2}% of its {:.0})",
        pct(simulated, run.transfers),
        run.transfers
    );
    if run.matters(price.whole.0) {
        d.explanation = format!(
            "handed from thread to thread under a lock, not contention: {:.0} of the line's {accesses:.0} accesses were made inside critical sections of a lock every thread on the line held there (or while no other thread was alive), so no two threads use it at the same time and it moves once per critical section, not per access; the model prices {:.0} transfers at the rates of the rest, under the run's floor of {:.0} ({}); if the threads used it at the same time it would be {} ({:.0} transfers); {measured}",
            price.sequential,
            price.concurrent.0,
            run.floor(),
            run.floor_basis(),
            d.verdict.label(),
            price.whole.0,
        );
        d.verdict = Verdict::NotShared;
    } else {
        d.explanation = format!(
            "{accesses:.0} accesses ({:.3}% of the run's {:.0}), priced by the model at {:.0} transfers over the run: negligible; it would be {}. A line must cost at least {:.0} transfers ({}); {measured}",
            pct(accesses, run.accesses),
            run.accesses,
            price.concurrent.0,
            d.verdict.label(),
            run.floor(),
            run.floor_basis(),
        );
        d.verdict = Verdict::Negligible;
    }
    d.cost = 0.0;
}

fn judge_exact(
    index: u64,
    cls: u64,
    members: &[MemberUse],
    significant: &[&MemberUse],
    total: f64,
    rare: f64,
    cpu_floor: f64,
) -> LineDiagnosis {
    // Without run totals, rarity (`rare`) is against the struct's busiest line; with them, a
    // CPU's accesses to a member below the run's floor (`cpu_floor`) do not make it a writer
    // or a sharer.
    if total < rare {
        let written = members.iter().any(|m| m.counts.writes() > 0.0);
        return LineDiagnosis {
            index,
            start: index * cls,
            end: (index + 1) * cls - 1,
            verdict: if written {
                Verdict::NotShared
            } else {
                Verdict::ReadShared
            },
            explanation: format!(
                "touched {total:.0} times in all, under {:.1}% of the struct's busiest line: too rarely to matter",
                RARE * 100.0
            ),
            cost: 0.0,
            members: members.to_vec(),
            elements: None,
            terms: Vec::new(),
        };
    }
    struct Who<'m> {
        m: &'m MemberUse,
        writers: BTreeSet<u32>,
        accessors: BTreeSet<u32>,
    }
    let who: Vec<Who> = significant
        .iter()
        .map(|m| {
            let map = m.per_cpu.as_ref().expect("exact evidence");
            // Writes too rare for the struct (a table filled in once) do not make a writer.
            let mut writers = if m.counts.writes() > 0.0 && m.counts.writes() >= rare {
                writers_of(map)
            } else {
                BTreeSet::new()
            };
            let mut accessors = accessors(map);
            if cpu_floor > 0.0 {
                let enough = |c: &u32| map.get(c).is_some_and(|(w, r)| w + r >= cpu_floor);
                writers.retain(enough);
                accessors.retain(enough);
            }
            Who {
                m,
                writers,
                accessors,
            }
        })
        .collect();
    let written: Vec<&Who> = who.iter().filter(|w| !w.writers.is_empty()).collect();
    let truly: Vec<&MemberUse> = who
        .iter()
        .filter(|w| {
            w.writers.len() > 1
                || (w.writers.len() == 1 && w.accessors.difference(&w.writers).next().is_some())
        })
        .map(|w| w.m)
        .collect();
    let false_pairs = written.iter().any(|a| {
        who.iter().any(|b| {
            !std::ptr::eq(a.m, b.m) && a.writers.iter().any(|x| b.accessors.iter().any(|y| x != y))
        })
    });
    let (sim_true, sim_false) = members.iter().fold((0.0, 0.0), |(t, f), m| {
        (t + m.sim_split.0, f + m.sim_split.1)
    });
    let split = if sim_true + sim_false > 0.0 {
        format!(
            " (simulated transfers: {:.0} false sharing, {:.0} true sharing)",
            sim_false, sim_true
        )
    } else {
        String::new()
    };
    let writes_text = |ws: &[&Who]| {
        ws.iter()
            .map(|w| describe_writes(w.m))
            .collect::<Vec<_>>()
            .join(", and ")
    };
    let (verdict, explanation) = if written.is_empty()
        && read_beside_written_element(members, total, cpu_floor)
    {
        let read: Vec<&MemberUse> = members.iter().filter(|m| m.element_reads > 0.0).collect();
        let reads: f64 = read.iter().map(|m| m.element_reads).sum();
        (
            Verdict::FalseSharing,
            format!(
                "{} {} {}, {reads:.0} times on a physical line where another thread writes another element{split}: false sharing between elements (or neighbouring instances): the end of one element and the start of the next share a line. Pad or align the element to the line (alignas({cls}) on the struct) and allocate the array line-aligned: aligned_alloc({cls}, n * size) or posix_memalign at the allocation site, alignas({cls}) on a global array; malloc and calloc return 16-byte aligned blocks, so the struct's alignment alone cannot separate the elements",
                names(&read),
                if read.len() == 1 { "is" } else { "are" },
                describe_reads(&read),
            ),
        )
    } else if written.is_empty() {
        let rarely_written = significant.iter().any(|m| m.counts.writes() > 0.0);
        (
            Verdict::ReadShared,
            if rarely_written {
                format!(
                    "{} written too rarely next to the struct's busiest line to count as contended: between those writes every cache keeps a valid copy",
                    names(significant)
                )
            } else {
                format!(
                    "{} only loaded: read sharing keeps a valid copy in every cache",
                    names(significant)
                )
            },
        )
    } else if false_pairs {
        let others: Vec<&MemberUse> = who
            .iter()
            .filter(|w| w.writers.is_empty())
            .map(|w| w.m)
            .collect();
        // When every member is written by several CPUs (a lock and the data it guards), the
        // line moves with the data itself: moving members apart cannot help. Members that are
        // only read beside them (seed 000's rt_se next to load_avg) are false sharing that a
        // move does remove, unless the simulation found their transfers negligible.
        let sim_total = sim_true + sim_false;
        let false_negligible =
            sim_total > 0.0 && sim_false < READ_NEIGHBOURS_NEGLIGIBLE * sim_total;
        let true_wins =
            written.iter().all(|w| w.writers.len() > 1) && (others.is_empty() || false_negligible);
        let mut text = writes_text(&written);
        if !others.is_empty() {
            text.push_str(&format!(
                " while {} on the same line {} {} on other CPUs",
                names(&others),
                if others.len() == 1 { "is" } else { "are" },
                describe_reads(&others)
            ));
        } else if written.len() > 1 {
            text.push_str(": different members written on one line by different CPUs");
        }
        if true_wins && !truly.is_empty() {
            text.push_str(&format!(
                "{split}. It is true sharing: {} {} written by several CPUs; moving members apart does not remove that, only splitting the data (per CPU or thread) or touching it less often does",
                names(&truly),
                if truly.len() == 1 { "is" } else { "are" }
            ));
            (Verdict::TrueSharing, text)
        } else {
            text.push_str(&split);
            match slots_of_one_array(written.iter().map(|w| w.m.name.as_str())) {
                // `hits[0]` and `hits[1]` are one member: no order of members parts them.
                Some(array) if others.is_empty() => text.push_str(&slots_advice(array, cls)),
                _ => text.push_str(". Moving them apart removes the false sharing"),
            }
            if !truly.is_empty() {
                let several = who
                    .iter()
                    .filter(|w| truly.iter().any(|t| std::ptr::eq(*t, w.m)))
                    .all(|w| w.writers.len() > 1);
                text.push_str(&format!(
                    "; {} {} truly shared ({}): only splitting helps there",
                    names(&truly),
                    if truly.len() == 1 {
                        "itself stays"
                    } else {
                        "stay"
                    },
                    if several {
                        "written by several CPUs"
                    } else {
                        "written by one CPU and used by another"
                    }
                ));
            }
            (Verdict::FalseSharing, text)
        }
    } else if between_objects(sim_true, sim_false, members) {
        (
            Verdict::FalseSharing,
            format!(
                "{}{split}: false sharing between elements (or neighbouring instances): each is {} its own thread, but several sit on one line. Pad or align the element to the line (alignas({cls}) on the struct) and allocate the array line-aligned: aligned_alloc({cls}, n * size) or posix_memalign at the allocation site, alignas({cls}) on a global array; malloc and calloc return 16-byte aligned blocks, so the struct's alignment alone cannot separate the elements",
                writes_text(&written),
                if members.iter().map(|m| m.element_reads).sum::<f64>() >= NEGLIGIBLE * total {
                    "used (written, or read beside another's writes) by"
                } else {
                    "written by"
                }
            ),
        )
    } else if !truly.is_empty() {
        (
            Verdict::TrueSharing,
            format!(
                "{}{split}; no layout helps: only splitting {} (per CPU, per LLC or per node) or sharding it does",
                writes_text(&written),
                names(&truly)
            ),
        )
    } else {
        (
            Verdict::NotShared,
            format!(
                "{}, and no other CPU touches the line more than negligibly: nothing is shared",
                writes_text(&written)
            ),
        )
    };
    LineDiagnosis {
        index,
        start: index * cls,
        end: (index + 1) * cls - 1,
        verdict,
        explanation,
        // The caller prices a contention verdict with the model (`judge`).
        cost: 0.0,
        members: members.to_vec(),
        elements: None,
        terms: Vec::new(),
    }
}

/// Loads-only evidence: Intel's default c2c events sample loads above a latency threshold,
/// AMD IBS and Arm SPE sample what they sample, so a report may hold no store on a line that
/// moves between caches. A HITM (or peer snoop) is a load that found the line modified in
/// another core's cache: it proves a writer elsewhere. Several members hit: they move as one
/// line, false sharing unless one writer writes them all; one member hit: written elsewhere
/// and read here, true sharing of it (or of an unsampled neighbour).
fn loads_only_verdict(significant: &[&MemberUse], transfers: f64) -> (Verdict, String) {
    let mut hit: Vec<&MemberUse> = significant
        .iter()
        .copied()
        .filter(|m| m.counts.transfers() >= NEGLIGIBLE * transfers)
        .collect();
    hit.sort_by(|a, b| b.counts.transfers().total_cmp(&a.counts.transfers()));
    let each: Vec<String> = hit
        .iter()
        .map(|m| {
            let by = describe_reads(&[*m]);
            format!("`{}` ({:.0} HITM/peer, {by})", m.name, m.counts.transfers())
        })
        .collect();
    let writer = "the writer is unsampled: the evidence has no store on this line, yet each of \
                  these loads found it modified in another CPU's cache";
    if hit.len() > 1 {
        (
            Verdict::FalseSharing,
            format!(
                "{} load a line that {:.0} HITM/peer transfers prove is written elsewhere; {writer}. \
                 Different members move together: moving them apart removes the false sharing \
                 unless one writer writes them all",
                each.join(", "),
                transfers
            ),
        )
    } else {
        let m = hit.first().copied().unwrap_or(significant[0]);
        (
            Verdict::TrueSharing,
            format!(
                "{} is loaded modified from another CPU's cache; {writer}. If that writer \
                 stores `{}` itself only splitting it helps; if it stores a neighbour, moving \
                 that apart does",
                each.first()
                    .cloned()
                    .unwrap_or_else(|| format!("`{}`", m.name)),
                m.name
            ),
        )
    }
}

fn names(ms: &[&MemberUse]) -> String {
    let quoted: Vec<String> = ms.iter().map(|m| format!("`{}`", m.name)).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} and {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

fn cpus_phrase(n: u32) -> String {
    match n {
        0 => String::new(),
        1 => " on 1 CPU".into(),
        n => format!(" on {n} CPUs"),
    }
}

/// "`load_avg` is stored by update_load_avg on 160 CPUs"
fn describe_writes(m: &MemberUse) -> String {
    // Writers with a tenth of the top writer's writes or more; the rest is noise.
    let top = m.writers().map(|f| f.writes).fold(0.0, f64::max);
    let writers: Vec<&FunctionUse> = m
        .writers()
        .filter(|f| f.writes >= 0.1 * top)
        .take(2)
        .collect();
    let by = writers
        .iter()
        .map(|f| format!("{}{}", f.name, cpus_phrase(f.cpus)))
        .collect::<Vec<_>>()
        .join(" and ");
    let verb = if m.counts.rmw > m.counts.stores {
        "atomically updated"
    } else {
        "stored"
    };
    if by.is_empty() {
        format!("`{}` is {verb}{}", m.name, cpus_phrase(m.cpus))
    } else {
        format!("`{}` is {verb} by {by}", m.name)
    }
}

/// "loaded by set_task_cpu"
fn describe_reads(ms: &[&MemberUse]) -> String {
    let mut readers: Vec<(String, f64)> = Vec::new();
    for m in ms {
        for f in m.readers() {
            match readers.iter_mut().find(|(n, _)| *n == f.name) {
                Some((_, r)) => *r += f.reads,
                None => readers.push((f.name.clone(), f.reads)),
            }
        }
    }
    readers.sort_by(|a, b| b.1.total_cmp(&a.1));
    let any_writes = ms.iter().any(|m| m.counts.writes() > 0.0);
    let verb = if any_writes { "touched" } else { "loaded" };
    if readers.is_empty() {
        return verb.to_string();
    }
    format!(
        "{verb} by {}",
        readers
            .iter()
            .take(2)
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" and ")
    )
}

/// The profile's accesses to `type_name`, with fields named by path resolved against the
/// struct. Returns the accesses and the field names that could not be resolved.
pub fn accesses_for(
    profile: &mut Profile,
    types: &crate::types::Types<'_>,
    id: crate::types::TypeId,
    type_name: &str,
) -> (Vec<Access>, Vec<String>) {
    let missing = profile.resolve_fields(type_name, |field| {
        super::fields::resolve_path(types, id, field)
    });
    let mut accesses = profile.type_accesses(type_name);
    name_embedded_offsets(&mut accesses, &super::fields::leaves(types, id));
    (accesses, missing)
}

/// Names the accesses that give only an offset (a c2c report's, a perf sample's) by the
/// path of the member of an embedded struct they land in (`mmap_lock.count`), as evidence
/// that names its fields does: the same bytes then show under the same names whichever
/// evidence gave them, and the sub-fields that different paths touch are told apart
/// ([`super::cost::sub_field_names`]). Offsets in a top-level member of their own, or where
/// union alternatives cannot be told apart, stay unnamed: the layout names them.
fn name_embedded_offsets(accesses: &mut [Access], leaves: &[super::fields::Leaf]) {
    for a in accesses.iter_mut().filter(|a| a.field.is_none()) {
        let Some(off) = a.offset else { continue };
        // The deepest members that hold every byte of the access (a 16-byte store to a
        // list_head is the list_head's, not its `next`'s).
        let end = off + a.size.unwrap_or(1).max(1);
        let holding: Vec<&super::fields::Leaf> = leaves
            .iter()
            .filter(|l| l.offset <= off && end <= l.offset + l.size)
            .collect();
        let Some(depth) = holding.iter().map(|l| l.depth).max() else {
            continue;
        };
        if let [leaf] = holding
            .iter()
            .filter(|l| l.depth == depth)
            .collect::<Vec<_>>()
            .as_slice()
            && depth > 0
            && leaf.path.contains('.')
        {
            a.field = Some(leaf.path.clone());
        }
    }
}

pub use super::bind::LineBinding;

/// Names the elements behind each false-sharing line that `lines` (the recording's
/// [`crate::profile::TypeProfile::element_lines`]) place on it, in the line's `elements`
/// and at the end of its explanation.
pub fn name_elements(d: &mut Diagnosis, layout: &Layout, lines: &[ElementLine]) {
    let cls = d.cacheline_size.max(1);
    // Members by the names diagnose shows, whatever the recording called them.
    // Array members by element (`blue[242]`), as the line's table shows them.
    let name_at = |o: u64| {
        display_member(&layout.members, o).map(|f| match array_element(f, o) {
            Some((i, _)) => format!("{}[{i}]", member_name(f)),
            None => member_name(f),
        })
    };
    let named = |offsets: &[u64]| {
        offsets
            .iter()
            .filter_map(|&o| name_at(o))
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            })
    };
    for l in &mut d.lines {
        if !matches!(l.verdict, Verdict::FalseSharing | Verdict::Negligible) {
            continue;
        }
        let here: Vec<ElementLine> = lines
            .iter()
            .filter(|e| {
                e.writers
                    .iter()
                    .flat_map(|w| w.offsets.iter())
                    .chain(e.readers.iter().flat_map(|r| r.offsets.iter()))
                    .any(|&o| o / cls == l.index)
            })
            .map(|e| {
                let mut e = e.clone();
                // A thread's few writes next to a worker's many (main filling in the
                // arguments) do not make it a sharer of the element.
                let top = e.writers.iter().map(|w| w.writes).fold(0.0, f64::max);
                e.writers.retain(|w| w.writes >= NEGLIGIBLE * top);
                let top = e.readers.iter().map(|r| r.reads).fold(0.0, f64::max);
                e.readers.retain(|r| r.reads >= NEGLIGIBLE * top);
                for w in &mut e.writers {
                    w.fields = named(&w.offsets);
                }
                for r in &mut e.readers {
                    r.fields = named(&r.offsets);
                }
                e
            })
            .collect();
        let here: Vec<&ElementLine> = here.iter().collect();
        if let Some(text) = elements_text(&here, &d.type_name, cls) {
            l.explanation.push_str(&format!(". {text}"));
            l.elements = Some(text);
        }
    }
}

/// Member names with runs of consecutive array elements folded: `blue[242]`, `blue[243]`,
/// `blue[244]` become `blue[242..244]`.
fn fold_indices(names: &[String]) -> Vec<String> {
    let split = |n: &str| -> Option<(String, u64)> {
        let (base, rest) = n.rsplit_once('[')?;
        let i = rest.strip_suffix(']')?.parse().ok()?;
        Some((base.to_string(), i))
    };
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(String, u64, u64)> = None;
    let flush = |run: &mut Option<(String, u64, u64)>, out: &mut Vec<String>| {
        if let Some((b, lo, hi)) = run.take() {
            out.push(if lo == hi {
                format!("{b}[{lo}]")
            } else {
                format!("{b}[{lo}..{hi}]")
            });
        }
    };
    for n in names {
        match (split(n), &mut run) {
            (Some((b, i)), Some((rb, _, hi))) if *rb == b && i == *hi + 1 => *hi = i,
            (Some((b, i)), _) => {
                flush(&mut run, &mut out);
                run = Some((b, i, i));
            }
            (None, _) => {
                flush(&mut run, &mut out);
                out.push(n.clone());
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// "`g[0].v` by thread 11 and `g[1].v` by thread 12 share one line (bytes 0..63 of `g`)";
/// an element only read there: "`args[0].blue[242..250]` written by thread 11 and
/// `args[1].data` read by thread 12 share one line"; for many, "`args[0..7].sum` (8
/// elements, 8 threads) on 2 lines of ...".
fn elements_text(lines: &[&ElementLine], type_name: &str, cls: u64) -> Option<String> {
    let first = lines.first()?;
    let array = match (&first.variable, &first.alloc_function, &first.alloc_source) {
        (Some(v), ..) => format!("`{v}`"),
        (None, Some(f), Some(src)) => format!("the heap array allocated at {f} ({src})"),
        (None, Some(f), None) => format!("the heap array allocated at {f}"),
        _ => "the array".to_string(),
    };
    // A heap array has no name of its own here: its elements go by their type.
    let var = first
        .variable
        .clone()
        .unwrap_or_else(|| type_name.to_string());
    // (index, tid) -> (fields written, fields only read), over every line.
    let mut users: BTreeMap<(u64, i64), (Vec<String>, Vec<String>)> = BTreeMap::new();
    let add = |to: &mut Vec<String>, names: &[String]| {
        for name in names {
            if !to.contains(name) {
                to.push(name.clone());
            }
        }
    };
    for l in lines {
        for w in &l.writers {
            add(&mut users.entry((w.index, w.tid)).or_default().0, &w.fields);
        }
        for r in &l.readers {
            add(&mut users.entry((r.index, r.tid)).or_default().1, &r.fields);
        }
    }
    let writers: BTreeSet<(u64, i64)> = lines
        .iter()
        .flat_map(|l| l.writers.iter().map(|w| (w.index, w.tid)))
        .collect();
    let indices: BTreeSet<u64> = users.keys().map(|k| k.0).collect();
    let threads: BTreeSet<i64> = users.keys().map(|k| k.1).collect();
    if indices.len() < 2 || threads.len() < 2 || writers.is_empty() {
        return None;
    }
    let any_reader = users.keys().any(|k| !writers.contains(k));
    let fields_of = |f: &[String]| {
        let f = fold_indices(f);
        match f.len() {
            0 => String::new(),
            1 => format!(".{}", f[0]),
            _ => format!(".{{{}}}", f.join(", ")),
        }
    };
    let where_ = if lines.len() == 1 {
        let start = first.line_offset;
        format!(
            "share one line (bytes {start}..{} of {array}{})",
            start + cls as i64 - 1,
            if first.misalignment != 0 {
                format!(", which starts {} bytes into a line", first.misalignment)
            } else {
                String::new()
            }
        )
    } else {
        format!("share {} lines of {array}", lines.len())
    };
    if users.len() <= 4 {
        let each: Vec<String> = users
            .iter()
            .map(|((i, t), (w, r))| {
                if writers.contains(&(*i, *t)) {
                    let verb = if any_reader { "written " } else { "" };
                    format!("`{var}[{i}]{}` {verb}by thread {t}", fields_of(w))
                } else {
                    format!("`{var}[{i}]{}` read by thread {t}", fields_of(r))
                }
            })
            .collect();
        let joined = match each.len() {
            1 => each[0].clone(),
            n => format!("{} and {}", each[..n - 1].join(", "), each[n - 1]),
        };
        Some(format!("Elements: {joined} {where_}"))
    } else {
        let mut all: Vec<String> = Vec::new();
        for (w, r) in users.values() {
            add(&mut all, w);
            add(&mut all, r);
        }
        let lo = indices.first().copied().unwrap_or(0);
        let hi = indices.last().copied().unwrap_or(0);
        let read_only = users.keys().filter(|k| !writers.contains(k)).count();
        let how = if read_only > 0 {
            format!(
                "used by {} threads, {read_only} of them only reading beside another's writes",
                threads.len()
            )
        } else {
            format!("written by {} threads", threads.len())
        };
        Some(format!(
            "Elements: `{var}[{lo}..{hi}]{}` ({} elements {how}) {where_}",
            fields_of(&all),
            indices.len(),
        ))
    }
}

/// Binds the raw lines of `profile` not yet bound to struct `id` (named `type_name`) that
/// fit it, jointly per object ([`super::bind::bind_type`]): at `line_start` when given, else
/// at the best base for each object. Lines that fit nothing stay unbound.
pub fn bind_raw_lines(
    profile: &mut Profile,
    types: &crate::types::Types<'_>,
    id: crate::types::TypeId,
    type_name: &str,
    line_start: Option<i64>,
) -> Vec<LineBinding> {
    let input = super::bind::BindInput {
        domain: (types.source == crate::types::SourceFormat::Btf)
            .then_some(super::bind::Domain::Kernel),
        line_start,
        ..Default::default()
    };
    super::bind::bind_type(profile, types, id, type_name, &input).bound
}

#[cfg(test)]
mod slot_name_tests {
    use super::slots_of_one_array;

    #[test]
    fn slots_of_one_array_are_told_from_other_members() {
        assert_eq!(
            slots_of_one_array(["hits[0]", "hits[3]"].into_iter()),
            Some("hits")
        );
        assert_eq!(slots_of_one_array(["hits[0]"].into_iter()), None);
        assert_eq!(slots_of_one_array(["hits[0]", "total"].into_iter()), None);
        assert_eq!(slots_of_one_array(["a[0]", "b[1]"].into_iter()), None);
        assert_eq!(slots_of_one_array(["g[0].v", "g[1].v"].into_iter()), None);
        assert_eq!(slots_of_one_array(["m[0][1]", "m[0][2]"].into_iter()), None);
    }
}
