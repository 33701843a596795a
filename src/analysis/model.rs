//! The cost model of one struct on one machine: its layout in the target lines, the units
//! and access streams the cost model prices, the current placement and the queueing of its
//! busiest line. Built once from layout + profile + machine; `diagnose`, `optimize`,
//! `predict` and `replay` evaluate placements with it.

use std::path::Path;

use crate::analysis::cost;
use crate::analysis::instances::Instances;
use crate::analysis::machine::{self, MachineModel};
use crate::analysis::run::RunTotals;
use crate::profile::{Access, Profile};
use crate::types::{TypeId, Types};

/// Everything the cost model needs about one struct and one profile.
pub struct Model {
    pub layout: crate::layout::Layout,
    pub units: Vec<cost::Unit>,
    pub streams: Vec<cost::Stream>,
    pub current: cost::Placement,
    pub machine: MachineModel,
    pub cls: u64,
    pub queueing: cost::Queueing,
    /// Where the utilization came from, for the report.
    pub utilization_source: String,
    /// The utilization is [`cost::DEFAULT_UTILIZATION`], neither measured nor derived from
    /// the rates: every queued figure rests on it ([`crate::analysis::plan::rests_on`]).
    pub utilization_assumed: bool,
    /// The utilization is derived from the rates ([`utilization_from_runs`]), so it follows
    /// the busiest line wherever the instances put it.
    pub utilization_from_runs: bool,
    /// How instances are allocated: prices a layout's growth ([`cost::size_term`]).
    pub allocator: cost::Allocator,
    /// Where instances start in their cache line: every layout is priced over those starts
    /// ([`Instances::evaluate`]).
    pub instances: Instances,
    /// How many instances live, where the evidence or the types know: what growth takes from
    /// the cache ([`cost::size_term`]); not known (many) by default.
    pub instance_count: cost::InstanceCount,
    /// What the whole run did, where the evidence knows (a recording): a layout saving less
    /// than its floor is no fix ([`crate::analysis::plan::keep_if_negligible`]), as a line
    /// under it is no finding in `diagnose`.
    pub run: Option<RunTotals>,
}

impl Model {
    /// The model of struct `id` under `accesses`, on `machine`, judged in lines of
    /// `cacheline_size` bytes (default: the machine's), its busiest line at `utilization`
    /// (default: from the evidence's measured HITM latency). Errors name the command-line
    /// flag that set the value refused.
    pub fn build(
        types: &Types<'_>,
        id: TypeId,
        profile: &Profile,
        accesses: &[Access],
        machine: MachineModel,
        cacheline_size: Option<u64>,
        utilization: Option<f64>,
    ) -> Result<Model, String> {
        let cls = cacheline_size.unwrap_or(machine.cacheline_size);
        if !cls.is_power_of_two() || !(16..=4096).contains(&cls) {
            return Err(format!(
                "--cacheline-size {cls}: not a power of two between 16 and 4096"
            ));
        }
        let layout = crate::layout::layout(types, id, cls).expect("a defined struct has a layout");
        let units = cost::units(types, &layout);
        let cpus = profile
            .provenance
            .machine
            .cpus
            .unwrap_or(machine.cpus)
            .min(machine.cpus)
            .max(1);
        // `diagnose` alone also leaves a recording's too-rare threads out of a line's streams
        // (`diagnose::rare_threads_left_out`): `optimize`'s padding of a recorded array's
        // elements still rests on their terms (histogram's `thread_arg_t`), so the two can
        // price a recorded line differently until the streams weigh each CPU's share.
        //
        // A recording is priced at what its threads do at the same time, as `diagnose`
        // prices it: accesses made under a lock every thread there held, or while no other
        // thread was alive, cannot move a line between them.
        let concurrent = concurrent_accesses(accesses);
        let accesses = concurrent.as_deref().unwrap_or(accesses);
        let streams = cost::streams(&units, &layout, accesses, cpus);
        let current = cost::current_placement(&layout, &units);
        let instances = Instances {
            layout_align: current.align,
            ..Instances::aligned()
        };
        let reference = instances.busiest_line(&streams, &current, cls, &machine);
        let (mut assumed, mut from_runs) = (false, false);
        let (utilization, utilization_source) = match utilization {
            Some(u) if (0.0..=cost::MAX_UTILIZATION).contains(&u) => (u, "given".to_string()),
            Some(u) => {
                return Err(format!(
                    "--utilization {u}: must be between 0 and {}",
                    cost::MAX_UTILIZATION
                ));
            }
            None => {
                let u = evidence_utilization(
                    accesses,
                    profile.provenance.machine.cpus,
                    &machine,
                    &streams,
                    reference,
                );
                assumed = u.assumed;
                from_runs = u.from_runs;
                (u.utilization, u.source)
            }
        };
        let instance_count = per_cpu_count(types, id, &machine);
        Ok(Model {
            layout,
            units,
            streams,
            current,
            machine,
            cls,
            queueing: cost::Queueing {
                reference,
                utilization,
            },
            utilization_source,
            utilization_assumed: assumed,
            utilization_from_runs: from_runs,
            allocator: cost::Allocator::default(),
            instances,
            instance_count,
            run: RunTotals::from_profile(profile),
        })
    }

