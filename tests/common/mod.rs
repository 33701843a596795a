//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod fleet;
pub mod schema;

use std::io::Read;
use std::path::{Path, PathBuf};

use lineup::layout::{Field, Layout};
use lineup::readers::pahole_text::MemberFacts;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bundled_btf() -> PathBuf {
    repo().join("data/vmlinux-6.18.44.btf")
}

pub fn read_gz(path: &Path) -> String {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .unwrap();
    s
}

/// lineup's layout as the facts pahole prints: members depth-first with offsets and sizes.
pub fn facts_of(layout: &Layout) -> Vec<MemberFacts> {
    fn walk(fields: &[Field], depth: usize, out: &mut Vec<MemberFacts>) {
        for f in fields {
            out.push(MemberFacts {
                depth,
                name: f.name.clone(),
                offset: f.offset,
                size: f.size,
                bitfield: f.bit_offset.zip(f.bit_size.map(u64::from)),
            });
            walk(&f.members, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(&layout.members, 0, &mut out);
    out
}

/// Runs the lineup binary in the repository root.
pub fn lineup(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run lineup")
}

/// Runs lineup, which must succeed, and parses its `--json` answer.
pub fn lineup_json(args: &[&str]) -> serde_json::Value {
    let out = lineup(args);
    assert!(
        out.status.success(),
        "lineup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Total modeled cycles per layout name of a `predict --json` answer.
pub fn predicted_totals(v: &serde_json::Value) -> Vec<(String, f64)> {
    v["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["layout"].as_str().unwrap().to_string(),
                l["total_cycles"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The seeds' acceptance on a `predict --json` answer: lineup's layout costs no more than the
/// seed's fix (`fix`, the candidate's file name), which costs less than the current layout.
pub fn assert_lineup_beats(v: &serde_json::Value, fix: &str) {
    let t = predicted_totals(v);
    let get = |n: &str| {
        t.iter()
            .find(|x| x.0 == n)
            .unwrap_or_else(|| panic!("{n} in {t:?}"))
            .1
    };
    let (current, ours, theirs) = (get("current"), get("lineup"), get(fix));
    assert!(theirs < current, "the seed's fix should help: {t:?}");
    assert!(
        ours <= theirs * (1.0 + 1e-9),
        "lineup must not cost more than the seed's fix: {t:?}"
    );
    assert!(ours < current, "{t:?}");
}

/// Runs the tests of one test binary one at a time: a measurement shares the machine's two
/// CPUs with nothing else of the suite (a compile or a recording beside an A/B run turns its
/// figures into noise). Each test of such a binary holds the guard for its whole body.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// An A/B measurement that may need more runs than one series on a shared 2-CPU VM gives
/// (its vCPUs are placed anew now and then: one series measures with 4% std, the next with
/// 50%). `series()` runs one `lineup bench --json` series (interleaved A B B A); its runs are
/// pooled with the earlier series' and Welch's test is taken over the pool, up to `max`
/// series. Returns the change of the mean in percent (B against A) once one series alone, or
/// the pool, is significant at p < 0.05 in B's favour (`higher_is_better` says which way that
/// is); panics with every series' figures otherwise.
/// What is deterministic about a `lineup bench --json` report of a real A/B run: the
/// comparison `c` (one of `comparisons`) has `runs` figures per side, every figure a number
/// (at least 0: a replica that counts work done while its threads ran together reports 0 when
/// a busy machine never ran them together), a change that is a number unless A's mean is 0
/// (then undefined and never marked significant), and a t-test with a p-value in [0, 1] and
/// an ordered interval. Whether the change is significant is a timing outcome, measured by
/// `bench/seeds_ab.sh`.
pub fn assert_ab_reads(c: &serde_json::Value, runs: usize) {
    for side in ["a_runs", "b_runs"] {
        let figures = c[side]
            .as_array()
            .unwrap_or_else(|| panic!("no {side}: {c}"));
        assert_eq!(figures.len(), runs, "{side}: {c}");
        assert!(
            figures
                .iter()
                .all(|v| v.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0)),
            "{side}: {c}"
        );
    }
    let mean_a = c["a"]["mean"].as_f64().unwrap();
    if mean_a != 0.0 {
        assert!(c["change_pct"].as_f64().is_some_and(f64::is_finite), "{c}");
    } else if c["b"]["mean"].as_f64().unwrap() != 0.0 {
        assert!(c["change_pct"].is_null(), "{c}");
        assert_eq!(c["significant"], false, "{c}");
    }
    let w = &c["welch"];
    let p = w["p"].as_f64().unwrap_or(f64::NAN);
    assert!((0.0..=1.0).contains(&p), "{c}");
    assert!(
        w["ci_low"].as_f64().unwrap() <= w["ci_high"].as_f64().unwrap(),
        "{c}"
    );
}

pub fn pooled_ab(
    max: usize,
    higher_is_better: bool,
    mut series: impl FnMut() -> serde_json::Value,
) -> f64 {
    use lineup::bench::stats::{summarize, welch_from};
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut seen = Vec::new();
    for _ in 0..max {
        let v = series();
        let c = &v["comparisons"][0];
        let runs = |k: &str| -> Vec<f64> {
            c[k].as_array()
                .map(|r| r.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default()
        };
        a.extend(runs("a_runs"));
        b.extend(runs("b_runs"));
        seen.push(format!(
            "{:?} (p {:?})",
            c["change_pct"].as_f64(),
            c["welch"]["p"].as_f64()
        ));
        if let Some(change) = c["change_pct"].as_f64()
            && c["significant"] == true
            && (change > 0.0) == higher_is_better
        {
            eprintln!("series {} alone: {change:+.1}%", seen.len());
            return change;
        }
        let (Some(sa), Some(sb)) = (summarize(&a), summarize(&b)) else {
            continue;
        };
        let Some(w) = welch_from(&sa, &sb, 0.95) else {
            continue;
        };
        let change = (sb.mean - sa.mean) / sa.mean.abs() * 100.0;
        if w.p < 0.05 && (change > 0.0) == higher_is_better {
            eprintln!(
                "pooled over {} series ({} runs a side): {change:+.1}%, p = {:.2e}",
                seen.len(),
                a.len(),
                w.p
            );
            return change;
        }
    }
    panic!("B not significantly better over {max} pooled series; each series: {seen:?}");
}

/// The line of the repository file `src` that holds `needle`, as `file.c:N` (how recorded
/// allocation sites are named): tests do not hard-code line numbers an edit would shift.
pub fn source_site(src: &str, needle: &str) -> String {
    let body = std::fs::read_to_string(repo().join(src)).unwrap();
    let n = body
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in {src}"))
        + 1;
    let file = Path::new(src).file_name().unwrap().to_string_lossy();
    format!("{file}:{n}")
}

/// Runs `cmd`, asserts that it succeeded (its stdout and stderr in the message, for the
/// failure's cause), and returns its stdout.
pub fn run_ok(cmd: &mut std::process::Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A fresh scratch directory of the calling test's own: `prefix`, this process's id and the
/// test's name (libtest runs each test on a thread named after it). The tests of one binary
/// run on parallel threads of one process, so a directory per process is shared by them, and
/// one test's writing, compiling or removing there lands under another's reads.
pub fn test_dir(prefix: &str) -> PathBuf {
    let test = std::thread::current()
        .name()
        .unwrap_or("main")
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "-");
    let d = std::env::temp_dir().join(format!("{prefix}-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Modeled cycles of a diagnosed line's terms (its `terms` in `diagnose --json`), of one
/// class or of all.
pub fn term_cycles(line: &serde_json::Value, class: Option<&str>) -> f64 {
    line["terms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| class.is_none_or(|c| t["class"] == c))
        .map(|t| t["cycles"].as_f64().unwrap())
        .sum()
}

/// The line of `diagnose --json` output `d` that holds member `name`; a test fails without one.
pub fn diagnosed_line<'a>(d: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    d["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["members"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == name)
        })
        .unwrap_or_else(|| panic!("no line holds `{name}`: {d:#}"))
}

/// Compiles C source `src` to the object file `obj` with `cc -g -c` (its DWARF is what the
/// tests read layouts from); the compile must succeed.
pub fn cc_object(src: &Path, obj: &Path) {
    let st = std::process::Command::new("cc")
        .args(["-g", "-c"])
        .arg(src)
        .arg("-o")
        .arg(obj)
        .status()
        .expect("cc");
    assert!(st.success(), "cc -g -c {}", src.display());
}
