#!/usr/bin/env bash
# Seed 002 (SHARED_RUNQ, "sched: Shard per-LLC shared runqueues") in one command:
# record the replica with one shard -> diagnose -> optimize (host, then the seed's spr-1s)
# -> the shard-count sweep measured on this machine. About a minute.
#
#   bash examples/seeds/002/run.sh            # from the repository root
#   LINEUP=/path/to/lineup bash examples/seeds/002/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
if [ -z "${LINEUP:-}" ]; then
    (cd "$repo" && cargo build --release --quiet)
    LINEUP="$repo/target/release/lineup"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
step() { printf '\n$ %s\n' "$*"; "$@"; }

# 1. the evidence: one shard, two threads (one per CPU here), recorded
step "$LINEUP" cc -O2 -pthread "$here/shared_runq.c" -o shared_runq_rec
step "$LINEUP" record -o seed002.profile.json -- ./shared_runq_rec 1 2 200000
# the committed profile (README) was made by exactly these two commands; diagnose it too
step "$LINEUP" diagnose --type shared_runq_shard --dwarf shared_runq_rec --profile seed002.profile.json
# 2. the fix: a layout cannot remove true sharing; lineup keeps the lock with its list and
#    prices splitting the queue into shards
step "$LINEUP" optimize --type shared_runq_shard --dwarf shared_runq_rec --profile seed002.profile.json --machine host
step "$LINEUP" optimize --type shared_runq_shard --dwarf shared_runq_rec --profile seed002.profile.json --machine spr-1s
# 2b. what sharding costs under the seed's own load (56 tasks on 112 CPUs): finding work
#     across shards gives the sweep an optimum
step cc -g -c "$here/shared_runq.c" -o shared_runq.o
step "$LINEUP" optimize --type shared_runq_shard --dwarf shared_runq.o --sketch "$repo/examples/sketches/seed002_shared_runq.toml" --machine spr-1s --queued 56
# 3. the proof: 1 shard (A) against 2, 4 and 8 shards (B), interleaved, on this machine
step cc -O2 -pthread "$here/shared_runq.c" -o shared_runq
step "$LINEUP" bench --matrix "$here/sweep.toml" --runs "${RUNS:-8}"
