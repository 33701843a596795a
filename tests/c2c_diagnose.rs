//! `diagnose` on real reports (issue 14): the members the mails name, with the engineers'
//! verdict; loads-only evidence (a HITM proves a writer even when no store was sampled); and
//! evidence taken on another kernel, whose offsets do not fit this layout.
//!
//! The reports are in `tests/data/c2c/` (each names its source); layouts come from the fixture
//! BTF (Linux 6.18) or from a C replica of the layout the source shows, compiled with `cc -g`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{lineup_json, repo};

const BTF: &str = "data/vmlinux-6.18.44.btf";

fn data(name: &str) -> String {
    repo()
        .join("tests/data/c2c")
        .join(name)
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-c2c-diag-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn memcg_loads_only_line_is_false_sharing_with_an_unsampled_writer() {
    // Feng Tang's reply on 2d146aa3aa: 2036 local HITMs, no store sampled; css.cgroup (0x0)
    // against css.refcnt (0x10) of the css at the start of struct mem_cgroup.
    let d = lineup_json(&[
        "diagnose",
        "--type",
        "cgroup_subsys_state",
        "--btf",
        BTF,
        "--c2c",
        &data("lkml_memcg_rstat_loads_only.txt"),
        "--line-offset",
        "0",
        "--json",
    ]);
    let l = common::diagnosed_line(&d, "cgroup");
    assert_eq!(l["verdict"], "false_sharing", "{l:#}");
    let names: Vec<&str> = l["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"refcnt"), "{names:?}");
    let why = l["explanation"].as_str().unwrap();
    assert!(why.contains("unsampled"), "{why}");
    assert!(why.contains("get_mem_cgroup_from_mm"), "{why}");
}

#[test]
fn go_counters_loads_only_replica() {
    // perfgo's README: Metrics{RequestsTotal, CronJobRuns int64} at line offsets 0x30 and
    // 0x38, HITMs on both, no store in the report. The replica is the struct the README shows;
    // the line starts 48 bytes before it.
    let dir = scratch("go");
    let src = dir.join("metrics.c");
    std::fs::write(
        &src,
        "struct Metrics { long long RequestsTotal; long long CronJobRuns; };\n\
         struct Metrics metrics;\n",
    )
    .unwrap();
    let obj = dir.join("metrics.o");
    let st = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(st.success());
    let d = lineup_json(&[
        "diagnose",
        "--type",
        "Metrics",
        "--dwarf",
        obj.to_str().unwrap(),
        "--c2c",
        &data("github_perfgo_amd_ibs_loads_only.txt"),
        "--line-offset",
        "-48",
        "--json",
    ]);
    let l = common::diagnosed_line(&d, "RequestsTotal");
    assert_eq!(l["verdict"], "false_sharing", "{l:#}");
    assert!(
        l["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "CronJobRuns")
    );
    assert!(l["explanation"].as_str().unwrap().contains("unsampled"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn member_named_by_the_evidence_places_a_misfit() {
    // Data-type evidence (perf report -s type,typeoff) from a kernel where i_mmap_rwsem
    // followed i_mmap directly (Linux 6.4, Lipeng Zhu's report in
    // tests/data/c2c/lkml_address_space_i_mmap.txt): in 6.18 i_mmap_rwsem sits after
    // i_private_list, and its wait_lock's old offset (i_mmap + 16 + 20) is 4 bytes into the
    // `a_ops` pointer. The member name places it; the offset alone could not.
    use lineup::profile::{Access, Counts, Profile, TypeProfile, Unit};
    let v = lineup_json(&["layout", "--btf", BTF, "address_space", "--json"]);
    let off_of = |name: &str| {
        v["types"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()["offset"]
            .as_u64()
            .unwrap()
    };
    let (i_mmap, rwsem) = (off_of("i_mmap"), off_of("i_mmap_rwsem"));
    assert!(rwsem > i_mmap + 16, "6.18 pads before i_mmap_rwsem");
    let mut p = Profile::new("perf report", Unit::Samples, 64);
    let access = |offset: u64, field: &str, loads: f64, stores: f64| Access {
        offset: Some(offset),
        field: Some(field.into()),
        counts: Counts {
            loads,
            stores,
            ..Default::default()
        },
        ..Default::default()
    };
    p.types.push(TypeProfile {
        type_name: "address_space".into(),
        note: None,
        accesses: vec![
            access(i_mmap, "i_mmap", 100.0, 50.0),
            access(i_mmap + 36, "i_mmap_rwsem.wait_lock", 300.0, 80.0),
        ],
        ..Default::default()
    });
    let dir = scratch("typeoff");
    let json = dir.join("p.json");
    std::fs::write(&json, p.to_json()).unwrap();
    let d = lineup_json(&[
        "diagnose",
        "--type",
        "address_space",
        "--btf",
        BTF,
        "--profile",
        json.to_str().unwrap(),
        "--json",
    ]);
    let misfits = d["misfits"].as_array().unwrap();
    assert_eq!(misfits.len(), 1, "{misfits:?}");
    let m = misfits[0].as_str().unwrap();
    assert!(m.contains("4 bytes into `a_ops`"), "{m}");
    assert!(m.contains("placed on `i_mmap_rwsem`"), "{m}");
    let member = d["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "i_mmap_rwsem")
        .expect("the access counted on i_mmap_rwsem");
    assert_eq!(member["counts"]["loads"], 300.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_data_gets_a_hint_and_latin1_a_warning() {
    let dir = scratch("inputs");
    // The first bytes of every perf.data file.
    let pd = dir.join("perf.data");
    std::fs::write(&pd, b"PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00").unwrap();
    let out = common::lineup(&["import", "--c2c", pd.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("perf.data") && err.contains("--perf-data"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // A mail archive's Latin-1 plus-minus sign in the prose above a real table.
    let text = std::fs::read_to_string(data("lkml_memcg_rstat_loads_only.txt")).unwrap();
    let at = text.find("very few").unwrap();
    let mut bytes = text.clone().into_bytes();
    bytes.insert(at, 0xb1);
    let latin = dir.join("mail.txt");
    std::fs::write(&latin, &bytes).unwrap();
    let line = text[..at].lines().count();
    let out = common::lineup(&["import", "--c2c", latin.to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("line {line} not UTF-8")) && err.contains("not UTF-8"),
        "{err}"
    );
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["lines"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tugtest_struct_foo_replica() {
    // Joe Mario's tugtest: struct __foo { uint64_t m1, m2, m3; } starts 0x10 into the line
    // (hotVar sits before it). Writers on node 0 store m1 while readers on node 1 load it and
    // store m3: members written from different CPUs on one line.
    let dir = scratch("tug");
    let src = dir.join("tug.c");
    std::fs::write(
        &src,
        "#include <stdint.h>\nstruct __foo { uint64_t m1; uint64_t m2; uint64_t m3; };\n\
         struct __foo foo;\n",
    )
    .unwrap();
    let obj = dir.join("tug.o");
    let st = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(st.success());
    let d = lineup_json(&[
        "diagnose",
        "--type",
        "__foo",
        "--dwarf",
        obj.to_str().unwrap(),
        "--c2c",
        &data("lkml_tugtest_nnn_cpu_lists.txt"),
        "--line-offset",
        "-16",
        "--json",
    ]);
    let l = common::diagnosed_line(&d, "m1");
    assert_eq!(l["verdict"], "false_sharing", "{l:#}");
    let why = l["explanation"].as_str().unwrap();
    assert!(why.contains("`m1` is stored by writer"), "{why}");
    assert!(why.contains("`m3` is stored by reader"), "{why}");
    let _ = std::fs::remove_dir_all(&dir);
}
