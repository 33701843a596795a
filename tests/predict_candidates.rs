//! `predict` prices every member a candidate declares (issue 24 item 10): explicit padding the
//! struct lacks moves what follows, and the output says which members the struct lacks.

use std::process::Command;

#[test]
fn a_padding_member_the_struct_lacks_is_priced_where_it_falls() {
    let dir =
        std::env::temp_dir().join(format!("lineup-predict-candidates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.as_path();
    std::fs::write(
        d.join("s.c"),
        "struct two { long a; long b; long c; };\nstruct two x;\n",
    )
    .unwrap();
    std::fs::write(
        d.join("pad.h"),
        "struct two { long a; char pad[56]; long b; long c; };\n",
    )
    .unwrap();
    std::fs::write(
        d.join("sk.toml"),
        r#"[sketch]
title = "two writers"
[machine]
cpus = 8
numa_nodes = 1
cacheline_size = 64
[[type]]
name = "two"
[[type.access]]
field = "a"
kind = "store"
by = "f"
weight = 100
cpus = [0]
[[type.access]]
field = "b"
kind = "store"
by = "g"
weight = 100
cpus = [1]
"#,
    )
    .unwrap();
    let cc = Command::new("cc")
        .args(["-g", "-c", "s.c", "-o", "s.o"])
        .current_dir(d)
        .status()
        .expect("cc");
    assert!(cc.success());
    let out = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args([
            "predict",
            "--type",
            "two",
            "--dwarf",
            "s.o",
            "--sketch",
            "sk.toml",
            "--layout",
            "pad.h",
            "--machine",
            "icelake-2s",
            "--no-lineup",
            "--json",
        ])
        .current_dir(d)
        .output()
        .expect("lineup");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v["layouts"].as_array().unwrap();
    let (current, pad) = (&rows[0], &rows[1]);
    // The pad puts b on the next line: a is off b's line, no false sharing left, 80 bytes.
    assert_eq!(current["cost"]["size"], 24, "{current}");
    assert_eq!(pad["cost"]["size"], 80, "{pad}");
    assert!(
        current["cost"]["false_transfers"].as_f64().unwrap() > 0.0,
        "{current}"
    );
    assert_eq!(pad["cost"]["false_transfers"].as_f64(), Some(0.0), "{pad}");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("pad (56 bytes at 8)")),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
