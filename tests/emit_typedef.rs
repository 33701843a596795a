//! Issue 16 item 4: a struct without a tag behind a typedef (Phoenix's `typedef struct {
//! ... } lreg_args;`, `examples/record/linreg.c`) is printed as C and pahole write it:
//! `typedef struct { ... } lreg_args;`, never `struct  {`; the C declaration `optimize`
//! emits and the source its patch produces compile.
//!
//! Needs a C compiler and `patch`; `.ci/run` installs both.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("emit-typedef-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cc(args: &[&str], cwd: &Path) {
    let o = Command::new("cc")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "cc {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `examples/record/linreg.c` compiled with `-g -O0` into `dir/linreg.o`.
fn linreg_object(dir: &Path) -> PathBuf {
    std::fs::copy(
        common::repo().join("examples/record/linreg.c"),
        dir.join("linreg.c"),
    )
    .unwrap();
    cc(&["-g", "-O0", "-c", "linreg.c", "-o", "linreg.o"], dir);
    dir.join("linreg.o")
}

/// lineup's pahole text without its `/* layout from: ... */` line.
fn lineup_pahole(obj: &Path) -> String {
    let out = common::lineup(&["layout", "--dwarf", obj.to_str().unwrap(), "lreg_args"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("/* layout from"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn pahole_text_names_a_tagless_struct_by_its_typedef_as_pahole_does() {
    let dir = scratch("pahole");
    let obj = linreg_object(&dir);
    let ours = lineup_pahole(&obj);
    // The oracle: pahole 1.24's own output (tests/data/optimize/README.md says how it was
    // made).
    let golden =
        std::fs::read_to_string(common::repo().join("tests/data/optimize/lreg_args.pahole"))
            .unwrap();
    assert_eq!(ours, golden);
    assert!(ours.starts_with("typedef struct {\n") && ours.ends_with("} lreg_args;\n"));
    // And the pahole installed here, when there is one, on this compiler's object.
    if let Ok(o) = Command::new("pahole")
        .args(["-C", "lreg_args", obj.to_str().unwrap()])
        .output()
        && o.status.success()
        && !o.stdout.is_empty()
    {
        assert_eq!(ours, String::from_utf8_lossy(&o.stdout));
    }
}

fn optimize(dir: &Path, obj: &Path, flavour: &str) -> Value {
    common::lineup_json(&[
        "optimize",
        "--type",
        "lreg_args",
        "--dwarf",
        obj.to_str().unwrap(),
        "--sketch",
        "tests/data/optimize/lreg_args.toml",
        "--machine",
        "icelake-2s",
        "--flavour",
        flavour,
        "--header",
        dir.join("linreg.c").to_str().unwrap(),
        "--diff-path",
        "linreg.c",
        "--json",
    ])
}

#[test]
fn optimize_emits_a_typedef_declaration_and_a_patch_that_compile() {
    let dir = scratch("optimize");
    let obj = linreg_object(&dir);
    let v = optimize(&dir, &obj, "user");
    assert!(v["rejected"].is_null(), "{v:#}");
    let decl = v["declaration"].as_str().unwrap();
    assert!(decl.starts_with("typedef struct {\n"), "{decl}");
    assert!(decl.contains("\n} lreg_args;\n"), "{decl}");
    assert!(
        !decl.contains("struct  {") && !decl.contains("struct lreg_args"),
        "{decl}"
    );
    assert!(decl.contains("offsetof(lreg_args, "), "{decl}");
    // The declaration compiles where the type's own dependencies are declared.
    let prelude = "#include <assert.h>\n#include <pthread.h>\n#include <stdalign.h>\n#include <stddef.h>\ntypedef struct { char x; char y; } POINT_T;\n";
    std::fs::write(dir.join("decl.c"), format!("{prelude}{decl}")).unwrap();
    cc(&["-std=c11", "-fsyntax-only", "decl.c"], &dir);
    // The patch applies to the source and what it makes compiles.
    let diff = v["diff"].as_str().expect("a diff");
    std::fs::write(dir.join("fix.diff"), diff).unwrap();
    let o = Command::new("patch")
        .current_dir(&dir)
        .args(["-s", "linreg.c", "fix.diff"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let patched = std::fs::read_to_string(dir.join("linreg.c")).unwrap();
    assert!(patched.contains("_Alignas(64)"), "{patched}");
    cc(&["-std=c11", "-fsyntax-only", "linreg.c"], &dir);
    // The kernel flavour's build-time checks name the type as C does.
    let v = optimize(&dir, &obj, "kernel");
    let decl = v["declaration"].as_str().unwrap();
    assert!(decl.starts_with("typedef struct {\n"), "{decl}");
    assert!(
        decl.contains("CACHELINE_ASSERT_GROUP_MEMBER(lreg_args, "),
        "{decl}"
    );
    assert!(!decl.contains("struct lreg_args"), "{decl}");
}