    /// This model with its instances where `instances` says (the current layout's alignment
    /// set on them), the busiest line's queueing measured on them.
    pub fn with_instances(mut self, instances: Instances) -> Model {
        self.instances = Instances {
            layout_align: self.current.align,
            ..instances
        };
        self.queueing.reference =
            self.instances
                .busiest_line(&self.streams, &self.current, self.cls, &self.machine);
        // A utilization derived from the rates is the busiest line's, as the instances are.
        if self.utilization_from_runs
            && let Some(u) = utilization_from_runs(&self.streams, self.queueing.reference)
        {
            self.queueing.utilization = u.utilization;
            self.utilization_source = u.source;
        }
        self
    }

    /// This model with its instances where the evidence shows them
    /// ([`crate::analysis::instances::of_evidence`]): `--instance-align` (`flag`), else what
    /// the profile states for `type_name` (a sketch's `[type.instances]`), else the data
    /// addresses of the lines `bindings` bound; line-aligned where none says. Errors name the
    /// flag or the sketch.
    pub fn with_evidence_instances(
        mut self,
        profile: &Profile,
        type_name: &str,
        bindings: &[crate::analysis::bind::LineBinding],
        flag: Option<u64>,
    ) -> Result<Model, String> {
        let facts = profile
            .type_profile(type_name)
            .and_then(|t| t.instances.as_ref());
        // The evidence's count, where it has one, over what the types said (per-CPU copies).
        if let Some(count) = facts.and_then(crate::analysis::instances::count_of) {
            self.instance_count = count;
        }
        let i = crate::analysis::instances::of_evidence(
            flag,
            facts,
            bindings,
            (self.cls, profile.cacheline_size),
            self.current.align,
        )?;
        Ok(self.with_instances(i))
    }

    /// The current layout's size and hot lines: what the size term measures growth from.
    pub fn footprint(&self) -> cost::Footprint {
        cost::Footprint::of(&self.streams, &self.current, self.cls)
    }

    /// The model's cost of `p` as the instances are ([`Instances::evaluate`]), its growth
    /// beyond the current size priced ([`cost::size_term`]).
    pub fn evaluate(&self, p: &cost::Placement) -> cost::Cost {
        self.instances
            .evaluate(
                &self.units,
                &self.streams,
                p,
                self.cls,
                &self.machine,
                &self.queueing,
            )
            .with_size_term(
                &self.streams,
                p,
                self.footprint(),
                self.cls,
                &self.machine,
                (self.allocator, &self.instance_count),
            )
    }
}

