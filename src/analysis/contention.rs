//! The contention model's view of one layout on one machine, term by term, and the verdicts
//! derived from it.
//!
//! [`cost::line_breakdown`] prices each cache line as a sum of terms: the misses one write
//! stream causes on one stream, each classed by what would remove it. This module groups those
//! terms per line ([`LineModel`]), per code path (the lines a path needs against the fewest
//! that hold its bytes: [`PathLocality`]) and per aligned pair of lines (the adjacent-line
//! prefetcher: [`PairModel`]), and names the verdict each line earns: the class of its
//! largest terms, explained with the members and paths behind them. `diagnose` prints these
//! verdicts; `optimize` and `predict` minimize and compare the same terms
//! ([`cost::evaluate`]), so the three cannot disagree about what a line suffers from.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::cost::{self, Placement, Sharing, Stream, Unit};
use super::diagnose::Verdict;
use super::machine::MachineModel;

/// A line is false sharing when at least this share of its modeled cycles are misses that
/// moving bytes apart removes, even where true sharing is the larger term: the seeds moved a
/// truly shared counter away from the fields its neighbours' readers missed on (seed 000:
/// `load_avg` beside `rt_se` and `rt_rq`, measured +9.6%) and measured the gain. Below it, the
/// line's verdict is its largest term, and moving members would save too little to be worth
/// a patch. Seed 000's line has 24.7% false-sharing cycles since a run of `set_task_cpu`,
/// which reads `rt_se` and `rt_rq` together, counts as one touch of the line
/// (`cost::touches_per_run`; 38% when each field was a touch): a fifth keeps the measured
/// fix above the line.
pub const FALSE_SHARE: f64 = 0.2;

/// A path's extra lines are reported when they cost at least this share of the struct's
/// modeled cycles (or when nothing else costs anything).
pub const LOCALITY_SHARE: f64 = 0.1;

/// Of the false-sharing misses the writers of two lines of an aligned 128-byte pair would cause
/// each other if they were one line, the share the adjacent-line (spatial) prefetcher turns into transfers on
/// the machines that have one. It fetches the other half of the pair on an L2 miss, not on
/// every access, and drops the prefetch when bandwidth is short, so less than all of them:
/// assumed half where nothing was measured. `lineup calibrate` measures it
/// (`MachineModel::pair_share`; a 16-CPU Xeon guest measured 0 there, where the guess would
/// have spaced hot lines a pair apart for nothing). crossbeam, folly and the kernel's
/// `CACHELINE_PADDING` on x86 pad to 128 bytes for this effect.
pub const PAIR_PREFETCH_SHARE: f64 = 0.5;

/// What removes a term's misses, in the engineers' words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TermClass {
    /// Another path's accesses to other bytes: moving them apart removes the misses.
    FalseSharing,
    /// Fields one path writes together (or reads right beside its own writes): one stream;
    /// apart, the path would fetch two lines where it fetches one.
    CoWritten,
    /// A lock and the data its holders write beside it: one critical section.
    UnderLock,
    /// The same bytes written from several CPUs: only splitting or writing less removes it.
    TrueSharing,
    /// Critical sections of one lock that is not a member of the struct (the evidence's
    /// `under_lock`): the line moves to each new holder with the lock. True sharing of what
    /// the lock guards: only taking the lock less often, or sharding what it guards, removes it.
    HandOff,
}

/// One term of a line, summed over the streams of the same members and paths.
#[derive(Clone, Debug, Serialize)]
pub struct Term {
    pub class: TermClass,
    /// Members the write stream writes, and the paths that write them.
    pub writers: Vec<String>,
    pub writer_paths: Vec<String>,
    /// CPUs of the write stream (its widest member's).
    pub writer_cpus: u32,
    /// The write stream is atomic read-modify-writes.
    pub writer_atomic: bool,
    /// The write stream writes a lock.
    pub writer_lock: bool,
    /// The lock outside the struct whose critical sections are the write stream (each
    /// section takes the line with the lock, whatever it loads or stores there); the lock of
    /// every [`TermClass::HandOff`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    /// The missing stream only loads.
    pub victim_loads_only: bool,
    /// The member whose access misses, and its path.
    pub victim: String,
    pub victim_path: String,
    pub transfers: f64,
    pub cycles: f64,
}

/// One cache line of the layout as the model sees it.
#[derive(Clone, Debug, Serialize)]
pub struct LineModel {
    pub index: u64,
    /// Modeled cycles of coherence traffic on the line, in the evidence's unit (per second
    /// when its counts are per second, per unit of weight for a sketch), unqueued.
    pub cycles: f64,
    pub false_cycles: f64,
    pub transfers: f64,
    /// Terms, largest first.
    pub terms: Vec<Term>,
    /// CPUs that touch the line, as the model counted them.
    pub cpus: f64,
    /// The CPU count rests on the assumption that different paths run on different CPUs.
    pub cpus_assumed: bool,
    /// Whether any stream on the line writes.
    pub written: bool,
    /// The lock outside the struct that every access to the line is made under
    /// ([`cost::serialized_by`]): the line does not queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under_lock: Option<String>,
}

impl LineModel {
    /// Cycles of the terms of one class.
    pub fn class_cycles(&self, class: TermClass) -> f64 {
        self.terms
            .iter()
            .filter(|t| t.class == class)
            .map(|t| t.cycles)
            .sum()
    }
}

/// The model's lines for `placement`: every line that holds a stream.
pub fn lines(
    units: &[Unit],
    streams: &[Stream],
    placement: &Placement,
    cls: u64,
    machine: &MachineModel,
) -> BTreeMap<u64, LineModel> {
    cost::streams_by_line(streams, placement, cls)
        .into_iter()
        .map(|(index, on_line)| (index, line_model(index, units, &on_line, machine)))
        .collect()
}

