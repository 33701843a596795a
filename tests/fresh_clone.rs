//! What a newcomer gets from a clone (issue 26): the repository cloned into an empty temporary
//! directory (no `../shared`, nothing beside it) holds the README's test command and builds
//! there; no test source or script refers to a path outside the clone; the tour says what
//! each step measured; every measured figure of the READMEs comes from
//! bench/readme_numbers.sh. (The full suite and the tour on a fresh Debian 12 root:
//! scripts/fresh_check.sh, which needs root and half an hour, so CI does not run it.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (is git installed? scripts/test.sh installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh clone of the repository's HEAD, alone in a new directory.
fn clone() -> PathBuf {
    let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fresh-clone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&parent);
    std::fs::create_dir_all(&parent).unwrap();
    let dir = parent.join("lineup");
    run(Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(common::repo())
        .arg(&dir));
    dir
}

/// The files the README's two commands run: test sources, scripts, the seeds' run.sh, CI.
/// (bench/ is left out: a benchmark may be pointed at a corpus kept beside the clone, as
/// bench/perf_data_counts.sh is, by default, at ../shared/corpus/perf-data.)
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if ![
                    ".git",
                    "target",
                    "tests/data",
                    "tests/golden",
                    "data",
                    "fuzz/corpus",
                ]
                .contains(&rel.as_str())
                {
                    stack.push(p);
                }
                continue;
            }
            let runs = (rel.starts_with("tests/") && rel.ends_with(".rs"))
                || rel.starts_with("scripts/")
                || rel.starts_with(".ci/")
                || (rel.starts_with("examples/") && rel.ends_with(".sh"));
            if runs {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every place in `text` (a file at `rel`, depth = its number of directories) that reaches
/// outside the repository.
fn outside_refs(rel: &str, text: &str) -> Vec<String> {
    let depth = rel.matches('/').count();
    let forbidden = Regex::new(
        r#"(\.\./)+shared\b|/work/|(repo|root)\(\)\s*\.parent\(\)|CARGO_MANIFEST_DIR"\)\)?\s*\.parent\(\)|join\("\.\.(/|")"#,
    )
    .unwrap();
    // `$(dirname "$0")/../..`: at most as many steps up as the script is deep.
    let ups = Regex::new(r#"dirname "(\$0|\$\{BASH_SOURCE\[0\]\})"\)(/\.\.)+"#).unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        // Comments may say what is not there (`a clone has no ../shared`).
        let code = line.trim_start();
        if code.starts_with("//") || code.starts_with('#') {
            continue;
        }
        if let Some(m) = forbidden.find(line) {
            out.push(format!("{rel}:{}: {}", i + 1, m.as_str()));
        }
        for m in ups.find_iter(line) {
            let n = m.as_str().matches("/..").count();
            if n > depth {
                out.push(format!(
                    "{rel}:{}: {} goes {n} up from a file {depth} deep",
                    i + 1,
                    m.as_str()
                ));
            }
        }
    }
    out
}

#[test]
fn the_outside_check_sees_what_it_must() {
    assert!(!outside_refs("tests/x.rs", "let p = \"../shared/seeds/000.txt\";").is_empty());
    assert!(outside_refs("tests/x.rs", "    // a clone has no ../shared").is_empty());
    assert!(!outside_refs("tests/x.rs", "common::repo().parent().unwrap()").is_empty());
    assert!(!outside_refs("tests/x.rs", "repo().join(\"..\").join(\"x\")").is_empty());
    assert!(!outside_refs("scripts/x.sh", "cd \"$(dirname \"$0\")/../..\"").is_empty());
    assert!(outside_refs("scripts/x.sh", "cd \"$(dirname \"$0\")/..\"").is_empty());
    assert!(
        outside_refs(
            "examples/seeds/000/run.sh",
            "cd \"$(dirname \"$0\")/../../..\""
        )
        .is_empty()
    );
}

#[test]
fn a_fresh_clone_has_the_test_command_refers_to_nothing_outside_and_builds() {
    let dir = clone();
    assert!(
        !dir.join("../shared").exists(),
        "the clone has nothing beside it"
    );

    // The README's test command is there and is a valid script.
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let test_section = &readme[readme.find("## Test").expect("a Test section")..];
    let command = test_section
        .lines()
        .skip_while(|l| !l.starts_with("```sh"))
        .nth(1)
        .expect("a command under Test");
    assert_eq!(command.trim(), "bash scripts/test.sh");
    // Both commands install what they lack through one script, which holds cargo to the
    // rust-version Cargo.toml declares (an older cargo fails on edition 2024 unhelpfully).
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        Regex::new(r#"(?m)^rust-version = "1\.\d+""#)
            .unwrap()
            .is_match(&manifest),
        "Cargo.toml declares rust-version"
    );
    for (script, what) in [
        ("scripts/test.sh", ". scripts/setup.sh test"),
        ("examples/seeds/000/run.sh", ". scripts/setup.sh tour"),
        ("scripts/setup.sh", "rust-version"),
    ] {
        let text = std::fs::read_to_string(dir.join(script)).unwrap();
        assert!(text.contains(what), "{script} has {what:?}");
    }
    for script in ["scripts/test.sh", "scripts/setup.sh", "examples/tour.sh"] {
        run(Command::new("bash").arg("-n").arg(dir.join(script)));
    }

    // Nothing that runs refers to a path outside the clone.
    let files = sources(&dir);
    assert!(
        files.len() > 40,
        "the walk found the test sources: {}",
        files.len()
    );
    let mut refs = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        if rel == "tests/fresh_clone.rs" {
            continue; // this file spells out what it forbids
        }
        refs.extend(outside_refs(&rel, &text));
    }
    assert!(refs.is_empty(), "paths outside the repository: {refs:#?}");

    // It builds there (checked, not compiled to code: CI builds the real thing once). The
    // target directory is kept between runs, so only the first run pays for the dependencies.
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fresh-clone-target");
    run(Command::new(env!("CARGO"))
        .args([
            "check",
            "--quiet",
            "--locked",
            "--offline",
            "--lib",
            "--bins",
        ])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&dir));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn every_step_of_the_tour_says_what_was_measured_modeled_and_how_sure() {
    let script = std::fs::read_to_string(common::repo().join("examples/seeds/000/run.sh")).unwrap();
    let steps: Vec<&str> = script.split("\nstep \"").skip(1).collect();
    assert!(steps.len() >= 5, "the tour's steps: {}", steps.len());
    for s in steps {
        let title = s.lines().next().unwrap();
        let means: Vec<&str> = s
            .lines()
            .filter(|l| l.trim_start().starts_with("means \""))
            .collect();
        assert_eq!(means.len(), 1, "step {title}: one `means` line");
        let m = means[0];
        assert!(
            m.contains("measured"),
            "step {title}: what was measured: {m}"
        );
        assert!(
            m.contains("modeled"),
            "step {title}: what was modeled (or that nothing was): {m}"
        );
        let sure = m.contains("sure") || m.contains("nothing ran") || m.contains("a sample");
        assert!(sure, "step {title}: how sure: {m}");
    }
}

