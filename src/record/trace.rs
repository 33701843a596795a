//! Reading what the runtime (`runtime/lineup_rt.c`) wrote: one `rt.<pid>.bin` per process,
//! a sequence of chunks, each a 24-byte head (magic, type, thread, count, payload bytes)
//! and its payload. A file that ends inside a chunk, or without the end chunk, is partial.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::sim::Kind;

const MAGIC: u32 = 0x4c55_5043;
const CH_HEADER: u32 = 1;
const CH_THREAD: u32 = 2;
const CH_AGG: u32 = 3;
const CH_TRACE: u32 = 4;
const CH_ALLOC: u32 = 5;
const CH_END: u32 = 6;
const CH_CRASH: u32 = 7;
const CH_BURSTS: u32 = 8;
const CH_NOTE: u32 = 10;
const CH_HITS: u32 = 9;
const CH_SUM: u32 = 11;
const CH_RHITS: u32 = 12;
/// Runtime format version this reader understands: 2, the tally's code addresses carrying
/// the held lock's tag above their 48 bits ([`Counted::lock`]).
pub const RUNTIME_VERSION: u32 = 2;
/// The oldest it still reads (1: the same chunks, no lock in the tally).
pub const OLDEST_RUNTIME_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: {problem}", path.display())]
    Bad { path: PathBuf, problem: String },
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The counts of one (thread, address, size, kind, code) as the runtime aggregated them.
/// [`Process::counted`] holds one per place (and one per summary of many places whose
/// sample address is that place), sorted by [`Counted::place`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    pub thread: u32,
    pub addr: u64,
    pub size: u32,
    pub kind: Kind,
    /// Return address of the instrumentation call (just after the access).
    pub pc: u64,
    pub count: u64,
    /// Accesses made while the line was shared by threads and written: those the trace
    /// would hold if it were not sampled.
    pub eligible: u64,
    /// A code site's summary (the memory budget's levels): `count` is every access of the
    /// site on lines not contended, `addr` the first of them, which stands for the rest.
    pub summary: bool,
    /// The lock the thread held at these accesses (its innermost, through the runtime's
    /// pthread mutex and spinlock wrappers: `0x8000 | 15 bits of its address`; the tally
    /// keeps places apart by it): 0 none, [`LOCKS_SEVERAL`] when the place was counted under
    /// more than one.
    pub lock: u16,
}

/// [`Counted::lock`] of a place counted under several locks (or under one and under none):
/// no one lock orders its accesses. Real tags have the top bit set; 0 is none.
pub const LOCKS_SEVERAL: u16 = 1;

impl Counted {
    /// The place: (thread, address, size, kind, code).
    pub fn place(&self) -> (u32, u64, u32, Kind, u64) {
        (self.thread, self.addr, self.size, self.kind, self.pc)
    }
}

/// One access of the ordered trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traced {
    pub tsc: u64,
    pub thread: u32,
    pub addr: u64,
    pub size: u32,
    pub kind: Kind,
    pub pc: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocEvent {
    pub tsc: u64,
    pub thread: u32,
    pub addr: u64,
    pub size: u64,
    pub pc: u64,
    pub free: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub index: u32,
    pub tid: u32,
    pub name: String,
    pub tsc_start: u64,
    pub tsc_end: u64,
    pub accesses: u64,
    /// Accesses the runtime could not count (made while it was busy writing).
    pub dropped: u64,
}

/// The recorded windows of bursts: the runtime recorded the first `warmup_us` and then
/// `on_us` out of every `period_us` microseconds, and between windows rewrote the hook calls
/// of `sites` into jumps to trampolines that count their executions (CH_HITS).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bursts {
    /// Nanoseconds recorded (the calls in place), of the run's `run_ns`.
    pub recorded_ns: u64,
    pub run_ns: u64,
    /// Recorded windows.
    pub windows: u64,
    /// Nanoseconds spent switching the sites between calls and trampoline jumps (half of
    /// each switch counts as recorded).
    pub switch_ns: u64,
    pub on_us: u32,
    pub period_us: u32,
    /// The first window's length (the run is recorded in full until then).
    pub warmup_us: u64,
    /// The patched sites as the hooks report their pc (the call's return address), sorted.
    pub sites: Vec<u64>,
}

