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
pub mod sim;
pub mod trace;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::analysis::fields::{self, Leaf};
use crate::profile::{
    Access, CodeLocation, Counts, CpuUse, Machine, Privilege, Profile, ThreadUse, Unit,
};
use attribute::{ObjectMap, Origin, TypeChooser};
use debuginfo::{DebugInfo, ObjType};
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
    /// Heap block sizes lineup could not type, with candidate types, by size.
    pub ambiguous_heap: Vec<(u64, Vec<String>)>,
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

#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    count: u64,
    eligible: u64,
}

/// One profile access being accumulated: (type, offset, size, code).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct AccessKey {
    type_name: String,
    offset: u64,
    size: u64,
    code: u64,
    exe: String,
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
    /// Writes to an element whose physical line another thread writes in another element.
    element_writes: f64,
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
    by_size: HashMap<u64, BTreeSet<String>>,
    named: Vec<ObjType>,
    /// Leaves of each attributed type, for field names.
    leaves: HashMap<ObjType, Vec<Leaf>>,
    missing_types: Vec<String>,
}

fn exe_facts(path: &Path, want: &[String]) -> Result<ExeFacts, RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::Program {
        path: path.display().to_string(),
        problem: format!("cannot read: {e}"),
    })?;
    let debug = DebugInfo::read(&bytes).map_err(|problem| RecordError::Program {
        path: path.display().to_string(),
        problem,
    })?;
    let arena = typed_arena::Arena::new();
    let mut by_size: HashMap<u64, BTreeSet<String>> = HashMap::new();
    let mut named = Vec::new();
    let mut missing = Vec::new();
    let mut leaves = HashMap::new();
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
                leaves.insert(t, fields::leaves(&types, id));
            }
        }
    } else {
        missing.extend(want.iter().cloned());
    }
    Ok(ExeFacts {
        debug,
        by_size,
        named,
        leaves,
        missing_types: missing,
    })
}

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
            let facts = exe_facts(Path::new(&p.exe), &opts.types)?;
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
    let mut accesses: BTreeMap<AccessKey, AccessVal> = BTreeMap::new();
    let mut notes: BTreeMap<String, TypeNotes> = BTreeMap::new();
    let mut total = 0.0f64;
    let mut attributed = 0.0f64;
    let mut heap_typed = 0u64;
    let mut heap_untyped = 0u64;
    let mut traced_events = 0u64;
    let mut dropped = 0u64;
    let mut ambiguous: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut all_threads: BTreeSet<(u32, u32)> = BTreeSet::new();
    let n = processes.len();
    for (pi, p) in processes.iter().enumerate() {
        progress(Step::Simulate { process: pi, of: n });
        let facts = &exes[&p.exe];
        let scale = f64::from(p.sample.max(1));
        // The runtime's flushes, merged by the reader: one entry per place.
        let mut tally: Vec<(SiteKey, Tally)> = p
            .counted
            .iter()
            .map(|c| {
                (
                    SiteKey {
                        thread: c.thread,
                        addr: c.addr,
                        size: c.size,
                        kind: c.kind,
                        pc: c.pc,
                    },
                    Tally {
                        count: c.count,
                        eligible: c.eligible,
                    },
                )
            })
            .collect();
        tally.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // The ordered trace, through the simulation.
        let mut site_ids: HashMap<SiteKey, u32, FastHash> = HashMap::default();
        let mut stream = Vec::with_capacity(p.traced.len());
        for e in &p.traced {
            let k = SiteKey {
                thread: e.thread,
                addr: e.addr,
                size: e.size,
                kind: e.kind,
                pc: e.pc,
            };
            let next = site_ids.len() as u32;
            let site = *site_ids.entry(k).or_insert(next);
            stream.push(sim::Access {
                time: e.tsc,
                space: 0,
                thread: e.thread,
                addr: e.addr,
                size: e.size,
                kind: e.kind,
                site,
            });
        }
        traced_events += stream.len() as u64;
        let window = (p.decimation != 0).then_some(p.window_bits);
        let primary = sim::simulate(
            &stream,
            &sim::Config {
                unit: line,
                window_log2: window,
            },
        );
        let pairs = opts.adjacent_line.then(|| {
            sim::simulate(
                &stream,
                &sim::Config {
                    unit: line * 2,
                    window_log2: window,
                },
            )
        });
        drop(stream);

        progress(Step::Attribute { process: pi, of: n });
        let debug = &facts.debug;
        let bias = p.exe_bias;
        let mut chooser = TypeChooser::new(facts.named.clone(), facts.by_size.clone(), debug);
        let site_of = |pc: u64| debug.call_site(pc.wrapping_sub(bias));
        let objects = ObjectMap::build(debug, bias, &p.allocs, &mut chooser, site_of);
        heap_typed += objects.heap_typed;
        heap_untyped += objects.heap_untyped;
        for ((size, _site), names) in chooser.ambiguous.drain() {
            ambiguous.entry(size).or_insert(names);
        }
        let exe_name = Path::new(&p.exe)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut resolved: HashMap<u64, debuginfo::Resolved> = HashMap::new();
        for t in p.threads.values() {
            dropped += t.dropped;
        }
        // Attribute, then number each object's threads by how much they touch it: `cpus`
        // in the profile are these numbers (0: the object's busiest thread), so that
        // objects of one type, merged in type coordinates, still tell one thread per
        // object apart from several threads on one object.
        let mut hits: Vec<(&SiteKey, &Tally, &attribute::Object)> = Vec::new();
        let mut per_object: HashMap<(u64, u64), HashMap<u32, u64>, FastHash> = HashMap::default();
        // Who writes which element on each physical line: threads writing their own
        // elements of one line share it though each element has one writer (issue 16).
        let mut line_writers: HashMap<(u64, u64), BTreeSet<(u64, u32)>, FastHash> =
            HashMap::default();
        for (k, t) in &tally {
            let n = t.count as f64 * scale;
            total += n;
            let tid = p.threads.get(&k.thread).map_or(k.thread, |th| th.tid);
            all_threads.insert((p.pid, tid));
            let Some(obj) = objects.lookup(k.addr, None) else {
                continue;
            };
            // Elements of an array are objects of their own.
            let element = k.addr - obj.type_offset(k.addr);
            *per_object
                .entry((element, obj.born))
                .or_default()
                .entry(k.thread)
                .or_default() += t.count;
            if !matches!(k.kind, Kind::Load) {
                line_writers
                    .entry((k.addr / line, obj.born))
                    .or_default()
                    .insert((element, k.thread));
            }
            hits.push((k, t, obj));
        }
        let numbering: HashMap<(u64, u64), HashMap<u32, u32>> = per_object
            .into_iter()
            .map(|(o, threads)| {
                let mut v: Vec<(u32, u64)> = threads.into_iter().collect();
                v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                let m = v
                    .into_iter()
                    .enumerate()
                    .map(|(i, (t, _))| (t, i as u32))
                    .collect();
                (o, m)
            })
            .collect();
        for (k, t, obj) in hits {
            let n = t.count as f64 * scale;
            let tid = p.threads.get(&k.thread).map_or(k.thread, |th| th.tid);
            let element = k.addr - obj.type_offset(k.addr);
            let cpu = numbering[&(element, obj.born)][&k.thread];
            attributed += n;
            let offset = obj.type_offset(k.addr);
            let code = site_of(k.pc);
            let mut counts = Counts::default();
            match k.kind {
                Kind::Load => counts.loads = n,
                Kind::Store => counts.stores = n,
                Kind::Rmw => counts.rmw = n,
            }
            let (mut st, mut sf, mut inv, mut pt, mut pf) = (0.0, 0.0, 0.0, 0.0, 0.0);
            if let Some(&site) = site_ids.get(k) {
                let s = primary.sites[site as usize];
                // The trace holds a sample of the eligible accesses: scale to all of them.
                let f = if s.traced > 0 {
                    t.eligible.max(s.traced) as f64 / s.traced as f64 * scale
                } else {
                    0.0
                };
                st = s.transfers_true as f64 * f;
                sf = s.transfers_false as f64 * f;
                inv = s.invalidations as f64 * f;
                if let Some(pairs) = &pairs {
                    let q = pairs.sites[site as usize];
                    pt = q.transfers_true as f64 * f;
                    pf = q.transfers_false as f64 * f;
                }
            }
            counts.lcl_hitm = st + sf;
            let key = AccessKey {
                type_name: obj.ty.name.clone(),
                offset,
                size: u64::from(k.size),
                code,
                exe: exe_name.clone(),
                cpu,
            };
            let v = accesses.entry(key).or_default();
            v.counts.add(&counts);
            v.sim_true += st;
            v.sim_false += sf;
            v.invalidations += inv;
            v.pair_true += pt;
            v.pair_false += pf;
            if !matches!(k.kind, Kind::Load)
                && line_writers
                    .get(&(k.addr / line, obj.born))
                    .is_some_and(|w| w.iter().any(|&(e, th)| e != element && th != k.thread))
            {
                v.element_writes += n;
            }
            v.threads.insert((p.pid, tid));
            if let Some(name) = p.thread_name(k.thread) {
                v.comms.insert(name.to_string());
            }
            if v.field.is_none() {
                v.field = facts
                    .leaves
                    .get(&obj.ty)
                    .and_then(|l| fields::leaf_at(l, offset))
                    .map(|l| l.path.clone());
                v.resolved = resolved
                    .entry(code)
                    .or_insert_with(|| debug.resolve(code))
                    .clone();
            }
            let label = match &obj.origin {
                Origin::Global(name) => format!("global `{name}`"),
                Origin::Heap { site } => {
                    let r = debug.resolve(*site);
                    let at = match (r.symbol, r.offset) {
                        (Some(s), Some(o)) => format!("{s}+{o}"),
                        _ => format!("{site:#x}"),
                    };
                    match r.source {
                        Some(src) => format!("heap blocks allocated at {at} ({src})"),
                        None => format!("heap blocks allocated at {at}"),
                    }
                }
            };
            let note = notes.entry(obj.ty.name.clone()).or_default();
            note.objects.insert(label.clone());
            if obj.base % line != 0 {
                note.misaligned.insert(label);
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
    s.insert("sample".into(), sample.to_string());
    s.insert("cpus_mean".into(), "threads".into());
    if partial {
        s.insert("partial".into(), "true".into());
    }
    let mut note = String::from(
        "exact counts of every instrumented access; transfers (lcl_hitm) from a MESI simulation with one cache per thread; `cpus` are threads, numbered per object by how much they touch it",
    );
    if sample > 1 {
        note.push_str(&format!(
            "; sampled: bursts of 1 in {sample} accesses per thread, scaled up"
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
            "; MEMORY BUDGET reached: {} ({summarized} accesses counted per code site only: in the totals, not attributed to fields)",
            if budget_level >= 2 {
                "every place summarized and the ordered trace stopped from then on"
            } else {
                "places on lines not contended (one thread's, or only read since shared) summarized"
            }
        ));
    }
    if lost > 0 {
        note.push_str(&format!(
            "; {lost} chunks of the recording could not be written (disk full? descriptors exhausted?)"
        ));
    }
    profile.provenance.note = Some(note);

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
                object: Some(k.exe.as_str().into()),
                source: v.resolved.source.as_deref().map(Into::into),
                privilege: Some(Privilege::User),
            }),
            details,
            ..Default::default()
        };
        profile.type_profile_mut(&k.type_name).accesses.push(access);
    }
    for t in &mut profile.types {
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
    sum.insert("accesses".to_string(), total.round());
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
        ambiguous_heap: ambiguous.into_iter().collect(),
    })
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
