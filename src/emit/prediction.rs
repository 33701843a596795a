//! `predict`'s comparison rendered: as text (the cost table and each layout's contended
//! lines), as JSON, and as an HTML page with every layout side by side.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::cost::{Cost, Placement, Unit};
use crate::analysis::diagnose::Diagnosis;
use crate::analysis::model::Model;
use crate::analysis::prediction::{Prediction, Tradeoff, Workload, WorkloadPrediction, change_pct};
use crate::emit::html;
use crate::profile::Profile;
use crate::readers::LayoutSource;

#[derive(Serialize)]
struct Row<'a> {
    layout: &'a str,
    cost: &'a Cost,
    total_cycles: f64,
    /// Change of total cycles against the current layout, in percent.
    change_pct: Option<f64>,
    /// Where the layout puts each unit (a member, or a bitfield run as `a/b`), in bytes.
    offsets: BTreeMap<String, u64>,
}

/// Each unit's offset in `placement`, by the unit's name.
fn offsets(units: &[Unit], placement: &Placement) -> BTreeMap<String, u64> {
    units
        .iter()
        .zip(&placement.offsets)
        .map(|(u, &o)| (u.name.clone(), o))
        .collect()
}

/// The comparison as `--json` prints it.
pub fn json(
    source: &LayoutSource,
    profile: &Profile,
    model: &Model,
    type_name: &str,
    prediction: &Prediction,
) -> serde_json::Value {
    let base = prediction.layouts[0].cost.total_cycles();
    let rows: Vec<Row> = prediction
        .layouts
        .iter()
        .map(|l| {
            let total = l.cost.total_cycles();
            Row {
                layout: &l.name,
                change_pct: (base > 0.0).then(|| (total - base) / base * 100.0),
                total_cycles: total,
                cost: &l.cost,
                offsets: offsets(l.units.as_deref().unwrap_or(&model.units), &l.placement),
            }
        })
        .collect();
    let mut v = serde_json::json!({
        "schema": 1,
        "layout_source": source,
        "type_name": type_name,
        "machine": model.machine,
        "cacheline_size": model.cls,
        "unit": profile.unit,
        "layouts": rows,
        "notes": prediction.notes,
    });
    // Where instances do not all start a line, where they do (every layout is priced there).
    if model.instances.misaligned() {
        v["instances"] = serde_json::json!(model.instances);
    }
    v
}

/// The comparison as text: the machine and queueing, the binding in words (`binding`), the
/// cost table, the notes on candidates, and each layout's contended lines.
pub fn text(
    source: &LayoutSource,
    profile: &Profile,
    model: &Model,
    type_name: &str,
    binding: &str,
    prediction: &Prediction,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", source.describe());
    let _ = writeln!(
        s,
        "struct {} on {} ({}), {}-byte lines; rates in {:?} of the evidence, cycles = transfers x modeled latency",
        type_name, model.machine.name, model.machine.description, model.cls, profile.unit
    );
    let _ = writeln!(
        s,
        "queueing: the busiest line of the current layout runs at utilization {:.2} ({})",
        model.queueing.utilization, model.utilization_source
    );
    if let Some(line) = model.instances.headline(model.cls) {
        let _ = writeln!(s, "{line}");
    }
    s.push('\n');
    s.push_str(binding);
    let refs: Vec<(String, &Cost)> = prediction
        .layouts
        .iter()
        .map(|l| (l.name.clone(), &l.cost))
        .collect();
    s.push_str(&crate::emit::cost_table::cost_table(&refs));
    for note in &prediction.notes {
        let _ = writeln!(s, "{note}");
    }
    for l in &prediction.layouts {
        let hot: Vec<String> = l
            .cost
            .lines
            .iter()
            .filter(|l| l.false_cycles + l.true_cycles > 0.0)
            .map(|l| format!("line {}: {}", l.index, l.fields.join(" ")))
            .collect();
        if !hot.is_empty() {
            let _ = writeln!(s, "{}: contended {}", l.name, hot.join("; "));
        }
    }
    s
}

