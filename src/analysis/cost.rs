//! The cost model: what a layout costs on a machine, given who touches which bytes.
//!
//! The struct is cut into movable [`Unit`]s (top-level members; a run of bitfields sharing
//! storage and an inline anonymous struct or union move whole). The evidence becomes
//! [`Stream`]s: one code path's loads and writes to some bytes of one unit, from some number
//! of CPUs. A layout is a [`Placement`]: an offset per unit. The model, per cache line
//! (`docs/cost-model.md` says it in prose):
//!
//! - every write to the line (rate `W` in total) invalidates the other copies; between two
//!   writes the line's `N` CPUs make `X / W` accesses (`X`: all the line's accesses), so each
//!   CPU touches the line with probability `p = 1 - exp(-X / (W N))` and then misses once,
//!   whichever bytes it touches first; the writer itself does not miss: `w_a p (N - 1)` misses
//!   follow stream `a`'s writes. Of them, only the first on each NUMA node is a transfer; a
//!   later load there finds the line shared in the node's cache (an LLC hit);
//! - each of those misses lands on stream `b` with `b`'s share of the accesses; it is *true
//!   sharing* when `a` and `b` touch overlapping bytes (only splitting the data helps), else
//!   *false sharing* (moving the bytes apart removes it);
//! - a miss costs a modified-line transfer, local or remote by how far the CPUs spread
//!   ([`MachineModel::transfer_cycles`]);
//! - *locality*: each hot code path pays, per extra cache line it touches, an L2 hit per run
//!   ([`locality_price`]);
//! - accesses the evidence makes under one lock that is not a member of the struct
//!   ([`Stream::under_lock`]) are critical sections, run one after another: each section
//!   takes the lines it touches from the previous holder (a *hand-off*, [`Sharing::HandOff`]:
//!   true sharing, one transfer per section per line it touches, whichever bytes), never a
//!   false sharing between them, and such a line does not queue (the queue is at the lock).
//!
//! All rates are in the profile's unit (samples or events per second), so costs are
//! comparable between layouts of one profile, not across profiles.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::machine::MachineModel;
use crate::layout::Layout;
use crate::profile::{Access, CountSource};
use crate::types::Types;

/// What a code path pays per run for each cache line of the struct it touches beyond the
/// first: one L2 hit. A hot path's lines do not stay in L1 between its runs (the rest of the
/// program runs in between), and every line it needs is a load that waits; the merged
/// re-layouts of `tcp_sock`, `net_device` and `netns_ipv4` (Linux 6.8) gathered each fast
/// path's read-mostly fields for exactly this, 12 lines to 4-5 on the TCP paths.
pub fn locality_price(machine: &MachineModel) -> f64 {
    machine.l2_hit
}

/// Utilization assumed for the busiest line of the current layout when the evidence measured
/// no latencies: evidence is usually taken because a line is contended, so half-saturated.
pub const DEFAULT_UTILIZATION: f64 = 0.5;
/// No line is modeled beyond this utilization (the queue would be unbounded).
pub const MAX_UTILIZATION: f64 = 0.95;

/// Transfers of one line are served one at a time: a line that many CPUs want queues them.
/// A line's utilization is `utilization * cycles / reference`, with `cycles` its unqueued
/// transfer cycles (a line is busy as long as each transfer takes: a cross-socket one longer
/// than one within a socket) and `reference` those of the busiest line of the *current*
/// layout (so every candidate is measured against the same scale); each transfer costs
/// `1 / (1 - utilization)` times its latency (an M/M/1 queue's time in system).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Queueing {
    pub reference: f64,
    pub utilization: f64,
}

impl Queueing {
    /// No queueing: every transfer costs its latency.
    pub const NONE: Queueing = Queueing {
        reference: f64::INFINITY,
        utilization: 0.0,
    };

    pub fn factor(&self, cycles: f64) -> f64 {
        if self.reference.is_nan() || self.reference <= 0.0 || self.utilization <= 0.0 {
            return 1.0;
        }
        let rho = (self.utilization * cycles / self.reference).min(MAX_UTILIZATION);
        1.0 / (1.0 - rho)
    }

    /// Utilization of the busiest line from a measured mean transfer latency against the
    /// machine's unloaded one: `measured = nominal / (1 - u)`.
    pub fn utilization_from_latency(measured: f64, nominal: f64) -> f64 {
        if measured > nominal && nominal > 0.0 {
            (1.0 - nominal / measured).clamp(0.0, MAX_UTILIZATION)
        } else {
            0.0
        }
    }
}

/// One movable piece of the struct.
#[derive(Clone, Debug, Serialize)]
pub struct Unit {
    /// Member name; for a bitfield run or inline anonymous member, its names joined by `/`.
    pub name: String,
    /// Names of the members (`layout.members` entries) it holds.
    pub members: Vec<String>,
    /// Indices into the struct's direct members (`Composite::members`).
    #[serde(skip)]
    pub member_indices: Vec<usize>,
    pub offset: u64,
    pub size: u64,
    /// Alignment it needs: natural, or forced by an attribute the struct already has.
    pub align: u64,
    /// Alignment of its type alone, without attributes.
    pub natural_align: u64,
}

/// Loads and writes of one code path to some bytes of one unit.
#[derive(Clone, Debug, Serialize)]
pub struct Stream {
    pub unit: usize,
    /// Offset of the bytes within the unit.
    pub inner: u64,
    pub size: u64,
    /// Field touched (display name).
    pub field: String,
    /// Function or code path.
    pub path: String,
    pub reads: f64,
    /// Stores plus atomic read-modify-writes.
    pub writes: f64,
    /// Of `writes`, the atomic read-modify-writes.
    pub rmw: f64,
    /// Distinct CPUs (at least 1).
    pub cpus: u32,
    /// The CPUs themselves, when the evidence lists them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_list: Vec<u32>,
    /// The bytes are a lock (by the member's type: `spinlock_t`, `struct mutex`...): what
    /// its holders write next to it is written in one critical section with it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lock: bool,
    /// Its run (its code path, from CPUs that meet: [`path_runs`]) makes an atomic
    /// read-modify-write somewhere in the struct. An atomic is a full barrier that waits for its
    /// line (on a contended line, a transfer's time), so the run's other accesses are spread
    /// around it and another CPU can take a line between two of them (a ring's enqueue: the
    /// consumer's tail read, a compare-and-swap on the producer's head, the copy, the store to
    /// the producer's tail). A run without one issues its loads and plain stores to a line
    /// together: one touch of the line ([`touches_per_run`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub run_atomic: bool,
    /// The lock, not a member of the struct, that every access of the stream is made
    /// holding (a sketch's `under_lock`), where something under that lock writes the struct:
    /// the stream is part of that lock's critical sections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under_lock: Option<String>,
    /// What one run of its path costs, in cycles, where the evidence says
    /// ([`crate::profile::Access::cycles_per_run`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles_per_run: Option<f64>,
}

impl Stream {
    /// Plain stores: the writes that are not atomic read-modify-writes.
    pub fn stores(&self) -> f64 {
        (self.writes - self.rmw).max(0.0)
    }

    /// Bytes one access of the stream touches: its size, but one word for an atomic
    /// read-modify-write or a lock (a lock's debug and wait fields, the rest of a bitmap an
    /// atomic `set_bit` changes one word of, are not touched with it).
    pub fn touched(&self) -> u64 {
        if self.lock || self.rmw > 0.0 {
            self.size.clamp(1, 8)
        } else {
            self.size.max(1)
        }
    }

    /// The cache lines the stream's bytes lie on when its unit starts at `unit_offset`: a
    /// member that straddles a line boundary (Linux 3.8's `vm_rb` at offset 56) is on both,
    /// and a run that touches it fetches both. Bytes larger than a line (an embedded struct
    /// or an array a sketch names whole) are on their first line only: the evidence does not
    /// say which of their lines a run touches, and a few fields of `io_ring_ctx`'s
    /// `submit_state` are not all its lines.
    pub fn lines(&self, unit_offset: u64, cls: u64) -> std::ops::RangeInclusive<u64> {
        let cls = cls.max(1);
        let at = unit_offset + self.inner;
        let bytes = self.touched();
        let last = if bytes > cls { at } else { at + bytes - 1 };
        at / cls..=last / cls
    }

    fn overlaps(&self, o: &Stream) -> bool {
        self.unit == o.unit
            && self.inner < o.inner + o.size.max(1)
            && o.inner < self.inner + self.size.max(1)
    }
}

/// An offset for every unit, the struct's size, and its alignment (what the layout declares:
/// where the allocation honours it, instances start at a multiple of it,
/// `instances::Instances::phases`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub offsets: Vec<u64>,
    pub size: u64,
    pub align: u64,
}

/// Modeled cost of one cache line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LineCost {
    pub index: u64,
    /// Units on the line that have streams.
    pub fields: Vec<String>,
    pub false_transfers: f64,
    pub true_transfers: f64,
    pub false_cycles: f64,
    pub true_cycles: f64,
}

/// Modeled cost of a whole layout.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cost {
    /// Lines with any cost, by index.
    pub lines: Vec<LineCost>,
    pub false_transfers: f64,
    pub true_transfers: f64,
    pub false_cycles: f64,
    pub true_cycles: f64,
    /// Cache lines each hot path touches.
    pub path_lines: BTreeMap<String, u64>,
    pub locality_cycles: f64,
    /// What aligned pairs of lines add on a machine with an adjacent-line prefetcher
    /// (`contention::pairs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub pair_cycles: f64,
    pub size: u64,
    pub cachelines: u64,
    /// What growing the struct beyond the current layout's size costs ([`size_term`]);
    /// 0 for a layout no larger than the current one as allocated, or whose hot working set
    /// does not grow.
    #[serde(skip_serializing_if = "is_zero")]
    pub size_cycles: f64,
    /// The basis of `size_cycles`, when the layout grows the struct as allocated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub growth: Option<SizeTerm>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Cost {
    pub fn total_cycles(&self) -> f64 {
        self.false_cycles
            + self.true_cycles
            + self.locality_cycles
            + self.pair_cycles
            + self.size_cycles
    }

    /// This cost of `placement` with the size term of growing from `from` (the current
    /// layout's size and hot lines, [`Footprint::of`]) ([`size_term`]).
    pub fn with_size_term(
        mut self,
        streams: &[Stream],
        placement: &Placement,
        from: Footprint,
        cls: u64,
        machine: &MachineModel,
        (allocator, count): (Allocator, &InstanceCount),
    ) -> Cost {
        let t = size_term(streams, placement, from, cls, machine, (allocator, count));
        self.size_cycles = t.cycles;
        self.growth = (t.lines_grown > 0.0).then_some(t);
        self
    }
}

/// What the size term compares a layout with: the current layout's size and the cache lines
/// of it that the evidence's streams touch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    pub size: u64,
    pub hot_lines: u64,
}

impl Footprint {
    pub fn of(streams: &[Stream], placement: &Placement, cls: u64) -> Footprint {
        Footprint {
            size: placement.size,
            hot_lines: hot_lines(streams, placement, cls),
        }
    }
}

/// Distinct cache lines of an instance that some stream touches in `placement`.
pub fn hot_lines(streams: &[Stream], placement: &Placement, cls: u64) -> u64 {
    streams_by_line(streams, placement, cls).len() as u64
}

/// How instances of the struct get their memory, for the size term: what an instance of
/// `size` bytes really takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Allocator {
    /// A global, an embedded member, an array element or a dedicated cache of line-aligned
    /// objects: whole cache lines.
    #[default]
    Lines,
    /// The kernel's `kmalloc`: the next slab size class ([`KMALLOC_CLASSES`]).
    Kmalloc,
    /// glibc `malloc`: the chunk, size plus its 8-byte header rounded up to 16 (32 at least).
    Malloc,
}

/// The kernel's generic slab size classes (`kmalloc-8` ... `kmalloc-8k`); larger requests
/// take whole pages.
pub const KMALLOC_CLASSES: [u64; 13] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];

impl Allocator {
    pub fn parse(name: &str) -> Option<Allocator> {
        match name {
            "lines" | "static" => Some(Allocator::Lines),
            "kmalloc" | "slab" => Some(Allocator::Kmalloc),
            "malloc" => Some(Allocator::Malloc),
            _ => None,
        }
    }

    /// Bytes an instance of `size` bytes takes (before rounding to cache lines).
    pub fn allocated(self, size: u64) -> u64 {
        match self {
            Allocator::Lines => size,
            Allocator::Kmalloc => KMALLOC_CLASSES
                .iter()
                .copied()
                .find(|&c| c >= size)
                .unwrap_or_else(|| size.div_ceil(4096) * 4096),
            Allocator::Malloc => ((size + 8).div_ceil(16) * 16).max(32),
        }
    }

