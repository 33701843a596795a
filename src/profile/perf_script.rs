//! Importer for `perf script` output of memory samples (`perf mem record`, `perf c2c
//! record`), for example `perf script -F tid,cpu,addr,data_src,weight,ip,sym,dso`.
//!
//! perf prints the fields of a sample in a fixed order whatever `-F` says: comm, pid/tid,
//! `[cpu]`, time, event name, then the data address (`%16lx`), the data source (its raw value
//! in hex and a decoding such as `|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK
//! N/A`; older perf prints `L1 hit|SNP None|...` without the `OP` and `LVL` labels), the
//! weight (load latency in cycles on Intel), then the instruction address, symbol+offset and
//! `(dso)`. The importer anchors on the data-source decoding, takes the data address just
//! before it and the code location after it, and aggregates samples per cache line, offset
//! and instruction.

use std::collections::{BTreeMap, BTreeSet};

use super::error::ProfileError;
use super::model::{
    Access, CodeLocation, Counts, CpuUse, DEFAULT_CACHELINE_SIZE, Latency, LineProfile, Profile,
    ThreadUse, Unit, parse_hex,
};

#[derive(Clone, Debug)]
pub struct PerfScriptOptions {
    /// Bytes per cache line for grouping data addresses (128 on POWER).
    pub cacheline_size: u64,
}

impl Default for PerfScriptOptions {
    fn default() -> Self {
        PerfScriptOptions {
            cacheline_size: DEFAULT_CACHELINE_SIZE,
        }
    }
}

/// Reads memory samples and aggregates them into one profile of raw cache lines.
pub fn import_perf_script(text: &str, opts: &PerfScriptOptions) -> Result<Profile, ProfileError> {
    let cls = opts.cacheline_size;
    if !cls.is_power_of_two() {
        return Err(ProfileError::Option(format!(
            "cache line size {cls} is not a power of two"
        )));
    }
    let mut agg: BTreeMap<(u64, u64, Option<u64>, Option<String>), Acc> = BTreeMap::new();
    let (mut samples, mut no_addr, mut unknown_op) = (0u64, 0u64, 0u64);
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let Some(s) = parse_sample(no, raw)? else {
            continue;
        };
        samples += 1;
        if s.addr == 0 {
            no_addr += 1;
            continue;
        }
        let Some(op) = s.src.op else {
            unknown_op += 1;
            continue;
        };
        let line = s.addr - s.addr % cls;
        let key = (
            line,
            s.addr - line,
            s.ip,
            s.ip.is_none().then(|| s.symbol.clone()).flatten(),
        );
        agg.entry(key).or_default().add(&s, op);
    }
    if samples == 0 {
        return Err(ProfileError::NoData(
            "no perf script memory samples found: expected lines with a data source such as \
             `|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No` (perf script -F ...,addr,data_src,...)"
                .into(),
        ));
    }
    let mut profile = Profile::new("perf script", Unit::Samples, cls);
    profile.summary.insert(
        "perf_script".into(),
        BTreeMap::from([
            ("samples".to_string(), samples as f64),
            ("samples_without_address".to_string(), no_addr as f64),
            ("samples_without_operation".to_string(), unknown_op as f64),
        ]),
    );
    let mut lines: BTreeMap<u64, LineProfile> = BTreeMap::new();
    for ((line, offset, _, _), acc) in agg {
        let l = lines.entry(line).or_insert_with(|| LineProfile {
            address: line,
            totals: Some(Counts::default()),
            ..Default::default()
        });
        let access = acc.into_access(offset);
        if let Some(t) = &mut l.totals {
            t.add(&access.counts);
        }
        l.accesses.push(access);
    }
    profile.lines = super::model::rank_lines(lines.into_values());
    profile.derive_function_groups();
    Ok(profile)
}

// ---------------------------------------------------------------------------------------
// One sample line
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Load,
    Store,
}

/// What the data source says about one access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DataSource {
    op: Option<Op>,
    hitm: bool,
    peer: bool,
    remote: bool,
    locked: bool,
}

