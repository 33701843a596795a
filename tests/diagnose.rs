//! `diagnose` reaches the seeds' conclusions from the seeds' evidence on the real 6.18 BTF.

mod common;

use lineup::analysis::diagnose::{Verdict, accesses_for, bind_raw_lines, diagnose};
use lineup::layout;
use lineup::profile::{import_c2c, import_sketch};
use lineup::readers::{Format, InputFile, load};

#[test]
fn seed000_c2c_paste_finds_load_avg_false_sharing() {
    let text =
        std::fs::read_to_string(common::repo().join("tests/data/c2c/seed000_paste.txt")).unwrap();
    let mut profiles = import_c2c(&text).unwrap();
    let mut baseline = profiles.remove(0);
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("task_group")[0];
    let bindings = bind_raw_lines(&mut baseline, &types, id, "task_group", None);
    assert_eq!(bindings.len(), 1);
    assert_eq!(bindings[0].line_start, 256, "{bindings:?}");
    let (accesses, missing) = accesses_for(&mut baseline, &types, id, "task_group");
    assert!(missing.is_empty());
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, baseline.provenance.machine.cpus);
    let line = &d.lines[0];
    assert_eq!(line.index, 4);
    assert_eq!(line.verdict, Verdict::FalseSharing);
    assert!(
        line.explanation.starts_with(
            "`load_avg` is stored by update_load_avg on 160 CPUs while `rt_se` and `rt_rq` on the same line are loaded by set_task_cpu"
        ),
        "{}",
        line.explanation
    );
    let names: Vec<&str> = line.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["load_avg", "rt_se", "rt_rq"]);
    let load_avg = &line.members[0];
    assert_eq!(load_avg.cpus, 160);
    assert_eq!(load_avg.functions[0].name, "update_cfs_group");
    assert!(
        load_avg.counts.stores > 3000.0 && load_avg.counts.loads > 13000.0,
        "{:?}",
        load_avg.counts
    );
    assert_eq!(d.lines.len(), 1);
    assert_eq!(d.cold_lines, 10);

    // After the seed's patch, the line holds load_avg alone: true sharing, no layout helps.
    let mut after = profiles.remove(0);
    bind_raw_lines(&mut after, &types, id, "task_group", Some(256));
    let (accesses, _) = accesses_for(&mut after, &types, id, "task_group");
    let d = diagnose(&l, &accesses, None);
    assert_eq!(
        d.lines[0].verdict,
        Verdict::TrueSharing,
        "{}",
        d.lines[0].explanation
    );
}

