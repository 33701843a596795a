#!/usr/bin/env python3
"""The measured figures of README.md and examples/seeds/*/README.md, from the repeated runs
bench/readme_numbers.sh made (its working directory is the first argument), as one block per
key: the date, the machine, each figure's median and range over the repeats, how many
repeats found it significant, and in words whether that is an effect or noise here.

    python3 bench/readme_figures.py DIR            # print every block
    python3 bench/readme_figures.py DIR --write    # and rewrite them in the READMEs

A block in a README lies between `<!-- figures: KEY -->` and `<!-- /figures -->`; --write
replaces what is between them, and fails naming the file when a README has a key this script
does not make (or a key is left unused), so no figure is left behind unmeasured.
"""

import glob
import os
import re
import statistics
import sys

# Which comparisons of bench/seeds_ab.sh each block shows, and what each one is.
BLOCKS = {
    "false-sharing": [
        ("false-sharing", "examples/ab/false_sharing.c, padded (B) against adjacent (A), CPU time"),
    ],
    "replay": [
        ("replay-lineup", "lineup replay, seed 000's c2c profile: lineup's layout against current"),
        ("replay-atomic", "the same, update_load_avg's stores replayed as atomic_long_add"),
        ("replay-aa", "the harness against itself (--self-test): expect no difference"),
    ],
    "whole-loop": [
        ("whole-loop", "record, optimize's patch applied, patched (B) against original (A), CPU time"),
    ],
    "seeds-ab": None,  # every comparison
    "seed000": [
        ("seed000-lineup", "replica task_group.c: lineup's layout against current, wakeups/s"),
        ("seed000-seed", "replica task_group.c: the seed's layout against current, wakeups/s"),
        ("replay-atomic", "replay of the c2c mix (atomics as atomics): lineup's against current (tour step 5a)"),
    ],
    "seed001": [
        ("seed001-seed", "replica idle.c: the seed's layout against current, transitions/s"),
        ("seed001-seed-work", "the same with private work between transitions (150 2 100)"),
    ],
    "seed002": [
        ("seed002-2-shards", "replica shared_runq.c: 2 shards against 1, ops/s"),
    ],
    "seed003": [
        ("seed003-patch1", "replica cpupri.c with CONFIG_CPUMASK_OFFSTACK: patch 1 against baseline, ops/s"),
        ("seed003-inline", "the same with the bitmap inline (the fixture kernel's config)"),
    ],
    "seed004": [
        ("seed004-busy:12", "replica swb.c: the patched scan against baseline, busy:12, funclatency avg"),
        ("seed004-idle", "the same, idle"),
    ],
}
ALL_BLOCKS = list(BLOCKS) + ["layout-vs-pahole", "record-overhead", "tour"]

AB = re.compile(
    r"^(?P<name>\S+)\s+(?P<ch>[-+]?(?:\d+\.\d+|nan))%\s+95% CI \[(?P<lo>[^,]+)%, (?P<hi>[^\]]+)%\]"
    r"\s+p=(?P<p>\S+)\s+(?P<verdict>significant|n\.s\.)\s+n=(?P<n>\d+)/side\s+\((?P<better>\w+) is better\)"
)


def files(d, prefix):
    return sorted(glob.glob(os.path.join(d, prefix + ".*.txt")))


def read_ab(d):
    """name -> list of (change, lo, hi, p, significant, better) over the repeats."""
    out = {}
    for f in files(d, "ab"):
        for line in open(f):
            m = AB.match(line.strip())
            if m:
                out.setdefault(m["name"], []).append((
                    float(m["ch"]), float(m["lo"]), float(m["hi"]), m["p"],
                    m["verdict"] == "significant", m["better"]))
    return out


def pct(x):
    return f"{x:+.1f}%"


def spread(xs, fmt):
    xs = sorted(xs)
    if len(xs) == 1:
        return f"{fmt(xs[0])} (one run)"
    return f"{fmt(statistics.median(xs))} ({fmt(xs[0])} to {fmt(xs[-1])})"


def in_words(name, runs):
    n = len(runs)
    sig = [r for r in runs if r[4]]
    better = runs[0][5]
    if name.startswith(("aa-", "replay-aa")):
        return ("no difference, as it should be (A against itself)" if not sig else
                f"significant in {len(sig)} of {n} though A is B: this machine's noise makes "
                "false positives")
    if not sig:
        return "no difference measurable here: noise on this 2-CPU VM"
    signs = {r[0] > 0 for r in sig}
    if len(signs) > 1:
        return "significant in both directions across repeats: noise on this 2-CPU VM"
    up = sig[0][0] > 0
    good = up == (better == "higher")
    what = "B better" if good else "B worse"
    if len(sig) == n:
        return f"{what} in every repeat: an effect, of a size that varies as the range shows"
    return (f"{what} in {len(sig)} of {n} repeats only: not reliable on this 2-CPU VM; "
            "treat as noise")


