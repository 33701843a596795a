#!/usr/bin/env python3
"""Writes the synthetic `perf c2c report --stdio` samples in this directory.

The workload is invented (a producer/consumer ring buffer, `ringbench`, plus a kernel futex
bucket); the layout follows perf's tools/perf/builtin-c2c.c for each version and option set:
section titles, `key : value` totals, the two header lines with their group labels, the
cache line header rows and the per-offset rows with percentages of the line's totals.
Numbers are consistent: each row's percentages are its counts over the line's totals, so a
parser can recover the counts exactly (totals stay below 10000).

Run from this directory: python3 make_samples.py
"""

# CPUs 0-15 are node 0, 16-31 node 1.
NODE_OF = lambda cpu: 0 if cpu < 16 else 1
R = lambda a, b: list(range(a, b + 1))

# One row: offset, code address, symbol, object, source, counts, mean cycles, CPUs, pid, tid.
def row(off, ip, sym, obj, src, rmt=0, lcl=0, other=0, l1hit=0, l1miss=0, na=0,
        cyc=(0, 0, 0), cpus=(), pid=4242, tid=(4243, "ringbench"), kernel=False):
    return dict(off=off, ip=ip, sym=sym, obj=obj, src=src, rmt=rmt, lcl=lcl, other=other,
                l1hit=l1hit, l1miss=l1miss, na=na, cyc=cyc, cpus=list(cpus), pid=pid,
                tid=tid, kernel=kernel)

BIN = "ringbench"
KSYMS = "[kernel.kallsyms]"

def x86_lines(base_user, base_kernel):
    return [
        dict(addr=base_user, node="0", pa=1, rows=[
            row(0x0, base_user - 0x2039f0, "ring_push", BIN, "ring.c:57", rmt=95, lcl=410, other=300,
                cyc=(1210, 402, 180), cpus=R(0, 7)),
            row(0x0, base_user - 0x2039d3, "ring_push", BIN, "ring.c:61", l1hit=1200, l1miss=35,
                cpus=R(0, 7)),
            row(0x0, base_user - 0x202fb4, "ring_pop", BIN, "ring.c:84", rmt=280, lcl=30, other=410,
                cyc=(1344, 388, 210), cpus=R(16, 23), tid=(4244, "ringbench")),
            row(0x8, base_user - 0x2039ce, "ring_push", BIN, "ring.c:58", rmt=310, lcl=40, other=500,
                cyc=(1290, 415, 175), cpus=R(0, 7)),
            row(0x8, base_user - 0x202fa0, "ring_pop", BIN, "ring.c:80", rmt=120, lcl=350, other=260,
                cyc=(1188, 377, 199), cpus=R(16, 23), tid=(4244, "ringbench")),
            row(0x8, base_user - 0x202f7c, "ring_pop", BIN, "ring.c:88", l1hit=980, l1miss=22,
                cpus=R(16, 23), tid=(4244, "ringbench")),
            row(0x10, base_user - 0x202340, "stats_reader", BIN, "stats.c:19", rmt=3, lcl=12, other=90,
                cyc=(990, 350, 160), cpus=[31], tid=(4250, "stats thread")),
        ]),
        dict(addr=base_user + 0x40, node="0", pa=1, rows=[
            row(0x0, base_user - 0x203980, "ring_push", BIN, "ring.c:64", rmt=160, lcl=220, other=40,
                l1hit=380, l1miss=12, cyc=(1402, 460, 220), cpus=R(0, 7)),
            row(0x0, base_user - 0x202f68, "ring_pop", BIN, "ring.c:91", rmt=170, lcl=190, other=35,
                l1hit=350, l1miss=9, cyc=(1377, 441, 230), cpus=R(16, 23), tid=(4244, "ringbench")),
        ]),
        dict(addr=base_kernel, node="1", pa=2, rows=[
            row(0x0, 0xffffffff9a1f2c31, "futex_wake", KSYMS, "core.c:1604", rmt=18, lcl=40, other=60,
                cyc=(2210, 690, 310), cpus=R(0, 3) + R(16, 19), pid=-1, tid=(0, "swapper"), kernel=True),
            row(0x0, 0xffffffff9a1f1e07, "futex_q_lock", KSYMS, "core.c:519", rmt=11, lcl=25, other=5,
                l1hit=70, cyc=(2480, 720, 290), cpus=R(0, 5) + R(16, 21), pid=-1, tid=(0, "swapper"),
                kernel=True),
            row(0x8, 0xffffffff9a9b3a10, "_raw_spin_lock", KSYMS, "spinlock.c:154", rmt=14, lcl=30,
                other=8, l1hit=55, l1miss=4, cyc=(2655, 801, 305), cpus=R(0, 2) + R(16, 18), pid=-1,
                tid=(0, "swapper"), kernel=True),
        ]),
    ]


