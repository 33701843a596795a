#!/usr/bin/env bash
# The test command (README.md, "Test"; .ci/run runs exactly this): install what the tests need
# on a fresh Debian 12 machine, then run the whole suite. Tests whose tool is missing fail
# loudly rather than skip, so this script is the one place that provides them.
#
#   bash scripts/test.sh                 # install what is missing, cargo test --release --no-fail-fast
#   bash scripts/test.sh --test replay   # extra arguments go to cargo test
set -euo pipefail
cd "$(dirname "$0")/.."

# apt packages (gcc, clang, pahole, perf, hackbench, chromium, ...) and a Rust at least as new
# as Cargo.toml's rust-version: scripts/setup.sh lists them and says why each is needed.
. scripts/setup.sh test

# --no-fail-fast: a failing test binary does not hide the results of the ones after it.
exec cargo test --release --no-fail-fast "$@"
