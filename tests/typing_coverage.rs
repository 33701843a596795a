//! `diagnose --vmlinux IMAGE` says what share of the rows whose code lies in the image was
//! typed from its instruction and why the rest was not (issue 25 item 1), in the text, in
//! `--json` (`typing`) and in the overview without `--type`; the counts are the typer's own
//! (`typing::type_rows` on the same profile), and rows of code outside the image are not
//! counted.

mod common;

use std::process::Command;

use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile, Unit};
use lineup::readers::InputFile;
use lineup::readers::typing::{self, Typer};

const PROGRAM: &str = r#"
struct pair { long hot; long cold; long other; };
struct pair *volatile g;
__attribute__((noinline)) void bump(struct pair *p) { p->hot++; }
__attribute__((noinline)) long scan(long *v, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}
int main(int argc, char **argv) {
    static struct pair p;
    g = &p;
    bump(g);
    long v[4] = {argc, 2, 3, 4};
    return (int)(scan(v, argc) + g->hot);
}
"#;

/// A row of `symbol`'s code at byte `at`, `stores` stores at line offset `offset`.
fn row(object: &str, symbol: &str, at: u64, offset: u64, stores: f64) -> Access {
    Access {
        offset: Some(offset),
        counts: Counts {
            stores,
            lcl_hitm: stores,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(symbol.into()),
            symbol_offset: Some(at),
            object: Some(object.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn diagnose_says_what_share_of_the_rows_its_image_typed() {
    let dir = std::env::temp_dir().join(format!("lineup-typing-cov-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("pair.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let bin = dir.join("pair");
    let built = Command::new("cc")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    let Ok(built) = built else {
        eprintln!("cc not installed: skipped");
        return;
    };
    assert!(built.status.success(), "{built:?}");

    // The instructions: bump's store to `hot` (typed), scan's load of a long through a
    // `long *` (not a struct member: not typed), and a libc row (not in the image).
    let file = InputFile::open(&bin).unwrap();
    let typer = Typer::new(&file).unwrap();
    let at = |function: &str, want_typed: bool| {
        let start = typer.symbol_address(function).unwrap();
        typer
            .accesses_in(function)
            .into_iter()
            .find(|(_, r)| r.is_ok() == want_typed)
            .map(|(pc, _)| pc - start)
            .unwrap_or_else(|| panic!("{function}: no access typed={want_typed}"))
    };
    let image = bin.file_name().unwrap().to_string_lossy().to_string();
    let mut p = Profile::new("test", Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0x7f00_0000_1000,
        accesses: vec![
            row(&image, "bump", at("bump", true), 0, 30.0),
            row(&image, "scan", at("scan", false), 8, 10.0),
            row("libc.so.6", "memset", 0x10, 16, 5.0),
        ],
        ..Default::default()
    });
    let (_, want) = typing::type_rows(&typer, bin.to_str().unwrap(), &p);
    assert_eq!((want.rows, want.rows_typed), (2, 1), "{want:?}");
    let profile = dir.join("profile.json");
    std::fs::write(&profile, serde_json::to_vec(&p).unwrap()).unwrap();

    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "diagnose",
            "--profile",
            profile.to_str().unwrap(),
            "--dwarf",
            bin.to_str().unwrap(),
            "--vmlinux",
            bin.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = common::lineup(&a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let line = want.describe();
    assert!(line.contains("75% of the weight (1 of 2 rows)"), "{line}");
    let text = run(args(&["--type", "pair"]));
    assert!(text.contains(&line), "no `{line}` in:\n{text}");
    let overview = run(args(&[]));
    assert!(overview.contains(&line), "no `{line}` in:\n{overview}");
    let json: serde_json::Value =
        serde_json::from_str(&run(args(&["--type", "pair", "--json"]))).expect("json");
    assert_eq!(json["typing"]["rows"], 2, "{json}");
    assert_eq!(json["typing"]["rows_typed"], 1, "{json}");
    // Without an image nothing is said about typing.
    let plain = common::lineup(&[
        "diagnose",
        "--profile",
        profile.to_str().unwrap(),
        "--dwarf",
        bin.to_str().unwrap(),
        "--type",
        "pair",
        "--json",
    ]);
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(plain.get("typing").is_none(), "{plain}");
    std::fs::remove_dir_all(&dir).ok();
}
