//! The recording runtime (`runtime/lineup_rt.c`, compiled into every program `lineup cc`
//! builds) compiles without a warning for each target and compiler lineup supports: x86-64
//! with gcc and clang, and aarch64 with the cross gcc. Its x86-64-only parts (bursts, the
//! trampolines) sit behind `#if`, and a global used on both sides but declared on one broke
//! the aarch64 build once (LINEUP_FLUSH_US), with no test to see it.

use std::path::PathBuf;
use std::process::Command;

mod common;

/// `cc` must run here: scripts/test.sh installs every one of them (a missing one fails the
/// test, naming it, as the README says of every tool).
fn require(cc: &str) {
    let ok = Command::new(cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{cc} is missing (scripts/setup.sh test installs it)");
}

fn compiles_clean(cc: &str) {
    require(cc);
    let dir = common::test_dir(&format!("runtime-{cc}"));
    let obj: PathBuf = dir.join("lineup_rt.o");
    let out = Command::new(cc)
        .args(["-c", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror"])
        .arg(common::repo().join("runtime/lineup_rt.c"))
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("run the compiler");
    assert!(
        out.status.success() && obj.is_file(),
        "{cc}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_runtime_compiles_without_warnings_for_x86_64_with_gcc_and_clang() {
    compiles_clean("gcc");
    compiles_clean("clang");
}

#[test]
fn the_runtime_compiles_without_warnings_for_aarch64() {
    compiles_clean("aarch64-linux-gnu-gcc");
}
