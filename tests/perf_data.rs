//! `lineup import --perf-data`: perf.data read directly, checked against perf itself.
//!
//! Real files: `tests/data/perf/page_faults.data` was written by `perf record` on this project's
//! VM (see tests/data/perf/README.md for the command, perf and kernel versions); perf's own
//! `perf script`, `perf report` and `perf c2c report` output on that same file are kept beside
//! it and are the oracle. `live_round_trip_against_perf` records a fresh file with the perf of
//! the machine running the tests and compares with perf's reports on it, symbols included.
//!
//! This VM has no precise memory events (`perf c2c record` fails), so the data-source classes
//! (HITM, peer, LLC, DRAM, store L1 hit/miss), weights and physical addresses cannot come
//! from a real recording here: those tests build a perf.data in the test with a minimal
//! writer that follows perf's documented format (tools/perf/Documentation/
//! perf.data-file-format.txt, include/uapi/linux/perf_event.h) and is independent of
//! lineup's reader. The expected classes follow `c2c_decode_stats` in
//! tools/perf/util/mem-events.c.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lineup::profile::perf_data::{
    DataSource, MEM_LOCK_LOCKED, MEM_LVL_HIT, MEM_LVL_L1, MEM_LVL_L2, MEM_LVL_L3, MEM_LVL_LFB,
    MEM_LVL_LOC_RAM, MEM_LVL_MISS, MEM_LVL_NA, MEM_LVL_REM_CCE1, MEM_LVL_REM_RAM1, MEM_OP_LOAD,
    MEM_OP_STORE, MEM_SNOOP_HIT, MEM_SNOOP_HITM, MEM_SNOOPX_PEER,
};
use lineup::profile::{PerfDataOptions, Profile, import_perf_data};

fn data(name: &str) -> PathBuf {
    common::repo().join("tests/data/perf").join(name)
}

fn import(bytes: &[u8]) -> Profile {
    import_perf_data(
        bytes,
        &PerfDataOptions {
            symbolize: false,
            ..Default::default()
        },
        &mut |_, _| {},
    )
    .expect("imports")
}

/// The decoder alone, on a file of any event (the real page-fault recording): every command
/// refuses page faults as evidence, but their samples check the decoding against perf's own.
fn decode_any(bytes: &[u8]) -> Profile {
    import_perf_data(
        bytes,
        &PerfDataOptions {
            symbolize: false,
            memory_only: false,
            ..Default::default()
        },
        &mut |_, _| {},
    )
    .expect("decodes")
}

/// (data address, instruction address) → samples, from the profile's accesses.
fn samples_by_addr_ip(p: &Profile) -> BTreeMap<(u64, u64), u64> {
    let mut m = BTreeMap::new();
    for l in &p.lines {
        for a in &l.accesses {
            let addr = l.address + a.offset.unwrap();
            let ip = a.code.as_ref().and_then(|c| c.address).unwrap_or(0);
            *m.entry((addr, ip)).or_default() += a.details["samples"] as u64;
        }
    }
    m
}

// ---------------------------------------------------------------------------------------
// The real file against perf's own output on it
// ---------------------------------------------------------------------------------------

/// `perf script -G -F tid,cpu,ip,addr,weight` lines: `tid [cpu] addr weight ip`.
fn script_samples(text: &str) -> Vec<(u32, u32, u64, u64, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let cpu = t[1].trim_matches(|c| c == '[' || c == ']');
            (
                t[0].parse().unwrap(),
                cpu.parse().unwrap(),
                u64::from_str_radix(t[2], 16).unwrap(),
                t[3].parse().unwrap(),
                u64::from_str_radix(t[4], 16).unwrap(),
            )
        })
        .collect()
}

#[test]
fn real_file_samples_match_perf_script() {
    let bytes = std::fs::read(data("page_faults.data")).unwrap();
    let p = decode_any(&bytes);
    let script = script_samples(&std::fs::read_to_string(data("page_faults.script.txt")).unwrap());
    assert_eq!(script.len(), 239, "perf script printed 239 samples");
    assert_eq!(p.summary["perf_data"]["samples"], script.len() as f64);
    let mut want: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(_, _, addr, _, ip) in &script {
        *want.entry((addr, ip)).or_default() += 1;
    }
    assert_eq!(samples_by_addr_ip(&p), want);
    // CPU, tid and weight of every sample (all on CPU 0, one thread, weight 0 here).
    for l in &p.lines {
        for a in &l.accesses {
            let addr = l.address + a.offset.unwrap();
            let ip = a.code.as_ref().unwrap().address.unwrap();
            let from_script: Vec<_> = script.iter().filter(|s| s.2 == addr && s.4 == ip).collect();
            let cpus: Vec<u32> = a.cpus.as_ref().unwrap().list.clone();
            let mut want_cpus: Vec<u32> = from_script.iter().map(|s| s.1).collect();
            want_cpus.sort();
            want_cpus.dedup();
            assert_eq!(cpus, want_cpus, "{addr:#x}");
            let tids = &a.threads.as_ref().unwrap().tids;
            assert!(from_script.iter().all(|s| tids.contains(&i64::from(s.0))));
            assert!(from_script.iter().all(|s| s.3 == 0) && a.latency.is_none());
        }
    }
    // The header facts perf wrote.
    assert_eq!(p.provenance.tool_version.as_deref(), Some("6.1.187"));
    assert_eq!(p.provenance.events, ["page-faults"]);
    assert!(
        p.provenance
            .command
            .as_deref()
            .unwrap()
            .contains("perf record -d --sample-cpu -W --phys-data")
    );
    assert_eq!(
        p.provenance
            .settings
            .get("build_id /tmp/h7/touch")
            .map(String::as_str),
        Some("4ee545265f1fe5fcd6020ad7b1802500394510b8")
    );
}

/// perf c2c report's "Trace Event Information" block as (snake_case label, value), read
/// here rather than by lineup's c2c importer (which stops at perf's `-nan%` lines).
fn c2c_trace_events(text: &str) -> BTreeMap<String, f64> {
    let snake = |label: &str| {
        let mut out = String::new();
        for c in label.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
        }
        out.trim_end_matches('_').to_string()
    };
    let start = text.find("Trace Event Information").expect("c2c table");
    let mut m = BTreeMap::new();
    for line in text[start..].lines().skip(2) {
        if line.starts_with('=') {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if v.ends_with('%') {
            continue; // percentages of LLC misses: -nan without any
        }
        m.insert(snake(k.trim()), v.parse::<f64>().expect(v));
    }
    m
}

