//! `lineup replay`: a C microbenchmark that replays a profile's access mix on one instance of
//! a struct per layout, so that layouts can be compared by measurement, not only by the model.
//!
//! - [`replay_streams`]: the profile's accesses as streams with loads, stores and atomic
//!   read-modify-writes apart (no I/O);
//! - [`assign`]: which threads touch which stream, and how often (no I/O);
//! - [`generate`]: the C source, a pure function of units, streams and placements (no I/O);
//! - [`parse_output`]: one run's figures from the program's output (no I/O);
//! - [`compile`] and [`run_variant`]: `cc` and one run of the program (the I/O).
//!
//! `docs/replay.md` says what the replay maps and what it cannot show.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::analysis::cost::{Placement, Unit};
use crate::layout::Layout;
use crate::profile::Access;

/// One code path's accesses to some bytes of one unit, by kind.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayStream {
    pub unit: usize,
    /// Offset of the bytes within the unit.
    pub inner: u64,
    pub size: u64,
    pub field: String,
    pub path: String,
    pub loads: f64,
    pub stores: f64,
    pub rmw: f64,
    /// Distinct CPUs of the evidence (at least 1), out of [`Replay::profile_cpus`].
    pub cpus: u32,
}

/// The profile's accesses grouped the way [`crate::analysis::cost::streams`] groups them (unit,
/// bytes, code path), with CPU counts out of `profile_cpus` (the evidence's machine).
pub fn replay_streams(
    units: &[Unit],
    layout: &Layout,
    accesses: &[Access],
    profile_cpus: u32,
) -> Vec<ReplayStream> {
    let costed = crate::analysis::cost::streams(units, layout, accesses, profile_cpus);
    let mut by_key: BTreeMap<(usize, u64, u64, String), ReplayStream> = costed
        .into_iter()
        .map(|s| {
            (
                (s.unit, s.inner, s.size, s.path.clone()),
                ReplayStream {
                    unit: s.unit,
                    inner: s.inner,
                    size: s.size,
                    field: s.field,
                    path: s.path,
                    loads: 0.0,
                    stores: 0.0,
                    rmw: 0.0,
                    cpus: s.cpus,
                },
            )
        })
        .collect();
    // The same keys as cost::streams, now with stores and read-modify-writes apart.
    for a in accesses {
        let Some(off) = a.offset else { continue };
        let Some(u) = units
            .iter()
            .position(|u| u.offset <= off && off < u.offset + u.size.max(1))
        else {
            continue;
        };
        let unit = &units[u];
        let size = a
            .size
            .unwrap_or(1)
            .max(1)
            .min(unit.offset + unit.size - off);
        let path = a
            .code
            .as_ref()
            .map(|c| c.function())
            .or_else(|| a.groups.first().cloned())
            .unwrap_or_else(|| "?".to_string());
        if let Some(s) = by_key.get_mut(&(u, off - unit.offset, size, path)) {
            s.loads += a.counts.loads;
            s.stores += a.counts.stores;
            s.rmw += a.counts.rmw;
        }
    }
    by_key
        .into_values()
        .filter(|s| s.loads + s.stores + s.rmw > 0.0)
        .collect()
}

/// What kind of access an operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OpKind {
    Load,
    Store,
    Rmw,
}

impl OpKind {
    fn c_name(self) -> &'static str {
        match self {
            OpKind::Load => "OP_LOAD",
            OpKind::Store => "OP_STORE",
            OpKind::Rmw => "OP_RMW",
        }
    }
}

/// One entry of a thread's mix: a kind of access to a stream's bytes, with its share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Op {
    pub stream: usize,
    pub kind: OpKind,
    /// Relative rate within the thread (the profile's unit, divided among the stream's
    /// threads).
    pub weight: f64,
}

/// Number of threads that replay a stream seen on `cpus` CPUs of a `profile_cpus` machine:
/// `ceil(threads * cpus / profile_cpus)`, at least 1, at most `threads`.
pub fn threads_for(cpus: u32, profile_cpus: u32, threads: u32) -> u32 {
    let p = u64::from(profile_cpus.max(1));
    let n = u64::from(cpus.clamp(1, profile_cpus.max(1)));
    (u64::from(threads) * n)
        .div_ceil(p)
        .clamp(1, u64::from(threads.max(1))) as u32
}

