//! What `lineup replay` compares: the layouts it replays (the current one, lineup's,
//! candidates, or the current one twice as a check of the harness), the access streams it
//! replays, how it measures them ([`measure`], the only I/O here), and per layout the
//! model's prediction beside the measured change.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::analysis::model::Model;
use crate::analysis::prediction;
use crate::bench::Comparison;
use crate::bench::parsers::Direction;
use crate::bench::replay::{self, ReplayStream, Variant, replay_streams};
use crate::bench::run as bench_run;
use crate::bench::stats::{self, Summary, Welch};
use crate::profile::{Access, Profile};
use crate::types::Types;

/// Significance level of replay's t-tests.
pub const ALPHA: f64 = 0.05;

/// The layouts to replay, the current one first: with `self_test`, the current one against
/// itself; else lineup's unless `with_lineup` is false, and each candidate file. An error
/// when there is only one.
pub fn variants(
    model: &Model,
    types: &Types<'_>,
    type_name: &str,
    (self_test, with_lineup): (bool, bool),
    candidates: &[PathBuf],
) -> Result<Vec<Variant>, String> {
    let mut variants = vec![Variant {
        name: "current".to_string(),
        placement: model.current.clone(),
    }];
    if self_test {
        variants.push(Variant {
            name: "current-again".to_string(),
            placement: model.current.clone(),
        });
    } else {
        if with_lineup {
            variants.push(Variant {
                name: "lineup".to_string(),
                placement: prediction::lineup_plan(model, type_name)?.placement,
            });
        }
        for path in candidates {
            variants.push(Variant {
                name: prediction::candidate_name(path),
                placement: prediction::load_candidate(model, types, type_name, path)?.placement,
            });
        }
    }
    if variants.len() < 2 {
        return Err(
            "nothing to compare: give --layout FILE, drop --no-lineup, or use --self-test"
                .to_string(),
        );
    }
    Ok(variants)
}

/// CPUs of the machine the evidence came from (the model's machine's when it does not say).
pub fn profile_cpus(profile: &Profile, model: &Model) -> u32 {
    profile
        .provenance
        .machine
        .cpus
        .unwrap_or(model.machine.cpus)
        .max(1)
}

/// The streams to replay; stores by a function in `atomic` (or every store, for `all`)
/// become atomic read-modify-writes. An error naming a function no access comes from.
pub fn streams(
    model: &Model,
    accesses: &[Access],
    profile_cpus: u32,
    atomic: &[String],
) -> Result<Vec<ReplayStream>, String> {
    let mut streams = replay_streams(&model.units, &model.layout, accesses, profile_cpus);
    for f in atomic {
        if f != "all" && !streams.iter().any(|s| &s.path == f) {
            return Err(format!(
                "--atomic {f}: no access of the profile comes from a function of that name"
            ));
        }
    }
    for s in &mut streams {
        if atomic.iter().any(|f| f == "all" || *f == s.path) {
            s.rmw += s.stores;
            s.stores = 0.0;
        }
    }
    Ok(streams)
}

/// Per layout, the runs' figures; `interrupted` when a signal cut the runs short.
pub struct Measured {
    /// Operations per second while all threads ran together.
    pub runs: Vec<Vec<f64>>,
    /// Operations per second of thread CPU time.
    pub runs_cpu: Vec<Vec<f64>>,
    /// Share of operations made while all threads ran together.
    pub corun_share: Vec<Vec<f64>>,
    /// Runs without a moment when all threads ran together (no figure; not counted).
    pub no_corun: Vec<usize>,
    pub interrupted: bool,
}

impl Measured {
    /// No runs yet, for `variants` layouts.
    pub fn empty(variants: usize, interrupted: bool) -> Measured {
        Measured {
            runs: vec![Vec::new(); variants],
            runs_cpu: vec![Vec::new(); variants],
            corun_share: vec![Vec::new(); variants],
            no_corun: vec![0usize; variants],
            interrupted,
        }
    }
}

/// How many runs each layout gets, and how long each runs.
pub struct Runs {
    /// Measured runs per layout (0: compile only).
    pub runs: usize,
    /// Warm-up runs per layout, not counted.
    pub warmup: usize,
    pub duration: Duration,
    /// Iterations of private arithmetic between two accesses to the struct.
    pub think: u32,
}

/// What [`measure`] tells its caller as it goes.
pub enum Progress {
    /// The runs are about to start: this many, warm-up included.
    Starting(u64),
    /// One more run finished.
    RunDone,
    /// No more runs (all done, stopped by a signal, or failed).
    Finished,
}

