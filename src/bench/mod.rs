//! `lineup bench`: an A/B harness for any two commands, in the seeds' table format.
//!
//! - [`limits`]: the accepted ranges of counts and durations, checked up front (no I/O);
//! - [`matrix`]: the TOML file of cases and loads, resolved into [`Setup`]s (no I/O);
//! - [`schedule`]: the interleaved A B B A order of runs (no I/O);
//! - [`parsers`]: figures from a run's output, one pure function per benchmark;
//! - [`stats`]: mean, std%, change%, Welch's t-test and confidence intervals (no I/O);
//! - [`compare`]: runs of one setup turned into per-figure comparisons (no I/O);
//! - [`table`]: the seeds' tables, CSV and JSON as text (no I/O);
//! - [`svg`]: one self-contained plot per case, as text (no I/O);
//! - [`run`]: running a shell command in its own process group with a timeout, its output
//!   streamed through a bounded buffer, and SIGINT/SIGTERM/SIGHUP (the only I/O here).

pub mod calibrate;
pub mod limits;
pub mod matrix;
pub mod parsers;
pub mod replay;
pub mod replay_compare;
pub mod run;
pub mod stats;
pub mod svg;
pub mod table;

use serde::Serialize;

use parsers::{Direction, Metric, Parser};
use stats::{Summary, Welch};

/// Which of the two commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
    pub fn letter(self) -> char {
        match self {
            Side::A => 'A',
            Side::B => 'B',
        }
    }
}

/// One run of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub side: Side,
    /// A warm-up run: executed and checked, its figures dropped.
    pub warmup: bool,
    /// 0-based number of this run among its side's warm-up or measured runs.
    pub index: usize,
}

/// The order of runs for one setup: `warmup` then `runs` runs per side, interleaved in pairs
/// A B, B A, A B, ... (A B B A A B B A ...), so that a slow drift of the machine (thermal,
/// other tenants, page cache) weighs on both sides alike instead of on whichever ran last.
pub fn schedule(runs: usize, warmup: usize) -> Vec<Step> {
    let mut out = Vec::with_capacity(2 * (runs + warmup));
    for (count, is_warmup) in [(warmup, true), (runs, false)] {
        for k in 0..count {
            let pair = if k % 2 == 0 {
                [Side::A, Side::B]
            } else {
                [Side::B, Side::A]
            };
            for side in pair {
                out.push(Step {
                    side,
                    warmup: is_warmup,
                    index: k,
                });
            }
        }
    }
    out
}

/// One A/B comparison to run: a case at one load, two shell commands, a parser.
#[derive(Clone, Debug)]
pub struct Setup {
    pub case: String,
    pub load: String,
    pub a: String,
    pub b: String,
    pub parser: Parser,
}

impl Setup {
    pub fn command(&self, side: Side) -> &str {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }
}

/// The figures of each measured run of one setup, per side.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    pub runs: [Vec<Vec<Metric>>; 2],
}

impl Collected {
    pub fn len(&self, side: Side) -> usize {
        self.runs[side.index()].len()
    }
}

/// One figure of one setup, A against B.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub case: String,
    pub load: String,
    pub metric: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub label: String,
    pub unit: String,
    pub direction: Direction,
    pub primary: bool,
    pub a_runs: Vec<f64>,
    pub b_runs: Vec<f64>,
    pub a: Summary,
    pub b: Summary,
    /// `(mean B - mean A) / |mean A| * 100`: the seeds' compare%.
    pub change_pct: f64,
    /// The improvement of B over A in percent (positive is better): seed 004's %gain.
    pub gain_pct: f64,
    /// Welch's t-test of B against A; absent with fewer than two runs on a side.
    pub welch: Option<Welch>,
    /// `welch.p < alpha`.
    pub significant: bool,
}

/// Turns one setup's runs into one comparison per figure, in the order the parser reports
/// them. `alpha` is the significance level (0.05 gives 95% confidence intervals).
pub fn compare(setup: &Setup, collected: &Collected, alpha: f64) -> Vec<Comparison> {
    let mut names: Vec<&Metric> = Vec::new();
    for run in collected.runs.iter().flatten() {
        for m in run {
            if !names.iter().any(|n| n.name == m.name) {
                names.push(m);
            }
        }
    }
    let values = |side: usize, name: &str| -> Vec<f64> {
        collected.runs[side]
            .iter()
            .filter_map(|run| run.iter().find(|m| m.name == name).map(|m| m.value))
            .collect()
    };
    let mut out = Vec::new();
    for m in names {
        let (av, bv) = (values(0, &m.name), values(1, &m.name));
        let (Some(a), Some(b)) = (stats::summarize(&av), stats::summarize(&bv)) else {
            continue;
        };
        let welch = stats::welch_from(&a, &b, 1.0 - alpha);
        out.push(Comparison {
            case: setup.case.clone(),
            load: setup.load.clone(),
            metric: m.name.clone(),
            group: m.group.clone(),
            label: m.label.clone(),
            unit: m.unit.clone(),
            direction: m.direction,
            primary: m.primary,
            change_pct: stats::change_pct(a.mean, b.mean),
            gain_pct: stats::gain_pct(a.mean, b.mean, m.direction.higher_is_better()),
            significant: stats::significant(
                welch.as_ref(),
                stats::change_pct(a.mean, b.mean),
                alpha,
            ),
            welch,
            a_runs: av,
            b_runs: bv,
            a,
            b,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_interleaves_abba_with_warmups_first() {
        let s = schedule(4, 1);
        let order: String = s
            .iter()
            .map(|st| {
                if st.warmup {
                    st.side.letter().to_ascii_lowercase()
                } else {
                    st.side.letter()
                }
            })
            .collect();
        assert_eq!(order, "abABBAABBA");
        assert_eq!(
            s.iter()
                .filter(|st| st.side == Side::A && !st.warmup)
                .count(),
            4
        );
        assert_eq!(s.last().unwrap().index, 3);
        assert_eq!(schedule(3, 0).len(), 6);
        assert!(schedule(0, 0).is_empty());
    }

    fn fig(name: &str, v: f64) -> Metric {
        Metric {
            name: name.into(),
            group: String::new(),
            label: name.into(),
            unit: "s".into(),
            value: v,
            direction: Direction::LowerIsBetter,
            primary: name == "t",
        }
    }

    #[test]
    fn compare_per_figure() {
        let setup = Setup {
            case: "c".into(),
            load: "1".into(),
            a: "a".into(),
            b: "b".into(),
            parser: Parser::Wall,
        };
        let mut col = Collected::default();
        for v in [1.0, 1.1, 0.9] {
            col.runs[0].push(vec![fig("t", v), fig("u", 5.0)]);
        }
        for v in [0.5, 0.55, 0.45] {
            col.runs[1].push(vec![fig("t", v)]);
        }
        let cs = compare(&setup, &col, 0.05);
        // "u" has no B runs: no comparison.
        assert_eq!(cs.len(), 1);
        let c = &cs[0];
        assert_eq!(c.metric, "t");
        assert!((c.change_pct + 50.0).abs() < 1e-9);
        assert!((c.gain_pct - 50.0).abs() < 1e-9);
        assert!(c.significant);
        assert!(c.welch.unwrap().t < 0.0);
        assert_eq!(c.a_runs, [1.0, 1.1, 0.9]);
    }
}