/// The instances of struct `id` where the image shows every one to be per-CPU data
/// ([`Types::per_cpu_instances`]): its copies on each CPU of `machine`; not known otherwise.
/// The evidence's own count, where it has one, replaces it
/// ([`Model::with_evidence_instances`]).
pub fn per_cpu_count(types: &Types<'_>, id: TypeId, machine: &MachineModel) -> cost::InstanceCount {
    match types.per_cpu_instances(id) {
        Some(copies) => cost::InstanceCount::known(
            copies.saturating_mul(u64::from(machine.cpus.max(1))),
            crate::profile::CountSource::PerCpu,
        ),
        None => cost::InstanceCount::default(),
    }
}

/// A recorded access's share that can meet another thread's on its line: all but what it
/// made under a lock every other thread there held (`src/record/overlap.rs`); 1 without
/// the evidence.
pub fn concurrent_share(a: &Access) -> f64 {
    let all = a.counts.loads + a.counts.stores + a.counts.rmw;
    match a.details.get("sequential_accesses") {
        Some(&s) if all > 0.0 => (1.0 - s / all).clamp(0.0, 1.0),
        _ => 1.0,
    }
}

/// The accesses at their concurrent share, as the cost model prices a recording: only what
/// threads do at the same time can move a line between them. `None` when every access is
/// wholly concurrent (nothing to scale).
pub fn concurrent_accesses(accesses: &[Access]) -> Option<Vec<Access>> {
    if accesses.iter().all(|a| concurrent_share(a) >= 1.0) {
        return None;
    }
    Some(
        accesses
            .iter()
            .map(|a| {
                let c = concurrent_share(a);
                let mut a = a.clone();
                a.counts.loads *= c;
                a.counts.stores *= c;
                a.counts.rmw *= c;
                for k in ["element_line_writes", "element_line_reads"] {
                    if let Some(&x) = a.details.get(k) {
                        a.details.insert(k, x * c);
                    }
                }
                a
            })
            .collect(),
    )
}

/// The busiest line's utilization, where it came from, and whether it is an assumption.
pub struct Utilization {
    pub utilization: f64,
    pub source: String,
    /// Neither measured nor derived: [`cost::DEFAULT_UTILIZATION`], on which every queued
    /// figure rests.
    pub assumed: bool,
    /// Derived from the rates ([`utilization_from_runs`]).
    pub from_runs: bool,
}

/// The busiest line's utilization when none is given, and where it came from: from the
/// evidence's measured HITM latency against the machine's unloaded one (only for a machine at
/// least as wide as the evidence shows, whose latencies they describe); else from the rates,
/// where the evidence gives what every run costs ([`utilization_from_runs`]); else
/// [`cost::DEFAULT_UTILIZATION`], assumed. `reference` is the busiest line's unqueued transfer
/// cycles ([`cost::busiest_line`]). `diagnose` and `predict` queue the same lines the same way.
pub fn evidence_utilization(
    accesses: &[Access],
    evidence_cpus: Option<u32>,
    machine: &MachineModel,
    streams: &[cost::Stream],
    reference: f64,
) -> Utilization {
    let seen = accesses
        .iter()
        .filter_map(|a| a.cpus.as_ref().and_then(|c| c.distinct()))
        .max()
        .unwrap_or(0);
    let wide_enough = evidence_cpus.unwrap_or(seen).max(seen) <= machine.cpus;
    let measured = measured_hitm_latency(accesses)
        .map(|m| (m, "measured HITM latency"))
        .or_else(|| quoted_load_latency(accesses).map(|m| (m, "quoted cycles per load")))
        .filter(|_| wide_enough);
    match measured {
        Some((measured, what)) => {
            let widest = streams.iter().map(|s| s.cpus).max().unwrap_or(1);
            let nominal = machine.transfer_cycles(widest);
            let u = cost::Queueing::utilization_from_latency(measured, nominal);
            Utilization {
                utilization: u,
                source: format!("{what} {measured:.0} cycles vs {nominal:.0} unloaded"),
                assumed: false,
                from_runs: false,
            }
        }
        None => match utilization_from_runs(streams, reference) {
            Some(u) => u,
            None => Utilization {
                utilization: cost::DEFAULT_UTILIZATION,
                source: "assumed (no latency measured on this machine in the evidence, and no cost per run to derive it from the rates)".to_string(),
                assumed: true,
                from_runs: false,
            },
        },
    }
}

