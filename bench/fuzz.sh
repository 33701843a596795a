#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each and reports, per target, the executions, the
# corpus size and the crashes found.
#
#   bash bench/fuzz.sh 120            # every target, 120 s each
#   bash bench/fuzz.sh 60 btf dwarf   # only these targets
#
# The corpus of each target grows in fuzz/corpus/<target> (the seeds are committed; inputs
# the fuzzer adds are named by their SHA-1 and ignored by git). A crash, timeout or
# out-of-memory input is copied to fuzz/corpus/<target>/regress-<kind>-<hash>, which
# tests/fuzz_corpus.rs replays through the same stages (lineup::stages) on stable Rust:
# commit it with the fix. Needs the nightly toolchain and cargo-fuzz, installed here when
# missing. Each target runs with one job; the machine may be shared.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-}
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: bash bench/fuzz.sh SECONDS [TARGET...]" >&2
    exit 2
fi
shift

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

cargo +nightly fuzz build -O

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
printf '%-12s %10s %8s %8s %s\n' target execs exec/s corpus crashes
total_crashes=0
for t in "${targets[@]}"; do
    # A `*_read` target (the reader alone) shares the corpus of its full target.
    corpus=fuzz/corpus/${t%_read}
    artifacts=fuzz/artifacts/$t
    # Inputs up to 1 MiB for the readers alone (they run thousands a second, and lines and
    # counts near lineup's bounds are reachable), 64 KiB where every input runs the optimizer.
    case $t in
        *_read) max_len=1048576 ;;
        *) max_len=65536 ;;
    esac
    mkdir -p "$corpus" "$artifacts"
    before=$(find "$artifacts" -type f | wc -l)
    # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: runaway memory.
    cargo +nightly fuzz run -O "$t" "$corpus" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
        -print_final_stats=1 >"$logs/$t.log" 2>&1 || true
    execs=$(grep -E '^stat::number_of_executed_units' "$logs/$t.log" | awk '{print $2}' | tail -1)
    rate=$(grep -E '^stat::average_exec_per_sec' "$logs/$t.log" | awk '{print $2}' | tail -1)
    crashes=0
    for a in "$artifacts"/*; do
        [ -f "$a" ] || continue
        found=$(basename "$a")
        kind=${found%%-*}
        hash=$(sha1sum "$a" | cut -c1-12)
        dest="$corpus/regress-$kind-$hash"
        if [ ! -e "$dest" ]; then
            cp "$a" "$dest"
        fi
    done
    after=$(find "$artifacts" -type f | wc -l)
    crashes=$((after - before))
    total_crashes=$((total_crashes + crashes))
    printf '%-12s %10s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" \
        "$(find "$corpus" -type f | wc -l)" "$crashes"
    if [ "$crashes" -gt 0 ]; then
        grep -m1 -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$logs/$t.log" | sed 's/^/    /' || true
        cp "$logs/$t.log" "fuzz/artifacts/$t.last-run.log"
    fi
done
echo "crashes in all: $total_crashes (inputs copied to fuzz/corpus/<target>/regress-*)"
