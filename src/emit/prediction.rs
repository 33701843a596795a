//! `predict`'s comparison rendered: as text (the cost table and each layout's contended
//! lines), as JSON, and as an HTML page with every layout side by side.

use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::cost::Cost;
use crate::analysis::diagnose::Diagnosis;
use crate::analysis::model::Model;
use crate::analysis::prediction::Prediction;
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
            }
        })
        .collect();
    serde_json::json!({
        "schema": 1,
        "layout_source": source,
        "type_name": type_name,
        "machine": model.machine,
        "cacheline_size": model.cls,
        "unit": profile.unit,
        "layouts": rows,
        "notes": prediction.notes,
    })
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
        "queueing: the busiest line of the current layout runs at utilization {:.2} ({})\n",
        model.queueing.utilization, model.utilization_source
    );
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
