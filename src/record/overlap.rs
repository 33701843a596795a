//! Which recorded accesses could meet another thread's on their cache line, decided from
//! what the threads do rather than from how this run happened to interleave them.
//!
//! The simulation (`sim.rs`) replays one interleaving: on a loaded machine two threads that
//! write neighbouring bytes all the time may have run one after the other, and it counts
//! few transfers. Time windows are no better: each thread's span from its first to its last
//! access on a line overlaps another's or not by how the scheduler ran them (Phoenix
//! histogram's first worker finished its short share before the second started in some
//! runs). What the scheduler does not decide is the **lock** a thread holds at each access
//! (the runtime stamps its pthread mutexes and spinlocks into the trace): accesses made
//! inside critical sections of one lock cannot overlap in time, in any run. Data that jobs
//! hand to each other under a mutex (zstd's checksum state) moves once per critical
//! section, at the lock's rate, not once per access.
//!
//! The other order the scheduler does not decide is the program's own phases: an access a
//! thread makes while no other thread of the process is alive (main filling in a table
//! before it creates the workers, reading their results after it joined them) cannot meet
//! any. Such an access is *sequential*, and it does not make another thread's accesses on
//! the line concurrent: one read of a result after the join does not turn a million
//! lock-ordered updates into contention.
//!
//! An access of thread `t` on a line is also *sequential* when `t` made it holding a lock
//! that every other thread traced on the line held at every one of its accesses there
//! (those made alone not counted); every other access is *concurrent* (a line no other
//! thread was traced on included: that is no evidence of order). Where the others made some
//! accesses without that lock (main resetting the state before a job, reading the result
//! after it), `t`'s accesses under the lock can meet only those, and each moves the line at
//! most twice: at most twice as many of `t`'s count as concurrent. `diagnose` prices each
//! access at its concurrent share through the cost model, whose rates then say whether it
//! matters (`details.sequential_accesses` in the profile holds the rest).

use std::collections::HashMap;

use super::FastHash;
use super::trace::Traced;

/// Per (thread, line number): the thread's traced accesses on the line, and how many of
/// them were concurrent.
#[derive(Clone, Debug, Default)]
pub struct Overlap {
    by: HashMap<(u32, u64), (u64, u64), FastHash>,
    /// Per (thread, line number) traced: the lock held at every access it made there beside
    /// other threads (`None`: several, or none); absent when it made none beside others.
    lock_on_line: HashMap<(u32, u64), Option<u16>, FastHash>,
    /// Per code site: the lock held at every traced access it made beside other threads, by
    /// any thread on any line (`None`: several, or none).
    site_lock: HashMap<u64, Option<u16>, FastHash>,
    /// Untraced (thread, line number, code site): whether its accesses were sequential,
    /// inferred from the sites' locks ([`Overlap::infer_untraced`]).
    untraced: HashMap<(u32, u64, u64), bool, FastHash>,
}

/// The lock value standing for "made while no other thread was alive" (real locks are
/// `0x8000 | 15 bits`, below it).
const ALONE: u16 = u16::MAX;

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

/// One thread's accesses to one line.
struct OnLine {
    thread: u32,
    /// Its accesses made beside other threads (not alone), by the lock held (0: none).
    by_lock: HashMap<u16, u64, FastHash>,
    /// How many those are.
    beside: u64,
    /// Range of the thread's events in the sorted list.
    events: std::ops::Range<usize>,
}

impl OnLine {
    /// Whether it made any access while another thread was alive.
    fn beside_others(&self) -> bool {
        self.beside > 0
    }

    /// The lock held at every access made beside other threads, when one was (and the
    /// same one).
    fn lock(&self) -> Option<u16> {
        let mut locks = self.by_lock.keys();
        match (locks.next(), locks.next()) {
            (Some(&l), None) if l != 0 => Some(l),
            _ => None,
        }
    }
}

