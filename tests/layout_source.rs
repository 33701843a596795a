//! Issue 13 item 7 (which kernel an answer is about) and two of item 5's bullets (errors name
//! the file given on the command line): every answer's header names the file its layout
//! came from, loudly when it is the bundled 6.18 kernel's; the bundled BTF is compiled into
//! the binary, so the fallback works away from the checkout.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const C2C: &str = "tests/data/c2c/seed000_paste.txt";
/// Set to a path that does not exist, it makes lineup behave as on a kernel without BTF
/// (src/cli/source.rs, `RUNNING_KERNEL_BTF_ENV`).
const NO_KERNEL_BTF: (&str, &str) = ("LINEUP_TEST_RUNNING_KERNEL_BTF", "/nonexistent/vmlinux");

fn btf() -> String {
    common::bundled_btf().display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(args: &[&str], env: Option<(&str, &str)>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.args(args).current_dir(common::repo());
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let o = c.output().expect("run lineup");
    assert!(o.status.success(), "lineup {args:?}: {}", text(&o.stderr));
    o
}

/// Each command that answers about a layout, with the arguments it needs besides the
/// layout source.
fn commands() -> Vec<Vec<&'static str>> {
    let subject = ["--type", "task_group", "--c2c", C2C];
    let model = ["--machine", "icelake-2s"];
    vec![
        vec!["layout", "task_group"],
        [&["diagnose"][..], &subject].concat(),
        [&["optimize"][..], &subject, &model].concat(),
        [&["predict"][..], &subject, &model].concat(),
        [&["replay"][..], &subject, &model, &["--runs", "0"]].concat(),
    ]
}

#[test]
fn every_answer_names_the_file_its_layout_came_from() {
    let btf = btf();
    for cmd in commands() {
        let with_btf = [&cmd[..], &["--btf", &btf]].concat();
        let o = run(&with_btf, None);
        let out = text(&o.stdout);
        let first = out.lines().next().unwrap_or("");
        let want = format!("layout from: {btf} (BTF)");
        assert!(
            first == want || first == format!("/* {want} */"),
            "{cmd:?}: header {first:?}, want {want:?}"
        );
        assert!(!out.contains("WARNING"), "{cmd:?}: {out}");

        let json = [&with_btf[..], &["--json"]].concat();
        let v: Value = serde_json::from_slice(&run(&json, None).stdout).unwrap();
        let src = &v["layout_source"];
        assert_eq!(src["file"], btf.as_str(), "{cmd:?}: {v}");
        assert_eq!(src["format"], "btf", "{cmd:?}");
        assert_eq!(src["bundled_fallback"], false, "{cmd:?}");
        assert_eq!(src["running_kernel"], false, "{cmd:?}");
    }
}

#[test]
fn the_bundled_fallback_is_said_loudly_in_every_answer() {
    for cmd in commands() {
        let o = run(&cmd, Some(NO_KERNEL_BTF));
        let out = text(&o.stdout);
        let first = out.lines().next().unwrap_or("");
        assert!(
            first.contains("bundled Linux 6.18.44 BTF")
                && first.contains("NOT the running kernel's"),
            "{cmd:?}: header {first:?}"
        );
        let err = text(&o.stderr);
        assert!(
            err.contains("/nonexistent/vmlinux") && err.contains("NOT the running kernel's"),
            "{cmd:?}: {err}"
        );

        let json = [&cmd[..], &["--json"]].concat();
        let v: Value = serde_json::from_slice(&run(&json, Some(NO_KERNEL_BTF)).stdout).unwrap();
        assert_eq!(v["layout_source"]["bundled_fallback"], true, "{cmd:?}: {v}");
        assert_eq!(v["layout_source"]["running_kernel"], false, "{cmd:?}");
    }
}

#[test]
fn html_pages_name_the_layout_source_too() {
    let dir = scratch("html");
    let btf = btf();
    for cmd in &commands()[1..4] {
        let page = dir.join(format!("{}.html", cmd[0]));
        let args = [&cmd[..], &["--btf", &btf, "--html", page.to_str().unwrap()]].concat();
        run(&args, None);
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            html.contains(&format!("layout from: {btf} (BTF)")),
            "{cmd:?}: the page does not name {btf}"
        );
    }
}

