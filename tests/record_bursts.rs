//! `lineup record --sample bursts` (issue 16 item 1, overhead): the runtime records windows
//! of time and, between them, rewrites the program's hook calls into no-ops while the
//! program's threads run them. What must hold whatever the timing: the program behaves as
//! without lineup (output, its own SIGTRAP handler, threads that block every signal), the
//! rewritten sites are named in the profile, counts are scaled and said to be, and a
//! malformed setting is refused. The diagnosis through bursts, with the fix applied and
//! recorded again, is `record_elements::per_thread_elements_recorded_in_bursts_are_named_and_fixed`.
//! Needs a C compiler; x86-64 only (elsewhere the runtime records in full).

mod common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lineup(dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", dir.join("cache"));
    c.current_dir(dir);
    c
}

/// The profile `name` in `dir`, parsed.
fn read_profile(dir: &std::path::Path, name: &str) -> Value {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `tests/data/record/bursts.c` built with `lineup cc` into `dir/bursts`.
fn build_bursts(dir: &std::path::Path) {
    let src = common::repo().join("tests/data/record/bursts.c");
    common::run_ok(
        lineup(dir)
            .args(["cc", "-O1", "-pthread"])
            .arg(&src)
            .args(["-o", "bursts"]),
    );
}

#[cfg(target_arch = "x86_64")]
#[test]
fn code_rewritten_under_running_threads_leaves_the_program_as_it_was() {
    let dir = scratch("record-bursts");
    build_bursts(&dir);
    let plain = common::run_ok(Command::new(dir.join("bursts")).arg("3000000"));
    assert_eq!(
        String::from_utf8_lossy(&plain),
        format!("sum {} events {} traps 2\n", 3000000 * 10, 4 * 3000000 / 16)
    );
    // Switching every 50 us: thousands of rewrites while four threads run the sites.
    let out = lineup(&dir)
        .args([
            "record",
            "--sample",
            "bursts:50/200/0",
            "-o",
            "b.json",
            "--",
            "./bursts",
        ])
        .arg("3000000")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, plain, "the program's output changed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bursts (--sample bursts, the default): after the first 50 us, recorded 50 us of every 200 us"),
        "{err}"
    );

    let p: Value = read_profile(&dir, "b.json");
    let rec = &p["summary"]["record"];
    // The workers' load, update and atomic add, and main's sum: direct calls of the
    // program, each patched (the atomic's through its quiet twin).
    assert!(
        rec["bursts_patched_sites"].as_f64().unwrap() >= 4.0,
        "{rec}"
    );
    assert!(rec["bursts_windows"].as_f64().unwrap() >= 1.0, "{rec}");
    // Counts stay exact: between windows each site's trampoline counts its executions, and
    // they go where the site's recorded ones went. Four workers each load and store their
    // volatile slot once per iteration and add to the atomic counter once in 16; main adds
    // a few accesses.
    let accesses = rec["accesses"].as_f64().unwrap();
    let want = 8.0 * 3000000.0 + 4.0 * 3000000.0 / 16.0;
    assert!(
        (want..want + 1000.0).contains(&accesses),
        "{accesses} accesses, want {want}: {rec}"
    );
    // The same as recording every access: a thread that met the int3 of a site being
    // rewritten went on through the site's trampoline, and no execution was lost.
    common::run_ok(lineup(&dir).args(["record", "-o", "e.json", "--", "./bursts", "3000000"]));
    let exact: Value = read_profile(&dir, "e.json");
    assert_eq!(
        exact["summary"]["record"]["accesses"].as_f64().unwrap(),
        accesses
    );
    // Each worker's slot has its own executions, wherever they ran: mostly between
    // windows (100 us of every 100 ms), where one execution in 1024 per site and thread
    // still goes to the hook and names the place.
    common::run_ok(lineup(&dir).args([
        "record",
        "--sample",
        "bursts:100/100000/0",
        "-o",
        "s.json",
        "--",
        "./bursts",
        "3000000",
    ]));
    let sparse: Value = read_profile(&dir, "s.json");
    let slots = sparse["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type_name"] == "slots")
        .expect("struct slots recorded");
    for slot in 0..4 {
        let field = format!("v[{slot}]");
        let stores: f64 = slots["accesses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["field"] == field.as_str() && a["code"]["symbol"] == "worker")
            .map(|a| a["counts"]["stores"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(
            (stores - 3000000.0).abs() < 0.5,
            "{field}: {stores} stores by its worker"
        );
    }
    let fraction = rec["bursts_recorded_fraction"].as_f64().unwrap();
    assert!(fraction > 0.0 && fraction <= 1.0, "{rec}");
    assert_eq!(p["provenance"]["settings"]["sample"], "bursts");
    let note = p["provenance"]["note"].as_str().unwrap();
    assert!(
        note.starts_with("counts of every instrumented access per code site and thread"),
        "{note}"
    );
    assert!(note.contains("BURSTS (--sample bursts)"), "{note}");
}

#[test]
fn a_malformed_bursts_setting_is_refused_before_anything_runs() {
    let dir = scratch("record-bursts-flags");
    for bad in [
        "bursts:10/10",
        "bursts:0/100",
        "bursts:100",
        "bursts:a/b",
        "bursts:1/2/3/4",
        "burstsy",
    ] {
        let out = lineup(&dir)
            .args(["record", "--sample", bad, "-o", "x.json", "--", "/bin/true"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} was taken");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(bad) && err.contains("--sample"),
            "{bad}: {err}"
        );
        assert!(!dir.join("x.json").exists(), "{bad}: a profile was written");
    }
}

/// Left out, `--sample` is bursts after a warm-up of 100 ms: a run shorter than that is
/// recorded in full, and the profile says exact counts, not bursts.
#[cfg(target_arch = "x86_64")]
#[test]
fn by_default_a_short_run_is_recorded_in_full() {
    let dir = scratch("record-bursts-default");
    build_bursts(&dir);
    let out = lineup(&dir)
        .args(["record", "-o", "d.json", "--", "./bursts", "2000"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("bursts"));
    let p: Value = read_profile(&dir, "d.json");
    assert_eq!(p["provenance"]["settings"]["sample"], "1");
    let note = p["provenance"]["note"].as_str().unwrap();
    assert!(
        note.starts_with("exact counts of every instrumented access"),
        "{note}"
    );
    assert!(p["summary"]["record"].get("bursts_windows").is_none());
}
