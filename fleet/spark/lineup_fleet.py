#!/usr/bin/env python3
"""lineup's fleet queries on Apache Spark, for stores too large for one machine.

The store is the folder `lineup fleet add` writes (docs/fleet.md): Parquet files under
`build=<id>/date=<YYYY-MM-DD>/`. This job runs the same SQL texts lineup's embedded engine runs
(fleet/sql/*.sql, one text per question, read here and by lineup at build time) and prints the
same JSON documents as `lineup fleet top --json`, `lineup fleet compare --json` and the rows of
`lineup fleet profile` (docs/schema/fleet-top.schema.json, fleet-compare.schema.json), so that
the answers of the two engines can be compared row for row.

    spark-submit fleet/spark/lineup_fleet.py top --store hdfs:///fleet --build 6.18.44 --limit 20
    spark-submit fleet/spark/lineup_fleet.py compare --store s3a://bucket/fleet 6.18.44 6.19.2
    spark-submit fleet/spark/lineup_fleet.py profile-rows --store /nfs/fleet --type task_group
    python3 fleet/spark/lineup_fleet.py --master 'local[2]' top --store fleet   # local mode

What differs between the engines' SQL dialects is settled here, not in the texts: identifiers
are double-quoted ("type", "offset"), which Spark reads as identifiers with
spark.sql.ansi.doubleQuotedIdentifiers; partition values stay text (no type inference, as
lineup reads them); positional placeholders $1, $2 become Spark's named markers :p1, :p2.
"""

import argparse
import json
import os
import re
import sys

SCHEMA_VERSION = 1
SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")


def sql_text(sql_dir, name, limit=None):
    path = os.path.join(sql_dir, name + ".sql")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        sys.exit(f"{path}: cannot read the query: {e.strerror}")
    if limit is not None:
        text = text.replace("{limit}", str(int(limit)))
    return re.sub(r"\$(\d+)", r":p\1", text)


