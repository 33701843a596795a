#!/usr/bin/env python3
"""Recording overhead: `lineup record -- PROG` against the same program built plainly and
built with ThreadSanitizer, on a corpus with the false-sharing literature's patterns.

Each program is built three times with the C compiler (clang, else gcc) at its own
optimization level: plain, `-fsanitize=thread` (the compiler's race detector, which
instruments the same accesses and does far more per access), and `lineup cc`. The
recorded time is the whole `lineup record` command: the program under lineup's runtime
plus post-processing (attribution, simulation, writing the profile). Runs are
interleaved; medians. Printed per program: wall time and CPU time (user + system, from
wait4: on a shared VM far steadier than wall time) of the plain run, the ratio of
`lineup record` and of TSan to it, and peak resident memory (the recorded program's,
lineup's own, and TSan's). Then the geometric means. The goal: lineup's geometric mean at
most 3x, and never above TSan.

    python3 bench/record_overhead.py [--runs 3] [--lineup target/release/lineup]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, source in examples/record, optimization level, arguments. The levels are those at
# which each program's false sharing survives (Phoenix at -O0, as the literature runs it).
CORPUS = [
    ("linear_regression", "linreg", "-O0", ["2", "48"]),
    ("histogram", "histogram", "-O0", ["2", "48"]),
    ("streamcluster", "streamcluster", "-O2", ["2", "500", "40"]),
    ("stream 3x 128MiB", "stream", "-O2", ["128", "3"]),
    ("two counters", "counters", "-O2", ["2", "5000000"]),
    ("padded (control)", "padded", "-O2", ["2", "5000000"]),
]


def run(cmd):
    """Wall seconds, CPU seconds (user + system) and peak RSS in MiB of cmd and its children."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)}: exit status {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lineup", default=os.path.join(REPO, "target", "release", "lineup"))
    ap.add_argument("--cc", default=shutil.which("clang") and "clang" or "gcc")
    args = ap.parse_args()
    if not os.path.exists(args.lineup):
        sys.exit(f"{args.lineup}: not built (cargo build --release)")
    work = tempfile.mkdtemp(prefix="lineup-bench-")
    try:
        env = dict(os.environ, LINEUP_CC=args.cc)
        rows = []
        print(f"compiler: {args.cc}; {args.runs} runs each, medians", flush=True)
        head = (f"{'program':<18} {'opt':>4} {'plain s':>8} {'cpu s':>7} {'record':>7} "
                f"{'(cpu)':>6} {'tsan':>6} {'(cpu)':>6} {'prog MiB':>9} {'lineup MiB':>10} "
                f"{'tsan MiB':>9}")
        print(head)
        for label, src_name, opt, prog_args in CORPUS:
            src = os.path.join(REPO, "examples", "record", src_name + ".c")
            plain = os.path.join(work, src_name + "-plain")
            tsan = os.path.join(work, src_name + "-tsan")
            rec = os.path.join(work, src_name + "-lineup")
            subprocess.run([args.cc, opt, "-g", "-pthread", src, "-o", plain], check=True)
            subprocess.run([args.cc, opt, "-g", "-pthread", "-fsanitize=thread", src, "-o", tsan], check=True)
            subprocess.run([args.lineup, "cc", opt, "-pthread", src, "-o", rec], check=True, env=env)
            profile = os.path.join(work, src_name + ".json")
            run([plain] + prog_args)  # warm the page cache
            p, r, t = [], [], []
            for _ in range(args.runs):
                p.append(run([plain] + prog_args))
                r.append(run([args.lineup, "record", "-o", profile, "--", rec] + prog_args))
                t.append(run([tsan] + prog_args))
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            summary = json.load(open(profile))["summary"]["record"]
            row = {
                "label": label,
                "opt": opt,
                "plain_wall": med(p, 0),
                "plain_cpu": med(p, 1),
                "record_wall": med(r, 0) / med(p, 0),
                "record_cpu": med(r, 1) / max(med(p, 1), 1e-3),
                "tsan_wall": med(t, 0) / med(p, 0),
                "tsan_cpu": med(t, 1) / max(med(p, 1), 1e-3),
                "prog_mib": summary.get("peak_rss_program", 0) / 2**20,
                "lineup_mib": summary.get("peak_rss_recorder", 0) / 2**20,
                "tsan_mib": med(t, 2),
            }
            rows.append(row)
            print(f"{label:<18} {opt:>4} {row['plain_wall']:8.3f} {row['plain_cpu']:7.3f} "
                  f"{row['record_wall']:6.2f}x {row['record_cpu']:5.2f}x {row['tsan_wall']:5.2f}x "
                  f"{row['tsan_cpu']:5.2f}x {row['prog_mib']:9.0f} {row['lineup_mib']:10.0f} "
                  f"{row['tsan_mib']:9.0f}", flush=True)
        geo = lambda k: statistics.geometric_mean([x[k] for x in rows])
        print(f"{'geometric mean':<18} {'':>4} {'':>8} {'':>7} {geo('record_wall'):6.2f}x "
              f"{geo('record_cpu'):5.2f}x {geo('tsan_wall'):5.2f}x {geo('tsan_cpu'):5.2f}x   (goal: record <= 3x and <= tsan)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
