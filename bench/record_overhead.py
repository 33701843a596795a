#!/usr/bin/env python3
"""Recording overhead: `lineup record -- PROG` against the same program built without
instrumentation, on the corpus in examples/record/, runs interleaved, medians side by side.

Each program is built twice: `clang -O2 -pthread` (native) and `lineup cc -O2 -pthread`
(recorded). The recorded wall time is the whole `lineup record` command: the program under
the runtime plus post-processing (attribution, simulation, writing the profile). The goal
is a mean ratio of at most 2 (Predator reports 5.4x).

    python3 bench/record_overhead.py [--runs 5] [--lineup target/release/lineup]

The "tight" rows run the per-thread counters with no work between accesses (bare loads
and stores in a loop, the worst case); they are printed but not in the corpus mean.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, arguments (threads, iterations, work rounds as each program takes them)
CORPUS = [
    ("counters", ["2", "20000000"]),
    ("stats", ["1", "20000000"]),
    ("account", ["2", "4000000"]),
    ("refcount", ["2", "20000000"]),
    ("ring", ["10000000"]),
    ("padded", ["2", "20000000"]),
    ("config", ["2", "20000000"]),
]
TIGHT = [
    ("counters", ["2", "50000000", "0"]),
]


def run(cmd, env=None):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - start


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
        built = {}
        for name, _ in CORPUS + TIGHT:
            if name in built:
                continue
            src = os.path.join(REPO, "examples", "record", name + ".c")
            native = os.path.join(work, name + "-native")
            recorded = os.path.join(work, name + "-recorded")
            subprocess.run([args.cc, "-O2", "-pthread", src, "-o", native], check=True)
            subprocess.run([args.lineup, "cc", "-O2", "-pthread", src, "-o", recorded], check=True)
            built[name] = (native, recorded)
        profile = os.path.join(work, "profile.json")

        def measure(name, prog_args):
            native, recorded = built[name]
            n, r = [], []
            run([native] + prog_args)  # warm the page cache
            for _ in range(args.runs):
                n.append(run([native] + prog_args))
                r.append(run([args.lineup, "record", "-o", profile, "--", recorded] + prog_args))
            return statistics.median(n), statistics.median(r)

        print(f"{'program':<22} {'native s':>9} {'recorded s':>11} {'ratio':>6}")
        ratios = []
        for name, prog_args in CORPUS:
            n, r = measure(name, prog_args)
            ratios.append(r / n)
            print(f"{name + ' ' + ' '.join(prog_args):<22} {n:9.3f} {r:11.3f} {r / n:6.2f}")
        mean = sum(ratios) / len(ratios)
        geo = statistics.geometric_mean(ratios)
        print(f"{'corpus mean':<22} {'':>9} {'':>11} {mean:6.2f}   (geometric mean {geo:.2f}; goal <= 2)")
        for name, prog_args in TIGHT:
            n, r = measure(name, prog_args)
            print(f"{'tight: ' + name + ' ' + ' '.join(prog_args):<22} {n:9.3f} {r:11.3f} {r / n:6.2f}   (not in the mean)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
