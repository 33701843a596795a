#!/usr/bin/env python3
"""The fleet store at fleet size: `lineup fleet add` and `lineup fleet top` against DuckDB on
the same files, with throughput and peak memory (issue 28, phase 2).

Shape of the rows. Every kernel case of the repository (tests/cases/*/sketch.toml, with its
type from case.toml) is stored once with `lineup fleet add --sketch ... --type T` and the
case's layout (the fixture BTF, or its before.c compiled with `cc -g -c`), and so is the c2c
fixture bound to root_domain (the one source of HITM counts): those rows, as lineup writes
them, are the templates: the real types, offsets, members, access sizes, functions, CPU counts
and mix of loads, stores, atomics and transfers of the cases. Each of --hosts hosts (1,000)
runs --workloads of the templates' workloads (8, drawn per host with a fixed seed); each host's
profile of a build and a day is the rows of its workloads, every count scaled by the host's
load (log-normal, sigma 1) and by the day's noise (log-normal, sigma 0.2), over --builds
builds (3). Days are added until the store holds --rows rows (10^8 by default: about a year of
daily profiles of 1,000 hosts).

Layout of the generated store. lineup's layout (build=<id>/date=<day>/*.parquet, lineup's
row schema and key-value metadata), written with pyarrow in chunks, one file per build and
day holding that day's profiles of every host (named by a 128-bit hex hash, as lineup names
its files), as a compaction job would leave them (`fleet
add` writes one file per profile: 10^8 rows at ~100 rows a profile would be a million small
files, which neither engine is measured on here).

`add`: the rows enter lineup's store only through `lineup fleet add` of evidence; the
benchmark writes --add-profiles generated host profiles as saved profiles (lineup's profile
JSON) and times `lineup fleet add --profile P` on each (one process per profile, as a fleet's
collector would run it), against DuckDB doing the same ingest in one process per profile:
read the profile JSON, flatten it to the same rows, and COPY them to a Parquet file in the same
partition folder. rows/s = rows stored / wall time.

`top`: `lineup fleet top --store S --limit 20 --json` (the types and the members query)
against DuckDB running the same two SQL texts (fleet/sql/top_types.sql, top_members.sql:
the texts lineup compiles in) over read_parquet('S/**/*.parquet', hive_partitioning = true),
in a fresh process each, runs interleaved. rows/s = rows in the store / wall time. Peak
memory is the child's maximum resident set (wait4's ru_maxrss). The answers of the two are
checked equal before anything is timed.

    python3 -m venv /tmp/fleet-bench-venv && /tmp/fleet-bench-venv/bin/pip install pyarrow duckdb numpy
    /tmp/fleet-bench-venv/bin/python bench/fleet.py [--rows 100000000] [--runs 3]
        [--lineup target/release/lineup] [--dir /tmp/lineup-fleet-bench] [--keep]

Needs lineup built with `--features fleet`, a C compiler, pyarrow and duckdb.
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BTF = os.path.join(REPO, "data", "vmlinux-6.18.44.btf")
C2C = os.path.join(REPO, "tests", "data", "c2c", "lkml_seed003_root_domain.txt")
COUNTS = ["loads", "stores", "rmw", "lcl_hitm", "rmt_hitm", "lcl_peer", "rmt_peer"]


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def timed(cmd, **kw):
    """Wall seconds and peak RSS (bytes) of one child process. The peak is GNU time's (%M): a
    child forked from this Python would report this process's own peak as its ru_maxrss
    (Linux keeps the larger of the two across exec)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd,
                           capture_output=True, **kw)
        wall = time.perf_counter() - t
        if p.returncode != 0:
            sys.exit(f"{' '.join(map(str, cmd))}: exit {p.returncode}: "
                     f"{p.stderr.decode().strip()}")
        return wall, int(rss.read().split()[-1]) * 1024, p.stdout


