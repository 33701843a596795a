//! Recording userspace programs: `lineup cc` builds a program with every load and store
//! instrumented (the compiler's ThreadSanitizer instrumentation, served by lineup's own
//! runtime in `runtime/lineup_rt.c`), `lineup record` runs it and turns what the runtime
//! wrote into an access profile.
//!
//! - [`cc`]: the compiler wrapper's argument handling and the runtime object cache;
//! - [`trace`]: reading the runtime's files;
//! - [`debuginfo`]: symbols, source lines, global variables, functions' pointer types;
//! - [`attribute`]: addresses to objects (globals, heap blocks) and their struct types;
//! - [`sim`]: the coherence simulation (pure);
//! - [`build`] here: all of it into a [`Profile`] with exact counts and simulated
//!   transfers. Design and approximations: `docs/record.md`.

pub mod attribute;
pub mod cc;
pub mod debuginfo;
pub mod overlap;
pub mod overview;
pub mod sim;
pub mod trace;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use crate::analysis::fields::{self, Leaf};
use crate::profile::{
    Access, CodeLocation, Counts, CpuUse, DegradedRange, ElementLine, ElementReader, ElementWriter,
    Machine, Privilege, Profile, ThreadUse, Unit,
};
use attribute::{FoundBy, ObjectMap, Origin, TypeChooser, WrapperCaller, Wrappers};
use debuginfo::{DebugInfo, Elem, ElemKind, ObjType, SiteVariable};
use sim::Kind;
use trace::Process;

/// A fast hasher for the integer keys of post-processing (FxHash's multiply-rotate):
/// SipHash dominated the time on millions of trace events.
#[derive(Clone, Copy, Default)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

pub type FastHash = std::hash::BuildHasherDefault<FastHasher>;

/// The `provenance.tool` of recorded profiles.
pub const TOOL: &str = "lineup record";

#[derive(Clone, Debug)]
pub struct Options {
    /// Bytes per cache line of the profile and of the primary simulation.
    pub line_size: u64,
    /// Also simulate pairs of lines (the adjacent-line prefetcher); counts go to `details`.
    pub adjacent_line: bool,
    /// `--type`: struct types that heap blocks of matching size are.
    pub types: Vec<String>,
    /// `--alloc-wrapper`: functions whose callers name the blocks they allocate.
    pub alloc_wrappers: Vec<String>,
    /// The recorded command line, for provenance.
    pub command: Option<String>,
    /// CPUs of the machine that ran it.
    pub machine_cpus: Option<u32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            line_size: 64,
            adjacent_line: false,
            types: Vec::new(),
            alloc_wrappers: Vec::new(),
            command: None,
            machine_cpus: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error("{path}: {problem}")]
    Program { path: String, problem: String },
}

/// What `--sample bursts` recorded, for the profile's note and standard error.
#[derive(Clone, Debug, PartialEq)]
pub struct BurstsSummary {
    /// Recorded time over run time, of all processes that ran bursts.
    pub recorded_fraction: f64,
    pub windows: u64,
    pub on_us: u32,
    pub period_us: u32,
    /// Recorded in full before the first switch.
    pub warmup_us: u64,
    /// Code sites whose hook calls became counting jumps between windows.
    pub patched_sites: usize,
    /// Mean microseconds one switch of every site (calls to trampoline jumps, or back) took.
    pub switch_us: f64,
}

/// Steps of post-processing, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    DebugInfo,
    Simulate { process: usize, of: usize },
    Attribute { process: usize, of: usize },
    Done,
}

/// The profile, and what the caller may want to tell the user.
#[derive(Clone, Debug)]
pub struct Built {
    pub profile: Profile,
    /// Some process did not finish writing (crash, kill, `_exit`).
    pub partial: bool,
    /// The memory budget's level reached (0: none; see [`trace::Process::budget_level`]).
    pub budget_level: u64,
    /// Adaptive sampling: (accesses estimated rather than counted, of all accesses; the
    /// largest period a code site backed off to), when `--sample auto` was on.
    pub adaptive: Option<(u64, u64, u64)>,
    /// Bursts, summed over the processes that left windows out.
    pub bursts: Option<BurstsSummary>,
    /// Some process's runtime ran bursts (even if the run ended within the warm-up).
    pub bursts_ran: bool,
    /// Heap block sizes lineup could not type, with candidate types, by size.
    pub ambiguous_heap: Vec<(u64, Vec<String>)>,
    /// What the runtime did differently from its settings (bursts stopped, a thread not
    /// recorded, chunks lost), a sentence each: for standard error, and in the note.
    pub warnings: Vec<String>,
}

/// The key the runtime aggregates by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct SiteKey {
    thread: u32,
    addr: u64,
    size: u32,
    kind: Kind,
    pc: u64,
}

/// Strings by number, each stored once: the hot loop of `build` keys its maps by these.
#[derive(Default)]
struct Names {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }
    fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// The number of each run's thread within its object (0: the thread that accesses the
/// object most; ties: the lower thread id first), for runs of (element, birth, thread id,
/// accesses); one object's thread may have several runs, whose accesses add up.
fn thread_ranks(runs: &[(u64, u64, u32, u64)]) -> Vec<u32> {
    let mut order: Vec<(u64, u64, u32, u32)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.0, r.1, r.2, i as u32))
        .collect();
    order.sort_unstable();
    let mut rank = vec![0u32; runs.len()];
    // Per object: (accesses, thread, its runs in `order`).
    let mut threads: Vec<(u64, u32, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let object = (order[i].0, order[i].1);
        threads.clear();
        let mut j = i;
        while j < order.len() && (order[j].0, order[j].1) == object {
            let thread = order[j].2;
            let start = j;
            let mut sum = 0u64;
            while j < order.len()
                && (order[j].0, order[j].1, order[j].2) == (object.0, object.1, thread)
            {
                sum += runs[order[j].3 as usize].3;
                j += 1;
            }
            threads.push((sum, thread, start, j));
        }
        threads.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (r, &(_, _, start, end)) in threads.iter().enumerate() {
            for o in &order[start..end] {
                rank[o.3 as usize] = r as u32;
            }
        }
        i = j;
    }
    rank
}

/// How the notes name an object: `global \`name\``, or its heap allocation site.
/// What the memory budget's step `level` (the runtime's `budget_level`) gave up.
pub fn budget_step(level: u64) -> &'static str {
    match level {
        0 => "nothing",
        1 => {
            "places on lines not contended (one thread's, handed over to one thread, or only read since shared) that were counted once between two flushes (streaming) summarized per code site; places counted more often, and lines that threads share and write, kept every place"
        }
        2 => {
            "places on lines not contended counted fewer than 16 times between two flushes summarized per code site, and the ordered trace thinned four times faster; lines that threads share and write kept every place"
        }
        3 => {
            "places on lines not contended summarized per code site, and the ordered trace stopped (transfers scaled from what was traced before); lines that threads share and write kept every place"
        }
        _ => {
            "every place summarized per code site and the ordered trace stopped, lines that threads share and write included: the last resort, where the answer may change (raise --memory)"
        }
    }
}

/// Does a summary over `[lo, hi)` (accesses of `size` bytes) stand for one member of
/// `obj`'s type? Only in a struct (an array of scalars has an offset per element), and only
/// when its first and last accesses fall on the same offset of the type, within the object:
/// one site touching one member of many elements, as a code site does as a rule.
fn one_member(obj: &attribute::Object, lo: u64, hi: u64, size: u64) -> bool {
    let last = hi.saturating_sub(size.max(1));
    if last <= lo {
        return true; // one address
    }
    obj.scalars.is_none()
        && obj.ty.size > size
        && lo >= obj.base
        && hi <= obj.end()
        && obj.type_offset(lo) == obj.type_offset(last)
}

/// `symbol+offset (file.c:line)` of a resolved code address.
fn code_label(r: &debuginfo::Resolved, addr: u64) -> String {
    let at = match (&r.symbol, r.offset) {
        (Some(s), Some(o)) => format!("{s}+{o}"),
        (Some(s), None) => s.clone(),
        _ => format!("{addr:#x}"),
    };
    match &r.source {
        Some(src) => format!("{at} ({src})"),
        None => at,
    }
}

fn object_label(debug: &DebugInfo, obj: &attribute::Object) -> String {
    match &obj.origin {
        Origin::Global(name) => format!("global `{name}`"),
        Origin::Heap { site } => {
            let r = debug.resolve_alloc(*site);
            let at = match (r.symbol, r.offset) {
                (Some(s), Some(o)) => format!("{s}+{o}"),
                _ => format!("{site:#x}"),
            };
            match r.source {
                Some(src) => format!("heap blocks allocated at {at} ({src})"),
                None => format!("heap blocks allocated at {at}"),
            }
        }
    }
}

/// One profile access being accumulated: (type, offset, size, code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct AccessKey {
    /// Interned ([`Names`]).
    type_name: u32,
    offset: u64,
    size: u64,
    code: u64,
    /// Interned ([`Names`]).
    exe: u32,
    /// The thread's number within its object (see `build`).
    cpu: u32,
}

#[derive(Clone, Debug, Default)]
struct AccessVal {
    counts: Counts,
    sim_true: f64,
    sim_false: f64,
    invalidations: f64,
    pair_true: f64,
    pair_false: f64,
    /// Writes to an element whose physical line another thread writes or reads in another
    /// element.
    element_writes: f64,
    /// Reads of an element whose physical line another thread writes in another element.
    element_reads: f64,
    /// Accesses made inside critical sections of a lock that every other thread on the
    /// line held at its accesses there: they cannot meet another thread's (`overlap.rs`).
    sequential: f64,
    threads: BTreeSet<(u32, u32)>,
    comms: BTreeSet<String>,
    resolved: debuginfo::Resolved,
    field: Option<String>,
}

/// Per type: objects seen, by origin, and whether any sat off a line boundary.
#[derive(Clone, Debug, Default)]
struct TypeNotes {
    objects: BTreeSet<String>,
    misaligned: BTreeSet<String>,
}

/// What one executable gives: debug info and the type facts attribution needs.
struct ExeFacts {
    debug: DebugInfo,
    named: Vec<ObjType>,
    /// Leaves of each attributed type, for field names.
    leaves: HashMap<ObjType, Vec<Leaf>>,
    /// Pointer members of each struct type: (offset, path, what they point to), the slots a
    /// heap block's address can be stored into.
    pointer_members: HashMap<ObjType, Vec<(u64, String, Option<Elem>)>>,
    missing_types: Vec<String>,
}

