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
//! An access of thread `t` on a line is *sequential* when `t` made it holding a lock that
//! every other thread traced on the line held at every one of its accesses there; every
//! other access is *concurrent* (a line no other thread was traced on included: that is no
//! evidence of order). `diagnose` prices each access at its concurrent share through the
//! cost model, whose rates then say whether it matters (`details.sequential_accesses` in
//! the profile holds the rest).

use std::collections::HashMap;

use super::FastHash;
use super::trace::Traced;

/// Per (thread, line number): the thread's traced accesses on the line, and how many of
/// them were concurrent.
#[derive(Clone, Debug, Default)]
pub struct Overlap {
    by: HashMap<(u32, u64), (u64, u64), FastHash>,
}

/// One thread's accesses to one line.
struct OnLine {
    thread: u32,
    /// The lock held at every access, when one was (and the same one).
    lock: Option<u16>,
    /// Range of the thread's events in the sorted list.
    events: std::ops::Range<usize>,
}

impl Overlap {
    /// The accesses of every thread on every line of `traced`, `line` bytes a line.
    pub fn of(traced: &[Traced], line: u64) -> Overlap {
        let line = line.max(1);
        // (line number, thread, lock), sorted: each line's threads.
        let mut events: Vec<(u64, u32, u16)> = traced
            .iter()
            .map(|e| (e.addr / line, e.thread, e.lock))
            .collect();
        events.sort_unstable();
        let mut out = Overlap::default();
        let mut threads: Vec<OnLine> = Vec::new();
        let mut i = 0;
        while i < events.len() {
            let line_no = events[i].0;
            threads.clear();
            let mut j = i;
            while j < events.len() && events[j].0 == line_no {
                let thread = events[j].1;
                let start = j;
                let lock = events[j].2;
                let mut same_lock = lock != 0;
                while j < events.len() && events[j].0 == line_no && events[j].1 == thread {
                    same_lock &= events[j].2 == lock;
                    j += 1;
                }
                threads.push(OnLine {
                    thread,
                    lock: same_lock.then_some(lock),
                    events: start..j,
                });
            }
            for t in &threads {
                let others: Vec<&OnLine> =
                    threads.iter().filter(|u| u.thread != t.thread).collect();
                let concurrent = events[t.events.clone()]
                    .iter()
                    .filter(|&&(_, _, lock)| {
                        others.is_empty()
                            || lock == 0
                            || others.iter().any(|u| u.lock != Some(lock))
                    })
                    .count() as u64;
                out.by
                    .insert((t.thread, line_no), (concurrent, t.events.len() as u64));
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
        let o = Overlap::of(&t, 64);
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
        let o = Overlap::of(&t, 64);
        assert_eq!(o.share(0, 0x80), 0.0);
        assert_eq!(o.share(1, 0x80), 0.0);
        // One access of thread 1 outside the lock: it can meet thread 0's, and thread 0's
        // can meet it.
        t.push(ev(150, 1, 0x2000, 0));
        let o = Overlap::of(&t, 64);
        assert!(o.share(0, 0x80) > 0.0);
        assert!(o.share(1, 0x80) > 0.0);
    }

    #[test]
    fn a_thread_alone_on_a_line_or_untraced_is_priced_as_concurrent() {
        let o = Overlap::of(&[ev(0, 0, 0x1000, 0x8001)], 64);
        assert_eq!(o.share(0, 0x40), 1.0);
        assert_eq!(o.share(1, 0x40), 1.0);
        assert_eq!(o.share(0, 0x41), 1.0);
    }
}