/// A copy of the binary in a directory of its own, away from the checkout.
fn installed_copy() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lineup-installed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("lineup");
    std::fs::copy(env!("CARGO_BIN_EXE_lineup"), &exe).unwrap();
    exe
}

#[test]
fn the_fallback_works_from_a_copy_of_the_binary_away_from_the_checkout() {
    let exe = installed_copy();
    let dir = exe.parent().unwrap().to_path_buf();

    // The binary carries the BTF itself: its bytes are in the executable verbatim.
    let bundled = std::fs::read(common::bundled_btf()).unwrap();
    let binary = std::fs::read(&exe).unwrap();
    let probe = &bundled[..4096];
    assert!(
        binary.windows(probe.len()).any(|w| w == probe),
        "the bundled BTF is not compiled into the binary"
    );

    let check = |o: &Output| {
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["layout_source"]["bundled_fallback"], true);
        let load_avg = v["types"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "load_avg")
            .expect("load_avg");
        // The 6.18 fixture kernel's task_group: load_avg at 256 (tests/cli_layout.rs).
        assert_eq!(load_avg["offset"], 256);
    };
    let o = Command::new(&exe)
        .args(["layout", "task_group", "--json"])
        .env(NO_KERNEL_BTF.0, NO_KERNEL_BTF.1)
        .current_dir(&dir)
        .output()
        .unwrap();
    check(&o);

    // With the checkout's data directory hidden (a private mount namespace with an empty
    // tmpfs over it), where one is allowed: proof that nothing is read from the tree.
    let data = common::repo().join("data");
    let script = format!(
        "mount -t tmpfs none '{}' && test ! -e '{}' && exec '{}' layout task_group --json",
        data.display(),
        common::bundled_btf().display(),
        exe.display()
    );
    match Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env(NO_KERNEL_BTF.0, NO_KERNEL_BTF.1)
        .current_dir(&dir)
        .output()
    {
        Ok(o) if o.status.success() => check(&o),
        Ok(o) => eprintln!(
            "skipped the hidden-checkout run: {}",
            text(&o.stderr).trim()
        ),
        Err(e) => eprintln!("skipped the hidden-checkout run: unshare: {e}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("layout-source")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fails(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .current_dir(common::repo())
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "lineup {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(o.stdout.is_empty(), "partial output: {}", text(&o.stdout));
    err
}

#[test]
fn a_corrupt_base_btf_is_reported_under_its_own_name() {
    let dir = scratch("base-btf");
    let good = common::bundled_btf();
    let data = std::fs::read(&good).unwrap();
    let base = dir.join("broken-base.btf");
    std::fs::write(&base, &data[..data.len() / 2]).unwrap();
    let err = fails(&[
        "layout",
        "--btf",
        good.to_str().unwrap(),
        "--base-btf",
        base.to_str().unwrap(),
        "task_group",
    ]);
    assert!(
        err.contains("broken-base.btf") && err.contains("truncated BTF"),
        "{err}"
    );
    assert!(!err.contains("vmlinux-6.18.44.btf"), "{err}");

    // The other way round: a broken split file on a good base names the split file.
    let split = dir.join("broken-module.btf");
    std::fs::write(&split, b"not BTF at all").unwrap();
    let err = fails(&[
        "layout",
        "--btf",
        split.to_str().unwrap(),
        "--base-btf",
        good.to_str().unwrap(),
        "task_group",
    ]);
    assert!(err.contains("broken-module.btf"), "{err}");
}

#[test]
fn an_error_about_a_saved_profile_names_the_file_given() {
    let dir = scratch("profile");
    let saved = dir.join("saved.json");
    let o = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "import",
            "--sketch",
            "examples/sketches/seed003_root_domain.toml",
            "-o",
        ])
        .arg(&saved)
        .current_dir(common::repo())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The sketch is about root_domain; asking about task_group is an error about the
    // profile, which must name saved.json, not the sketch it was imported from.
    let err = fails(&[
        "diagnose",
        "--type",
        "task_group",
        "--btf",
        &btf(),
        "--profile",
        saved.to_str().unwrap(),
    ]);
    assert!(err.contains(&*saved.to_string_lossy()), "{err}");
    assert!(!err.contains("seed003_root_domain.toml"), "{err}");
}
