#!/usr/bin/env bash
# The adjacent-line (spatial) prefetcher on this machine, measured three ways side by side:
# `lineup calibrate`'s two-writer figures (one line, one aligned pair, two pairs apart) and
# the pair share it derives; examples/ab/false_sharing.c built adjacent, padded to a line
# and padded to a pair, A/B on the two CPUs calibrate kept; and the whole loop (record,
# optimize with the calibrated host, patch, A/B) on those CPUs. The model's choice (one
# line or a pair apart) should be the build that measures fastest.
#
#   bash bench/adjacent_lines.sh            # RUNS=8 per side
#   RUNS=20 bash bench/adjacent_lines.sh
#
# Nothing is written to lineup's cache: the calibration goes to a temporary cache directory.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-8}
cargo build --release --quiet
L=$PWD/target/release/lineup
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export LINEUP_CACHE_DIR=$WORK/cache
mkdir -p "$LINEUP_CACHE_DIR"

"$L" calibrate -o "$WORK/machine.toml" >"$WORK/calibrate.txt"
echo "# bench/adjacent_lines.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $RUNS runs per side"
sed -n '/^two writers/,/^$/p' "$WORK/calibrate.txt"
grep -E 'adjacent lines|pair_share|adjacent_line_pairs' "$WORK/calibrate.txt" || true
read -r A B < <(python3 -c '
import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))["calibration"]
n = c.get("neighbours") or []
print(*(n[0]["cpus"][0] if n else [0, 1]))' "$WORK/machine.toml")
echo "# CPUs $A and $B"

cc -O2 -pthread -o "$WORK/fs_none" examples/ab/false_sharing.c
cc -O2 -pthread -DPADDED -o "$WORK/fs_line" examples/ab/false_sharing.c
cc -O2 -pthread -DPADDED_PAIR -o "$WORK/fs_pair" examples/ab/false_sharing.c
ab() { # name, A, B
    (cd "$WORK" && "$L" bench --a "$2" --b "$3" --regex 'cpu: ([0-9.]+) s' --lower-is-better \
        --runs "$RUNS" --json) | python3 -c '
import json, sys
c = json.load(sys.stdin)["comparisons"][0]
a, w = c["a"]["mean"], c["welch"]
lo, hi = (100 * w["ci_low"] / a, 100 * w["ci_high"] / a) if w and a else (float("nan"),) * 2
verdict = "significant" if c["significant"] else "n.s."
ch = c["change_pct"]
print(f"{sys.argv[1]:<28} {ch:+8.2f}%  95% CI [{lo:+.2f}%, {hi:+.2f}%]  {verdict}  (CPU time, lower is better)")' "$1"
}
N=20000000
ab "line-padded vs none" "./fs_none $N $A $B" "./fs_line $N $A $B"
ab "pair-padded vs none" "./fs_none $N $A $B" "./fs_pair $N $A $B"
ab "pair-padded vs line-padded" "./fs_line $N $A $B" "./fs_pair $N $A $B"

mkdir -p "$WORK/wl/a" "$WORK/wl/b"
cp examples/ab/false_sharing.c "$WORK/wl/a/"
cp examples/ab/false_sharing.c "$WORK/wl/b/"
(cd "$WORK/wl" && "$L" cc -O2 -pthread a/false_sharing.c -o rec &&
    "$L" record -o p.json -- ./rec 2000000 "$A" "$B" >/dev/null &&
    "$L" optimize --type counters --dwarf rec --profile p.json --machine host \
        --header b/false_sharing.c --diff-path false_sharing.c --patch fix.diff |
    grep -E '^(instance|search|hot lines)' || true
    (cd b && patch -s -p1 <../fix.diff) &&
    cc -O2 -pthread a/false_sharing.c -o fs_a && cc -O2 -pthread b/false_sharing.c -o fs_b)
grep -o '_Alignas([0-9]*)' "$WORK/wl/b/false_sharing.c" | head -1 | sed 's/^/# the patch: /'
ab "whole loop: patched vs none" "./wl/fs_a $N $A $B" "./wl/fs_b $N $A $B"