impl DataSource {
    /// Decodes the raw `perf_mem_data_src` value (include/uapi/linux/perf_event.h).
    fn from_bits(v: u64) -> Self {
        let field = |shift: u32, width: u32| (v >> shift) & ((1 << width) - 1);
        let op = field(0, 5);
        let lvl = field(5, 14);
        let snoop = field(19, 5);
        let lock = field(24, 2);
        let remote_bit = field(37, 1) != 0;
        let snoopx = field(38, 2);
        const LVL_REM_CCE1: u64 = 1 << 10;
        const LVL_REM_CCE2: u64 = 1 << 11;
        const LVL_REM_RAM1: u64 = 1 << 8;
        const LVL_REM_RAM2: u64 = 1 << 9;
        DataSource {
            op: if op & 0x2 != 0 {
                Some(Op::Load)
            } else if op & 0x4 != 0 {
                Some(Op::Store)
            } else {
                None
            },
            hitm: snoop & 0x10 != 0,
            peer: snoopx & 0x2 != 0,
            remote: remote_bit
                || lvl & (LVL_REM_CCE1 | LVL_REM_CCE2 | LVL_REM_RAM1 | LVL_REM_RAM2) != 0,
            locked: lock & 0x2 != 0,
        }
    }

    /// Reads perf's decoding: `|OP LOAD|LVL L1 hit|SNP HitM|TLB ...|LCK Yes|BLK N/A`, the
    /// older `L3 hit|SNP HitM|TLB ...|LCK No`, or a paste like `LOAD|L1 hit|SNP None|...`.
    fn from_text(text: &str) -> Self {
        let mut src = DataSource::default();
        let mut lvl: Option<&str> = None;
        for seg in text.split('|').map(str::trim).filter(|s| !s.is_empty()) {
            let (tag, value) = seg.split_once(' ').unwrap_or((seg, ""));
            let value = value.trim();
            match tag {
                "OP" => src.op = parse_op(value),
                "LVL" => lvl = Some(value),
                "SNP" => {
                    src.hitm = value.contains("HitM");
                    src.peer = value.contains("Peer");
                }
                "LCK" => src.locked = value.starts_with("Yes"),
                "TLB" | "BLK" => {}
                _ if src.op.is_none() && parse_op(seg).is_some() => src.op = parse_op(seg),
                _ if lvl.is_none() => lvl = Some(seg),
                _ => {}
            }
        }
        src.remote = lvl.is_some_and(|l| l.contains("Remote"));
        src
    }
}

fn parse_op(s: &str) -> Option<Op> {
    match s {
        "LOAD" => Some(Op::Load),
        "STORE" => Some(Op::Store),
        _ => None,
    }
}

#[derive(Debug)]
struct Sample {
    addr: u64,
    src: DataSource,
    weight: Option<f64>,
    cpu: Option<u32>,
    tid: Option<i64>,
    pid: Option<i64>,
    comm: Option<String>,
    ip: Option<u64>,
    symbol: Option<String>,
    symbol_offset: Option<u64>,
    object: Option<String>,
}

