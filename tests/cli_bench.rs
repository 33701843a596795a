//! `lineup bench` as users run it: real benchmarks (perf, hackbench, a false-sharing fix) run
//! and read, signals ending the benchmarked commands, bounded memory on huge outputs, ranges,
//! and one-line errors. No test here depends on a timing outcome: the significance of real
//! A/B comparisons is measured by `bench/seeds_ab.sh`.
//!
//! Needs `perf` (Debian linux-perf), `hackbench` (rt-tests) and `cc`; `scripts/test.sh`
//! installs them, and a test whose tool is missing fails saying so. The tests that run real
//! benchmarks hold one lock so that they do not run at the same time on the 2 cores.

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

/// Runs a real benchmark A against A and checks what is deterministic about the answer:
/// every run was read, the figures are positive numbers, the statistics are defined and the
/// table is well formed. Whether A/A comes out "not significant" is a timing outcome: it is
/// measured by `bench/seeds_ab.sh`, not asserted here.
fn assert_real_benchmark_reads(args: &[&str], metric: &str) {
    let out = lineup(args);
    let report = json(&out);
    let c = headline(&report);
    assert_eq!(c["metric"], metric, "{c}");
    assert_eq!(c["a"]["n"], 2, "{c}");
    assert_eq!(c["b"]["n"], 2, "{c}");
    for side in ["a_runs", "b_runs"] {
        let runs = c[side].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|v| v.as_f64().unwrap() >= 0.0), "{c}");
    }
    assert!(c["change_pct"].as_f64().unwrap().is_finite(), "{c}");
    let w = &c["welch"];
    let p = w["p"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p), "{c}");
    assert!(w["ci_low"].as_f64().unwrap() <= w["ci_high"].as_f64().unwrap());
    assert_eq!(report["runs_per_side"], 2);
    assert_eq!(report["interrupted"], false);
}

#[test]
fn perf_sched_pipe_runs_and_is_read() {
    let _t = timing();
    let cmd = format!("{} bench sched pipe -l 2000", perf());
    assert_real_benchmark_reads(
        &[
            "bench",
            "--a",
            &cmd,
            "--b",
            &cmd,
            "--parser",
            "perf-sched-pipe",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ],
        "usecs/op",
    );
}

#[test]
fn hackbench_runs_and_is_read() {
    let _t = timing();
    need("hackbench");
    assert_real_benchmark_reads(
        &[
            "bench",
            "--a",
            "hackbench -l 200 -g 1",
            "--b",
            "hackbench -l 200 -g 1",
            "--parser",
            "hackbench",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ],
        "Time",
    );
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
/// (B, -DPADDED). Both builds compile, run, and print the CPU-time figure the --regex reads;
/// the table names the figure's direction. The speedup itself (a timing outcome) is measured
/// by `bench/seeds_ab.sh`.
#[test]
fn false_sharing_builds_run_and_are_read() {
    let dir = scratch("fs");
    let src = common::repo().join("examples/ab/false_sharing.c");
    let (adjacent, padded) = (dir.join("fs_adjacent"), dir.join("fs_padded"));
    compile(&src, &adjacent, &[]);
    compile(&src, &padded, &["-DPADDED"]);
    let _t = timing();
    let (a, b) = (adjacent.display().to_string(), padded.display().to_string());
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
        "2",
        "--warmup",
        "0",
        "--name",
        "false-sharing",
        "--json",
    ]);
    let report = json(&out);
    let c = headline(&report);
    assert_eq!(c["case"], "false-sharing");
    assert_eq!(c["metric"], "regex");
    assert_eq!(c["direction"], "lower-is-better");
    assert_eq!(
        (c["a"]["n"].as_u64(), c["b"]["n"].as_u64()),
        (Some(2), Some(2))
    );
    for side in ["a_runs", "b_runs"] {
        assert!(
            c[side]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v.as_f64().unwrap() > 0.0),
            "{c}"
        );
    }
    // gain is the change with the sign of "better" (lower is better: opposite signs).
    let (change, gain) = (
        c["change_pct"].as_f64().unwrap(),
        c["gain_pct"].as_f64().unwrap(),
    );
    assert!((change + gain).abs() < 1e-9, "{c}");
    let _ = std::fs::remove_dir_all(&dir);
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

