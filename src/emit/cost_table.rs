//! The comparison table `optimize`, `predict` and a scalar array's plan print: one row per
//! layout, its modeled transfers and cycles, and the change against the first row.

use std::fmt::Write as _;

use crate::analysis::cost::{Allocator, Cost, SizeTerm};
use crate::profile::CountSource;

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
    for (name, c) in rows {
        if let Some(g) = &c.growth {
            let _ = writeln!(s, "{}", size_line(name, g, c.size_cycles));
        }
    }
    s
}

/// The size term of a layout that grows the struct, with its basis: `lineup: size +152 bytes
/// (40 -> 192): +2 line(s) per instance, hot lines 1 -> 2 (0.50 of them new) x 200 line
/// fetches x 14 cycles (an L2 hit) = 1400 modeled cycles, in the total`.
pub fn size_line(name: &str, g: &SizeTerm, cycles: f64) -> String {
    let alloc = match g.allocator {
        Allocator::Lines => String::new(),
        Allocator::Kmalloc => format!(
            ", kmalloc-{} -> kmalloc-{}",
            g.from_allocated, g.to_allocated
        ),
        Allocator::Malloc => format!(
            ", malloc chunk {} -> {} bytes",
            g.from_allocated, g.to_allocated
        ),
    };
    // With a known count, what the instances' new hot lines take of the cache; unknown:
    // many instances, whose lines fill it (the whole share, nothing to say).
    let pressure = match (g.instances, g.added_hot_bytes) {
        (Some(n), Some(added)) => format!(
            " x {:.4} of the cache ({} ({}) add {added:.0} hot bytes to a {} KiB L1 data cache{})",
            g.pressure,
            if n == 1 {
                "1 instance".to_string()
            } else {
                format!("{n} instances")
            },
            count_source(g.instances_from),
            g.cache_bytes / 1024,
            if g.cache_from == "assumed" {
                ", assumed"
            } else {
                ""
            },
        ),
        _ => String::new(),
    };
    format!(
        "{name}: size {:+} bytes ({} -> {}{alloc}): +{} line(s) per instance, hot lines {} -> {} ({:.2} of them new) x {:.0} line fetches x {:.0} cycles (an L2 hit){pressure} = {cycles:.0} modeled cycles, in the total",
        g.to_bytes as i64 - g.from_bytes as i64,
        g.from_bytes,
        g.to_bytes,
        fmt_lines(g.lines_grown),
        fmt_lines(g.from_hot_lines),
        fmt_lines(g.to_hot_lines),
        g.share,
        g.fetches,
        g.price,
    )
}

/// Who counted the instances, in words.
fn count_source(s: CountSource) -> &'static str {
    match s {
        CountSource::Assumed => "assumed",
        CountSource::Sketch => "the sketch's count",
        CountSource::Recording => "touched in the recording",
        CountSource::PerCpu => "one per CPU: a per-CPU variable's type",
    }
}

fn fmt_lines(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.2}").trim_end_matches('0').to_string()
    }
}
