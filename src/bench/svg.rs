//! One self-contained SVG plot per case, hand-written, with no I/O: for each load, every run
//! of A and of B as a point, each side's mean as a bar and its confidence interval as a
//! whisker. Figures are divided by A's mean at that load (like the table's baseline 1.00), so
//! loads of different scales share one axis.

use std::fmt::Write as _;

use super::Comparison;
use super::stats;

const A_COLOR: &str = "#1f77b4";
const B_COLOR: &str = "#d62728";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step of 1, 2 or 5 times a power of ten that cuts `span` into about `n` pieces.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-12);
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// A plot of `rows` (the comparisons of one case, in table order). `confidence` is the level
/// of the whiskers (0.95).
pub fn case_plot(case: &str, rows: &[&Comparison], confidence: f64) -> String {
    let groups = rows.len().max(1);
    let (left, right, top, bottom) = (70.0, 20.0, 56.0, 64.0);
    let group_w = 120.0;
    let plot_h = 260.0;
    let width = left + right + group_w * groups as f64;
    let height = top + plot_h + bottom;

    struct Group {
        label: String,
        a: Vec<f64>,
        b: Vec<f64>,
        a_mean: f64,
        b_mean: f64,
        a_hw: f64,
        b_hw: f64,
        note: String,
    }
    let several_metrics = {
        let mut m: Vec<&str> = rows.iter().map(|c| c.metric.as_str()).collect();
        m.dedup();
        m.len() > 1
    };
    let gs: Vec<Group> = rows
        .iter()
        .map(|c| {
            let base = if c.a.mean != 0.0 { c.a.mean.abs() } else { 1.0 };
            let n = |x: &f64| x / base;
            Group {
                label: if several_metrics {
                    format!("{} {}", c.load, c.metric)
                } else {
                    c.load.clone()
                },
                a: c.a_runs.iter().map(n).collect(),
                b: c.b_runs.iter().map(n).collect(),
                a_mean: c.a.mean / base,
                b_mean: c.b.mean / base,
                a_hw: stats::mean_ci_half_width(&c.a, confidence) / base,
                b_hw: stats::mean_ci_half_width(&c.b, confidence) / base,
                note: format!(
                    "{:+.2}%{}",
                    c.change_pct,
                    if c.significant { " *" } else { "" }
                ),
            }
        })
        .collect();

    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for g in &gs {
        for v in g.a.iter().chain(&g.b).copied().chain([
            g.a_mean - g.a_hw,
            g.a_mean + g.a_hw,
            g.b_mean - g.b_hw,
            g.b_mean + g.b_hw,
        ]) {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if !lo.is_finite() || !hi.is_finite() {
        (lo, hi) = (0.0, 2.0);
    }
    if hi - lo < 1e-9 {
        lo -= 0.05;
        hi += 0.05;
    }
    let step = nice_step(hi - lo, 5.0);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    let y = |v: f64| top + plot_h - (v - lo) / (hi - lo) * plot_h;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let direction = rows
        .first()
        .map(|c| c.direction.words())
        .unwrap_or_default();
    let metric = rows.first().map(|c| c.metric.as_str()).unwrap_or_default();
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="15" font-weight="bold">{}</text>"#,
        esc(case)
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="38" fill="#444">{} / mean of A ({}); points: runs; bar: mean; whisker: {:.0}% CI</text>"##,
        esc(if several_metrics { "figure" } else { metric }),
        esc(direction),
        confidence * 100.0
    );
    // Axis and grid.
    let mut v = lo;
    while v <= hi + step * 1e-6 {
        let yy = y(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e5e5e5\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            width - right,
            left - 6.0,
            yy + 4.0,
            trim_number(v, step)
        );
        v += step;
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#444\"/>",
        top + plot_h
    );
    if lo <= 1.0 && 1.0 <= hi {
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>",
            width - right,
            y(1.0),
            y(1.0)
        );
    }
    for (i, g) in gs.iter().enumerate() {
        let cx = left + group_w * (i as f64 + 0.5);
        for (xs, mean, hw, dx, color) in [
            (&g.a, g.a_mean, g.a_hw, -22.0, A_COLOR),
            (&g.b, g.b_mean, g.b_hw, 22.0, B_COLOR),
        ] {
            let x0 = cx + dx;
            let n = xs.len().max(1) as f64;
            for (k, v) in xs.iter().enumerate() {
                // Spread the points sideways, deterministically, so equal figures stay visible.
                let jitter = (k as f64 / n - 0.5) * 18.0;
                let _ = writeln!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.6" fill="{color}" fill-opacity="0.55"/>"#,
                    x0 + jitter,
                    y(*v)
                );
            }
            if hw > 0.0 && hw.is_finite() {
                let _ = writeln!(
                    s,
                    r#"<line x1="{x0:.1}" x2="{x0:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.5"/>"#,
                    y(mean - hw),
                    y(mean + hw)
                );
                for e in [mean - hw, mean + hw] {
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.5"/>"#,
                        x0 - 5.0,
                        x0 + 5.0,
                        y(e),
                        y(e)
                    );
                }
            }
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"/>"#,
                x0 - 12.0,
                x0 + 12.0,
                y(mean),
                y(mean)
            );
        }
        let base = top + plot_h;
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            base + 18.0,
            esc(&g.label)
        );
        let _ = writeln!(
            s,
            "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444\">B {}</text>",
            base + 34.0,
            esc(&g.note)
        );
    }
    let ly = height - 10.0;
    let _ = writeln!(
        s,
        r#"<circle cx="{left}" cy="{:.1}" r="4" fill="{A_COLOR}"/><text x="{:.1}" y="{ly:.1}">A (baseline)</text>"#,
        ly - 4.0,
        left + 8.0
    );
    let _ = writeln!(
        s,
        r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{B_COLOR}"/><text x="{:.1}" y="{ly:.1}">B</text><text x="{:.1}" y="{ly:.1}" fill="#444">* significant (Welch's t-test)</text>"##,
        left + 110.0,
        ly - 4.0,
        left + 118.0,
        left + 150.0
    );
    s.push_str("</svg>\n");
    s
}

