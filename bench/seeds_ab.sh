#!/usr/bin/env bash
# The significance claims that used to be test assertions, measured side by side: every A/B
# the tests run only for what is deterministic (the runs are read, the figures defined) is run
# here with enough runs to judge, and printed as one line per comparison: the change of B
# against A, its 95% confidence interval, Welch's p, and whether it is significant. Timing
# outcomes on a shared machine belong here, not in `cargo test`.
#
#   bash bench/seeds_ab.sh              # RUNS=10 per side (about 5 minutes on 2 CPUs)
#   RUNS=20 bash bench/seeds_ab.sh      # tighter intervals
#   THREADS=16 bash bench/seeds_ab.sh   # the replicas on 16 threads (default 2, as the READMEs quote)
#   bash bench/seeds_ab.sh false-sharing seed002   # some comparisons only
#
# Comparisons: aa-hackbench, aa-perf-pipe (A against itself: expect not significant),
# false-sharing (examples/ab, padded vs adjacent), false-sharing-pair (padded to a pair of
# lines vs to one line, and vs adjacent), whole-loop (the same pair, fixed by
# lineup's patch: see tests/whole_loop.rs), seed000 (replica, lineup's layout and the seed's vs
# current), seed001 (replica, the seed's layout vs current, without and with private work),
# seed002 (2 shards vs 1), seed003 (patch 1 vs baseline, with and without
# CONFIG_CPUMASK_OFFSTACK), seed004 (patched scan vs baseline, busy:12 and idle), replay-aa,
# replay and replay-atomic (lineup replay of seed 000's c2c profile: current against itself,
# lineup's layout against current, and the same with its atomic_long_adds replayed as atomics,
# as the tour's step 5a does). bench/readme_numbers.sh runs this several times for the figures
# of README.md and the seeds' READMEs.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
T=${THREADS:-2}
cargo build --release --quiet
L=$PWD/target/release/lineup
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
want() { [ $# -eq 0 ] || [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
ONLY="$*"

# One line from a `lineup bench --json` (or replay --json) report on stdin.
summarize() {
    python3 -c '
import json, sys
name, metric = sys.argv[1], sys.argv[2]
r = json.load(sys.stdin)
if "comparisons" in r:
    cs = [c for c in r["comparisons"] if (c["metric"] == metric if metric else c["primary"])]
    c = cs[0]
    a, w, ch, sig, n = c["a"]["mean"], c["welch"], c["change_pct"], c["significant"], c["a"]["n"]
    better = "higher" if c["direction"] == "higher-is-better" else "lower"
else:
    l = r["layouts"][1]
    a, w, ch, sig, n = r["layouts"][0]["summary"]["mean"], l["welch"], l["measured_change_pct"], l["significant"], len(l["runs"])
    better = "higher"
lo, hi = (w["ci_low"] / abs(a) * 100, w["ci_high"] / abs(a) * 100) if w and a else (float("nan"),) * 2
p = w["p"] if w else float("nan")
verdict = "significant" if sig else "n.s."
ch = float("nan") if ch is None else ch
print(f"{name:<22} {ch:+8.2f}%  95% CI [{lo:+.2f}%, {hi:+.2f}%]  p={p:<9.3g} {verdict:<11} n={n}/side  ({better} is better)")
' "$1" "${2:-}"
}

bench() { # name, then lineup bench arguments
    local name=$1
    shift
    (cd "$WORK" && "$L" bench "$@" --runs "$RUNS" --json) | summarize "$name"
}

perf_bin() {
    for p in perf /usr/bin/perf_* /usr/lib/linux-tools*/perf; do
        if "$p" bench sched pipe -l 100 >/dev/null 2>&1; then
            echo "$p"
            return
        fi
    done
    echo "no working perf (apt-get install linux-perf)" >&2
    exit 1
}

echo "# bench/seeds_ab.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, replicas on $T threads, $RUNS runs per side, interleaved A B B A"
echo "# name                   change   95% CI of (B - A) / A     p         verdict"

if want aa-hackbench; then
    bench aa-hackbench --a "hackbench -l 200 -g 1" --b "hackbench -l 200 -g 1" --parser hackbench
fi
if want aa-perf-pipe; then
    P=$(perf_bin)
    bench aa-perf-pipe --a "$P bench sched pipe -l 2000" --b "$P bench sched pipe -l 2000" \
        --parser perf-sched-pipe
fi
if want false-sharing || want whole-loop || want false-sharing-pair; then
    cc -O2 -pthread -o "$WORK/fs_a" examples/ab/false_sharing.c
    cc -O2 -pthread -DPADDED -o "$WORK/fs_b" examples/ab/false_sharing.c
    cc -O2 -pthread -DPADDED_PAIR -o "$WORK/fs_pair" examples/ab/false_sharing.c
fi
if want false-sharing; then
    bench false-sharing --a ./fs_a --b ./fs_b --regex 'cpu: ([0-9.]+) s' --lower-is-better
fi
if want false-sharing-pair; then
    # Each counter on an aligned pair of lines of its own, against one line each and against
    # none (the adjacent-line prefetcher: docs/cost-model.md).
    bench false-sharing-pair --a ./fs_b --b ./fs_pair --regex 'cpu: ([0-9.]+) s' --lower-is-better
    bench false-sharing-pair-vs-none --a ./fs_a --b ./fs_pair --regex 'cpu: ([0-9.]+) s' --lower-is-better
fi
if want whole-loop; then
    # The loop of tests/whole_loop.rs: record, optimize writes the patch, apply, A/B.
    mkdir -p "$WORK/wl/a" "$WORK/wl/b"
    cp examples/ab/false_sharing.c "$WORK/wl/a/"
    cp examples/ab/false_sharing.c "$WORK/wl/b/"
    (cd "$WORK/wl" && "$L" cc -O2 -pthread a/false_sharing.c -o rec &&
        "$L" record -o p.json -- ./rec 2000000 >/dev/null &&
        "$L" optimize --type counters --dwarf rec --profile p.json --machine host \
            --header b/false_sharing.c --diff-path false_sharing.c --patch fix.diff >/dev/null &&
        (cd b && patch -s -p1 <../fix.diff) &&
        cc -O2 -pthread a/false_sharing.c -o fs_a && cc -O2 -pthread b/false_sharing.c -o fs_b)
    (cd "$WORK/wl" && "$L" bench --a "./fs_a 5000000" --b "./fs_b 5000000" \
        --regex 'cpu: ([0-9.]+) s' --lower-is-better --runs "$RUNS" --json) | summarize whole-loop
fi
if want seed000; then
    cc -O2 -pthread -o "$WORK/tg" examples/seeds/000/task_group.c
    bench seed000-lineup --a "./tg current 150 $T 0" --b "./tg lineup 150 $T 0" \
        --regex 'together wakeups/s: ([0-9.]+)' --higher-is-better
    bench seed000-seed --a "./tg current 150 $T 0" --b "./tg seed 150 $T 0" \
        --regex 'together wakeups/s: ([0-9.]+)' --higher-is-better
fi
if want seed001; then
    cc -O2 -pthread -o "$WORK/idle" examples/seeds/001/idle.c
    bench seed001-seed --a "./idle current 150 $T 0" --b "./idle seed 150 $T 0" \
        --regex 'together transitions/s: ([0-9.]+)' --higher-is-better
    bench seed001-seed-work --a "./idle current 150 $T 100" --b "./idle seed 150 $T 100" \
        --regex 'together transitions/s: ([0-9.]+)' --higher-is-better
fi
if want seed002; then
    cc -O2 -pthread -o "$WORK/shared_runq" examples/seeds/002/shared_runq.c
    bench seed002-2-shards --a "./shared_runq 1 $T 1000000" --b "./shared_runq 2 $T 1000000" \
        --regex 'throughput: ([0-9.]+) ops/s' --higher-is-better
fi
if want seed003; then
    cc -O2 -pthread -DCPUMASK_OFFSTACK -o "$WORK/cpupri" examples/seeds/003/cpupri.c
    bench seed003-patch1 --a "./cpupri baseline $T 600000" --b "./cpupri patched $T 600000" \
        --regex 'together ops/s: ([0-9.]+)' --higher-is-better
    cc -O2 -pthread -o "$WORK/cpupri_inline" examples/seeds/003/cpupri.c
    bench seed003-inline --a "./cpupri_inline baseline $T 600000" --b "./cpupri_inline patched $T 600000" \
        --regex 'together ops/s: ([0-9.]+)' --higher-is-better
fi
if want seed004; then
    cc -O2 -pthread -o "$WORK/swb" examples/seeds/004/swb.c
    for w in busy:12 idle; do
        bench "seed004-$w" --a "./swb baseline $w 20000" --b "./swb patched $w 20000" \
            --parser funclatency
    done
fi
if want replay-aa || want replay || want replay-atomic; then
    R=(replay --type task_group --btf data/vmlinux-6.18.44.btf --c2c tests/data/c2c/seed000_paste.txt
        --runs "$RUNS" --duration-ms 200 --json)
fi
if want replay-aa; then
    "$L" "${R[@]}" --self-test | summarize replay-aa
fi
if want replay; then
    "$L" "${R[@]}" | summarize replay-lineup
fi
if want replay-atomic; then
    "$L" "${R[@]}" --atomic update_load_avg --atomic __update_blocked_fair | summarize replay-atomic
fi
