//! Coherence simulation: replays an ordered stream of memory accesses from several threads
//! through a MESI-style model of private caches, one cache per thread, and counts for every
//! access how often it had to take a line from another thread's cache.
//!
//! Pure: no I/O, no clock. The caller gives accesses in global order (by timestamp) and an
//! opaque `site` per access (which code, which thread, which bytes); the simulation returns
//! per site:
//!
//! - `transfers`: the access missed and another thread held the line **modified** (a load,
//!   store or atomic that must fetch a dirty line: what perf c2c calls a HITM for loads, and
//!   what an RFO that finds the line modified costs for stores). Each transfer is
//!   **true sharing** when some byte the access touches was written by another thread since
//!   this thread last held the line (it needs that data, or writes data another wrote), and
//!   **false sharing** otherwise (the line moved only because of other bytes on it);
//! - `invalidations`: a store or atomic that found the line only *shared* by other threads
//!   (an upgrade: the other copies are invalidated, no dirty data moves);
//! - `traced`: how many accesses of the site the stream held.
//!
//! Model: each line (`unit` bytes: the line size, or 128 for the adjacent-line prefetcher's
//! pairs) has a set of holders and at most one owner (modified). A load by a non-holder
//! joins the holders (the owner, if any, is downgraded to shared: a transfer); a store or
//! atomic makes its thread the only holder and the owner (a transfer when another thread
//! owned it, an invalidation when others only shared it). A thread that is the only holder
//! of a clean line writes it silently (exclusive). Lines are separate per address space
//! (`space`: processes after fork do not share memory).
//!
//! Recordings are sampled in time windows (see docs/record.md); when consecutive accesses of
//! a line are more than one window apart, what happened in between was not seen, so the
//! line starts over as uncached.

use std::collections::HashMap;

use super::FastHash;

/// What an access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Load,
    Store,
    /// Atomic read-modify-write (locked instruction, compare-and-swap, lock word update).
    Rmw,
}

/// One memory access in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Global order key (a timestamp); ties keep input order.
    pub time: u64,
    /// Address space (process); lines of different spaces never interact.
    pub space: u32,
    pub thread: u32,
    pub addr: u64,
    pub size: u32,
    pub kind: Kind,
    /// Caller's id for where the access came from; results are indexed by it.
    pub site: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Bytes per simulated line: the cache line size, or twice it for adjacent-line pairs.
    pub unit: u64,
    /// log2 of the sampling window length in `time` units; accesses of one line more than
    /// one window apart reset it. `None`: the stream is complete, never reset.
    pub window_log2: Option<u32>,
    /// Also total per line ([`Outcome::lines`]); per site only when false (a hash
    /// update per access saved when the caller does not read them).
    pub line_totals: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            unit: 64,
            window_log2: None,
            line_totals: true,
        }
    }
}

/// What the simulation counted for one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteStats {
    pub traced: u64,
    pub transfers_true: u64,
    pub transfers_false: u64,
    pub invalidations: u64,
}

impl SiteStats {
    pub fn transfers(&self) -> u64 {
        self.transfers_true + self.transfers_false
    }
}

/// Per line totals, for reports: transfers by address space and line start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    pub transfers_true: u64,
    pub transfers_false: u64,
    pub invalidations: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Indexed by site.
    pub sites: Vec<SiteStats>,
    /// By (space, line start); empty unless [`Config::line_totals`].
    pub lines: HashMap<(u32, u64), LineStats, FastHash>,
}

const NOBODY: u32 = u32::MAX;

struct Line {
    window: u64,
    owner: u32,
    holders: Vec<u32>,
    /// Per byte: the thread that wrote it last and when (access sequence number).
    writer: Vec<u32>,
    written: Vec<u64>,
    /// Per thread: when it last lost its copy (sequence number).
    lost: Vec<(u32, u64)>,
}

impl Line {
    fn new(unit: usize, window: u64) -> Self {
        Line {
            window,
            owner: NOBODY,
            holders: Vec::new(),
            writer: vec![NOBODY; unit],
            written: vec![0; unit],
            lost: Vec::new(),
        }
    }

    fn reset(&mut self, window: u64) {
        self.window = window;
        self.owner = NOBODY;
        self.holders.clear();
        self.lost.clear();
    }

