# Installs what lineup's commands need on a Debian 12 (or Ubuntu) machine and puts a new
# enough cargo first on PATH. Sourced, not run, by the two commands of the README:
#
#   . scripts/setup.sh tour    # examples/tour.sh: a C compiler and Rust
#   . scripts/setup.sh test    # scripts/test.sh: also the tests' tools (pahole, perf, ...)
#
# It installs only what is missing: apt packages through apt-get (as root, else sudo), Rust
# through rustup when there is no cargo at least as new as Cargo.toml's rust-version (Debian's
# own cargo, 1.63, cannot read edition 2024). rustup comes from sh.rustup.rs, or, where that
# name does not resolve, rustup-init straight from static.rust-lang.org (the file sh.rustup.rs
# downloads). Everything it says goes to stderr, one line a step.

_lineup_setup() {
    local what=${1:-test}
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local want
    want=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml")
    if [ -z "$want" ]; then
        echo "scripts/setup.sh: $root/Cargo.toml has no rust-version" >&2
        return 1
    fi

    if [ "$what" = test ]; then
        # The fleet tests build --features fleet (DataFusion), which needs a newer Rust than
        # the default build: Cargo.toml's [package.metadata.lineup] fleet-rust-version.
        local fleet
        fleet=$(sed -n 's/^fleet-rust-version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml")
        if [ -n "$fleet" ] && [ "$(printf '%s\n%s\n' "$want" "$fleet" | sort -V | tail -n 1)" = "$fleet" ]; then
            want=$fleet
        fi
    fi

    # gcc, libc6-dev: a C compiler (the tour's replica and replay; Rust links with it).
    local packages=(gcc libc6-dev)
    if [ "$what" = test ]; then
        # clang: DWARF goldens and lineup cc. dwarves: pahole, the layout oracle. patch:
        # applying lineup's patches. linux-perf (perf bench), rt-tests (hackbench): lineup
        # bench's tests. chromium: tests/html.rs's headless pages. The aarch64 cross tools:
        # tests/decode_aarch64.rs's oracle. git: tests/fresh_clone.rs clones the repository.
        # g++: `lineup c++` on C++ programs (tests/record_alloc.rs's std::thread case).
        packages+=(clang g++ dwarves patch linux-perf rt-tests chromium gcc-aarch64-linux-gnu
            binutils-aarch64-linux-gnu git)
    elif [ "$what" != tour ]; then
        echo "scripts/setup.sh: say 'tour' or 'test', not '$what'" >&2
        return 1
    fi

    # Is there a cargo at least as new as rust-version (on PATH, or rustup's)?
    local rust_ok=no
    _lineup_cargo_ok() {
        local v
        v=$("$1" --version 2>/dev/null | sed -n 's/^cargo \([0-9]*\.[0-9]*\).*/\1/p')
        [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$want" "$v" | sort -V | head -n 1)" = "$want" ]
    }
    if [ -x "$HOME/.cargo/bin/cargo" ] && _lineup_cargo_ok "$HOME/.cargo/bin/cargo"; then
        export PATH="$HOME/.cargo/bin:$PATH"
        rust_ok=yes
    elif command -v cargo >/dev/null 2>&1 && _lineup_cargo_ok cargo; then
        rust_ok=yes
    fi
    if [ "$rust_ok" = no ]; then
        # rustup downloads over https.
        packages+=(curl ca-certificates)
    fi

    local need=() pkg
    if command -v dpkg >/dev/null 2>&1; then
        for pkg in "${packages[@]}"; do
            dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
        done
    else
        echo "scripts/setup.sh: not a Debian system (no dpkg); make sure these are installed: ${packages[*]}" >&2
    fi
    if [ ${#need[@]} -gt 0 ]; then
        echo "scripts/setup.sh: installing ${need[*]}" >&2
        local sudo=()
        if [ "$(id -u)" -ne 0 ]; then
            if ! command -v sudo >/dev/null 2>&1; then
                echo "scripts/setup.sh: ${need[*]} missing and not root (no sudo): install them" >&2
                return 1
            fi
            sudo=(sudo)
        fi
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || return 1
    fi

    if [ "$rust_ok" = no ]; then
        local have
        have=$(cargo --version 2>/dev/null || echo "no cargo")
        echo "scripts/setup.sh: lineup needs Rust $want or newer ($have on PATH); installing it with rustup into ~/.cargo" >&2
        local init
        init=$(mktemp -d) || return 1
        if curl -sSf --proto '=https' https://sh.rustup.rs -o "$init/rustup.sh" 2>/dev/null; then
            sh "$init/rustup.sh" -y --profile minimal --no-modify-path >&2 || return 1
        else
            local arch
            arch="$(uname -m)-unknown-linux-gnu"
            echo "scripts/setup.sh: sh.rustup.rs unreachable; fetching rustup-init for $arch from static.rust-lang.org" >&2
            curl -sSf --proto '=https' "https://static.rust-lang.org/rustup/dist/$arch/rustup-init" \
                -o "$init/rustup-init" || {
                echo "scripts/setup.sh: cannot download rustup (no network to static.rust-lang.org?): install Rust $want or newer and put its cargo on PATH" >&2
                return 1
            }
            chmod +x "$init/rustup-init"
            "$init/rustup-init" -y --profile minimal --no-modify-path >&2 || return 1
        fi
        rm -rf "$init"
        export PATH="$HOME/.cargo/bin:$PATH"
        if ! _lineup_cargo_ok cargo; then
            echo "scripts/setup.sh: $(cargo --version 2>&1) is still older than Rust $want: run 'rustup update stable'" >&2
            return 1
        fi
    fi
    echo "scripts/setup.sh: $(cargo --version) ($(command -v cargo)), needs $want" >&2
}

_lineup_setup "$@"