def templates(lineup, work):
    """The cases' rows as lineup stores them: a pyarrow table, and each row's workload."""
    import pyarrow.parquet as pq

    seed = os.path.join(work, "seed")
    shutil.rmtree(seed, ignore_errors=True)
    workloads = []
    for case_dir in sorted(glob.glob(os.path.join(REPO, "tests", "cases", "*"))):
        case_file = os.path.join(case_dir, "case.toml")
        sketch = os.path.join(case_dir, "sketch.toml")
        if not (os.path.exists(case_file) and os.path.exists(sketch)):
            continue
        with open(case_file, "rb") as f:
            case = tomllib.load(f)
        name = os.path.basename(case_dir)
        types = ["--btf", BTF]
        if case.get("before"):
            obj = os.path.join(work, name + ".o")
            sh(["cc", "-g", "-c", os.path.join(case_dir, case["before"]), "-o", obj])
            types = ["--dwarf", obj]
        sh([lineup, "fleet", "add", "--store", seed, "--host", name, "--workload", name,
            "--build", "seed", "--date", "2025-01-01", "--sketch", sketch,
            "--type", case["type"]] + types)
        workloads.append(name)
    sh([lineup, "fleet", "add", "--store", seed, "--host", "c2c", "--workload", "c2c",
        "--build", "seed", "--date", "2025-01-01", "--c2c", C2C, "--type", "root_domain",
        "--btf", BTF])
    workloads.append("c2c")
    files = glob.glob(os.path.join(seed, "build=seed", "date=*", "*.parquet"))
    table = None
    import pyarrow as pa

    table = pa.concat_tables([pq.read_table(f) for f in sorted(files)])
    metadata = pq.read_schema(files[0]).metadata
    return table, metadata, workloads


def plan(table, workloads, args):
    """Per host: the template row indices of its workloads."""
    import numpy as np

    rng = np.random.default_rng(28)
    by_workload = {}
    wl = table.column("workload").to_pylist()
    for i, w in enumerate(wl):
        by_workload.setdefault(w, []).append(i)
    names = sorted(by_workload)
    hosts = []
    for h in range(args.hosts):
        pick = rng.choice(len(names), size=min(args.workloads, len(names)), replace=False)
        idx = np.concatenate([np.array(by_workload[names[k]]) for k in sorted(pick)])
        hosts.append(idx)
    return hosts, rng


def file_name(build, date):
    """A 128-bit hex name, as lineup names a stored file by its content hash."""
    return hashlib.blake2b(f"{build}/{date}".encode(), digest_size=16).hexdigest() + ".parquet"