fn line_model(
    index: u64,
    units: &[Unit],
    on_line: &[&Stream],
    machine: &MachineModel,
) -> LineModel {
    let b = cost::line_breakdown(on_line, machine);
    let field = |i: usize| {
        let s = on_line[i];
        if s.field.is_empty() {
            units[s.unit].name.clone()
        } else {
            s.field.clone()
        }
    };
    type Key = (
        TermClass,
        Vec<String>,
        Vec<String>,
        String,
        String,
        Option<String>,
    );
    let mut merged: BTreeMap<Key, Term> = BTreeMap::new();
    for c in &b.contributions {
        let mut writers: Vec<String> = c.writer.iter().map(|&i| field(i)).collect();
        writers.sort();
        writers.dedup();
        let writer_units: BTreeSet<usize> = c.writer.iter().map(|&i| on_line[i].unit).collect();
        let victim = on_line[c.victim];
        // The same bytes, written by a run that writes several members together: co-written
        // where the victim is that path itself on another CPU (its runs hand the members to
        // each other as one: keep them together); true sharing where another path needs the
        // bytes (a scan reading what the owner writes, seed 004's `curr`).
        // Where that run takes a lock among them, it is the lock's critical section (seed
        // 002's shared runqueue: `lock` and `list` written by every CPU's pick).
        // The same holds for the misses on the lock's own bytes, priced apart from the data's:
        // where the lock's path writes other members of the line too, they are that critical
        // section's, whichever of the two terms the run's rates make larger.
        let own_path = c.writer.iter().any(|&i| on_line[i].path == victim.path);
        let writer_lock = c.writer.iter().any(|&i| on_line[i].lock);
        let section_writes_beside = c.writer.iter().any(|&i| {
            let w = on_line[i];
            w.lock
                && on_line
                    .iter()
                    .any(|s| s.unit != w.unit && s.path == w.path && s.writes > 0.0)
        });
        let class = match c.sharing {
            Sharing::False => TermClass::FalseSharing,
            Sharing::UnderLock => TermClass::UnderLock,
            Sharing::SameBytes
                if writer_lock && (writer_units.len() > 1 || section_writes_beside) =>
            {
                TermClass::UnderLock
            }
            Sharing::SamePath => TermClass::CoWritten,
            Sharing::SameBytes if writer_units.len() > 1 && own_path => TermClass::CoWritten,
            Sharing::SameBytes | Sharing::SameRun => TermClass::TrueSharing,
            Sharing::HandOff => TermClass::HandOff,
        };
        let lock = c
            .writer
            .first()
            .and_then(|&i| on_line[i].under_lock.clone())
            .filter(|l| {
                c.writer
                    .iter()
                    .all(|&i| on_line[i].under_lock.as_deref() == Some(l.as_str()))
            });
        let mut paths: Vec<String> = c.writer.iter().map(|&i| on_line[i].path.clone()).collect();
        paths.sort();
        paths.dedup();
        let key = (
            class,
            writers.clone(),
            paths.clone(),
            field(c.victim),
            victim.path.clone(),
            lock.clone(),
        );
        let e = merged.entry(key).or_insert_with(|| Term {
            class,
            writers,
            writer_paths: paths,
            writer_cpus: c.writer.iter().map(|&i| on_line[i].cpus).max().unwrap_or(1),
            writer_atomic: c
                .writer
                .iter()
                .all(|&i| on_line[i].rmw > on_line[i].stores()),
            writer_lock: c.writer.iter().any(|&i| on_line[i].lock),
            lock,
            victim_loads_only: victim.writes <= 0.0,
            victim: field(c.victim),
            victim_path: victim.path.clone(),
            transfers: 0.0,
            cycles: 0.0,
        });
        e.transfers += c.transfers;
        e.cycles += c.cycles;
    }
    let mut terms: Vec<Term> = merged.into_values().filter(|t| t.cycles > 0.0).collect();
    terms.sort_by(|a, b| b.cycles.total_cmp(&a.cycles));
    LineModel {
        index,
        cycles: b.false_cycles + b.true_cycles,
        false_cycles: b.false_cycles,
        transfers: b.false_transfers + b.true_transfers,
        terms,
        cpus: b.cpus,
        cpus_assumed: b.cpus_assumed,
        written: on_line.iter().any(|s| s.writes > 0.0),
        under_lock: cost::serialized_by(on_line).map(str::to_string),
    }
}

/// The members both sides of `t` touch: of the line's true-sharing terms between the same
/// paths, each victim that its writers write too (not every member the writing stream
/// writes, which the victim may never touch, nor a victim stream's member the writers never
/// write); the writers where no victim is named among them.
fn shared_bytes(line: &LineModel, t: &Term) -> Vec<String> {
    let mut members: Vec<String> = line
        .terms
        .iter()
        .filter(|x| {
            x.class == TermClass::TrueSharing
                && x.victim_path == t.victim_path
                && x.writer_paths == t.writer_paths
                && x.writers.contains(&x.victim)
        })
        .map(|x| x.victim.clone())
        .collect();
    if members.is_empty() {
        members = t.writers.clone();
    }
    members.sort();
    members.dedup();
    members
}

/// The members `terms` write or miss on, each once, in the order met.
fn terms_members<'t>(terms: impl Iterator<Item = &'t Term>) -> Vec<String> {
    let mut members: Vec<String> = Vec::new();
    for x in terms {
        for m in x.writers.iter().chain(std::iter::once(&x.victim)) {
            if !members.contains(m) {
                members.push(m.clone());
            }
        }
    }
    members
}

