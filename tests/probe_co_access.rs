//! Unit probes of the contention model's co-access terms (issue 24 item 1 and its acceptance),
//! end to end through `diagnose`, `optimize` and `predict` on one small struct each:
//!
//! - two members one function writes together are one write stream: `diagnose` calls their
//!   line co-written (not false sharing), `optimize` puts them on one line when they start
//!   apart, and `predict` prices them apart above together;
//! - what one run of a path reads together is one touch of the line: a lookup that reads a
//!   handle's key fields and updates its `refs`, beside a release that updates `refs`, misses
//!   on the line for `refs` anyway: true sharing, no layout change, and a split priced no
//!   better. The same lookup with `refs` as an atomic read-modify-write is a touch per field
//!   (the atomic waits for its line; another CPU can take it between): then the key fields
//!   beside `refs` are false sharing, and the split pays;
//! - a reader that reads every writer's member (a main thread summing each worker's count)
//!   misses on members it reads itself: true sharing for it, while the workers' misses on each
//!   other's counts are false sharing, which makes the line's verdict.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{lineup_json, predicted_totals};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-probe-co-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `src` (C) with debug information; returns the object.
fn object(dir: &Path, src: &str) -> PathBuf {
    let c = dir.join("s.c");
    std::fs::write(&c, src).unwrap();
    let o = dir.join("s.o");
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .expect("cc");
    assert!(st.success(), "cc {src}");
    o
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const SKETCH_HEAD: &str =
    "[sketch]\ntitle = \"probe\"\n[machine]\ncpus = 160\nnuma_nodes = 2\ncacheline_size = 64\n";

fn access(field: &str, kind: &str, by: &str, weight: u32, cpus: &str) -> String {
    format!(
        "[[type.access]]\nfield = \"{field}\"\nkind = \"{kind}\"\nby = \"{by}\"\nweight = {weight}\ncpus = {cpus}\n"
    )
}

fn run(cmd: &str, ty: &str, obj: &Path, sketch: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        cmd,
        "--type",
        ty,
        "--dwarf",
        obj.to_str().unwrap(),
        "--sketch",
        sketch,
        "--machine",
        "icelake-2s",
        "--json",
    ];
    args.extend_from_slice(extra);
    lineup_json(&args)
}

/// The line (of `optimize --json`'s plan) that holds member `m`.
fn planned_line(o: &Value, m: &str) -> u64 {
    let units = o["units"].as_array().unwrap();
    let i = units
        .iter()
        .position(|u| u["members"].as_array().unwrap().iter().any(|x| x == m))
        .unwrap_or_else(|| panic!("no member {m}: {o}"));
    o["plan"]["placement"]["offsets"][i].as_u64().unwrap() / 64
}

/// Modeled cycles of `layout` (a file name, or `current`/`lineup`) in `predict --json`.
fn priced(p: &Value, layout: &str) -> f64 {
    predicted_totals(p)
        .into_iter()
        .find(|(n, _)| n == layout)
        .unwrap_or_else(|| panic!("{layout} not priced: {p}"))
        .1
}