    /// Cache lines an instance of `size` bytes takes as allocated: whole lines for
    /// [`Allocator::Lines`], else the allocation's bytes in lines (a 96-byte slab object is
    /// a line and a half of the slab).
    pub fn lines(self, size: u64, cls: u64) -> f64 {
        let cls = cls.max(1);
        match self {
            Allocator::Lines => size.div_ceil(cls) as f64,
            _ => self.allocated(size) as f64 / cls as f64,
        }
    }
}

/// How many instances of the struct live, as the size term takes it: known from the
/// evidence, or not (many).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InstanceCount {
    /// Instances; `None`: not known, taken to be many.
    pub count: Option<u64>,
    pub source: CountSource,
}

impl InstanceCount {
    /// `n` instances, as `source` counted them.
    pub fn known(n: u64, source: CountSource) -> InstanceCount {
        InstanceCount {
            count: Some(n),
            source,
        }
    }
}

/// The size term of one layout against the current one, with its basis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeTerm {
    pub allocator: Allocator,
    /// The struct's size now and in this layout.
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// What an instance takes from its allocator, now and in this layout.
    pub from_allocated: u64,
    pub to_allocated: u64,
    /// Cache lines each instance grows by, as allocated (0 when it does not grow).
    pub lines_grown: f64,
    /// The instance's hot working set now and in this layout, in cache lines: the lines some
    /// stream touches, at most the lines the instance takes as allocated (an instance
    /// smaller than a line shares its line with its neighbours).
    pub from_hot_lines: f64,
    pub to_hot_lines: f64,
    /// The share of the hot working set that is new: `1 - from_hot_lines / to_hot_lines`
    /// (0 when it does not grow).
    pub share: f64,
    /// Lines the hot paths fetch, in the profile's rate unit: each run's rate times the
    /// lines it touches in this layout ([`path_runs`]).
    pub fetches: f64,
    /// Cycles per fetch that capacity turns into a miss: an L2 hit ([`locality_price`]).
    pub price: f64,
    /// Instances taken to live; absent: not known, taken to be many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<u64>,
    /// Where that came from.
    pub instances_from: CountSource,
    /// The cache the instances' added hot lines are weighed against: one core's L1 data
    /// cache ([`MachineModel::capacity_cache`]), and where its size came from.
    pub cache_bytes: u64,
    pub cache_from: &'static str,
    /// With a known count: the hot bytes all the instances add, `instances x (to_hot_lines -
    /// from_hot_lines) x line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_hot_bytes: Option<f64>,
    /// The share of the cache the growth takes from what it held: `added_hot_bytes /
    /// cache_bytes`, at most 1; 1 where the count is not known (many instances whose hot
    /// lines fill it).
    pub pressure: f64,
    /// `fetches * share * price * pressure`.
    pub cycles: f64,
}

/// What growing the struct from `from` to `placement` costs. A grown line that no stream
/// touches is never fetched by a run (the adjacent-line prefetcher's partner is the pair
/// term's, the lines a run touches are the locality term's), so growth costs per run only
/// through cache capacity: with many instances, what competes for the caches is each
/// instance's hot working set, the lines the streams touch (as allocated: an instance
/// smaller than a line takes its share of a line), not its size. Where that working set
/// grows by a share `s = 1 - from / to`, the caches hold a share `s` less of it, so about
/// that share of the lines the hot paths fetch miss where they hit: `fetches * s * price`,
/// an L2 hit each (the locality price). Priced only where the instance grows as its
/// allocator hands it out (the next slab size class, the malloc chunk, whole lines for the
/// rest); within the current allocation, and for shrinking, 0. Padding that only moves the
/// hot lines apart grows no working set the runs do not already touch beyond what it
/// separates; padding whose new hot lines are many beside few removed transfers loses.
///
/// That share is what capacity loses only where the instances' hot lines fill the cache.
/// Where the evidence knows how many instances there are (`count`), the growth takes from
/// the cache only the bytes they add, `count x new hot lines x line`, against the cache
/// whose misses the price is, one core's L1 data cache: the term is scaled by that share
/// of it (`pressure`, at most 1). One global growing by a line takes ~0 of it; with the
/// count unknown, the instances are taken to be many (pressure 1).
pub fn size_term(
    streams: &[Stream],
    placement: &Placement,
    from: Footprint,
    cls: u64,
    machine: &MachineModel,
    (allocator, count): (Allocator, &InstanceCount),
) -> SizeTerm {
    let to_size = placement.size;
    let cls = cls.max(1);
    let lines_grown = (allocator.lines(to_size, cls) - allocator.lines(from.size, cls)).max(0.0);
    let from_hot = (from.hot_lines as f64).min(allocator.lines(from.size, cls));
    let to_hot = (hot_lines(streams, placement, cls) as f64).min(allocator.lines(to_size, cls));
    let share = if lines_grown > 0.0 && to_hot > from_hot && to_hot > 0.0 {
        1.0 - from_hot / to_hot
    } else {
        0.0
    };
    let fetches: f64 = if lines_grown > 0.0 {
        path_runs(streams)
            .iter()
            .map(|r| r.rate * r.lines(streams, placement, cls).len() as f64)
            .sum()
    } else {
        0.0
    };
    let price = locality_price(machine);
    let cache = machine.capacity_cache();
    let added_hot_bytes = count
        .count
        .map(|n| n as f64 * (to_hot - from_hot).max(0.0) * cls as f64);
    let pressure = match added_hot_bytes {
        Some(b) => (b / cache.bytes.max(1) as f64).min(1.0),
        None => 1.0,
    };
    SizeTerm {
        allocator,
        from_bytes: from.size,
        to_bytes: to_size,
        from_allocated: allocator.allocated(from.size),
        to_allocated: allocator.allocated(to_size),
        lines_grown,
        from_hot_lines: from_hot,
        to_hot_lines: to_hot,
        share,
        fetches,
        price,
        instances: count.count,
        instances_from: count.source,
        cache_bytes: cache.bytes,
        cache_from: cache.from,
        added_hot_bytes,
        pressure,
        cycles: fetches * share * price * pressure,
    }
}

/// The movable units of a laid-out struct.
pub fn units(types: &Types<'_>, layout: &Layout) -> Vec<Unit> {
    units_with(layout, |f| types.natural_align(f.ty))
}

/// [`units`] where only the current placement is priced (`diagnose`): alignment cannot
/// matter, so a layout without its type graph will do (natural alignment taken as 1).
pub fn units_in_place(layout: &Layout) -> Vec<Unit> {
    units_with(layout, |_| 1)
}

fn units_with(layout: &Layout, natural_align: impl Fn(&crate::layout::Field) -> u64) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    let mut index = 0usize;
    let mut i = 0usize;
    let fields = &layout.members;
    while i < fields.len() {
        let f = &fields[i];
        if f.is_bitfield() {
            // A run of bitfields sharing storage units moves as one.
            let start = f.offset;
            let mut end = f.end();
            let mut names = vec![f.name.clone()];
            let mut idx = vec![index];
            let mut j = i + 1;
            while j < fields.len() && fields[j].is_bitfield() && fields[j].offset < end {
                end = end.max(fields[j].end());
                names.push(fields[j].name.clone());
                idx.push(index + (j - i));
                j += 1;
            }
            let align = fields[i..j].iter().map(&natural_align).max().unwrap_or(1);
            let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
            out.push(Unit {
                name: names.join("/"),
                members: names,
                member_indices: idx,
                offset: start,
                size: end - start,
                align: align.max(1),
                natural_align: align.max(1),
            });
            index += j - i;
            i = j;
            continue;
        }
        let members: Vec<String> = if f.name.is_empty() {
            f.members.iter().map(|m| m.name.clone()).collect()
        } else {
            vec![f.name.clone()]
        };
        let name = if f.name.is_empty() {
            format!("{{{}}}", members.join("/"))
        } else {
            f.name.clone()
        };
        out.push(Unit {
            name,
            members,
            member_indices: vec![index],
            offset: f.offset,
            size: f.size,
            align: f.forced_align.unwrap_or(0).max(natural_align(f)).max(1),
            natural_align: natural_align(f).max(1),
        });
        index += 1;
        i += 1;
    }
    out
}

/// The placement the struct has now.
pub fn current_placement(layout: &Layout, units: &[Unit]) -> Placement {
    Placement {
        offsets: units.iter().map(|u| u.offset).collect(),
        size: layout.size,
        align: layout_align(layout, units),
    }
}