fn quoted(names: &[String]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.len() {
        0 => String::new(),
        1 => q[0].clone(),
        n => format!("{} and {}", q[..n - 1].join(", "), q[n - 1]),
    }
}

fn pct(x: f64, of: f64) -> f64 {
    if of > 0.0 { 100.0 * x / of } else { 0.0 }
}

/// The verdict the model gives a line, explained; `None` where it models no transfer (the
/// caller says why: only loads, one writer alone, no access).
pub fn verdict(line: &LineModel) -> Option<(Verdict, String)> {
    verdict_for(line, false)
}

/// [`verdict`] for a struct that is `per_cpu` already (one instance per CPU): no advice to
/// split what is split.
pub fn verdict_for(line: &LineModel, per_cpu: bool) -> Option<(Verdict, String)> {
    if line.cycles <= 0.0 || line.terms.is_empty() {
        return None;
    }
    let total = line.cycles;
    let by_class = |c: TermClass| line.class_cycles(c);
    let false_c = by_class(TermClass::FalseSharing);
    let classes = [
        TermClass::FalseSharing,
        TermClass::CoWritten,
        TermClass::UnderLock,
        TermClass::TrueSharing,
        TermClass::HandOff,
    ];
    let largest = classes
        .into_iter()
        .max_by(|a, b| by_class(*a).total_cmp(&by_class(*b)))
        .expect("five classes");
    let class = if false_c >= FALSE_SHARE * total {
        TermClass::FalseSharing
    } else {
        largest
    };
    let top = |c: TermClass| line.terms.iter().find(|t| t.class == c);
    let assumption = if line.cpus_assumed {
        format!(
            " (the evidence counts CPUs but does not list them: the paths are taken to run on different CPUs, {:.0} in all)",
            line.cpus
        )
    } else {
        String::new()
    };
    let rest = |skip: TermClass| -> String {
        let others: Vec<String> = classes
            .into_iter()
            .filter(|c| *c != skip && by_class(*c) >= 0.05 * total)
            .map(|c| {
                let t = top(c).expect("a class with cycles has a term");
                format!(
                    "{:.0}% {} ({} by {})",
                    pct(by_class(c), total),
                    class_words(c),
                    quoted(&t.writers),
                    t.writer_paths.join(", ")
                )
            })
            .collect();
        if others.is_empty() {
            String::new()
        } else {
            format!("; the rest: {}", others.join(", "))
        }
    };
    let t = top(class).expect("the chosen class has a term");
    let share = pct(by_class(class), total);
    let (v, text) = match class {
        TermClass::FalseSharing => {
            // Every writer and every member that misses falsely, most costly first.
            let mut writers: Vec<(String, Vec<String>, u32, (bool, Option<String>))> = Vec::new();
            let mut victims: Vec<String> = Vec::new();
            let mut readers: Vec<String> = Vec::new();
            let mut loads_only = true;
            for x in line.terms.iter().filter(|x| x.class == class) {
                if x.cycles < 0.05 * false_c {
                    continue;
                }
                loads_only &= x.victim_loads_only;
                for w in &x.writers {
                    match writers.iter_mut().find(|(n, _, _, _)| n == w) {
                        Some((_, paths, cpus, _)) => {
                            for p in &x.writer_paths {
                                if !paths.contains(p) {
                                    paths.push(p.clone());
                                }
                            }
                            *cpus = (*cpus).max(x.writer_cpus);
                        }
                        None => writers.push((
                            w.clone(),
                            x.writer_paths.clone(),
                            x.writer_cpus,
                            (x.writer_atomic, x.lock.clone()),
                        )),
                    }
                }
                if !victims.contains(&x.victim) && !x.writers.contains(&x.victim) {
                    victims.push(x.victim.clone());
                }
                if !readers.contains(&x.victim_path) {
                    readers.push(x.victim_path.clone());
                }
            }
            let written: Vec<String> = writers
                .iter()
                .map(|(w, paths, cpus, (atomic, lock))| {
                    format!(
                        "`{w}` is {} by {}{}",
                        match lock {
                            Some(l) => format!(
                                "touched inside critical sections of `{l}` (each takes the line with the lock)"
                            ),
                            None if *atomic => "atomically updated".to_string(),
                            None => "stored".to_string(),
                        },
                        paths.join(" and "),
                        cpus_words(*cpus)
                    )
                })
                .collect();
            let neighbours = if victims.is_empty() {
                String::new()
            } else {
                format!(
                    " while {} on the same line {} {} by {}",
                    quoted(&victims),
                    if victims.len() == 1 { "is" } else { "are" },
                    if loads_only { "loaded" } else { "touched" },
                    readers.join(" and ")
                )
            };
            (
                Verdict::FalseSharing,
                format!(
                    "{}{neighbours}{assumption}: {share:.0}% of the line's modeled cycles are misses of one path on bytes another path writes, which moving them apart removes{}",
                    written.join(", and "),
                    rest(class)
                ),
            )
        }
        TermClass::CoWritten => {
            let mut members = t.writers.clone();
            let read_beside = !members.contains(&t.victim) && t.victim_loads_only;
            if !members.contains(&t.victim) {
                members.push(t.victim.clone());
            }
            let what = if read_beside {
                format!(
                    "{} {} written by {}, which reads {} beside {} in the same run{assumption}: one touch of the line per run",
                    quoted(&t.writers),
                    if t.writers.len() == 1 { "is" } else { "are" },
                    t.writer_paths.join(", "),
                    quoted(std::slice::from_ref(&t.victim)),
                    if t.writers.len() == 1 { "it" } else { "them" },
                )
            } else {
                format!(
                    "{} {} written together by {}{assumption}: one write stream",
                    quoted(&members),
                    if members.len() == 1 { "is" } else { "are" },
                    t.writer_paths.join(", "),
                )
            };
            (
                Verdict::CoWritten,
                format!(
                    "{what}, so the line moves once per run of the path ({share:.0}% of the line's modeled cycles). Keep them together: apart, each run would fetch two lines. No layout removes it; {}{}",
                    if per_cpu {
                        "the struct is per CPU already, so only touching another CPU's instance less often does"
                    } else {
                        "writing less often, or splitting the data per CPU or node, does"
                    },
                    rest(class)
                ),
            )
        }
        TermClass::UnderLock => (
            Verdict::TrueSharing,
            format!(
                "{} are one critical section: a lock and the data its holders write beside it, the same CPUs one after another{assumption} ({share:.0}% of the line's modeled cycles). This is true sharing: padding or reordering changes nothing (each holder would fetch two lines); {}{}",
                // Every member of the section's terms on the line that share a writer path
                // with the largest: the lock's own misses and its data's are one section.
                quoted(&terms_members(line.terms.iter().filter(|x| {
                    x.class == class && x.writer_paths.iter().any(|p| t.writer_paths.contains(p))
                }))),
                if per_cpu {
                    "take the lock less often from other CPUs (the struct is per CPU already)"
                } else {
                    "take the lock less often, or shard what it guards (a lock per shard)"
                },
                rest(class)
            ),
        ),
        TermClass::HandOff => {
            // Every member and path of the lock's sections on the line.
            let lock = t.lock.clone().unwrap_or_default();
            let sections = || {
                line.terms
                    .iter()
                    .filter(|x| x.class == class && x.lock.as_deref() == Some(lock.as_str()))
            };
            let mut members = terms_members(sections());
            let mut paths: Vec<String> = Vec::new();
            for x in sections() {
                for p in x.writer_paths.iter().chain(std::iter::once(&x.victim_path)) {
                    if !paths.contains(p) {
                        paths.push(p.clone());
                    }
                }
            }
            members.sort();
            paths.sort();
            (
                Verdict::TrueSharing,
                format!(
                    "true sharing under `{lock}`: no layout helps; {}. {} {} touched only inside critical sections of `{lock}`, a lock outside the struct, by {}{assumption}: the sections run one after another, so there is no false sharing between them; the line moves to each new holder with the lock ({share:.0}% of the line's modeled cycles are these hand-offs), and spreading the members over more lines would make each hand-off move more lines{}",
                    if per_cpu {
                        "take the lock less often from other CPUs (the struct is per CPU already)"
                    } else {
                        "take the lock less often, or shard what it guards"
                    },
                    quoted(&members),
                    if members.len() == 1 { "is" } else { "are" },
                    paths.join(" and "),
                    rest(class)
                ),
            )
        }
        TermClass::TrueSharing => {
            let shared = shared_bytes(line, t);
            (
                Verdict::TrueSharing,
                format!(
                    "{} {} written by {} and touched by {} on other CPUs{assumption}: the same bytes, so {share:.0}% of the line's modeled cycles are true sharing. No layout helps: {}{}",
                    quoted(&shared),
                    if shared.len() == 1 { "is" } else { "are" },
                    t.writer_paths.join(", "),
                    t.victim_path,
                    if per_cpu {
                        "the struct is per CPU already (one instance per CPU), so splitting does not apply; the transfers are other CPUs touching this CPU's instance (remote wakeups, balancing): touch it from other CPUs less often"
                    } else if t.writer_lock {
                        "a lock is not split; take it less often, or shard what it guards (a lock per shard)"
                    } else {
                        "only splitting it (per CPU, per LLC or per node), sharding it, or writing it less often does"
                    },
                    rest(class)
                ),
            )
        }
    };
    Some((v, text))
}