def totals(line):
    t = dict(rmt=0, lcl=0, other=0, l1hit=0, l1miss=0, na=0)
    for r in line["rows"]:
        for k in t:
            t[k] += r[k]
    t["loads"] = t["rmt"] + t["lcl"] + t["other"]
    t["stores"] = t["l1hit"] + t["l1miss"] + t["na"]
    t["records"] = t["loads"] + t["stores"]
    o = t["other"]
    t["fb"], t["l2"], t["llc"] = round(o * 0.1), round(o * 0.05), round(o * 0.15)
    t["l1"] = o - t["fb"] - t["l2"] - t["llc"]
    return t


def pct(v, total):
    return "%.2f%%" % (100.0 * v / total if total else 0.0)


def fmt_table(lines0, lines1, rows, widths, aligns=None):
    """Header lines and rows, columns separated by two spaces as perf's hists printer does.
    lines0: list of (first column index, span, text); lines1: labels; rows: lists of text."""
    aligns = aligns or ["r"] * len(widths)
    for r in rows:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    for i, l in enumerate(lines1):
        widths[i] = max(widths[i], len(l))
    starts, pos = [], 2
    for w in widths:
        starts.append(pos)
        pos += w + 2
    top = [" "] * pos
    for first, span, text in lines0:
        width = sum(widths[first:first + span]) + 2 * (span - 1)
        if text.startswith("-"):
            label = text.strip("- ")
            text = (" " + label + " ").center(width, "-")
        text = text.rjust(width)
        for j, ch in enumerate(text):
            top[starts[first] + j] = ch
    out = ["#" + "".join(top)[1:].rstrip()]
    out.append("# " + "  ".join(l.rjust(w) if a == "r" else l.ljust(w)
                               for l, w, a in zip(lines1, widths, aligns)).rstrip())
    out.append("# " + "  ".join("." * w for w in widths))
    out.append("#")
    body = ["  " + "  ".join(v.rjust(w) if a == "r" else v.ljust(w)
                             for v, w, a in zip(r, widths, aligns)).rstrip() for r in rows]
    return out, body


def kv(title, pairs):
    out = ["=================================================",
           title.center(49).rstrip(),
           "================================================="]
    for k, v in pairs:
        if isinstance(v, float):
            out.append("  %-34s: %10.1f%%" % (k, v))
        elif isinstance(v, str):
            out.append("  %-34s: %s" % (k, v))
        else:
            out.append("  %-34s: %10d" % (k, v))
    return out


