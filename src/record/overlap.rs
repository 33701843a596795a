//! Which recorded accesses could meet another thread's on their cache line, decided from
//! what the threads do rather than from how this run happened to interleave them.
//!
//! The simulation (`sim.rs`) replays one interleaving: on a loaded machine two threads that
//! write neighbouring bytes all the time may have run one after the other, and it counts
//! few transfers. Time windows are no better: each thread's span from its first to its last
//! access on a line overlaps another's or not by how the scheduler ran them (Phoenix
//! histogram's first worker finished its short share before the second started in some
//! runs). What the scheduler does not decide is the **lock** a thread holds at each access
//! (the runtime's pthread mutex and spinlock wrappers keep track of it): accesses made
//! inside critical sections of one lock cannot overlap in time, in any run. Data that jobs
//! hand to each other under a mutex (zstd's checksum state) moves once per critical
//! section, at the lock's rate, not once per access. The lock comes from the runtime's
//! tally, which keeps each place apart by the lock its thread held, so it is known for
//! every access, not only for those the trace's windows (bursts) happened to hold.
//!
//! The other order the scheduler does not decide is the program's own phases: an access a
//! thread makes while no other thread of the process is alive (main filling in a table
//! before it creates the workers, reading their results after it joined them) cannot meet
//! any. Such an access is *sequential*, and it does not make another thread's accesses on
//! the line concurrent: one read of a result after the join does not turn a million
//! lock-ordered updates into contention.
//!
//! Which accesses were made alone needs their times: the trace's, as a share of each
//! thread's traced accesses on the line (none for a thread the trace did not hold there).
//!
//! Accesses thread `t` made on a line under lock `L` can meet only the other threads'
//! accesses there not under `L` (and not made alone), and each of those moves the line at
//! most twice: at most twice as many of `t`'s count as concurrent. Accesses under no lock
//! (or under several) meet all; a line no other thread used is no evidence of order:
//! concurrent. `diagnose` prices each access at its concurrent share through the cost
//! model, whose rates then say whether it matters (`details.sequential_accesses` in the
//! profile holds the rest).

use std::collections::HashMap;

use super::FastHash;
use super::trace::Traced;

/// Per (thread, line number, lock held): the share of the thread's accesses there that
/// could meet another thread's.
#[derive(Clone, Debug, Default)]
pub struct Overlap {
    /// Per (thread, line number) traced: the share of its traced accesses there made while
    /// it was the process's only live thread.
    alone: HashMap<(u32, u64), f64, FastHash>,
    /// Per (thread, line number, lock): the concurrent share ([`Overlap::tally`]).
    shares: HashMap<(u32, u64, u16), f64, FastHash>,
}

/// The moments a process had one live thread, from its threads' lives: sorted, disjoint
/// `(from, to, thread)`, inclusive.
struct Alone(Vec<(u64, u64, u32)>);

impl Alone {
    fn new(lives: &[(u32, u64, u64)]) -> Alone {
        // +1 at a start, -1 just after an end; a life with no known end lasts to the end.
        let mut edges: Vec<(u64, i32, u32)> = Vec::with_capacity(lives.len() * 2);
        for &(t, start, end) in lives {
            edges.push((start, 1, t));
            if end >= start && end < u64::MAX {
                edges.push((end + 1, -1, t));
            }
        }
        // Ends before starts at one moment.
        edges.sort_unstable_by_key(|&(at, d, t)| (at, d, t));
        let mut alive: Vec<u32> = Vec::new();
        let mut out: Vec<(u64, u64, u32)> = Vec::new();
        for (i, &(at, d, t)) in edges.iter().enumerate() {
            if d > 0 {
                alive.push(t);
            } else if let Some(k) = alive.iter().position(|&x| x == t) {
                alive.swap_remove(k);
            }
            let next = edges.get(i + 1).map_or(u64::MAX, |e| e.0);
            if alive.len() == 1 && next > at {
                out.push((at, next - 1, alive[0]));
            }
        }
        Alone(out)
    }

