//! `lineup calibrate`: the machine file it writes is what `--machine FILE` reads, `--machine
//! host` picks up the cached copy and says so, and bad input is a one-line error.
//!
//! No timing is asserted: the figures only have to be finite and positive (the development VM
//! is shared, so not even L1 < LLC holds every time).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BTF: &str = "data/vmlinux-6.18.44.btf";
const C2C: &str = "tests/data/c2c/seed000_paste.txt";

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("calibrate-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// lineup with its cache in `cache` (never the user's).
fn lineup_in(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .env("LINEUP_CACHE_DIR", cache)
        .current_dir(common::repo())
        .output()
        .expect("run lineup")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn predict_machine(cache: &Path, machine: &str) -> Value {
    let v = json(&lineup_in(
        cache,
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            machine,
            "--json",
        ],
    ));
    v["machine"].clone()
}

#[test]
fn the_file_it_writes_is_the_machine_predict_uses_and_host_picks_it_up() {
    let dir = scratch("roundtrip");
    let cache = dir.join("cache");
    let file = dir.join("machine.toml");
    let before = predict_machine(&cache, "host");
    assert!(
        before["description"]
            .as_str()
            .unwrap()
            .contains("latencies guessed"),
        "{before}"
    );

    let v = json(&lineup_in(
        &cache,
        &[
            "calibrate",
            "--quick",
            "-o",
            file.to_str().unwrap(),
            "--json",
        ],
    ));
    let m = &v["machine"];
    for k in ["l2_hit", "llc_hit", "local_hitm", "remote_hitm"] {
        let x = m[k].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{k} = {x}");
    }
    let cal = &v["calibration"];
    for x in cal["transfer"]
        .as_array()
        .unwrap()
        .iter()
        .chain(cal["load"].as_array().unwrap())
    {
        let ns = x["ns"].as_f64().unwrap();
        let [lo, hi] = [
            x["spread_ns"][0].as_f64().unwrap(),
            x["spread_ns"][1].as_f64().unwrap(),
        ];
        assert!(ns.is_finite() && ns > 0.0 && lo <= ns && ns <= hi, "{x}");
        assert!(x["samples"].as_u64().unwrap() > 0, "{x}");
    }
    // The levels sysfs describes, then DRAM, in order.
    let levels: Vec<&str> = cal["load"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["what"].as_str().unwrap())
        .collect();
    assert_eq!(levels.last(), Some(&"DRAM"), "{levels:?}");

    // --machine FILE reads exactly the machine calibrate measured.
    let from_file = predict_machine(&cache, file.to_str().unwrap());
    for k in [
        "l2_hit",
        "llc_hit",
        "local_hitm",
        "remote_hitm",
        "cpus",
        "smt",
        "numa_nodes",
        "cacheline_size",
    ] {
        assert_eq!(from_file[k], m[k], "{k}");
    }
    assert!(
        from_file["description"]
            .as_str()
            .unwrap()
            .ends_with(&format!("(from {})", file.display())),
        "{from_file}"
    );

    // The cached copy is what --machine host now uses, and the header says where from.
    let cached = v["cache"].as_str().unwrap();
    assert!(Path::new(cached).starts_with(&cache), "{cached}");
    assert_eq!(
        std::fs::read_to_string(cached).unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );
    let host = predict_machine(&cache, "host");
    assert_eq!(host["local_hitm"], m["local_hitm"]);
    assert_eq!(host["name"], "host");
    assert!(
        host["description"].as_str().unwrap().contains(cached),
        "{host}"
    );
    let text = lineup_in(
        &cache,
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
        ],
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("measured by lineup calibrate --quick on "),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_line_and_writes_nothing() {
    let dir = scratch("bad");
    let cache = dir.join("cache");
    let file = dir.join("m.toml");
    for (args, want) in [
        (
            vec!["calibrate", "--cpus", "0-x"],
            "--cpus 0-x: not a CPU list",
        ),
        (
            vec!["calibrate", "--cpus", "4000"],
            "--cpus 4000: CPU 4000 is not one lineup may run on",
        ),
    ] {
        let mut args = args.clone();
        args.extend(["-o", file.to_str().unwrap()]);
        let out = lineup_in(&cache, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!file.exists());
        assert!(!cache.exists());
    }
    // A machine file that is not one.
    std::fs::write(&file, "[[machine]]\nname = \"x\"\n").unwrap();
    let out = lineup_in(
        &cache,
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            file.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("lineup: --machine {}: ", file.display())),
        "{err}"
    );
    assert!(err.contains("missing field"), "{err}");
    let out = lineup_in(
        &cache,
        &[
            "predict",
            "--type",
            "task_group",
            "--btf",
            BTF,
            "--c2c",
            C2C,
            "--machine",
            "no-such",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such preset or file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_partial_calibration_is_not_cached_and_says_what_it_lacks() {
    let dir = scratch("partial");
    let cache = dir.join("cache");
    // One CPU: no pair at all; every class is said to be absent, the loads are measured.
    let cpu = lineup::bench::calibrate::allowed_cpus()[0].to_string();
    let out = lineup_in(&cache, &["calibrate", "--quick", "--cpus", &cpu]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for class in [
        "SMT siblings",
        "same LLC",
        "other LLC, same node",
        "other node",
    ] {
        assert!(
            text.contains(&format!("{class}: not measured, fewer than two CPUs")),
            "{class} in {text}"
        );
    }
    // No pair: the transfer price stays the generic one, and the file says so.
    assert!(
        text.lines()
            .any(|l| l.trim().starts_with("local_hitm = ") && l.contains("cycles, not measured")),
        "{text}"
    );
    assert!(text.contains("not cached for --machine host"), "{text}");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() != cpu {
        assert!(!cache.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_has_an_example() {
    let out = common::lineup(&["calibrate", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:\n  lineup calibrate"), "{text}");
    assert!(text.contains("--machine host"), "{text}");
}
