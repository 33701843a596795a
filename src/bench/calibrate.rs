//! `lineup calibrate`'s measurements: the core clock, the cache-line transfer latency between
//! two pinned threads (ping-pong on one line), and load latencies by pointer chasing.
//!
//! Each figure is a median over repetitions, each repetition a median over small timed
//! batches, so a batch in which a thread was preempted (the shared 2-vCPU VM) is an outlier
//! and not the figure. Nothing here decides what the figures mean for the cost model:
//! [`machine_from`] does that, in one place.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::analysis::machine::{
    MachineModel, Measured, NEIGHBOURS, PAIR_SHARE_FLOOR, PairDecision, decide_pairs,
};
use crate::readers::host::{PairClass, Topology};

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    pub repetitions: u32,
    /// Time spent on one repetition of one pair.
    pub repetition: Duration,
    pub pairs_per_class: usize,
    /// Loads per repetition of a chase.
    pub chase_loads: u64,
    /// The largest buffer for the DRAM chase.
    pub max_dram_bytes: u64,
}

impl Effort {
    pub fn full() -> Self {
        Effort {
            repetitions: 7,
            repetition: Duration::from_millis(30),
            pairs_per_class: 3,
            chase_loads: 1 << 20,
            max_dram_bytes: 512 << 20,
        }
    }

    pub fn quick() -> Self {
        Effort {
            repetitions: 3,
            repetition: Duration::from_millis(15),
            pairs_per_class: 1,
            chase_loads: 1 << 18,
            max_dram_bytes: 128 << 20,
        }
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: u32) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within it for
    // cpu < CPU_SETSIZE, checked first.
    unsafe {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {cpu} is beyond CPU_SETSIZE"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "cannot run on CPU {cpu}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<u32> {
    // SAFETY: sched_getaffinity fills the set it is given; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect()
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Cycles one link of [`chain_ns`]'s chain takes.
#[cfg(target_arch = "x86_64")]
const LINK_CYCLES: u64 = 3;
#[cfg(target_arch = "aarch64")]
const LINK_CYCLES: u64 = 1;

/// Nanoseconds of `iters` iterations of ten dependent links of [`LINK_CYCLES`] each. On
/// x86-64 a link is `imul reg, reg` (3 cycles on every Intel core since Nehalem and every
/// AMD Zen): a chain of `add reg, 1` is not one cycle per add on Golden Cove and later, whose
/// renamer folds small immediate adds (a 16-CPU Xeon guest with 2 MiB of L2 per core read 9.47 GHz from it).
#[cfg(target_arch = "x86_64")]
fn chain_ns(iters: u64) -> f64 {
    let start = Instant::now();
    let mut x: u64 = 3;
    // SAFETY: register arithmetic only.
    unsafe {
        std::arch::asm!(
            "2:",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "sub {n}, 1",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) iters => _,
            options(nomem, nostack),
        );
    }
    std::hint::black_box(x);
    start.elapsed().as_nanos() as f64
}

#[cfg(target_arch = "aarch64")]
fn chain_ns(iters: u64) -> f64 {
    let start = Instant::now();
    let mut x: u64 = 0;
    // SAFETY: register arithmetic only.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1",
            "subs {n}, {n}, 1",
            "b.ne 2b",
            x = inout(reg) x,
            n = inout(reg) iters => _,
            options(nomem, nostack),
        );
    }
    std::hint::black_box(x);
    start.elapsed().as_nanos() as f64
}