/// What pointer type `id` (a member's type) points to, in the type model.
fn pointee_elem(types: &crate::types::Types<'_>, id: crate::types::TypeId) -> Option<Option<Elem>> {
    use crate::types::Kind;
    let id = types.strip_qualifiers(id);
    let Kind::Pointer { target } = types.get(types.resolve(id)).kind else {
        return None;
    };
    let mut t = target;
    let mut typedef: Option<String> = None;
    for _ in 0..16 {
        let ty = types.get(t);
        match &ty.kind {
            Kind::Typedef { target }
            | Kind::Qualified { target, .. }
            | Kind::TypeTag { target, .. } => {
                if matches!(ty.kind, Kind::Typedef { .. }) && typedef.is_none() {
                    typedef = Some(ty.name.to_string());
                }
                t = *target;
            }
            Kind::Struct(c) | Kind::Union(c) => {
                let name = if ty.name.is_empty() {
                    typedef?
                } else {
                    ty.name.to_string()
                };
                return Some(Some(Elem {
                    name,
                    size: c.size,
                    kind: ElemKind::Struct,
                }));
            }
            Kind::Int {
                size,
                is_char,
                is_bool,
                ..
            } => {
                let kind = if *is_bool {
                    ElemKind::Bool
                } else if *is_char {
                    ElemKind::Char
                } else {
                    ElemKind::Int
                };
                return Some(Some(Elem {
                    name: typedef.unwrap_or_else(|| ty.name.to_string()),
                    size: u64::from(*size),
                    kind,
                }));
            }
            Kind::Float { size } => {
                return Some(Some(Elem {
                    name: typedef.unwrap_or_else(|| ty.name.to_string()),
                    size: u64::from(*size),
                    kind: ElemKind::Float,
                }));
            }
            Kind::Pointer { .. } => {
                return Some(Some(Elem {
                    name: typedef.unwrap_or_else(|| "pointer".to_string()),
                    size: u64::from(types.pointer_size),
                    kind: ElemKind::Pointer,
                }));
            }
            _ => return Some(None),
        }
    }
    Some(None)
}

fn exe_facts(path: &Path, want: &[String], wrappers: &[String]) -> Result<ExeFacts, RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::Program {
        path: path.display().to_string(),
        problem: format!("cannot read: {e}"),
    })?;
    let mut debug = DebugInfo::read(&bytes).map_err(|problem| RecordError::Program {
        path: path.display().to_string(),
        problem,
    })?;
    debug.alloc_wrappers = wrappers.to_vec();
    let arena = typed_arena::Arena::new();
    let mut by_size: HashMap<u64, BTreeSet<String>> = HashMap::new();
    let mut named = Vec::new();
    let mut missing = Vec::new();
    let mut leaves = HashMap::new();
    let mut pointer_members = HashMap::new();
    if let Ok(types) = crate::readers::dwarf::parse(&bytes, &arena) {
        for id in types.composites() {
            let name = types.get(id).name;
            if name.is_empty() {
                continue;
            }
            let size = types.size_of(id);
            if size > 0 {
                by_size.entry(size).or_default().insert(name.to_string());
            }
        }
        for w in want {
            match types.find_composites(w).first() {
                Some(&id) => named.push(ObjType {
                    name: w.clone(),
                    size: types.size_of(id),
                }),
                None => missing.push(w.clone()),
            }
        }
        // Leaves of every type an object can have: globals' types, named, and by size.
        let mut wanted: BTreeSet<ObjType> = debug.globals.iter().map(|g| g.elem.clone()).collect();
        wanted.extend(named.iter().cloned());
        for (size, names) in &by_size {
            for n in names {
                wanted.insert(ObjType {
                    name: n.clone(),
                    size: *size,
                });
            }
        }
        for t in wanted {
            let id = types
                .find_composites(&t.name)
                .into_iter()
                .find(|&id| types.size_of(id) == t.size);
            if let Some(id) = id {
                let ls = fields::leaves(&types, id);
                let mut ptrs = Vec::new();
                if let Some(c) = types.composite(id) {
                    for m in &c.members {
                        if let Some(elem) = pointee_elem(&types, m.ty) {
                            let path = fields::leaf_at(&ls, m.byte_offset())
                                .map(|l| l.path.clone())
                                .unwrap_or_else(|| m.name.to_string());
                            ptrs.push((m.byte_offset(), path, elem));
                        }
                    }
                }
                if !ptrs.is_empty() {
                    pointer_members.insert(t.clone(), ptrs);
                }
                leaves.insert(t, ls);
            }
        }
    } else {
        missing.extend(want.iter().cloned());
    }
    // Pointer members of global structs are pointer slots at fixed addresses too: a load
    // of `totals.counts` (`%rip`-relative) types the pointer it loads, and
    // `posix_memalign(&totals.counts, ...)` names its block. Arrays of structs by their
    // first elements only: a table of thousands adds nothing a few do not.
    let mut member_slots = Vec::new();
    for g in &debug.globals {
        let Some(ptrs) = pointer_members.get(&g.elem) else {
            continue;
        };
        for i in 0..g.count.clamp(1, 64) {
            for (offset, path, elem) in ptrs {
                let name = if g.count > 1 {
                    format!("{}[{i}].{path}", g.name)
                } else {
                    format!("{}.{path}", g.name)
                };
                member_slots.push(debuginfo::PointerGlobal {
                    name,
                    addr: g.addr + i * g.elem.size + offset,
                    elem: elem.clone(),
                });
            }
        }
    }
    if !member_slots.is_empty() {
        debug.add_pointer_slots(member_slots);
    }
    Ok(ExeFacts {
        debug,
        named,
        leaves,
        pointer_members,
        missing_types: missing,
    })
}

/// One element's accesses on one physical line by one thread (`build`'s element lines).
#[derive(Clone, Copy, Debug)]
struct ElementUse {
    element: u64,
    thread: u32,
    writes: f64,
    reads: f64,
}

/// The entry of `v` that `is` picks, pushed as `make` builds it when there is none (short
/// lists: the users of one line, the writers and readers of one element line).
fn entry_in<T>(v: &mut Vec<T>, is: impl Fn(&T) -> bool, make: impl FnOnce() -> T) -> &mut T {
    match v.iter().position(is) {
        Some(i) => &mut v[i],
        None => {
            v.push(make());
            v.last_mut().expect("just pushed")
        }
    }
}

fn element_use(users: &mut Vec<ElementUse>, element: u64, thread: u32) -> &mut ElementUse {
    entry_in(
        users,
        |u| u.element == element && u.thread == thread,
        || ElementUse {
            element,
            thread,
            writes: 0.0,
            reads: 0.0,
        },
    )
}

/// Of a process's accesses, the share an element's partner on a line must reach to make the
/// line shared between elements: the diagnosis's floor for a run (`RunTotals` in
/// `analysis::diagnose`), since fewer accesses cannot move the line more often than that.
const ELEMENT_PARTNER_FLOOR: f64 = 1e-4;

