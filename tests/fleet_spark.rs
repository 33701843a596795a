//! The fleet store on Apache Spark (`fleet/spark/lineup_fleet.py`, built with `--features
//! fleet`): on one store of two builds and several hosts written by `lineup fleet add`, Spark in
//! local mode answers `top`, `compare` and `profile`'s aggregation row for row as lineup's
//! embedded engine does, both running the same SQL texts (fleet/sql/).
//!
//! Spark is a JVM and pyspark: `LINEUP_SPARK_PYTHON` names a Python that imports pyspark
//! (scripts/test.sh installs a JRE and pyspark into target/spark-venv and sets it). Without it
//! the test says so on one line and checks nothing else; scripts/test.sh always sets it.
#![cfg(feature = "fleet")]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use common::fleet::{BTF, C2C, SKETCH, TYPEOFF, layout_profile};

fn add(store: &Path, host: &str, build: &str, date: &str, rest: &[&str]) {
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
        date,
    ];
    args.extend_from_slice(rest);
    let out = common::lineup(&args);
    assert!(
        out.status.success(),
        "fleet add {rest:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Floats are equal to a relative 1e-12: both engines add the same float64 values, but in an
/// order of their own (Spark sums partial aggregates per task), so the last bits of a sum of
/// fractional counts may differ. Everything else (texts, offsets, host counts, the order of
/// the rows, `moved`, `change`) is exact.
fn same(a: &Value, b: &Value, path: &str, diffs: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = Value::Null;
                same(
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    &format!("{path}.{k}"),
                    diffs,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                diffs.push(format!("{path}: {} rows against {}", x.len(), y.len()));
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                same(p, q, &format!("{path}[{i}]"), diffs);
            }
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (p, q) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (p - q).abs() > 1e-12 * p.abs().max(q.abs()) {
                diffs.push(format!("{path}: {p} against {q}"));
            }
        }
        _ if a != b => diffs.push(format!("{path}: {a} against {b}")),
        _ => {}
    }
}

fn assert_same(what: &str, lineup: &Value, spark: &Value) {
    let mut diffs = Vec::new();
    same(lineup, spark, what, &mut diffs);
    assert!(
        diffs.is_empty(),
        "lineup (DataFusion) and Spark differ on {what}:\n{}",
        diffs.join("\n")
    );
}