#[test]
fn seed003_sketches_flag_the_lines_the_seed_names() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();

    let sketch =
        std::fs::read_to_string(common::repo().join("examples/sketches/seed003_cpupri_vec.toml"))
            .unwrap();
    let mut p = import_sketch(&sketch).unwrap();
    let id = types.find_composites("cpupri_vec")[0];
    let (accesses, missing) = accesses_for(&mut p, &types, id, "cpupri_vec");
    assert!(missing.is_empty(), "{missing:?}");
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, p.provenance.machine.cpus);
    let line0 = d.lines.iter().find(|x| x.index == 0).unwrap();
    assert_eq!(
        line0.verdict,
        Verdict::FalseSharing,
        "{}",
        line0.explanation
    );
    let names: Vec<&str> = line0.members.iter().map(|m| m.name.as_str()).collect();
    assert!(
        names.contains(&"count") && names.contains(&"mask"),
        "{names:?}"
    );

    let sketch =
        std::fs::read_to_string(common::repo().join("examples/sketches/seed003_root_domain.toml"))
            .unwrap();
    let mut p = import_sketch(&sketch).unwrap();
    let id = types.find_composites("root_domain")[0];
    let (accesses, missing) = accesses_for(&mut p, &types, id, "root_domain");
    assert!(missing.is_empty(), "{missing:?}");
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, p.provenance.machine.cpus);
    let flagged = |field: &str| {
        d.lines
            .iter()
            .find(|x| x.members.iter().any(|m| m.name == field))
            .map(|x| x.verdict)
    };
    // The seed's "line 1": rto_count stored by every CPU. In the seed's kernel
    // (CONFIG_CPUMASK_OFFSTACK, 8-byte cpumask_var_t) `overloaded` shared that line; in the
    // fixture's config cpumask_var_t is a 32-byte array, so `overloaded` sits on the next line
    // and rto_count's own line is true sharing: the seed's patch 3 (split rto_count per node)
    // is the remedy that still applies.
    assert_eq!(flagged("rto_count"), Some(Verdict::TrueSharing), "{d:#?}");
    assert_eq!(flagged("overloaded"), Some(Verdict::ReadShared));
    // The seed's "line 3": cpupri.pri_to_cpu[0].count, rto_mask, rto_loop_next/start.
    let line = d
        .lines
        .iter()
        .find(|x| x.members.iter().any(|m| m.name == "rto_loop_next"))
        .unwrap();
    let names: Vec<&str> = line.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["rto_loop_next", "rto_loop_start", "rto_mask", "cpupri"],
        "{line:#?}"
    );
    assert!(
        matches!(
            flagged("rto_loop_next"),
            Some(Verdict::FalseSharing | Verdict::TrueSharing)
        ),
        "{d:#?}"
    );
    assert!(d.has_contention());
}

/// Issue 16 item 6: with a run's totals (a recording), a verdict needs a rate that matters
/// against the run. Exact evidence on `struct list_head` (next at 0, prev at 8), one CPU per
/// access as `lineup record` writes it.
mod run_rate {
    use lineup::analysis::diagnose::{RunTotals, Verdict, diagnose_in_run};
    use lineup::layout;
    use lineup::profile::{Access, CodeLocation, Counts, CpuUse};
    use lineup::readers::{Format, InputFile, load};

    fn access(offset: u64, cpu: u32, loads: f64, stores: f64, transfers: f64) -> Access {
        Access {
            offset: Some(offset),
            size: Some(8),
            counts: Counts {
                loads,
                stores,
                lcl_hitm: transfers,
                ..Default::default()
            },
            cpus: Some(CpuUse::list([cpu])),
            ..Default::default()
        }
    }

    fn verdict(accesses: &[Access], run: Option<RunTotals>) -> (Verdict, String, f64) {
        let file = InputFile::open(&super::common::bundled_btf()).unwrap();
        let types = load(&file, Format::Btf, None).unwrap();
        let id = types.find_composites("list_head")[0];
        let l = layout::layout(&types, id, 64).unwrap();
        let d = diagnose_in_run(&l, accesses, None, run);
        let line = &d.lines[0];
        (line.verdict, line.explanation.clone(), line.cost)
    }

