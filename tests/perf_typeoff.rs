//! The `perf report --stdio -s type,typeoff` importer (perf's data-type profiling): the four
//! sample reports of `tests/data/perf/` (plain perf 6.8, `--hierarchy` perf 6.15, extra
//! columns perf 6.12, a mail paste), smaller inline variants (`--group`, memory columns, a
//! hierarchy under a symbol level, pastes without headers), damaged input that must fail
//! with a one-line error naming the line, and `lineup diagnose --perf-typeoff` end to end.

mod common;

use std::process::{Command, Output};

use lineup::profile::{
    Access, Privilege, Profile, ProfileError, TypeProfile, Unit, import_perf_typeoff,
};

fn data(rel: &str) -> String {
    let p = common::repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn import(rel: &str) -> Profile {
    let p = import_perf_typeoff(&data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    // Every profile survives its JSON form.
    let back = Profile::from_json(&p.to_json()).unwrap();
    assert_eq!(back, p, "{rel}: JSON round trip changed the profile");
    p
}

fn ty<'a>(p: &'a Profile, name: &str) -> &'a TypeProfile {
    p.type_profile(name)
        .unwrap_or_else(|| panic!("no type {name} in {:?}", names(p)))
}

fn names(p: &Profile) -> Vec<&str> {
    p.types.iter().map(|t| t.type_name.as_str()).collect()
}

/// The access to `offset` of `t` made by `function` (None: no code location).
fn at<'a>(t: &'a TypeProfile, offset: u64, function: Option<&str>) -> &'a Access {
    t.accesses
        .iter()
        .find(|a| {
            a.offset == Some(offset)
                && a.code.as_ref().and_then(|c| c.symbol.as_deref()) == function
        })
        .unwrap_or_else(|| panic!("{}: no access at {offset} by {function:?}", t.type_name))
}

fn summary(p: &Profile, key: &str) -> f64 {
    p.summary["perf_report"]
        .get(key)
        .copied()
        .unwrap_or_else(|| panic!("no summary {key}: {:?}", p.summary))
}

fn err(text: &str) -> ProfileError {
    let e = import_perf_typeoff(text).expect_err("expected an error");
    assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    e
}

// ---------------------------------------------------------------------------------------
// The sample reports
// ---------------------------------------------------------------------------------------