def ab_table(rows, ab):
    out = ["| comparison | what | change: median (range over repeats) | each repeat's 95% CI | "
           "significant (p < 0.05) | in words |", "|---|---|---|---|---|---|"]
    for name, what in rows:
        runs = ab.get(name)
        if not runs:
            raise SystemExit(f"readme_figures.py: no result for {name} (did bench/seeds_ab.sh run it?)")
        cis = "; ".join(f"[{pct(r[1])}, {pct(r[2])}]" for r in runs)
        better = runs[0][5]
        out.append(f"| {name} | {what} ({better} is better) | {spread([r[0] for r in runs], pct)} "
                   f"| {cis} | {sum(r[4] for r in runs)} of {len(runs)} | {in_words(name, runs)} |")
    return out


def pahole_rows(d):
    lm, pm, ratio, version = [], [], [], "pahole"
    for f in files(d, "pahole"):
        for line in open(f):
            w = line.split()
            if line.startswith("lineup /"):
                ratio.append(float(line.split(":")[1].split()[0]))
            elif w and w[0] == "lineup":
                lm.append(float(w[1]))
            elif w and w[0] == "pahole":
                version = " ".join(w[:2])
                pm.append(float(w[2]))
    if not ratio:
        raise SystemExit("readme_figures.py: no layout_vs_pahole.py results")
    ms = lambda x: f"{x:.1f} ms"
    return [
        "| figure | median (range over repeats) |", "|---|---|",
        f"| lineup layout --all, median wall time of 30 runs | {spread(lm, ms)} |",
        f"| {version} (every struct), median of 30 runs | {spread(pm, ms)} |",
        f"| ratio lineup / pahole (goal: at most 0.50) | {spread(ratio, lambda x: f'{x:.2f}')} |",
        "",
        "The ratio's spread is this machine's noise (both tools run interleaved, so a busy "
        "machine slows both); " + ("every repeat met the goal." if max(ratio) <= 0.5 else
                                   "the goal was missed in " + str(sum(r > 0.5 for r in ratio))
                                   + f" of {len(ratio)} repeats."),
    ]


def record_rows(d):
    cols = {"record_cpu": [], "all_cpu": [], "tsan_cpu": [], "vs_tsan": []}
    for f in files(d, "record"):
        for line in open(f):
            if line.startswith("geometric mean"):
                v = [float(x.rstrip("x")) for x in line[len("geometric mean"):].split()]
                cols["record_cpu"].append(v[0])
                cols["all_cpu"].append(v[1])
                cols["tsan_cpu"].append(v[3])
                cols["vs_tsan"].append(v[5])
    if not cols["record_cpu"]:
        raise SystemExit("readme_figures.py: no record_overhead.py results")
    x = lambda v: f"{v:.2f}x"
    return [
        "| CPU time against the plain build, geometric mean over the corpus | median (range over repeats) |",
        "|---|---|",
        f"| `lineup record` (default: bursts; goal at most 3x) | {spread(cols['record_cpu'], x)} |",
        f"| `lineup record --sample 1` (every access) | {spread(cols['all_cpu'], x)} |",
        f"| the same program under ThreadSanitizer | {spread(cols['tsan_cpu'], x)} |",
        f"| `lineup record` against TSan (below 1: faster) | {spread(cols['vs_tsan'], x)} |",
    ]


def tour_rows(d):
    secs = [float(open(f).read().split()[0]) for f in files(d, "tour")]
    if not secs:
        raise SystemExit("readme_figures.py: no tour timings")
    return [f"`bash examples/tour.sh` after the build: {spread(secs, lambda s: f'{s:.0f} s')} "
            "wall time."]


def block(key, d, ab, meta):
    head = f"*{meta}*"
    if key in BLOCKS:
        rows = BLOCKS[key]
        if rows is None:
            rows = [(n, "bench/seeds_ab.sh") for n in ab]
        body = ab_table(rows, ab)
    elif key == "layout-vs-pahole":
        body = pahole_rows(d)
    elif key == "record-overhead":
        body = record_rows(d)
    else:
        body = tour_rows(d)
    return "\n".join([head, ""] + body)


MARK = re.compile(r"(<!-- figures: (?P<key>[\w:-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)", re.S)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    d, write = sys.argv[1], "--write" in sys.argv[2:]
    meta = open(os.path.join(d, "meta.txt")).read().strip()
    ab = read_ab(d)
    have = set()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readmes = [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "examples/seeds/*/README.md")))
    blocks = {}
    for path in readmes:
        text = open(path).read()
        for m in MARK.finditer(text):
            if m["key"] not in ALL_BLOCKS:
                raise SystemExit(f"{path}: figures block '{m['key']}' is not one readme_figures.py makes "
                                 f"({', '.join(ALL_BLOCKS)})")
            have.add(m["key"])
        if write:
            def fill(m):
                b = blocks.setdefault(m["key"], block(m["key"], d, ab, meta))
                return m.group(1) + b + "\n" + m.group(4)
            new = MARK.sub(fill, text)
            if new != text:
                open(path, "w").write(new)
                print(f"rewrote the figures of {os.path.relpath(path, root)}", file=sys.stderr)
    for key in ALL_BLOCKS:
        if key not in blocks:
            blocks[key] = block(key, d, ab, meta)
        print(f"<!-- figures: {key} -->\n{blocks[key]}\n<!-- /figures -->\n")
    unused = [k for k in ALL_BLOCKS if k not in have]
    if write and unused:
        print(f"readme_figures.py: made but shown in no README: {', '.join(unused)}", file=sys.stderr)


if __name__ == "__main__":
    main()