    /// Four accesses, one transfer: "true sharing" alone, negligible in a run of a million
    /// accesses (the model prices them far under the run's floor of 1e-4 of its accesses);
    /// kept where they are a large part of the run.
    #[test]
    fn a_handful_of_accesses_is_negligible_in_a_big_run() {
        let four = [access(0, 0, 1.0, 1.0, 1.0), access(0, 1, 1.0, 1.0, 0.0)];
        let (v, _, cost) = verdict(&four, None);
        assert_eq!(v, Verdict::TrueSharing);
        assert!(cost > 0.0);
        let big = RunTotals {
            accesses: 1e6,
            transfers: 1e5,
            user_seconds: None,
        };
        let (v, why, cost) = verdict(&four, Some(big));
        assert_eq!(v, Verdict::Negligible, "{why}");
        assert_eq!(cost, 0.0);
        assert!(
            why.starts_with("4 accesses (0.000% of the run's 1000000), priced by the model at "),
            "{why}"
        );
        assert!(
            why.contains("negligible; it would be true sharing"),
            "{why}"
        );
        assert!(
            why.contains("this run's simulation measured 1 transfers"),
            "{why}"
        );
        // The other side: the same four accesses are 1% of a 400-access run.
        let small = RunTotals {
            accesses: 400.0,
            transfers: 1.0,
            user_seconds: None,
        };
        let (v, why, _) = verdict(&four, Some(small));
        assert_eq!(v, Verdict::TrueSharing, "{why}");
        // The same run with a second of the program's own user time (work in code that
        // records no access): the four accesses are far under 1% of it.
        let busy = RunTotals {
            user_seconds: Some(1.0),
            ..small
        };
        let (v, why, cost) = verdict(&four, Some(busy));
        assert_eq!(v, Verdict::Negligible, "{why}");
        assert_eq!(cost, 0.0);
        assert!(why.contains("of the program's own user CPU time"), "{why}");
        // A user time that recording its accesses could explain leaves the accesses' floor.
        let recording = RunTotals {
            user_seconds: Some(400.0 * 100e-9),
            ..small
        };
        let (v, why, _) = verdict(&four, Some(recording));
        assert_eq!(v, Verdict::TrueSharing, "{why}");
    }

    /// Issue 27 item 1: whether a recorded line matters is the model's price of what the
    /// threads do, never the transfers this run's interleaving happened to produce: the same
    /// accesses with 2000 simulated transfers or none get the same verdict and cost.
    #[test]
    fn the_simulated_transfers_do_not_decide_a_verdict() {
        let with = |transfers: f64| {
            [
                access(0, 0, 500.0, 500.0, transfers),
                access(0, 1, 500.0, 500.0, transfers),
            ]
        };
        let run = RunTotals {
            accesses: 1e6,
            transfers: 2e5,
            user_seconds: None,
        };
        let (v, why, cost) = verdict(&with(1000.0), Some(run));
        assert_eq!(v, Verdict::TrueSharing, "{why}");
        assert!(why.contains("this run's simulation measured 2000"), "{why}");
        let (v0, why0, cost0) = verdict(&with(0.0), Some(run));
        assert_eq!(v0, Verdict::TrueSharing, "{why0}");
        assert!(why0.contains("this run's simulation measured 0"), "{why0}");
        assert_eq!(cost, cost0);
        assert!(cost > 0.0);
        // A hundred times the run: the same line is under its floor, with or without
        // transfers.
        let run = RunTotals {
            accesses: 1e8,
            transfers: 2e5,
            user_seconds: None,
        };
        for t in [0.0, 1000.0] {
            let (v, why, _) = verdict(&with(t), Some(run));
            assert_eq!(v, Verdict::Negligible, "{why}");
        }
    }

    /// Issue 27 item 4: accesses made under a lock every thread on the line holds
    /// (`sequential_accesses`) cannot meet: a state written by two threads one critical
    /// section after another is handed over, not contention, and costs nothing; the same
    /// counts without the lock are true sharing.
    #[test]
    fn a_state_handed_over_under_a_lock_is_not_contention() {
        let handed = |sequential: f64| {
            let mut a = [
                access(0, 0, 100_000.0, 100_000.0, 0.0),
                access(0, 1, 100_000.0, 100_000.0, 0.0),
            ];
            for x in &mut a {
                if sequential > 0.0 {
                    x.details.insert("sequential_accesses", sequential);
                }
            }
            a
        };
        let run = RunTotals {
            accesses: 1e6,
            transfers: 10.0,
            user_seconds: None,
        };
        let (v, why, cost) = verdict(&handed(200_000.0), Some(run));
        assert_eq!(v, Verdict::NotShared, "{why}");
        assert_eq!(cost, 0.0);
        assert!(
            why.starts_with("handed from thread to thread under a lock, not contention"),
            "{why}"
        );
        let (v, why, cost) = verdict(&handed(0.0), Some(run));
        assert_eq!(v, Verdict::TrueSharing, "{why}");
        assert!(cost > 0.0);
        // A cost is never an access count.
        assert_ne!(cost, 400_000.0);
    }

