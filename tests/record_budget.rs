//! The memory budget does not change the answer (issue 27 item 2): under a budget small
//! enough to pass every step that degrades one thread's lines (16 MiB, the least lineup
//! accepts: 256 KiB, 1 MiB and 2 MiB of counts and trace), the lines that two threads
//! write keep exact per-element counts, and what was degraded is named (the profile's
//! `degraded`, diagnose's text and JSON) instead of being piled onto one element.
//!
//! `tests/data/record/budget.c` knows its counts by construction: each of two workers makes
//! exactly N increments of its own `counters[t].hits` and N/2 of `misses` (elements 0 and
//! 1 share a line, written by both threads), N increments of its own 4 KiB `tallies[t]`
//! (lines only its thread touches), and streams over a private heap buffer. The workers
//! meet at a barrier every 4096 iterations, so both touch the shared line in every phase
//! whatever the scheduling. Needs a C compiler.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Iterations per worker: a multiple of the program's phase (4096).
const N: u64 = 1 << 20;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lineup(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", dir.join("cache"));
    c.env("TMPDIR", dir);
    c.current_dir(dir);
    c
}

/// budget.c built with `lineup cc -O2`, recorded with `--sample 1` (every access) under
/// `--memory 16M`: the profile and lineup's stderr.
fn recorded(dir: &Path) -> (PathBuf, Value, String) {
    let prog = dir.join("budget");
    common::run_ok(
        lineup(dir)
            .args(["cc", "-O2", "-pthread"])
            .arg(common::repo().join("tests/data/record/budget.c"))
            .arg("-o")
            .arg(&prog),
    );
    let profile = dir.join("p.json");
    let out = lineup(dir)
        .args(["record", "--sample", "1", "--memory", "16M", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .arg(N.to_string())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    // The program's own output is untouched: the sums it computes.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} {} {}", 2 * N, N, 2 * N),
        "{err}"
    );
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    (profile, p, err)
}

fn type_of<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type_name"] == name)
        .unwrap_or_else(|| panic!("no type {name} in the profile"))
}

fn count(a: &Value, what: &str) -> f64 {
    a["counts"][what].as_f64().unwrap_or(0.0)
}

