#!/usr/bin/env python3
"""Speed bar for `lineup layout --all`: lineup vs pahole on the same BTF, side by side.

Runs both tools interleaved (so machine noise hits both alike), many times, and prints the
median wall time of each, their ratio, and each one's peak memory (max RSS). The goal from
issue 2: lineup takes at most half of pahole's wall time.

    python3 bench/layout_vs_pahole.py [--runs 30] [--btf data/vmlinux-6.18.44.btf]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Wall time and peak RSS (KiB) of one run of cmd, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--btf", default=os.path.join(ROOT, "data/vmlinux-6.18.44.btf"))
    args = ap.parse_args()
    if not shutil.which("pahole"):
        sys.exit("pahole not found (Debian package dwarves)")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    lineup = [os.path.join(ROOT, "target/release/lineup"), "layout", "--all", "--btf", args.btf]
    pahole = ["pahole", "-F", "btf", args.btf]
    version = subprocess.run(["pahole", "--version"], capture_output=True, text=True).stdout.strip()
    for cmd in (lineup, pahole):  # warm the page cache
        run(cmd)
    times = {"lineup": [], "pahole": []}
    rss = {"lineup": 0, "pahole": 0}
    for _ in range(args.runs):
        for name, cmd in (("lineup", lineup), ("pahole", pahole)):
            wall, peak = run(cmd)
            times[name].append(wall)
            rss[name] = max(rss[name], peak)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"layout of every struct in {os.path.basename(args.btf)}, {args.runs} interleaved runs, "
          f"{os.cpu_count()} CPUs")
    print(f"{'tool':<16} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'peak RSS MiB':>13}")
    for name, label in (("lineup", "lineup"), ("pahole", f"pahole {version}")):
        t = times[name]
        print(f"{label:<16} {med[name]*1e3:>10.1f} {min(t)*1e3:>8.1f} {max(t)*1e3:>8.1f} "
              f"{rss[name]/1024:>13.1f}")
    ratio = med["lineup"] / med["pahole"]
    verdict = "meets" if ratio <= 0.5 else "MISSES"
    print(f"lineup / pahole wall time: {ratio:.2f} ({verdict} the <= 0.50 goal)")


if __name__ == "__main__":
    main()
