//! Every data command's `--json` output, run for real, validated against its documented JSON
//! Schema in docs/schema/ (index: docs/json.md).
//!
//! The validator is the small subset of JSON Schema draft 2020-12 the schema files use (`type`,
//! `const`, `enum`, `required`, `properties`, `additionalProperties`, `items`, `pattern`); it refuses any
//! other keyword, so a schema cannot quietly say more than is checked.

mod common;

use std::path::PathBuf;

use serde_json::Value;

const BTF: &str = "data/vmlinux-6.18.44.btf";
const C2C: &str = "tests/data/c2c/seed000_paste.txt";

fn scratch() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("json-schema-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A case of tests/cases compiled (its `before.c`, into `scratch()/dir`): the object file and
/// the case's sketch.
fn compiled_case(case: &str, dir: &str) -> (String, String) {
    let dir = scratch().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let case = common::repo().join("tests/cases").join(case);
    let obj = dir.join("before.o");
    common::cc_object(&case.join("before.c"), &obj);
    (
        obj.display().to_string(),
        case.join("sketch.toml").display().to_string(),
    )
}

fn errors(name: &str, v: &Value) -> Vec<String> {
    common::schema::errors(name, v)
}

fn assert_valid(name: &str, v: &Value) {
    let errs = errors(name, v);
    assert!(errs.is_empty(), "{name}: {errs:#?}");
    assert_eq!(v["schema"], 1, "{name}: the one version key");
}

/// Runs lineup (exit status `code`) and parses its standard output.
fn run_json(args: &[&str], code: i32) -> Value {
    let out = common::lineup(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "lineup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("lineup {args:?}: not JSON: {e}"))
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn layout_matches_its_schema() {
    let v = run_json(&["layout", "--btf", BTF, "task_group", "--json"], 0);
    assert_valid("layout", &v);
}

#[test]
fn import_profile_matches_its_schema() {
    let out = scratch().join("import.json");
    let o = out.to_str().unwrap();
    let r = common::lineup(&["import", "--c2c", C2C, "-o", o]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = read_json(&out);
    assert_valid("profile", &v);
    assert!(v.get("schema_version").is_none(), "{v}");
}

#[test]
fn import_profile_with_nan_totals_matches_its_schema() {
    // Real perf 6.1 output whose Trace Event shares read `-nan%` (no LLC misses): the keys
    // are kept with null values, and the summary sections other than `record` validate.
    let out = scratch().join("import-nan.json");
    let o = out.to_str().unwrap();
    let r = common::lineup(&[
        "import",
        "--c2c",
        "tests/data/perf/page_faults.c2c.txt",
        "-o",
        o,
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = read_json(&out);
    assert_valid("profile", &v);
    let te = &v["summary"]["trace_events"];
    assert!(te["llc_misses_to_local_dram_pct"].is_null(), "{te}");
    assert_eq!(te["unable_to_parse_data_source"], 239.0);
    // The schema is not silent about what a summary value may be.
    let mut bad = v.clone();
    bad["summary"]["trace_events"]["total_records"] = "239".into();
    assert!(!errors("profile", &bad).is_empty());
}

#[test]
fn record_profile_matches_its_schema() {
    let dir = scratch();
    let src = dir.join("tiny.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n\
         struct s { long a; long b; } g;\n\
         int main(void) {\n\
         long *h = malloc(4 * sizeof *h);\n\
         for (int i = 0; i < 100; i++) { g.a += i; g.b = g.a; h[i % 4] = g.a; }\n\
         return h[1] == 0; }\n",
    )
    .unwrap();
    let prog = dir.join("tiny");
    let profile = dir.join("tiny.json");
    let r = common::lineup(&[
        "cc",
        "-O1",
        src.to_str().unwrap(),
        "-o",
        prog.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let r = common::lineup(&[
        "record",
        "-o",
        profile.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = read_json(&profile);
    assert_valid("profile", &v);
    let names: Vec<&str> = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type_name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"s"), "{names:?}");
    // The heap block, by its allocation site (issue 16 item 2), in the profile and in
    // `diagnose --alloc`'s JSON.
    assert!(names.contains(&"h@tiny.c:4"), "{names:?}");
    let r = common::lineup(&[
        "diagnose",
        "--profile",
        profile.to_str().unwrap(),
        "--alloc",
        "tiny.c:4",
        "--json",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let d: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_valid("diagnose", &d);
    assert_eq!(d["allocations"][0]["variable"], "h", "{d:#}");
    assert_eq!(d["allocations"][0]["found_by"], "declaration", "{d:#}");
    // Without --type: the recording's objects ranked (issue 27 item 7).
    let r = common::lineup(&["diagnose", "--profile", profile.to_str().unwrap(), "--json"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let o: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_valid("diagnose-recording", &o);
    let ranked: Vec<&str> = o["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type_name"].as_str().unwrap())
        .collect();
    assert!(
        ranked.contains(&"s") && ranked.contains(&"h@tiny.c:4"),
        "{o:#}"
    );
    let mut retyped = o.clone();
    retyped["objects"][0]["cost"] = Value::String("high".into());
    assert!(!errors("diagnose-recording", &retyped).is_empty());
}

#[test]
fn diagnose_matches_its_schema() {
    let v = run_json(
        &[
            "diagnose",
            "--btf",
            BTF,
            "--type",
            "task_group",
            "--c2c",
            C2C,
            "--json",
        ],
        0,
    );
    assert_valid("diagnose", &v);
}

#[test]
fn optimize_matches_its_schema() {
    let v = run_json(
        &[
            "optimize",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            "icelake-2s",
            "--json",
        ],
        0,
    );
    assert_valid("optimize", &v);
}

#[test]
fn predict_matches_its_schema() {
    let v = run_json(
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            "icelake-2s",
            "--layout",
            "examples/seeds/000/seed_fix.h",
            "--json",
        ],
        0,
    );
    assert_valid("predict", &v);
}

/// A current layout that costs nothing (one CPU only reading): no change is a percentage
/// of 0, and `change_pct` is null, as the schema says.
#[test]
fn predict_of_a_layout_that_costs_nothing_matches_its_schema() {
    let dir = scratch().join("zero_cost");
    std::fs::create_dir_all(&dir).unwrap();
    let sketch = dir.join("reader.toml");
    std::fs::write(
        &sketch,
        "[[type]]\nname = \"cpupri_vec\"\n\n[[type.access]]\nfield = \"count\"\nkind = \"load\"\nby = \"reader\"\nweight = 1\ncpus = 1\n",
    )
    .unwrap();
    let v = run_json(
        &[
            "predict",
            "--type",
            "cpupri_vec",
            "--btf",
            BTF,
            "--sketch",
            sketch.to_str().unwrap(),
            "--json",
        ],
        0,
    );
    let rows = v["layouts"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["change_pct"].is_null()), "{v:#}");
    assert_valid("predict", &v);
}

#[test]
fn predict_with_two_workloads_matches_its_schema() {
    // Two evidence sets for seed 000's struct: the seed's c2c paste and a hand-written tree
    // walk that the seed's fix hurts (the trade-off's entry is validated too).
    let v = run_json(
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--sketch",
            "examples/workloads/task_group_tree_walk.toml",
            "--machine",
            "icelake-2s",
            "--layout",
            "examples/seeds/000/seed_fix.h",
            "--json",
        ],
        0,
    );
    assert_valid("predict-workloads", &v);
    assert!(!v["tradeoffs"].as_array().unwrap().is_empty(), "{v:#}");
    let mut retyped = v.clone();
    retyped["layouts"][0]["workloads"][1]["change_pct"] = Value::from("0 %");
    assert!(!errors("predict-workloads", &retyped).is_empty());
    let mut missing = v.clone();
    missing["tradeoffs"][0]
        .as_object_mut()
        .unwrap()
        .remove("hurts");
    assert!(!errors("predict-workloads", &missing).is_empty());
}

#[test]
fn replay_compile_only_matches_its_schema() {
    let v = run_json(
        &[
            "replay",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            "icelake-2s",
            "--runs",
            "0",
            "--json",
        ],
        0,
    );
    assert_valid("replay", &v);
}

#[test]
fn bench_matches_its_schema() {
    let v = run_json(
        &[
            "bench", "--a", "true", "--b", "true", "--runs", "2", "--warmup", "0", "--json",
        ],
        0,
    );
    assert_valid("bench", &v);
}

#[test]
fn calibrate_matches_its_schema() {
    let v = run_json(&["calibrate", "--quick", "--no-cache", "--json"], 0);
    assert_valid("calibrate", &v);
    assert_eq!(v["cache"], Value::Null);
    // Every class of CPU pair is either measured or said to be absent.
    let cal = &v["calibration"];
    let said = cal["transfer"].as_array().unwrap().len()
        + cal["absent"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| {
                let a = a.as_str().unwrap();
                [
                    "SMT siblings:",
                    "same LLC:",
                    "other LLC, same node:",
                    "other node:",
                ]
                .iter()
                .any(|c| a.starts_with(c))
            })
            .count();
    assert_eq!(said, 4, "{cal}");
}

#[test]
fn check_matches_its_schema_with_and_without_violations() {
    let dir = scratch();
    // load_avg and rt_se share line 4 in the 6.18 task_group (seed 000's complaint).
    let broken = dir.join("broken.toml");
    std::fs::write(
        &broken,
        "schema = 1\ntype = \"task_group\"\n[[separate]]\nmembers = [\"load_avg\", \"rt_se\"]\n",
    )
    .unwrap();
    let v = run_json(
        &["check", "--btf", BTF, broken.to_str().unwrap(), "--json"],
        1,
    );
    assert_valid("check", &v);
    assert_eq!(v["ok"], false);
    let kept = dir.join("kept.toml");
    std::fs::write(&kept, "schema = 1\ntype = \"task_group\"\nmax_size = 704\n").unwrap();
    let v = run_json(
        &["check", "--btf", BTF, kept.to_str().unwrap(), "--json"],
        0,
    );
    assert_valid("check", &v);
    assert_eq!(v["ok"], true);
}

#[test]
fn diff_matches_its_schema() {
    let v = run_json(
        &[
            "diff",
            "--type",
            "task_group",
            BTF,
            "examples/seeds/000/seed_fix.h",
            "--json",
        ],
        1, // the layouts differ
    );
    assert_valid("diff", &v);
}

/// The schemas are strict enough to notice a documented field that disappears or changes type.
#[test]
fn a_mutated_document_fails_its_schema() {
    let v = run_json(
        &[
            "diagnose",
            "--btf",
            BTF,
            "--type",
            "task_group",
            "--c2c",
            C2C,
            "--json",
        ],
        0,
    );
    assert!(errors("diagnose", &v).is_empty());

    let mut gone = v.clone();
    gone["lines"][0].as_object_mut().unwrap().remove("verdict");
    let e = errors("diagnose", &gone);
    assert!(
        e.iter()
            .any(|e| e.contains("$.lines[0]") && e.contains("\"verdict\"")),
        "{e:?}"
    );

    let mut retyped = v.clone();
    retyped["size"] = "704".into();
    let e = errors("diagnose", &retyped);
    assert!(e.iter().any(|e| e.starts_with("$.size:")), "{e:?}");

    let mut nested = v.clone();
    nested["members"][0]["counts"]["loads"] = Value::Bool(true);
    assert!(!errors("diagnose", &nested).is_empty());

    let mut unknown = v.clone();
    unknown["lines"][0]["verdict"] = "sharing".into();
    assert!(!errors("diagnose", &unknown).is_empty());

    // The old profile key is not the documented one.
    let mut old = serde_json::json!({"schema_version": 1, "provenance": {"tool": "x"},
        "unit": "count", "cacheline_size": 64});
    assert!(
        errors("profile", &old)
            .iter()
            .any(|e| e.contains("\"schema\""))
    );
    old.as_object_mut().unwrap().remove("schema_version");
    old["schema"] = 1.into();
    assert!(
        errors("profile", &old).is_empty(),
        "{:?}",
        errors("profile", &old)
    );
}

/// A layout that grows the struct carries its size term and basis (`size_cycles`, `growth`),
/// in `optimize`'s plan and in `predict`'s candidates, as documented; a wrong basis fails.
#[test]
fn the_size_term_matches_its_schema() {
    let (obj, sketch) = compiled_case("longadder_cells", "size-term");
    let subject = [
        "--type",
        "cells",
        "--dwarf",
        obj.as_str(),
        "--sketch",
        sketch.as_str(),
        "--machine",
        "icelake-2s",
        "--allocator",
        "kmalloc",
        "--json",
    ];
    let mut args = vec!["optimize"];
    args.extend(subject);
    let v = run_json(&args, 0);
    let g = &v["plan"]["cost"]["growth"];
    assert_eq!(g["allocator"], "kmalloc", "{}", v["plan"]["cost"]);
    assert!(v["plan"]["cost"]["size_cycles"].as_f64().unwrap() > 0.0);
    assert_valid("optimize", &v);
    let mut wrong = v.clone();
    wrong["plan"]["cost"]["growth"]["allocator"] = "buddy".into();
    assert!(!errors("optimize", &wrong).is_empty());
    let mut wrong = v.clone();
    wrong["plan"]["cost"]["growth"]["lines_grown"] = "7".into();
    assert!(!errors("optimize", &wrong).is_empty());
    // The basis adds up: the new share of the hot working set, priced on the fetches.
    let num = |k: &str| g[k].as_f64().unwrap_or_else(|| panic!("{k}: {g}"));
    let share = 1.0 - num("from_hot_lines") / num("to_hot_lines");
    assert!(share > 0.0 && (num("share") - share).abs() < 1e-9, "{g}");
    let cycles = num("fetches") * num("share") * num("price") * num("pressure");
    assert!((num("cycles") - cycles).abs() <= 1e-6 * cycles, "{g}");
    // The sketch gives no count: many instances, the whole share priced, against the
    // preset's L1 data cache.
    assert_eq!(g["instances_from"], "assumed", "{g}");
    assert!(g.get("instances").is_none(), "{g}");
    assert_eq!(num("pressure"), 1.0, "{g}");
    assert_eq!(
        (num("cache_bytes"), &g["cache_from"]),
        (49152.0, &"machine".into())
    );
    let mut wrong = v.clone();
    wrong["plan"]["cost"]["growth"]["instances_from"] = "guessed".into();
    assert!(!errors("optimize", &wrong).is_empty());
    let mut wrong = v.clone();
    wrong["plan"]["cost"]["growth"]["share"] = "half".into();
    assert!(!errors("optimize", &wrong).is_empty());
    let mut wrong = v.clone();
    let basis = wrong["plan"]["cost"]["growth"].as_object_mut().unwrap();
    basis.remove("fetches");
    assert!(!errors("optimize", &wrong).is_empty());

    let merged = common::repo()
        .join("tests/cases/longadder_cells/merged.h")
        .display()
        .to_string();
    let mut args = vec!["predict"];
    args.extend(subject);
    args.extend(["--layout", merged.as_str()]);
    let p = run_json(&args, 0);
    let grown = p["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"] == "merged.h")
        .expect("merged.h priced");
    assert!(
        grown["cost"]["growth"]["lines_grown"].as_f64().unwrap() > 0.0,
        "{grown}"
    );
    assert_valid("predict", &p);
}

/// A sketch that says how many instances live (`[type.instances] count = 1`: redis's one
/// global `io_threads_pending`): the size term's basis names the count and its source, and the
/// growth of one instance takes a sliver of the cache, as documented.
#[test]
fn the_size_term_names_the_instances_it_assumed() {
    let (obj, sketch) = compiled_case("redis_io_threads_pending", "size-count");
    let v = run_json(
        &[
            "optimize",
            "--type",
            "io_pending",
            "--dwarf",
            obj.as_str(),
            "--sketch",
            sketch.as_str(),
            "--machine",
            "icelake-2s",
            "--json",
        ],
        0,
    );
    let g = &v["plan"]["cost"]["growth"];
    assert_eq!(g["instances"], 1, "{g}");
    assert_eq!(g["instances_from"], "sketch", "{g}");
    let num = |k: &str| g[k].as_f64().unwrap_or_else(|| panic!("{k}: {g}"));
    let added = (num("to_hot_lines") - num("from_hot_lines")) * 64.0;
    assert!(added > 0.0, "{g}");
    assert_eq!(num("added_hot_bytes"), added, "{g}");
    assert_eq!(num("pressure"), added / num("cache_bytes"), "{g}");
    assert!(num("pressure") < 0.01, "{g}");
    let cycles = num("fetches") * num("share") * num("price") * num("pressure");
    assert!(
        (num("cycles") - cycles).abs() <= 1e-6 * cycles.max(1.0),
        "{g}"
    );
    assert_valid("optimize", &v);
    let mut wrong = v.clone();
    wrong["plan"]["cost"]["growth"]["instances"] = "one".into();
    assert!(!errors("optimize", &wrong).is_empty());
}

/// Instances that do not start a line (issue 24 item 5): the sketch's `[type.instances]` in the
/// profile, `optimize`'s `instance_alignment`, `diagnose`'s `instances` and `misaligned`
/// finding, `predict`'s `instances`, as documented.
#[test]
fn misaligned_instances_match_their_schemas() {
    let dir = scratch().join("instances");
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("ring.o");
    let st = std::process::Command::new("cc")
        .args(["-g", "-c"])
        .arg(common::repo().join("tests/data/instances/ring.c"))
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("cc");
    assert!(st.success());
    let obj = obj.display().to_string();
    let sketch = "tests/data/instances/ring.toml";
    let subject = |cmd: &'static str| {
        vec![
            cmd,
            "--type",
            "ring",
            "--dwarf",
            obj.as_str(),
            "--sketch",
            sketch,
            "--machine",
            "icelake-2s",
            "--json",
        ]
    };
    let o = run_json(&subject("optimize"), 0);
    assert!(o["instance_alignment"].is_object(), "{o}");
    assert_valid("optimize", &o);
    let mut wrong = o.clone();
    wrong["instance_alignment"]["allocation_must_change"] = "no".into();
    assert!(!errors("optimize", &wrong).is_empty());
    let d = run_json(&subject("diagnose"), 0);
    assert!(d["instances"].is_object(), "{d}");
    assert_valid("diagnose", &d);
    let p = run_json(&subject("predict"), 0);
    assert_eq!(p["instances"]["source"], "sketch", "{p}");
    assert_valid("predict", &p);
    let out = dir.join("ring.json");
    let r = common::lineup(&["import", "--sketch", sketch, "-o", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let profile = read_json(&out);
    assert_eq!(
        profile["types"][0]["instances"]["offsets"],
        serde_json::json!([16])
    );
    assert_valid("profile", &profile);
}
