//! The access profile and its importers: perf c2c reports (full, per perf version, and the
//! mail paste of seed 000), perf script memory samples, hand-written sketches, JSON round
//! trips, and bad input that must fail with a one-line error instead of panicking.

use std::path::Path;

use lineup::profile::{
    Access, C2cOptions, LineProfile, PerfScriptOptions, Place, Privilege, Profile, ProfileError,
    Unit, import_c2c, import_c2c_with, import_perf_script, import_sketch,
};

fn data(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn c2c(path: &str) -> Vec<Profile> {
    import_c2c(&data(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The access of `line` at `offset` made by the code location `sym+off` (or `sym` alone).
fn at<'a>(line: &'a LineProfile, offset: u64, code: &str) -> &'a Access {
    line.accesses
        .iter()
        .find(|a| {
            let c = a.code.as_ref().unwrap();
            a.offset == Some(offset) && (c.display() == code || c.source.as_deref() == Some(code))
        })
        .unwrap_or_else(|| panic!("no access at {offset:#x} by {code}"))
}

fn round_trip(p: &Profile) {
    let json = p.to_json();
    let back = Profile::from_json(&json).unwrap();
    assert_eq!(&back, p, "JSON round trip changed the profile");
}

// ---------------------------------------------------------------------------------------
// Seed 000: the mail paste (headers dropped, whitespace collapsed, two tables)
// ---------------------------------------------------------------------------------------

#[test]
fn seed000_paste_has_two_labelled_tables() {
    let ps = c2c("tests/data/c2c/seed000_paste.txt");
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[0].label.as_deref(), Some("Baseline"));
    assert_eq!(ps[1].label.as_deref(), Some("With this change"));
    for p in &ps {
        assert_eq!(p.unit, Unit::Samples);
        assert_eq!(p.cacheline_size, 64);
        assert_eq!(p.lines.len(), 1);
        round_trip(p);
    }
    assert_eq!(ps[0].lines[0].address, 0xff284d17b5c0fa00);
    assert_eq!(ps[1].lines[0].address, 0xff1d6ca01ecc5e80);
}

#[test]
fn seed000_baseline_rows() {
    let ps = c2c("tests/data/c2c/seed000_paste.txt");
    let line = &ps[0].lines[0];
    assert_eq!(line.rank, Some(0));
    // Header row `0 1031 3927 3322 50 0 0xff284d17b5c0fa00`.
    let t = line.totals.unwrap();
    assert_eq!((t.rmt_hitm, t.lcl_hitm, t.stores), (1031.0, 3927.0, 3372.0));
    assert_eq!(line.accesses.len(), 10);

    // update_cfs_group+78 loads offset 0x0 from 160 CPUs, 4057 cycles per plain load.
    let a = at(line, 0x0, "update_cfs_group+78");
    let code = a.code.as_ref().unwrap();
    assert_eq!(code.symbol.as_deref(), Some("update_cfs_group"));
    assert_eq!(code.symbol_offset, Some(78));
    assert_eq!(code.address, Some(0xffffffffa134934e));
    assert_eq!(code.object.as_deref(), Some("[kernel.kallsyms]"));
    assert_eq!(code.privilege, Some(Privilege::Kernel));
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(160));
    assert_eq!(a.counts.loads, 13874.0);
    assert_eq!(a.counts.stores, 0.0);
    // 63.72% of 1031 remote and 65.16% of 3927 local HITMs.
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (657.0, 2559.0));
    let l = a.latency.unwrap();
    assert_eq!(
        (l.mean_rmt_hitm, l.mean_lcl_hitm, l.mean_load),
        (Some(4247.0), Some(3249.0), Some(4057.0))
    );
    assert_eq!(a.nodes.as_deref(), Some(&[0, 1][..]));
    assert_eq!(a.data_nodes.as_deref(), Some(&[1][..]));
    assert_eq!(a.details["pa_count"], 1.0);

    // update_load_avg+940 stores 98.43% of the line's 3322 L1-hit stores.
    let a = at(line, 0x0, "update_load_avg+940");
    assert_eq!(a.counts.stores, 3270.0);
    assert_eq!(a.counts.loads, 8149.0 - 3270.0);
    // +948: 0.39% of 3322 L1 hits and 98% of 50 L1 misses.
    let a = at(line, 0x0, "update_load_avg+948");
    assert_eq!(a.counts.stores, 13.0 + 49.0);
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(95));

    // set_task_cpu loads offsets 0x8 (rt_se) and 0x10 (rt_rq) on 160 CPUs.
    let a = at(line, 0x8, "set_task_cpu+279");
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(160));
    assert_eq!(a.counts.loads, 7354.0);
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (146.0, 640.0));
    let a = at(line, 0x10, "set_task_cpu+261");
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(160));
    assert_eq!(a.latency.unwrap().mean_load, Some(5608.0));
    assert_eq!(at(line, 0x10, "set_task_cpu+268").counts.loads, 149.0);
}

#[test]
fn seed000_per_range_view_for_diagnose() {
    let ps = c2c("tests/data/c2c/seed000_paste.txt");
    let ranges = ps[0].line_ranges(0xff284d17b5c0fa00);
    let offsets: Vec<Option<u64>> = ranges.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [Some(0x0), Some(0x8), Some(0x10)]);

    // 0x0: stored by update_load_avg, loaded mostly by update_cfs_group.
    let r0 = &ranges[0];
    assert_eq!(r0.counts.stores, 3270.0 + 62.0 + 39.0 + 1.0);
    assert_eq!(r0.functions[0].name, "update_cfs_group");
    let ula = r0.function("update_load_avg").unwrap();
    assert_eq!(ula.counts.stores, 3332.0);
    assert_eq!(ula.cpus.at_least, 160);
    assert_eq!(
        ula.locations,
        ["update_load_avg+940", "update_load_avg+948"]
    );
    let top_store = r0
        .functions
        .iter()
        .max_by(|a, b| a.counts.stores.total_cmp(&b.counts.stores))
        .unwrap();
    assert_eq!(top_store.name, "update_load_avg");
    assert!(r0.cycles_per_load().unwrap() > 3000.0);

    // 0x8 and 0x10: only set_task_cpu, only loads, 160 CPUs.
    for r in &ranges[1..] {
        assert_eq!(r.functions.len(), 1);
        assert_eq!(r.functions[0].name, "set_task_cpu");
        assert_eq!(r.counts.stores, 0.0);
        assert_eq!(r.cpus.at_least, 160);
    }

    // set_task_cpu touches 0x8 and 0x10 together: a co-access group.
    let g = ps[0]
        .groups
        .iter()
        .find(|g| g.name == "set_task_cpu")
        .unwrap();
    let offs: Vec<Option<u64>> = g.members.iter().map(|m| m.offset).collect();
    assert_eq!(offs, [Some(0x8), Some(0x10)]);
    assert!(matches!(
        g.members[0].place,
        Place::Line {
            address: 0xff284d17b5c0fa00
        }
    ));
    assert_eq!(g.weight, 7354.0 + 30.0 + 6321.0 + 149.0);
}

#[test]
fn seed000_after_the_change_only_offset_zero() {
    let ps = c2c("tests/data/c2c/seed000_paste.txt");
    let line = &ps[1].lines[0];
    assert_eq!(line.accesses.len(), 6);
    assert!(line.accesses.iter().all(|a| a.offset == Some(0)));
    assert!(
        !line
            .accesses
            .iter()
            .any(|a| a.code.as_ref().unwrap().function() == "set_task_cpu")
    );
    let a = at(line, 0x0, "update_cfs_group+78");
    assert_eq!(a.counts.loads, 14218.0);
    assert_eq!(a.latency.unwrap().mean_load, Some(5158.0));
    assert!(ps[1].groups.is_empty());
}

