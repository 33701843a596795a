//! `lineup record` as a process among others (issue 23): its raw directory, what happens to
//! the program when lineup dies, signals after the program ended, signals sent to the whole
//! process group, and output paths that only fail after a run.
//!
//! The program is `tests/data/record/fds.c` (its header lists the modes), built with
//! `lineup cc`. Needs a C compiler and coreutils' `timeout`. Every child run is bounded: a
//! hang fails the test instead of stalling it.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-cli-safety");
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
        let src = common::repo().join("tests/data/record/fds.c");
        let out = scratch().join("fds");
        let o = run_bounded(
            lineup(&dir("build"))
                .args(["cc", "-O2", "-pthread", "-Wall"])
                .arg(&src)
                .arg("-o")
                .arg(&out),
            300,
        );
        assert!(o.status.success(), "lineup cc: {}", text(&o.stderr));
        out
    })
}

/// Runs `cmd` to its end, killed (and the test failed) after `secs` seconds.
fn run_bounded(cmd: &mut Command, secs: u64) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_bounded(child, secs)
}

/// Waits for a started child, reading its output, for at most `secs` seconds.
fn finish_bounded(mut child: Child, secs: u64) -> Output {
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        o
    });
    let ereader = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        e
    });
    let status = wait_bounded(&mut child, secs);
    Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: ereader.join().unwrap(),
    }
}

fn wait_bounded(child: &mut Child, secs: u64) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {secs} s: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills a process when the test ends, whatever happened: a failing test must not leave a
/// program looping forever.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if running(self.0) {
            // SAFETY: a process this test started (or its program).
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// The process exists and has not ended (a zombie has ended).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
        Err(_) => false,
    }
}

/// `pid` has a handler for `sig` (SigCgt in /proc/PID/status).
fn catches(pid: i32, sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// Stopped (SIGSTOP).
fn stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            == Some('T')
    })
}

/// Gone from the process table (ended and reaped).
fn reaped(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits up to `secs` for `done`.
fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// The pids whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// lineup's temporary directories in `tmp`.
fn raw_dirs(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("lineup-record-")
        })
        .map(|e| e.path())
        .collect()
}

/// Starts `lineup record -o PROFILE -- sig MODE` and reads the program's "started PID".
fn start(
    tmp: &Path,
    profile: &Path,
    mode: &str,
) -> (Child, i32, BufReader<std::process::ChildStdout>) {
    let mut child = lineup(tmp)
        .arg("record")
        .arg("-o")
        .arg(profile)
        .arg("--")
        .arg(program())
        .arg(mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = KillOnDrop(child.id() as i32);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut first = String::new();
        let _ = out.read_line(&mut first);
        let _ = tx.send(first);
        out
    });
    let first = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the program did not start within 120 s");
    let out = reader.join().unwrap();
    let pid: i32 = first
        .trim()
        .strip_prefix("started ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{first:?}"));
    std::mem::forget(guard);
    (child, pid, out)
}

fn pair_stores(profile: &Value) -> f64 {
    profile["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type_name"] == "pair")
        .flat_map(|t| t["accesses"].as_array().unwrap().iter())
        .map(|a| a["counts"]["stores"].as_f64().unwrap_or(0.0))
        .sum()
}

