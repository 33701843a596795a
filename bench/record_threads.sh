#!/usr/bin/env bash
# Short-lived threads under `lineup record` (issue 23 item 7): a program that creates and
# joins 2400 threads one after the other, each making one increment, run plain and recorded
# (default and --sample 1), three times each, interleaved; prints wall and CPU seconds and
# the ratio of the recorded medians to the plain one.
#
#   bash bench/record_threads.sh [path/to/lineup]
set -euo pipefail
cd "$(dirname "$0")/.."
lineup=${1:-target/release/lineup}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/threads.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static volatile long g[64];
static void *one(void *a) { g[(long)a & 63]++; return 0; }
int main(void) {
    for (long i = 0; i < 2400; i++) {
        pthread_t t;
        if (pthread_create(&t, 0, one, (void *)i) || pthread_join(t, 0))
            return 1;
    }
    printf("%ld\n", g[0]);
    return 0;
}
C
LINEUP_CACHE_DIR="$work/cache" "$lineup" cc -O1 -pthread "$work/threads.c" -o "$work/threads"
python3 - "$lineup" "$work" <<'PY'
import os, statistics, subprocess, sys, time
lineup, work = sys.argv[1], sys.argv[2]
prog = os.path.join(work, "threads")
cmds = {
    "plain": [prog],
    "record": [lineup, "record", "-o", os.path.join(work, "p.json"), "--", prog],
    "record --sample 1": [lineup, "record", "--sample", "1", "-o", os.path.join(work, "e.json"), "--", prog],
}
res = {k: [] for k in cmds}
for _ in range(3):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, st, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(st):
            sys.exit(f"{k}: exit status {os.waitstatus_to_exitcode(st)}")
        res[k].append((time.perf_counter() - t0, ru.ru_utime + ru.ru_stime))
base = statistics.median(w for w, _ in res["plain"])
for k, v in res.items():
    wall = statistics.median(w for w, _ in v)
    cpu = statistics.median(c for _, c in v)
    print(f"{k:18} wall {wall:6.2f} s (min {min(w for w, _ in v):.2f}, max {max(w for w, _ in v):.2f})"
          f"  cpu {cpu:6.2f} s  wall / plain {wall / base:6.1f}x")
PY