    /// Whether `thread` was the only live thread at `tsc`.
    fn at(&self, thread: u32, tsc: u64) -> bool {
        let i = self.0.partition_point(|&(from, _, _)| from <= tsc);
        i > 0 && {
            let (_, to, t) = self.0[i - 1];
            tsc <= to && t == thread
        }
    }
}

/// A tally lock that orders a thread's accesses: a real lock's tag (top bit set); none and
/// several ([`super::trace::LOCKS_SEVERAL`]) order nothing, and are one key, 0.
fn ordering_lock(lock: u16) -> u16 {
    if lock & 0x8000 != 0 { lock } else { 0 }
}

impl Overlap {
    /// What the trace says of order: per thread and line, the share of its accesses made
    /// while no other thread was alive. `line`: bytes a line; `lives`: each thread's
    /// (index, first, last) moments, in the trace's clock.
    pub fn of(traced: &[Traced], line: u64, lives: &[(u32, u64, u64)]) -> Overlap {
        let line = line.max(1);
        let alone = Alone::new(lives);
        // (thread, line) -> (alone, all)
        let mut counts: HashMap<(u32, u64), (u64, u64), FastHash> = HashMap::default();
        for e in traced {
            let c = counts.entry((e.thread, e.addr / line)).or_default();
            c.0 += u64::from(alone.at(e.thread, e.tsc));
            c.1 += 1;
        }
        Overlap {
            alone: counts
                .into_iter()
                .filter(|(_, (a, _))| *a > 0)
                .map(|(k, (a, n))| (k, a as f64 / n as f64))
                .collect(),
            shares: HashMap::default(),
        }
    }

    /// The concurrent shares, from the tally: `counts` holds every tallied (thread, line
    /// number, lock held, accesses), places of one key summed or not.
    pub fn tally(&mut self, counts: impl IntoIterator<Item = (u32, u64, u16, f64)>) {
        // (line, thread, lock, accesses), sorted by key and summed per key in the order
        // given (a stable sort): one vector, where a map of maps per line cost a quarter of
        // a large recording's post-processing (zstd: a million lines, three small tables
        // allocated for each).
        let mut all: Vec<(u64, u32, u16, f64)> = counts
            .into_iter()
            .map(|(t, line_no, lock, n)| (line_no, t, ordering_lock(lock), n))
            .collect();
        all.sort_by_key(|&(line_no, t, lock, _)| (line_no, t, lock));
        let mut merged: Vec<(u64, u32, u16, f64)> = Vec::with_capacity(all.len());
        for e in all {
            match merged.last_mut() {
                Some(last) if (last.0, last.1, last.2) == (e.0, e.1, e.2) => last.3 += e.3,
                _ => merged.push(e),
            }
        }
        self.shares.reserve(merged.len());
        // Per thread on the line: its entries [from, to) of the line's, the share kept
        // (not made alone), and its accesses beside others.
        let mut threads: Vec<(u32, usize, usize, f64, f64)> = Vec::new();
        let mut i = 0;
        while i < merged.len() {
            let line_no = merged[i].0;
            let mut j = i;
            while j < merged.len() && merged[j].0 == line_no {
                j += 1;
            }
            let on_line = &merged[i..j];
            threads.clear();
            let mut a = 0;
            while a < on_line.len() {
                let t = on_line[a].1;
                let mut b = a;
                while b < on_line.len() && on_line[b].1 == t {
                    b += 1;
                }
                // Each thread's accesses beside others (not alone), by lock.
                let keep = 1.0 - self.alone.get(&(t, line_no)).copied().unwrap_or(0.0);
                let total: f64 = on_line[a..b].iter().map(|e| e.3 * keep).sum();
                threads.push((t, a, b, keep, total));
                a = b;
            }
            for &(t, from, to, keep, _) in &threads {
                let others = threads.iter().filter(|o| o.0 != t && o.4 > 0.0);
                for &(_, _, lock, n) in &on_line[from..to] {
                    if n <= 0.0 {
                        continue;
                    }
                    let near = n * keep;
                    let concurrent = if lock == 0 || others.clone().next().is_none() {
                        near
                    } else {
                        // Under `lock`: it meets only the others' accesses not under it, each
                        // moving the line at most twice.
                        let meet: f64 = others
                            .clone()
                            .map(|&(_, of, ot, okeep, total)| {
                                total
                                    - on_line[of..ot]
                                        .iter()
                                        .find(|e| e.2 == lock)
                                        .map_or(0.0, |e| e.3 * okeep)
                            })
                            .sum();
                        near.min(2.0 * meet)
                    };
                    self.shares
                        .insert((t, line_no, lock), (concurrent / n).clamp(0.0, 1.0));
                }
            }
            i = j;
        }
    }