#[test]
fn plain_perf68_report_with_header() {
    let p = import("tests/data/perf/typeoff_plain.txt");
    assert_eq!(p.unit, Unit::Samples);
    assert_eq!(p.cacheline_size, 64);
    assert!(p.lines.is_empty());
    let prov = &p.provenance;
    assert_eq!(prov.tool, "perf report -s type,typeoff");
    assert_eq!(prov.tool_version.as_deref(), Some("6.8.12"));
    assert_eq!(
        prov.command.as_deref(),
        Some("/usr/bin/perf mem record -a -K -- sleep 5")
    );
    assert_eq!(prov.machine.cpus, Some(160));
    assert_eq!(prov.machine.numa_nodes, Some(2));
    assert_eq!(
        prov.machine.description.as_deref(),
        Some("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz")
    );
    assert_eq!(prov.events, vec!["cpu/mem-loads,ldlat=30/P"]);
    assert_eq!(prov.settings["sort_keys"], "type,typeoff");
    let note = prov.note.as_deref().unwrap();
    assert!(note.contains("estimated") && note.contains("12K"), "{note}");

    // Types in perf's order, `struct`/`union` stripped and kept as the note; other type
    // names whole; pseudo types left out.
    assert_eq!(
        names(&p),
        vec![
            "task_struct",
            "rq",
            "long unsigned int",
            "cfs_rq",
            "atomic_t",
            "bpf_attr",
            "int"
        ]
    );
    assert_eq!(ty(&p, "task_struct").note.as_deref(), Some("struct"));
    assert_eq!(ty(&p, "bpf_attr").note.as_deref(), Some("union"));
    assert_eq!(ty(&p, "atomic_t").note, None);

    // `6.52%  struct task_struct  struct task_struct +800 (cpus_ptr)` of 12K samples.
    let ts = ty(&p, "task_struct");
    assert_eq!(ts.accesses.len(), 6);
    let a = at(ts, 800, None);
    assert_eq!(a.field.as_deref(), Some("cpus_ptr"));
    assert_eq!(a.counts.loads, 782.4);
    assert_eq!(a.counts.stores, 0.0);
    assert_eq!(a.size, None);
    assert!(a.code.is_none());
    assert_eq!(at(ts, 352, None).field.as_deref(), Some("se.avg.load_avg"));
    assert_eq!(at(ts, 352, None).counts.loads, 296.4);
    assert_eq!(at(ts, 24, None).counts.loads, 10.8);
    // The Data Type column padded to its header (`int      `) and overflowing.
    let int = ty(&p, "int");
    assert_eq!(int.accesses[0].field, None);
    assert_eq!(int.accesses[0].counts.loads, 102.0);
    assert_eq!(
        at(ty(&p, "atomic_t"), 0, None).field.as_deref(),
        Some("counter")
    );
    assert_eq!(at(ty(&p, "rq"), 2776, None).counts.loads, 639.6);

    assert_eq!(summary(&p, "samples"), 12000.0);
    assert_eq!(summary(&p, "event_count"), 1203844.0);
    assert_eq!(summary(&p, "lost_samples"), 0.0);
    assert_eq!(summary(&p, "rows"), 18.0);
    assert_eq!(summary(&p, "type_rows"), 15.0);
    // (unknown) 31.27%, (stack operation) 11.84%, (stack canary) 0.43% of 12K.
    assert_eq!(summary(&p, "unknown"), 3752.4);
    assert_eq!(summary(&p, "stack_operation"), 1420.8);
    assert_eq!(summary(&p, "stack_canary"), 51.6);
}