/// Every layout side by side as a self-contained HTML page (docs/html.md); the current one
/// as `diagnose` shows it (`d`): every member, diagnose's verdicts.
pub fn html_page(
    source: &LayoutSource,
    profile: &Profile,
    model: &Model,
    type_name: &str,
    prediction: &Prediction,
    d: &Diagnosis,
) -> html::Page {
    let base = prediction.layouts[0].cost.total_cycles();
    let mut layouts: Vec<html::LayoutView> = prediction
        .layouts
        .iter()
        .map(|l| {
            html::LayoutView::modeled(
                &l.name,
                l.units.as_deref().unwrap_or(&model.units),
                &l.placement,
                &l.cost,
                Some(base),
                model.cls,
                Some(d),
            )
        })
        .collect();
    layouts[0].cells = html::cells_from_layout(&model.layout, Some(d));
    for (line, diag) in
        layouts[0]
            .lines
            .iter_mut()
            .zip(html::lines_from_diagnosis(model.layout.size, model.cls, d))
    {
        line.verdict = diag.verdict;
        line.label = diag.label;
        line.explanation = diag.explanation;
    }
    let mut page = html::Page {
        schema: html::PAGE_SCHEMA,
        command: "predict".into(),
        type_name: type_name.to_string(),
        cacheline_size: model.cls,
        notes: vec![
            source.describe(),
            format!(
                "machine {} ({}), {}-byte lines; rates in {:?} of the evidence, cycles = transfers x modeled latency",
                model.machine.name, model.machine.description, model.cls, profile.unit
            ),
            format!(
                "queueing: the busiest line of the current layout runs at utilization {:.2} ({})",
                model.queueing.utilization, model.utilization_source
            ),
        ],
        layouts,
    };
    page.fill_type_names();
    page
}

/// What lineup's rows are, said in both the text and the JSON.
const LINEUP_PER_WORKLOAD: &str = "lineup's layouts are searched per workload: `lineup for W` is the optimizer's layout on W's evidence alone, then priced under every workload";

/// What a workload's rates are, in words: its figures are in cycles over them.
fn rates(unit: crate::profile::Unit) -> &'static str {
    use crate::profile::Unit;
    match unit {
        Unit::Samples => "sampled events, proportional to the real rates",
        Unit::PerSecond => "events per second",
        Unit::Relative => "relative weights, no absolute scale",
        Unit::Count => "exact counts over the recorded run",
    }
}

