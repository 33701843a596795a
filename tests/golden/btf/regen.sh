#!/usr/bin/env bash
# Regenerates the pahole golden output for the bundled kernel BTF.
# Oracle: pahole from Debian's `dwarves` package (v1.24 when this was made), run as
#   pahole -F btf data/vmlinux-6.18.44.btf
# It warns "Unknown kind 17/18" (BTF decl/type tags, newer than v1.24) on stderr; those kinds
# carry no layout and are ignored.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=tests/golden/btf/vmlinux-6.18.44.pahole.txt.gz
pahole -F btf data/vmlinux-6.18.44.btf 2>/dev/null | gzip -9n > "$out"
echo "pahole $(pahole --version) -> $out"
