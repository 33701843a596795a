#!/usr/bin/env bash
# The test command (README.md, "Test"; .ci/run runs exactly this): install what the tests need
# on a fresh Debian 12 machine, then run the whole suite. Tests whose tool is missing fail
# loudly rather than skip, so this script is the one place that provides them.
#
#   bash scripts/test.sh                 # install what is missing, cargo test --release --no-fail-fast,
#                                        # then the fleet tests with --features fleet
#   bash scripts/test.sh --test replay   # extra arguments go to cargo test
set -euo pipefail
cd "$(dirname "$0")/.."

# apt packages (gcc, clang, pahole, perf, hackbench, chromium, ...) and a Rust at least as new
# as Cargo.toml's rust-version: scripts/setup.sh lists them and says why each is needed.
. scripts/setup.sh test

# --no-fail-fast: a failing test binary does not hide the results of the ones after it; nor
# does a failing step hide the next: the script fails if any did.
status=0
cargo test --release --no-fail-fast "$@" || status=$?

# The fleet store (--features fleet: Parquet and DataFusion, docs/fleet.md), off in the default
# build: its integration tests and the library's fleet unit tests, built with the feature.
# Skipped when extra arguments pick tests.
if [ $# -eq 0 ]; then
    cargo test --release --no-fail-fast --features fleet --test fleet || status=$?
    cargo test --release --no-fail-fast --features fleet --lib fleet:: || status=$?
fi
exit "$status"
