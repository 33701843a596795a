#!/usr/bin/env bash
# Seed 000 ("sched/task_group: Re-layout structure to reduce false sharing", Deng Pan, 2023)
# through the whole loop, from the seed's own evidence: its perf c2c paste and the kernel's
# BTF (the running kernel's when it can be read, else the bundled 6.18 one). Everything
# printed is computed on the spot; nothing is canned. About a minute on 2 CPUs.
#
#   bash examples/seeds/000/run.sh        (also: bash examples/tour.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --release --quiet
L=$PWD/target/release/lineup
D=examples/seeds/000
C2C=tests/data/c2c/seed000_paste.txt
EVIDENCE=(--type task_group --c2c "$C2C")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Bold headings only on a terminal, and never when NO_COLOR is set (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
    step() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }
else
    step() { printf '\n== %s\n\n' "$*"; }
fi

step "1. measure: the seed's perf c2c paste (160 CPUs, Ice Lake 2S), read into one profile"
$L import --c2c "$C2C" -o "$WORK/profile.json"
grep -c '"offset"' "$WORK/profile.json" | sed 's/$/ accesses (offset, function, loads, stores, HITM, CPUs) in the profile/'
if [ -e /sys/kernel/btf/vmlinux ]; then
    echo "types: this kernel's BTF (/sys/kernel/btf/vmlinux; lineup says so if it falls back to data/)"
else
    echo "types: the bundled 6.18 kernel BTF (data/vmlinux-6.18.44.btf; this kernel has no BTF)"
fi

step "2. attribute and explain: which fields of struct task_group share the hot line"
$L diagnose "${EVIDENCE[@]}" | sed -n '1,12p'

step "3. fix: lineup's layout on the seed's machine, as a patch of the kernel-style header"
$L optimize "${EVIDENCE[@]}" --machine icelake-2s --header $D/task_group.h | sed -n '1,10p;/^--- a/,$p'

step "4. predict: current vs lineup vs the seed's own patch, on the seed's machine and on this one"
$L predict "${EVIDENCE[@]}" --machine icelake-2s --layout $D/seed_fix.h
echo
$L predict "${EVIDENCE[@]}" --machine host --layout $D/seed_fix.h | grep -E '^(struct|layout|current|lineup|seed_fix)'

step "5a. prove: replay the c2c access mix on this machine's cores (update_load_avg's stores are atomic_long_add)"
$L replay "${EVIDENCE[@]}" --atomic update_load_avg --atomic __update_blocked_fair \
    --layout $D/seed_fix.h --runs 8 --duration-ms 150 | sed -n '/^case load/,$p'

step "5b. prove: the replica of the hot path (set_task_cpu, update_load_avg, update_cfs_group), current against lineup's layout and against the seed's, two A/B tables"
cc -O2 -pthread $D/task_group.c -o "$WORK/tg"
for b in lineup seed; do
    (cd "$WORK" && $L bench --a "./tg current 150 2 0" --b "./tg $b 150 2 0" --name "$b" --load 2-threads \
        --regex 'together wakeups/s: ([0-9.]+)' --higher-is-better --runs 10 --title "replica: $b vs current" \
        | sed -n '/^case load/,/^$/p;/^welch/,$p')
done