#[test]
fn bound_seed_line_answers_per_type_line() {
    // What attribution will do: the line is task_group's cache line 4 (load_avg at 256).
    let mut p = c2c("tests/data/c2c/seed000_paste.txt").remove(0);
    assert!(p.bind_line(0xff284d17b5c0fa00, "task_group", 256));
    let ranges = p.type_line_ranges("task_group", 4);
    let offsets: Vec<Option<u64>> = ranges.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [Some(256), Some(264), Some(272)]);
    assert!(p.type_line_ranges("task_group", 3).is_empty());
    round_trip(&p);
}

// ---------------------------------------------------------------------------------------
// Full reports, columns from the headers
// ---------------------------------------------------------------------------------------

#[test]
fn perf6_full_report() {
    let ps = c2c("tests/data/c2c/perf6_hitm_full.txt");
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(p.label, None);
    let prov = &p.provenance;
    assert_eq!(prov.tool, "perf c2c report");
    assert_eq!(prov.tool_version.as_deref(), Some("6.8.12"));
    assert_eq!(
        prov.command.as_deref(),
        Some("/usr/bin/perf c2c record -a -- sleep 5")
    );
    assert_eq!(prov.machine.cpus, Some(32));
    assert_eq!(prov.machine.numa_nodes, Some(2));
    assert_eq!(prov.events.len(), 3);
    assert_eq!(prov.settings["sort_on"], "Total HITMs");
    assert_eq!(prov.settings["grouping"], "offset,iaddr");
    let te = &p.summary["trace_events"];
    assert_eq!(te["load_local_hitm"], 1347.0);
    assert_eq!(te["load_remote_hitm"], 1181.0);
    assert_eq!(te["llc_misses_to_remote_cache_hitm_pct"], 28.2);
    assert_eq!(p.summary["shared_lines"]["total_shared_cache_lines"], 3.0);

    assert_eq!(p.lines.len(), 3);
    let line = &p.lines[0];
    assert_eq!(line.address, 0x55d1c2a3e0c0);
    // Loads come from the Shared Data Cache Line Table, the rest from both.
    let t = line.totals.unwrap();
    assert_eq!(
        (t.loads, t.stores, t.lcl_hitm, t.rmt_hitm),
        (3210.0, 2237.0, 842.0, 808.0)
    );
    assert_eq!(line.details["records"], 5447.0);
    assert_eq!(line.details["ld_l1hit"], 1092.0);
    assert_eq!(line.details["st_l1miss"], 57.0);
    assert_eq!(line.data_nodes.as_deref(), Some(&[0][..]));

    let a = at(line, 0x0, "ring.c:57");
    assert_eq!(
        (a.counts.rmt_hitm, a.counts.lcl_hitm, a.counts.loads),
        (95.0, 410.0, 805.0)
    );
    assert_eq!(a.latency.unwrap().mean_rmt_hitm, Some(1210.0));
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(8));
    assert_eq!(a.nodes.as_deref(), Some(&[0][..]));
    assert_eq!(
        a.code.as_ref().unwrap().symbol.as_deref(),
        Some("ring_push")
    );
    assert_eq!(a.code.as_ref().unwrap().privilege, Some(Privilege::User));
    let a = at(line, 0x8, "ring.c:88");
    assert_eq!((a.counts.stores, a.counts.loads), (1002.0, 0.0));
    let a = at(line, 0x10, "stats.c:19");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (3.0, 12.0));
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(1));

    let k = &p.lines[2];
    assert_eq!(k.address, 0xffff8f2a41c3d240);
    assert_eq!(k.data_nodes.as_deref(), Some(&[1][..]));
    let a = at(k, 0x0, "core.c:519");
    assert_eq!(a.counts.stores, 70.0);
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(12));
    assert_eq!(a.nodes.as_deref(), Some(&[0, 1][..]));
    assert_eq!(a.details["pa_count"], 2.0);
    assert_eq!(a.code.as_ref().unwrap().privilege, Some(Privilege::Kernel));

    // ring_push and ring_pop both touch 0x0 and 0x8 of the first line, and the counter line.
    let g = p.groups.iter().find(|g| g.name == "ring_push").unwrap();
    assert_eq!(g.members.len(), 3);
    round_trip(p);
}

#[test]
fn perf4_classic_with_pid_and_cpu_lists() {
    let ps = c2c("tests/data/c2c/perf4_classic_nn.txt");
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(p.provenance.settings["grouping"], "offset,pid,iaddr");
    assert!(!p.summary["trace_events"].contains_key("load_hit_local_peer"));
    let line = &p.lines[0];
    // No store N/A column: 6-field header rows.
    assert_eq!(line.totals.unwrap().stores, 2237.0);
    assert_eq!(line.totals.unwrap().loads, 3210.0);
    assert_eq!(line.details["ld_llcmiss"], 808.0);
    let a = at(line, 0x0, "ring.c:57");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (95.0, 410.0));
    // -NN lists the CPUs per node.
    let cpus = a.cpus.as_ref().unwrap();
    assert_eq!(cpus.list, (0..8).collect::<Vec<u32>>());
    assert_eq!(cpus.count, Some(8));
    assert_eq!(a.threads.as_ref().unwrap().pids, [4242]);
    let k = at(&p.lines[2], 0x0, "core.c:1604");
    assert_eq!(k.cpus.as_ref().unwrap().list, [0, 1, 2, 3, 16, 17, 18, 19]);
    assert_eq!(k.threads.as_ref().unwrap().pids, [-1]);
    // Lists make the per-range CPU count exact.
    let ranges = p.line_ranges(p.lines[0].address);
    assert_eq!(ranges[0].cpus.exact.as_ref().unwrap().len(), 16);
    round_trip(p);
}

#[test]
fn perf6_arm_spe_peer_columns() {
    let ps = c2c("tests/data/c2c/perf6_peer_arm.txt");
    let p = &ps[0];
    assert_eq!(p.provenance.settings["sort_on"], "Peer Snoop");
    let line = &p.lines[0];
    assert_eq!(line.address, 0xaaaad3f0e040);
    let t = line.totals.unwrap();
    assert_eq!((t.lcl_peer, t.rmt_peer, t.hitm()), (842.0, 808.0, 0.0));
    assert_eq!(line.data_nodes, None); // N/A: SPE gave no physical address
    let a = at(line, 0x0, "ring.c:57");
    assert_eq!((a.counts.rmt_peer, a.counts.lcl_peer), (95.0, 410.0));
    assert_eq!(a.counts.hitm(), 0.0);
    let l = a.latency.unwrap();
    assert_eq!(
        (l.mean_rmt_peer, l.mean_lcl_peer, l.mean_rmt_hitm),
        (Some(403.0), Some(134.0), None)
    );
    assert_eq!(a.details["pa_count"], 0.0);
    // -N: `0{ 8 100.0%    n/a}` gives the node, the row's count the CPUs.
    assert_eq!(a.nodes.as_deref(), Some(&[0][..]));
    assert_eq!(a.cpus.as_ref().unwrap().count, Some(8));
    round_trip(p);
}