/// Everything one process wrote.
#[derive(Clone, Debug, Default)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    /// Load bias of the executable (PIE): runtime address = link address + bias.
    pub exe_bias: u64,
    pub tsc_start: u64,
    pub ns_start: u64,
    pub sample: u32,
    /// Adaptive (bursty, per code site) sampling was on (`--sample auto`).
    pub adaptive: bool,
    pub window_bits: u32,
    pub budget: u64,
    pub threads: BTreeMap<u32, ThreadInfo>,
    /// One entry per place (a summary of many beside it), sorted by [`Counted::place`],
    /// flushes merged.
    pub counted: Vec<Counted>,
    pub traced: Vec<Traced>,
    pub allocs: Vec<AllocEvent>,
    /// The end chunk: (tsc, ns) at the final flush.
    pub end: Option<(u64, u64)>,
    /// Final decimation mask of the trace windows (0: every window traced).
    pub decimation: u64,
    /// The memory budget's level at the end: 0 full resolution, 1 places of lines not
    /// contended counted once between flushes summarized per code site, 2 the trace thinned
    /// faster and places counted fewer than 16 times summarized, 3 the trace stopped and
    /// every place of a line not contended summarized (lines
    /// threads share and write still exact), 4 everything summarized.
    pub budget_level: u64,
    /// Per (thread, code address): the addresses `[lo, hi)` the site's summaries of many
    /// places covered, flushes merged. What lineup names as degraded.
    pub summary_ranges: BTreeMap<(u32, u64), (u64, u64)>,
    /// Accesses the runtime counted into per-site summaries (address dropped).
    pub summarized: u64,
    /// Chunks the runtime could not write.
    pub lost: u64,
    /// Adaptive sampling: accesses skipped between bursts, stood for by the bursts' weights.
    pub estimated: u64,
    /// Adaptive sampling: the largest weight (1 in N) any code site backed off to.
    pub max_period: u64,
    /// Bursts (`--sample bursts`): what was recorded, and which code sites were patched
    /// out between the recorded windows.
    pub bursts: Option<Bursts>,
    /// Bursts: executions of patched sites between the windows, per (thread, pc), counted
    /// by the sites' trampolines (no address).
    pub hits: Vec<(u32, u64, u64)>,
    /// Bursts: pieces of memory ranges (memcpy, memset, struct copies) made between the
    /// windows and not recorded, per (thread, pc, kind: 0 load, 1 store, 2 rmw), counted
    /// by the runtime's range hooks (no address).
    pub range_hits: Vec<(u32, u64, u8, u64)>,
    /// Signal that ended the process, when the runtime caught it.
    pub crash: Option<u32>,
    /// The file stopped inside a chunk.
    pub truncated: bool,
    /// What the runtime did differently, and why (in the order written).
    pub notes: Vec<RuntimeNote>,
}

/// Something the runtime did differently from its settings, and why (CH_NOTE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeNote {
    /// Bursts stopped (every call back in place, the rest recorded in full) or never
    /// started, for this reason.
    BurstsOff(BurstsOff),
    /// A thread (by index; None: one the runtime had no state for) entered seccomp strict
    /// mode: its recording was written then, its later accesses are not recorded.
    StrictSeccomp(Option<u32>),
    /// A code this lineup does not know (a newer runtime).
    Other(u32),
}

/// Why bursts stopped, or never started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BurstsOff {
    /// The program set SIGTRAP's disposition past the runtime's wrappers.
    TrapTaken,
    /// The program blocked SIGTRAP past the runtime's wrappers.
    TrapBlocked,
    /// The program changed the protection of its code (W^X hardening).
    TextReprotected,
    /// The program installed a seccomp filter.
    SeccompFilter,
    /// The program's code could not be made writable (a W^X policy).
    TextNotWritable,
    /// membarrier(SYNC_CORE) is refused: running code cannot be rewritten safely.
    NoMembarrier,
    /// The runtime's thread could not be started.
    NoThread,
}

