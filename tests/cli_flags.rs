//! One vocabulary across commands (issue 17 item 1): every subcommand's `--help` is read and
//! the shared flags are checked where they apply, and the old spellings still work hidden.

mod common;

/// The flags a subcommand's `--help` lists (long and short options at the start of an entry).
fn flags(cmd: &str) -> Vec<String> {
    let out = common::lineup(&[cmd, "--help"]);
    assert!(out.status.success(), "{cmd} --help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut found = Vec::new();
    for line in text.lines() {
        let entry = line.trim_start();
        if !entry.starts_with('-') {
            continue;
        }
        // "-C, --type <TYPE>" or "--cacheline-size <BYTES>": the names before the value.
        for word in entry.split([' ', ',']) {
            if word.starts_with('-') {
                found.push(word.split('=').next().unwrap().to_string());
            } else if !word.is_empty() {
                break;
            }
        }
    }
    found
}

/// The subcommands `lineup --help` lists.
fn subcommands() -> Vec<String> {
    let out = common::lineup(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = text.find("Commands:").unwrap();
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn shared_flags_are_where_they_apply() {
    let cmds = subcommands();
    for c in [
        "layout", "diagnose", "optimize", "predict", "replay", "record", "check", "diff",
    ] {
        assert!(cmds.iter().any(|x| x == c), "{c} not in {cmds:?}");
    }
    // Which shared flag applies to which command.
    let subject = [
        "layout", "diagnose", "optimize", "predict", "replay", "diff",
    ];
    let line_size = [
        "layout", "diagnose", "optimize", "predict", "replay", "diff", "record",
    ];
    let json = [
        "layout",
        "diagnose",
        "optimize",
        "predict",
        "replay",
        "bench",
        "check",
        "diff",
        "calibrate",
    ];
    let layout_source = [
        "layout", "diagnose", "optimize", "predict", "replay", "check",
    ];
    for cmd in &cmds {
        if cmd == "cc" || cmd == "c++" {
            continue; // compiler wrappers: their options are the compiler's
        }
        let f = flags(cmd);
        let has = |flag: &str| f.iter().any(|x| x == flag);
        assert!(has("--help"), "{cmd}: {f:?}");
        if subject.contains(&cmd.as_str()) {
            assert!(has("--type"), "{cmd} lacks --type: {f:?}");
        }
        if line_size.contains(&cmd.as_str()) {
            assert!(
                has("--cacheline-size"),
                "{cmd} lacks --cacheline-size: {f:?}"
            );
        }
        if json.contains(&cmd.as_str()) {
            assert!(has("--json"), "{cmd} lacks --json: {f:?}");
        }
        if layout_source.contains(&cmd.as_str()) {
            assert!(has("--btf") && has("--dwarf"), "{cmd}: {f:?}");
        }
        // One name for the line size; the old one is at most a hidden alias.
        assert!(!has("--line-size"), "{cmd} shows --line-size: {f:?}");
    }
    // pahole's spelling on layout.
    assert!(flags("layout").iter().any(|x| x == "-C"));
    // record's heap-block types no longer take the name every other command gives the subject.
    let rec = flags("record");
    assert!(rec.iter().any(|x| x == "--heap-type") && !rec.iter().any(|x| x == "--type"));
}

#[test]
fn old_record_spellings_still_parse() {
    // Parsing only: a missing program after `--` fails after the options were accepted.
    for old in [&["--line-size", "64"][..], &["--type", "s"][..]] {
        let out =
            common::lineup(&[&["record"][..], old, &["--", "/nonexistent/prog"][..]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            !err.contains("unexpected argument"),
            "{old:?} rejected: {err}"
        );
        assert!(err.contains("/nonexistent/prog"), "{old:?}: {err}");
    }
}
