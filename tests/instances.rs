//! Issue 24 item 5, instances that are not line-aligned: where the evidence puts instances 16
//! bytes into a line (a sketch's `[type.instances]`), every command prices them there.
//! `predict`'s headline is the price as allocated, `diagnose` names the misaligned instances
//! as the cause of what the offset costs, and `optimize` proposes a layout that holds at that
//! start and ranks it on that price. The machine is icelake-2s without adjacent-line pairs, so
//! that only the offset moves the price (tests/optimize_pairs.rs covers the pairs).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{lineup, lineup_json, repo};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("instances-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The ring compiled, and its sketch with the instances as given (`None`: the sketch without
/// `[type.instances]`).
fn ring(name: &str, instances: Option<&str>) -> (String, String) {
    let dir = scratch(name);
    let obj = dir.join("ring.o");
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(repo().join("tests/data/instances/ring.c"))
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("cc");
    assert!(st.success());
    let text = std::fs::read_to_string(repo().join("tests/data/instances/ring.toml")).unwrap();
    let block = "[type.instances]\noffsets = [16]\nat = \"calloc in ring_new\"\n";
    assert!(text.contains(block), "{text}");
    let text = text.replace(block, instances.unwrap_or(""));
    let sketch = dir.join("ring.toml");
    std::fs::write(&sketch, text).unwrap();
    (
        obj.to_str().unwrap().to_string(),
        sketch.to_str().unwrap().to_string(),
    )
}

/// icelake-2s as a machine file without adjacent-line pairs.
fn machine() -> String {
    let presets = std::fs::read_to_string(repo().join("data/machines.toml")).unwrap();
    let block = presets
        .split("[[machine]]")
        .find(|b| b.contains("name = \"icelake-2s\""))
        .expect("icelake-2s");
    assert!(block.contains("adjacent_line_pairs = true"), "{block}");
    let block = block.replace("adjacent_line_pairs = true", "adjacent_line_pairs = false");
    // One file per test thread: the tests run at once.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("instances-machine");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "icelake-no-pairs-{:?}.toml",
        std::thread::current().id()
    ));
    std::fs::write(&path, format!("[[machine]]{block}")).unwrap();
    path.to_str().unwrap().to_string()
}

fn run(command: &str, obj: &str, sketch: &str, more: &[&str]) -> serde_json::Value {
    let ty = if sketch.contains("halves") {
        "halves"
    } else {
        "ring"
    };
    let m = machine();
    let mut args = vec![
        command,
        "--type",
        ty,
        "--dwarf",
        obj,
        "--sketch",
        sketch,
        "--machine",
        m.as_str(),
        "--json",
    ];
    args.extend_from_slice(more);
    lineup_json(&args)
}

fn current_cost(p: &serde_json::Value) -> serde_json::Value {
    p["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"] == "current")
        .expect("the current layout")["cost"]
        .clone()
}

const AT_16: &str = "[type.instances]\noffsets = [16]\nat = \"calloc in ring_new\"\n";

#[test]
fn instances_at_16_mod_64_are_priced_as_such() {
    // Line-aligned, head (56) and tail (64) are on two lines: no false sharing. 16 bytes into
    // a line they are both on line 1: false sharing, in every command's headline.
    let (obj, aligned) = ring("aligned", None);
    let (_, at16) = ring("at16", Some(AT_16));
    let on_lines = current_cost(&run("predict", &obj, &aligned, &[]));
    let as_allocated = current_cost(&run("predict", &obj, &at16, &[]));
    assert_eq!(
        on_lines["false_cycles"].as_f64().unwrap(),
        0.0,
        "{on_lines}"
    );
    assert!(
        as_allocated["false_cycles"].as_f64().unwrap() > 0.0,
        "{as_allocated}"
    );
    let total = |c: &serde_json::Value| {
        [
            "false_cycles",
            "true_cycles",
            "locality_cycles",
            "pair_cycles",
        ]
        .iter()
        .map(|k| c[*k].as_f64().unwrap_or(0.0))
        .sum::<f64>()
    };
    assert!(total(&as_allocated) > total(&on_lines));
    // As many transfers as one line on aligned instances: a candidate with head and tail
    // side by side at the start of the struct.
    let dir = scratch("together");
    let together = dir.join("together.h");
    std::fs::write(
        &together,
        "struct ring {\n\tunsigned long head;\n\tunsigned long tail;\n\tunsigned long stats[7];\n\tunsigned long more[7];\n};\n",
    )
    .unwrap();
    let p = run(
        "predict",
        &obj,
        &aligned,
        &["--layout", together.to_str().unwrap()],
    );
    let one_line = p["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"] == "together.h")
        .unwrap()["cost"]
        .clone();
    // Transfers, not cycles: the busiest line that queueing is measured against differs.
    let f = |c: &serde_json::Value| c["false_transfers"].as_f64().unwrap();
    assert!(f(&one_line) > 0.0, "{one_line}");
    assert!(
        (f(&one_line) - f(&as_allocated)).abs() <= 1e-6 * f(&one_line),
        "{one_line} vs {as_allocated}"
    );
}

