//! A message handed from one CPU to another (an IPI's `call_single_data`, a work item, a
//! request/completion slot): the sender's run writes its fields and publishes it, the
//! receiver's run on another CPU reads them and releases it with a store. Each hand-off moves
//! every line the instance spans, so an instance that straddles a line boundary moves two
//! lines where an aligned one moves one (`docs/cost-model.md`, "Instances"). These probe, on
//! a 32-byte message, that every command says so: `predict` prices a straddling start above
//! an aligned one, `diagnose` calls the straddle `misaligned` and the hand-off no false
//! sharing, and `optimize` keeps the fields on one line and aligns the type to its size (or,
//! where the allocation ignores the type's alignment, says the allocation must change).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{lineup_json, repo};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("message-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The sender (`send`, CPU 0) loads and stores `flag`, `fn` and `arg` (read, then rewritten),
/// stores `next`; the receiver (`handle`, CPU 80: the other socket) loads every field, unlinks
/// the message (stores `next`) and releases it (stores `flag`), as `call_single_data`'s
/// handler does. One hand-off per unit of weight each way.
const ACCESSES: &str = r#"
[[type.access]]
field = "fn"
kind = "load"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "arg"
kind = "load"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "next"
kind = "store"
by = "handle"
weight = 100
cpus = [80]
[[type.access]]
field = "flag"
kind = "load"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "flag"
kind = "store"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "next"
kind = "store"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "fn"
kind = "store"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "arg"
kind = "store"
by = "send"
weight = 100
cpus = [0]

[[type.access]]
field = "next"
kind = "load"
by = "handle"
weight = 100
cpus = [80]

[[type.access]]
field = "fn"
kind = "load"
by = "handle"
weight = 100
cpus = [80]

[[type.access]]
field = "arg"
kind = "load"
by = "handle"
weight = 100
cpus = [80]

[[type.access]]
field = "flag"
kind = "load"
by = "handle"
weight = 100
cpus = [80]

[[type.access]]
field = "flag"
kind = "store"
by = "handle"
weight = 100
cpus = [80]
"#;

/// The message compiled, and a sketch with `instances` as its `[type.instances]` body.
fn message(name: &str, instances: &str) -> (String, String) {
    let dir = scratch(name);
    let obj = dir.join("msg.o");
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(repo().join("tests/data/message/msg.c"))
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("cc");
    assert!(st.success());
    let sketch = dir.join("msg.toml");
    std::fs::write(
        &sketch,
        format!(
            "[sketch]\ntitle = \"a message\"\n\n[machine]\ncpus = 160\nnuma_nodes = 2\ncacheline_size = 64\n\n[[type]]\nname = \"msg\"\n\n[type.instances]\n{instances}\n{ACCESSES}"
        ),
    )
    .unwrap();
    (
        obj.to_str().unwrap().to_string(),
        sketch.to_str().unwrap().to_string(),
    )
}