impl Overlap {
    /// The accesses of every thread on every line of `traced`, `line` bytes a line.
    /// `lives`: each thread's (index, first, last) moments, in the trace's clock.
    pub fn of(traced: &[Traced], line: u64, lives: &[(u32, u64, u64)]) -> Overlap {
        let line = line.max(1);
        let alone = Alone::new(lives);
        // (line number, thread, lock), sorted: each line's threads. An access made while
        // its thread was the only one alive is ordered with every other: `ALONE`.
        let mut out = Overlap::default();
        let mut events: Vec<(u64, u32, u16)> = traced
            .iter()
            .map(|e| {
                let lock = if alone.at(e.thread, e.tsc) {
                    ALONE
                } else {
                    e.lock
                };
                if lock != ALONE {
                    let held = out.site_lock.entry(e.pc).or_insert(Some(lock));
                    if *held != Some(lock) || lock == 0 {
                        *held = None;
                    }
                }
                (e.addr / line, e.thread, lock)
            })
            .collect();
        events.sort_unstable();
        let mut threads: Vec<OnLine> = Vec::new();
        let mut i = 0;
        while i < events.len() {
            let line_no = events[i].0;
            threads.clear();
            let mut j = i;
            while j < events.len() && events[j].0 == line_no {
                let thread = events[j].1;
                let start = j;
                let mut by_lock: HashMap<u16, u64, FastHash> = HashMap::default();
                while j < events.len() && events[j].0 == line_no && events[j].1 == thread {
                    if events[j].2 != ALONE {
                        *by_lock.entry(events[j].2).or_default() += 1;
                    }
                    j += 1;
                }
                threads.push(OnLine {
                    thread,
                    beside: by_lock.values().sum(),
                    by_lock,
                    events: start..j,
                });
            }
            for t in &threads {
                let others: Vec<&OnLine> = threads
                    .iter()
                    .filter(|u| u.thread != t.thread && u.beside_others())
                    .collect();
                // Accesses under lock `L` meet only the others' accesses not under `L`, and
                // each of those moves the line at most twice (to its thread and back): a
                // handful of unlocked setup or result accesses by another thread do not make
                // a million lock-ordered ones concurrent. Accesses under no lock meet all.
                let concurrent: u64 = if others.is_empty() {
                    t.beside
                } else {
                    t.by_lock
                        .iter()
                        .map(|(&lock, &n)| {
                            if lock == 0 {
                                return n;
                            }
                            let meet: u64 = others
                                .iter()
                                .map(|u| u.beside - u.by_lock.get(&lock).copied().unwrap_or(0))
                                .sum();
                            n.min(2 * meet)
                        })
                        .sum()
                };
                out.by
                    .insert((t.thread, line_no), (concurrent, t.events.len() as u64));
                if t.beside_others() {
                    out.lock_on_line.insert((t.thread, line_no), t.lock());
                }
            }
            i = j;
        }
        out
    }

    /// The share of `thread`'s accesses to line `line_no` that were concurrent; 1 where the
    /// trace holds none of them (no evidence of the order: priced as concurrent, as before).
    pub fn share(&self, thread: u32, line_no: u64) -> f64 {
        match self.by.get(&(thread, line_no)) {
            Some(&(concurrent, all)) if all > 0 => concurrent as f64 / all as f64,
            _ => 1.0,
        }
    }

    /// [`Overlap::share`] of the accesses code site `pc` made; where the trace holds none of
    /// the thread's accesses to the line, what the sites' locks say
    /// ([`Overlap::infer_untraced`]).
    pub fn share_at(&self, thread: u32, line_no: u64, pc: u64) -> f64 {
        if self.by.contains_key(&(thread, line_no)) {
            return self.share(thread, line_no);
        }
        match self.untraced.get(&(thread, line_no, pc)) {
            Some(true) => 0.0,
            _ => 1.0,
        }
    }