/// The busiest line's utilization from the evidence's rates, where it gives what every run
/// costs (`cycles_per_run`): the runs' CPUs take `work / cpus` cycles for what the evidence
/// counts (`work` the runs' rate times cost per run, [`cost::RunWork`]), and the busiest line
/// is busy `reference` cycles of them with its transfers: utilization `reference x cpus /
/// work`. A line written once per hundred lookups of a lookup that costs hundreds of cycles is
/// then nearly idle, not half-saturated as [`cost::DEFAULT_UTILIZATION`] assumes. The runs
/// are taken to keep their CPUs busy (no idle time between them), so this is an upper bound.
/// None where some run has no cost (its time is unknown) or nothing runs.
pub fn utilization_from_runs(streams: &[cost::Stream], reference: f64) -> Option<Utilization> {
    let runs = cost::path_runs(streams);
    if runs.is_empty()
        || runs
            .iter()
            .any(|r| r.cycles_per_run.is_none_or(|c| c <= 0.0))
    {
        return None;
    }
    let work = cost::RunWork::of(streams)?;
    // The CPUs that run them: every listed CPU where all streams list theirs, else the
    // widest stream's count (smaller sets taken to sit inside it, as lines count them).
    let cpus = if streams.iter().all(|s| !s.cpu_list.is_empty()) {
        let all: std::collections::BTreeSet<u32> = streams
            .iter()
            .flat_map(|s| s.cpu_list.iter().copied())
            .collect();
        all.len() as f64
    } else {
        streams.iter().map(|s| s.cpus).max().unwrap_or(1).max(1) as f64
    };
    let u = (reference.max(0.0) * cpus / work.cycles).min(cost::MAX_UTILIZATION);
    Some(Utilization {
        utilization: u,
        source: format!(
            "from the rates: the busiest line's transfers take {:.0} of the {:.0} cycles its runs keep {cpus:.0} CPU(s) busy (what every run costs, given)",
            reference.max(0.0),
            work.cycles / cpus
        ),
        assumed: false,
        from_runs: true,
    })
}

/// Cycles per load that the evidence quotes as a range for loads of members other accesses
/// write (a sketch's `cycles = [low, high]`, from a mail's perf c2c "cycles per load ~1.5K to
/// 10.5K" on a contended line): the geometric mean of each range, weighted by the loads. On a
/// line other CPUs write, such loads are HITMs, so this is the measured HITM latency where the
/// evidence has no per-kind figures. None where no written member's loads quote one.
pub fn quoted_load_latency(accesses: &[Access]) -> Option<f64> {
    let written = |a: &Access| {
        accesses.iter().any(|w| {
            w.counts.writes() > 0.0
                && match (&w.field, &a.field, w.offset, a.offset) {
                    (Some(x), Some(y), _, _) => x == y,
                    (_, _, Some(x), Some(y)) => x == y,
                    _ => false,
                }
        })
    };
    let (mut sum, mut n) = (0.0, 0.0);
    for a in accesses {
        let Some((lo, hi)) = a.latency.as_ref().and_then(|l| l.range) else {
            continue;
        };
        if a.counts.loads > 0.0 && lo > 0.0 && hi >= lo && written(a) {
            sum += (lo * hi).sqrt().ln() * a.counts.loads;
            n += a.counts.loads;
        }
    }
    (n > 0.0).then(|| (sum / n).exp())
}

/// Mean cycles of HITM loads, weighted by their counts, when the evidence measured them.
pub fn measured_hitm_latency(accesses: &[Access]) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0.0);
    for a in accesses {
        let Some(l) = &a.latency else { continue };
        for (mean, count) in [
            (l.mean_lcl_hitm, a.counts.lcl_hitm),
            (l.mean_rmt_hitm, a.counts.rmt_hitm),
        ] {
            if let Some(m) = mean
                && count > 0.0
            {
                sum += m * count;
                n += count;
            }
        }
    }
    (n > 0.0).then(|| sum / n)
}