/// The merged profile's accesses as the rows of fleet/sql/profile_rows.sql.
fn profile_rows(p: &Value) -> Vec<Value> {
    p["types"][0]["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let c = |k: &str| a["counts"].get(k).cloned().unwrap_or(json!(0.0));
            let f = |v: Value| json!(v.as_f64().unwrap());
            json!({
                "offset": a.get("offset").cloned().unwrap_or(Value::Null),
                "size": a.get("size").cloned().unwrap_or(Value::Null),
                "member": a.get("field").cloned().unwrap_or(Value::Null),
                "function": a.pointer("/code/symbol").cloned().unwrap_or(Value::Null),
                "loads": f(c("loads")), "stores": f(c("stores")), "rmw": f(c("rmw")),
                "lcl_hitm": f(c("lcl_hitm")), "rmt_hitm": f(c("rmt_hitm")),
                "lcl_peer": f(c("lcl_peer")), "rmt_peer": f(c("rmt_peer")),
                "weight": a.pointer("/latency/total_cycles").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

#[test]
fn spark_answers_as_the_embedded_engine_row_for_row() {
    let Some(python) = std::env::var_os("LINEUP_SPARK_PYTHON") else {
        eprintln!(
            "SKIPPED: LINEUP_SPARK_PYTHON is not set (scripts/test.sh installs a JRE and pyspark and sets it)"
        );
        return;
    };
    let dir: PathBuf = common::test_dir("fleet-spark");
    let store = dir.join("store");
    // Build b1: hosts a and b with the perf data-type report, host c with the c2c report bound
    // to root_domain (members by offset and name). Build b2: hosts a and d with the same
    // report on two days, and the root_domain sketch (members by name, no offset) on host c.
    add(
        &store,
        "a",
        "b1",
        "2025-03-05",
        &["--perf-typeoff", TYPEOFF],
    );
    add(
        &store,
        "b",
        "b1",
        "2025-03-05",
        &["--perf-typeoff", TYPEOFF],
    );
    let c2c = ["--c2c", C2C, "--type", "root_domain", "--btf", BTF];
    add(&store, "c", "b1", "2025-03-06", &c2c);
    add(
        &store,
        "a",
        "b2",
        "2025-03-07",
        &["--perf-typeoff", TYPEOFF],
    );
    add(
        &store,
        "d",
        "b2",
        "2025-03-07",
        &["--perf-typeoff", TYPEOFF],
    );
    add(
        &store,
        "d",
        "b2",
        "2025-03-08",
        &["--perf-typeoff", TYPEOFF],
    );
    add(&store, "c", "b2", "2025-03-08", &["--sketch", SKETCH]);
    // Struct s: b1 has `b` beside `a` on the first line; b2 moves it to the next line, and
    // `c` costs more.
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    layout_profile(
        &old,
        &[
            ("a", 0, 100.1, 10.0),
            ("b", 8, 100.7, 40.0),
            ("c", 16, 5.3, 0.0),
        ],
        0.3,
    );
    layout_profile(
        &new,
        &[
            ("a", 0, 100.1, 10.0),
            ("b", 64, 100.7, 0.0),
            ("c", 16, 9.1, 0.0),
        ],
        0.3,
    );
    add(
        &store,
        "a",
        "b1",
        "2025-03-05",
        &["--profile", old.to_str().unwrap()],
    );
    add(
        &store,
        "a",
        "b2",
        "2025-03-07",
        &["--profile", new.to_str().unwrap()],
    );
    let s = store.to_str().unwrap();

    let top_all = common::lineup_json(&["fleet", "top", "--store", s, "--limit", "1000", "--json"]);
    let top_b2 = common::lineup_json(&[
        "fleet", "top", "--store", s, "--build", "b2", "--limit", "5", "--json",
    ]);
    let out = common::lineup(&["fleet", "compare", "--store", s, "b1", "b2", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    let merged = |build: Option<&str>| {
        let mut args = vec![
            "fleet",
            "profile",
            "--store",
            s,
            "--type",
            "task_group",
            "-o",
            "-",
        ];
        args.extend(build.iter().flat_map(|b| ["--build", b]));
        common::lineup_json(&args)
    };
    let (merged_all, merged_b1) = (merged(None), merged(Some("b1")));

    // What the comparison stands on: both builds, members with and without offsets, every kind
    // of change, and a limit that cuts.
    let members = top_all["members"].as_array().unwrap();
    assert!(members.len() > 20, "{top_all}");
    assert!(members.iter().any(|m| m.get("offset").is_none()));
    assert!(
        members.iter().any(|m| m["build"] == "b1") && members.iter().any(|m| m["build"] == "b2")
    );
    assert_eq!(top_b2["members"].as_array().unwrap().len(), 5);
    let changes: Vec<&str> = cmp["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["change"].as_str().unwrap())
        .collect();
    for c in ["same", "new", "gone", "better", "worse"] {
        assert!(changes.contains(&c), "{c} in {changes:?}");
    }
    assert!(
        cmp["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["moved"] == json!(true))
    );
    assert!(profile_rows(&merged_all).len() >= 5, "{merged_all}");

    // The same questions to Spark, in one session (one JVM start).
    let requests = json!([
        ["top", "--store", s, "--limit", "1000"],
        ["top", "--store", s, "--build", "b2", "--limit", "5"],
        ["compare", "--store", s, "b1", "b2"],
        ["profile-rows", "--store", s, "--type", "task_group"],
        [
            "profile-rows",
            "--store",
            s,
            "--type",
            "task_group",
            "--build",
            "b1"
        ],
    ]);
    let req = dir.join("requests.json");
    std::fs::write(&req, requests.to_string()).unwrap();
    let answers = dir.join("answers.json");
    let out = std::process::Command::new(python)
        .arg(common::repo().join("fleet/spark/lineup_fleet.py"))
        .args([
            "--master",
            "local[2]",
            "-o",
            answers.to_str().unwrap(),
            "batch",
        ])
        .arg(&req)
        .current_dir(common::repo())
        .output()
        .expect("run the Spark job");
    assert!(
        out.status.success(),
        "the Spark job failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: Value = serde_json::from_str(&std::fs::read_to_string(&answers).unwrap()).unwrap();
    let answer = |i: usize| spark[i]["doc"].clone();
    assert_eq!(
        spark[2]["code"],
        json!(1),
        "compare's exit status, as diff's"
    );

    assert_same("top", &top_all, &answer(0));
    assert_same("top --build b2 --limit 5", &top_b2, &answer(1));
    assert_same("compare b1 b2", &cmp, &answer(2));
    for (i, m) in [(3, &merged_all), (4, &merged_b1)] {
        let rows = answer(i)["rows"].clone();
        // Spark's rows carry the CPU columns the merged profile folds into its own shape.
        let rows: Vec<Value> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                let o = r.as_object_mut().unwrap();
                o.remove("cpu_count");
                o.remove("cpu_list");
                r
            })
            .collect();
        assert_same(
            "profile --type task_group",
            &json!(profile_rows(m)),
            &json!(rows),
        );
        let head = &answer(i)["head"];
        let settings = &m["provenance"]["settings"];
        assert_eq!(
            head["hosts"].to_string(),
            settings["fleet_hosts"].as_str().unwrap()
        );
        assert_eq!(
            head["builds"].to_string(),
            settings["fleet_builds"].as_str().unwrap()
        );
    }

    // The comparison sees a difference where there is one: the whole store's ranking is not
    // build b2's first five.
    let mut diffs = Vec::new();
    same(&top_all, &answer(1), "top", &mut diffs);
    assert!(!diffs.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
