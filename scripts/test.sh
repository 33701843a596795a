#!/usr/bin/env bash
# The test command (README.md, "Test"; .ci/run runs exactly this): install what the tests need
# on a fresh Debian 12 machine, then run the whole suite. Tests whose tool is missing fail
# loudly rather than skip, so this script is the one place that provides them.
#
#   bash scripts/test.sh                 # install what is missing, cargo test --release --no-fail-fast
#   bash scripts/test.sh --test replay   # extra arguments go to cargo test
set -euo pipefail
cd "$(dirname "$0")/.."

# gcc, clang: C programs built at test time (DWARF 4 and 5 goldens, replicas, lineup cc).
# dwarves: pahole, the layout oracle. patch: applying lineup's patches.
# linux-perf (perf bench) and rt-tests (hackbench): lineup bench's tests.
# chromium: tests/html.rs opens the --html pages in a headless browser.
# gcc-aarch64-linux-gnu, binutils-aarch64-linux-gnu: tests/decode_aarch64.rs compiles Arm
# objects and reads objdump as the oracle for the AArch64 decoder.
packages=(gcc clang dwarves patch linux-perf rt-tests chromium gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu)

need=()
for pkg in "${packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "scripts/test.sh: installing ${need[*]}" >&2
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "scripts/test.sh: ${need[*]} missing and not root (no sudo): install them" >&2
            exit 1
        }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Rust from rustup when there is no cargo.
if ! command -v cargo >/dev/null 2>&1; then
    if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
        echo "scripts/test.sh: installing Rust with rustup" >&2
        curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    fi
    export PATH="$HOME/.cargo/bin:$PATH"
fi

# --no-fail-fast: a failing test binary does not hide the results of the ones after it.
exec cargo test --release --no-fail-fast "$@"