/// The alignment of the struct `layout` over `units`: its own forced alignment or its
/// members' (with the types' natural alignments in `units`, [`units`]).
pub fn layout_align(layout: &Layout, units: &[Unit]) -> u64 {
    units
        .iter()
        .map(|u| u.align)
        .chain(layout.forced_align)
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The unit holding byte `off`. Zero-size members (`__cacheline_group_begin(x)` markers,
/// `CACHELINE_PADDING`, `_pad_[0]`) hold no bytes: they share their offset with the member
/// after them and must never take its accesses. Only a byte no sized unit covers (past the
/// end, into a flexible array) falls to a zero-size unit.
pub fn unit_at(units: &[Unit], off: u64) -> Option<usize> {
    units
        .iter()
        .position(|u| u.size > 0 && u.offset <= off && off < u.offset + u.size)
        .or_else(|| {
            units
                .iter()
                .rposition(|u| u.size == 0 && u.offset <= off)
                .filter(|_| {
                    units
                        .iter()
                        .all(|v| v.size == 0 || v.offset + v.size <= off)
                })
        })
}

/// Whether a unit is a structural marker: a zero-size member.
pub fn is_marker(u: &Unit) -> bool {
    u.size == 0
}

/// Whether a member is a lock: by its type (`spinlock_t`, `struct mutex`...), or an integer
/// or atomic word named as one (`lock`, `foo_lock`: nginx's `ngx_atomic_t lock`, a hand-made
/// spinlock).
fn is_lock_member(f: &crate::layout::Field) -> bool {
    if super::optimize::is_lock_type(&f.type_name) {
        return true;
    }
    let name = f.name.to_ascii_lowercase();
    let named = name == "lock" || name.ends_with("_lock") || name.starts_with("lock_");
    let word = !f.type_name.contains('*')
        && !f.type_name.starts_with("struct ")
        && !f.declarator.contains('[')
        && f.size <= 8;
    named && word
}

/// The sub-field an access names inside an embedded struct member (`mmap_lock.count`), where
/// the evidence names it by path and `shown` ([`sub_field_names`]) holds it: the member moves
/// as a whole, but its sub-fields are bytes of their own, on their own lines or not depending
/// on the member's offset, and the verdicts name them.
pub fn sub_field_name(
    member: &crate::layout::Field,
    a: &Access,
    shown: &BTreeSet<String>,
) -> Option<String> {
    let named = a.field.as_deref()?;
    let inside = named
        .strip_prefix(member.name.as_str())?
        .strip_prefix('.')?;
    (!member.name.is_empty()
        && member.inline.is_none()
        && !inside.is_empty()
        && shown.contains(named))
    .then(|| named.to_string())
}

/// The sub-fields of embedded members shown by their own names: those of a member whose
/// accesses name two or more of its sub-fields, not all touched by the same code paths (an
/// rwsem's `count` by the trylock, `owner` by the slowpath). Where one path touches them all
/// (a `list_head`'s `next` and `prev`), or the evidence names one (an `atomic_t`'s
/// `counter`), the member is one thing to that evidence and keeps its name.
pub fn sub_field_names(layout: &Layout, accesses: &[Access]) -> BTreeSet<String> {
    let all = BTreeSet::from_iter(accesses.iter().filter_map(|a| a.field.clone()));
    // Member -> sub-field -> its paths.
    let mut by_member: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for a in accesses {
        let Some(off) = a.offset else { continue };
        let Some(f) = super::diagnose::display_member(&layout.members, off) else {
            continue;
        };
        let Some(name) = sub_field_name(f, a, &all) else {
            continue;
        };
        by_member
            .entry(f.name.clone())
            .or_default()
            .entry(name)
            .or_default()
            .insert(access_path(a));
    }
    by_member
        .into_values()
        .filter(|subs| subs.len() > 1 && subs.values().any(|p| Some(p) != subs.values().next()))
        .flat_map(BTreeMap::into_keys)
        .collect()
}

/// The code path of an access, as its stream has it: the function, else the first group.
fn access_path(a: &Access) -> String {
    a.code
        .as_ref()
        .map(|c| c.function())
        .or_else(|| a.groups.first().cloned())
        .unwrap_or_else(|| "?".to_string())
}

/// Streams from accesses with struct-relative offsets: one per (unit, bytes, path), counts
/// summed, CPUs the most any access reported. `machine_cpus` stands for "all CPUs" and for
/// accesses that do not say.
pub fn streams(
    units: &[Unit],
    layout: &Layout,
    accesses: &[Access],
    machine_cpus: u32,
) -> Vec<Stream> {
    type Key = (usize, u64, u64, String, Option<String>);
    let mut by_key: BTreeMap<Key, Stream> = BTreeMap::new();
    let subs = sub_field_names(layout, accesses);
    for a in accesses {
        let Some(off) = a.offset else { continue };
        let Some(u) = unit_at(units, off) else {
            continue;
        };
        let unit = &units[u];
        let size = a
            .size
            .unwrap_or(1)
            .max(1)
            .min(unit.offset + unit.size - off);
        let path = access_path(a);
        let shown = super::diagnose::display_member(&layout.members, off);
        let field = shown
            .map(|f| sub_field_name(f, a, &subs).unwrap_or_else(|| f.name.clone()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| unit.name.clone());
        let lock = shown.is_some_and(is_lock_member);
        let cpus = match &a.cpus {
            Some(c) if c.all => machine_cpus,
            Some(c) => c.distinct().unwrap_or(machine_cpus),
            None => machine_cpus,
        }
        .clamp(1, machine_cpus.max(1));
        let list = a.cpus.as_ref().map(|c| c.list.clone()).unwrap_or_default();
        let s = by_key
            .entry((
                u,
                off - unit.offset,
                size,
                path.clone(),
                a.under_lock.clone(),
            ))
            .or_insert_with(|| Stream {
                unit: u,
                inner: off - unit.offset,
                size,
                field,
                path,
                reads: 0.0,
                writes: 0.0,
                rmw: 0.0,
                cpus: 1,
                cpu_list: Vec::new(),
                lock,
                run_atomic: false,
                under_lock: a.under_lock.clone(),
                cycles_per_run: None,
            });
        if let Some(c) = a.cycles_per_run {
            s.cycles_per_run = Some(s.cycles_per_run.map_or(c, |x| x.max(c)));
        }
        s.reads += a.counts.loads;
        // A read-modify-write both reads and writes; it counts once, as a write.
        s.writes += a.counts.writes();
        s.rmw += a.counts.rmw;
        s.cpus = s.cpus.max(cpus);
        if !list.is_empty() {
            let mut all: BTreeSet<u32> = s.cpu_list.iter().copied().collect();
            all.extend(list);
            s.cpu_list = all.into_iter().collect();
            // Accesses merged from different CPUs (a recording names one CPU per access):
            // the stream comes from all of them.
            s.cpus = s
                .cpus
                .max(s.cpu_list.len() as u32)
                .clamp(1, machine_cpus.max(1));
        }
    }
    let mut out: Vec<Stream> = by_key
        .into_values()
        .filter(|s| s.reads + s.writes > 0.0)
        .collect();
    // A lock under which nothing writes the struct orders no transfer of it: its sections
    // only read, and read lines stay shared in every cache.
    let written: BTreeSet<String> = out
        .iter()
        .filter(|s| s.writes > 0.0)
        .filter_map(|s| s.under_lock.clone())
        .collect();
    for s in &mut out {
        if s.under_lock.as_ref().is_some_and(|l| !written.contains(l)) {
            s.under_lock = None;
        }
    }
    mark_atomic_runs(&mut out);
    out
}

/// Sets [`Stream::run_atomic`] on the streams of every run that makes an atomic
/// read-modify-write.
pub fn mark_atomic_runs(streams: &mut [Stream]) {
    for run in path_runs(streams) {
        let atomic = run.streams.iter().any(|&i| streams[i].rmw > 0.0);
        for &i in &run.streams {
            streams[i].run_atomic = atomic;
        }
    }
}

/// The lock outside the struct that every stream of a line is accessed under, if there is
/// one: the line is touched only inside that lock's critical sections, by one holder at a
/// time, so it moves with the lock's hand-offs and never queues (its queue is the lock's).
pub fn serialized_by<'s>(streams: &[&'s Stream]) -> Option<&'s str> {
    let first = streams.first()?.under_lock.as_deref()?;
    streams
        .iter()
        .all(|s| s.under_lock.as_deref() == Some(first))
        .then_some(first)
}

/// Why a modeled miss happens, which says what removes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// The missing access touches bytes the writer writes: only splitting the data (per CPU,
    /// per node, shards) or writing less often removes it.
    SameBytes,
    /// The missing access is the writer's own code path, a load or plain store beside the
    /// path's plain stores: it touches the writer's bytes in the same run (fields one path
    /// writes together), so it would take the writer's line wherever the other bytes sat.
    /// Moving them apart adds a line; it removes nothing. Not beside the path's atomics
    /// ([`Stream::run_atomic`]).
    SamePath,
    /// The missing access's own run (its code path, from its CPUs) loads or stores the bytes
    /// the writer wrote, beside the missing access on the same line: the run takes the line
    /// for those bytes anyway, wherever the missing access's bytes sat (a reader that reads
    /// every writer's member: Redis's main thread summing each IO thread's pending count;
    /// RocksDB's lookup that reads the handle's key fields and updates its `refs`). True
    /// sharing for that run; moving its other bytes apart removes nothing.
    SameRun,
    /// A lock and what its holders write beside it: one critical section, the same CPUs
    /// one after another. Apart, each holder would fetch two lines where it fetched one.
    UnderLock,
    /// Critical sections of one lock that is not a member of the struct
    /// ([`Stream::under_lock`]): they run one after another, and each takes the line from the
    /// previous holder with the lock, whichever bytes the two touch. Moving bytes apart
    /// removes none of it; spread over more lines, each hand-off moves more lines.
    HandOff,
    /// Another code path touching other bytes: moving them apart removes the miss.
    False,
}

impl Sharing {
    /// Whether moving bytes apart removes this kind of miss.
    pub fn is_false(self) -> bool {
        self == Sharing::False
    }
}

/// One term of a line's cost: the misses that one write stream causes on one stream.
#[derive(Clone, Debug, Serialize)]
pub struct Contribution {
    /// The write stream: indices of its members in the line's streams.
    pub writer: Vec<usize>,
    /// The stream that misses (index in the line's streams).
    pub victim: usize,
    pub sharing: Sharing,
    pub transfers: f64,
    pub cycles: f64,
}

/// A line's cost, term by term ([`line_breakdown`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LineTerms {
    pub false_transfers: f64,
    pub true_transfers: f64,
    pub false_cycles: f64,
    pub true_cycles: f64,
    pub contributions: Vec<Contribution>,
    /// CPUs that touch the line, as the model counted them.
    pub cpus: f64,
    /// The evidence gave CPU counts but not which CPUs: different code paths were taken to
    /// run on different CPUs (up to the machine's), the assumption a verdict must state.
    pub cpus_assumed: bool,
}

impl LineTerms {
    pub fn totals(&self) -> (f64, f64, f64, f64) {
        (
            self.false_transfers,
            self.true_transfers,
            self.false_cycles,
            self.true_cycles,
        )
    }
}

/// Transfers and cycles of a set of streams sharing one line:
/// (false transfers, true transfers, false cycles, true cycles). See [`line_breakdown`].
pub fn line_terms(streams: &[&Stream], machine: &MachineModel) -> (f64, f64, f64, f64) {
    // Totals only: the optimizer calls this for every candidate line, and a line of many
    // paths has writers x streams terms, too many to keep one by one.
    breakdown(streams, machine, false).totals()
}

/// Whether a miss by `b` after a write by the write stream `a` is removable by moving `b`'s
/// bytes away, and if not, why.
fn sharing_of(a: &[&Stream], b: &Stream) -> Sharing {
    // Both inside critical sections of one lock: the sections never run at the same time.
    if let Some(l) = b.under_lock.as_deref()
        && a.iter().all(|s| s.under_lock.as_deref() == Some(l))
    {
        return Sharing::HandOff;
    }
    if a.iter().any(|s| s.overlaps(b)) {
        return Sharing::SameBytes;
    }
    // The path's own loads and plain stores beside its write: its run takes the line for the
    // write anyway, in one touch with them. Not where the run makes an atomic
    // read-modify-write ([`Stream::run_atomic`]): its accesses are spread around the atomic,
    // which waits for its line, and on a contended line another CPU takes the line between
    // them (seed 003: `cpupri_set`'s `atomic_inc` of `count` and set_bit on `mask`, one line;
    // `lock_vma_under_rcu` reads `vm_start` and `vm_mm` beside the `vm_refcnt` every fault
    // increments, which Linux 6.15 moved to a line of its own). A lock holder's are what the
    // lock guards: no other writer comes between them.
    // Only where the writer's CPUs are `b`'s (or unlisted): one function run by per-thread
    // workers, each storing its own slot, is as many runs as threads, and their misses on
    // each other's slots are false sharing (a recording's `hits[0]` and `hits[1]`).
    let meets = |s: &Stream| {
        s.cpu_list.is_empty()
            || b.cpu_list.is_empty()
            || s.cpu_list.iter().any(|c| b.cpu_list.contains(c))
    };
    // A lock's own parts (an rwsem's `count`, `owner`, `osq`) are not data its holders write
    // beside it: waiters and would-be holders touch them without holding it. Only a lock and
    // bytes of another unit are one critical section.
    let lock_beside = |s: &&Stream| s.lock && s.unit != b.unit;
    if b.rmw <= 0.0 && a.iter().any(|s| s.path == b.path) {
        if a.iter().any(lock_beside) {
            return Sharing::UnderLock;
        }
        let atomic_run = b.run_atomic || a.iter().any(|s| s.path == b.path && s.rmw > 0.0);
        if !atomic_run && a.iter().any(|s| s.path == b.path && meets(s)) {
            return Sharing::SamePath;
        }
    }
    // A lock and the data beside it that the lock's CPUs write: where both list their CPUs,
    // the sets must meet; a lock written by no listed CPU of `b` guards something else.
    let lock_pair = (a.iter().any(lock_beside) && b.writes > 0.0)
        || (b.lock && a.iter().all(|s| !s.lock && s.unit != b.unit));
    if lock_pair && a.iter().any(|s| meets(s)) {
        return Sharing::UnderLock;
    }
    Sharing::False
}

/// The accesses of one run of a code path to one line, counted as the line sees them: one
/// touch per run, however many of the line's fields the run loads or stores.
///
/// - A lock's holder that takes the lock and then touches the data beside it finds the line it
///   just took, so its critical section touches the line once, at its most-touched stream's
///   rate, not at the sum of its streams' (nginx's peer check takes the lock and then reads
///   `down`, `slow_start` and `start_time`: one touch per check, whether the three sit beside
///   the lock or not; the pull request that moved the lock measured no gain). Its loads come
///   after its lock write in the same touch, which is a write.
/// - Any other run's loads and plain stores to one line are one touch too: the loads of a
///   lookup that compares `hash`, `key_length` and reads `value` leave the core together and
///   complete on one fill of the line, and plain stores drain from the store buffer together
///   (the write streams of [`line_breakdown`] group them the same way). They count at the
///   run's most-touched stream's rate. What is one touch on one line is one touch per line
///   apart, so moving fields one run reads together apart removes none of its misses.
/// - A run that makes an atomic read-modify-write ([`Stream::run_atomic`]) keeps a touch per
///   stream: the atomic is a full barrier that waits for its line, with other work around it,
///   and on a contended line another CPU can take the line in between (a ring's enqueue: the
///   consumer's tail, an atomic on its own head, the copy, then a store to its tail).
///
/// The streams of each run (a path on one set of CPUs) keep their proportions. Returns each
/// stream's loads as the line sees them.
fn touches_per_run(streams: &[&Stream], weight: &mut [f64]) -> (Vec<f64>, LineRuns) {
    type PathKey<'s> = (&'s str, u32, &'s [u32]);
    #[derive(Default)]
    struct Run {
        /// Sum of its weights, and its most-touched stream's accesses.
        sum: f64,
        max: f64,
        /// The same for its loads and plain stores only.
        plain_sum: f64,
        plain_max: f64,
        /// It writes a lock on this line.
        holds: bool,
        /// It makes an atomic read-modify-write, here or elsewhere in the struct.
        atomic: bool,
        /// Its streams.
        members: Vec<usize>,
    }
    let mut index: BTreeMap<PathKey<'_>, usize> = BTreeMap::new();
    let mut runs: Vec<Run> = Vec::new();
    let mut of = Vec::with_capacity(streams.len());
    for (i, (s, &x)) in streams.iter().zip(weight.iter()).enumerate() {
        let r = *index
            .entry((s.path.as_str(), s.cpus, s.cpu_list.as_slice()))
            .or_insert_with(|| {
                runs.push(Run::default());
                runs.len() - 1
            });
        of.push(r);
        runs[r].members.push(i);
        // (A critical section of a lock outside the struct is counted in `breakdown`: one
        // touch per section, a hand-off.)
        if s.under_lock.is_some() {
            continue;
        }
        let e = &mut runs[r];
        e.sum += x;
        e.max = e.max.max(s.reads + s.writes);
        e.plain_sum += (x - s.rmw).max(0.0);
        e.plain_max = e.plain_max.max(s.reads + s.stores());
        e.holds |= s.lock && s.writes > 0.0;
        e.atomic |= s.run_atomic || s.rmw > 0.0;
    }
    let mut loads = Vec::with_capacity(streams.len());
    for ((s, x), &r) in streams.iter().zip(weight.iter_mut()).zip(&of) {
        if s.under_lock.is_some() {
            loads.push(0.0);
            continue;
        }
        let run = &runs[r];
        if run.holds {
            if run.sum > run.max && run.sum > 0.0 {
                *x *= run.max / run.sum;
            }
            loads.push(0.0);
        } else if !run.atomic && run.plain_sum > run.plain_max && run.plain_sum > 0.0 {
            let scale = run.plain_max / run.plain_sum;
            let atomic = s.rmw.min(*x);
            *x = atomic + (*x - atomic) * scale;
            loads.push(s.reads * scale);
        } else {
            loads.push(s.reads);
        }
    }
    let runs = runs.into_iter().map(|r| (r.atomic, r.members)).collect();
    (loads, LineRuns { of, runs })
}

