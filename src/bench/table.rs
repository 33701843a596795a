//! Text out of comparisons, with no I/O: the seeds' tables, CSV and JSON.
//!
//! The seeds' table (seed 000, from Intel's scheduler test reports):
//! ```text
//! hackbench
//! =========
//! case load baseline(std%) compare%( std%)
//! process-pipe 1-groups 1.00 ( 0.87) -0.95 ( 1.72)
//! ```
//! `baseline` is A's mean normalized to 1.00 with A's std%; `compare%` is the relative change
//! of B's mean against A's, `(B - A) / A * 100`, with B's std%: the change of the figure
//! itself, so whether `+` is good depends on the figure (stated under the table).
//!
//! The percentile table (seed 004, schbench):
//! ```text
//! 50.0th: 8.00 9.00(-12.50)
//! ```
//! A's mean, B's mean, and `%gain`, the improvement of B over A (positive is better).
//!
//! The gain table (seed 004's funclatency, hackbench and stress_ng tables):
//! ```text
//! workload tip/sched/core with_patch(%gain)
//! idle system 809.3 695.0(16.45)
//! ```
//! One row per case and load: A's mean, B's mean and B's `%gain`.

use std::fmt::Write as _;

use serde::Serialize;

use super::Comparison;

/// What the footnotes under a table say about the method.
pub struct Notes<'a> {
    /// Significance level of the test (0.05).
    pub alpha: f64,
    /// How the runs were made: `8 runs per side after 1 warm-up, interleaved A B B A`.
    pub method: &'a str,
}

fn confidence_words(alpha: f64) -> String {
    let c = (1.0 - alpha) * 100.0;
    if (c - c.round()).abs() < 1e-9 {
        format!("{c:.0}%")
    } else {
        format!("{c}%")
    }
}

/// The label of a row's first column: the case, or `case:metric` when the case shows more
/// than one figure (stress-ng stressors, a `--metric` list).
fn row_case(c: &Comparison, rows: &[&Comparison]) -> String {
    let several = rows
        .iter()
        .filter(|r| r.case == c.case && r.load == c.load)
        .count()
        > 1;
    if several {
        format!("{}:{}", c.case, c.metric.replace(char::is_whitespace, "-"))
    } else {
        c.case.clone()
    }
}

/// A percentage with `prec` decimals, `n/a` when it is undefined (a zero baseline): one
/// word either way, so the columns stay.
fn pct(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:.prec$}")
    } else {
        "n/a".into()
    }
}

/// [`pct`] with its sign.
fn signed_pct(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:+.prec$}")
    } else {
        "n/a".into()
    }
}

fn marker(c: &Comparison) -> &'static str {
    if c.significant { " *" } else { "" }
}

fn figure_words(c: &Comparison) -> String {
    let unit = if c.unit.is_empty() || c.unit == c.metric {
        String::new()
    } else {
        format!(" [{}]", c.unit)
    };
    let better = if c.direction.higher_is_better() {
        "+"
    } else {
        "-"
    };
    let name = if c.metric == "regex" {
        "the --regex figure"
    } else {
        &c.metric
    };
    format!(
        "{name}{unit}: {}, so a {better} compare% is an improvement",
        c.direction.words()
    )
}

