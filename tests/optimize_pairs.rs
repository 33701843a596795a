//! Issue 24 item 4, adjacent-line prefetch: on a machine whose L2 fetches 128-byte pairs of
//! lines, `optimize` spaces members written from different CPUs a pair apart where the model
//! prices that lower, and everything it prints says so: the text gives the reason, the C
//! declaration and the patch declare 128-byte alignment, and the patched header compiles to
//! the priced offsets. On the same machine without pairs, the spacing is one line.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{lineup, lineup_json, repo};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("optimize-pairs-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The longadder case's four cells, each written by its own CPU, as a header and an object.
fn cells(dir: &Path) -> (PathBuf, PathBuf) {
    let header = dir.join("cells.c");
    std::fs::copy(repo().join("tests/cases/longadder_cells/before.c"), &header).unwrap();
    let obj = dir.join("before.o");
    common::cc_object(&header, &obj);
    (header, obj)
}

/// icelake-2s as a machine file, with or without adjacent-line pairs.
fn machine(dir: &Path, pairs: bool) -> PathBuf {
    let presets = std::fs::read_to_string(repo().join("data/machines.toml")).unwrap();
    let block = presets
        .split("[[machine]]")
        .find(|b| b.contains("name = \"icelake-2s\""))
        .expect("icelake-2s");
    assert!(block.contains("adjacent_line_pairs = true"), "{block}");
    let block = block.replace(
        "adjacent_line_pairs = true",
        &format!("adjacent_line_pairs = {pairs}"),
    );
    let path = dir.join(format!("icelake-pairs-{pairs}.toml"));
    std::fs::write(&path, format!("[[machine]]{block}")).unwrap();
    path
}

fn args<'a>(obj: &'a str, machine: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "optimize",
        "--type",
        "cells",
        "--dwarf",
        obj,
        "--sketch",
        "tests/cases/longadder_cells/sketch.toml",
        "--machine",
        machine,
    ];
    v.extend_from_slice(more);
    v
}

