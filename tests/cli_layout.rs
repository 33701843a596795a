//! The `lineup layout` command as users run it: output, JSON, and one clear line with exit
//! code 2 for every kind of bad input.

mod common;

use std::process::{Command, Output};

fn lineup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .output()
        .expect("run lineup")
}

fn btf() -> String {
    common::bundled_btf().display().to_string()
}

/// Exit code 2, nothing on stdout, and exactly one line on stderr that names `file`.
fn assert_one_line_error(out: &Output, file: &str, words: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "partial output: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.contains(file), "{err:?} does not name {file}");
    assert!(err.contains(words), "{err:?} does not say {words:?}");
    assert!(!err.contains("panicked"), "{err}");
}

fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lineup-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn task_group_shows_the_seed_000_line() {
    let out = lineup(&["layout", "--btf", &btf(), "task_group"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // The 6.18 layout the seed complains about: load_avg starts cache line 4, and rt_se and
    // rt_rq share it.
    assert!(text.contains("/* --- cacheline 4 boundary (256 bytes) --- */\n\tatomic_long_t              load_avg __attribute__((__aligned__(64))); /*   256     8 */\n\tstruct sched_rt_entity * * rt_se;                /*   264     8 */\n\tstruct rt_rq * *           rt_rq;                /*   272     8 */"), "{text}");
    assert!(text.contains("\t/* size: 704, cachelines: 11, members: 17 */\n\t/* sum members: 676, holes: 2, sum holes: 20 */\n"), "{text}");
    assert!(
        text.ends_with("} __attribute__((__aligned__(64)));\n"),
        "{text}"
    );
}

#[test]
fn json_carries_offsets_and_cache_lines() {
    let out = lineup(&["layout", "--btf", &btf(), "--json", "task_group"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["types"][0];
    assert_eq!(t["name"], "task_group");
    let members = t["members"].as_array().unwrap();
    let load_avg = members.iter().find(|m| m["name"] == "load_avg").unwrap();
    assert_eq!(load_avg["offset"], 256);
    assert_eq!(load_avg["size"], 8);
    assert_eq!(load_avg["cacheline"], 4);
    assert_eq!(load_avg["forced_align"], 64);
    assert_eq!(load_avg["type_name"], "atomic_long_t");
}

#[test]
fn cacheline_size_128_moves_the_boundaries() {
    let out = lineup(&[
        "layout",
        "--btf",
        &btf(),
        "--cacheline-size",
        "128",
        "--json",
        "task_group",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members = v["types"][0]["members"].as_array().unwrap();
    let load_avg = members.iter().find(|m| m["name"] == "load_avg").unwrap();
    assert_eq!(load_avg["cacheline"], 2);
    let text = String::from_utf8(
        lineup(&[
            "layout",
            "--btf",
            &btf(),
            "--cacheline-size",
            "128",
            "task_group",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("/* --- cacheline 2 boundary (256 bytes) --- */"),
        "{text}"
    );
}

#[test]
fn unknown_type_suggests_close_names() {
    let out = lineup(&["layout", "--btf", &btf(), "task_grup"]);
    assert_one_line_error(&out, "vmlinux-6.18.44.btf", "did you mean: task_group");
}

#[test]
fn missing_file_is_one_line() {
    let out = lineup(&["layout", "--btf", "/nonexistent/vmlinux", "task_group"]);
    assert_one_line_error(&out, "/nonexistent/vmlinux", "no such file");
}

#[test]
fn truncated_btf_is_one_line() {
    let data = std::fs::read(common::bundled_btf()).unwrap();
    let p = scratch("truncated.btf", &data[..data.len() / 2]);
    let out = lineup(&["layout", "--btf", p.to_str().unwrap(), "task_group"]);
    assert_one_line_error(&out, "truncated.btf", "truncated BTF");
}

#[test]
fn corrupted_btf_is_one_line() {
    let mut data = std::fs::read(common::bundled_btf()).unwrap();
    // Point the first type's kind at an unknown one.
    data[24 + 7] = 0x1f;
    let p = scratch("corrupt.btf", &data);
    let out = lineup(&["layout", "--btf", p.to_str().unwrap(), "task_group"]);
    assert_one_line_error(&out, "corrupt.btf", "corrupt BTF");
}

#[test]
fn garbage_and_empty_files_are_one_line() {
    let p = scratch("garbage.bin", b"this is not BTF at all, just text\n");
    let out = lineup(&["layout", "--btf", p.to_str().unwrap(), "x"]);
    assert_one_line_error(&out, "garbage.bin", "not BTF");
    let p = scratch("empty.btf", b"");
    let out = lineup(&["layout", "--btf", p.to_str().unwrap(), "x"]);
    assert_one_line_error(&out, "empty.btf", "empty file");
    let out = lineup(&["layout", "--dwarf", p.to_str().unwrap(), "x"]);
    assert_one_line_error(&out, "empty.btf", "empty file");
}

#[test]
fn elf_without_debug_info_is_one_line() {
    let dir = std::env::temp_dir().join(format!("lineup-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("nodebug.c");
    std::fs::write(
        &src,
        "struct s { int a; } g;\nint main(void) { return g.a; }\n",
    )
    .unwrap();
    let bin = dir.join("nodebug");
    let cc = Command::new("cc")
        .arg("-g0")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status();
    // scripts/test.sh installs gcc: a missing compiler is a failure, not a skip.
    assert!(
        matches!(cc, Ok(s) if s.success()),
        "cc failed or is missing ({cc:?}): run scripts/test.sh, which installs gcc"
    );
    let out = lineup(&["layout", "--dwarf", bin.to_str().unwrap(), "s"]);
    assert_one_line_error(&out, "nodebug", "no .debug_info section");
    let out = lineup(&["layout", "--btf", bin.to_str().unwrap(), "s"]);
    assert_one_line_error(&out, "nodebug", "no .BTF section");
}

#[test]
fn directory_is_one_line() {
    let out = lineup(&["layout", "--btf", "/tmp", "x"]);
    assert_one_line_error(&out, "/tmp", "directory");
}

#[test]
fn help_has_an_example() {
    let out = lineup(&["layout", "--help"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Examples:") && text.contains("lineup layout task_group"),
        "{text}"
    );
}

/// pahole's `-C TYPE` (and its comma-separated list) and the other commands' `--type` name the
/// same types as the positional names, with the same output.
#[test]
fn layout_takes_pahole_dash_c_and_type() {
    let positional = lineup(&["layout", "--btf", &btf(), "task_group", "cfs_rq"]);
    assert!(positional.status.success());
    let text = String::from_utf8_lossy(&positional.stdout).into_owned();
    assert!(text.contains("struct task_group {") && text.contains("struct cfs_rq {"));
    for args in [
        &["-C", "task_group,cfs_rq"][..],
        &["-C", "task_group", "-C", "cfs_rq"][..],
        &["--type", "task_group", "--type", "cfs_rq"][..],
        &["task_group", "--type", "cfs_rq"][..],
    ] {
        let out = lineup(&[&["layout", "--btf", &btf()][..], args].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{args:?}");
    }
    let out = lineup(&["layout", "--btf", &btf(), "-C", "task_grup"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("task_grup"));
}