/// The seeds' `case load baseline(std%) compare%( std%)` table, with a significance marker
/// and footnotes.
pub fn seeds_table(title: &str, rows: &[&Comparison], notes: &Notes) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let _ = writeln!(s, "{}", "=".repeat(title.chars().count().max(1)));
    let _ = writeln!(s, "case load baseline(std%) compare%( std%)");
    for c in rows {
        let _ = writeln!(
            s,
            "{} {} 1.00 ( {}) {} ( {}){}",
            row_case(c, rows),
            c.load,
            pct(c.a.std_pct, 2),
            signed_pct(c.change_pct, 2),
            pct(c.b.std_pct, 2),
            marker(c)
        );
    }
    let _ = writeln!(s);
    let mut figures: Vec<String> = Vec::new();
    for c in rows {
        let f = figure_words(c);
        if !figures.contains(&f) {
            figures.push(f);
        }
    }
    for f in figures {
        let _ = writeln!(s, "figure: {f}");
    }
    let _ = writeln!(
        s,
        "baseline: A's mean = 1.00; compare%: (mean B - mean A) / mean A * 100; std%: sample \
         standard deviation / mean * 100"
    );
    let _ = writeln!(
        s,
        "* significant: Welch's t-test p < {} (the {} confidence interval of B - A excludes 0)",
        notes.alpha,
        confidence_words(notes.alpha)
    );
    let _ = writeln!(s, "runs: {}", notes.method);
    if rows.iter().any(|c| c.welch.is_none()) {
        let _ = writeln!(s, "rows without a test have fewer than 2 runs on a side");
    }
    if rows.iter().any(|c| !c.change_pct.is_finite()) {
        let _ = writeln!(
            s,
            "n/a: A's mean is 0, so there is no relative change (never marked significant)"
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "welch: case load t dof p {} CI of (B - A) / A",
        confidence_words(notes.alpha)
    );
    for c in rows {
        let Some(w) = c.welch else { continue };
        let rel = |x: f64| {
            if c.a.mean != 0.0 {
                x / c.a.mean.abs() * 100.0
            } else {
                f64::NAN
            }
        };
        let _ = writeln!(
            s,
            "{} {} {:.2} {:.1} {} [{}%, {}%]{}",
            row_case(c, rows),
            c.load,
            w.t,
            w.dof,
            p_words(w.p),
            signed_pct(rel(w.ci_low), 2),
            signed_pct(rel(w.ci_high), 2),
            marker(c)
        );
    }
    s
}

/// A p-value in few characters: `0.43`, `0.0031`, `<1e-6`.
fn p_words(p: f64) -> String {
    if p.is_nan() {
        "nan".into()
    } else if p < 1e-6 {
        "p<1e-6".into()
    } else if p >= 0.01 {
        format!("p={p:.2}")
    } else {
        format!("p={p:.2e}")
    }
}

