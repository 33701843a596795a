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
        let (utilization, utilization_source) = match utilization {
            Some(u) if (0.0..=cost::MAX_UTILIZATION).contains(&u) => (u, "given".to_string()),
            Some(u) => {
                return Err(format!(
                    "--utilization {u}: must be between 0 and {}",
                    cost::MAX_UTILIZATION
                ));
            }
            None => evidence_utilization(
                accesses,
                profile.provenance.machine.cpus,
                &machine,
                &streams,
            ),
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

/// The busiest line's utilization when none is given, and where it came from: from the
/// evidence's measured HITM latency against the machine's unloaded one (only for a machine at
/// least as wide as the evidence shows, whose latencies they describe), else
/// [`cost::DEFAULT_UTILIZATION`]. `diagnose` and `predict` queue the same lines the same way.
pub fn evidence_utilization(
    accesses: &[Access],
    evidence_cpus: Option<u32>,
    machine: &MachineModel,
    streams: &[cost::Stream],
) -> (f64, String) {
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
            (
                u,
                format!("{what} {measured:.0} cycles vs {nominal:.0} unloaded"),
            )
        }
        None => (
            cost::DEFAULT_UTILIZATION,
            "assumed (no latency measured on this machine in the evidence)".to_string(),
        ),
    }
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
