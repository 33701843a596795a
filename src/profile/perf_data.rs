//! Importer for `perf.data` itself: the files `perf c2c record`, `perf mem record` and `perf
//! record -d` write.
//!
//! The container follows `tools/perf/Documentation/perf.data-file-format.txt`: a header
//! (`PERFILE2` magic, which also gives the byte order, then the attribute, data and
//! event-type sections and a 256-bit feature bitmap), one `perf_event_attr` plus its sample
//! ids per event, the data section (a stream of `perf_event_header`-framed records) and, after
//! the data, one section per feature bit (host name, OS release, perf version, CPU count and
//! description, command line, event names, build ids). Pipe-mode files (`perf record -o -`)
//! carry the attributes and features as records instead.
//!
//! Each `PERF_RECORD_SAMPLE` is decoded from its event's `sample_type` bit mask in the order
//! `include/uapi/linux/perf_event.h` documents (IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID,
//! CPU, PERIOD, READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT or
//! WEIGHT_STRUCT, DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, AUX, CGROUP, DATA_PAGE_SIZE,
//! CODE_PAGE_SIZE). The reader is our own rather than the `linux-perf-data` crate's: that
//! crate's sample parser drops `weight` and `data_src`, and it allocates buffers of the sizes
//! a file claims before checking them against the file, so a damaged file can abort the
//! process; here every length is checked against the bytes that are there.
//!
//! The data source (`union perf_mem_data_src`) is classified exactly as `perf c2c report`
//! counts it (`c2c_decode_stats` in `tools/perf/util/mem-events.c`), so the profile's
//! `trace_events` summary reproduces c2c's "Trace Event Information" table from the samples.
//! Samples are aggregated per cache line, offset and instruction into the same raw-line
//! profile the `perf script` importer builds. Instruction addresses are symbolized from the
//! recorded MMAP/MMAP2 events and the ELF files they name (when the file is still there and
//! its build id matches the one perf recorded) and, for kernel addresses, from a kallsyms
//! text the caller passes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

use super::error::ProfileError;
use super::model::{
    Access, CodeLocation, Counts, CpuUse, DEFAULT_CACHELINE_SIZE, Details, Latency, LineProfile,
    Privilege, Profile, ThreadUse, Unit,
};

/// `PERFILE2` as a little-endian file starts; a big-endian one starts byte-swapped.
pub const MAGIC_LE: &[u8; 8] = b"PERFILE2";
pub const MAGIC_BE: &[u8; 8] = b"2ELIFREP";

/// True when `head` (the first bytes of a file) is a perf.data file of either byte order, or
/// perf's old version-1 format.
pub fn is_perf_data(head: &[u8]) -> bool {
    head.starts_with(MAGIC_LE) || head.starts_with(MAGIC_BE) || head.starts_with(b"PERFFILE")
}

/// The one-line hint a text importer gives when it is handed a perf.data file.
pub fn text_importer_hint(head: &[u8]) -> Option<&'static str> {
    is_perf_data(head).then_some(
        "this is a perf.data file (binary), not report text: read it with --perf-data FILE",
    )
}

#[derive(Clone, Debug)]
pub struct PerfDataOptions {
    /// Bytes per cache line for grouping data addresses (128 on POWER).
    pub cacheline_size: u64,
    /// Open the ELF files the MMAP records name to turn instruction addresses into symbols.
    pub symbolize: bool,
    /// `/proc/kallsyms` text of the machine the file was recorded on, for kernel addresses.
    pub kallsyms: Option<String>,
    /// Refuse events that are not memory accesses (the default, and what every command
    /// does). False only to check the decoder against perf's own reports on files of other
    /// events (a page-fault recording has data addresses too): never evidence.
    pub memory_only: bool,
}

impl Default for PerfDataOptions {
    fn default() -> Self {
        PerfDataOptions {
            cacheline_size: DEFAULT_CACHELINE_SIZE,
            symbolize: true,
            kallsyms: None,
            memory_only: true,
        }
    }
}

/// What the header says about where the file was recorded, read before the samples so a
/// caller can decide which kallsyms fits (`os_release`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerfDataHeader {
    pub big_endian: bool,
    pub pipe_mode: bool,
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub perf_version: Option<String>,
    pub arch: Option<String>,
    pub cpu_desc: Option<String>,
    pub cpus_online: Option<u32>,
    pub cmdline: Option<Vec<String>>,
    /// Event names in attribute order (from the EVENT_DESC feature).
    pub event_names: Vec<String>,
    /// (file name, build id in hex) from the BUILD_ID feature.
    pub build_ids: Vec<(String, String)>,
}

// ---------------------------------------------------------------------------------------
// Byte access, every read checked
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Bytes<'a> {
    data: &'a [u8],
    big: bool,
}

impl<'a> Bytes<'a> {
    fn get(&self, off: u64, len: u64) -> Option<&'a [u8]> {
        let start = usize::try_from(off).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.data.get(start..end)
    }
    fn u16(&self, off: u64) -> Option<u16> {
        let b: [u8; 2] = self.get(off, 2)?.try_into().ok()?;
        Some(if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }
    fn u32(&self, off: u64) -> Option<u32> {
        let b: [u8; 4] = self.get(off, 4)?.try_into().ok()?;
        Some(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }
    fn u64(&self, off: u64) -> Option<u64> {
        let b: [u8; 8] = self.get(off, 8)?.try_into().ok()?;
        Some(if self.big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }
    /// A sub-range with the same byte order.
    fn slice(&self, off: u64, len: u64) -> Option<Bytes<'a>> {
        Some(Bytes {
            data: self.get(off, len)?,
            big: self.big,
        })
    }
}

/// A cursor over one record's body.
struct Cursor<'a> {
    b: Bytes<'a>,
    pos: u64,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let v = self.b.u64(self.pos)?;
        self.pos += 8;
        Some(v)
    }
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.u32(self.pos)?;
        self.pos += 4;
        Some(v)
    }
    fn skip(&mut self, n: u64) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        (end <= self.b.data.len() as u64).then(|| self.pos = end)
    }
    /// `n` u64 values, checked to be there before anything is skipped.
    fn skip_u64s(&mut self, n: u64) -> Option<()> {
        self.skip(n.checked_mul(8)?)
    }
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

// ---------------------------------------------------------------------------------------
// perf_event_attr and the sample layout
// ---------------------------------------------------------------------------------------

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_READ: u64 = 1 << 4;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const SAMPLE_ID: u64 = 1 << 6;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_STREAM_ID: u64 = 1 << 9;
const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
const SAMPLE_REGS_USER: u64 = 1 << 12;
const SAMPLE_STACK_USER: u64 = 1 << 13;
const SAMPLE_WEIGHT: u64 = 1 << 14;
const SAMPLE_DATA_SRC: u64 = 1 << 15;
const SAMPLE_IDENTIFIER: u64 = 1 << 16;
const SAMPLE_TRANSACTION: u64 = 1 << 17;
const SAMPLE_REGS_INTR: u64 = 1 << 18;
const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
const SAMPLE_AUX: u64 = 1 << 20;
const SAMPLE_CGROUP: u64 = 1 << 21;
const SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
const SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;
/// Every bit this reader knows how to step over; a sample type with others cannot be walked.
const SAMPLE_KNOWN: u64 = (1 << 25) - 1;

const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const FORMAT_ID: u64 = 1 << 2;
const FORMAT_GROUP: u64 = 1 << 3;
const FORMAT_LOST: u64 = 1 << 4;

const BRANCH_HW_INDEX: u64 = 1 << 17;
const BRANCH_COUNTERS: u64 = 1 << 19;

/// The parts of a `perf_event_attr` that decide how a sample is laid out.
#[derive(Clone, Debug, Default, PartialEq)]
struct Attr {
    type_: u32,
    config: u64,
    /// PERF_TYPE_BREAKPOINT: HW_BREAKPOINT_R (1), _W (2), _RW (3), _X (4).
    bp_type: u32,
    /// PERF_TYPE_BREAKPOINT: the watched address and length (config1, config2 otherwise).
    bp_addr: u64,
    bp_len: u64,
    sample_type: u64,
    read_format: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_regs_intr: u64,
    ids: Vec<u64>,
    name: Option<String>,
}

impl Attr {
    /// Reads a `perf_event_attr` of `len` bytes (the fields past `len` are zero, as the
    /// kernel treats a shorter, older attr).
    fn parse(b: Bytes, off: u64, len: u64) -> Option<Attr> {
        let field = |at: u64| {
            if at + 8 <= len {
                b.u64(off + at)
            } else {
                Some(0)
            }
        };
        if len < 40 {
            return None;
        }
        Some(Attr {
            type_: b.u32(off)?,
            config: field(8)?,
            bp_type: if len >= 56 { b.u32(off + 52)? } else { 0 },
            bp_addr: field(56)?,
            bp_len: field(64)?,
            sample_type: field(24)?,
            read_format: field(32)?,
            branch_sample_type: field(72)?,
            sample_regs_user: field(80)?,
            sample_regs_intr: field(96)?,
            ids: Vec::new(),
            name: None,
        })
    }