/// Whether a process has ended (gone, or a zombie waiting to be reaped by init).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits (without a time bound that could fail a slow machine: 10 minutes) for `path`.
fn wait_for_file(path: &Path, child: &mut std::process::Child) -> String {
    for _ in 0..60_000 {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("lineup ended ({status}) before {} appeared", path.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

/// A session whose B side hangs on its third run in a background process (that ignores
/// SIGTERM when `ignore_term`) after two finished B runs and three A runs (A B B A A B); the
/// test sends `signal` to lineup once the hanging process exists. Returns lineup's output and
/// the hanging process's pid.
fn interrupted_session(signal: &str, ignore_term: bool) -> (Output, i32) {
    let dir = scratch(&format!("signal-{signal}"));
    let (count, pidfile) = (dir.join("count"), dir.join("pid"));
    let hang = if ignore_term {
        "(trap '' TERM; exec sleep 600)"
    } else {
        "sleep 600"
    };
    let b = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n + 1)) > '{c}'; \
         if [ $n -ge 2 ]; then {hang} & echo $! > '{p}'; wait; fi; echo Time: 2",
        c = count.display(),
        p = pidfile.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "bench",
            "--a",
            "echo Time: 1",
            "--b",
            &b,
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
    let pid: i32 = wait_for_file(&pidfile, &mut child).trim().parse().unwrap();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (out, pid)
}

fn assert_finished_runs_table(out: &Output, status: i32, words: &str) {
    let (text, err) = (stdout(out), stderr(out));
    assert_eq!(out.status.code(), Some(status), "{err}");
    // Three A runs of 1, two B runs of 2: +100%, exact, so marked.
    assert!(
        text.contains(
            "case load baseline(std%) compare%( std%)\na-vs-b - 1.00 ( 0.00) +100.00 ( 0.00) *\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "runs: interrupted by {words} after 3 A and 2 B runs"
        )),
        "{text}"
    );
    assert!(
        err.contains(&format!(
            "lineup: interrupted by {words}: the figures are those of the 5 runs"
        )),
        "{err}"
    );
}

#[test]
fn ctrl_c_keeps_the_finished_runs() {
    let (out, pid) = interrupted_session("INT", false);
    assert_finished_runs_table(&out, 130, "Ctrl-C (SIGINT)");
    assert!(gone(pid), "the benchmarked command {pid} outlived lineup");
}

/// `timeout` and service managers send SIGTERM: lineup ends the command's process group
/// (SIGKILL for a process that ignores SIGTERM), prints the finished runs and exits 143.
#[test]
fn sigterm_ends_the_benchmarked_group() {
    let (out, pid) = interrupted_session("TERM", true);
    assert_finished_runs_table(&out, 143, "SIGTERM");
    assert!(gone(pid), "the benchmarked command {pid} outlived lineup");
}

#[test]
fn sighup_ends_the_benchmarked_group() {
    let (out, pid) = interrupted_session("HUP", false);
    assert_finished_runs_table(&out, 129, "SIGHUP");
    assert!(gone(pid), "the benchmarked command {pid} outlived lineup");
}

/// A command that prints 60 MB per run: lineup streams it and keeps a bounded tail, so its
/// peak resident memory stays far below the output's size (it was about 3x the output). The
/// peak comes from wait4(2)'s rusage of the lineup process itself.
#[test]
fn huge_output_is_streamed_in_bounded_memory() {
    let dir = scratch("huge");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let cmd = "yes 0123456789012345678901234567890123456789012345678901234567890123456789 \
               | head -c 60000000; echo; echo 'Time: 1.5'";
    let child = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "bench",
            "--a",
            cmd,
            "--b",
            cmd,
            "--parser",
            "hackbench",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 waits for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{err}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let c = headline(&report);
    // The figure printed after 60 MB is read from the kept tail.
    assert_eq!(c["a_runs"], serde_json::json!([1.5, 1.5]), "{c}");
    assert_eq!(c["b_runs"], serde_json::json!([1.5, 1.5]), "{c}");
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(
        peak_mib < 64,
        "lineup's peak RSS was {peak_mib} MiB for 4 runs of 60 MB output"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
            "/nonexistent/m.toml: no such file",
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
        // Ranges, checked before anything runs or is allocated.
        (
            &[
                "bench",
                "--a",
                "true",
                "--b",
                "true",
                "--runs",
                "1000000000",
            ][..],
            "--runs 1000000000: at most 10000 runs per side",
        ),
        (
            &[
                "bench",
                "--a",
                "true",
                "--b",
                "true",
                "--warmup",
                "18446744073709551615",
            ][..],
            "--warmup 18446744073709551615: at most 1000 warm-up runs",
        ),
        (
            &["bench", "--a", "true", "--b", "true", "--timeout", "1e300"][..],
            "--timeout 1e300: give seconds from 0 (no limit) to 604800",
        ),
        (
            &["bench", "--a", "true", "--b", "true", "--timeout=-1"][..],
            "--timeout -1: give seconds",
        ),
    ] {
        assert_one_line_error(&lineup(args), &[words]);
    }
    // A matrix file's counts are checked the same way, naming the file.
    let dir = scratch("ranges");
    let m = dir.join("m.toml");
    std::fs::write(
        &m,
        "runs = 18446744073709551615\n[[case]]\nname = \"x\"\na = \"true\"\nb = \"true\"\n",
    )
    .unwrap();
    assert_one_line_error(
        &lineup(&["bench", "--matrix", m.to_str().unwrap()]),
        &[
            m.to_str().unwrap(),
            "runs = 18446744073709551615: at most 10000 runs per side",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
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
