//! The whole loop on a userspace program, as issue 5 asks: record it (`lineup cc`, `lineup
//! record`), diagnose the false sharing, let `lineup optimize` write the patch against the
//! source, apply it, and run both builds A/B under `lineup bench`, every run's figure read.
//! Whether the fixed build is significantly faster is a timing outcome on a shared VM:
//! `bench/seeds_ab.sh` measures it with its confidence interval. The program is
//! `examples/ab/false_sharing.c` built without -DPADDED (two threads, two counters on one
//! line).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&common::run_ok(cmd)).into_owned()
}

fn lineup(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.current_dir(dir);
    c
}

#[test]
fn recorded_false_sharing_is_diagnosed_fixed_by_a_patch_and_both_builds_run_under_bench() {
    let dir = std::env::temp_dir().join(format!("lineup-loop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let src = root().join("examples/ab/false_sharing.c");
    std::fs::copy(&src, dir.join("a/false_sharing.c")).unwrap();
    std::fs::copy(&src, dir.join("b/false_sharing.c")).unwrap();

    run(lineup(&dir).args(["cc", "-O2", "-pthread", "a/false_sharing.c", "-o", "rec"]));
    run(lineup(&dir).args(["record", "-o", "p.json", "--", "./rec", "2000000"]));
    let d = run(lineup(&dir).args([
        "diagnose",
        "--type",
        "counters",
        "--dwarf",
        "rec",
        "--profile",
        "p.json",
    ]));
    assert!(d.contains("false sharing"), "{d}");

    run(lineup(&dir).args([
        "optimize",
        "--type",
        "counters",
        "--dwarf",
        "rec",
        "--profile",
        "p.json",
        "--machine",
        "host",
        "--header",
        "b/false_sharing.c",
        "--diff-path",
        "false_sharing.c",
        "--patch",
        "fix.diff",
    ]));
    run(Command::new("patch")
        .args(["-p1", "-i", "../fix.diff"])
        .current_dir(dir.join("b")));
    let patched = std::fs::read_to_string(dir.join("b/false_sharing.c")).unwrap();
    // One line apart, or a pair of lines where the host's L2 fetches pairs (Intel): then the
    // instance the file declares `alignas(64)` is raised with the struct, or it would not
    // compile below.
    assert!(
        patched.contains("_Alignas(64)") || patched.contains("_Alignas(128)"),
        "{patched}"
    );
    if patched.contains("_Alignas(128)") {
        assert!(
            patched.contains("static alignas(128) struct counters counters;"),
            "{patched}"
        );
    }
    run(Command::new("cc")
        .args(["-O2", "-pthread", "a/false_sharing.c", "-o", "fs_a"])
        .current_dir(&dir));
    run(Command::new("cc")
        .args(["-O2", "-pthread", "b/false_sharing.c", "-o", "fs_b"])
        .current_dir(&dir));

    let out = lineup(&dir)
        .args([
            "bench",
            "--a",
            "./fs_a 5000000",
            "--b",
            "./fs_b 5000000",
            "--regex",
            r"cpu: ([0-9.]+) s",
            "--lower-is-better",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ])
        .output()
        .expect("bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparisons"][0];
    assert_eq!(c["direction"], "lower-is-better");
    common::assert_ab_reads(c, 2);
}
