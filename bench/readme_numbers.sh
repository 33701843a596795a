#!/usr/bin/env bash
# Regenerates the measured numbers README.md shows, each block under the heading it goes
# with, dated: the false-sharing A/B table ("Benchmark A/B"), the replay of seed 000's profile
# and its self-test, the whole loop's A/B ("Record userspace"), lineup layout --all against
# pahole and the recording overhead ("Benchmark"). Paste the blocks into README.md and update
# its "measured on" date. Timing figures: they vary from machine to machine and run to run.
#
#   bash bench/readme_numbers.sh          # about 5 minutes on 2 CPUs
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
L=$PWD/target/release/lineup
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
block() { printf '\n### %s\n\n' "$*"; }

echo "# bench/readme_numbers.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"

block "A/B: false sharing, padded (B) against adjacent (A), lineup bench --runs 10"
cc -O2 -pthread -o "$WORK/fs_adjacent" examples/ab/false_sharing.c
cc -O2 -pthread -DPADDED -o "$WORK/fs_padded" examples/ab/false_sharing.c
"$L" bench --a "$WORK/fs_adjacent" --b "$WORK/fs_padded" --regex 'cpu: ([0-9.]+) s' \
    --lower-is-better --name false-sharing --load 2-threads --runs 10

R=(replay --type task_group --btf data/vmlinux-6.18.44.btf --c2c tests/data/c2c/seed000_paste.txt)
block "replay: seed 000's task_group, lineup's layout against current, --runs 20"
"$L" "${R[@]}" --runs 20
block "replay: the same with --atomic update_load_avg, --runs 10"
"$L" "${R[@]}" --atomic update_load_avg --runs 10 | sed -n '/^case load/,/^$/p;/^welch/,/^$/p'
block "replay: the harness against itself, --self-test --runs 20"
"$L" "${R[@]}" --self-test --runs 20 | sed -n '/^case load/,/^$/p;/^welch/,/^$/p'

block "whole loop: record, optimize writes the patch, apply, A/B (tests/whole_loop.rs's steps)"
mkdir -p "$WORK/wl/a" "$WORK/wl/b"
cp examples/ab/false_sharing.c "$WORK/wl/a/"
cp examples/ab/false_sharing.c "$WORK/wl/b/"
(
    cd "$WORK/wl"
    "$L" cc -O2 -pthread a/false_sharing.c -o rec
    "$L" record -o p.json -- ./rec 2000000 >/dev/null
    "$L" optimize --type counters --dwarf rec --profile p.json --machine host \
        --header b/false_sharing.c --diff-path false_sharing.c --patch fix.diff >/dev/null
    (cd b && patch -s -p1 <../fix.diff)
    cc -O2 -pthread a/false_sharing.c -o fs_a
    cc -O2 -pthread b/false_sharing.c -o fs_b
    "$L" bench --a ./fs_a --b ./fs_b --regex 'cpu: ([0-9.]+) s' --lower-is-better \
        --load 2-threads --runs 10 | sed -n '/^case load/,/^$/p;/^welch/,/^$/p'
)

block "lineup layout --all against pahole (python3 bench/layout_vs_pahole.py --runs 30)"
python3 bench/layout_vs_pahole.py --runs 30 | tail -n 6
block "recording overhead (python3 bench/record_overhead.py)"
python3 bench/record_overhead.py | tail -n 14