fn read_profile(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

// ---- 1. The raw directory -------------------------------------------------------------

/// While the program runs, lineup's raw directory is in TMPDIR, a real directory (not a
/// link), mode 0700 and owned by lineup's effective user, whatever the umask, and under a
/// name that is not the pid.
#[test]
fn the_raw_directory_is_private_to_the_caller() {
    let prog = program();
    let tmp = dir("rawdir");
    let profile = tmp.join("p.json");
    // umask 0277 would leave a directory made with mode 0777 unwritable (0500).
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("umask 277; exec \"$0\" record -o \"$1\" -- \"$2\" forever")
        .arg(env!("CARGO_BIN_EXE_lineup"))
        .arg(&profile)
        .arg(prog)
        .env("LINEUP_CACHE_DIR", scratch().join("cache"))
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let pid: i32 = first
        .trim()
        .strip_prefix("started ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{first:?}"));
    let _program = KillOnDrop(pid);
    let dirs = raw_dirs(&tmp);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let meta = std::fs::symlink_metadata(&dirs[0]).unwrap();
    assert!(meta.file_type().is_dir(), "{:?}", meta.file_type());
    assert_eq!(
        meta.permissions().mode() & 0o7777,
        0o700,
        "{}",
        dirs[0].display()
    );
    // SAFETY: geteuid has no preconditions.
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
    let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        !name.contains(&lineup_pid.to_string()),
        "{name}: a guessable name"
    );
    // The runtime can write there: the recording works.
    // SAFETY: a signal to the lineup process this test started.
    unsafe { libc::kill(lineup_pid, libc::SIGTERM) };
    let status = wait_bounded(&mut child, 60);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(pair_stores(&read_profile(&profile)) > 0.0, "{err}");
    assert!(raw_dirs(&tmp).is_empty(), "{:?}", raw_dirs(&tmp));
}