/// The core clock in GHz and how it was found: a chain of dependent integer multiplies (x86-64)
/// or adds (Arm), whose latency is fixed, timed on `cpu` in 300 short slices, the fastest one (a
/// slice the hypervisor or another process interrupted is slower, never faster; turbo
/// included, as the measurements see it); else /proc/cpuinfo's `cpu MHz`.
pub fn clock_ghz(cpu: u32, cpuinfo: &str) -> (f64, String) {
    let _ = pin(cpu);
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let iters = 20_000u64;
        let _ = chain_ns(iters * 100); // wake the core up
        let best = (0..300)
            .map(|_| chain_ns(iters))
            .fold(f64::INFINITY, f64::min);
        if best.is_finite() && best > 0.0 {
            let ghz = (iters * 10 * LINK_CYCLES) as f64 / best;
            if (0.2..20.0).contains(&ghz) {
                return (
                    ghz,
                    format!(
                        "timed chain of dependent {} on CPU {cpu} (fastest of 300 slices of {} links of {LINK_CYCLES} cycles)",
                        if cfg!(target_arch = "x86_64") {
                            "multiplies"
                        } else {
                            "adds"
                        },
                        iters * 10
                    ),
                );
            }
        }
    }
    match cpuinfo_mhz(cpuinfo) {
        Some(mhz) => (mhz / 1000.0, "/proc/cpuinfo cpu MHz".to_string()),
        None => (
            2.5,
            "assumed 2.5 GHz (no timed chain on this architecture, no cpu MHz)".to_string(),
        ),
    }
}

fn cpuinfo_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0)
}

/// One cache line to bounce, alone on its line and the next (the adjacent-line prefetcher).
#[repr(align(128))]
struct Line(AtomicU64);

/// Round trips per timed batch.
const BATCH: u64 = 64;

/// The one-way transfer latency between `a` and `b`: thread A on `a` writes an odd value,
/// thread B on `b` answers with the next even one; a round trip moves the line twice. Returns
/// the per-repetition medians of batch means (ns per transfer) and the transfers timed, or why
/// it could not.
pub fn ping_pong(a: u32, b: u32, effort: &Effort) -> Result<(Vec<f64>, u64), String> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let partner = {
        let (line, stop) = (line.clone(), stop.clone());
        std::thread::spawn(move || -> Result<(), String> {
            pin(b)?;
            let mut spins = 0u64;
            loop {
                let v = line.0.load(Ordering::Acquire);
                if v % 2 == 1 {
                    line.0.store(v + 1, Ordering::Release);
                } else {
                    spins += 1;
                    if spins.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    std::hint::spin_loop();
                }
            }
        })
    };
    let result = (|| {
        pin(a)?;
        // A round trip that takes longer than this means B is not running at all.
        let patience = Duration::from_secs(2);
        let mut next = 0u64;
        let mut round_trip = |line: &Line| -> Result<(), String> {
            line.0.store(next + 1, Ordering::Release);
            let want = next + 2;
            let mut spins = 0u32;
            let mut since: Option<Instant> = None;
            while line.0.load(Ordering::Acquire) != want {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(65536) {
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() > patience || partner.is_finished() {
                        return Err(format!(
                            "CPU {b} did not answer CPU {a} within {} s",
                            patience.as_secs()
                        ));
                    }
                }
                std::hint::spin_loop();
            }
            next = want;
            Ok(())
        };
        for _ in 0..BATCH * 4 {
            round_trip(&line)?; // warm up: both threads running, the line in play
        }
        let mut medians = Vec::new();
        let mut transfers = 0u64;
        for _ in 0..effort.repetitions {
            let mut batches = Vec::new();
            let rep = Instant::now();
            while rep.elapsed() < effort.repetition || batches.len() < 16 {
                let t = Instant::now();
                for _ in 0..BATCH {
                    round_trip(&line)?;
                }
                let ns = t.elapsed().as_nanos() as f64;
                batches.push(ns / (2 * BATCH) as f64);
                transfers += 2 * BATCH;
            }
            medians.push(median(&mut batches));
        }
        Ok((medians, transfers))
    })();
    stop.store(true, Ordering::Relaxed);
    // Unblocks B if A stopped between its store and B's answer.
    let partner = partner.join().map_err(|_| "the partner thread panicked")?;
    // The partner's reason (a CPU it may not run on) explains A's timeout.
    partner?;
    result
}

/// Where the second counter of [`neighbours`] sits from the first (which starts a block
/// aligned to eight lines): on the first's line, on the other line of its aligned pair, or two
/// pairs away (the control: no line and no pair shared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apart {
    OneLine,
    OnePair,
    TwoPairs,
}

impl Apart {
    pub const ALL: [Apart; 3] = [Apart::OneLine, Apart::OnePair, Apart::TwoPairs];

    pub fn name(self) -> &'static str {
        NEIGHBOURS[self as usize]
    }

    /// Bytes from the first counter to the second, for lines of `line` bytes.
    fn offset(self, line: u64) -> u64 {
        match self {
            Apart::OneLine => 8,
            Apart::OnePair => line,
            Apart::TwoPairs => 4 * line,
        }
    }
}