fn cpus_words(n: u32) -> String {
    match n {
        0 | 1 => " on 1 CPU".to_string(),
        n => format!(" on {n} CPUs"),
    }
}

fn class_words(c: TermClass) -> &'static str {
    match c {
        TermClass::FalseSharing => "false sharing",
        TermClass::CoWritten => "co-written",
        TermClass::UnderLock => "under one lock",
        TermClass::TrueSharing => "true sharing",
        TermClass::HandOff => "hand-offs under a lock",
    }
}

/// One code path's lines against the fewest that could hold what it touches.
#[derive(Clone, Debug, Serialize)]
pub struct PathLocality {
    pub path: String,
    /// Members it touches, by offset.
    pub members: Vec<String>,
    /// Whether it only reads them.
    pub reads_only: bool,
    pub lines: u64,
    /// The lines themselves (a member that straddles a boundary is on both).
    pub line_indices: Vec<u64>,
    /// The fewest lines the bytes it touches fit in, members moving whole: a member of a line
    /// or more takes a line of its own, a smaller one the bytes the path touches and the rest
    /// of it towards its nearer end (not the whole of a parameter block whose flags it reads).
    pub fewest: u64,
    /// How often it runs (its busiest access), in the evidence's unit.
    pub rate: f64,
    /// What its extra lines cost, modeled: an L2 hit per run per extra line.
    pub cycles: f64,
}