/// A trade-off in words: "L helps A by x %, hurts B by y % (modeled)".
pub fn tradeoff_line(t: &Tradeoff) -> String {
    let say = |v: &[(String, f64)]| {
        v.iter()
            .map(|(w, pct)| format!("{w} by {:.1} %", pct.abs()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{} helps {}, hurts {} (modeled cycles)",
        t.layout,
        say(&t.helps),
        say(&t.hurts)
    )
}

/// The comparison under several workloads as `--json` prints it
/// (docs/schema/predict-workloads.schema.json).
pub fn workloads_json(
    source: &LayoutSource,
    type_name: &str,
    workloads: &[Workload],
    prediction: &WorkloadPrediction,
) -> serde_json::Value {
    let model = &workloads[0].model;
    let base = &prediction.layouts[0].costs;
    let rows: Vec<serde_json::Value> = prediction
        .layouts
        .iter()
        .map(|l| {
            let per: Vec<serde_json::Value> = workloads
                .iter()
                .zip(l.costs.iter().zip(base))
                .map(|(w, (c, b))| {
                    serde_json::json!({
                        "workload": w.label,
                        "cost": c,
                        "total_cycles": c.total_cycles(),
                        "change_pct": change_pct(c, b),
                    })
                })
                .collect();
            serde_json::json!({
                "layout": l.name,
                "optimized_for": l.optimized_for,
                "offsets": offsets(&model.units, &l.placement),
                "workloads": per,
            })
        })
        .collect();
    let listed = |v: &[(String, f64)]| -> Vec<serde_json::Value> {
        v.iter()
            .map(|(w, pct)| serde_json::json!({"workload": w, "change_pct": pct}))
            .collect()
    };
    let tradeoffs: Vec<serde_json::Value> = prediction
        .tradeoffs
        .iter()
        .map(|t| {
            serde_json::json!({
                "layout": t.layout,
                "helps": listed(&t.helps),
                "hurts": listed(&t.hurts),
                "text": tradeoff_line(t),
            })
        })
        .collect();
    let ws: Vec<serde_json::Value> = workloads
        .iter()
        .map(|w| {
            serde_json::json!({
                "label": w.label,
                "evidence": w.evidence,
                "unit": w.unit,
                "utilization": w.model.queueing.utilization,
                "utilization_source": w.model.utilization_source,
            })
        })
        .collect();
    serde_json::json!({
        "schema": 1,
        "layout_source": source,
        "type_name": type_name,
        "machine": model.machine,
        "cacheline_size": model.cls,
        "lineup_layouts": "per_workload",
        "workloads": ws,
        "layouts": rows,
        "tradeoffs": tradeoffs,
        "notes": prediction.notes,
    })
}

/// The comparison under several workloads as text: the machine, each workload's unit and
/// queueing, a table (rows: layouts; per workload: its modeled cycles and the change against
/// the current layout), the notes on candidates, the trade-offs, and each layout's contended
/// lines per workload.
pub fn workloads_text(
    source: &LayoutSource,
    type_name: &str,
    workloads: &[Workload],
    prediction: &WorkloadPrediction,
) -> String {
    let model = &workloads[0].model;
    let mut s = String::new();
    let _ = writeln!(s, "{}", source.describe());
    let _ = writeln!(
        s,
        "struct {} on {} ({}), {}-byte lines, {} workloads, one model: modeled cycles = transfers x modeled latency, at each workload's rates",
        type_name,
        model.machine.name,
        model.machine.description,
        model.cls,
        workloads.len()
    );
    for w in workloads {
        let file = match w.evidence.as_deref() {
            Some(f) if f != w.label => format!(" ({f})"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "workload {}{file}: modeled cycles at its evidence's rates ({}); queueing: busiest current line at utilization {:.2}, {}",
            w.label,
            rates(w.unit),
            w.model.queueing.utilization,
            w.model.utilization_source
        );
    }
    let _ = writeln!(s, "{LINEUP_PER_WORKLOAD}\n");
    let width = prediction
        .layouts
        .iter()
        .map(|l| l.name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let heads: Vec<String> = workloads
        .iter()
        .map(|w| format!("{}: modeled cycles", w.label))
        .collect();
    let cols: Vec<usize> = heads.iter().map(|h| h.len().max(14)).collect();
    let _ = write!(s, "{:<width$} {:>6} {:>5}", "layout", "size", "lines");
    for (h, c) in heads.iter().zip(&cols) {
        let _ = write!(s, "  {h:>c$} {:>10}", "vs current");
    }
    s.push('\n');
    let base = &prediction.layouts[0].costs;
    for l in &prediction.layouts {
        let (size, lines) = (l.costs[0].size, l.costs[0].cachelines);
        let _ = write!(s, "{:<width$} {size:>6} {lines:>5}", l.name);
        for ((c, b), w) in l.costs.iter().zip(base).zip(&cols) {
            let vs = change_pct(c, b).map_or("-".to_string(), |p| format!("{p:+.1}%"));
            let _ = write!(s, "  {:>w$.0} {vs:>10}", c.total_cycles());
        }
        s.push('\n');
    }
    for note in &prediction.notes {
        let _ = writeln!(s, "{note}");
    }
    if prediction.tradeoffs.is_empty() {
        let _ = writeln!(
            s,
            "no layout helps one workload and hurts another (modeled cycles)"
        );
    }
    for t in &prediction.tradeoffs {
        let _ = writeln!(s, "trade-off: {}", tradeoff_line(t));
    }
    for l in &prediction.layouts {
        for (w, c) in workloads.iter().zip(&l.costs) {
            let hot: Vec<String> = c
                .lines
                .iter()
                .filter(|l| l.false_cycles + l.true_cycles > 0.0)
                .map(|l| format!("line {}: {}", l.index, l.fields.join(" ")))
                .collect();
            if !hot.is_empty() {
                let _ = writeln!(
                    s,
                    "{} under {}: contended {}",
                    l.name,
                    w.label,
                    hot.join("; ")
                );
            }
        }
    }
    s
}
