#!/usr/bin/env bash
# Regenerates every measured figure of README.md and examples/seeds/*/README.md, repeated so
# that each figure is shown as a median and a range over the repeats with how many of them
# found it significant, dated, with the machine beside it, and said in words when it is this
# machine's noise (bench/readme_figures.py renders the blocks). A figure in those READMEs that
# is measured lies between `<!-- figures: KEY -->` and `<!-- /figures -->`; no measured figure
# is written anywhere else in them. Modeled figures (predict, optimize: cycles of the cost
# model) are not measured: they are the same on every run and machine, and run.sh prints them.
#
#   bash bench/readme_numbers.sh                 # measure, print the blocks
#   bash bench/readme_numbers.sh --write         # and rewrite them in the READMEs
#   REPEATS=5 RUNS=20 bash bench/readme_numbers.sh --write
#
# What one repeat runs: bench/seeds_ab.sh (every A/B of the README and the seeds, RUNS runs
# per side), bench/layout_vs_pahole.py --runs 30, bench/record_overhead.py --runs 1, and the
# tour (examples/tour.sh) timed. About 15 minutes a repeat on 2 CPUs; REPEATS=3 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-3}
export RUNS=${RUNS:-10}
WRITE=()
for a in "$@"; do
    case $a in
    --write) WRITE=(--write) ;;
    *)
        echo "readme_numbers.sh: unknown argument '$a' (--write; REPEATS=N RUNS=N in the environment)" >&2
        exit 2
        ;;
    esac
done
cargo build --release --quiet
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "readme_numbers.sh: results in $OUT" >&2

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
virt=$(grep -qw hypervisor /proc/cpuinfo && echo ", a virtual machine" || true)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

for r in $(seq 1 "$REPEATS"); do
    echo "readme_numbers.sh: repeat $r of $REPEATS" >&2
    bash bench/seeds_ab.sh >"$OUT/ab.$r.txt"
    python3 bench/layout_vs_pahole.py --runs 30 >"$OUT/pahole.$r.txt"
    python3 bench/record_overhead.py --runs 1 >"$OUT/record.$r.txt"
    t0=$EPOCHREALTIME
    NO_COLOR=1 bash examples/tour.sh >"$OUT/tour_output.$r.log" 2>&1
    python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$t0" "$EPOCHREALTIME" >"$OUT/tour.$r.txt"
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "measured by bash bench/readme_numbers.sh, $started, $REPEATS repeats ($RUNS runs a side in each A/B) on $(nproc) CPUs ($cpu$virt), Linux $(uname -r); load average $load_before before, $load_after after. On 2 CPUs shared with other work, a change that is not significant in every repeat is noise." >"$OUT/meta.txt"
python3 bench/readme_figures.py "$OUT" "${WRITE[@]}"
