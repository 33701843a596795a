//! `lineup bench` as users run it: real benchmarks A/B against themselves (no significant
//! change), a real false-sharing fix (a significant speedup), Ctrl-C, and one-line errors.
//!
//! Needs `perf` (Debian linux-perf), `hackbench` (rt-tests) and `cc`; `.ci/run` installs them.
//! The timing tests hold one lock so that they do not run at the same time on the 2 cores.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static TIMING: Mutex<()> = Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

fn lineup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .output()
        .expect("run lineup")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lineup-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// The comparison of the table's headline figure.
fn headline(report: &serde_json::Value) -> &serde_json::Value {
    report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["primary"] == true)
        .expect("a primary comparison")
}

fn assert_one_line_error(out: &Output, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "partial output: {}", stdout(out));
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    for w in words {
        assert!(err.contains(w), "{err:?} does not say {w:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// A perf binary that runs `perf bench` on this kernel: `perf`, else Debian's versioned ones.
fn perf() -> String {
    let mut candidates = vec!["perf".to_string(), "/usr/bin/perf".to_string()];
    for dir in ["/usr/bin", "/usr/lib"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut found: Vec<String> = rd
                .flatten()
                .map(|e| e.path())
                .filter_map(|p| {
                    let name = p.file_name()?.to_string_lossy().into_owned();
                    if name.starts_with("perf_") {
                        Some(p.display().to_string())
                    } else if name.starts_with("linux-tools") {
                        Some(p.join("perf").display().to_string())
                    } else {
                        None
                    }
                })
                .collect();
            found.sort();
            candidates.extend(found.into_iter().rev());
        }
    }
    for c in &candidates {
        let ok = Command::new(c)
            .args(["bench", "sched", "pipe", "-l", "100"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return c.clone();
        }
    }
    panic!("no working perf among {candidates:?}: apt-get install linux-perf (see .ci/run)");
}

fn need(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{tool} is missing: see the packages .ci/run installs"
    );
}

/// Runs an A/A comparison up to twice: a true null hypothesis is rejected at α = 0.01 one
/// time in a hundred, so one retry keeps a correct harness from failing the suite.
fn assert_not_significant(args: &[&str]) {
    let mut last = String::new();
    for _ in 0..2 {
        let out = lineup(args);
        let report = json(&out);
        let c = headline(&report);
        assert_eq!(c["a"]["n"], c["b"]["n"]);
        let p = c["welch"]["p"].as_f64().unwrap();
        assert!(c["welch"]["dof"].as_f64().unwrap() > 1.0);
        if c["significant"] == false {
            assert!(p >= 0.01, "{c}");
            return;
        }
        last = c.to_string();
    }
    panic!("A against itself was significant twice: {last}");
}

#[test]
fn perf_sched_pipe_against_itself_is_not_significant() {
    let _t = timing();
    let cmd = format!("{} bench sched pipe -l 2000", perf());
    assert_not_significant(&[
        "bench",
        "--a",
        &cmd,
        "--b",
        &cmd,
        "--parser",
        "perf-sched-pipe",
        "--runs",
        "8",
        "--alpha",
        "0.01",
        "--json",
    ]);
}

#[test]
fn hackbench_against_itself_is_not_significant() {
    let _t = timing();
    need("hackbench");
    assert_not_significant(&[
        "bench",
        "--a",
        "hackbench -l 200 -g 1",
        "--b",
        "hackbench -l 200 -g 1",
        "--parser",
        "hackbench",
        "--runs",
        "8",
        "--alpha",
        "0.01",
        "--json",
    ]);
}

fn compile(src: &Path, out: &Path, flags: &[&str]) {
    let status = Command::new("cc")
        .args(["-O2", "-pthread"])
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(src)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc {flags:?} failed");
}

/// Two threads bump two counters: adjacent in one struct (A) against one cache line each
/// (B, -DPADDED). The padded build must be significantly faster. The figure is the CPU time
/// of the two threads (steadier than wall time while others use the machine: preemption does
/// not count, waiting for the line does); lower is better, so the change is negative and the
/// gain positive.
#[test]
fn false_sharing_fix_is_a_significant_speedup() {
    let dir = scratch("fs");
    let src = common::repo().join("examples/ab/false_sharing.c");
    let (adjacent, padded) = (dir.join("fs_adjacent"), dir.join("fs_padded"));
    compile(&src, &adjacent, &[]);
    compile(&src, &padded, &["-DPADDED"]);
    let _t = timing();
    let (a, b) = (adjacent.display().to_string(), padded.display().to_string());
    let mut last = String::new();
    // A slow machine (other tenants on both cores) can hide the effect in one session; it
    // cannot reverse it.
    for _ in 0..3 {
        let out = lineup(&[
            "bench",
            "--a",
            &a,
            "--b",
            &b,
            "--regex",
            r"cpu: ([0-9.]+) s",
            "--lower-is-better",
            "--runs",
            "10",
            "--name",
            "false-sharing",
            "--json",
        ]);
        let report = json(&out);
        let c = headline(&report);
        let change = c["change_pct"].as_f64().unwrap();
        if c["significant"] == true {
            assert!(change < 0.0, "padded build significantly slower? {c}");
            assert!(c["gain_pct"].as_f64().unwrap() > 0.0, "{c}");
            assert!(c["welch"]["t"].as_f64().unwrap() < 0.0, "{c}");
            assert!(c["welch"]["ci_high"].as_f64().unwrap() < 0.0, "{c}");
            assert_eq!(c["direction"], "lower-is-better");
            return;
        }
        last = c.to_string();
    }
    panic!("no significant speedup in three sessions: {last}");
}

#[test]
fn matrix_table_csv_and_svg() {
    let dir = scratch("matrix");
    let matrix = dir.join("m.toml");
    std::fs::write(
        &matrix,
        r#"
title = "doubling"
parser = "hackbench"
load_label = "{load}-x"
a = "echo Time: {load}"
b = "echo Time: $(( {load} * 2 ))"

[[case]]
name = "double"
loads = [1, 4]

[[case]]
name = "same"
b = "echo Time: {load}"
loads = [3]
"#,
    )
    .unwrap();
    let csv = dir.join("out.csv");
    let svg = dir.join("plots");
    let out = lineup(&[
        "bench",
        "--matrix",
        matrix.to_str().unwrap(),
        "--runs",
        "3",
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..6],
        [
            "doubling",
            "========",
            "case load baseline(std%) compare%( std%)",
            "double 1-x 1.00 ( 0.00) +100.00 ( 0.00) *",
            "double 4-x 1.00 ( 0.00) +100.00 ( 0.00) *",
            "same 3-x 1.00 ( 0.00) +0.00 ( 0.00)",
        ],
        "{text}"
    );
    assert!(text.contains("figure: Time [s]: lower is better, so a - compare% is an improvement"));
    assert!(text.contains("* significant: Welch's t-test p < 0.05"));
    assert!(text.contains("runs: 3 per side after 1 warm-up, interleaved A B B A"));
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("double,1-x,Time,s,lower-is-better,true,3,1,0,0,3,2,0,0,100,-100,")
    );
    for case in ["double", "same"] {
        let plot = std::fs::read_to_string(svg.join(format!("{case}.svg"))).unwrap();
        assert!(plot.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    }
    let names: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "temporary files left behind: {names:?}");
}