def generate(table, metadata, hosts, rng, args, store):
    """The store: one file per build and day, every host's profile of the day in it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    per_day = sum(len(h) for h in hosts)
    builds = [f"6.{18 + b}.0-fleet" for b in range(args.builds)]
    days = max(1, -(-args.rows // (per_day * len(builds))))
    host_ids = np.concatenate([np.full(len(h), k) for k, h in enumerate(hosts)])
    index = np.concatenate(hosts)
    load = rng.lognormal(0.0, 1.0, size=len(hosts))
    names = pa.array([f"host{k:04d}" for k in range(len(hosts))])
    written = 0
    start = datetime.date(2025, 1, 1)
    schema = table.schema.with_metadata(metadata)
    for d in range(days):
        date = (start + datetime.timedelta(days=d)).isoformat()
        for build in builds:
            n = min(per_day, args.rows - written)
            if n <= 0:
                break
            rows = table.take(pa.array(index[:n]))
            scale = load[host_ids[:n]] * rng.lognormal(0.0, 0.2, size=n)
            cols = {}
            for c in COUNTS + ["transfers"]:
                v = rows.column(c).to_numpy() * scale
                cols[c] = pa.array(np.round(v), type=pa.float64())
            w = rows.column("weight")
            cols["weight"] = pc.multiply(w, pa.array(np.round(scale * 1000) / 1000))
            cols["host"] = names.take(pa.array(host_ids[:n]))
            for c, v in cols.items():
                rows = rows.set_column(rows.schema.get_field_index(c), c, v)
            folder = os.path.join(store, f"build={build}", f"date={date}")
            os.makedirs(folder, exist_ok=True)
            pq.write_table(rows.cast(schema), os.path.join(folder, file_name(build, date)),
                           compression="snappy")
            written += n
        if written >= args.rows:
            break
    return written, builds


def profile_json(table, idx, scale, path):
    """One host's profile of a day, as lineup's saved profile (the `--profile` input)."""
    cols = {c: table.column(c).to_pylist() for c in
            ["type", "offset", "member", "size", "function", "cpu_count", "unit",
             "weight"] + COUNTS}
    # Accesses alike in type, offset, size, member and function are one access in a profile
    # (lineup's loader merges them): merged here, so both engines store the same rows.
    merged = {}
    for i, s in zip(idx, scale):
        key = tuple(cols[c][i] for c in ("type", "offset", "size", "member", "function"))
        a = merged.setdefault(key, {"counts": {}, "cpus": cols["cpu_count"][i]})
        for c in COUNTS:
            if cols[c][i]:
                a["counts"][c] = a["counts"].get(c, 0) + round(cols[c][i] * s)
    by_type = {}
    for (ty, offset, size, member, function), m in merged.items():
        a = {"counts": {c: v for c, v in m["counts"].items() if v}}
        if not a["counts"]:
            continue
        for k, v in (("offset", offset), ("size", size), ("field", member)):
            if v is not None:
                a[k] = v
        if function is not None:
            a["code"] = {"symbol": function}
        if m["cpus"] is not None:
            a["cpus"] = {"count": m["cpus"]}
        by_type.setdefault(ty, []).append(a)
    p = {"schema": 1, "provenance": {"tool": "bench/fleet.py"}, "unit": "samples",
         "cacheline_size": 64,
         "types": [{"type_name": t, "accesses": a} for t, a in by_type.items()]}
    with open(path, "w") as f:
        json.dump(p, f)
    return sum(len(a) for a in by_type.values())


DUCK_ADD = r"""
import duckdb, sys
src, out, host, build, date = sys.argv[1:6]
con = duckdb.connect()
con.execute("SET threads TO 2")
con.execute('''
COPY (
  SELECT ? AS host, CAST(NULL AS VARCHAR) AS machine, 'bench' AS workload, p.provenance.tool AS tool,
         p.unit AS unit, CAST(p.cacheline_size AS UBIGINT) AS cacheline_size,
         CAST(NULL AS UINTEGER) AS host_cpus, t.type_name AS "type",
         CAST(a."offset" AS UBIGINT) AS "offset", a.field AS member, CAST(a.size AS UBIGINT) AS size,
         a.code.symbol AS function, CAST(NULL AS VARCHAR) AS ip,
         CAST(a.cpus."count" AS UINTEGER) AS cpu_count, CAST(NULL AS VARCHAR) AS cpu_list,
         COALESCE(a.counts.loads, 0)::DOUBLE AS loads, COALESCE(a.counts.stores, 0)::DOUBLE AS stores,
         COALESCE(a.counts.rmw, 0)::DOUBLE AS rmw, COALESCE(a.counts.lcl_hitm, 0)::DOUBLE AS lcl_hitm,
         COALESCE(a.counts.rmt_hitm, 0)::DOUBLE AS rmt_hitm, COALESCE(a.counts.lcl_peer, 0)::DOUBLE AS lcl_peer,
         COALESCE(a.counts.rmt_peer, 0)::DOUBLE AS rmt_peer,
         (COALESCE(a.counts.lcl_hitm, 0) + COALESCE(a.counts.rmt_hitm, 0)
          + COALESCE(a.counts.lcl_peer, 0) + COALESCE(a.counts.rmt_peer, 0))::DOUBLE AS transfers,
         CAST(NULL AS DOUBLE) AS weight
  FROM (SELECT p, unnest(p.types) AS t FROM read_json(?, maximum_object_size = 1 << 30,
        columns = {provenance: 'STRUCT(tool VARCHAR)', unit: 'VARCHAR', cacheline_size: 'BIGINT',
                   types: 'STRUCT(type_name VARCHAR, accesses STRUCT("offset" BIGINT, size BIGINT,
                       field VARCHAR, code STRUCT(symbol VARCHAR), cpus STRUCT("count" BIGINT),
                       counts STRUCT(loads DOUBLE, stores DOUBLE, rmw DOUBLE, lcl_hitm DOUBLE,
                       rmt_hitm DOUBLE, lcl_peer DOUBLE, rmt_peer DOUBLE))[])[]'}) p),
       LATERAL (SELECT unnest(t.accesses) AS a)
) TO '%s' (FORMAT parquet, COMPRESSION snappy)
''' % out.replace("'", "''"), [host, src])
"""

DUCK_TOP = r"""
import duckdb, json, sys
store, hosts_q, types_q, members_q = sys.argv[1:5]
con = duckdb.connect()
con.execute("SET threads TO 2")
glob_ = (store.rstrip('/') + '/**/*.parquet').replace("'", "''")
con.execute("CREATE VIEW rows AS SELECT * FROM read_parquet('%s', hive_partitioning = true, "
            "hive_types_autocast = false)" % glob_)