#[test]
fn real_file_totals_match_perf_c2c_report() {
    let bytes = std::fs::read(data("page_faults.data")).unwrap();
    let ours = decode_any(&bytes);
    let theirs = c2c_trace_events(&std::fs::read_to_string(data("page_faults.c2c.txt")).unwrap());
    let ours = &ours.summary["trace_events"];
    assert!(theirs.len() >= 29, "perf's table: {theirs:?}");
    for (k, v) in &theirs {
        if k == "no_page_map_rejects" {
            // Needs perf's maps of data addresses, which lineup does not rebuild.
            continue;
        }
        assert_eq!(ours.get(k), Some(v), "{k}");
    }
    assert_eq!(ours["total_records"], 239.0);
    assert_eq!(ours["unable_to_parse_data_source"], 239.0);
}

// ---------------------------------------------------------------------------------------
// A fresh recording with this machine's perf: symbols and totals
// ---------------------------------------------------------------------------------------

fn perf() -> String {
    for p in ["perf", "/usr/bin/perf"] {
        if Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return p.to_string();
        }
    }
    panic!("no perf: apt-get install linux-perf (see .ci/run)");
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn live_round_trip_against_perf() {
    let dir = tempdir("live");
    let exe = dir.join("touch");
    run(Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&exe)
        .arg(data("page_faults.c")));
    let file = dir.join("pf.data");
    let perf = perf();
    let rec = Command::new(&perf)
        .args([
            "record",
            "-q",
            "-d",
            "--sample-cpu",
            "-e",
            "page-faults",
            "-c",
            "1",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    if !rec.status.success() {
        // perf_event_paranoid or a container without perf events: nothing to compare.
        eprintln!(
            "perf record refused here, live comparison not run: {}",
            String::from_utf8_lossy(&rec.stderr)
        );
        return;
    }
    // lineup refuses page faults as evidence, in one line naming the file and the event.
    let err = lineup_err(&["import", "--perf-data", file.to_str().unwrap()]);
    assert!(
        err.contains(file.to_str().unwrap())
            && err.contains("'page-faults'")
            && err.contains("not memory-access evidence"),
        "{err}"
    );
    // The decoder, symbolized with this machine's kallsyms, checked against perf's reports.
    let decode = |bytes: &[u8]| {
        let opts = PerfDataOptions {
            memory_only: false,
            kallsyms: std::fs::read_to_string("/proc/kallsyms").ok(),
            ..Default::default()
        };
        import_perf_data(bytes, &opts, &mut |_, _| {}).expect("decodes")
    };
    let p = decode(&std::fs::read(&file).unwrap());

    // perf report's samples per (object, symbol).
    let report = run(Command::new(&perf)
        .args(["report", "--stdio", "--no-children", "-g", "none", "-i"])
        .arg(&file)
        .args(["--sort", "dso,sym", "-F", "sample,dso,sym"]));
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for l in report
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let t: Vec<&str> = l.split_whitespace().collect();
        let n: u64 = t[0].parse().unwrap();
        let sym = t[3..].join(" ");
        *want.entry((t[1].to_string(), sym)).or_default() += n;
    }
    let mut ours: BTreeMap<(String, String), u64> = BTreeMap::new();
    for l in &p.lines {
        for a in &l.accesses {
            let c = a.code.as_ref().unwrap();
            let Some(sym) = &c.symbol else { continue };
            let obj = c.object.as_deref().unwrap_or("?");
            let obj = Path::new(obj)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            *ours.entry((obj, sym.to_string())).or_default() += a.details["samples"] as u64;
        }
    }
    // The test program's own functions are named and counted exactly as perf does.
    for f in ["fill_a", "fill_b"] {
        let key = ("touch".to_string(), f.to_string());
        assert!(want[&key] > 0, "perf report: {report}");
        assert_eq!(ours.get(&key), want.get(&key), "{f}");
    }
    // Every symbol lineup names, perf names with the same count (lineup may leave some
    // raw where perf has more sources, never name them differently).
    let mut agree = 0;
    for (k, n) in &ours {
        assert_eq!(
            want.get(k),
            Some(n),
            "{k:?}: lineup {n}, perf report {:?}",
            want.get(k)
        );
        agree += n;
    }
    // Out of the samples perf names: where neither has symbols (a libc without its debug
    // package, as in a fresh Debian root), perf prints the raw address, and that is no name.
    let total: u64 = want
        .iter()
        .filter(|((_, sym), _)| !sym.starts_with("0x"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        agree * 10 >= total * 9,
        "lineup named {agree} of the {total} samples perf names"
    );

    // The same program recorded in pipe mode (`-o -`): as many samples as perf reports, the
    // test functions named.
    let pipe = dir.join("pipe.data");
    let rec = Command::new(&perf)
        .args([
            "record",
            "-q",
            "-d",
            "-e",
            "page-faults",
            "-c",
            "1",
            "-o",
            "-",
            "--",
        ])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(rec.status.success());
    std::fs::write(&pipe, &rec.stdout).unwrap();
    let pp = decode(&rec.stdout);
    assert_eq!(pp.provenance.settings["pipe_mode"], "yes");
    let header = run(Command::new(&perf)
        .args(["report", "--stdio", "-i"])
        .arg(&pipe));
    let n: f64 = header
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(pp.summary["perf_data"]["samples"], n);
    let named = |f: &str| {
        pp.lines
            .iter()
            .flat_map(|l| &l.accesses)
            .filter(|a| a.code.as_ref().and_then(|c| c.symbol.as_deref()) == Some(f))
            .map(|a| a.details["samples"])
            .sum::<f64>()
    };
    assert_eq!(
        named("fill_a"),
        want[&("touch".to_string(), "fill_a".to_string())] as f64
    );

    // perf c2c report's Trace Event Information.
    let c2c = Command::new(&perf)
        .args(["c2c", "report", "--stdio", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    if c2c.status.success() {
        let theirs = c2c_trace_events(&String::from_utf8_lossy(&c2c.stdout));
        assert!(theirs.contains_key("total_records"));
        for (k, v) in &theirs {
            if k == "no_page_map_rejects" {
                continue;
            }
            assert_eq!(p.summary["trace_events"].get(k), Some(v), "{k}");
        }
    }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-perf-data-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---------------------------------------------------------------------------------------
// A minimal perf.data writer, after perf.data-file-format.txt
// ---------------------------------------------------------------------------------------

const IP: u64 = 1 << 0;
const TID: u64 = 1 << 1;
const TIME: u64 = 1 << 2;
const ADDR: u64 = 1 << 3;
const READ: u64 = 1 << 4;
const CALLCHAIN: u64 = 1 << 5;
const ID: u64 = 1 << 6;
const CPU: u64 = 1 << 7;
const PERIOD: u64 = 1 << 8;
const RAW: u64 = 1 << 10;
const BRANCH_STACK: u64 = 1 << 11;
const REGS_USER: u64 = 1 << 12;
const WEIGHT: u64 = 1 << 14;
const DATA_SRC: u64 = 1 << 15;
const IDENTIFIER: u64 = 1 << 16;
const PHYS_ADDR: u64 = 1 << 19;
const WEIGHT_STRUCT: u64 = 1 << 24;

#[derive(Clone, Copy)]
struct Endian(bool);

impl Endian {
    fn u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend(if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend(if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u64(self, out: &mut Vec<u8>, v: u64) {
        out.extend(if self.0 {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
}

struct Event {
    sample_type: u64,
    read_format: u64,
    regs_user: u64,
    ids: Vec<u64>,
    name: &'static str,
}

/// One memory sample's values; fields the event does not sample are not written.
#[derive(Clone, Default)]
struct S {
    id: u64,
    ip: u64,
    pid: u32,
    tid: u32,
    addr: u64,
    cpu: u32,
    weight: u64,
    data_src: u64,
    phys: u64,
}

struct Writer {
    e: Endian,
    events: Vec<Event>,
    records: Vec<u8>,
}

impl Writer {
    fn new(big: bool, events: Vec<Event>) -> Self {
        Writer {
            e: Endian(big),
            events,
            records: Vec::new(),
        }
    }

    /// A PERF_RECORD_SAMPLE (type 9) of event `ev`, fields in perf_event.h's order.
    fn sample(&mut self, ev: usize, s: &S, misc: u16) {
        let e = self.e;
        let st = self.events[ev].sample_type;
        let rf = self.events[ev].read_format;
        let regs = self.events[ev].regs_user;
        let mut b = Vec::new();
        if st & IDENTIFIER != 0 {
            e.u64(&mut b, s.id);
        }
        if st & IP != 0 {
            e.u64(&mut b, s.ip);
        }
        if st & TID != 0 {
            e.u32(&mut b, s.pid);
            e.u32(&mut b, s.tid);
        }
        if st & TIME != 0 {
            e.u64(&mut b, 1_000_000);
        }
        if st & ADDR != 0 {
            e.u64(&mut b, s.addr);
        }
        if st & ID != 0 {
            e.u64(&mut b, s.id);
        }
        if st & CPU != 0 {
            e.u32(&mut b, s.cpu);
            e.u32(&mut b, 0);
        }
        if st & PERIOD != 0 {
            e.u64(&mut b, 1);
        }
        if st & READ != 0 {
            // read_format GROUP|ID|LOST: nr, then {value, id, lost} per member.
            assert_eq!(rf, (1 << 3) | (1 << 2) | (1 << 4));
            e.u64(&mut b, 2);
            for k in 0..2 {
                e.u64(&mut b, 100 + k);
                e.u64(&mut b, 7 + k);
                e.u64(&mut b, 0);
            }
        }
        if st & CALLCHAIN != 0 {
            e.u64(&mut b, 3);
            for ip in [s.ip, 0x401000, 0x402000] {
                e.u64(&mut b, ip);
            }
        }
        if st & RAW != 0 {
            // u32 size, then the bytes (perf pads the whole to 8 bytes).
            e.u32(&mut b, 12);
            b.extend([0xab; 12]);
        }
        if st & BRANCH_STACK != 0 {
            e.u64(&mut b, 2);
            for k in 0..6 {
                e.u64(&mut b, k);
            }
        }
        if st & REGS_USER != 0 {
            e.u64(&mut b, 2); // PERF_SAMPLE_REGS_ABI_64
            for k in 0..regs.count_ones() {
                e.u64(&mut b, u64::from(k));
            }
        }
        if st & (WEIGHT | WEIGHT_STRUCT) != 0 {
            if st & WEIGHT_STRUCT != 0 {
                // union perf_sample_weight { u32 var1_dw; u16 var2_w; u16 var3_w; } in memory order.
                e.u32(&mut b, s.weight as u32);
                e.u16(&mut b, 5);
                e.u16(&mut b, 0);
            } else {
                e.u64(&mut b, s.weight);
            }
        }
        if st & DATA_SRC != 0 {
            e.u64(&mut b, s.data_src);
        }
        if st & PHYS_ADDR != 0 {
            e.u64(&mut b, s.phys);
        }
        while !b.len().is_multiple_of(8) {
            b.push(0);
        }
        self.record(9, misc, &b);
    }

    fn record(&mut self, ty: u32, misc: u16, body: &[u8]) {
        let e = self.e;
        e.u32(&mut self.records, ty);
        e.u16(&mut self.records, misc);
        e.u16(&mut self.records, (8 + body.len()) as u16);
        self.records.extend(body);
    }

    /// PERF_RECORD_MMAP2 of `path` at `start` for `pid`.
    fn mmap2(&mut self, pid: u32, start: u64, len: u64, path: &str) {
        let e = self.e;
        let mut b = Vec::new();
        e.u32(&mut b, pid);
        e.u32(&mut b, pid);
        e.u64(&mut b, start);
        e.u64(&mut b, len);
        e.u64(&mut b, 0);
        for _ in 0..3 {
            e.u64(&mut b, 0); // maj/min, ino, ino_generation
        }
        e.u32(&mut b, 5);
        e.u32(&mut b, 2);
        b.extend(path.as_bytes());
        b.push(0);
        while !b.len().is_multiple_of(8) {
            b.push(0);
        }
        self.record(10, 2, &b);
    }

    /// struct perf_event_attr, PERF_ATTR_SIZE_VER5 (112 bytes).
    fn attr(&self, ev: &Event) -> Vec<u8> {
        let e = self.e;
        let mut a = Vec::new();
        e.u32(&mut a, 4); // PERF_TYPE_RAW
        e.u32(&mut a, 112);
        e.u64(&mut a, 0x1cd); // config
        e.u64(&mut a, 1); // sample_period
        e.u64(&mut a, ev.sample_type);
        e.u64(&mut a, ev.read_format);
        e.u64(&mut a, 1 << 18); // flags: sample_id_all
        e.u32(&mut a, 0);
        e.u32(&mut a, 0);
        e.u64(&mut a, 0);
        e.u64(&mut a, 0);
        e.u64(&mut a, 0); // branch_sample_type
        e.u64(&mut a, ev.regs_user);
        e.u32(&mut a, 0);
        e.u32(&mut a, 0);
        e.u64(&mut a, 0); // sample_regs_intr
        e.u32(&mut a, 0);
        e.u16(&mut a, 0);
        e.u16(&mut a, 0);
        assert_eq!(a.len(), 112);
        a
    }

    fn string(&self, out: &mut Vec<u8>, s: &str) {
        let mut bytes = s.as_bytes().to_vec();
        bytes.push(0);
        while !bytes.len().is_multiple_of(8) {
            bytes.push(0);
        }
        self.e.u32(out, bytes.len() as u32);
        out.extend(bytes);
    }

    /// The file: header, attrs (+ ids), data, feature table and features (HOSTNAME,
    /// OSRELEASE, VERSION, NRCPUS, EVENT_DESC).
    fn file(&self) -> Vec<u8> {
        let e = self.e;
        let attr_size = 112 + 16;
        let attrs_off = 104u64;
        let attrs_len = (attr_size * self.events.len()) as u64;
        let ids_off = attrs_off + attrs_len;
        let ids_len: u64 = self.events.iter().map(|ev| 8 * ev.ids.len() as u64).sum();
        let data_off = ids_off + ids_len;
        let data_len = self.records.len() as u64;
        let mut features: Vec<(u32, Vec<u8>)> = Vec::new();
        for (bit, text) in [(3, "testhost"), (4, "6.18.0-test"), (5, "6.18.test")] {
            let mut b = Vec::new();
            self.string(&mut b, text);
            features.push((bit, b));
        }
        let mut nr = Vec::new();
        e.u32(&mut nr, 16);
        e.u32(&mut nr, 16);
        features.push((7, nr));
        let mut desc = Vec::new();
        e.u32(&mut desc, self.events.len() as u32);
        e.u32(&mut desc, 112);
        for ev in &self.events {
            desc.extend(self.attr(ev));
            e.u32(&mut desc, ev.ids.len() as u32);
            self.string(&mut desc, ev.name);
            for &id in &ev.ids {
                e.u64(&mut desc, id);
            }
        }
        features.push((12, desc));

        let mut out = Vec::new();
        out.extend(if e.0 { b"2ELIFREP" } else { b"PERFILE2" });
        e.u64(&mut out, 104);
        e.u64(&mut out, attr_size as u64);
        e.u64(&mut out, attrs_off);
        e.u64(&mut out, attrs_len);
        e.u64(&mut out, data_off);
        e.u64(&mut out, data_len);
        e.u64(&mut out, 0);
        e.u64(&mut out, 0);
        let mut bits = 0u64;
        for (bit, _) in &features {
            bits |= 1 << bit;
        }
        e.u64(&mut out, bits);
        for _ in 0..3 {
            e.u64(&mut out, 0);
        }
        assert_eq!(out.len(), 104);
        let mut id_at = ids_off;
        for ev in &self.events {
            out.extend(self.attr(ev));
            e.u64(&mut out, id_at);
            e.u64(&mut out, 8 * ev.ids.len() as u64);
            id_at += 8 * ev.ids.len() as u64;
        }
        for ev in &self.events {
            for &id in &ev.ids {
                e.u64(&mut out, id);
            }
        }
        out.extend(&self.records);
        let mut body_at = out.len() as u64 + 16 * features.len() as u64;
        for (_, body) in &features {
            e.u64(&mut out, body_at);
            e.u64(&mut out, body.len() as u64);
            body_at += body.len() as u64;
        }
        for (_, body) in &features {
            out.extend(body);
        }
        out
    }
}

fn src(op: u64, lvl: u64, snoop: u64, snoopx: u64, lock: u64, remote: bool) -> u64 {
    DataSource {
        op,
        lvl,
        snoop,
        snoopx,
        lock,
        remote,
        ..Default::default()
    }
    .to_bits()
}

/// One sample of each data-source class c2c tells apart, on two cache lines, with the
/// counts `c2c_decode_stats` gives them.
fn classes() -> Vec<(S, &'static str)> {
    let hit = MEM_LVL_HIT;
    let line = 0xffff_8880_1234_5600u64;
    let other = 0xffff_8880_1234_5640u64;
    let s = |addr: u64, ip: u64, cpu: u32, weight: u64, data_src: u64| S {
        id: 11,
        ip,
        pid: 100,
        tid: 100 + cpu,
        addr,
        cpu,
        weight,
        data_src,
        phys: 0x1_2345_6600 + (addr & 0x3f),
    };
    vec![
        (
            s(
                line,
                0xffffffff81000010,
                0,
                300,
                src(MEM_OP_LOAD, hit | MEM_LVL_L3, MEM_SNOOP_HITM, 0, 0, false),
            ),
            "lcl_hitm",
        ),
        (
            s(
                line + 8,
                0xffffffff81000020,
                1,
                500,
                src(
                    MEM_OP_LOAD,
                    hit | MEM_LVL_REM_CCE1,
                    MEM_SNOOP_HITM,
                    0,
                    0,
                    false,
                ),
            ),
            "rmt_hitm",
        ),
        (
            s(
                line + 8,
                0xffffffff81000020,
                2,
                90,
                src(
                    MEM_OP_LOAD,
                    hit | MEM_LVL_L2,
                    0x1,
                    MEM_SNOOPX_PEER,
                    0,
                    false,
                ),
            ),
            "lcl_peer",
        ),
        (
            s(
                line + 16,
                0xffffffff81000030,
                3,
                400,
                src(
                    MEM_OP_LOAD,
                    hit | MEM_LVL_REM_CCE1,
                    0x1,
                    MEM_SNOOPX_PEER,
                    0,
                    false,
                ),
            ),
            "rmt_peer",
        ),
        (
            s(
                line + 16,
                0xffffffff81000030,
                3,
                40,
                src(MEM_OP_LOAD, hit | MEM_LVL_L3, 0x2, 0, 0, false),
            ),
            "llc_hit",
        ),
        (
            s(
                line + 24,
                0xffffffff81000040,
                0,
                200,
                src(
                    MEM_OP_LOAD,
                    hit | MEM_LVL_LOC_RAM,
                    MEM_SNOOP_HIT,
                    0,
                    0,
                    false,
                ),
            ),
            "lcl_dram_shared",
        ),
        (
            s(
                line + 24,
                0xffffffff81000040,
                1,
                350,
                src(MEM_OP_LOAD, hit | MEM_LVL_REM_RAM1, 0x2, 0, 0, false),
            ),
            "rmt_dram_excl",
        ),
        (
            s(
                other,
                0xffffffff81000050,
                0,
                4,
                src(MEM_OP_LOAD, hit | MEM_LVL_L1, 0x2, 0, 0, false),
            ),
            "l1_hit",
        ),
        (
            s(
                other,
                0xffffffff81000050,
                1,
                9,
                src(MEM_OP_LOAD, hit | MEM_LVL_LFB, 0x2, 0, 0, false),
            ),
            "fb_hit",
        ),
        (
            s(
                line,
                0xffffffff81000060,
                2,
                0,
                src(MEM_OP_STORE, hit | MEM_LVL_L1, 0, 0, 0, false),
            ),
            "st_l1hit",
        ),
        (
            s(
                line,
                0xffffffff81000060,
                3,
                0,
                src(MEM_OP_STORE, MEM_LVL_MISS | MEM_LVL_L1, 0, 0, 0, false),
            ),
            "st_l1miss",
        ),
        (
            s(
                line + 8,
                0xffffffff81000070,
                0,
                0,
                src(MEM_OP_STORE, MEM_LVL_NA, 0, 0, MEM_LOCK_LOCKED, false),
            ),
            "st_na_locked",
        ),
        (
            s(
                0,
                0xffffffff81000080,
                0,
                0,
                src(MEM_OP_LOAD, hit | MEM_LVL_L1, 0x2, 0, 0, false),
            ),
            "ld_noadrs",
        ),
        (s(other + 32, 0xffffffff81000090, 0, 0, 0), "noparse"),
    ]
}

fn mem_event(sample_type: u64, ids: Vec<u64>, name: &'static str) -> Event {
    Event {
        sample_type,
        read_format: 0,
        regs_user: 0,
        ids,
        name,
    }
}

const MEM_SAMPLE: u64 =
    IDENTIFIER | IP | TID | TIME | ADDR | CPU | PERIOD | WEIGHT_STRUCT | DATA_SRC | PHYS_ADDR;

fn class_file(big: bool) -> Vec<u8> {
    let mut w = Writer::new(
        big,
        vec![mem_event(MEM_SAMPLE, vec![11], "cpu/mem-loads,ldlat=30/P")],
    );
    for (s, _) in classes() {
        w.sample(0, &s, 1);
    }
    w.file()
}

#[test]
fn each_data_source_class_counts_as_perf_c2c_counts_it() {
    let p = import(&class_file(false));
    let t = &p.summary["trace_events"];
    let want = [
        ("total_records", 14.0),
        ("locked_load_store_operations", 1.0),
        ("load_operations", 10.0),
        ("loads_no_mapping", 1.0),
        ("load_fill_buffer_hit", 1.0),
        ("load_l1d_hit", 1.0),
        ("load_l2d_hit", 1.0),
        ("load_llc_hit", 2.0), // the LLC hit and the local HITM (c2c adds them)
        ("load_local_hitm", 1.0),
        ("load_remote_hitm", 1.0),
        ("load_remote_hit", 1.0), // the remote peer: c2c counts it as a remote hit too
        ("load_local_dram", 1.0),
        ("load_remote_dram", 1.0),
        ("load_mesi_state_shared", 1.0),
        ("load_mesi_state_exclusive", 1.0),
        ("load_llc_misses", 4.0), // local + remote DRAM, remote HIT, remote HITM
        ("load_hit_local_peer", 1.0),
        ("load_hit_remote_peer", 1.0),
        ("store_operations", 3.0),
        ("store_l1d_hit", 1.0),
        ("store_l1d_miss", 1.0),
        ("store_no_available_memory_level", 1.0),
        ("unable_to_parse_data_source", 1.0),
        ("llc_misses_to_local_dram_pct", 25.0),
        ("llc_misses_to_remote_cache_hitm_pct", 25.0),
    ];
    for (k, v) in want {
        assert_eq!(t.get(k), Some(&v), "{k}");
    }
    assert_eq!(p.summary["perf_data"]["samples_without_address"], 1.0);

    // Per line and offset: the first line holds the HITMs, peers and stores.
    assert_eq!(p.lines[0].address, 0xffff_8880_1234_5600);
    let totals = p.lines[0].totals.unwrap();
    assert_eq!(
        (
            totals.lcl_hitm,
            totals.rmt_hitm,
            totals.lcl_peer,
            totals.rmt_peer
        ),
        (1.0, 1.0, 1.0, 1.0)
    );
    assert_eq!((totals.stores, totals.rmw), (2.0, 1.0));
    assert_eq!(p.lines[0].details["st_l1hit"], 1.0);
    assert_eq!(p.lines[0].details["st_l1miss"], 1.0);
    assert_eq!(p.lines[0].details["phys_addr"], 0x1_2345_6600u64 as f64);
    let at = |off: u64| {
        p.lines[0]
            .accesses
            .iter()
            .filter(|a| a.offset == Some(off))
            .collect::<Vec<_>>()
    };
    let hitm = at(0)
        .into_iter()
        .find(|a| a.counts.lcl_hitm == 1.0)
        .unwrap();
    assert_eq!(hitm.latency.unwrap().mean_lcl_hitm, Some(300.0));
    assert_eq!(
        hitm.code.as_ref().unwrap().address,
        Some(0xffffffff81000010)
    );
    let off8: Vec<_> = at(8);
    let rmt = off8.iter().find(|a| a.counts.rmt_hitm == 1.0).unwrap();
    // Two samples at one instruction: the remote HITM (500 cycles) and the local peer (90).
    assert_eq!(rmt.counts.lcl_peer, 1.0);
    assert_eq!(rmt.counts.loads, 2.0);
    assert_eq!(rmt.cpus.as_ref().unwrap().list, vec![1, 2]);
    assert_eq!(rmt.latency.unwrap().mean_rmt_hitm, Some(500.0));
    assert_eq!(rmt.latency.unwrap().mean_lcl_peer, Some(90.0));
    assert_eq!(rmt.threads.as_ref().unwrap().tids, vec![101, 102]);
    let locked = off8.iter().find(|a| a.counts.rmw == 1.0).unwrap();
    assert_eq!(locked.counts.stores, 0.0);
    // The line without transfers comes after; the sample without a data source is there
    // as a sample but counts as no load or store.
    let other = &p.lines[1];
    assert_eq!(other.address, 0xffff_8880_1234_5640);
    assert_eq!(other.totals.unwrap().loads, 2.0);
    let unparsed = other
        .accesses
        .iter()
        .find(|a| a.offset == Some(32))
        .unwrap();
    assert!(unparsed.counts.is_empty());
    assert_eq!(unparsed.details["samples"], 1.0);
    // Header facts from the features.
    assert_eq!(p.provenance.events, ["cpu/mem-loads,ldlat=30/P"]);
    assert_eq!(p.provenance.machine.cpus, Some(16));
    assert_eq!(p.provenance.tool_version.as_deref(), Some("6.18.test"));
    assert_eq!(p.provenance.settings["hostname"], "testhost");
}

#[test]
fn big_endian_files_read_the_same() {
    let mut le = import(&class_file(false));
    let mut be = import(&class_file(true));
    assert_eq!(
        be.provenance.settings.remove("byte_order").as_deref(),
        Some("big-endian")
    );
    le.provenance.settings.remove("byte_order");
    assert_eq!(le, be);
}

/// Every variable-length field before the weight and data source must be stepped over
/// exactly: READ (group, with LOST), CALLCHAIN, RAW, BRANCH_STACK, REGS_USER; and two
/// events told apart by their sample id (ID, no IDENTIFIER).
#[test]
fn variable_fields_and_several_events() {
    let st = IP
        | TID
        | ADDR
        | ID
        | CPU
        | READ
        | CALLCHAIN
        | RAW
        | BRANCH_STACK
        | REGS_USER
        | WEIGHT
        | DATA_SRC;
    let ev = |ids, name| Event {
        sample_type: st,
        read_format: (1 << 3) | (1 << 2) | (1 << 4),
        regs_user: 0b1011,
        ids,
        name,
    };
    let mut w = Writer::new(
        false,
        vec![
            ev(vec![21, 22], "cpu/mem-loads/P"),
            ev(vec![31], "cpu/mem-stores/P"),
        ],
    );
    let load = S {
        id: 22,
        ip: 0x401234,
        pid: 7,
        tid: 8,
        addr: 0x7f00_0000_1008,
        cpu: 5,
        weight: 77,
        data_src: src(
            MEM_OP_LOAD,
            MEM_LVL_HIT | MEM_LVL_L3,
            MEM_SNOOP_HITM,
            0,
            0,
            false,
        ),
        ..Default::default()
    };
    let store = S {
        id: 31,
        addr: 0x7f00_0000_1010,
        ip: 0x401300,
        data_src: src(MEM_OP_STORE, MEM_LVL_HIT | MEM_LVL_L1, 0, 0, 0, false),
        ..load.clone()
    };
    let unknown = S {
        id: 99,
        ..load.clone()
    };
    w.mmap2(7, 0x400000, 0x10000, "/nonexistent/app");
    w.sample(0, &load, 2);
    w.sample(1, &store, 2);
    w.sample(0, &unknown, 2);
    let p = import_perf_data(&w.file(), &PerfDataOptions::default(), &mut |_, _| {}).unwrap();
    let t = &p.summary["trace_events"];
    assert_eq!(t["total_records"], 2.0);
    assert_eq!(t["load_local_hitm"], 1.0);
    assert_eq!(t["store_l1d_hit"], 1.0);
    assert_eq!(p.summary["perf_data"]["samples_with_unknown_event_id"], 1.0);
    assert_eq!(p.provenance.events, ["cpu/mem-loads/P", "cpu/mem-stores/P"]);
    let l = &p.lines[0];
    assert_eq!(l.address, 0x7f00_0000_1000);
    let a = l.accesses.iter().find(|a| a.offset == Some(8)).unwrap();
    assert_eq!(a.latency.unwrap().mean_lcl_hitm, Some(77.0));
    let code = a.code.as_ref().unwrap();
    assert_eq!(code.object.as_deref(), Some("/nonexistent/app"));
    assert_eq!(code.symbol, None);
    // The missing ELF file is said, once.
    assert!(
        p.provenance
            .note
            .as_deref()
            .unwrap()
            .contains("/nonexistent/app")
    );
}

/// Kernel addresses are named from a kallsyms file given with --kallsyms (a recording from
/// another machine); without it and with another OS release, they stay raw and the note
/// says why.
#[test]
fn kallsyms_names_kernel_addresses() {
    let dir = tempdir("kallsyms");
    let path = dir.join("mem.data");
    std::fs::write(&path, class_file(false)).unwrap();
    // kallsyms lines as /proc/kallsyms prints them (address, type, name).
    let ks = dir.join("kallsyms");
    std::fs::write(
        &ks,
        "ffffffff81000000 T _stext\nffffffff81000010 T update_cfs_group\nffffffff81000030 t set_next_entity\nffffffff81000050 T task_tick_fair\nffffffff82000000 D nohz\n",
    )
    .unwrap();
    let p = |extra: &[&str]| {
        let mut args = vec!["import", "--perf-data", path.to_str().unwrap()];
        args.extend(extra);
        let out = common::lineup(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Profile::from_json(std::str::from_utf8(&out.stdout).unwrap()).unwrap()
    };
    let named = p(&["--kallsyms", ks.to_str().unwrap()]);
    let code = |p: &Profile, ip: u64| {
        p.lines
            .iter()
            .flat_map(|l| &l.accesses)
            .filter_map(|a| a.code.clone())
            .find(|c| c.address == Some(ip))
            .unwrap()
    };
    let c = code(&named, 0xffffffff81000020);
    assert_eq!(c.symbol.as_deref(), Some("update_cfs_group"));
    assert_eq!(c.symbol_offset, Some(0x10));
    assert_eq!(
        code(&named, 0xffffffff81000040).symbol.as_deref(),
        Some("set_next_entity")
    );
    assert_eq!(c.privilege, Some(lineup::profile::Privilege::Kernel));
    // The file says OS release 6.18.0-test, not this machine's: raw, with a note.
    let raw = p(&[]);
    assert_eq!(code(&raw, 0xffffffff81000020).symbol, None);
    assert!(raw.provenance.note.as_deref().unwrap().contains("kallsyms"));
    // Groups per function come from the names.
    assert!(named.groups.iter().any(|g| g.name == "update_cfs_group"));
}

// ---------------------------------------------------------------------------------------
// Bad input: one line naming the file and the problem, nothing written
// ---------------------------------------------------------------------------------------

fn lineup_err(args: &[&str]) -> String {
    let out = common::lineup(args);
    assert!(!out.status.success(), "lineup {args:?} should fail");
    assert!(out.stdout.is_empty(), "no partial output");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn damaged_files_give_one_line_errors() {
    let dir = tempdir("bad");
    let good = std::fs::read(data("page_faults.data")).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "too short"),
        (
            "text",
            b"Trace Event Information\n".to_vec(),
            "not a perf.data file",
        ),
        ("v1", b"PERFFILE\0\0\0\0\0\0\0\0".to_vec(), "version 1"),
        ("cut_header", good[..60].to_vec(), "header"),
        ("cut_data", good[..5000].to_vec(), "beyond the end"),
    ];
    for (name, bytes, want) in cases {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let err = lineup_err(&["import", "--perf-data", path.to_str().unwrap()]);
        assert!(
            err.contains(path.to_str().unwrap()) && err.contains(want),
            "{name}: {err}"
        );
    }
    // No file, a directory.
    let missing = dir.join("missing.data");
    let err = lineup_err(&["import", "--perf-data", missing.to_str().unwrap()]);
    assert!(err.contains("no such file"), "{err}");
    let err = lineup_err(&["import", "--perf-data", dir.to_str().unwrap()]);
    assert!(err.contains("directory"), "{err}");
    // A record whose size field is impossible, inside an intact container.
    let mut w = Writer::new(false, vec![mem_event(MEM_SAMPLE, vec![11], "m")]);
    w.sample(0, &classes()[0].0, 1);
    w.records.extend([9, 0, 0, 0, 1, 0, 4, 0]); // type 9, size 4
    let path = dir.join("bad_record");
    std::fs::write(&path, w.file()).unwrap();
    let err = lineup_err(&["import", "--perf-data", path.to_str().unwrap()]);
    assert!(err.contains("size 4"), "{err}");
    // The output path is not touched on failure.
    let out = dir.join("out.json");
    lineup_err(&[
        "import",
        "--perf-data",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!out.exists());
}

#[test]
fn text_importers_point_a_perf_data_file_to_the_flag() {
    let f = data("page_faults.data");
    for flag in ["--c2c", "--perf-script", "--perf-typeoff", "--sketch"] {
        let err = lineup_err(&["import", flag, f.to_str().unwrap()]);
        assert!(err.contains("--perf-data"), "{flag}: {err}");
    }
}

#[test]
fn perf_data_is_evidence_for_diagnose_too() {
    let dir = tempdir("diag");
    let path = dir.join("mem.data");
    std::fs::write(&path, class_file(false)).unwrap();
    let out = common::lineup(&[
        "import",
        "--perf-data",
        path.to_str().unwrap(),
        "-o",
        dir.join("p.json").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Profile::from_json(&std::fs::read_to_string(dir.join("p.json")).unwrap()).unwrap();
    assert_eq!(p.provenance.input.as_deref(), path.to_str());
    let help = common::lineup(&["diagnose", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--perf-data"));
}

// ---------------------------------------------------------------------------------------
// Robustness: the fuzz corpus, and every truncation and many byte flips of real files
// ---------------------------------------------------------------------------------------

fn import_quietly(bytes: &[u8]) -> Result<Profile, String> {
    let opts = PerfDataOptions {
        symbolize: false,
        memory_only: false,
        ..Default::default()
    };
    import_perf_data(bytes, &opts, &mut |_, _| {}).map_err(|e| e.to_string())
}

#[test]
fn fuzz_corpus_reads_or_fails_cleanly() {
    let dir = common::repo().join("fuzz/corpus/perf_data");
    let seed = dir.join("mem_classes.data");
    if std::env::var_os("LINEUP_WRITE_FUZZ_SEED").is_some() {
        std::fs::write(&seed, class_file(false)).unwrap();
    }
    // The seed is exactly what this file's writer produces.
    assert_eq!(std::fs::read(&seed).unwrap(), class_file(false));
    let mut ok = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        match import_quietly(&std::fs::read(&path).unwrap()) {
            Ok(p) => {
                Profile::from_json(&p.to_json()).unwrap();
                ok += 1;
            }
            Err(e) => assert!(!e.contains('\n'), "{}: {e}", path.display()),
        }
    }
    assert!(ok >= 2);
}

#[test]
fn truncated_and_flipped_files_never_panic() {
    let real = std::fs::read(data("page_faults.data")).unwrap();
    for base in [class_file(false), class_file(true), real] {
        // Every cut inside the small files' headers and records; a sample of the long one.
        let step = if base.len() > 4096 { 53 } else { 3 };
        for cut in (0..base.len()).step_by(step) {
            if let Err(e) = import_quietly(&base[..cut]) {
                assert!(!e.contains('\n'), "{e}");
            }
        }
        // Set each byte of the header, attributes and first records to 0xff and to 0x00.
        for at in 0..base.len().min(800) {
            for v in [0xff, 0x00] {
                let mut m = base.clone();
                m[at] = v;
                if let Err(e) = import_quietly(&m) {
                    assert!(!e.contains('\n'), "{e}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Only memory accesses are evidence (issue 25 item 5): recorded here at test time
// ---------------------------------------------------------------------------------------

/// Records `args` (perf record arguments before `--`) of `exe run_args` into `file`; None
/// when perf refuses here (perf_event_paranoid, no breakpoint support), said on stderr.
fn perf_record(file: &Path, args: &[&str], exe: &Path, run_args: &[&str]) -> Option<()> {
    let rec = Command::new(perf())
        .args(["record", "-q", "-o"])
        .arg(file)
        .args(args)
        .arg("--")
        .arg(exe)
        .args(run_args)
        .output()
        .unwrap();
    if !rec.status.success() {
        eprintln!(
            "perf record {args:?} refused here, not compared: {}",
            String::from_utf8_lossy(&rec.stderr)
        );
        return None;
    }
    Some(())
}

/// perf's own count of samples per event name (`perf script -F event`).
fn perf_samples_per_event(file: &Path) -> BTreeMap<String, u64> {
    let text = run(Command::new(perf())
        .args(["script", "-F", "event", "-i"])
        .arg(file));
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        *m.entry(l.trim().trim_end_matches(':').to_string())
            .or_default() += 1;
    }
    m
}

/// tests/data/perf/watch.c built without PIE, and its `shared_pair`'s address from `nm`.
fn watch_program(dir: &Path) -> (PathBuf, u64) {
    let exe = dir.join("watch");
    run(Command::new("cc")
        .args(["-O1", "-g", "-no-pie", "-pthread", "-o"])
        .arg(&exe)
        .arg(data("watch.c")));
    let nm = run(Command::new("nm").arg(&exe));
    let addr = nm
        .lines()
        .find(|l| l.ends_with(" shared_pair"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .expect("nm names shared_pair");
    (exe, addr)
}

/// (struct offset of the access from `base`) → counts, summed over instructions.
fn counts_at(p: &Profile, base: u64) -> BTreeMap<u64, lineup::profile::Counts> {
    let mut m: BTreeMap<u64, lineup::profile::Counts> = BTreeMap::new();
    for l in &p.lines {
        for a in &l.accesses {
            let addr = l.address + a.offset.unwrap();
            assert!(addr >= base, "{addr:#x} before the watched bytes");
            m.entry(addr - base).or_default().add(&a.counts);
        }
    }
    m
}

#[test]
fn data_breakpoints_are_the_loads_and_stores_their_type_says() {
    let dir = tempdir("watch");
    let (exe, a) = watch_program(&dir);
    let n: u64 = 3000;
    let file = dir.join("w.data");
    // `a` watched for writes, `b` for writes and for reads-or-writes: main stores `a` n
    // times, store_b stores `b` n times, main then loads `b` n times.
    let (wa, wb) = (format!("mem:{a:#x}/8:w"), format!("mem:{:#x}/8:w", a + 8));
    let rwb = format!("mem:{:#x}/8:rw", a + 8);
    let events = ["-e", &wa, "-e", &wb, "-e", &rwb];
    if perf_record(&file, &events, &exe, &[&n.to_string()]).is_none() {
        return;
    }
    let theirs = perf_samples_per_event(&file);
    let total: u64 = theirs.values().sum();
    let out = common::lineup(&["import", "--perf-data", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Profile::from_json(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    assert_eq!(p.summary["perf_data"]["samples"], total as f64);
    let at = counts_at(&p, a);
    assert_eq!(at.keys().copied().collect::<Vec<_>>(), [0, 8], "{at:?}");
    // Every hit is one access: stores of `a` and `b` as the write breakpoints counted
    // them, loads of `b` as the read-write one's hits beyond those; no read-modify-writes.
    let (ca, cb) = (&at[&0], &at[&8]);
    assert_eq!(ca.loads + ca.rmw + cb.rmw, 0.0, "{at:?}");
    assert!(ca.stores >= n as f64 && cb.stores >= n as f64, "{at:?}");
    assert!(cb.loads >= n as f64, "{at:?}");
    // perf's samples: the two write breakpoints and the read-write one; the read-write
    // breakpoint hits each store of `b` too, so perf's total is stores + stores(b) + loads.
    assert_eq!(
        (ca.stores + 2.0 * cb.stores + cb.loads) as u64,
        total,
        "lineup {at:?}, perf {theirs:?}"
    );
    let note = p.provenance.note.clone().unwrap_or_default();
    assert!(note.contains("hardware breakpoint"), "{note}");

    // A read-write breakpoint alone cannot tell loads from stores: read-modify-writes, said.
    let rw_only = dir.join("rw.data");
    if perf_record(&rw_only, &["-e", &rwb], &exe, &[&n.to_string()]).is_none() {
        return;
    }
    let rw_total: u64 = perf_samples_per_event(&rw_only).values().sum();
    let p = import(&std::fs::read(&rw_only).unwrap());
    let at = counts_at(&p, a);
    assert_eq!(at[&8].rmw, rw_total as f64);
    assert_eq!(at[&8].loads + at[&8].stores, 0.0);
    assert!(rw_total >= 2 * n);
    assert!(
        p.provenance
            .note
            .as_deref()
            .unwrap()
            .contains("does not say which")
    );

    // diagnose binds them to the program's own struct, every row inside its bytes.
    let out = common::lineup(&[
        "diagnose",
        "--perf-data",
        file.to_str().unwrap(),
        "--dwarf",
        exe.to_str().unwrap(),
        "--type",
        "pair",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |m: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(m))
            .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no row of {m}: {text}"))
    };
    // member offset size loads stores rmw ...
    assert_eq!(row("a")[1], "0");
    assert_eq!(row("a")[4].parse::<f64>().unwrap(), ca.stores);
    assert_eq!(row("b")[1], "8");
    assert_eq!(row("b")[3].parse::<f64>().unwrap(), cb.loads);
}

#[test]
fn events_that_are_not_memory_accesses_are_refused_naming_the_event() {
    let dir = tempdir("notmem");
    let (exe, _) = watch_program(&dir);
    for (event, extra) in [
        ("page-faults", &["-d", "-c", "1"][..]),
        ("cpu-clock", &["-d"][..]),
        ("cpu-clock", &[][..]),
    ] {
        let file = dir.join(format!("{event}.data"));
        let mut args: Vec<&str> = vec!["-e", event];
        args.extend(extra);
        if perf_record(&file, &args, &exe, &["200000"]).is_none() {
            continue;
        }
        let out = dir.join("out.json");
        let err = lineup_err(&[
            "import",
            "--perf-data",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            err.contains(file.to_str().unwrap())
                && err.contains(&format!("'{event}'"))
                && err.contains("not memory-access evidence"),
            "{event} {extra:?}: {err}"
        );
        assert!(!out.exists());
        // diagnose refuses it the same way, before any binding.
        let err = lineup_err(&[
            "diagnose",
            "--perf-data",
            file.to_str().unwrap(),
            "--dwarf",
            exe.to_str().unwrap(),
            "--type",
            "pair",
        ]);
        assert!(err.contains(&format!("'{event}'")), "{err}");
    }
    // The real page-fault recording kept in tests/data is refused too.
    let f = data("page_faults.data");
    let err = lineup_err(&["import", "--perf-data", f.to_str().unwrap()]);
    assert!(err.contains("'page-faults'"), "{err}");
}
