//! `lineup import` and `lineup diagnose` as users run them.

mod common;

use std::process::{Command, Output};

fn lineup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .output()
        .expect("run lineup")
}

fn path(rel: &str) -> String {
    common::repo().join(rel).display().to_string()
}

fn scratch(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("lineup-diag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

fn assert_one_line_error(out: &Output, words: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains(words), "{err:?} lacks {words:?}");
}

#[test]
fn seed000_paste_is_diagnosed_from_the_command_line() {
    let btf = common::bundled_btf().display().to_string();
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "task_group",
        "--c2c",
        &path("tests/data/c2c/seed000_paste.txt"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("cache line 4 (bytes 256-319): false sharing"),
        "{text}"
    );
    assert!(text.contains("`load_avg` is stored by update_load_avg on 160 CPUs while `rt_se` and `rt_rq` on the same line are loaded by set_task_cpu"), "{text}");
    assert!(
        text.contains("rt_se;                /*   264     8 */ <- reads"),
        "{text}"
    );

    // The second report of the paste (after the seed's patch) holds load_avg alone.
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "task_group",
        "--c2c",
        &path("tests/data/c2c/seed000_paste.txt"),
        "--report",
        "2",
        "--line-offset",
        "256",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lines"][0]["verdict"], "true_sharing");
    assert_eq!(v["bindings"][0]["given"], true);
}

#[test]
fn import_writes_a_profile_that_diagnose_reads_back() {
    let out_path = std::env::temp_dir().join(format!("lineup-prof-{}.json", std::process::id()));
    let out_s = out_path.display().to_string();
    let out = lineup(&[
        "import",
        "--sketch",
        &path("examples/sketches/seed003_cpupri_vec.toml"),
        "-o",
        &out_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let btf = common::bundled_btf().display().to_string();
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "cpupri_vec",
        "--profile",
        &out_s,
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lines"][0]["verdict"], "false_sharing");
}

#[test]
fn bad_evidence_is_one_line() {
    let btf = common::bundled_btf().display().to_string();
    let mangled = scratch(
        "mangled.txt",
        b"Shared Cache Line Distribution Pareto\n0 12 zz 0xffff\n63.72% 65.16% garbage\n",
    );
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "task_group",
        "--c2c",
        &mangled,
    ]);
    assert_one_line_error(&out, "mangled.txt");
    let empty = scratch("empty.txt", b"");
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "task_group",
        "--c2c",
        &empty,
    ]);
    assert_one_line_error(&out, "empty.txt");
    let out = lineup(&[
        "import",
        "--c2c",
        &path("tests/data/c2c/seed000_paste.txt"),
        "--report",
        "3",
    ]);
    assert_one_line_error(&out, "holds 2 reports");
}

#[test]
fn a_profile_for_another_struct_is_refused() {
    let btf = common::bundled_btf().display().to_string();
    // cpupri_vec's sketch names `count` and `mask`; list_head has neither.
    let out = lineup(&[
        "diagnose",
        "--btf",
        &btf,
        "--type",
        "list_head",
        "--sketch",
        &path("examples/sketches/seed003_cpupri_vec.toml"),
    ]);
    assert_one_line_error(
        &out,
        "no access to struct list_head (16 bytes); it describes cpupri_vec",
    );
}

/// `--cacheline-size 128` draws and judges the struct in 128-byte lines (adjacent-line
/// prefetch); the c2c paste's own 64-byte data line keeps its size.
#[test]
fn diagnose_takes_a_line_size() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lineup"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "diagnose",
            "--type",
            "task_group",
            "--c2c",
            "tests/data/c2c/seed000_paste.txt",
            "--btf",
            "data/vmlinux-6.18.44.btf",
            "--cacheline-size",
            "128",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("704 bytes, 6 cache lines of 128 bytes"),
        "{text}"
    );
    assert!(text.contains("is bytes 256..319 of the struct"), "{text}");
    assert!(
        text.contains("cache line 2 (bytes 256-383): false sharing"),
        "{text}"
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_lineup"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "diagnose",
            "--type",
            "task_group",
            "--c2c",
            "tests/data/c2c/seed000_paste.txt",
        ])
        .args([
            "--btf",
            "data/vmlinux-6.18.44.btf",
            "--cacheline-size",
            "96",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a power of two"));
}
