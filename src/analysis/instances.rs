//! Where instances of a struct start in their cache line, and the one rule that prices a
//! layout over those starts (`docs/cost-model.md`, "Instances").
//!
//! A layout's lines are lines of memory only where its instances start a line. An embedded
//! struct, a slab cache without hardware alignment or `calloc` (16 bytes into a line) put
//! instances elsewhere, and the members a line-aligned layout keeps apart share a line there.
//! [`Instances`] is what the evidence shows: the offsets into a line where instances start
//! (a sketch's `[type.instances]`, `--instance-align`, the data addresses of the evidence's
//! lines against the members' offsets), or line-aligned where it shows none. Every command
//! prices a layout with [`Instances::evaluate`]: the share-weighted mean of the model's cost
//! with the layout shifted to each start, so the headline is the price of the instances as
//! they are and `optimize` ranks its candidates on that.
//!
//! On a machine whose L2 fetches aligned 128-byte pairs of lines (`contention::pairs`), a
//! line-aligned instance starts either half of a pair: the pair term is priced over both
//! phases, each half the instances, unless the layout is aligned to the pair and the
//! allocation honours that.

use std::collections::BTreeMap;

use serde::Serialize;

use super::contention::{self, PairModel};
use super::cost::{self, Cost, LineCost, Placement, Queueing, Stream, Unit};
use super::machine::MachineModel;

/// Where the start offsets came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceSource {
    /// Nothing in the evidence says where instances start: taken to be line-aligned.
    #[default]
    Assumed,
    /// `--instance-align N`.
    Flag,
    /// The sketch's `[type.instances]`.
    Sketch,
    /// The data addresses of the evidence's lines against the members' offsets.
    Addresses,
}

/// One offset into a line where instances start, and the share of instances that do.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Start {
    pub offset: u64,
    pub share: f64,
}

/// Where the instances of a struct start in their cache line: what the evidence shows, or
/// line-aligned where it shows nothing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Instances {
    /// Offsets below the line size, ascending, each with its share (the shares sum to 1).
    pub starts: Vec<Start>,
    /// A larger alignment the layout declares moves the instances with it: instances the
    /// compiler places (globals, per-CPU data, members of a struct allocated so), or a slab
    /// cache created with the type's alignment. False for an allocator that ignores the
    /// type (malloc, kmalloc, a slab cache without `SLAB_HWCACHE_ALIGN`), and where the
    /// evidence does not say.
    pub honours_alignment: bool,
    pub source: InstanceSource,
    /// Where the instances are allocated or embedded, in the evidence's words, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Alignment of the layout whose instances the evidence shows (the current one): a
    /// layout aligned to more moves honoured instances; 0 before a model sets it.
    #[serde(skip)]
    pub layout_align: u64,
}

impl Default for Instances {
    fn default() -> Self {
        Instances::aligned()
    }
}

/// Whether the model prices adjacent-line pairs on `machine` in lines of `cls` bytes (an
/// Intel preset or host, 64-byte lines, a pair share above 0).
pub fn pairs_apply(machine: &MachineModel, cls: u64) -> bool {
    machine.adjacent_line_pairs && cls == 64 && machine.pair_share() > 0.0
}

/// `p` with every unit `by` bytes further on: an instance that starts `by` bytes into a line.
fn shifted(p: &Placement, by: u64) -> Placement {
    Placement {
        offsets: p.offsets.iter().map(|o| o + by).collect(),
        size: p.size + by,
        align: p.align,
    }
}

/// Equal shares over `offsets` (below `cls`, duplicates merged).
fn equal(offsets: &[u64], cls: u64) -> Vec<Start> {
    let mut v: Vec<u64> = offsets.iter().map(|o| o % cls.max(1)).collect();
    v.sort_unstable();
    v.dedup();
    let n = v.len().max(1) as f64;
    v.into_iter()
        .map(|offset| Start {
            offset,
            share: 1.0 / n,
        })
        .collect()
}

