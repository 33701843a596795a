//! Issue 16's memory acceptance at full size: recording a program with a 1 GiB footprint
//! and 2^30 (about 10^9) accesses stays under the default memory budget (512 MiB), for
//! lineup itself and for what the runtime adds to the program, and the counts stay exact.
//! `examples/record/stream.c 1024 7` stores every long of a 1 GiB array once and loads it
//! 7 times from two threads: (1 + 7) * 2^30 / 8 = 2^30 accesses. Peak sizes come from the
//! kernel (wait4 / getrusage), never from timings. `python3 bench/record_budget.py` prints
//! the same run with its times. Needs a C compiler and about 1.1 GiB of free memory.

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

#[test]
fn a_gib_footprint_and_a_billion_accesses_stay_under_the_default_budget() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-memory-full");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let lineup = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
        c.env("LINEUP_CACHE_DIR", dir.join("cache"));
        c.env("TMPDIR", &dir);
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