    /// perf's name for the common software and hardware events when the file has no
    /// EVENT_DESC feature.
    fn fallback_name(&self) -> String {
        const HW: [&str; 10] = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branches",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        const SW: [&str; 10] = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "dummy",
        ];
        let table: &[&str] = match self.type_ {
            0 => &HW,
            1 => &SW,
            _ => &[],
        };
        usize::try_from(self.config)
            .ok()
            .and_then(|i| table.get(i))
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("type {} config {:#x}", self.type_, self.config))
    }

    /// Byte offset of the sample id within a sample when IDENTIFIER is not set: after the
    /// fixed fields IP, TID, TIME and ADDR that precede ID.
    fn id_offset(&self) -> Option<u64> {
        let st = self.sample_type;
        if st & SAMPLE_IDENTIFIER != 0 {
            return Some(0);
        }
        if st & SAMPLE_ID == 0 {
            return None;
        }
        let before = [SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_ADDR];
        Some(8 * before.iter().filter(|&&bit| st & bit != 0).count() as u64)
    }
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_TYPE_BREAKPOINT: u32 = 5;
const HW_BREAKPOINT_R: u32 = 1;
const HW_BREAKPOINT_W: u32 = 2;

/// What an event's samples are, decided from its `perf_event_attr` alone (type, config,
/// bp_type, sample_type) before any sample is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A memory event sampled with its data address (perf mem / c2c, `perf record -d` on a
    /// raw or PMU event, AMD IBS op): each sample's data source says load or store.
    Memory,
    /// A hardware data breakpoint (`-e mem:ADDR/LEN:r|w|rw`): every sample is one access to
    /// `addr..addr+len`, a load (`r`), a store (`w`) or either (`rw`: the hardware does not
    /// say which). Breakpoint samples carry no data source.
    Breakpoint {
        access: BreakpointAccess,
        addr: u64,
        len: u64,
    },
    /// Not a memory access: the reason, for the one line that refuses it.
    NotMemory(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakpointAccess {
    Load,
    Store,
    LoadOrStore,
}

impl Attr {
    /// Classifies the event by its attributes: software events (page faults, cpu-clock,
    /// context switches), tracepoints, generic hardware events (cycles, instructions, even
    /// with data addresses sampled) and instruction breakpoints are not memory accesses;
    /// data breakpoints are, of the kind their bp_type says; raw, cache and PMU events are
    /// when their samples carry a data address.
    fn kind(&self) -> EventKind {
        let has_addr = self.sample_type & SAMPLE_ADDR != 0;
        match self.type_ {
            PERF_TYPE_BREAKPOINT => {
                let access = match self.bp_type & (HW_BREAKPOINT_R | HW_BREAKPOINT_W) {
                    HW_BREAKPOINT_R => BreakpointAccess::Load,
                    HW_BREAKPOINT_W => BreakpointAccess::Store,
                    3 => BreakpointAccess::LoadOrStore,
                    _ => {
                        return EventKind::NotMemory(
                            "an instruction breakpoint (bp_type x): it counts executions, not memory accesses".into(),
                        );
                    }
                };
                EventKind::Breakpoint {
                    access,
                    addr: self.bp_addr,
                    len: self.bp_len.max(1),
                }
            }
            PERF_TYPE_SOFTWARE => EventKind::NotMemory(match self.config {
                0 | 1 => "a software timer event: its samples are where the CPU was, not memory accesses".into(),
                2 | 5 | 6 => "a software page-fault event: a fault's address is a page first touched, not a load or store that contends for a cache line".into(),
                _ => "a software event: its samples are not memory accesses".into(),
            }),
            PERF_TYPE_TRACEPOINT => {
                EventKind::NotMemory("a tracepoint: its samples are not memory accesses".into())
            }
            PERF_TYPE_HARDWARE => EventKind::NotMemory(
                "a generic hardware event (cycles, instructions, branches): its samples are instructions, not memory accesses".into(),
            ),
            PERF_TYPE_HW_CACHE if has_addr => EventKind::Memory,
            _ if has_addr => EventKind::Memory,
            _ => EventKind::NotMemory(
                "its samples carry no data address (record a memory event: perf mem record, perf c2c record, or perf record -d -e mem:ADDR/LEN:w)".into(),
            ),
        }
    }
}

/// One decoded PERF_RECORD_SAMPLE: the fields a memory profile uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    /// Load latency (cycles on Intel): WEIGHT, or the first 32 bits of WEIGHT_STRUCT.
    pub weight: Option<u64>,
    pub data_src: Option<u64>,
    pub phys_addr: Option<u64>,
    pub data_page_size: Option<u64>,
    /// perf_event_header.misc & 7: 1 kernel, 2 user, 3 hypervisor, 4 guest kernel, 5 guest user.
    pub cpumode: u16,
}

/// Walks a sample body by its event's `sample_type`. None: the body is shorter than the
/// fields it must hold.
fn decode_sample(body: Bytes, attr: &Attr, misc: u16) -> Option<Sample> {
    let st = attr.sample_type;
    let mut c = Cursor { b: body, pos: 0 };
    let mut s = Sample {
        cpumode: misc & 7,
        ..Default::default()
    };
    if st & SAMPLE_IDENTIFIER != 0 {
        c.u64()?;
    }
    if st & SAMPLE_IP != 0 {
        s.ip = Some(c.u64()?);
    }
    if st & SAMPLE_TID != 0 {
        s.pid = Some(c.u32()? as i32);
        s.tid = Some(c.u32()? as i32);
    }
    if st & SAMPLE_TIME != 0 {
        s.time = Some(c.u64()?);
    }
    if st & SAMPLE_ADDR != 0 {
        s.addr = Some(c.u64()?);
    }
    if st & SAMPLE_ID != 0 {
        c.u64()?;
    }
    if st & SAMPLE_STREAM_ID != 0 {
        c.u64()?;
    }
    if st & SAMPLE_CPU != 0 {
        s.cpu = Some(c.u32()?);
        c.u32()?;
    }
    if st & SAMPLE_PERIOD != 0 {
        s.period = Some(c.u64()?);
    }
    if st & SAMPLE_READ != 0 {
        let rf = attr.read_format;
        let per_value = 1 + u64::from(rf & FORMAT_ID != 0) + u64::from(rf & FORMAT_LOST != 0);
        let times = u64::from(rf & FORMAT_TOTAL_TIME_ENABLED != 0)
            + u64::from(rf & FORMAT_TOTAL_TIME_RUNNING != 0);
        if rf & FORMAT_GROUP != 0 {
            let nr = c.u64()?;
            c.skip_u64s(times)?;
            c.skip_u64s(nr.checked_mul(per_value)?)?;
        } else {
            c.skip_u64s(per_value + times)?;
        }
    }
    if st & SAMPLE_CALLCHAIN != 0 {
        let nr = c.u64()?;
        c.skip_u64s(nr)?;
    }
    if st & SAMPLE_RAW != 0 {
        let size = c.u32()?;
        c.skip(u64::from(size))?;
    }
    if st & SAMPLE_BRANCH_STACK != 0 {
        let nr = c.u64()?;
        if attr.branch_sample_type & BRANCH_HW_INDEX != 0 {
            c.u64()?;
        }
        c.skip_u64s(nr.checked_mul(3)?)?;
        if attr.branch_sample_type & BRANCH_COUNTERS != 0 {
            c.skip_u64s(nr)?;
        }
    }
    if st & SAMPLE_REGS_USER != 0 {
        let abi = c.u64()?;
        if abi != 0 {
            c.skip_u64s(u64::from(attr.sample_regs_user.count_ones()))?;
        }
    }
    if st & SAMPLE_STACK_USER != 0 {
        let size = c.u64()?;
        if size != 0 {
            c.skip(size)?;
            c.u64()?; // dyn_size
        }
    }
    if st & (SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT) != 0 {
        let w = c.u64()?;
        // WEIGHT_STRUCT: var1_dw (u32, the latency perf reports as weight), var2_w, var3_w.
        s.weight = Some(if st & SAMPLE_WEIGHT_STRUCT == 0 {
            w
        } else if body.big {
            w >> 32
        } else {
            w & 0xffff_ffff
        });
    }
    if st & SAMPLE_DATA_SRC != 0 {
        s.data_src = Some(c.u64()?);
    }
    if st & SAMPLE_TRANSACTION != 0 {
        c.u64()?;
    }
    if st & SAMPLE_REGS_INTR != 0 {
        let abi = c.u64()?;
        if abi != 0 {
            c.skip_u64s(u64::from(attr.sample_regs_intr.count_ones()))?;
        }
    }
    if st & SAMPLE_PHYS_ADDR != 0 {
        s.phys_addr = Some(c.u64()?);
    }
    if st & SAMPLE_AUX != 0 {
        let size = c.u64()?;
        c.skip(size)?;
    }
    if st & SAMPLE_CGROUP != 0 {
        c.u64()?;
    }
    if st & SAMPLE_DATA_PAGE_SIZE != 0 {
        s.data_page_size = Some(c.u64()?);
    }
    if st & SAMPLE_CODE_PAGE_SIZE != 0 {
        c.u64()?;
    }
    Some(s)
}

// ---------------------------------------------------------------------------------------
// The data source, classified as perf c2c counts it
// ---------------------------------------------------------------------------------------

