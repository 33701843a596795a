#!/usr/bin/env bash
# Seed 000 ("sched/task_group: Re-layout structure to reduce false sharing", Deng Pan, 2023)
# through the whole loop, from the seed's own evidence: its perf c2c paste and the kernel's
# BTF (the running kernel's when it can be read, else the bundled 6.18 one). Everything
# printed is computed on the spot; nothing is canned. About a minute on 2 CPUs.
#
#   bash examples/seeds/000/run.sh        (also: bash examples/tour.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."
# A C compiler and Rust, installed when missing (the same script as scripts/test.sh's).
. scripts/setup.sh tour
cargo build --release --quiet
L=$PWD/target/release/lineup
echo "lineup built: $L (to have it on PATH: cargo install --path .)"
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

# After each step, one line: what was measured, what was modeled, how sure lineup is. The
# figures in it are read from what the step just printed.
means() { printf '\n=> %s\n' "$*"; }
row() { awk -v r="$1" '$1 == r { print $NF; exit }' "$2"; }

step "1. measure: the seed's perf c2c paste (160 CPUs, Ice Lake 2S), read into one profile"
$L import --c2c "$C2C" -o "$WORK/profile.json"
grep -c '"offset"' "$WORK/profile.json" | sed 's/$/ accesses (offset, function, loads, stores, HITM, CPUs) in the profile/'
if [ -e /sys/kernel/btf/vmlinux ]; then
    echo "types: this kernel's BTF (/sys/kernel/btf/vmlinux; lineup says so if it falls back to data/)"
else
    echo "types: the bundled 6.18 kernel BTF (data/vmlinux-6.18.44.btf; this kernel has no BTF)"
fi
means "measured: on the seed's 160-CPU machine, not here: c2c's sampled loads, stores and HITMs (a sample, not every access); modeled: nothing yet"

step "2. attribute and explain: which fields of struct task_group share the hot line"
$L diagnose "${EVIDENCE[@]}" | sed -n '1,12p' | tee "$WORK/diagnose.txt"
place="the line's place in the struct is exact (bound from the code)"
grep -q 'of the struct (inferred)' "$WORK/diagnose.txt" &&
    place="the line's place in the struct is inferred from the members' types (other placements fit too; --vmlinux binds it from the code)"
means "measured: the counts per member are the paste's; modeled: nothing (the verdict follows from who writes and who reads); how sure: $place"

step "3. fix: lineup's layout on the seed's machine, as a patch of the kernel-style header"
# The heading lines, the cost table and the patch (the binding is step 2's).
$L optimize "${EVIDENCE[@]}" --machine icelake-2s --header $D/task_group.h |
    sed -n '/^layout from/p;/^struct [^{]* on /p;/^queueing/p;/^search/p;/^layout  *size/,/^$/p;/^moved/p;/^--- a/,$p' |
    tee "$WORK/optimize.txt"
means "modeled, not measured: lineup's $(row lineup "$WORK/optimize.txt" || true) is the change of cache-line transfer cycles the cost model counts on icelake-2s at the paste's rates (docs/cost-model.md), not a speed-up: the kernel spends most of its time elsewhere; nothing ran"

step "4. predict: current vs lineup vs the seed's own patch, on the seed's machine and on this one"
$L predict "${EVIDENCE[@]}" --machine icelake-2s --layout $D/seed_fix.h | tee "$WORK/predict.txt"
echo
$L predict "${EVIDENCE[@]}" --machine host --layout $D/seed_fix.h | grep -E '^(struct|layout|current|lineup|seed_fix)' | tee "$WORK/predict_host.txt"
guessed=measured
grep -q 'latencies guessed' "$WORK/predict_host.txt" && guessed="guessed (no lineup calibrate for this CPU)"
means "modeled, not measured: the seed's fix $(row seed_fix.h "$WORK/predict.txt") and lineup's $(row lineup "$WORK/predict.txt") of transfer cycles on icelake-2s; on this machine $(row lineup "$WORK/predict_host.txt"), its latencies $guessed; as sure as the model: equal figures mean the two fixes remove the same transfers"

step "5a. prove: replay the c2c access mix on this machine's cores (update_load_avg's stores are atomic_long_add)"
$L replay "${EVIDENCE[@]}" --atomic update_load_avg --atomic __update_blocked_fair \
    --layout $D/seed_fix.h --runs 8 --duration-ms 150 | sed -n '/^case load/,$p' | tee "$WORK/replay.txt"
sig=$(grep -cE '^[^ ]+ 2-threads .*\] \*$' "$WORK/replay.txt" || true)
means "measured here: operations/s of a C microbenchmark replaying the paste's accesses on this machine's 2 threads (not the kernel); modeled: the 'predicted' column; agree: yes means only 'significant and in the predicted direction', not the same size (cycles against throughput); how sure: ${sig:-0} of 2 changes significant (Welch, p < 0.05, 8 runs of 150 ms); on a 2-CPU VM shared with other work, a change without * is noise"

step "5b. prove: the replica of the hot path (set_task_cpu, update_load_avg, update_cfs_group), current against lineup's layout and against the seed's, two A/B tables"
cc -O2 -pthread $D/task_group.c -o "$WORK/tg"
for b in lineup seed; do
    (cd "$WORK" && $L bench --a "./tg current 150 2 0" --b "./tg $b 150 2 0" --name "$b" --load 2-threads \
        --regex 'together wakeups/s: ([0-9.]+)' --higher-is-better --runs 10 --title "replica: $b vs current" \
        | sed -n '/^case load/,/^$/p;/^welch/,$p')
done | tee "$WORK/replica.txt"
sig=$(grep -cE '^[^ ]+ 2-threads .*\] \*$' "$WORK/replica.txt" || true)
means "measured here: wakeups/s of a C replica of the three kernel paths on 2 threads (not the kernel, and with nothing else between wakeups, so the line is all it does); modeled: nothing; how sure: ${sig:-0} of 2 changes significant (Welch, p < 0.05, 10 runs a side); the size is the replica's, not the kernel's (the seed measured ~9.6% on its benchmark)"