/// Each thread's mix. Stream `j` on `k` threads goes to threads `j, j+1, ... (mod threads)`,
/// each doing `1/k` of its loads, stores and read-modify-writes.
pub fn assign(streams: &[ReplayStream], profile_cpus: u32, threads: u32) -> Vec<Vec<Op>> {
    let t = threads.max(1) as usize;
    let mut out: Vec<Vec<Op>> = vec![Vec::new(); t];
    for (j, s) in streams.iter().enumerate() {
        let k = threads_for(s.cpus, profile_cpus, threads) as usize;
        for i in 0..k {
            let th = (j + i) % t;
            for (kind, rate) in [
                (OpKind::Load, s.loads),
                (OpKind::Store, s.stores),
                (OpKind::Rmw, s.rmw),
            ] {
                if rate > 0.0 {
                    out[th].push(Op {
                        stream: j,
                        kind,
                        weight: rate / k as f64,
                    });
                }
            }
        }
    }
    out
}

/// A layout to replay: its name and its placement of the units.
#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    pub placement: Placement,
}

/// Everything the C source is made of.
pub struct Replay<'a> {
    pub type_name: &'a str,
    pub units: &'a [Unit],
    pub streams: &'a [ReplayStream],
    pub variants: &'a [Variant],
    /// CPUs of the machine the evidence came from.
    pub profile_cpus: u32,
    pub threads: u32,
    pub cacheline_size: u64,
    /// Where the evidence came from, for the header comment.
    pub evidence: &'a str,
}

/// A C identifier for a unit name (`{a/b}` → `a_b`), unique among `taken`.
fn c_ident(name: &str, taken: &mut Vec<String>) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s = s.trim_matches('_').to_string();
    // `pad_N` names the explicit padding.
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || s.starts_with("pad_") {
        s = format!("m_{s}");
    }
    let base = s.clone();
    let mut n = 2;
    while taken.contains(&s) {
        s = format!("{base}_{n}");
        n += 1;
    }
    taken.push(s.clone());
    s
}

/// Width in bytes of the access made for `size` bytes at absolute offset `at`: the largest
/// of 8, 4, 2, 1 that fits in the bytes and divides the offset (atomics must be aligned).
pub fn access_width(size: u64, at: u64) -> u64 {
    [8u64, 4, 2, 1]
        .into_iter()
        .find(|&w| w <= size.max(1) && at.is_multiple_of(w))
        .unwrap_or(1)
}

fn comment_safe(s: &str) -> String {
    s.replace("*/", "* /").replace('\n', " ")
}

