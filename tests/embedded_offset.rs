//! Contention inside an embedded struct member: its members keep their order, but its offset
//! decides which of them share a line (Linux 5.13's `mm_struct`: a field added before
//! `mmap_lock` put the rwsem's `count` and `owner` on one line, -9.2% on will-it-scale mmap1).
//! A small replica at two offsets: the model prices the sub-fields at their own bytes,
//! `diagnose` names them and says the offset is the fix, `optimize` moves the member there and
//! `predict` prices the offsets apart.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{lineup_json, predicted_totals};

/// `count` cmpxchg'd by every CPU's trylock, `owner` spun on by the slowpath: apart only when
/// `lock` starts 8 bytes before a line ends.
const TYPES: &str = "struct my_rw_semaphore {\n\tlong count;\n\tlong owner;\n\tint osq;\n\tint wait_lock;\n\tvoid *wait_next, *wait_prev;\n};\n";

/// `lock` at 64 (count and owner on line 1) or at 56 (count on line 0, owner on line 1).
const TOGETHER: &str = "struct holder {\n\tchar cold[56];\n\tint a;\n\tint b;\n\tstruct my_rw_semaphore lock;\n\tlong tail;\n};\nstruct holder h;\n";
const APART: &str = "struct holder {\n\tchar cold[56];\n\tstruct my_rw_semaphore lock;\n\tint a;\n\tint b;\n\tlong tail;\n};\nstruct holder h;\n";

const SKETCH: &str = r#"[sketch]
title = "embedded rwsem"
[machine]
cpus = 160
numa_nodes = 2
cacheline_size = 64
[[type]]
name = "holder"
[[type.access]]
field = "lock.count"
kind = "rmw"
by = "trylock"
weight = 100
cpus = "all"
[[type.access]]
field = "lock.owner"
kind = "load"
by = "slowpath"
weight = 100
cpus = "all"
[[type.access]]
field = "lock.osq"
kind = "rmw"
by = "slowpath"
weight = 100
cpus = "all"
"#;

/// A directory of the calling test's own, with the sketch in it: the tests run on parallel
/// threads, and one shared directory had each test rewrite `sketch.toml` while another's
/// lineup read it.
fn dir() -> PathBuf {
    let d = common::test_dir("lineup-embedded");
    std::fs::write(d.join("sketch.toml"), SKETCH).unwrap();
    d
}

fn compile(d: &Path, name: &str, body: &str) -> String {
    let c = d.join(format!("{name}.c"));
    std::fs::write(&c, format!("{TYPES}{body}")).unwrap();
    let o = d.join(format!("{name}.o"));
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .expect("cc");
    assert!(st.success(), "cc {name}");
    o.display().to_string()
}

fn run(cmd: &str, obj: &str, d: &Path, extra: &[&str]) -> serde_json::Value {
    let sketch = d.join("sketch.toml").display().to_string();
    let mut args = vec![
        cmd,
        "--type",
        "holder",
        "--dwarf",
        obj,
        "--sketch",
        &sketch,
        "--machine",
        "icelake-2s",
        "--json",
    ];
    args.extend(extra);
    lineup_json(&args)
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// The line holding sub-field `name` in a diagnosis, with its verdict and its members' paths.
fn line_of(d: &serde_json::Value, name: &str) -> (u64, String, Vec<String>) {
    let l = common::diagnosed_line(d, name);
    let paths = l["members"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["functions"].as_array().unwrap().iter())
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    (
        l["index"].as_u64().unwrap(),
        l["verdict"].as_str().unwrap().to_string(),
        paths,
    )
}

#[test]
fn diagnose_names_the_sub_fields_and_says_the_offset_parts_them() {
    let d = dir();
    let together = run("diagnose", &compile(&d, "together", TOGETHER), &d, &[]);
    // Sub-fields at their own bytes: on one line, false sharing between the two paths (not one
    // critical section: a lock's own parts are not data its holders write beside it).
    let (count_line, verdict, paths) = line_of(&together, "lock.count");
    assert_eq!(line_of(&together, "lock.owner").0, count_line);
    assert_eq!(verdict, "false_sharing", "{together}");
    assert!(paths.contains(&"trylock".to_string()) && paths.contains(&"slowpath".to_string()));
    // What a layout can do: move the member, 56 bytes into a line.
    let f = together["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| names(&f["members"]).contains(&"lock.count".to_string()))
        .unwrap_or_else(|| panic!("no finding on lock.count: {together}"));
    assert_eq!(f["verdict"], "false_sharing");
    assert!(
        names(&f["members"]).contains(&"lock.owner".to_string()),
        "{f}"
    );
    let text = f["explanation"].as_str().unwrap();
    assert!(text.contains("56 bytes into a line"), "{text}");

    // At 56 they are on two lines, and no false-sharing finding says the offset should change
    // (an adjacent pair may: lines 0 and 1 are one 128-byte pair in half the instances).
    let apart = run("diagnose", &compile(&d, "apart", APART), &d, &[]);
    assert_ne!(
        line_of(&apart, "lock.count").0,
        line_of(&apart, "lock.owner").0
    );
    let findings = apart["findings"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    assert!(
        !findings.iter().any(|f| f["verdict"] == "false_sharing"
            && names(&f["members"]).contains(&"lock.count".to_string())),
        "{apart}"
    );
}

#[test]
fn optimize_moves_the_embedded_member_to_the_offset_that_parts_its_sub_fields() {
    let d = dir();
    let obj = compile(&d, "opt", TOGETHER);
    let o = run("optimize", &obj, &d, &[]);
    let units = o["units"].as_array().unwrap();
    let lock = units.iter().position(|u| u["name"] == "lock").unwrap();
    let at = o["plan"]["placement"]["offsets"][lock].as_u64().unwrap();
    // count (at + 0) and owner (at + 8) on different lines.
    assert_ne!(at / 64, (at + 8) / 64, "lock at {at}: {}", o["plan"]);
    assert!(names(&o["plan"]["phased"]).contains(&"lock".to_string()));
    // Every term the model prices (`cost::Cost::total_cycles`).
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
    let (now, lineup) = (total(&o["current"]), total(&o["plan"]["cost"]));
    assert!(lineup < now, "{lineup} vs {now}");
    // The declaration printed is the layout priced: compiled, `lock` lands where planned.
    let decl = o["declaration"].as_str().unwrap();
    let c = d.join("decl.c");
    std::fs::write(
        &c,
        format!(
            "#include <stddef.h>\n{TYPES}{decl}\n_Static_assert(offsetof(struct holder, lock) == {at}, \"lock\");\n"
        ),
    )
    .unwrap();
    let st = Command::new("cc")
        .args(["-c", "-o"])
        .arg(d.join("decl.o"))
        .arg(&c)
        .status()
        .expect("cc");
    assert!(st.success(), "{decl}");

    // Where count and owner are apart already, nothing moves.
    let apart = run("optimize", &compile(&d, "opt_apart", APART), &d, &[]);
    assert!(apart["plan"].get("phased").is_none(), "{}", apart["plan"]);
}

#[test]
fn predict_prices_the_offset_that_parts_the_sub_fields_lower() {
    let d = dir();
    let obj = compile(&d, "pred", TOGETHER);
    let h = d.join("apart.h");
    std::fs::write(&h, APART.replace("struct holder h;\n", "")).unwrap();
    let p = run("predict", &obj, &d, &["--layout", h.to_str().unwrap()]);
    let t = predicted_totals(&p);
    let get = |n: &str| t.iter().find(|x| x.0 == n).map(|x| x.1).unwrap();
    assert!(get("apart.h") < get("current"), "{t:?}");
}
