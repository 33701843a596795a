#!/usr/bin/env bash
# Proves the README's two commands work on a fresh Debian 12 machine with nothing but the
# clone: debootstraps a minimal Debian 12 (bookworm, --variant=minbase: no compiler, no curl,
# no ca-certificates, no Rust) into a directory, clones this repository's committed HEAD into
# it (uncommitted changes are not part of the check), and runs inside it, under chroot:
#
#   bash scripts/test.sh      the test command (README "Test")
#   bash examples/tour.sh     the main command (README "Run it")
#
# Both install what they need themselves (scripts/setup.sh): apt packages from the Debian
# mirror, Rust through rustup. Where rustup's servers cannot be reached from here at all,
# pass --host-rust: the host's ~/.rustup is bind-mounted read-only and its ~/.cargo/bin
# copied in, so only the Rust download is skipped (the script says so in its output).
#
# CI does not run this (it needs root, a mirror and about 30 minutes on 2 CPUs); anyone can:
#
#   sudo bash scripts/fresh_check.sh                 # full test suite, then the tour
#   sudo bash scripts/fresh_check.sh --tour-only     # the main command only (a few minutes)
#   sudo bash scripts/fresh_check.sh --keep          # keep the root filesystem afterwards
#   MIRROR=http://deb.debian.org/debian FRESH_DIR=/var/tmp/x sudo -E bash scripts/fresh_check.sh
#
# Output: everything goes to the terminal and to target/fresh_check/fresh_check.log (plus
# test.log and tour.log, the two commands' own output); the last lines say each command's
# exit status. Exit status: 0 when both commands exited 0.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

keep=no
tour_only=no
host_rust=no
for a in "$@"; do
    case $a in
    --keep) keep=yes ;;
    --tour-only) tour_only=yes ;;
    --host-rust) host_rust=yes ;;
    -h | --help)
        sed -n '2,24p' "$0"
        exit 0
        ;;
    *)
        echo "fresh_check.sh: unknown argument '$a' (--keep, --tour-only, --host-rust)" >&2
        exit 2
        ;;
    esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "fresh_check.sh: needs root (debootstrap, mount, chroot): sudo bash scripts/fresh_check.sh" >&2
    exit 2
fi
mirror=${MIRROR:-http://deb.debian.org/debian}
out=$repo/target/fresh_check
mkdir -p "$out"
exec > >(tee "$out/fresh_check.log") 2>&1
say() { printf '[fresh_check %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

root=${FRESH_DIR:-$(mktemp -d /var/tmp/lineup-fresh.XXXXXX)}
mkdir -p "$root"
# The root's own `/`: mktemp made it 0700, and tests that run lineup as another user (nobody,
# through setpriv) could not even load its libraries.
chmod 0755 "$root"
mounts=()
cleanup() {
    local m
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" 2>/dev/null || true
    done
    # Never delete through a mount that is still there.
    if findmnt -rn -o TARGET | grep -q "^$root/"; then
        say "something is still mounted under $root; not deleting it"
    elif [ "$keep" = no ]; then
        rm -rf --one-file-system "$root"
    else
        say "kept the root filesystem: $root"
    fi
}
trap cleanup EXIT

say "host: $(uname -srm), $(nproc) CPUs; repository $repo at $(git -C "$repo" rev-parse --short HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    say "note: the working tree has uncommitted changes; the check uses the committed HEAD"
fi
say "debootstrap --variant=minbase bookworm $root $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$out/debootstrap.log" 2>&1 || {
    tail -n 20 "$out/debootstrap.log"
    say "debootstrap failed (log: $out/debootstrap.log)"
    exit 1
}
say "fresh root: $(du -sh --one-file-system "$root" | cut -f1); what it lacks:"
for tool in cc cargo curl git; do
    if chroot "$root" sh -c "command -v $tool" >/dev/null 2>&1; then
        echo "  $tool: present"
    else
        echo "  $tool: absent"
    fi
done
chroot "$root" sh -c 'dpkg -s ca-certificates >/dev/null 2>&1 && echo "  ca-certificates: present" || echo "  ca-certificates: absent"'

# The clone: the repository's committed HEAD, nothing beside it (no ../shared).
git clone -q --no-local "$repo" "$root/root/lineup"
say "cloned $(git -C "$root/root/lineup" rev-parse --short HEAD) into /root/lineup; beside it: $(ls -A "$root/root" | tr '\n' ' ')"

# What a running machine has: /proc, /sys, pseudo-terminals, shared memory (chromium), name
# resolution. Devices are debootstrap's own nodes in the root's /dev, not the host's.
mnt() {
    mount "$@"
    mounts+=("${!#}")
}
mnt -t proc proc "$root/proc"
mnt -t sysfs sysfs "$root/sys"
mkdir -p "$root/dev/pts" "$root/dev/shm"
mnt -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
mnt -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A network whose HTTPS goes through a proxy with a CA of its own: the host trusts it through
# /usr/local/share/ca-certificates, and so does the fresh root (the ca-certificates package
# that scripts/setup.sh installs there adds these files to its store). Nothing else of the
# host's goes in.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    say "the host's local CA certificates copied in: $(cd /usr/local/share/ca-certificates && ls -- *.crt | tr '\n' ' ')"
fi

if [ "$host_rust" = yes ]; then
    say "--host-rust: the host's toolchains ($HOME/.rustup) bind-mounted read-only, its ~/.cargo/bin copied: rustup is not downloaded"
    mkdir -p "$root/root/.rustup" "$root/root/.cargo"
    mnt --bind -o ro "$HOME/.rustup" "$root/root/.rustup"
    mount -o remount,bind,ro "$root/root/.rustup"
    cp -a "$HOME/.cargo/bin" "$root/root/.cargo/"
fi

inside() {
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "cd /root/lineup && $1"
}

test_rc=skipped
if [ "$tour_only" = no ]; then
    say "README test command: bash scripts/test.sh"
    set +e
    inside 'bash scripts/test.sh' 2>&1 | tee "$out/test.log"
    test_rc=${PIPESTATUS[0]}
    set -e
    say "bash scripts/test.sh exited $test_rc"
    grep -E '^test result:' "$out/test.log" |
        awk '{p += $4; f += $6; i += $8} END {printf "  test results: %d passed, %d failed, %d ignored in %d binaries\n", p, f, i, NR}' || true
fi

say "README main command: bash examples/tour.sh"
set +e
inside 'bash examples/tour.sh' 2>&1 | tee "$out/tour.log"
tour_rc=${PIPESTATUS[0]}
set -e
say "bash examples/tour.sh exited $tour_rc"
inside 'command -v lineup >/dev/null && echo "lineup on PATH" || echo "lineup not on PATH (the tour said where it is: target/release/lineup)"'

say "summary: scripts/test.sh: $test_rc; examples/tour.sh: $tour_rc; logs in $out"
[ "$tour_rc" = 0 ] && { [ "$test_rc" = 0 ] || [ "$test_rc" = skipped ]; }
