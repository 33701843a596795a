//! Rows on a union's alternatives (issue 25 item 6): an access is named after the
//! alternative its instruction's width says, and after every alternative when nothing says.

use std::path::{Path, PathBuf};
use std::process::Command;

use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile};

/// `vlag` and `vprot` share bytes 8..15 (an anonymous union, as in the kernel's
/// `vm_area_struct`); each function reads one of them.
const VMA: &str = r#"
struct vma { long start; union { int vlag; long vprot; }; long flags; long pad[5]; };
int get_vlag(struct vma *p) { return p->vlag; }
long get_vprot(struct vma *p) { return p->vprot; }
"#;

fn compile(dir: &Path) -> PathBuf {
    let c = dir.join("vma.c");
    std::fs::write(&c, VMA).unwrap();
    let o = dir.join("vma.o");
    let st = Command::new("cc")
        .args(["-O2", "-g", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .expect("cc");
    assert!(st.success());
    o
}

/// Per function, the offset of its first instruction through `%rdi`, as objdump (the
/// oracle) disassembles it.
fn rdi_access(o: &Path, function: &str) -> u64 {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(o)
        .output()
        .expect("objdump");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut start: Option<u64> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_suffix(">:") {
            let (addr, name) = rest.split_once(" <").unwrap();
            start = (name == function).then(|| u64::from_str_radix(addr, 16).unwrap());
            continue;
        }
        if let (Some(s), Some((addr, insn))) = (start, line.trim_start().split_once(":\t"))
            && insn.contains("(%rdi)")
        {
            return u64::from_str_radix(addr.trim(), 16).unwrap() - s;
        }
    }
    panic!("no access through %rdi in {function}:\n{text}");
}

fn row(o: &Path, function: &str, loads: f64) -> Access {
    Access {
        offset: Some(8),
        counts: Counts {
            loads,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(function.into()),
            symbol_offset: Some(rdi_access(o, function)),
            object: Some("vma.o".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `lineup diagnose --type vma` on one line at struct byte 0 whose rows are `functions`.
fn diagnose(dir: &Path, o: &Path, functions: &[&str], extra: &[&str]) -> String {
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0x5555_0000_1000,
        accesses: functions.iter().map(|f| row(o, f, 100.0)).collect(),
        ..Default::default()
    });
    let pj = dir.join("p.json");
    std::fs::write(&pj, p.to_json()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "diagnose",
            "--type",
            "vma",
            "--line-offset",
            "0",
            "--profile",
        ])
        .arg(&pj)
        .arg("--dwarf")
        .arg(o)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The diagnosis table's row for `name`: `name  offset  size  loads ...`.
fn table_row<'a>(text: &'a str, name: &str) -> Option<Vec<&'a str>> {
    text.lines()
        .map(|l| l.trim_start())
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with("  "))
        .map(|l| l[name.len()..].split_whitespace().collect())
}

#[test]
fn union_rows_are_named_by_the_width_the_code_used_else_all_alternatives() {
    let dir = std::env::temp_dir().join(format!("lineup-union-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir);
    let vm = o.to_str().unwrap();
    let both = ["get_vlag", "get_vprot"];

    // With the code: each row is named after the alternative its load's width says.
    let text = diagnose(&dir, &o, &both, &["--vmlinux", vm]);
    let vlag = table_row(&text, "vlag").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(&vlag[..3], ["8", "4", "100"], "{text}");
    let vprot = table_row(&text, "vprot").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(&vprot[..3], ["8", "8", "100"], "{text}");
    assert!(!text.contains("vlag | vprot"), "{text}");

    let json: serde_json::Value =
        serde_json::from_str(&diagnose(&dir, &o, &both, &["--vmlinux", vm, "--json"])).unwrap();
    let rows = json["bindings"][0]["rows"].as_array().unwrap();
    let by_row: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["function"].as_str().unwrap(),
                r["member"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_row,
        [("get_vlag", "vlag"), ("get_vprot", "vprot")],
        "{json}"
    );
    let members: Vec<&str> = json["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["vlag", "vprot"], "{json}");

    // Without the code nothing says which: both alternatives are named, never one alone.
    let text = diagnose(&dir, &o, &both, &[]);
    let row = table_row(&text, "vlag | vprot").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(&row[..3], ["8", "8", "200"], "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&diagnose(&dir, &o, &both, &["--json"])).unwrap();
    let rows = json["bindings"][0]["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["member"] == "vlag | vprot"), "{json}");
    assert_eq!(json["members"][0]["name"], "vlag | vprot", "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}