/// Eight lines of up to 128 bytes, aligned so that its first line starts an aligned pair.
#[repr(C, align(1024))]
struct Block([AtomicU64; 128]);

/// One run of [`neighbours`]: threads on `a` and `b` each add one to its own counter `n` times
/// with a locked add (`atomic_long_add`, `fetch_add`), released together. Nanoseconds per
/// increment, the mean of the two threads' own times. A locked add needs its line exclusive
/// every time: a plain load and store (`c = c + 1` on a volatile) is served from the store
/// buffer and hid one line's false sharing entirely on a 16-CPU Xeon guest (1.8 ns against
/// 1.7 two pairs apart, where a ping-pong between the same CPUs took 90 ns a transfer).
fn neighbour_run(block: &Block, second: usize, a: u32, b: u32, n: u64) -> Result<f64, String> {
    let ready = AtomicU64::new(0);
    let run = |cpu: u32, slot: usize| -> Result<f64, String> {
        pin(cpu)?;
        let c = &block.0[slot];
        ready.fetch_add(1, Ordering::AcqRel);
        let since = Instant::now();
        while ready.load(Ordering::Acquire) < 2 {
            if since.elapsed() > Duration::from_secs(2) {
                return Err(format!("CPUs {a} and {b} did not both start within 2 s"));
            }
            std::hint::spin_loop();
        }
        let t = Instant::now();
        for _ in 0..n {
            c.fetch_add(1, Ordering::Relaxed);
        }
        Ok(t.elapsed().as_nanos() as f64 / n as f64)
    };
    let (x, y) = std::thread::scope(|s| {
        let other = s.spawn(|| run(b, second));
        let mine = run(a, 0);
        // A thread that failed before the start line must not leave this one waiting.
        (
            mine,
            other
                .join()
                .unwrap_or(Err("the partner thread panicked".into())),
        )
    });
    Ok((x? + y?) / 2.0)
}

/// The adjacent-line (spatial) prefetcher, measured: two threads pinned on `a` and `b` each
/// increment its own counter, the counters one line apart, on the two lines of one aligned
/// pair, and two pairs apart, interleaved in every repetition. Per spacing: the
/// per-repetition ns per increment, and the increments timed. `machine_pairs` turns the
/// three figures into the model's pair term.
pub fn neighbours(
    a: u32,
    b: u32,
    line: u64,
    effort: &Effort,
) -> Result<Vec<(Apart, Vec<f64>, u64)>, String> {
    if !(16..=128).contains(&line) {
        return Err(format!(
            "{line}-byte lines: measured for lines of 16 to 128 bytes"
        ));
    }
    let block = Block(std::array::from_fn(|_| AtomicU64::new(0)));
    let slot = |apart: Apart| (apart.offset(line) / 8) as usize;
    // Enough increments that the slowest spacing's run is a third of a repetition.
    let mut n = 1u64 << 14;
    while n < 1 << 26 {
        let ns = neighbour_run(&block, slot(Apart::OneLine), a, b, n)?;
        if ns * n as f64 >= effort.repetition.as_nanos() as f64 / 3.0 {
            break;
        }
        n *= 2;
    }
    let mut out: Vec<(Apart, Vec<f64>, u64)> =
        Apart::ALL.iter().map(|&x| (x, Vec::new(), 0)).collect();
    for rep in 0..effort.repetitions as usize {
        for k in 0..out.len() {
            let i = (k + rep) % out.len();
            let ns = neighbour_run(&block, slot(out[i].0), a, b, n)?;
            out[i].1.push(ns);
            out[i].2 += 2 * n;
        }
    }
    Ok(out)
}