fn run(command: &str, obj: &str, sketch: &str) -> serde_json::Value {
    lineup_json(&[
        command,
        "--type",
        "msg",
        "--dwarf",
        obj,
        "--sketch",
        sketch,
        "--machine",
        "icelake-2s",
        "--json",
    ])
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

fn f(c: &serde_json::Value, k: &str) -> f64 {
    c[k].as_f64().unwrap_or(0.0)
}

#[test]
fn a_message_that_straddles_a_line_moves_two_lines_per_hand_off() {
    // 16 bytes in, the message still fits its line; 48 bytes in, `next` and `fn` sit on one
    // line and `arg` and `flag` on the next, both written by both runs: each hand-off moves
    // both lines, twice the transfers of one.
    let price = |name: &str, at: u64| {
        let (obj, sketch) = message(name, &format!("offsets = [{at}]"));
        current_cost(&run("predict", &obj, &sketch))
    };
    let (at0, at16, at48) = (price("at0", 0), price("at16", 16), price("at48", 48));
    let t = |c: &serde_json::Value| f(c, "true_transfers");
    assert!(t(&at0) > 0.0, "{at0}");
    assert!(
        (t(&at16) - t(&at0)).abs() <= 1e-6 * t(&at0),
        "{at16} vs {at0}"
    );
    assert!(t(&at48) >= 1.9 * t(&at0), "{at48} vs {at0}");
    // The receiver reads what the sender wrote, and the sender what the receiver wrote: the
    // message's true sharing at every start, none of it false (a run that loads and stores a
    // field touches it once: `cost::same_run_share`).
    for c in [&at0, &at16, &at48] {
        assert_eq!(f(c, "false_transfers"), 0.0, "{c}");
    }
    let total = |c: &serde_json::Value| {
        [
            "false_cycles",
            "true_cycles",
            "locality_cycles",
            "pair_cycles",
        ]
        .iter()
        .map(|k| f(c, k))
        .sum::<f64>()
    };
    assert!(total(&at48) > total(&at0), "{at48} vs {at0}");
}

#[test]
fn diagnose_calls_a_straddling_message_misaligned_and_no_false_sharing() {
    let (obj, sketch) = message("diagnose", "offsets = [48]\nat = \"kmalloc in msg_new\"");
    let d = run("diagnose", &obj, &sketch);
    for l in d["lines"].as_array().unwrap() {
        assert_ne!(l["verdict"], "false_sharing", "{l:#}");
    }
    let m = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["verdict"] == "misaligned")
        .unwrap_or_else(|| panic!("no misaligned finding: {:#}", d["findings"]));
    assert_eq!(
        m["members"],
        serde_json::json!(["next", "fn", "arg", "flag"]),
        "{m}"
    );
    let paths = m["paths"].as_array().unwrap();
    assert!(
        paths.contains(&"send".into()) && paths.contains(&"handle".into()),
        "{m}"
    );
    let why = m["explanation"].as_str().unwrap();
    assert!(
        why.contains("straddle a line boundary")
            && why.contains("kmalloc in msg_new")
            && why.contains("to 32 bytes"),
        "{why}"
    );
    // 16 bytes in, nothing straddles: no such finding.
    let (obj, sketch) = message("diagnose-16", "offsets = [16]");
    let d = run("diagnose", &obj, &sketch);
    assert!(
        !d["findings"]
            .as_array()
            .map(|f| f.iter().any(|f| f["verdict"] == "misaligned"))
            .unwrap_or(false),
        "{:#}",
        d["findings"]
    );
}

/// The plan's offsets of `next`, `fn`, `arg` and `flag`, its size and alignment.
fn plan_of(o: &serde_json::Value) -> (Vec<u64>, u64, u64) {
    let p = &o["plan"]["placement"];
    let offsets = p["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    (
        offsets,
        p["size"].as_u64().unwrap(),
        p["align"].as_u64().unwrap(),
    )
}

#[test]
fn optimize_keeps_a_message_on_one_line_and_aligns_it_to_its_size() {
    // Instances at every 8-byte start, the allocation honouring the type's alignment (a
    // global, a member of a struct allocated so): the type aligned to its 32 bytes, which the
    // instances take, and nothing moved or grown.
    let (obj, sketch) = message("optimize", "align = 8\nhonours_alignment = true");
    let o = run("optimize", &obj, &sketch);
    let (offsets, size, align) = plan_of(&o);
    assert_eq!(offsets, vec![0, 8, 16, 24], "{:#}", o["plan"]);
    assert_eq!((size, align), (32, 32), "{:#}", o["plan"]);
    let ia = &o["instance_alignment"];
    let advice = ia["advice"].as_str().unwrap();
    assert!(
        advice.contains("declares 32-byte alignment") && advice.contains("no instance straddles"),
        "{advice}"
    );
    let lineup = f(&o["plan"]["cost"], "true_cycles");
    assert!(lineup < f(&o["current"], "true_cycles"), "{ia}");
    // The declaration printed is the one priced: the type aligned to its size.
    let out = common::lineup(&[
        "optimize",
        "--type",
        "msg",
        "--dwarf",
        &obj,
        "--sketch",
        &sketch,
        "--machine",
        "icelake-2s",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("} __attribute__((aligned(32)));")
            && text.contains("no member changes place; the struct is aligned to 32 bytes"),
        "{text}"
    );
    // The allocation ignores the type's alignment (kmalloc): no layout holds at every start,
    // the fields stay on one line, and the allocation must change, to the struct's size.
    let (obj, sketch) = message("optimize-kmalloc", "align = 8\nat = \"kmalloc in msg_new\"");
    let o = run("optimize", &obj, &sketch);
    let (offsets, _, _) = plan_of(&o);
    let lines: std::collections::BTreeSet<u64> = offsets.iter().map(|o| o / 64).collect();
    assert_eq!(lines.len(), 1, "{:#}", o["plan"]);
    let ia = &o["instance_alignment"];
    assert_eq!(ia["allocation_must_change"], true, "{ia}");
    let advice = ia["advice"].as_str().unwrap();
    assert!(
        advice.contains("Align the instances at kmalloc in msg_new to 32 bytes"),
        "{advice}"
    );
}