/// Seed 004's percentile table: for each case and load, each percentile group with A's mean,
/// B's mean and the %gain of B (positive is better).
pub fn percentile_table(title: &str, rows: &[&Comparison], notes: &Notes) -> String {
    let mut s = String::new();
    let head = format!("{title} A B(%gain)");
    let _ = writeln!(s, "{head}");
    let _ = writeln!(s, "{}", "-".repeat(head.chars().count()));
    let mut last_setup: Option<(&str, &str)> = None;
    let mut last_group: Option<&str> = None;
    for c in rows {
        if last_setup != Some((c.case.as_str(), c.load.as_str())) {
            let _ = writeln!(s, "{} {}", c.case, c.load);
            last_setup = Some((c.case.as_str(), c.load.as_str()));
            last_group = None;
        }
        if !c.group.is_empty() && last_group != Some(c.group.as_str()) {
            let _ = writeln!(s, "{}", c.group);
            last_group = Some(c.group.as_str());
        }
        let label = if c.group.is_empty() {
            &c.metric
        } else {
            &c.label
        };
        let _ = writeln!(
            s,
            "{label}: {:.2} {:.2}({}){}",
            c.a.mean,
            c.b.mean,
            pct(c.gain_pct, 2),
            marker(c)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "%gain: improvement of B's mean over A's, positive is better: (A - B) / A * 100 for \
         latencies (lower is better), (B - A) / A * 100 for RPS (higher is better)"
    );
    let _ = writeln!(
        s,
        "* significant: Welch's t-test p < {} per row (no correction for the number of rows)",
        notes.alpha
    );
    let _ = writeln!(s, "runs: {}", notes.method);
    s
}

/// A mean as the seeds print it: one decimal from 100 up (`809.3`), else two (`11.74`).
fn seed_number(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Seed 004's `workload A B(%gain)` table: one row per case and load (and figure, when a case
/// shows several) with A's mean, B's mean and the %gain of B (positive is better).
pub fn gain_table(title: &str, rows: &[&Comparison], notes: &Notes) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let _ = writeln!(s, "{}", "-".repeat(title.chars().count().max(1)));
    let _ = writeln!(s, "workload A B(%gain)");
    for c in rows {
        let case = row_case(c, rows);
        let workload = if c.load == "-" {
            case
        } else {
            format!("{case} {}", c.load)
        };
        let _ = writeln!(
            s,
            "{workload} {} {}({}){}",
            seed_number(c.a.mean),
            seed_number(c.b.mean),
            pct(c.gain_pct, 2),
            marker(c)
        );
    }
    let _ = writeln!(s);
    let mut figures: Vec<String> = Vec::new();
    for c in rows {
        let unit = if c.unit.is_empty() || c.unit == c.metric {
            String::new()
        } else {
            format!(" [{}]", c.unit)
        };
        let f = format!("figure: {}{unit}, {}", c.metric, c.direction.words());
        if !figures.contains(&f) {
            figures.push(f);
        }
    }
    for f in figures {
        let _ = writeln!(s, "{f}");
    }
    let _ = writeln!(
        s,
        "A, B: the means of A's and B's runs; %gain: improvement of B over A, positive is \
         better: (A - B) / A * 100 when lower is better, (B - A) / A * 100 when higher is better \
         (seed 004's funclatency rows divide by B instead: 809.3 -> 695.0 is 16.45 there, 14.12 here)"
    );
    let _ = writeln!(
        s,
        "* significant: Welch's t-test p < {} per row (no correction for the number of rows)",
        notes.alpha
    );
    let _ = writeln!(s, "runs: {}", notes.method);
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV row per figure of every setup, all figures (not only the table's).
pub fn csv(rows: &[Comparison]) -> String {
    let mut s = String::from(
        "case,load,metric,unit,direction,primary,n_a,mean_a,sd_a,std_pct_a,n_b,mean_b,sd_b,\
         std_pct_b,change_pct,gain_pct,t,dof,p,ci_low,ci_high,significant\n",
    );
    // Undefined figures (NaN: a zero baseline's change) are empty fields, as absent ones.
    let opt = |x: Option<f64>| {
        x.filter(|v| !v.is_nan())
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    let num = |x: f64| opt(Some(x));
    for c in rows {
        let w = c.welch;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&c.case),
            csv_field(&c.load),
            csv_field(&c.metric),
            csv_field(&c.unit),
            c.direction.words().replace(' ', "-"),
            c.primary,
            c.a.n,
            c.a.mean,
            c.a.sd,
            num(c.a.std_pct),
            c.b.n,
            c.b.mean,
            c.b.sd,
            num(c.b.std_pct),
            num(c.change_pct),
            num(c.gain_pct),
            opt(w.map(|w| w.t)),
            opt(w.map(|w| w.dof)),
            opt(w.map(|w| w.p)),
            opt(w.map(|w| w.ci_low)),
            opt(w.map(|w| w.ci_high)),
            c.significant
        );
    }
    s
}

/// One setup as the JSON report shows it.
#[derive(Serialize)]
pub struct SetupReport<'a> {
    pub case: &'a str,
    pub load: &'a str,
    pub a: &'a str,
    pub b: &'a str,
    pub parser: &'a str,
    pub runs_a: usize,
    pub runs_b: usize,
}

/// The `--json` document.
#[derive(Serialize)]
pub struct Report<'a> {
    pub schema: u32,
    pub title: &'a str,
    pub alpha: f64,
    pub order: &'a str,
    pub runs_per_side: usize,
    pub warmup_per_side: usize,
    /// Ctrl-C stopped the session; the figures are those of the runs finished before it.
    pub interrupted: bool,
    pub setups: Vec<SetupReport<'a>>,
    pub comparisons: &'a [Comparison],
}

#[cfg(test)]
mod tests {
    use super::super::parsers::Direction;
    use super::super::stats;
    use super::*;