#[test]
fn measured_figures_in_the_readmes_come_from_readme_numbers() {
    let root = common::repo();
    let figures = std::fs::read_to_string(root.join("bench/readme_figures.py")).unwrap();
    let numbers = std::fs::read_to_string(root.join("bench/readme_numbers.sh")).unwrap();
    assert!(numbers.contains("bench/readme_figures.py"));
    let mut readmes = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("examples/seeds")).unwrap() {
        let p = e.unwrap().path().join("README.md");
        if p.exists() {
            readmes.push(p);
        }
    }
    let block = Regex::new(r"(?s)<!-- figures: ([\w:-]+) -->\n(.*?)<!-- /figures -->").unwrap();
    // A dated measurement written by hand: "Measured 2026-11-24", "measured on 2026-11-23".
    let by_hand = Regex::new(r"(?i)\b(measured|run)\b[^.\n]{0,40}\b20\d\d-\d\d-\d\d").unwrap();
    let mut keys = 0;
    for path in &readmes {
        let text = std::fs::read_to_string(path).unwrap();
        for c in block.captures_iter(&text) {
            keys += 1;
            let (key, body) = (&c[1], &c[2]);
            assert!(
                figures.contains(&format!("\"{key}\"")),
                "{}: block {key} is not one bench/readme_figures.py makes",
                path.display()
            );
            assert!(
                body.contains("measured by bash bench/readme_numbers.sh")
                    && body.contains(" repeats "),
                "{}: block {key} is empty or not from readme_numbers.sh: run `bash bench/readme_numbers.sh --write`",
                path.display()
            );
        }
        let outside = block.replace_all(&text, "");
        let hand: Vec<&str> = by_hand.find_iter(&outside).map(|m| m.as_str()).collect();
        assert!(
            hand.is_empty(),
            "{}: dated measurements outside a figures block: {hand:?}",
            path.display()
        );
    }
    assert!(keys >= 10, "the READMEs' figures blocks: {keys}");
}
