#!/usr/bin/env bash
# The checks that need a many-CPU host, as one run for a lent machine (one LLC or more):
# lineup calibrate, the model against replay (bench/model_vs_replay.sh, with seed 003's patch
# 1 beside lineup's layout), and the seed replicas A/B on all CPUs (bench/seeds_ab.sh). Also
# says whether the host has a CPU PMU at all (perf c2c needs PEBS/IBS load latency).
#
#   bash bench/device_checks.sh                # RUNS=8
#   LINEUP=path/to/lineup RUNS=10 bash bench/device_checks.sh
#
# Where cargo is missing (a lent machine with no Rust), the scripts' `cargo build` is skipped
# and the carried binary target/release/lineup is used.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-8}
if ! command -v cargo >/dev/null; then
    shim=$(mktemp -d)
    printf '#!/bin/sh\nexit 0\n' >"$shim/cargo"
    chmod +x "$shim/cargo"
    export PATH="$shim:$PATH"
fi
[ -x target/release/lineup ] || { echo "target/release/lineup is missing" >&2; exit 2; }
echo "# bench/device_checks.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, RUNS=$RUNS"
grep -m1 'model name' /proc/cpuinfo
uname -r
cc --version | head -1
echo "# PMUs: $(ls /sys/bus/event_source/devices/ | tr '\n' ' ')"
[ -d /sys/bus/event_source/devices/cpu ] && echo "# a CPU PMU is present" || echo "# no CPU PMU: perf c2c record cannot run here"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/lineup calibrate --no-cache -o "$work/machine.toml" >"$work/calibrate.txt"
cat "$work/calibrate.txt"
echo "## bench/model_vs_replay.sh"
MACHINE=$work/machine.toml RUNS=$RUNS bash bench/model_vs_replay.sh
echo "## bench/seeds_ab.sh on $(nproc) threads"
THREADS=$(nproc) RUNS=$RUNS bash bench/seeds_ab.sh seed003 seed000 false-sharing