/// The runs of a line's streams ([`touches_per_run`]), for [`Sharing::SameRun`]: streams of
/// one path from one set of CPUs, and whether the run makes an atomic read-modify-write.
struct LineRuns {
    /// Per stream, its run.
    of: Vec<usize>,
    /// Per run: atomic, and its streams.
    runs: Vec<(bool, Vec<usize>)>,
}

/// Of the misses of stream `b` (index `bi`) after a write by the write stream `a`, the share
/// its own run takes for the written bytes ([`Sharing::SameRun`]): where `b` is a load or plain
/// store and its run (its path from its CPUs) loads or plainly stores bytes `a` writes on this
/// line, in the runs that do (`b` touched more often than those bytes: the rest are its own
/// misses). Not for a run that makes an atomic read-modify-write: its accesses are spread
/// around the atomic, and another CPU can take the line between them (see
/// [`touches_per_run`]). `needs` memoizes, per run, its busiest access to `a`'s bytes (one
/// writer at a time: the line's writers times its streams, not times its streams again).
fn same_run_share(
    streams: &[&Stream],
    runs: &LineRuns,
    needs: &mut [Option<f64>],
    a: &[&Stream],
    bi: usize,
) -> f64 {
    // Runs, not accesses: a run that loads a field and then stores it (a flag checked and
    // set, a message's pointer read and rewritten) touches it once, so the runs that touch a
    // stream are at least the larger of its loads and its plain stores.
    let runs_of = |s: &Stream| s.reads.max(s.stores());
    let b = streams[bi];
    let rate = b.reads.max(b.writes);
    let r = runs.of[bi];
    let (atomic, members) = &runs.runs[r];
    // A run of `b` alone touches the written bytes only where `b` does: the same bytes,
    // classed before this.
    if *atomic || rate <= 0.0 || members.len() < 2 {
        return 0.0;
    }
    let n = *needs[r].get_or_insert_with(|| {
        members
            .iter()
            .map(|&i| streams[i])
            .filter(|s| a.iter().any(|w| w.overlaps(s)))
            .map(runs_of)
            .fold(0.0, f64::max)
    });
    (n / rate).min(1.0)
}

/// A line's cost, term by term.
///
/// The plain stores of one code path from one set of CPUs are one *write stream* of the
/// line: an execution of the path that stores to two neighbouring fields drains both from
/// its store buffer while it owns the line, so it fetches the line once and invalidates the
/// other copies once, not once per field; the group writes at its most-written member's rate.
/// Atomic read-modify-writes stay one stream each: each is ordered on its own, with barriers
/// and other work between two of them, and on a contended line another CPU usually takes the
/// line in between (seed 003: `cpupri_set`'s `cpumask_set_cpu` and `atomic_inc` on one
/// line). A run's loads and plain stores to the line are one touch of it, unless the run
/// makes an atomic read-modify-write ([`touches_per_run`]); then a load before the path's
/// write is a miss of its own, which moving the read field off the line removes.
///
/// Each miss is classed by what would remove it ([`Sharing`]): only a miss by another code
/// path on other bytes, that its own run does not touch too ([`Sharing::SameRun`]), is false
/// sharing. Where the evidence gives CPU counts but not the CPUs, different code paths are
/// taken to run on different CPUs ([`LineTerms::cpus_assumed`]).
pub fn line_breakdown(streams: &[&Stream], machine: &MachineModel) -> LineTerms {
    breakdown(streams, machine, true)
}

/// [`line_breakdown`], keeping each term only when `terms` is set.
fn breakdown(streams: &[&Stream], machine: &MachineModel, terms: bool) -> LineTerms {
    let mut out = LineTerms::default();
    // Writers: (rate, the streams whose bytes they write).
    // (Each member with its index in `streams`: looking it up again was quadratic in the
    // line's streams, 10^8 steps per evaluation for a sketch of 10^4 code paths.)
    type WriteStream<'s> = (&'s str, u32, &'s [u32]);
    let mut plain: BTreeMap<WriteStream<'_>, Vec<(usize, &Stream)>> = BTreeMap::new();
    let mut writers: Vec<(f64, Vec<(usize, &Stream)>)> = Vec::new();
    for (i, s) in streams.iter().enumerate() {
        if s.under_lock.is_some() {
            continue;
        }
        if s.stores() > 0.0 {
            plain
                .entry((s.path.as_str(), s.cpus, s.cpu_list.as_slice()))
                .or_default()
                .push((i, s));
        }
        if s.rmw > 0.0 {
            writers.push((s.rmw, vec![(i, s)]));
        }
    }
    // Each stream's accesses as the line sees them: its loads, its atomics, and its share of
    // its group's stores.
    let mut weight: Vec<f64> = streams.iter().map(|s| s.reads + s.rmw).collect();
    for members in plain.into_values() {
        let max = members.iter().map(|(_, s)| s.stores()).fold(0.0, f64::max);
        let sum: f64 = members.iter().map(|(_, s)| s.stores()).sum();
        for &(i, m) in &members {
            weight[i] += m.stores() * max / sum;
        }
        writers.push((max, members));
    }
    // Critical sections of a lock outside the struct: each section of a path (on one set of
    // CPUs) touches the line once, at its most-touched stream's rate, and takes it from the
    // previous holder: a write stream at that rate, whatever it loads or stores here (what a
    // section writes under its lock, there or beside the struct in the lock's parent, moves
    // with the lock; a lock under which nothing writes the struct is dropped in `streams`).
    type Section<'s> = (&'s str, &'s str, u32, &'s [u32]);
    let mut sections: BTreeMap<Section<'_>, Vec<(usize, &Stream)>> = BTreeMap::new();
    for (i, s) in streams.iter().enumerate() {
        if let Some(l) = s.under_lock.as_deref() {
            sections
                .entry((l, s.path.as_str(), s.cpus, s.cpu_list.as_slice()))
                .or_default()
                .push((i, s));
        }
    }
    for members in sections.into_values() {
        let touches = |s: &Stream| s.reads + s.writes;
        let max = members.iter().map(|(_, s)| touches(s)).fold(0.0, f64::max);
        let sum: f64 = members.iter().map(|(_, s)| touches(s)).sum();
        for &(i, m) in &members {
            weight[i] = if sum > 0.0 {
                touches(m) * max / sum
            } else {
                0.0
            };
        }
        writers.push((max, members));
    }
    let (reads, line_runs) = touches_per_run(streams, &mut weight);
    let w: f64 = writers.iter().map(|g| g.0).sum();
    let x: f64 = weight.iter().sum();
    let listed = streams.iter().all(|s| !s.cpu_list.is_empty());
    // The CPUs that touch the line: the union of the lists when every stream has one; else
    // each code path on CPUs of its own (its widest stream's count), up to the machine's.
    let n = if listed {
        streams
            .iter()
            .flat_map(|s| s.cpu_list.iter())
            .collect::<BTreeSet<_>>()
            .len() as f64
    } else {
        let mut per_path: BTreeMap<&str, u32> = BTreeMap::new();
        for s in streams {
            let e = per_path.entry(s.path.as_str()).or_default();
            *e = (*e).max(s.cpus.max(1));
        }
        out.cpus_assumed = per_path.len() > 1;
        let sum: u32 = per_path.values().sum();
        f64::from(sum.clamp(1, machine.cpus.max(1)))
    };
    out.cpus = n;
    if w <= 0.0 || x <= 0.0 {
        return out;
    }
    // Each CPU touches the line between two writes with probability p and then misses once,
    // whichever bytes it touches first; the writer itself does not miss. Where every stream
    // lists its CPUs, each CPU has its own rate (a consumer that glances at the producer's
    // index now and then rarely holds the producer's line); else the line's accesses are
    // spread evenly over its N CPUs.
    let p = 1.0 - (-x / (w * n)).exp();
    // The share of the line's accesses that are loads.
    let loads = reads.iter().sum::<f64>().min(x) / x;
    // Per CPU: (probability it touches the line between two writes, share of its accesses
    // that are loads).
    let per_cpu: Option<BTreeMap<u32, (f64, f64)>> = listed.then(|| {
        let mut rate: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        for ((s, xs), r) in streams.iter().zip(&weight).zip(&reads) {
            let k = s.cpu_list.len() as f64;
            let loads = r.min(*xs);
            for &c in &s.cpu_list {
                let e = rate.entry(c).or_default();
                e.0 += xs / k;
                e.1 += loads / k;
            }
        }
        rate.into_iter()
            .map(|(c, (r, l))| (c, (1.0 - (-r / w).exp(), if r > 0.0 { l / r } else { 0.0 })))
            .collect()
    });
    let price = machine.transfer_cycles(n as u32);
    // A CPU's node, the machine's CPUs numbered node by node.
    let node = |c: u32| c / machine.cpus_per_node();
    // Per CPU (lists only): the streams it makes and each one's share of its accesses to the
    // line. A miss a CPU takes lands on what that CPU touches, never on another CPU's stream.
    let mut on_cpu: BTreeMap<u32, Vec<(usize, f64)>> = BTreeMap::new();
    if listed {
        for (i, (s, xs)) in streams.iter().zip(&weight).enumerate() {
            for &c in &s.cpu_list {
                on_cpu
                    .entry(c)
                    .or_default()
                    .push((i, xs / s.cpu_list.len() as f64));
            }
        }
        for list in on_cpu.values_mut() {
            let r: f64 = list.iter().map(|e| e.1).sum();
            for e in list.iter_mut() {
                e.1 = if r > 0.0 { e.1 / r } else { 0.0 };
            }
        }
    }
    // Only a run of two or more streams without an atomic can touch another's bytes.
    let same_runs = line_runs
        .runs
        .iter()
        .any(|(atomic, members)| !atomic && members.len() > 1);
    let mut needs: Vec<Option<f64>> = vec![None; if same_runs { line_runs.runs.len() } else { 0 }];
    for (wa, group) in &writers {
        let a: Vec<&Stream> = group.iter().map(|(_, s)| *s).collect();
        // What each run needs of this writer's bytes, found when first asked.
        needs.iter_mut().for_each(|n| *n = None);
        // Misses and cycles per victim stream.
        let mut victim: Vec<(f64, f64)> = vec![(0.0, 0.0); streams.len()];
        match &per_cpu {
            Some(pc) => {
                // Every CPU that touched the line since the last write misses once, less the
                // writer (one of the group's CPUs). On each node only the first of them takes
                // the line from the writer (a HITM, local when the writer that took the line
                // sits on that node); a later load on the same node finds the line shared in
                // the node's cache and pays an LLC hit, not a transfer
                // (docs/cost-model.md, "Readers of many copies").
                let own: BTreeSet<u32> =
                    a.iter().flat_map(|s| s.cpu_list.iter().copied()).collect();
                let k = own.len().max(1) as f64;
                let hitm_of = |c: u32| {
                    let near = own.iter().filter(|&&o| node(o) == node(c)).count() as f64 / k;
                    near * machine.local_hitm + (1.0 - near) * machine.remote_hitm
                };
                // Per node: expected touches, and the probability of at least one, the
                // writer's own left out.
                let mut by_node: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
                for (&c, &(p, _)) in pc {
                    let mine = if own.contains(&c) { p / k } else { 0.0 };
                    let touch = (p - mine).max(0.0);
                    let e = by_node.entry(node(c)).or_insert((0.0, 1.0));
                    e.0 += touch;
                    e.1 *= 1.0 - touch;
                }
                for (&c, &(p, loads)) in pc {
                    let mine = if own.contains(&c) { p / k } else { 0.0 };
                    let touch = (p - mine).max(0.0);
                    let (on_node, none) = by_node[&node(c)];
                    if touch <= 0.0 || on_node <= 0.0 {
                        continue;
                    }
                    // Of the node's touches, the first (there is one with probability
                    // 1 - prod(1 - p)) is a transfer.
                    let first = ((1.0 - none) / on_node).min(1.0);
                    let later = 1.0 - first;
                    let hitm = hitm_of(c);
                    // A later store still has to take the line from the node's sharers.
                    let t = touch * (first + later * (1.0 - loads));
                    let cyc = t * hitm + touch * later * loads * machine.llc_hit;
                    for &(b, share) in &on_cpu[&c] {
                        victim[b].0 += wa * t * share;
                        victim[b].1 += wa * cyc * share;
                    }
                }
            }
            None => {
                // The same with the line's N CPUs alike, filling whole nodes: of the p (N - 1)
                // CPUs that touch the line between two writes, the first on each node takes
                // a transfer, later loads on that node hit the node's cache.
                let touches = p * (n - 1.0).max(0.0);
                let nodes = (n as u32)
                    .div_ceil(machine.cpus_per_node())
                    .clamp(1, machine.numa_nodes.max(1)) as f64;
                let first = if touches > 0.0 {
                    (nodes * (1.0 - (1.0 - p).powf(n / nodes)) / touches).min(1.0)
                } else {
                    1.0
                };
                let later = 1.0 - first;
                let t = wa * touches * (first + later * (1.0 - loads));
                let cyc = t * price + wa * touches * later * loads * machine.llc_hit;
                // The misses land on the other CPUs' accesses: not on the writer's own path
                // where that path runs on one CPU (it is the writer).
                let mine = |b: &Stream| b.cpus <= 1 && a.iter().any(|s| s.path == b.path);
                let others: f64 = streams
                    .iter()
                    .zip(&weight)
                    .filter(|(b, _)| !mine(b))
                    .map(|(_, xb)| xb)
                    .sum();
                if others > 0.0 {
                    for ((b, xb), v) in streams.iter().zip(&weight).zip(victim.iter_mut()) {
                        if !mine(b) {
                            v.0 = t * xb / others;
                            v.1 = cyc * xb / others;
                        }
                    }
                }
            }
        }
        // Each miss lands on whatever the missing CPU touches first: stream b with its share
        // of that CPU's accesses to the line.
        for (bi, (b, &(m, c))) in streams.iter().zip(&victim).enumerate() {
            if m <= 0.0 && c <= 0.0 {
                continue;
            }
            let sharing = sharing_of(&a, b);
            // The path's own accesses beside its write are its own only in the runs that
            // write: where it reads `b` more often than it writes the line (seed 003's
            // `cpupri_set` loads `mask` 600 times to 41 stores of `count`), the runs that only
            // read would not need the line if `b` moved, and those misses are false sharing.
            let own = if matches!(sharing, Sharing::SamePath | Sharing::UnderLock)
                && b.rmw <= 0.0
                && a.iter().any(|s| s.path == b.path)
            {
                let writes: f64 = streams
                    .iter()
                    .filter(|s| s.path == b.path)
                    .map(|s| s.writes)
                    .fold(0.0, f64::max);
                (writes / (b.reads + b.writes).max(f64::MIN_POSITIVE)).min(1.0)
            } else {
                1.0
            };
            // Another path's bytes, but the missing run touches them too: true sharing for
            // that run, in the runs that touch them.
            let (sharing, own) = if sharing.is_false() {
                let share = if same_runs {
                    same_run_share(streams, &line_runs, &mut needs, &a, bi)
                } else {
                    0.0
                };
                (Sharing::SameRun, share)
            } else {
                (sharing, own)
            };
            let writer: Vec<usize> = if terms {
                group.iter().map(|(i, _)| *i).collect()
            } else {
                Vec::new()
            };
            for (sharing, part) in [(sharing, own), (Sharing::False, 1.0 - own)] {
                if part <= 0.0 {
                    continue;
                }
                let (m, c) = (m * part, c * part);
                if sharing.is_false() {
                    out.false_transfers += m;
                    out.false_cycles += c;
                } else {
                    out.true_transfers += m;
                    out.true_cycles += c;
                }
                if !terms {
                    continue;
                }
                out.contributions.push(Contribution {
                    writer: writer.clone(),
                    victim: bi,
                    sharing,
                    transfers: m,
                    cycles: c,
                });
            }
        }
    }
    out
}

