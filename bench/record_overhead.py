#!/usr/bin/env python3
"""Recording overhead: `lineup record -- PROG` against the same program built plainly and
built with ThreadSanitizer, on a corpus with the false-sharing literature's patterns.

Each program is built three times with the C compiler (clang, else gcc) at its own
optimization level: plain, `-fsanitize=thread` (the compiler's race detector, which
instruments the same accesses and does far more per access), and `lineup cc`. The
recorded time is the whole `lineup record` command: the program under lineup's runtime
plus post-processing (attribution, simulation, writing the profile): as by default
(bursts: every access for the first 100 ms, then 1 ms of every 20 ms, the hook calls
rewritten into counting jumps in between), with `--sample 1` (every access, the whole
run) and with `--sample auto`. Runs are interleaved; medians. Inputs make each program
run at least a second uninstrumented (wall time).

Also run: the lineup-built program alone, without `lineup record` (its runtime is then off:
every hook returns after one compare): the floor any runtime behind these hooks pays, the
instrumentation's calls themselves (column `hooks`).

linear_regression's false sharing depends on where calloc puts its 128-byte block: glibc
16 or 32 bytes into a line (neighbouring threads' sums share a line), ThreadSanitizer's
allocator on a line (its size class starts there): under TSan the program has no false
sharing, and is faster than under lineup for that alone. The row `... as TSan places it`
builds the replica with `-DLINE_ALIGNED` (the block on a line for all three builds) to
compare at the same placement; it is printed after the geometric means, not in them.

The headline is CPU time (user + system of the command and its children, from wait4):
on a shared, loaded VM wall time swings by 2x from run to run, CPU time far less. Printed
per program: the plain run's CPU seconds; the CPU-time ratio to it of `lineup record` (the
default), of `--sample 1`, of `--sample auto`, of TSan and of the hooks alone; the default
and `--sample 1` against TSan (below 1 is faster than TSan); the default profile's access
count over the `--sample 1` one (est/ex: 1.00 when bursts kept every site's count);
wall-time ratios; peak resident memory (the recorded program's, lineup's own, TSan's).
Then the geometric means and the load average. The goal: a geometric mean of at most 3x,
and never above TSan on any program.

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
    ("linear_regression", "linreg", "-O0", ["2", "100"]),
    ("histogram", "histogram", "-O0", ["2", "130"]),
    ("streamcluster", "streamcluster", "-O2", ["2", "1000", "600"]),
    ("stream 8x 1GiB", "stream", "-O2", ["1024", "8"]),
    ("two counters", "counters", "-O2", ["2", "30000000"]),
    ("padded (control)", "padded", "-O2", ["2", "40000000"]),
]
# Not in the geometric means: the same program at ThreadSanitizer's placement.
SAME_PLACEMENT = [
    ("linreg, TSan's place", "linreg", "-O0 -DLINE_ALIGNED", ["2", "100"]),
]


def run(cmd, env=None):
    """Wall seconds, CPU seconds (user + system) and peak RSS in MiB of cmd and its children."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
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
        print(f"compiler: {args.cc}; {args.runs} runs each, medians; load average before: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        head = (f"{'':<20} {'':>4} {'plain':>6} {'--- CPU time ratios to plain ----':<34} "
                f"{'- vs tsan -':<12} {'record':>6} {'-- wall ratios ---':<18} "
                f"{'--- peak MiB ---':<16}\n"
                f"{'program':<20} {'opt':>4} {'cpu s':>6} {'record':>6} {'all':>6} "
                f"{'auto':>6} {'tsan':>6} {'hooks':>6} {'record':>5} {'all':>6} {'est/ex':>6} "
                f"{'record':>6} {'all':>6} {'tsan':>4} "
                f"{'prog':>5} {'lineup':>6} {'tsan':>5}")
        print(head)
        # The recorded program alone: without LINEUP_OUT its runtime is off.
        off_env = {k: v for k, v in os.environ.items() if not k.startswith("LINEUP_")}

        def measure(label, src_name, flags, prog_args):
            flags = flags.split()
            src = os.path.join(REPO, "examples", "record", src_name + ".c")
            stem = src_name + "".join(flags)
            plain = os.path.join(work, stem + "-plain")
            tsan = os.path.join(work, stem + "-tsan")
            rec = os.path.join(work, stem + "-lineup")
            subprocess.run([args.cc, *flags, "-g", "-pthread", src, "-o", plain], check=True)
            subprocess.run([args.cc, *flags, "-g", "-pthread", "-fsanitize=thread", src, "-o", tsan],
                           check=True)
            subprocess.run([args.lineup, "cc", *flags, "-pthread", src, "-o", rec], check=True, env=env)
            profile = os.path.join(work, stem + ".json")
            sampled = os.path.join(work, stem + "-auto.json")
            every = os.path.join(work, stem + "-all.json")
            run([plain] + prog_args)  # warm the page cache
            p, r, a, t, h, b = [], [], [], [], [], []
            for _ in range(args.runs):
                p.append(run([plain] + prog_args))
                r.append(run([args.lineup, "record", "-o", profile, "--", rec] + prog_args))
                t.append(run([tsan] + prog_args))
                a.append(run([args.lineup, "record", "--sample", "auto", "-o", sampled, "--", rec]
                             + prog_args))
                b.append(run([args.lineup, "record", "--sample", "1", "-o", every, "--", rec]
                             + prog_args))
                h.append(run([rec] + prog_args, env=off_env))
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            summary = json.load(open(profile))["summary"]["record"]
            every_summary = json.load(open(every))["summary"]["record"]
            cpu = max(med(p, 1), 1e-3)
            tsan_cpu = max(med(t, 1), 1e-3)
            row = {
                "label": label,
                "opt": flags[0],
                "plain_cpu": med(p, 1),
                "record_cpu": med(r, 1) / cpu,
                "auto_cpu": med(a, 1) / cpu,
                "tsan_cpu": med(t, 1) / cpu,
                "hooks_cpu": med(h, 1) / cpu,
                "all_cpu": med(b, 1) / cpu,
                "vs_tsan": med(r, 1) / tsan_cpu,
                "all_vs_tsan": med(b, 1) / tsan_cpu,
                "estimate": summary["accesses"] / max(every_summary["accesses"], 1),
                "all_wall": med(b, 0) / med(p, 0),
                "record_wall": med(r, 0) / med(p, 0),
                "tsan_wall": med(t, 0) / med(p, 0),
                "prog_mib": summary.get("peak_rss_program", 0) / 2**20,
                "lineup_mib": summary.get("peak_rss_recorder", 0) / 2**20,
                "tsan_mib": med(t, 2),
            }
            print(f"{label:<20} {row['opt']:>4} {row['plain_cpu']:6.2f} {row['record_cpu']:5.2f}x "
                  f"{row['all_cpu']:5.2f}x {row['auto_cpu']:5.2f}x {row['tsan_cpu']:5.2f}x "
                  f"{row['hooks_cpu']:5.2f}x {row['vs_tsan']:4.2f}x {row['all_vs_tsan']:5.2f}x "
                  f"{row['estimate']:6.2f} "
                  f"{row['record_wall']:5.2f}x {row['all_wall']:5.2f}x {row['tsan_wall']:3.1f}x "
                  f"{row['prog_mib']:5.0f} {row['lineup_mib']:6.0f} {row['tsan_mib']:5.0f}",
                  flush=True)
            return row

        rows = [measure(*c) for c in CORPUS]
        geo = lambda k: statistics.geometric_mean([x[k] for x in rows])
        print(f"{'geometric mean':<20} {'':>4} {'':>6} {geo('record_cpu'):5.2f}x "
              f"{geo('all_cpu'):5.2f}x {geo('auto_cpu'):5.2f}x {geo('tsan_cpu'):5.2f}x "
              f"{geo('hooks_cpu'):5.2f}x {geo('vs_tsan'):4.2f}x {geo('all_vs_tsan'):5.2f}x "
              f"{geo('estimate'):6.2f} "
              f"{geo('record_wall'):5.2f}x {geo('all_wall'):5.2f}x {geo('tsan_wall'):3.1f}x")
        for mode, cpu_key, key in (("record (default: bursts)", "record_cpu", "vs_tsan"),
                                   ("--sample 1 (every access)", "all_cpu", "all_vs_tsan")):
            worst = max(rows, key=lambda x: x[key])
            print(f"goal (CPU time): <= 3x geometric mean and <= tsan on every program; "
                  f"{mode}: {geo(cpu_key):.2f}x, worst against tsan: {worst['label']} "
                  f"{worst[key]:.2f}x")
        print("same placement as under TSan (not in the means):")
        for c in SAME_PLACEMENT:
            measure(*c)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