def session(master, app="lineup fleet"):
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app)
    if master:
        b = b.master(master)
    conf = {
        "spark.sql.ansi.enabled": "true",
        "spark.sql.ansi.doubleQuotedIdentifiers": "true",
        # build=6.18 and date=2025-03-05 are text in lineup's store, not a number and a date.
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    for k, v in conf.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def register(spark, store):
    """The store as the table `rows`; exits with one line when it holds no profile."""
    try:
        df = spark.read.option("basePath", store).parquet(store)
    except Exception as e:  # AnalysisException: path missing, or no Parquet file under it
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        sys.exit(f"{store}: no profile stored ({first})")
    missing = {"build", "date"} - set(df.columns)
    if missing:
        sys.exit(f"{store}: not a lineup fleet store (no build=<id>/date=<day>/ folders)")
    df.createOrReplaceTempView("rows")


def plain(v):
    """A Spark value as JSON: Parquet's UINT64 reads as decimal(20,0), counts as bigint."""
    from decimal import Decimal

    if isinstance(v, Decimal):
        return int(v)
    return v


def run(spark, sql_dir, name, params, limit=None):
    q = sql_text(sql_dir, name, limit)
    args = {f"p{i + 1}": p for i, p in enumerate(params)}
    rows = spark.sql(q, args=args).collect()
    return [{k: plain(v) for k, v in r.asDict().items()} for r in rows]


def ranked(row, members):
    if not members:
        return row
    # lineup leaves out a member's offset or name where the evidence gave none.
    return {k: v for k, v in row.items() if not (k in ("offset", "member") and v is None)}


def top(spark, args):
    build = args.build or ""
    # One scan of the store, summed per host, kept for both rankings (as lineup does).
    hosts = spark.sql(sql_text(args.sql_dir, "top_hosts"), args={"p1": build}).cache()
    hosts.createOrReplaceTempView("host_rows")
    t = {
        "schema": SCHEMA_VERSION,
        "store": args.store,
        "build": args.build,
        "types": [
            ranked(r, False) for r in run(spark, args.sql_dir, "top_types", [build], args.limit)
        ],
        "members": [
            ranked(r, True) for r in run(spark, args.sql_dir, "top_members", [build], args.limit)
        ],
    }
    hosts.unpersist()
    return t, 0


def compare(spark, args):
    have = [r["build"] for r in spark.sql(
        "SELECT DISTINCT CAST(build AS STRING) AS build FROM rows ORDER BY build").collect()]
    for b in (args.build_a, args.build_b):
        if b not in have:
            print(f"{args.store}: no build {json.dumps(b)} stored (stored: {', '.join(have)})",
                  file=sys.stderr)
            return None, 2
    members = []
    for r in run(spark, args.sql_dir, "compare", [args.build_a, args.build_b]):
        m = {"type": r["type"], "member": r["member"]}
        for side in ("a", "b"):
            present = r[f"{side}_build"] is not None
            m[side] = {
                k[len(side) + 1:]: v for k, v in r.items()
                if k.startswith(side + "_") and k != f"{side}_build"
            } if present else None
        m["moved"] = bool(r["moved"])
        m["change"] = r["change"]
        members.append(m)
    c = {
        "schema": SCHEMA_VERSION,
        "store": args.store,
        "build_a": args.build_a,
        "build_b": args.build_b,
        "members": members,
    }
    differs = any(m["moved"] or m["change"] != "same" for m in members)
    return c, int(differs)


def profile_rows(spark, args):
    head = run(spark, args.sql_dir, "profile_head", [args.type, args.build or ""])[0]
    rows = run(spark, args.sql_dir, "profile_rows", [args.type, args.build or ""])
    return {"type": args.type, "build": args.build, "head": head, "rows": rows}, 0


COMMANDS = {"top": top, "compare": compare, "profile-rows": profile_rows}


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    p.add_argument("--sql-dir", default=SQL_DIR, help="the query texts (default: fleet/sql)")
    p.add_argument("-o", "--output", help="write the JSON here (default: standard output)")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("top", help="types and members ranked by cost, per build")
    t.add_argument("--store", required=True)
    t.add_argument("--build")
    t.add_argument("--limit", type=int, default=20)
    c = sub.add_parser("compare", help="member by member, build A against build B")
    c.add_argument("--store", required=True)
    c.add_argument("build_a")
    c.add_argument("build_b")
    r = sub.add_parser("profile-rows", help="the merged accesses of one type")
    r.add_argument("--store", required=True)
    r.add_argument("--type", required=True)
    r.add_argument("--build")
    b = sub.add_parser(
        "batch",
        help="several requests in one Spark session: FILE holds a JSON list of argument "
        "lists (each as this job's command line); prints a list of {code, doc}")
    b.add_argument("file")
    return p


def answer(spark, p, args):
    if args.command == "top" and args.limit < 0:
        p.error("--limit must be 0 or more")
    register(spark, args.store)
    return COMMANDS[args.command](spark, args)


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    requests = None
    if args.command == "batch":
        try:
            with open(args.file, encoding="utf-8") as f:
                requests = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"{args.file}: not a JSON list of requests: {e}")
        if not isinstance(requests, list) or not all(
                isinstance(r, list) and r and r[0] in COMMANDS for r in requests):
            sys.exit(f"{args.file}: not a JSON list of requests (lists of arguments, each "
                     f"starting with one of {', '.join(COMMANDS)})")

    spark = session(args.master)
    try:
        if requests is None:
            doc, code = answer(spark, p, args)
        else:
            out = []
            for r in requests:
                one = p.parse_args(["--sql-dir", args.sql_dir] + [str(x) for x in r])
                d, c = answer(spark, p, one)
                out.append({"code": c, "doc": d})
            doc, code = out, 0
    finally:
        spark.stop()
    if doc is not None:
        text = json.dumps(doc, indent=2) + "\n"
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