    /// The share of `thread`'s accesses to line `line_no` under `lock` (the tally's) that
    /// could meet another thread's; 1 where the tally did not say (no evidence of order).
    pub fn share_at(&self, thread: u32, line_no: u64, lock: u16) -> f64 {
        self.shares
            .get(&(thread, line_no, ordering_lock(lock)))
            .copied()
            .unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sim::Kind;

    /// An access, and the lock its thread held.
    fn ev(tsc: u64, thread: u32, addr: u64, lock: u16) -> (Traced, u16) {
        let e = Traced {
            tsc,
            thread,
            addr,
            size: 8,
            kind: Kind::Store,
            pc: 0x1000,
        };
        (e, lock)
    }

    fn traced(t: &[(Traced, u16)]) -> Vec<Traced> {
        t.iter().map(|e| e.0).collect()
    }

    /// The overlap of a run whose trace and tally both hold exactly these accesses.
    fn overlap(t: &[(Traced, u16)], lives: &[(u32, u64, u64)]) -> Overlap {
        let mut o = Overlap::of(&traced(t), 64, lives);
        o.tally(
            t.iter()
                .map(|(e, lock)| (e.thread, e.addr / 64, *lock, 1.0)),
        );
        o
    }

    #[test]
    fn threads_without_a_common_lock_are_concurrent_whatever_the_interleaving() {
        // One thread after the other (a loaded machine, or a short first thread): still
        // concurrent, since nothing orders them.
        let mut t = Vec::new();
        for i in 0..10 {
            t.push(ev(i, 0, 0x1000, 0));
        }
        for i in 10..20 {
            t.push(ev(i, 1, 0x1008, 0x8001));
        }
        let o = overlap(&t, &[]);
        assert_eq!(o.share_at(0, 0x40, 0), 1.0);
        assert_eq!(o.share_at(1, 0x40, 0x8001), 1.0);
    }

    #[test]
    fn critical_sections_of_one_lock_do_not_overlap_however_the_windows_do() {
        // Jobs alternate between two threads under one mutex: the critical sections never
        // overlap.
        let lock = 0x8000 | 0x123;
        let mut t = Vec::new();
        for job in 0..6u64 {
            for i in 0..10 {
                t.push(ev(job * 100 + i, (job % 2) as u32, 0x2000, lock));
            }
        }
        let o = overlap(&t, &[]);
        assert_eq!(o.share_at(0, 0x80, lock), 0.0);
        assert_eq!(o.share_at(1, 0x80, lock), 0.0);
        // One access of thread 1 outside the lock: it can meet thread 0's, and thread 0's
        // can meet it (2 of its 30).
        t.push(ev(150, 1, 0x2000, 0));
        let o = overlap(&t, &[]);
        assert_eq!(o.share_at(0, 0x80, lock), 2.0 / 30.0);
        assert_eq!(o.share_at(1, 0x80, 0), 1.0);
        // Counted under several locks: ordered by none.
        let o = {
            let mut o = Overlap::of(&traced(&t), 64, &[]);
            o.tally([
                (0, 0x80, lock, 30.0),
                (1, 0x80, super::super::trace::LOCKS_SEVERAL, 30.0),
            ]);
            o
        };
        assert_eq!(o.share_at(0, 0x80, lock), 1.0);
    }

    #[test]
    fn accesses_made_while_no_other_thread_lives_meet_none() {
        // zstd's checksum state: two workers (1 and 2, alive 100..=900) hand it over under
        // a mutex; main (0) stores it before creating them and reads it after the join.
        let lock = 0x8000 | 0x55;
        let lives = [(0, 0, u64::MAX), (1, 100, 900), (2, 110, 905)];
        let mut t = vec![ev(50, 0, 0x3000, 0)];
        for job in 0..20u64 {
            for i in 0..10 {
                t.push(ev(200 + job * 30 + i, 1 + (job % 2) as u32, 0x3008, lock));
            }
        }
        t.push(ev(1000, 0, 0x3000, 0));
        let o = overlap(&t, &lives);
        assert_eq!(o.share_at(0, 0xc0, 0), 0.0);
        assert_eq!(o.share_at(1, 0xc0, lock), 0.0);
        assert_eq!(o.share_at(2, 0xc0, lock), 0.0);
        // Main's read while a worker still lives (no join first): it can meet the
        // worker's, and the worker's can meet it, but one read moves the line at most
        // twice: 2 of worker 1's 100 lock-ordered accesses, not all of them.
        t.push(ev(902, 0, 0x3000, 0));
        let o = overlap(&t, &lives);
        assert!(
            (o.share_at(0, 0xc0, 0) - 1.0 / 3.0).abs() < 1e-12,
            "its read beside the worker, not the two alone"
        );
        assert!((o.share_at(1, 0xc0, lock) - 0.02).abs() < 1e-12);
        // A thread writing without the lock all the time meets every locked access.
        for i in 0..200 {
            t.push(ev(200 + i * 3, 0, 0x3010, 0));
        }
        let o = overlap(&t, &lives);
        assert_eq!(o.share_at(1, 0xc0, lock), 1.0);
        // Two workers one after the other, main alive throughout: main's life keeps them
        // concurrent (no order between the two but the scheduler's).
        let lives = [(0, 0, u64::MAX), (1, 100, 200), (2, 300, 400)];
        let t = [ev(150, 1, 0x1000, 0), ev(350, 2, 0x1008, 0)];
        let o = overlap(&t, &lives);
        assert_eq!(o.share_at(1, 0x40, 0), 1.0);
        assert_eq!(o.share_at(2, 0x40, 0), 1.0);
    }

    #[test]
    fn accesses_the_windows_missed_are_ordered_by_the_locks_the_tally_says_they_held() {
        // Two workers update a state under one mutex; the trace's windows held none of it
        // (zstd's checksum state between windows), and main's few unlocked reads beside
        // them: the tally alone orders them, and bounds what main's reads can meet.
        let lock = 0x8000 | 0x77;
        let mut o = Overlap::of(&[], 64, &[]);
        o.tally([
            (1, 0x80, lock, 500_000.0),
            (2, 0x80, lock, 500_000.0),
            (0, 0x80, 0, 3.0),
        ]);
        assert_eq!(o.share_at(0, 0x80, 0), 1.0);
        assert!((o.share_at(1, 0x80, lock) - 6.0 / 500_000.0).abs() < 1e-12);
        // Two locks order nothing.
        let mut o = Overlap::of(&[], 64, &[]);
        o.tally([(1, 0x80, lock, 10.0), (2, 0x80, 0x8000 | 0x12, 10.0)]);
        assert_eq!(o.share_at(1, 0x80, lock), 1.0);
        // A line the tally does not hold, or one thread alone on a line: no evidence.
        assert_eq!(o.share_at(1, 0x99, lock), 1.0);
        let mut o = Overlap::of(&[], 64, &[]);
        o.tally([(1, 0x80, lock, 10.0)]);
        assert_eq!(o.share_at(1, 0x80, lock), 1.0);
    }
}
