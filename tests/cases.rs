//! The acceptance set of issue 15: public merged or proposed re-layouts under `tests/cases/`
//! (see its README). For every case, lineup's layout from the layout before:
//! - meets every constraint of the case (what the merged fix achieved);
//! - costs no more than the merged layout in the model;
//! - is no larger than the merged layout plus one cache line.
//! A negative case (`negative = true`: padding that measured no gain, a re-layout reverted, a
//! proposal closed) is not held to its `merged.h`; its `expect` is checked instead:
//! `no_change` (lineup proposes the layout before as it is) or `predict_loss` (`predict`
//! prices `merged.h` no better than the layout before). `expect_miss_merged = "why"` marks a
//! positive case whose cost or size against the merged layout is a known miss (checked to
//! still miss, like a constraint's `expect_miss`).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{lineup_json, predicted_totals, repo};

const BTF: &str = "data/vmlinux-6.18.44.btf";

fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.toml").exists())
        .collect();
    v.sort();
    v
}

struct Outcome {
    name: String,
    /// Names of the constraints that failed, with why.
    failures: Vec<String>,
}

fn compile(dir: &Path, before: &str, name: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!("lineup-cases-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let obj = out.join("before.o");
    let st = Command::new("cc")
        .args(["-g", "-c"])
        .arg(dir.join(before))
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("cc");
    assert!(st.success(), "{name}: cc {before}");
    obj
}

/// Runs one case and checks it; returns what failed.
fn check(dir: &Path) -> Outcome {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(dir.join("case.toml")).unwrap();
    let case: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let s = |k: &str| case.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let ty = s("type").expect("type");
    let machine = s("machine").expect("machine");
    let sketch = dir.join(s("sketch").expect("sketch"));
    let cls = case
        .get("cacheline_size")
        .and_then(|v| v.as_integer())
        .unwrap_or(64) as u64;
    let obj;
    let source: Vec<String> = match s("before") {
        Some(before) => {
            obj = compile(dir, &before, &name);
            vec!["--dwarf".into(), obj.display().to_string()]
        }
        None => vec!["--btf".into(), BTF.into()],
    };
    let mut common_args: Vec<String> = vec!["--type".into(), ty.clone()];
    common_args.extend(source);
    common_args.extend([
        "--sketch".into(),
        sketch.display().to_string(),
        "--machine".into(),
        machine,
        "--cacheline-size".into(),
        cls.to_string(),
        "--json".into(),
    ]);
    let mut args: Vec<String> = vec!["optimize".into()];
    args.extend(common_args.iter().cloned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = lineup_json(&refs);
    let units = o["units"].as_array().unwrap();
    let offsets: Vec<u64> = o["plan"]["placement"]["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    let order: Vec<usize> = o["plan"]["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect();
    let size = o["plan"]["placement"]["size"].as_u64().unwrap();
    let before_size = o["current"]["size"].as_u64().unwrap();
    let unit_of = |m: &str| {
        units
            .iter()
            .position(|u| {
                u["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x.as_str() == Some(m))
            })
            .unwrap_or_else(|| panic!("{name}: no member {m}"))
    };
    let line = |m: &str| offsets[unit_of(m)] / cls;
    // Where the evidence puts instances elsewhere than at a line's start, and the allocation
    // ignores the layout's alignment, members kept apart must be apart at every start.
    let ia = &o["instance_alignment"];
    let starts: Vec<u64> = match ia["offsets_in_line"].as_array() {
        Some(a) if ia["honours_alignment"] == false => {
            a.iter().map(|x| x.as_u64().unwrap()).collect()
        }
        _ => vec![0],
    };
    let names = |v: &toml::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    let mut failures = Vec::new();
    for c in case
        .get("constraint")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default()
    {
        // `expect_miss = "why"`: a known miss, checked to still miss so the case flips when fixed.
        let before_this = failures.len();
        if let Some(ms) = c.get("apart") {
            let ms = names(ms);
            let lines: Vec<u64> = ms.iter().map(|m| line(m)).collect();
            let distinct: std::collections::BTreeSet<u64> = lines.iter().copied().collect();
            if distinct.len() != lines.len() {
                failures.push(format!("apart {ms:?}: lines {lines:?}"));
            }
            for &s in starts.iter().filter(|&&s| s != 0) {
                let at: Vec<u64> = ms.iter().map(|m| (offsets[unit_of(m)] + s) / cls).collect();
                let distinct: std::collections::BTreeSet<u64> = at.iter().copied().collect();
                if distinct.len() != at.len() {
                    failures.push(format!(
                        "apart {ms:?}: on instances {s} bytes into a line, lines {at:?}"
                    ));
                }
            }
        }
        // `apart_pairs`: on pairwise different aligned 128-byte pairs of lines (the pairs the
        // adjacent-line prefetcher fetches together).
        if let Some(ms) = c.get("apart_pairs") {
            let ms = names(ms);
            let pairs: Vec<u64> = ms.iter().map(|m| line(m) / 2).collect();
            let distinct: std::collections::BTreeSet<u64> = pairs.iter().copied().collect();
            if distinct.len() != pairs.len() {
                failures.push(format!("apart_pairs {ms:?}: pairs {pairs:?}"));
            }
        }
        if let Some(ms) = c.get("within") {
            let ms = names(ms);
            let k = c.get("lines").and_then(|v| v.as_integer()).unwrap_or(1) as u64;
            let lines: Vec<u64> = ms.iter().map(|m| line(m)).collect();
            let span = lines.iter().max().unwrap() - lines.iter().min().unwrap() + 1;
            if span > k {
                failures.push(format!("within {k} lines {ms:?}: lines {lines:?}"));
            }
        }
        if let Some(b) = c.get("max_growth").and_then(|v| v.as_integer()) {
            if size > before_size + b as u64 {
                failures.push(format!("growth {before_size} -> {size} over {b}"));
            }
        }
        if c.get("markers_in_order").and_then(|v| v.as_bool()) == Some(true) {
            let pos = |u: usize| order.iter().position(|&x| x == u).unwrap();
            for (b, u) in units.iter().enumerate() {
                let un = u["name"].as_str().unwrap();
                let Some(g) = un.strip_prefix("__cacheline_group_begin__") else {
                    continue;
                };
                let e = units
                    .iter()
                    .position(|x| x["name"] == format!("__cacheline_group_end__{g}"))
                    .unwrap();
                let kept: std::collections::BTreeSet<usize> = (b..=e).collect();
                let now: std::collections::BTreeSet<usize> =
                    order[pos(b)..=pos(e).max(pos(b))].iter().copied().collect();
                if pos(b) > pos(e) || kept != now {
                    failures.push(format!("group {g} out of order or broken"));
                }
            }
        }
        if let Some(why) = c.get("expect_miss").and_then(|v| v.as_str()) {
            if failures.len() == before_this {
                failures.push(format!("known miss now met ({why}): drop expect_miss"));
            } else {
                failures.truncate(before_this);
            }
        }
    }
    check_diagnosis(&name, &case, &common_args, dir, &mut failures);
    check_one_model(&common_args, &mut failures);
    let negative = case.get("negative").and_then(|v| v.as_bool()) == Some(true);
    if negative {
        let before_expect = failures.len();
        check_expect(&name, &case, &o, &common_args, dir, &mut failures);
        // `expect_miss_negative = "why"`: a known miss of the expect, checked to still miss.
        if let Some(why) = s("expect_miss_negative") {
            if failures.len() == before_expect {
                failures.push(format!(
                    "known miss of expect now met ({why}): drop expect_miss_negative"
                ));
            } else {
                failures.truncate(before_expect);
            }
        }
        return Outcome { name, failures };
    }
    let merged_miss = s("expect_miss_merged");
    let before_merged = failures.len();
    // Against the merged layout (for BTF cases: the fixture's own, the current one).
    let merged_name = match s("merged") {
        Some(m) => {
            let mut args: Vec<String> = vec!["predict".into()];
            args.extend(common_args.iter().cloned());
            args.extend(["--layout".into(), dir.join(&m).display().to_string()]);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let p = lineup_json(&refs);
            let t = predicted_totals(&p);
            let get = |n: &str| t.iter().find(|x| x.0 == n).map(|x| x.1);
            let merged_size = p["layouts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["layout"] == m.as_str())
                .map(|l| l["cost"]["size"].as_u64().unwrap())
                .unwrap();
            let (ours, theirs) = (get("lineup").unwrap(), get(&m).unwrap());
            if ours > theirs * (1.0 + 1e-9) + 1e-9 {
                failures.push(format!(
                    "costs {ours:.0} cycles, the merged layout {theirs:.0}"
                ));
            }
            if size > merged_size + cls {
                failures.push(format!("{size} bytes, the merged layout {merged_size}"));
            }
            m
        }
        None => {
            // Every term the model prices (cost::Cost::total_cycles).
            let total = |c: &serde_json::Value| {
                [
                    "false_cycles",
                    "true_cycles",
                    "locality_cycles",
                    "pair_cycles",
                ]
                .iter()
                .map(|k| c[*k].as_f64().unwrap_or(0.0))
                .sum::<f64>()
            };
            let ours = total(&o["plan"]["cost"]);
            let theirs = total(&o["current"]);
            if ours > theirs * (1.0 + 1e-9) + 1e-9 {
                failures.push(format!(
                    "costs {ours:.0} cycles, the merged layout {theirs:.0}"
                ));
            }
            if size > before_size + cls {
                failures.push(format!("{size} bytes, the merged layout {before_size}"));
            }
            "current".to_string()
        }
    };
    let _ = merged_name;
    if let Some(why) = merged_miss {
        if failures.len() == before_merged {
            failures.push(format!(
                "known miss against the merged layout now met ({why}): drop expect_miss_merged"
            ));
        } else {
            failures.truncate(before_merged);
        }
    }
    Outcome { name, failures }
}

/// One model, every answer derived from it: `diagnose`'s line costs are the cycles `predict`
/// prices the current layout's lines at (false and true sharing, queueing included), and its
/// adjacent-pair finding is `predict`'s pair term, on the same evidence and machine. Where the
/// evidence puts instances elsewhere than at a line's start, `diagnose`'s lines are the type's
/// (line-aligned instances) and its `instances` say what they cost as the instances are:
/// that is `predict`'s figure, and the lines sum to its line-aligned one.
fn check_one_model(common_args: &[String], failures: &mut Vec<String>) {
    let run = |command: &str| {
        let mut args: Vec<String> = vec![command.into()];
        args.extend(common_args.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        lineup_json(&refs)
    };
    let (d, p) = (run("diagnose"), run("predict"));
    let lines: f64 = d["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["cost"].as_f64().unwrap())
        .sum();
    let pairs: f64 = d["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter(|f| f["verdict"] == "adjacent_pair")
                .map(|f| f["cycles"].as_f64().unwrap())
                .sum()
        })
        .unwrap_or(0.0);
    let current = p["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"] == "current")
        .expect("predict prices the current layout");
    let cost = |k: &str| current["cost"][k].as_f64().unwrap_or(0.0);
    let priced = cost("false_cycles") + cost("true_cycles");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    let lines = match d.get("instances") {
        Some(i) => {
            let aligned = i["cycles_aligned"].as_f64().unwrap();
            if !close(lines, aligned) {
                failures.push(format!(
                    "one model: diagnose's lines cost {lines:.1} cycles, its line-aligned instances {aligned:.1}"
                ));
            }
            i["cycles_as_allocated"].as_f64().unwrap()
        }
        None => lines,
    };
    if !close(lines, priced) {
        failures.push(format!(
            "one model: diagnose's lines cost {lines:.1} cycles, predict prices them at {priced:.1}"
        ));
    }
    if pairs > 0.0 && !close(pairs, cost("pair_cycles")) {
        failures.push(format!(
            "one model: diagnose's adjacent pairs cost {pairs:.1} cycles, predict's pair term {:.1}",
            cost("pair_cycles")
        ));
    }
}

/// Verdicts that a layout change (moving, aligning, padding) can fix.
const FIXABLE: [&str; 5] = [
    "false_sharing",
    "adjacent_pair",
    "locality",
    "misaligned",
    "read_mostly_next_to_write_hot",
];

/// Whether a member name lineup shows (`mask`, `hits[3]`, `lock.rlock`) is the member the
/// engineers name (or lies inside it, or holds it).
fn names_member(shown: &str, wanted: &str) -> bool {
    let inside = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{b}.")) || a.starts_with(&format!("{b}["))
    };
    inside(shown, wanted) || inside(wanted, shown)
}

/// The engineers' diagnosis (`[[diagnosis]]`: `members`, `verdict`, optional `paths`) against
/// `lineup diagnose --json` on the case's evidence and machine: some line or finding of that
/// verdict names every member (and path); `nothing_to_fix`: no line or finding that touches
/// them has a verdict a layout change fixes. `layout = "merged"`: the engineers diagnosed the
/// merged layout (a negative case's regression), judged with `diagnose --layout merged.h`.
/// `expect_miss = "why"` marks a known miss.
fn check_diagnosis(
    name: &str,
    case: &toml::Table,
    common_args: &[String],
    dir: &Path,
    failures: &mut Vec<String>,
) {
    let Some(entries) = case.get("diagnosis").and_then(|v| v.as_array()) else {
        return;
    };
    for e in entries {
        let on = match e.get("layout").and_then(|v| v.as_str()) {
            Some("merged") => {
                let m = case.get("merged").and_then(|v| v.as_str());
                let m = m.unwrap_or_else(|| panic!("{name}: layout = \"merged\" needs merged"));
                Some(dir.join(m).display().to_string())
            }
            Some(other) => panic!("{name}: unknown diagnosis layout {other:?}"),
            None => None,
        };
        check_one_diagnosis(e, on.as_deref(), common_args, failures);
    }
}

/// One `[[diagnosis]]` entry of [`check_diagnosis`], on the layout before or on `layout`.
fn check_one_diagnosis(
    e: &toml::Value,
    layout: Option<&str>,
    common_args: &[String],
    failures: &mut Vec<String>,
) {
    let mut args: Vec<String> = vec!["diagnose".into()];
    args.extend(common_args.iter().cloned());
    if let Some(l) = layout {
        args.extend(["--layout".into(), l.to_string()]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let d = lineup_json(&refs);
    // (verdict, members, paths) of every line and finding.
    let mut seen: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for l in d["lines"].as_array().unwrap() {
        let members: Vec<String> = l["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        let paths: Vec<String> = l["members"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["functions"].as_array().unwrap().iter())
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect();
        seen.push((l["verdict"].as_str().unwrap().to_string(), members, paths));
    }
    for f in d["findings"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let list = |k: &str| -> Vec<String> {
            f[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        };
        seen.push((
            f["verdict"].as_str().unwrap().to_string(),
            list("members"),
            list("paths"),
        ));
    }
    {
        let want = e["verdict"].as_str().unwrap();
        let members: Vec<&str> = e["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let paths: Vec<&str> = e
            .get("paths")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|x| x.as_str().unwrap()).collect())
            .unwrap_or_default();
        let has = |shown: &[String], m: &str| shown.iter().any(|n| names_member(n, m));
        let met = if want == "nothing_to_fix" {
            !seen.iter().any(|(v, ms, _)| {
                FIXABLE.contains(&v.as_str()) && members.iter().any(|m| has(ms, m))
            })
        } else {
            seen.iter().any(|(v, ms, ps)| {
                v == want
                    && members.iter().all(|m| has(ms, m))
                    && paths.iter().all(|p| ps.iter().any(|x| x == p))
            })
        };
        let got: Vec<String> = seen
            .iter()
            .filter(|(_, ms, _)| members.iter().any(|m| has(ms, m)))
            .map(|(v, ms, _)| format!("{v} {ms:?}"))
            .collect();
        match (met, e.get("expect_miss").and_then(|v| v.as_str())) {
            (true, Some(why)) => failures.push(format!(
                "diagnosis {want} {members:?} now met ({why}): drop expect_miss"
            )),
            (false, None) => failures.push(format!(
                "diagnosis: the engineers say {want} {members:?}; lineup: {}",
                if got.is_empty() {
                    "nothing on those members".to_string()
                } else {
                    got.join(", ")
                }
            )),
            _ => {}
        }
    }
}

/// A negative case's `expect`: `no_change` (lineup's plan keeps every member where it is and
/// the size) or `predict_loss` (`predict` prices `merged.h` no better than the layout before).
fn check_expect(
    name: &str,
    case: &toml::Table,
    o: &serde_json::Value,
    common_args: &[String],
    dir: &Path,
    failures: &mut Vec<String>,
) {
    let expect = case
        .get("expect")
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("{name}: a negative case needs expect"));
    match expect {
        "no_change" => {
            let units = o["units"].as_array().unwrap();
            let offsets = o["plan"]["placement"]["offsets"].as_array().unwrap();
            let moved: Vec<&str> = units
                .iter()
                .zip(offsets)
                .filter(|(u, off)| u["offset"].as_u64() != off.as_u64())
                .map(|(u, _)| u["name"].as_str().unwrap())
                .collect();
            let (size, before) = (
                o["plan"]["placement"]["size"].as_u64().unwrap(),
                o["current"]["size"].as_u64().unwrap(),
            );
            if !moved.is_empty() || size != before {
                failures.push(format!(
                    "expect no_change: lineup moves {} member(s) ({}), {before} -> {size} bytes",
                    moved.len(),
                    moved.iter().take(6).copied().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        "predict_loss" => {
            let m = case
                .get("merged")
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| panic!("{name}: predict_loss needs merged"));
            let mut args: Vec<String> = vec!["predict".into()];
            args.extend(common_args.iter().cloned());
            args.extend(["--layout".into(), dir.join(m).display().to_string()]);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let t = predicted_totals(&lineup_json(&refs));
            let get = |n: &str| t.iter().find(|x| x.0 == n).map(|x| x.1).unwrap();
            let (before, theirs) = (get("current"), get(m));
            if theirs < before * (1.0 - 1e-9) - 1e-9 {
                failures.push(format!(
                    "expect predict_loss: {m} priced {theirs:.0} cycles, better than the layout before ({before:.0})"
                ));
            }
        }
        other => panic!("{name}: unknown expect {other:?}"),
    }
}

#[test]
fn every_case_meets_its_constraints_and_the_merged_layouts_cost_and_size() {
    let all = cases();
    assert!(all.len() >= 10, "{} cases", all.len());
    let outcomes: Vec<Outcome> = all.iter().map(|d| check(d)).collect();
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.failures.is_empty())
        .map(|o| format!("{}: {}", o.name, o.failures.join("; ")))
        .collect();
    assert!(failed.is_empty(), "\n{}", failed.join("\n"));
}

#[test]
fn a_case_that_breaks_a_constraint_is_caught() {
    // The checker itself: a case whose constraint the layout cannot meet must fail.
    let dir = std::env::temp_dir().join(format!("lineup-cases-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = repo().join("tests/cases/longadder_cells");
    for f in ["before.c", "sketch.toml"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("case.toml"),
        "type = \"cells\"\nbefore = \"before.c\"\nmachine = \"icelake-2s\"\nsketch = \"sketch.toml\"\n[[constraint]]\nwithin = [\"cell0\", \"cell1\", \"cell2\", \"cell3\"]\nlines = 1\n[[constraint]]\nmax_growth = 0\n",
    )
    .unwrap();
    let o = check(&dir);
    assert!(
        o.failures.iter().any(|f| f.starts_with("within 1 lines")),
        "{:?}",
        o.failures
    );
    assert!(
        o.failures.iter().any(|f| f.starts_with("growth 48 ->")),
        "{:?}",
        o.failures
    );
}