    /// Issue 24: a recorded line's class is the cost model's, the one the same accesses get
    /// without run totals (a sketch naming one CPU per access). SPSC indices on one line
    /// (`next` and `prev` of list_head), each written by one thread and read by the other on
    /// every operation: true sharing both ways (who writes what alone called it false
    /// sharing: a move would remove no transfer while each side reads the other's index).
    #[test]
    fn recorded_spsc_indices_get_the_models_verdict() {
        let by = |mut a: Access, function: &str| {
            a.code = Some(CodeLocation {
                symbol: Some(function.into()),
                ..Default::default()
            });
            a
        };
        let spsc = [
            by(access(0, 0, 0.0, 100_000.0, 0.0), "producer"),
            by(access(8, 0, 100_000.0, 0.0, 0.0), "producer"),
            by(access(0, 1, 100_000.0, 0.0, 0.0), "consumer"),
            by(access(8, 1, 0.0, 100_000.0, 0.0), "consumer"),
        ];
        let (sketched, why, _) = verdict(&spsc, None);
        assert_eq!(sketched, Verdict::TrueSharing, "{why}");
        let run = RunTotals {
            accesses: 400_000.0,
            transfers: 10.0,
            user_seconds: None,
        };
        let (recorded, why, cost) = verdict(&spsc, Some(run));
        assert_eq!(recorded, sketched, "{why}");
        assert!(cost > 0.0, "{why}");
        assert!(why.contains("Priced by the model"), "{why}");
    }

    /// main reading a worker's counter once at the end does not make it truly shared (the
    /// worker only stores, so main is its busiest reader); a reader above the run's floor
    /// (1e-4 of its accesses) does.
    #[test]
    fn main_reading_the_total_once_does_not_share_a_per_thread_counter() {
        let once = [
            access(0, 0, 0.0, 100_000.0, 0.0),
            access(0, 1, 1.0, 0.0, 1.0),
        ];
        let (v, why, _) = verdict(&once, None);
        assert_eq!(v, Verdict::TrueSharing, "without run totals: {why}");
        let run = RunTotals {
            accesses: 200_001.0,
            transfers: 1.0,
            user_seconds: None,
        };
        let (v, why, cost) = verdict(&once, Some(run));
        assert_eq!(v, Verdict::NotShared, "{why}");
        assert_eq!(cost, 0.0);
        // 21 reads are above the floor of 20.0001 accesses: a reader that counts.
        let often = [
            access(0, 0, 0.0, 100_000.0, 0.0),
            access(0, 1, 21.0, 0.0, 21.0),
        ];
        let (v, why, _) = verdict(&often, Some(run));
        assert_eq!(v, Verdict::TrueSharing, "{why}");
    }
}

/// Issue 16 item 3: per-thread elements named on the line they share; many in a compact
/// form with the thread count. Element lines as a recording writes them, on `list_head`.
mod element_names {
    use lineup::analysis::diagnose::{Verdict, diagnose, name_elements};
    use lineup::layout;
    use lineup::profile::{Access, Counts, CpuUse, ElementLine, ElementReader, ElementWriter};
    use lineup::readers::{Format, InputFile, load};

    fn named(lines: &[ElementLine]) -> (Verdict, Option<String>, String) {
        let file = InputFile::open(&super::common::bundled_btf()).unwrap();
        let types = load(&file, Format::Btf, None).unwrap();
        let id = types.find_composites("list_head")[0];
        let l = layout::layout(&types, id, 64).unwrap();
        // Each element written by its own thread (number 0 within its element), every write
        // on a line another thread writes another element of.
        let mut a = Access {
            offset: Some(0),
            size: Some(8),
            counts: Counts {
                stores: 1000.0,
                ..Default::default()
            },
            cpus: Some(CpuUse::list([0])),
            ..Default::default()
        };
        a.details.insert("element_line_writes", 1000.0);
        let mut d = diagnose(&l, &[a], None);
        name_elements(&mut d, &l, lines);
        let line = &d.lines[0];
        (
            line.verdict,
            line.elements.clone(),
            line.explanation.clone(),
        )
    }

