#!/usr/bin/env bash
# The whole loop on seed 000 ("sched/task_group: Re-layout structure to reduce false sharing"),
# from the seed's own c2c paste and the kernel's BTF (the running kernel's, else the bundled
# 6.18 one). Everything printed is computed by lineup on the spot.
#
#   bash examples/tour.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
L=./target/release/lineup
EVIDENCE=(--type task_group --c2c tests/data/c2c/seed000_paste.txt)

step() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }

step "1. measure: seed 000's perf c2c paste, read into one access profile"
$L import --c2c tests/data/c2c/seed000_paste.txt | head -c 600; echo " ..."

step "2. attribute and explain: which fields of struct task_group share the hot line"
$L diagnose "${EVIDENCE[@]}" | head -20

step "3. fix: lineup's layout on the seed's machine (Ice Lake 2S, 160 CPUs)"
$L optimize "${EVIDENCE[@]}" --machine icelake-2s | sed -n '1,10p;/^C declaration/,/^};/p'

step "4. predict: current vs lineup vs the seed's own patch"
$L predict "${EVIDENCE[@]}" --machine icelake-2s --layout examples/seeds/000/seed_fix.h

step "5. prove: replay the access mix on this machine's cores, current vs lineup"
$L replay "${EVIDENCE[@]}" --runs 6 --duration-ms 100 | sed -n '1,20p'
