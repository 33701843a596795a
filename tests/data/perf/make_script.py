#!/usr/bin/env python3
"""Writes mem_script.txt: `perf script` lines of memory samples in the layouts perf prints
(tools/perf/builtin-script.c: comm, pid/tid, [cpu], time, event, addr, data_src as raw hex
plus its decoding, weight, ip sym+off (dso)). The raw data_src values encode
union perf_mem_data_src (include/uapi/linux/perf_event.h) consistently with the text.
Run from this directory: python3 make_script.py"""

OP = dict(NA=1, LOAD=2, STORE=4)
LVL = dict(NA=1, HIT=2, MISS=4, L1=8, LFB=0x10, L2=0x20, L3=0x40, LOC_RAM=0x80,
           REM_RAM1=0x100, REM_RAM2=0x200, REM_CCE1=0x400, REM_CCE2=0x800)
SNP = dict(NA=1, NONE=2, HIT=4, MISS=8, HITM=0x10)
LCK = dict(NO=0, NA=1, LOCKED=2)
TLB_L1L2_HIT = 0x2 | 0x8 | 0x10

def src(op, lvls, snp, lock="NO"):
    v = OP[op] | (sum(LVL[l] for l in lvls) << 5) | (SNP[snp] << 19) | (LCK[lock] << 24)
    return v | (TLB_L1L2_HIT << 26)

LVLTXT = {("HIT", "L1"): "L1 hit", ("HIT", "L3"): "L3 hit", ("HIT", "REM_CCE1"): "Remote Cache (1 hop) hit",
          ("HIT", "LOC_RAM"): "Local RAM hit", ("NA",): "N/A"}
SNPTXT = dict(NONE="None", HITM="HitM", HIT="Hit", NA="N/A")

def decode(op, lvls, snp, lock, new):
    lck = {"NO": "No", "LOCKED": "Yes", "NA": "N/A"}[lock]
    rest = "%s|SNP %s|TLB L1 or L2 hit|LCK %s" % (LVLTXT[tuple(lvls)], SNPTXT[snp], lck)
    if new:
        return "|OP %s|LVL %s|BLK  N/A" % (op, rest)
    return rest

LINE = 0x55d1c2a3e0c0
samples = [
    # comm, pid, tid, cpu, time, event, addr, op, lvls, snp, lock, weight, ip, sym, new
    ("ringbench", 4242, 4243, 2, "5123.000101", "cpu/mem-loads,ldlat=30/P", LINE + 0x0, "LOAD", ["HIT", "L1"], "NONE", "NO", 41, 0x55d1c283a6d0, "ring_push+0x40", True),
    ("ringbench", 4242, 4243, 3, "5123.000180", "cpu/mem-loads,ldlat=30/P", LINE + 0x8, "LOAD", ["HIT", "REM_CCE1"], "HITM", "NO", 1290, 0x55d1c283a6f2, "ring_push+0x62", True),
    ("ringbench", 4242, 4243, 2, "5123.000250", "cpu/mem-loads,ldlat=30/P", LINE + 0x8, "LOAD", ["HIT", "REM_CCE1"], "HITM", "NO", 1310, 0x55d1c283a6f2, "ring_push+0x62", True),
    ("ringbench", 4242, 4244, 17, "5123.000301", "cpu/mem-loads,ldlat=30/P", LINE + 0x8, "LOAD", ["HIT", "L3"], "HITM", "NO", 380, 0x55d1c283b120, "ring_pop+0x20", True),
    ("ringbench", 4242, 4244, 18, "5123.000390", "cpu/mem-loads,ldlat=30/P", LINE + 0x8, "LOAD", ["HIT", "L3"], "HITM", "NO", 400, 0x55d1c283b120, "ring_pop+0x20", True),
    ("ringbench", 4242, 4243, 2, "5123.000402", "cpu/mem-stores/P", LINE + 0x0, "STORE", ["HIT", "L1"], "NA", "NO", 0, 0x55d1c283a6ed, "ring_push+0x5d", True),
    ("ringbench", 4242, 4243, 5, "5123.000433", "cpu/mem-stores/P", LINE + 0x0, "STORE", ["HIT", "L1"], "NA", "NO", 0, 0x55d1c283a6ed, "ring_push+0x5d", True),
    ("ringbench", 4242, 4244, 17, "5123.000500", "cpu/mem-stores/P", LINE + 0x8, "STORE", ["HIT", "L1"], "NA", "NO", 0, 0x55d1c283b144, "ring_pop+0x44", True),
    # lock xadd on the shared counter: a locked load that found the line modified.
    ("ringbench", 4242, 4243, 5, "5123.000610", "cpu/mem-loads,ldlat=30/P", LINE + 0x40, "LOAD", ["HIT", "L3"], "HITM", "LOCKED", 460, 0x55d1c283a740, "ring_push+0xb0", True),
    ("ringbench", 4242, 4244, 20, "5123.000700", "cpu/mem-loads,ldlat=30/P", LINE + 0x40, "LOAD", ["HIT", "REM_CCE1"], "HITM", "LOCKED", 1377, 0x55d1c283b158, "ring_pop+0x58", True),
    # Older perf: no OP/LVL labels, no BLK.
    ("ringbench", 4242, 4250, 31, "5123.000800", "cpu/mem-loads,ldlat=30/P", LINE + 0x10, "LOAD", ["HIT", "L3"], "HITM", "NO", 350, 0x55d1c283bd80, "stats_reader+0x10", False),
    # No data address: perf could not resolve it; skipped.
    ("ringbench", 4242, 4243, 2, "5123.000900", "cpu/mem-loads,ldlat=30/P", 0, "LOAD", ["HIT", "L1"], "NONE", "NO", 33, 0x55d1c283a6d0, "ring_push+0x40", True),
]

out = ["# ========", "# captured on    : Tue Mar  4 10:20:01 2025", "# perf version : 6.8.12",
       "# ========", "#"]
for (comm, pid, tid, cpu, t, ev, addr, op, lvls, snp, lock, w, ip, sym, new) in samples:
    v = src(op, lvls, snp, lock)
    d = "%16x %s" % (v, decode(op, lvls, snp, lock, new))
    out.append("%16s %5d/%-5d [%03d] %s: %30s: %16x %-80s %16d %16x %s (/usr/bin/ringbench)"
               % (comm, pid, tid, cpu, t, ev, addr, d, w, ip, sym))
    if sym.startswith("ring_pop+0x20"):
        # A call chain under a sample (perf script -G off shows frames indented).
        out.append("\t    55d1c283c010 consumer_main+0x70 (/usr/bin/ringbench)")
# A hand-trimmed paste of one sample, without the raw value.
out.append("[019] 55d1c2a3e0d0 LOAD|L1 hit|SNP None|TLB L1 or L2 hit|LCK No 35 55d1c283bd94 stats_reader+0x24 (/usr/bin/ringbench)")
open("mem_script.txt", "w").write("\n".join(out) + "\n")
