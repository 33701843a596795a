#!/bin/sh
# Seed 003 (Pan Deng, "sched/rt: mitigate root_domain cache line contention"): from the seed's
# evidence to its conclusion, the fix, and a measurement. Run from anywhere; about a minute.
#   LINEUP=path/to/lineup sh examples/seeds/003/run.sh     (default: cargo build --release)
set -eu
cd "$(dirname "$0")/../../.."
if [ -z "${LINEUP:-}" ]; then
	cargo build --release --quiet
	LINEUP=$PWD/target/release/lineup
fi
BTF=data/vmlinux-6.18.44.btf
SK=examples/sketches/seed003_cpupri_vec.toml
D=examples/seeds/003
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
step() { printf '\n=== %s\n$ %s\n' "$1" "$2"; }

step "the struct as the kernel declares it" "lineup layout --btf $BTF cpupri_vec"
$LINEUP layout --btf $BTF cpupri_vec

step "diagnose the seed's evidence (the access sketch)" "lineup diagnose --type cpupri_vec --sketch $SK"
$LINEUP diagnose --type cpupri_vec --btf $BTF --sketch $SK

step "fix it on the seed's machine" "lineup optimize --type cpupri_vec --sketch $SK --machine xeon-2s-480"
$LINEUP optimize --type cpupri_vec --btf $BTF --sketch $SK --machine xeon-2s-480

step "price the seed's patch 1 beside lineup's layout" "lineup predict ... --layout $D/seed_fix_patch1_vec.h"
$LINEUP predict --type cpupri_vec --btf $BTF --sketch $SK --machine xeon-2s-480 \
	--layout $D/seed_fix_patch1_vec.h
$LINEUP predict --type root_domain --btf $BTF --sketch examples/sketches/seed003_root_domain.toml \
	--machine xeon-2s-480 --layout $D/seed_fix_patch1.h

step "record the replica (CONFIG_CPUMASK_OFFSTACK=y, as on the seed's 480-CPU machine)" \
	"lineup cc -DCPUMASK_OFFSTACK $D/cpupri.c; lineup record -- ./rec baseline 2 100000"
$LINEUP cc -O2 -pthread -DCPUMASK_OFFSTACK $D/cpupri.c -o "$W/rec"
$LINEUP record -o "$W/p.json" -- "$W/rec" baseline 2 100000
$LINEUP diagnose --type cpupri --dwarf "$W/rec" --profile "$W/p.json" | grep -v '^$' |
	awk '/^cache line/ {n++} n <= 2' | sed -n '1,14p'

step "A/B: kernel layout against patch 1 on this host" \
	"lineup bench --a './cpupri baseline 2 500000' --b './cpupri patched 2 500000' --regex 'together ops/s: ([0-9.]+)'"
cc -O2 -pthread -DCPUMASK_OFFSTACK $D/cpupri.c -o "$W/cpupri_offstack"
cc -O2 -pthread $D/cpupri.c -o "$W/cpupri_inline"
(cd "$W" && $LINEUP bench --a './cpupri_offstack baseline 2 500000' --b './cpupri_offstack patched 2 500000' \
	--regex 'together ops/s: ([0-9.]+)' --higher-is-better --runs 10 --name offstack --load 2-threads)
printf '\nthe same with the bitmap inline (CONFIG_CPUMASK_OFFSTACK=n, the fixture kernel):\n'
(cd "$W" && $LINEUP bench --a './cpupri_inline baseline 2 500000' --b './cpupri_inline patched 2 500000' \
	--regex 'together ops/s: ([0-9.]+)' --higher-is-better --runs 10 --name inline --load 2-threads)