/// [`neighbours`] on each of `tried` (pairs of CPUs of two cores), keeping the pair whose
/// writers on one line cost the most over two pairs apart: a VM can hide that two vCPUs are
/// one core's threads, which share an L1 and show no false sharing. The kept figures, and a
/// note for each pair not kept or not measured.
pub fn neighbours_best(
    tried: &[(u32, u32)],
    line: u64,
    effort: &Effort,
    ghz: f64,
) -> (Vec<Measured>, Vec<String>) {
    let mut notes = Vec::new();
    if tried.is_empty() {
        notes.push("adjacent lines: not measured, no two cores among these CPUs".to_string());
    }
    let mut measured: Vec<Vec<Measured>> = Vec::new();
    for &(a, b) in tried {
        match neighbours(a, b, line, effort) {
            Ok(runs) => measured.push(
                runs.into_iter()
                    .map(|(apart, medians, n)| {
                        summarize(apart.name(), vec![vec![a, b]], None, medians, n, ghz)
                    })
                    .collect(),
            ),
            Err(e) => notes.push(format!("adjacent lines, CPUs {a},{b}: not measured, {e}")),
        }
    }
    let Some(best) = (0..measured.len())
        .max_by(|&i, &j| one_line_excess(&measured[i]).total_cmp(&one_line_excess(&measured[j])))
    else {
        return (Vec::new(), notes);
    };
    for (i, other) in measured.iter().enumerate() {
        if i != best {
            notes.push(neighbours_not_kept(other, &measured[best]));
        }
    }
    (measured.swap_remove(best), notes)
}

/// The note for a pair of CPUs whose [`neighbours`] figures were not kept: `other` against
/// `kept`, by what writers on one line cost over two pairs apart.
pub fn neighbours_not_kept(other: &[Measured], kept: &[Measured]) -> String {
    let cpus = |f: &[Measured]| {
        f.first()
            .and_then(|m| m.cpus.first())
            .map(|c| c.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .unwrap_or_default()
    };
    format!(
        "adjacent lines on CPUs {}: not used, writers on one line cost {:.2} ns per increment over two pairs apart against {:.2} on CPUs {}, which are kept (the pair that shows the most false sharing: two vCPUs of one core would share an L1 and show none)",
        cpus(other),
        one_line_excess(other),
        one_line_excess(kept),
        cpus(kept)
    )
}

/// What writers on one line cost over two pairs apart in one pair of CPUs' figures, ns per
/// increment (0 where either is missing).
fn one_line_excess(figures: &[Measured]) -> f64 {
    let get = |name: &str| figures.iter().find(|f| f.what == name).map(|f| f.ns);
    match (get(NEIGHBOURS[0]), get(NEIGHBOURS[2])) {
        (Some(one), Some(apart)) => one - apart,
        _ => 0.0,
    }
}

/// The model's adjacent-line term from [`neighbours`]' figures ([`decide_pairs`]): sets
/// `adjacent_line_pairs` and `pair_share` in `m` when the figures decide, and says how; a
/// line that costs no more than the control (the threads did not run together) decides
/// nothing, and the guess for the CPU stays.
pub fn machine_pairs(m: &mut MachineModel, figures: &[Measured]) -> String {
    match decide_pairs(figures) {
        PairDecision::NotMeasured => format!(
            "adjacent_line_pairs = {}, not measured (the guess for this CPU)",
            m.adjacent_line_pairs
        ),
        PairDecision::Undecided { one, apart } => format!(
            "adjacent_line_pairs = {}, not decided: two writers on one line took {} ns per \
             increment ({}-{}) against {} ns ({}-{}) two pairs apart, so no false sharing was \
             measured between these CPUs (were both threads running?); the guess for this CPU is kept",
            m.adjacent_line_pairs,
            one.ns,
            one.spread_ns[0],
            one.spread_ns[1],
            apart.ns,
            apart.spread_ns[0],
            apart.spread_ns[1]
        ),
        PairDecision::Decided {
            one,
            pair,
            apart,
            share,
            pair_slower,
            adjacent,
        } => {
            m.adjacent_line_pairs = adjacent;
            m.pair_share = adjacent.then_some(share);
            format!(
                "pair_share = (one aligned pair - two pairs apart) / (one line - two pairs apart) = \
                 ({} - {}) / ({} - {}) ns = {share}: adjacent_line_pairs = {adjacent} (at least \
                 {PAIR_SHARE_FLOOR}, and the pair slower than two pairs apart in every repetition: {pair_slower})",
                pair.ns, apart.ns, one.ns, apart.ns
            )
        }
    }
}

/// A random cyclic order of `lines` lines (Sattolo's algorithm: one cycle through all), from
/// a fixed seed, so every run chases the same path.
pub fn random_cycle(lines: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = seed | 1;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        order.swap(i, j);
    }
    // next[order[k]] = order[k + 1]: one cycle visiting every line.
    let mut next = vec![0usize; lines];
    for k in 0..lines {
        next[order[k]] = order[(k + 1) % lines];
    }
    next
}