/// A TMPDIR others may write into and rename in (mode 0777 without the sticky bit) is
/// refused before the program runs; a sticky one (as /tmp) is used.
#[test]
fn a_tmpdir_others_can_rename_in_is_refused_before_the_run() {
    let prog = program();
    let base = dir("unsafe-tmp");
    let open = base.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = base.join("ran");
    let o = run_bounded(
        lineup(&open)
            .arg("record")
            .arg("-o")
            .arg(base.join("p.json"))
            .arg("--")
            .arg(prog)
            .arg("touch")
            .arg(&marker),
        120,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("TMPDIR"), "{err}");
    assert!(!marker.exists(), "the program ran");
    assert!(raw_dirs(&open).is_empty());

    let sticky = base.join("sticky");
    std::fs::create_dir_all(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = run_bounded(
        lineup(&sticky)
            .arg("record")
            .arg("-o")
            .arg(base.join("p.json"))
            .arg("--")
            .arg(prog)
            .arg("touch")
            .arg(&marker),
        120,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(marker.exists());
    assert!(raw_dirs(&sticky).is_empty());
}

// ---- 2. lineup killed ------------------------------------------------------------------

/// SIGKILL to lineup (which it cannot catch) ends the program too (PR_SET_PDEATHSIG), and
/// every other child of lineup's; the raw directory stays in TMPDIR.
#[test]
fn killing_lineup_ends_the_program() {
    let tmp = dir("pdeathsig");
    let profile = tmp.join("p.json");
    let (mut child, pid, _out) = start(&tmp, &profile, "forever");
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    let _program = KillOnDrop(pid);
    let children = children_of(lineup_pid);
    assert!(children.contains(&pid), "{children:?} {pid}");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: the lineup process this test started.
    unsafe { libc::kill(lineup_pid, libc::SIGKILL) };
    wait_bounded(&mut child, 30);
    for c in children {
        assert!(
            eventually(30, || !running(c)),
            "process {c} (lineup's child; the program is {pid}) still runs after lineup was killed"
        );
    }
    assert_eq!(
        raw_dirs(&tmp).len(),
        1,
        "the raw directory is kept in TMPDIR"
    );
    assert!(!profile.exists());
}

// ---- 3. A signal after the program ended ------------------------------------------------

/// SIGTERM while lineup reads the recording after the program ended: lineup stops with
/// one line and a non-zero status, writes no profile (not even a temporary file), keeps the
/// raw directory, and the command it prints builds the profile from it.
#[test]
fn a_signal_after_the_program_ended_keeps_the_recording() {
    let tmp = dir("after");
    let outdir = dir("after-out");
    let profile = outdir.join("p.json");
    let (mut child, pid, _out) = start(&tmp, &profile, "fifo");
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    // The program has ended and lineup has reaped it: lineup is past the run, waiting on the
    // FIFO among the runtime's files.
    assert!(eventually(60, || reaped(pid)), "the program did not end");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        child.try_wait().unwrap().is_none(),
        "lineup ended before the signal (does it no longer open every rt.*.bin? this test \
         relies on lineup waiting on the FIFO the program left there)"
    );
    // SAFETY: the lineup process this test started.
    unsafe { libc::kill(lineup_pid, libc::SIGTERM) };
    let status = wait_bounded(&mut child, 30);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{err} {status:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!profile.exists(), "{err}");
    let left: Vec<_> = std::fs::read_dir(&outdir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The kept directory, named in the resume command.
    let dirs = raw_dirs(&tmp);
    assert_eq!(dirs.len(), 1, "{dirs:?} {err}");
    let raw = &dirs[0];
    let resume = err
        .split_once("lineup record --from-raw ")
        .map(|(_, r)| r.trim().to_string())
        .unwrap_or_else(|| panic!("no resume command: {err}"));
    let words: Vec<&str> = resume.split_whitespace().collect();
    assert_eq!(words.first().copied(), Some(raw.to_str().unwrap()), "{err}");
    assert_eq!(
        words.get(1..3),
        Some(&["-o", profile.to_str().unwrap()][..]),
        "{err}"
    );
    assert!(raw.join(format!("rt.{pid}.bin")).is_file(), "{err}");

    // Without the FIFO (not a recording), the command builds the profile.
    std::fs::remove_file(raw.join("rt.4000000000.bin")).unwrap();
    let o = run_bounded(
        lineup(&tmp)
            .arg("record")
            .arg("--from-raw")
            .args(&words[..]),
        120,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(pair_stores(&read_profile(&profile)) >= 200_000.0);
    std::fs::remove_dir_all(raw).unwrap();
}

/// The same with `--from-raw`: stopped with one line, nothing written, the directory (the
/// user's) untouched.
#[test]
fn a_signal_during_from_raw_stops_it_cleanly() {
    let tmp = dir("from-raw-signal");
    let raw = tmp.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let fifo = raw.join("rt.4000000000.bin");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let profile = tmp.join("p.json");
    let child = lineup(&tmp)
        .arg("record")
        .arg("--from-raw")
        .arg(&raw)
        .arg("-o")
        .arg(&profile)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    // lineup handles SIGTERM from the start (and then waits on the FIFO for a writer).
    assert!(
        eventually(60, || catches(lineup_pid, libc::SIGTERM)),
        "lineup --from-raw does not handle SIGTERM"
    );
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: the lineup process this test started.
    unsafe { libc::kill(lineup_pid, libc::SIGTERM) };
    let o = finish_bounded(child, 30);
    let err = text(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(128 + libc::SIGTERM),
        "{err} {:?}",
        o.status
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!profile.exists());
    assert!(fifo.exists());
}

// ---- 4. A signal to the whole process group --------------------------------------------

/// `timeout -s TERM 3 lineup record -- ./prog`: timeout signals lineup and then its whole
/// process group, so the program already has the SIGTERM: lineup does not send it again.
#[test]
fn timeout_signalling_the_group_delivers_one_sigterm() {
    let prog = program();
    let tmp = dir("timeout-count");
    let profile = tmp.join("p.json");
    let o = run_bounded(
        Command::new("timeout")
            .args(["-s", "TERM", "3"])
            .arg(env!("CARGO_BIN_EXE_lineup"))
            .arg("record")
            .arg("-o")
            .arg(&profile)
            .arg("--")
            .arg(prog)
            .arg("count")
            .env("LINEUP_CACHE_DIR", scratch().join("cache"))
            .env("TMPDIR", &tmp),
        120,
    );
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert!(out.contains("started "), "{out} {err}");
    assert!(
        out.contains("sigterm 1\n"),
        "the program counted: {out:?} (stderr: {err})"
    );
    // timeout reports that it timed out.
    assert_eq!(o.status.code(), Some(124), "{err}");
    assert!(pair_stores(&read_profile(&profile)) > 0.0, "{err}");
    assert!(raw_dirs(&tmp).is_empty());
}

/// A signal to the whole process group (`kill -TERM -PGID`, as `timeout` and a shell's
/// `kill %1` send it) reaches the program directly; lineup, receiving it too, does not send
/// it again, even when it handles it late: here lineup is stopped when the group is
/// signalled and continued half a second later, long after the program counted its one.
#[test]
fn a_group_signal_handled_late_by_lineup_is_not_sent_again() {
    use std::os::unix::process::CommandExt;
    let prog = program();
    let tmp = dir("group-late");
    let profile = tmp.join("p.json");
    let mut child = lineup(&tmp)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(prog)
        .arg("count")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let pid: i32 = first
        .trim()
        .strip_prefix("started ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{first:?}"));
    let _program = KillOnDrop(pid);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals to the lineup process this test started, and to its own group.
    unsafe { libc::kill(lineup_pid, libc::SIGSTOP) };
    assert!(eventually(30, || !running(lineup_pid) || stopped(lineup_pid)));
    unsafe { libc::kill(-lineup_pid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(lineup_pid, libc::SIGCONT) };
    let status = wait_bounded(&mut child, 60);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(rest, "sigterm 1\n", "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(pair_stores(&read_profile(&profile)) > 0.0, "{err}");
}

/// `kill -TERM <lineup>` alone: the program gets it once, from lineup.
#[test]
fn sigterm_to_lineup_alone_reaches_the_program_once() {
    let tmp = dir("direct-count");
    let profile = tmp.join("p.json");
    let (mut child, pid, mut out) = start(&tmp, &profile, "count");
    let lineup_pid = child.id() as i32;
    let _lineup = KillOnDrop(lineup_pid);
    let _program = KillOnDrop(pid);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: the lineup process this test started.
    unsafe { libc::kill(lineup_pid, libc::SIGTERM) };
    let status = wait_bounded(&mut child, 60);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(rest, "sigterm 1\n", "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(pair_stores(&read_profile(&profile)) > 0.0, "{err}");
}

// ---- 5. Output paths that only failed after the run ------------------------------------

/// `-o newfile/` names a directory that does not exist: refused before the program runs.
#[test]
fn an_output_ending_in_a_slash_is_refused_before_the_run() {
    let prog = program();
    let tmp = dir("slash");
    let marker = tmp.join("ran");
    let out = tmp.join("newfile");
    let mut arg = out.clone().into_os_string();
    arg.push("/");
    let o = run_bounded(
        lineup(&tmp)
            .arg("record")
            .arg("-o")
            .arg(&arg)
            .arg("--")
            .arg(prog)
            .arg("touch")
            .arg(&marker),
        120,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("newfile/"), "{err}");
    assert!(!marker.exists(), "the program ran");
    assert!(!out.exists());
    assert!(raw_dirs(&tmp).is_empty());
}

/// A file name of 250 bytes is written (its temporary name fits NAME_MAX); one of 256 bytes
/// is refused before the program runs.
#[test]
fn long_output_names_are_written_or_refused_before_the_run() {
    let prog = program();
    let tmp = dir("long-name");
    let long = tmp.join("p".repeat(245) + ".json");
    let o = run_bounded(
        lineup(&tmp)
            .arg("record")
            .arg("-o")
            .arg(&long)
            .arg("--")
            .arg(prog)
            .arg("quiet"),
        120,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(pair_stores(&read_profile(&long)) > 0.0);
    let names: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");

    let marker = tmp.join("ran");
    let too_long = tmp.join("q".repeat(251) + ".json");
    let o = run_bounded(
        lineup(&tmp)
            .arg("record")
            .arg("-o")
            .arg(&too_long)
            .arg("--")
            .arg(prog)
            .arg("touch")
            .arg(&marker),
        120,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the program ran");
}

// ---- 6. -o - ----------------------------------------------------------------------------

/// `-o -` writes the profile to standard output (after whatever the program wrote there),
/// and no file named `-`.
#[test]
fn dash_is_standard_output() {
    let prog = program();
    let tmp = dir("dash");
    let o = run_bounded(
        lineup(&tmp)
            .current_dir(&tmp)
            .args(["record", "-o", "-", "--"])
            .arg(prog)
            .arg("quiet"),
        120,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!tmp.join("-").exists());
    let p: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", text(&o.stdout)));
    assert!(pair_stores(&p) > 0.0);
}
