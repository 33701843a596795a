//! The whole loop on a userspace program, as issue 5 asks: record it (`lineup cc`, `lineup
//! record`), diagnose the false sharing, let `lineup optimize` write the patch against the
//! source, apply it, and measure both builds A/B with `lineup bench`: the fixed build must
//! be significantly faster. The program is `examples/ab/false_sharing.c` built without
//! -DPADDED (two threads, two counters on one line).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lineup(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.current_dir(dir);
    c
}

#[test]
fn recorded_false_sharing_is_diagnosed_fixed_by_a_patch_and_measured_faster() {
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
    assert!(patched.contains("_Alignas(64)"), "{patched}");
    run(Command::new("cc")
        .args(["-O2", "-pthread", "a/false_sharing.c", "-o", "fs_a"])
        .current_dir(&dir));
    run(Command::new("cc")
        .args(["-O2", "-pthread", "b/false_sharing.c", "-o", "fs_b"])
        .current_dir(&dir));

    // The machine is shared: allow two more tries before calling it a failure.
    let mut last = String::new();
    for _ in 0..3 {
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
                "8",
                "--json",
            ])
            .output()
            .expect("bench");
        last = String::from_utf8_lossy(&out.stdout).into_owned();
        let v: serde_json::Value = serde_json::from_str(&last).unwrap_or_default();
        let c = v["cases"]
            .get(0)
            .or_else(|| v["comparisons"].get(0))
            .cloned()
            .unwrap_or_default();
        let change = c["change_pct"]
            .as_f64()
            .or_else(|| c["compare_pct"].as_f64());
        let significant = c["significant"].as_bool();
        if let (Some(change), Some(true)) = (change, significant) {
            assert!(
                change < 0.0,
                "the fixed build must use less CPU time: {last}"
            );
            eprintln!("recorded fix: {change:+.1}% CPU time");
            return;
        }
    }
    panic!("no significant speedup in three tries: {last}");
}
