//! Rows placed by their functions' prototypes (issue 25 items 3 and 4), on the kernel's own
//! BTF (data/vmlinux-6.18.44.btf: every function's FUNC/FUNC_PROTO) and the real `perf c2c`
//! texts transcribed in tests/data/c2c/.

mod common;

use lineup::analysis::bind::{self, BindInput, Domain, PlacedBy, Selection};
use lineup::analysis::fields::resolve_path;
use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile, import_c2c};
use lineup::readers::{Format, InputFile, load};

fn c2c(name: &str) -> Profile {
    let text = std::fs::read_to_string(common::repo().join("tests/data/c2c").join(name)).unwrap();
    import_c2c(&text).unwrap().remove(0)
}

fn kernel() -> BindInput {
    BindInput {
        domain: Some(Domain::Kernel),
        ..Default::default()
    }
}

fn row(offset: u64, function: &str, loads: f64, stores: f64) -> Access {
    Access {
        offset: Some(offset),
        counts: Counts {
            loads,
            stores,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(function.into()),
            object: Some("[kernel.kallsyms]".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Byte range of member `path` of struct `ty` in the fixture.
fn range(types: &lineup::types::Types<'_>, ty: &str, path: &str) -> std::ops::Range<i64> {
    let id = types.find_composites(ty)[0];
    let (off, size) = resolve_path(types, id, path).unwrap();
    off as i64..(off + size) as i64
}

#[test]
fn the_seed_000_paste_ranks_task_group_first() {
    // Deng Pan's mail: `load_avg` against `rt_se` and `rt_rq` of struct task_group. The rows'
    // functions take a sched_entity (update_cfs_group), a cfs_rq and a sched_entity
    // (update_load_avg), a task_struct (set_task_cpu): task_struct fits only as the bytes of
    // its embedded `se`, which says no more than sched_entity does.
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let p = c2c("seed000_paste.txt");
    let lines = bind::overview(&p, &types, &kernel(), &Selection::default(), false);
    let cands = &lines[0].candidates;
    assert_eq!(cands[0].type_name, "task_group", "{cands:#?}");
    assert_eq!(
        cands[0].fields,
        ["load_avg.counter"; 6]
            .iter()
            .chain(&["rt_se"; 2])
            .chain(&["rt_rq"; 2])
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
    let task_struct = cands.iter().find(|c| c.type_name == "task_struct").unwrap();
    let sched_entity = cands
        .iter()
        .find(|c| c.type_name == "sched_entity")
        .unwrap();
    assert!(task_struct.score < sched_entity.score, "{cands:#?}");
    assert!(
        task_struct
            .reasons
            .iter()
            .any(|r| r.contains("every row lies inside task_struct.se")),
        "{task_struct:#?}"
    );
}

#[test]
fn the_overview_keeps_the_struct_of_each_real_paste_first() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    // seed 003's cpupri line (pri_to_cpu[99] of struct cpupri), and the futex bucket of
    // the perf 6 sample.
    for (name, address, expect) in [
        (
            "lkml_seed003_cpupri_vec.txt",
            0xff14d42c400e3ec0u64,
            "cpupri",
        ),
        (
            "perf6_hitm_full.txt",
            0xffff8f2a41c3d240,
            "futex_hash_bucket",
        ),
        ("seed000_paste.txt", 0xff284d17b5c0fa00, "task_group"),
    ] {
        let p = c2c(name);
        let lines = bind::overview(&p, &types, &kernel(), &Selection::default(), false);
        let line = lines.iter().find(|l| l.address == address).unwrap();
        assert_eq!(line.candidates[0].type_name, expect, "{name}: {line:#?}");
    }
}

#[test]
fn functions_taking_an_embedded_struct_place_their_rows_inside_it() {
    // The second root_domain line of seed 003 (patch 2/4) on the 6.18 layout: cpupri_set and
    // cpupri_find_fitness take a `struct cpupri *`, which root_domain embeds as `cpupri`.
    // Offsets alone put them on `rto_mask` (the kernel behind the mail had 8-byte cpumasks);
    // the prototypes put them inside `cpupri`, and the rows say so.
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("root_domain")[0];
    let mut p = c2c("lkml_seed003_root_domain.txt");
    let out = bind::bind_type(&mut p, &types, id, "root_domain", &kernel());
    let cpupri = range(&types, "root_domain", "cpupri");
    let line3 = out
        .bound
        .iter()
        .find(|b| b.address == 0xff14d42c400e3880)
        .unwrap_or_else(|| panic!("{out:#?}"));
    let rows: Vec<_> = line3
        .rows
        .iter()
        .filter(|r| {
            r.function
                .as_deref()
                .is_some_and(|f| f.starts_with("cpupri_"))
        })
        .collect();
    assert_eq!(rows.len(), 6, "{line3:#?}");
    for r in &rows {
        assert!(cpupri.contains(&r.struct_offset), "{r:#?}");
        assert_eq!(r.placed_by, PlacedBy::Prototype, "{r:#?}");
        assert!(
            r.why.contains("takes struct cpupri: root_domain.cpupri"),
            "{r:?}"
        );
    }
    // Rows of functions whose prototypes take the struct itself (through rq->rd) are
    // placed by their offsets, and say so.
    let pull = line3
        .rows
        .iter()
        .find(|r| r.function.as_deref() == Some("pull_rt_task"))
        .unwrap();
    assert_eq!(pull.placed_by, PlacedBy::OffsetOnly);
    assert!(pull.why.contains("rq->rd"), "{pull:?}");
    // The rows of irq_work_queue_on/irq_work_single (taking an irq_work) and of the spinlock
    // functions (a raw_spinlock) are placed by prototype too, in rto_push_work and rto_lock:
    // the overview's joint placement, which `--type` binds with.
    for (function, member) in [
        ("irq_work_queue_on", "rto_push_work"),
        ("_raw_spin_lock", "rto_lock"),
    ] {
        let r = line3
            .rows
            .iter()
            .find(|r| r.function.as_deref() == Some(function))
            .unwrap_or_else(|| panic!("{function}: {line3:#?}"));
        assert_eq!(r.placed_by, PlacedBy::Prototype, "{r:#?}");
        assert!(r.member.starts_with(member), "{r:#?}");
    }
    let summary = bind::rows_summary(line3).unwrap();
    assert!(summary.contains("11 by prototype"), "{summary}");
}

#[test]
fn a_placement_against_the_prototypes_loses_to_one_that_follows_them() {
    // Two rows 8 bytes apart fit many placements in mm_struct by offset. down_write and
    // rwsem_spin_on_owner take a `struct rw_semaphore *`: the placement puts them inside one
    // of the rw_semaphores mm_struct embeds, and no row outside one.
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("mm_struct")[0];
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0xffff_8881_0000_0040,
        accesses: vec![
            row(0x8, "down_write", 100.0, 300.0),
            row(0x10, "rwsem_spin_on_owner", 900.0, 0.0),
        ],
        ..Default::default()
    });
    let out = bind::bind_type(&mut p, &types, id, "mm_struct", &kernel());
    assert_eq!(out.bound.len(), 1, "{out:#?}");
    for r in &out.bound[0].rows {
        assert_eq!(r.placed_by, PlacedBy::Prototype, "{r:#?}");
        assert!(
            r.member.contains("mmap_lock") || r.member.contains("lock"),
            "{r:#?}"
        );
    }
    // The same rows by functions of unknown prototype: placed by offset only.
    let mut q = Profile::new("test", lineup::profile::Unit::Samples, 64);
    q.lines.push(LineProfile {
        address: 0xffff_8881_0000_0040,
        accesses: vec![
            row(0x8, "no_such_function_a", 100.0, 300.0),
            row(0x10, "no_such_function_b", 900.0, 0.0),
        ],
        ..Default::default()
    });
    let out = bind::bind_type(&mut q, &types, id, "mm_struct", &kernel());
    assert!(
        out.bound[0]
            .rows
            .iter()
            .all(|r| r.placed_by == PlacedBy::OffsetOnly),
        "{out:#?}"
    );
}