/// Every path whose members span more lines than their bytes need, most costly first.
pub fn locality(
    units: &[Unit],
    streams: &[Stream],
    placement: &Placement,
    cls: u64,
    machine: &MachineModel,
) -> Vec<PathLocality> {
    let cls = cls.max(1);
    // Per path: its rate, its lines, and per unit (by offset) the first member it names and
    // the span of the unit's bytes it touches (from the first to the end of the last).
    type Touched = BTreeMap<u64, (String, u64, u64, usize, BTreeSet<u64>)>;
    let mut paths: BTreeMap<String, (f64, BTreeSet<u64>, Touched, bool)> = BTreeMap::new();
    for run in cost::path_runs(streams) {
        let e = paths
            .entry(run.name)
            .or_insert_with(|| (run.rate, BTreeSet::new(), BTreeMap::new(), true));
        for s in run.streams.iter().map(|&i| &streams[i]) {
            e.1.extend(s.lines(placement.offsets[s.unit], cls));
            let name = if s.field.is_empty() {
                units[s.unit].name.clone()
            } else {
                s.field.clone()
            };
            // The bytes the run touches, as `Stream::lines` counts them: more than a line's
            // worth lies on its first line only. The rest of a large embedded member (a
            // parameter block, a cache array, a stats struct whose one counter the path bumps)
            // is not the path's, and can stick out of the lines the path needs.
            let end = s.inner + s.touched().min(cls);
            let t = e.2.entry(placement.offsets[s.unit]).or_insert((
                name,
                s.inner,
                end,
                s.unit,
                BTreeSet::new(),
            ));
            t.1 = t.1.min(s.inner);
            t.2 = t.2.max(end);
            t.4.extend(s.lines(placement.offsets[s.unit], cls));
            e.3 &= s.writes <= 0.0;
        }
    }
    let mut out: Vec<PathLocality> = paths
        .into_iter()
        .filter_map(|(path, (rate, lines, members, reads_only))| {
            // What each unit takes of the lines the path could fit in. A unit of a line or
            // more keeps lines of its own (the search places it so: `optimize::Item::big`,
            // `pack_fits`): those its touched bytes span, or touch now where fewer. A smaller
            // one shares a line with others only at one of its ends: its touched bytes and the
            // rest of it towards the nearer end.
            let members: BTreeMap<u64, (String, u64)> = members
                .into_iter()
                .map(|(at, (name, first, end, u, now))| {
                    let size = units[u].size.max(end);
                    let takes = if size >= cls {
                        let span = (end - first).div_ceil(cls).max(1);
                        span.min(now.len().max(1) as u64) * cls
                    } else {
                        end.min(size - first)
                    };
                    (at, (name, takes))
                })
                .collect();
            let bytes: u64 = members.values().map(|(_, size)| *size).sum();
            let fewest = bytes.div_ceil(cls).max(1);
            let n = lines.len() as u64;
            (n > fewest).then(|| PathLocality {
                path,
                members: members.into_values().map(|(n, _)| n).collect(),
                reads_only,
                lines: n,
                line_indices: lines.into_iter().collect(),
                fewest,
                rate,
                cycles: rate * (n - fewest) as f64 * cost::locality_price(machine),
            })
        })
        .collect();
    out.sort_by(|a, b| b.cycles.total_cmp(&a.cycles).then(a.path.cmp(&b.path)));
    out
}

/// An embedded struct member whose own sub-fields contend (an rwsem's `count` and `owner`):
/// its members move with it, so no order of the outer struct parts them, but its offset
/// decides which of them share a line.
#[derive(Clone, Debug, Serialize)]
pub struct EmbeddedModel {
    pub unit: usize,
    /// Its offset now, and into a line.
    pub offset: u64,
    pub phase: u64,
    /// The offset into a line where its sub-fields' own terms cost least (the lowest such
    /// offset), and the nearest offset with that phase.
    pub best_phase: u64,
    pub best_offset: u64,
    /// Modeled cycles of its sub-fields' terms among themselves (its streams alone, priced as
    /// `predict` prices a layout, queued as the layout's lines are), now and at the best
    /// phase; of the former, false sharing.
    pub cycles: f64,
    pub false_cycles: f64,
    pub best_cycles: f64,
    /// Sub-fields with a false-sharing term now that the best phase puts on different lines,
    /// by offset, and the paths of those terms.
    pub members: Vec<String>,
    pub paths: Vec<String>,
    /// The lines (of the layout) those sub-fields share now.
    pub lines: Vec<u64>,
}