/// Fields of `union perf_mem_data_src` (include/uapi/linux/perf_event.h), by bit position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataSource {
    pub op: u64,
    pub lvl: u64,
    pub snoop: u64,
    pub lock: u64,
    pub lvl_num: u64,
    pub remote: bool,
    pub snoopx: u64,
    pub blk: u64,
    pub hops: u64,
}

pub const MEM_OP_LOAD: u64 = 0x2;
pub const MEM_OP_STORE: u64 = 0x4;
pub const MEM_LVL_NA: u64 = 0x1;
pub const MEM_LVL_HIT: u64 = 0x2;
pub const MEM_LVL_MISS: u64 = 0x4;
pub const MEM_LVL_L1: u64 = 0x8;
pub const MEM_LVL_LFB: u64 = 0x10;
pub const MEM_LVL_L2: u64 = 0x20;
pub const MEM_LVL_L3: u64 = 0x40;
pub const MEM_LVL_LOC_RAM: u64 = 0x80;
pub const MEM_LVL_REM_RAM1: u64 = 0x100;
pub const MEM_LVL_REM_RAM2: u64 = 0x200;
pub const MEM_LVL_REM_CCE1: u64 = 0x400;
pub const MEM_LVL_REM_CCE2: u64 = 0x800;
pub const MEM_LVL_IO: u64 = 0x1000;
pub const MEM_LVL_UNC: u64 = 0x2000;
pub const MEM_SNOOP_HIT: u64 = 0x4;
pub const MEM_SNOOP_HITM: u64 = 0x10;
pub const MEM_SNOOPX_PEER: u64 = 0x2;
pub const MEM_LOCK_LOCKED: u64 = 0x2;
pub const MEM_BLK_DATA: u64 = 0x2;
pub const MEM_BLK_ADDR: u64 = 0x4;

impl DataSource {
    pub fn from_bits(v: u64) -> Self {
        let f = |shift: u32, width: u32| (v >> shift) & ((1u64 << width) - 1);
        DataSource {
            op: f(0, 5),
            lvl: f(5, 14),
            snoop: f(19, 5),
            lock: f(24, 2),
            lvl_num: f(33, 4),
            remote: f(37, 1) != 0,
            snoopx: f(38, 2),
            blk: f(40, 3),
            hops: f(43, 3),
        }
    }

    /// The inverse, for tests and writers.
    pub fn to_bits(&self) -> u64 {
        self.op
            | self.lvl << 5
            | self.snoop << 19
            | self.lock << 24
            | self.lvl_num << 33
            | u64::from(self.remote) << 37
            | self.snoopx << 38
            | self.blk << 40
            | self.hops << 43
    }
}

/// c2c's counters (`struct c2c_stats` in tools/perf/util/mem-events.h), by the labels its
/// "Trace Event Information" table prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct C2cStats {
    pub nr_entries: u64,
    pub locks: u64,
    pub blk_data: u64,
    pub blk_addr: u64,
    pub load: u64,
    pub ld_noadrs: u64,
    pub ld_uncache: u64,
    pub ld_io: u64,
    pub ld_fbhit: u64,
    pub ld_l1hit: u64,
    pub ld_l2hit: u64,
    pub ld_llchit: u64,
    pub lcl_hitm: u64,
    pub rmt_hitm: u64,
    pub lcl_peer: u64,
    pub rmt_peer: u64,
    pub rmt_hit: u64,
    pub lcl_dram: u64,
    pub rmt_dram: u64,
    pub ld_shared: u64,
    pub ld_excl: u64,
    pub ld_miss: u64,
    pub store: u64,
    pub st_noadrs: u64,
    pub st_uncache: u64,
    pub st_l1hit: u64,
    pub st_l1miss: u64,
    pub st_na: u64,
    pub noparse: u64,
}

/// How one sample counts in a profile's access counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleClass {
    pub load: bool,
    pub store: bool,
    pub locked: bool,
    pub lcl_hitm: bool,
    pub rmt_hitm: bool,
    pub lcl_peer: bool,
    pub rmt_peer: bool,
}

impl C2cStats {
    /// Adds one sample as `c2c_decode_stats` does, and says how it counts per access.
    pub fn add(&mut self, src: &DataSource, daddr: u64) -> SampleClass {
        let (op, lvl, snoop, snoopx) = (src.op, src.lvl, src.snoop, src.snoopx);
        // "Skylake might report unknown remote level via this bit"; on POWER the remote bit
        // with hops also marks another core of the same node, hence `hops == 0`.
        let mrem = src.remote && src.hops == 0;
        let mut class = SampleClass {
            locked: src.lock & MEM_LOCK_LOCKED != 0,
            ..Default::default()
        };
        self.nr_entries += 1;
        if class.locked {
            self.locks += 1;
        }
        if src.blk & MEM_BLK_DATA != 0 {
            self.blk_data += 1;
        }
        if src.blk & MEM_BLK_ADDR != 0 {
            self.blk_addr += 1;
        }
        if op & MEM_OP_LOAD != 0 {
            self.load += 1;
            class.load = true;
            if daddr == 0 {
                self.ld_noadrs += 1;
                return class;
            }
            if lvl & MEM_LVL_HIT != 0 {
                if lvl & MEM_LVL_UNC != 0 {
                    self.ld_uncache += 1;
                }
                if lvl & MEM_LVL_IO != 0 {
                    self.ld_io += 1;
                }
                if lvl & MEM_LVL_LFB != 0 {
                    self.ld_fbhit += 1;
                }
                if lvl & MEM_LVL_L1 != 0 {
                    self.ld_l1hit += 1;
                }
                if lvl & MEM_LVL_L2 != 0 {
                    self.ld_l2hit += 1;
                    if snoopx & MEM_SNOOPX_PEER != 0 {
                        self.lcl_peer += 1;
                        class.lcl_peer = true;
                    }
                }
                if lvl & MEM_LVL_L3 != 0 {
                    if snoop & MEM_SNOOP_HITM != 0 {
                        self.lcl_hitm += 1;
                        class.lcl_hitm = true;
                    } else {
                        self.ld_llchit += 1;
                    }
                    if snoopx & MEM_SNOOPX_PEER != 0 {
                        self.lcl_peer += 1;
                        class.lcl_peer = true;
                    }
                }
                let shared = snoop & MEM_SNOOP_HIT != 0;
                if lvl & MEM_LVL_LOC_RAM != 0 {
                    self.lcl_dram += 1;
                    self.mesi(shared);
                }
                if lvl & (MEM_LVL_REM_RAM1 | MEM_LVL_REM_RAM2) != 0 || mrem {
                    self.rmt_dram += 1;
                    self.mesi(shared);
                }
            }
            if lvl & (MEM_LVL_REM_CCE1 | MEM_LVL_REM_CCE2) != 0 || mrem {
                if snoop & MEM_SNOOP_HIT != 0 {
                    self.rmt_hit += 1;
                } else if snoop & MEM_SNOOP_HITM != 0 {
                    self.rmt_hitm += 1;
                    class.rmt_hitm = true;
                } else if snoopx & MEM_SNOOPX_PEER != 0 {
                    self.rmt_hit += 1;
                    self.rmt_peer += 1;
                    class.rmt_peer = true;
                }
            }
            if lvl & MEM_LVL_MISS != 0 {
                self.ld_miss += 1;
            }
        } else if op & MEM_OP_STORE != 0 {
            self.store += 1;
            class.store = true;
            if daddr == 0 {
                self.st_noadrs += 1;
                return class;
            }
            if lvl & MEM_LVL_HIT != 0 {
                if lvl & MEM_LVL_UNC != 0 {
                    self.st_uncache += 1;
                }
                if lvl & MEM_LVL_L1 != 0 {
                    self.st_l1hit += 1;
                }
            }
            if lvl & MEM_LVL_MISS != 0 && lvl & MEM_LVL_L1 != 0 {
                self.st_l1miss += 1;
            }
            if lvl & MEM_LVL_NA != 0 {
                self.st_na += 1;
            }
        } else {
            self.noparse += 1;
        }
        class
    }

    fn mesi(&mut self, shared: bool) {
        if shared {
            self.ld_shared += 1;
        } else {
            self.ld_excl += 1;
        }
    }

    /// Loads that missed the LLC, as c2c adds them up.
    pub fn llc_misses(&self) -> u64 {
        self.lcl_dram + self.rmt_dram + self.rmt_hitm + self.rmt_hit
    }