impl RuntimeNote {
    fn from_code(code: u32, thread: u32) -> RuntimeNote {
        use BurstsOff::*;
        match code {
            1 => RuntimeNote::BurstsOff(TrapTaken),
            2 => RuntimeNote::BurstsOff(TrapBlocked),
            3 => RuntimeNote::BurstsOff(TextReprotected),
            4 => RuntimeNote::BurstsOff(SeccompFilter),
            5 => RuntimeNote::StrictSeccomp((thread != u32::MAX).then_some(thread)),
            6 => RuntimeNote::BurstsOff(TextNotWritable),
            7 => RuntimeNote::BurstsOff(NoMembarrier),
            8 => RuntimeNote::BurstsOff(NoThread),
            other => RuntimeNote::Other(other),
        }
    }
}

impl BurstsOff {
    /// Why, in words, for the profile's note and standard error.
    pub fn reason(self) -> &'static str {
        match self {
            BurstsOff::TrapTaken => "the program set SIGTRAP's disposition itself",
            BurstsOff::TrapBlocked => "the program blocked SIGTRAP with a raw system call",
            BurstsOff::TextReprotected => "the program changed the protection of its own code",
            BurstsOff::SeccompFilter => "the program entered seccomp mode (a filter, or strict)",
            BurstsOff::TextNotWritable => {
                "the program's code cannot be made writable (a W^X policy)"
            }
            BurstsOff::NoMembarrier => "membarrier(SYNC_CORE) is not available",
            BurstsOff::NoThread => "the runtime could not start its thread",
        }
    }
}

impl Process {
    /// Everything was written: the end chunk is there, nothing is cut off.
    pub fn complete(&self) -> bool {
        (self.end.is_some() || self.ended_in_strict_seccomp())
            && !self.truncated
            && self.crash.is_none()
    }
    /// No end chunk, because the process's last thread was in seccomp strict mode (it can
    /// only write, read and exit): its recording was written when it entered, and the
    /// rest of the process flushed as its threads ended.
    pub fn ended_in_strict_seccomp(&self) -> bool {
        self.end.is_none()
            && self
                .notes
                .iter()
                .any(|n| matches!(n, RuntimeNote::StrictSeccomp(_)))
    }
    pub fn thread_name(&self, index: u32) -> Option<&str> {
        self.threads
            .get(&index)
            .map(|t| t.name.as_str())
            .filter(|n| !n.is_empty())
    }
}

/// The runtime's kind 3: a plain load and then a store of one place (`x++`), reported by
/// one compound hook; read as the two accesses a cache (and c2c) sees.
const K_UPDATE: u64 = 3;

/// The accesses one record of the runtime stands for: one, or a load and a store.
fn kinds_of(k: u64) -> &'static [Kind] {
    match k {
        0 => &[Kind::Load],
        1 => &[Kind::Store],
        K_UPDATE => &[Kind::Load, Kind::Store],
        _ => &[Kind::Rmw],
    }
}