    fn writer(index: u64, tid: i64, writes: f64) -> ElementWriter {
        ElementWriter {
            index,
            tid,
            offsets: vec![0],
            fields: vec![],
            writes,
        }
    }

    #[test]
    fn two_elements_by_two_threads_are_named_one_by_one() {
        let lines = [ElementLine {
            variable: Some("g".into()),
            line_offset: 0,
            writers: vec![
                writer(0, 11, 500.0),
                writer(1, 12, 500.0),
                writer(1, 10, 2.0),
            ],
            ..Default::default()
        }];
        let (v, elements, why) = named(&lines);
        assert_eq!(v, Verdict::FalseSharing, "{why}");
        // main's two writes (thread 10) next to the workers' 500 are not a sharer.
        assert_eq!(
            elements.as_deref(),
            Some(
                "Elements: `g[0].next` by thread 11 and `g[1].next` by thread 12 share one line (bytes 0..63 of `g`)"
            )
        );
        assert!(
            why.contains("between elements") && why.ends_with("of `g`)"),
            "{why}"
        );
    }

    #[test]
    fn many_elements_are_named_as_a_range_with_the_thread_count() {
        let lines = [
            ElementLine {
                alloc_function: Some("main+79".into()),
                alloc_source: Some("lr.c:49".into()),
                line_offset: -16,
                misalignment: 16,
                writers: (0..4).map(|i| writer(i, 100 + i as i64, 10.0)).collect(),
                ..Default::default()
            },
            ElementLine {
                alloc_function: Some("main+79".into()),
                alloc_source: Some("lr.c:49".into()),
                line_offset: 48,
                misalignment: 16,
                writers: (4..8).map(|i| writer(i, 100 + i as i64, 10.0)).collect(),
                ..Default::default()
            },
        ];
        let (_, elements, _) = named(&lines);
        assert_eq!(
            elements.as_deref(),
            Some(
                "Elements: `list_head[0..7].next` (8 elements written by 8 threads) share 2 lines of the heap array allocated at main+79 (lr.c:49)"
            )
        );
    }

    /// A line only read, by its element's thread, while another thread writes another
    /// element on it (the end of one element beside the start of the next): false sharing
    /// between elements, the reader named as such; the same reads without that evidence
    /// are read sharing.
    #[test]
    fn an_element_read_beside_another_threads_write_is_named_as_read() {
        let file = InputFile::open(&super::common::bundled_btf()).unwrap();
        let types = load(&file, Format::Btf, None).unwrap();
        let id = types.find_composites("list_head")[0];
        let l = layout::layout(&types, id, 64).unwrap();
        let reads = |beside: f64| {
            let mut a = Access {
                offset: Some(8),
                size: Some(8),
                counts: Counts {
                    loads: 1000.0,
                    ..Default::default()
                },
                cpus: Some(CpuUse::list([0])),
                ..Default::default()
            };
            if beside > 0.0 {
                a.details.insert("element_line_reads", beside);
            }
            diagnose(&l, &[a], None)
        };
        assert_eq!(reads(0.0).lines[0].verdict, Verdict::ReadShared);
        // Under 1% of the line's accesses: not enough to call it.
        assert_eq!(reads(9.0).lines[0].verdict, Verdict::ReadShared);
        let mut d = reads(500.0);
        let lines = [ElementLine {
            variable: Some("g".into()),
            writers: vec![writer(0, 11, 300.0)],
            readers: vec![ElementReader {
                index: 1,
                tid: 12,
                offsets: vec![8],
                fields: vec![],
                reads: 500.0,
            }],
            ..Default::default()
        }];
        name_elements(&mut d, &l, &lines);
        let line = &d.lines[0];
        assert_eq!(line.verdict, Verdict::FalseSharing, "{}", line.explanation);
        assert_eq!(
            line.elements.as_deref(),
            Some(
                "Elements: `g[0].next` written by thread 11 and `g[1].prev` read by thread 12 share one line (bytes 0..63 of `g`)"
            )
        );
        assert!(
            line.explanation.contains(
                "500 times on a physical line where another thread writes another element"
            ),
            "{}",
            line.explanation
        );
    }