#[test]
fn perf6_pid_tid_without_source() {
    let ps = c2c("tests/data/c2c/perf6_lcl_pid_tid.txt");
    let p = &ps[0];
    assert_eq!(p.provenance.settings["sort_on"], "Local HITMs");
    let line = &p.lines[0];
    let a = line
        .accesses
        .iter()
        .find(|a| a.code.as_ref().unwrap().function() == "stats_reader")
        .unwrap();
    let th = a.threads.as_ref().unwrap();
    assert_eq!(
        (th.pids.as_slice(), th.tids.as_slice()),
        (&[4242][..], &[4250][..])
    );
    assert_eq!(th.comms, ["stats thread"]);
    let code = a.code.as_ref().unwrap();
    assert_eq!(code.source, None);
    assert_eq!(code.object.as_deref(), Some("ringbench"));
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (3.0, 12.0));
    round_trip(p);
}

#[test]
fn quoted_paste_reads_like_the_full_report() {
    let full = c2c("tests/data/c2c/perf6_hitm_full.txt").remove(0);
    let ps = c2c("tests/data/c2c/paste_quoted.txt");
    assert_eq!(ps.len(), 1);
    let paste = &ps[0];
    assert_eq!(
        paste.label.as_deref(),
        Some("The ring head and tail share a line")
    );
    assert_eq!(paste.lines.len(), 3);
    for (a, b) in paste.lines.iter().zip(&full.lines) {
        assert_eq!(a.address, b.address);
        // Columns inferred from the rows' shape mean what the headers said.
        assert_eq!(a.accesses, b.accesses);
    }
}