/// `key` = address | (size | kind << 8 | summary << 10 | many << 11) << 48. A summary of
/// one address only (`many` clear) is as exact as a place of its own, and read as one.
fn split_key(key: u64) -> (u64, u32, &'static [Kind], bool) {
    let addr = key & ((1 << 48) - 1);
    let info = key >> 48;
    (
        addr,
        (info & 0xff) as u32,
        kinds_of((info >> 8) & 3),
        (info >> 10) & 1 != 0 && (info >> 11) & 1 != 0,
    )
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Parses one process file's bytes.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Process, TraceError> {
    let bad = |problem: String| TraceError::Bad {
        path: path.to_path_buf(),
        problem,
    };
    let mut p = Process::default();
    let mut seen_header = false;
    // The vectors sized once from the chunk heads: growing them by doubling copied and
    // zeroed (page faults) several times the recording's size.
    let (aggregated, traced, allocs) = record_counts(bytes);
    p.counted.reserve_exact(aggregated);
    p.traced.reserve_exact(traced);
    p.allocs.reserve_exact(allocs);
    let mut o = 0usize;
    while o < bytes.len() {
        if bytes.len() - o < 24 {
            p.truncated = true;
            break;
        }
        let magic = u32_at(bytes, o);
        if magic != MAGIC {
            if !seen_header {
                return Err(bad("not a lineup recording (bad magic)".into()));
            }
            p.truncated = true;
            break;
        }
        let kind = u32_at(bytes, o + 4);
        let thread = u32_at(bytes, o + 8);
        let count = u32_at(bytes, o + 12) as usize;
        let len = u64_at(bytes, o + 16) as usize;
        o += 24;
        if bytes.len() - o < len {
            p.truncated = true;
            break;
        }
        let body = &bytes[o..o + len];
        o += len;
        let need = |each: usize| -> Result<(), TraceError> {
            if count.checked_mul(each) != Some(len) {
                Err(bad(format!(
                    "chunk type {kind}: {count} records do not fill {len} bytes"
                )))
            } else {
                Ok(())
            }
        };
        match kind {
            CH_HEADER => {
                if len < 56 {
                    return Err(bad("short header".into()));
                }
                let version = u32_at(body, 0);
                // Version 1 is version 2 without the tally's lock tags: read as none held.
                if !(OLDEST_RUNTIME_VERSION..=RUNTIME_VERSION).contains(&version) {
                    return Err(bad(format!(
                        "recorded by runtime version {version}, this lineup reads versions {OLDEST_RUNTIME_VERSION} to {RUNTIME_VERSION}: rebuild the program with this lineup's `lineup cc`"
                    )));
                }
                p.pid = u32_at(body, 4);
                p.ppid = u32_at(body, 8);
                p.exe_bias = u64_at(body, 16);
                p.tsc_start = u64_at(body, 24);
                p.ns_start = u64_at(body, 32);
                p.sample = u32_at(body, 40);
                p.adaptive = u32_at(body, 12) & 1 != 0;
                p.window_bits = u32_at(body, 44);
                p.budget = u64_at(body, 48);
                p.exe = cstr(&body[56..]);
                seen_header = true;
            }
            CH_THREAD => {
                // One record per chunk as the runtime writes it; each record read as such
                // (a chunk of none, as a damaged file may hold, adds no thread).
                need(56)?;
                for r in body.chunks_exact(56) {
                    let t = ThreadInfo {
                        index: u32_at(r, 0),
                        tid: u32_at(r, 4),
                        tsc_start: u64_at(r, 8),
                        tsc_end: u64_at(r, 16),
                        accesses: u64_at(r, 24),
                        dropped: u64_at(r, 32),
                        name: cstr(&r[40..56]),
                    };
                    p.threads.insert(t.index, t);
                }
            }
            CH_AGG | CH_SUM => {
                let each = if kind == CH_SUM { 48 } else { 32 };
                need(each)?;
                for r in body.chunks_exact(each) {
                    let (addr, size, kinds, summary) = split_key(u64_at(r, 0));
                    // A code address in the low 48 bits, the held lock's tag above it.
                    let (pc, lock) = (u64_at(r, 8) & ((1 << 48) - 1), (u64_at(r, 8) >> 48) as u16);
                    let (count, eligible) = (u64_at(r, 16), u64_at(r, 24));
                    if summary && each == 48 {
                        let (lo, hi) = (u64_at(r, 32), u64_at(r, 40));
                        let range = p.summary_ranges.entry((thread, pc)).or_insert((lo, hi));
                        range.0 = range.0.min(lo);
                        range.1 = range.1.max(hi);
                    }
                    for &kind in kinds {
                        p.counted.push(Counted {
                            thread,
                            addr,
                            size,
                            kind,
                            pc,
                            count,
                            eligible,
                            summary,
                            lock,
                        });
                    }
                }
            }
            CH_TRACE => {
                need(24)?;
                for r in body.chunks_exact(24) {
                    let (addr, size, kinds, _) = split_key(u64_at(r, 8));
                    // A code address in the low 48 bits (runtimes before this one put the
                    // held lock's tag above it; the tally's lock is the one read).
                    let pc = u64_at(r, 16);
                    for &kind in kinds {
                        p.traced.push(Traced {
                            tsc: u64_at(r, 0),
                            thread,
                            addr,
                            size,
                            kind,
                            pc: pc & ((1 << 48) - 1),
                        });
                    }
                }
            }
            CH_ALLOC => {
                need(40)?;
                for r in body.chunks_exact(40) {
                    p.allocs.push(AllocEvent {
                        tsc: u64_at(r, 0),
                        thread,
                        addr: u64_at(r, 8),
                        size: u64_at(r, 16),
                        pc: u64_at(r, 24),
                        free: u32_at(r, 32) == 2,
                    });
                }
            }
            CH_END if len >= 32 => {
                p.end = Some((u64_at(body, 0), u64_at(body, 8)));
                p.decimation = u64_at(body, 24);
                if len >= 64 {
                    p.budget_level = u64_at(body, 32);
                    p.summarized = u64_at(body, 40);
                    p.lost = u64_at(body, 56);
                }
                if len >= 80 {
                    p.estimated = u64_at(body, 64);
                    p.max_period = u64_at(body, 72);
                }
            }
            CH_CRASH if len >= 4 => p.crash = Some(u32_at(body, 0)),
            CH_NOTE if len >= 8 => p
                .notes
                .push(RuntimeNote::from_code(u32_at(body, 0), u32_at(body, 4))),
            CH_HITS => {
                need(16)?;
                for r in body.chunks_exact(16) {
                    p.hits.push((thread, u64_at(r, 0), u64_at(r, 8)));
                }
            }
            CH_RHITS => {
                need(24)?;
                for r in body.chunks_exact(24) {
                    let access = u64_at(r, 8);
                    if access > 2 {
                        return Err(bad(format!("chunk type {kind}: access kind {access}")));
                    }
                    p.range_hits
                        .push((thread, u64_at(r, 0), access as u8, u64_at(r, 16)));
                }
            }
            CH_BURSTS => {
                // Six words, then `count` sites.
                if count.checked_mul(8).and_then(|n| n.checked_add(48)) != Some(len) {
                    return Err(bad(format!(
                        "chunk type {kind}: {count} patched sites do not fill {len} bytes"
                    )));
                }
                let packed = u64_at(body, 32);
                let mut sites: Vec<u64> =
                    body[48..].chunks_exact(8).map(|r| u64_at(r, 0)).collect();
                sites.sort_unstable();
                sites.dedup();
                p.bursts = Some(Bursts {
                    recorded_ns: u64_at(body, 0),
                    run_ns: u64_at(body, 8),
                    windows: u64_at(body, 16),
                    switch_ns: u64_at(body, 24),
                    on_us: (packed >> 32) as u32,
                    period_us: packed as u32,
                    warmup_us: u64_at(body, 40),
                    sites,
                });
            }
            _ => {} // newer chunk kinds: skip
        }
        if !seen_header {
            return Err(bad("recording does not start with a header".into()));
        }
    }
    if !seen_header {
        return Err(bad("empty recording".into()));
    }
    merge_counted(&mut p.counted);
    // A thread's executions between windows are cumulative: periodic flushes write them
    // again, and the last (the largest) is the count.
    p.hits.sort_unstable();
    p.hits.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && later.1 == kept.1;
        if same {
            kept.2 = kept.2.max(later.2);
        }
        same
    });
    p.range_hits.sort_unstable();
    p.range_hits.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && later.1 == kept.1 && later.2 == kept.2;
        if same {
            kept.3 = kept.3.max(later.3);
        }
        same
    });
    Ok(p)
}