# The same three texts as lineup: the store summed per host once, then both rankings.
con.execute("CREATE TEMP TABLE host_rows AS " + open(hosts_q).read().replace("$1", "''"))
out = {}
for k, q in (("types", types_q), ("members", members_q)):
    cur = con.execute(open(q).read().replace("{limit}", "20"))
    names = [d[0] for d in cur.description]
    out[k] = [dict(zip(names, r)) for r in cur.fetchall()]
json.dump(out, sys.stdout, default=str)
"""


def same_top(lineup_doc, duck_doc):
    for k in ("types", "members"):
        a, b = lineup_doc[k], duck_doc[k]
        if len(a) != len(b):
            return f"{k}: {len(a)} rows against {len(b)}"
        for x, y in zip(a, b):
            for c in ("build", "type", "hosts", "member", "offset"):
                if x.get(c) != y.get(c) and not (c in ("member", "offset") and y.get(c) is None):
                    return f"{k}: {c} {x.get(c)!r} against {y.get(c)!r}"
            for c in ("transfers", "writes", "accesses"):
                if abs(x[c] - y[c]) > 1e-9 * max(abs(x[c]), abs(y[c]), 1):
                    return f"{k}: {c} {x[c]} against {y[c]}"
    return None


def spread(xs):
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--builds", type=int, default=3)
    ap.add_argument("--workloads", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--add-profiles", type=int, default=20)
    ap.add_argument("--lineup", default=os.path.join(REPO, "target", "release", "lineup"))
    ap.add_argument("--dir", default="/tmp/lineup-fleet-bench")
    ap.add_argument("--keep", action="store_true", help="keep a store of this size if made")
    args = ap.parse_args()
    if sh([args.lineup, "fleet", "--help"]).find("add") < 0:
        sys.exit(f"{args.lineup}: built without --features fleet")
    py = sys.executable
    os.makedirs(args.dir, exist_ok=True)

    table, metadata, workloads = templates(args.lineup, args.dir)
    hosts, rng = plan(table, workloads, args)
    print(f"templates: {table.num_rows} rows of {len(workloads)} workloads "
          f"({len(set(table.column('type').to_pylist()))} types); "
          f"{sum(len(h) for h in hosts) / len(hosts):.0f} rows per host profile")

    store = os.path.join(args.dir, f"store-{args.rows}")
    marker = os.path.join(store, ".complete")
    if not os.path.exists(marker):
        shutil.rmtree(store, ignore_errors=True)
        t = time.perf_counter()
        n, builds = generate(table, metadata, hosts, rng, args, store)
        with open(marker, "w") as f:
            f.write(str(n))
        print(f"generated {n} rows in {time.perf_counter() - t:.0f} s")
    n = int(open(marker).read())
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(store, "**", "*.parquet"),
                                                      recursive=True))
    files = len(glob.glob(os.path.join(store, "**", "*.parquet"), recursive=True))
    print(f"store: {n:,} rows, {files} files, {size / 1e6:.0f} MB")

    # add: the same generated host profiles through both engines, interleaved.
    prof_dir = os.path.join(args.dir, "profiles")
    shutil.rmtree(prof_dir, ignore_errors=True)
    os.makedirs(prof_dir)
    profiles = []
    for k in range(args.add_profiles):
        idx = hosts[k % len(hosts)]
        scale = rng.lognormal(0.0, 1.0) * rng.lognormal(0.0, 0.2, size=len(idx))
        path = os.path.join(prof_dir, f"p{k}.json")
        profiles.append((path, profile_json(table, idx, scale, path), f"host{k:04d}"))
    add_rows = sum(r for _, r, _ in profiles)
    duck_add = os.path.join(args.dir, "duck_add.py")
    duck_top = os.path.join(args.dir, "duck_top.py")
    open(duck_add, "w").write(DUCK_ADD)
    open(duck_top, "w").write(DUCK_TOP)
    add = {"lineup": [], "DuckDB": []}
    add_rss = {"lineup": 0, "DuckDB": 0}
    for run in range(args.runs):
        for engine in ("lineup", "DuckDB"):
            s = os.path.join(args.dir, f"add-{engine}-{run}")
            shutil.rmtree(s, ignore_errors=True)
            total = 0.0
            for k, (path, _, host) in enumerate(profiles):
                if engine == "lineup":
                    cmd = [args.lineup, "fleet", "add", "--store", s, "--host", host,
                           "--workload", "bench", "--build", "6.18.0-fleet",
                           "--date", "2025-01-01", "--profile", path]
                else:
                    folder = os.path.join(s, "build=6.18.0-fleet", "date=2025-01-01")
                    os.makedirs(folder, exist_ok=True)
                    cmd = [py, duck_add, path, os.path.join(folder, f"p{k}.parquet"), host,
                           "6.18.0-fleet", "2025-01-01"]
                wall, rss, _ = timed(cmd)
                total += wall
                add_rss[engine] = max(add_rss[engine], rss)
            add[engine].append(total)
    # Both ingests stored the same rows.
    import pyarrow.dataset as ds

    counts = {e: ds.dataset(os.path.join(args.dir, f"add-{e}-0"), format="parquet",
                            partitioning="hive").count_rows() for e in add}
    if len(set(counts.values())) != 1 or counts["lineup"] != add_rows:
        sys.exit(f"add: rows stored differ: {counts}, {add_rows} in the profiles")

    # top: same SQL texts, same files; answers checked equal first.
    sql = os.path.join(REPO, "fleet", "sql")
    lcmd = [args.lineup, "fleet", "top", "--store", store, "--limit", "20", "--json"]
    dcmd = [py, duck_top, store, os.path.join(sql, "top_hosts.sql"),
            os.path.join(sql, "top_types.sql"),
            os.path.join(sql, "top_members.sql")]
    top = {"lineup": [], "DuckDB": []}
    top_rss = {"lineup": 0, "DuckDB": 0}
    answers = {}
    for run in range(args.runs):
        for engine, cmd in (("lineup", lcmd), ("DuckDB", dcmd)):
            wall, rss, out = timed(cmd)
            top[engine].append(wall)
            top_rss[engine] = max(top_rss[engine], rss)
            answers[engine] = json.loads(out)
    diff = same_top(answers["lineup"], answers["DuckDB"])
    if diff:
        sys.exit(f"top: lineup and DuckDB answer differently: {diff}")

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    print()
    print(f"*measured {today} on this project's 2-CPU VM by `python3 bench/fleet.py --rows "
          f"{args.rows} --runs {args.runs}`: {n:,} rows, {files} files, {size / 1e6:.0f} MB "
          f"of Parquet; `add`: {args.add_profiles} profiles of {add_rows / args.add_profiles:.0f}"
          f" rows, one process each; medians of {args.runs} interleaved runs (range).*")
    print()
    print("| | lineup (DataFusion) | DuckDB | lineup / DuckDB |")
    print("|---|---|---|---|")
    ma, da = statistics.median(add["lineup"]), statistics.median(add["DuckDB"])
    print(f"| `add`: wall for {args.add_profiles} profiles | {spread(add['lineup'])} | "
          f"{spread(add['DuckDB'])} | {ma / da:.2f}x time |")
    print(f"| `add`: rows/s | {add_rows / ma:,.0f} | {add_rows / da:,.0f} | "
          f"{da / ma:.2f}x throughput |")
    print(f"| `add`: peak RSS | {add_rss['lineup'] / 2**20:.0f} MiB | "
          f"{add_rss['DuckDB'] / 2**20:.0f} MiB | |")
    mt, dt = statistics.median(top["lineup"]), statistics.median(top["DuckDB"])
    print(f"| `top` (types and members, every build): wall | {spread(top['lineup'])} | "
          f"{spread(top['DuckDB'])} | {mt / dt:.2f}x time |")
    print(f"| `top`: rows/s | {n / mt:,.0f} | {n / dt:,.0f} | {dt / mt:.2f}x throughput |")
    print(f"| `top`: peak RSS | {top_rss['lineup'] / 2**20:.0f} MiB | "
          f"{top_rss['DuckDB'] / 2**20:.0f} MiB | |")
    for d in glob.glob(os.path.join(args.dir, "add-*")):
        shutil.rmtree(d, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
