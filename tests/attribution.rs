//! Binding c2c cache-line offsets to struct fields on the real 6.18 kernel BTF.

mod common;

use lineup::analysis::attribute::{LineAccess, candidates, rank_types};
use lineup::analysis::fields::{leaf_at, leaves};
use lineup::readers::{Format, InputFile, load};

fn access(offset: u64, weight: f64, store_share: f64, sym: &str) -> LineAccess {
    LineAccess {
        offset,
        size: None,
        weight,
        store_share,
        symbols: vec![sym.to_string()],
        types: Vec::new(),
    }
}

/// Seed 000's contended line: offset 0x0 stored by update_load_avg and loaded by
/// update_cfs_group; 0x8 and 0x10 loaded by set_task_cpu (weights: remote HITM shares from
/// the paste's Pareto table; update_load_avg's rows hold the line's stores).
fn seed000_accesses() -> Vec<LineAccess> {
    vec![
        access(0x0, 63.72, 0.0, "update_cfs_group"),
        access(0x0, 7.47 + 0.58, 1.0, "update_load_avg"),
        access(0x8, 14.16, 0.0, "set_task_cpu"),
        access(0x10, 13.87, 0.0, "set_task_cpu"),
    ]
}

#[test]
fn seed000_line_is_task_group_line_4() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let tg = types.find_composites("task_group")[0];
    let c = candidates(&types, tg, &seed000_accesses(), 64);
    let best = &c[0];
    assert_eq!(best.line_start, 256, "{c:#?}");
    assert_eq!(best.line_index, 4);
    assert!(
        (best.fit - 1.0).abs() < 1e-9,
        "every offset starts a field: {best:?}"
    );
    assert_eq!(
        best.fields,
        ["load_avg.counter", "load_avg.counter", "rt_se", "rt_rq"]
    );
    // Other lines fit the offsets too; the names break the tie, and say by how much.
    assert!(c.iter().filter(|x| (x.fit - 1.0).abs() < 1e-9).count() > 1);
    assert!((best.writes_on_atomics - 1.0).abs() < 1e-9, "{best:?}");
    assert!(best.score() > c[1].score(), "{c:#?}");
}

#[test]
fn offsets_resolve_through_nested_structs_and_arrays() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let tg = types.find_composites("task_group")[0];
    let l = leaves(&types, tg);
    // css is a nested struct; its first member is css.cgroup.
    assert_eq!(leaf_at(&l, 0).unwrap().path, "css.cgroup");
    assert_eq!(leaf_at(&l, 256).unwrap().path, "load_avg.counter");
    let ts = types.find_composites("task_struct")[0];
    let l = leaves(&types, ts);
    let pid_links = leaf_at(&l, 1376 + 16 * 2).unwrap();
    assert_eq!(pid_links.path, "pid_links[2].next");
    assert_eq!(pid_links.top, "pid_links");
}

#[test]
fn without_a_type_task_group_is_a_candidate() {
    // Three offsets fit thousands of kernel structs; the ranking cannot single task_group out
    // without the type, and lineup says so. It must at least be among the candidates shown.
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let ranked = rank_types(&types, &seed000_accesses(), 64, 50);
    assert!(!ranked.is_empty());
    let pos = ranked.iter().position(|c| c.type_name == "task_group");
    assert!(
        pos.is_some(),
        "task_group not in the top 50: {:?}",
        ranked.iter().map(|c| &c.type_name).collect::<Vec<_>>()
    );
}

#[test]
fn dotted_paths_resolve_to_offsets() {
    use lineup::analysis::fields::resolve_path;
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let tg = types.find_composites("task_group")[0];
    assert_eq!(resolve_path(&types, tg, "load_avg"), Some((256, 8)));
    assert_eq!(resolve_path(&types, tg, "load_avg.counter"), Some((256, 8)));
    assert_eq!(resolve_path(&types, tg, "no_such_field"), None);
    let rd = types.find_composites("root_domain")[0];
    let (base, _) = resolve_path(&types, rd, "cpupri").unwrap();
    let (c0, size) = resolve_path(&types, rd, "cpupri.pri_to_cpu[0].count").unwrap();
    let (c1, _) = resolve_path(&types, rd, "cpupri.pri_to_cpu[1].count").unwrap();
    assert_eq!(c0, base);
    assert_eq!(size, 4);
    assert!(c1 > c0, "element 1 lies after element 0");
    assert_eq!(
        resolve_path(&types, rd, "cpupri.pri_to_cpu[100000].count"),
        None
    );
}