#[test]
fn two_members_one_function_writes_stay_one_stream_and_one_line() {
    let dir = scratch("cowritten");
    // `a` and `b` start on different lines; `c` beside `b` is read by another path.
    let obj = object(
        &dir,
        "struct pair { long a; long filler[8]; long b; long c; };\nstruct pair p;\n",
    );
    let mut sketch = format!("{SKETCH_HEAD}[[type]]\nname = \"pair\"\n");
    sketch += &access("a", "store", "update", 100, "\"all\"");
    sketch += &access("b", "store", "update", 100, "\"all\"");
    sketch += &access("c", "load", "peek", 100, "\"all\"");
    let sketch = write(&dir, "sketch.toml", &sketch);

    // optimize: one line for what `update` writes together, `c` elsewhere.
    let o = run("optimize", "pair", &obj, &sketch, &[]);
    assert_eq!(planned_line(&o, "a"), planned_line(&o, "b"), "{o}");
    assert_ne!(planned_line(&o, "c"), planned_line(&o, "a"), "{o}");

    // The layout with `a` and `b` together, diagnosed: co-written, not false sharing, and no
    // term of the line is false sharing between `a` and `b`.
    let together = object(
        &dir,
        "struct pair { long a; long b; long filler[8]; long c; };\nstruct pair p;\n",
    );
    let d = run("diagnose", "pair", &together, &sketch, &[]);
    let line = common::diagnosed_line(&d, "a");
    assert_eq!(line["verdict"], "co_written", "{line:#}");
    for t in line["terms"].as_array().unwrap() {
        assert_ne!(t["class"], "false_sharing", "{t}");
    }
    // predict: apart costs more than together (each run moves two lines, not one).
    let apart_h = write(
        &dir,
        "apart.h",
        "struct pair { long a; long filler[8]; long b; long c; };\n",
    );
    let p = run(
        "predict",
        "pair",
        &together,
        &sketch,
        &["--layout", &apart_h],
    );
    assert!(
        priced(&p, "apart.h") > priced(&p, "current") * 1.2,
        "apart {} together {}: {p}",
        priced(&p, "apart.h"),
        priced(&p, "current")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The handle of the co-read probe: `value`, `key_length`, `hash` read by a lookup that
/// updates `refs`; a release updates `refs` too.
const HANDLE: &str =
    "struct handle { void *value; long key_length; int hash; int refs; };\nstruct handle h;\n";
const HANDLE_SPLIT: &str = "struct handle { void *value; long key_length; int hash; int refs __attribute__((aligned(64))); };\n";

fn handle_sketch(refs_kind: &str) -> String {
    let mut s = format!("{SKETCH_HEAD}[[type]]\nname = \"handle\"\n");
    for f in ["value", "key_length", "hash"] {
        s += &access(f, "load", "lookup", 100, "\"all\"");
    }
    s += &access("refs", refs_kind, "lookup", 100, "\"all\"");
    s += &access("refs", refs_kind, "release", 100, "\"all\"");
    s
}

#[test]
fn what_one_run_reads_beside_a_member_it_updates_is_true_sharing_and_stays() {
    let dir = scratch("coread");
    let obj = object(&dir, HANDLE);
    let split = write(&dir, "split.h", HANDLE_SPLIT);

    // Plain stores (refs updated under the cache's mutex): one touch per lookup.
    let sketch = write(&dir, "plain.toml", &handle_sketch("store"));
    let d = run("diagnose", "handle", &obj, &sketch, &[]);
    let line = common::diagnosed_line(&d, "value");
    assert_ne!(line["verdict"], "false_sharing", "{line:#}");
    for t in line["terms"].as_array().unwrap() {
        // No miss of the lookup is false sharing: its run takes the line for `refs` anyway.
        if t["victim_path"] == "lookup" {
            assert_ne!(t["class"], "false_sharing", "{t}");
        }
    }
    let o = run("optimize", "handle", &obj, &sketch, &[]);
    for m in ["value", "key_length", "hash"] {
        assert_eq!(planned_line(&o, m), planned_line(&o, "refs"), "{m}: {o}");
    }
    assert_eq!(
        o["plan"]["placement"]["size"], o["current"]["size"],
        "no growth: {o}"
    );
    let p = run("predict", "handle", &obj, &sketch, &["--layout", &split]);
    assert!(
        priced(&p, "split.h") >= priced(&p, "current") * (1.0 - 1e-9),
        "split {} current {}: {p}",
        priced(&p, "split.h"),
        priced(&p, "current")
    );

    // Atomic read-modify-writes of `refs`: the lookup's loads are touches of their own, which
    // another CPU's atomic can come between: false sharing, and the split pays.
    let sketch = write(&dir, "atomic.toml", &handle_sketch("rmw"));
    let d = run("diagnose", "handle", &obj, &sketch, &[]);
    let line = common::diagnosed_line(&d, "value");
    assert_eq!(line["verdict"], "false_sharing", "{line:#}");
    let p = run("predict", "handle", &obj, &sketch, &["--layout", &split]);
    assert!(
        priced(&p, "split.h") < priced(&p, "current"),
        "split {} current {}: {p}",
        priced(&p, "split.h"),
        priced(&p, "current")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reader_of_every_writers_member_is_true_sharing_for_it_and_false_between_the_writers() {
    let dir = scratch("everyone");
    let obj = object(
        &dir,
        "struct pending { unsigned long t1; unsigned long t2; unsigned long t3; };\nstruct pending q;\n",
    );
    let mut s = format!("{SKETCH_HEAD}[[type]]\nname = \"pending\"\n");
    for (k, f) in ["t1", "t2", "t3"].iter().enumerate() {
        s += &access(f, "load", "sum", 100, "[0]");
        s += &access(f, "load", "worker", 100, &format!("[{}]", k + 1));
        s += &access(f, "store", "worker", 10, &format!("[{}]", k + 1));
    }
    let sketch = write(&dir, "sketch.toml", &s);
    let d = run("diagnose", "pending", &obj, &sketch, &[]);
    let line = common::diagnosed_line(&d, "t1");
    assert_eq!(line["verdict"], "false_sharing", "{line:#}");
    let terms = line["terms"].as_array().unwrap();
    let mut workers_false = false;
    for t in terms {
        // The summing thread reads every member a worker writes: its misses are true sharing.
        if t["victim_path"] == "sum" {
            assert_eq!(t["class"], "true_sharing", "{t}");
        }
        // A worker misses on its own count after another worker's store: false sharing.
        if t["victim_path"] == "worker" && t["class"] == "false_sharing" {
            workers_false = true;
        }
    }
    assert!(workers_false, "{line:#}");
    let _ = std::fs::remove_dir_all(&dir);
}
