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
