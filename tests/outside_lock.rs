//! Data accessed only under a lock that is not a member of the struct (issue 24 items 1 and 9;
//! `docs/cost-model.md`, "Data under a lock outside the struct"): the evidence names the lock
//! (`under_lock` in a sketch), the model prices the accesses as hand-offs of the lock's
//! critical sections (true sharing), `diagnose` says "true sharing under <lock>: no layout
//! helps", `optimize` leaves the layout alone and `predict` prices padding the members apart as
//! a loss. Without the lock the same evidence is false sharing that moving fixes: the lock is
//! what changes the answer.

use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::lineup_json;

/// A hash table's header, guarded by its bucket's lock (outside the struct): `find` reads
/// `mask` and `slots`, `add` writes `count` and reads the other two, from every CPU.
const TABLE: &str = "#include <stdint.h>\n\
struct table {\n\tuint32_t mask;\n\tuint32_t count;\n\tvoid **slots;\n\tuint64_t hits;\n};\n\
struct table t;\n";

/// Each member on a line of its own: the padding the lock makes pointless.
const PADDED: &str = "struct table {\n\tuint32_t mask __attribute__((aligned(64)));\n\
\tuint32_t count __attribute__((aligned(64)));\n\tvoid **slots __attribute__((aligned(64)));\n\
\tunsigned long hits __attribute__((aligned(64)));\n};\n";