/// Records of the aggregate, trace and allocation chunks, from the chunk heads alone.
fn record_counts(bytes: &[u8]) -> (usize, usize, usize) {
    let (mut agg, mut trace, mut alloc) = (0usize, 0usize, 0usize);
    let mut o = 0usize;
    while bytes.len().saturating_sub(o) >= 24 && u32_at(bytes, o) == MAGIC {
        let count = u32_at(bytes, o + 12) as usize;
        let len = u64_at(bytes, o + 16) as usize;
        // Only what fits in the file: a corrupt count must not reserve gigabytes.
        let fits = |each: usize| count.min(len.min(bytes.len() - o - 24) / each);
        match u32_at(bytes, o + 4) {
            CH_AGG => agg += fits(32),
            CH_SUM => agg += fits(48),
            CH_TRACE => trace += fits(24),
            CH_ALLOC => alloc += fits(40),
            _ => {}
        }
        match o.checked_add(24).and_then(|x| x.checked_add(len)) {
            Some(next) => o = next,
            None => break,
        }
    }
    (agg, trace, alloc)
}

/// Sorts the runtime's flushes by place (thread, address, size, kind, code) and merges
/// the entries of one place: the runtime writes a place again each time its table fills.
/// Sorting in place needs no hash table beside the records (most places are flushed
/// once), and leaves them in the order attribution walks them.
fn merge_counted(counted: &mut Vec<Counted>) {
    // A summary of many places stays apart from the place its sample address names.
    counted.sort_unstable_by_key(|c| (c.place(), c.summary));
    counted.dedup_by(|later, kept| {
        if later.place() == kept.place() && later.summary == kept.summary {
            // Saturating: a damaged file's counts must not wrap (or panic in debug).
            kept.count = kept.count.saturating_add(later.count);
            kept.eligible = kept.eligible.saturating_add(later.eligible);
            if kept.lock != later.lock {
                kept.lock = LOCKS_SEVERAL;
            }
            true
        } else {
            false
        }
    });
}