    /// The "Trace Event Information" table: c2c's labels in snake_case (the keys the c2c
    /// text importer gives the same table), percentages with `_pct`.
    pub fn trace_events(&self) -> BTreeMap<String, f64> {
        let llc = self.llc_misses();
        let pct = |n: u64| {
            if llc == 0 {
                f64::NAN
            } else {
                // c2c prints one decimal.
                (n as f64 / llc as f64 * 1000.0).round() / 10.0
            }
        };
        let mut m: BTreeMap<String, f64> = [
            ("total_records", self.nr_entries),
            ("locked_load_store_operations", self.locks),
            ("load_operations", self.load),
            ("loads_uncacheable", self.ld_uncache),
            ("loads_io", self.ld_io),
            ("loads_miss", self.ld_miss),
            ("loads_no_mapping", self.ld_noadrs),
            ("load_fill_buffer_hit", self.ld_fbhit),
            ("load_l1d_hit", self.ld_l1hit),
            ("load_l2d_hit", self.ld_l2hit),
            ("load_llc_hit", self.ld_llchit + self.lcl_hitm),
            ("load_local_hitm", self.lcl_hitm),
            ("load_remote_hitm", self.rmt_hitm),
            ("load_remote_hit", self.rmt_hit),
            ("load_local_dram", self.lcl_dram),
            ("load_remote_dram", self.rmt_dram),
            ("load_mesi_state_exclusive", self.ld_excl),
            ("load_mesi_state_shared", self.ld_shared),
            ("load_llc_misses", llc),
            ("load_access_blocked_by_data", self.blk_data),
            ("load_access_blocked_by_address", self.blk_addr),
            ("load_hit_local_peer", self.lcl_peer),
            ("load_hit_remote_peer", self.rmt_peer),
            ("store_operations", self.store),
            ("store_uncacheable", self.st_uncache),
            ("store_no_mapping", self.st_noadrs),
            ("store_l1d_hit", self.st_l1hit),
            ("store_l1d_miss", self.st_l1miss),
            ("store_no_available_memory_level", self.st_na),
            ("unable_to_parse_data_source", self.noparse),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v as f64))
        .collect();
        // JSON has no NaN: the percentages exist only when there are LLC misses.
        for (k, v) in [
            ("llc_misses_to_local_dram_pct", pct(self.lcl_dram)),
            ("llc_misses_to_remote_dram_pct", pct(self.rmt_dram)),
            ("llc_misses_to_remote_cache_hit_pct", pct(self.rmt_hit)),
            ("llc_misses_to_remote_cache_hitm_pct", pct(self.rmt_hitm)),
        ] {
            if v.is_finite() {
                m.insert(k.to_string(), v);
            }
        }
        m
    }
}

// ---------------------------------------------------------------------------------------
// The container
// ---------------------------------------------------------------------------------------

const RECORD_MMAP: u32 = 1;
const RECORD_COMM: u32 = 3;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_HEADER_ATTR: u32 = 64;
const RECORD_AUXTRACE: u32 = 71;
const RECORD_HEADER_FEATURE: u32 = 80;
const RECORD_COMPRESSED: u32 = 81;
const RECORD_COMPRESSED2: u32 = 83;

const FEAT_BUILD_ID: u32 = 2;
const FEAT_HOSTNAME: u32 = 3;
const FEAT_OSRELEASE: u32 = 4;
const FEAT_VERSION: u32 = 5;
const FEAT_ARCH: u32 = 6;
const FEAT_NRCPUS: u32 = 7;
const FEAT_CPUDESC: u32 = 8;
const FEAT_CMDLINE: u32 = 11;
const FEAT_EVENT_DESC: u32 = 12;

/// PERF_RECORD_MISC_MMAP_BUILD_ID: an MMAP2 record carrying a build id instead of the inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// PERF_RECORD_MISC_BUILD_ID_SIZE: a build-id record whose id length is in the byte after it.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

fn bad(message: impl Into<String>) -> ProfileError {
    ProfileError::NoData(message.into())
}

/// The parsed container: byte order, attributes, where the records are, header facts.
struct Container<'a> {
    b: Bytes<'a>,
    attrs: Vec<Attr>,
    /// Byte range of the record stream.
    data: (u64, u64),
    header: PerfDataHeader,
    notes: Vec<String>,
}

fn parse_container(bytes: &[u8]) -> Result<Container<'_>, ProfileError> {
    if bytes.len() < 16 {
        return Err(bad(format!(
            "{} bytes: too short for a perf.data header",
            bytes.len()
        )));
    }
    let big = match &bytes[..8] {
        m if m == MAGIC_LE => false,
        m if m == MAGIC_BE => true,
        b"PERFFILE" => {
            return Err(bad(
                "perf.data version 1 (PERFFILE magic, perf before 2.6.38) is not supported",
            ));
        }
        _ => {
            return Err(bad(
                "not a perf.data file (no PERFILE2 magic); for perf report text use --c2c, --perf-script or --perf-typeoff",
            ));
        }
    };
    let b = Bytes { data: bytes, big };
    let header_size = b.u64(8).unwrap_or(0);
    let mut c = Container {
        b,
        attrs: Vec::new(),
        data: (16, bytes.len() as u64),
        header: PerfDataHeader {
            big_endian: big,
            ..Default::default()
        },
        notes: Vec::new(),
    };
    if header_size == 16 {
        // Pipe mode: attributes and features arrive as records.
        c.header.pipe_mode = true;
        return Ok(c);
    }
    const FILE_HEADER: u64 = 104;
    if header_size < FILE_HEADER || (bytes.len() as u64) < FILE_HEADER {
        return Err(bad(format!(
            "perf.data header size {header_size} (expected 104, or 16 for pipe mode): damaged or truncated file"
        )));
    }
    let len = bytes.len() as u64;
    let section = |at: u64, what: &str| -> Result<(u64, u64), ProfileError> {
        let off = b.u64(at).unwrap_or(u64::MAX);
        let size = b.u64(at + 8).unwrap_or(u64::MAX);
        match off.checked_add(size) {
            Some(end) if end <= len => Ok((off, size)),
            _ => Err(bad(format!(
                "{what} section (offset {off}, {size} bytes) lies beyond the end of the {len}-byte file: truncated?"
            ))),
        }
    };
    let attr_size = b.u64(16).unwrap_or(0);
    let attrs = section(24, "attribute")?;
    let data_off = b.u64(40).unwrap_or(0);
    let data_size = b.u64(48).unwrap_or(0);
    let data = if data_size == 0 && data_off >= FILE_HEADER && data_off <= len {
        // perf record killed before it wrote the header back: the records run to the end.
        c.notes.push(
            "the header's data size is 0 (perf record not properly terminated?): read the records to the end of the file"
                .into(),
        );
        (data_off, len - data_off)
    } else {
        section(40, "data")?
    };
    c.data = (data.0, data.0 + data.1);
    // Attributes: perf_event_attr (attr_size - 16 bytes) then the file section of its ids.
    if !(16 + 40..=4096).contains(&attr_size) {
        return Err(bad(format!(
            "attribute size {attr_size} is not a perf_event_attr plus its id section"
        )));
    }
    if attrs.1 == 0 || attrs.1 % attr_size != 0 {
        return Err(bad(format!(
            "attribute section of {} bytes does not hold whole {attr_size}-byte attributes",
            attrs.1
        )));
    }
    for i in 0..attrs.1 / attr_size {
        let at = attrs.0 + i * attr_size;
        let mut attr = Attr::parse(b, at, attr_size - 16)
            .ok_or_else(|| bad(format!("attribute {i} cannot be read")))?;
        let (ids_off, ids_size) = section(at + attr_size - 16, "sample id")?;
        attr.ids = (0..ids_size / 8)
            .filter_map(|k| b.u64(ids_off + 8 * k))
            .collect();
        c.attrs.push(attr);
    }
    // Features: one file section each, in bit order, right after the data.
    let mut features = Vec::new();
    for word in 0..4u64 {
        let bits = b.u64(72 + 8 * word).unwrap_or(0);
        for bit in 0..64u32 {
            if bits & (1 << bit) != 0 {
                features.push(word as u32 * 64 + bit);
            }
        }
    }
    let table = data.0 + data.1;
    for (k, feat) in features.into_iter().enumerate() {
        let Ok((off, size)) = section(table + 16 * k as u64, "feature") else {
            c.notes.push(format!(
                "feature {feat} and later: section table damaged, header facts skipped"
            ));
            break;
        };
        if let Some(body) = b.slice(off, size) {
            read_feature(&mut c, feat, body);
        }
    }
    Ok(c)
}

/// `struct perf_header_string`: u32 length, then that many bytes, NUL-padded.
fn header_string(b: Bytes, at: &mut u64) -> Option<String> {
    let len = u64::from(b.u32(*at)?);
    let s = c_string(b.get(*at + 4, len)?);
    *at += 4 + len;
    Some(s)
}

