#!/usr/bin/env python3
"""Regenerates docs/acceptance.md: for seeds 000, 001 and 003, the modeled cost of the
current layout, the seed's own fix and lineup's layout, on the seed's machine preset, from
the seed's evidence; then the same for every public re-layout of tests/cases/ (issue 15),
with the case's constraints checked on lineup's layout. `tests/optimize.rs` and
`tests/cases.rs` assert the same inequalities.

    python3 bench/seed_acceptance.py            # writes docs/acceptance.md
"""
import json, os, subprocess, sys, tempfile, tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINEUP = os.path.join(ROOT, "target", "release", "lineup")
BTF = "data/vmlinux-6.18.44.btf"


def predict(args):
    out = subprocess.run([LINEUP, "predict", "--json", *args], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def run_json(args):
    out = subprocess.run([LINEUP, *args, "--json"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def check_case(d, tmp):
    """One case of tests/cases: (row data, constraints met, failures)."""
    case = tomllib.load(open(os.path.join(d, "case.toml"), "rb"))
    name = os.path.basename(d)
    cls = case.get("cacheline_size", 64)
    if "before" in case:
        obj = os.path.join(tmp, name + ".o")
        subprocess.run(["cc", "-g", "-c", os.path.join(d, case["before"]), "-o", obj], check=True)
        src = ["--dwarf", obj]
    else:
        src = ["--btf", BTF]
    common = ["--type", case["type"], *src, "--sketch", os.path.join(d, case["sketch"]),
              "--machine", case["machine"], "--cacheline-size", str(cls)]
    o = run_json(["optimize", *common])
    units, offs = o["units"], o["plan"]["placement"]["offsets"]
    order = o["plan"]["order"]

    def unit(m):
        return next(i for i, u in enumerate(units) if m in u["members"])

    def line(m):
        return offs[unit(m)] // cls
    size, before_size = o["plan"]["placement"]["size"], o["current"]["size"]
    # Instances the evidence puts elsewhere than at a line's start, in an allocation that
    # ignores the layout's alignment: members kept apart must be apart at every start.
    ia = o.get("instance_alignment") or {}
    starts = ia.get("offsets_in_line", [0]) if ia.get("honours_alignment") is False else [0]
    fails = []
    for c in case.get("constraint", []):
        before_this = len(fails)
        if "apart" in c:
            for s in starts:
                ls = [(offs[unit(m)] + s) // cls for m in c["apart"]]
                if len(set(ls)) != len(ls):
                    fails.append(f"apart {c['apart']}" + (f" at start {s}" if s else ""))
                    break
        if "apart_pairs" in c:
            # On pairwise different aligned 128-byte pairs of lines (tests/cases.rs).
            ps = [line(m) // 2 for m in c["apart_pairs"]]
            if len(set(ps)) != len(ps):
                fails.append(f"apart_pairs {c['apart_pairs']}")
        if "within" in c:
            ls = [line(m) for m in c["within"]]
            if max(ls) - min(ls) + 1 > c.get("lines", 1):
                fails.append(f"within {c['within']}")
        if "max_growth" in c and size > before_size + c["max_growth"]:
            fails.append(f"growth {before_size} -> {size}")
        if c.get("markers_in_order"):
            for b, u in enumerate(units):
                if u["name"].startswith("__cacheline_group_begin__"):
                    g = u["name"][len("__cacheline_group_begin__"):]
                    e = next(i for i, x in enumerate(units) if x["name"] == "__cacheline_group_end__" + g)
                    pb, pe = order.index(b), order.index(e)
                    if pb > pe or set(order[pb:pe + 1]) != set(range(b, e + 1)):
                        fails.append(f"group {g}")
        if "expect_miss" in c:
            # A known miss, checked to still miss (tests/cases.rs does the same).
            if len(fails) == before_this:
                fails.append(f"known miss now met ({c['expect_miss']})")
            else:
                del fails[before_this:]
    # Every term the model prices, the adjacent-line pairs' included (cost::Cost::total_cycles).
    tot = lambda c: c["false_cycles"] + c["true_cycles"] + c["locality_cycles"] + c.get("pair_cycles", 0.0)
    rows = [("before", before_size, tot(o["current"]))]
    if "merged" in case:
        v = run_json(["predict", *common, "--layout", os.path.join(d, case["merged"])])
        by = {l["layout"]: l for l in v["layouts"]}
        m = by[case["merged"]]
        rows.append((f"merged (`{case['merged']}`)", m["cost"]["size"], m["total_cycles"]))
    else:
        rows.append(("merged (the fixture's)", before_size, tot(o["current"])))
    rows.append(("lineup", size, tot(o["plan"]["cost"])))
    merged_size, merged_cost = rows[1][1], rows[1][2]
    if case.get("negative"):
        # Negative cases: not held to merged.h; their expect is checked (tests/cases.rs).
        before_expect = len(fails)
        if case["expect"] == "no_change":
            moved = [u["name"] for u, off in zip(units, offs) if u["offset"] != off]
            if moved or size != before_size:
                fails.append(f"expect no_change: lineup moves {len(moved)} member(s)")
        elif case["expect"] == "predict_loss":
            if merged_cost < rows[0][2] * (1 - 1e-9) - 1e-9:
                fails.append("expect predict_loss: merged.h priced better than before")
        # A known miss of the expect, checked to still miss (tests/cases.rs does the same).
        if "expect_miss_negative" in case:
            if len(fails) == before_expect:
                fails.append("known miss of expect now met")
            else:
                del fails[before_expect:]
        return name, case, rows, fails
    before_merged = len(fails)
    if rows[2][2] > merged_cost * (1 + 1e-9) + 1e-9:
        fails.append("costs more than merged")
    if size > merged_size + cls:
        fails.append("larger than merged + 1 line")
    if "expect_miss_merged" in case:
        if len(fails) == before_merged:
            fails.append("known miss against merged now met")
        else:
            del fails[before_merged:]
    return name, case, rows, fails


def split_rows(tmp):
    """Split advice (issue 15 item 5) next to what the published splits measured."""
    srq = os.path.join(tmp, "shared_runq.o")
    subprocess.run(["cc", "-g", "-c", "examples/seeds/002/shared_runq.c", "-o", srq], cwd=ROOT, check=True)
    cases = [
        ("000", "task_group", "load_avg", "readers_sum_copies", "per NUMA node",
         ["--btf", BTF, "--c2c", "tests/data/c2c/seed000_paste.txt", "--machine", "icelake-2s"],
         "a gain, as issue 15 reports the per-node split measured; its figures were not found "
         "here. What was merged instead rate-limits the writes (Aaron Lu, sched/fair: "
         "Ratelimit update to tg->load_avg, 2023)"),
        ("003", "root_domain", "rto_count", "readers_sum_copies", "per NUMA node",
         ["--btf", BTF, "--sketch", "examples/sketches/seed003_root_domain.toml", "--machine", "xeon-2s-480"],
         "patch 3: FPS +4.0%, kernel cycles 20.0% -> 18.6%, c2c cycles per load on the line "
         "2.8K-44K -> eliminated, stress-ng cyclic +50.4%"),
        ("003", "cpupri_vec", "mask", "readers_sum_copies", "per NUMA node",
         ["--btf", BTF, "--sketch", "examples/sketches/seed003_cpupri_vec.toml", "--machine", "xeon-2s-480"],
         "patch 4 (per-node masks): FPS +3.8%, kernel cycles 20.0% -> 18.7%, c2c cycles per load "
         "2.2K-8.7K -> 0.5K-2.2K"),
        ("003", "cpupri_vec", "mask", "readers_own_copy", "per NUMA node",
         ["--btf", BTF, "--sketch", "examples/sketches/seed003_cpupri_vec.toml", "--machine", "xeon-2s-480"],
         "the same; the seed's FFmpeg instances are each pinned to 4 cores (8 CPUs): where those "
         "sit on one node, a lookup for their tasks can need only that node's mask (this column)"),
        ("002", "shared_runq_shard", "lock", "readers_own_copy", None,
         ["--dwarf", srq, "--sketch", "examples/sketches/seed002_shared_runq.toml", "--machine", "spr-1s",
          "--queued", "56"],
         "shards: hackbench process-pipe 8 groups +43.96%, process-sockets 2 groups (56 tasks) "
         "-12.37%, put down to more migrations"),
    ]
    out = [
        "## Split advice against the published splits",
        "",
        "`optimize`'s split advice for the member (docs/cost-model.md, split advice), from the",
        "seed's evidence, next to what the published split measured. Modeled cycles are of the",
        "member's coherence traffic; the published figures are benchmarks and c2c: compare the",
        "sign and the ordering, not the size. Seed 002 is priced with `--queued 56` (the 56 tasks",
        "of hackbench's 2 groups, an upper bound on those waiting).",
        "",
        "| seed | member | readers | split | predicted | published |",
        "|---|---|---|---|---:|---|",
    ]
    for seed, ty, member, column, how, args, published in cases:
        o = run_json(["optimize", "--type", ty, *args])
        sp = next(x for x in o["splits"] if x["member"] == member)
        opts = sp[column]
        if how is None:
            best = min(opts, key=lambda x: x["cycles"])
            how = f"best: {best['how']} (of {', '.join(x['how'] for x in opts)})"
            x = best
        else:
            x = next(x for x in opts if x["how"] == how)
        pct = (x["cycles"] - x["cycles_before"]) / x["cycles_before"] * 100
        readers = "sum all copies" if column == "readers_sum_copies" else "own copy first"
        out.append(f"| {seed} | `{ty}.{member}` | {readers} | {how} | {pct:+.1f}% | {published} |")
    out.append("")
    return out


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp()
    nohz = os.path.join(tmp, "nohz.o")
    subprocess.run(["cc", "-g", "-c", "examples/seeds/001/nohz.c", "-o", nohz], cwd=ROOT, check=True)
    cases = [
        ("000", "task_group", "icelake-2s", "seed 000 c2c paste (Baseline)",
         ["--type", "task_group", "--btf", BTF, "--c2c", "tests/data/c2c/seed000_paste.txt",
          "--machine", "icelake-2s", "--layout", "examples/seeds/000/seed_fix.h"]),
        ("001", "nohz", "nehalem-ex-8s", "examples/sketches/seed001_nohz.toml",
         ["--type", "nohz", "--dwarf", nohz, "--sketch", "examples/sketches/seed001_nohz.toml",
          "--machine", "nehalem-ex-8s", "--layout", "examples/seeds/001/seed_fix.h"]),
        ("003", "root_domain", "xeon-2s-480", "examples/sketches/seed003_root_domain.toml",
         ["--type", "root_domain", "--btf", BTF, "--sketch", "examples/sketches/seed003_root_domain.toml",
          "--machine", "xeon-2s-480", "--layout", "examples/seeds/003/seed_fix_patch1.h"]),
    ]
    rows = []
    for seed, ty, machine, evidence, args in cases:
        v = predict(args)
        by = {l["layout"]: l for l in v["layouts"]}
        fix = [k for k in by if k not in ("current", "lineup")][0]
        cur, ours, theirs = by["current"], by["lineup"], by[fix]
        ok = ours["total_cycles"] <= theirs["total_cycles"] * (1 + 1e-9) < cur["total_cycles"] * (1 + 1e-9) \
            and ours["total_cycles"] < cur["total_cycles"]
        rows.append((seed, ty, machine, evidence, fix, cur, theirs, ours, ok))
    lines = [
        "# Acceptance: lineup's layout against the seeds' own fixes",
        "",
        "Generated by `python3 bench/seed_acceptance.py`; do not edit by hand. Modeled cycles of",
        "coherence traffic on the struct (docs/cost-model.md), from the seed's evidence, on the",
        "seed's machine preset. Lower is better; the change is against the current layout.",
        "",
        "| seed | struct | machine | evidence | layout | size | false xfers | true xfers | total cycles | change |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for seed, ty, machine, evidence, fix, cur, theirs, ours, ok in rows:
        base = cur["total_cycles"]
        for name, l in (("current", cur), (f"seed's fix (`{fix}`)", theirs), ("lineup", ours)):
            c = l["cost"]
            change = "" if l is cur else f"{(l['total_cycles'] - base) / base * 100:+.1f}%"
            lines.append(f"| {seed} | `{ty}` | {machine} | {evidence} | {name} | {c['size']} | "
                         f"{c['false_transfers']:.1f} | {c['true_transfers']:.1f} | {l['total_cycles']:.0f} | {change} |")
    lines.append("")
    for seed, *_rest, ok in rows:
        lines.append(f"- seed {seed}: lineup ≤ seed's fix < current: {'yes' if ok else 'NO'}")
    lines.append("")
    lines.append("Seed 003's fix is patch 1 in the form its author posted as the simple alternative")
    lines.append("(`struct cpupri cpupri ____cacheline_aligned;`); patch 2's diff was not at hand.")
    lines.append("")
    lines += split_rows(tmp)
    lines += [
        "## Public re-layouts (tests/cases)",
        "",
        "Each case's evidence is a sketch written from its source (tests/cases/*/sketch.toml), its",
        "layout before is the fixture BTF (where the kernel has the merged layout already) or a C",
        "replica, and its merged layout a C declaration. \"met\" says whether lineup's layout meets",
        "every constraint of the case, costs no more than the merged layout, and is no larger",
        "than the merged layout plus one line (known misses, `expect_miss`, count as met while",
        "they still miss). A negative case (padding that measured no gain, a re-layout undone, a",
        "proposal closed) is not held to its merged layout: \"met\" checks its `expect` instead,",
        "`no_change` (lineup keeps the layout) or `predict_loss` (merged.h priced no better than",
        "before).",
        "",
        "| case | struct | machine | line | layout | size | total cycles | met | source |",
        "|---|---|---|---:|---|---:|---:|---|---|",
    ]
    all_ok = True
    for d in sorted(os.listdir(os.path.join(ROOT, "tests", "cases"))):
        path = os.path.join(ROOT, "tests", "cases", d)
        if not os.path.exists(os.path.join(path, "case.toml")):
            continue
        name, case, crow, fails = check_case(path, tmp)
        all_ok &= not fails
        for k, (layout, size, cyc) in enumerate(crow):
            met = ("yes" if not fails else "NO: " + "; ".join(fails)) if k == 2 else ""
            if k == 2 and case.get("negative"):
                met = f"negative, expect {case['expect']}: " + met
            src = case.get("source", "") if k == 0 else ""
            lines.append(f"| {name} | `{case['type']}` | {case['machine']} | {case.get('cacheline_size', 64)} | "
                         f"{layout} | {size} | {cyc:.0f} | {met} | {src} |")
    lines.append("")
    with open(os.path.join(ROOT, "docs", "acceptance.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0 if all(r[-1] for r in rows) and all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