/// Compiles `source` with `cc` in `dir` and runs every layout, interleaved, telling
/// `progress` how it goes. A signal stops the runs; those finished count.
pub fn measure(
    cc: &str,
    dir: &Path,
    source: &str,
    variants: usize,
    runs: &Runs,
    progress: &mut dyn FnMut(Progress),
) -> Result<Measured, String> {
    let c_path = dir.join("replay.c");
    let bin = dir.join("replay");
    std::fs::write(&c_path, source)
        .map_err(|e| format!("{}: cannot write: {e}", c_path.display()))?;
    replay::compile(cc, &c_path, &bin)?;
    let mut m = Measured::empty(variants, bench_run::interrupted());
    if runs.runs == 0 || m.interrupted {
        return Ok(m);
    }
    let order = replay::schedule(variants, runs.runs, runs.warmup);
    progress(Progress::Starting(order.len() as u64));
    for (v, warm) in order {
        let figures = match replay::run_variant(&bin, v, runs.duration, runs.think) {
            Ok(f) => f,
            Err(_) if bench_run::interrupted() => {
                m.interrupted = true;
                break;
            }
            Err(e) => {
                progress(Progress::Finished);
                return Err(e);
            }
        };
        if !warm && !figures.has_corun_time() {
            // No moment when all threads ran together: the figure is undefined, not 0.
            m.no_corun[v] += 1;
        } else if !warm {
            m.runs[v].push(figures.ops_per_corun_second());
            m.runs_cpu[v].push(figures.ops_per_cpu_second());
            m.corun_share[v].push(figures.corun_share());
        }
        progress(Progress::RunDone);
    }
    progress(Progress::Finished);
    Ok(m)
}

/// One layout's prediction and measurement.
#[derive(Serialize)]
pub struct VariantReport {
    pub layout: String,
    pub size: u64,
    pub predicted_cycles: f64,
    /// Change of modeled cycles against the first layout, in percent (lower is better).
    pub predicted_change_pct: Option<f64>,
    /// Operations per second while all threads ran together, per run (the figure).
    pub runs: Vec<f64>,
    /// Operations per second of thread CPU time, per run.
    pub runs_cpu: Vec<f64>,
    /// Share of each run's operations made while all threads ran together.
    pub corun_share: Vec<f64>,
    /// Runs in which the threads never ran together: they have no figure and are not in
    /// `runs` (a machine busy with other work).
    pub runs_without_corun_time: usize,
    pub summary: Option<Summary>,
    /// Change of throughput against the first layout, in percent (higher is better).
    pub measured_change_pct: Option<f64>,
    pub welch: Option<Welch>,
    pub significant: bool,
}

/// Every layout after the first against the first (as `lineup bench` compares, under
/// `load`), and per layout its prediction on `model` beside its measurement.
pub fn reports(
    model: &Model,
    variants: &[Variant],
    measured: &Measured,
    load: &str,
) -> (Vec<Comparison>, Vec<VariantReport>) {
    let runs = &measured.runs;
    let predicted: Vec<f64> = variants
        .iter()
        .map(|v| model.evaluate(&v.placement).total_cycles())
        .collect();
    let base_cycles = predicted[0];
    let comparisons: Vec<Comparison> = (1..variants.len())
        .filter_map(|i| comparison(&variants[i].name, load, &runs[0], &runs[i]))
        .collect();
    let reports: Vec<VariantReport> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let c = (i > 0)
                .then(|| comparisons.iter().find(|c| c.case == v.name))
                .flatten();
            VariantReport {
                layout: v.name.clone(),
                size: v.placement.size,
                predicted_cycles: predicted[i],
                predicted_change_pct: (base_cycles > 0.0)
                    .then(|| stats::change_pct(base_cycles, predicted[i])),
                runs: runs[i].clone(),
                runs_cpu: measured.runs_cpu[i].clone(),
                corun_share: measured.corun_share[i].clone(),
                runs_without_corun_time: measured.no_corun[i],
                summary: stats::summarize(&runs[i]),
                measured_change_pct: c.map(|c| c.change_pct),
                welch: c.and_then(|c| c.welch),
                significant: c.is_some_and(|c| c.significant),
            }
        })
        .collect();
    (comparisons, reports)
}

/// The throughput of layout `name` against the first layout's, as `lineup bench` compares.
fn comparison(name: &str, load: &str, a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (sa, sb) = (stats::summarize(a)?, stats::summarize(b)?);
    let welch = stats::welch_from(&sa, &sb, 1.0 - ALPHA);
    Some(Comparison {
        case: name.to_string(),
        load: load.to_string(),
        metric: "throughput".to_string(),
        group: String::new(),
        label: "throughput".to_string(),
        unit: "ops/s".to_string(),
        direction: Direction::HigherIsBetter,
        primary: true,
        a_runs: a.to_vec(),
        b_runs: b.to_vec(),
        change_pct: stats::change_pct(sa.mean, sb.mean),
        gain_pct: stats::gain_pct(sa.mean, sb.mean, true),
        significant: stats::significant(welch.as_ref(), stats::change_pct(sa.mean, sb.mean), ALPHA),
        welch,
        a: sa,
        b: sb,
    })
}