fn read_feature(c: &mut Container, feat: u32, body: Bytes) {
    let h = &mut c.header;
    let one = |body: Bytes| header_string(body, &mut 0);
    match feat {
        FEAT_HOSTNAME => h.hostname = one(body),
        FEAT_OSRELEASE => h.os_release = one(body),
        FEAT_VERSION => h.perf_version = one(body),
        FEAT_ARCH => h.arch = one(body),
        FEAT_CPUDESC => h.cpu_desc = one(body),
        FEAT_NRCPUS => h.cpus_online = body.u32(0),
        FEAT_CMDLINE => {
            let mut at = 4;
            let n = body.u32(0).unwrap_or(0);
            let mut args = Vec::new();
            for _ in 0..n {
                match header_string(body, &mut at) {
                    Some(s) => args.push(s),
                    None => break,
                }
            }
            h.cmdline = Some(args);
        }
        FEAT_EVENT_DESC => {
            // u32 nr, u32 attr_size, then per event: attr, u32 nr_ids, string, u64 ids[].
            let nr = body.u32(0).unwrap_or(0);
            let attr_size = u64::from(body.u32(4).unwrap_or(0));
            let mut at = 8u64;
            let mut names = Vec::new();
            for _ in 0..nr {
                let Some(nr_ids) = body.u32(at + attr_size) else {
                    break;
                };
                at += attr_size + 4;
                let Some(name) = header_string(body, &mut at) else {
                    break;
                };
                names.push(name);
                at += 8 * u64::from(nr_ids);
            }
            h.event_names = names;
        }
        FEAT_BUILD_ID => {
            // build_id_event records: header, pid, build_id[24], file name.
            let mut at = 0u64;
            while let (Some(size), Some(misc)) = (body.u16(at + 6), body.u16(at + 4)) {
                let size = u64::from(size);
                if size < 8 + 4 + 24 {
                    break;
                }
                let Some(id) = body.get(at + 12, 20) else {
                    break;
                };
                let id_len = if misc & MISC_BUILD_ID_SIZE != 0 {
                    body.get(at + 32, 1)
                        .map_or(20, |b| usize::from(b[0]).min(20))
                } else {
                    20
                };
                let name = body.get(at + 36, size - 36).map(c_string);
                if let Some(name) = name {
                    h.build_ids.push((name, hex_string(&id[..id_len])));
                }
                at += size;
            }
        }
        _ => {}
    }
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads only the header facts (host, OS release, perf version, events), for a caller that
/// wants to choose a kallsyms before importing.
pub fn read_header(bytes: &[u8]) -> Result<PerfDataHeader, ProfileError> {
    let mut c = parse_container(bytes)?;
    if c.header.pipe_mode {
        // The features are records among the others; a damaged record ends the search (the
        // import proper reports it).
        let (b, (start, end)) = (c.b, c.data);
        let mut found = Vec::new();
        let _ = walk_records(b, start, end, |_, ty, _, body| {
            if ty == RECORD_HEADER_FEATURE {
                found.push(body);
            }
            Ok(())
        });
        for body in found {
            pipe_feature(&mut c, body);
        }
    }
    Ok(c.header)
}

/// PERF_RECORD_HEADER_FEATURE: u64 feature id, then the feature's body.
fn pipe_feature(c: &mut Container, body: Bytes) {
    let rest = (body.data.len() as u64).saturating_sub(8);
    if let (Some(feat), Some(rest)) = (body.u64(0), body.slice(8, rest)) {
        read_feature(c, feat.min(u64::from(u32::MAX)) as u32, rest);
    }
}

// ---------------------------------------------------------------------------------------
// Address spaces: MMAP/MMAP2/FORK records, ELF symbols, kallsyms
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Map {
    start: u64,
    len: u64,
    pgoff: u64,
    path: String,
    build_id: Option<String>,
}

#[derive(Default)]
struct Spaces {
    /// Maps per pid, in file order (the last one covering an address wins).
    user: HashMap<i32, Vec<Map>>,
    kernel: Vec<Map>,
    parent: HashMap<i32, i32>,
    comm: HashMap<i32, String>,
}

impl Spaces {
    fn find(&self, pid: Option<i32>, ip: u64, kernel: bool) -> Option<&Map> {
        let covers = |m: &&Map| ip >= m.start && ip - m.start < m.len;
        if kernel {
            return self.kernel.iter().rev().find(covers);
        }
        let mut pid = pid?;
        // Follow forks up to the parent that mapped the code (bounded against cycles).
        for _ in 0..64 {
            if let Some(m) = self
                .user
                .get(&pid)
                .and_then(|v| v.iter().rev().find(covers))
            {
                return Some(m);
            }
            pid = *self.parent.get(&pid)?;
        }
        None
    }
}

#[derive(Clone, Debug)]
struct Sym {
    addr: u64,
    size: u64,
    name: String,
    global: bool,
    weak: bool,
}

/// Which of two symbols at one address perf names (`choose_best_symbol` in
/// tools/perf/util/symbol.c): one with a size, not weak, global, fewer leading
/// underscores, the longer name.
fn better(a: &Sym, b: &Sym) -> bool {
    if (a.size > 0) != (b.size > 0) {
        return a.size > 0;
    }
    if a.weak != b.weak {
        return !a.weak;
    }
    if a.global != b.global {
        return a.global;
    }
    let us = |s: &Sym| s.name.bytes().take_while(|&c| c == b'_').count();
    if us(a) != us(b) {
        return us(a) < us(b);
    }
    a.name.len() > b.name.len()
}

/// Symbols sorted by address, one per address (perf's choice among aliases).
#[derive(Default)]
struct SymTable {
    syms: Vec<Sym>,
}

impl SymTable {
    fn new(mut syms: Vec<Sym>) -> Self {
        syms.sort_by_key(|s| s.addr);
        let mut out: Vec<Sym> = Vec::with_capacity(syms.len());
        for s in syms {
            match out.last_mut() {
                Some(last) if last.addr == s.addr => {
                    if better(&s, last) {
                        *last = s;
                    }
                }
                _ => out.push(s),
            }
        }
        // A symbol without a size ends where the next begins (as perf's symbols__fixup_end).
        let next: Vec<u64> = out.iter().skip(1).map(|s| s.addr).collect();
        for (s, next) in out.iter_mut().zip(next.into_iter().map(Some).chain([None])) {
            if s.size == 0 {
                s.size = next.map_or(0, |n| n - s.addr);
            }
        }
        SymTable { syms: out }
    }

    fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.addr <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr - s.addr < s.size.max(1)).then(|| (s.name.as_str(), addr - s.addr))
    }
}

/// kallsyms text (`ffffffff81000000 T _text`): the text symbols, when the addresses are real
/// (a reader without privilege sees zeros).
fn parse_kallsyms(text: &str) -> Option<SymTable> {
    let mut syms = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if !matches!(kind, "T" | "t" | "W" | "w") {
            continue;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        syms.push(Sym {
            addr,
            size: 0,
            name: name.to_string(),
            global: kind == "T",
            weak: kind == "W" || kind == "w",
        });
    }
    (syms.iter().any(|s| s.addr != 0)).then(|| SymTable::new(syms))
}

/// Functions, and code labels (untyped, sizeless symbols in an executable section such as
/// ld.so's `_start`), as perf's `elf_sym__is_function` / `elf_sym__is_label` keep them.
fn text_symbols<'d>(
    obj: &object::File<'d>,
    it: &mut dyn Iterator<Item = object::Symbol<'d, '_>>,
) -> Vec<Sym> {
    it.filter(|s| {
        s.address() != 0
            && match s.kind() {
                object::SymbolKind::Text => true,
                object::SymbolKind::Unknown => {
                    s.size() == 0
                        && s.section_index()
                            .and_then(|i| obj.section_by_index(i).ok())
                            // By flag: a separate debug file keeps the section as NOBITS.
                            .is_some_and(|sec| {
                                matches!(sec.flags(), object::SectionFlags::Elf { sh_flags, .. }
                                    if sh_flags.contains(object::elf::SHF_EXECINSTR))
                            })
                }
                _ => false,
            }
    })
    .filter_map(|s| {
        let name = s.name().ok()?;
        (!name.is_empty()).then(|| Sym {
            addr: s.address(),
            size: s.size(),
            name: name.to_string(),
            global: s.is_global() && !s.is_weak(),
            weak: s.is_weak(),
        })
    })
    .collect()
}

/// One symbol per PLT entry, named `function@plt` after its `.rela.plt` relocation (`@plt`
/// when the relocation names no symbol, an IRELATIVE one), as perf's
/// `dso__synthesize_plt_symbols` does: entry k + 1 of `.plt` (after the 16-byte header)
/// belongs to relocation k. x86-64 layout; other machines get none.
fn plt_symbols(obj: &object::File) -> Vec<Sym> {
    use object::ObjectSymbolTable;
    if obj.architecture() != object::Architecture::X86_64 {
        return Vec::new();
    }
    let (Some(plt), Some(rela)) = (
        obj.section_by_name(".plt"),
        obj.section_by_name(".rela.plt"),
    ) else {
        return Vec::new();
    };
    let Ok(data) = rela.data() else {
        return Vec::new();
    };
    let dynsym = obj.dynamic_symbol_table();
    const ENTRY: u64 = 16;
    let b = Bytes {
        data,
        big: !obj.is_little_endian(),
    };
    let mut out = Vec::new();
    for k in 0..data.len() as u64 / 24 {
        let Some(info) = b.u64(24 * k + 8) else { break };
        let addr = plt.address() + ENTRY * (k + 1);
        if addr + ENTRY > plt.address() + plt.size() {
            break;
        }
        let name = dynsym
            .as_ref()
            .and_then(|t| {
                t.symbol_by_index(object::SymbolIndex((info >> 32) as usize))
                    .ok()
            })
            .and_then(|sym| sym.name().ok().map(str::to_string))
            .filter(|n| !n.is_empty() && (info >> 32) != 0)
            .unwrap_or_default();
        out.push(Sym {
            addr,
            size: ENTRY,
            name: format!("{name}@plt"),
            global: true,
            weak: false,
        });
    }
    out
}

/// One ELF file's loadable segments (file offset → address) and text symbols.
struct ElfSyms {
    segments: Vec<(u64, u64, u64)>,
    table: SymTable,
}

