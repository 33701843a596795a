//! Issue 16 item 3, array members: `optimize` pads the slots of an array member that
//! different threads write (`hits[id]` in `examples/record/counters.c`) to a line each when
//! the model prices that lower, and refuses to when it prices it higher: from hand-written
//! sketches with one CPU per slot (`tests/data/optimize/counters_*.toml`), so no recording
//! is needed. The recorded end-to-end case is
//! `record_elements::per_thread_slots_of_an_array_member_are_padded_and_fixed`.
//!
//! Needs a C compiler and `patch`; `.ci/run` installs both.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("optimize-slots-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for f in ["counters.c", "work.h"] {
        std::fs::copy(common::repo().join("examples/record").join(f), d.join(f)).unwrap();
    }
    d
}

fn cc(args: &[&str], cwd: &Path) {
    let o = Command::new("cc")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "cc {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn optimize(dir: &Path, sketch: &str, machine: &str) -> Value {
    cc(&["-g", "-O2", "-c", "counters.c", "-o", "counters.o"], dir);
    common::lineup_json(&[
        "optimize",
        "--type",
        "counters",
        "--dwarf",
        dir.join("counters.o").to_str().unwrap(),
        "--sketch",
        &format!("tests/data/optimize/{sketch}.toml"),
        "--machine",
        machine,
        "--flavour",
        "user",
        "--header",
        dir.join("counters.c").to_str().unwrap(),
        "--diff-path",
        "counters.c",
        "--json",
    ])
}

/// A cost's modeled cycles, every term (the pair and growth terms where priced).
fn total(c: &Value) -> f64 {
    [
        "false_cycles",
        "true_cycles",
        "locality_cycles",
        "pair_cycles",
        "size_cycles",
    ]
    .iter()
    .filter_map(|k| c[k].as_f64())
    .sum()
}

/// A machine without the adjacent-line prefetcher (a calibration that measured none).
const NO_PAIRS: &str = "tests/data/machines/xeon_guest_16cpu.toml";

#[test]
fn slots_written_by_different_threads_are_padded_and_the_result_compiles() {
    padded_slots_compile(NO_PAIRS, 64);
}

/// On a machine whose L2 fetches aligned pairs of lines, slots a line apart still contend
/// (the model's pair term): each slot gets a pair.
#[test]
fn on_a_pair_machine_each_slot_gets_a_pair_of_lines() {
    padded_slots_compile("icelake-2s", 128);
}

fn padded_slots_compile(machine: &str, slot: u64) {
    let dir = scratch(&format!("padded-{slot}"));
    let v = optimize(&dir, "counters_slots", machine);
    let slots = &v["slots"];
    assert_eq!(slots["accepted"], true, "{slots:#}");
    assert_eq!(slots["arrays"][0]["member"], "hits");
    assert_eq!(slots["arrays"][0]["slot_size"], slot);
    // The plan is the padded layout, priced below the current one.
    assert_eq!(v["plan"]["placement"]["size"], 9 * slot);
    assert_eq!(v["units"][0]["size"], 8 * slot);
    assert!(total(&v["plan"]["cost"]) < total(&v["current"]), "{v:#}");
    assert!(slots["cycles_padded"].as_f64() < slots["cycles_unpadded"].as_f64());
    // predict prices the same padded layout as a row of its own.
    let p = common::lineup_json(&[
        "predict",
        "--type",
        "counters",
        "--dwarf",
        dir.join("counters.o").to_str().unwrap(),
        "--sketch",
        "tests/data/optimize/counters_slots.toml",
        "--machine",
        machine,
        "--json",
    ]);
    let rows = p["layouts"].as_array().unwrap();
    let padded = rows
        .iter()
        .find(|r| r["layout"] == "lineup, slots padded")
        .unwrap_or_else(|| panic!("{p:#}"));
    assert_eq!(padded["cost"]["size"], 9 * slot);
    assert!(padded["total_cycles"].as_f64() < rows[0]["total_cycles"].as_f64());
    assert_eq!(
        padded["total_cycles"].as_f64(),
        Some(total(&v["plan"]["cost"])),
        "predict and optimize price the padded layout alike"
    );
    // The declaration compiles, with the slot type's alignment.
    let decl = v["declaration"].as_str().unwrap();
    assert!(
        decl.contains(&format!("\tstruct {{\n\t\talignas({slot}) ")),
        "{decl}"
    );
    assert!(decl.contains("\t} hits[8];\n"), "{decl}");
    std::fs::write(
        dir.join("decl.c"),
        format!("#include <assert.h>\n#include <stdalign.h>\n#include <stddef.h>\n{decl}"),
    )
    .unwrap();
    cc(&["-std=c11", "-fsyntax-only", "decl.c"], &dir);
    // The patch applies; the source it makes compiles and puts each slot on its own line.
    std::fs::write(dir.join("fix.diff"), v["diff"].as_str().expect("a diff")).unwrap();
    let o = Command::new("patch")
        .current_dir(&dir)
        .args(["-s", "counters.c", "fix.diff"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let patched = std::fs::read_to_string(dir.join("counters.c")).unwrap();
    assert!(patched.contains("stats.hits[id].v + 1"), "{patched}");
    std::fs::write(
        dir.join("check.c"),
        format!(
            "{patched}\n_Static_assert(sizeof(stats.hits[0]) == {slot}, \"a slot is its lines\");\n_Static_assert(sizeof(struct counters) == {}, \"the size lineup priced\");\n",
            9 * slot
        ),
    )
    .unwrap();
    cc(&["-std=gnu11", "-fsyntax-only", "check.c"], &dir);
}

#[test]
fn padding_priced_above_doing_nothing_is_refused() {
    let dir = scratch("refused");
    let v = optimize(&dir, "counters_reads", "icelake-2s");
    let slots = &v["slots"];
    assert_eq!(slots["accepted"], false, "{slots:#}");
    assert_eq!(slots["in_patch"], false);
    assert!(
        slots["cycles_padded"].as_f64().unwrap() > total(&v["current"]),
        "{slots:#}"
    );
    let advice = slots["advice"].as_str().unwrap();
    assert!(
        advice.contains("; not proposed: the model prices it at "),
        "{advice}"
    );
    // Neither the plan nor the declaration nor any patch pads the slots.
    assert_eq!(v["units"][0]["size"], 64);
    assert!(v["plan"]["placement"]["size"].as_u64().unwrap() < 576);
    assert!(!v["declaration"].as_str().unwrap().contains(" v;"));
    if let Some(d) = v["diff"].as_str() {
        assert!(!d.contains(" v; }") && !d.contains(".v"), "{d}");
    }
}
