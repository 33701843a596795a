//! `lineup replay` end to end on seed 000's task_group profile: the generated C compiles with
//! every hot member at its predicted offset, the runs are read and compared, the model's side
//! is predict's, signals end the running replay, and ranges are checked up front. No test
//! depends on a timing outcome: whether lineup's layout measures faster is printed, with its
//! confidence interval, by `bench/seeds_ab.sh`. The tests that run the replay take turns.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::Value;

const BTF: &str = "data/vmlinux-6.18.44.btf";
const C2C: &str = "tests/data/c2c/seed000_paste.txt";

static TIMING: Mutex<()> = Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn lineup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run lineup")
}

fn seed000(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["replay", "--type", "task_group", "--btf", BTF, "--c2c", C2C]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn json(args: &[String]) -> Value {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lineup(&refs);
    assert!(
        out.status.success(),
        "lineup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-replay-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The second layout's row of a `--json` report.
fn second(report: &Value) -> &Value {
    &report["layouts"][1]
}

const QUICK: [&str; 6] = [
    "--runs",
    "6",
    "--duration-ms",
    "100",
    "--json",
    "--warmup=1",
];

#[test]
fn generated_source_compiles_with_offsets_asserted() {
    let dir = scratch("emit");
    let c = dir.join("replay.c");
    let out = lineup(
        &seed000(&["--runs", "0", "--emit-c", c.to_str().unwrap()])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let src = std::fs::read_to_string(&c).unwrap();
    // The current layout: load_avg, rt_se and rt_rq share line 4.
    for want in [
        "_Static_assert(offsetof(struct v0, load_avg) == 256",
        "_Static_assert(offsetof(struct v0, rt_se) == 264",
        "_Static_assert(offsetof(struct v0, rt_rq) == 272",
        "_Static_assert(sizeof(struct v0) == 704",
        // lineup's: rt_se and rt_rq leave load_avg's line.
        "_Static_assert(offsetof(struct v1, load_avg) == 256",
        "_Static_assert(offsetof(struct v1, rt_se) == 240",
        "__atomic_fetch_add",
        "/* Variant 1: lineup (704 bytes, 11 lines) */",
    ] {
        assert!(src.contains(want), "missing {want:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The harness against itself: both layouts run, every run is read, the model predicts no
/// change, and the statistics are defined. (Whether the A/A change comes out insignificant is
/// a timing outcome: `bench/seeds_ab.sh` measures it.)
#[test]
fn current_against_itself_runs_and_is_read() {
    let _t = timing();
    let r = json(&seed000(&[&QUICK[..], &["--self-test"]].concat()));
    assert_eq!(r["layouts"][0]["layout"], "current");
    assert_eq!(second(&r)["layout"], "current-again");
    for l in r["layouts"].as_array().unwrap() {
        // A run in which the threads never ran together (a busy machine) has no figure and
        // is counted apart; every counted figure is a positive throughput.
        let runs = l["runs"].as_array().unwrap();
        let dropped = l["runs_without_corun_time"].as_u64().unwrap() as usize;
        assert_eq!(runs.len() + dropped, 6, "{l}");
        assert!(runs.iter().all(|v| v.as_f64().unwrap() > 0.0), "{l}");
        let share = l["corun_share"].as_array().unwrap();
        assert!(
            share
                .iter()
                .all(|v| (0.0..=1.0).contains(&v.as_f64().unwrap())),
            "{l}"
        );
    }
    // Same placement, same modeled cycles.
    assert_eq!(second(&r)["predicted_change_pct"], 0.0);
    // With at least 2 figures per layout the comparison is defined.
    let counted = |l: &Value| l["runs"].as_array().unwrap().len();
    if counted(&r["layouts"][0]) >= 2 && counted(second(&r)) >= 2 {
        let change = second(&r)["measured_change_pct"].as_f64().unwrap();
        assert!(change.is_finite(), "{change}");
        let p = second(&r)["welch"]["p"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p), "{p}");
    }
}

/// The model's side of lineup against current, which is deterministic: lineup's layout costs
/// fewer modeled cycles. (`--runs 0`: generated and compiled, nothing timed.)
#[test]
fn lineup_layout_is_predicted_cheaper() {
    let r = json(&seed000(&["--runs", "0", "--json"]));
    let row = second(&r);
    assert_eq!(row["layout"], "lineup");
    assert!(row["predicted_change_pct"].as_f64().unwrap() < 0.0, "{row}");
    assert_eq!(row["runs"].as_array().unwrap().len(), 0);
    assert_eq!(row["significant"], false);
}

#[test]
fn text_report_has_the_seeds_table_and_the_model_beside_it() {
    let _t = timing();
    // Runs of a stand-in with fixed figures: the report's form does not depend on the machine.
    let dir = scratch("text");
    let cc = stand_in_cc(&dir, 0);
    let out = lineup(
        &seed000(&[
            "--runs",
            "2",
            "--duration-ms",
            "50",
            "--warmup",
            "0",
            "--cc",
            cc.to_str().unwrap(),
        ])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("case load baseline(std%) compare%( std%)"),
        "{text}"
    );
    assert!(text.contains("\nlineup "), "{text}");
    // Identical fixed figures on both layouts: no change, no spread, not marked.
    assert!(text.contains(" 1.00 ( 0.00) +0.00 ( 0.00)\n"), "{text}");
    assert!(text.contains("model vs measurement"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
    // The model's figure is predict's, for this host.
    let p = lineup(&[
        "predict",
        "--type",
        "task_group",
        "--btf",
        BTF,
        "--c2c",
        C2C,
        "--machine",
        "host",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&p.stdout).unwrap();
    let predicted = v["layouts"][1]["change_pct"].as_f64().unwrap();
    assert!(
        text.contains(&format!("{predicted:+.1}%")),
        "{predicted} in {text}"
    );
}

#[test]
fn csv_and_svg_files_hold_the_table() {
    let _t = timing();
    let dir = scratch("files");
    let csv = dir.join("replay.csv");
    let plots = dir.join("plots");
    let cc = stand_in_cc(&dir, 0);
    let args = seed000(&[
        "--cc",
        cc.to_str().unwrap(),
        "--runs",
        "2",
        "--duration-ms",
        "40",
        "--warmup",
        "0",
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        plots.to_str().unwrap(),
        "--json",
    ]);
    let report = json(&args);
    let text = std::fs::read_to_string(&csv).expect("the CSV");
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("case,load,metric"), "{header}");
    let row = lines.next().expect("one comparison");
    assert!(row.starts_with("lineup,"), "{row}");
    // The CSV's change is the JSON's (same runs, same statistics).
    let change = second(&report)["measured_change_pct"].as_f64().unwrap();
    let column = header.split(',').position(|h| h == "change_pct").unwrap();
    let csv_change: f64 = row.split(',').nth(column).unwrap().parse().unwrap();
    assert!(
        (csv_change - change).abs() < 1e-9,
        "{csv_change} vs {change}"
    );
    let svg = std::fs::read_to_string(plots.join("lineup.svg")).expect("lineup.svg");
    assert!(
        svg.starts_with("<svg") && svg.contains("throughput"),
        "{svg}"
    );
    // A --csv into a missing directory fails before anything runs.
    let bad = lineup(
        &seed000(&["--csv", "/nonexistent-dir/x.csv"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_one_line_error(&bad, &["/nonexistent-dir", "--csv"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A C compiler for `--cc` that builds the replay and puts a counting stand-in in its place:
/// the first four runs print a fixed figure line in the replay's format (so no run depends on
/// how busy the machine is), and from the fifth the stand-in writes its pid and hangs, so that
/// the test signals lineup at a known point without guessing times.
fn hanging_cc(dir: &std::path::Path) -> PathBuf {
    stand_in_cc(dir, 5)
}

/// [`hanging_cc`] that hangs from run `hang_at` (never when it is 0).
fn stand_in_cc(dir: &std::path::Path, hang_at: usize) -> PathBuf {
    let cc = dir.join("cc.sh");
    let (count, pidfile) = (dir.join("count"), dir.join("pid"));
    std::fs::write(
        &cc,
        format!(
            r#"#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
cc "$@" || exit 1
mv "$out" "$out.real"
cat > "$out" <<EOF
#!/bin/sh
echo run >> '{count}'
if [ {hang_at} -gt 0 ] && [ \$(wc -l < '{count}') -ge {hang_at} ]; then echo \$\$ > '{pid}'; exec sleep 600; fi
echo 'thread 0 cpu 0 ops 1000 cpu_ns 1000000 wall_ns 1000000 corun_ops 1000 corun_ns 1000000'
EOF
chmod +x "$out"
"#,
            count = count.display(),
            pid = pidfile.display()
        ),
    )
    .unwrap();
    let status = Command::new("chmod").arg("+x").arg(&cc).status().unwrap();
    assert!(status.success());
    cc
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Four runs finish (two per layout, A B B A), the fifth hangs; `signal` goes to lineup.
fn interrupted_replay(signal: &str) -> (Output, i32, u32) {
    let _t = timing();
    let dir = scratch(&format!("signal-{signal}"));
    let cc = hanging_cc(&dir);
    let args = seed000(&[
        "--runs",
        "200",
        "--duration-ms",
        "50",
        "--warmup",
        "0",
        "--self-test",
        "--cc",
        cc.to_str().unwrap(),
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(&args)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = dir.join("pid");
    let mut pid = None;
    for _ in 0..60_000 {
        if let Ok(s) = std::fs::read_to_string(&pidfile)
            && s.ends_with('\n')
            && let Ok(p) = s.trim().parse::<i32>()
        {
            pid = Some(p);
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("lineup ended ({status}) before the fifth run");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = pid.expect("the fifth run started");
    let lineup_pid = child.id();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &lineup_pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (out, pid, lineup_pid)
}

#[test]
fn ctrl_c_keeps_the_finished_runs() {
    let (out, pid, _) = interrupted_replay("INT");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        text.contains("runs: interrupted by Ctrl-C (SIGINT) after 2 of 200 runs per layout"),
        "{text}"
    );
    assert!(text.contains("\ncurrent-again "), "{text}");
    assert!(
        err.contains("interrupted by Ctrl-C (SIGINT): the figures are those of the 4 runs"),
        "{err}"
    );
    assert!(gone(pid), "the replay run {pid} outlived lineup");
}

/// `timeout` sends SIGTERM: the running replay goes, the temporary directory too, exit 143.
#[test]
fn sigterm_ends_the_running_replay_and_cleans_up() {
    let (out, pid, lineup_pid) = interrupted_replay("TERM");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("interrupted by SIGTERM: the figures are those of the 4 runs"),
        "{err}"
    );
    assert!(gone(pid), "the replay run {pid} outlived lineup");
    let tmp = std::env::temp_dir().join(format!("lineup-replay-{lineup_pid}"));
    assert!(!tmp.exists(), "{} left behind", tmp.display());
}

#[test]
fn counts_and_durations_are_checked_up_front() {
    for (extra, words) in [
        (
            &["--runs", "1000000000"][..],
            "--runs 1000000000: at most 10000 runs",
        ),
        (
            &["--warmup", "5000"][..],
            "--warmup 5000: at most 1000 warm-up runs",
        ),
        (
            &["--duration-ms", "99999999999"][..],
            "--duration-ms 99999999999: give 1 to 3600000 ms",
        ),
        (
            &["--threads", "100000"][..],
            "--threads 100000: give 1 to 1024 threads",
        ),
        (
            &["--think", "4000000000"][..],
            "--think 4000000000: give 0 to 1000000",
        ),
        (&["--runs", "1"][..], "at least 2 runs"),
    ] {
        // A profile that does not exist: the range is reported first, before any reading.
        let mut args = vec![
            "replay",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            "/nonexistent/c2c.txt",
        ];
        args.extend_from_slice(extra);
        assert_one_line_error(&lineup(&args), &[words]);
    }
}

fn assert_one_line_error(out: &Output, words: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for w in words {
        assert!(err.contains(w), "{w:?} not in {err}");
    }
}

#[test]
fn compiler_problems_are_one_line_errors() {
    let missing = lineup(
        &seed000(&["--runs", "0", "--cc", "/nonexistent/cc"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_one_line_error(&missing, &["C compiler", "/nonexistent/cc"]);
    let failing = lineup(
        &seed000(&["--runs", "0", "--cc", "false"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_one_line_error(&failing, &["'false' failed to compile"]);
    let nothing = lineup(
        &seed000(&["--runs", "0", "--no-lineup"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_one_line_error(&nothing, &["nothing to compare"]);
}

#[test]
fn help_has_examples() {
    let out = lineup(&["replay", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:"), "{text}");
    assert!(text.contains("--self-test"), "{text}");
    assert!(text.contains("--emit-c"), "{text}");
}
