//! One rule for replicas (issue 25 item 8): a userspace-compiled replica of a kernel struct
//! (tests/data/c2c/root_domain_v6.16_replica.c, after seed 003's patch) binds the kernel
//! lines of the mail's c2c text (tests/data/c2c/lkml_seed003_root_domain.txt) the same way
//! in diagnose, optimize and predict, and each of them prints the binding.

mod common;

use std::process::Command;

/// The replica compiled into an object of the calling test's own (the tests run in parallel
/// threads of one process: one shared `rd.o` was written by one `cc` while the other read it).
fn replica(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lineup-binding-rule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join(format!("rd-{test}.o"));
    let st = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&obj)
        .arg(common::repo().join("tests/data/c2c/root_domain_v6.16_replica.c"))
        .status()
        .expect("cc");
    assert!(st.success());
    obj
}

/// "data line 0x... is bytes A..B" from a command's text, per line address.
fn placements(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start_matches("binding: ");
            let rest = rest.strip_prefix("data line ")?;
            let (addr, rest) = rest.split_once(" is bytes ")?;
            let bytes = rest.split_whitespace().next()?;
            Some((addr.to_string(), bytes.to_string()))
        })
        .collect()
}

#[test]
fn a_replica_binds_alike_in_every_command_and_each_shows_the_binding() {
    let obj = replica("alike");
    let c2c = "tests/data/c2c/lkml_seed003_root_domain.txt";
    let base = [
        "--c2c",
        c2c,
        "--dwarf",
        obj.to_str().unwrap(),
        "--type",
        "root_domain",
    ];
    let mut seen = Vec::new();
    for cmd in ["diagnose", "optimize", "predict"] {
        let mut args = vec![cmd];
        args.extend(base);
        let out = common::lineup(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("userspace type"), "{cmd}: {text}");
        let p = placements(&text);
        assert_eq!(p.len(), 2, "{cmd} shows both lines' binding: {text}");
        if cmd != "diagnose" {
            // Which row went to which member: rto_count is at offset 4 of the replica.
            assert!(
                text.contains("at line offset 0x4 -> struct offset 4: rto_count"),
                "{cmd}: {text}"
            );
            assert!(text.contains("(inferred: offsets: "), "{cmd}: {text}");
        }
        seen.push((cmd, p));
    }
    // The same placement everywhere.
    for w in seen.windows(2) {
        assert_eq!(w[0].1, w[1].1, "{} and {} differ", w[0].0, w[1].0);
    }
}

#[test]
fn a_userspace_program_in_the_rows_is_still_userspace() {
    // The types of a program the rows run are that program's: kernel lines of the same
    // report stay unbound with the reason, in diagnose as before.
    let obj = replica("userspace");
    let out = common::lineup(&[
        "diagnose",
        "--c2c",
        "tests/data/c2c/perf6_hitm_full.txt",
        "--dwarf",
        obj.to_str().unwrap(),
        "--type",
        "root_domain",
    ]);
    // rd.o is not the program the rows run (ringbench, the kernel): no side is claimed, and
    // the lines are judged by their offsets and prototypes alone, without a panic or a
    // partial output on failure.
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(out.stdout.is_empty());
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!err.contains("is a userspace type"), "{err}");
    }
}