/// Builds the profile of a recorded run from the runtime's files (`processes`), the
/// program's debug info, and `opts`.
pub fn build(
    processes: &[Process],
    opts: &Options,
    progress: &mut dyn FnMut(Step),
) -> Result<Built, RecordError> {
    progress(Step::DebugInfo);
    let mut exes: BTreeMap<String, ExeFacts> = BTreeMap::new();
    for p in processes {
        if !exes.contains_key(&p.exe) {
            let facts = exe_facts(Path::new(&p.exe), &opts.types, &opts.alloc_wrappers)?;
            exes.insert(p.exe.clone(), facts);
        }
    }
    if let Some(missing) = exes.values().find_map(|f| f.missing_types.first()) {
        let exe = exes
            .iter()
            .find(|(_, f)| !f.missing_types.is_empty())
            .map(|(e, _)| e.clone())
            .unwrap_or_default();
        return Err(RecordError::Program {
            path: exe,
            problem: format!("--heap-type {missing}: no struct or union of that name in its DWARF"),
        });
    }

    let line = opts.line_size.max(1);
    // Keyed by interned names while counting (millions of accesses), ordered as the
    // profile lists them once at the end.
    let mut names = Names::default();
    let mut accesses: HashMap<AccessKey, AccessVal, FastHash> = HashMap::default();
    let mut notes: BTreeMap<String, TypeNotes> = BTreeMap::new();
    // (type, array base, birth, physical line) -> elements written there by different threads.
    let mut element_lines: HashMap<(u32, u64, u64, u64), ElementLine, FastHash> =
        HashMap::default();
    // (type, object base, birth, tid, code, kind) -> accesses the memory budget summarized
    // over a range of the object whose per-place split is not known.
    let mut degraded: BTreeMap<(u32, u64, u64, u32, u64, u8), DegradedRange> = BTreeMap::new();
    // Instances of each type the program touched, for the size term (`cost::size_term`):
    // (type, object base, birth, element) for accesses placed in an element, and whole
    // objects (every element) where a summary of many places names only the object.
    let mut touched: HashSet<(u32, u64, u64, u64), FastHash> = HashSet::default();
    let mut touched_whole: HashMap<(u32, u64, u64), u64, FastHash> = HashMap::default();
    let mut type_sizes: HashMap<u32, u64> = HashMap::new();
    let mut total = 0.0f64;
    let mut attributed = 0.0f64;
    let mut heap_typed = 0u64;
    let mut heap_untyped = 0u64;
    let mut traced_events = 0u64;
    // Bursts: executions between windows of sites never recorded in one on their thread.
    let mut bursts_unplaced = 0.0f64;
    let mut dropped = 0u64;
    let mut ambiguous: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut allocations: BTreeMap<String, Vec<crate::profile::AllocationSite>> = BTreeMap::new();
    let mut all_threads: BTreeSet<(u32, u32)> = BTreeSet::new();
    let n = processes.len();
    for (pi, p) in processes.iter().enumerate() {
        progress(Step::Simulate { process: pi, of: n });
        let facts = &exes[&p.exe];
        let scale = f64::from(p.sample.max(1));
        // Bursts: a patched site's executions between windows (exact, per thread) spread
        // over the places its recorded executions went to.
        let (site_scale, unplaced) = bursts_site_scale(p);
        bursts_unplaced += unplaced;
        let scale_of = |thread: u32, pc: u64, kind: Kind| {
            scale
                * site_scale
                    .get(&(thread, pc))
                    .map_or(1.0, |s| s[kind_slot(kind)])
        };
        // The runtime's flushes, merged and sorted by place by the reader.
        let tally = &p.counted;
        // The ordered trace, through the simulation: each place a site.
        let mut site_ids: HashMap<SiteKey, u32, FastHash> = HashMap::default();
        // The site of each event (the trace itself is the stream: no copy of it).
        let mut site_of_event: Vec<u32> = Vec::with_capacity(p.traced.len());
        for e in &p.traced {
            let k = SiteKey {
                thread: e.thread,
                addr: e.addr,
                size: e.size,
                kind: e.kind,
                pc: e.pc,
            };
            let next = site_ids.len() as u32;
            site_of_event.push(*site_ids.entry(k).or_insert(next));
        }
        // Sorted as the counted places are: attribution meets them in one walk.
        let mut sites: Vec<(SiteKey, u32)> = site_ids.into_iter().collect();
        sites.sort_unstable();
        traced_events += p.traced.len() as u64;
        // Decimated or bursty, the trace has gaps: a line's state does not carry over one.
        let window = (p.decimation != 0 || p.bursts.is_some()).then_some(p.window_bits);
        let event = |i: usize| {
            let e = &p.traced[i];
            sim::Access {
                time: e.tsc,
                space: 0,
                thread: e.thread,
                addr: e.addr,
                size: e.size,
                kind: e.kind,
                site: site_of_event[i],
            }
        };
        let primary = sim::simulate_by(
            p.traced.len(),
            event,
            &sim::Config {
                unit: line,
                window_log2: window,
                line_totals: false,
            },
        );
        let pairs = opts.adjacent_line.then(|| {
            sim::simulate_by(
                p.traced.len(),
                event,
                &sim::Config {
                    unit: line * 2,
                    window_log2: window,
                    line_totals: false,
                },
            )
        });
        drop(site_of_event);
        // Which accesses could meet another thread's on their line, from the locks the
        // threads held rather than from this interleaving.
        let lives: Vec<(u32, u64, u64)> = p
            .threads
            .iter()
            .map(|(&t, th)| (t, th.tsc_start, th.tsc_end))
            .collect();
        let mut overlap = overlap::Overlap::of(&p.traced, line, &lives);

        progress(Step::Attribute { process: pi, of: n });
        let debug = &facts.debug;
        let bias = p.exe_bias;
        let mut chooser = TypeChooser::new(facts.named.clone(), debug);
        let site_of = |pc: u64| debug.call_site(pc.wrapping_sub(bias));
        let mut objects = ObjectMap::build(debug, bias, &p.allocs, &mut chooser, |a| site_of(a.pc));
        // Blocks from allocation wrappers go to the wrappers' callers, then are typed again.
        let wrapped = wrapped_blocks(
            debug,
            &opts.alloc_wrappers,
            &p.allocs,
            tally,
            &objects,
            site_of,
        );
        let alloc_site = |a: &trace::AllocEvent| {
            wrapped
                .moved
                .get(&(a.addr, a.tsc))
                .copied()
                .unwrap_or_else(|| site_of(a.pc))
        };
        if !wrapped.moved.is_empty() {
            chooser.reset();
            objects = ObjectMap::build(debug, bias, &p.allocs, &mut chooser, alloc_site);
        }
        // The dynamic way: the slots the allocating threads stored the blocks' addresses
        // into, then the blocks typed again with them.
        let stored = stored_slots(facts, bias, &p.allocs, tally, &objects, alloc_site, site_of);
        if !stored.is_empty() {
            chooser.stored = stored;
            chooser.reset();
            objects = ObjectMap::build(debug, bias, &p.allocs, &mut chooser, alloc_site);
        }
        // What the program did with the blocks nothing else typed, or that only the
        // allocating function's struct types did: a struct type is kept where the accesses
        // went through pointers to it, an untyped block takes the size of its accesses.
        let unsure: BTreeSet<u64> = chooser
            .sites
            .iter()
            .filter(|(_, i)| matches!(i.found_by, FoundBy::Function | FoundBy::Nothing))
            .map(|(&s, _)| s)
            .collect();
        if !unsure.is_empty() {
            chooser.uses = Some(attribute::block_uses(
                debug, tally, &objects, &unsure, site_of,
            ));
            chooser.reset();
            objects = ObjectMap::build(debug, bias, &p.allocs, &mut chooser, alloc_site);
        }
        for (&site, info) in &chooser.sites {
            let Some(type_name) = info.type_name.clone() else {
                continue;
            };
            let r = debug.resolve_alloc(site);
            let inlined = debug.inlined_wrappers(site);
            let (elem_type, elem_kind, elem_size) = match &info.elem {
                Some(e) => (
                    Some(e.name.clone()),
                    Some(e.kind.label().to_string()),
                    Some(e.size),
                ),
                None => (None, None, None),
            };
            let entry = allocations.entry(type_name).or_default();
            entry.push(crate::profile::AllocationSite {
                function: r.symbol.clone(),
                source: r.source.clone(),
                address: Some(site),
                variable: info.variable.clone(),
                element_type: elem_type,
                element_kind: elem_kind,
                element_size: elem_size,
                found_by: info.found_by.label().to_string(),
                blocks: info.blocks,
                max_bytes: info.max_bytes,
                type_size: info.type_size,
                through: wrapped
                    .callers
                    .get(&site)
                    .map(|c| c.0.clone())
                    .or_else(|| inlined.as_ref().map(|i| i.0.clone()))
                    .unwrap_or_default(),
                caller_found_by: wrapped
                    .callers
                    .get(&site)
                    .map(|c| c.1.to_string())
                    .or_else(|| inlined.as_ref().map(|_| "inlined call".to_string())),
                callers: wrapped.unresolved.get(&site).cloned().unwrap_or_default(),
            });
        }
        heap_typed += objects.heap_typed;
        heap_untyped += objects.heap_untyped;
        for ((size, _site), names) in chooser.ambiguous.drain() {
            ambiguous.entry(size).or_insert(names);
        }
        let exe_name = Path::new(&p.exe)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let exe_id = names.id(&exe_name);
        let mut resolved: HashMap<u64, debuginfo::Resolved, FastHash> = HashMap::default();
        for t in p.threads.values() {
            dropped += t.dropped;
        }
        let tid_of = |thread: u32| p.threads.get(&thread).map_or(thread, |th| th.tid);
        let life_of = |thread: u32| p.threads.get(&thread).map(|th| (th.tsc_start, th.tsc_end));
        // Attribute, then number each object's threads by how much they touch it: `cpus`
        // in the profile are these numbers (0: the object's busiest thread), so that
        // objects of one type, merged in type coordinates, still tell one thread per
        // object apart from several threads on one object.
        let mut hits: Vec<(&trace::Counted, &attribute::Object, u32)> =
            Vec::with_capacity(tally.len());
        // Consecutive places of one thread in one element (the places come sorted by
        // thread and address): (element, birth, thread, accesses).
        let mut runs: Vec<(u64, u64, u32, u64)> = Vec::new();
        // Who uses which element on each physical line: threads writing their own elements
        // of one line share it though each element has one writer, and so does a thread
        // reading its element beside another thread's written one (issue 16).
        let mut line_users: HashMap<(u64, u64), Vec<ElementUse>, FastHash> = HashMap::default();
        let process_start = total;
        let mut last_thread = None;
        let mut last_object: Option<(*const attribute::Object, u32)> = None;
        for k in tally {
            let n = k.count as f64 * scale_of(k.thread, k.pc, k.kind);
            total += n;
            if last_thread != Some(k.thread) {
                all_threads.insert((p.pid, tid_of(k.thread)));
                last_thread = Some(k.thread);
            }
            let Some(obj) = objects.lookup_during(k.addr, life_of(k.thread)) else {
                continue;
            };
            // A summary of many places (the memory budget's) counts one site's accesses over
            // [lo, hi): it stands for one member only when the range holds that member alone
            // (a site reading `p[i].cost` of many elements). Otherwise which element or line
            // each access went to is not known: the range is named as degraded, never piled
            // onto the element at its sample address.
            if k.summary
                && let Some(&(lo, hi)) = p.summary_ranges.get(&(k.thread, k.pc))
                && !one_member(obj, lo, hi, u64::from(k.size))
            {
                let n = k.count as f64 * scale_of(k.thread, k.pc, k.kind);
                attributed += n;
                let type_id = names.id(&obj.ty.name);
                type_sizes.insert(type_id, obj.ty.size);
                touched_whole.insert((type_id, obj.base, obj.born), obj.count.max(1));
                let code = site_of(k.pc);
                let kind = k.kind as u8;
                let d = degraded
                    .entry((type_id, obj.base, obj.born, tid_of(k.thread), code, kind))
                    .or_insert_with(|| DegradedRange {
                        object: object_label(debug, obj),
                        start: u64::MAX,
                        tid: i64::from(tid_of(k.thread)),
                        code: code_label(&debug.resolve(code), code),
                        ..Default::default()
                    });
                let (lo, hi) = (lo.max(obj.base), hi.min(obj.end()).max(lo.max(obj.base)));
                d.start = d.start.min(lo - obj.base);
                d.end = d.end.max(hi - obj.base);
                match k.kind {
                    Kind::Load => d.loads += n,
                    Kind::Store => d.stores += n,
                    Kind::Rmw => d.rmw += n,
                }
                continue;
            }
            // Elements of an array are objects of their own.
            let element = k.addr - obj.type_offset(k.addr);
            // The places come sorted by address: one object's run of them interns its type once.
            let ty = match last_object {
                Some((o, ty)) if std::ptr::eq(o, obj) => ty,
                _ => {
                    let ty = names.id(&obj.ty.name);
                    last_object = Some((obj as *const _, ty));
                    ty
                }
            };
            touched.insert((ty, obj.base, obj.born, element));
            // Ranked by the kernel's thread id, which follows creation order, so that equally
            // busy threads (two workers with the same share) are numbered as they were
            // created, not in the order their first accesses happened to reach the runtime.
            let tid = tid_of(k.thread);
            match runs.last_mut() {
                Some(r) if (r.0, r.1, r.2) == (element, obj.born, tid) => {
                    r.3 = r.3.saturating_add(k.count)
                }
                _ => runs.push((element, obj.born, tid, k.count)),
            }
            // Summaries of many places (the memory budget's) name no element or line.
            if !matches!(k.kind, Kind::Load) && !k.summary {
                element_use(
                    line_users.entry((k.addr / line, obj.born)).or_default(),
                    element,
                    k.thread,
                )
                .writes += k.count as f64 * scale_of(k.thread, k.pc, k.kind);
            }
            hits.push((k, obj, runs.len() as u32 - 1));
        }
        // Reads only where some element is written (after the writes, so that a stream of
        // reads over private data adds nothing here).
        for (k, obj, _) in &hits {
            if matches!(k.kind, Kind::Load)
                && !k.summary
                && let Some(users) = line_users.get_mut(&(k.addr / line, obj.born))
            {
                let element = k.addr - obj.type_offset(k.addr);
                element_use(users, element, k.thread).reads +=
                    k.count as f64 * scale_of(k.thread, k.pc, k.kind);
            }
        }
        // A side below this many accesses on the line cannot cause more transfers than the
        // diagnosis's floor for the run (each of its accesses moves the line at most twice):
        // main's one setup store of the next element does not make a pair.
        let partner_floor = (ELEMENT_PARTNER_FLOOR * (total - process_start)).max(1.0);
        let numbering = thread_ranks(&runs);
        drop(runs);
        // Which accesses can meet: by the locks the tally counted them under.
        overlap.tally(hits.iter().map(|(k, _, _)| {
            let n = k.count as f64 * scale_of(k.thread, k.pc, k.kind);
            (k.thread, k.addr / line, k.lock, n)
        }));
        // What is said once per object: its type's interned name, the note on it.
        let mut seen_objects: HashMap<*const attribute::Object, u32, FastHash> = HashMap::default();
        let mut next_site = 0usize;
        for (k, obj, run) in hits {
            let n = k.count as f64 * scale_of(k.thread, k.pc, k.kind);
            let tid = tid_of(k.thread);
            let element = k.addr - obj.type_offset(k.addr);
            let cpu = numbering[run as usize];
            attributed += n;
            let offset = obj.type_offset(k.addr);
            let code = site_of(k.pc);
            let type_id = match seen_objects.get(&(obj as *const _)) {
                Some(&id) => id,
                None => {
                    let id = names.id(&obj.ty.name);
                    seen_objects.insert(obj as *const _, id);
                    let label = object_label(debug, obj);
                    let note = notes.entry(obj.ty.name.clone()).or_default();
                    if obj.base % line != 0 {
                        note.misaligned.insert(label.clone());
                    }
                    note.objects.insert(label);
                    id
                }
            };
            let mut counts = Counts::default();
            match k.kind {
                Kind::Load => counts.loads = n,
                Kind::Store => counts.stores = n,
                Kind::Rmw => counts.rmw = n,
            }
            let (mut st, mut sf, mut inv, mut pt, mut pf) = (0.0, 0.0, 0.0, 0.0, 0.0);
            let site_key = SiteKey {
                thread: k.thread,
                addr: k.addr,
                size: k.size,
                kind: k.kind,
                pc: k.pc,
            };
            // Both in place order: the traced place, if any, is at the cursor.
            while sites.get(next_site).is_some_and(|s| s.0 < site_key) {
                next_site += 1;
            }
            // A summary of many places only borrows its sample's address: the traced
            // place there is the full entry's, which sorts beside it.
            if !k.summary
                && let Some(&(key, site)) = sites.get(next_site)
                && key == site_key
            {
                let site = site as usize;
                let s = primary.sites[site];
                // The trace holds a sample of the eligible accesses: scale to all of them.
                let f = if s.traced > 0 {
                    k.eligible.max(s.traced) as f64 / s.traced as f64
                        * scale_of(k.thread, k.pc, k.kind)
                } else {
                    0.0
                };
                st = s.transfers_true as f64 * f;
                sf = s.transfers_false as f64 * f;
                inv = s.invalidations as f64 * f;
                if let Some(pairs) = &pairs {
                    let q = pairs.sites[site];
                    pt = q.transfers_true as f64 * f;
                    pf = q.transfers_false as f64 * f;
                }
            }
            counts.lcl_hitm = st + sf;
            let key = AccessKey {
                type_name: type_id,
                offset,
                size: u64::from(k.size),
                code,
                exe: exe_id,
                cpu,
            };
            let v = accesses.entry(key).or_default();
            v.counts.add(&counts);
            v.sim_true += st;
            v.sim_false += sf;
            v.invalidations += inv;
            v.pair_true += pt;
            v.pair_false += pf;
            // A site's summary too (the memory budget's): the tally keeps it apart by lock.
            v.sequential += n * (1.0 - overlap.share_at(k.thread, k.addr / line, k.lock));
            let is_write = !matches!(k.kind, Kind::Load);
            // Both sides above the floor: main filling in a table that workers then read
            // writes each line a few times, which moves it no more often than that.
            if !k.summary
                && line_users.get(&(k.addr / line, obj.born)).is_some_and(|u| {
                    let own = u
                        .iter()
                        .find(|o| o.element == element && o.thread == k.thread)
                        .map_or(0.0, |o| if is_write { o.writes } else { o.reads });
                    own >= partner_floor
                        && u.iter().any(|o| {
                            o.element != element
                                && o.thread != k.thread
                                && (o.writes >= partner_floor
                                    || (is_write && o.reads >= partner_floor))
                        })
                })
            {
                if is_write {
                    v.element_writes += n;
                } else {
                    v.element_reads += n;
                }
                // Which element, by which thread: the verdict names them (`g[0].v`).
                let size = obj.ty.size.max(1);
                let el = element_lines
                    .entry((type_id, obj.base, obj.born, k.addr / line))
                    .or_insert_with(|| {
                        let (variable, alloc_function, alloc_source) = match &obj.origin {
                            Origin::Global(name) => (Some(name.clone()), None, None),
                            Origin::Heap { site } => {
                                let r = debug.resolve_alloc(*site);
                                let f = match (r.symbol, r.offset) {
                                    (Some(s), Some(o)) => format!("{s}+{o}"),
                                    (Some(s), None) => s,
                                    _ => format!("{site:#x}"),
                                };
                                (None, Some(f), r.source)
                            }
                        };
                        ElementLine {
                            variable,
                            alloc_function,
                            alloc_source,
                            line_offset: (k.addr / line * line) as i64 - obj.base as i64,
                            misalignment: obj.base % line,
                            writers: Vec::new(),
                            readers: Vec::new(),
                        }
                    });
                let index = (element - obj.base) / size;
                let field = obj.scalar_field(offset).or_else(|| {
                    facts
                        .leaves
                        .get(&obj.ty)
                        .and_then(|l| fields::leaf_at(l, offset))
                        .map(|l| l.path.clone())
                });
                let (offsets, names) = if is_write {
                    let w = entry_in(
                        &mut el.writers,
                        |w| w.index == index && w.tid == i64::from(tid),
                        || ElementWriter {
                            index,
                            tid: i64::from(tid),
                            ..Default::default()
                        },
                    );
                    w.writes += n;
                    (&mut w.offsets, &mut w.fields)
                } else {
                    let r = entry_in(
                        &mut el.readers,
                        |r| r.index == index && r.tid == i64::from(tid),
                        || ElementReader {
                            index,
                            tid: i64::from(tid),
                            ..Default::default()
                        },
                    );
                    r.reads += n;
                    (&mut r.offsets, &mut r.fields)
                };
                if !offsets.contains(&offset) {
                    offsets.push(offset);
                    if let Some(f) = field
                        && !names.contains(&f)
                    {
                        names.push(f);
                    }
                }
            }
            v.threads.insert((p.pid, tid));
            if let Some(name) = p.thread_name(k.thread)
                && !v.comms.contains(name)
            {
                v.comms.insert(name.to_string());
            }
            if v.field.is_none() {
                v.field = obj.scalar_field(offset).or_else(|| {
                    facts
                        .leaves
                        .get(&obj.ty)
                        .and_then(|l| fields::leaf_at(l, offset))
                        .map(|l| l.path.clone())
                });
                v.resolved = resolved
                    .entry(code)
                    .or_insert_with(|| debug.resolve(code))
                    .clone();
            }
        }
    }
    progress(Step::Done);

    let partial = processes.iter().any(|p| !p.complete());
    let mut profile = Profile::new(TOOL, Unit::Count, line);
    profile.provenance.tool_version = Some(env!("CARGO_PKG_VERSION").to_string());
    profile.provenance.command = opts.command.clone();
    // The recorded binary: where `diagnose --profile` finds the types when given no --dwarf.
    if let Some(p) = processes.first() {
        let exe = std::fs::canonicalize(&p.exe)
            .map(|e| e.display().to_string())
            .unwrap_or_else(|_| p.exe.clone());
        profile.provenance.settings.insert("program".into(), exe);
    }
    profile.provenance.machine = Machine {
        cpus: opts.machine_cpus,
        numa_nodes: None,
        cacheline_size: Some(line),
        description: None,
    };
    profile.provenance.events = vec!["compiler-instrumented loads and stores (all)".into()];
    let s = &mut profile.provenance.settings;
    s.insert("simulated_line".into(), line.to_string());
    if opts.adjacent_line {
        s.insert("simulated_pairs".into(), (line * 2).to_string());
    }
    let sample = processes.iter().map(|p| p.sample.max(1)).max().unwrap_or(1);
    let adaptive = processes.iter().any(|p| p.adaptive);
    let bursts = bursts_summary(&processes);
    s.insert(
        "sample".into(),
        if bursts.is_some() {
            "bursts".to_string()
        } else if adaptive {
            "auto".to_string()
        } else {
            sample.to_string()
        },
    );
    s.insert("cpus_mean".into(), "threads".into());
    if partial {
        s.insert("partial".into(), "true".into());
    }
    let estimated: u64 = processes.iter().map(|p| p.estimated).sum();
    let max_period = processes.iter().map(|p| p.max_period).max().unwrap_or(0);
    let mut note = String::from(if bursts.is_some() {
        "counts of every instrumented access per code site and thread, their places as in the recorded windows (bursts, below); transfers"
    } else if adaptive && estimated > 0 {
        "counts of every instrumented access, some estimated (adaptive sampling, below); transfers"
    } else {
        "exact counts of every instrumented access; transfers"
    });
    note.push_str(
        " (lcl_hitm) from a MESI simulation with one cache per thread; `cpus` are threads, numbered per object by how much they touch it",
    );
    if sample > 1 {
        note.push_str(&format!(
            "; sampled: bursts of 1 in {sample} accesses per thread, scaled up"
        ));
    }
    if adaptive {
        note.push_str(&format!(
            "; ADAPTIVE SAMPLING (--sample auto): each code site of each thread counted in bursts of 256 accesses; a site whose burst met only lines not contended (one thread's, or only read since shared; a line handed over and written counts as contended here) doubled its period (up to 1 in {max_period} here), one that met a contended line went back to counting every access; each access counted in a burst at period N stands for N (the burst and the N-1 bursts' worth skipped after it): {estimated} of {} accesses were skipped and are estimated that way",
            total.round() as u64
        ));
    }
    if let Some(b) = &bursts {
        note.push_str(&format!(
            "; BURSTS (--sample bursts): recorded the first {} in full, then {} us of every {} us ({} windows, {:.1} % of the run; a switch took {:.0} us); between windows the hook calls of {} code sites were rewritten into jumps to trampolines that only count each site's executions per thread; those executions are spread over the places the site's recorded executions went to, in proportion, and its simulated transfers scaled alike ({} executions of sites no window saw on their thread count in the total only); calls that cannot be patched (16-byte atomics, memory ranges, calls through a PLT) were counted in full, and the ordered trace keeps to the windows",
            duration_text(b.warmup_us.max(u64::from(b.on_us))),
            b.on_us,
            b.period_us,
            b.windows,
            100.0 * b.recorded_fraction,
            b.switch_us,
            b.patched_sites,
            bursts_unplaced.round()
        ));
    }
    if partial {
        let why: Vec<String> = processes
            .iter()
            .filter(|p| !p.complete())
            .map(|p| match p.crash {
                Some(sig) => format!("process {} ended by {}", p.pid, signal_name(sig as i32)),
                None if p.truncated => format!("process {}'s recording is cut off", p.pid),
                None => format!("process {} ended without the runtime's final flush", p.pid),
            })
            .collect();
        note.push_str(&format!(
            "; PARTIAL: {}: what was flushed before is all there is",
            why.join(", ")
        ));
    }
    let budget_level = processes.iter().map(|p| p.budget_level).max().unwrap_or(0);
    let summarized: u64 = processes.iter().map(|p| p.summarized).sum();
    let lost: u64 = processes.iter().map(|p| p.lost).sum();
    if budget_level > 0 {
        s.insert("budget_level".into(), budget_level.to_string());
        note.push_str(&format!(
            "; MEMORY BUDGET reached: {} ({summarized} accesses counted per code site over the range of addresses the site covered: exact in total, attributed to a member only where that range holds one member; otherwise listed per type as `degraded`, with the object, bytes and lines they covered, and in no element or line)",
            budget_step(budget_level)
        ));
    }
    let warnings = runtime_warnings(&processes, lost, dropped);
    for w in &warnings {
        note.push_str("; ");
        note.push_str(&w.to_uppercase()[..1]);
        note.push_str(&w[1..]);
    }
    profile.provenance.note = Some(note);

    // The order of the profile: by type name, offset, size, code, program, thread number.
    let mut accesses: Vec<(AccessKey, AccessVal)> = accesses.into_iter().collect();
    accesses.sort_unstable_by(|(a, _), (b, _)| {
        names
            .get(a.type_name)
            .cmp(names.get(b.type_name))
            .then(a.offset.cmp(&b.offset))
            .then(a.size.cmp(&b.size))
            .then(a.code.cmp(&b.code))
            .then(names.get(a.exe).cmp(names.get(b.exe)))
            .then(a.cpu.cmp(&b.cpu))
    });
    for (k, v) in accesses {
        let threads: Vec<(u32, u32)> = v.threads.iter().copied().collect();
        let pids: BTreeSet<i64> = threads.iter().map(|&(p, _)| i64::from(p)).collect();
        let mut details = crate::profile::Details::new();
        let mut put = |name: &'static str, x: f64| {
            if x > 0.0 {
                details.insert(name, x.round());
            }
        };
        put("sim_true_sharing", v.sim_true);
        put("sim_false_sharing", v.sim_false);
        put("sim_invalidations", v.invalidations);
        put("pair_true_sharing", v.pair_true);
        put("pair_false_sharing", v.pair_false);
        put("element_line_writes", v.element_writes);
        put("element_line_reads", v.element_reads);
        put("sequential_accesses", v.sequential);
        let mut counts = v.counts;
        counts.lcl_hitm = counts.lcl_hitm.round();
        let access = Access {
            offset: Some(k.offset),
            size: Some(k.size),
            field: v.field.clone(),
            counts,
            cpus: Some(CpuUse::list([k.cpu])),
            threads: Some(Box::new(ThreadUse {
                count: Some(threads.len() as u32),
                pids: pids.into_iter().collect(),
                tids: threads.iter().map(|&(_, t)| i64::from(t)).collect(),
                comms: v.comms.iter().cloned().collect(),
            })),
            code: Some(CodeLocation {
                symbol: v.resolved.symbol.as_deref().map(Into::into),
                symbol_offset: v.resolved.offset,
                address: Some(k.code),
                object: Some(names.get(k.exe).into()),
                source: v.resolved.source.as_deref().map(Into::into),
                privilege: Some(Privilege::User),
            }),
            details,
            ..Default::default()
        };
        profile
            .type_profile_mut(names.get(k.type_name))
            .accesses
            .push(access);
    }
    for ((type_id, base, ..), mut d) in degraded {
        // Physical lines, and the type's offsets when the range lies within one element.
        let (first, last) = (
            (base + d.start) / line,
            (base + d.end.max(d.start + 1) - 1) / line,
        );
        d.lines = last - first + 1;
        let t = profile.type_profile_mut(names.get(type_id));
        let size = type_sizes.get(&type_id).copied().unwrap_or(0);
        if size > 0 && d.start / size == (d.end.max(d.start + 1) - 1) / size {
            d.offset_start = Some(d.start % size);
            d.offset_end = Some(d.start % size + (d.end - d.start));
        }
        d.loads = d.loads.round();
        d.stores = d.stores.round();
        d.rmw = d.rmw.round();
        t.degraded.push(d);
    }
    let mut element_lines: Vec<((u32, u64, u64, u64), ElementLine)> =
        element_lines.into_iter().collect();
    element_lines.sort_unstable_by(|(a, _), (b, _)| {
        names
            .get(a.0)
            .cmp(names.get(b.0))
            .then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3)))
    });
    for ((type_id, ..), mut el) in element_lines {
        el.writers.sort_by_key(|w| (w.index, w.tid));
        el.readers.sort_by_key(|r| (r.index, r.tid));
        for w in &mut el.writers {
            w.offsets.sort_unstable();
            w.writes = w.writes.round();
        }
        for r in &mut el.readers {
            r.offsets.sort_unstable();
            r.reads = r.reads.round();
        }
        // Only lines with an element written by one thread beside another element another
        // thread writes or reads (the test above is per access; a thread's own element
        // beside nobody's is not one).
        let two = el.writers.iter().any(|a| {
            el.writers
                .iter()
                .map(|b| (b.index, b.tid))
                .chain(el.readers.iter().map(|b| (b.index, b.tid)))
                .any(|(index, tid)| a.index != index && a.tid != tid)
        });
        if two {
            profile
                .type_profile_mut(names.get(type_id))
                .element_lines
                .push(el);
        }
    }
    // How many instances of each type there are, where the recording saw every access (no
    // sampling, no bursts, nothing lost): the instances it saw touched.
    let every_access = processes
        .iter()
        .all(|p| p.sample <= 1 && !p.adaptive && p.bursts.is_none() && p.lost == 0);
    let mut instances_touched: HashMap<u32, u64, FastHash> = HashMap::default();
    if every_access {
        for (&(ty, _, _), &n) in &touched_whole {
            *instances_touched.entry(ty).or_default() += n;
        }
        for &(ty, base, born, _) in &touched {
            if !touched_whole.contains_key(&(ty, base, born)) {
                *instances_touched.entry(ty).or_default() += 1;
            }
        }
    }
    for t in &mut profile.types {
        if let Some(a) = allocations.remove(&t.type_name) {
            t.allocations = a;
        }
        if let Some(&n) = instances_touched.get(&names.id(&t.type_name))
            && n > 0
        {
            let facts = t.instances.get_or_insert_with(Default::default);
            facts.count = Some(n);
            facts.counted_by = Some(crate::profile::CountSource::Recording);
        }
        // The busiest lines first, a bounded number (a huge array would list every line).
        t.element_lines.sort_by(|a, b| {
            let w = |l: &ElementLine| {
                l.writers.iter().map(|w| w.writes).sum::<f64>()
                    + l.readers.iter().map(|r| r.reads).sum::<f64>()
            };
            w(b).total_cmp(&w(a))
                .then(a.line_offset.cmp(&b.line_offset))
        });
        t.element_lines.truncate(64);
        if let Some(n) = notes.get(&t.type_name) {
            let mut text = format!(
                "objects: {}",
                n.objects.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            if !n.misaligned.is_empty() {
                text.push_str(&format!(
                    "; not aligned to a {line}-byte line: {} (its real lines do not start where the struct's line numbers do)",
                    n.misaligned.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            t.note = Some(text);
        }
    }
    profile.types.sort_by(|a, b| {
        let w = |t: &crate::profile::TypeProfile| -> f64 {
            t.accesses.iter().map(|a| a.counts.transfers()).sum()
        };
        w(b).total_cmp(&w(a)).then(a.type_name.cmp(&b.type_name))
    });
    profile.derive_function_groups();

    let mut sum = BTreeMap::new();
    // Executions between windows of sites no window saw on their thread: counted, unplaced.
    sum.insert("accesses".to_string(), (total + bursts_unplaced).round());
    sum.insert("accesses_attributed".to_string(), attributed.round());
    sum.insert("threads".to_string(), all_threads.len() as f64);
    sum.insert("processes".to_string(), processes.len() as f64);
    sum.insert("traced_accesses".to_string(), traced_events as f64);
    sum.insert("heap_blocks_typed".to_string(), heap_typed as f64);
    sum.insert("heap_blocks_untyped".to_string(), heap_untyped as f64);
    sum.insert("dropped".to_string(), dropped as f64);
    sum.insert("partial".to_string(), if partial { 1.0 } else { 0.0 });
    let decimation = processes.iter().map(|p| p.decimation).max().unwrap_or(0);
    sum.insert("trace_decimation".to_string(), (decimation + 1) as f64);
    sum.insert("budget_level".to_string(), budget_level as f64);
    sum.insert("summarized_accesses".to_string(), summarized as f64);
    sum.insert("lost_chunks".to_string(), lost as f64);
    if let Some(b) = &bursts {
        sum.insert("bursts_recorded_fraction".to_string(), b.recorded_fraction);
        sum.insert("bursts_windows".to_string(), b.windows as f64);
        sum.insert("bursts_patched_sites".to_string(), b.patched_sites as f64);
        sum.insert("bursts_switch_us".to_string(), b.switch_us);
        sum.insert(
            "bursts_unplaced_accesses".to_string(),
            bursts_unplaced.round(),
        );
    }
    if adaptive {
        sum.insert("sampled_estimated_accesses".to_string(), estimated as f64);
        sum.insert("sample_max_period".to_string(), max_period as f64);
    }
    let ns: u64 = processes
        .iter()
        .filter_map(|p| p.end.map(|(_, e)| e.saturating_sub(p.ns_start)))
        .max()
        .unwrap_or(0);
    if ns > 0 {
        sum.insert("seconds".to_string(), ns as f64 / 1e9);
    }
    profile.summary.insert("record".to_string(), sum);

    Ok(Built {
        profile,
        partial,
        budget_level,
        adaptive: adaptive.then_some((estimated, total.round() as u64, max_period)),
        bursts,
        bursts_ran: processes.iter().any(|p| p.bursts.is_some()),
        ambiguous_heap: ambiguous.into_iter().collect(),
        warnings,
    })
}

/// Bursts: between windows the runtime's trampolines send the first execution of every
/// TRAMP_SAMPLE of each site and thread to the hook (runtime/lineup_rt.c), which records its
/// place; those executions are in the hook's counts and in the trampoline's.
const TRAMP_SAMPLE: u64 = 1024;

/// The slot of an access kind in per-kind arrays.
fn kind_slot(kind: Kind) -> usize {
    match kind {
        Kind::Load => 0,
        Kind::Store => 1,
        Kind::Rmw => 2,
    }
}

/// Bursts: per (thread, pc) of a patched site, what its recorded counts of each kind are
/// multiplied by (its executions in the windows and between them, over those in the
/// windows; for a memory range's site, per kind: its pieces, which its load and store sides
/// make in different numbers); and the executions of sites never recorded in a window on
/// that thread, which have no place.
fn bursts_site_scale(p: &Process) -> (HashMap<(u32, u64), [f64; 3], FastHash>, f64) {
    let mut out: HashMap<(u32, u64), [f64; 3], FastHash> = HashMap::default();
    if p.hits.is_empty() && p.range_hits.is_empty() {
        return (out, 0.0);
    }
    // Executions in the windows: an update's are counted once as a load and once as a
    // store, so per kind, the largest.
    let mut recorded: HashMap<(u32, u64), [u64; 3], FastHash> = HashMap::default();
    for k in &p.counted {
        let e = recorded.entry((k.thread, k.pc)).or_default();
        let slot = kind_slot(k.kind);
        e[slot] = e[slot].saturating_add(k.count);
    }
    let mut unplaced = 0.0;
    for &(thread, pc, hits) in &p.hits {
        // The runtime's trampolines send one execution in TRAMP_SAMPLE (the first of
        // each run of that many) to the hook, which counted it with its place too.
        let hits = hits - hits.div_ceil(TRAMP_SAMPLE);
        let seen = recorded
            .get(&(thread, pc))
            .map_or(0, |r| r.iter().copied().max().unwrap_or(0));
        if seen == 0 {
            unplaced += hits as f64;
        } else {
            for s in out.entry((thread, pc)).or_insert([1.0; 3]) {
                *s += hits as f64 / seen as f64;
            }
        }
    }
    // A range's pieces between windows, per kind: none of them was recorded (the runtime
    // records a sampled execution instead of counting it).
    for &(thread, pc, kind, pieces) in &p.range_hits {
        let slot = usize::from(kind.min(2));
        let seen = recorded.get(&(thread, pc)).map_or(0, |r| r[slot]);
        if seen == 0 {
            unplaced += pieces as f64;
        } else {
            out.entry((thread, pc)).or_insert([1.0; 3])[slot] += pieces as f64 / seen as f64;
        }
    }
    (out, unplaced)
}

/// Microseconds as a person writes them: `50 us`, `2.5 ms`, `1 s`.
pub fn duration_text(us: u64) -> String {
    let (v, unit) = match us {
        0..1000 => return format!("{us} us"),
        1000..1_000_000 => (us as f64 / 1e3, "ms"),
        _ => (us as f64 / 1e6, "s"),
    };
    format!("{} {unit}", (v * 10.0).round() / 10.0)
}

/// The bursts of all processes that left windows out, summed (None: none did; a run
/// shorter than the warm-up was recorded in full).
fn bursts_summary(processes: &[trace::Process]) -> Option<BurstsSummary> {
    let runs: Vec<&trace::Bursts> = processes
        .iter()
        .filter_map(|p| p.bursts.as_ref())
        .filter(|b| b.recorded_ns < b.run_ns)
        .collect();
    let first = runs.first()?;
    let recorded: u64 = runs.iter().map(|b| b.recorded_ns).sum();
    let run: u64 = runs.iter().map(|b| b.run_ns).sum();
    Some(BurstsSummary {
        recorded_fraction: if run == 0 {
            1.0
        } else {
            (recorded as f64 / run as f64).min(1.0)
        },
        windows: runs.iter().map(|b| b.windows).sum(),
        on_us: first.on_us,
        period_us: first.period_us,
        warmup_us: first.warmup_us,
        patched_sites: runs.iter().map(|b| b.sites.len()).sum(),
        switch_us: {
            let switches: u64 = runs.iter().map(|b| 2 * b.windows).sum();
            let ns: u64 = runs.iter().map(|b| b.switch_ns).sum();
            if switches == 0 {
                0.0
            } else {
                ns as f64 / switches as f64 / 1e3
            }
        },
    })
}

/// Is struct `id` one the recorded program did not write: lineup's runtime's, or a system
/// header's (libc's `struct lconv`, `pthread_attr_t`)? Such types are left out of
/// `layout --all` and of suggestions for a recorded program: no heap block is ever
/// named after them by size.
pub fn is_foreign_type(types: &crate::types::Types<'_>, id: crate::types::TypeId) -> bool {
    let Some(origin) = types.composite(id).and_then(|c| c.origin.as_deref()) else {
        return false;
    };
    let unit = origin.unit.rsplit('/').next().unwrap_or("");
    unit.starts_with("lineup_rt")
        || ["/usr/", "/lib/", "/lib64/", "/opt/"]
            .iter()
            .any(|d| origin.file.starts_with(d))
}

/// Does `types` come from a program built with `lineup cc` (its runtime's types are there)?
pub fn is_recorded_program(types: &crate::types::Types<'_>) -> bool {
    types.composites().any(|id| {
        types
            .composite(id)
            .and_then(|c| c.origin.as_deref())
            .is_some_and(|o| {
                o.unit
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .starts_with("lineup_rt")
            })
    })
}

/// Up to `n` struct names close to `name` for "did you mean", without a recorded program's
/// foreign types ([`is_foreign_type`]).
pub fn similar_program_names(types: &crate::types::Types<'_>, name: &str, n: usize) -> Vec<String> {
    if !is_recorded_program(types) {
        return types.similar_composite_names(name, n);
    }
    let own = |c: &String| {
        types
            .find_composites(c)
            .iter()
            .any(|&id| !is_foreign_type(types, id))
    };
    types
        .similar_composite_names(name, n * 8)
        .into_iter()
        .filter(own)
        .take(n)
        .collect()
}

/// The type of an array of scalars or an untyped heap block of a recorded profile, built
/// into `types` from its allocation sites (the program's DWARF has no such struct): one
/// member named after the pointer, an array of the element type (`double buf[12]`), or
/// `unsigned char bytes[N]` when untyped. `None` when `tp` names no such block.
pub fn allocation_type<'a>(
    types: &mut crate::types::Types<'a>,
    tp: &crate::profile::TypeProfile,
) -> Option<crate::types::TypeId> {
    use crate::types::{Composite, Kind, Member, Type};
    let site = tp
        .allocations
        .iter()
        .filter(|a| a.element_kind.as_deref() != Some("struct"))
        .max_by_key(|a| a.type_size)?;
    let leak = |s: String| -> &'a str { Box::leak(s.into_boxed_str()) };
    let (elem_name, elem_size, kind) = match (&site.element_type, site.element_size) {
        (Some(name), Some(size)) if size > 0 => {
            let size32 = u32::try_from(size).ok()?;
            let kind = match site.element_kind.as_deref() {
                Some("float") => Kind::Float { size: size32 },
                Some("pointer") => Kind::Pointer { target: 0 },
                k => Kind::Int {
                    size: size32,
                    signed: !name.starts_with("unsigned")
                        && !name.starts_with("size_t")
                        && !name.starts_with("uint"),
                    is_char: k == Some("char"),
                    is_bool: k == Some("bool"),
                },
            };
            (name.clone(), size, kind)
        }
        _ => (
            "unsigned char".to_string(),
            1,
            Kind::Int {
                size: 1,
                signed: false,
                is_char: true,
                is_bool: false,
            },
        ),
    };
    let member = if site.element_type.is_some() {
        // As the profile's field names have it (`attribute::TypeChooser`).
        site.variable
            .as_deref()
            .map(|v| v.rsplit('.').next().unwrap_or(v).to_string())
            .unwrap_or_else(|| "elements".to_string())
    } else {
        "bytes".to_string()
    };
    let size = site.type_size.max(elem_size);
    let elem = types.push(Type {
        name: leak(elem_name),
        kind,
    });
    let array = types.push(Type {
        name: "",
        kind: Kind::Array {
            elem,
            count: size / elem_size,
        },
    });
    Some(types.push(Type {
        name: leak(tp.type_name.clone()),
        kind: Kind::Struct(Composite {
            size,
            members: vec![Member {
                name: leak(member),
                ty: array,
                bit_offset: 0,
                bitfield_size: 0,
                declared_align: None,
            }],
            declared_align: None,
            is_declaration: false,
            origin: None,
        }),
    }))
}

/// The type's lines (in its own coordinates, `cls` bytes each) that hold accesses a
/// recording's memory budget counted only per code site: the lines of each degraded range
/// that lies within one element, every line of the type for one that spans elements.
pub fn degraded_lines(degraded: &[DegradedRange], cls: u64, type_size: u64) -> BTreeSet<u64> {
    let cls = cls.max(1);
    let lines = type_size.div_ceil(cls);
    let mut out = BTreeSet::new();
    for d in degraded {
        match (d.offset_start, d.offset_end) {
            (Some(a), Some(b)) if b > a => {
                out.extend(a / cls..=((b - 1) / cls).min(lines.saturating_sub(1)))
            }
            _ => out.extend(0..lines),
        }
    }
    out
}

/// What to do about a recorded array of scalars (or an untyped block), which `optimize`
/// cannot reorder: its elements are not members a layout moves, and which thread owns which
/// index is the program's arithmetic. The fix is the program's: give each thread's elements
/// whole lines (a per-thread slice, or index stride, of a multiple of `cls / element`
/// elements) and allocate the array aligned to the line at the site the recording names.
/// `None` when `tp` has no such allocation (a struct, or no recording).
pub fn scalar_array_advice(tp: &crate::profile::TypeProfile, cls: u64) -> Option<String> {
    let site = tp
        .allocations
        .iter()
        .filter(|a| a.element_kind.as_deref() != Some("struct"))
        .max_by_key(|a| a.type_size)?;
    let cls = cls.max(1);
    let (what, per_line) = match (&site.element_type, site.element_size) {
        (Some(t), Some(n)) if n > 0 => (
            format!("an array of {t} ({n} bytes each)"),
            (cls / n).max(1),
        ),
        _ => ("an untyped heap block".to_string(), cls),
    };
    let at = match (&site.function, &site.source) {
        (Some(f), Some(s)) => format!("in {f} at {s}"),
        (Some(f), None) => format!("in {f}"),
        (None, Some(s)) => format!("at {s}"),
        (None, None) => "on the heap".to_string(),
    };
    let selector = site
        .source
        .as_deref()
        .or(site.function.as_deref())
        .unwrap_or(tp.type_name.as_str());
    Some(format!(
        "{} is {what} allocated {at}, not a struct: no layout moves its elements, so optimize has nothing to reorder. \
         To stop threads writing elements on one line, give each thread's elements whole {cls}-byte lines \
         (a per-thread slice or index stride that is a multiple of {per_line} elements) and allocate the array aligned to the line \
         (aligned_alloc({cls}, n * size) or posix_memalign) {at}; `lineup diagnose --alloc {selector}` names the elements that share lines",
        tp.type_name
    ))
}

/// What `lineup optimize` can do for a recorded array of scalars (`optimize` and `diagnose`
/// both decide from this, so that what diagnose promises optimize does): the allocation
/// site it speaks of and either the element type with the per-thread slices it pads, prices
/// and patches, or why it has none (then `optimize` refuses, exit 2, and the fix is by
/// hand). `None` when `tp` has no such allocation (a struct, or no recording).
pub fn scalar_slices(
    tp: &crate::profile::TypeProfile,
    accesses: &[crate::profile::Access],
    cls: u64,
) -> Option<(
    crate::profile::AllocationSite,
    Result<(String, crate::analysis::slices::Slices), String>,
)> {
    let site = tp
        .allocations
        .iter()
        .filter(|a| a.element_kind.as_deref() != Some("struct"))
        .max_by_key(|a| a.type_size)?
        .clone();
    let found = match (&site.element_type, site.element_size) {
        (Some(t), Some(n)) if n > 0 => {
            crate::analysis::slices::per_thread_slices(accesses, n, site.type_size, cls.max(1))
                .map(|s| (t.clone(), s))
                .map_err(|why| {
                    if site.blocks > 1 {
                        format!(
                            "{why}; {} blocks of up to {} bytes were allocated there and are counted as one: where their strides differ (calls with different sizes), their slices overlap here",
                            site.blocks, site.max_bytes
                        )
                    } else {
                        why
                    }
                })
        }
        _ => Err("the block's element type is not known (nothing tells what the program stores in it)".to_string()),
    };
    Some((site, found))
}

/// The verdicts' advice for a recorded array of scalars (or an untyped block) diagnosed as
/// the struct built for it ([`allocation_type`]): the judge words a fix for structs
/// (`alignas` on an element type, padding array members, `lineup optimize` writing the
/// patch), which does not apply to a block the program indexes itself. Each such sentence
/// of `d`'s lines is replaced by the allocation and the stride: whole lines per thread's
/// elements, the array allocated aligned at its site, and what `lineup optimize` does about
/// it, from the decision it makes ([`scalar_slices`]): it prices padded slices and writes
/// the patch, or it has no plan and the sentence says what to change by hand. Nothing
/// changes for a struct.
pub fn advise_scalar_lines(
    d: &mut crate::analysis::diagnose::Diagnosis,
    tp: &crate::profile::TypeProfile,
    cls: u64,
) {
    let cls = cls.max(1);
    let Some((site, found)) = scalar_slices(tp, &tp.accesses, cls) else {
        return;
    };
    let (what, per_line) = match (&site.element_type, site.element_size) {
        (Some(t), Some(n)) if n > 0 => (
            format!("an array of {t} ({n} bytes each)"),
            (cls / n).max(1),
        ),
        _ => ("an untyped heap block".to_string(), cls),
    };
    let at = match (&site.function, &site.source) {
        (Some(f), Some(s)) => format!("in {f} at {s}"),
        (Some(f), None) => format!("in {f}"),
        (None, Some(s)) => format!("at {s}"),
        (None, None) => "on the heap".to_string(),
    };
    let file = site
        .source
        .as_deref()
        .and_then(|s| s.rsplit_once(':'))
        .map(|(f, _)| f.to_string())
        .unwrap_or_else(|| "FILE".to_string());
    let fix = match &found {
        Ok((_, s)) => format!(
            "Threads write it in per-thread slices of {} elements ({} bytes) that share {cls}-byte lines: pad each slice to {} elements ({} bytes, whole lines) and allocate the array aligned to the line (aligned_alloc({cls}, n * size) or posix_memalign) {at}. \
             `lineup optimize --type {} --header {file}` prices the padded slices and, where the model prices them lower and the slice length is a #define the allocation multiplies (in elements or in bytes), writes the patch; otherwise it says what to change by hand",
            s.per_slice,
            s.per_slice * s.elem_size,
            s.padded_per_slice,
            s.padded_per_slice * s.elem_size,
            tp.type_name,
        ),
        Err(why) => format!(
            "`lineup optimize` has no plan for it ({why}): by hand, make the distance between one thread's elements and the next thread's a multiple of {per_line} elements ({cls} bytes; where the program computes that stride, round it up to {cls} bytes, not to less) \
             and allocate the array aligned to the line (aligned_alloc({cls}, n * size) or posix_memalign) {at}, its size rounded up to a multiple of {cls} bytes"
        ),
    };
    let advice = format!(
        "They are elements of {what} allocated {at}, not members of a struct: no layout moves them. {fix}"
    );
    // (where the struct wording starts, where it ends, what stands in between).
    let struct_wording = [
        (
            ". They are slots of one array member",
            "writes the patch)",
            format!(". {advice}"),
        ),
        (
            "Pad or align the element to the line",
            "cannot separate the elements",
            advice,
        ),
    ];
    for line in &mut d.lines {
        for (from, to, by) in &struct_wording {
            let e = &line.explanation;
            if let Some(a) = e.find(from)
                && let Some(b) = e[a..].find(to)
            {
                line.explanation = format!("{}{by}{}", &e[..a], &e[a + b + to.len()..]);
            }
        }
    }
}

/// Accesses a thread keeps while it writes its buffers out (the runtime's PEND_CAP).
const PENDING_PER_THREAD: u64 = 4096;

/// What the runtime did differently from its settings, from its notes and loss counts: a
/// sentence each, said on standard error and in the profile's note.
fn runtime_warnings(processes: &[trace::Process], lost: u64, dropped: u64) -> Vec<String> {
    use trace::RuntimeNote;
    let mut out = Vec::new();
    for p in processes {
        for n in &p.notes {
            out.push(match n {
                RuntimeNote::BurstsOff(why) => format!(
                    "process {}: recording every access without rewriting code (bursts off): {}",
                    p.pid,
                    why.reason()
                ),
                RuntimeNote::StrictSeccomp(thread) => format!(
                    "process {}: {} entered seccomp strict mode: recorded until then, not after",
                    p.pid,
                    match thread {
                        Some(t) => format!("thread {t}"),
                        None => "a thread".to_string(),
                    }
                ),
                RuntimeNote::Other(code) => {
                    format!("process {}: runtime note {code} (a newer runtime?)", p.pid)
                }
            });
        }
    }
    for p in processes {
        // A crash is said by the caller (it knows the signal); an ending nobody saw is not.
        if !p.complete() && p.crash.is_none() {
            out.push(format!(
                "process {} {}: accesses after its last flush are missing (killed by SIGKILL? a full disk? a seccomp filter?)",
                p.pid,
                if p.truncated {
                    "left its recording cut off"
                } else {
                    "ended without the runtime's final flush"
                }
            ));
        }
    }
    if dropped > 0 {
        out.push(format!(
            "{dropped} accesses made by signal handlers while their thread was writing its buffers out were not recorded (past the {PENDING_PER_THREAD} a thread keeps for later)"
        ));
    }
    if lost > 0 {
        out.push(format!(
            "{lost} chunks of the recording could not be written (disk full? descriptors exhausted? a seccomp filter?): their accesses are missing from the counts"
        ));
    }
    out.dedup();
    out
}

#[cfg(test)]
mod scalar_array_advice_tests {
    use super::scalar_array_advice;
    use crate::profile::{AllocationSite, TypeProfile};

    fn recorded(kind: &str, elem: Option<(&str, u64)>) -> TypeProfile {
        TypeProfile {
            type_name: "work_mem@sc.c:71".into(),
            allocations: vec![AllocationSite {
                function: Some("main".into()),
                source: Some("sc.c:71".into()),
                element_type: elem.map(|e| e.0.to_string()),
                element_kind: Some(kind.into()),
                element_size: elem.map(|e| e.1),
                type_size: 64,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_scalar_array_gets_slices_of_whole_lines_and_an_aligned_allocation() {
        let a = scalar_array_advice(&recorded("float", Some(("double", 8))), 64).unwrap();
        assert!(a.starts_with("work_mem@sc.c:71 is an array of double (8 bytes each) allocated in main at sc.c:71, not a struct"), "{a}");
        assert!(a.contains("a multiple of 8 elements"), "{a}");
        assert!(a.contains("aligned_alloc(64, n * size)"), "{a}");
        assert!(
            a.ends_with("`lineup diagnose --alloc sc.c:71` names the elements that share lines"),
            "{a}"
        );
        assert!(!a.contains('\n'), "one line: {a}");
        // 128-byte lines, 4-byte elements: 32 per line.
        let a = scalar_array_advice(&recorded("int", Some(("int", 4))), 128).unwrap();
        assert!(
            a.contains("multiple of 32 elements") && a.contains("aligned_alloc(128,"),
            "{a}"
        );
    }

    #[test]
    fn a_struct_array_gets_no_scalar_advice() {
        assert_eq!(
            scalar_array_advice(&recorded("struct", Some(("pair_t", 16))), 64),
            None
        );
        assert_eq!(scalar_array_advice(&TypeProfile::default(), 64), None);
    }

    fn store(off: u64, thread: u32) -> crate::profile::Access {
        crate::profile::Access {
            offset: Some(off),
            size: Some(8),
            counts: crate::profile::Counts {
                stores: 10.0,
                ..Default::default()
            },
            cpus: Some(crate::profile::CpuUse {
                list: vec![thread],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The decision optimize and diagnose share: slices where each writing thread keeps to
    /// one, otherwise why not (with the blocks counted as one where there were several), and
    /// no element type is a refusal too; a struct is none of its business.
    #[test]
    fn the_shared_decision_finds_slices_or_says_why_not() {
        use super::scalar_slices;
        let tp = recorded("float", Some(("double", 8)));
        let (site, found) = scalar_slices(&tp, &[store(0, 0), store(32, 1)], 64).unwrap();
        assert_eq!(site.source.as_deref(), Some("sc.c:71"));
        let (elem, s) = found.unwrap();
        assert_eq!(
            (elem.as_str(), s.per_slice, s.padded_per_slice),
            ("double", 4, 8)
        );
        // Thread 0 writes across two slices, in two blocks counted as one.
        let mut merged = tp.clone();
        merged.allocations[0].blocks = 2;
        merged.allocations[0].max_bytes = 64;
        let why = scalar_slices(&merged, &[store(0, 0), store(40, 0), store(48, 1)], 64)
            .unwrap()
            .1
            .unwrap_err();
        assert!(
            why.starts_with("thread 0 writes elements 0 to 5, across slices of 4; 2 blocks of up to 64 bytes were allocated there"),
            "{why}"
        );
        let why = scalar_slices(&recorded("float", None), &[store(0, 0), store(32, 1)], 64)
            .unwrap()
            .1
            .unwrap_err();
        assert!(why.contains("element type is not known"), "{why}");
        assert!(scalar_slices(&recorded("struct", Some(("pair_t", 16))), &[], 64).is_none());
    }
}

/// Per allocation call site (link-time), the pointer slot its blocks' addresses went into,
/// from the recorded stores: the first pointer-sized store after the call, by a thread that
/// allocated there, from the same function and source line (`g_buf = malloc(n)`,
/// `args[i].buf = calloc(n, 8)`), to a global pointer variable or a pointer member of an
/// object lineup knows. Stores to the stack (locals) are not recorded: those are the
/// static way's.
fn stored_slots(
    facts: &ExeFacts,
    bias: u64,
    allocs: &[trace::AllocEvent],
    tally: &[trace::Counted],
    objects: &ObjectMap,
    alloc_site: impl Fn(&trace::AllocEvent) -> u64,
    site_of: impl Fn(u64) -> u64,
) -> HashMap<u64, SiteVariable> {
    let debug = &facts.debug;
    let mut sites: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
    for a in allocs.iter().filter(|a| !a.free) {
        sites.entry(alloc_site(a)).or_default().insert(a.thread);
    }
    let mut out = HashMap::new();
    // The 8-byte stores by code address, once: (code, thread, slot address). A program's
    // count tables can hold millions of places and it may have thousands of sites.
    let mut stores: Vec<(u64, u32, u64)> = tally
        .iter()
        .filter(|k| k.size == 8 && k.kind == Kind::Store && k.addr != 0)
        .map(|k| (site_of(k.pc), k.thread, k.addr))
        .collect();
    stores.sort_unstable();
    for (site, threads) in sites {
        let Some((file, line)) = debug.alloc_line(site) else {
            continue;
        };
        // The stores after the call, in code order, while still in the call's function
        // and on its line.
        let mut best: Option<(u64, SiteVariable)> = None;
        let first = stores.partition_point(|s| s.0 <= site);
        for &(code, thread, addr) in &stores[first..] {
            if best.as_ref().is_some_and(|(b, _)| code > *b) {
                break;
            }
            if !debug.same_function(site, code) {
                break;
            }
            if !threads.contains(&thread) || debug.line_of(code) != Some((file.as_str(), line)) {
                continue;
            }
            let slot = if let Some(g) = debug.pointer_global_at(addr.wrapping_sub(bias)) {
                Some(SiteVariable {
                    name: g.name.clone(),
                    elem: g.elem.clone(),
                })
            } else if let Some(obj) = objects.lookup(addr, None) {
                let off = obj.type_offset(addr);
                facts.pointer_members.get(&obj.ty).and_then(|ms| {
                    ms.iter()
                        .find(|m| m.0 == off)
                        .map(|(_, path, elem)| SiteVariable {
                            name: format!("{}.{path}", obj.ty.name),
                            elem: elem.clone(),
                        })
                })
            } else {
                None
            };
            if let Some(v) = slot {
                best = Some((code, v));
            }
        }
        if let Some((_, v)) = best {
            out.insert(site, v);
        }
    }
    out
}

/// Blocks allocated through wrappers, handed to the wrappers' callers.
#[derive(Default)]
struct Wrapped {
    /// (block address, allocation time) -> the caller's call site (link-time).
    moved: HashMap<(u64, u64), u64>,
    /// Per caller site: the wrappers between it and the allocator, and how it was chosen.
    callers: HashMap<u64, (Vec<String>, &'static str)>,
    /// Per wrapper call site whose blocks stayed there: the callers that could have made them.
    unresolved: HashMap<u64, Vec<String>>,
}

/// Which caller of an allocation wrapper each of its blocks came from
/// ([`attribute::choose_caller`]): the only caller; the only one whose pointer's element fits
/// the block; the one whose element struct the code touching the block handles (from the
/// recorded accesses to the block, `objects` built with the wrappers' own sites).
fn wrapped_blocks(
    debug: &DebugInfo,
    named: &[String],
    allocs: &[trace::AllocEvent],
    tally: &[trace::Counted],
    objects: &ObjectMap,
    site_of: impl Fn(u64) -> u64,
) -> Wrapped {
    let mut wrappers = Wrappers::new(debug, named);
    let mut by_site: HashMap<u64, Vec<WrapperCaller>> = HashMap::new();
    for a in allocs.iter().filter(|a| !a.free) {
        let site = site_of(a.pc);
        if !by_site.contains_key(&site) {
            by_site.insert(site, wrappers.callers(site));
        }
    }
    by_site.retain(|_, c| !c.is_empty());
    let mut out = Wrapped::default();
    if by_site.is_empty() {
        return out;
    }
    // Per wrapped block (address, birth): struct name -> accesses through pointers to it.
    let mut uses: HashMap<(u64, u64), HashMap<String, u64>> = HashMap::new();
    let mut types_at: HashMap<u64, Option<Elem>> = HashMap::new();
    for k in tally {
        let Some(obj) = objects.lookup(k.addr, None) else {
            continue;
        };
        let Origin::Heap { site } = obj.origin else {
            continue;
        };
        if !by_site.contains_key(&site) {
            continue;
        }
        let code = site_of(k.pc);
        let elem = types_at
            .entry(code)
            .or_insert_with(|| debug.pointer_used_at(code));
        if let Some(e) = elem.as_ref().filter(|e| e.kind == ElemKind::Struct) {
            *uses
                .entry((obj.base, obj.born))
                .or_default()
                .entry(e.name.clone())
                .or_default() += k.count;
        }
    }
    let none = HashMap::new();
    for a in allocs.iter().filter(|a| !a.free) {
        let site = site_of(a.pc);
        let Some(callers) = by_site.get(&site) else {
            continue;
        };
        let u = uses.get(&(a.addr, a.tsc)).unwrap_or(&none);
        match attribute::choose_caller(callers, a.size, u) {
            Some((c, how)) => {
                out.moved.insert((a.addr, a.tsc), c.site);
                out.callers
                    .entry(c.site)
                    .or_insert((c.through.clone(), how));
            }
            None => {
                out.unresolved.entry(site).or_insert_with(|| {
                    callers
                        .iter()
                        .map(|c| {
                            let r = debug.resolve(c.site);
                            match (r.symbol, debug.line_of(c.site)) {
                                (Some(f), Some((file, line))) => format!("{f} ({file}:{line})"),
                                (Some(f), None) => f,
                                (None, _) => format!("{:#x}", c.site),
                            }
                        })
                        .collect()
                });
            }
        }
    }
    out
}

/// `SIGSEGV` for 11, as a shell names it.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod build_helper_tests {
    use super::{Kind, Names, bursts_site_scale, thread_ranks};
    use crate::record::trace::{Counted, Process};

    #[test]
    fn durations_read_as_written() {
        assert_eq!(super::duration_text(50), "50 us");
        assert_eq!(super::duration_text(2500), "2.5 ms");
        assert_eq!(super::duration_text(1_000_000), "1 s");
    }

    /// Bursts: a site's executions between windows go where its recorded ones went. An
    /// update's recorded executions are one load and one store each, not two executions.
    #[test]
    fn executions_between_windows_scale_each_site_by_its_own_recorded_count() {
        let counted = |thread, addr, kind, pc, count| Counted {
            thread,
            addr,
            size: 8,
            kind,
            pc,
            count,
            eligible: 0,
            summary: false,
            lock: 0,
        };
        let p = Process {
            counted: vec![
                counted(1, 0x1000, Kind::Load, 0x40, 30),
                counted(1, 0x1008, Kind::Load, 0x40, 10),
                counted(1, 0x2000, Kind::Load, 0x44, 5),
                counted(1, 0x2000, Kind::Store, 0x44, 5),
                counted(2, 0x1000, Kind::Load, 0x40, 4),
            ],
            // Thread 1: 120 more of 0x40, 45 of 0x44; thread 2: 0x44, which no window saw;
            // each with the one execution its trampoline sent to the hook (counted above,
            // and in the trampoline's count).
            hits: vec![(1, 0x40, 121), (1, 0x44, 46), (2, 0x44, 10)],
            ..Process::default()
        };
        let (scale, unplaced) = bursts_site_scale(&p);
        assert_eq!(scale[&(1, 0x40)], [4.0; 3]); // (40 + 120) / 40
        assert_eq!(scale[&(1, 0x44)], [10.0; 3]); // (5 + 45) / 5
        assert!(!scale.contains_key(&(2, 0x40)));
        assert_eq!(unplaced, 9.0);
    }

    /// Bursts: a memory range's pieces between windows go, per kind, where the recorded
    /// pieces of that site, kind and thread went: a memcpy's load and store sides make
    /// different numbers of pieces (their alignments differ).
    #[test]
    fn range_pieces_between_windows_scale_each_kind_by_its_own_recorded_count() {
        let counted = |thread, addr, kind, pc, count| Counted {
            thread,
            addr,
            size: 64,
            kind,
            pc,
            count,
            eligible: 0,
            summary: false,
            lock: 0,
        };
        let p = Process {
            counted: vec![
                counted(1, 0x1000, Kind::Load, 0x40, 3),
                counted(1, 0x2000, Kind::Store, 0x40, 2),
                counted(2, 0x1000, Kind::Load, 0x48, 4),
            ],
            range_hits: vec![(1, 0x40, 0, 9), (1, 0x40, 1, 6), (2, 0x48, 1, 5)],
            ..Process::default()
        };
        let (scale, unplaced) = bursts_site_scale(&p);
        assert_eq!(scale[&(1, 0x40)], [4.0, 4.0, 1.0]); // (3 + 9) / 3, (2 + 6) / 2
        assert!(!scale.contains_key(&(2, 0x48))); // its stores: no recorded place
        assert_eq!(unplaced, 5.0);
    }
    use std::collections::HashMap;

    /// What the ranks are by definition: per object, its threads by accesses (most
    /// first, ties by thread number), over all of the thread's runs.
    fn ranks_by_definition(runs: &[(u64, u64, u32, u64)]) -> Vec<u32> {
        let mut per_object: HashMap<(u64, u64), HashMap<u32, u64>> = HashMap::new();
        for &(e, b, t, n) in runs {
            *per_object.entry((e, b)).or_default().entry(t).or_default() += n;
        }
        runs.iter()
            .map(|&(e, b, t, _)| {
                let threads = &per_object[&(e, b)];
                let mine = threads[&t];
                threads
                    .iter()
                    .filter(|&(&u, &n)| n > mine || (n == mine && u < t))
                    .count() as u32
            })
            .collect()
    }

    #[test]
    fn threads_are_ranked_per_object_over_all_their_runs() {
        let runs = [
            (0x100, 1, 0, 5),
            (0x100, 1, 1, 7),
            (0x100, 1, 0, 4), // thread 0 again: 9 in all, ahead of thread 1
            (0x100, 2, 1, 1), // the same address, a later block: another object
            (0x140, 1, 2, 3),
            (0x140, 1, 1, 3), // a tie: the lower thread first
            (0x180, 1, 3, 1),
        ];
        let got = thread_ranks(&runs);
        assert_eq!(got, vec![0, 1, 0, 0, 1, 0, 0]);
        assert_eq!(got, ranks_by_definition(&runs));
        // A larger mixed case against the definition.
        let mut many = Vec::new();
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            many.push((
                (x >> 60) * 64,
                (x >> 40) & 1,
                ((x >> 20) & 3) as u32,
                (x >> 8) & 15,
            ));
        }
        assert_eq!(thread_ranks(&many), ranks_by_definition(&many));
    }

    #[test]
    fn names_are_interned_once() {
        let mut n = Names::default();
        let a = n.id("Point");
        let b = n.id("coords@sc.c:66");
        assert_ne!(a, b);
        assert_eq!(n.id("Point"), a);
        assert_eq!((n.get(a), n.get(b)), ("Point", "coords@sc.c:66"));
        assert_eq!(n.names.len(), 2);
    }
}