def trace_events(lines, new):
    ts = [totals(l) for l in lines]
    s = lambda k: sum(t[k] for t in ts)
    bg_loads, bg_stores = 183000, 42000
    loads, stores = s("loads") + bg_loads, s("stores") + bg_stores
    p = [("Total records", loads + stores), ("Locked Load/Store Operations", 1893),
         ("Load Operations", loads), ("Loads - uncacheable", 0), ("Loads - IO", 0),
         ("Loads - Miss", 0), ("Loads - no mapping", 61), ("Load Fill Buffer Hit", 9120),
         ("Load L1D hit", 150210), ("Load L2D hit", 6233), ("Load LLC hit", 13370 + s("lcl")),
         ("Load Local HITM", s("lcl")), ("Load Remote HITM", s("rmt")), ("Load Remote HIT", 220),
         ("Load Local DRAM", 1904), ("Load Remote DRAM", 880), ("Load MESI State Exclusive", 2784),
         ("Load MESI State Shared", 0), ("Load LLC Misses", 3004 + s("rmt"))]
    if new:
        p += [("Load access blocked by data", 0), ("Load access blocked by address", 0),
              ("Load HIT Local Peer", 0), ("Load HIT Remote Peer", 0)]
    llc = 3004 + s("rmt")
    p += [("LLC Misses to Local DRAM", 100.0 * 1904 / llc), ("LLC Misses to Remote DRAM", 100.0 * 880 / llc),
          ("LLC Misses to Remote cache (HIT)", 100.0 * 220 / llc),
          ("LLC Misses to Remote cache (HITM)", 100.0 * s("rmt") / llc),
          ("Store Operations", stores), ("Store - uncacheable", 0), ("Store - no mapping", 3),
          ("Store L1D Hit", 40950 + s("l1hit")), ("Store L1D Miss", bg_stores - 40950 - 3 + s("l1miss"))]
    if new:
        p += [("Store No available memory level", s("na"))]
    p += [("No Page Map Rejects", 412), ("Unable to parse data source", 0)]
    out = kv("Trace Event Information", p)
    g = [("Total Shared Cache Lines", len(lines)), ("Load HITs on shared lines", s("loads")),
         ("Fill Buffer Hits on shared lines", s("fb")), ("L1D hits on shared lines", s("l1")),
         ("L2D hits on shared lines", s("l2")), ("LLC hits on shared lines", s("llc") + s("lcl"))]
    if new:
        g += [("Load hits on peer cache or nodes", 0)]
    g += [("Locked Access on shared lines", 412), ]
    if new:
        g += [("Blocked Access on shared lines", 0)]
    g += [("Store HITs on shared lines", s("stores")), ("Store L1D hits on shared lines", s("l1hit"))]
    if new:
        g += [("Store No available memory level", s("na"))]
    g += [("Total Merged records", s("rmt") + s("lcl") + s("stores"))]
    return out + [""] + kv("Global Shared Cache Line Event Information", g)


def details(events, sort_on, grouping):
    out = kv("c2c details", [("Events", events[0])])
    out += ["%-36s: %s" % ("", e) for e in events[1:]]
    out += ["  %-34s: %s" % ("Cachelines sort on", sort_on),
            "  %-34s: %s" % ("Cacheline data grouping", grouping)]
    return out


def table_new(lines, peer=False):
    ts = [totals(l) for l in lines]
    snoop_tot = sum(t["rmt"] + t["lcl"] for t in ts)
    rows = []
    for i, (l, t) in enumerate(zip(lines, ts)):
        tot = t["rmt"] + t["lcl"]
        local, remote = (t["lcl"], t["rmt"])
        rows.append([str(i), "0x%x" % l["addr"], l["node"], str(l["pa"]), pct(tot, snoop_tot),
                     str(tot), str(local), str(remote), str(t["records"]), str(t["loads"]),
                     str(t["stores"]), str(t["l1hit"]), str(t["l1miss"]), str(t["na"]), str(t["fb"]),
                     str(t["l1"]), str(t["l2"]), str(t["llc"]), str(0 if peer else t["lcl"]),
                     "0", str(0 if peer else t["rmt"]), "0", "0"])
    labels = ["Index", "Address", "Node", "PA cnt", "Snoop" if peer else "Hitm", "Total",
              "Local" if peer else "LclHitm", "Remote" if peer else "RmtHitm", "records", "Loads",
              "Stores", "L1Hit", "L1Miss", "N/A", "FB", "L1", "L2", "LclHit", "LclHitm", "RmtHit",
              "RmtHitm", "Lcl", "Rmt"]
    top = [(1, 3, "-Cacheline-"), (4, 1, "Peer" if peer else "Tot"),
           (5, 3, "- Load Peer -" if peer else "- Load Hitm -"), (8, 1, "Total"), (9, 1, "Total"),
           (10, 1, "Total"), (11, 3, "- Stores -"), (14, 3, "- Core Load Hit -"),
           (17, 2, "- LLC Load Hit -"), (19, 2, "- RMT Load Hit -"), (21, 2, "- Load Dram -")]
    widths = [5, 18, 4, 6] + [7] * 13 + [8, 7, 8, 7, 8, 8]
    head, body = fmt_table(top, labels, rows, widths)
    return ["", "=================================================",
            "           Shared Data Cache Line Table          ",
            "================================================="] + ["#"] + head + body