/// A sample line, or None for lines that are not samples (headers, call chains).
fn parse_sample(no: usize, raw: &str) -> Result<Option<Sample>, ProfileError> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let Some(snp) = line.find("|SNP ") else {
        return Ok(None);
    };
    // Where the decoding starts: `|OP ...` (newer perf), the level words of older perf
    // (`L1 hit|SNP`), or an operation word in a hand-trimmed paste (`LOAD|L1 hit|SNP`).
    let head = &line[..snp];
    let tokens: Vec<(usize, &str)> = token_spans(head);
    let pipe = tokens.iter().position(|(_, t)| t.contains('|'));
    let (start, perf_form) = match pipe {
        Some(i) if tokens[i].1.starts_with('|') => (i, true),
        Some(i) if tokens[i].1.split('|').next().and_then(parse_op).is_some() => (i, false),
        Some(i) => (level_start(&tokens[..i]).unwrap_or(i), true),
        None => (level_start(&tokens).unwrap_or(tokens.len()), true),
    };
    let before = &tokens[..start];
    let hexish = |t: &str| is_bare_hex(t) || parse_hex(t).is_some();
    let n = before.len();
    // perf prints the raw data source value (hex) right before its decoding, and the data
    // address before that.
    let (addr_i, src_bits) = if perf_form
        && n >= 2
        && hexish(before[n - 1].1)
        && hexish(before[n - 2].1)
    {
        (
            n - 2,
            u64::from_str_radix(before[n - 1].1.trim_start_matches("0x"), 16).ok(),
        )
    } else if n >= 1 && hexish(before[n - 1].1) {
        (n - 1, None)
    } else {
        return Err(ProfileError::parse(
            no,
            "memory sample without a data address before its data source (add addr to perf script -F)",
        ));
    };
    let decode_start = tokens.get(start).map_or(snp, |(p, _)| *p);
    // Where it ends: after `|LCK <word>` and any `|BLK` words.
    let end = decode_end(line, snp).ok_or_else(|| {
        ProfileError::parse(no, "data source without its `|LCK` part (truncated?)")
    })?;
    let mut src = DataSource::from_text(&line[decode_start.min(end)..end]);
    // perf prints the raw data-source value before its decoding whenever it prints the
    // decoding. With `addr` missing from `-F`, that value is the only number left: taking
    // it for an address would invent cache lines. It gives itself away by decoding to what
    // the text says.
    if perf_form && src_bits.is_none() {
        let tok = before[addr_i].1;
        if let Ok(v) = u64::from_str_radix(tok.trim_start_matches("0x"), 16) {
            let bits = DataSource::from_bits(v);
            if bits.op.is_some()
                && bits.op == src.op
                && bits.hitm == src.hitm
                && bits.remote == src.remote
            {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "no data address: {tok} is the raw data source (it decodes to the text                          after it), so perf script ran without the addr field;                          use perf script -F ...,addr,data_src,..."
                    ),
                ));
            }
        }
    }
    if let Some(bits) = src_bits.filter(|&b| b != 0) {
        // The raw value is exact; keep the text's operation when the bits have none.
        let from_bits = DataSource::from_bits(bits);
        src = DataSource {
            op: from_bits.op.or(src.op),
            ..from_bits
        };
    }
    let addr_tok = before[addr_i].1;
    let addr = parse_hex(addr_tok)
        .or_else(|| u64::from_str_radix(addr_tok, 16).ok())
        .ok_or_else(|| ProfileError::parse(no, format!("bad data address {addr_tok:?}")))?;
    let prefix = &before[..addr_i];
    let mut sample = Sample {
        addr,
        src,
        weight: None,
        cpu: None,
        tid: None,
        pid: None,
        comm: None,
        ip: None,
        symbol: None,
        symbol_offset: None,
        object: None,
    };
    read_prefix(prefix, &mut sample);
    read_suffix(no, &line[end..], &mut sample)?;
    Ok(Some(sample))
}

