#!/usr/bin/env bash
# Compares what `lineup import --perf-data` counts with perf's own reports, file by file:
# every perf.data in ../shared/corpus/perf-data/ (read where it lies, never copied into the
# repository) and, when perf can record here, fresh recordings of tests/data/perf/watch.c
# (page faults, cpu-clock, data breakpoints) in a temporary directory.
#
# Per file: perf's samples (`perf report -D`: PERF_RECORD_SAMPLE records, and per event with
# `perf script -F event`), perf c2c's "Total records", loads and stores (`perf c2c report
# --stdio`, where it reads the file), and lineup's samples, loads, stores and
# read-modify-writes, or the one line with which lineup refuses the file.
#
# Usage: bench/perf_data_counts.sh [CORPUS_DIR]   (run from the repository root; needs a
# built target/release/lineup, perf, python3, cc)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${1:-$root/../shared/corpus/perf-data}
lineup=$root/target/release/lineup
[ -x "$lineup" ] || { echo "build first: cargo build --release" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not found" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

compare() {
  local f=$1
  echo "== $f"
  local n
  n=$(perf report -D -i "$f" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE(')
  echo "perf report -D: $n samples"
  echo "perf script -F event:"
  perf script -F event -i "$f" 2>/dev/null | sed 's/: *$//; s/^ *//' | sort | uniq -c | sed 's/^/  /'
  if perf c2c report --stdio -i "$f" >"$tmp/c2c.txt" 2>"$tmp/c2c.err"; then
    grep -E '^ *(Total records|Load Operations|Store Operations|Unable to parse data source) *:' "$tmp/c2c.txt" |
      sed 's/^ */perf c2c report: /'
  else
    echo "perf c2c report: refuses it: $(grep -v '^$' "$tmp/c2c.err" | head -1)"
  fi
  if "$lineup" import --perf-data "$f" -o "$tmp/p.json" 2>"$tmp/err"; then
    python3 - "$tmp/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
s = p["summary"]
c = {"loads": 0.0, "stores": 0.0, "rmw": 0.0}
for l in p.get("lines", []):
    for a in l["accesses"]:
        for k in c:
            c[k] += a["counts"].get(k, 0.0)
te = s.get("trace_events", {})
print("lineup: %d samples (%d without address); %d lines; loads %d stores %d rmw %d; c2c table: total_records %d load_operations %d store_operations %d"
      % (s["perf_data"]["samples"], s["perf_data"]["samples_without_address"], len(p.get("lines", [])),
         c["loads"], c["stores"], c["rmw"], te.get("total_records", 0), te.get("load_operations", 0),
         te.get("store_operations", 0)))
print("lineup events: %s" % ", ".join(p["provenance"].get("events", [])))
PY
  else
    echo "lineup refuses it (exit $?): $(cat "$tmp/err")"
  fi
}

found=0
for f in "$corpus"/*; do
  [ -f "$f" ] || continue
  head -c 8 "$f" | grep -q -e PERFILE2 -e 2ELIFREP || continue
  found=$((found + 1))
  compare "$f"
done
echo "($found perf.data files in $corpus)"

# Fresh recordings on this machine.
if cc -O1 -g -no-pie -pthread -o "$tmp/watch" "$root/tests/data/perf/watch.c" 2>/dev/null; then
  a=$(nm "$tmp/watch" | awk '$3 == "shared_pair" { print $1 }')
  b=$(printf '%x' $((0x$a + 8)))
  rec() { local out=$1; shift; perf record -q -o "$tmp/$out" "$@" -- "$tmp/watch" 20000 >/dev/null 2>&1 && compare "$tmp/$out"; }
  rec pf.data -d -c 1 -e page-faults
  rec clock.data -e cpu-clock
  rec bp_w.data -e "mem:0x$a/8:w" -e "mem:0x$b/8:w"
  rec bp_split.data -e "mem:0x$b/8:w" -e "mem:0x$b/8:rw"
  rec bp_rw.data -e "mem:0x$b/8:rw"
  echo "(watch.c run with N=20000: main stores a N times, store_b stores b N times, main loads b N times)"
fi
