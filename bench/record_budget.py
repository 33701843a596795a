#!/usr/bin/env python3
"""Issue 16's memory acceptance at full size: `lineup record` of a program with a 1 GiB
footprint and about 10^9 accesses stays under the memory budget (default 512 MiB).

`examples/record/stream.c MIB PASSES` stores every long of a MIB MiB array once and loads
it PASSES times, from two threads: exactly (1 + PASSES) * MIB * 2^20 / 8 accesses. With
MIB = 1024 and PASSES = 7 that is 2^30 = 1,073,741,824 accesses over 1 GiB. The test suite
runs the same program at 128 MiB under a 48 MiB budget (tests/record_memory.rs); this
script is the full-size run, too long for the suite on a 2-core machine.

Printed: the plain run's peak RSS (the program's own footprint), then for `lineup record`
the peak RSS of lineup itself and of the recorded program (both from the profile's
summary.record, which lineup takes from wait4/getrusage), what the runtime added to the
program, the budget, the accesses counted against the exact number, the budget level
reached, and the wall and CPU times of both runs. Exit status 1 when either side exceeds
the budget or the count is not exact.

    python3 bench/record_budget.py [--mib 1024] [--passes 7] [--memory 512M]
        [--lineup target/release/lineup]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def timed(cmd, **kw):
    """Runs cmd to its end; returns (status, wall s, cpu s, peak RSS bytes) from wait4."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    return (
        os.waitstatus_to_exitcode(status),
        wall,
        ru.ru_utime + ru.ru_stime,
        ru.ru_maxrss * 1024,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--memory", default="512M")
    ap.add_argument("--lineup", default=os.path.join(REPO, "target/release/lineup"))
    a = ap.parse_args()
    budget = size(a.memory)
    exact = (1 + a.passes) * a.mib * (1 << 20) // 8

    with tempfile.TemporaryDirectory(prefix="lineup-budget-") as tmp:
        env = dict(os.environ, LINEUP_CACHE_DIR=os.path.join(tmp, "cache"), TMPDIR=tmp)
        prog = os.path.join(tmp, "stream")
        subprocess.run(
            [a.lineup, "cc", "-O2", "-fno-tree-vectorize", "-pthread",
             os.path.join(REPO, "examples/record/stream.c"), "-o", prog],
            check=True, env=env,
        )
        args = [str(a.mib), str(a.passes)]
        code, pwall, pcpu, plain = timed([prog] + args, stdout=subprocess.DEVNULL, env=env)
        if code != 0:
            sys.exit(f"record_budget: {prog} {' '.join(args)} exited {code}")
        profile = os.path.join(tmp, "p.json")
        code, rwall, rcpu, _ = timed(
            [a.lineup, "record", "--memory", a.memory, "-o", profile, "--", prog] + args,
            stdout=subprocess.DEVNULL, env=env,
        )
        if code != 0:
            sys.exit(f"record_budget: lineup record exited {code}")
        with open(profile) as f:
            rec = json.load(f)["summary"]["record"]

    recorder = int(rec["peak_rss_recorder"])
    program = int(rec["peak_rss_program"])
    added = max(0, program - plain)
    accesses = int(rec["accesses"])
    mib = lambda b: b / (1 << 20)
    print(f"program: examples/record/stream.c {a.mib} MiB, {a.passes} passes, "
          f"{exact:,} accesses exactly; budget {a.memory} ({mib(budget):.0f} MiB)")
    print(f"plain run:      {pwall:7.2f} s wall {pcpu:7.2f} s cpu  peak {mib(plain):7.0f} MiB")
    print(f"lineup record:  {rwall:7.2f} s wall {rcpu:7.2f} s cpu  "
          f"({rwall / pwall:.1f}x wall, {rcpu / max(pcpu, 1e-9):.1f}x cpu)")
    print(f"  lineup peak RSS            {mib(recorder):7.0f} MiB  (budget {mib(budget):.0f})")
    print(f"  recorded program peak RSS  {mib(program):7.0f} MiB  "
          f"(+{mib(added):.0f} MiB over the plain run)")
    print(f"  accesses counted           {accesses:,} (exact: {exact:,})")
    print(f"  budget level reached       {int(rec.get('budget_level', 0))}")
    ok = recorder <= budget and added <= budget and exact <= accesses <= exact + 100
    print("within budget, counts exact" if ok else "FAILED: over budget or inexact counts")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