    /// The order of accesses the trace's windows missed. Which lock a thread holds at an
    /// access is a property of the code, not of the interleaving: a code site inside a
    /// critical section holds the lock at every execution. So where a thread's accesses to a
    /// line were never traced (the windows missed them: `lineup record` traces bursts), each
    /// of its code sites there stands for the lock it held at its traced accesses anywhere.
    /// The line's rule is then the traced one: the accesses of a site that held lock `L` are
    /// sequential when every other thread on the line (traced there, or through its sites)
    /// held `L` too. `keys`: every tallied (thread, line number, code site).
    pub fn infer_untraced(&mut self, keys: impl IntoIterator<Item = (u32, u64, u64)>) {
        // line -> thread -> sites, for the lines some thread's accesses were not traced on.
        let mut lines: HashMap<u64, HashMap<u32, Vec<u64>, FastHash>, FastHash> =
            HashMap::default();
        for (thread, line_no, pc) in keys {
            lines
                .entry(line_no)
                .or_default()
                .entry(thread)
                .or_default()
                .push(pc);
        }
        let site = |pc: &u64| self.site_lock.get(pc).copied().flatten();
        for (line_no, threads) in lines {
            if threads.keys().all(|t| self.by.contains_key(&(*t, line_no))) {
                continue;
            }
            // Each thread's lock on the line: traced, or the one lock all its sites held.
            let lock_of = |t: u32, pcs: &[u64]| -> Option<u16> {
                match self.lock_on_line.get(&(t, line_no)) {
                    Some(l) => *l,
                    None if self.by.contains_key(&(t, line_no)) => None,
                    None => {
                        let first = site(&pcs[0])?;
                        pcs.iter().all(|p| site(p) == Some(first)).then_some(first)
                    }
                }
            };
            let locks: Vec<(u32, Option<u16>)> = threads
                .iter()
                .map(|(t, pcs)| (*t, lock_of(*t, pcs)))
                .collect();
            for (t, pcs) in &threads {
                let others: Vec<Option<u16>> = locks
                    .iter()
                    .filter(|(u, _)| u != t)
                    .map(|(_, l)| *l)
                    .collect();
                let all_hold = |l: u16| !others.is_empty() && others.iter().all(|o| *o == Some(l));
                if let Some(traced) = self.by.get_mut(&(*t, line_no)) {
                    // A traced thread whose partners on the line were not traced: they held
                    // its lock too (through their sites), so its accesses there are ordered.
                    if let Some(Some(l)) = self.lock_on_line.get(&(*t, line_no))
                        && all_hold(*l)
                    {
                        traced.0 = 0;
                    }
                    continue;
                }
                for pc in pcs {
                    let sequential = site(pc).is_some_and(all_hold);
                    self.untraced.insert((*t, line_no, *pc), sequential);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sim::Kind;

    fn ev(tsc: u64, thread: u32, addr: u64, lock: u16) -> Traced {
        Traced {
            tsc,
            thread,
            addr,
            size: 8,
            kind: Kind::Store,
            pc: 0x1000,
            lock,
        }
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
        let o = Overlap::of(&t, 64, &[]);
        assert_eq!(o.share(0, 0x40), 1.0);
        assert_eq!(o.share(1, 0x40), 1.0);
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
        let o = Overlap::of(&t, 64, &[]);
        assert_eq!(o.share(0, 0x80), 0.0);
        assert_eq!(o.share(1, 0x80), 0.0);
        // One access of thread 1 outside the lock: it can meet thread 0's, and thread 0's
        // can meet it.
        t.push(ev(150, 1, 0x2000, 0));
        let o = Overlap::of(&t, 64, &[]);
        assert!(o.share(0, 0x80) > 0.0);
        assert!(o.share(1, 0x80) > 0.0);
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
        let o = Overlap::of(&t, 64, &lives);
        assert_eq!(o.share(0, 0xc0), 0.0);
        assert_eq!(o.share(1, 0xc0), 0.0);
        assert_eq!(o.share(2, 0xc0), 0.0);
        // Main's read while a worker still lives (no join first): it can meet the
        // worker's, and the worker's can meet it, but one read moves the line at most
        // twice: 2 of worker 1's 100 lock-ordered accesses, not all of them.
        t.push(ev(902, 0, 0x3000, 0));
        let o = Overlap::of(&t, 64, &lives);
        assert_eq!(
            o.share(0, 0xc0),
            1.0 / 3.0,
            "its read beside the worker, not the two alone"
        );
        assert_eq!(o.share(1, 0xc0), 0.02);
        // A thread writing without the lock all the time meets every locked access.
        for i in 0..200 {
            t.push(ev(200 + i * 3, 0, 0x3010, 0));
        }
        let o = Overlap::of(&t, 64, &lives);
        assert_eq!(o.share(1, 0xc0), 1.0);
        // Two workers one after the other, main alive throughout: main's life keeps them
        // concurrent (no order between the two but the scheduler's).
        let lives = [(0, 0, u64::MAX), (1, 100, 200), (2, 300, 400)];
        let t = [ev(150, 1, 0x1000, 0), ev(350, 2, 0x1008, 0)];
        let o = Overlap::of(&t, 64, &lives);
        assert_eq!(o.share(1, 0x40), 1.0);
        assert_eq!(o.share(2, 0x40), 1.0);
    }

    #[test]
    fn accesses_the_windows_missed_are_ordered_by_the_locks_their_code_sites_hold() {
        // Two workers update a state under one mutex at code site 0x1000. The trace's
        // windows caught worker 0 on the state's line (0x2000) and worker 1 only elsewhere
        // (0x5000), both at site 0x1000 holding the lock; worker 1's site 0x3000 ran
        // without it.
        let lock = 0x8000 | 0x77;
        let lives = [(0, 0, u64::MAX), (1, 0, u64::MAX)];
        let at = |tsc: u64, thread: u32, addr: u64, pc: u64, lock: u16| Traced {
            tsc,
            thread,
            addr,
            size: 8,
            kind: Kind::Store,
            pc,
            lock,
        };
        let mut t = Vec::new();
        for i in 0..10 {
            t.push(at(10 + i, 0, 0x2000, 0x1000, lock));
            t.push(at(100 + i, 1, 0x5000, 0x1000, lock));
            t.push(at(200 + i, 1, 0x6000, 0x3000, 0));
        }
        let line = 0x2000 / 64;
        // Worker 1 on the state's line at the locked site only: both ordered.
        let mut o = Overlap::of(&t, 64, &lives);
        assert_eq!(
            o.share(0, line),
            1.0,
            "traced alone on the line: no evidence yet"
        );
        o.infer_untraced([(0, line, 0x1000), (1, line, 0x1000)]);
        assert_eq!(o.share_at(1, line, 0x1000), 0.0);
        assert_eq!(o.share_at(0, line, 0x1000), 0.0);
        // Worker 1 also at the unlocked site: those accesses can meet worker 0's, and
        // worker 0's can meet them.
        let mut o = Overlap::of(&t, 64, &lives);
        o.infer_untraced([(0, line, 0x1000), (1, line, 0x1000), (1, line, 0x3000)]);
        assert_eq!(o.share_at(1, line, 0x3000), 1.0);
        assert_eq!(o.share_at(0, line, 0x1000), 1.0);
        // A site never traced says nothing: concurrent.
        let mut o = Overlap::of(&t, 64, &lives);
        o.infer_untraced([(0, line, 0x1000), (1, line, 0x4000)]);
        assert_eq!(o.share_at(1, line, 0x4000), 1.0);
        assert_eq!(o.share_at(0, line, 0x1000), 1.0);
        // One thread alone on a line: nobody to be ordered with.
        let mut o = Overlap::of(&t, 64, &lives);
        o.infer_untraced([(1, 0x9000 / 64, 0x1000)]);
        assert_eq!(o.share_at(1, 0x9000 / 64, 0x1000), 1.0);
    }

    #[test]
    fn a_thread_alone_on_a_line_or_untraced_is_priced_as_concurrent() {
        let o = Overlap::of(&[ev(0, 0, 0x1000, 0x8001)], 64, &[]);
        assert_eq!(o.share(0, 0x40), 1.0);
        assert_eq!(o.share(1, 0x40), 1.0);
        assert_eq!(o.share(0, 0x41), 1.0);
    }
}