#[test]
fn diagnose_names_the_misaligned_instances() {
    let (obj, at16) = ring("diagnose", Some(AT_16));
    let d = run("diagnose", &obj, &at16, &[]);
    let i = &d["instances"];
    assert_eq!(i["offsets_in_line"], serde_json::json!([16]), "{i}");
    assert!(
        i["cycles_as_allocated"].as_f64().unwrap() > i["cycles_aligned"].as_f64().unwrap(),
        "{i}"
    );
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["verdict"] == "misaligned")
        .unwrap_or_else(|| panic!("no misaligned finding: {:#}", d["findings"]));
    assert_eq!(f["members"], serde_json::json!(["head", "tail"]), "{f}");
    let paths = f["paths"].as_array().unwrap();
    assert!(paths.contains(&"ring_push".into()) && paths.contains(&"ring_pop".into()));
    let why = f["explanation"].as_str().unwrap();
    assert!(
        why.contains("16 mod 64") && why.contains("every instance") && why.contains("calloc"),
        "{why}"
    );
    // Without the offset, no such finding.
    let (obj, aligned) = ring("diagnose-aligned", None);
    let d = run("diagnose", &obj, &aligned, &[]);
    assert!(d.get("instances").is_none());
    assert!(
        !d["findings"]
            .as_array()
            .map(|f| f.iter().any(|f| f["verdict"] == "misaligned"))
            .unwrap_or(false)
    );
}

#[test]
fn optimize_proposes_a_layout_that_holds_where_the_instances_start() {
    let (obj, at16) = ring("optimize", Some(AT_16));
    let v = run("optimize", &obj, &at16, &[]);
    let units = v["units"].as_array().unwrap();
    let offsets = v["plan"]["placement"]["offsets"].as_array().unwrap();
    let at = |name: &str| {
        let u = units
            .iter()
            .position(|u| u["members"][0] == name)
            .unwrap_or_else(|| panic!("{name}"));
        offsets[u].as_u64().unwrap()
    };
    // Head and tail on different lines of an instance 16 bytes into a line.
    assert_ne!(
        (at("head") + 16) / 64,
        (at("tail") + 16) / 64,
        "{}",
        v["plan"]
    );
    let total = |c: &serde_json::Value| {
        [
            "false_cycles",
            "true_cycles",
            "locality_cycles",
            "pair_cycles",
            "size_cycles",
        ]
        .iter()
        .map(|k| c[*k].as_f64().unwrap_or(0.0))
        .sum::<f64>()
    };
    assert!(total(&v["plan"]["cost"]) < total(&v["current"]), "{v:#}");
    let ia = &v["instance_alignment"];
    assert_eq!(ia["offsets_in_line"], serde_json::json!([16]), "{ia}");
    assert_eq!(ia["allocation_must_change"], false, "{ia}");
    // The table's figures are the prices as allocated.
    assert!(
        (ia["cycles_as_allocated"].as_f64().unwrap() - total(&v["plan"]["cost"])).abs() < 1e-6,
        "{ia}"
    );
    let m = machine();
    let out = lineup(&[
        "optimize",
        "--type",
        "ring",
        "--dwarf",
        &obj,
        "--sketch",
        &at16,
        "--machine",
        &m,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("instances are not 64-byte aligned") && text.contains("16 mod 64"),
        "{text}"
    );
}

#[test]
fn a_sketch_states_offsets_or_an_alignment() {
    let (obj, both) = ring(
        "both",
        Some("[type.instances]\noffsets = [16]\nalign = 16\n"),
    );
    let out = lineup(&[
        "predict", "--type", "ring", "--dwarf", &obj, "--sketch", &both,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[type.instances]") && err.contains("one of them"),
        "{err}"
    );
    let (_, far) = ring("far", Some("[type.instances]\noffsets = [64]\n"));
    let out = lineup(&[
        "predict", "--type", "ring", "--dwarf", &obj, "--sketch", &far,
    ]);
    assert!(!out.status.success());
}

#[test]
fn where_no_layout_holds_at_every_start_the_allocation_must_change() {
    // Each half straddles two lines 32 bytes into a line: within its 128 bytes no order keeps
    // the halves apart at both starts, and even a pair of lines apart each half moves two
    // lines where it moved one. Line-aligned instances cost much less: the allocation must
    // change, and the advice says where (the sketch's `at`) and how (the kernel's ways).
    let dir = scratch("halves");
    let obj = dir.join("halves.o");
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(repo().join("tests/data/instances/halves.c"))
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("cc");
    assert!(st.success());
    let obj = obj.to_str().unwrap();
    let sketch = "tests/data/instances/halves.toml";
    for budget in [&[][..], &["--max-size", "128"][..]] {
        let mut more = vec!["--flavour", "kernel"];
        more.extend_from_slice(budget);
        let m = machine();
        let mut args = vec![
            "optimize",
            "--type",
            "halves",
            "--dwarf",
            obj,
            "--sketch",
            sketch,
            "--machine",
            &m,
            "--json",
        ];
        args.extend_from_slice(&more);
        let v = lineup_json(&args);
        let ia = &v["instance_alignment"];
        assert_eq!(ia["offsets_in_line"], serde_json::json!([0, 32]), "{ia}");
        assert_eq!(ia["allocation_must_change"], true, "{budget:?}: {ia}");
        let f = |k: &str| ia[k].as_f64().unwrap();
        assert!(
            f("cycles_aligned") < 0.95 * f("cycles_as_allocated"),
            "{ia}"
        );
        let advice = ia["advice"].as_str().unwrap();
        assert!(
            advice.contains("the allocation must change")
                && advice.contains("Align the instances at kmalloc in halves_new to 64 bytes")
                && advice.contains("SLAB_HWCACHE_ALIGN"),
            "{advice}"
        );
    }
    // diagnose: the offset is what costs, and the finding says in what share of instances.
    let d = run("diagnose", obj, sketch, &[]);
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["verdict"] == "misaligned")
        .unwrap_or_else(|| panic!("{:#}", d["findings"]));
    assert_eq!(f["members"], serde_json::json!(["a", "b"]), "{f}");
    assert!(
        f["explanation"]
            .as_str()
            .unwrap()
            .contains("50% of the instances"),
        "{f}"
    );
}