fn token_spans(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(st)) => {
                out.push((st, &s[st..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

/// Where the level words (`Remote Cache (1 hop) hit`) before `|SNP` start.
fn level_start(tokens: &[(usize, &str)]) -> Option<usize> {
    const WORDS: &[&str] = &[
        "L1", "L2", "L3", "L4", "LFB/MAB", "Local", "Remote", "RAM", "Cache", "hit", "miss", "N/A",
        "Uncached", "I/O", "Any", "cache", "or", "PMEM", "CXL", "(1", "(2", "hop)", "hops)",
        "core,", "same", "node", "node,", "socket", "socket,", "board",
    ];
    let mut i = tokens.len();
    while i > 0 && WORDS.contains(&tokens[i - 1].1) {
        i -= 1;
    }
    (i < tokens.len()).then_some(i)
}

fn decode_end(line: &str, from: usize) -> Option<usize> {
    let mut end = from + line[from..].find("|LCK ")? + "|LCK ".len();
    // The lock word: Yes, No or N/A.
    let rest = &line[end..];
    let word = rest.trim_start();
    let word_len = word
        .find(|c: char| c.is_whitespace() || c == '|')
        .unwrap_or(word.len());
    end += rest.len() - word.len() + word_len;
    if line[end..].starts_with("|BLK") {
        end += "|BLK".len();
        loop {
            let rest = &line[end..];
            let t = rest.trim_start();
            match ["N/A", "Data", "Addr"].iter().find(|w| t.starts_with(**w)) {
                Some(w) => end += rest.len() - t.len() + w.len(),
                None => break,
            }
        }
    }
    Some(end)
}

fn read_prefix(prefix: &[(usize, &str)], s: &mut Sample) {
    let mut comm_end = 0;
    for (i, &(_, t)) in prefix.iter().enumerate() {
        if let Some(cpu) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if let Ok(c) = cpu.parse() {
                s.cpu = Some(c);
                // `comm tid [cpu]`: the bare number before the CPU is the tid.
                if i > 0
                    && s.tid.is_none()
                    && let Ok(tid) = prefix[i - 1].1.parse()
                {
                    s.tid = Some(tid);
                    comm_end = comm_end.max(i - 1);
                }
            }
        } else if let Some((p, t2)) = t.split_once('/')
            && let (Ok(p), Ok(t2)) = (p.parse(), t2.parse())
        {
            s.pid = Some(p);
            s.tid = Some(t2);
            comm_end = comm_end.max(i);
        }
    }
    if comm_end > 0 {
        let comm: Vec<&str> = prefix[..comm_end].iter().map(|(_, t)| *t).collect();
        s.comm = Some(comm.join(" "));
    }
}

/// After the data source: weight (and other numbers), then ip, `symbol+0xoff`, `(dso)`.
fn read_suffix(no: usize, rest: &str, s: &mut Sample) -> Result<(), ProfileError> {
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let numeric = tokens
        .iter()
        .take_while(|t| is_bare_hex(t) || parse_hex(t).is_some())
        .count();
    let after = &tokens[numeric..];
    let (weight_tok, ip_tok) = match numeric {
        0 => (None, None),
        1 if after.is_empty() => {
            // Only one number: an instruction address looks like one (long, or with a-f).
            let t = tokens[0];
            if t.len() >= 8 || t.chars().any(|c| c.is_ascii_alphabetic()) {
                (None, Some(t))
            } else {
                (Some(t), None)
            }
        }
        1 => (None, Some(tokens[0])),
        n => (Some(tokens[0]), Some(tokens[n - 1])),
    };
    if let Some(w) = weight_tok {
        s.weight = Some(w.parse::<u64>().map(|w| w as f64).map_err(|_| {
            ProfileError::parse(no, format!("expected a decimal weight, found {w:?}"))
        })?);
    }
    s.ip = ip_tok.and_then(|t| parse_hex(t).or_else(|| u64::from_str_radix(t, 16).ok()));
    let mut words: Vec<&str> = after.to_vec();
    if let Some(last) = words.last()
        && last.starts_with('(')
        && last.ends_with(')')
    {
        s.object = Some(last[1..last.len() - 1].to_string());
        words.pop();
    }
    let sym = words.join(" ");
    if !sym.is_empty() && sym != "[unknown]" {
        match sym
            .rsplit_once('+')
            .and_then(|(name, off)| Some((name, parse_hex(off)?)))
        {
            Some((name, off)) => {
                s.symbol = Some(name.to_string());
                s.symbol_offset = Some(off);
            }
            None => s.symbol = Some(sym),
        }
    }
    Ok(())
}

/// Hex digits without `0x`, as perf prints addresses and the data source (`%16lx`).
fn is_bare_hex(t: &str) -> bool {
    !t.is_empty() && t.len() <= 16 && t.bytes().all(|b| b.is_ascii_hexdigit())
}

// ---------------------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------------------

/// Samples of one (line, offset, instruction).
#[derive(Default)]
struct Acc {
    counts: Counts,
    cpus: BTreeSet<u32>,
    tids: BTreeSet<i64>,
    pids: BTreeSet<i64>,
    comms: BTreeSet<String>,
    /// Weight sum and count per load kind, for the means.
    cycles: BTreeMap<&'static str, (f64, f64)>,
    code: CodeLocation,
}

impl Acc {
    fn add(&mut self, s: &Sample, op: Op) {
        let c = &mut self.counts;
        let reads = if s.src.locked {
            c.rmw += 1.0;
            true
        } else if op == Op::Load {
            c.loads += 1.0;
            true
        } else {
            c.stores += 1.0;
            false
        };
        let kind = if !reads {
            None
        } else if s.src.hitm {
            if s.src.remote {
                c.rmt_hitm += 1.0;
                Some("rmt_hitm")
            } else {
                c.lcl_hitm += 1.0;
                Some("lcl_hitm")
            }
        } else if s.src.peer {
            if s.src.remote {
                c.rmt_peer += 1.0;
                Some("rmt_peer")
            } else {
                c.lcl_peer += 1.0;
                Some("lcl_peer")
            }
        } else {
            Some("load")
        };
        if let (Some(kind), Some(w)) = (kind, s.weight.filter(|&w| w > 0.0)) {
            let e = self.cycles.entry(kind).or_default();
            e.0 += w;
            e.1 += 1.0;
        }
        self.cpus.extend(s.cpu);
        self.tids.extend(s.tid);
        self.pids.extend(s.pid);
        self.comms.extend(s.comm.clone());
        if self.code.address.is_none() && self.code.symbol.is_none() {
            self.code = CodeLocation {
                symbol: s.symbol.as_deref().map(Into::into),
                symbol_offset: s.symbol_offset,
                address: s.ip,
                object: s.object.as_deref().map(Into::into),
                ..Default::default()
            };
        }
    }

    fn into_access(self, offset: u64) -> Access {
        let latency = Latency::from_weight_sums(&self.cycles);
        let threads = ThreadUse::from_sets(self.pids, self.tids, self.comms);
        Access {
            offset: Some(offset),
            counts: self.counts,
            latency,
            cpus: (!self.cpus.is_empty()).then(|| CpuUse::list(self.cpus)),
            threads: threads.map(Box::new),
            code: Some(self.code),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_raw_data_source_bits() {
        // LOAD, L3 hit, SNP HitM: a local HITM.
        let v: u64 = 0x2 | ((0x2 | 0x40) << 5) | (0x10 << 19) | (0x1 << 24);
        let s = DataSource::from_bits(v);
        assert_eq!(s.op, Some(Op::Load));
        assert!(s.hitm && !s.remote && !s.locked);
        // STORE, L1 hit, locked.
        let v: u64 = 0x4 | ((0x2 | 0x8) << 5) | (0x1 << 19) | (0x2 << 24);
        let s = DataSource::from_bits(v);
        assert_eq!(s.op, Some(Op::Store));
        assert!(s.locked);
    }

    #[test]
    fn decodes_text() {
        let s = DataSource::from_text(
            "|OP LOAD|LVL Remote Cache (1 hop) hit|SNP HitM|TLB L1 or L2 hit|LCK No|BLK  N/A",
        );
        assert_eq!(s.op, Some(Op::Load));
        assert!(s.hitm && s.remote);
        let s = DataSource::from_text("LOAD|L1 hit|SNP None|TLB L1 or L2 hit|LCK No");
        assert_eq!(s.op, Some(Op::Load));
        assert!(!s.hitm && !s.remote);
    }

    #[test]
    fn one_sample_line() {
        let s = parse_sample(
            1,
            "  hackbench 4321/4325 [007]  1234.567890:  cpu/mem-loads,ldlat=30/P:  ff1d6ca01ecc5e88  68100142 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A       51  ffffffff8914934e update_cfs_group+0x4e ([kernel.kallsyms])",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.addr, 0xff1d6ca01ecc5e88);
        assert_eq!(s.cpu, Some(7));
        assert_eq!((s.pid, s.tid), (Some(4321), Some(4325)));
        assert_eq!(s.weight, Some(51.0));
        assert_eq!(s.ip, Some(0xffffffff8914934e));
        assert_eq!(s.symbol.as_deref(), Some("update_cfs_group"));
        assert_eq!(s.symbol_offset, Some(0x4e));
        assert_eq!(s.object.as_deref(), Some("[kernel.kallsyms]"));
    }
}
