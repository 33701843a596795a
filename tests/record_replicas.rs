//! Issue 16 acceptance on the literature's replicas (`examples/record/`): each recorded
//! program is diagnosed by the allocation site of its shared object (`diagnose --alloc
//! FILE:LINE`), with the right members or elements and the right verdict; the negative
//! control gets no contention verdict.
//!
//! - `streamcluster.c` (PARSEC pgain, -O2): `double *work_mem`, one 32-byte slice per
//!   thread (PARSEC's `CACHE_LINE` of 32 bytes, `lower = &work_mem[pid*stride]` and
//!   `lower[center_table[points->p[i].assign]] += ...` in its streamcluster.cpp): a scalar
//!   array named `work_mem@streamcluster.c:N`, neighbouring threads' slots on one line:
//!   false sharing.
//! - `histogram.c` (Phoenix, -O0): per-thread `thread_arg_t` in one calloc'd array, each
//!   thread writing only its own histograms: named by its site and element struct, never
//!   "true sharing".
//!   `optimize` prices the scalar array's per-thread slices as they are and padded to whole
//!   lines, and its patch (the slice-length macro, a line-aligned allocation at the site),
//!   applied to the replica and recorded again, removes the false sharing.
//! - `padded.c` (control, -O2): line-aligned slots, each thread its own: no verdict, cost 0.
//!
//! Small inputs (well under a second each); no assertion depends on how the threads
//! interleaved. Needs clang and gcc (`.ci/run` installs both).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-replicas-tests");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fn lineup() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", scratch().join("cache"));
    c
}

fn ok(c: &mut Command) -> Vec<u8> {
    common::run_ok(c)
}

/// Builds the replica `src` with `lineup cc` (compiler `cc`, level `opt`), records it with
/// `args`, and returns the profile.
fn recorded(src: &str, cc: &str, opt: &str, args: &[&str]) -> PathBuf {
    recorded_with(src, cc, &[opt], args)
}

/// As `recorded`, with the compiler flags `flags` (the level and any `-D`). Built and recorded
/// once per test binary for each source, compiler, flags and arguments: tests run on parallel
/// threads, and two asking for the same program (streamcluster, gcc -O2) wrote one path, one
/// test's `lineup cc` and `record` overwriting the program and profile the other ran and read.
fn recorded_with(src: &str, cc: &str, flags: &[&str], args: &[&str]) -> PathBuf {
    type Runs = HashMap<String, (usize, Arc<OnceLock<PathBuf>>)>;
    static RUNS: Mutex<Option<Runs>> = Mutex::new(None);
    let key = format!("{src}\0{cc}\0{}\0{}", flags.join(" "), args.join(" "));
    let (n, cell) = {
        let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
        let runs = runs.get_or_insert_with(HashMap::new);
        let n = runs.len();
        runs.entry(key)
            .or_insert_with(|| (n, Arc::default()))
            .clone()
    };
    cell.get_or_init(|| build_and_record(src, cc, flags, args, n))
        .clone()
}

/// Builds and records one program, under a name of its own (`n`: no two runs share a path).
fn build_and_record(src: &str, cc: &str, flags: &[&str], args: &[&str], n: usize) -> PathBuf {
    let stem = Path::new(src).file_stem().unwrap().to_string_lossy();
    let prog = scratch().join(format!("{stem}-{cc}{}-{n}", flags.join("")));
    ok(lineup()
        .env("LINEUP_CC", cc)
        .arg("cc")
        .args(flags)
        .args(["-pthread", "-Wall"])
        .arg(common::repo().join(src))
        .arg("-o")
        .arg(&prog));
    let profile = prog.with_extension("json");
    ok(lineup()
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .args(args));
    profile
}

/// The profile's allocation record for `site` and the name of the type it was given.
fn allocation(profile: &Path, site: &str) -> (String, Value) {
    let p: Value = serde_json::from_slice(&std::fs::read(profile).unwrap()).unwrap();
    for t in p["types"].as_array().unwrap() {
        if let Some(a) = t["allocations"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["source"] == site))
        {
            return (t["type_name"].as_str().unwrap().to_string(), a.clone());
        }
    }
    panic!("no allocation at {site} in {}", profile.display())
}

fn diagnose_alloc(profile: &Path, site: &str) -> Value {
    serde_json::from_slice(&ok(lineup()
        .args(["diagnose", "--json", "--profile"])
        .arg(profile)
        .args(["--alloc", site])))
    .unwrap()
}

/// Names of the diagnosis's members that `function` stored to.
fn stored_by(d: &Value, function: &str) -> Vec<String> {
    d["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["functions"].as_array().is_some_and(|f| {
                f.iter()
                    .any(|f| f["name"] == function && f["writes"].as_f64().unwrap_or(0.0) > 0.0)
            })
        })
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

