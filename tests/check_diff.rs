//! `lineup check` (layout contracts) and `lineup diff` (two layouts side by side), on real
//! BTF (the bundled 6.18 kernel's and this machine's running kernel's) and on DWARF that gcc
//! writes for a struct before and after an edit. The compiler is the oracle for the emitted
//! static asserts: they must compile where `check` passes and fail where it reports.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{lineup, repo};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-check-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The seed 000 contract: the fix keeps load_avg (stored by update_load_avg on every CPU) off
/// the line that set_task_cpu reads rt_se/rt_rq from.
const TASK_GROUP_CONTRACT: &str = r#"
schema = 1
type = "task_group"
cacheline_size = 64
max_size = 704
[[separate]]
members = ["load_avg", "rt_se", "rt_rq"]
why = "seed 000: load_avg is stored by update_load_avg on every CPU"
[[alone]]
member = "load_avg"
"#;

/// The line of `member` in `btf`'s task_group, from `lineup layout --json`.
fn line_of(btf: &str, member: &str) -> u64 {
    let v = common::lineup_json(&["layout", "--btf", btf, "task_group", "--json"]);
    let members = v["types"][0]["members"].as_array().unwrap();
    let m = members.iter().find(|m| m["name"] == member).unwrap();
    m["cacheline"].as_u64().unwrap()
}

#[test]
fn check_task_group_on_two_real_btfs() {
    let dir = tempdir("tg");
    let contract = dir.join("task_group.contract.toml");
    std::fs::write(&contract, TASK_GROUP_CONTRACT).unwrap();
    let running = "/sys/kernel/btf/vmlinux";
    assert!(
        Path::new(running).exists(),
        "this test reads the running kernel's BTF; the machine has none"
    );
    let bundled = repo().join("data/vmlinux-6.18.44.btf");
    for btf in [bundled.to_str().unwrap(), running] {
        let out = lineup(&["check", "--btf", btf, contract.to_str().unwrap()]);
        let (stdout, stderr) = text(&out);
        // What the layout says decides what check must say.
        let (la, ls) = (line_of(btf, "load_avg"), line_of(btf, "rt_se"));
        if la == ls {
            assert_eq!(out.status.code(), Some(1), "{btf}: {stdout}{stderr}");
            let line = stdout
                .lines()
                .find(|l| l.contains("load_avg") && l.contains("rt_se") && l.contains("share"))
                .unwrap_or_else(|| panic!("{btf}: no load_avg/rt_se violation in {stdout}"));
            assert!(line.contains(&format!("line {la}")), "{line}");
            assert!(
                stdout
                    .lines()
                    .any(|l| l.contains("load_avg") && l.contains("alone")),
                "{stdout}"
            );
            assert!(stderr.contains("violation"), "{stderr}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{btf}: {stdout}{stderr}");
        }
        // The same verdict as data.
        let out = lineup(&["check", "--btf", btf, contract.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["ok"].as_bool().unwrap(), la != ls);
        assert_eq!(v["size"], 704);
    }
    // The bundled 6.18 kernel still has the layout seed 000 complains about.
    assert_eq!(
        line_of(bundled.to_str().unwrap(), "load_avg"),
        line_of(bundled.to_str().unwrap(), "rt_se")
    );
}

const STATS_BEFORE: &str = r#"
struct stats {
    long hits;                  /* written by every worker */
    char pad0[56];
    long misses;                /* written by the refill path */
    int nr_shards;              /* read on every lookup */
    int shift;
    void *table;
    unsigned long mask;
};
struct stats the_stats;
"#;

/// An edit that a later developer makes: a name buffer before the lookup fields pushes them
/// across a line boundary and `misses` onto the line of the read-mostly fields.
const STATS_AFTER: &str = r#"
struct stats {
    long hits;                  /* written by every worker */
    char pad0[56];
    char name[40];
    long misses;                /* written by the refill path */
    int nr_shards;              /* read on every lookup */
    int shift;
    void *table;
    unsigned long mask;
};
struct stats the_stats;
"#;

const STATS_CONTRACT: &str = r#"
schema = 1
type = "stats"
max_size = 128
[[separate]]
members = ["hits", "misses"]
[[group]]
name = "lookup"
members = ["nr_shards", "shift", "table", "mask"]
max_lines = 1
"#;

fn cc(dir: &Path, name: &str, src: &str) -> std::process::Output {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(dir.join(format!("{name}.o")))
        .arg(&c)
        .output()
        .expect("cc")
}

#[test]
fn check_dwarf_before_and_after_an_edit_and_its_static_asserts() {
    let dir = tempdir("dwarf");
    let contract = dir.join("stats.toml");
    std::fs::write(&contract, STATS_CONTRACT).unwrap();
    for (name, src) in [("before", STATS_BEFORE), ("after", STATS_AFTER)] {
        assert!(cc(&dir, name, src).status.success());
    }
    let obj = |n: &str| dir.join(format!("{n}.o")).to_str().unwrap().to_string();
    let c = contract.to_str().unwrap();
    let out = lineup(&["check", "--dwarf", &obj("before"), c]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert!(text(&out).0.contains("keeps the contract"));

    let out = lineup(&["check", "--dwarf", &obj("after"), c]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // hits at 0..8 (line 0); misses at 104 (line 1); the lookup fields at 112..136: lines 1-2;
    // the struct grew to 136 bytes. One line per violation, naming members and lines.
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("/*")).collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("136 bytes") && l.contains("128")),
        "{stdout}"
    );
    let g = lines.iter().find(|l| l.contains("group 'lookup'")).unwrap();
    assert!(g.contains("spans 2 cache lines (1-2)"), "{g}");
    assert!(
        g.contains("mask (line 2)") && g.contains("nr_shards (line 1)"),
        "{g}"
    );

    // The contract as C11 static asserts, appended to each source: the compiler agrees.
    let out = lineup(&["check", c, "--asserts", "user"]);
    assert!(out.status.success());
    let asserts = text(&out).0;
    assert!(asserts.contains("_Static_assert(sizeof(struct stats) <= 128"));
    let ok = cc(
        &dir,
        "before_asserts",
        &format!("{STATS_BEFORE}\n{asserts}"),
    );
    assert!(ok.status.success(), "{}", text(&ok).1);
    let bad = cc(&dir, "after_asserts", &format!("{STATS_AFTER}\n{asserts}"));
    assert!(!bad.status.success());
    let err = text(&bad).1;
    assert!(err.contains("grew past 128 bytes"), "{err}");
    assert!(err.contains("group lookup"), "{err}");
    assert!(!err.contains("hits and misses share"), "{err}");

    // Kernel flavour uses the kernel's own helpers.
    let out = lineup(&["check", c, "--asserts", "kernel"]);
    let k = text(&out).0;
    assert!(
        k.contains("static_assert(") && k.contains("sizeof_field(struct stats, mask)"),
        "{k}"
    );
}

