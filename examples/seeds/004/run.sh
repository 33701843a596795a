#!/usr/bin/env bash
# Seed 004 ("sched/fair: optimize should_we_balance for higher SMT systems") on its replica:
# record the scan, diagnose the rq lines it reads, ask optimize/predict on the seed's POWER10,
# then A/B the baseline scan against the patched one as the seed's funclatency and schbench
# tables. Every figure is measured when it runs (a minute or two).
#
#   bash examples/seeds/004/run.sh            # work files in $OUT (default /tmp/lineup-seed004)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUT="${OUT:-/tmp/lineup-seed004}"
(cd "$ROOT" && cargo build --release --quiet)
L="$ROOT/target/release/lineup"
mkdir -p "$OUT"
cd "$OUT"

step() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }

step "0. build the replica: instrumented for lineup record, plain for timing"
"$L" cc -O2 -pthread "$HERE/swb.c" -o swb-rec
cc -O2 -pthread "$HERE/swb.c" -o swb
echo "built $OUT/swb-rec and $OUT/swb"

step "1. measure: record the baseline scan, 12 busy CPUs (one per core), 5000 calls"
"$L" record -v -o busy12.json -- ./swb-rec baseline busy:12 5000 | grep '^avg'
"$L" record -o busy12-patched.json -- ./swb-rec patched busy:12 5000 | grep '^avg'

step "2. attribute and explain: struct rq's line, as the scan reads it"
"$L" diagnose --type rq --dwarf swb-rec --profile busy12.json | sed -n '1,12p'
python3 - <<'PY'
import json
def loads(path, fn):
    p = json.load(open(path))
    return sum(a["counts"].get("loads", 0) for t in p["types"] if t["type_name"] == "rq"
               for a in t["accesses"] if a["code"]["symbol"] == fn)
b = loads("busy12.json", "should_we_balance_baseline")
a = loads("busy12-patched.json", "should_we_balance_patched")
print(f"rq loads per call (recorded): baseline {b/5000:.0f}, patched {a/5000:.0f}")
PY

step "3. fix? optimize and predict on the seed's machine (POWER10, 96 CPUs)"
"$L" optimize --type rq --dwarf swb-rec --profile busy12.json --machine power10-96 | sed -n '1,12p'

step "4. prove: funclatency of the scan, baseline (A) vs patched (B), per workload"
"$L" bench --matrix "$HERE/funclatency.toml" | awk '/^workload A B/{on=1} on{print} on&&/^runs:/{exit}'

step "5. prove: latency percentiles in schbench's format, busy:12 and busy:48"
for w in busy:12 busy:48; do
    "$L" bench --a "./swb baseline $w 20000" --b "./swb patched $w 20000" --parser schbench \
        --name scan --load "$w" --runs 6 --title should_we_balance | sed -n '/A B(%gain)/,/^runs/p'
done