/// [`line_terms`] with the line's queueing applied to the cycles.
pub fn queued_line_terms(
    streams: &[&Stream],
    machine: &MachineModel,
    q: &Queueing,
) -> (f64, f64, f64, f64) {
    let (ft, tt, fc, tc) = line_terms(streams, machine);
    // A line only one lock's holders touch waits at the lock, not at the line.
    let f = if serialized_by(streams).is_some() {
        1.0
    } else {
        q.factor(fc + tc)
    };
    (ft, tt, fc * f, tc * f)
}

/// The streams on each cache line of `placement`, by line index.
pub fn streams_by_line<'s>(
    streams: &'s [Stream],
    placement: &Placement,
    cacheline_size: u64,
) -> BTreeMap<u64, Vec<&'s Stream>> {
    let cls = cacheline_size.max(1);
    let mut by_line: BTreeMap<u64, Vec<&Stream>> = BTreeMap::new();
    for s in streams {
        for line in s.lines(placement.offsets[s.unit], cls) {
            by_line.entry(line).or_default().push(s);
        }
    }
    by_line
}

/// Unqueued transfer cycles of the busiest line of `placement` (the queueing reference).
pub fn busiest_line(
    streams: &[Stream],
    placement: &Placement,
    cacheline_size: u64,
    machine: &MachineModel,
) -> f64 {
    streams_by_line(streams, placement, cacheline_size)
        .values()
        // A line touched only under one lock does not queue, and sets no scale.
        .filter(|v| serialized_by(v).is_none())
        .map(|v| {
            let (_, _, f, t) = line_terms(v, machine);
            f + t
        })
        .fold(0.0, f64::max)
}

/// The streams one run of a code path touches together: a path's streams whose CPUs meet (or
/// that do not list them). One function on disjoint CPU sets is that many runs: PostgreSQL's
/// `LWLockAcquire` on four locks from four groups of backends touches one lock per run, not
/// four lines.
#[derive(Clone, Debug)]
pub struct PathRun {
    /// The path, with its CPUs where the path has several runs (`f (CPUs 0-3)`).
    pub name: String,
    pub path: String,
    /// Indices into the streams.
    pub streams: Vec<usize>,
    /// How often it runs: its busiest stream's accesses.
    pub rate: f64,
    /// What one run costs, in cycles, where the evidence says ([`Stream::cycles_per_run`]).
    pub cycles_per_run: Option<f64>,
}

impl PathRun {
    /// The lines of `placement` the run touches: every line its streams' bytes lie on
    /// ([`Stream::lines`]).
    pub fn lines(&self, streams: &[Stream], placement: &Placement, cls: u64) -> BTreeSet<u64> {
        self.streams
            .iter()
            .flat_map(|&i| streams[i].lines(placement.offsets[streams[i].unit], cls))
            .collect()
    }
}

/// Whether `a` and `b` are made by one run of a code path: the same path, from CPUs that meet
/// (or that do not list them), as [`path_runs`] groups them.
pub fn same_run(a: &Stream, b: &Stream) -> bool {
    a.path == b.path
        && (a.cpu_list.is_empty()
            || b.cpu_list.is_empty()
            || a.cpu_list.iter().any(|c| b.cpu_list.contains(c)))
}

/// The runs of every code path ([`PathRun`]), by path name.
pub fn path_runs(streams: &[Stream]) -> Vec<PathRun> {
    let mut by_path: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in streams.iter().enumerate() {
        by_path.entry(s.path.as_str()).or_default().push(i);
    }
    let mut out = Vec::new();
    for (path, members) in by_path {
        // Components of "CPU lists meet", a stream without a list meeting every other:
        // each stream joins the first stream seen on each of its CPUs (linear in the lists;
        // `evaluate` runs this for every candidate layout).
        let mut group: Vec<usize> = (0..members.len()).collect();
        fn root(g: &mut [usize], mut i: usize) -> usize {
            while g[i] != i {
                g[i] = g[g[i]];
                i = g[i];
            }
            i
        }
        let mut first_on: BTreeMap<u32, usize> = BTreeMap::new();
        let mut unlisted: Option<usize> = None;
        for (k, &i) in members.iter().enumerate() {
            let list = &streams[i].cpu_list;
            let join = |other: usize, g: &mut Vec<usize>| {
                let (ra, rb) = (root(g, k), root(g, other));
                g[ra] = rb;
            };
            if list.is_empty() {
                match unlisted {
                    Some(u) => join(u, &mut group),
                    None => unlisted = Some(k),
                }
            }
            for &c in list {
                match first_on.get(&c) {
                    Some(&o) => join(o, &mut group),
                    None => {
                        first_on.insert(c, k);
                    }
                }
            }
        }
        // A stream that lists no CPUs meets all of them.
        if let Some(u) = unlisted {
            for k in 0..members.len() {
                let (ra, rb) = (root(&mut group, k), root(&mut group, u));
                group[ra] = rb;
            }
        }
        let mut runs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for k in 0..members.len() {
            let r = root(&mut group, k);
            runs.entry(r).or_default().push(members[k]);
        }
        let several = runs.len() > 1;
        for run in runs.into_values() {
            let rate = run
                .iter()
                .map(|&i| streams[i].reads + streams[i].writes)
                .fold(0.0, f64::max);
            let name = if several {
                let cpus: BTreeSet<u32> = run
                    .iter()
                    .flat_map(|&i| streams[i].cpu_list.iter().copied())
                    .collect();
                format!("{path} (CPUs {})", cpu_ranges(&cpus))
            } else {
                path.to_string()
            };
            let cycles_per_run = run
                .iter()
                .filter_map(|&i| streams[i].cycles_per_run)
                .reduce(f64::max);
            out.push(PathRun {
                name,
                path: path.to_string(),
                streams: run,
                rate,
                cycles_per_run,
            });
        }
    }
    out
}

/// A layout change that saves less than this share of what the runs it changes cost in all
/// (their `cycles_per_run`, where the evidence gives it) is negligible: no layout helps. The
/// share is a measurement's noise, about: A/B runs of the seeds' replicas here resolve a few
/// percent at best (`bench/seeds_ab.sh`), and a kvm_vcpu re-layout whose modeled saving was
/// under 1% of a VM entry and exit measured no difference (tests/cases/kvm_vcpu_relayout).
pub const RUN_COST_SHARE: f64 = 0.02;

/// One run's cost as the evidence gives it, at its rate.
#[derive(Clone, Debug, Serialize)]
pub struct RunCost {
    pub run: String,
    pub rate: f64,
    pub cycles_per_run: f64,
}

/// The work of the runs whose cost per run the evidence gives: `rate x cycles_per_run`
/// summed, in the unit of modeled cycles (the evidence's rate unit times cycles). Runs it
/// gives no cost for are left out, so this is a lower bound on the runs' work, and a saving
/// called negligible against it is negligible against the whole.
#[derive(Clone, Debug, Serialize)]
pub struct RunWork {
    pub cycles: f64,
    pub runs: Vec<RunCost>,
}

impl RunWork {
    /// The runs' work, where the evidence gives some run a cost.
    pub fn of(streams: &[Stream]) -> Option<RunWork> {
        let runs: Vec<RunCost> = path_runs(streams)
            .into_iter()
            .filter_map(|r| {
                Some(RunCost {
                    cycles_per_run: r.cycles_per_run.filter(|c| *c > 0.0)?,
                    run: r.name,
                    rate: r.rate,
                })
            })
            .collect();
        let cycles: f64 = runs.iter().map(|r| r.rate * r.cycles_per_run).sum();
        (cycles > 0.0).then_some(RunWork { cycles, runs })
    }