/// The C program: one struct per variant (byte arrays at the placement's offsets, checked
/// with `_Static_assert`), each thread's mix as a table, and a `main` that runs one variant
/// for a duration on pinned threads and prints what it did.
pub fn generate(r: &Replay) -> String {
    let mut s = String::new();
    let cls = r.cacheline_size.max(1);
    let idents: Vec<String> = {
        let mut taken = Vec::new();
        r.units
            .iter()
            .map(|u| c_ident(&u.name, &mut taken))
            .collect()
    };
    let hot: Vec<bool> = (0..r.units.len())
        .map(|u| r.streams.iter().any(|s| s.unit == u))
        .collect();
    let _ = writeln!(
        s,
        "/* Generated by lineup replay: struct {} replayed from {}.\n * {} variant(s), {} thread(s), {}-byte cache lines.\n * Build: cc -O2 -pthread -fno-strict-aliasing -o replay replay.c\n * Run:   ./replay VARIANT DURATION_MS [THINK]   (VARIANT: 0..{})\n * Every member is an opaque byte array at the variant's offset; padding is explicit, so\n * the offsets are exactly the placement's. Accesses are volatile loads and stores and\n * __atomic_fetch_add for read-modify-writes, in the profile's proportions. */",
        comment_safe(r.type_name),
        comment_safe(r.evidence),
        r.variants.len(),
        r.threads,
        cls,
        r.variants.len().saturating_sub(1),
    );
    s.push_str(
        "#define _GNU_SOURCE\n#include <pthread.h>\n#include <sched.h>\n#include <stddef.h>\n\
         #include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         #include <time.h>\n#include <unistd.h>\n\n",
    );
    let _ = writeln!(s, "#define CACHELINE {cls}");
    let _ = writeln!(s, "#define NVARIANTS {}", r.variants.len());
    let _ = writeln!(s, "#define NSTREAMS {}", r.streams.len().max(1));
    let _ = writeln!(s, "#define NTHREADS {}\n", r.threads.max(1));

    for (vi, v) in r.variants.iter().enumerate() {
        let _ = writeln!(
            s,
            "/* Variant {vi}: {} ({} bytes, {} lines) */",
            comment_safe(&v.name),
            v.placement.size,
            v.placement.size.div_ceil(cls)
        );
        let _ = writeln!(s, "struct v{vi} {{");
        let mut order: Vec<usize> = (0..r.units.len())
            .filter(|&u| r.units[u].size > 0)
            .collect();
        order.sort_by_key(|&u| (v.placement.offsets[u], u));
        let mut cursor = 0u64;
        for u in order {
            let off = v.placement.offsets[u];
            let unit = &r.units[u];
            if off > cursor {
                let _ = writeln!(s, "    unsigned char pad_{cursor}[{}];", off - cursor);
            } else if off < cursor {
                // Overlapping units (a union's members): nothing to lay out.
                continue;
            }
            let na = unit.natural_align.max(1);
            let align = if off.is_multiple_of(na) && v.placement.size.is_multiple_of(na) && na > 1 {
                format!("_Alignas({na}) ")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "    {align}unsigned char {}[{}]; /* offset {off}, line {}{} */",
                idents[u],
                unit.size,
                off / cls,
                if hot[u] { ", hot" } else { "" }
            );
            cursor = off + unit.size;
        }
        if v.placement.size > cursor {
            let _ = writeln!(
                s,
                "    unsigned char pad_{cursor}[{}];",
                v.placement.size - cursor
            );
        }
        s.push_str("};\n");
        let _ = writeln!(
            s,
            "_Static_assert(sizeof(struct v{vi}) == {}, \"v{vi}: size\");",
            v.placement.size.max(cursor)
        );
        for (u, unit) in r.units.iter().enumerate() {
            if hot[u] && unit.size > 0 {
                let _ = writeln!(
                    s,
                    "_Static_assert(offsetof(struct v{vi}, {}) == {}, \"v{vi}: {}\");",
                    idents[u], v.placement.offsets[u], idents[u]
                );
            }
        }
        s.push('\n');
    }

    let _ = writeln!(
        s,
        "static const char *const VARIANT_NAMES[NVARIANTS] = {{ {} }};",
        r.variants
            .iter()
            .map(|v| format!("\"{}\"", v.name.replace(['"', '\\'], "_")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "static const size_t VARIANT_SIZES[NVARIANTS] = {{ {} }};\n",
        (0..r.variants.len())
            .map(|i| format!("sizeof(struct v{i})"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    s.push_str(
        "/* The streams: a code path's accesses to some bytes of a member; the address per\n * variant, and the access width (1, 2, 4 or 8 bytes, aligned in every variant). */\n",
    );
    let _ = writeln!(
        s,
        "static const size_t STREAM_OFFSET[NVARIANTS][NSTREAMS] = {{"
    );
    for (vi, v) in r.variants.iter().enumerate() {
        let cells: Vec<String> = r
            .streams
            .iter()
            .map(|st| format!("offsetof(struct v{vi}, {}) + {}", idents[st.unit], st.inner))
            .collect();
        let cells = if cells.is_empty() {
            vec!["0".to_string()]
        } else {
            cells
        };
        let _ = writeln!(
            s,
            "    /* {} */ {{ {} }},",
            comment_safe(&v.name),
            cells.join(", ")
        );
    }
    s.push_str("};\n");
    let widths: Vec<u64> = r
        .streams
        .iter()
        .map(|st| {
            // Evidence without access sizes (c2c) gives 1 byte: access up to a word of the
            // member instead.
            let unit = &r.units[st.unit];
            let size = st.size.max(unit.size.saturating_sub(st.inner).min(8));
            r.variants
                .iter()
                .map(|v| access_width(size, v.placement.offsets[st.unit] + st.inner))
                .min()
                .unwrap_or(1)
        })
        .collect();
    let _ = writeln!(s, "static const unsigned STREAM_WIDTH[NSTREAMS] = {{");
    for (j, st) in r.streams.iter().enumerate() {
        let _ = writeln!(
            s,
            "    {}, /* {j}: {} +{} ({} bytes) by {}: loads {}, stores {}, rmw {}, {} of {} CPUs */",
            widths[j],
            comment_safe(&st.field),
            st.inner,
            st.size,
            comment_safe(&st.path),
            st.loads,
            st.stores,
            st.rmw,
            st.cpus,
            r.profile_cpus
        );
    }
    if r.streams.is_empty() {
        s.push_str("    1,\n");
    }
    s.push_str("};\n\n");

    s.push_str(
        "enum { OP_LOAD, OP_STORE, OP_RMW };\nstruct op { unsigned stream, kind; double weight; };\n\n",
    );
    let mix = assign(r.streams, r.profile_cpus, r.threads);
    for (t, ops) in mix.iter().enumerate() {
        let _ = writeln!(s, "static const struct op MIX{t}[] = {{");
        for op in ops {
            let st = &r.streams[op.stream];
            let _ = writeln!(
                s,
                "    {{ {}, {}, {:.6} }}, /* {} {} */",
                op.stream,
                op.kind.c_name(),
                op.weight,
                comment_safe(&st.path),
                comment_safe(&st.field)
            );
        }
        if ops.is_empty() {
            s.push_str("    { 0, OP_LOAD, 0.0 },\n");
        }
        s.push_str("};\n");
    }
    let _ = writeln!(
        s,
        "static const struct op *const MIX[NTHREADS] = {{ {} }};",
        (0..mix.len())
            .map(|t| format!("MIX{t}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "static const unsigned MIX_LEN[NTHREADS] = {{ {} }};\n",
        mix.iter()
            .map(|ops| ops.len().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    s.push_str(RUNTIME);
    s
}

/// The part of the program that does not depend on the struct.
const RUNTIME: &str = r#"/* Each thread draws a schedule of SCHEDULE operations from its mix (weighted, by a
 * xorshift seeded with the thread's number, so every variant replays the same sequence),
 * then runs it round and round until told to stop, checking the flag every BATCH ops. */
#define SCHEDULE 4096
#define BATCH 64
#ifndef THINK
#define THINK 0
#endif

struct step { unsigned char *addr; unsigned code; };
struct worker {
    _Alignas(CACHELINE) pthread_t thread;
    int index, cpu;
    unsigned char *base;
    int variant;
    unsigned long long ops, cpu_ns, wall_ns, corun_ops, corun_ns, sink;
};

static _Alignas(CACHELINE) volatile int stop_flag;
static unsigned think = THINK;
static _Alignas(CACHELINE) pthread_barrier_t start_barrier;

static unsigned long long now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static uint64_t xorshift64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void build_schedule(struct worker *w, struct step *steps) {
    const struct op *mix = MIX[w->index];
    unsigned n = MIX_LEN[w->index];
    double total = 0;
    for (unsigned i = 0; i < n; i++) total += mix[i].weight;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1);
    for (unsigned i = 0; i < SCHEDULE; i++) {
        double x = (double)(xorshift64(&seed) >> 11) / 9007199254740992.0 * total;
        unsigned k = 0;
        while (k + 1 < n && x >= mix[k].weight) { x -= mix[k].weight; k++; }
        unsigned st = mix[k].stream;
        unsigned width = STREAM_WIDTH[st];
        unsigned wlog = width == 8 ? 3 : width == 4 ? 2 : width == 2 ? 1 : 0;
        steps[i].addr = w->base + STREAM_OFFSET[w->variant][st];
        steps[i].code = (n == 0 || total <= 0) ? 99 : mix[k].kind * 4 + wlog;
    }
}

#define DO_OPS(T, L) \
    case OP_LOAD * 4 + L: sink += *(volatile T *)s->addr; break; \
    case OP_STORE * 4 + L: *(volatile T *)s->addr = (T)i; break; \
    case OP_RMW * 4 + L: __atomic_fetch_add((T *)s->addr, 1, __ATOMIC_RELAXED); break;

/* Contention needs the threads on their CPUs at the same time, which a busy machine does
 * not promise. Each thread bumps its own heartbeat (a line of its own) after every batch
 * and times every batch; a batch counts as co-running when every other thread's heartbeat
 * moved during it and it took less than CORUN_MAX_NS (longer: the thread itself was
 * preempted). The co-running figures are what the replay's throughput is made of. */
#define CORUN_MAX_NS 500000ull
static _Alignas(CACHELINE) volatile unsigned long long beats[NTHREADS][CACHELINE / 8];

static void *work(void *arg) {
    struct worker *w = arg;
    if (w->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    struct step *steps = malloc(sizeof(struct step) * SCHEDULE);
    if (!steps) { perror("malloc"); exit(3); }
    build_schedule(w, steps);
    unsigned long long ops = 0, sink = 0, corun_ops = 0, corun_ns = 0, beat = 0;
    unsigned long long seen[NTHREADS];
    unsigned i = 0;
    pthread_barrier_wait(&start_barrier);
    unsigned long long c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns(CLOCK_MONOTONIC);
    unsigned long long t = t0;
    while (!stop_flag) {
        for (int o = 0; o < NTHREADS; o++) seen[o] = beats[o][0];
        for (unsigned b = 0; b < BATCH; b++, i = (i + 1) % SCHEDULE) {
            const struct step *s = &steps[i];
            switch (s->code) {
            DO_OPS(uint8_t, 0)
            DO_OPS(uint16_t, 1)
            DO_OPS(uint32_t, 2)
            DO_OPS(uint64_t, 3)
            default: break;
            }
            /* Private work between two accesses to the struct (argv[3], THINK by default):
             * real code does other things between its accesses. */
            for (unsigned k = 0; k < think; k++) sink = sink * 6364136223846793005ull + k;
        }
        ops += BATCH;
        beats[w->index][0] = ++beat;
        int together = 1;
        for (int o = 0; o < NTHREADS; o++)
            if (o != w->index && beats[o][0] == seen[o]) together = 0;
        unsigned long long t1 = now_ns(CLOCK_MONOTONIC);
        if (together && t1 - t < CORUN_MAX_NS) {
            corun_ops += BATCH;
            corun_ns += t1 - t;
        }
        t = t1;
    }
    w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    w->wall_ns = now_ns(CLOCK_MONOTONIC) - t0;
    w->ops = ops;
    w->corun_ops = corun_ops;
    w->corun_ns = corun_ns;
    w->sink = sink;
    free(steps);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s VARIANT DURATION_MS [THINK]\n", argv[0]);
        return 2;
    }
    int variant = atoi(argv[1]);
    long duration_ms = atol(argv[2]);
    if (argc > 3) think = (unsigned)atol(argv[3]);
    if (variant < 0 || variant >= NVARIANTS || duration_ms <= 0) {
        fprintf(stderr, "bad variant or duration\n");
        return 2;
    }
    cpu_set_t allowed;
    int cpus[CPU_SETSIZE], ncpus = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed)) cpus[ncpus++] = c;
    size_t bytes = (VARIANT_SIZES[variant] + 4095) / 4096 * 4096;
    unsigned char *base = aligned_alloc(4096, bytes ? bytes : 4096);
    if (!base) { perror("aligned_alloc"); return 3; }
    memset(base, 0, bytes ? bytes : 4096);
    static struct worker workers[NTHREADS];
    pthread_barrier_init(&start_barrier, NULL, NTHREADS + 1);
    for (int t = 0; t < NTHREADS; t++) {
        workers[t].index = t;
        workers[t].cpu = ncpus ? cpus[t % ncpus] : -1;
        workers[t].base = base;
        workers[t].variant = variant;
        if (pthread_create(&workers[t].thread, NULL, work, &workers[t])) {
            perror("pthread_create");
            return 3;
        }
    }
    pthread_barrier_wait(&start_barrier);
    struct timespec d = { duration_ms / 1000, (duration_ms % 1000) * 1000000L };
    nanosleep(&d, NULL);
    stop_flag = 1;
    unsigned long long sink = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(workers[t].thread, NULL);
        sink += workers[t].sink;
        printf("thread %d cpu %d ops %llu cpu_ns %llu wall_ns %llu corun_ops %llu corun_ns %llu\n",
               t, workers[t].cpu, workers[t].ops, workers[t].cpu_ns, workers[t].wall_ns,
               workers[t].corun_ops, workers[t].corun_ns);
    }
    printf("variant %d %s sink %llu\n", variant, VARIANT_NAMES[variant], sink & 1);
    free(base);
    return 0;
}
"#;

/// One thread's figures from one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadRun {
    pub ops: u64,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Operations in batches during which every other thread made progress too.
    pub corun_ops: u64,
    pub corun_ns: u64,
}

/// One run of one variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    pub threads: Vec<ThreadRun>,
}

impl RunFigures {
    /// Operations per second of thread CPU time, summed over threads: what the threads do
    /// while they run, so time other processes take from them does not count.
    pub fn ops_per_cpu_second(&self) -> f64 {
        self.threads
            .iter()
            .filter(|t| t.cpu_ns > 0)
            .map(|t| t.ops as f64 / (t.cpu_ns as f64 * 1e-9))
            .sum()
    }
    /// Operations per second of the time all threads ran together, summed over threads:
    /// the replay's figure. Time a thread waited for its CPU, or ran while another waited,
    /// does not count, so a busy machine slows the runs but does not dilute the contention.
    /// Whether all threads ran together at some point of the run: without that time (a
    /// machine busy with other work) the run has no figure, and does not count.
    pub fn has_corun_time(&self) -> bool {
        self.threads.iter().any(|t| t.corun_ns > 0)
    }

    pub fn ops_per_corun_second(&self) -> f64 {
        self.threads
            .iter()
            .filter(|t| t.corun_ns > 0)
            .map(|t| t.corun_ops as f64 / (t.corun_ns as f64 * 1e-9))
            .sum()
    }
    /// Share of the operations made while all threads ran together.
    pub fn corun_share(&self) -> f64 {
        let all: u64 = self.threads.iter().map(|t| t.ops).sum();
        let together: u64 = self.threads.iter().map(|t| t.corun_ops).sum();
        if all == 0 {
            0.0
        } else {
            together as f64 / all as f64
        }
    }
    /// Operations per second of wall time, summed over threads.
    pub fn ops_per_wall_second(&self) -> f64 {
        self.threads
            .iter()
            .filter(|t| t.wall_ns > 0)
            .map(|t| t.ops as f64 / (t.wall_ns as f64 * 1e-9))
            .sum()
    }
}

/// Reads the program's `thread ...` lines; an error names what is missing.
pub fn parse_output(text: &str) -> Result<RunFigures, String> {
    let mut threads = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.first() != Some(&"thread") || w.len() < 14 {
            continue;
        }
        let num = |i: usize| -> Result<u64, String> {
            w[i].parse::<u64>()
                .map_err(|_| format!("bad number '{}' in '{line}'", w[i]))
        };
        threads.push(ThreadRun {
            ops: num(5)?,
            cpu_ns: num(7)?,
            wall_ns: num(9)?,
            corun_ops: num(11)?,
            corun_ns: num(13)?,
        });
    }
    if threads.is_empty() {
        return Err("the replay printed no thread figures".to_string());
    }
    Ok(RunFigures { threads })
}

/// Compiles `source` to `binary` with `compiler` (`cc -O2 -pthread -fno-strict-aliasing`).
pub fn compile(compiler: &str, source: &Path, binary: &Path) -> Result<(), String> {
    let out = Command::new(compiler)
        .args(["-O2", "-pthread", "-fno-strict-aliasing", "-o"])
        .arg(binary)
        .arg(source)
        .output()
        .map_err(|e| format!("cannot run the C compiler '{compiler}': {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| err.lines().next())
            .unwrap_or("")
            .trim()
            .to_string();
        return Err(format!(
            "'{compiler}' failed to compile the replay {}: {first}",
            source.display()
        ));
    }
    Ok(())
}

/// Runs variant `variant` of the compiled replay for `duration`.
/// `think`: iterations of private work between two accesses (0: back to back).
pub fn run_variant(
    binary: &Path,
    variant: usize,
    duration: Duration,
    think: u32,
) -> Result<RunFigures, String> {
    let command = format!(
        "'{}' {variant} {} {think}",
        binary.display().to_string().replace('\'', "'\\''"),
        duration.as_millis().max(1)
    );
    let timeout = duration * 5 + Duration::from_secs(10);
    match super::run::run_shell(&command, Some(timeout)) {
        Ok(o) if o.status.success() => parse_output(&o.stdout.text()),
        Ok(o) => Err(format!(
            "the replay of variant {variant} {}: {}",
            o.status_words(),
            o.stderr.head().lines().next().unwrap_or("").trim()
        )),
        Err(super::run::Failure::Interrupted) => Err("interrupted".to_string()),
        Err(super::run::Failure::TimedOut(t)) => Err(format!(
            "the replay of variant {variant} ran past {} s",
            t.as_secs()
        )),
        Err(super::run::Failure::Spawn(e)) => Err(format!("cannot run the replay: {e}")),
    }
}

/// The order of runs over `variants` variants: `warmup` rounds then `runs` rounds, each
/// round every variant once, alternating forward and backward (A B, B A, A B, ...; with three,
/// A B C, C B A). Each entry is (variant, warm-up).
pub fn schedule(variants: usize, runs: usize, warmup: usize) -> Vec<(usize, bool)> {
    let mut out = Vec::new();
    for (count, w) in [(warmup, true), (runs, false)] {
        for k in 0..count {
            let order: Vec<usize> = if k % 2 == 0 {
                (0..variants).collect()
            } else {
                (0..variants).rev().collect()
            };
            out.extend(order.into_iter().map(|v| (v, w)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(name: &str, offset: u64, size: u64, align: u64) -> Unit {
        Unit {
            name: name.into(),
            members: vec![name.into()],
            member_indices: vec![],
            offset,
            size,
            align,
            natural_align: align,
        }
    }

    fn rs(unit: usize, loads: f64, stores: f64, rmw: f64, cpus: u32, path: &str) -> ReplayStream {
        ReplayStream {
            unit,
            inner: 0,
            size: 8,
            field: format!("f{unit}"),
            path: path.into(),
            loads,
            stores,
            rmw,
            cpus,
        }
    }

    #[test]
    fn threads_follow_the_cpu_spread() {
        assert_eq!(threads_for(160, 160, 2), 2);
        assert_eq!(threads_for(95, 160, 2), 2);
        assert_eq!(threads_for(61, 160, 2), 1);
        assert_eq!(threads_for(1, 160, 8), 1);
        assert_eq!(threads_for(40, 160, 8), 2);
        assert_eq!(threads_for(500, 160, 8), 8);
        assert_eq!(threads_for(0, 0, 4), 4);
    }

    #[test]
    fn assign_splits_a_stream_over_its_threads() {
        let streams = [
            rs(0, 10.0, 4.0, 0.0, 160, "a"),
            rs(1, 0.0, 0.0, 6.0, 1, "b"),
        ];
        let mix = assign(&streams, 160, 2);
        assert_eq!(mix.len(), 2);
        // Stream 0 on both threads, half each; stream 1 on thread 1 only.
        assert_eq!(
            mix[0],
            vec![
                Op {
                    stream: 0,
                    kind: OpKind::Load,
                    weight: 5.0
                },
                Op {
                    stream: 0,
                    kind: OpKind::Store,
                    weight: 2.0
                },
            ]
        );
        assert_eq!(mix[1].len(), 3);
        assert_eq!(
            mix[1][2],
            Op {
                stream: 1,
                kind: OpKind::Rmw,
                weight: 6.0
            }
        );
    }

    #[test]
    fn access_width_is_aligned_and_inside_the_bytes() {
        assert_eq!(access_width(8, 256), 8);
        assert_eq!(access_width(8, 260), 4);
        assert_eq!(access_width(4, 256), 4);
        assert_eq!(access_width(16, 8), 8);
        assert_eq!(access_width(3, 2), 2);
        assert_eq!(access_width(0, 1), 1);
    }

    #[test]
    fn schedule_alternates_direction() {
        let s: Vec<usize> = schedule(3, 2, 0).into_iter().map(|x| x.0).collect();
        assert_eq!(s, [0, 1, 2, 2, 1, 0]);
        let s = schedule(2, 2, 1);
        assert_eq!(
            s,
            [
                (0, true),
                (1, true),
                (0, false),
                (1, false),
                (1, false),
                (0, false)
            ]
        );
    }

    #[test]
    fn generated_c_has_exact_offsets_and_the_mix() {
        let units = [
            unit("a", 0, 8, 8),
            unit("{x/y}", 8, 4, 4),
            unit("b", 16, 8, 8),
            unit("cold", 24, 40, 8),
        ];
        let streams = [
            rs(0, 0.0, 5.0, 1.0, 2, "writer"),
            rs(2, 9.0, 0.0, 0.0, 2, "reader"),
        ];
        let variants = [
            Variant {
                name: "current".into(),
                placement: Placement {
                    offsets: vec![0, 8, 16, 24],
                    size: 64,
                    align: 8,
                },
            },
            Variant {
                name: "lineup".into(),
                placement: Placement {
                    offsets: vec![0, 8, 64, 16],
                    size: 128,
                    align: 8,
                },
            },
        ];
        let c = generate(&Replay {
            type_name: "demo",
            units: &units,
            streams: &streams,
            variants: &variants,
            profile_cpus: 2,
            threads: 2,
            cacheline_size: 64,
            evidence: "test",
        });
        assert!(c.contains("struct v0 {"), "{c}");
        assert!(
            c.contains("_Alignas(8) unsigned char b[8]; /* offset 64, line 1, hot */"),
            "{c}"
        );
        assert!(c.contains("unsigned char pad_56[8];"), "{c}");
        assert!(c.contains("unsigned char x_y[4];"), "{c}");
        assert!(
            c.contains("_Static_assert(offsetof(struct v1, b) == 64, \"v1: b\");"),
            "{c}"
        );
        assert!(c.contains("_Static_assert(sizeof(struct v1) == 128"), "{c}");
        assert!(
            !c.contains("offsetof(struct v1, cold)"),
            "cold members get no assert"
        );
        assert!(c.contains("{ 0, OP_STORE, 2.500000 }"), "{c}");
        assert!(c.contains("{ 0, OP_RMW, 0.500000 }"), "{c}");
        assert!(c.contains("{ 1, OP_LOAD, 4.500000 }"), "{c}");
        assert!(c.contains("offsetof(struct v1, b) + 0"), "{c}");
    }

    #[test]
    fn parse_output_reads_thread_lines() {
        let text = "thread 0 cpu 0 ops 1000 cpu_ns 500000000 wall_ns 1000000000 corun_ops 500 corun_ns 250000000\n\
                    thread 1 cpu 1 ops 3000 cpu_ns 1000000000 wall_ns 1000000000 corun_ops 0 corun_ns 0\n\
                    variant 0 current sink 1\n";
        let f = parse_output(text).unwrap();
        assert_eq!(f.threads.len(), 2);
        assert!((f.ops_per_cpu_second() - 5000.0).abs() < 1e-6);
        assert!((f.ops_per_wall_second() - 4000.0).abs() < 1e-6);
        assert!((f.ops_per_corun_second() - 2000.0).abs() < 1e-6);
        assert!((f.corun_share() - 0.125).abs() < 1e-12);
        assert!(parse_output("nothing").is_err());
        assert!(
            parse_output("thread 0 cpu 0 ops x cpu_ns 1 wall_ns 1 corun_ops 0 corun_ns 0").is_err()
        );
    }
}
