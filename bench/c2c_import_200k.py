#!/usr/bin/env python3
"""Import speed of a large `perf c2c report --stdio` text (issue 14: a 200k-line report must
import in under 3 s and 300 MB, and diagnose in under 5 s).

Writes a report in perf 6.x's layout (tests/data/c2c/perf6_hitm_full.txt's headers): N cache
lines of a kernel struct, each with a header row and 9 offset rows, ~200k lines in all, then
times `lineup import --c2c`, `lineup diagnose --type task_group --c2c` on it and `diagnose
--profile` on the imported profile, and prints wall time, CPU time and peak RSS (from
/usr/bin/time -v).

    python3 bench/c2c_import_200k.py [--lines 200000] [--lineup target/release/lineup]
"""
import argparse
import os
import re
import subprocess
import tempfile

HEAD = """=================================================
      Shared Cache Line Distribution Pareto
=================================================
#
#        ----- HITM -----  ------- Store Refs ------  --------- Data address ---------                      ---------- cycles ----------    Total       cpu                                   Shared
#   Num  RmtHitm  LclHitm   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt        Code address  rmt hitm  lcl hitm      load  records       cnt  Symbol                Object             Source:Line     Node
# .....  .......  .......  .......  .......  .......  ..................  ....  ......  ..................  ........  ........  ........  .......  ........  ..............................  .................  .....................  ....
#
"""
SYMS = ["update_load_avg", "update_cfs_group", "set_task_cpu", "enqueue_entity",
        "dequeue_entity", "select_task_rq_fair", "task_tick_fair", "reweight_entity"]


def write_report(path, target_lines):
    rows_per_line = 9
    n = target_lines // (rows_per_line + 3)
    with open(path, "w") as f:
        f.write(HEAD)
        for i in range(n):
            addr = 0xff284d17b5c00000 + i * 64
            f.write("  ----------------------------------------------------------------------\n")
            f.write(f"  {i:5d}  {1000 + i % 97:7d}  {900 + i % 89:7d}  {300 + i % 13:7d}  {i % 7:7d}  {0:7d}  {addr:#x}\n")
            f.write("  ----------------------------------------------------------------------\n")
            for r in range(rows_per_line):
                off = (r * 8) % 64
                sym = SYMS[(i + r) % len(SYMS)]
                f.write(f"      {10.0 + r:6.2f}%  {5.0 + r:6.2f}%  {2.0 * (r % 2):6.2f}%  {0.0:6.2f}%  {0.0:6.2f}%  {off:#18x}  {0:4d}  {1:6d}  {0xffffffff81000000 + i * 16 + r:#18x}  {500 + r:8d}  {300 + r:8d}  {200 + r:8d}  {100 + r:7d}  {8 + r:8d}  [k] {sym:26s}  [kernel.kallsyms]  {sym}+{r * 4}  0  1\n")
            f.write("\n")
    return sum(1 for _ in open(path))


def measure(cmd):
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", out.stderr).group(1)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    cpu = float(re.search(r"User time \(seconds\): (\S+)", out.stderr).group(1)) + float(
        re.search(r"System time \(seconds\): (\S+)", out.stderr).group(1))
    parts = [float(x) for x in wall.split(":")]
    secs = parts[-1] + 60 * (parts[-2] if len(parts) > 1 else 0)
    return out.returncode, secs, cpu, rss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=200000)
    ap.add_argument("--lineup", default="target/release/lineup")
    ap.add_argument("--btf", default="data/vmlinux-6.18.44.btf")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "c2c.txt")
        n = write_report(rep, a.lines)
        out = os.path.join(d, "profile.json")
        # CPU time (user + system) is printed beside wall time: on a shared machine the wall
        # clock measures the neighbours.
        rc, s, cpu, mb = measure([a.lineup, "import", "--c2c", rep, "-o", out])
        print(f"import   {n} lines: rc={rc} wall {s:.2f} s, cpu {cpu:.2f} s, peak RSS {mb:.0f} MB"
              " (target < 3 s, < 300 MB)")
        rc, s, cpu, mb = measure(
            [a.lineup, "diagnose", "--type", "task_group", "--btf", a.btf, "--c2c", rep])
        print(f"diagnose {n} lines: rc={rc} wall {s:.2f} s, cpu {cpu:.2f} s, peak RSS {mb:.0f} MB"
              " (target < 5 s)")
        # The saved profile read back (`diagnose --profile`), as a later run reads it.
        rc, s, cpu, mb = measure(
            [a.lineup, "diagnose", "--type", "task_group", "--btf", a.btf, "--profile", out])
        print(f"diagnose --profile of it: rc={rc} wall {s:.2f} s, cpu {cpu:.2f} s,"
              f" peak RSS {mb:.0f} MB")


if __name__ == "__main__":
    main()
