#!/usr/bin/env python3
"""Post-processing cost of `lineup record`, and a check that two lineup builds write the same
profile from the same recording.

Each program of bench/record_overhead.py's corpus is built once with `lineup cc` (the
first binary's) and recorded once with `--keep-raw`; then every binary given processes that
same raw directory with `lineup record --from-raw` (`--runs` times, medians), so the input
is identical and only lineup's own work is timed. Printed per program: the raw files'
size, the instrumented program's CPU seconds (from the recording run: the whole record
minus the first binary's post-processing), and per binary the post-processing CPU seconds
(user + system, wait4) and peak resident MiB. The profiles are compared with
`peak_rss_recorder` (lineup's own peak memory, which varies) removed: any other difference
is printed and makes the exit status 1. With `--whole`, each binary's whole `lineup record
-- PROG` (the program under the runtime plus post-processing) is timed too, runs
interleaved, and its CPU seconds and peak MiB printed beside the plain program's.

    python3 bench/record_postprocess.py OLD_LINEUP NEW_LINEUP [--runs 3] [--whole] [--keep DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_overhead import CORPUS, REPO, run  # noqa: E402


def profile(path):
    with open(path) as f:
        p = json.load(f)
    p.get("summary", {}).get("record", {}).pop("peak_rss_recorder", None)
    return p


def first_difference(a, b, where="$"):
    if type(a) is not type(b):
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'new' if k in b else 'old'}"
            d = first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lineups", nargs="+", help="lineup binaries: the first is the reference")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cc", default=shutil.which("clang") and "clang" or "gcc")
    ap.add_argument("--keep", help="work directory to keep (programs, raw recordings, profiles)")
    ap.add_argument("--whole", action="store_true", help="also time each binary's whole `lineup record`")
    args = ap.parse_args()
    for b in args.lineups:
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not an executable")
    work = args.keep or tempfile.mkdtemp(prefix="lineup-post-")
    os.makedirs(work, exist_ok=True)
    ref = args.lineups[0]
    env = dict(os.environ, LINEUP_CC=args.cc)
    differ = False
    cols = " ".join(f"{'post' + str(i) + ' cpu s':>12} {'MiB':>5}" for i in range(len(args.lineups)))
    if args.whole:
        cols += f" {'plain cpu':>9} " + " ".join(
            f"{'record' + str(i) + ' cpu s':>14} {'MiB':>5}" for i in range(len(args.lineups)))
    print(f"{'program':<18} {'raw MiB':>7} {'prog cpu':>8} {cols}")
    try:
        for label, src_name, opt, prog_args in CORPUS:
            src = os.path.join(REPO, "examples", "record", src_name + ".c")
            prog = os.path.join(work, src_name)
            raw = os.path.join(work, src_name + "-raw")
            shutil.rmtree(raw, ignore_errors=True)
            subprocess.run([ref, "cc", opt, "-pthread", src, "-o", prog], check=True, env=env)
            whole = run([ref, "record", "--keep-raw", raw, "-o", os.path.join(work, "rec.json"), "--", prog]
                        + prog_args)
            raw_mib = sum(os.path.getsize(os.path.join(raw, f)) for f in os.listdir(raw)) / 2**20
            results, profiles = [], []
            for i, b in enumerate(args.lineups):
                out = os.path.join(work, f"{src_name}-{i}.json")
                runs = [run([b, "record", "--from-raw", raw, "-o", out]) for _ in range(args.runs)]
                results.append((statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)))
                profiles.append(profile(out))
            prog_cpu = whole[1] - results[0][0]
            cells = " ".join(f"{c:12.3f} {m:5.0f}" for c, m in results)
            if args.whole:
                plain = os.path.join(work, src_name + "-plain")
                subprocess.run([args.cc, opt, "-g", "-pthread", src, "-o", plain], check=True)
                runs = {b: [] for b in ["plain"] + args.lineups}
                for _ in range(args.runs):
                    runs["plain"].append(run([plain] + prog_args))
                    for b in args.lineups:
                        runs[b].append(run([b, "record", "-o", os.path.join(work, "whole.json"), "--", prog]
                                           + prog_args))
                med = lambda b, i: statistics.median(r[i] for r in runs[b])
                cells += f" {med('plain', 1):9.3f} " + " ".join(
                    f"{med(b, 1):14.3f} {med(b, 2):5.0f}" for b in args.lineups)
            print(f"{label:<18} {raw_mib:7.1f} {prog_cpu:8.3f} {cells}", flush=True)
            for i, p in enumerate(profiles[1:], 1):
                d = first_difference(profiles[0], p)
                if d:
                    differ = True
                    print(f"  {label}: binary {i}'s profile differs from binary 0's: {d}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
