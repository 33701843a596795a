#!/usr/bin/env bash
# The cost model's predicted change beside `lineup replay`'s measured change, for the same
# layouts, on this machine: once with the host's generic latencies (no calibration) and once
# with the latencies `lineup calibrate` measures here. Prints one Markdown table
# (docs/cost-model.md, "Prediction against measurement on this machine", holds one).
#
#   bash bench/model_vs_replay.sh            # RUNS=10 runs of 100 ms per layout
#   RUNS=20 QUICK=--quick bash bench/model_vs_replay.sh
#   MACHINE=machine.toml bash bench/model_vs_replay.sh   # a calibration already made here
#
# Nothing is written to lineup's cache: the calibration goes to a temporary file
# (--no-cache -o), read back with --machine FILE; the generic figures come from an empty cache.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
QUICK=${QUICK:-}
cargo build --release --quiet
L=$PWD/target/release/lineup
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/empty-cache"
BTF=data/vmlinux-6.18.44.btf

if [ -n "${MACHINE:-}" ]; then
    cp "$MACHINE" "$WORK/machine.toml"
else
    "$L" calibrate $QUICK --no-cache -o "$WORK/machine.toml" >"$WORK/calibrate.txt"
    sed -n '/^machine model/,/^$/p' "$WORK/calibrate.txt" >&2
fi

# name | type | evidence flags...
cases=(
    "seed000 c2c, lineup and seed fix|task_group|--c2c tests/data/c2c/seed000_paste.txt --layout examples/seeds/000/seed_fix.h"
    "seed003 cpupri_vec sketch, lineup and patch 1|cpupri_vec|--sketch examples/sketches/seed003_cpupri_vec.toml --layout examples/seeds/003/seed_fix_patch1_vec.h"
)
echo "| case | layout | predicted, generic host | predicted, calibrated | measured throughput (95% CI) | agree |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
    IFS='|' read -r name type evidence <<<"$c"
    # shellcheck disable=SC2086
    LINEUP_CACHE_DIR="$WORK/empty-cache" "$L" predict --type "$type" --btf $BTF $evidence \
        --machine host --json >"$WORK/guessed.json"
    # shellcheck disable=SC2086
    "$L" replay --type "$type" --btf $BTF $evidence --machine "$WORK/machine.toml" \
        --runs "$RUNS" --duration-ms 100 --json >"$WORK/replay.json" 2>/dev/null
    python3 - "$name" "$WORK/guessed.json" "$WORK/replay.json" <<'PY'
import json, sys
name, guessed, replay = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
generic = {l["name"] if "name" in l else l["layout"]: l.get("change_pct") for l in guessed["layouts"]}
for l in replay["layouts"][1:]:
    base = replay["layouts"][0]["summary"]["mean"]
    w = l.get("welch") or {}
    ci = (f"[{100 * w['ci_low'] / base:+.1f}%, {100 * w['ci_high'] / base:+.1f}%]"
          if "ci_low" in w else "-")
    p, m = l["predicted_change_pct"], l["measured_change_pct"]
    # replay's own rule (src/cli/replay.rs)
    if not l["significant"]:
        agree = "no diff" if abs(p) >= 1.0 else "yes"
    else:
        agree = "yes" if (p < 0) == (m > 0) and p != 0 else "NO"
    g = generic.get(l["layout"])
    print(f"| {name} | {l['layout']} | {g:+.1f}% | {p:+.1f}% | {m:+.1f}% {ci} | {agree} |")
PY
done
