//! `lineup fleet` (built with `--features fleet`): `add` of each evidence kind in tests/data,
//! bad and duplicate input refused in one line with nothing written, `top`'s ranking against
//! sums computed here from the evidence, `compare` on a re-layout, and `profile` merged over
//! two hosts diagnosed as their sum.
#![cfg(feature = "fleet")]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use common::fleet::{BTF, C2C, SKETCH, TYPEOFF, layout_profile};

/// A fresh, empty folder of its own for each test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every file and folder under `dir`, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            out.push(e.path());
            if e.path().is_dir() {
                out.extend(listing(&e.path()));
            }
        }
    }
    out.sort();
    out
}

fn run(args: &[&str]) -> std::process::Output {
    common::lineup(args)
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "lineup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `lineup fleet add` into `store` for `host` of build `build`, evidence and options in
/// `rest`.
fn add(store: &Path, host: &str, build: &str, rest: &[&str]) -> std::process::Output {
    let mut args = vec![
        "fleet",
        "add",
        "--store",
        store.to_str().unwrap(),
        "--host",
        host,
        "--workload",
        "w",
        "--build",
        build,
        "--date",
        "2025-03-05",
    ];
    args.extend_from_slice(rest);
    run(&args)
}

fn added(store: &Path, host: &str, build: &str, rest: &[&str]) {
    let out = add(store, host, build, rest);
    assert!(
        out.status.success(),
        "fleet add {rest:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A refusal: exit 2, one line on stderr naming `file`, no panic, and the store's files as
/// they were.
fn refused(store: &Path, file: &str, out: &std::process::Output, before: &[PathBuf]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(file), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(listing(store), before, "{err}");
    err
}

/// The rows of every Parquet file in the store, as JSON objects (column name to value).
fn stored_rows(store: &Path) -> Vec<serde_json::Map<String, Value>> {
    use arrow::array::Array;
    let mut out = Vec::new();
    for f in lineup::fleet::stored_files(store) {
        // build and date are the path's (`build=<id>/date=<date>/`).
        let part = |key: &str| {
            f.ancestors()
                .filter_map(|a| a.file_name()?.to_str()?.strip_prefix(key))
                .next()
                .unwrap_or_else(|| panic!("{key} in {}", f.display()))
                .to_string()
        };
        let (build, date) = (part("build="), part("date="));
        let file = std::fs::File::open(&f).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            for i in 0..batch.num_rows() {
                let mut row = serde_json::Map::new();
                row.insert("build".into(), json!(build));
                row.insert("date".into(), json!(date));
                for (field, col) in batch.schema().fields().iter().zip(batch.columns()) {
                    let v = if col.is_null(i) {
                        Value::Null
                    } else if let Some(s) = col.as_any().downcast_ref::<arrow::array::StringArray>()
                    {
                        json!(s.value(i))
                    } else if let Some(s) =
                        col.as_any().downcast_ref::<arrow::array::Float64Array>()
                    {
                        json!(s.value(i))
                    } else if let Some(s) = col.as_any().downcast_ref::<arrow::array::UInt64Array>()
                    {
                        json!(s.value(i))
                    } else if let Some(s) = col.as_any().downcast_ref::<arrow::array::UInt32Array>()
                    {
                        json!(s.value(i))
                    } else {
                        panic!("column {} of an unexpected type", field.name())
                    };
                    row.insert(field.name().clone(), v);
                }
                let errs = common::schema::errors("fleet-row", &Value::Object(row.clone()));
                assert!(errs.is_empty(), "{}: {errs:#?}", f.display());
                out.push(row);
            }
        }
    }
    out
}

fn num(v: &Value, k: &str) -> f64 {
    v["counts"][k].as_f64().unwrap_or(0.0)
}

/// The typed accesses of a profile as `lineup import` writes it, with something counted.
fn typed_accesses(profile: &Value) -> Vec<(String, Value)> {
    profile["types"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            let name = t["type_name"].as_str().unwrap().to_string();
            t["accesses"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|a| {
                    [
                        "loads", "stores", "rmw", "lcl_hitm", "rmt_hitm", "lcl_peer", "rmt_peer",
                    ]
                    .iter()
                    .any(|k| num(a, k) != 0.0)
                })
                .map(move |a| (name.clone(), a))
        })
        .collect()
}

#[test]
fn typeoff_rows_are_the_typed_accesses_without_addresses() {
    let store = scratch("typeoff");
    added(&store, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    let files = lineup::fleet::stored_files(&store);
    assert_eq!(files.len(), 1);
    let rel = files[0].strip_prefix(&store).unwrap();
    assert!(rel.starts_with("build=b1/date=2025-03-05"), "{rel:?}");
    let profile: Value = serde_json::from_str(&ok(&["import", "--perf-typeoff", TYPEOFF])).unwrap();
    let want = typed_accesses(&profile);
    let rows = stored_rows(&store);
    assert_eq!(rows.len(), want.len());
    for ((ty, a), r) in want.iter().zip(&rows) {
        assert_eq!(r["type"], json!(ty));
        assert_eq!(r["offset"], a["offset"]);
        assert_eq!(r["member"], a["field"]);
        assert_eq!(r["function"], a["code"]["symbol"]);
        assert_eq!(r["loads"].as_f64().unwrap(), num(a, "loads"));
        assert_eq!(r["stores"].as_f64().unwrap(), num(a, "stores"));
        assert_eq!(r["host"], json!("a"));
        assert_eq!(r["ip"], Value::Null);
    }
}

#[test]
fn c2c_lines_are_stored_once_bound_to_a_struct() {
    let store = scratch("c2c");
    // Raw cache lines without a struct to bind them to: refused, nothing written.
    let out = add(&store, "a", "b1", &["--c2c", C2C]);
    let err = refused(&store, C2C, &out, &[]);
    assert!(err.contains("--type"), "{err}");
    added(
        &store,
        "a",
        "b1",
        &["--c2c", C2C, "--type", "root_domain", "--btf", BTF],
    );
    let rows = stored_rows(&store);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["type"] == json!("root_domain")));
    assert!(rows.iter().all(|r| r["ip"].is_null()));
    // The HITM stored is what the report's lines list row by row, no more.
    let profile: Value = serde_json::from_str(&ok(&["import", "--c2c", C2C])).unwrap();
    let listed: f64 = profile["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["accesses"].as_array().cloned().unwrap_or_default())
        .map(|a| num(&a, "lcl_hitm") + num(&a, "rmt_hitm"))
        .sum();
    let stored: f64 = rows
        .iter()
        .map(|r| r["lcl_hitm"].as_f64().unwrap() + r["rmt_hitm"].as_f64().unwrap())
        .sum();
    assert!(stored > 0.0 && stored <= listed, "{stored} of {listed}");
}

#[test]
fn sketch_and_saved_profile_are_stored() {
    let store = scratch("sketch");
    added(&store, "a", "b1", &["--sketch", SKETCH]);
    let profile: Value = serde_json::from_str(&ok(&["import", "--sketch", SKETCH])).unwrap();
    let want = typed_accesses(&profile);
    let rows = stored_rows(&store);
    assert_eq!(rows.len(), want.len());
    // Named by field only: no offset until a layout places them.
    assert!(rows.iter().all(|r| r["offset"].is_null()));
    // With the struct's layout, every field gets its offset.
    let placed = scratch("sketch-placed");
    added(
        &placed,
        "a",
        "b1",
        &["--sketch", SKETCH, "--type", "root_domain", "--btf", BTF],
    );
    assert!(stored_rows(&placed).iter().all(|r| r["offset"].is_u64()));
    // A saved profile is evidence as any other.
    let dir = scratch("sketch-saved");
    let saved = dir.join("saved.json");
    std::fs::write(&saved, serde_json::to_string(&profile).unwrap()).unwrap();
    let again = scratch("sketch-again");
    added(&again, "a", "b1", &["--profile", saved.to_str().unwrap()]);
    assert_eq!(stored_rows(&again), rows);
}

#[test]
fn bad_duplicate_and_unbuilt_input_is_refused_in_one_line() {
    let store = scratch("refused");
    added(&store, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    let before = listing(&store);
    // The same input again.
    let out = add(&store, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    let err = refused(&store, TYPEOFF, &out, &before);
    assert!(err.contains("already in the store"), "{err}");
    // perf.data of page faults: not memory-access evidence.
    let pf = "tests/data/perf/page_faults.data";
    refused(
        &store,
        pf,
        &add(&store, "a", "b1", &["--perf-data", pf]),
        &before,
    );
    // perf script samples of a userspace program, with no struct to bind them to.
    let script = "tests/data/perf/mem_script.txt";
    let out = add(&store, "a", "b1", &["--perf-script", script]);
    refused(&store, script, &out, &before);
    // Not a profile, and no such file.
    let dir = scratch("refused-input");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"schema\": 1, \"unit\": ").unwrap();
    let junk = junk.to_str().unwrap();
    refused(
        &store,
        junk,
        &add(&store, "a", "b1", &["--profile", junk]),
        &before,
    );
    let missing = dir.join("missing.txt");
    let missing = missing.to_str().unwrap();
    refused(
        &store,
        missing,
        &add(&store, "a", "b1", &["--c2c", missing]),
        &before,
    );
    // No --build and no build-id in the evidence.
    let out = run(&[
        "fleet",
        "add",
        "--store",
        store.to_str().unwrap(),
        "--host",
        "b",
        "--workload",
        "w",
        "--perf-typeoff",
        TYPEOFF,
    ]);
    let err = refused(&store, TYPEOFF, &out, &before);
    assert!(err.contains("--build"), "{err}");
    // A build id that is no path component.
    let out = add(&store, "b", "../up", &["--perf-typeoff", TYPEOFF]);
    refused(&store, TYPEOFF, &out, &before);
}

/// Cost sums of one group: (transfers, writes, accesses).
fn cost(a: &Value) -> [f64; 3] {
    let n = |k| num(a, k);
    [
        n("lcl_hitm") + n("rmt_hitm") + n("lcl_peer") + n("rmt_peer"),
        n("stores") + n("rmw"),
        n("loads") + n("stores") + n("rmw"),
    ]
}

#[test]
fn top_ranks_types_and_members_by_cost_with_their_hosts() {
    let store = scratch("top");
    // Host a has the typeoff report and the c2c report; host b the typeoff report only.
    added(&store, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    added(&store, "b", "b1", &["--perf-typeoff", TYPEOFF]);
    added(
        &store,
        "a",
        "b1",
        &["--c2c", C2C, "--type", "root_domain", "--btf", BTF],
    );
    // Expected, from the evidence itself: per type, its accesses' sums (twice for the
    // typeoff report, stored for two hosts), and the hosts that have it.
    let typeoff: Value = serde_json::from_str(&ok(&["import", "--perf-typeoff", TYPEOFF])).unwrap();
    let mut want: Vec<(String, [f64; 3], u64)> = Vec::new();
    let mut put = |ty: &str, c: [f64; 3], times: f64, hosts: u64| {
        match want.iter_mut().find(|w| w.0 == ty) {
            Some(w) => (0..3).for_each(|i| w.1[i] += c[i] * times),
            None => want.push((ty.to_string(), c.map(|x| x * times), hosts)),
        };
    };
    for (ty, a) in typed_accesses(&typeoff) {
        put(&ty, cost(&a), 2.0, 2);
    }
    // The c2c rows as stored (which of its lines bind is binding's answer, tested elsewhere).
    let rd: Vec<_> = stored_rows(&store)
        .into_iter()
        .filter(|r| r["type"] == json!("root_domain"))
        .collect();
    assert!(!rd.is_empty());
    for r in &rd {
        let v = |k: &str| r[k].as_f64().unwrap();
        let c = [
            v("transfers"),
            v("stores") + v("rmw"),
            v("loads") + v("stores") + v("rmw"),
        ];
        put("root_domain", c, 1.0, 1);
    }
    want.sort_by(|x, y| {
        (y.1[0], y.1[1], y.1[2])
            .partial_cmp(&(x.1[0], x.1[1], x.1[2]))
            .unwrap()
            .then(x.0.cmp(&y.0))
    });
    let top = common::lineup_json(&[
        "fleet",
        "top",
        "--store",
        store.to_str().unwrap(),
        "--limit",
        "100",
        "--json",
    ]);
    assert_eq!(top["schema"], json!(1));
    let errs = common::schema::errors("fleet-top", &top);
    assert!(errs.is_empty(), "{errs:#?}");
    let types = top["types"].as_array().unwrap();
    assert_eq!(types.len(), want.len());
    for (t, (ty, c, hosts)) in types.iter().zip(&want) {
        assert_eq!(t["type"], json!(ty));
        assert_eq!(t["build"], json!("b1"));
        assert_eq!(t["hosts"], json!(hosts));
        let close = |k: &str, v: f64| (t[k].as_f64().unwrap() - v).abs() <= 1e-9 * v.max(1.0);
        assert!(close("transfers", c[0]), "{t}");
        assert!(close("writes", c[1]), "{t}");
        assert!(close("accesses", c[2]), "{t}");
    }
    // Members in cost order, each no costlier than the one before.
    let members = top["members"].as_array().unwrap();
    let key = |m: &Value| ["transfers", "writes", "accesses"].map(|k| m[k].as_f64().unwrap());
    assert!(members.windows(2).all(|w| key(&w[0]) >= key(&w[1])));
    // --limit and --build.
    let one = common::lineup_json(&[
        "fleet",
        "top",
        "--store",
        store.to_str().unwrap(),
        "--limit",
        "1",
        "--build",
        "b1",
        "--json",
    ]);
    assert_eq!(one["types"].as_array().unwrap().len(), 1);
    assert_eq!(one["types"][0], types[0]);
}

#[test]
fn compare_shows_the_members_a_relayout_moved_and_addresses_are_kept_only_when_asked() {
    let dir = scratch("compare-in");
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    // Build A: `a` and `b` share the first line and bounce it; build B moves `b` to the next
    // line, and the transfers on it stop. `c` stays where it was, as costly.
    layout_profile(
        &old,
        &[
            ("a", 0, 100.0, 10.0),
            ("b", 8, 100.0, 40.0),
            ("c", 16, 5.0, 0.0),
        ],
        1.0,
    );
    layout_profile(
        &new,
        &[
            ("a", 0, 100.0, 10.0),
            ("b", 64, 100.0, 0.0),
            ("c", 16, 5.0, 0.0),
        ],
        1.0,
    );
    let store = scratch("compare");
    for host in ["h1", "h2"] {
        added(&store, host, "A", &["--profile", old.to_str().unwrap()]);
    }
    added(&store, "h1", "B", &["--profile", new.to_str().unwrap()]);
    // Instruction addresses only with --keep-addresses (the same input with that flag is
    // another input).
    let rows = stored_rows(&store);
    assert!(rows.iter().all(|r| r["ip"].is_null()));
    let kept = scratch("compare-kept");
    added(
        &kept,
        "h1",
        "A",
        &["--profile", old.to_str().unwrap(), "--keep-addresses"],
    );
    let with_ip = stored_rows(&kept);
    let ips: Vec<&Value> = with_ip.iter().map(|r| &r["ip"]).collect();
    let want: Vec<Value> = [0u64, 8, 16]
        .iter()
        .map(|o| json!(format!("{:#x}", 0xffffffff81000000u64 + o)))
        .collect();
    assert_eq!(ips, want.iter().collect::<Vec<_>>());
    let s = store.to_str().unwrap();
    let out = run(&["fleet", "compare", "--store", s, "A", "B", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["schema"], json!(1));
    let errs = common::schema::errors("fleet-compare", &c);
    assert!(errs.is_empty(), "{errs:#?}");
    let m = |name: &str| {
        c["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["member"] == json!(name))
            .unwrap_or_else(|| panic!("{name} in {c}"))
            .clone()
    };
    let b = m("b");
    assert_eq!(b["moved"], json!(true));
    assert_eq!(b["change"], json!("better"));
    assert_eq!(
        (b["a"]["offset"].clone(), b["b"]["offset"].clone()),
        (json!(8), json!(64))
    );
    assert_eq!(
        (b["a"]["hosts"].clone(), b["b"]["hosts"].clone()),
        (json!(2), json!(1))
    );
    // Per host, `a` and `c` cost what they did: only `b` differs.
    for name in ["a", "c"] {
        assert_eq!(m(name)["moved"], json!(false));
        assert_eq!(m(name)["change"], json!("same"), "{name}");
    }
    let text =
        String::from_utf8(run(&["fleet", "compare", "--store", s, "A", "B"]).stdout).unwrap();
    assert!(text.contains("s.b  +8 -> +64"), "{text}");
    // A build against itself: the same, exit 0; a build not stored: trouble, exit 2.
    assert_eq!(
        run(&["fleet", "compare", "--store", s, "A", "A"])
            .status
            .code(),
        Some(0)
    );
    let out = run(&["fleet", "compare", "--store", s, "A", "C"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("no build \"C\"") && err.contains(s), "{err}");
}

/// diagnose --json of a profile, less what names the evidence file.
fn diagnosis(profile: &Path) -> Value {
    let mut v = common::lineup_json(&[
        "diagnose",
        "--type",
        "task_group",
        "--btf",
        BTF,
        "--profile",
        profile.to_str().unwrap(),
        "--json",
    ]);
    let o = v.as_object_mut().unwrap();
    o.remove("evidence");
    o.remove("source");
    v
}

#[test]
fn merged_profile_of_two_hosts_diagnoses_as_their_sum() {
    let store = scratch("merge");
    for host in ["a", "b"] {
        added(&store, host, "b1", &["--perf-typeoff", TYPEOFF]);
    }
    let dir = scratch("merge-out");
    let merged = dir.join("merged.json");
    ok(&[
        "fleet",
        "profile",
        "--store",
        store.to_str().unwrap(),
        "--type",
        "task_group",
        "-o",
        merged.to_str().unwrap(),
    ]);
    // The sum, built from the evidence as `lineup import` reads it, not from the store: the
    // report's task_group accesses counted twice (two hosts), each with what a stored row
    // keeps of it (offset, size, member, function, CPUs, counts, load cycles).
    let typeoff: Value = serde_json::from_str(&ok(&["import", "--perf-typeoff", TYPEOFF])).unwrap();
    let accesses: Vec<Value> = typed_accesses(&typeoff)
        .into_iter()
        .filter(|(t, _)| t == "task_group")
        .map(|(_, a)| {
            let mut counts = serde_json::Map::new();
            for (k, v) in a["counts"].as_object().unwrap() {
                counts.insert(k.clone(), json!(v.as_f64().unwrap() * 2.0));
            }
            let mut out = json!({"counts": counts});
            for k in ["offset", "size", "field", "cpus"] {
                if !a[k].is_null() {
                    out[k] = a[k].clone();
                }
            }
            if let Some(s) = a["code"]["symbol"].as_str() {
                out["code"] = json!({"symbol": s});
            }
            if let Some(w) = a["latency"]["total_cycles"].as_f64() {
                out["latency"] = json!({"total_cycles": w * 2.0});
            }
            out
        })
        .collect();
    assert!(accesses.len() > 1);
    let sum = json!({"schema": 1, "provenance": {"tool": "test"}, "unit": typeoff["unit"],
                     "cacheline_size": typeoff["cacheline_size"],
                     "types": [{"type_name": "task_group", "accesses": accesses}]});
    let sum_path = dir.join("sum.json");
    std::fs::write(&sum_path, sum.to_string()).unwrap();
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let errs = common::schema::errors("profile", &written);
    assert!(errs.is_empty(), "{errs:#?}");
    let (a, b) = (diagnosis(&merged), diagnosis(&sum_path));
    assert_eq!(a, b);
    // And the merged profile is no copy of one host's: its counts are twice the report's.
    let one = scratch("merge-one");
    added(&one, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    let single = dir.join("single.json");
    ok(&[
        "fleet",
        "profile",
        "--store",
        one.to_str().unwrap(),
        "--type",
        "task_group",
        "-o",
        single.to_str().unwrap(),
    ]);
    assert_ne!(diagnosis(&single), a);
    // A type the store does not hold: one line naming the store.
    let out = run(&[
        "fleet",
        "profile",
        "--store",
        store.to_str().unwrap(),
        "--type",
        "no_such_type",
        "-o",
        "-",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("no_such_type") && err.trim_end().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn top_reads_every_stored_file_whatever_its_name() {
    // `top` shares the files out among its threads by the first hex digit of their hash
    // names; a file named otherwise (copied in by hand) is still read.
    let store = scratch("names");
    added(&store, "a", "b1", &["--perf-typeoff", TYPEOFF]);
    added(&store, "b", "b1", &["--perf-typeoff", TYPEOFF]);
    let files: Vec<PathBuf> = listing(&store)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    assert_eq!(files.len(), 2);
    let s = store.to_str().unwrap();
    let hosts = || {
        let t = common::lineup_json(&["fleet", "top", "--store", s, "--json"]);
        t["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["hosts"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    let before = hosts();
    assert!(
        !before.is_empty() && before.iter().all(|&h| h == 2),
        "{before:?}"
    );
    std::fs::rename(&files[0], files[0].with_file_name("manual.parquet")).unwrap();
    assert_eq!(hosts(), before);
}