#[test]
fn check_refuses_bad_contracts_naming_the_file() {
    let dir = tempdir("bad");
    let p = dir.join("c.toml");
    std::fs::write(
        &p,
        "schema = 1\ntype = \"task_group\"\n[[separate]]\nmembers = [\"a\"]\n",
    )
    .unwrap();
    let out = lineup(&[
        "check",
        "--btf",
        "data/vmlinux-6.18.44.btf",
        p.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("c.toml") && stderr.contains("separate #1"),
        "{stderr}"
    );
    // A member the build lacks is a violation, not a pass.
    std::fs::write(
        &p,
        "schema = 1\ntype = \"task_group\"\n[[separate]]\nmembers = [\"load_avg\", \"no_such\"]\n",
    )
    .unwrap();
    let out = lineup(&[
        "check",
        "--btf",
        "data/vmlinux-6.18.44.btf",
        p.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).0.contains("'no_such'"));
}

#[test]
fn diff_fixture_against_the_seed_fix_header() {
    // seed 000's patch moved rt_se/rt_rq/rt_bandwidth after the list members: load_avg keeps
    // line 4, rt_se leaves it, and the size stays 704 (the seed's own figures).
    let out = lineup(&[
        "diff",
        "--type",
        "task_group",
        "data/vmlinux-6.18.44.btf",
        "examples/seeds/000/seed_fix.h",
        "--json",
    ]);
    // The layouts differ: exit 1, as diff(1) and codiff.
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(
        (v["old_size"].as_u64(), v["new_size"].as_u64()),
        (Some(704), Some(704))
    );
    let member = |n: &str| {
        v["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(member("load_avg")["change"], "same");
    let rt_se = member("rt_se");
    assert_eq!(rt_se["change"], "changed_line");
    assert_eq!(rt_se["old"]["first_line"], 4);
    assert_ne!(rt_se["new"]["first_line"], 4);
    let line4 = v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == 4)
        .unwrap();
    assert!(
        line4["old_members"]
            .as_array()
            .unwrap()
            .contains(&"rt_se".into())
    );
    assert!(
        !line4["new_members"]
            .as_array()
            .unwrap()
            .contains(&"rt_se".into())
    );
    assert!(
        text(&lineup(&[
            "diff",
            "-C",
            "task_group",
            "data/vmlinux-6.18.44.btf",
            "examples/seeds/000/seed_fix.h"
        ]))
        .0
        .contains("line   4: + rcu")
    );
}

#[test]
fn diff_two_dwarf_builds_names_added_members_lines_and_holes() {
    let dir = tempdir("diff");
    for (name, src) in [("before", STATS_BEFORE), ("after", STATS_AFTER)] {
        assert!(cc(&dir, name, src).status.success());
    }
    let o = |n: &str| dir.join(format!("{n}.o")).to_str().unwrap().to_string();
    let out = lineup(&["diff", "-C", "stats", &o("before"), &o("after")]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("size: 96 -> 136 (+40), cachelines: 2 -> 3 (+1)"),
        "{stdout}"
    );
    let row = |n: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no row for {n}: {stdout}"))
            .to_string()
    };
    assert!(row("name").contains("added"));
    assert!(row("misses").contains("64 -> 104") && row("misses").contains("moved within its line"));
    assert!(
        row("mask").contains("changed line") && row("mask").contains("1 -> 2"),
        "{}",
        row("mask")
    );
    assert!(
        !stdout.contains("\thits "),
        "unchanged members are not listed: {stdout}"
    );
    // The same struct compared with itself, as pahole text against the build.
    let txt = dir.join("before.txt");
    let l = lineup(&["layout", "--dwarf", &o("before"), "stats"]);
    std::fs::write(&txt, &l.stdout).unwrap();
    let out = lineup(&["diff", "-C", "stats", txt.to_str().unwrap(), &o("before")]);
    assert!(text(&out).0.contains("identical"), "{:?}", text(&out));
    assert_eq!(out.status.code(), Some(0), "the same layout: exit 0");
}

/// `optimize --contract` writes the guard for its own layout; the seed's merged fix keeps it
/// and the kernel's current layout breaks it (seed 000's replica, compiled by gcc with the
/// kernel's offsets for `task_group` and the seed's patch as `task_group_seed`).
#[test]
fn optimize_writes_a_contract_that_the_seed_fix_keeps_and_the_current_layout_breaks() {
    let dir = tempdir("optc");
    let contract = dir.join("tg.toml");
    let out = lineup(&[
        "optimize",
        "--type",
        "task_group",
        "--btf",
        "data/vmlinux-6.18.44.btf",
        "--c2c",
        "tests/data/c2c/seed000_paste.txt",
        "--machine",
        "icelake-2s",
        "--contract",
        contract.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    let toml = std::fs::read_to_string(&contract).unwrap();
    let c = lineup::analysis::contract::Contract::from_toml(&toml).expect("a valid contract");
    assert_eq!(c.max_size, Some(704));
    assert!(
        c.separate
            .iter()
            .any(|r| r.members.contains(&"load_avg".to_string())
                && r.members.contains(&"rt_se".to_string())),
        "{toml}"
    );
    // The current layout breaks it, on the bundled BTF.
    let out = lineup(&[
        "check",
        "--btf",
        "data/vmlinux-6.18.44.btf",
        contract.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    // The replica: current layout and the seed's fix, compiled.
    let obj = dir.join("tg.o");
    let cc = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&obj)
        .arg(repo().join("examples/seeds/000/task_group.c"))
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    for (ty, keeps) in [("task_group", false), ("task_group_seed", true)] {
        let renamed = dir.join(format!("{ty}.toml"));
        std::fs::write(
            &renamed,
            toml.replace("type = \"task_group\"", &format!("type = \"{ty}\"")),
        )
        .unwrap();
        let out = lineup(&[
            "check",
            "--dwarf",
            obj.to_str().unwrap(),
            renamed.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(if keeps { 0 } else { 1 }),
            "{ty}: {:?}",
            text(&out)
        );
    }
}