impl ElfSyms {
    fn load(path: &str, want_build_id: Option<&str>) -> Result<ElfSyms, String> {
        // The file's name comes from the recording: a FIFO there would block the open, a
        // device would be read without end. Only regular files hold symbols.
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Err(format!("{path}: not a regular file"));
        }
        let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        // SAFETY: read-only private mapping; a file changed underneath gives wrong symbols
        // (the build id check guards the common case), not unsoundness in practice.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{path}: {e}"))?;
        let obj = object::File::parse(&*map).map_err(|e| format!("{path}: {e}"))?;
        if let (Some(want), Ok(Some(have))) = (want_build_id, obj.build_id()) {
            let have = hex_string(have);
            if !want.starts_with(&have) && !have.starts_with(want) {
                return Err(format!(
                    "{path}: build id {have} differs from the recorded {want}"
                ));
            }
        }
        // Distributions ship the full symbol table apart, found by build id
        // (/usr/lib/debug/.build-id/ab/cdef….debug); perf reads it when it is there.
        let id = obj.build_id().ok().flatten().map(hex_string);
        let debug = id
            .filter(|id| id.len() > 2)
            .map(|id| format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]))
            .and_then(|p| std::fs::File::open(p).ok())
            // SAFETY: as above.
            .and_then(|f| unsafe { memmap2::Mmap::map(&f) }.ok());
        let debug_obj = debug.as_ref().and_then(|m| object::File::parse(&**m).ok());
        let segments = obj
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        // perf reads .symtab when there is one, else .dynsym.
        let mut syms = debug_obj
            .as_ref()
            .map(|d| text_symbols(d, &mut d.symbols()))
            .unwrap_or_default();
        if syms.is_empty() {
            syms = text_symbols(&obj, &mut obj.symbols());
        }
        if syms.is_empty() {
            syms = text_symbols(&obj, &mut obj.dynamic_symbols());
        }
        syms.extend(plt_symbols(&obj));
        Ok(ElfSyms {
            segments,
            table: SymTable::new(syms),
        })
    }

    fn lookup(&self, file_offset: u64) -> Option<(&str, u64)> {
        let &(off, _, vaddr) = self
            .segments
            .iter()
            .find(|&&(off, size, _)| file_offset >= off && file_offset - off < size)?;
        self.table.lookup(file_offset - off + vaddr)
    }
}

struct Symbolizer {
    enabled: bool,
    kallsyms: Option<SymTable>,
    elves: HashMap<String, Option<ElfSyms>>,
    problems: BTreeSet<String>,
    build_ids: HashMap<String, String>,
}

impl Symbolizer {
    fn code(&mut self, spaces: &Spaces, s: &Sample) -> CodeLocation {
        let ip = s.ip.unwrap_or(0);
        let privilege = match s.cpumode {
            1 => Some(Privilege::Kernel),
            2 => Some(Privilege::User),
            3 => Some(Privilege::Hypervisor),
            4 => Some(Privilege::GuestKernel),
            5 => Some(Privilege::GuestUser),
            _ => None,
        };
        let mut code = CodeLocation {
            address: s.ip,
            privilege,
            ..Default::default()
        };
        if s.ip.is_none() {
            return code;
        }
        let kernel = s.cpumode == 1;
        let map = spaces.find(s.pid, ip, kernel);
        if let Some(m) = map {
            code.object = Some(display_object(&m.path).into());
        }
        if !self.enabled {
            return code;
        }
        if kernel {
            // Modules too: kallsyms lists their symbols with the kernel's.
            if let Some((name, off)) = self.kallsyms.as_ref().and_then(|k| k.lookup(ip)) {
                code.symbol = Some(name.into());
                code.symbol_offset = Some(off);
            }
            return code;
        }
        let Some(m) = map else { return code };
        if !m.path.starts_with('/') {
            return code; // [vdso], [heap], //anon
        }
        let want = m
            .build_id
            .clone()
            .or_else(|| self.build_ids.get(&m.path).cloned());
        let elf = self.elves.entry(m.path.clone()).or_insert_with(|| {
            match ElfSyms::load(&m.path, want.as_deref()) {
                Ok(e) => Some(e),
                Err(e) => {
                    self.problems.insert(e);
                    None
                }
            }
        });
        if let Some((name, off)) = elf.as_ref().and_then(|e| e.lookup(ip - m.start + m.pgoff)) {
            code.symbol = Some(name.into());
            code.symbol_offset = Some(off);
        }
        code
    }
}

