#!/usr/bin/env python3
"""Writes the synthetic `perf report --stdio -s type,typeoff` samples in this directory
(perf's data-type profiling, Linux 6.8+). This machine has no PMU, so the reports are
written in the layouts perf prints, following its source and the maintainers' own examples:

- tools/perf/util/sort.c: the `type` key prints the type name padded to the column width
  ("%-*s"); the `typeoff` key prints "%s %+d (%s)" (type, offset, member path; perf 6.8 to
  6.11), "%s +%#x (%s)" from perf 6.12 ("perf annotate-data: Show offset and size in hex",
  Namhyung Kim, 2024-08), and for the pseudo types "(unknown)", "(stack operation)" and
  "(stack canary)" only the name from perf 6.15 ("perf annotate-data: Add
  annotated_data_type__get_member_name()", 2025-03). Members are joined with '.'
  (fill_member_name), "no field" for types without members. The column widths of `type`
  and `typeoff` are not computed from the entries, so longer names overflow them.
- tools/perf/builtin-report.c hists__fprintf_nr_sample_events(): "# Samples: %lu%c of
  event '%s'" (the count in K/M after 1000, rounded down) and "# Event count (approx.):".
- tools/perf/ui/stdio/hist.c: columns separated by two spaces, --hierarchy indents each
  level by 3 and prints "Data Type / Data Type Offset" as one header.
- Example outputs in the patch series "perf tools: Introduce data type profiling" (Namhyung
  Kim, LKML 2023-10 to 2023-12) and Athira Rajeev's powerpc series (2024-05), whose
  non-hierarchy paste shows the overflowing Data Type column.

Numbers are invented but consistent: each row's overhead is its period over the event's
total period; hierarchy parents are the sums of their children.

Run from this directory: python3 make_typeoff.py
"""

W = 9  # width of the Data Type column: its header's length


def cx(off):
    """C's "%#x": 0 prints as "0", not "0x0"."""
    return "%#x" % off if off else "0"


def pct(x):
    return "%9.2f%%" % x


def header_lines(sample_hdr, labels, dots):
    return [sample_hdr[0], sample_hdr[1], "#", labels, dots, "#"]