/// Load-to-use latency, ns, of a chase through `bytes` of memory: each line holds the address
/// of the next, in a random cycle, so no prefetcher can guess and every load waits for the
/// one before. Per-repetition medians of 16 timed slices, and the loads timed.
pub fn chase(bytes: u64, line: u64, effort: &Effort) -> (Vec<f64>, u64) {
    let line = line.max(std::mem::size_of::<usize>() as u64) as usize;
    let lines = (bytes as usize / line).max(2);
    let buf = HugeBuffer::new(lines * line);
    let base = buf.addr;
    for (i, n) in random_cycle(lines, 0x9e37_79b9_7f4a_7c15)
        .into_iter()
        .enumerate()
    {
        // SAFETY: line i starts inside the mapping, aligned for a usize.
        unsafe { std::ptr::write((base + i * line) as *mut usize, base + n * line) };
    }
    let mut p = base;
    // One lap to bring the buffer in.
    for _ in 0..lines {
        // SAFETY: p is always the address of a line start inside the mapping.
        p = unsafe { std::ptr::read_volatile(p as *const usize) };
    }
    let slice = (effort.chase_loads / 16).max(256);
    let mut medians = Vec::new();
    let mut loads = 0u64;
    for _ in 0..effort.repetitions {
        let mut slices = Vec::new();
        for _ in 0..16 {
            let t = Instant::now();
            for _ in 0..slice {
                // SAFETY: as above.
                p = unsafe { std::ptr::read_volatile(p as *const usize) };
            }
            slices.push(t.elapsed().as_nanos() as f64 / slice as f64);
            loads += slice;
        }
        medians.push(median(&mut slices));
    }
    std::hint::black_box(p);
    drop(buf);
    (medians, loads)
}

/// An anonymous mapping aligned to 2 MiB and advised to use transparent huge pages, so that
/// the chase measures the caches rather than page walks where the kernel allows.
struct HugeBuffer {
    map: *mut libc::c_void,
    len: usize,
    addr: usize,
}

impl HugeBuffer {
    const HUGE: usize = 2 << 20;

    fn new(bytes: usize) -> HugeBuffer {
        let len = bytes + Self::HUGE;
        // SAFETY: a private anonymous mapping; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(map != libc::MAP_FAILED, "cannot map {len} bytes");
        let addr = (map as usize).next_multiple_of(Self::HUGE);
        // SAFETY: advice on a range inside the mapping; a refusal only costs the huge pages.
        unsafe {
            libc::madvise(
                addr as *mut libc::c_void,
                bytes
                    .next_multiple_of(Self::HUGE)
                    .min(len - (addr - map as usize)),
                libc::MADV_HUGEPAGE,
            );
        }
        HugeBuffer { map, len, addr }
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe {
            libc::munmap(self.map, self.len);
        }
    }
}

/// A [`Measured`] from per-repetition medians.
pub fn summarize(
    what: &str,
    cpus: Vec<Vec<u32>>,
    bytes: Option<u64>,
    mut medians: Vec<f64>,
    samples: u64,
    ghz: f64,
) -> Measured {
    let ns = median(&mut medians);
    let lo = medians.first().copied().unwrap_or(ns);
    let hi = medians.last().copied().unwrap_or(ns);
    let round = |x: f64| (x * 100.0).round() / 100.0;
    Measured {
        what: what.to_string(),
        cpus,
        bytes,
        ns: round(ns),
        cycles: round(ns * ghz),
        spread_ns: [round(lo), round(hi)],
        repetitions: medians.len() as u32,
        samples,
    }
}