#[test]
fn hierarchy_perf615_loads_and_stores() {
    let p = import("tests/data/perf/typeoff_hierarchy.txt");
    assert_eq!(p.unit, Unit::Samples);
    assert_eq!(
        p.provenance.events,
        vec!["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]
    );
    assert_eq!(p.provenance.settings["hierarchy"], "yes");
    assert_eq!(p.provenance.settings["sort_keys"], "type,typeoff");
    assert_eq!(p.provenance.tool_version, None);
    assert_eq!(names(&p)[..3], ["task_group", "cfs_rq", "sched_entity"]);

    let tg = ty(&p, "task_group");
    // Only the leaves (typeoff rows) count; the type rows are their sums.
    assert_eq!(tg.accesses.len(), 7);
    // 11.02% of 31K loads, 14.75% of 9K stores.
    let a = at(tg, 0x100, None);
    assert_eq!(a.field.as_deref(), Some("load_avg.counter"));
    assert_eq!((a.counts.loads, a.counts.stores), (3416.2, 1327.5));
    assert_eq!(at(tg, 0x108, None).field.as_deref(), Some("rt_se"));
    assert_eq!(at(tg, 0x108, None).counts.loads, 716.1);
    assert_eq!(at(tg, 0x110, None).counts.loads, 709.9);
    // `+0` is hex zero (C's "%#x" prints 0 without 0x).
    assert_eq!(at(tg, 0, None).field.as_deref(), Some("css.cgroup"));
    assert_eq!(at(tg, 0x198, None).counts.loads, 127.1);
    let cfs = ty(&p, "cfs_rq");
    assert_eq!(at(cfs, 0x80, None).counts.stores, 364.5);
    assert_eq!(at(cfs, 0x80, None).counts.loads, 0.0);
    assert_eq!(
        at(ty(&p, "rq"), 0, None).field.as_deref(),
        Some("__lock.raw_lock.val.counter")
    );

    // Pseudo types once each per event, though perf 6.15 prints them at both levels.
    assert_eq!(summary(&p, "samples"), 40000.0);
    assert_eq!(summary(&p, "unknown"), 7483.4);
    assert_eq!(summary(&p, "stack_operation"), 6497.7);
    assert_eq!(summary(&p, "stack_canary"), 282.1);
    assert_eq!(summary(&p, "type_rows"), 39.0);
    assert!(p.type_profile("(unknown)").is_none());
}

#[test]
fn extra_columns_give_exact_samples_and_code() {
    let p = import("tests/data/perf/typeoff_columns.txt");
    assert_eq!(p.unit, Unit::Samples);
    assert_eq!(p.provenance.settings["sort_keys"], "type,typeoff,sym");
    assert!(
        p.provenance
            .note
            .as_deref()
            .unwrap()
            .contains("Samples column")
    );
    let tg = ty(&p, "task_group");
    // The Samples column, not overhead × total.
    let a = at(tg, 0x100, Some("update_cfs_group"));
    assert_eq!((a.counts.loads, a.counts.stores), (1450.0, 0.0));
    let code = a.code.as_ref().unwrap();
    assert_eq!(code.privilege, Some(Privilege::Kernel));
    assert_eq!(a.details["period"], 191400.0);
    // Loads and stores of one place by one function merge into one access.
    let a = at(tg, 0x100, Some("update_load_avg"));
    assert_eq!((a.counts.loads, a.counts.stores), (310.0, 610.0));
    assert_eq!(a.details["period"], 39990.0 + 610.0);
    assert_eq!(at(tg, 0x108, Some("set_task_cpu")).counts.loads, 402.0);
    assert_eq!(at(tg, 0x110, Some("set_task_cpu")).counts.loads, 398.0);
    assert_eq!(tg.accesses.len(), 6);
    let cfs = ty(&p, "cfs_rq");
    let a = at(cfs, 0xa0, Some("update_load_avg"));
    assert_eq!((a.counts.loads, a.counts.stores), (620.0, 420.0));
    assert_eq!(summary(&p, "stack_operation"), 812.0 + 1050.0);
    assert_eq!(summary(&p, "unknown"), 702.0);
    // set_task_cpu reads four fields of task_group together: a co-access group.
    let g = p
        .groups
        .iter()
        .find(|g| g.name == "set_task_cpu")
        .expect("set_task_cpu group");
    assert_eq!(g.members.len(), 4);
    assert_eq!(g.weight, 402.0 + 398.0 + 188.0 + 176.0);
}

#[test]
fn mail_paste_without_headers() {
    let p = import("tests/data/perf/typeoff_mail.txt");
    assert_eq!(p.unit, Unit::Samples);
    assert_eq!(names(&p), vec!["ring_ctl", "ring_slot", "ring_stats"]);
    let rc = ty(&p, "ring_ctl");
    // `22.40% struct ring_ctl struct ring_ctl +0 (head)` of 8K loads; 44.80% of 5K stores.
    let head = at(rc, 0, None);
    assert_eq!(head.field.as_deref(), Some("head"));
    assert_eq!((head.counts.loads, head.counts.stores), (1792.0, 2240.0));
    let tail = at(rc, 8, None);
    assert_eq!((tail.counts.loads, tail.counts.stores), (3294.4, 1907.5));
    assert_eq!(at(rc, 0x18, None).field.as_deref(), Some("slots"));
    assert_eq!(at(ty(&p, "ring_stats"), 0x20, None).counts.stores, 254.0);
    assert_eq!(summary(&p, "samples"), 13000.0);
    assert_eq!(summary(&p, "unknown"), 962.4);
    assert_eq!(summary(&p, "stack_operation"), 456.0);
    assert_eq!(
        p.provenance.events,
        vec!["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]
    );
}

// ---------------------------------------------------------------------------------------
// Variants
// ---------------------------------------------------------------------------------------

#[test]
fn no_sample_totals_gives_relative_counts() {
    let p = import_perf_typeoff(
        "Here is what perf report -s type,typeoff says:\n\
         12.50% struct foo struct foo +0x8 (bar.baz)\n\
         2.25% struct foo struct foo +0 (lock)\n\
         1.00% (unknown) (unknown) +0 (no field)\n",
    )
    .unwrap();
    assert_eq!(p.unit, Unit::Relative);
    let foo = ty(&p, "foo");
    assert_eq!(at(foo, 8, None).counts.loads, 12.5);
    assert_eq!(at(foo, 8, None).field.as_deref(), Some("bar.baz"));
    assert_eq!(at(foo, 0, None).counts.loads, 2.25);
    assert_eq!(summary(&p, "unknown"), 1.0);
    let note = p.provenance.note.as_deref().unwrap();
    assert!(note.contains("relative"), "{note}");
    assert!(note.contains("does not name the sampled event"), "{note}");
}

#[test]
fn collapsed_hierarchy_paste() {
    // `--hierarchy` pasted with whitespace collapsed: levels from the contents, pseudo types
    // (printed at both levels by perf 6.15) counted once.
    let p = import_perf_typeoff(
        "> # Samples: 2K of event 'cpu/mem-stores/P'\n\
         > 40.00% (stack operation)\n\
         > 40.00% (stack operation)\n\
         > 35.00% struct foo\n\
         > 30.00% struct foo +0x40 (tail)\n\
         > 5.00% struct foo +0 (head)\n\
         > 25.00% (unknown)\n\
         > 25.00% (unknown) +0 (no field)\n",
    )
    .unwrap();
    let foo = ty(&p, "foo");
    assert_eq!(foo.accesses.len(), 2);
    assert_eq!(at(foo, 0x40, None).counts.stores, 600.0);
    assert_eq!(at(foo, 0, None).counts.stores, 100.0);
    assert_eq!(summary(&p, "stack_operation"), 800.0);
    assert_eq!(summary(&p, "unknown"), 500.0);
}

#[test]
fn hierarchy_with_a_symbol_level() {
    // `-s type,typeoff,sym --hierarchy`: the symbol rows split their typeoff row.
    let text = "\
# Samples: 1K of event 'cpu/mem-loads,ldlat=30/P'
# Event count (approx.): 100000
#
#       Overhead  Data Type / Data Type Offset / Symbol
# ..............  .....................................
#
    60.00%        struct foo
       50.00%        struct foo +0x8 (count)
          30.00%        [k] foo_inc
          20.00%        [k] foo_read
       10.00%        struct foo +0x10 (flags)
    40.00%        (unknown)
       40.00%        (unknown)
          40.00%        [k] bar
";
    let p = import_perf_typeoff(text).unwrap();
    let foo = ty(&p, "foo");
    assert_eq!(foo.accesses.len(), 3);
    assert_eq!(at(foo, 8, Some("foo_inc")).counts.loads, 300.0);
    assert_eq!(at(foo, 8, Some("foo_read")).counts.loads, 200.0);
    assert_eq!(at(foo, 8, Some("foo_inc")).field.as_deref(), Some("count"));
    assert_eq!(at(foo, 0x10, None).counts.loads, 100.0);
    assert_eq!(summary(&p, "unknown"), 400.0);
    assert_eq!(p.provenance.settings["sort_keys"], "type,typeoff,sym");
}

#[test]
fn event_group_with_samples_columns() {
    // `perf report --group -n`: one overhead and one sample count per event of the group.
    let text = "\
# Samples: 3K of events 'anon group { cpu/mem-loads,ldlat=30/P, cpu/mem-stores/P }'
# Event count (approx.): 300000
#
#         Overhead                Samples  Data Type  Data Type Offset
# ................  .....................  .........  ................
#
    60.00%  10.00%           1200      100  struct foo  struct foo +0x8 (count)
    20.00%  90.00%            400      900  struct foo  struct foo +0x40 (lock.val)
";
    let p = import_perf_typeoff(text).unwrap();
    assert_eq!(p.unit, Unit::Samples);
    let foo = ty(&p, "foo");
    let a = at(foo, 8, None);
    assert_eq!((a.counts.loads, a.counts.stores), (1200.0, 100.0));
    let a = at(foo, 0x40, None);
    assert_eq!((a.counts.loads, a.counts.stores), (400.0, 900.0));
    assert_eq!(
        p.provenance.events,
        vec!["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]
    );

    // Without -n the group's total cannot be split per event: percentages stay relative.
    let text = "\
# Samples: 3K of events 'anon group { cpu/mem-loads,ldlat=30/P, cpu/mem-stores/P }'
#         Overhead  Data Type  Data Type Offset
    60.00%  10.00%  struct foo  struct foo +0x8 (count)
";
    let p = import_perf_typeoff(text).unwrap();
    assert_eq!(p.unit, Unit::Relative);
    let a = at(ty(&p, "foo"), 8, None);
    assert_eq!((a.counts.loads, a.counts.stores), (60.0, 10.0));
}

#[test]
fn memory_columns_mark_hitm_and_locks() {
    // `-s type,typeoff,mem,snoop,locked`: data-source columns refine the counts.
    let text = "\
# Samples: 500 of event 'cpu/mem-loads,ldlat=30/P'
# Overhead  Data Type  Data Type Offset  Memory access             Snoop  Locked
# ........  .........  ................  ........................  .....  ......
    50.00%  struct foo  struct foo +0x8 (count)  Remote Cache (1 hop) hit  HitM   No    
    30.00%  struct foo  struct foo +0x8 (count)  L3 hit                    HitM   Yes   
    20.00%  struct foo  struct foo +0x10 (flags)  L1 hit                    None   No    
";
    let p = import_perf_typeoff(text).unwrap();
    let foo = ty(&p, "foo");
    // Rows of one place merge: 250 remote-HITM loads, 150 local-HITM locked RMWs.
    let a = at(foo, 8, None);
    assert_eq!(a.counts.loads, 250.0);
    assert_eq!(a.counts.rmw, 150.0);
    assert_eq!(a.counts.rmt_hitm, 250.0);
    assert_eq!(a.counts.lcl_hitm, 150.0);
    let a = at(foo, 0x10, None);
    assert_eq!((a.counts.loads, a.counts.hitm()), (100.0, 0.0));
    // Below 1000, perf's sample total is exact.
    assert!(!p.provenance.note.as_deref().unwrap().contains("rounds"));
}

#[test]
fn events_that_are_not_loads_or_stores_are_noted() {
    let text = "\
# Samples: 4K of event 'cycles:P'
# Overhead  Data Type  Data Type Offset
    50.00%  struct foo  struct foo +4 (n)
";
    let p = import_perf_typeoff(text).unwrap();
    assert_eq!(at(ty(&p, "foo"), 4, None).counts.loads, 2000.0);
    let note = p.provenance.note.as_deref().unwrap();
    assert!(
        note.contains("event 'cycles:P' is neither a load nor a store event"),
        "{note}"
    );
    // `mem_inst_retired.lock_loads` counts locked read-modify-writes.
    let p = import_perf_typeoff(
        "# Samples: 100 of event 'mem_inst_retired.lock_loads:P'\n    10.00%  struct foo  struct foo +4 (n)\n",
    )
    .unwrap();
    assert_eq!(at(ty(&p, "foo"), 4, None).counts.rmw, 10.0);
}

#[test]
fn quoted_printable_soft_breaks_are_joined() {
    let text = "Samples: 1K of event 'cpu/mem-loads,ldlat=30/P'\n\
                > 12.85%  long unsigned int  long unsigned int +0 (current_stack_pointe=\n\
                > r)\n\
                > 4.68%  struct paca_struct  struct paca_struct +2312 (__current)\n";
    let p = import_perf_typeoff(text).unwrap();
    assert_eq!(
        at(ty(&p, "long unsigned int"), 0, None).field.as_deref(),
        Some("current_stack_pointer")
    );
    assert_eq!(at(ty(&p, "paca_struct"), 2312, None).counts.loads, 46.8);
}

#[test]
fn no_break_spaces_from_html_mail() {
    let text = "Samples:\u{a0}2K of event 'cpu/mem-stores/P'\n\
                \u{a0}\u{a0}\u{a0}10.00%\u{a0}\u{a0}struct\u{a0}foo\u{a0}\u{a0}struct\u{a0}foo\u{a0}+0x8\u{a0}(count)\n";
    let p = import_perf_typeoff(text).unwrap();
    let a = at(ty(&p, "foo"), 8, None);
    assert_eq!(
        (a.field.as_deref(), a.counts.stores),
        (Some("count"), 200.0)
    );
}

// ---------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------

#[test]
fn empty_and_unrelated_input_is_no_data() {
    for text in [
        "",
        "\n\n   \n",
        "hello world\nthis is not a perf report\n",
        "{\"schema_version\": 1}",
        "12 monkeys\n",
    ] {
        assert!(
            matches!(err(text), ProfileError::NoData(_)),
            "{text:?}: {:?}",
            import_perf_typeoff(text)
        );
    }
    // Other evidence is not a data-type report.
    for rel in [
        "tests/data/c2c/seed000_paste.txt",
        "tests/data/c2c/perf6_hitm_full.txt",
        "tests/data/perf/mem_script.txt",
        "examples/sketches/seed003_root_domain.toml",
    ] {
        assert!(matches!(err(&data(rel)), ProfileError::NoData(_)), "{rel}");
    }
    // A perf report sorted by symbol says what it lacks.
    let e = err("# Overhead  Command  Shared Object      Symbol\n\
                 # ........  .......  .................  ......\n\
                 #\n\
                 \x20   12.34%  bench    [kernel.kallsyms]  [k] update_load_avg\n");
    assert!(
        e.to_string()
            .contains("no Data Type Offset column (its sort keys: comm,dso,sym)"),
        "{e}"
    );
    // Only pseudo types: perf resolved nothing.
    let e = err("# Overhead  Data Type  Data Type Offset\n\
                 \x20   90.00%  (unknown)  (unknown) +0 (no field)\n\
                 \x20   10.00%  (stack operation)  (stack operation) +0 (no field)\n");
    assert!(e.to_string().contains("pseudo type"), "{e}");
}

const HEADED: &str = "\
# Samples: 12K of event 'cpu/mem-loads,ldlat=30/P'
# Event count (approx.): 1203844
#
# Overhead  Data Type  Data Type Offset
# ........  .........  ................
#
     6.52%  struct task_struct  struct task_struct +800 (cpus_ptr)
     5.33%  struct rq  struct rq +2776 (clock)
";

fn with_row(row: &str) -> String {
    format!("{HEADED}{row}\n")
}

#[test]
fn damaged_rows_name_their_line() {
    let cases = [
        // Cut in the middle of the type name.
        ("     2.88%  struct cfs_rq  struct cf", "Data Type Offset"),
        // Cut before the member.
        (
            "     2.88%  struct cfs_rq  struct cfs_rq +160",
            "not followed by",
        ),
        // Cut inside the member.
        (
            "     2.88%  struct cfs_rq  struct cfs_rq +160 (avg.lo",
            "closing parenthesis",
        ),
        // A damaged percentage.
        (
            "     2.8x%  struct cfs_rq  struct cfs_rq +160 (avg)",
            "percentage",
        ),
        (
            "    102.88%  struct cfs_rq  struct cfs_rq +160 (avg)",
            "percentage",
        ),
        // Cut in the percentage.
        ("     2.8", "percentage"),
        // Only the number.
        ("     2.88%", "row without a data type"),
        // A damaged offset.
        (
            "     2.88%  struct cfs_rq  struct cfs_rq +0x1g0 (avg)",
            "offset",
        ),
    ];
    for (row, words) in cases {
        let e = err(&with_row(row));
        assert_eq!(e.line(), Some(9), "{row:?}: {e}");
        assert!(e.to_string().contains(words), "{row:?}: {e}");
    }
    // Per-event lines must read too.
    let e = err("# Samples: 12Q of event 'x'\n");
    assert_eq!(e.line(), Some(1));
    assert!(e.to_string().contains("12Q"), "{e}");
    let e = err("# Samples: 12K of event 'x'\n# Event count (approx.): lots\n");
    assert_eq!(e.line(), Some(2));
    // A hierarchy row indented deeper than the header's levels.
    let e = err("#    Overhead  Data Type / Data Type Offset\n\
                 \x20   10.00%     struct foo\n\
                 \x20         5.00%     struct foo +8 (x)\n");
    assert_eq!(e.line(), Some(3), "{e}");
    // Without headers a row is read by its shape; a cut member still fails.
    let e = err(
        "> Samples: 1K of event 'cpu/mem-loads,ldlat=30/P'\n> 12.00% struct foo struct foo +8 (coun\n",
    );
    assert_eq!(e.line(), Some(2), "{e}");
    // Cut before the offset: not to be mistaken for a hierarchy parent (`struct foo`).
    for cut in [
        "12.00% struct foo struct fo",
        "12.00% struct foo struct foo +",
        "12.00% struct foo struct foo +0x",
        "12.00% struct foo +8",
    ] {
        let e = err(&format!(
            "> Samples: 1K of event 'cpu/mem-loads,ldlat=30/P'\n> 12.00% struct foo struct foo +8 (x)\n> {cut}\n"
        ));
        assert_eq!(e.line(), Some(3), "{cut}: {e}");
    }
}

#[test]
fn truncations_never_panic() {
    for rel in [
        "tests/data/perf/typeoff_plain.txt",
        "tests/data/perf/typeoff_hierarchy.txt",
        "tests/data/perf/typeoff_columns.txt",
        "tests/data/perf/typeoff_mail.txt",
    ] {
        let text = data(rel);
        let mut cut = 0;
        while cut < text.len() {
            if text.is_char_boundary(cut) {
                match import_perf_typeoff(&text[..cut]) {
                    Ok(p) => {
                        let _ = Profile::from_json(&p.to_json()).unwrap();
                    }
                    Err(e) => assert!(!e.to_string().contains('\n'), "{rel}@{cut}: {e}"),
                }
            }
            cut += 7;
        }
    }
}

/// A small deterministic generator for damage (no external crates).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_damage_never_panics() {
    const ALPHABET: &[u8] = b"0x%()[]/+-:. \n1234567890abcdef#>=structunion{}',Kk";
    let rounds: usize = std::env::var("LINEUP_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let inputs: Vec<String> = [
        "tests/data/perf/typeoff_plain.txt",
        "tests/data/perf/typeoff_hierarchy.txt",
        "tests/data/perf/typeoff_columns.txt",
        "tests/data/perf/typeoff_mail.txt",
    ]
    .iter()
    .map(|p| data(p))
    .collect();
    let mut rng = Lcg(0x7e0f_f5e7);
    for _ in 0..rounds {
        for text in &inputs {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let len = b.len();
                let at = rng.below(len + 1);
                match rng.below(3) {
                    0 => {
                        let n = rng.below(6);
                        let bytes: Vec<u8> = (0..n)
                            .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                            .collect();
                        b.splice(at..(at + n).min(len), bytes);
                    }
                    1 => {
                        let end = (at + rng.below(80)).min(len);
                        b.drain(at..end);
                    }
                    _ => {
                        let end = (at + rng.below(200)).min(len);
                        let chunk = b[at..end].to_vec();
                        let to = rng.below(len + 1);
                        b.splice(to..to, chunk);
                    }
                }
            }
            let m = String::from_utf8_lossy(&b);
            match import_perf_typeoff(&m) {
                Ok(p) => {
                    let _ = Profile::from_json(&p.to_json()).unwrap();
                    for t in &p.types {
                        let _ = p.type_line_ranges(&t.type_name, 0);
                    }
                }
                Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
            }
        }
    }
}

#[test]
fn fuzz_corpus_reads_or_fails_cleanly() {
    let dir = common::repo().join("fuzz/corpus/typeoff");
    let mut files = 0;
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        files += 1;
        match import_perf_typeoff(&text) {
            Ok(p) => {
                read += 1;
                Profile::from_json(&p.to_json()).unwrap();
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{}: {e}", path.display()),
        }
    }
    assert!(files >= 4 && read >= 4, "{files} files, {read} read");
}

// ---------------------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------------------

fn lineup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(args)
        .output()
        .expect("run lineup")
}