#[test]
fn pasted_headers_without_hash_and_spacing() {
    // Headers still there but '#' dropped and whitespace collapsed: still read by name.
    for path in [
        "tests/data/c2c/perf6_hitm_full.txt",
        "tests/data/c2c/perf6_peer_arm.txt",
        "tests/data/c2c/perf6_lcl_pid_tid.txt",
    ] {
        let full = c2c(path).remove(0);
        let text = data(path);
        let start = text.find("Shared Data Cache Line Table").unwrap();
        let (head, tail) = text.split_at(start);
        let squeezed: Vec<String> = tail
            .lines()
            .map(|l| {
                l.trim_start_matches('#')
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|l| !l.chars().all(|c| c == '.' || c == ' '))
            .collect();
        let ps = import_c2c(&format!("{head}{}", squeezed.join("\n"))).unwrap();
        assert_eq!(ps[0].lines, full.lines, "{path}");
    }
}

#[test]
fn stats_only_report_has_totals_and_no_lines() {
    // `perf c2c report --stats` stops before the tables.
    let text = data("tests/data/c2c/perf6_hitm_full.txt");
    let cut = &text[..text.find("Shared Data Cache Line Table").unwrap()];
    let ps = import_c2c(cut).unwrap();
    assert!(ps[0].lines.is_empty());
    assert!(ps[0].is_empty());
    assert_eq!(ps[0].summary["trace_events"]["load_remote_hitm"], 1181.0);
}

#[test]
fn power_line_size_option() {
    // A 128-byte line report (POWER): offsets up to 0x7f.
    let text = data("tests/data/c2c/seed000_paste.txt").replace(" 0x10 1 1 ", " 0x50 1 1 ");
    assert!(import_c2c(&text).is_err());
    let ps = import_c2c_with(
        &text,
        &C2cOptions {
            cacheline_size: 128,
        },
    )
    .unwrap();
    assert!(
        ps[0].lines[0]
            .accesses
            .iter()
            .any(|a| a.offset == Some(0x50))
    );
    let odd = C2cOptions {
        cacheline_size: 100,
    };
    assert!(matches!(
        import_c2c_with(&text, &odd),
        Err(ProfileError::Option(_))
    ));
}

// ---------------------------------------------------------------------------------------
// Bad input: clear one-line errors, never a panic, never an empty profile
// ---------------------------------------------------------------------------------------

fn err_of(text: &str) -> ProfileError {
    let e = import_c2c(text).expect_err("mangled input must not import");
    assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    e
}

fn seed_with(from: &str, to: &str) -> String {
    let text = data("tests/data/c2c/seed000_paste.txt");
    assert!(text.contains(from));
    text.replacen(from, to, 1)
}

/// 1-based line of the first occurrence of `needle` in the seed.
fn seed_line_of(needle: &str) -> usize {
    data("tests/data/c2c/seed000_paste.txt")
        .lines()
        .position(|l| l.contains(needle))
        .unwrap()
        + 1
}

#[test]
fn no_c2c_data_is_an_error() {
    for text in [
        "",
        "hello world\nthis is not a perf report\n",
        "=================================================\n      Shared Cache Line Distribution Pareto\n=================================================\n",
        &data("examples/sketches/seed001_nohz.toml"),
    ] {
        assert!(matches!(err_of(text), ProfileError::NoData(_)));
    }
}

#[test]
fn truncated_row() {
    let row = "0.00% 0.03% 0.00% 0.00% 0.00% 0x8 1 1 0xffffffffa133c5ce 0 18646 25195 30 28";
    let text = seed_with(
        &format!("{row} [k] set_task_cpu [kernel.kallsyms] set_task_cpu+286 0 1"),
        "0.00% 0.03% 0.00%",
    );
    let e = err_of(&text);
    assert_eq!(e.line(), Some(seed_line_of(row)));
    assert!(e.to_string().contains("percentage"), "{e}");
}

#[test]
fn row_with_a_field_missing() {
    // The records column dropped: the cpu count is then read from "[k]".
    let text = seed_with("4839 7354 160 [k]", "4839 160 [k]");
    let e = err_of(&text);
    assert_eq!(e.line(), Some(seed_line_of("0xffffffffa133c5c7")));

    // In a report with headers, a row one field short of what the header announces.
    let full = data("tests/data/c2c/perf6_hitm_full.txt");
    let text = full.replacen("      0x55d1c283a6d0      1210", "      1210", 1);
    let e = err_of(&text);
    assert!(e.line().is_some(), "{e}");
}

#[test]
fn damaged_numbers() {
    let e = err_of(&seed_with("63.72% 65.16%", "6x.72% 65.16%"));
    assert!(
        e.to_string()
            .starts_with(&format!("line {}:", seed_line_of("0xffffffffa134934e")))
    );
    let e = err_of(&seed_with("63.72% 65.16%", "163.72% 65.16%"));
    assert!(e.to_string().contains("0% to 100%"), "{e}");
    let e = err_of(&seed_with(
        "0x0 1 1 0xffffffffa134934e",
        "0xZZ 1 1 0xffffffffa134934e",
    ));
    assert!(e.line().is_some());
    let full = data("tests/data/c2c/perf6_hitm_full.txt");
    let e = err_of(&full.replacen(
        "Load Local HITM                   :       1347",
        "Load Local HITM                   :       13x7",
        1,
    ));
    assert!(e.to_string().contains("Load Local HITM"), "{e}");
}

#[test]
fn cache_line_header_rows_must_be_whole() {
    let e = err_of(&seed_with(
        "0 1031 3927 3322 50 0 0xff284d17b5c0fa00",
        "0 1031 3927 0xff284d17b5c0fa00",
    ));
    assert!(
        e.to_string().contains("cache line header row has 4 fields"),
        "{e}"
    );
    // An address that is not a line start.
    let e = err_of(&seed_with("0xff284d17b5c0fa00", "0xff284d17b5c0fa08"));
    assert!(e.to_string().contains("not the start"), "{e}");
    // Offset rows with no header row above them.
    let e = err_of(&seed_with(
        "----------------------------------------------------------------------\n0 1031 3927 3322 50 0 0xff284d17b5c0fa00\n",
        "",
    ));
    assert!(
        e.to_string().contains("before any cache line header row"),
        "{e}"
    );
}

#[test]
fn offsets_outside_the_line() {
    let e = err_of(&seed_with(" 0x10 1 1 ", " 0x48 1 1 "));
    assert!(
        e.to_string().contains("outside a 64-byte cache line"),
        "{e}"
    );
}

#[test]
fn table_rows_must_match_their_header() {
    let full = data("tests/data/c2c/perf6_hitm_full.txt");
    let text = full.replacen("   65.27%     1650", "   65.27%", 1);
    let e = err_of(&text);
    assert!(
        e.to_string()
            .contains("Shared Data Cache Line Table row has 22 fields"),
        "{e}"
    );
}

/// Every report cut short at every line, and with every line removed, imports or fails
/// cleanly: a smoke test in the spirit of the fuzz target.
#[test]
fn truncations_and_deletions_never_panic() {
    for path in [
        "tests/data/c2c/seed000_paste.txt",
        "tests/data/c2c/perf6_hitm_full.txt",
        "tests/data/c2c/perf4_classic_nn.txt",
        "tests/data/c2c/perf6_peer_arm.txt",
        "tests/data/c2c/perf6_lcl_pid_tid.txt",
        "tests/data/c2c/lkml_address_space_i_mmap.txt",
        "tests/data/c2c/lkml_c2c_arm64_cover_x86.txt",
        "tests/data/c2c/lkml_c2c_display_peer_pid_tid.txt",
        "tests/data/c2c/lkml_ovl_creds_edited_to_fit.txt",
        "tests/data/c2c/lkml_memcg_rstat_loads_only.txt",
        "tests/data/c2c/lkml_seed003_root_domain.txt",
        "tests/data/c2c/lkml_seed003_cpupri_vec.txt",
        "tests/data/c2c/kernel_doc_false_sharing_lruvec.txt",
    ] {
        let text = data(path);
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let _ = import_c2c(&lines[..i].join("\n"));
            let mut rest = lines.clone();
            rest.remove(i);
            let _ = import_c2c(&rest.join("\n"));
            // Half a line, cut inside a token.
            let mut cut = lines.clone();
            let mut k = lines[i].len() / 2;
            while !lines[i].is_char_boundary(k) {
                k -= 1;
            }
            cut[i] = &lines[i][..k];
            if let Err(e) = import_c2c(&cut.join("\n")) {
                assert!(!e.to_string().contains('\n'));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// perf script memory samples
// ---------------------------------------------------------------------------------------

#[test]
fn perf_script_samples_aggregate_per_line_and_offset() {
    let p = import_perf_script(
        &data("tests/data/perf/mem_script.txt"),
        &PerfScriptOptions::default(),
    )
    .unwrap();
    assert_eq!(p.provenance.tool, "perf script");
    assert_eq!(p.summary["perf_script"]["samples"], 13.0);
    assert_eq!(p.summary["perf_script"]["samples_without_address"], 1.0);
    assert_eq!(p.lines.len(), 2);
    let line = &p.lines[0];
    assert_eq!((line.address, line.rank), (0x55d1c2a3e0c0, Some(0)));

    let a = at(line, 0x8, "ring_push+98");
    assert_eq!((a.counts.loads, a.counts.rmt_hitm), (2.0, 2.0));
    assert_eq!(a.cpus.as_ref().unwrap().list, [2, 3]);
    assert_eq!(a.latency.unwrap().mean_rmt_hitm, Some(1300.0));
    assert_eq!(a.code.as_ref().unwrap().address, Some(0x55d1c283a6f2));
    assert_eq!(
        a.code.as_ref().unwrap().object.as_deref(),
        Some("/usr/bin/ringbench")
    );
    let a = at(line, 0x8, "ring_pop+32");
    assert_eq!((a.counts.loads, a.counts.lcl_hitm), (2.0, 2.0));
    assert_eq!(a.latency.unwrap().mean_lcl_hitm, Some(390.0));
    assert_eq!(a.threads.as_ref().unwrap().tids, [4244]);
    let a = at(line, 0x0, "ring_push+93");
    assert_eq!(a.counts.stores, 2.0);
    assert_eq!(a.cpus.as_ref().unwrap().list, [2, 5]);
    // Old perf text without OP/LVL labels, decoded from the raw value.
    let a = at(line, 0x10, "stats_reader+16");
    assert_eq!(a.counts.lcl_hitm, 1.0);
    // A hand-trimmed line without the raw value.
    let a = at(line, 0x10, "stats_reader+36");
    assert_eq!((a.counts.loads, a.counts.hitm()), (1.0, 0.0));
    assert_eq!(a.cpus.as_ref().unwrap().list, [19]);

    // The locked add on the counter line: read-modify-writes that hit modified lines.
    let c = &p.lines[1];
    let t = c.totals.unwrap();
    assert_eq!(
        (t.rmw, t.loads, t.lcl_hitm, t.rmt_hitm),
        (2.0, 0.0, 1.0, 1.0)
    );
    round_trip(&p);
}

#[test]
fn perf_script_errors() {
    let opts = PerfScriptOptions::default();
    assert!(matches!(
        import_perf_script("nothing here\n", &opts),
        Err(ProfileError::NoData(_))
    ));
    let e = import_perf_script(
        "x [003] LOAD|L1 hit|SNP None|TLB L1 or L2 hit|LCK No 35\n",
        &opts,
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(1));
    let e = import_perf_script(
        "[003] 55d1c2a3e0d0 68100142 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit\n",
        &opts,
    )
    .unwrap_err();
    assert!(e.to_string().contains("LCK"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Sketches
// ---------------------------------------------------------------------------------------

fn sketch(path: &str) -> Profile {
    import_sketch(&data(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn seed003_root_domain_sketch() {
    let p = sketch("examples/sketches/seed003_root_domain.toml");
    assert_eq!(p.unit, Unit::Relative);
    assert_eq!(p.provenance.tool, "lineup sketch");
    assert_eq!(p.provenance.machine.cpus, Some(480));
    assert!(
        p.provenance
            .note
            .as_deref()
            .unwrap()
            .starts_with("seed 003")
    );
    let t = p.type_profile("root_domain").unwrap();
    let fields: std::collections::BTreeSet<&str> = t
        .accesses
        .iter()
        .filter_map(|a| a.field.as_deref())
        .collect();
    for f in [
        "rto_count",
        "overloaded",
        "rto_mask",
        "rto_loop_next",
        "rto_loop_start",
        "rto_lock",
        "rto_push_work",
        "cpupri.pri_to_cpu[0].count",
    ] {
        assert!(fields.contains(f), "{f} missing");
    }
    let rto_count = t
        .accesses
        .iter()
        .find(|a| a.field.as_deref() == Some("rto_count") && a.counts.rmw > 0.0)
        .unwrap();
    assert_eq!(rto_count.counts.rmw, 30.0);
    let cpus = rto_count.cpus.as_ref().unwrap();
    assert!(cpus.all);
    assert_eq!(cpus.count, Some(480));
    assert_eq!(rto_count.latency.unwrap().range, Some((2800.0, 44000.0)));
    // rto_loop_next and rto_loop_start are written together when pushing.
    let g = p.groups.iter().find(|g| g.name == "push_ipi").unwrap();
    let members: Vec<&str> = g
        .members
        .iter()
        .filter_map(|m| m.field.as_deref())
        .collect();
    assert_eq!(
        members,
        [
            "rto_loop_next",
            "rto_loop_start",
            "rto_lock",
            "rto_push_work"
        ]
    );
    round_trip(&p);
}

#[test]
fn seed003_cpupri_vec_sketch_resolves_against_a_layout() {
    let mut p = sketch("examples/sketches/seed003_cpupri_vec.toml");
    let t = p.type_profile("cpupri_vec").unwrap();
    assert_eq!(t.accesses.len(), 4);
    // Offsets as in the fixture kernel: count at 0 (4 bytes), mask at 8 (32 bytes).
    let missing = p.resolve_fields("cpupri_vec", |f| match f {
        "count" => Some((0, 4)),
        "mask" => Some((8, 32)),
        _ => None,
    });
    assert!(missing.is_empty());
    let ranges = p.type_line_ranges("cpupri_vec", 0);
    assert_eq!(ranges.len(), 2);
    assert_eq!(ranges[0].fields, ["count"]);
    assert_eq!(
        (ranges[0].counts.rmw, ranges[0].counts.loads),
        (100.0, 100.0)
    );
    assert_eq!(ranges[1].size, Some(32));
    let names: Vec<&str> = ranges[1]
        .functions
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["cpupri_find_fitness", "cpupri_set"]);
    assert!(ranges[1].cpus.all);
    assert_eq!(ranges[1].cpus.at_least, 480);
    // Group members follow the resolution.
    let g = p.groups.iter().find(|g| g.name == "cpupri_update").unwrap();
    assert_eq!(
        g.members.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [Some(0), Some(8)]
    );
    round_trip(&p);
}

#[test]
fn seed001_nohz_sketch() {
    let p = sketch("examples/sketches/seed001_nohz.toml");
    assert_eq!(p.provenance.machine.cpus, Some(128));
    let t = p.type_profile("nohz").unwrap();
    let written: std::collections::BTreeSet<&str> = t
        .accesses
        .iter()
        .filter(|a| a.counts.writes() > 0.0)
        .filter_map(|a| a.field.as_deref())
        .collect();
    // The four fields the mail says are updated very frequently, and next_balance.
    assert_eq!(
        written.into_iter().collect::<Vec<_>>(),
        [
            "first_pick_cpu",
            "idle_cpus_mask",
            "load_balancer",
            "next_balance",
            "second_pick_cpu"
        ]
    );
    // Unresolved fields still aggregate, by name.
    let ranges = lineup::profile::summarize(t.accesses.iter(), Some(128));
    let lb = ranges
        .iter()
        .find(|r| r.fields == ["load_balancer"])
        .unwrap();
    assert_eq!(lb.counts.rmw, 100.0);
    assert_eq!(lb.functions[0].name, "select_nohz_load_balancer");
    let stop = p
        .groups
        .iter()
        .find(|g| g.name == "tick_nohz_stop_sched_tick")
        .unwrap();
    assert_eq!(stop.weight, 180.0);
    round_trip(&p);
}

#[test]
fn sketch_errors() {
    let bad = [
        ("", "no accesses"),
        (
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\nrate = 1\nweight = 2\n",
            "line 3: s.a: give `rate` or `weight`, not both",
        ),
        (
            "[[type]]\nname = \"s\"\naccess = [{ field = \"a\", kind = \"load\", rate = 1 }, { field = \"b\", kind = \"store\", weight = 1 }]\n",
            "mixes rates and weights",
        ),
        (
            "[[type]]\nname = \"s\"\n[[type.access]]\nkind = \"load\"\nrate = 1\n",
            "needs `field` or `offset`",
        ),
        (
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\nrate = 1\ncpus = \"most\"\n",
            "expected a number or \"all\"",
        ),
        (
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\nrates = 1\n",
            "line 6: unknown field `rates`",
        ),
        ("[[type]]\nname = \"s\"\n[[type.access]\n", "line 3:"),
        (
            "[machine]\ncacheline_size = 48\n[[type]]\nname = \"s\"\naccess = [{ field = \"a\", kind = \"load\", rate = 1 }]\n",
            "not a power of two",
        ),
    ];
    for (text, want) in bad {
        let e = import_sketch(text).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
        assert!(!e.contains('\n'), "multi-line error: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// The JSON file
// ---------------------------------------------------------------------------------------

#[test]
fn json_is_versioned_and_readable() {
    let p = c2c("tests/data/c2c/seed000_paste.txt").remove(0);
    let v: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["lines"][0]["address"], "0xff284d17b5c0fa00");
    assert_eq!(
        v["lines"][0]["accesses"][0]["code"]["address"],
        "0xffffffffa134934e"
    );
    assert_eq!(v["groups"][0]["members"][0]["place"]["kind"], "line");

    let mut newer = v.clone();
    newer["schema"] = 2.into();
    assert!(matches!(
        Profile::from_json(&newer.to_string()),
        Err(ProfileError::Schema {
            found: 2,
            supported: 1
        })
    ));
    assert!(matches!(
        Profile::from_json("{"),
        Err(ProfileError::Json(_))
    ));
    assert!(matches!(
        Profile::from_json("{}"),
        Err(ProfileError::Json(_))
    ));
    // Read without building a JSON tree of the file: still no version in an array.
    match Profile::from_json("[1, 2]") {
        Err(ProfileError::Json(m)) => assert!(m.contains("no schema"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut bad = v.clone();
    bad["lines"][0]["address"] = "ff28".into();
    assert!(Profile::from_json(&bad.to_string()).is_err());
    let mut bad = v;
    bad["lines"][0]["accesses"][0]["offset"] = 64.into();
    assert!(Profile::from_json(&bad.to_string()).is_err());
}

// ---------------------------------------------------------------------------------------
// Random damage: deterministic mutations of every sample (LINEUP_MUTATIONS=n for more)
// ---------------------------------------------------------------------------------------

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

fn mutate(rng: &mut Lcg, text: &str) -> String {
    const ALPHABET: &[u8] = b"0x%{}[]|-:. \n1234567890abcdefN/A#>=+kLOADSTOREHitMLCKSNP";
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = b.len();
        let at = rng.below(len + 1);
        match rng.below(4) {
            0 => {
                let n = rng.below(8);
                let bytes: Vec<u8> = (0..n)
                    .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                    .collect();
                b.splice(at..(at + n).min(len), bytes);
            }
            1 => {
                let end = (at + rng.below(64)).min(len);
                b.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(200)).min(len);
                let chunk = b[at..end].to_vec();
                let to = rng.below(len + 1);
                b.splice(to..to, chunk);
            }
            _ => {
                if at < len {
                    b[at] = ALPHABET[rng.below(ALPHABET.len())];
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn random_damage_never_panics() {
    let rounds: usize = std::env::var("LINEUP_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = Lcg(0x5eed_0000_c2c0);
    let c2c_inputs: Vec<String> = [
        "tests/data/c2c/seed000_paste.txt",
        "tests/data/c2c/perf6_hitm_full.txt",
        "tests/data/c2c/perf4_classic_nn.txt",
        "tests/data/c2c/perf6_peer_arm.txt",
        "tests/data/c2c/perf6_lcl_pid_tid.txt",
        "tests/data/c2c/paste_quoted.txt",
    ]
    .iter()
    .map(|p| data(p))
    .collect();
    let script = data("tests/data/perf/mem_script.txt");
    let sketches: Vec<String> = [
        "examples/sketches/seed003_root_domain.toml",
        "examples/sketches/seed003_cpupri_vec.toml",
        "examples/sketches/seed001_nohz.toml",
    ]
    .iter()
    .map(|p| data(p))
    .collect();
    for _ in 0..rounds {
        for text in &c2c_inputs {
            let m = mutate(&mut rng, text);
            match import_c2c(&m) {
                Ok(ps) => ps.iter().for_each(|p| {
                    let _ = Profile::from_json(&p.to_json());
                    for l in &p.lines {
                        let _ = p.line_ranges(l.address);
                    }
                }),
                Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
            }
        }
        let m = mutate(&mut rng, &script);
        if let Err(e) = import_perf_script(&m, &PerfScriptOptions::default()) {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        for s in &sketches {
            if let Err(e) = import_sketch(&mutate(&mut rng, s)) {
                assert!(!e.to_string().contains('\n'), "{e}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Real texts in `tests/data/c2c/`, each naming its source in its `#` header: the project's
// corpus texts copied unchanged (a clone has no `../shared`), and the reports written from
// public mails and issues. Counts are the posted percentages of the posted line totals,
// rounded as the importer documents.
// ---------------------------------------------------------------------------------------

fn corpus(name: &str) -> Vec<Profile> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/c2c/");
    let text = std::fs::read_to_string(format!("{path}{name}"))
        .unwrap_or_else(|e| panic!("{path}{name}: {e}"));
    import_c2c(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn line_at(p: &Profile, address: u64) -> &LineProfile {
    p.lines
        .iter()
        .find(|l| l.address == address)
        .unwrap_or_else(|| panic!("no line {address:#x}"))
}

fn totals(l: &LineProfile) -> (f64, f64, f64) {
    let t = l.totals.as_ref().unwrap();
    (t.rmt_hitm, t.lcl_hitm, t.stores)
}

#[test]
fn corpus_root_domain_trimmed_two_line_headers() {
    // Seed 003 series, patch 2/4: two trimmed Pareto blocks of one run; one report.
    let ps = corpus("lkml_seed003_root_domain.txt");
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(
        p.provenance.settings["pareto_columns"],
        "Rmt Hitm%, Lcl Hitm%, Store L1 Hit%, Data offset, Load cycles, Total records, Symbol"
    );
    let l3 = line_at(p, 0xff14d42c400e3880);
    assert_eq!(totals(l3), (353.0, 44.0, 62.0));
    assert_eq!(l3.rank, None, "the trimmed header row has no index");
    assert_eq!(l3.accesses.len(), 26);
    // `34.56%  29.55%  0.00%  0x38  25509  527  cpupri_find_fitness`
    let a = at(l3, 0x38, "cpupri_find_fitness");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (122.0, 13.0));
    assert_eq!((a.counts.loads, a.counts.stores), (527.0, 0.0));
    assert_eq!(a.latency.as_ref().unwrap().mean_load, Some(25509.0));
    // `13.88%  11.36%  24.19%  0x38  30654  342  cpupri_set`: 15 of the line's 62 stores.
    let a = at(l3, 0x38, "cpupri_set");
    assert_eq!((a.counts.stores, a.counts.loads), (15.0, 327.0));
    let l1 = line_at(p, 0xff14d42c400e3800);
    assert_eq!(totals(l1), (231.0, 43.0, 48.0));
    assert_eq!(l1.accesses.len(), 10);
    assert_eq!(at(l1, 0x28, "enqueue_task_rt").counts.rmt_hitm, 74.0);
    round_trip(p);
}

#[test]
fn corpus_cpupri_vec_and_its_bitmap() {
    let ps = corpus("lkml_seed003_cpupri_vec.txt");
    let p = &ps[0];
    let last = line_at(p, 0xff14d42c400e3ec0);
    assert_eq!(totals(last), (149.0, 43.0, 41.0));
    assert_eq!(last.accesses.len(), 7);
    // `69.80%  67.44%  0.00%  0x30  1754  347  cpupri_set`
    let a = at(last, 0x30, "cpupri_set");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (104.0, 29.0));
    let bitmap = ps
        .iter()
        .flat_map(|p| &p.lines)
        .find(|l| l.address == 0xff14d52c4682d800)
        .expect("the cpumask bitmap line");
    assert_eq!(totals(bitmap), (155.0, 39.0, 39.0));
    assert_eq!(bitmap.accesses.len(), 34);
    assert_eq!(at(bitmap, 0x0, "_find_first_and_bit").counts.rmt_hitm, 67.0);
}

#[test]
fn corpus_false_sharing_doc_totals_without_title() {
    // The kernel's false-sharing.rst: Trace Event lines without their title, `#` rules,
    // no column headers, 5 percentages.
    let p = &corpus("kernel_doc_false_sharing_lruvec.txt")[0];
    let te = &p.summary["trace_events"];
    assert_eq!(te["total_records"], 1658231.0);
    assert_eq!(te["load_local_hitm"], 92117.0);
    assert_eq!(te["load_remote_hitm"], 139.0);
    let l = line_at(p, 0xff1100088366d880);
    assert_eq!(l.rank, Some(4));
    assert_eq!(totals(l), (0.0, 2374.0, 0.0));
    let a = at(l, 0x10, "__mod_memcg_lruvec_state");
    assert_eq!(a.counts.lcl_hitm, 553.0);
    assert_eq!(a.counts.loads, 1051.0);
    assert_eq!(
        a.code.as_ref().unwrap().source.as_deref(),
        Some("memcontrol.c:736")
    );
}

#[test]
fn lkml_address_space_two_headerless_tables() {
    let ps = c2c("tests/data/c2c/lkml_address_space_i_mmap.txt");
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[0].label.as_deref(), Some("Baseline"));
    assert_eq!(ps[1].label.as_deref(), Some("With this change"));
    let l = line_at(&ps[0], 0xff1ddd3f0c8a3b00);
    assert_eq!(totals(l), (13642.0, 19392.0, 9075.0));
    let a = at(l, 0x10, "rwsem_spin_on_owner+53");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (6103.0, 9653.0));
    // `0.56%  0.47%  26.39%  6.35%  0x8 ... down_write+28`: 2378 L1-hit + 4 L1-miss stores.
    assert_eq!(at(l, 0x8, "down_write+28").counts.stores, 2382.0);
    let after = line_at(&ps[1], 0xff157a0f25b90c40);
    assert!(after.accesses.iter().all(|a| {
        let s = a.code.as_ref().unwrap().symbol.as_deref().unwrap();
        s != "vma_interval_tree_remove"
    }));
}

#[test]
fn lkml_snoop_peer_column_beside_hitm() {
    // perf 5.19+: `Tot`/`Hitm`, `Snoop`/`Peer` and `Anylvl` in the line table; `Snoop`/`Peer`
    // and `Any Lvl` in the Pareto, whose header rows have 8 fields.
    let p = &c2c("tests/data/c2c/lkml_c2c_arm64_cover_x86.txt")[0];
    let cols = &p.provenance.settings["pareto_columns"];
    assert!(
        cols.contains("Snoop Peer") && cols.contains("Any Lvl"),
        "{cols}"
    );
    let table = &p.provenance.settings["table_columns"];
    assert!(
        table.starts_with("Index, Address, Node, PA cnt, Hitm, Total"),
        "{table}"
    );
    assert!(
        table.contains("Peer") && table.contains("Anylvl"),
        "{table}"
    );
    let l = line_at(p, 0x55c8971f0080);
    assert_eq!(totals(l), (0.0, 252.0, 2494.0));
    assert_eq!(l.details["tot_hitm"], 252.0);
    assert_eq!(l.details["tot_peer"], 0.0);
    assert_eq!(l.details["percent_costly_snoop"], 66.14);
    assert_eq!(l.details["st_na"], 0.0);
    let rows: Vec<&Access> = l.accesses.iter().filter(|a| a.offset == Some(0)).collect();
    assert_eq!(rows.len(), 3);
    // `0.00%  0.79%  0.00%  90.51%  0.00%  0.00%  0x0 ... 3029`: 1832 of 2024 L1-hit stores.
    assert_eq!(rows[1].counts.stores, 1832.0);
    assert_eq!(rows[1].counts.loads, 3029.0 - 1832.0);
    let a = l.accesses.iter().find(|a| a.offset == Some(0x20)).unwrap();
    assert_eq!(a.counts.lcl_hitm, 219.0);
    assert_eq!(
        line_at(p, 0x55c8971f00c0).accesses[0].counts.lcl_hitm,
        129.0
    );
}

#[test]
fn lkml_arm_spe_peer_without_hitm_or_physical_addresses() {
    let p = &c2c("tests/data/c2c/lkml_c2c_arm64_cover_spe.txt")[0];
    let l = line_at(p, 0xaaaac17d6000);
    let t = l.totals.as_ref().unwrap();
    assert_eq!((t.rmt_hitm, t.lcl_hitm, t.transfers()), (0.0, 0.0, 99.0));
    assert_eq!(l.data_nodes, None, "Node N/A");
    assert_eq!(l.details["pa_count"], 0.0);
    assert_eq!(l.details["tot_peer"], 99.0);
    assert_eq!(l.details["percent_costly_snoop"], 100.0);
    let peer = |off: u64| {
        let a = l.accesses.iter().find(|a| a.offset == Some(off)).unwrap();
        a.counts.transfers()
    };
    assert_eq!((peer(0x20), peer(0x29)), (6.0, 93.0));
}

#[test]
fn lkml_display_peer_with_pid_and_tid() {
    let p = &c2c("tests/data/c2c/lkml_c2c_display_peer_pid_tid.txt")[0];
    let l = line_at(p, 0xaaaac17d6000);
    assert_eq!(l.totals.as_ref().unwrap().lcl_peer, 99.0);
    let a = l
        .accesses
        .iter()
        .find(|a| a.offset == Some(0x29) && a.threads.as_ref().unwrap().tids == [3606])
        .unwrap();
    assert_eq!(a.counts.lcl_peer, 48.0);
    assert_eq!(a.threads.as_ref().unwrap().pids, [3603]);
    assert_eq!(a.threads.as_ref().unwrap().comms, ["memstress"]);
    assert_eq!(a.latency.as_ref().unwrap().mean_lcl_peer, Some(180.0));
    assert_eq!(a.nodes.as_deref(), Some(&[0][..]));
}

#[test]
fn github_amd_ibs_report_holds_no_store() {
    let p = &c2c("tests/data/c2c/github_perfgo_amd_ibs_loads_only.txt")[0];
    assert_eq!(p.summary["trace_events"]["load_local_hitm"], 2092.0);
    assert_eq!(p.summary["shared_lines"]["store_hits_on_shared_lines"], 0.0);
    assert_eq!(p.provenance.events, ["ibs_op/ldlat=0/"]);
    let l = line_at(p, 0x20ea08034080);
    assert_eq!(totals(l), (4.0, 2092.0, 0.0));
    let a = at(l, 0x30, "go.go:0");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (3.0, 1038.0));
    let a = at(l, 0x38, "go.go:0");
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (1.0, 1054.0));
    assert!(l.accesses.iter().all(|a| a.counts.stores == 0.0));
}

#[test]
fn lkml_edited_to_fit_rows_without_offsets() {
    let ps = c2c("tests/data/c2c/lkml_ovl_creds_edited_to_fit.txt");
    assert_eq!(ps.len(), 2, "before and after the series");
    assert_eq!(ps[1].label.as_deref(), Some("after this series"));
    let p = &ps[0];
    let note = p.provenance.note.as_deref().unwrap();
    assert!(
        note.contains("members cannot be named without offsets"),
        "{note}"
    );
    assert_eq!(
        p.provenance.settings["pareto_columns"],
        "RmtHitm, LclHitm, Symbol, Shared Object, Source:Line, Node"
    );
    let l0 = p.lines.iter().find(|l| l.rank == Some(0)).unwrap();
    assert_eq!(totals(l0), (412.0, 1028.0, 0.0));
    assert_eq!(l0.details["address_unknown"], 1.0);
    assert_eq!(l0.accesses.len(), 8);
    let a = &l0.accesses[0];
    assert_eq!(a.offset, None);
    assert_eq!(
        a.code.as_ref().unwrap().symbol.as_deref(),
        Some("revert_creds")
    );
    assert_eq!(
        a.code.as_ref().unwrap().source.as_deref(),
        Some("atomic64_64.h:39")
    );
    assert_eq!((a.counts.rmt_hitm, a.counts.lcl_hitm), (171.0, 434.0));
    assert_eq!(a.nodes.as_deref(), Some(&[0, 1][..]));
    assert_eq!(l0.accesses[7].nodes.as_deref(), Some(&[0][..]));
    let after = &ps[1].lines[0];
    assert_eq!(totals(after), (54.0, 88.0, 0.0));
}

#[test]
fn lkml_perf5_pareto_without_store_na() {
    let p = &c2c("tests/data/c2c/lkml_memcg_rstat_loads_only.txt")[0];
    let l = line_at(p, 0xffff8881c0642000);
    assert_eq!(totals(l), (0.0, 2036.0, 0.0));
    let a = at(l, 0x10, "percpu-refcount.h:174");
    assert_eq!(
        a.code.as_ref().unwrap().symbol.as_deref(),
        Some("get_mem_cgroup_from_mm")
    );
    assert_eq!(a.counts.lcl_hitm, 364.0);
    assert_eq!(a.nodes.as_deref(), Some(&[0, 1, 2, 3][..]));
}

#[test]
fn perf_data_and_bad_bytes() {
    // perf.data is no text: the error names the flag that reads it.
    let e = lineup::profile::table::decode_text(b"PERFILE2\x68\x00\x00\x00").unwrap_err();
    assert!(e.to_string().contains("--perf-data"), "{e}");
    // A Latin-1 byte in a mail (`\xb1` for the plus-minus sign): read, and its line named.
    let text = data("tests/data/c2c/lkml_memcg_rstat_loads_only.txt");
    let mut bytes = text.clone().into_bytes();
    let at = text.find("very few").unwrap();
    bytes.insert(at, 0xb1);
    let (decoded, bad) = lineup::profile::table::decode_text(&bytes).unwrap();
    let line = text[..at].lines().count();
    assert_eq!(bad, [line]);
    assert_eq!(import_c2c(&decoded).unwrap()[0].lines.len(), 1);
}

#[test]
fn lkml_nnn_cpu_lists_per_row() {
    // Joe Mario's tugtest line: `-NNN` prints each row's CPUs per node.
    let p = &c2c("tests/data/c2c/lkml_tugtest_nnn_cpu_lists.txt")[0];
    assert!(p.provenance.settings["pareto_columns"].ends_with("Node{cpu list}"));
    let l = line_at(p, 0x406100);
    assert_eq!(totals(l), (1094.0, 2008.0, 17071.0 + 13762.0));
    let reader = at(l, 0x10, "tugtest.c:163");
    assert_eq!(
        (reader.counts.rmt_hitm, reader.counts.lcl_hitm),
        (745.0, 1210.0)
    );
    assert_eq!(reader.cpus.as_ref().unwrap().list, [3, 5, 7, 9, 11]);
    assert_eq!(reader.nodes.as_deref(), Some(&[1][..]));
    // `0.00%  0.00%  59.80%  59.73%  0.00%  0x20 ... 18428  5  [.] reader`: the reader's
    // stores to m3, 10208 L1 hits and 8220 misses.
    let m3 = at(l, 0x20, "tugtest.c:163");
    assert_eq!(m3.counts.stores, 18428.0);
    assert_eq!(m3.cpus.as_ref().unwrap().list, [3, 5, 7, 9, 11]);
}

// ---------------------------------------------------------------------------------------
// Totals perf prints as not a number
// ---------------------------------------------------------------------------------------

/// `key : value` lines of one `=== Title ===` block of a c2c report, as written.
fn block_keys(text: &str, title: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| l.trim() != title).skip(2);
    let mut keys = Vec::new();
    for l in lines.by_ref() {
        let Some((k, _)) = l.split_once(':') else {
            break;
        };
        keys.push(k.trim().to_string());
    }
    keys
}

#[test]
fn real_trace_events_keep_every_key_after_nan_shares() {
    // Real `perf c2c report --stdio` output of perf 6.1 on the project's VM (page faults, no
    // memory events: tests/data/perf/README.md): no load missed the LLC, so perf's four
    // `LLC Misses to ...` shares, printed with `%10.1f%%` (tools/perf/builtin-c2c.c,
    // print_c2c__display_stats), divide 0 by 0 and read `-nan%`. Every key after them counts.
    let path = "tests/data/perf/page_faults.c2c.txt";
    let text = data(path);
    let ps = c2c(path);
    assert_eq!(
        ps.len(),
        1,
        "one report, not one per block after a -nan line"
    );
    let p = &ps[0];
    let te = &p.summary["trace_events"];
    let printed = block_keys(&text, "Trace Event Information");
    assert!(printed.len() >= 30, "{printed:?}");
    assert_eq!(te.len(), printed.len(), "{te:?}");
    for k in [
        "llc_misses_to_local_dram_pct",
        "llc_misses_to_remote_dram_pct",
        "llc_misses_to_remote_cache_hit_pct",
        "llc_misses_to_remote_cache_hitm_pct",
    ] {
        assert!(te[k].is_nan(), "{k}: {}", te[k]);
    }
    assert_eq!(te["load_llc_misses"], 0.0);
    assert_eq!(te["store_operations"], 0.0);
    assert_eq!(te["total_records"], 239.0);
    assert_eq!(te["unable_to_parse_data_source"], 239.0);
    let shared = &p.summary["shared_lines"];
    let printed = block_keys(&text, "Global Shared Cache Line Event Information");
    assert_eq!(shared.len(), printed.len(), "{shared:?}");
    assert_eq!(p.provenance.events, ["page-faults"]);
    assert_eq!(p.provenance.settings["sort_on"], "Total HITMs");

    // JSON cannot hold NaN: the key stays, its value is null, and reads back as NaN.
    let json = p.to_json();
    assert!(
        json.contains("\"llc_misses_to_local_dram_pct\": null"),
        "{json}"
    );
    let back = Profile::from_json(&json).unwrap();
    let bt = &back.summary["trace_events"];
    assert!(bt["llc_misses_to_remote_cache_hitm_pct"].is_nan());
    assert_eq!(bt["unable_to_parse_data_source"], 239.0);
    assert_eq!(bt.len(), te.len());
}

#[test]
fn nan_and_inf_shares_in_any_spelling_keep_the_block() {
    // The Trace Event block in perf 6.x's layout (builtin-c2c.c: `%10d` counts, `%10.1f%%`
    // shares of LLC misses), here with the spellings C libraries give printf's "%f" of a NaN
    // or an infinity: glibc `-nan` / `nan` / `inf`, musl `NAN` / `INF`.
    let text = "\
=================================================
            Trace Event Information
=================================================
  Total records                     :        120
  Load Operations                   :        100
  Load LLC Misses                   :          0
  LLC Misses to Local DRAM          :        nan%
  LLC Misses to Remote DRAM         :       -inf%
  LLC Misses to Remote cache (HIT)  :        inf%
  LLC Misses to Remote cache (HITM) :        NAN%
  Store Operations                  :         20
  Unable to parse data source       :          0

=================================================
    Global Shared Cache Line Event Information
=================================================
  Total Shared Cache Lines          :          0
";
    let p = &import_c2c(text).unwrap()[0];
    let te = &p.summary["trace_events"];
    assert_eq!(te.len(), 9, "{te:?}");
    assert!(te["llc_misses_to_local_dram_pct"].is_nan());
    assert!(te["llc_misses_to_remote_dram_pct"].is_nan());
    assert!(te["llc_misses_to_remote_cache_hit_pct"].is_nan());
    assert!(te["llc_misses_to_remote_cache_hitm_pct"].is_nan());
    assert_eq!(te["store_operations"], 20.0);
    assert_eq!(te["unable_to_parse_data_source"], 0.0);
    assert_eq!(p.summary["shared_lines"]["total_shared_cache_lines"], 0.0);

    // A damaged count is still an error naming its line, not a NaN.
    let damaged = text.replace("        NAN%", "      4x.2%");
    let e = import_c2c(&damaged).unwrap_err().to_string();
    assert!(e.contains("line 10") && e.contains("4x.2%"), "{e}");
}

// ---------------------------------------------------------------------------------------
// A lean profile: a 200k-line report is hundreds of thousands of accesses
// ---------------------------------------------------------------------------------------

#[test]
fn c2c_rows_share_one_copy_of_each_name() {
    let p = &c2c("tests/data/c2c/perf6_hitm_full.txt")[0];
    let codes: Vec<&lineup::profile::CodeLocation> = p
        .lines
        .iter()
        .flat_map(|l| &l.accesses)
        .filter_map(|a| a.code.as_ref())
        .collect();
    let kernel: Vec<_> = codes
        .iter()
        .filter_map(|c| c.object.as_ref())
        .filter(|o| &***o == "[kernel.kallsyms]")
        .collect();
    assert!(kernel.len() >= 2, "{kernel:?}");
    assert!(kernel.iter().all(|o| std::sync::Arc::ptr_eq(o, kernel[0])));
    // Rows of one function on different lines name it with one string.
    let mut by_name: std::collections::BTreeMap<&str, Vec<&std::sync::Arc<str>>> =
        Default::default();
    for s in codes.iter().filter_map(|c| c.symbol.as_ref()) {
        by_name.entry(s).or_default().push(s);
    }
    let repeated: Vec<_> = by_name.values().filter(|v| v.len() > 1).collect();
    assert!(!repeated.is_empty());
    for v in repeated {
        assert!(v.iter().all(|s| std::sync::Arc::ptr_eq(s, v[0])), "{v:?}");
    }
    // Line vectors hold no spare capacity once their rows are read.
    assert!(
        p.lines
            .iter()
            .all(|l| l.accesses.capacity() == l.accesses.len())
    );
}