/// The pointer-chase buffers, one per level: half of L1d and of L2, the geometric mean of
/// L2 and the LLC (rounded down to a power of two) for the LLC, and DRAM at four times the LLC (at least 64 MiB, at most
/// `max_dram`). A level sysfs does not describe is left out, with the reason.
pub fn chase_sizes(t: &Topology, max_dram: u64) -> (Vec<(String, u64)>, Vec<String>) {
    let caches = t.caches();
    let mut out = Vec::new();
    let mut absent = Vec::new();
    let llc_level = caches.last().map(|c| c.level);
    let mut below = 0u64;
    for c in caches {
        let name = if Some(c.level) == llc_level && c.level > 1 {
            "LLC".to_string()
        } else {
            format!("L{}", c.level)
        };
        // The LLC is shared (with other cores, other tenants of a VM host): a buffer half its
        // size is often evicted by others. Its geometric mean with the level below is still
        // well above that level and leaves most of the LLC to the others.
        let size = if name == "LLC" && below > 0 {
            let mean = ((below as f64) * (c.bytes as f64)).sqrt() as u64;
            (1u64 << (63 - mean.leading_zeros())).min(c.bytes / 2)
        } else {
            c.bytes / 2
        };
        if size <= below * 2 {
            absent.push(format!(
                "{name}: not measured, {} KiB is too close to the level below to time apart",
                c.bytes >> 10
            ));
            continue;
        }
        out.push((name, size));
        below = c.bytes;
    }
    if caches.is_empty() {
        absent.push(
            "L1, L2, LLC: not measured, sysfs describes no caches (cpu*/cache/index*)".to_string(),
        );
    }
    let llc = caches.last().map_or(0, |c| c.bytes);
    out.push((
        "DRAM".to_string(),
        (llc * 4).max(64 << 20).min(max_dram.max(llc * 2)),
    ));
    (out, absent)
}