/// Every unit whose streams touch two or more sub-fields, whose sub-fields' terms among
/// themselves are false sharing for at least [`FALSE_SHARE`] of their cycles, and which
/// another offset into a line (a multiple of its alignment) prices lower: its streams priced
/// alone at each such offset, on the lines the model prices them.
pub fn embedded(
    units: &[Unit],
    streams: &[Stream],
    placement: &Placement,
    cls: u64,
    machine: &MachineModel,
    q: &cost::Queueing,
) -> Vec<EmbeddedModel> {
    let cls = cls.max(1);
    let mut out = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        let own: Vec<Stream> = streams.iter().filter(|s| s.unit == u).cloned().collect();
        let named: BTreeSet<&str> = own.iter().map(|s| s.field.as_str()).collect();
        if named.len() < 2 || !own.iter().any(|s| s.writes > 0.0) || unit.size <= 1 {
            continue;
        }
        let at = |phase: u64| {
            let mut p = placement.clone();
            p.offsets[u] = phase;
            p
        };
        // Queued as the layout's lines are: parting a busy line shortens its queue.
        let price = |p: &Placement| -> (f64, f64) {
            let c = cost::evaluate(units, &own, p, cls, machine, q);
            (c.total_cycles(), c.false_cycles)
        };
        let offset = placement.offsets[u];
        let phase = offset % cls;
        let (cycles, false_cycles) = price(&at(phase));
        if false_cycles <= 0.0 {
            continue;
        }
        let step = unit.align.max(1);
        let (best_phase, best_cycles) = (0..cls)
            .step_by(step as usize)
            .map(|ph| (ph, price(&at(ph)).0))
            .fold(
                (phase, cycles),
                |b, x| if x.1 < b.1 - 1e-9 * b.1 { x } else { b },
            );
        // Reported as a line is: false sharing at least `FALSE_SHARE` of its own cycles, and
        // an offset that prices them lower.
        if best_phase == phase
            || best_cycles >= cycles * (1.0 - 1e-9)
            || false_cycles < FALSE_SHARE * cycles
        {
            continue;
        }
        // The false terms now whose members the best phase puts on different lines.
        let line_of = |s: &Stream, ph: u64| (ph + s.inner) / cls;
        let mut members: Vec<(u64, String)> = Vec::new();
        let mut paths: Vec<String> = Vec::new();
        let mut shared: BTreeSet<u64> = BTreeSet::new();
        for line in lines(units, &own, &at(phase), cls, machine).values() {
            for t in line
                .terms
                .iter()
                .filter(|t| t.class == TermClass::FalseSharing)
            {
                let of = |name: &str| own.iter().find(|s| s.field == name);
                let parted = t.writers.iter().filter_map(|w| of(w)).any(|w| {
                    of(&t.victim).is_some_and(|v| line_of(w, best_phase) != line_of(v, best_phase))
                });
                if !parted {
                    continue;
                }
                for name in t.writers.iter().chain(std::iter::once(&t.victim)) {
                    if let Some(s) = of(name)
                        && !members.iter().any(|(_, n)| n == name)
                    {
                        members.push((s.inner, name.clone()));
                    }
                }
                for p in t.writer_paths.iter().chain(std::iter::once(&t.victim_path)) {
                    if !paths.contains(p) {
                        paths.push(p.clone());
                    }
                }
                shared.insert((offset - phase) / cls + line.index);
            }
        }
        if members.is_empty() {
            continue;
        }
        members.sort();
        // The nearest offset with that phase, before or after (a tie: the lower).
        let after = offset - phase + best_phase + if best_phase < phase { cls } else { 0 };
        let best_offset = match after.checked_sub(cls) {
            Some(before) if offset - before <= after - offset => before,
            _ => after,
        };
        out.push(EmbeddedModel {
            unit: u,
            offset,
            phase,
            best_phase,
            best_offset,
            cycles,
            false_cycles,
            best_cycles,
            members: members.into_iter().map(|(_, n)| n).collect(),
            paths,
            lines: shared.into_iter().collect(),
        });
    }
    out
}

/// An aligned pair of lines whose streams the adjacent-line prefetcher couples.
#[derive(Clone, Debug, Serialize)]
pub struct PairModel {
    /// The even line of the pair; the other is `first + 1`.
    pub first: u64,
    /// Members written on one line whose writes the other line's users miss on, and theirs.
    pub members: Vec<String>,
    pub paths: Vec<String>,
    /// Modeled cycles the pairing adds (queued like the lines).
    pub cycles: f64,
    /// The share of instances in which these lines are one pair, and the offset into a pair
    /// those instances start at (`instances::Instances::pairs`; 1 and 0 for one placement).
    pub share: f64,
    pub start: u64,
}