impl Instances {
    /// Line-aligned instances, assumed: nothing says otherwise.
    pub fn aligned() -> Instances {
        Instances {
            starts: vec![Start {
                offset: 0,
                share: 1.0,
            }],
            honours_alignment: true,
            source: InstanceSource::Assumed,
            site: None,
            layout_align: 0,
        }
    }

    /// Instances at `offsets` into a line, equally many at each.
    pub fn at(offsets: &[u64], cls: u64, source: InstanceSource) -> Instances {
        Instances {
            starts: equal(offsets, cls),
            honours_alignment: false,
            source,
            site: None,
            layout_align: 0,
        }
    }

    /// Instances only `align`-byte aligned: equally many at each multiple of `align` below
    /// the line (line-aligned when `align` is a line or more).
    pub fn every(align: u64, cls: u64, source: InstanceSource) -> Instances {
        let a = align.clamp(1, cls.max(1));
        let offsets: Vec<u64> = (0..cls / a).map(|k| k * a).collect();
        Instances::at(&offsets, cls, source)
    }

    /// Whether some instances do not start a line.
    pub fn misaligned(&self) -> bool {
        self.starts.iter().any(|s| s.offset != 0)
    }

    /// The same instances with the allocation line-aligned (what `optimize` compares with,
    /// to say whether the allocation must change).
    pub fn line_aligned(&self) -> Instances {
        Instances {
            starts: vec![Start {
                offset: 0,
                share: 1.0,
            }],
            ..self.clone()
        }
    }

    /// The largest power of two that divides every start (the line where all are 0).
    fn granularity(&self, cls: u64) -> u64 {
        self.starts
            .iter()
            .filter(|s| s.offset != 0)
            .map(|s| 1u64 << s.offset.trailing_zeros())
            .min()
            .unwrap_or(cls)
            .min(cls)
    }

    /// Where instances of a layout aligned to `align` start, modulo the line (or, where
    /// `pairs`, modulo a pair of lines), with their shares: **the rule**.
    ///
    /// - The evidence's starts are the allocation's, for every layout: moving members does
    ///   not move the allocation.
    /// - Where the allocation honours the type's alignment and the layout declares more
    ///   than the starts have, only the starts at multiples of it remain (renormalised), or
    ///   with none, every multiple of it below the line.
    /// - Where adjacent-line pairs are priced, each start is at either half of a pair, half
    ///   the instances each, unless the layout is aligned to the pair and the allocation
    ///   honours it (then every instance starts a pair).
    pub fn phases(&self, align: u64, cls: u64, pairs: bool) -> Vec<(u64, f64)> {
        let cls = cls.max(1);
        let mut base: Vec<(u64, f64)> = self.starts.iter().map(|s| (s.offset, s.share)).collect();
        let raised = align > self.layout_align.max(self.granularity(cls)).max(1);
        if self.honours_alignment && raised {
            let a = align.min(cls);
            let kept: Vec<(u64, f64)> = base.iter().copied().filter(|(s, _)| s % a == 0).collect();
            let total: f64 = kept.iter().map(|x| x.1).sum();
            base = if kept.is_empty() || total <= 0.0 {
                equal(&(0..cls / a).map(|k| k * a).collect::<Vec<_>>(), cls)
                    .into_iter()
                    .map(|s| (s.offset, s.share))
                    .collect()
            } else {
                kept.into_iter().map(|(s, w)| (s, w / total)).collect()
            };
        }
        if !pairs {
            return base;
        }
        let whole_pair = self.honours_alignment && align >= 2 * cls;
        let mut out = Vec::new();
        for (s, w) in base {
            if whole_pair && s == 0 {
                out.push((0, w));
            } else {
                out.push((s, w / 2.0));
                out.push((s + cls, w / 2.0));
            }
        }
        out
    }

