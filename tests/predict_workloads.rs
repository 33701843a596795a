//! `predict` under several evidence sets (issue 24 item 10): every layout priced under each
//! workload by the one model `predict` builds from that evidence alone, and a layout that helps
//! one workload and hurts another named. Commands that read one evidence set refuse a second;
//! a trailing array the allocation extends stays last in lineup's layout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A scratch directory of its own for each test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("predict-workloads-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lineup(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("lineup runs")
}

fn json_of(dir: &Path, args: &[&str]) -> Value {
    let out = lineup(dir, args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lineup {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("lineup {args:?}: not JSON: {e}"))
}

fn compile(dir: &Path, source: &str) {
    std::fs::write(dir.join("s.c"), source).unwrap();
    let cc = Command::new("cc")
        .args(["-g", "-c", "s.c", "-o", "s.o"])
        .current_dir(dir)
        .status()
        .expect("cc");
    assert!(cc.success());
}

/// A sketch of struct `ty`: each access `(field, kind, path, cpus)` at weight 100.
fn sketch(ty: &str, accesses: &[(&str, &str, &str, &str)]) -> String {
    let mut s = format!(
        "[sketch]\ntitle = \"test\"\n[machine]\ncpus = 8\nnuma_nodes = 1\ncacheline_size = 64\n[[type]]\nname = \"{ty}\"\n"
    );
    for (field, kind, by, cpus) in accesses {
        s.push_str(&format!(
            "[[type.access]]\nfield = \"{field}\"\nkind = \"{kind}\"\nby = \"{by}\"\nweight = 100\ncpus = [{cpus}]\n"
        ));
    }
    s
}

/// struct two and two workloads: in `writers.toml` two paths on two CPUs write a and b (false
/// sharing, which a pad between them removes); in `readers.toml` one path reads a and b
/// together on two CPUs while another updates both (the pad puts them on two lines, each of
/// which then moves). `pad.h` is that pad.
fn two_workloads(dir: &Path) {
    compile(
        dir,
        "struct two { long a; long b; long c; };\nstruct two x;\n",
    );
    std::fs::write(
        dir.join("pad.h"),
        "struct two { long a; char pad[56]; long b; long c; };\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("writers.toml"),
        sketch("two", &[("a", "store", "f", "0"), ("b", "store", "g", "1")]),
    )
    .unwrap();
    std::fs::write(
        dir.join("readers.toml"),
        sketch(
            "two",
            &[
                ("a", "load", "h", "2, 3"),
                ("b", "load", "h", "2, 3"),
                ("a", "store", "k", "4"),
                ("b", "store", "k", "4"),
            ],
        ),
    )
    .unwrap();
}

const COMMON: [&str; 7] = [
    "predict",
    "--type",
    "two",
    "--dwarf",
    "s.o",
    "--machine",
    "icelake-2s",
];

fn row<'a>(rows: &'a Value, name: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["layout"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {rows}"))
}

#[test]
fn two_workloads_name_the_tradeoff_and_price_each_as_predict_alone() {
    let dir = scratch("tradeoff");
    let d = dir.as_path();
    two_workloads(d);
    let mut args = COMMON.to_vec();
    args.extend([
        "--sketch",
        "writers.toml",
        "--sketch",
        "readers.toml",
        "--layout",
        "pad.h",
        "--json",
    ]);
    let both = json_of(d, &args);
    let labels: Vec<&str> = both["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["writers.toml", "readers.toml"]);
    assert_eq!(both["lineup_layouts"], "per_workload");

    // Each workload's column is what predict on that sketch alone prints: the same model, no
    // second truth. Current and the candidate under every workload; lineup's layout for a
    // workload under that workload.
    for (i, w) in labels.iter().enumerate() {
        let mut one = COMMON.to_vec();
        one.extend(["--sketch", w, "--layout", "pad.h", "--json"]);
        let alone = json_of(d, &one);
        for (multi_name, single_name) in [
            ("current", "current"),
            ("pad.h", "pad.h"),
            (&*format!("lineup for {w}"), "lineup"),
        ] {
            let m = &row(&both["layouts"], multi_name)["workloads"][i];
            let s = row(&alone["layouts"], single_name);
            assert_eq!(m["workload"], *w);
            assert_eq!(m["cost"], s["cost"], "{multi_name} under {w}");
            assert_eq!(
                m["total_cycles"], s["total_cycles"],
                "{multi_name} under {w}"
            );
            assert_eq!(m["change_pct"], s["change_pct"], "{multi_name} under {w}");
            assert_eq!(
                row(&both["layouts"], multi_name)["offsets"],
                s["offsets"],
                "{multi_name}: the layout priced is the one predict alone prices"
            );
        }
    }

    // The pad helps the writers and hurts the readers, and the output says so.
    let pad = row(&both["layouts"], "pad.h");
    let change = |i: usize| pad["workloads"][i]["change_pct"].as_f64().unwrap();
    assert!(change(0) < 0.0 && change(1) > 0.0, "{pad}");
    let t = both["tradeoffs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["layout"] == "pad.h")
        .unwrap_or_else(|| panic!("pad.h's trade-off is not named: {}", both["tradeoffs"]));
    assert_eq!(t["helps"][0]["workload"], "writers.toml", "{t}");
    assert_eq!(t["hurts"][0]["workload"], "readers.toml", "{t}");
    assert_eq!(t["helps"][0]["change_pct"].as_f64(), Some(change(0)));
    assert_eq!(t["hurts"][0]["change_pct"].as_f64(), Some(change(1)));
    // The current layout is no trade-off against itself.
    assert!(
        !both["tradeoffs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["layout"] == "current")
    );

    // The text: one column per workload, labelled modeled, and the trade-off in words with
    // the same figures.
    args.pop();
    let out = lineup(d, &args);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("writers.toml: modeled cycles"), "{text}");
    assert!(text.contains("readers.toml: modeled cycles"), "{text}");
    assert!(text.contains("searched per workload"), "{text}");
    let line = format!(
        "trade-off: pad.h helps writers.toml by {:.1} %, hurts readers.toml by {:.1} %",
        -change(0),
        change(1)
    );
    assert!(text.contains(&line), "no `{line}` in:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_same_evidence_twice_has_no_tradeoff() {
    // Two copies of one workload cannot disagree: every layout moves both the same way.
    let dir = scratch("same");
    let d = dir.as_path();
    two_workloads(d);
    std::fs::create_dir_all(d.join("again")).unwrap();
    std::fs::copy(d.join("writers.toml"), d.join("again/writers.toml")).unwrap();
    let mut args = COMMON.to_vec();
    args.extend([
        "--sketch",
        "writers.toml",
        "--sketch",
        "again/writers.toml",
        "--layout",
        "pad.h",
        "--json",
    ]);
    let v = json_of(d, &args);
    assert_eq!(
        v["tradeoffs"].as_array().unwrap().len(),
        0,
        "{}",
        v["tradeoffs"]
    );
    // Two files with one name are told apart by their paths.
    assert_eq!(v["workloads"][0]["label"], "writers.toml");
    assert_eq!(v["workloads"][1]["label"], "again/writers.toml");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn commands_that_read_one_evidence_set_refuse_two() {
    let dir = scratch("refuse");
    let d = dir.as_path();
    two_workloads(d);
    let import = lineup(d, &["import", "--sketch", "readers.toml", "-o", "r.json"]);
    assert!(import.status.success());
    for (cmd, second) in [
        ("diagnose", ["--sketch", "readers.toml"]),
        ("optimize", ["--sketch", "readers.toml"]),
        ("optimize", ["--profile", "r.json"]),
        ("replay", ["--sketch", "readers.toml"]),
    ] {
        let mut args = vec![
            cmd,
            "--type",
            "two",
            "--dwarf",
            "s.o",
            "--sketch",
            "writers.toml",
        ];
        args.extend(second);
        let out = lineup(d, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd} took two: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{cmd}: one line: {err}");
        assert!(err.contains("2 evidence sets"), "{cmd}: {err}");
        assert!(
            err.contains("writers.toml") && err.contains(second[1]),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let import = lineup(
        d,
        &[
            "import",
            "--sketch",
            "readers.toml",
            "--sketch",
            "writers.toml",
        ],
    );
    assert!(!import.status.success());
    assert!(String::from_utf8_lossy(&import.stderr).contains("2 evidence sets"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trailing_array_the_allocation_extends_stays_last() {
    // `buf[1]`, `buf[0]` and a flexible array member, written with `a` by one path while other
    // paths write c, h and d beside it: lineup moves members, never the trailing array.
    let dir = scratch("trailing");
    let d = dir.as_path();
    let body = "long a; long b[7]; long c; long d; long e; long f; long g; long h;";
    compile(
        d,
        &format!(
            "struct msg1 {{ {body} char buf[1]; }};\nstruct msg0 {{ {body} char buf[0]; }};\n\
             struct msgf {{ {body} char buf[]; }};\nstruct msg1 x1; struct msg0 x0; struct msgf xf;\n"
        ),
    );
    for ty in ["msg1", "msg0", "msgf"] {
        let file = format!("{ty}.toml");
        std::fs::write(
            d.join(&file),
            sketch(
                ty,
                &[
                    ("a", "store", "f", "0"),
                    ("buf", "store", "f", "0"),
                    ("c", "store", "g", "1"),
                    ("h", "store", "g", "1"),
                    ("d", "store", "k", "2"),
                ],
            ),
        )
        .unwrap();
        let ev = [
            "--type",
            ty,
            "--dwarf",
            "s.o",
            "--sketch",
            &file,
            "--machine",
            "icelake-2s",
            "--json",
        ];
        // optimize: a plan that moves members and keeps buf last.
        let v = json_of(d, &[&["optimize"][..], &ev[..]].concat());
        let units = v["units"].as_array().unwrap();
        let buf = units.iter().position(|u| u["name"] == "buf").unwrap();
        let order: Vec<u64> = v["plan"]["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_u64().unwrap())
            .collect();
        assert_eq!(order.last(), Some(&(buf as u64)), "{ty}: {order:?}");
        let declared: Vec<u64> = (0..units.len() as u64).collect();
        assert_ne!(order, declared, "{ty}: the plan moves something");
        let offsets = v["plan"]["placement"]["offsets"].as_array().unwrap();
        let max = offsets.iter().map(|o| o.as_u64().unwrap()).max().unwrap();
        assert_eq!(offsets[buf].as_u64(), Some(max), "{ty}: {offsets:?}");
        let decl = v["declaration"].to_string();
        assert!(decl.contains("buf["), "{ty}: {decl}");
        // predict: lineup's layout, priced, has buf last too.
        let p = json_of(d, &[&["predict"][..], &ev[..]].concat());
        let lineup = row(&p["layouts"], "lineup");
        let offs = lineup["offsets"].as_object().unwrap();
        let last = offs.values().map(|o| o.as_u64().unwrap()).max().unwrap();
        assert_eq!(offs["buf"].as_u64(), Some(last), "{ty}: {offs:?}");
        assert_ne!(
            lineup["offsets"],
            row(&p["layouts"], "current")["offsets"],
            "{ty}: lineup's layout moves something"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn optimize_does_not_abort_on_a_rule_it_derived() {
    // A lock and the data written under it are kept together by optimize's own rule; a member
    // other paths write lies between them. The derived group must not end the run with the
    // error an engineer's --together would get.
    let dir = scratch("derived");
    let d = dir.as_path();
    compile(
        d,
        "typedef struct { int locked; } spinlock_t;\nstruct guarded { spinlock_t lock; long other; long data; long more; };\nstruct guarded x;\n",
    );
    std::fs::write(
        d.join("g.toml"),
        sketch(
            "guarded",
            &[
                ("lock", "rmw", "f", "0, 1"),
                ("data", "store", "f", "0, 1"),
                ("other", "store", "g", "2"),
                ("more", "load", "h", "3"),
            ],
        ),
    )
    .unwrap();
    let out = lineup(
        d,
        &[
            "optimize",
            "--type",
            "guarded",
            "--dwarf",
            "s.o",
            "--sketch",
            "g.toml",
            "--machine",
            "icelake-2s",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "optimize aborted: {err}");
    assert!(!err.contains("--together"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
