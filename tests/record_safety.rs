//! `lineup record` is invisible to the recorded program (issue 13 item 2): the program's
//! own descriptors, standard streams, signals and exit status behave as they do without
//! lineup, and a failure is said before the program runs, not after.
//!
//! The program is `tests/data/record/fds.c`, built with `lineup cc`. Needs a C compiler.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-safety");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// A directory of the test's own (TMPDIR for lineup, outputs).
fn dir(name: &str) -> PathBuf {
    let d = scratch().join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lineup(tmp: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", scratch().join("cache"));
    c.env("TMPDIR", tmp);
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn program() -> &'static PathBuf {
    static PROG: OnceLock<PathBuf> = OnceLock::new();
    PROG.get_or_init(|| {
        let out = scratch().join("fds");
        let o = lineup(&dir("build"))
            .args(["cc", "-O2", "-pthread", "-Wall"])
            .arg(common::repo().join("tests/data/record/fds.c"))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "lineup cc: {}", text(&o.stderr));
        out
    })
}

/// Stores counted on `struct pair` in a profile.
fn pair_stores(profile: &Path) -> f64 {
    let p: Value = serde_json::from_str(&std::fs::read_to_string(profile).unwrap()).unwrap();
    p["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type_name"] == "pair")
        .flat_map(|t| t["accesses"].as_array().unwrap().iter())
        .map(|a| a["counts"]["stores"].as_f64().unwrap_or(0.0))
        .sum()
}

/// lineup's temporary directories left in `tmp`.
fn leftovers(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("lineup-record-"))
        .collect()
}

#[test]
fn closed_stdout_gives_the_programs_own_ebadf() {
    let prog = program();
    let tmp = dir("stdout");
    // The program alone, with stdout closed, says EBADF by exiting 11.
    let plain = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" stdout >&-")
        .arg(prog)
        .output()
        .unwrap();
    assert_eq!(plain.status.code(), Some(11));
    let profile = tmp.join("p.json");
    let recorded = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" record -o \"$1\" -- \"$2\" stdout >&-")
        .arg(env!("CARGO_BIN_EXE_lineup"))
        .arg(&profile)
        .arg(prog)
        .env("LINEUP_CACHE_DIR", scratch().join("cache"))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(
        recorded.status.code(),
        Some(11),
        "{}",
        text(&recorded.stderr)
    );
    assert!(pair_stores(&profile) >= 200_000.0);
    // With stdout open, the recorded program writes it as usual.
    let o = lineup(&tmp)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("stdout")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\n");
}

#[test]
fn a_program_owning_fds_900_to_999_gets_none_of_lineups_records() {
    let prog = program();
    let tmp = dir("dup2");
    let own = tmp.join("own-file");
    let profile = tmp.join("p.json");
    let o = lineup(&tmp)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("dup2")
        .arg(&own)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(std::fs::metadata(&own).unwrap().len(), 0);
    assert!(pair_stores(&profile) >= 200_000.0);
}

#[test]
fn a_program_closing_every_descriptor_is_still_recorded() {
    let prog = program();
    let tmp = dir("close");
    let profile = tmp.join("p.json");
    let o = lineup(&tmp)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("close")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Each of the two workers stores its own member 100000 times.
    assert!(pair_stores(&profile) >= 200_000.0, "{}", text(&o.stderr));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(p["summary"]["record"]["partial"], 0.0);
}

#[test]
fn an_unwritable_output_path_is_refused_before_the_program_runs() {
    let prog = program();
    let tmp = dir("badpath");
    let marker = tmp.join("ran");
    let o = lineup(&tmp)
        .args(["record", "-o", "/no/such/dir/p.json", "--"])
        .arg(prog)
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("/no/such/dir/p.json"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the program ran");
    assert!(leftovers(&tmp).is_empty());
}

/// Kills the recorded program when the test ends, whatever happened: a failing test must
/// not leave a program looping forever.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            // SAFETY: the program this test started.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Sends `sig` to lineup while the program runs forever: the program gets it, the profile
/// so far is written marked partial, lineup's temporary files are gone, and lineup's
/// status is the program's (128 + sig, as a shell reports a death by signal).
fn signal_reaches_the_program(sig: i32, name: &str) {
    let prog = program();
    let tmp = dir(&format!("signal-{sig}"));
    let profile = tmp.join("p.json");
    let mut child = lineup(&tmp)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("forever")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let pid: i32 = first
        .trim()
        .strip_prefix("started ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{first:?}"));
    let _cleanup = KillOnDrop(pid);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to the lineup process this test started.
    unsafe { libc::kill(child.id() as i32, sig) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            // SAFETY: ending the lineup process this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            panic!("{name}: lineup did not end after {name}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(128 + sig), "{name}: {err}");
    assert!(!alive(pid), "{name}: the program was left running");
    assert!(leftovers(&tmp).is_empty(), "{name}: {:?}", leftovers(&tmp));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(p["provenance"]["settings"]["partial"], "true", "{name}");
    assert!(pair_stores(&profile) > 0.0, "{name}");
    assert!(err.contains(name), "{name}: {err}");
}

#[test]
fn sigterm_to_lineup_reaches_the_program() {
    signal_reaches_the_program(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_to_lineup_reaches_the_program() {
    signal_reaches_the_program(libc::SIGINT, "SIGINT");
}

#[test]
fn sighup_to_lineup_reaches_the_program() {
    signal_reaches_the_program(libc::SIGHUP, "SIGHUP");
}

/// `timeout 2 lineup record -- ./forever`: timeout sends SIGTERM to lineup and to its whole
/// process group, so the program gets it twice (directly, and forwarded). The runtime's
/// flush must survive the second one: the profile holds what the workers did.
#[test]
fn timeout_signalling_the_whole_group_still_gives_the_profile() {
    let prog = program();
    let tmp = dir("timeout");
    let profile = tmp.join("p.json");
    let o = Command::new("timeout")
        .args(["--preserve-status", "-s", "TERM", "2"])
        .arg(env!("CARGO_BIN_EXE_lineup"))
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("forever")
        .env("LINEUP_CACHE_DIR", scratch().join("cache"))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let out = text(&o.stdout);
    let pid: i32 = out
        .trim()
        .strip_prefix("started ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{out:?} {}", text(&o.stderr)));
    let _cleanup = KillOnDrop(pid);
    assert_eq!(
        o.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&o.stderr)
    );
    assert!(!alive(pid), "the program was left running");
    assert!(leftovers(&tmp).is_empty(), "{:?}", leftovers(&tmp));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(p["provenance"]["settings"]["partial"], "true");
    assert!(pair_stores(&profile) > 0.0, "{}", p["summary"]["record"]);
}
