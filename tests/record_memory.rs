//! `lineup record` keeps to its memory budget (issue 16 item 1) whatever the program's
//! footprint: `examples/record/stream.c` streams over a 128 MiB array (16M places, 64M
//! accesses) under a 48 MiB budget (lineup's own fixed cost, its binary and the program's
//! debug info, is about 30 MiB, so the budget scales down to no less than that). Asserted from the peak resident sizes the kernel
//! reports (getrusage / wait4), not from timings. Needs a C compiler.
//!
//! At full size (issue 16's acceptance): `stream.c 1024 7`, a 1 GiB array and 2^30 (about
//! 10^9) accesses, stays under the default budget (512 MiB); `python3
//! bench/record_budget.py` prints the same run with its times. That one needs about 1.1 GiB
//! of free memory.

mod common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Peak resident bytes of a command run to its end, from wait4.
fn peak_rss(cmd: &mut Command) -> (i32, u64) {
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 on our own child; rusage is filled in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    assert!(libc::WIFEXITED(status), "{status:#x}");
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

/// A scratch directory, `lineup` with its caches and temporaries there, and
/// `examples/record/stream.c` built with `lineup cc` in it.
fn setup(name: &str) -> (PathBuf, impl Fn() -> Command, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.clone();
    let lineup = move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
        c.env("LINEUP_CACHE_DIR", d.join("cache"));
        c.env("TMPDIR", &d);
        c
    };
    let prog = dir.join("stream");
    let o = lineup()
        .args(["cc", "-O2", "-fno-tree-vectorize", "-pthread"])
        .arg(common::repo().join("examples/record/stream.c"))
        .arg("-o")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    (dir, lineup, prog)
}

#[test]
fn a_streaming_program_stays_within_the_memory_budget() {
    let (dir, lineup, prog) = setup("record-memory");

    // The program alone (its runtime idle without lineup): its own footprint.
    let (code, plain) = peak_rss(
        Command::new(&prog)
            .args(["128", "3"])
            .stdout(std::process::Stdio::null()),
    );
    assert_eq!(code, 0);
    assert!(plain >= 128 << 20, "{plain}");

    let budget: u64 = 48 << 20;
    let profile = dir.join("p.json");
    let o = lineup()
        .args(["record", "--memory", "48M", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .args(["128", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    // Which step of the budget, in bytes: 1/64 of 48 MiB is 768 KiB, 1/16 is 3 MiB.
    assert!(err.contains("of the 48 MiB memory budget"), "{err}");
    assert!(
        err.contains("past 768 KiB of counts and trace written, the first step")
            || err.contains("past 3 MiB of counts and trace written, the second step"),
        "{err}"
    );
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    let rec = &p["summary"]["record"];
    // Summarized, not lost: the 16M longs are stored once and loaded 3 times, plus a few
    // accesses to the threads' arguments.
    let n = (128u64 << 20) / 8;
    let accesses = rec["accesses"].as_f64().unwrap() as u64;
    assert!(
        (4 * n..4 * n + 100).contains(&accesses),
        "{accesses} accesses, want {}",
        4 * n
    );
    assert!(rec["budget_level"].as_f64().unwrap() >= 1.0, "{rec}");
    assert!(
        p["provenance"]["note"]
            .as_str()
            .unwrap()
            .contains("MEMORY BUDGET")
    );
    // lineup itself, and what the runtime adds to the program, each stay under the budget.
    let recorder = rec["peak_rss_recorder"].as_f64().unwrap() as u64;
    let program = rec["peak_rss_program"].as_f64().unwrap() as u64;
    assert!(
        recorder <= budget,
        "lineup peaked at {recorder} bytes: {rec}"
    );
    assert!(
        program.saturating_sub(plain) <= budget,
        "the runtime added {} bytes to the program's {plain}",
        program - plain
    );
}

#[test]
fn a_gib_footprint_and_a_billion_accesses_stay_under_the_default_budget() {
    let (dir, lineup, prog) = setup("record-memory-full");
    let args = ["1024", "7"];

    let (code, plain) = peak_rss(
        Command::new(&prog)
            .args(args)
            .stdout(std::process::Stdio::null()),
    );
    assert_eq!(code, 0);
    assert!(plain >= 1 << 30, "the plain run peaked at {plain} bytes");

    // The default budget: no --memory.
    let budget: u64 = 512 << 20;
    let profile = dir.join("p.json");
    let o = lineup()
        .args(["record", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let rec = &p["summary"]["record"];
    let exact = 1u64 << 30;
    let accesses = rec["accesses"].as_f64().unwrap() as u64;
    assert!(
        (exact..exact + 100).contains(&accesses),
        "{accesses} accesses, want {exact} (plus the threads' arguments)"
    );
    let recorder = rec["peak_rss_recorder"].as_f64().unwrap() as u64;
    let program = rec["peak_rss_program"].as_f64().unwrap() as u64;
    assert!(
        recorder <= budget,
        "lineup peaked at {recorder} bytes: {rec}"
    );
    assert!(
        program.saturating_sub(plain) <= budget,
        "the runtime added {} bytes to the program's {plain}",
        program.saturating_sub(plain)
    );
}