fn path(rel: &str) -> String {
    common::repo().join(rel).display().to_string()
}

#[test]
fn diagnose_task_group_from_a_typeoff_report() {
    let btf = common::bundled_btf().display().to_string();
    let out = lineup(&[
        "diagnose",
        "--type",
        "task_group",
        "--btf",
        &btf,
        "--perf-typeoff",
        &path("tests/data/perf/typeoff_columns.txt"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The header names the layout's file first (issue 13 item 7).
    assert!(
        text.starts_with(&format!("layout from: {btf} (BTF)\n")),
        "{text}"
    );
    assert!(
        text.lines().nth(1).unwrap_or("").starts_with(
            "struct task_group: 704 bytes, 11 cache lines of 64 bytes; evidence: perf report -s type,typeoff"
        ),
        "{text}"
    );
    // load_avg (+0x100) written beside rt_se (+0x108) and rt_rq (+0x110) read: seed 000's
    // line, found from data types alone. perf gives no CPU counts, so lineup cannot tell
    // false sharing from one CPU's traffic and says so.
    assert!(
        text.contains("cache line 4 (bytes 256-319): read-mostly next to write-hot"),
        "{text}"
    );
    assert!(
        text.contains(
            "`load_avg` is stored by update_load_avg while `rt_se` and `rt_rq` on the same line are loaded by set_task_cpu"
        ),
        "{text}"
    );
    assert!(
        text.contains("cache line 3 (bytes 192-255): read-shared"),
        "{text}"
    );
    assert!(
        text.contains("rt_se;                /*   264     8 */ <- reads 402 by set_task_cpu"),
        "{text}"
    );

    // The hierarchy report (no symbols) names the same members.
    let out = lineup(&[
        "diagnose",
        "--type",
        "task_group",
        "--btf",
        &btf,
        "--perf-typeoff",
        &path("tests/data/perf/typeoff_hierarchy.txt"),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lines"][0]["index"], 4);
    assert_eq!(v["lines"][0]["verdict"], "read_mostly_next_to_write_hot");
    let members: Vec<&str> = v["lines"][0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["load_avg", "rt_se", "rt_rq"]);
}

#[test]
fn import_writes_the_profile_and_errors_are_one_line() {
    let out = lineup(&[
        "import",
        "--perf-typeoff",
        &path("tests/data/perf/typeoff_mail.txt"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Profile::from_json(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(p.provenance.tool, "perf report -s type,typeoff");
    assert!(
        p.provenance
            .input
            .as_deref()
            .unwrap()
            .ends_with("typeoff_mail.txt")
    );
    assert!(p.type_profile("ring_ctl").is_some());

    let dir = std::env::temp_dir().join(format!("lineup-typeoff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("cut.txt");
    std::fs::write(
        &bad,
        with_row("     2.88%  struct cfs_rq  struct cfs_rq +160 (avg.lo"),
    )
    .unwrap();
    let out = lineup(&["import", "--perf-typeoff", &bad.display().to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains("cut.txt: line 9:"), "{err}");
    // One evidence flag at a time.
    let out = lineup(&[
        "import",
        "--perf-typeoff",
        &path("tests/data/perf/typeoff_mail.txt"),
        "--c2c",
        &path("tests/data/c2c/seed000_paste.txt"),
    ]);
    assert_eq!(out.status.code(), Some(2));
}