    fn comparison(case: &str, load: &str, a: &[f64], b: &[f64], dir: Direction) -> Comparison {
        let (sa, sb) = (stats::summarize(a).unwrap(), stats::summarize(b).unwrap());
        let welch = stats::welch(a, b, 0.95);
        Comparison {
            case: case.into(),
            load: load.into(),
            metric: "Time".into(),
            group: String::new(),
            label: "Time".into(),
            unit: "s".into(),
            direction: dir,
            primary: true,
            a_runs: a.to_vec(),
            b_runs: b.to_vec(),
            a: sa,
            b: sb,
            change_pct: stats::change_pct(sa.mean, sb.mean),
            gain_pct: stats::gain_pct(sa.mean, sb.mean, dir.higher_is_better()),
            significant: stats::significant(
                welch.as_ref(),
                stats::change_pct(sa.mean, sb.mean),
                0.05,
            ),
            welch,
        }
    }

    const NOTES: Notes = Notes {
        alpha: 0.05,
        method: "3 runs per side, interleaved A B B A",
    };

    #[test]
    fn zero_baseline_prints_n_a_and_no_mark() {
        // Figures of 0 on side A: the t-test sees an exact difference (p = 0), but there is no
        // relative change to mark; constant identical samples have p = 1.
        let zero = comparison(
            "z",
            "-",
            &[0.0, 0.0, 0.0],
            &[1.0, 1.0, 1.0],
            Direction::LowerIsBetter,
        );
        assert!(zero.change_pct.is_nan());
        assert!(!zero.significant);
        let same = comparison("s", "-", &[0.0, 0.0], &[0.0, 0.0], Direction::LowerIsBetter);
        assert!(!same.significant);
        let t = seeds_table("t", &[&zero, &same], &NOTES);
        assert!(t.contains("\nz - 1.00 ( 0.00) n/a ( 0.00)\n"), "{t}");
        assert!(t.contains("\ns - 1.00 ( 0.00) +0.00 ( 0.00)\n"), "{t}");
        assert!(t.contains("n/a: A's mean is 0"), "{t}");
        assert!(!t.contains("NaN") && !t.contains("nan%"), "{t}");
        let g = gain_table("t", &[&zero], &NOTES);
        assert!(g.contains("z 0.00 1.00(n/a)\n"), "{g}");
        let c = csv(&[zero]);
        let row = c.lines().nth(1).unwrap();
        assert!(!row.contains("NaN"), "{row}");
        // change_pct and gain_pct are empty; significant is false.
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(
            (cells[14], cells[15], cells[21]),
            ("", "", "false"),
            "{row}"
        );
    }