def table_old(lines):
    ts = [totals(l) for l in lines]
    hitm_tot = sum(t["rmt"] + t["lcl"] for t in ts)
    rows = []
    for i, (l, t) in enumerate(zip(lines, ts)):
        tot = t["rmt"] + t["lcl"]
        rows.append([str(i), "0x%x" % l["addr"], str(t["records"]), pct(tot, hitm_tot), str(tot),
                     str(t["lcl"]), str(t["rmt"]), str(t["stores"]), str(t["l1hit"]), str(t["l1miss"]),
                     "0", "0", str(t["rmt"]), str(t["loads"]), str(t["fb"]), str(t["l1"]), str(t["l2"]),
                     str(t["llc"]), "0"])
    labels = ["Index", "Cacheline", "records", "Hitm", "Total", "Lcl", "Rmt", "Total", "L1Hit",
              "L1Miss", "Lcl", "Rmt", "Ld Miss", "Loads", "FB", "L1", "L2", "Llc", "Rmt"]
    top = [(2, 1, "Total"), (3, 1, "Tot"), (4, 3, "- LLC Load Hitm -"), (7, 3, "- Store Reference -"),
           (10, 2, "- Load Dram -"), (12, 1, "LLC"), (13, 1, "Total"), (14, 3, "- Core Load Hit -"),
           (17, 2, "- LLC Load Hit -")]
    widths = [5, 18] + [7] * 8 + [8, 8, 7, 7, 7, 7, 7, 8, 8]
    head, body = fmt_table(top, labels, rows, widths)
    return ["", "=================================================",
            "           Shared Data Cache Line Table          ",
            "================================================="] + ["#"] + head + body


def node_text(cpus, mode, t_line, r, peer):
    nodes = sorted({NODE_OF(c) for c in cpus})
    parts = []
    for n in nodes:
        mine = [c for c in cpus if NODE_OF(c) == n]
        if mode == 0:
            parts.append("%2d" % n)
        elif mode == 1:
            # Share of the row's snoops and stores made from this node's CPUs (evenly spread).
            snoops = r["rmt"] + r["lcl"]
            stores = r["l1hit"] + r["l1miss"] + r["na"]
            share = 100.0 * len(mine) / len(cpus)
            a = "%5.1f%% " % share if snoops else "%6s " % "n/a"
            b = "%5.1f%%}" % share if stores else "%6s}" % "n/a"
            parts.append("%2d{%2d " % (n, len(mine)) + a + b)
        else:
            parts.append("%2d{%s}" % (n, cpulist(mine)))
    return " ".join(parts)