/// Post-processing (reading, attributing, writing the profile) without transparent huge
/// pages for lineup's own process: its heap grows and shrinks in many steps, and with
/// them the kernel zeroed 2 MiB at each first touch, over and over (zstd -T2 on 96 MiB:
/// a 28 MiB recording took 1.0 s of system time, 40% of the post-processing's CPU, in
/// `clear_page_erms`; 0.25 s without). Called once the program has ended: the flag is
/// inherited, and the program must run as it would without lineup.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Reads every `rt.*.bin` in `dir`, parents before children.
pub fn read_dir(dir: &Path) -> Result<Vec<Process>, TraceError> {
    no_huge_pages();
    let entries = std::fs::read_dir(dir).map_err(|source| TraceError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|source| TraceError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("rt.") && name.ends_with(".bin")) {
            continue;
        }
        let path = e.path();
        let file = std::fs::File::open(&path).map_err(|source| TraceError::Io {
            path: path.clone(),
            source,
        })?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            continue;
        }
        // SAFETY: read-only map of a file only lineup's runtime wrote, and it has exited.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| TraceError::Io {
            path: path.clone(),
            source,
        })?;
        out.push(parse(&map, &path)?);
    }
    out.sort_by_key(|p| (p.ns_start, p.pid));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: u32, thread: u32, count: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&MAGIC.to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(&thread.to_le_bytes());
        v.extend_from_slice(&count.to_le_bytes());
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    fn header() -> Vec<u8> {
        let mut h = vec![0u8; 56 + 512];
        h[0..4].copy_from_slice(&RUNTIME_VERSION.to_le_bytes());
        h[4..8].copy_from_slice(&42u32.to_le_bytes());
        h[56..61].copy_from_slice(b"/bin/");
        chunk(CH_HEADER, 0, 1, &h)
    }

    #[test]
    fn reads_the_versions_it_knows_and_refuses_a_newer_one() {
        for (version, ok) in [
            (1u32, true),
            (RUNTIME_VERSION, true),
            (RUNTIME_VERSION + 1, false),
        ] {
            let mut h = vec![0u8; 56 + 512];
            h[0..4].copy_from_slice(&version.to_le_bytes());
            let f = chunk(CH_HEADER, 0, 1, &h);
            let r = parse(&f, Path::new("x"));
            assert_eq!(r.is_ok(), ok, "version {version}");
            if let Err(e) = r {
                assert!(e.to_string().contains("reads versions 1 to 2"), "{e}");
            }
        }
    }

    #[test]
    fn reads_counts_and_notices_truncation() {
        let mut f = header();
        let mut agg = Vec::new();
        let key: u64 = 0x5555_0000_1000 | ((8u64 | 1 << 8) << 48);
        // The place counted under a lock (its tag above the code address), and the same
        // place again, under another: under several.
        for v in [key, 0x4010 | 0x8123 << 48, 7, 3] {
            agg.extend_from_slice(&v.to_le_bytes());
        }
        f.extend(chunk(CH_AGG, 3, 1, &agg));
        let p = parse(&f, Path::new("x")).unwrap();
        assert_eq!((p.counted[0].pc, p.counted[0].lock), (0x4010, 0x8123));
        let mut again = Vec::new();
        for v in [key, 0x4010, 1, 0] {
            again.extend_from_slice(&v.to_le_bytes());
        }
        f.extend(chunk(CH_AGG, 3, 1, &again));
        let p = parse(&f, Path::new("x")).unwrap();
        assert_eq!(p.pid, 42);
        assert_eq!(p.exe, "/bin/");
        assert_eq!(
            p.counted,
            vec![Counted {
                thread: 3,
                addr: 0x5555_0000_1000,
                size: 8,
                kind: Kind::Store,
                pc: 0x4010,
                count: 8,
                summary: false,
                eligible: 3,
                lock: LOCKS_SEVERAL,
            }]
        );
        assert!(!p.complete());
        assert!(!p.truncated);
        f.extend(chunk(CH_TRACE, 3, 1, &[0u8; 24]));
        f.truncate(f.len() - 5);
        let p = parse(&f, Path::new("x")).unwrap();
        assert!(p.truncated);
        assert!(p.traced.is_empty());
    }

    #[test]
    fn flushes_of_one_place_merge_and_places_come_sorted() {
        let rec = |addr: u64, kind: u64, pc: u64, count: u64, eligible: u64| {
            let key = addr | ((8u64 | kind << 8) << 48);
            let mut r = Vec::new();
            for v in [key, pc, count, eligible] {
                r.extend_from_slice(&v.to_le_bytes());
            }
            r
        };
        let mut f = header();
        // Thread 2 flushes (0x2000 store) then (0x1000 load); its table fills and it
        // flushes 0x2000 again; thread 1 flushes once.
        let first = [rec(0x2000, 1, 0x40, 5, 1), rec(0x1000, 0, 0x40, 3, 0)].concat();
        f.extend(chunk(CH_AGG, 2, 2, &first));
        f.extend(chunk(CH_AGG, 1, 1, &rec(0x3000, 0, 0x44, 9, 9)));
        f.extend(chunk(CH_AGG, 2, 1, &rec(0x2000, 1, 0x40, 7, 2)));
        let p = parse(&f, Path::new("x")).unwrap();
        let got: Vec<_> = p
            .counted
            .iter()
            .map(|c| (c.thread, c.addr, c.kind, c.count, c.eligible))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0x3000, Kind::Load, 9, 9),
                (2, 0x1000, Kind::Load, 3, 0),
                (2, 0x2000, Kind::Store, 12, 3),
            ]
        );
        // Sized from the chunk heads: no growth past the four records written.
        assert!(p.counted.capacity() <= 4, "{}", p.counted.capacity());
        assert_eq!(record_counts(&f), (4, 0, 0));
        // A head claiming more records than the file holds reserves only what is there.
        let mut lie = header();
        lie.extend(chunk(CH_TRACE, 1, 1, &[0u8; 24]));
        let at = lie.len() - 24 - 24 + 12;
        lie[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(record_counts(&lie), (0, 1, 0));
    }

    #[test]
    fn bursts_and_the_executions_between_windows_are_read() {
        let mut f = header();
        let words = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        // Recorded 2 ms of 10, 4 windows, 0.1 ms switching, 1000/5000 us; two sites.
        let head = [
            2_000_000,
            10_000_000,
            4,
            100_000,
            1000 << 32 | 5000,
            300_000,
            0x4020,
            0x4010,
        ];
        f.extend(chunk(CH_BURSTS, 0, 2, &words(&head)));
        f.extend(chunk(CH_HITS, 3, 2, &words(&[0x4010, 70, 0x4020, 5])));
        let p = parse(&f, Path::new("x")).unwrap();
        let b = p.bursts.unwrap();
        assert_eq!(
            (b.recorded_ns, b.run_ns, b.windows, b.switch_ns),
            (2_000_000, 10_000_000, 4, 100_000)
        );
        assert_eq!((b.on_us, b.period_us, b.warmup_us), (1000, 5000, 300_000));
        assert_eq!(b.sites, vec![0x4010, 0x4020]);
        assert_eq!(p.hits, vec![(3, 0x4010, 70), (3, 0x4020, 5)]);
        // A site list that does not fill its chunk, and pairs cut short, are errors.
        let mut bad = header();
        bad.extend(chunk(CH_BURSTS, 0, 3, &words(&head)));
        assert!(parse(&bad, Path::new("x")).is_err());
        let mut bad = header();
        bad.extend(chunk(CH_HITS, 3, 2, &words(&[0x4010, 70, 0x4020])));
        assert!(parse(&bad, Path::new("x")).is_err());
    }

    #[test]
    fn hits_written_again_by_a_periodic_flush_count_once() {
        let words = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let mut f = header();
        // Thread 3 flushed at 1 s (70 and 5 so far), then at its end (90 and 5); thread 4 once.
        f.extend(chunk(CH_HITS, 3, 2, &words(&[0x4010, 70, 0x4020, 5])));
        f.extend(chunk(CH_HITS, 4, 1, &words(&[0x4010, 7])));
        f.extend(chunk(CH_HITS, 3, 2, &words(&[0x4010, 90, 0x4020, 5])));
        let p = parse(&f, Path::new("x")).unwrap();
        assert_eq!(
            p.hits,
            vec![(3, 0x4010, 90), (3, 0x4020, 5), (4, 0x4010, 7)]
        );
    }

    /// Bursts: a range's pieces counted between windows, per (thread, pc, kind), written
    /// again by each periodic flush (cumulative: the largest is the count); a kind that is
    /// not one is a malformed recording.
    #[test]
    fn range_pieces_between_windows_are_read_per_kind_and_count_once() {
        let words = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let mut f = header();
        f.extend(chunk(
            CH_RHITS,
            3,
            2,
            &words(&[0x4010, 0, 70, 0x4010, 1, 66]),
        ));
        f.extend(chunk(
            CH_RHITS,
            3,
            2,
            &words(&[0x4010, 0, 90, 0x4010, 1, 85]),
        ));
        f.extend(chunk(CH_RHITS, 4, 1, &words(&[0x4020, 1, 7])));
        let p = parse(&f, Path::new("x")).unwrap();
        assert_eq!(
            p.range_hits,
            vec![(3, 0x4010, 0, 90), (3, 0x4010, 1, 85), (4, 0x4020, 1, 7)]
        );
        let mut bad = header();
        bad.extend(chunk(CH_RHITS, 3, 1, &words(&[0x4010, 7, 1])));
        assert!(parse(&bad, Path::new("x")).is_err());
    }

    #[test]
    fn runtime_notes_are_read_and_strict_mode_is_an_ending() {
        let note = |code: u32, thread: u32| {
            let mut b = code.to_le_bytes().to_vec();
            b.extend_from_slice(&thread.to_le_bytes());
            b.extend_from_slice(&99u64.to_le_bytes());
            chunk(CH_NOTE, thread, 1, &b)
        };
        let mut f = header();
        f.extend(note(3, u32::MAX));
        f.extend(note(5, 2));
        f.extend(note(77, u32::MAX));
        let p = parse(&f, Path::new("x")).unwrap();
        assert_eq!(
            p.notes,
            vec![
                RuntimeNote::BurstsOff(BurstsOff::TextReprotected),
                RuntimeNote::StrictSeccomp(Some(2)),
                RuntimeNote::Other(77)
            ]
        );
        // No end chunk, but the last thread was in strict mode: complete.
        assert!(p.end.is_none() && p.complete());
        // Without the strict-mode note the same file is partial.
        let mut g = header();
        g.extend(note(3, u32::MAX));
        assert!(!parse(&g, Path::new("x")).unwrap().complete());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse(b"hello world, this is not it at all", Path::new("x")).is_err());
    }
}