    #[test]
    fn seeds_row_format() {
        // Means 1.0 and 0.9905 (-0.95%), like seed 000's first hackbench row.
        let c = comparison(
            "process-pipe",
            "1-groups",
            &[0.99, 1.0, 1.01],
            &[0.9805, 0.9905, 1.0005],
            Direction::LowerIsBetter,
        );
        let wide = comparison(
            "process-pipe",
            "2-groups",
            &[1.0, 1.0, 1.0001],
            &[2.0, 2.0001, 2.0],
            Direction::LowerIsBetter,
        );
        let t = seeds_table("hackbench", &[&c, &wide], &NOTES);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "hackbench");
        assert_eq!(lines[1], "=========");
        assert_eq!(lines[2], "case load baseline(std%) compare%( std%)");
        assert_eq!(lines[3], "process-pipe 1-groups 1.00 ( 1.00) -0.95 ( 1.01)");
        assert_eq!(
            lines[4],
            "process-pipe 2-groups 1.00 ( 0.01) +100.00 ( 0.00) *"
        );
        assert!(t.contains("figure: Time [s]: lower is better, so a - compare% is an improvement"));
        assert!(t.contains("* significant: Welch's t-test p < 0.05 (the 95% confidence"));
        assert!(t.contains("runs: 3 runs per side, interleaved A B B A"));
        assert!(t.contains("\nprocess-pipe 2-groups "), "{t}");
        assert!(t.contains("p<1e-6 [+"), "{t}");
    }

    #[test]
    fn several_figures_per_case_get_case_metric_labels() {
        let mut a = comparison(
            "stress",
            "4",
            &[1.0, 2.0],
            &[1.0, 2.0],
            Direction::HigherIsBetter,
        );
        a.metric = "cpu".into();
        let mut b = a.clone();
        b.metric = "matrix".into();
        let t = seeds_table("stress-ng", &[&a, &b], &NOTES);
        assert!(
            t.contains("\nstress:cpu 4 1.00 ( 47.14) +0.00 ( 47.14)\n"),
            "{t}"
        );
        assert!(t.contains("\nstress:matrix 4 "), "{t}");
        assert!(t.contains("higher is better, so a + compare%"), "{t}");
    }

    #[test]
    fn percentile_rows_like_seed_004() {
        let mut rows = Vec::new();
        for (label, a, b) in [("50.0th", 8.0, 9.0), ("75.0th", 9.6, 9.0)] {
            let mut c = comparison(
                "normal",
                "1-mthreads",
                &[a, a],
                &[b, b],
                Direction::LowerIsBetter,
            );
            c.group = "Wakeup Latencies percentiles (usec)".into();
            c.label = label.into();
            c.metric = format!("Wakeup {label}");
            rows.push(c);
        }
        let refs: Vec<&Comparison> = rows.iter().collect();
        let t = percentile_table("schbench", &refs, &NOTES);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "schbench A B(%gain)");
        assert_eq!(lines[2], "normal 1-mthreads");
        assert_eq!(lines[3], "Wakeup Latencies percentiles (usec)");
        // Exact, spread-free figures: the test calls them significant.
        assert_eq!(lines[4], "50.0th: 8.00 9.00(-12.50) *");
        assert_eq!(lines[5], "75.0th: 9.60 9.00(6.25) *");
    }

    #[test]
    fn gain_rows_like_seed_004_funclatency() {
        let mut rows = Vec::new();
        for (load, a, b) in [
            ("idle", [809.0, 809.6], [695.0, 695.0]),
            ("busy-12", [1013.0, 1014.0], [893.0, 893.2]),
        ] {
            let mut c = comparison("swb", load, &a, &b, Direction::LowerIsBetter);
            c.metric = "avg".into();
            c.label = "avg".into();
            c.unit = "nsecs".into();
            rows.push(c);
        }
        // Under 100: two decimals, like the seed's hackbench rows; no load: the case alone.
        let mut hb = comparison(
            "Process-10-groups",
            "-",
            &[11.70, 11.78],
            &[11.69, 11.71],
            Direction::LowerIsBetter,
        );
        hb.metric = "Time".into();
        rows.push(hb);
        let refs: Vec<&Comparison> = rows.iter().collect();
        let t = gain_table("should_we_balance", &refs, &NOTES);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "should_we_balance");
        assert_eq!(lines[1], "-----------------");
        assert_eq!(lines[2], "workload A B(%gain)");
        // (809.3 - 695.0) / 809.3 * 100 = 14.12; both sides' spread is tiny: significant.
        assert_eq!(lines[3], "swb idle 809.3 695.0(14.12) *");
        assert_eq!(lines[4], "swb busy-12 1013.5 893.1(11.88) *");
        assert_eq!(lines[5], "Process-10-groups 11.74 11.70(0.34)");
        assert!(t.contains("figure: avg [nsecs], lower is better\n"), "{t}");
        assert!(t.contains("figure: Time [s], lower is better\n"), "{t}");
        assert!(t.contains("runs: 3 runs per side, interleaved A B B A"));
        assert!(t.contains("divide by B instead"), "{t}");
    }

    #[test]
    fn csv_has_a_header_and_one_row_per_figure() {
        let c = comparison(
            "a,b",
            "-",
            &[1.0, 2.0],
            &[1.5, 2.5],
            Direction::LowerIsBetter,
        );
        let text = csv(std::slice::from_ref(&c));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("case,load,metric,unit,direction"));
        assert!(
            lines[1].starts_with("\"a,b\",-,Time,s,lower-is-better,true,2,1.5,"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[1].split(',').count(), 23); // 22 columns, one quoted comma
        assert!(lines[1].ends_with(",false"));
    }
}