/// `[kernel.kallsyms]_text` → `[kernel.kallsyms]`, as perf names the kernel's map.
fn display_object(path: &str) -> String {
    match path.strip_prefix("[kernel.kallsyms]") {
        Some(_) => "[kernel.kallsyms]".to_string(),
        None => path.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The import
// ---------------------------------------------------------------------------------------

/// Reads a perf.data file's memory samples into one profile of raw cache lines.
/// `progress(done, total)` is called now and then with bytes of the record stream read.
pub fn import_perf_data(
    bytes: &[u8],
    opts: &PerfDataOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Profile, ProfileError> {
    let cls = opts.cacheline_size;
    if !cls.is_power_of_two() {
        return Err(ProfileError::Option(format!(
            "cache line size {cls} is not a power of two"
        )));
    }
    let mut c = parse_container(bytes)?;
    let b = c.b;
    let (start, end) = c.data;
    let total = end - start;

    // Pass 1: the address spaces (and, in pipe mode, attributes and features), so that a
    // sample written before its map's record is still symbolized.
    let mut spaces = Spaces::default();
    let mut aux_records = 0u64;
    walk_records(b, start, end, |at, ty, misc, body| {
        match ty {
            RECORD_MMAP | RECORD_MMAP2 => {
                if let Some((pid, map)) = parse_mmap(body, ty, misc) {
                    if misc & 7 == 1 || pid == -1 {
                        spaces.kernel.push(map);
                    } else {
                        spaces.user.entry(pid).or_default().push(map);
                    }
                }
            }
            RECORD_FORK => {
                if let (Some(pid), Some(ppid)) = (body.u32(0), body.u32(4)) {
                    let (pid, ppid) = (pid as i32, ppid as i32);
                    if pid != ppid {
                        spaces.parent.insert(pid, ppid);
                    }
                }
            }
            RECORD_COMM => {
                let rest = (body.data.len() as u64).saturating_sub(8);
                if let (Some(pid), Some(name)) = (body.u32(0), body.get(8, rest)) {
                    spaces.comm.insert(pid as i32, c_string(name));
                }
            }
            RECORD_HEADER_ATTR if c.header.pipe_mode => {
                let size = u64::from(body.u32(4).unwrap_or(0));
                let size = if size == 0 { 64 } else { size };
                let blen = body.data.len() as u64;
                if size <= blen
                    && let Some(mut attr) = Attr::parse(body, 0, size)
                {
                    attr.ids = (0..(blen - size) / 8)
                        .filter_map(|k| body.u64(size + 8 * k))
                        .collect();
                    c.attrs.push(attr);
                }
            }
            RECORD_HEADER_FEATURE if c.header.pipe_mode => pipe_feature(&mut c, body),
            RECORD_AUXTRACE => aux_records += 1,
            RECORD_COMPRESSED | RECORD_COMPRESSED2 => {
                return Err(bad(format!(
                    "record at byte {at} is zstd-compressed (perf record -z): write an uncompressed copy with `perf inject -i FILE -o COPY` and read that"
                )));
            }
            _ => {}
        }
        Ok(())
    })?;
    if c.attrs.is_empty() {
        return Err(bad("no event attributes: damaged perf.data header"));
    }
    for (i, attr) in c.attrs.iter_mut().enumerate() {
        attr.name = Some(
            c.header
                .event_names
                .get(i)
                .cloned()
                .unwrap_or_else(|| attr.fallback_name()),
        );
        if attr.sample_type & !SAMPLE_KNOWN != 0 {
            return Err(bad(format!(
                "event {}: sample_type {:#x} has fields this reader does not know (bits {:#x})",
                attr.name.as_deref().unwrap_or("?"),
                attr.sample_type,
                attr.sample_type & !SAMPLE_KNOWN
            )));
        }
    }
    let kinds: Vec<EventKind> = c
        .attrs
        .iter()
        .map(|a| match a.kind() {
            EventKind::NotMemory(_) if !opts.memory_only => EventKind::Memory,
            k => k,
        })
        .collect();
    if !kinds.iter().any(|k| !matches!(k, EventKind::NotMemory(_))) {
        return Err(not_memory(&c.attrs, &kinds));
    }
    let id_to_attr: HashMap<u64, usize> = c
        .attrs
        .iter()
        .enumerate()
        .flat_map(|(i, a)| a.ids.iter().map(move |&id| (id, i)))
        .collect();
    // With several events, every sample starts with (IDENTIFIER) or holds (ID) its event's id
    // at the same place; perf requires that of the events it records together.
    let id_at = if c.attrs.len() > 1 {
        let at = c.attrs[0].id_offset().ok_or_else(|| {
            bad("several events but samples carry no event id (neither IDENTIFIER nor ID)")
        })?;
        Some(at)
    } else {
        None
    };

    let mut sym = Symbolizer {
        enabled: opts.symbolize,
        kallsyms: opts.kallsyms.as_deref().and_then(parse_kallsyms),
        elves: HashMap::new(),
        problems: BTreeSet::new(),
        build_ids: c.header.build_ids.iter().cloned().collect(),
    };
    let mut stats = C2cStats::default();
    let mut per_event: BTreeMap<usize, u64> = BTreeMap::new();
    let mut agg: BTreeMap<(u64, u64, Option<u64>), Acc> = BTreeMap::new();
    let (mut samples, mut no_addr, mut unknown_id, mut short) = (0u64, 0u64, 0u64, 0u64);
    let mut skipped: BTreeMap<usize, u64> = BTreeMap::new();
    let mut has_src = false;
    let mut code_cache: HashMap<(Option<i32>, u64, u16), CodeLocation> = HashMap::new();
    let mut last_report = 0u64;
    walk_records(b, start, end, |at, ty, misc, body| {
        if at - last_report > (8 << 20) {
            last_report = at;
            progress(at - start, total);
        }
        if ty != RECORD_SAMPLE {
            return Ok(());
        }
        samples += 1;
        let ai = match id_at {
            None => 0,
            Some(off) => match body.u64(off).and_then(|id| id_to_attr.get(&id)) {
                Some(&i) => i,
                None => {
                    unknown_id += 1;
                    return Ok(());
                }
            },
        };
        let attr = &c.attrs[ai];
        if matches!(kinds[ai], EventKind::NotMemory(_)) {
            *skipped.entry(ai).or_default() += 1;
            return Ok(());
        }
        let Some(s) = decode_sample(body, attr, misc) else {
            short += 1;
            return Ok(());
        };
        *per_event.entry(ai).or_default() += 1;
        let src = DataSource::from_bits(s.data_src.unwrap_or(0));
        let (addr, class) = match &kinds[ai] {
            EventKind::Breakpoint { access, addr, .. } => {
                // The watched address, where the sample does not carry it; c2c's table counts
                // the sample as perf c2c does (no data source: not parsed), the profile as
                // the access the breakpoint's type says.
                let addr = s.addr.filter(|&a| a != 0).unwrap_or(*addr);
                stats.add(&src, addr);
                // A read-write hit is counted once the whole file is read (see `split`).
                let class = SampleClass {
                    load: *access == BreakpointAccess::Load,
                    store: *access == BreakpointAccess::Store,
                    ..Default::default()
                };
                (addr, class)
            }
            _ => {
                has_src |= s.data_src.is_some();
                let addr = s.addr.unwrap_or(0);
                (addr, stats.add(&src, addr))
            }
        };
        if addr == 0 {
            no_addr += 1;
            return Ok(());
        }
        let line = addr - addr % cls;
        let key = (line, addr - line, s.ip);
        let acc = agg.entry(key).or_default();
        if acc.code.is_none() {
            let ck = (
                (s.cpumode != 1).then_some(s.pid).flatten(),
                s.ip.unwrap_or(0),
                s.cpumode,
            );
            let code = code_cache
                .entry(ck)
                .or_insert_with(|| sym.code(&spaces, &s))
                .clone();
            acc.code = Some(code);
        }
        acc.add(&s, &class, &src, &spaces);
        match kinds[ai] {
            EventKind::Breakpoint {
                access: BreakpointAccess::LoadOrStore,
                ..
            } => acc.bp_rw += 1.0,
            EventKind::Breakpoint {
                access: BreakpointAccess::Store,
                ..
            } => acc.bp_w += 1.0,
            _ => {}
        }
        Ok(())
    })?;
    progress(total, total);

    if samples == 0 {
        let why = if aux_records > 0 {
            format!(
                "no samples, but {aux_records} AUX trace records (Arm SPE or Intel PT): lineup does not decode AUX data; use the text of `perf c2c report --stdio` (--c2c) or `perf script` (--perf-script)"
            )
        } else {
            "no samples in the file".to_string()
        };
        return Err(bad(why));
    }
    if per_event.is_empty() && !skipped.is_empty() {
        let only: Vec<EventKind> = (0..c.attrs.len())
            .map(|i| {
                if skipped.contains_key(&i) {
                    c.attrs[i].kind()
                } else {
                    EventKind::Memory
                }
            })
            .collect();
        return Err(not_memory(&c.attrs, &only));
    }
    if short == samples {
        return Err(bad(format!(
            "none of the {samples} samples is as long as its sample_type {:#x} says: damaged file or unsupported layout",
            c.attrs[0].sample_type
        )));
    }

    let mut profile = Profile::new("perf.data", Unit::Samples, cls);
    let h = &c.header;
    let prov = &mut profile.provenance;
    prov.tool_version = h.perf_version.clone();
    prov.command = h.cmdline.as_ref().map(|v| v.join(" "));
    prov.machine.cpus = h.cpus_online;
    prov.machine.description = h.cpu_desc.clone();
    prov.machine.cacheline_size = None;
    for (i, a) in c.attrs.iter().enumerate() {
        if per_event.contains_key(&i) {
            prov.events.extend(a.name.clone());
        }
    }
    for (k, v) in [
        ("hostname", &h.hostname),
        ("os_release", &h.os_release),
        ("arch", &h.arch),
    ] {
        if let Some(v) = v {
            prov.settings.insert(k.to_string(), v.clone());
        }
    }
    if h.big_endian {
        prov.settings
            .insert("byte_order".into(), "big-endian".into());
    }
    if h.pipe_mode {
        prov.settings.insert("pipe_mode".into(), "yes".into());
    }
    for (path, id) in &h.build_ids {
        prov.settings.insert(format!("build_id {path}"), id.clone());
    }
    // Read-write breakpoint hits: loads where a write breakpoint on the same bytes counted
    // the stores (per instruction, hits of both minus hits of the write one), else
    // read-modify-writes (the hardware does not say which).
    let split: BTreeSet<(u64, u64)> = kinds
        .iter()
        .filter_map(|k| match k {
            EventKind::Breakpoint {
                access: BreakpointAccess::Store,
                addr,
                len,
            } => Some((*addr, *len)),
            _ => None,
        })
        .filter(|w| {
            kinds.iter().any(|k| {
                matches!(k, EventKind::Breakpoint { access: BreakpointAccess::LoadOrStore, addr, len } if (*addr, *len) == *w)
            })
        })
        .collect();
    let split_at: BTreeSet<u64> = split.iter().map(|r| r.0).collect();
    let mut notes = c.notes.clone();
    for (&i, n) in &skipped {
        notes.push(format!(
            "{n} samples of {} left out: not memory accesses",
            c.attrs[i].name.as_deref().unwrap_or("?")
        ));
    }
    for (&i, n) in &per_event {
        if let EventKind::Breakpoint { access, addr, len } = &kinds[i] {
            let what = match access {
                BreakpointAccess::Load => "a load",
                BreakpointAccess::Store => "a store",
                BreakpointAccess::LoadOrStore if split.iter().any(|r| r.0 == *addr) => {
                    "a load or a store (loads: its hits less the write breakpoint's on the same bytes, per instruction)"
                }
                BreakpointAccess::LoadOrStore => {
                    "a load or a store (a read-write breakpoint does not say which: counted as read-modify-writes; add a :w breakpoint on the same bytes to split them)"
                }
            };
            notes.push(format!(
                "{n} samples of hardware breakpoint {}: each {what} to {addr:#x}..{:#x}, at the breakpoint's address (x86 reports the instruction after the access)",
                c.attrs[i].name.as_deref().unwrap_or("?"),
                addr.saturating_add(*len)
            ));
        }
    }
    if !has_src && per_event.keys().any(|&i| kinds[i] == EventKind::Memory) {
        notes.push(
            "the samples carry no data source (not perf mem/c2c events): accesses are counted as samples only, without load/store or HITM classes"
                .into(),
        );
    }
    if !sym.problems.is_empty() {
        notes.push(format!(
            "not symbolized: {}",
            sym.problems.iter().cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    if opts.symbolize && sym.kallsyms.is_none() && agg.values().any(|a| a.kernel) {
        notes.push("kernel addresses left raw: no kallsyms of the recording kernel".into());
    }
    if !notes.is_empty() {
        prov.note = Some(notes.join("; "));
    }
    profile
        .summary
        .insert("trace_events".into(), stats.trace_events());
    profile.summary.insert(
        "perf_data".into(),
        BTreeMap::from([
            ("samples".to_string(), samples as f64),
            ("samples_without_address".to_string(), no_addr as f64),
            (
                "samples_with_unknown_event_id".to_string(),
                unknown_id as f64,
            ),
            ("samples_truncated".to_string(), short as f64),
        ]),
    );

    let mut lines: BTreeMap<u64, LineProfile> = BTreeMap::new();
    for ((line, offset, _), mut acc) in agg {
        if acc.bp_rw > 0.0 {
            if split_at.contains(&(line + offset)) {
                acc.counts.loads += (acc.bp_rw - acc.bp_w).max(0.0);
            } else {
                acc.counts.rmw += acc.bp_rw;
            }
        }
        let l = lines.entry(line).or_insert_with(|| LineProfile {
            address: line,
            totals: Some(Counts::default()),
            ..Default::default()
        });
        for (k, v) in &acc.line_details {
            l.details.add(*k, *v);
        }
        if let Some(pa) = acc.phys_line(cls) {
            l.details.get_or_insert("phys_addr", pa as f64);
        }
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

/// The one line that refuses a file whose sampled events are not memory accesses, naming
/// each such event and why.
fn not_memory(attrs: &[Attr], kinds: &[EventKind]) -> ProfileError {
    let why: Vec<String> = attrs
        .iter()
        .zip(kinds)
        .filter_map(|(a, k)| match k {
            EventKind::NotMemory(reason) => Some(format!(
                "event '{}' is {reason}",
                a.name.as_deref().unwrap_or("?")
            )),
            _ => None,
        })
        .collect();
    ProfileError::NoData(format!(
        "not memory-access evidence: {}; record loads and stores instead (perf mem record, perf c2c record, or a data breakpoint: perf record -e mem:ADDR/LEN:w)",
        why.join("; ")
    ))
}

/// Calls `f(offset, type, misc, body)` for each record of the stream, in file order. A
/// record whose size is impossible ends the walk with an error naming its offset.
fn walk_records<'a>(
    b: Bytes<'a>,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, u32, u16, Bytes<'a>) -> Result<(), ProfileError>,
) -> Result<(), ProfileError> {
    let mut at = start;
    while at < end {
        let (Some(ty), Some(misc), Some(size)) = (b.u32(at), b.u16(at + 4), b.u16(at + 6)) else {
            return Err(bad(format!(
                "record at byte {at}: header cut off by the end of the file (truncated?)"
            )));
        };
        let size = u64::from(size);
        if size < 8 {
            return Err(bad(format!(
                "record at byte {at} has size {size} (less than its 8-byte header): damaged data"
            )));
        }
        let Some(body) = b.slice(at + 8, size - 8).filter(|_| at + size <= end) else {
            return Err(bad(format!(
                "record at byte {at} ({size} bytes) runs past the end of the data (truncated?)"
            )));
        };
        f(at, ty, misc, body)?;
        at += size;
        if ty == RECORD_AUXTRACE {
            // The trace bytes follow the record, outside its size.
            let aux = body.u64(0).unwrap_or(0);
            at = at.checked_add(aux).ok_or_else(|| {
                bad(format!(
                    "AUX trace record at byte {at} has an impossible size"
                ))
            })?;
        }
    }
    Ok(())
}

/// MMAP: pid, tid, start, len, pgoff, file name. MMAP2 adds the inode (or a build id) and
/// protection before the name.
fn parse_mmap(body: Bytes, ty: u32, misc: u16) -> Option<(i32, Map)> {
    let pid = body.u32(0)? as i32;
    let start = body.u64(8)?;
    let len = body.u64(16)?;
    let pgoff = body.u64(24)?;
    let (name_at, build_id) = if ty == RECORD_MMAP2 {
        let id = if misc & MISC_MMAP_BUILD_ID != 0 {
            let n = usize::from(body.get(32, 1)?[0]).min(20);
            Some(hex_string(&body.get(36, 20)?[..n]))
        } else {
            None
        };
        (32 + 24 + 8, id)
    } else {
        (32, None)
    };
    let rest = body.get(name_at, (body.data.len() as u64).checked_sub(name_at)?)?;
    Some((
        pid,
        Map {
            start,
            len,
            pgoff,
            path: c_string(rest),
            build_id,
        },
    ))
}

// ---------------------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------------------

/// Samples of one (line, offset, instruction).
#[derive(Default)]
struct Acc {
    samples: u64,
    counts: Counts,
    cpus: BTreeSet<u32>,
    tids: BTreeSet<i64>,
    pids: BTreeSet<i64>,
    comms: BTreeSet<String>,
    cycles: BTreeMap<&'static str, (f64, f64)>,
    code: Option<CodeLocation>,
    kernel: bool,
    phys: Option<u64>,
    /// c2c's per-line columns this access adds to.
    line_details: BTreeMap<&'static str, f64>,
    /// Hits of read-write and of write data breakpoints.
    bp_rw: f64,
    bp_w: f64,
}

impl Acc {
    fn add(&mut self, s: &Sample, class: &SampleClass, src: &DataSource, spaces: &Spaces) {
        self.samples += 1;
        self.kernel |= s.cpumode == 1;
        let c = &mut self.counts;
        let reads = class.load;
        if class.locked && (class.load || class.store) {
            c.rmw += 1.0;
        } else if class.load {
            c.loads += 1.0;
        } else if class.store {
            c.stores += 1.0;
        }
        let hitm_or_peer = [
            (class.lcl_hitm, &mut c.lcl_hitm, "lcl_hitm"),
            (class.rmt_hitm, &mut c.rmt_hitm, "rmt_hitm"),
            (class.lcl_peer, &mut c.lcl_peer, "lcl_peer"),
            (class.rmt_peer, &mut c.rmt_peer, "rmt_peer"),
        ];
        let mut kind = reads.then_some("load");
        for (hit, count, name) in hitm_or_peer {
            if hit {
                *count += 1.0;
                if kind == Some("load") {
                    kind = Some(name);
                }
            }
        }
        if let (Some(kind), Some(w)) = (kind, s.weight.filter(|&w| w > 0)) {
            let e = self.cycles.entry(kind).or_default();
            e.0 += w as f64;
            e.1 += 1.0;
        }
        *self.line_details.entry("records").or_default() += 1.0;
        let lvl = src.lvl;
        let mut bump = |k: &'static str| *self.line_details.entry(k).or_default() += 1.0;
        if class.store {
            if lvl & MEM_LVL_HIT != 0 && lvl & MEM_LVL_L1 != 0 {
                bump("st_l1hit");
            }
            if lvl & MEM_LVL_MISS != 0 && lvl & MEM_LVL_L1 != 0 {
                bump("st_l1miss");
            }
            if lvl & MEM_LVL_NA != 0 {
                bump("st_na");
            }
        } else if class.load && lvl & MEM_LVL_HIT != 0 {
            if lvl & MEM_LVL_LFB != 0 {
                bump("ld_fbhit");
            }
            if lvl & MEM_LVL_L1 != 0 {
                bump("ld_l1hit");
            }
            if lvl & MEM_LVL_L2 != 0 {
                bump("ld_l2hit");
            }
            if lvl & MEM_LVL_L3 != 0 && src.snoop & MEM_SNOOP_HITM == 0 {
                bump("ld_llchit");
            }
            if lvl & MEM_LVL_LOC_RAM != 0 {
                bump("lcl_dram");
            }
            if lvl & (MEM_LVL_REM_RAM1 | MEM_LVL_REM_RAM2) != 0 {
                bump("rmt_dram");
            }
        }
        self.cpus.extend(s.cpu);
        self.tids.extend(s.tid.map(i64::from));
        self.pids.extend(s.pid.map(i64::from));
        if let Some(comm) = s.pid.and_then(|p| spaces.comm.get(&p)) {
            self.comms.insert(comm.clone());
        }
        if self.phys.is_none() {
            self.phys = s.phys_addr.filter(|&p| p != 0);
        }
    }

    fn phys_line(&self, cls: u64) -> Option<u64> {
        self.phys.map(|p| p - p % cls)
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
            code: self.code,
            details: Details::from([("samples", self.samples as f64)]),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording naming a FIFO as a mapped file: refused without opening it (the open
    /// would wait for a writer forever).
    #[test]
    fn symbols_are_read_only_from_regular_files() {
        let dir = std::env::temp_dir().join(format!("lineup-elfsyms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = ElfSyms::load(fifo.to_str().unwrap(), None).err().unwrap();
        assert!(e.ends_with(": not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn data_source_fields_sit_where_perf_event_h_puts_them() {
        // mem_op:5, mem_lvl:14, mem_snoop:5, mem_lock:2, mem_dtlb:7, mem_lvl_num:4,
        // mem_remote:1, mem_snoopx:2, mem_blk:3, mem_hops:3.
        let v = 0x2
            | (0x40 | 0x2) << 5
            | 0x10 << 19
            | 0x2 << 24
            | 0x3 << 33
            | 1 << 37
            | 0x2 << 38
            | 0x4 << 40
            | 0x1 << 43;
        let s = DataSource::from_bits(v);
        assert_eq!(
            (
                s.op, s.lvl, s.snoop, s.lock, s.lvl_num, s.remote, s.snoopx, s.blk, s.hops
            ),
            (0x2, 0x42, 0x10, 0x2, 0x3, true, 0x2, 0x4, 0x1)
        );
        assert_eq!(s.to_bits(), v);
    }

    #[test]
    fn remote_bit_with_hops_is_not_remote_memory() {
        // POWER marks another core of the same node with the remote bit and a hop count:
        // c2c's `mrem` excludes it, so a plain L1 hit stays a local L1 hit.
        let mut st = C2cStats::default();
        let src = DataSource {
            op: MEM_OP_LOAD,
            lvl: MEM_LVL_HIT | MEM_LVL_L1,
            remote: true,
            hops: 1,
            ..Default::default()
        };
        st.add(&src, 0x1000);
        assert_eq!((st.ld_l1hit, st.rmt_dram, st.rmt_hit), (1, 0, 0));
        let skylake = DataSource { hops: 0, ..src };
        st.add(&skylake, 0x1000);
        assert_eq!(st.rmt_dram, 1);
    }

    #[test]
    fn hint_only_for_perf_data_magic() {
        assert!(text_importer_hint(b"PERFILE2\x68\0\0\0").is_some());
        assert!(text_importer_hint(b"2ELIFREP").is_some());
        assert!(text_importer_hint(b"=====\n Trace Event").is_none());
    }
}
