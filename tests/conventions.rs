//! lineup follows the conventions of the tools beside it (issue 26 item 5):
//!
//! - Addresses in JSON are hex strings (`"0xff284d17b5c0fa00"`), never numbers: readers that
//!   keep numbers as doubles (`jq`, JavaScript) round anything above 2^53, and a kernel data
//!   address rounded is another cache line (docs/json.md, "Addresses").
//! - `lineup diff` exits as diff(1) and codiff do: 0 the same, 1 different, 2 trouble.

mod common;

use serde_json::Value;

const BTF: &str = "data/vmlinux-6.18.44.btf";
const C2C: &str = "tests/data/c2c/seed000_paste.txt";
/// A full c2c report with many lines and no --type: the overview binds candidates per line.
const C2C_FULL: &str = "tests/data/c2c/perf6_hitm_full.txt";

/// 2^53: the largest integer every double holds exactly, with all those below it.
const EXACT_IN_DOUBLE: u64 = 1 << 53;

fn is_hex_address(s: &str) -> bool {
    s.strip_prefix("0x").is_some_and(|d| {
        !d.is_empty()
            && d.len() <= 16
            && d.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A key whose value is an address or a list of them (counters such as
/// `samples_without_address` are counts, not addresses).
fn is_address_key(k: &str) -> bool {
    k == "address" || k == "neighbours"
}

/// Every break of the conventions in `v`, as "path: what"; counts the addresses seen.
fn breaks(v: &Value, path: &str, addresses: &mut usize, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let p = format!("{path}.{k}");
                if is_address_key(k) {
                    let items: Vec<&Value> = match x {
                        Value::Array(a) => a.iter().collect(),
                        Value::Null => Vec::new(),
                        one => vec![one],
                    };
                    for a in items {
                        match a.as_str() {
                            Some(s) if is_hex_address(s) => *addresses += 1,
                            _ => out.push(format!("{p}: address {a} is not a \"0x...\" string")),
                        }
                    }
                }
                breaks(x, &p, addresses, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                breaks(x, &format!("{path}[{i}]"), addresses, out);
            }
        }
        Value::Number(n) => {
            let too_big = n.as_u64().is_some_and(|u| u > EXACT_IN_DOUBLE)
                || n.as_i64()
                    .is_some_and(|i| i.unsigned_abs() > EXACT_IN_DOUBLE);
            if too_big {
                out.push(format!(
                    "{path}: integer {n} is above 2^53; a double-based reader changes it"
                ));
            }
        }
        _ => {}
    }
}

/// Runs lineup (exit `code`), parses its standard output as JSON and returns how many
/// addresses it holds, failing on any break of the conventions.
fn addresses_in(args: &[&str], code: i32) -> usize {
    let out = common::lineup(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "lineup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("lineup {args:?}: not JSON: {e}"));
    let (mut n, mut errs) = (0, Vec::new());
    breaks(&v, "$", &mut n, &mut errs);
    assert!(errs.is_empty(), "lineup {args:?}: {errs:#?}");
    n
}

#[test]
fn the_checker_sees_a_numeric_address_and_a_number_above_2_53() {
    // What the commands below are held to must be able to fail.
    let doc: Value = serde_json::from_str(
        r#"{"lines": [{"address": 18386030242968959488, "offset": 8}],
            "bindings": [{"address": "0xff284d17b5c0fa00", "neighbours": ["0x40", 64]}],
            "cycles": 9007199254740993}"#,
    )
    .unwrap();
    let (mut n, mut errs) = (0, Vec::new());
    breaks(&doc, "$", &mut n, &mut errs);
    assert_eq!(n, 2, "two hex addresses: {errs:?}");
    assert!(
        errs.iter()
            .any(|e| e.starts_with("$.lines[0].address: address")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("$.bindings[0].neighbours: address 64")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.starts_with("$.cycles: integer")),
        "{errs:?}"
    );
    // And the rounding it guards against is real: the seed's line through a double.
    let line = 0xff28_4d17_b5c0_fa00u64;
    assert_ne!(line as f64 as u64, line);
    assert_ne!((line as f64 as u64) / 64, line / 64, "another cache line");
}

#[test]
fn profiles_write_addresses_as_hex_strings() {
    // Every importer: c2c (data lines and code addresses), perf.data, perf script, typeoff.
    let n = addresses_in(&["import", "--c2c", C2C, "-o", "-"], 0);
    assert!(
        n >= 2,
        "the seed's paste has a data line and code addresses: {n}"
    );
    let n = addresses_in(
        &[
            "import",
            "--perf-data",
            "fuzz/corpus/perf_data/mem_classes.data",
            "-o",
            "-",
        ],
        0,
    );
    assert!(n >= 1, "perf.data samples have addresses: {n}");
    addresses_in(
        &[
            "import",
            "--perf-script",
            "tests/data/perf/mem_script.txt",
            "-o",
            "-",
        ],
        0,
    );
    addresses_in(
        &[
            "import",
            "--perf-typeoff",
            "tests/data/perf/typeoff_columns.txt",
            "-o",
            "-",
        ],
        0,
    );
}

#[test]
fn diagnose_writes_addresses_as_hex_strings() {
    let n = addresses_in(
        &[
            "diagnose",
            "--btf",
            BTF,
            "--type",
            "task_group",
            "--c2c",
            C2C,
            "--json",
        ],
        0,
    );
    assert!(
        n >= 1,
        "the binding of the seed's line has its address: {n}"
    );
    // No --type: candidate types per line, with the lines' addresses and neighbours.
    let n = addresses_in(&["diagnose", "--btf", BTF, "--c2c", C2C_FULL, "--json"], 0);
    assert!(n >= 2, "the overview lists its lines by address: {n}");
}

#[test]
fn every_other_json_output_keeps_its_numbers_exact() {
    // These have no addresses today; whatever they gain must follow the same rule.
    let ev = ["--type", "task_group", "--btf", BTF, "--c2c", C2C];
    for (cmd, extra, code) in [
        ("optimize", &["--machine", "icelake-2s"][..], 0),
        (
            "predict",
            &[
                "--machine",
                "icelake-2s",
                "--layout",
                "examples/seeds/000/seed_fix.h",
            ][..],
            0,
        ),
        ("replay", &["--machine", "icelake-2s", "--runs", "0"][..], 0),
    ] {
        let mut args = vec![cmd];
        args.extend(ev);
        args.extend(extra);
        args.push("--json");
        addresses_in(&args, code);
    }
    addresses_in(&["layout", "--btf", BTF, "task_group", "--json"], 0);
    addresses_in(
        &[
            "diff",
            "-C",
            "task_group",
            BTF,
            "examples/seeds/000/seed_fix.h",
            "--json",
        ],
        1,
    );
}

fn diff(old: &str, new: &str, ty: &str) -> std::process::Output {
    common::lineup(&["diff", "-C", ty, old, new])
}

#[test]
fn diff_exits_0_when_the_same_1_when_different_2_on_trouble() {
    // The same layout, read from the same file and from its own pahole text.
    let same = diff(BTF, BTF, "task_group");
    assert_eq!(same.status.code(), Some(0), "{:?}", same);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("conventions-diff");
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("task_group.txt");
    let layout = common::lineup(&["layout", "--btf", BTF, "task_group"]);
    assert!(layout.status.success());
    std::fs::write(&text, &layout.stdout).unwrap();
    let same = diff(BTF, text.to_str().unwrap(), "task_group");
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );

    // Different: the seed's fix moved members (text and --json alike).
    let differ = diff(BTF, "examples/seeds/000/seed_fix.h", "task_group");
    assert_eq!(differ.status.code(), Some(1), "{:?}", differ);
    assert!(!differ.stdout.is_empty(), "the differences are printed");
    let differ = common::lineup(&[
        "diff",
        "-C",
        "task_group",
        BTF,
        "examples/seeds/000/seed_fix.h",
        "--json",
    ]);
    assert_eq!(differ.status.code(), Some(1));

    // Trouble: a file that is not there, a type that is not there. One line, exit 2.
    let missing = dir.join("no-such.btf");
    for (out, names) in [
        (
            diff(BTF, missing.to_str().unwrap(), "task_group"),
            "no-such.btf",
        ),
        (
            diff(BTF, BTF, "no_such_struct_anywhere"),
            "no_such_struct_anywhere",
        ),
    ] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(names), "names the problem: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