/// The machine `name` names: `host` (this machine: its `lineup calibrate` figures when
/// cached, else its topology with generic latencies), a preset, or a machine file. Errors
/// are one line naming `--machine`.
pub fn machine_named(name: &str) -> Result<MachineModel, String> {
    if name == "host" {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        // The calibration comes from lineup's cache when there is one that only this
        // user can have written; with none, from a path under /dev/null, which holds
        // nothing (generic latencies).
        let cache = crate::record::cc::existing_cache_dir()?;
        return Ok(crate::readers::host::host_machine(
            Path::new("/sys"),
            &cpuinfo,
            cache.as_deref().unwrap_or(Path::new("/dev/null")),
        ));
    }
    if let Some(m) = machine::preset(name) {
        return Ok(m);
    }
    // A machine file (`lineup calibrate -o FILE`, or one written by hand).
    let path = Path::new(name);
    if path.is_file() || name.contains('/') || name.ends_with(".toml") {
        let text = crate::input::read_text_lossy(path).map_err(|e| format!("--machine {e}"))?;
        let (mut m, _) =
            machine::parse_machine_file(&text).map_err(|e| format!("--machine {name}: {e}"))?;
        m.description = format!("{} (from {name})", m.description);
        return Ok(m);
    }
    let names: Vec<String> = machine::presets().into_iter().map(|m| m.name).collect();
    Err(format!(
        "--machine {name}: no such preset or file; known: host, {}, or a machine file (lineup calibrate -o FILE)",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::machine::preset;

    fn stream(unit: usize, path: &str, reads: f64, writes: f64, cpu: u32) -> cost::Stream {
        cost::Stream {
            unit,
            inner: 0,
            size: 8,
            field: String::new(),
            path: path.to_string(),
            reads,
            writes,
            rmw: 0.0,
            cpus: 1,
            cpu_list: vec![cpu],
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    #[test]
    fn a_line_written_once_per_hundred_lookups_is_queued_at_its_rates_not_half_saturated() {
        // Two neighbouring elements on one line, each looked up by its own CPU and its used
        // bit stored once per 100 lookups (promscale's clock cache).
        let mut streams = vec![
            stream(0, "get", 100.0, 1.0, 0),
            stream(1, "get", 100.0, 1.0, 1),
        ];
        let p = cost::Placement {
            offsets: vec![0, 8],
            size: 16,
            align: 8,
        };
        let m = preset("icelake-2s").unwrap();
        let reference = cost::busiest_line(&streams, &p, 64, &m);
        assert!(reference > 0.0);
        // No cost per run: the rates cannot say how busy the line is, and the utilization is
        // the assumption, said as one.
        let assumed = evidence_utilization(&[], None, &m, &streams, reference);
        assert!(assumed.assumed && !assumed.from_runs);
        assert_eq!(assumed.utilization, cost::DEFAULT_UTILIZATION);
        assert!(utilization_from_runs(&streams, reference).is_none());
        // A lookup of 300 cycles: the two CPUs run 101 accesses' runs each (a run at its
        // busiest stream's rate) in 30300 cycles, of which the line's few transfers take a
        // few hundred: nearly idle.
        for s in &mut streams {
            s.cycles_per_run = Some(300.0);
        }
        let derived = evidence_utilization(&[], None, &m, &streams, reference);
        assert!(!derived.assumed && derived.from_runs);
        let want = reference * 2.0 / (2.0 * 101.0 * 300.0);
        assert!(
            (derived.utilization - want).abs() < 1e-12,
            "{}",
            derived.utilization
        );
        assert!(derived.utilization < 0.1, "{}", derived.utilization);
        // A run that costs only a little more than its transfers keeps the line busy.
        for s in &mut streams {
            s.cycles_per_run = Some(1.0);
        }
        let busy = utilization_from_runs(&streams, reference).unwrap();
        assert_eq!(busy.utilization, cost::MAX_UTILIZATION);
        // One run with no cost: its time is unknown, nothing is derived.
        streams[1].cycles_per_run = None;
        assert!(utilization_from_runs(&streams, reference).is_none());
    }
}