    /// Whether the price of a layout aligned to `align` is the model's on line-aligned
    /// instances at phase 0 alone (nothing to average).
    fn trivial(phases: &[(u64, f64)]) -> bool {
        phases.len() == 1 && phases[0].0 == 0
    }

    /// The model's cost of `p` over the instances' starts: every term the share-weighted mean
    /// of [`cost::evaluate`] with `p` shifted to each start. Line indices are the instance's
    /// own (line 0 holds its first byte); `size` and `cachelines` are the layout's. The size
    /// term is the caller's ([`Cost::with_size_term`], on the layout as declared).
    pub fn evaluate(
        &self,
        units: &[Unit],
        streams: &[Stream],
        p: &Placement,
        cls: u64,
        machine: &MachineModel,
        q: &Queueing,
    ) -> Cost {
        let phases = self.phases(p.align, cls, pairs_apply(machine, cls));
        if Self::trivial(&phases) {
            return cost::evaluate(units, streams, p, cls, machine, q);
        }
        let cls = cls.max(1);
        // Phases with one start in the line share every term but the pair term: the line
        // terms are priced once per start, the pair term once per phase.
        let mut by_start: BTreeMap<u64, Vec<(u64, f64)>> = BTreeMap::new();
        for &(ph, w) in &phases {
            by_start.entry(ph % cls).or_default().push((ph, w));
        }
        let mut out = Cost {
            size: p.size,
            cachelines: p.size.div_ceil(cls),
            ..Default::default()
        };
        let mut lines: BTreeMap<u64, LineCost> = BTreeMap::new();
        let mut path_lines: BTreeMap<String, f64> = BTreeMap::new();
        for (start, group) in by_start {
            let w: f64 = group.iter().map(|x| x.1).sum();
            let c = cost::evaluate(units, streams, &shifted(p, start), cls, machine, q);
            out.false_transfers += w * c.false_transfers;
            out.true_transfers += w * c.true_transfers;
            out.false_cycles += w * c.false_cycles;
            out.true_cycles += w * c.true_cycles;
            out.locality_cycles += w * c.locality_cycles;
            for (path, n) in &c.path_lines {
                *path_lines.entry(path.clone()).or_default() += w * *n as f64;
            }
            for l in &c.lines {
                let e = lines.entry(l.index).or_insert_with(|| LineCost {
                    index: l.index,
                    ..Default::default()
                });
                for f in &l.fields {
                    if !e.fields.contains(f) {
                        e.fields.push(f.clone());
                    }
                }
                e.false_transfers += w * l.false_transfers;
                e.true_transfers += w * l.true_transfers;
                e.false_cycles += w * l.false_cycles;
                e.true_cycles += w * l.true_cycles;
            }
            for (ph, wp) in group {
                let pair = if ph == start {
                    c.pair_cycles
                } else {
                    contention::pairs(streams, &shifted(p, ph), cls, machine, q)
                        .iter()
                        .map(|x| x.cycles)
                        .sum()
                };
                out.pair_cycles += wp * pair;
            }
        }
        out.lines = lines
            .into_values()
            .map(|mut l| {
                l.fields.sort();
                l
            })
            .collect();
        out.path_lines = path_lines
            .into_iter()
            .map(|(k, v)| (k, v.round() as u64))
            .collect();
        out
    }

    /// The adjacent-line pairs of `p` over the instances' phases ([`contention::pairs`]):
    /// each pair's cycles times the share of instances it is a pair in, its lines in the
    /// instance's own numbering (a pair of lines 1 and 2 where an instance starts the second
    /// half of a pair). Their cycles sum to [`Instances::evaluate`]'s pair term.
    pub fn pairs(
        &self,
        streams: &[Stream],
        p: &Placement,
        cls: u64,
        machine: &MachineModel,
        q: &Queueing,
    ) -> Vec<PairModel> {
        if !pairs_apply(machine, cls) {
            return Vec::new();
        }
        let mut out: Vec<PairModel> = Vec::new();
        for (ph, w) in self.phases(p.align, cls, true) {
            for mut pm in contention::pairs(streams, &shifted(p, ph), cls, machine, q) {
                pm.first = pm.first.saturating_sub(ph / cls);
                pm.cycles *= w;
                pm.share = w;
                pm.start = ph;
                out.push(pm);
            }
        }
        out.sort_by(|a, b| a.first.cmp(&b.first).then(a.start.cmp(&b.start)));
        out
    }

