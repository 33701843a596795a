#!/usr/bin/env python3
"""Negative controls (issue 27 item 4): ordinary multithreaded programs (zstd, pigz, xz,
lbzip2, pbzip2, pixz: at least four of them where the mirror has their sources), built from their
Debian source packages with `lineup cc`, recorded with `lineup record`, must produce the
same output as their plain build and get no contention verdict above negligible.

    cargo build --release && python3 bench/negative_controls.py [--only zstd,pigz] [--keep DIR]

Fetches the sources at benchmark time (`apt-get source`, deb-src must be enabled; nothing
is committed), builds each program twice (plain `cc -O2` and `lineup cc -O2`), compresses
the same generated input with two threads, compares the outputs byte for byte, and runs
`lineup diagnose --json` on every type the recording attributed accesses to. Prints one
row per program: the output check, the recording's accesses, its types, the lines by
verdict, and any line judged false sharing, true sharing, co-written or read-mostly next
to write-hot (with its type, line and cost). Exit status 1 when a program's output
differs or a contention verdict is found.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINEUP = os.path.join(REPO, "target", "release", "lineup")
CONTENTION = {"false_sharing", "true_sharing", "co_written", "read_mostly_next_to_write_hot"}


def sh(cmd, cwd=None, env=None, quiet=True):
    r = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str),
                       stdout=subprocess.PIPE if quiet else None,
                       stderr=subprocess.STDOUT if quiet else None)
    if r.returncode != 0:
        out = r.stdout.decode(errors="replace")[-3000:] if quiet and r.stdout else ""
        raise RuntimeError(f"failed ({r.returncode}): {cmd}\n{out}")
    return r


def fetch(package, work):
    """`apt-get source` into work/src-package; returns the unpacked tree. Where the mirror
    serves the upstream tarball of the source package (its .orig) but not the Debian part,
    the tarball is unpacked instead, and stderr says so."""
    dest = os.path.join(work, "src-" + package)
    tree = os.path.join(dest, "tree")
    if os.path.isdir(tree):
        return tree
    os.makedirs(dest, exist_ok=True)
    r = subprocess.run(["apt-get", "source", "--download-only", package], cwd=dest,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    dsc = glob.glob(os.path.join(dest, "*.dsc"))
    origs = glob.glob(os.path.join(dest, "*.orig.tar.*"))
    if r.returncode == 0 and dsc:
        sh(["dpkg-source", "--no-check", "-x", dsc[0], "tree"], cwd=dest)
    elif origs:
        unpack = os.path.join(dest, "unpack")
        shutil.rmtree(unpack, ignore_errors=True)
        os.makedirs(unpack)
        sh(["tar", "xf", origs[0], "-C", unpack])
        top = os.listdir(unpack)
        os.rename(os.path.join(unpack, top[0]) if len(top) == 1 else unpack, tree)
        print(f"{package}: the mirror lacks its Debian part; built from the source "
              f"package's upstream tarball {os.path.basename(origs[0])}", file=sys.stderr)
    else:
        out = r.stdout.decode(errors="replace")[-2000:]
        raise RuntimeError(f"apt-get source {package} failed ({r.returncode}); deb-src "
                           f"enabled in /etc/apt/sources.list.d?\n{out}")
    return tree


def copy_tree(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


def build_zstd(tree, out, cc):
    sh(f"make -j2 -C programs zstd CC='{cc}' MOREFLAGS='-O2' >/dev/null", cwd=tree)
    shutil.copy(os.path.join(tree, "programs", "zstd"), out)


def build_pigz(tree, out, cc):
    sh(f"make -j2 pigz CC='{cc}' CFLAGS='-O2 -pthread' LDFLAGS='-pthread' >/dev/null", cwd=tree)
    shutil.copy(os.path.join(tree, "pigz"), out)


def build_autotools(binary, extra=""):
    def build(tree, out, cc):
        conf = (f"./configure -q CC='{cc}' CFLAGS='-O2 -pthread' --disable-shared "
                f"--disable-nls {extra}")
        sh(f"{conf} >/dev/null 2>&1 || (autoreconf -fi >/dev/null 2>&1 && {conf})", cwd=tree)
        sh("make -j2 >/dev/null 2>&1", cwd=tree)
        shutil.copy(os.path.join(tree, binary), out)
    return build


def build_pbzip2(tree, out, cc):
    cxx = cc.replace(" cc", " c++") if cc.endswith(" cc") else "c++"
    # `"%"PRIuMAX` is an error to clang++ (lineup c++) in C++11 and a warning to g++.
    sh(f"make -j2 pbzip2 CXX='{cxx}' CXXFLAGS='-O2 -pthread -Wno-reserved-user-defined-literal' "
       f"LDFLAGS='-pthread' >/dev/null", cwd=tree)
    shutil.copy(os.path.join(tree, "pbzip2"), out)


# name, Debian source package, build, command with two threads: (argv, whether the
# compressed data goes to standard output) for an input and an output file. `lineup record`
# runs the program itself (no shell: only a `lineup cc` build can be recorded), so output
# to stdout is redirected by this script.
PROGRAMS = [
    ("zstd", "zstd", build_zstd,
     lambda exe, i, o: ([exe, "-q", "-f", "-T2", "-3", i, "-o", o], False)),
    ("pigz", "pigz", build_pigz, lambda exe, i, o: ([exe, "-p", "2", "-c", i], True)),
    ("xz", "xz-utils", build_autotools("src/xz/xz"),
     lambda exe, i, o: ([exe, "-T2", "--block-size=1MiB", "-c", i], True)),
    ("lbzip2", "lbzip2", build_autotools("src/lbzip2"),
     lambda exe, i, o: ([exe, "-n", "2", "-c", i], True)),
    ("pbzip2", "pbzip2", build_pbzip2,
     lambda exe, i, o: ([exe, "-p2", "-c", i], True)),
    # Needs liblzma-dev and libarchive-dev (and autoconf, automake: the tarball has no
    # configure).
    ("pixz", "pixz", build_autotools("src/pixz", "--without-manpage"),
     lambda exe, i, o: ([exe, "-p", "2", "-i", i, "-o", o], False)),
]


def run_to(argv_stdout, out, prefix=()):
    """Runs the command; its standard output to `out` when the data goes there."""
    argv, to_stdout = argv_stdout
    if to_stdout:
        with open(out, "wb") as f:
            r = subprocess.run(list(prefix) + argv, stdout=f, stderr=subprocess.PIPE)
    else:
        r = subprocess.run(list(prefix) + argv, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError(f"failed ({r.returncode}): {argv}\n"
                           + r.stderr.decode(errors="replace")[-2000:])


def make_input(path, mib):
    """Text-like data that compresses, deterministic: words from a fixed generator."""
    words = [b"lineup", b"cache", b"line", b"thread", b"contention", b"record", b"model",
             b"false", b"sharing", b"lock", b"mutex", b"zstd", b"job", b"state", b"\n"]
    x = 12345
    with open(path, "wb") as f:
        left = mib << 20
        while left > 0:
            chunk = bytearray()
            while len(chunk) < 65536:
                x = (x * 1103515245 + 12345) & 0x7FFFFFFF
                chunk += words[(x >> 16) % len(words)] + (b" " if x & 1 else b"")
            f.write(chunk[:left])
            left -= len(chunk)


def diagnose_all(profile, exe):
    """Every type of the recording with accesses: (lines by verdict, contended lines)."""
    p = json.load(open(profile))
    by_verdict = {}
    contended = []
    errors = 0
    types = [t["type_name"] for t in p.get("types", []) if t.get("accesses")]
    for ty in types:
        r = subprocess.run([LINEUP, "diagnose", "--json", "--profile", profile, "--dwarf",
                            exe, "--type", ty], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if r.returncode != 0:
            errors += 1
            continue
        d = json.loads(r.stdout)
        for line in d.get("lines", []):
            v = line["verdict"]
            by_verdict[v] = by_verdict.get(v, 0) + 1
            if v in CONTENTION:
                contended.append((ty, line["index"], v, line["cost"],
                                  line["explanation"][:300]))
    accesses = p.get("summary", {}).get("record", {}).get("accesses", 0)
    return len(types), errors, by_verdict, contended, accesses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated program names")
    ap.add_argument("--input-mib", type=int, default=24)
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    args = ap.parse_args()
    if not os.path.exists(LINEUP):
        sys.exit(f"{LINEUP}: build it first (cargo build --release)")
    work = args.keep or tempfile.mkdtemp(prefix="lineup-negative-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, LINEUP_CACHE_DIR=os.path.join(work, "cache"))
    os.environ.update(env)
    data = os.path.join(work, "input.txt")
    if not os.path.exists(data):
        make_input(data, args.input_mib)
    only = set(args.only.split(",")) if args.only else None
    rows = []
    failed = False
    for name, package, build, command in PROGRAMS:
        if only and name not in only:
            continue
        try:
            tree = fetch(package, work)
            plain_exe = os.path.join(work, name + ".plain")
            rec_exe = os.path.join(work, name + ".lineup")
            copy_tree(tree, os.path.join(work, "b-plain-" + name))
            build(os.path.join(work, "b-plain-" + name), plain_exe, "cc")
            copy_tree(tree, os.path.join(work, "b-lineup-" + name))
            build(os.path.join(work, "b-lineup-" + name), rec_exe, f"{LINEUP} cc")
            plain_out = os.path.join(work, name + ".out.plain")
            rec_out = os.path.join(work, name + ".out.lineup")
            run_to(command(plain_exe, data, plain_out), plain_out)
            profile = os.path.join(work, name + ".profile.json")
            run_to(command(rec_exe, data, rec_out), rec_out,
                   prefix=(LINEUP, "record", "-o", profile, "--"))
            same = open(plain_out, "rb").read() == open(rec_out, "rb").read()
            ntypes, errors, by_verdict, contended, accesses = diagnose_all(profile, rec_exe)
        except Exception as e:  # one program's failure is a row, not the end
            rows.append((name, "error", 0, 0, 0, {}, []))
            print(f"{name}: {e}", file=sys.stderr)
            failed = True
            continue
        failed |= not same or bool(contended)
        rows.append((name, "same" if same else "DIFFERS", accesses, ntypes, errors,
                     by_verdict, contended))
    print(f"{'program':10} {'output':8} {'accesses':>12} {'types':>6} {'err':>4}  "
          f"lines by verdict; contention")
    for name, same, accesses, ntypes, errors, by_verdict, contended in rows:
        verdicts = ", ".join(f"{v} {n}" for v, n in sorted(by_verdict.items()))
        print(f"{name:10} {same:8} {accesses:12.0f} {ntypes:6} {errors:4}  {verdicts}; "
              f"{len(contended)} contended")
        for ty, index, v, cost, why in contended:
            print(f"    {ty} line {index}: {v}, cost {cost:.0f}: {why}")
    print("goal: identical output, no line above negligible (contention verdicts: 0)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