def cpulist(cpus):
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def pareto(lines, cols, peer=False, node_mode=0, na=True, old_labels=False):
    """cols: which optional columns appear: 'node' (Node + PA cnt), 'pid', 'tid', 'src'."""
    labels = ["Num"]
    labels += (["Rmt", "Lcl"] if peer or old_labels else ["RmtHitm", "LclHitm"])
    labels += ["L1 Hit", "L1 Miss"] + (["N/A"] if na else [])
    labels += ["Offset"] + (["Node", "PA cnt"] if "node" in cols else [])
    labels += (["Pid"] if "pid" in cols else []) + (["Tid"] if "tid" in cols else [])
    labels += ["Code address"]
    labels += ["rmt peer", "lcl peer"] if peer else ["rmt hitm", "lcl hitm"]
    labels += ["load", "records", "cnt", "Symbol", "Object"] + (["Source:Line"] if "src" in cols else [])
    labels += [{0: "Node", 1: "Node{cpus %peers %stores}" if peer else "Node{cpus %hitms %stores}",
                2: "Node{cpu list}"}[node_mode]]
    idx = {l: i for i, l in enumerate(labels)}
    nst = 3 if na else 2
    top = [(1, 2, "-- Peer Snoop --" if peer else "----- HITM -----"),
           (3, nst, "- Store Refs -"),
           (idx["Offset"], 1 + (2 if "node" in cols else 0), "- Data address -"),
           (idx["rmt peer" if peer else "rmt hitm"], 3, "- cycles -"),
           (idx["records"], 1, "Total"), (idx["cnt"], 1, "cpu"), (idx["Object"], 1, "Shared")]
    rows, cl_rows = [], []
    for li, l in enumerate(lines):
        t = totals(l)
        hdr = [str(li), str(t["rmt"]), str(t["lcl"]), str(t["l1hit"]), str(t["l1miss"])]
        hdr += [str(t["na"])] if na else []
        cl_rows.append(hdr + ["0x%x" % l["addr"]])
        body = []
        for r in l["rows"]:
            v = ["", pct(r["rmt"], t["rmt"]), pct(r["lcl"], t["lcl"]), pct(r["l1hit"], t["l1hit"]),
                 pct(r["l1miss"], t["l1miss"])] + ([pct(r["na"], t["na"])] if na else [])
            v += ["0x%x" % r["off"]]
            if "node" in cols:
                v += ["N/A" if peer else l["node"], "0" if peer else str(l["pa"])]
            if "pid" in cols:
                v += [str(r["pid"])]
            if "tid" in cols:
                v += ["%7d:%s" % r["tid"]]
            loads = r["rmt"] + r["lcl"] + r["other"]
            stores = r["l1hit"] + r["l1miss"] + r["na"]
            v += ["0x%x" % r["ip"]] + ["%6.0f" % c for c in r["cyc"]]
            v += [str(loads + stores), str(len(r["cpus"])),
                  ("[k] " if r["kernel"] else "[.] ") + r["sym"], r["obj"]]
            v += [r["src"]] if "src" in cols else []
            v += [node_text(r["cpus"], node_mode, t, r, peer)]
            body.append(v)
        rows.append(body)
    aligns = ["r"] * len(labels)
    for l in ("Symbol", "Object", "Source:Line"):
        if l in idx:
            aligns[idx[l]] = "l"
    aligns[-1] = "l"
    widths = [5] + [7] * (nst + 2) + [18] + ([4, 6] if "node" in cols else []) + \
             ([7] if "pid" in cols else []) + ([16] if "tid" in cols else []) + [18, 8, 8, 8, 7, 8, 20, 10] + \
             ([14] if "src" in cols else []) + [4]
    flat = [r for body in rows for r in body]
    head, _ = fmt_table(top, labels, flat, widths, aligns)
    out = ["", "=================================================",
           "      Shared Cache Line Distribution Pareto      ",
           "=================================================", "#"] + head
    for li, body in enumerate(rows):
        if li:
            out.append("")
        out.append("  " + "-" * 70)
        c = cl_rows[li]
        out.append("  " + "  ".join(x.rjust(w) for x, w in zip(c, [5] + [7] * (len(c) - 2) + [18])))
        out.append("  " + "-" * 70)
        for r in body:
            out.append("  " + "  ".join(v.rjust(w) if a == "r" else v.ljust(w)
                                        for v, w, a in zip(r, widths, aligns)).rstrip())
    return out