#[test]
fn lines_two_threads_write_keep_exact_counts_and_degraded_lines_are_named() {
    let dir = scratch("record-budget");
    let (profile, p, err) = recorded(&dir);
    let rec = &p["summary"]["record"];
    // Every step that degrades one thread's lines was passed (1: summaries, 2: the trace
    // thinned, 3: the trace stopped), the last resort (4: contended lines summarized) not.
    assert_eq!(rec["budget_level"].as_f64(), Some(3.0), "{rec}\n{err}");
    assert!(
        err.contains("the third step of the 16 MiB memory budget"),
        "{err}"
    );
    assert!(
        err.contains("lines that threads share and write kept every place"),
        "{err}"
    );

    // The line both workers write: exact per member and per element.
    let counter = type_of(&p, "counter");
    assert!(counter.get("degraded").is_none(), "{counter}");
    let workers = |a: &&Value| a["threads"]["count"].as_u64() == Some(2);
    let member = |offset: u64| -> (f64, f64) {
        counter["accesses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(workers)
            .filter(|a| a["offset"].as_u64() == Some(offset))
            .fold((0.0, 0.0), |(l, s), a| {
                (l + count(a, "loads"), s + count(a, "stores"))
            })
    };
    let n = N as f64;
    assert_eq!(member(0), (2.0 * n, 2.0 * n), "hits: {counter}");
    assert_eq!(member(8), (n, n), "misses: {counter}");
    let lines = counter["element_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{counter}");
    let writers = lines[0]["writers"].as_array().unwrap();
    let mut by_index: Vec<(u64, f64)> = writers
        .iter()
        .map(|w| (w["index"].as_u64().unwrap(), w["writes"].as_f64().unwrap()))
        .collect();
    by_index.sort_by_key(|w| w.0);
    // Each worker's element: N stores of hits and N/2 of misses.
    assert_eq!(by_index, vec![(0, 1.5 * n), (1, 1.5 * n)], "{counter}");

    // One thread's lines: degraded, named, and exact in total (no count lost, none piled
    // onto one bin).
    let tally = type_of(&p, "tally");
    let degraded = tally["degraded"].as_array().expect("tally degraded");
    let mut worker_ranges = 0;
    for d in degraded {
        assert_eq!(d["object"], "global `tallies`", "{d}");
        assert!(d["lines"].as_u64().unwrap() >= 1, "{d}");
        if d["lines"].as_u64() == Some(64) && d["start"].as_u64().unwrap() % 4096 == 0 {
            worker_ranges += 1;
        }
    }
    // Each worker's increments (a load and a store) cover its whole 4 KiB tally: 64 lines.
    assert!(worker_ranges >= 4, "{degraded:?}");
    let sum = |what: &str| -> f64 {
        degraded
            .iter()
            .map(|d| d[what].as_f64().unwrap())
            .sum::<f64>()
            + tally["accesses"]
                .as_array()
                .map(|a| a.iter().map(|a| count(a, what)).sum::<f64>())
                .unwrap_or(0.0)
    };
    // Workers: N loads and N stores each; main reads 512 bins of each tally.
    assert_eq!(sum("stores"), 2.0 * n, "{tally}");
    assert_eq!(sum("loads"), 2.0 * n + 1024.0, "{tally}");
    for a in tally["accesses"].as_array().into_iter().flatten() {
        assert!(
            count(a, "loads") + count(a, "stores") < n / 4.0,
            "a bin holds a pile of counts: {a}"
        );
    }
    assert!(
        p["provenance"]["note"]
            .as_str()
            .unwrap()
            .contains("listed per type as `degraded`"),
        "{}",
        p["provenance"]["note"]
    );

    // diagnose names it: the contended line's verdict stands, the degraded type is said to
    // be degraded rather than without accesses.
    let profile = profile.to_str().unwrap();
    let out =
        common::run_ok(lineup(&dir).args(["diagnose", "--profile", profile, "--type", "counter"]));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("cache line 0 (bytes 0-63): false sharing"),
        "{text}"
    );
    let o = lineup(&dir)
        .args(["diagnose", "--profile", profile, "--type", "tally"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    if tally["accesses"].as_array().is_some_and(|a| !a.is_empty()) {
        // Places counted before the first step: the text lists the ranges after them.
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{e}");
        assert!(text.contains("degraded by the memory budget:"), "{text}");
        assert!(text.contains("of global `tallies`, 64 line(s)"), "{text}");
    } else {
        // Every access degraded: one line saying so, exit status 2.
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(
            e.contains("was counted per code site by the memory budget"),
            "{e}"
        );
        assert!(e.contains("of global `tallies`, 64 line(s)"), "{e}");
        assert_eq!(
            e.trim()
                .lines()
                .filter(|l| !l.contains("types from"))
                .count(),
            1,
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A type with both exact places and degraded ranges: diagnose lists what was degraded in
/// its text and its JSON, and does not call the degraded lines "without recorded accesses".
#[test]
fn diagnose_names_degraded_ranges_beside_exact_places() {
    let dir = scratch("record-budget-stream");
    let (profile, p, _) = recorded(&dir);
    let stream = p["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["type_name"]
                .as_str()
                .unwrap()
                .starts_with("stream@budget.c:")
        })
        .expect("the stream buffer's type");
    let name = stream["type_name"].as_str().unwrap();
    let degraded = stream["degraded"].as_array().expect("stream degraded");
    // Each worker's STREAM longs (512 KiB), stored N times over.
    let stores: f64 = degraded
        .iter()
        .map(|d| d["stores"].as_f64().unwrap())
        .sum::<f64>()
        + stream["accesses"]
            .as_array()
            .map(|a| a.iter().map(|a| count(a, "stores")).sum::<f64>())
            .unwrap_or(0.0);
    assert_eq!(stores, 2.0 * N as f64, "{stream}");
    let profile = profile.to_str().unwrap();
    let o = lineup(&dir)
        .args(["diagnose", "--profile", profile, "--type", name])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let e = String::from_utf8_lossy(&o.stderr);
    if stream["accesses"].as_array().is_some_and(|a| !a.is_empty()) {
        assert!(o.status.success(), "{e}");
        assert!(text.contains("degraded by the memory budget:"), "{text}");
        assert!(
            text.contains("counted per code site only (degraded, above)"),
            "{text}"
        );
        let j = common::run_ok(lineup(&dir).args([
            "diagnose",
            "--profile",
            profile,
            "--type",
            name,
            "--json",
        ]));
        let j: Value = serde_json::from_slice(&j).unwrap();
        assert!(!j["degraded"].as_array().unwrap().is_empty(), "{j}");
    } else {
        assert!(
            e.contains("was counted per code site by the memory budget"),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