def samples_line(n):
    if n > 1000:
        return "%dK" % (n // 1000)
    return "%d" % n


# ---------------------------------------------------------------------------------------
# typeoff_plain.txt: perf 6.8, `perf report --stdio --header -s type,typeoff` of
# `perf mem record -a -K -- sleep 5` (loads only), decimal offsets, old pseudo-type rows.
# ---------------------------------------------------------------------------------------

PLAIN = [
    ("(unknown)", 0, "no field", 31.27),
    ("(stack operation)", 0, "no field", 11.84),
    ("struct task_struct", 800, "cpus_ptr", 6.52),
    ("struct rq", 2776, "clock", 5.33),
    ("long unsigned int", 0, "no field", 4.95),
    ("struct task_struct", 860, "rcu_read_lock_nesting", 3.21),
    ("struct cfs_rq", 160, "avg.load_avg", 2.88),
    ("struct task_struct", 352, "se.avg.load_avg", 2.47),
    ("struct rq", 4, "nr_running", 2.05),
    ("atomic_t", 0, "counter", 1.96),
    ("struct task_struct", 44, "flags", 1.74),
    ("struct cfs_rq", 264, "tg_load_avg_contrib", 1.38),
    ("union bpf_attr", 0, "map_type", 1.12),
    ("int", 0, "no field", 0.85),
    ("struct task_struct", 1736, "cred", 0.61),
    ("(stack canary)", 0, "no field", 0.43),
    ("struct rq", 2816, "clock_task", 0.27),
    ("struct task_struct", 24, "__state", 0.09),
]


def plain():
    out = [
        "# ========",
        "# captured on    : Wed Mar  5 14:02:11 2025",
        "# header version : 1",
        "# data offset    : 4360",
        "# data size      : 5316232",
        "# feat offset    : 5320592",
        "# hostname : icx-2s",
        "# os release : 6.18.44",
        "# perf version : 6.8.12",
        "# arch : x86_64",
        "# nrcpus online : 160",
        "# nrcpus avail : 160",
        "# cpudesc : Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
        "# cpuid : GenuineIntel,6,106,6",
        "# total memory : 527923012 kB",
        "# cmdline : /usr/bin/perf mem record -a -K -- sleep 5 ",
        "# event : name = cpu/mem-loads,ldlat=30/P, , id = { 1821, 1822 }, type = 4 (cpu), size = 136, config = 0x1cd, { sample_period, sample_freq } = 4000, sample_type = IP|TID|TIME|ADDR|ID|CPU|PERIOD|DATA_SRC|WEIGHT_STRUCT, read_format = ID|LOST, disabled = 1, inherit = 1, freq = 1, precise_ip = 3, sample_id_all = 1, { bp_addr, config1 } = 0x1f",
        "# CPU_TOPOLOGY info available, use -I to display",
        "# NUMA_TOPOLOGY info available, use -I to display",
        "# node0 meminfo  : total = 263741896 kB, free = 250120448 kB",
        "# node0 cpu list : 0-39,80-119",
        "# node1 meminfo  : total = 264181116 kB, free = 252800312 kB",
        "# node1 cpu list : 40-79,120-159",
        "# pmu mappings: cpu = 4, breakpoint = 5, msr = 9, uncore_cha_0 = 34, software = 1, tracepoint = 2",
        "# CACHE info available, use -I to display",
        "# time of first sample : 18433.102001",
        "# time of last sample : 18438.103912",
        "# sample duration :   5001.911 ms",
        "# MEM_TOPOLOGY info available, use -I to display",
        "# missing features: TRACING_DATA BRANCH_STACK GROUP_DESC AUXTRACE STAT CLOCKID DIR_FORMAT COMPRESSED CLOCK_DATA HYBRID_TOPOLOGY ",
        "# ========",
        "#",
        "#",
        "# Total Lost Samples: 0",
        "#",
        "# Samples: 12K of event 'cpu/mem-loads,ldlat=30/P'",
        "# Event count (approx.): 1203844",
        "#",
        "# Overhead  Data Type  Data Type Offset",
        "# ........  .........  ................",
        "#",
    ]
    for t, off, field, p in PLAIN:
        out.append("%s  %-*s  %s %+d (%s)" % (pct(p), W, t, t, off, field))
    out += ["", "", "#", "# (Tip: To see data types accessed by samples: perf report -s type)", "#"]
    return out


# ---------------------------------------------------------------------------------------
# typeoff_hierarchy.txt: perf 6.15, `perf report --stdio -s type,typeoff --hierarchy` of
# `perf mem record -a -K` (loads and stores), hex offsets, bare pseudo types.
# ---------------------------------------------------------------------------------------

LOADS = [
    ("(unknown)", [], 21.44),
    ("struct task_group", [(0x100, "load_avg.counter", 11.02), (0x108, "rt_se", 2.31),
                           (0x110, "rt_rq", 2.29), (0xe0, "cfs_rq", 1.12), (0xd8, "se", 0.96),
                           (0x0, "css.cgroup", 0.74), (0x198, "parent", 0.41)], None),
    ("struct cfs_rq", [(0xa0, "avg.load_avg", 4.87), (0x108, "tg_load_avg_contrib", 3.95),
                       (0x48, "curr", 1.90), (0x14, "h_nr_queued", 1.22), (0x158, "tg", 0.66)], None),
    ("(stack operation)", [], 9.87),
    ("struct sched_entity", [(0xe0, "avg.load_avg", 3.02), (0xa8, "cfs_rq", 2.11),
                             (0xb0, "my_q", 1.45), (0x58, "on_rq", 0.75)], None),
    ("struct page", [(0x0, "flags", 4.20), (0x34, "_refcount.counter", 2.20)], None),
    ("struct list_head", [(0x0, "next", 3.10), (0x8, "prev", 2.42)], None),
    ("struct rq", [(0x0, "__lock.raw_lock.val.counter", 2.70), (0xad8, "clock", 1.35),
                   (0x4, "nr_running", 1.05)], None),
    ("int", [(0x0, "no field", 4.85)], None),
    ("struct task_struct", [(0x2c, "flags", 1.80), (0x35c, "rcu_read_lock_nesting", 1.25),
                            (0x320, "cpus_ptr", 0.96)], None),
    ("long unsigned int", [(0x0, "no field", 3.12)], None),
    ("(stack canary)", [], 0.91),
]

STORES = [
    ("(stack operation)", [], 38.20),
    ("struct task_group", [(0x100, "load_avg.counter", 14.75)], None),
    ("struct cfs_rq", [(0xa0, "avg.load_avg", 5.10), (0x80, "avg.last_update_time", 4.05),
                       (0x108, "tg_load_avg_contrib", 3.25)], None),
    ("struct sched_entity", [(0xe0, "avg.load_avg", 5.60), (0xc0, "avg.last_update_time", 4.25)], None),
    ("(unknown)", [], 9.30),
    ("struct rq", [(0x0, "__lock.raw_lock.val.counter", 5.50), (0xad8, "clock", 2.60)], None),
    ("long unsigned int", [(0x0, "no field", 4.75)], None),
    ("struct task_struct", [(0x34, "on_cpu", 1.40), (0x18, "__state", 1.25)], None),
]


def hier_block(event, samples, count, types):
    out = [
        "# Samples: %s of event '%s'" % (samples_line(samples), event),
        "# Event count (approx.): %d" % count,
        "#",
        "#    Overhead  Data Type / Data Type Offset",
        "# ...........  ............................",
        "#",
    ]
    total = 0.0
    for name, children, own in types:
        p = own if own is not None else round(sum(c[2] for c in children), 2)
        total += p
        out.append("%s     %s" % (pct(p), name))
        if not children:
            # perf 6.15+: a pseudo type's offset level prints its name alone.
            out.append("   %s     %s" % (pct(p), name))
        for off, field, cp in children:
            out.append("   %s     %s +%s (%s)" % (pct(cp), name, cx(off), field))
    assert abs(total - 100.0) < 0.005, total
    return out + ["", ""]


def hierarchy():
    out = [
        "# To display the perf.data header info, please use --header/--header-only options.",
        "#",
        "#",
        "# Total Lost Samples: 0",
        "#",
    ]
    out += hier_block("cpu/mem-loads,ldlat=30/P", 31873, 2794512, LOADS)
    out += hier_block("cpu/mem-stores/P", 9047, 9047, STORES)
    return out


# ---------------------------------------------------------------------------------------
# typeoff_columns.txt: perf 6.12, `perf report --stdio -n --show-total-period
# --percent-limit 0.5 -s type,typeoff,sym` (Samples and Period columns, a Symbol column
# after the overflowing typeoff column), loads and stores of `perf mem record -a -K`.
# ---------------------------------------------------------------------------------------

C_LOADS = [
    # type, offset (None: pseudo), field, symbol, samples, mean period
    ("(stack operation)", None, None, "__schedule", 812, 101),
    ("struct task_group", 0x100, "load_avg.counter", "update_cfs_group", 1450, 132),
    ("(unknown)", None, None, "native_queued_spin_lock_slowpath", 702, 118),
    ("struct cfs_rq", 0xa0, "avg.load_avg", "update_load_avg", 620, 125),
    ("struct cfs_rq", 0x108, "tg_load_avg_contrib", "update_load_avg", 505, 122),
    ("struct task_group", 0x108, "rt_se", "set_task_cpu", 402, 140),
    ("struct task_group", 0x110, "rt_rq", "set_task_cpu", 398, 138),
    ("struct task_group", 0x100, "load_avg.counter", "update_load_avg", 310, 129),
    ("struct sched_entity", 0xe0, "avg.load_avg", "update_load_avg", 280, 117),
    ("struct task_group", 0xe0, "cfs_rq", "set_task_cpu", 188, 131),
    ("struct task_group", 0xd8, "se", "set_task_cpu", 176, 127),
]
C_LOADS_TOTAL = (9412, 9412 * 118)  # all samples of the event, listed or not; total period

C_STORES = [
    ("(stack operation)", None, None, "__schedule", 1050, 1),
    ("struct task_group", 0x100, "load_avg.counter", "update_load_avg", 610, 1),
    ("struct cfs_rq", 0xa0, "avg.load_avg", "update_load_avg", 420, 1),
    ("struct sched_entity", 0xe0, "avg.load_avg", "update_load_avg", 300, 1),
    ("struct cfs_rq", 0x108, "tg_load_avg_contrib", "update_load_avg", 260, 1),
]
C_STORES_TOTAL = (3120, 3120)


def columns_block(event, rows, totals):
    n, total_period = totals
    sym_w = max(len("Symbol"), max(len("[k] " + r[3]) for r in rows))
    out = [
        "# Samples: %s of event '%s'" % (samples_line(n), event),
        "# Event count (approx.): %d" % total_period,
        "#",
        "# Overhead       Samples        Period  Data Type  Data Type Offset  %-*s" % (sym_w, "Symbol"),
        "# ........  ............  ............  .........  ................  %s" % ("." * sym_w),
        "#",
    ]
    # perf sorts the rows by overhead, that is by period.
    for t, off, field, sym, s, mean in sorted(rows, key=lambda r: -r[4] * r[5]):
        period = s * mean
        typeoff = t if off is None else "%s +%s (%s)" % (t, cx(off), field)
        if off is None:
            # perf 6.12-6.14 still printed pseudo types with an offset.
            typeoff = "%s +0 (no field)" % t
        out.append("%s  %12d  %12d  %-*s  %s  %-*s" % (
            pct(100.0 * period / total_period), s, period, W, t, typeoff, sym_w, "[k] " + sym))
    return out + ["", ""]


def columns():
    out = [
        "# To display the perf.data header info, please use --header/--header-only options.",
        "#",
        "#",
        "# Total Lost Samples: 0",
        "#",
    ]
    out += columns_block("cpu/mem-loads,ldlat=30/P", C_LOADS, C_LOADS_TOTAL)
    out += columns_block("cpu/mem-stores/P", C_STORES, C_STORES_TOTAL)
    return out


# ---------------------------------------------------------------------------------------
# typeoff_mail.txt: a reply quoting `perf report --stdio -s type,typeoff` (perf 6.13, hex
# offsets, old pseudo-type rows) of `perf mem record --all-user -- ./ringbench`: quoted with
# "> ", whitespace collapsed, the column headers and '#' dropped, "<snip>" in between.
# ---------------------------------------------------------------------------------------

MAIL = """On Tue, Mar 11, 2025 at 09:14:02AM +0100, A. Developer wrote:
> Hi,
>
> data-type profile of ringbench on the 2-socket box, loads first:
>
> Samples: 8K of event 'cpu/mem-loads,ldlat=30/P'
> Event count (approx.): 812230
>
> 41.18% struct ring_ctl struct ring_ctl +0x8 (tail)
> 22.40% struct ring_ctl struct ring_ctl +0 (head)
> 12.03% (unknown) (unknown) +0 (no field)
> 9.77% struct ring_ctl struct ring_ctl +0x10 (mask)
> 6.25% struct ring_ctl struct ring_ctl +0x18 (slots)
> 3.90% struct ring_slot struct ring_slot +0x8 (seq)
> <snip>
>
> and stores:
>
> Samples: 5K of event 'cpu/mem-stores/P'
> Event count (approx.): 5291
>
> 44.80% struct ring_ctl struct ring_ctl +0 (head)
> 38.15% struct ring_ctl struct ring_ctl +0x8 (tail)
> 9.12% (stack operation) (stack operation) +0 (no field)
> 5.08% struct ring_stats struct ring_stats +0x20 (pushes)
> <snip>
>
> head and tail share a line; should I pad them apart?

Yes, please move tail to its own cache line.
"""


def write(name, lines):
    with open(name, "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


if __name__ == "__main__":
    write("typeoff_plain.txt", plain())
    write("typeoff_hierarchy.txt", hierarchy())
    write("typeoff_columns.txt", columns())
    write("typeoff_mail.txt", MAIL.splitlines())