    #[test]
    fn one_thread_is_no_element_sharing_to_name() {
        let lines = [ElementLine {
            variable: Some("g".into()),
            writers: vec![writer(0, 11, 500.0), writer(1, 11, 500.0)],
            ..Default::default()
        }];
        assert_eq!(named(&lines).1, None);
    }
}

/// Issue 24 item 3: a struct that is per CPU already (BTF's `.data..percpu` section declares
/// `struct rq runqueues`) gets no advice to split it; one that is not (`task_group`) does.
#[test]
fn a_per_cpu_struct_is_not_told_to_split() {
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let rq = types.find_composites("rq")[0];
    let tg = types.find_composites("task_group")[0];
    assert!(types.is_per_cpu(rq));
    assert!(!types.is_per_cpu(tg));
    // `runqueues` is every rq there is: one per CPU, what the size term counts on.
    assert_eq!(types.per_cpu_instances(rq), Some(1));
    assert_eq!(types.per_cpu_instances(tg), None);
    let dir = std::env::temp_dir().join(format!("lineup-percpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The owner stores a counter; four other CPUs read it while balancing.
    let sketch = |ty: &str, field: &str| {
        format!(
            "[sketch]\ntitle = \"owner and balancers\"\n[machine]\ncpus = 64\n[[type]]\nname = \"{ty}\"\n\
             [[type.access]]\nfield = \"{field}\"\nkind = \"store\"\nby = \"owner\"\nweight = 100\ncpus = [0]\n\
             [[type.access]]\nfield = \"{field}\"\nkind = \"load\"\nby = \"balance\"\nweight = 100\ncpus = [1, 2, 3, 4]\n"
        )
    };
    let run = |ty: &str, field: &str| {
        let path = dir.join(format!("{ty}.toml"));
        std::fs::write(&path, sketch(ty, field)).unwrap();
        let v = common::lineup_json(&[
            "diagnose",
            "--type",
            ty,
            "--btf",
            common::bundled_btf().to_str().unwrap(),
            "--sketch",
            path.to_str().unwrap(),
            "--json",
        ]);
        let line = v["lines"][0].clone();
        assert_eq!(line["verdict"], "true_sharing", "{line:#}");
        line["explanation"].as_str().unwrap().to_string()
    };
    let per_cpu = run("rq", "nr_running");
    assert!(per_cpu.contains("per CPU already"), "{per_cpu}");
    assert!(!per_cpu.contains("only splitting"), "{per_cpu}");
    let shared = run("task_group", "shares");
    assert!(shared.contains("only splitting it (per CPU"), "{shared}");
    // The size term counts one rq per CPU of the machine modeled, from BTF
    // (docs/cost-model.md, Size); task_group's instances are not known.
    let profile = lineup::profile::import_sketch(&sketch("rq", "nr_running")).unwrap();
    let machine = lineup::analysis::machine::preset("icelake-2s").unwrap();
    let count = |id| {
        lineup::analysis::model::Model::build(
            &types,
            id,
            &profile,
            &[],
            machine.clone(),
            None,
            None,
        )
        .unwrap()
        .instance_count
    };
    let rq_count = count(rq);
    assert_eq!(rq_count.count, Some(u64::from(machine.cpus)));
    assert_eq!(rq_count.source, lineup::profile::CountSource::PerCpu);
    assert_eq!(count(tg).count, None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A true-sharing verdict names the members both paths touch, not every member the writing
/// path writes with them: on tcp_sock's merged layout the ACK path writes `bytes_acked`
/// beside `first_tx_mstamp` and `delivered_mstamp`, and the send path touches only the
/// last two (tests/cases/tcp_sock/sketch.toml, from net/ipv4/tcp_rate.c).
#[test]
fn true_sharing_names_the_members_both_paths_touch() {
    let out = common::lineup_json(&[
        "diagnose",
        "--json",
        "--btf",
        common::bundled_btf().to_str().unwrap(),
        "--type",
        "tcp_sock",
        "--machine",
        "spr-1s",
        "--sketch",
        common::repo()
            .join("tests/cases/tcp_sock/sketch.toml")
            .to_str()
            .unwrap(),
    ]);
    let line = common::diagnosed_line(&out, "first_tx_mstamp");
    assert_eq!(line["verdict"], "true_sharing", "{line:#}");
    let why = line["explanation"].as_str().unwrap();
    assert!(
        why.starts_with("`delivered_mstamp` and `first_tx_mstamp` are written by tcp_rcv_established and touched by tcp_write_xmit"),
        "{why}"
    );
}

/// Evidence that gives only offsets (a c2c report's rows, perf samples) names the members of
/// an embedded struct as evidence that names them does: mm_struct's rwsem sub-fields
/// (tests/cases/mm_struct_mmap_lock_offset), once by path in its sketch and once as the
/// offsets and sizes those paths have in the layout, give the same diagnosis, sub-field by
/// sub-field. Before, the offsets were all `mmap_lock`, one 40-byte member on both lines.
#[test]
fn offsets_inside_an_embedded_struct_are_named_as_its_fields_are() {
    let dir = common::test_dir("diagnose-embedded-offsets");
    let case = common::repo().join("tests/cases/mm_struct_mmap_lock_offset");
    let obj = dir.join("before.o");
    common::cc_object(&case.join("before.c"), &obj);
    let named = case.join("sketch.toml");
    let diagnose = |sketch: &std::path::Path| {
        common::lineup_json(&[
            "diagnose",
            "--json",
            "--dwarf",
            obj.to_str().unwrap(),
            "--type",
            "mm_part",
            "--machine",
            "icelake-2s",
            "--sketch",
            sketch.to_str().unwrap(),
        ])
    };
    let by_name = diagnose(&named);
    // Every `field = "mmap_lock.X"` of the sketch as the offset and size diagnose shows it at.
    let mut text = std::fs::read_to_string(&named).unwrap();
    let mut replaced = 0;
    for line in by_name["lines"].as_array().unwrap() {
        for m in line["members"].as_array().unwrap() {
            let name = m["name"].as_str().unwrap();
            let field = format!("field = \"{name}\"");
            if name.starts_with("mmap_lock.") && text.contains(&field) {
                let at = format!("offset = {}\nsize = {}", m["offset"], m["size"]);
                text = text.replace(&field, &at);
                replaced += 1;
            }
        }
    }
    assert!(replaced >= 4, "{replaced} sub-fields replaced: {by_name:#}");
    assert!(!text.contains("field = \"mmap_lock"), "{text}");
    let offsets = dir.join("sketch_offsets.toml");
    std::fs::write(&offsets, &text).unwrap();
    let by_offset = diagnose(&offsets);
    let lines = |d: &serde_json::Value| -> Vec<(u64, String, String, Vec<String>)> {
        d["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["index"].as_u64().unwrap(),
                    l["verdict"].as_str().unwrap().to_string(),
                    l["explanation"].as_str().unwrap().to_string(),
                    l["members"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| m["name"].as_str().unwrap().to_string())
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(lines(&by_offset), lines(&by_name));
    let count = common::diagnosed_line(&by_offset, "mmap_lock.count");
    let owner = common::diagnosed_line(&by_offset, "mmap_lock.owner");
    assert_ne!(count["index"], owner["index"], "{by_offset:#}");
}