/// A directory of this test's own: the tests run on parallel threads, and one writing
/// `table.o` while another's lineup reads it fails the reader.
fn scratch() -> PathBuf {
    let test = std::thread::current()
        .name()
        .unwrap_or("main")
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "-");
    let d = std::env::temp_dir().join(format!("lineup-outside-lock-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The object file with `struct table`, and the padded candidate header.
fn inputs() -> (String, String) {
    let d = scratch();
    std::fs::write(d.join("table.c"), TABLE).unwrap();
    std::fs::write(d.join("padded.h"), PADDED).unwrap();
    let obj = d.join("table.o");
    common::cc_object(&d.join("table.c"), &obj);
    (
        obj.display().to_string(),
        d.join("padded.h").display().to_string(),
    )
}

/// A sketch of `find` and `add` on 64 CPUs, under `lock` when one is given (per type), and
/// `extra` accesses appended.
fn sketch(name: &str, lock: Option<&str>, extra: &str) -> String {
    let under = lock.map_or(String::new(), |l| format!("under_lock = \"{l}\"\n"));
    let text = format!(
        "[machine]\ncpus = 64\nnuma_nodes = 2\n\n[[type]]\nname = \"table\"\n{under}\
access = [\n\
  {{ field = \"mask\", kind = \"load\", by = \"find\", weight = 100, cpus = \"all\" }},\n\
  {{ field = \"slots\", kind = \"load\", by = \"find\", weight = 100, cpus = \"all\" }},\n\
  {{ field = \"mask\", kind = \"load\", by = \"add\", weight = 20, cpus = \"all\" }},\n\
  {{ field = \"slots\", kind = \"load\", by = \"add\", weight = 20, cpus = \"all\" }},\n\
  {{ field = \"count\", kind = \"store\", by = \"add\", weight = 20, cpus = \"all\" }},\n\
{extra}]\n"
    );
    let p = scratch().join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn run(cmd: &str, obj: &str, sketch: &str, more: &[&str]) -> Value {
    let mut args = vec![
        cmd,
        "--type",
        "table",
        "--dwarf",
        obj,
        "--sketch",
        sketch,
        "--machine",
        "icelake-2s",
        "--json",
    ];
    args.extend_from_slice(more);
    lineup_json(&args)
}

/// Whether `optimize` proposes the layout as it is: every member where it was, same size.
fn unchanged(o: &Value) -> bool {
    let offsets = o["plan"]["placement"]["offsets"].as_array().unwrap();
    o["units"]
        .as_array()
        .unwrap()
        .iter()
        .zip(offsets)
        .all(|(u, off)| u["offset"].as_u64() == off.as_u64())
        && o["plan"]["placement"]["size"] == o["current"]["size"]
}

fn line0(d: &Value) -> &Value {
    d["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["index"] == 0)
        .expect("line 0 is diagnosed")
}

fn total(p: &Value, layout: &str) -> f64 {
    p["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"].as_str().is_some_and(|n| n.ends_with(layout)))
        .unwrap_or_else(|| panic!("no layout {layout}"))["total_cycles"]
        .as_f64()
        .unwrap()
}

#[test]
fn data_under_a_lock_outside_the_struct_is_true_sharing_under_it_and_no_layout_helps() {
    let (obj, padded) = inputs();
    let locked = sketch("locked", Some("bucket->lock"), "");
    let d = run("diagnose", &obj, &locked, &[]);
    let line = line0(&d);
    assert_eq!(line["verdict"], "true_sharing", "{line}");
    let why = line["explanation"].as_str().unwrap();
    assert!(
        why.starts_with(
            "true sharing under `bucket->lock`: no layout helps; take the lock less often, or shard what it guards"
        ),
        "{why}"
    );
    for m in ["`mask`", "`count`", "`slots`", "add and find"] {
        assert!(why.contains(m), "{m}: {why}");
    }
    // Every term is a hand-off under that lock: no false sharing between the sections.
    let terms = line["terms"].as_array().unwrap();
    assert!(!terms.is_empty());
    for t in terms {
        assert_eq!(t["class"], "hand_off", "{t}");
        assert_eq!(t["lock"], "bucket->lock", "{t}");
    }
    assert!(line["cost"].as_f64().unwrap() > 0.0, "the hand-offs cost");

    let o = run("optimize", &obj, &locked, &[]);
    assert!(
        unchanged(&o),
        "optimize moves data under one lock: {}",
        o["plan"]
    );
    assert!(
        o["splits"].as_array().is_none_or(|s| s.is_empty()),
        "{}",
        o["splits"]
    );

    // Padding each member to its own line makes each hand-off move more lines: a loss.
    let p = run("predict", &obj, &locked, &["--layout", &padded]);
    let (now, pad) = (total(&p, "current"), total(&p, "padded.h"));
    assert!(pad > now * 1.5, "padded {pad} against current {now}");
}

#[test]
fn without_the_lock_the_same_evidence_is_false_sharing_that_moving_fixes() {
    let (obj, padded) = inputs();
    let free = sketch("free", None, "");
    let line = line0(&run("diagnose", &obj, &free, &[])).clone();
    assert_eq!(line["verdict"], "false_sharing", "{line}");
    assert!(!unchanged(&run("optimize", &obj, &free, &[])));
    let p = run("predict", &obj, &free, &["--layout", &padded]);
    assert!(total(&p, "padded.h") < total(&p, "current"));
}

#[test]
fn a_lock_under_which_nothing_writes_the_struct_moves_nothing() {
    // Only loads under the lock: the line stays shared in every cache.
    let (obj, _) = inputs();
    let text = "[machine]\ncpus = 64\n[[type]]\nname = \"table\"\nunder_lock = \"bucket->lock\"\n\
access = [\n\
  { field = \"mask\", kind = \"load\", by = \"find\", weight = 100, cpus = \"all\" },\n\
  { field = \"slots\", kind = \"load\", by = \"walk\", weight = 100, cpus = \"all\" },\n]\n";
    let p = scratch().join("readers.toml");
    std::fs::write(&p, text).unwrap();
    let d = run("diagnose", &obj, &p.display().to_string(), &[]);
    let line = line0(&d);
    assert_ne!(line["verdict"], "true_sharing", "{line}");
    assert_eq!(line["cost"].as_f64().unwrap(), 0.0, "{line}");
}

#[test]
fn a_reader_outside_the_lock_still_falsely_shares_the_sections_line() {
    // `hits` is read by a path that takes no lock, beside the sections' data: each hand-off
    // invalidates its copy, and moving it off the line removes that. The lock is named on
    // each access made under it (a type-wide `under_lock` would put `stats` under it too).
    let (obj, _) = inputs();
    let locked = std::fs::read_to_string(sketch("mixed", None, ""))
        .unwrap()
        .replace(
            "cpus = \"all\" }",
            "cpus = \"all\", under_lock = \"bucket->lock\" }",
        );
    let text = format!(
        "{}  {{ field = \"hits\", kind = \"load\", by = \"stats\", weight = 400, cpus = \"all\" }},\n]\n",
        locked.trim_end().strip_suffix(']').unwrap()
    );
    let p = scratch().join("mixed-hits.toml");
    std::fs::write(&p, text).unwrap();
    let sketch = p.display().to_string();
    let line = line0(&run("diagnose", &obj, &sketch, &[])).clone();
    assert_eq!(line["verdict"], "false_sharing", "{line}");
    assert!(
        line["explanation"].as_str().unwrap().contains("`hits`"),
        "{line}"
    );
    let o = run("optimize", &obj, &sketch, &[]);
    assert!(
        !unchanged(&o),
        "the lockless reader moves off the sections' line"
    );
}