/// What the adjacent-line prefetcher adds, per aligned pair with streams on both lines, on a
/// machine that has one ([`MachineModel::adjacent_line_pairs`]); empty elsewhere.
pub fn pairs(
    streams: &[Stream],
    placement: &Placement,
    cls: u64,
    machine: &MachineModel,
    q: &cost::Queueing,
) -> Vec<PairModel> {
    if !machine.adjacent_line_pairs || cls != 64 {
        return Vec::new();
    }
    let by_line = cost::streams_by_line(streams, placement, cls);
    let mut out = Vec::new();
    for (&even, a) in by_line.range(..).filter(|(l, _)| *l % 2 == 0) {
        let Some(b) = by_line.get(&(even + 1)) else {
            continue;
        };
        // A prefetch takes the other line shared: it costs only where that line is written
        // too, so only the two lines' writers couple (seed 000's fix moved read-mostly
        // `rt_se` to the line beside `load_avg`'s and measured the false sharing gone).
        // The misses the pairing adds queue at the two lines, each its own: at the busier
        // line's queue (its streams, readers included, as the line is priced), not at the
        // queue of one line carrying both lines' traffic, which does not exist. A merged
        // line's queue runs the pair of two rarely written lines near saturation (four
        // neighbouring cache elements whose used bit is stored once per 100 lookups,
        // tests/cases/promscale_clockcache_element) and would price its coupled misses at
        // tens of transfers each.
        let queue = |set: &[&Stream]| match cost::serialized_by(set) {
            Some(_) => 1.0,
            None => {
                let (_, _, f, t) = cost::line_terms(set, machine);
                q.factor(f + t)
            }
        };
        let factor = queue(a).max(queue(b));
        let a: Vec<&Stream> = a.iter().copied().filter(|s| s.writes > 0.0).collect();
        let b: Vec<&Stream> = b.iter().copied().filter(|s| s.writes > 0.0).collect();
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let both: Vec<&Stream> = a.iter().chain(b.iter()).copied().collect();
        let false_of = |set: &[&Stream]| cost::line_terms(set, machine).2;
        let extra = (false_of(&both) - false_of(&a) - false_of(&b)).max(0.0)
            * machine.pair_share()
            * factor;
        if extra <= 0.0 {
            continue;
        }
        let mut members: Vec<String> = Vec::new();
        let mut paths: Vec<String> = Vec::new();
        for s in &both {
            if !members.contains(&s.field) {
                members.push(s.field.clone());
            }
            if !paths.contains(&s.path) {
                paths.push(s.path.clone());
            }
        }
        out.push(PairModel {
            first: even,
            members,
            paths,
            cycles: extra,
            share: 1.0,
            start: 0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::machine::preset;

    fn unit(name: &str, offset: u64) -> Unit {
        Unit {
            name: name.to_string(),
            members: vec![name.to_string()],
            member_indices: vec![],
            offset,
            size: 8,
            align: 8,
            natural_align: 8,
        }
    }

    fn stream(unit: usize, path: &str, reads: f64, rmw: f64, cpus: &[u32]) -> Stream {
        Stream {
            unit,
            inner: 0,
            size: 8,
            field: String::new(),
            path: path.to_string(),
            reads,
            writes: rmw,
            rmw,
            cpus: cpus.len() as u32,
            cpu_list: cpus.to_vec(),
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    #[test]
    fn an_aligned_pair_of_written_lines_is_priced_on_intel_presets_only() {
        // `head` at 0 (line 0) pushed by CPUs 0-3, `tail` at 64 (line 1) popped by CPUs 4-7.
        let units = vec![unit("head", 0), unit("tail", 64)];
        let streams = vec![
            stream(0, "push", 10.0, 100.0, &[0, 1, 2, 3]),
            stream(1, "pop", 10.0, 100.0, &[4, 5, 6, 7]),
        ];
        let p = Placement {
            offsets: vec![0, 64],
            size: 128,
            align: 8,
        };
        let q = cost::Queueing::NONE;
        let intel = preset("icelake-2s").unwrap();
        let found = pairs(&streams, &p, 64, &intel, &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].first, 0);
        assert!(found[0].cycles > 0.0);
        // The same lines 128 bytes apart: no pair.
        let apart = Placement {
            offsets: vec![0, 128],
            size: 192,
            align: 8,
        };
        assert!(pairs(&streams, &apart, 64, &intel, &q).is_empty());
        // A measured share scales the term: three times the guessed half, three times the cycles.
        let mut measured = intel.clone();
        measured.pair_share = Some(1.5);
        let scaled = pairs(&streams, &p, 64, &measured, &q);
        assert!((scaled[0].cycles - 3.0 * found[0].cycles).abs() < 1e-6 * found[0].cycles);
        // POWER10 has no adjacent-line pairs; its lines are 128 bytes anyway.
        assert!(pairs(&streams, &p, 64, &preset("power10-96").unwrap(), &q).is_empty());
        // And the cost the optimizer minimizes carries the term.
        let c = cost::evaluate(&units, &streams, &p, 64, &intel, &q);
        assert!((c.pair_cycles - found[0].cycles).abs() < 1e-9);
        assert_eq!(
            cost::evaluate(&units, &streams, &apart, 64, &intel, &q).pair_cycles,
            0.0
        );
    }

    #[test]
    fn a_pairs_coupled_misses_queue_at_the_busier_line_not_at_a_merged_one() {
        // Three elements each read by its own CPU and written once per 100 reads (by it and by
        // a sweeper on CPU 4): `e1` on line 0, `e2` and `e3` on line 1, one aligned pair.
        let mut streams = Vec::new();
        for (u, cpu) in [(0, 1), (1, 2), (2, 3)] {
            streams.push(stream(u, "get", 100.0, 0.0, &[cpu]));
            streams.last_mut().unwrap().writes = 1.0;
            streams.push(stream(u, "evict", 0.0, 1.0, &[4]));
        }
        let p = Placement {
            offsets: vec![0, 64, 72],
            size: 128,
            align: 64,
        };
        let intel = preset("icelake-2s").unwrap();
        let by_line = cost::streams_by_line(&streams, &p, 64);
        let (l0, l1) = (&by_line[&0], &by_line[&1]);
        let unqueued = |set: &[&Stream]| cost::line_terms(set, &intel);
        let busiest = [l0, l1]
            .iter()
            .map(|l| {
                let (_, _, f, t) = unqueued(l);
                f + t
            })
            .fold(0.0, f64::max);
        let q = cost::Queueing {
            reference: busiest,
            utilization: 0.5,
        };
        let found = pairs(&streams, &p, 64, &intel, &q);
        assert_eq!(found.len(), 1);
        let both: Vec<&Stream> = l0.iter().chain(l1.iter()).copied().collect();
        let coupled = (unqueued(&both).2 - unqueued(l0).2 - unqueued(l1).2) * intel.pair_share();
        // The busier line runs at the reference utilization: its queue doubles the cycles.
        assert!((found[0].cycles - 2.0 * coupled).abs() < 1e-6 * coupled);
        // One line with both lines' traffic would run past the reference, near saturation.
        let merged = (cost::queued_line_terms(&both, &intel, &q).2
            - cost::queued_line_terms(l0, &intel, &q).2
            - cost::queued_line_terms(l1, &intel, &q).2)
            * intel.pair_share();
        assert!(
            found[0].cycles < 0.5 * merged,
            "{} vs {merged}",
            found[0].cycles
        );
    }

    #[test]
    fn a_locks_own_misses_and_its_datas_are_one_critical_section_whichever_is_larger() {
        // Seed 002's shared runqueue: every CPU's `pick` takes `lock` and writes `list` under it.
        // The misses on the lock's own bytes are priced apart from the list's; with the lock
        // written more often than the list its term is the larger, and it is still the section's.
        let units = vec![unit("lock", 0), unit("list", 8)];
        for lock_writes in [100.0, 400.0, 1600.0] {
            let mut lock = stream(0, "pick", 0.0, lock_writes, &[0, 1]);
            lock.lock = true;
            let streams = vec![lock, stream(1, "pick", 50.0, 100.0, &[0, 1])];
            let p = Placement {
                offsets: vec![0, 8],
                size: 64,
                align: 8,
            };
            let m = preset("icelake-2s").unwrap();
            let found = lines(&units, &streams, &p, 64, &m);
            let line = &found[&0];
            let own = line
                .terms
                .iter()
                .find(|t| t.victim == "lock" && t.writers == ["lock"])
                .expect("the lock's own term");
            assert_eq!(own.class, TermClass::UnderLock, "{:?}", line.terms);
            let (v, why) = verdict(line).expect("a verdict");
            assert_eq!(v, Verdict::TrueSharing);
            assert!(
                why.contains("one critical section")
                    && why.contains("`list`")
                    && why.contains("`lock`"),
                "{why}"
            );
        }
        // The lock alone on the line, no data written beside it by its path: its own misses
        // are true sharing of the lock, not a section with data.
        let mut lock = stream(0, "pick", 0.0, 400.0, &[0, 1]);
        lock.lock = true;
        let streams = vec![lock, stream(1, "scan", 50.0, 0.0, &[2, 3])];
        let p = Placement {
            offsets: vec![0, 8],
            size: 64,
            align: 8,
        };
        let found = lines(&units, &streams, &p, 64, &preset("icelake-2s").unwrap());
        assert!(
            found[&0]
                .terms
                .iter()
                .filter(|t| t.victim == "lock")
                .all(|t| t.class != TermClass::UnderLock),
            "{:?}",
            found[&0].terms
        );
    }

    #[test]
    fn a_path_reading_eight_members_over_four_lines_is_told_they_fit_in_one() {
        let units: Vec<Unit> = (0..8).map(|i| unit(&format!("m{i}"), i * 32)).collect();
        let streams: Vec<Stream> = (0..8)
            .map(|i| stream(i, "lookup", 1000.0, 0.0, &[0, 1]))
            .collect();
        let p = Placement {
            offsets: (0..8).map(|i| i * 32).collect(),
            size: 256,
            align: 8,
        };
        let m = preset("icelake-2s").unwrap();
        let found = locality(&units, &streams, &p, 64, &m);
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!((f.path.as_str(), f.lines, f.fewest), ("lookup", 4, 1));
        assert!(f.reads_only);
        assert_eq!(f.members.len(), 8);
        assert!((f.cycles - 1000.0 * 3.0 * m.l2_hit).abs() < 1e-6);
        // Packed into one line: nothing to say.
        let packed = Placement {
            offsets: (0..8).map(|i| i * 8).collect(),
            size: 64,
            align: 8,
        };
        assert!(locality(&units, &streams, &packed, 64, &m).is_empty());
    }

    #[test]
    fn a_path_touching_one_word_of_an_embedded_member_counts_that_word_not_the_member() {
        // A 64-byte parameter block at 0 whose flags the path reads, two scalars at 184 and
        // 192, a 48-byte stats block at 200 whose first counter it bumps, and a 1032-byte cache
        // at 256 whose count it bumps: lines 0, 2, 3 and 4. The block and the cache keep a line
        // each; the scalars and the counter (the stats' other 40 bytes spilling over) fit in
        // one: 3 lines. Counting the members whole (1160 bytes, 19 lines) would say the path
        // already touches fewer lines than it needs.
        let mut units = vec![
            unit("params", 0),
            unit("offset", 184),
            unit("users", 192),
            unit("stats", 200),
            unit("cache", 256),
        ];
        units[0].size = 64;
        units[3].size = 48;
        units[4].size = 1032;
        let mut streams: Vec<Stream> = (0..5)
            .map(|i| stream(i, "alloc", 100.0, 0.0, &[2]))
            .collect();
        streams[4].size = 4;
        let p = Placement {
            offsets: vec![0, 184, 192, 200, 256],
            size: 1344,
            align: 64,
        };
        let m = preset("icelake-2s").unwrap();
        let found = locality(&units, &streams, &p, 64, &m);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].lines, found[0].fewest), (4, 3));
        assert!((found[0].cycles - 100.0 * m.l2_hit).abs() < 1e-6);
        // Three line-sized sections read at their starts take three lines however they are
        // placed: nothing to gather.
        let mut units: Vec<Unit> = (0..3).map(|i| unit(&format!("s{i}"), i * 64)).collect();
        for u in &mut units {
            u.size = 64;
        }
        let streams: Vec<Stream> = (0..3)
            .map(|i| stream(i, "fill", 100.0, 0.0, &[2]))
            .collect();
        let p = Placement {
            offsets: vec![0, 64, 128],
            size: 192,
            align: 64,
        };
        assert!(locality(&units, &streams, &p, 64, &m).is_empty());
    }

    #[test]
    fn the_verdict_is_the_largest_term_and_false_sharing_needs_its_share() {
        // A counter incremented on 8 CPUs beside a field another path reads rarely: true
        // sharing dominates, and the verdict says so (no padding advice).
        let m = preset("icelake-2s").unwrap();
        let units = vec![unit("count", 0), unit("flags", 8)];
        let streams = vec![
            stream(0, "inc", 0.0, 1000.0, &[0, 1, 2, 3, 4, 5, 6, 7]),
            stream(1, "peek", 5.0, 0.0, &[8]),
        ];
        let p = Placement {
            offsets: vec![0, 8],
            size: 16,
            align: 8,
        };
        let line = &lines(&units, &streams, &p, 64, &m)[&0];
        let (v, why) = verdict(line).unwrap();
        assert_eq!(v, Verdict::TrueSharing, "{why}");
        // Read as often as it is written, from other CPUs: false sharing.
        let streams = vec![
            stream(0, "inc", 0.0, 1000.0, &[0, 1, 2, 3]),
            stream(1, "peek", 4000.0, 0.0, &[8, 9, 10, 11]),
        ];
        let line = &lines(&units, &streams, &p, 64, &m)[&0];
        let (v, why) = verdict(line).unwrap();
        assert_eq!(v, Verdict::FalseSharing, "{why}");
        assert!(why.contains("`flags`") && why.contains("peek"), "{why}");
    }
}
