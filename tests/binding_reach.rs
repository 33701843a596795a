//! Prototypes that reach further (issue 14): a function that takes a `struct rq *` gets at
//! the `struct cfs_rq` embedded in it as `rq.cfs`; the overview ranks such types from what
//! the rows' functions can reach, nearer first, on the real 6.18 BTF.

mod common;

use lineup::analysis::bind::{self, BindInput, Domain, Selection};
use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile};
use lineup::readers::{Format, InputFile, load};

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

/// The first line of the runqueue's `cfs` (in the fixture `rq.cfs` is at byte 128, and
/// `cfs_rq.nr_queued`/`h_nr_queued` at 16/20): kernel/sched/fair.c's pick_next_task_fair
/// tests `rq->cfs.nr_queued` (sched_fair_runnable) and enqueue_task_fair/dequeue_task_fair
/// count `h_nr_queued` up and down on every cfs_rq of the hierarchy, the root `&rq->cfs`
/// included. All three take a `struct rq *` (and a `struct task_struct *`); none takes a
/// `struct cfs_rq *`. The weights are made up; the functions, prototypes and offsets are
/// the kernel's.
const CFS_LINE: u64 = 0xff11_0003_fba3_5a80;

fn cfs_line() -> LineProfile {
    LineProfile {
        address: CFS_LINE,
        rank: Some(0),
        accesses: vec![
            row(16, "pick_next_task_fair", 600.0, 0.0),
            row(20, "enqueue_task_fair", 150.0, 150.0),
            row(20, "dequeue_task_fair", 150.0, 150.0),
        ],
        ..Default::default()
    }
}

#[test]
fn overview_reaches_cfs_rq_through_the_rq_that_embeds_it() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(cfs_line());
    let input = BindInput {
        domain: Some(Domain::Kernel),
        ..Default::default()
    };
    let lines = bind::overview(&p, &types, &input, &Selection::default(), false);
    let c = &lines[0].candidates;
    let names: Vec<&str> = c.iter().map(|c| c.type_name.as_str()).collect();
    // The structs the prototypes take rank first (each function takes both an rq and a
    // task, so offsets alone cannot part them); the embedded cfs_rq next, ahead of the
    // structs only a pointer away.
    assert_eq!(names[..3], ["rq", "task_struct", "cfs_rq"], "{c:#?}");
    let (rq, cfs) = (&c[0], &c[2]);
    assert_eq!(rq.line_start, 128, "{rq:#?}");
    assert!((rq.prototypes.direct - 1.0).abs() < 1e-9);
    // cfs_rq: no function takes it, every one reaches it embedded as rq.cfs; the parent's
    // placement puts the line at cfs_rq's first bytes, where nr_queued and h_nr_queued are.
    assert_eq!(cfs.prototypes.direct, 0.0);
    assert!((cfs.prototypes.embedded - 1.0).abs() < 1e-9, "{cfs:#?}");
    assert!(
        cfs.prototypes
            .paths
            .contains(&"pick_next_task_fair (rq.cfs)".to_string()),
        "{cfs:#?}"
    );
    assert_eq!(cfs.line_start, 0);
    assert_eq!(cfs.fields, ["nr_queued", "h_nr_queued", "h_nr_queued"]);
    assert!(
        cfs.reasons
            .iter()
            .any(|r| r == "embedded as rq.cfs at byte 128: this line is bytes 128..191 of the rq"),
        "{cfs:#?}"
    );
    // Nearer weighs more: embedded ¾, a pointer away less.
    assert!(cfs.score < rq.score);
    for other in &c[3..] {
        assert!(other.score <= cfs.score, "{other:#?}");
        assert_eq!(other.prototypes.direct, 0.0, "{other:#?}");
        // Only a pointer away: weighs less than embedded.
        if other.prototypes.embedded == 0.0 {
            assert!(other.score < cfs.score, "{other:#?}");
        }
    }
}

/// Evidence from a kernel before 5.14 names `task_struct.state`, the `volatile long` right
/// after `thread_info`; Peter Zijlstra's "sched: Change task_struct::state" (5.14) made it
/// `unsigned int __state`, which the fixture (6.18) has at byte 24. The 8-byte access the
/// old kernel made there straddles `__state` here: a misfit, and the name the evidence
/// gives is not in this layout, so it is mapped by a name alike near the offset, and the
/// output says it was inferred and why. (The row's function and weights are made up; the
/// member, its old type and the rename are the kernel's.)
#[test]
fn a_renamed_member_the_evidence_names_is_mapped_and_said_to_be_inferred() {
    use lineup::analysis::diagnose::diagnose;
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("task_struct")[0];
    let l = lineup::layout::layout(&types, id, 64).unwrap();
    let mut old = row(24, "try_to_wake_up", 400.0, 0.0);
    old.size = Some(8);
    old.field = Some("state".into());
    let mut writer = row(24, "__schedule", 0.0, 100.0);
    writer.size = Some(8);
    writer.field = Some("state".into());
    let d = diagnose(&l, &[old, writer], None);
    let m = d
        .misfits
        .iter()
        .find(|m| m.contains("`state`"))
        .unwrap_or_else(|| panic!("{:#?}", d.misfits));
    assert!(m.contains("straddles `__state`"), "{m}");
    assert!(
        m.contains(
            "mapped to `__state` at 24, inferred (the name is 71% alike, at the evidence's offset"
        ),
        "{m}"
    );
    let names: Vec<&str> = d.members.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"__state"), "{names:?}");

    // A name nothing here resembles is not mapped: counted where it lands, and said so.
    let mut gone = row(24, "try_to_wake_up", 400.0, 0.0);
    gone.size = Some(8);
    gone.field = Some("exit_code_of_old".into());
    let d = diagnose(&l, &[gone], None);
    assert!(
        d.misfits.iter().all(|m| !m.contains("mapped to")),
        "{:#?}",
        d.misfits
    );
}
