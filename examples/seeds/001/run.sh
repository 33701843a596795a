#!/usr/bin/env bash
# Seed 001 ("Idle balancer: cache align nohz structure", Tim Chen, 2011): the sketch written
# from the seed's prose, the replica recorded, the fix priced on the seed's 8-socket machine
# and on this one, and the replica measured here. About 15 s after the build.
#
#   bash examples/seeds/001/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --release --quiet
L=$PWD/target/release/lineup
D=$PWD/examples/seeds/001
SKETCH=$PWD/examples/sketches/seed001_nohz.toml
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
step() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }

cc -g -c "$D/nohz.c" -o nohz.o
step "1. the seed's prose as an access sketch, on struct nohz as Linux 3.1 declares it"
$L diagnose --type nohz --dwarf nohz.o --sketch "$SKETCH" | sed -n '1,12p'

step "2. the replica recorded (idle entry/exit and the busy tick on 2 threads)"
$L cc -O2 -g -pthread "$D/idle.c" -o idle_rec
$L record -o idle.json -- ./idle_rec current 100 2 50 >/dev/null
$L diagnose --type nohz --dwarf idle_rec --profile idle.json | sed -n '3,11p'

step "3. fix and predict on the seed's machine (8 sockets, 128 CPUs), with the seed's patch"
$L predict --type nohz --dwarf nohz.o --sketch "$SKETCH" --machine nehalem-ex-8s --layout "$D/seed_fix.h"

step "4. the same on this machine, and measured on the replica (current vs the seed's layout)"
$L predict --type nohz --dwarf nohz.o --sketch "$SKETCH" --machine host --layout "$D/seed_fix.h" | grep -E '^(layout|current|lineup|seed_fix)'
cc -O2 -pthread "$D/idle.c" -o idle
$L bench --a "./idle current 150 2 0" --b "./idle seed 150 2 0" --name seed --load 2-threads \
    --regex 'together transitions/s: ([0-9.]+)' --higher-is-better --runs 10 \
    --title "replica: seed's layout vs current" | sed -n '/^case load/,/^$/p;/^welch/,$p'