#[test]
fn schbench_output_gets_a_percentile_table() {
    let data = common::repo().join("tests/data/bench/schbench.txt");
    let data = data.display();
    // schbench writes to stderr; B is A with a lower final Wakeup 99.0th.
    let a = format!("cat {data} >&2");
    let b = format!("sed 's/181        (5208/150        (5208/' {data} >&2");
    let out = lineup(&[
        "bench",
        "--a",
        &a,
        "--b",
        &b,
        "--parser",
        "schbench",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--name",
        "normal",
        "--load",
        "2-mthreads",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("schbench\n========\ncase load baseline(std%) compare%( std%)\nnormal 2-mthreads 1.00 ( 0.00) -17.13 ( 0.00) *\n"), "{text}");
    assert!(text.contains("\nschbench A B(%gain)\n"), "{text}");
    assert!(text.contains("\nnormal 2-mthreads\nWakeup Latencies percentiles (usec)\n50.0th: 8.00 8.00(0.00)\n90.0th: 19.00 19.00(0.00)\n99.0th: 181.00 150.00(17.13) *\n"), "{text}");
    assert!(
        text.contains("\nRPS percentiles (requests)\n20.0th: 2988.00 2988.00(0.00)\n"),
        "{text}"
    );
    assert!(
        text.contains("\naverage rps: 3024.55 3024.55(0.00)\n"),
        "{text}"
    );
}

#[test]
fn ctrl_c_keeps_the_finished_runs() {
    let child = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "bench",
            "--a",
            "sleep 0.1; echo Time: 1",
            "--b",
            "sleep 0.1; echo Time: 2",
            "--parser",
            "hackbench",
            "--runs",
            "100",
            "--warmup",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        text.contains(
            "case load baseline(std%) compare%( std%)\na-vs-b - 1.00 ( 0.00) +100.00 ( 0.00) *\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("runs: interrupted by Ctrl-C after "),
        "{text}"
    );
    assert!(err.contains("interrupted"), "{err}");
    // At most 20 runs of 0.1 s fit in 2 s, and the table needs 2 per side; not 200.
    let done: usize = err
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a run count");
    assert!((4..=20).contains(&done), "{err}");
}

#[test]
fn failing_command_is_one_line_and_leaves_no_files() {
    let dir = scratch("fail");
    let csv = dir.join("out.csv");
    let out = lineup(&[
        "bench",
        "--a",
        "true",
        "--b",
        "echo 'no such device' >&2; echo second line >&2; exit 1",
        "--csv",
        csv.to_str().unwrap(),
        "--name",
        "broken",
    ]);
    assert_one_line_error(
        &out,
        &[
            "case 'broken'",
            "(B warm-up 1)",
            "exited with status 1",
            "no such device",
        ],
    );
    assert!(!csv.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn unreadable_output_is_one_line() {
    let out = lineup(&[
        "bench",
        "--a",
        "echo hello",
        "--b",
        "echo hello",
        "--parser",
        "hackbench",
    ]);
    assert_one_line_error(
        &out,
        &[
            "case 'a-vs-b' (A warm-up 1)",
            "hackbench parser",
            "Time:",
            "hello",
        ],
    );
    let out = lineup(&[
        "bench",
        "--a",
        "echo x=1",
        "--b",
        "echo x=1",
        "--regex",
        "x=([0-9]+)",
        "--lower-is-better",
        "--metric",
        "nope",
        "--warmup",
        "0",
    ]);
    assert_one_line_error(&out, &["no figure 'nope'", "found: regex"]);
}

#[test]
fn usage_errors_are_one_line() {
    for (args, words) in [
        (
            &["bench", "--a", "true", "--b", "true", "--regex", "(1)"][..],
            "--regex needs --higher-is-better or --lower-is-better",
        ),
        (
            &["bench", "--a", "true", "--b", "true", "--parser", "nope"][..],
            "unknown parser (known: perf-sched-pipe",
        ),
        (
            &[
                "bench",
                "--a",
                "true",
                "--b",
                "true",
                "--parser",
                "hackbench",
                "--higher-is-better",
            ][..],
            "built-in parsers know",
        ),
        (
            &["bench", "--a", "true", "--b", "true", "--runs", "1"][..],
            "at least 2 runs",
        ),
        (
            &["bench", "--matrix", "/nonexistent/m.toml"][..],
            "/nonexistent/m.toml: cannot read",
        ),
        (
            &[
                "bench",
                "--a",
                "true",
                "--b",
                "true",
                "--csv",
                "/nonexistent/x.csv",
            ][..],
            "/nonexistent: no such directory",
        ),
        (
            &["bench", "--a", "sleep 5", "--b", "true", "--timeout", "0.2"][..],
            "did not finish within 0.2 s",
        ),
    ] {
        assert_one_line_error(&lineup(args), &[words]);
    }
    // clap's own usage errors exit 2 too.
    assert_eq!(lineup(&["bench", "--a", "true"]).status.code(), Some(2));
}

#[test]
fn help_has_examples() {
    let out = lineup(&["bench", "--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("Examples:"), "{text}");
    assert!(text.contains("interleaved A B B A"), "{text}");
    assert!(
        text.contains("perf-sched-pipe: perf bench sched pipe"),
        "{text}"
    );
    assert!(
        text.contains("lineup bench --matrix examples/ab/hackbench.toml"),
        "{text}"
    );
}