/// The plan's offset of each cell.
fn cell_offsets(v: &serde_json::Value) -> Vec<u64> {
    let units = v["units"].as_array().unwrap();
    let offsets = v["plan"]["placement"]["offsets"].as_array().unwrap();
    (0..4)
        .map(|k| {
            let name = format!("cell{k}");
            let u = units
                .iter()
                .position(|u| u["members"][0] == name.as_str())
                .unwrap_or_else(|| panic!("{name}"));
            offsets[u].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn with_pairs_the_cells_go_a_pair_apart_and_the_patch_compiles_to_the_priced_offsets() {
    let dir = scratch("with");
    let (header, obj) = cells(&dir);
    let m = machine(&dir, true);
    let (obj_s, m_s, header_s) = (
        obj.to_str().unwrap(),
        m.to_str().unwrap(),
        header.to_str().unwrap(),
    );
    let v = lineup_json(&args(
        obj_s,
        m_s,
        &["--header", header_s, "--diff-path", "cells.c", "--json"],
    ));
    assert_eq!(v["plan"]["pair_align"], 128, "{}", v["plan"]);
    let offs = cell_offsets(&v);
    let pairs: BTreeSet<u64> = offs.iter().map(|o| o / 128).collect();
    assert_eq!(pairs.len(), 4, "cells at {offs:?}");
    // Every term the model prices (`cost::Cost::total_cycles`).
    let c = &v["plan"]["cost"];
    let priced: f64 = [
        "false_cycles",
        "true_cycles",
        "locality_cycles",
        "pair_cycles",
    ]
    .iter()
    .map(|k| c[*k].as_f64().unwrap_or(0.0))
    .sum();
    let by_line = v["plan"]["line_spaced_cycles"]
        .as_f64()
        .expect("one-line price");
    assert!(priced < by_line, "{priced} vs {by_line}");
    let decl = v["declaration"].as_str().unwrap();
    assert!(decl.contains("alignas(128)"), "{decl}");
    assert!(!decl.contains("alignas(64)"), "{decl}");

    // The patch declares the pair's alignment and, compiled, lands every member as priced.
    let diff = v["diff"].as_str().expect("a diff");
    assert!(diff.contains("_Alignas(128)"), "{diff}");
    std::fs::write(dir.join("fix.diff"), diff).unwrap();
    let st = Command::new("patch")
        .args(["-p1", "-i", "fix.diff"])
        .current_dir(&dir)
        .status()
        .expect("patch");
    assert!(st.success(), "patch -p1 failed on:\n{diff}");
    let after = dir.join("after.o");
    common::cc_object(&header, &after);
    let laid = lineup_json(&[
        "layout",
        "--dwarf",
        after.to_str().unwrap(),
        "cells",
        "--json",
    ]);
    let members = laid["types"][0]["members"]
        .as_array()
        .or_else(|| laid[0]["members"].as_array())
        .expect("members");
    let units = v["units"].as_array().unwrap();
    let offsets = v["plan"]["placement"]["offsets"].as_array().unwrap();
    for (u, off) in units.iter().zip(offsets) {
        let name = u["members"][0].as_str().unwrap();
        let got = members
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(got["offset"].as_u64(), off.as_u64(), "{name}");
    }

    // The text says why; the kernel flavour aligns to the pair too.
    let out = lineup(&args(obj_s, m_s, &["--flavour", "kernel"]));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the L2 fetches 128-byte pairs of lines on this machine"),
        "{text}"
    );
    assert!(text.contains("__aligned(128)"), "{text}");
}

#[test]
fn without_pairs_the_cells_go_a_line_apart() {
    let dir = scratch("without");
    let (_, obj) = cells(&dir);
    let m = machine(&dir, false);
    let (obj_s, m_s) = (obj.to_str().unwrap(), m.to_str().unwrap());
    let v = lineup_json(&args(obj_s, m_s, &["--json"]));
    assert!(v["plan"].get("pair_align").is_none(), "{}", v["plan"]);
    let offs = cell_offsets(&v);
    let lines: BTreeSet<u64> = offs.iter().map(|o| o / 64).collect();
    let pairs: BTreeSet<u64> = offs.iter().map(|o| o / 128).collect();
    assert_eq!(lines.len(), 4, "cells at {offs:?}");
    assert!(pairs.len() < 4, "cells at {offs:?}");
    let decl = v["declaration"].as_str().unwrap();
    assert!(!decl.contains("alignas(128)"), "{decl}");
    let out = lineup(&args(obj_s, m_s, &[]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("pairs of lines"), "{text}");
}

/// Optimizes the cells declared in the header as `instance` (an aligned instance), with
/// adjacent-line pairs: the JSON report, the text report, and the header after the patch
/// (compiled).
fn with_instance(name: &str, instance: &str) -> (serde_json::Value, String, String) {
    let dir = scratch(name);
    let (header, obj) = cells(&dir);
    let text = std::fs::read_to_string(&header).unwrap();
    let text = text.replace("struct cells cells;", instance);
    assert!(text.contains(instance), "{text}");
    std::fs::write(&header, text).unwrap();
    let m = machine(&dir, true);
    let (obj_s, m_s, header_s) = (
        obj.to_str().unwrap(),
        m.to_str().unwrap(),
        header.to_str().unwrap(),
    );
    let more = ["--header", header_s, "--diff-path", "cells.c"];
    let v = lineup_json(&args(obj_s, m_s, &[&more[..], &["--json"]].concat()));
    let out = lineup(&args(obj_s, m_s, &more));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let diff = v["diff"].as_str().expect("a diff");
    std::fs::write(dir.join("fix.diff"), diff).unwrap();
    let st = Command::new("patch")
        .args(["-p1", "-i", "fix.diff"])
        .current_dir(&dir)
        .status()
        .expect("patch");
    assert!(st.success(), "patch -p1 failed on:\n{diff}");
    common::cc_object(&header, &dir.join("after.o"));
    (v, said, std::fs::read_to_string(&header).unwrap())
}

#[test]
fn an_instance_the_header_aligns_to_a_line_by_number_is_aligned_to_the_pair_with_it() {
    // The cells declared in the header as a line-aligned instance: a struct aligned to the
    // pair would make that declaration an error, so the patch raises the instance's
    // alignment with the struct's, says so, and compiles.
    let (v, said, after) = with_instance("instance", "_Alignas(64) struct cells cells;");
    assert_eq!(v["plan"]["pair_align"], 128, "{}", v["plan"]);
    let offs = cell_offsets(&v);
    let pairs: BTreeSet<u64> = offs.iter().map(|o| o / 128).collect();
    assert_eq!(pairs.len(), 4, "cells at {offs:?}");
    assert!(
        said.contains("the header declares `_Alignas(64) struct cells cells;`")
            && said.contains("the patch aligns it to 128 too"),
        "{said}"
    );
    assert!(
        after.contains("_Alignas(128) struct cells cells;"),
        "{after}"
    );
    assert!(
        !after.contains("_Alignas(64) struct cells cells;"),
        "{after}"
    );
}

#[test]
fn an_instance_aligned_by_a_kernel_marker_keeps_the_spacing_to_a_line() {
    // `____cacheline_aligned` is no number the patch can raise: the plan stays one line
    // apart, and says why; the patch compiles.
    let (v, said, after) = with_instance(
        "marker",
        "#define ____cacheline_aligned __attribute__((__aligned__(64)))\nstruct cells cells ____cacheline_aligned;",
    );
    assert!(v["plan"].get("pair_align").is_none(), "{}", v["plan"]);
    let offs = cell_offsets(&v);
    let lines: BTreeSet<u64> = offs.iter().map(|o| o / 64).collect();
    assert_eq!(lines.len(), 4, "cells at {offs:?}");
    assert!(
        said.contains("the header declares `struct cells cells ____cacheline_aligned;`"),
        "{said}"
    );
    assert!(!after.contains("_Alignas(128)"), "{after}");
}