    /// Whether saving `cycles` is below [`RUN_COST_SHARE`] of the work.
    pub fn negligible(&self, cycles: f64) -> bool {
        cycles < RUN_COST_SHARE * self.cycles
    }

    /// `cycles` against the work, in words: "2800 modeled cycles, 0.6% of what the runs cost
    /// (vcpu_enter_guest: 2500 cycles a run)".
    pub fn weighed(&self, cycles: f64) -> String {
        let runs: Vec<String> = self
            .runs
            .iter()
            .map(|r| format!("{}: {:.0} cycles a run", r.run, r.cycles_per_run))
            .collect();
        format!(
            "{cycles:.0} modeled cycles, {:.1}% of what the runs cost ({}), under the {:.0}% a measurement can resolve",
            100.0 * cycles / self.cycles,
            runs.join(", "),
            100.0 * RUN_COST_SHARE
        )
    }
}

/// `0-3,8,10-11`.
fn cpu_ranges(cpus: &BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = cpus.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end = it.next().unwrap_or(end);
        }
        parts.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

/// The model's cost of `placement`.
pub fn evaluate(
    units: &[Unit],
    streams: &[Stream],
    placement: &Placement,
    cacheline_size: u64,
    machine: &MachineModel,
    q: &Queueing,
) -> Cost {
    let cls = cacheline_size.max(1);
    let by_line = streams_by_line(streams, placement, cls);
    let mut cost = Cost {
        size: placement.size,
        cachelines: placement.size.div_ceil(cls),
        ..Default::default()
    };
    for (&index, on_line) in &by_line {
        let (ft, tt, fc, tc) = queued_line_terms(on_line, machine, q);
        let mut fields: Vec<String> = on_line.iter().map(|s| units[s.unit].name.clone()).collect();
        fields.dedup();
        let fields = fields
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        cost.false_transfers += ft;
        cost.true_transfers += tt;
        cost.false_cycles += fc;
        cost.true_cycles += tc;
        cost.lines.push(LineCost {
            index,
            fields,
            false_transfers: ft,
            true_transfers: tt,
            false_cycles: fc,
            true_cycles: tc,
        });
    }
    // Locality: a path runs about as often as its busiest access; each line past the first
    // costs an L2 hit per run.
    for run in path_runs(streams) {
        let lines = run.lines(streams, placement, cls);
        let n = lines.len() as u64;
        cost.locality_cycles += run.rate * n.saturating_sub(1) as f64 * locality_price(machine);
        cost.path_lines.insert(run.name, n);
    }
    cost.pair_cycles = super::contention::pairs(streams, placement, cls, machine, q)
        .iter()
        .map(|p| p.cycles)
        .sum();
    cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::machine::preset;

    fn stream(unit: usize, reads: f64, writes: f64, cpus: u32, path: &str) -> Stream {
        Stream {
            unit,
            inner: 0,
            size: 8,
            field: format!("f{unit}"),
            path: path.to_string(),
            reads,
            writes,
            rmw: 0.0,
            cpus,
            cpu_list: Vec::new(),
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    /// A miss lands on what the missing CPU touches: two paths on one CPU each, each storing
    /// its own member, miss only on each other's member (false sharing), never on the
    /// writer's own (which would read as true sharing).
    #[test]
    fn misses_land_on_the_missing_cpus_streams() {
        let m = preset("icelake-2s").unwrap();
        let mut a = stream(0, 0.0, 100.0, 1, "f");
        let mut b = stream(1, 0.0, 100.0, 1, "g");
        a.cpu_list = vec![0];
        b.cpu_list = vec![1];
        let t = line_breakdown(&[&a, &b], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
        assert_eq!(t.true_transfers, 0.0, "{t:?}");
        for c in &t.contributions {
            assert!(!c.writer.contains(&c.victim), "{c:?}");
        }
        // Without lists, different paths are different CPUs: the same.
        let (a, b) = (stream(0, 0.0, 100.0, 1, "f"), stream(1, 0.0, 100.0, 1, "g"));
        let t = line_breakdown(&[&a, &b], &m);
        assert!(t.false_transfers > 0.0 && t.true_transfers == 0.0, "{t:?}");
    }

    /// One function on two threads, each storing its own slot of one line: two runs, so
    /// each thread's misses on the other's slot are false sharing, not co-written; on one
    /// CPU (or without lists) the same stores are one run's.
    #[test]
    fn per_thread_slots_of_one_function_are_false_sharing() {
        let m = preset("icelake-2s").unwrap();
        let mut a = stream(0, 0.0, 100.0, 1, "worker");
        let mut b = stream(1, 0.0, 100.0, 1, "worker");
        a.cpu_list = vec![0];
        b.cpu_list = vec![1];
        let t = line_breakdown(&[&a, &b], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
        assert!(
            t.contributions.iter().all(|c| c.sharing == Sharing::False),
            "{t:?}"
        );
        b.cpu_list = vec![0];
        let t = line_breakdown(&[&a, &b], &m);
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
    }

    /// A lock holder's reads beside the lock cost nothing more than the lock: moving them
    /// off its line is no gain (nginx's peer lock).
    #[test]
    fn a_lock_holder_touches_its_line_once_per_critical_section() {
        let m = preset("icelake-2s").unwrap();
        let mut lock = stream(0, 0.0, 200.0, 16, "check");
        lock.rmw = 200.0;
        lock.lock = true;
        let reads: Vec<Stream> = (1..4).map(|u| stream(u, 100.0, 0.0, 16, "check")).collect();
        let mut with: Vec<&Stream> = vec![&lock];
        with.extend(reads.iter());
        let together = line_terms(&with, &m);
        let alone = line_terms(&[&lock], &m);
        let sum = |t: (f64, f64, f64, f64)| t.2 + t.3;
        assert!(
            (sum(together) - sum(alone)).abs() <= 1e-9 * sum(alone),
            "{together:?} vs {alone:?}"
        );
        // Without the lock the same reads are touches of their own, and cost.
        lock.lock = false;
        let mut with: Vec<&Stream> = vec![&lock];
        with.extend(reads.iter());
        assert!(sum(line_terms(&with, &m)) > sum(line_terms(&[&lock], &m)));
    }

    /// A member that straddles a line boundary is on both lines: a run that reads it fetches
    /// both (Linux 3.8's `vm_rb` at offset 56). A lock or an atomic is one word, however large
    /// its type.
    #[test]
    fn a_straddling_member_is_on_both_lines_and_a_lock_on_one() {
        let m = preset("icelake-2s").unwrap();
        let mut rb = stream(1, 100.0, 0.0, 4, "find_vma");
        rb.size = 24;
        let start = stream(0, 100.0, 0.0, 4, "find_vma");
        assert_eq!(rb.lines(56, 64), 0..=1);
        assert_eq!(rb.lines(32, 64), 0..=0);
        let units = [
            unit_at_for_test("vm_start", 0, 8),
            unit_at_for_test("vm_rb", 56, 24),
        ];
        let at = |rb_at: u64| Placement {
            offsets: vec![0, rb_at],
            size: 184,
            align: 8,
        };
        let q = Queueing::NONE;
        let streams = [start, rb.clone()];
        let straddling = evaluate(&units, &streams, &at(56), 64, &m, &q);
        let within = evaluate(&units, &streams, &at(32), 64, &m, &q);
        assert_eq!(straddling.locality_cycles, 100.0 * locality_price(&m));
        assert_eq!(within.locality_cycles, 0.0);
        assert_eq!(straddling.path_lines["find_vma"], 2);
        let mut lock = stream(0, 0.0, 10.0, 4, "f");
        lock.size = 64;
        lock.lock = true;
        assert_eq!(lock.lines(32, 64), 0..=0);
        lock.lock = false;
        assert_eq!(lock.lines(32, 64), 0..=1);
        lock.rmw = 10.0;
        assert_eq!(lock.lines(32, 64), 0..=0);
    }

    fn unit_at_for_test(name: &str, offset: u64, size: u64) -> Unit {
        Unit {
            name: name.to_string(),
            members: vec![name.to_string()],
            member_indices: vec![],
            offset,
            size,
            align: 8,
            natural_align: 8,
        }
    }

    /// The runs' work counts only runs whose cost the evidence gives, at their rates; a saving
    /// under 2% of it is negligible, and without any cost there is no work to weigh against.
    #[test]
    fn a_saving_is_weighed_against_what_the_runs_cost() {
        let mut enter = stream(0, 0.0, 200.0, 1, "enter");
        let read = stream(1, 100.0, 0.0, 1, "enter");
        let other = stream(2, 0.0, 1000.0, 1, "other");
        assert!(RunWork::of(&[enter.clone(), read.clone(), other.clone()]).is_none());
        enter.cycles_per_run = Some(2500.0);
        let work = RunWork::of(&[enter, read, other]).unwrap();
        // One run of `enter` (its busiest stream's 200 a unit); `other` gives no cost.
        assert_eq!(work.cycles, 200.0 * 2500.0);
        assert_eq!(work.runs.len(), 1);
        assert!(work.negligible(2800.0));
        assert!(!work.negligible(0.02 * 200.0 * 2500.0));
        assert!(work.weighed(2800.0).contains("0.6% of what the runs cost"));
    }

    /// One function on disjoint CPU sets is several runs (each touches its own lines); on
    /// CPU sets that meet, or without lists, one.
    #[test]
    fn a_path_on_disjoint_cpus_is_several_runs() {
        let mut a = stream(0, 0.0, 100.0, 4, "acquire");
        let mut b = stream(1, 0.0, 100.0, 4, "acquire");
        a.cpu_list = vec![0, 1, 2, 3];
        b.cpu_list = vec![4, 5, 6, 7];
        let runs = path_runs(&[a.clone(), b.clone()]);
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert_eq!(runs[0].name, "acquire (CPUs 0-3)");
        b.cpu_list = vec![3, 4];
        assert_eq!(path_runs(&[a.clone(), b.clone()]).len(), 1);
        b.cpu_list.clear();
        assert_eq!(path_runs(&[a, b]).len(), 1);
    }

    /// Growth is counted in the allocator's units: slab size classes, malloc chunks, lines;
    /// a layout no larger as allocated, or smaller, pays nothing; and growth pays only for
    /// the share of the hot working set (the lines the streams touch) that is new.
    #[test]
    fn growth_is_priced_as_allocated() {
        assert_eq!(Allocator::Kmalloc.allocated(184), 192);
        assert_eq!(Allocator::Kmalloc.allocated(200), 256);
        assert_eq!(Allocator::Kmalloc.allocated(9000), 12288);
        assert_eq!(Allocator::Malloc.allocated(1), 32);
        assert_eq!(Allocator::Malloc.allocated(100), 112);
        assert_eq!(Allocator::Lines.lines(184, 64), 3.0);
        assert_eq!(Allocator::Kmalloc.lines(96, 64), 1.5);
        let m = preset("icelake-2s").unwrap();
        let many = InstanceCount::default();
        let streams = [stream(0, 0.0, 100.0, 1, "f"), stream(1, 50.0, 0.0, 1, "g")];
        let at = |a: u64, b: u64, size: u64| Placement {
            offsets: vec![a, b],
            size,
            align: 8,
        };
        // Both on line 0 now: one hot line of 184 bytes.
        let now = at(0, 8, 184);
        let from = Footprint::of(&streams, &now, 64);
        assert_eq!(from.hot_lines, 1);
        // 184 -> 190 bytes: the same kmalloc-192, the same 3 lines, even with g moved away.
        for a in [Allocator::Kmalloc, Allocator::Lines] {
            assert_eq!(
                size_term(&streams, &at(0, 128, 190), from, 64, &m, (a, &many)).cycles,
                0.0
            );
        }
        // 184 -> 256 with both still on line 0: a line more per instance that no run
        // touches costs nothing.
        let t = size_term(
            &streams,
            &at(0, 8, 256),
            from,
            64,
            &m,
            (Allocator::Kmalloc, &many),
        );
        assert_eq!(t.lines_grown, 1.0);
        assert_eq!(t.cycles, 0.0, "{t:?}");
        // 184 -> 256 with g on a line of its own: the hot working set doubles, so half of
        // every fetch (f's line and g's, each run one line) is priced an L2 hit.
        let t = size_term(
            &streams,
            &at(0, 192, 256),
            from,
            64,
            &m,
            (Allocator::Kmalloc, &many),
        );
        assert_eq!((t.from_hot_lines, t.to_hot_lines), (1.0, 2.0), "{t:?}");
        assert_eq!(t.share, 0.5);
        assert_eq!(t.fetches, 150.0);
        assert_eq!(t.cycles, 150.0 * 0.5 * m.l2_hit);
        // A 16-byte kmalloc-16 object takes a quarter line: apart on two lines of a
        // kmalloc-128 one, its hot working set is 8 times what it was.
        let small = Footprint::of(&streams, &at(0, 8, 16), 64);
        let t = size_term(
            &streams,
            &at(0, 64, 128),
            small,
            64,
            &m,
            (Allocator::Kmalloc, &many),
        );
        assert_eq!((t.from_hot_lines, t.to_hot_lines), (0.25, 2.0), "{t:?}");
        assert_eq!(t.share, 0.875);
        // Shrinking is not a gain.
        let big = Footprint::of(&streams, &at(0, 128, 256), 64);
        assert_eq!(
            size_term(
                &streams,
                &at(0, 8, 64),
                big,
                64,
                &m,
                (Allocator::Lines, &many)
            )
            .cycles,
            0.0
        );
    }

    /// The same growth, priced with the instances' count: one instance adding a hot line
    /// takes a sliver of one core's L1 data cache, so its term is near 0; with the count not
    /// known, or with so many instances that their added lines fill the cache, it is the
    /// whole share of the fetches, as before counts were known.
    #[test]
    fn growth_is_priced_by_the_instances_it_adds_to_the_cache() {
        let m = preset("icelake-2s").unwrap();
        let l1d = m.capacity_cache();
        assert_eq!(l1d.from, "machine");
        let streams = [stream(0, 0.0, 100.0, 1, "f"), stream(1, 50.0, 0.0, 1, "g")];
        let at = |a: u64, b: u64, size: u64| Placement {
            offsets: vec![a, b],
            size,
            align: 8,
        };
        // 64 -> 128 bytes with g on a line of its own: one hot line more per instance.
        let from = Footprint::of(&streams, &at(0, 8, 64), 64);
        let grown = at(0, 64, 128);
        let price = |count: InstanceCount| {
            size_term(&streams, &grown, from, 64, &m, (Allocator::Lines, &count))
        };
        let many = price(InstanceCount::default());
        assert_eq!(many.instances, None);
        assert_eq!(many.instances_from, CountSource::Assumed);
        assert_eq!(many.pressure, 1.0);
        assert_eq!(many.share, 0.5);
        assert!(many.cycles > 0.0);
        assert_eq!(many.cycles, many.fetches * many.share * many.price);
        let one = price(InstanceCount::known(1, CountSource::Sketch));
        assert_eq!(one.instances, Some(1));
        assert_eq!(one.instances_from, CountSource::Sketch);
        assert_eq!(one.added_hot_bytes, Some(64.0));
        assert_eq!(one.pressure, 64.0 / l1d.bytes as f64);
        assert_eq!(one.cycles, many.cycles * one.pressure);
        assert!(one.cycles < 0.01 * many.cycles, "{one:?}");
        // As many instances as fill the cache with their new lines: as if many.
        let full = l1d.bytes / 64;
        let filling = price(InstanceCount::known(full, CountSource::Recording));
        assert_eq!(filling.pressure, 1.0);
        assert_eq!(filling.cycles, many.cycles);
        let more = price(InstanceCount::known(10 * full, CountSource::Recording));
        assert_eq!(more.cycles, many.cycles);
        // Half as many: half the price; a growth that adds no hot line stays free.
        let half = price(InstanceCount::known(full / 2, CountSource::PerCpu));
        assert!((half.cycles - many.cycles / 2.0).abs() < 1e-9 * many.cycles);
        let cold = size_term(
            &streams,
            &at(0, 8, 128),
            from,
            64,
            &m,
            (
                Allocator::Lines,
                &InstanceCount::known(1, CountSource::Sketch),
            ),
        );
        assert_eq!((cold.cycles, cold.added_hot_bytes), (0.0, Some(0.0)));
        // A machine that does not say its L1 data cache: the low end, assumed.
        let mut unknown = m.clone();
        unknown.l1d_bytes = None;
        let c = unknown.capacity_cache();
        assert_eq!(
            (c.bytes, c.from),
            (crate::analysis::machine::DEFAULT_L1D_BYTES, "assumed")
        );
    }

    #[test]
    fn one_cpu_alone_costs_nothing() {
        let m = preset("icelake-2s").unwrap();
        let s = stream(0, 100.0, 100.0, 1, "f");
        assert_eq!(line_terms(&[&s], &m), (0.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn readers_only_cost_nothing() {
        let m = preset("icelake-2s").unwrap();
        let a = stream(0, 100.0, 0.0, 160, "f");
        let b = stream(1, 100.0, 0.0, 160, "g");
        assert_eq!(line_terms(&[&a, &b], &m).0, 0.0);
    }

    #[test]
    fn a_counter_written_everywhere_is_true_sharing() {
        let m = preset("icelake-2s").unwrap();
        let c = stream(0, 0.0, 1000.0, 160, "inc");
        let (f, t, _, tc) = line_terms(&[&c], &m);
        assert_eq!(f, 0.0);
        // Nearly every increment comes from a CPU that did not write last.
        assert!(t > 990.0 && t < 1000.0, "{t}");
        assert!(tc > t * m.local_hitm);
    }

    #[test]
    fn a_reader_next_to_a_writer_is_false_sharing_and_grows_with_both_rates() {
        let m = preset("icelake-2s").unwrap();
        let w = stream(0, 0.0, 100.0, 160, "store");
        let r = stream(1, 1000.0, 0.0, 160, "load");
        let (f, _, _, _) = line_terms(&[&w, &r], &m);
        assert!(f > 0.0);
        // At most one miss per read; fewer when reads outnumber what a write can invalidate.
        assert!(f <= 1000.0, "{f}");
        let r2 = stream(1, 2000.0, 0.0, 160, "load");
        assert!(line_terms(&[&w, &r2], &m).0 > f);
        let w2 = stream(0, 0.0, 200.0, 160, "store");
        assert!(line_terms(&[&w2, &r], &m).0 > f);
    }

    #[test]
    fn adding_a_stream_never_lowers_a_lines_cost() {
        // The optimizer's bound relies on this: a partial grouping's cost only grows as
        // members join its lines.
        let m = preset("nehalem-ex-8s").unwrap();
        let all = [
            stream(0, 10.0, 300.0, 128, "a"),
            stream(1, 500.0, 0.0, 128, "b"),
            stream(2, 0.0, 45.0, 1, "c"),
            stream(3, 90.0, 30.0, 64, "d"),
            stream(4, 5.0, 0.0, 2, "e"),
        ];
        let q = Queueing {
            reference: 100.0,
            utilization: 0.5,
        };
        let total = |set: &[&Stream]| {
            let (_, _, f, t) = queued_line_terms(set, &m, &q);
            f + t
        };
        for mask in 0u32..32 {
            let set: Vec<&Stream> = (0..5)
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| &all[i])
                .collect();
            for extra in 0..5 {
                if mask >> extra & 1 == 1 {
                    continue;
                }
                let mut more = set.clone();
                more.push(&all[extra]);
                assert!(total(&more) >= total(&set) - 1e-9, "mask {mask} + {extra}");
            }
        }
    }

    /// `struct q { int lock; int data; }`.
    fn two_ints() -> (Types<'static>, crate::types::TypeId) {
        use crate::types::{Composite, Kind, Member, Type};
        let mut t = Types::new(8);
        let int = t.push(Type {
            name: "int",
            kind: Kind::Int {
                size: 4,
                signed: true,
                is_char: false,
                is_bool: false,
            },
        });
        let member = |name: &'static str, bit_offset: u64| Member {
            name,
            ty: int,
            bit_offset,
            bitfield_size: 0,
            declared_align: None,
        };
        let q = t.push(Type {
            name: "q",
            kind: Kind::Struct(Composite {
                size: 8,
                members: vec![member("lock", 0), member("data", 32)],
                declared_align: None,
                is_declaration: false,
                origin: None,
            }),
        });
        (t, q)
    }

    #[test]
    fn a_stream_merged_from_one_cpu_accesses_counts_every_cpu() {
        // A recording names one CPU per access: two threads taking one lock in one function
        // are two accesses of one CPU each, and one stream of two CPUs.
        let (t, q) = two_ints();
        let layout = crate::layout::layout(&t, q, 64).unwrap();
        let us = units(&t, &layout);
        let code = crate::profile::CodeLocation {
            symbol: Some("take".into()),
            ..Default::default()
        };
        let by = |cpu: u32| Access {
            offset: Some(0),
            size: Some(4),
            counts: crate::profile::Counts {
                rmw: 100.0,
                ..Default::default()
            },
            cpus: Some(crate::profile::CpuUse::list([cpu])),
            code: Some(code.clone()),
            ..Default::default()
        };
        let s = streams(&us, &layout, &[by(0), by(1)], 112);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].cpus, 2);
        assert_eq!(s[0].cpu_list, vec![0, 1]);
        // Never more CPUs than the machine has.
        let s = streams(&us, &layout, &[by(0), by(1), by(2)], 2);
        assert_eq!(s[0].cpus, 2);
    }

    #[test]
    fn zero_size_markers_take_no_accesses() {
        // `__cacheline_group_begin(g)` shares its offset with the member after it.
        let u = |name: &str, offset: u64, size: u64| Unit {
            name: name.to_string(),
            members: vec![name.to_string()],
            member_indices: vec![],
            offset,
            size,
            align: 1,
            natural_align: 1,
        };
        let units = vec![
            u("__cacheline_group_begin__g", 0, 0),
            u("a", 0, 8),
            u("__cacheline_group_end__g", 8, 0),
            u("__cacheline_group_begin__h", 8, 0),
            u("b", 8, 8),
            u("tail", 16, 0),
        ];
        assert_eq!(unit_at(&units, 0), Some(1));
        assert_eq!(unit_at(&units, 8), Some(4));
        assert_eq!(unit_at(&units, 15), Some(4));
        // Past every sized member: a flexible array's bytes.
        assert_eq!(unit_at(&units, 40), Some(5));
    }

    #[test]
    fn fields_one_path_writes_together_cost_one_transfer_not_two() {
        // One function writes `head` and `tail` on each call, from 8 CPUs. Apart, each line
        // takes every call's transfer; together, the line moves once per call.
        let m = preset("icelake-2s").unwrap();
        let q = Queueing {
            reference: 1.0,
            utilization: 0.5,
        };
        let a = stream(0, 0.0, 1000.0, 8, "push");
        let b = stream(1, 0.0, 1000.0, 8, "push");
        let total = |set: &[&Stream]| {
            let (ft, tt, fc, tc) = queued_line_terms(set, &m, &q);
            (ft + tt, fc + tc)
        };
        let together = total(&[&a, &b]);
        let apart = (
            total(&[&a]).0 + total(&[&b]).0,
            total(&[&a]).1 + total(&[&b]).1,
        );
        assert!((together.0 - total(&[&a]).0).abs() < 1e-9, "{together:?}");
        assert!(
            together.1 < apart.1 * 0.6,
            "together {together:?} apart {apart:?}"
        );
        // Written by different paths (or CPU sets), they are two streams again.
        let c = stream(1, 0.0, 1000.0, 8, "pop");
        assert!(total(&[&a, &c]).0 > together.0 * 1.5);
        // So are two atomic read-modify-writes of one path: each takes the line on its own.
        let (mut ra, mut rb) = (a.clone(), b.clone());
        ra.rmw = ra.writes;
        rb.rmw = rb.writes;
        assert!(total(&[&ra, &rb]).0 > together.0 * 1.5);
    }

    #[test]
    fn with_cpu_lists_a_rare_reader_rarely_misses_and_remote_misses_cost_more() {
        // Producer CPUs 0-1 write `tail` often; CPU 2 reads it rarely. Evenly spread, CPU 2
        // would hold the line as often as the writers; with its own rate it rarely does.
        let m = preset("icelake-2s").unwrap();
        let mut w = stream(0, 0.0, 100.0, 2, "push");
        w.cpu_list = vec![0, 1];
        let mut r = stream(0, 10.0, 0.0, 1, "pop");
        r.cpu_list = vec![2];
        let listed = line_terms(&[&w, &r], &m);
        let (mut w2, mut r2) = (w.clone(), r.clone());
        w2.cpu_list.clear();
        r2.cpu_list.clear();
        w2.cpus = 3;
        let even = line_terms(&[&w2, &r2], &m);
        assert!(listed.1 < even.1, "listed {listed:?} even {even:?}");
        // The same reader on the other node (icelake-2s: 80 CPUs a node) pays remote misses.
        let mut far = r.clone();
        far.cpu_list = vec![100];
        let remote = line_terms(&[&w, &far], &m);
        // Alone on its node it is always the first there to take the line after a write: no
        // fewer transfers than near the writers, where another CPU may have taken it first.
        assert!(remote.1 >= listed.1 - 1e-9, "{remote:?} {listed:?}");
        assert!(remote.3 > listed.3, "{remote:?} {listed:?}");
    }

    #[test]
    fn after_a_write_only_the_first_reader_of_each_node_takes_a_transfer() {
        // CPU 0 writes; CPUs 1-8 (node 0 on icelake-2s) read about as often each. Between two
        // writes several of them read; the first takes the line from the writer, the others
        // find it shared in the node's cache (an LLC hit). Spread over two nodes, the first
        // reader of each node takes a transfer.
        let m = preset("icelake-2s").unwrap();
        let mut w = stream(0, 0.0, 100.0, 1, "w");
        w.cpu_list = vec![0];
        let mut r = stream(0, 800.0, 0.0, 8, "r");
        r.cpu_list = (1..9).collect();
        let near = line_terms(&[&w, &r], &m);
        // About 5 of the 8 read between two writes (1 - e^-1 each): one transfer per write.
        assert!(near.1 > 90.0 && near.1 <= 100.0 + 1e-9, "{near:?}");
        // Cycles: more than the transfers at local HITM (the LLC hits on top), less than
        // every touch at HITM.
        assert!(near.3 > near.1 * m.local_hitm, "{near:?}");
        let mut split = r.clone();
        split.cpu_list = vec![1, 2, 3, 4, 80, 81, 82, 83];
        let far = line_terms(&[&w, &split], &m);
        // Two nodes: two transfers per write.
        assert!(far.1 > 1.8 * near.1, "far {far:?} near {near:?}");
    }

    #[test]
    fn a_line_bouncing_across_sockets_queues_more_than_one_within_a_socket() {
        // Eight CPUs increment a counter: on one socket of icelake-2s, or four on each. As
        // many transfers either way, but a cross-socket one keeps the line busy longer, so at
        // the same scale the spread line runs at a higher utilization.
        let m = preset("icelake-2s").unwrap();
        let mut near = stream(0, 0.0, 1000.0, 8, "inc");
        near.rmw = near.writes;
        near.cpu_list = (0..8).collect();
        let mut far = near.clone();
        far.cpu_list = vec![0, 1, 2, 3, 80, 81, 82, 83];
        let (a, b) = (line_terms(&[&near], &m), line_terms(&[&far], &m));
        assert!((a.1 - b.1).abs() < 1e-6 * a.1, "{a:?} {b:?}");
        let q = Queueing {
            reference: b.3,
            utilization: 0.5,
        };
        let (qa, qb) = (
            queued_line_terms(&[&near], &m, &q),
            queued_line_terms(&[&far], &m, &q),
        );
        assert!(qb.3 / b.3 > qa.3 / a.3 + 0.1, "near {qa:?} far {qb:?}");
    }

    #[test]
    fn a_cpu_misses_once_per_write_whatever_it_touches() {
        // Two CPUs: one writes a field, both read a neighbour. Moving the neighbour away
        // saves little, because the reading CPU touches the line between writes anyway.
        // (The same two CPUs, listed: without lists, two paths are taken to be four CPUs.)
        let m = preset("icelake-2s").unwrap();
        let mut w = stream(0, 100.0, 100.0, 2, "update");
        w.cpu_list = vec![0, 1];
        let mut r = stream(1, 100.0, 0.0, 2, "read");
        r.cpu_list = vec![0, 1];
        let together = line_terms(&[&w, &r], &m);
        let apart = line_terms(&[&w], &m);
        let (t, a) = (together.0 + together.1, apart.0 + apart.1);
        assert!(t >= a && t <= a * 1.25, "together {t} apart {a}");
    }

    #[test]
    fn what_one_path_writes_together_is_one_stream_and_not_false_sharing() {
        // `head` and `tail` both stored by `push` on 8 CPUs: the misses land on the path's
        // own fields, which moving apart cannot remove.
        let m = preset("icelake-2s").unwrap();
        let a = stream(0, 0.0, 1000.0, 8, "push");
        let b = stream(1, 0.0, 1000.0, 8, "push");
        let t = line_breakdown(&[&a, &b], &m);
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
        assert!(t.true_transfers > 0.0);
        // One write stream of both fields (a miss on either is on the stream's own bytes).
        assert!(t.contributions.iter().all(|c| c.writer == vec![0, 1]));
        assert!(t.contributions.iter().all(|c| !c.sharing.is_false()));
        // Loads of `tail` by `push` beside a plain store to `head` of `push`: its own path,
        // one touch of the line per run.
        let rb = stream(1, 1000.0, 0.0, 8, "push");
        let t = line_breakdown(&[&a, &rb], &m);
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
        assert!(
            t.contributions
                .iter()
                .any(|c| c.sharing == Sharing::SamePath)
        );
        // Beside an atomic `head` of `push`, they are a touch of their own: the atomic waits
        // for its line and another CPU can take it between the two, so the load misses on its
        // own, which moving `tail` off the line removes.
        let mut ra = a.clone();
        ra.rmw = ra.writes;
        let t = line_breakdown(&[&ra, &rb], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
        assert!(
            t.contributions
                .iter()
                .all(|c| c.sharing != Sharing::SamePath)
        );
        // Read by another path, `b` is false sharing.
        let c = stream(1, 1000.0, 0.0, 8, "pop");
        let t = line_breakdown(&[&a, &c], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
    }

    #[test]
    fn what_one_run_reads_together_is_one_touch_and_moving_it_apart_removes_nothing() {
        // `lookup` reads three key fields and stores `refs`; `release` stores `refs`. The
        // lookup's misses after a release are its own run's (it stores `refs` too): true
        // sharing, and the line costs no more with the key fields than without them.
        let m = preset("icelake-2s").unwrap();
        let mut keys: Vec<Stream> = (1..4)
            .map(|u| stream(u, 100.0, 0.0, 16, "lookup"))
            .collect();
        let refs_lookup = stream(0, 0.0, 100.0, 16, "lookup");
        let refs_release = stream(0, 0.0, 100.0, 16, "release");
        let mut together: Vec<&Stream> = vec![&refs_lookup, &refs_release];
        together.extend(keys.iter());
        let t = line_breakdown(&together, &m);
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
        assert!(
            t.contributions
                .iter()
                .any(|c| c.sharing == Sharing::SameRun)
        );
        let sum = |x: (f64, f64, f64, f64)| x.2 + x.3;
        let apart = line_terms(&[&refs_lookup, &refs_release], &m);
        assert!(
            sum(line_terms(&together, &m)) <= sum(apart) * (1.0 + 1e-9),
            "together {:?} apart {apart:?}",
            line_terms(&together, &m)
        );
        // The same run with an atomic `refs`: its loads are touches of their own, which an
        // atomic of another CPU can come between; moving them off the line now removes misses.
        let (mut ra, mut rr) = (refs_lookup.clone(), refs_release.clone());
        ra.rmw = ra.writes;
        rr.rmw = rr.writes;
        for k in &mut keys {
            k.run_atomic = true;
        }
        let mut together: Vec<&Stream> = vec![&ra, &rr];
        together.extend(keys.iter());
        let t = line_breakdown(&together, &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
        assert!(sum(line_terms(&together, &m)) > sum(line_terms(&[&ra, &rr], &m)) * 1.1);
    }

    #[test]
    fn a_field_a_run_loads_and_stores_again_counts_once_in_the_runs_that_share() {
        // A message: the sender (CPU 0) reads `f1` and rewrites it, and stores `f0`; the
        // receiver (CPU 80) unlinks it (stores `f0`). Every sender run touches the `f0` the
        // receiver wrote, so its miss on `f1` is true sharing, all of it: 100 runs touch `f1`
        // (a load and a store each), not 200.
        let m = preset("icelake-2s").unwrap();
        let on = |unit: usize, reads: f64, writes: f64, path: &str, cpu: u32| {
            let mut s = stream(unit, reads, writes, 1, path);
            s.cpu_list = vec![cpu];
            s
        };
        let streams = [
            on(0, 0.0, 100.0, "send", 0),
            on(1, 100.0, 100.0, "send", 0),
            on(0, 100.0, 100.0, "handle", 80),
        ];
        let refs: Vec<&Stream> = streams.iter().collect();
        let t = line_breakdown(&refs, &m);
        assert!(t.true_transfers > 0.0, "{t:?}");
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
        assert!(
            t.contributions
                .iter()
                .any(|c| c.victim == 1 && c.sharing == Sharing::SameRun),
            "{t:?}"
        );
    }

    #[test]
    fn a_reader_of_every_writers_member_is_true_sharing_for_it_and_the_writers_false() {
        // CPU 0 sums `t1` and `t2`; CPU 1 spins on and stores `t1`, CPU 2 `t2`.
        let m = preset("icelake-2s").unwrap();
        let on = |unit: usize, reads: f64, writes: f64, path: &str, cpu: u32| {
            let mut s = stream(unit, reads, writes, 1, path);
            s.cpu_list = vec![cpu];
            s
        };
        let streams = [
            on(0, 100.0, 0.0, "sum", 0),
            on(1, 100.0, 0.0, "sum", 0),
            on(0, 100.0, 10.0, "worker", 1),
            on(1, 100.0, 10.0, "worker", 2),
        ];
        let refs: Vec<&Stream> = streams.iter().collect();
        let t = line_breakdown(&refs, &m);
        for c in &t.contributions {
            if refs[c.victim].path == "sum" {
                assert!(!c.sharing.is_false(), "{c:?}");
            }
        }
        assert!(
            t.contributions
                .iter()
                .any(|c| refs[c.victim].path == "worker" && c.sharing.is_false()),
            "{t:?}"
        );
        // The sum is one touch of the line per run: it costs no more with both counts on the
        // line than with one (the writers' misses aside).
        let one = [on(0, 100.0, 0.0, "sum", 0), on(0, 100.0, 10.0, "worker", 1)];
        let two = [
            on(0, 100.0, 0.0, "sum", 0),
            on(1, 100.0, 0.0, "sum", 0),
            on(0, 100.0, 10.0, "worker", 1),
        ];
        let cost = |v: &[Stream]| {
            let r: Vec<&Stream> = v.iter().collect();
            let x = line_terms(&r, &m);
            x.0 + x.1
        };
        assert!(
            (cost(&two) - cost(&one)).abs() <= 1e-9 * cost(&one),
            "{} {}",
            cost(&two),
            cost(&one)
        );
    }

    #[test]
    fn data_a_lock_guards_is_not_false_sharing_but_a_neighbour_read_elsewhere_is() {
        // The lock taken by `lock_acquire`, the data stored by `enqueue` on the same CPUs.
        let m = preset("icelake-2s").unwrap();
        let mut lock = stream(0, 0.0, 500.0, 4, "_raw_spin_lock");
        lock.rmw = 500.0;
        lock.lock = true;
        lock.cpu_list = vec![0, 1, 2, 3];
        let mut data = stream(1, 100.0, 500.0, 4, "enqueue");
        data.cpu_list = vec![0, 1, 2, 3];
        let t = line_breakdown(&[&lock, &data], &m);
        assert_eq!(t.false_transfers, 0.0, "{t:?}");
        assert!(
            t.contributions
                .iter()
                .any(|c| c.sharing == Sharing::UnderLock)
        );
        // Data written by other CPUs than the lock's: not under it.
        let mut other = data.clone();
        other.cpu_list = vec![8, 9];
        let t = line_breakdown(&[&lock, &other], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
        // A read-only neighbour read by another path misses falsely.
        let mut reader = stream(2, 1000.0, 0.0, 4, "lookup");
        reader.cpu_list = vec![4, 5, 6, 7];
        let t = line_breakdown(&[&lock, &data, &reader], &m);
        assert!(t.false_transfers > 0.0, "{t:?}");
    }

    #[test]
    fn without_cpu_lists_different_paths_run_on_different_cpus() {
        // A producer on 1 CPU and a consumer on 1 CPU, counts but no lists: two CPUs, and
        // the consumer's reads of its own index beside the producer's miss.
        let m = preset("icelake-2s").unwrap();
        let prod = stream(0, 0.0, 1000.0, 1, "produce");
        let cons = stream(1, 1000.0, 0.0, 1, "consume");
        let t = line_breakdown(&[&prod, &cons], &m);
        assert!(t.cpus_assumed);
        assert_eq!(t.cpus, 2.0);
        assert!(t.false_transfers > 0.0, "{t:?}");
        // One path alone on one CPU: nothing assumed, nothing moves.
        let t = line_breakdown(&[&prod], &m);
        assert!(!t.cpus_assumed);
        assert_eq!(t.true_transfers + t.false_transfers, 0.0);
    }
}
