//! The comparison table `optimize`, `predict` and a scalar array's plan print: one row per
//! layout, its modeled transfers and cycles, and the change against the first row.

use std::fmt::Write as _;

use crate::analysis::cost::Cost;

/// One row per `(name, cost)`; the first row is the base of "vs current".
pub fn cost_table(rows: &[(String, &Cost)]) -> String {
    let mut s = String::new();
    let base = rows.first().map(|r| r.1.total_cycles()).unwrap_or(0.0);
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(6).max(6);
    let _ = writeln!(
        s,
        "{:<width$} {:>6} {:>5} {:>12} {:>12} {:>14} {:>14} {:>12} {:>14} {:>8}",
        "layout",
        "size",
        "lines",
        "false xfers",
        "true xfers",
        "false cycles",
        "true cycles",
        "locality",
        "total cycles",
        "vs current"
    );
    for (name, c) in rows {
        let total = c.total_cycles();
        let vs = if base > 0.0 {
            format!("{:+.1}%", (total - base) / base * 100.0)
        } else {
            "-".to_string()
        };
        let _ = writeln!(
            s,
            "{:<width$} {:>6} {:>5} {:>12.1} {:>12.1} {:>14.0} {:>14.0} {:>12.0} {:>14.0} {:>8}",
            name,
            c.size,
            c.cachelines,
            c.false_transfers,
            c.true_transfers,
            c.false_cycles,
            c.true_cycles,
            c.locality_cycles,
            total,
            vs
        );
    }
    s
}