    fn lost_at(&self, thread: u32) -> u64 {
        self.lost
            .iter()
            .find(|(t, _)| *t == thread)
            .map_or(0, |(_, s)| *s)
    }

    fn set_lost(&mut self, thread: u32, seq: u64) {
        match self.lost.iter_mut().find(|(t, _)| *t == thread) {
            Some(e) => e.1 = seq,
            None => self.lost.push((thread, seq)),
        }
    }

    /// Did another thread write any of bytes `lo..hi` since `thread` last held the line?
    fn needs_others_data(&self, thread: u32, lo: usize, hi: usize) -> bool {
        let since = self.lost_at(thread);
        (lo..hi).any(|b| {
            let w = self.writer[b];
            w != NOBODY && w != thread && self.written[b] >= since
        })
    }
}

/// Replays `accesses` (sorted here by `time`, stable) and counts per site.
pub fn simulate(accesses: &[Access], config: &Config) -> Outcome {
    simulate_by(accesses.len(), |i| accesses[i], config)
}

/// [`simulate`] over `n` accesses that `access(i)` makes on demand, for a caller whose
/// stream is held in another shape (the recorder's trace, without a copy of it).
pub fn simulate_by(n: usize, access: impl Fn(usize) -> Access, config: &Config) -> Outcome {
    let unit = config.unit.max(1);
    let sites = (0..n)
        .map(|i| access(i).site as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = Outcome {
        sites: vec![SiteStats::default(); sites],
        lines: HashMap::default(),
    };
    // By time, ties in input order: (time, index) pairs side by side sort faster than
    // indices compared through the accesses. A recording's trace comes in chunks each in
    // time order: the stable sort finds those runs and merges them.
    let mut order: Vec<(u64, u32)> = (0..n).map(|i| (access(i).time, i as u32)).collect();
    order.sort();
    // Lines by number, found by address; consecutive accesses often meet the same line
    // (threads taking turns on it), which is then found without hashing.
    let mut lines: Vec<Line> = Vec::new();
    let mut line_index: HashMap<(u32, u64), u32, FastHash> = HashMap::default();
    let mut last: Option<((u32, u64), usize)> = None;
    for (seq, &(_, i)) in order.iter().enumerate() {
        let a = &access(i as usize);
        let seq = seq as u64 + 1;
        out.sites[a.site as usize].traced += 1;
        let window = config.window_log2.map_or(0, |w| a.time >> w);
        // An access may straddle lines: each piece is simulated, counted once per line.
        let end = a.addr.saturating_add(u64::from(a.size.max(1)));
        let mut start = a.addr;
        while start < end {
            let line_start = start - start % unit;
            let piece_end = end.min(line_start + unit);
            let lo = (start - line_start) as usize;
            let hi = (piece_end - line_start) as usize;
            let key = (a.space, line_start);
            let li = match last {
                Some((k, li)) if k == key => li,
                _ => {
                    let li = *line_index.entry(key).or_insert_with(|| {
                        lines.push(Line::new(unit as usize, window));
                        (lines.len() - 1) as u32
                    }) as usize;
                    last = Some((key, li));
                    li
                }
            };
            let line = &mut lines[li];
            if config.window_log2.is_some() && window > line.window + 1 {
                line.reset(window);
            }
            line.window = window;
            let site = &mut out.sites[a.site as usize];
            let mut unused = LineStats::default();
            let stats = if config.line_totals {
                out.lines.entry((a.space, line_start)).or_default()
            } else {
                &mut unused
            };
            step(line, a.thread, a.kind, lo, hi, seq, site, stats);
            start = piece_end;
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn step(
    line: &mut Line,
    t: u32,
    kind: Kind,
    lo: usize,
    hi: usize,
    seq: u64,
    site: &mut SiteStats,
    stats: &mut LineStats,
) {
    let holds = line.holders.contains(&t);
    let transfer = |line: &Line, site: &mut SiteStats, stats: &mut LineStats| {
        if line.needs_others_data(t, lo, hi) {
            site.transfers_true += 1;
            stats.transfers_true += 1;
        } else {
            site.transfers_false += 1;
            stats.transfers_false += 1;
        }
    };
    match kind {
        Kind::Load => {
            if holds {
                return;
            }
            if line.owner != NOBODY && line.owner != t {
                transfer(line, site, stats);
                line.owner = NOBODY;
            }
            line.holders.push(t);
        }
        Kind::Store | Kind::Rmw => {
            if line.owner == t {
                // Modified here already.
            } else {
                if line.owner != NOBODY {
                    transfer(line, site, stats);
                } else if line.holders.iter().any(|&h| h != t) {
                    site.invalidations += 1;
                    stats.invalidations += 1;
                }
                for i in 0..line.holders.len() {
                    let h = line.holders[i];
                    if h != t {
                        line.set_lost(h, seq);
                    }
                }
                line.holders.clear();
                line.holders.push(t);
                line.owner = t;
            }
            for b in lo..hi {
                line.writer[b] = t;
                line.written[b] = seq;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(time: u64, thread: u32, addr: u64, size: u32, kind: Kind, site: u32) -> Access {
        Access {
            time,
            space: 0,
            thread,
            addr,
            size,
            kind,
            site,
        }
    }

    #[test]
    fn ping_pong_on_different_bytes_is_false_sharing() {
        // Two threads alternately store to their own 8 bytes of one line.
        let mut s = Vec::new();
        for i in 0..10u64 {
            s.push(acc(2 * i, 0, 0x1000, 8, Kind::Store, 0));
            s.push(acc(2 * i + 1, 1, 0x1008, 8, Kind::Store, 1));
        }
        let o = simulate(&s, &Config::default());
        // Thread 0's first store is a cold miss; every later store takes the line over.
        assert_eq!(o.sites[0].transfers_false, 9);
        assert_eq!(o.sites[1].transfers_false, 10);
        assert_eq!(o.sites[0].transfers_true + o.sites[1].transfers_true, 0);
        assert_eq!(o.lines[&(0, 0x1000)].transfers_false, 19);
    }

    #[test]
    fn ping_pong_on_the_same_counter_is_true_sharing() {
        let mut s = Vec::new();
        for i in 0..10u64 {
            s.push(acc(2 * i, 0, 0x2000, 8, Kind::Rmw, 0));
            s.push(acc(2 * i + 1, 1, 0x2000, 8, Kind::Rmw, 1));
        }
        let o = simulate(&s, &Config::default());
        assert_eq!(o.sites[0].transfers_true, 9);
        assert_eq!(o.sites[1].transfers_true, 10);
        assert_eq!(o.sites[0].transfers_false + o.sites[1].transfers_false, 0);
    }

    #[test]
    fn private_lines_and_read_sharing_cost_nothing() {
        let mut s = Vec::new();
        for i in 0..10u64 {
            s.push(acc(3 * i, 0, 0x1000, 8, Kind::Store, 0));
            s.push(acc(3 * i + 1, 1, 0x1040, 8, Kind::Store, 1));
            // Both read a line nobody writes.
            s.push(acc(3 * i + 2, i as u32 % 2, 0x3000, 8, Kind::Load, 2));
        }
        let o = simulate(&s, &Config::default());
        for site in &o.sites {
            assert_eq!(site.transfers() + site.invalidations, 0, "{site:?}");
        }
    }

    #[test]
    fn loads_of_data_another_thread_wrote_are_true_transfers() {
        // Producer writes, consumer reads the same field; then the producer writes again
        // (an invalidation of the consumer's shared copy, not a transfer).
        let s = [
            acc(0, 0, 0x100, 8, Kind::Store, 0),
            acc(1, 1, 0x100, 8, Kind::Load, 1),
            acc(2, 0, 0x100, 8, Kind::Store, 2),
            acc(3, 1, 0x100, 8, Kind::Load, 1),
        ];
        let o = simulate(&s, &Config::default());
        assert_eq!(o.sites[1].transfers_true, 2);
        assert_eq!(o.sites[2].invalidations, 1);
        assert_eq!(o.sites[2].transfers(), 0);
    }

    #[test]
    fn a_reader_of_its_own_field_pays_false_sharing_for_a_writer_next_door() {
        let s = [
            acc(0, 1, 0x108, 8, Kind::Load, 1),  // reader caches the line
            acc(1, 0, 0x100, 8, Kind::Store, 0), // writer invalidates it
            acc(2, 1, 0x108, 8, Kind::Load, 1),  // reader misses: false sharing
        ];
        let o = simulate(&s, &Config::default());
        assert_eq!(o.sites[0].invalidations, 1);
        assert_eq!(o.sites[1].transfers_false, 1);
        assert_eq!(o.sites[1].transfers_true, 0);
    }

    #[test]
    fn adjacent_line_pairs_share_what_lines_do_not() {
        // Two threads on neighbouring 64-byte lines: nothing at 64, false sharing at 128.
        let mut s = Vec::new();
        for i in 0..5u64 {
            s.push(acc(2 * i, 0, 0x1000, 8, Kind::Store, 0));
            s.push(acc(2 * i + 1, 1, 0x1040, 8, Kind::Store, 1));
        }
        let lines = simulate(&s, &Config::default());
        assert_eq!(lines.sites[0].transfers() + lines.sites[1].transfers(), 0);
        let pairs = simulate(
            &s,
            &Config {
                unit: 128,
                ..Config::default()
            },
        );
        assert_eq!(
            pairs.sites[0].transfers_false + pairs.sites[1].transfers_false,
            9
        );
    }

    #[test]
    fn sites_count_the_same_without_line_totals() {
        let mut s = Vec::new();
        for i in 0..20u64 {
            s.push(acc(3 * i, 0, 0x1000 + i % 3 * 8, 8, Kind::Store, 0));
            s.push(acc(3 * i + 1, 1, 0x1008, 8, Kind::Load, 1));
            s.push(acc(3 * i + 2, 2, 0x103c, 8, Kind::Rmw, 2));
        }
        let with = simulate(&s, &Config::default());
        let without = simulate(
            &s,
            &Config {
                line_totals: false,
                ..Config::default()
            },
        );
        assert_eq!(with.sites, without.sites);
        assert!(with.sites.iter().any(|x| x.transfers() > 0));
        assert!(!with.lines.is_empty());
        assert!(without.lines.is_empty());
    }

    #[test]
    fn processes_do_not_share_lines() {
        let mut s = Vec::new();
        for i in 0..5u64 {
            s.push(acc(2 * i, 0, 0x1000, 8, Kind::Store, 0));
            let mut b = acc(2 * i + 1, 1, 0x1000, 8, Kind::Store, 1);
            b.space = 1;
            s.push(b);
        }
        let o = simulate(&s, &Config::default());
        assert_eq!(o.sites[0].transfers() + o.sites[1].transfers(), 0);
    }

    #[test]
    fn a_gap_between_windows_forgets_the_line() {
        let s = [
            acc(0, 0, 0x100, 8, Kind::Store, 0),
            acc(1, 1, 0x108, 8, Kind::Store, 1), // transfer (same window)
            acc(10 << 4, 0, 0x100, 8, Kind::Store, 0), // far later: starts over
        ];
        let o = simulate(
            &s,
            &Config {
                window_log2: Some(4),
                ..Config::default()
            },
        );
        assert_eq!(o.sites[1].transfers_false, 1);
        assert_eq!(o.sites[0].transfers(), 0);
    }

    #[test]
    fn accesses_are_ordered_by_time_not_input_order() {
        let s = [
            acc(5, 1, 0x108, 8, Kind::Store, 1),
            acc(1, 0, 0x100, 8, Kind::Store, 0),
        ];
        let o = simulate(&s, &Config::default());
        // Thread 0 first (cold), thread 1 takes it from 0.
        assert_eq!(o.sites[1].transfers_false, 1);
        assert_eq!(o.sites[0].transfers(), 0);
    }

    #[test]
    fn a_straddling_access_touches_both_lines() {
        let s = [
            acc(0, 0, 0x13c, 8, Kind::Store, 0), // bytes 0x13c..0x144: two lines
            acc(1, 1, 0x100, 4, Kind::Load, 1),
            acc(2, 1, 0x140, 4, Kind::Load, 1),
        ];
        let o = simulate(&s, &Config::default());
        assert_eq!(o.sites[1].transfers_false, 1);
        assert_eq!(o.sites[1].transfers_true, 1);
    }
}