fn verdicts(d: &Value) -> Vec<String> {
    d["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// PARSEC streamcluster's shared `double *work_mem` at -O2, two threads: the scalar array
/// named by its allocation site and the variable its address goes into, one 64-byte line
/// holding thread 0's slice `work_mem[0..3]` and thread 1's `work_mem[4..7]`; pgain writes
/// slots of both slices (`assign & 3` starts at 0, so `[0]` and `[4]` always), which is
/// false sharing, and never the slots no point is assigned to.
#[test]
fn streamcluster_work_mem_is_named_by_site_and_falsely_shared() {
    let src = "examples/record/streamcluster.c";
    let at = common::source_site(src, "work_mem = calloc");
    for cc in ["clang", "gcc"] {
        // 2 threads, 4000 points, 2 rounds: round r assigns `r & 3`, so slots 0 and 1.
        let profile = recorded(src, cc, "-O2", &["2", "4", "2"]);
        let (name, a) = allocation(&profile, &at);
        assert_eq!(name, format!("work_mem@{at}"), "{cc}");
        assert_eq!(a["function"], "main", "{cc}");
        assert_eq!(a["variable"], "work_mem", "{cc}");
        assert_eq!(a["element_type"], "double", "{cc}");
        assert_eq!(a["element_kind"], "float", "{cc}");
        assert_eq!(a["max_bytes"], 64, "{cc}");

        let d = diagnose_alloc(&profile, &at);
        assert_eq!(d["type_name"], format!("work_mem@{at}"), "{cc}");
        assert_eq!(d["allocations"][0]["source"], at.as_str(), "{cc}");
        assert_eq!(verdicts(&d), ["false_sharing"], "{cc}: {d:#}");
        let line = &d["lines"][0];
        assert!(line["cost"].as_f64().unwrap() > 0.0, "{cc}: {line:#}");
        let mut written = stored_by(&d, "pgain");
        written.sort();
        assert_eq!(
            written,
            ["work_mem[0]", "work_mem[1]", "work_mem[4]", "work_mem[5]"],
            "{cc}: {d:#}"
        );
        let why = line["explanation"].as_str().unwrap();
        assert!(
            why.contains("`work_mem[0]`") && why.contains("`work_mem[4]`"),
            "{cc}: {why}"
        );
    }
}

/// The same past the memory budget's first level: main fills in every point, then one
/// worker owns each. The sharing table takes that for a hand-over, not for sharing, so the
/// points are summarized per code site (and still reach their members through each site's
/// sample address) while `work_mem`'s line, written by both workers, keeps full resolution
/// and its false sharing. Before the hand-over state, every point's line looked contended,
/// the counts reached the budget's second level and the false sharing was lost.
#[test]
fn streamcluster_past_the_budget_keeps_work_mem_and_summarizes_the_handed_over_points() {
    let src = "examples/record/streamcluster.c";
    let at = common::source_site(src, "work_mem = calloc");
    let prog = scratch().join("streamcluster-budget");
    ok(lineup()
        .env("LINEUP_CC", "clang")
        .args(["cc", "-O2", "-pthread"])
        .arg(common::repo().join(src))
        .arg("-o")
        .arg(&prog));
    let profile = prog.with_extension("json");
    // 20000 points x 4 rounds: about 38 MB of per-place counts written at full resolution,
    // against levels at 1 MiB and 4 MiB of a 64 MiB budget (a full table of one thread is
    // 768 KiB: the levels must be well apart from it). Every access (`--sample 1`): in
    // bursts, the counts written between windows would not reach the budget.
    ok(lineup()
        .args(["record", "--sample", "1", "--memory", "64M", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .args(["2", "20", "4"]));
    let p: Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    let rec = &p["summary"]["record"];
    assert_eq!(rec["budget_level"], 1.0, "{rec:#}");
    assert!(
        rec["summarized_accesses"].as_f64().unwrap() > 100_000.0,
        "{rec:#}"
    );
    let d = diagnose_alloc(&profile, &at);
    assert_eq!(verdicts(&d), ["false_sharing"], "{d:#}");
    let why = d["lines"][0]["explanation"].as_str().unwrap();
    assert!(
        why.contains("`work_mem[0]`") && why.contains("`work_mem[4]`"),
        "{why}"
    );
    // The points: every member counted, through the summaries' sample addresses (each
    // worker writes `cost` once per point improved, reads it once per point and round).
    let points = common::source_site(src, "points = malloc");
    let d = diagnose_alloc(&profile, &points);
    let cost = d["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "cost")
        .unwrap_or_else(|| panic!("{d:#}"));
    assert!(
        cost["counts"]["loads"].as_f64().unwrap() >= 20_000.0 * 4.0,
        "{cost:#}"
    );
    assert!(
        !verdicts(&d).contains(&"false_sharing".to_string()),
        "{d:#}"
    );
}

/// Phoenix histogram at -O0: the per-thread `thread_arg_t` (3096 bytes) in one calloc'd
/// block, named by the site, the variable and the element struct; each thread writes only
/// its own element's histograms and reads its own header, so no line is "true sharing"
/// (issue 16 item 3), and the header is never written by the workers.
#[test]
fn histogram_arguments_are_named_by_site_and_never_true_sharing() {
    let src = "examples/record/histogram.c";
    let at = common::source_site(src, "thread_arg_t *arg = calloc");
    let profile = recorded(src, "clang", "-O0", &["2", "1"]);
    let (name, a) = allocation(&profile, &at);
    assert_eq!(name, "thread_arg_t");
    assert_eq!(a["variable"], "arg");
    assert_eq!(a["element_type"], "thread_arg_t");
    assert_eq!(a["element_size"], 3096);
    assert_eq!(a["blocks"], 1);
    assert_eq!(a["max_bytes"], 2 * 3096);

    let d = diagnose_alloc(&profile, &at);
    assert_eq!(d["type_name"], "thread_arg_t");
    assert_eq!(d["size"], 3096);
    let written = stored_by(&d, "calc_hist");
    assert!(
        written.iter().any(|m| m.starts_with("red["))
            && written.iter().any(|m| m.starts_with("blue[")),
        "{written:?}"
    );
    for header in ["data", "data_pos", "data_len"] {
        assert!(!written.iter().any(|m| m == header), "{written:?}");
    }
    for v in verdicts(&d) {
        assert_ne!(v, "true_sharing", "{d:#}");
    }
}

/// The negative control selected by its allocation site: `struct slot` (64 bytes, aligned
/// to the line) from aligned_alloc, each worker writing its own: no contention verdict on
/// any line, and no cost.
#[test]
fn padded_control_by_allocation_site_gets_no_verdict() {
    let src = "examples/record/padded.c";
    let at = common::source_site(src, "aligned_alloc(64");
    let profile = recorded(src, "gcc", "-O2", &["2", "200000"]);
    let (name, a) = allocation(&profile, &at);
    assert_eq!(name, "slot");
    assert_eq!(a["variable"], "slots");
    assert_eq!(a["element_size"], 64);
    let d = diagnose_alloc(&profile, &at);
    assert_eq!(d["type_name"], "slot");
    // Not vacuous: the workers did write the slots.
    let written = stored_by(&d, "worker");
    assert!(
        written.contains(&"hits".to_string()) && written.contains(&"misses".to_string()),
        "{d:#}"
    );
    for l in d["lines"].as_array().unwrap() {
        let v = l["verdict"].as_str().unwrap();
        assert!(v == "not_shared" || v == "negligible", "{l:#}");
        assert_eq!(l["cost"].as_f64(), Some(0.0), "{l:#}");
    }
}

/// The simulated false-sharing transfers the recording counted on `ty`'s accesses.
fn sim_false_sharing(profile: &Path, ty: &str) -> f64 {
    let p: Value = serde_json::from_slice(&std::fs::read(profile).unwrap()).unwrap();
    let t = p["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type_name"] == ty)
        .unwrap_or_else(|| panic!("no type {ty} in {}", profile.display()));
    t["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["details"]["sim_false_sharing"].as_f64())
        .sum()
}

/// `optimize` and `predict` on the scalar array (issue 16 item 3): the per-thread slices
/// (4 doubles each, thread 0's `work_mem[0..3]` and thread 1's `[4..7]` on one line) priced as
/// they are and padded to whole lines, a plan the model prices lower; `optimize`'s patch (the
/// `STRIDE` macro the allocation multiplies, 4 -> 8, and the calloc made a line-aligned
/// `lineup_aligned_calloc`) applied mechanically, rebuilt and recorded again leaves no line
/// written by two workers (exact), no false-sharing verdict, and at most 10% of the simulated
/// false-sharing transfers (deterministic counts over the recorded order; with no overlap of
/// the threads both are 0).
#[test]
fn streamcluster_scalar_array_gets_a_priced_plan_and_a_patch_that_works() {
    let src = "examples/record/streamcluster.c";
    let at = common::source_site(src, "work_mem = calloc");
    let ty = format!("work_mem@{at}");
    let profile = recorded(src, "gcc", "-O2", &["2", "4", "2"]);
    let fixed_dir = scratch().join("streamcluster-fixed");
    std::fs::create_dir_all(&fixed_dir).unwrap();
    let header = fixed_dir.join("streamcluster.c");
    std::fs::copy(common::repo().join(src), &header).unwrap();
    let patch = fixed_dir.join("fix.diff");
    let json = |cmd: &str, extra: &[&std::ffi::OsStr]| -> Value {
        serde_json::from_slice(&ok(lineup()
            .args([
                cmd,
                "--json",
                "--machine",
                "icelake-2s",
                "--type",
                &ty,
                "--profile",
            ])
            .arg(&profile)
            .args(extra)))
        .unwrap()
    };
    let o = json(
        "optimize",
        &[
            "--header".as_ref(),
            header.as_os_str(),
            "--patch".as_ref(),
            patch.as_os_str(),
        ],
    );
    let p = json("predict", &[]);
    for v in [&o, &p] {
        let sl = &v["slices"];
        assert_eq!(
            (
                sl["elem_size"].as_u64(),
                sl["elems"].as_u64(),
                sl["per_slice"].as_u64(),
                sl["padded_per_slice"].as_u64()
            ),
            (Some(8), Some(8), Some(4), Some(8)),
            "{v:#}"
        );
        assert_eq!(
            sl["writers"],
            serde_json::json!([[0, [0]], [1, [1]]]),
            "{v:#}"
        );
        assert_eq!(v["current"]["size"], 64);
        assert_eq!(v["plan"]["size"], 128);
        let cycles = |c: &Value| -> f64 {
            ["false_cycles", "true_cycles", "locality_cycles"]
                .iter()
                .map(|k| c[k].as_f64().unwrap())
                .sum()
        };
        assert!(cycles(&v["plan"]) < cycles(&v["current"]), "{v:#}");
        // What false sharing the model leaves is main's final reads, not the workers'.
        assert!(
            v["plan"]["false_transfers"].as_f64().unwrap()
                < 0.01 * v["current"]["false_transfers"].as_f64().unwrap(),
            "{v:#}"
        );
        assert!(v["rejected"].is_null());
        let advice = v["advice"].as_str().unwrap();
        assert!(
            advice.contains(&format!(
                "{ty} is an array of double (8 bytes each) allocated in main at {at}"
            )) && advice.contains("pad each slice to 8 elements")
                && advice.contains("aligned_alloc(64, n * size)"),
            "{advice}"
        );
    }
    // The patch: the stride and the allocation, nothing else.
    let diff = std::fs::read_to_string(&patch).unwrap();
    assert!(
        diff.contains("-#define STRIDE 4\n+#define STRIDE 8\n"),
        "{diff}"
    );
    assert!(
        diff.contains(
            "+    work_mem = lineup_aligned_calloc(64, (size_t)nthreads * STRIDE, sizeof(double));"
        ),
        "{diff}"
    );
    let o = Command::new("patch")
        .current_dir(&fixed_dir)
        .args(["-s", "streamcluster.c", "fix.diff"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let before = sim_false_sharing(&profile, &ty);
    let fixed = recorded_with(
        header.to_str().unwrap(),
        "gcc",
        &["-O2", "-DLINEUP_PATCHED"],
        &["2", "4", "2"],
    );
    let body = std::fs::read_to_string(&header).unwrap();
    let line = body
        .lines()
        .position(|l| l.contains("work_mem = lineup_aligned_calloc("))
        .unwrap()
        + 1;
    let at_fixed = format!("streamcluster.c:{line}");
    let d = diagnose_alloc(&fixed, &at_fixed);
    assert_eq!(d["size"], 128, "{d:#}");
    let written = stored_by(&d, "pgain");
    assert!(
        written.contains(&"work_mem[0]".to_string())
            && written.contains(&"work_mem[8]".to_string()),
        "{written:?}"
    );
    for l in d["lines"].as_array().unwrap() {
        assert_ne!(l["verdict"], "false_sharing", "{l:#}");
    }
    // Exact, whatever the interleaving: before, one line holds both workers' writes; after,
    // each line one worker's.
    let workers_per_line = |profile: &Path, ty: &str| -> Vec<usize> {
        let p: Value = serde_json::from_slice(&std::fs::read(profile).unwrap()).unwrap();
        let t = p["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type_name"] == ty)
            .unwrap();
        let mut lines: std::collections::BTreeMap<u64, std::collections::BTreeSet<u64>> =
            Default::default();
        for a in t["accesses"].as_array().unwrap() {
            if a["code"]["symbol"] != "pgain"
                || a["counts"]["stores"].as_f64().unwrap_or(0.0) == 0.0
            {
                continue;
            }
            let w = lines.entry(a["offset"].as_u64().unwrap() / 64).or_default();
            w.extend(
                a["threads"]["tids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_u64().unwrap()),
            );
        }
        lines.values().map(|w| w.len()).collect()
    };
    assert_eq!(workers_per_line(&profile, &ty), [2]);
    assert_eq!(
        workers_per_line(&fixed, &format!("work_mem@{at_fixed}")),
        [1, 1]
    );
    let after = sim_false_sharing(&fixed, &format!("work_mem@{at_fixed}"));
    eprintln!("streamcluster: simulated false-sharing transfers {before} -> {after}");
    assert!(after <= 0.1 * before, "{before} -> {after}");
}