def write(name, lines):
    with open(name, "w") as f:
        f.write("\n".join(lines) + "\n")


def perf_header(version, cmd):
    return ["# ========", "# captured on    : Tue Mar  4 10:12:31 2025", "# header version : 1",
            "# data offset    : 1104", "# hostname : bench-2s", "# os release : 6.8.0-51-generic",
            "# perf version : %s" % version, "# arch : x86_64", "# nrcpus online : 32",
            "# nrcpus avail : 32", "# cpudesc : Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz",
            "# cmdline : %s" % cmd, "# node0 meminfo  : total = 65536000 kB, free = 60012300 kB",
            "# node0 cpu list : 0-15", "# node1 meminfo  : total = 65536000 kB, free = 61200400 kB",
            "# node1 cpu list : 16-31", "# ========", "#", ""]


def main():
    user, kern = 0x55d1c2a3e0c0, 0xffff8f2a41c3d240
    x86 = x86_lines(user, kern)
    ev_new = ["cpu_core/mem-loads-aux/", "cpu_core/mem-loads,ldlat=30/P", "cpu_core/mem-stores/P"]
    ev_old = ["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]

    # 1. perf 6.x, default display (tot), default grouping, --header.
    write("perf6_hitm_full.txt",
          perf_header("6.8.12", "/usr/bin/perf c2c record -a -- sleep 5")
          + trace_events(x86, True) + [""] + details(ev_new, "Total HITMs", "offset,iaddr")
          + table_new(x86) + pareto(x86, {"node", "src"}))

    # 2. perf 4.x classic: Rmt/Lcl HITM, no store N/A, Pid column, -NN cpu lists.
    old = [dict(l, rows=[r for r in l["rows"]]) for l in x86]
    write("perf4_classic_nn.txt",
          ["# To display the perf.data header info, please use --header/--header-only options.", "#", ""]
          + trace_events(old, False) + [""] + details(ev_old, "Total HITMs", "offset,pid,iaddr")
          + table_old(old) + pareto(old, {"pid", "src"}, node_mode=2, na=False, old_labels=True))

    # 3. Arm SPE: peer snoops instead of HITM, no physical addresses, -N node details.
    arm_user = 0xaaaad3f0e040
    arm = []
    for l in x86[:2]:
        rows = []
        for r in l["rows"]:
            rows.append(dict(r, ip=r["ip"] - user + arm_user - 0x1000, cyc=(r["cyc"][0] // 3, r["cyc"][1] // 3,
                                                                           r["cyc"][2])))
        arm.append(dict(l, addr=l["addr"] - user + arm_user, node="N/A", pa=0, rows=rows))
    write("perf6_peer_arm.txt",
          trace_events(arm, True) + [""] + details(["arm_spe_0/ts_enable=1,pa_enable=1,load_filter=1,"
                                                    "store_filter=1,min_latency=30/"], "Peer Snoop",
                                                   "offset,iaddr")
          + table_new(arm, peer=True) + pareto(arm, {"node", "src"}, peer=True, node_mode=1))

    # 4. perf 6.x, -d lcl -c pid,tid,iaddr --no-source.
    write("perf6_lcl_pid_tid.txt",
          trace_events(x86, True) + [""] + details(ev_new, "Local HITMs", "offset,pid,tid,iaddr")
          + table_new(x86) + pareto(x86, {"node", "pid", "tid"}))

    # 5. The Pareto of (1) pasted into a mail: quoted, headers gone, whitespace collapsed,
    #    behind a caption.
    par = pareto(x86, {"node", "src"})
    rows = [l for l in par if l.strip() and not l.startswith("#") and "=====" not in l
            and "Pareto" not in l]
    write("paste_quoted.txt",
          ["On Tue, Mar 4, someone wrote:", "> The ring head and tail share a line:", ">"]
          + ["> " + " ".join(l.split()) for l in rows] + [">", "> Any idea?"])


if __name__ == "__main__":
    main()
