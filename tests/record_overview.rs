//! The overview of a recording (issue 27 item 7): `lineup diagnose --profile REC.json`
//! without `--type` diagnoses every recorded object as `--type` would and ranks them by the
//! contention model's cost of their contended lines. `tests/data/record/overview.c` has one
//! contended object (`hits`, two threads' counters on one line) among quiet ones (a config
//! the workers only read, per-thread heap buffers, totals only main writes); it is built
//! -O2 with gcc and with clang and recorded here.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const SRC: &str = "tests/data/record/overview.c";

fn lineup(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", dir.join("cache"));
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The program built with `cc` and recorded: its profile.
fn recorded(cc: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("record-overview-{cc}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("overview");
    let o = lineup(&dir)
        .env("LINEUP_CC", cc)
        .args(["cc", "-O2", "-g", "-pthread", "-Wall"])
        .arg(common::repo().join(SRC))
        .arg("-o")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(o.status.success(), "{cc}: lineup cc: {}", text(&o.stderr));
    let profile = dir.join("overview.json");
    let o = lineup(&dir)
        .arg("record")
        .arg("-o")
        .arg(&profile)
        .arg("--")
        .arg(&prog)
        .arg("100000")
        .output()
        .unwrap();
    assert!(o.status.success(), "{cc}: record: {}", text(&o.stderr));
    (dir, profile)
}

#[test]
fn the_contended_object_ranks_first_and_the_quiet_ones_cost_nothing() {
    for cc in ["gcc", "clang"] {
        let (dir, profile) = recorded(cc);
        let o = lineup(&dir)
            .args(["diagnose", "--json", "--profile"])
            .arg(&profile)
            .output()
            .unwrap();
        assert!(o.status.success(), "{cc}: {}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let objects = v["objects"].as_array().unwrap();
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o["type_name"].as_str().unwrap())
            .collect();
        // Every object the program has, each once.
        for want in ["hits", "config", "totals"] {
            assert_eq!(
                names.iter().filter(|n| **n == want).count(),
                1,
                "{cc}: {names:?}"
            );
        }
        let private = objects
            .iter()
            .find(|o| o["type_name"].as_str().unwrap().starts_with("private@"))
            .unwrap_or_else(|| panic!("{cc}: no per-thread buffer in {names:?}"));
        assert_eq!(private["kind"], "heap array", "{cc}: {private:#}");
        assert_eq!(
            private["allocations"][0],
            format!("work at {}", site("calloc(64")),
            "{cc}: {private:#}"
        );

        let first = &objects[0];
        assert_eq!(first["type_name"], "hits", "{cc}: {v:#}");
        assert_eq!(first["verdict"], "false_sharing", "{cc}: {first:#}");
        assert_eq!(first["line"], 0, "{cc}: {first:#}");
        let members: Vec<&str> = first["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(
            members.contains(&"left") && members.contains(&"right"),
            "{cc}: {members:?}"
        );
        let top = first["cost"].as_f64().unwrap();
        assert!(top > 0.0, "{cc}: {first:#}");
        for o in &objects[1..] {
            let cost = o["cost"].as_f64().unwrap();
            assert!(cost < top, "{cc}: {o:#} not below hits");
            assert_eq!(cost, 0.0, "{cc}: a quiet object priced: {o:#}");
            assert_eq!(o["contended_lines"], 0, "{cc}: {o:#}");
        }

        // The text: the same order, the verdict and cost beside each.
        let o = lineup(&dir)
            .args(["diagnose", "--profile"])
            .arg(&profile)
            .output()
            .unwrap();
        assert!(o.status.success(), "{cc}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        let ranked: Vec<&str> = out
            .lines()
            .filter(|l| {
                l.trim_start()
                    .split('.')
                    .next()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .collect();
        assert_eq!(ranked.len(), objects.len(), "{cc}: {out}");
        assert!(
            ranked[0]
                .trim_start()
                .starts_with("1. hits (struct): false sharing, cost "),
            "{cc}: {out}"
        );
        for (line, name) in ranked.iter().zip(&names) {
            assert!(
                line.contains(&format!(". {name} (")),
                "{cc}: {line} for {name}"
            );
        }
    }
}

/// `file.c:N` of the line of the program holding `needle`.
fn site(needle: &str) -> String {
    let body = std::fs::read_to_string(common::repo().join(SRC)).unwrap();
    let n = body
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in {SRC}"))
        + 1;
    format!("overview.c:{n}")
}