fn trim_number(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// A file name for a case's plot: its name with anything but `[A-Za-z0-9._-]` made `_`.
pub fn file_name(case: &str) -> String {
    let mut s: String = case
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    s.push_str(".svg");
    s
}

#[cfg(test)]
mod tests {
    use super::super::parsers::Direction;
    use super::*;

    fn row(load: &str, a: &[f64], b: &[f64]) -> Comparison {
        let (sa, sb) = (stats::summarize(a).unwrap(), stats::summarize(b).unwrap());
        let welch = stats::welch(a, b, 0.95);
        Comparison {
            case: "x<y".into(),
            load: load.into(),
            metric: "Time".into(),
            group: String::new(),
            label: "Time".into(),
            unit: "s".into(),
            direction: Direction::LowerIsBetter,
            primary: true,
            a_runs: a.to_vec(),
            b_runs: b.to_vec(),
            a: sa,
            b: sb,
            change_pct: stats::change_pct(sa.mean, sb.mean),
            gain_pct: 0.0,
            significant: stats::significant(
                welch.as_ref(),
                stats::change_pct(sa.mean, sb.mean),
                0.05,
            ),
            welch,
        }
    }

    #[test]
    fn plot_is_well_formed_and_has_every_run() {
        let r1 = row("1-groups", &[1.0, 1.1, 0.9], &[0.5, 0.55, 0.45]);
        let r2 = row("2-groups", &[2.0, 2.0], &[2.0, 2.0]);
        let svg = case_plot("x<y", &[&r1, &r2], 0.95);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 3 + 3 + 2 + 2 + 2); // runs + legend
        assert!(svg.contains("x&lt;y"));
        assert!(!svg.contains("x<y"));
        assert!(svg.contains("B -50.00% *"));
        assert!(svg.contains("B +0.00%<"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // Every opening tag that is not self-closed is closed.
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }

    #[test]
    fn names_and_steps() {
        assert_eq!(file_name("process-pipe"), "process-pipe.svg");
        assert_eq!(file_name("a/b c"), "a_b_c.svg");
        assert_eq!(file_name(".."), "_...svg");
        assert_eq!(nice_step(1.0, 5.0), 0.2);
        assert_eq!(nice_step(0.07, 5.0), 0.02);
        assert_eq!(nice_step(30.0, 5.0), 10.0);
    }
}
