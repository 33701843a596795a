#!/usr/bin/env bash
# Where `lineup record`'s time goes (issue 27 item 6): the two-counter microbenchmark with
# nothing between its increments (the overhead tail: 7.1x its plain CPU time on 8 threads of
# a 16-CPU host, 1.8-2.0x on 2), run plain, and recorded by default and with --sample 1,
# each under `perf record -e cpu-clock` (a software event: no PMU needed). Prints each run's
# CPU seconds and the symbols that take the most of the recorded runs' samples, by command
# (the program under the runtime, or lineup's post-processing).
#
#   bash bench/record_profile.sh [THREADS [ITERATIONS]]        # 8 100000000
#   PERF=path/to/perf LINEUP=path/to/lineup bash bench/record_profile.sh 8
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-8}
iters=${2:-100000000}
lineup=${LINEUP:-target/release/lineup}
perf=${PERF:-perf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# bench/record_profile.sh $threads $iters, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs"
LINEUP_CACHE_DIR="$work/cache" "$lineup" cc -O2 -pthread -Iexamples/record \
    examples/record/counters.c -o "$work/counters"
cpu() { # command...: its CPU seconds (user + system, children included)
    python3 -c '
import os, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
u = os.times()
print(f"{u.children_user + u.children_system:.2f}", p.returncode)' "$@"
}
echo "plain:              $(cpu "$work/counters" "$threads" "$iters" 0) (cpu s, exit)"
echo "record:             $(cpu "$lineup" record -o "$work/d.json" -- "$work/counters" "$threads" "$iters" 0)"
echo "record --sample 1:  $(cpu "$lineup" record --sample 1 -o "$work/e.json" -- "$work/counters" "$threads" "$iters" 0)"
for mode in default sample1; do
    args=()
    [ "$mode" = sample1 ] && args=(--sample 1)
    if ! "$perf" record -q -e cpu-clock -F 1999 -g -o "$work/$mode.data" -- \
        "$lineup" record "${args[@]}" -o "$work/$mode.json" -- "$work/counters" "$threads" "$iters" 0 \
        >/dev/null 2>"$work/perf.err"; then
        echo "perf record failed: $(tail -n 3 "$work/perf.err")"
        continue
    fi
    echo "## $mode: samples by command"
    "$perf" report -i "$work/$mode.data" --no-children --sort comm --stdio -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -n 5
    echo "## $mode: top symbols"
    "$perf" report -i "$work/$mode.data" --no-children --sort comm,sym --stdio -g none \
        --percent-limit 0.7 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 40
    echo "## $mode: by object"
    "$perf" report -i "$work/$mode.data" --no-children --sort comm,dso --stdio -g none \
        2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12
done