/// The cost model's machine from the measurements: `l2_hit`, `llc_hit` from the chases; the
/// local transfer price as the mean over the node's CPU pairs of their class's latency
/// (the model picks communicating CPUs at random); the remote one from the other-node class,
/// or the local one on a single node. What is not measured keeps `guess`'s value, said in
/// the returned notes.
pub fn machine_from(
    guess: &MachineModel,
    transfers: &[(PairClass, u64, Measured)],
    loads: &[Measured],
) -> (MachineModel, Vec<String>) {
    let mut m = guess.clone();
    let mut notes = Vec::new();
    let load = |name: &str| loads.iter().find(|l| l.what == name);
    match load("L2") {
        Some(l) => {
            m.l2_hit = l.cycles;
            notes.push(format!("l2_hit = the L2 chase ({} cycles)", l.cycles));
        }
        None => notes.push(format!(
            "l2_hit = {} cycles, not measured (the presets' middle)",
            m.l2_hit
        )),
    }
    match load("LLC") {
        Some(l) => {
            m.llc_hit = l.cycles;
            notes.push(format!("llc_hit = the LLC chase ({} cycles)", l.cycles));
            if let Some(d) = load("DRAM").filter(|d| l.ns >= 0.6 * d.ns) {
                notes.push(format!(
                    "llc_hit is suspect: the LLC chase took {:.0}% of the DRAM chase's time, so \
                     this CPU did not get the LLC that sysfs reports (other cores or VM tenants \
                     use it); read it as an upper bound",
                    100.0 * l.ns / d.ns
                ));
            }
        }
        None => notes.push(format!(
            "llc_hit = {} cycles, not measured (a guess)",
            m.llc_hit
        )),
    }
    let local: Vec<&(PairClass, u64, Measured)> = transfers
        .iter()
        .filter(|(c, _, _)| *c != PairClass::OtherNode)
        .collect();
    let pairs: u64 = local.iter().map(|(_, n, _)| n).sum();
    if pairs > 0 {
        let mean = local
            .iter()
            .map(|(_, n, x)| *n as f64 * x.cycles)
            .sum::<f64>()
            / pairs as f64;
        m.local_hitm = (mean * 100.0).round() / 100.0;
        let parts: Vec<String> = local
            .iter()
            .map(|(c, n, x)| format!("{} pairs {} x {} cycles", n, c.name(), x.cycles))
            .collect();
        notes.push(format!(
            "local_hitm = mean over the CPU pairs of a node: ({}) / {pairs}",
            parts.join(" + ")
        ));
    } else {
        notes.push(format!(
            "local_hitm = {} cycles, not measured (a guess: no two CPUs of one node)",
            m.local_hitm
        ));
    }
    match transfers
        .iter()
        .find(|(c, _, _)| *c == PairClass::OtherNode)
    {
        Some((_, _, x)) => {
            m.remote_hitm = x.cycles;
            notes.push(format!(
                "remote_hitm = the other-node ping-pong ({} cycles)",
                x.cycles
            ));
        }
        None if m.numa_nodes <= 1 => {
            m.remote_hitm = m.local_hitm;
            notes.push("remote_hitm = local_hitm (one NUMA node: never used)".to_string());
        }
        None => notes.push(format!(
            "remote_hitm = {} cycles, not measured (a guess)",
            m.remote_hitm
        )),
    }
    (m, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_cycle_visits_every_line_once() {
        for n in [2, 3, 17, 1000] {
            let next = random_cycle(n, 42);
            let mut seen = vec![false; n];
            let mut p = 0;
            for _ in 0..n {
                assert!(!seen[p], "line {p} twice in {n}");
                seen[p] = true;
                p = next[p];
            }
            assert_eq!(p, 0, "a cycle of {n} comes back");
        }
    }

    #[test]
    fn medians_and_summaries() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let s = summarize(
            "L1",
            vec![vec![0]],
            Some(1024),
            vec![2.0, 1.0, 3.0],
            99,
            2.0,
        );
        assert_eq!(
            (s.ns, s.cycles, s.spread_ns, s.repetitions),
            (2.0, 4.0, [1.0, 3.0], 3)
        );
    }

    #[test]
    fn cpuinfo_fields() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.128\n";
        assert_eq!(cpuinfo_mhz(text), Some(2596.128));
        assert_eq!(cpuinfo_mhz(""), None);
    }

    fn measured(what: &str, cycles: f64) -> Measured {
        summarize(what, vec![], None, vec![cycles], 1, 1.0)
    }

    #[test]
    fn the_pair_share_comes_from_the_three_spacings() {
        let figures = |one: f64, pair: f64, apart: f64| {
            vec![
                measured(Apart::OneLine.name(), one),
                measured(Apart::OnePair.name(), pair),
                measured(Apart::TwoPairs.name(), apart),
            ]
        };
        let guess = MachineModel::from_topology("host", 16, 1, 16, 1, 64);
        // The pair costs more than the line (a Xeon guest measured that): share above 1.
        let mut m = guess.clone();
        let note = machine_pairs(&mut m, &figures(20.0, 30.0, 2.0));
        assert!(m.adjacent_line_pairs, "{note}");
        assert_eq!(m.pair_share, Some(1.56));
        assert!(note.contains("(30 - 2) / (20 - 2)"), "{note}");
        // A pair no dearer than lines apart: no pairs, whatever the vendor guess said.
        let mut m = guess.clone();
        m.adjacent_line_pairs = true;
        machine_pairs(&mut m, &figures(20.0, 2.5, 2.0));
        assert!(!m.adjacent_line_pairs);
        assert_eq!(m.pair_share, None);
        // One line no dearer than the control: nothing decided, the guess kept.
        let mut m = guess.clone();
        m.adjacent_line_pairs = true;
        let note = machine_pairs(&mut m, &figures(2.2, 2.1, 2.0));
        assert!(m.adjacent_line_pairs && m.pair_share.is_none(), "{note}");
        assert!(note.contains("not decided"), "{note}");
        // Medians apart but every repetition inside the control's spread: noise, undecided.
        let mut noisy = figures(2.4, 1.9, 2.0);
        noisy[0].spread_ns = [1.45, 4.63];
        noisy[2].spread_ns = [1.42, 2.81];
        let mut m = guess.clone();
        assert!(machine_pairs(&mut m, &noisy).contains("not decided"));
        assert_eq!(m, guess);
        // Nothing measured: nothing changes.
        let mut m = guess.clone();
        assert!(machine_pairs(&mut m, &[]).contains("not measured"));
        assert_eq!(m, guess);
    }

    #[test]
    fn the_model_weighs_classes_by_their_pairs() {
        let guess = MachineModel::from_topology("host", 16, 2, 4, 2, 64);
        let transfers = vec![
            (PairClass::SmtSiblings, 8, measured("SMT siblings", 20.0)),
            (PairClass::SameLlc, 16, measured("same LLC", 80.0)),
            (
                PairClass::OtherLlcSameNode,
                32,
                measured("other LLC, same node", 200.0),
            ),
            (PairClass::OtherNode, 64, measured("other node", 400.0)),
        ];
        let loads = vec![measured("L2", 14.0), measured("LLC", 45.0)];
        let (m, notes) = machine_from(&guess, &transfers, &loads);
        assert_eq!((m.l2_hit, m.llc_hit), (14.0, 45.0));
        assert_eq!(
            m.local_hitm,
            (8.0 * 20.0 + 16.0 * 80.0 + 32.0 * 200.0) / 56.0
        );
        assert_eq!(m.remote_hitm, 400.0);
        assert_eq!(notes.len(), 4);
        // An LLC chase as slow as DRAM is said to be suspect.
        let slow = vec![measured("LLC", 400.0), measured("DRAM", 450.0)];
        let (_, notes) = machine_from(&guess, &transfers, &slow);
        assert!(
            notes.iter().any(|n| n.starts_with("llc_hit is suspect")),
            "{notes:?}"
        );
        // One node, nothing measured between CPUs: the guess stays, and says so.
        let one = MachineModel::from_topology("host", 1, 1, 1, 1, 64);
        let (m, notes) = machine_from(&one, &[], &[]);
        assert_eq!(m.local_hitm, one.local_hitm);
        assert_eq!(m.remote_hitm, m.local_hitm);
        assert!(
            notes.iter().any(|n| n.contains("not measured")),
            "{notes:?}"
        );
    }

    #[test]
    fn chase_sizes_follow_the_caches() {
        use crate::readers::host::{Cache, Cpu};
        let cache = |level, bytes| Cache {
            level,
            kind: "Unified".into(),
            bytes,
            line: 64,
            shared_cpus: vec![0],
        };
        let t = Topology {
            cpus: vec![Cpu {
                cpu: 0,
                core: vec![0],
                package: 0,
                llc: vec![0],
                node: 0,
                caches: vec![cache(1, 32 << 10), cache(2, 1 << 20), cache(3, 32 << 20)],
            }],
            nodes: 1,
        };
        let (sizes, absent) = chase_sizes(&t, 512 << 20);
        assert_eq!(
            sizes,
            vec![
                ("L1".to_string(), 16 << 10),
                ("L2".to_string(), 512 << 10),
                ("LLC".to_string(), 4 << 20),
                ("DRAM".to_string(), 128 << 20),
            ]
        );
        assert!(absent.is_empty());
        let bare = Topology {
            cpus: vec![],
            nodes: 1,
        };
        let (sizes, absent) = chase_sizes(&bare, 512 << 20);
        assert_eq!(sizes, vec![("DRAM".to_string(), 64 << 20)]);
        assert_eq!(absent.len(), 1);
    }

    /// On this machine: the figures are finite and positive, and a pair that exists answers.
    /// (No ordering of timings is asserted: the VM is shared.)
    #[test]
    fn this_machine_measures_finite_positive_latencies() {
        let effort = Effort {
            repetitions: 2,
            repetition: Duration::from_millis(2),
            pairs_per_class: 1,
            chase_loads: 4096,
            max_dram_bytes: 1 << 20,
        };
        let (medians, loads) = chase(64 << 10, 64, &effort);
        assert_eq!(medians.len(), 2);
        assert!(loads > 0);
        assert!(
            medians.iter().all(|m| m.is_finite() && *m > 0.0),
            "{medians:?}"
        );
        let cpus = allowed_cpus();
        if cpus.len() >= 2 {
            let (medians, transfers) = ping_pong(cpus[0], cpus[1], &effort).unwrap();
            assert_eq!(medians.len(), 2);
            assert!(transfers >= 2 * 2 * 16 * BATCH);
            assert!(
                medians.iter().all(|m| m.is_finite() && *m > 0.0),
                "{medians:?}"
            );
        }
        let (ghz, how) = clock_ghz(cpus.first().copied().unwrap_or(0), "");
        assert!(ghz.is_finite() && ghz > 0.0, "{ghz} {how}");
    }
}