    /// Unqueued transfer cycles of the busiest line of `p` at any of the instances' starts:
    /// the queueing reference ([`cost::busiest_line`]) as the instances are.
    pub fn busiest_line(
        &self,
        streams: &[Stream],
        p: &Placement,
        cls: u64,
        machine: &MachineModel,
    ) -> f64 {
        self.phases(p.align, cls, false)
            .iter()
            .map(|&(s, _)| cost::busiest_line(streams, &shifted(p, s), cls, machine))
            .fold(0.0, f64::max)
    }

    /// The starts in words: `16 bytes into a line`, `every multiple of 8 bytes in a line`,
    /// `the start of a line`.
    pub fn describe_starts(&self, cls: u64) -> String {
        let offs: Vec<u64> = self.starts.iter().map(|s| s.offset).collect();
        let g = self.granularity(cls);
        let every = g < cls
            && offs.len() as u64 == cls / g
            && offs.iter().enumerate().all(|(k, &o)| o == k as u64 * g);
        match offs.as_slice() {
            [0] => "at the start of a line".to_string(),
            [one] => format!("{one} bytes into a {cls}-byte line ({one} mod {cls})"),
            _ if every => format!("at every multiple of {g} bytes in a {cls}-byte line"),
            many => format!(
                "{} bytes into a {cls}-byte line",
                many.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// One line for the reports' headers where instances do not all start a line: where they
    /// start, and that every layout is priced there; `None` for line-aligned instances.
    pub fn headline(&self, cls: u64) -> Option<String> {
        self.misaligned().then(|| {
            format!(
                "instances: start {} ({}); every layout is priced there, as the instances are{}",
                self.describe_starts(cls),
                self.describe_source(),
                if self.honours_alignment {
                    " (a larger alignment a layout declares moves them with it)"
                } else {
                    ""
                }
            )
        })
    }

    /// Where the starts came from, in words.
    pub fn describe_source(&self) -> String {
        let base = match self.source {
            InstanceSource::Assumed => "assumed: nothing in the evidence says otherwise",
            InstanceSource::Flag => "--instance-align",
            InstanceSource::Sketch => "the sketch's [type.instances]",
            InstanceSource::Addresses => {
                "the data addresses of the evidence's lines against the members' offsets"
            }
        };
        match &self.site {
            Some(s) => format!("{base}; {s}"),
            None => base.to_string(),
        }
    }
}

/// What the evidence says about where instances of a type start (a sketch's
/// `[type.instances]`, `TypeProfile::instances`).
pub use crate::profile::InstanceFacts;

/// The number of instances the evidence states (a sketch's `count`, a recording's), if any.
pub fn count_of(facts: &InstanceFacts) -> Option<cost::InstanceCount> {
    facts.count.map(|n| {
        cost::InstanceCount::known(
            n,
            facts
                .counted_by
                .unwrap_or(crate::profile::CountSource::Sketch),
        )
    })
}

/// Whether the facts say where instances start (offsets or an alignment), not only how many
/// there are.
fn states_starts(facts: &InstanceFacts) -> bool {
    facts.offsets.is_some() || facts.align.is_some()
}

/// The instances of `type_name` as the evidence shows them, in lines of `cls` bytes:
/// `--instance-align` (`flag`) first, then what the profile states (a sketch), then the data
/// addresses of the bound lines; line-aligned where none says. `layout_align` is the current
/// layout's alignment. Errors are one line naming the flag or the sketch.
pub fn of_evidence(
    flag: Option<u64>,
    facts: Option<&InstanceFacts>,
    bindings: &[crate::analysis::bind::LineBinding],
    (cls, evidence_cls): (u64, u64),
    layout_align: u64,
) -> Result<Instances, String> {
    // Offsets into the evidence's lines, in the model's: a start 16 bytes into a 64-byte
    // line is 16 or 80 bytes into a 128-byte one.
    let widen = |offsets: &[u64]| -> Vec<u64> {
        let e = evidence_cls.max(1);
        let k = (cls / e).max(1);
        offsets
            .iter()
            .flat_map(|&o| (0..k).map(move |i| o % e + i * e))
            .collect()
    };
    let mut inst = if let Some(n) = flag {
        if n == 0 || !n.is_power_of_two() {
            return Err(format!("--instance-align {n}: not a power of two"));
        }
        Instances::every(n, cls, InstanceSource::Flag)
    } else if let Some(f) = facts.filter(|f| states_starts(f)) {
        let mut i = match (&f.offsets, f.align) {
            (Some(o), _) if !o.is_empty() => Instances::at(&widen(o), cls, InstanceSource::Sketch),
            (_, Some(a)) if a.is_power_of_two() => Instances::every(a, cls, InstanceSource::Sketch),
            (_, Some(a)) => {
                return Err(format!(
                    "the sketch's [type.instances] align = {a}: not a power of two"
                ));
            }
            _ => Instances::aligned(),
        };
        i.source = InstanceSource::Sketch;
        i.honours_alignment = f.honours_alignment.unwrap_or(false);
        i.site = f.at.clone();
        i
    } else {
        let seen: Vec<u64> = bindings
            .iter()
            .map(|b| {
                (b.address as i128 - b.line_start as i128).rem_euclid(evidence_cls.max(1) as i128)
                    as u64
            })
            .collect();
        if seen.is_empty() {
            Instances::aligned()
        } else {
            let mut i = Instances::at(&widen(&seen), cls, InstanceSource::Addresses);
            // Line-aligned by the addresses: the allocation is not known to ignore alignment.
            i.honours_alignment = !i.misaligned();
            i
        }
    };
    inst.layout_align = layout_align;
    Ok(inst)
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

    fn stream(unit: usize, path: &str, reads: f64, writes: f64, cpus: &[u32]) -> Stream {
        Stream {
            unit,
            inner: 0,
            size: 8,
            field: format!("m{unit}"),
            path: path.to_string(),
            reads,
            writes,
            rmw: 0.0,
            cpus: cpus.len() as u32,
            cpu_list: cpus.to_vec(),
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    /// The acceptance probe of issue 24 item 5: instances at 16 mod 64 are priced as such.
    /// `a` at 0 and `b` at 48 are one line on line-aligned instances and two lines 16 bytes
    /// into a line, where `b` starts the next line: the price as allocated is the two-line
    /// price, and a layout that keeps them apart on aligned instances (`b` at 64) shares a
    /// line 16 bytes in.
    #[test]
    fn instances_at_16_mod_64_are_priced_as_such() {
        let m = preset("power10-96").unwrap();
        let mut m = m;
        m.cacheline_size = 64;
        let units = vec![unit("a", 0), unit("b", 48)];
        let streams = vec![
            stream(0, "w", 0.0, 100.0, &[0, 1, 2, 3]),
            stream(1, "r", 400.0, 0.0, &[4, 5, 6, 7]),
        ];
        let q = Queueing::NONE;
        let together = Placement {
            offsets: vec![0, 48],
            size: 56,
            align: 8,
        };
        let apart = Placement {
            offsets: vec![0, 112],
            size: 120,
            align: 8,
        };
        let at16 = Instances::at(&[16], 64, InstanceSource::Sketch);
        let aligned = Instances::aligned();
        let total = |i: &Instances, p: &Placement| {
            i.evaluate(&units, &streams, p, 64, &m, &q).total_cycles()
        };
        let one_line = cost::evaluate(&units, &streams, &together, 64, &m, &q);
        let two_lines = cost::evaluate(&units, &streams, &apart, 64, &m, &q);
        assert!(one_line.false_cycles > 0.0, "{one_line:?}");
        assert_eq!(two_lines.false_cycles, 0.0, "{two_lines:?}");
        // Aligned: the one-line price; 16 bytes in, `b` at 64 starts line 1: apart.
        assert_eq!(total(&aligned, &together), one_line.total_cycles());
        assert_eq!(total(&at16, &together), two_lines.total_cycles());
        // `b` at 112 is on line 1 aligned, at 128 (line 2) 16 bytes in: apart both ways.
        assert_eq!(total(&at16, &apart), two_lines.total_cycles());
        // `b` at 40 shares line 0 aligned and 16 bytes in (56 < 64).
        let close = Placement {
            offsets: vec![0, 40],
            size: 48,
            align: 8,
        };
        assert!((total(&at16, &close) - one_line.total_cycles()).abs() < 1e-9);
        // Half the instances at 0, half at 16: the mean of the two prices.
        let both = Instances::at(&[0, 16], 64, InstanceSource::Sketch);
        let mean = (one_line.total_cycles() + two_lines.total_cycles()) / 2.0;
        assert!((total(&both, &together) - mean).abs() < 1e-9 * mean);
        // Lines are the instance's own: 16 bytes in, `a` is on line 0 and `b` on line 1.
        let c = at16.evaluate(&units, &streams, &together, 64, &m, &q);
        let idx: Vec<u64> = c.lines.iter().map(|l| l.index).collect();
        assert_eq!(idx, vec![0, 1], "{c:?}");
        // A layout aligned to the line moves honoured instances with it; not others.
        let line_aligned = Placement {
            align: 64,
            ..together.clone()
        };
        let mut honoured = at16.clone();
        honoured.honours_alignment = true;
        honoured.layout_align = 8;
        assert_eq!(honoured.phases(64, 64, false), vec![(0, 1.0)]);
        assert_eq!(total(&honoured, &line_aligned), one_line.total_cycles());
        assert_eq!(total(&at16, &line_aligned), two_lines.total_cycles());
    }

    /// A 64-aligned instance starts either half of a 128-byte pair: the pair term is the mean
    /// over both phases. Writers on lines 0 and 1 are one pair in the instances that start a
    /// pair, and two pairs apart in the others: half the one-phase term. Lines 1 and 2 were
    /// priced at nothing; they are a pair in the other half.
    #[test]
    fn a_64_aligned_instance_pays_the_pair_term_over_both_phases() {
        let intel = preset("icelake-2s").unwrap();
        let units = vec![unit("head", 0), unit("tail", 64), unit("x", 128)];
        let streams = vec![
            stream(0, "push", 10.0, 100.0, &[0, 1, 2, 3]),
            stream(1, "pop", 10.0, 100.0, &[4, 5, 6, 7]),
        ];
        let q = Queueing::NONE;
        let p = Placement {
            offsets: vec![0, 64, 128],
            size: 192,
            align: 64,
        };
        let one_phase = cost::evaluate(&units, &streams, &p, 64, &intel, &q).pair_cycles;
        assert!(one_phase > 0.0);
        let aligned = Instances::aligned();
        assert_eq!(aligned.phases(64, 64, true), vec![(0, 0.5), (64, 0.5)]);
        let c = aligned.evaluate(&units, &streams, &p, 64, &intel, &q);
        assert!(
            (c.pair_cycles - one_phase / 2.0).abs() < 1e-9 * one_phase,
            "{c:?}"
        );
        // The line terms do not depend on the phase.
        let line = cost::evaluate(&units, &streams, &p, 64, &intel, &q);
        assert_eq!(c.false_cycles, line.false_cycles);
        // The pairs as diagnose sees them: lines 0-1 in half the instances, summing to the term.
        let found = aligned.pairs(&streams, &p, 64, &intel, &q);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].first, found[0].share), (0, 0.5));
        assert!((found[0].cycles - c.pair_cycles).abs() < 1e-9 * one_phase);
        // Writers on lines 1 and 2: no pair at phase 0, a pair at phase 64.
        let shifted_p = Placement {
            offsets: vec![64, 128, 0],
            ..p.clone()
        };
        assert_eq!(
            cost::evaluate(&units, &streams, &shifted_p, 64, &intel, &q).pair_cycles,
            0.0
        );
        let c2 = aligned.evaluate(&units, &streams, &shifted_p, 64, &intel, &q);
        assert!(
            (c2.pair_cycles - one_phase / 2.0).abs() < 1e-9 * one_phase,
            "{c2:?}"
        );
        let found = aligned.pairs(&streams, &shifted_p, 64, &intel, &q);
        assert_eq!((found[0].first, found[0].start), (1, 64), "{found:?}");
        // A layout aligned to the pair, honoured: every instance starts a pair.
        let pair_aligned = Placement {
            align: 128,
            ..p.clone()
        };
        let c3 = aligned.evaluate(&units, &streams, &pair_aligned, 64, &intel, &q);
        assert_eq!(c3.pair_cycles, one_phase);
        // Without pairs on the machine, nothing to average.
        let mut plain = intel.clone();
        plain.adjacent_line_pairs = false;
        assert_eq!(
            aligned.phases(64, 64, pairs_apply(&plain, 64)),
            vec![(0, 1.0)]
        );
    }

    #[test]
    fn starts_come_from_the_flag_the_sketch_or_the_addresses() {
        let i = of_evidence(Some(16), None, &[], (64, 64), 8).unwrap();
        let offs: Vec<u64> = i.starts.iter().map(|s| s.offset).collect();
        assert_eq!(offs, vec![0, 16, 32, 48]);
        assert_eq!(i.source, InstanceSource::Flag);
        assert!(i.describe_starts(64).contains("every multiple of 16"));
        assert!(of_evidence(Some(12), None, &[], (64, 64), 8).is_err());
        let facts = InstanceFacts {
            offsets: Some(vec![16]),
            align: None,
            honours_alignment: None,
            at: Some("calloc in main".into()),
            ..Default::default()
        };
        // Facts that say only how many instances there are leave the starts to the rest
        // of the evidence (here none: line-aligned, assumed), and give the size term its count.
        let counted = InstanceFacts {
            count: Some(1),
            counted_by: Some(crate::profile::CountSource::Sketch),
            ..Default::default()
        };
        assert_eq!(
            of_evidence(None, Some(&counted), &[], (64, 64), 8).unwrap(),
            Instances {
                layout_align: 8,
                ..Instances::aligned()
            }
        );
        assert_eq!(
            count_of(&counted),
            Some(cost::InstanceCount::known(
                1,
                crate::profile::CountSource::Sketch
            ))
        );
        assert_eq!(count_of(&facts), None);
        let i = of_evidence(None, Some(&facts), &[], (64, 64), 8).unwrap();
        assert_eq!(
            i.starts,
            vec![Start {
                offset: 16,
                share: 1.0
            }]
        );
        assert!(!i.honours_alignment);
        assert!(i.describe_starts(64).contains("16 mod 64"));
        assert_eq!(
            of_evidence(None, None, &[], (64, 64), 8)
                .unwrap()
                .starts
                .len(),
            1
        );
        // 16 bytes into a 64-byte line is 16 or 80 bytes into a 128-byte one.
        let i = of_evidence(None, Some(&facts), &[], (128, 64), 8).unwrap();
        let offs: Vec<u64> = i.starts.iter().map(|s| s.offset).collect();
        assert_eq!(offs, vec![16, 80]);
    }
}
