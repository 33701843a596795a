//! `replay`'s answer rendered: as JSON, and as text (the seeds' table of the measured runs,
//! then the model's predicted change beside the measured one, per layout).

use std::fmt::Write as _;

use crate::analysis::model::Model;
use crate::bench::Comparison;
use crate::bench::replay::{ReplayStream, Variant};
use crate::bench::replay_compare::{ALPHA, Measured, VariantReport};
use crate::bench::table;
use crate::readers::LayoutSource;

/// How the layouts were replayed.
pub struct Settings {
    pub threads: u32,
    /// CPUs of the machine the evidence came from.
    pub profile_cpus: u32,
    pub duration_ms: u64,
    pub think: u32,
    /// Measured runs per layout (0: generated and compiled only).
    pub runs: usize,
    pub warmup: usize,
}

/// The answer as `--json` prints it.
pub fn json(
    source: &LayoutSource,
    type_name: &str,
    model: &Model,
    settings: &Settings,
    (interrupted, streams): (bool, &[ReplayStream]),
    reports: &[VariantReport],
) -> serde_json::Value {
    serde_json::json!({
        "schema": 1,
        "interrupted": interrupted,
        "layout_source": source,
        "type_name": type_name,
        "machine": model.machine,
        "cacheline_size": model.cls,
        "threads": settings.threads,
        "profile_cpus": settings.profile_cpus,
        "duration_ms": settings.duration_ms,
        "think": settings.think,
        "runs_per_layout": settings.runs,
        "warmup_per_layout": settings.warmup,
        "alpha": ALPHA,
        "figure": "operations per second while all threads ran together, summed over threads",
        "streams": streams,
        "layouts": reports,
    })
}

/// With `--runs 0`: what was generated and compiled.
pub fn compiled_only_text(
    source: &LayoutSource,
    type_name: &str,
    settings: &Settings,
    variants: usize,
    streams: usize,
) -> String {
    format!(
        "{}\ngenerated and compiled the replay of struct {type_name} ({variants} layouts, {streams} streams, {} threads); --runs 0: nothing measured\n",
        source.describe(),
        settings.threads
    )
}

/// The measured runs as the seeds' table (`rows`: every layout against the first), then
/// the model beside the measurement. `interrupted_by` names the signal that cut the runs
/// short.
pub fn text(
    source: &LayoutSource,
    (type_name, model): (&str, &Model),
    settings: &Settings,
    (variants, measured, interrupted_by): (&[Variant], &Measured, Option<&str>),
    rows: &[&Comparison],
    reports: &[VariantReport],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", source.describe());
    let title = format!("replay {type_name}");
    let done = match interrupted_by {
        Some(signal) => format!(
            "interrupted by {signal} after {} of {} runs per layout",
            measured.runs.iter().map(Vec::len).min().unwrap_or(0),
            settings.runs
        ),
        None => format!("{} runs", settings.runs),
    };
    let dropped: usize = measured.no_corun.iter().sum();
    let dropped = if dropped > 0 {
        format!(
            "; {dropped} run(s) in which the threads never ran together have no figure and are \
             not counted"
        )
    } else {
        String::new()
    };
    let method = format!(
        "{done} of {} ms per layout after {} warm-up, interleaved A B B A, {} pinned threads; \
         the first layout ({}) is A{dropped}",
        settings.duration_ms, settings.warmup, settings.threads, variants[0].name
    );
    s.push_str(&table::seeds_table(
        &title,
        rows,
        &table::Notes {
            alpha: ALPHA,
            method: &method,
        },
    ));
    s.push_str(&model_vs_measurement(model, reports));
    s
}

/// Per layout: throughput, predicted and measured change, the measured change's confidence
/// interval, and whether they agree.
fn model_vs_measurement(model: &Model, reports: &[VariantReport]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nmodel vs measurement on {} ({}): predicted change of modeled cycles (lower is better) \
         beside the measured change of throughput (higher is better)",
        model.machine.name, model.machine.description
    );
    let _ = writeln!(
        s,
        "{:<16} {:>16} {:>14} {:>14} {:>24} {:>8}",
        "layout", "throughput ops/s", "predicted", "measured", "95% CI of measured", "agree"
    );
    for r in reports {
        let mean = r.summary.map(|s| s.mean).unwrap_or(f64::NAN);
        let pred = r
            .predicted_change_pct
            .map(|p| format!("{p:+.1}%"))
            .unwrap_or_else(|| "-".into());
        let meas = r
            .measured_change_pct
            .map(|p| format!("{p:+.1}%"))
            .unwrap_or_else(|| "-".into());
        let base = reports[0].summary.map(|s| s.mean).unwrap_or(f64::NAN);
        let ci = r
            .welch
            .map(|w| {
                format!(
                    "[{:+.1}%, {:+.1}%]",
                    w.ci_low / base * 100.0,
                    w.ci_high / base * 100.0
                )
            })
            .unwrap_or_else(|| "-".into());
        let agree = match (r.predicted_change_pct, r.measured_change_pct) {
            (Some(p), Some(_)) if !r.significant => {
                if p.abs() < 1.0 {
                    "yes"
                } else {
                    "no diff"
                }
            }
            (Some(p), Some(m)) => {
                if (p < 0.0) == (m > 0.0) && p != 0.0 {
                    "yes"
                } else {
                    "NO"
                }
            }
            _ => "",
        };
        let line = format!(
            "{:<16} {:>16.0} {:>14} {:>14} {:>24} {:>8}",
            r.layout, mean, pred, meas, ci, agree
        );
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let _ = writeln!(
        s,
        "throughput: operations per second while all threads ran together (docs/replay.md), \
         summed over threads; agree: the measured change is significant and in the predicted \
         direction (or neither changed)"
    );
    s
}
