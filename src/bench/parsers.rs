//! Parsers: the figures of one benchmark run, read from its output. Each parser is a pure
//! function of the run's text (stdout, then stderr) and knows the direction of its figures.
//!
//! Formats, and where they come from (the files under `tests/data/bench/` are the unit tests'
//! inputs):
//! - `perf-sched-pipe`: `perf bench sched pipe` (perf 6.1, captured here): `Total time: X [sec]`,
//!   `X usecs/op`, `X ops/sec`.
//! - `perf-sched-messaging`: `perf bench sched messaging` (perf 6.1, captured): `Total time: X [sec]`.
//! - `hackbench`: rt-tests' hackbench 2.40 (captured) and the older LTP/perf hackbench: `Time: X`.
//! - `schbench`: Chris Mason's schbench. The current format is written by `show_latencies()` in
//!   its `stats.c`/`schbench.c` (`%s percentiles (%s) runtime %llu (s) (%lu total samples)`, then
//!   `\t%s%2.1fth: %-10u (%lu samples)` with `* ` marking the headline percentile, then
//!   `min=, max=`); blocks for `Wakeup Latencies`, `Request Latencies` and `RPS`, repeated every
//!   interval, the last set being the whole run's, followed by `average rps: X`. The old (2016)
//!   format, quoted in seed 004's mail, prints `Latency percentiles (usec)` and lines like
//!   `*99.0000th: 1786`. Hand-written inputs in those formats.
//! - `stress-ng`: `stress-ng --metrics` / `--metrics-brief` (0.15.06, captured): the table under
//!   `stressor bogo ops real time usr time sys time bogo ops/s bogo ops/s`, one line per
//!   stressor, tagged `metrc:` (0.15 and later) or `info:` (older); the figure is bogo ops/s
//!   (real time).
//! - `funclatency`: bcc's `funclatency` (tools/funclatency.py). Its histogram is printed by
//!   `print_log2_hist()` in bcc's `src/python/bcc/table.py`: a header `nsecs : count
//!   distribution` (`usecs`/`msecs` with `-u`/`-m`), then one line per log2 bucket,
//!   `%10d -> %-10d : %-8d |%-*s|` (`%20d -> %-20d` when the buckets pass 2^32), bucket i
//!   holding the values [2^(i-1), 2^i - 1] (the first is `0 -> 1`); then
//!   `avg = %ld %s, total: %ld %s, count: %ld` (the average, total and count of the calls, in
//!   the histogram's unit). `-F`/`-P` print one histogram per function or process
//!   (`Function = f [pid]` sections) before one avg line; `-i` repeats histogram and avg line
//!   every interval. The inputs of the unit tests follow bcc's `tools/funclatency_example.txt`.
//! - `regex`: the first capture group of the first match of a user's regular expression.
//! - `wall`: no parsing: the wall-clock time of the command, measured by lineup.

use std::fmt;

use regex::Regex;
use serde::Serialize;

/// Which way a figure improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Direction {
    pub fn higher_is_better(self) -> bool {
        self == Direction::HigherIsBetter
    }
    pub fn words(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower is better",
            Direction::HigherIsBetter => "higher is better",
        }
    }
}

/// One figure of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metric {
    /// Unique within a parser's output, for `--metric` and the data files: `Time`,
    /// `usecs/op`, `Wakeup 99.0th`, `cpu` (a stress-ng stressor), `regex`.
    pub name: String,
    /// The block a percentile belongs to (`Wakeup Latencies percentiles (usec)`); empty for
    /// figures that are not percentiles.
    pub group: String,
    /// The row label inside its group (`99.0th`); the name when there is no group.
    pub label: String,
    pub unit: String,
    pub value: f64,
    pub direction: Direction,
    /// Shown in the seeds' table by default (the other figures go to the data files and,
    /// for percentile groups, the percentile table).
    pub primary: bool,
}

impl Metric {
    fn plain(name: &str, unit: &str, value: f64, direction: Direction, primary: bool) -> Metric {
        Metric {
            name: name.to_string(),
            group: String::new(),
            label: name.to_string(),
            unit: unit.to_string(),
            value,
            direction,
            primary,
        }
    }
}

/// A parser of benchmark output.
#[derive(Clone, Debug)]
pub enum Parser {
    PerfSchedPipe,
    PerfSchedMessaging,
    Hackbench,
    Schbench,
    StressNg,
    Funclatency,
    Regex {
        re: Regex,
        direction: Direction,
    },
    /// The command's wall-clock time, in seconds, measured by lineup.
    Wall,
}

/// The names `--parser` accepts, with one line on each.
pub const PARSERS: &[(&str, &str)] = &[
    (
        "perf-sched-pipe",
        "perf bench sched pipe: usecs/op (lower is better); also ops/sec, Total time",
    ),
    (
        "perf-sched-messaging",
        "perf bench sched messaging: Total time [sec] (lower is better)",
    ),
    (
        "hackbench",
        "hackbench (rt-tests or perf): Time: (lower is better)",
    ),
    (
        "schbench",
        "schbench: Wakeup/Request latency percentiles (lower is better), RPS (higher); \
         the table shows Wakeup 99.0th",
    ),
    (
        "stress-ng",
        "stress-ng --metrics[-brief]: bogo ops/s (real time) per stressor (higher is better)",
    ),
    (
        "funclatency",
        "bcc funclatency: avg latency of the calls (lower is better); percentiles estimated \
         from its log2 histogram",
    ),
    (
        "wall",
        "wall-clock seconds of the command, measured by lineup (lower is better)",
    ),
];

/// Why a run's output could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Parser {
    /// A built-in parser by name (see [`PARSERS`]); `regex` needs [`Parser::regex`].
    pub fn by_name(name: &str) -> Option<Parser> {
        Some(match name {
            "perf-sched-pipe" | "perf-pipe" => Parser::PerfSchedPipe,
            "perf-sched-messaging" | "perf-messaging" => Parser::PerfSchedMessaging,
            "hackbench" => Parser::Hackbench,
            "schbench" => Parser::Schbench,
            "stress-ng" => Parser::StressNg,
            "funclatency" => Parser::Funclatency,
            "wall" => Parser::Wall,
            _ => return None,
        })
    }

    /// A regex parser; the pattern must have at least one capture group.
    pub fn regex(pattern: &str, direction: Direction) -> Result<Parser, String> {
        let re = Regex::new(pattern).map_err(|e| {
            format!(
                "bad regex '{pattern}': {}",
                e.to_string().lines().last().unwrap_or("")
            )
        })?;
        if re.captures_len() < 2 {
            return Err(format!(
                "regex '{pattern}' has no capture group: put the figure in ( )"
            ));
        }
        Ok(Parser::Regex { re, direction })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Parser::PerfSchedPipe => "perf-sched-pipe",
            Parser::PerfSchedMessaging => "perf-sched-messaging",
            Parser::Hackbench => "hackbench",
            Parser::Schbench => "schbench",
            Parser::StressNg => "stress-ng",
            Parser::Funclatency => "funclatency",
            Parser::Regex { .. } => "regex",
            Parser::Wall => "wall",
        }
    }

    /// Whether the figures are percentile groups (shown in a percentile table too).
    pub fn has_percentiles(&self) -> bool {
        matches!(self, Parser::Schbench | Parser::Funclatency)
    }

    /// Whether the table of `A B(%gain)` per workload (seed 004's funclatency table) is the
    /// natural view of the headline figure.
    pub fn has_gain_table(&self) -> bool {
        matches!(self, Parser::Funclatency)
    }

    /// The figures of one run. `output` is the run's stdout followed by its stderr;
    /// `elapsed_s` its wall-clock time in seconds (used by `wall` only).
    pub fn parse(&self, output: &str, elapsed_s: f64) -> Result<Vec<Metric>, ParseError> {
        match self {
            Parser::PerfSchedPipe => parse_perf_sched_pipe(output),
            Parser::PerfSchedMessaging => parse_perf_sched_messaging(output),
            Parser::Hackbench => parse_hackbench(output),
            Parser::Schbench => parse_schbench(output),
            Parser::StressNg => parse_stress_ng(output),
            Parser::Funclatency => parse_funclatency(output),
            Parser::Regex { re, direction } => parse_regex(output, re, *direction),
            Parser::Wall => Ok(vec![Metric::plain(
                "wall",
                "s",
                elapsed_s,
                Direction::LowerIsBetter,
                true,
            )]),
        }
    }
}

fn number(s: &str) -> Option<f64> {
    let v: f64 = s.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// The number that follows `prefix` on the last line that contains it.
fn after_last(output: &str, prefix: &str) -> Option<f64> {
    output.lines().rev().find_map(|line| {
        let rest = &line[line.find(prefix)? + prefix.len()..];
        number(rest.split_whitespace().next()?)
    })
}

/// The number before `suffix` on the last line that ends with it.
fn before_last(output: &str, suffix: &str) -> Option<f64> {
    output.lines().rev().find_map(|line| {
        let head = line.trim_end().strip_suffix(suffix)?;
        number(head.split_whitespace().last()?)
    })
}

/// `perf bench sched pipe`:
/// ```text
///      Total time: 0.691 [sec]
///
///       69.188600 usecs/op
///           14453 ops/sec
/// ```
pub fn parse_perf_sched_pipe(output: &str) -> Result<Vec<Metric>, ParseError> {
    let usecs = before_last(output, "usecs/op").ok_or_else(|| {
        ParseError("no 'X usecs/op' line (output of perf bench sched pipe?)".into())
    })?;
    let mut out = vec![Metric::plain(
        "usecs/op",
        "usecs/op",
        usecs,
        Direction::LowerIsBetter,
        true,
    )];
    if let Some(ops) = before_last(output, "ops/sec") {
        out.push(Metric::plain(
            "ops/sec",
            "ops/sec",
            ops,
            Direction::HigherIsBetter,
            false,
        ));
    }
    if let Some(total) = after_last(output, "Total time:") {
        out.push(Metric::plain(
            "Total time",
            "s",
            total,
            Direction::LowerIsBetter,
            false,
        ));
    }
    Ok(out)
}

/// `perf bench sched messaging`: `     Total time: 0.198 [sec]`.
pub fn parse_perf_sched_messaging(output: &str) -> Result<Vec<Metric>, ParseError> {
    let total = after_last(output, "Total time:").ok_or_else(|| {
        ParseError("no 'Total time: X [sec]' line (output of perf bench sched messaging?)".into())
    })?;
    Ok(vec![Metric::plain(
        "Total time",
        "s",
        total,
        Direction::LowerIsBetter,
        true,
    )])
}

/// hackbench: `Time: 0.145`.
pub fn parse_hackbench(output: &str) -> Result<Vec<Metric>, ParseError> {
    let time = output
        .lines()
        .rev()
        .find_map(|l| number(l.trim().strip_prefix("Time:")?))
        .ok_or_else(|| ParseError("no 'Time: SECONDS' line (output of hackbench?)".into()))?;
    Ok(vec![Metric::plain(
        "Time",
        "s",
        time,
        Direction::LowerIsBetter,
        true,
    )])
}

/// schbench's percentile blocks; the last block of each kind wins (earlier ones are interval
/// reports). Metric names: `Wakeup 50.0th`, `Request 99.9th`, `RPS 50.0th`, `average rps`;
/// the old format's block is `Latency`.
pub fn parse_schbench(output: &str) -> Result<Vec<Metric>, ParseError> {
    struct Block {
        kind: String,
        header: String,
        unit: String,
        rows: Vec<(String, f64)>,
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut current: Option<usize> = None;
    for line in output.lines() {
        let t = line.trim();
        if let Some(pos) = t.find(" percentiles") {
            let kind = t[..pos].trim();
            let kind = kind.strip_suffix(" Latencies").unwrap_or(kind).to_string();
            let unit = t[pos..]
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .map(|(u, _)| u.to_string())
                .unwrap_or_default();
            let header = match t.find(')') {
                Some(end) => t[..=end].to_string(),
                None => t.to_string(),
            };
            // A later block of the same kind replaces the earlier one.
            blocks.retain(|b| b.kind != kind);
            blocks.push(Block {
                kind,
                header,
                unit,
                rows: Vec::new(),
            });
            current = Some(blocks.len() - 1);
            continue;
        }
        let Some(i) = current else { continue };
        let row = t.trim_start_matches('*').trim_start();
        if let Some((pct, rest)) = row.split_once("th:") {
            let value = rest.split_whitespace().next().and_then(number);
            if let (Some(_), Some(v)) = (number(pct), value) {
                blocks[i].rows.push((pct.to_string(), v));
                continue;
            }
        }
        if !row.starts_with("min=") {
            current = None;
        }
    }
    let mut out = Vec::new();
    for Block {
        kind,
        header,
        unit,
        rows,
    } in &blocks
    {
        let direction = if kind == "RPS" {
            Direction::HigherIsBetter
        } else {
            Direction::LowerIsBetter
        };
        for (pct, v) in rows {
            // "99.0000" (old format) and "99.0" name the same percentile.
            let p: f64 = pct.parse().unwrap_or(0.0);
            let label = format!("{p:.1}th");
            out.push(Metric {
                name: format!("{kind} {label}"),
                group: header.clone(),
                label,
                unit: unit.clone(),
                value: *v,
                direction,
                primary: false,
            });
        }
    }
    if let Some(avg) = after_last(output, "average rps:") {
        out.push(Metric::plain(
            "average rps",
            "requests/s",
            avg,
            Direction::HigherIsBetter,
            false,
        ));
    }
    if out.is_empty() {
        return Err(ParseError(
            "no 'Wakeup Latencies percentiles' or 'Latency percentiles' block (output of schbench?)"
                .into(),
        ));
    }
    let headline = ["Wakeup 99.0th", "Latency 99.0th"];
    match out.iter_mut().find(|m| headline.contains(&m.name.as_str())) {
        Some(m) => m.primary = true,
        None => out[0].primary = true,
    }
    Ok(out)
}

/// `stress-ng --metrics` / `--metrics-brief`: the stressor table
/// ```text
/// stress-ng: metrc: [8153] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
/// stress-ng: metrc: [8153]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
/// stress-ng: metrc: [8153] cpu                1414      1.01      1.01      0.00      1406.63        1406.77
/// ```
/// One figure per stressor, named after it: bogo ops/s (real time), higher is better.
pub fn parse_stress_ng(output: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out: Vec<Metric> = Vec::new();
    let mut in_table = false;
    for line in output.lines() {
        // Strip "stress-ng: TAG: [PID]" when present.
        let body = match line.find("] ") {
            Some(i) if line.trim_start().starts_with("stress-ng:") => &line[i + 2..],
            _ => line,
        };
        let fields: Vec<&str> = body.split_whitespace().collect();
        if fields.first() == Some(&"stressor") && body.contains("bogo ops/s") {
            in_table = true;
            continue;
        }
        if !in_table || fields.is_empty() {
            continue;
        }
        // stressor, bogo ops, real, usr, sys, bogo ops/s (real), bogo ops/s (usr+sys), ...
        if fields.len() >= 7
            && fields[1..7].iter().all(|f| number(f).is_some())
            && number(fields[0]).is_none()
        {
            let name = fields[0].to_string();
            let value = number(fields[5]).unwrap_or(0.0);
            out.retain(|m| m.name != name);
            out.push(Metric::plain(
                &name,
                "bogo ops/s",
                value,
                Direction::HigherIsBetter,
                true,
            ));
        } else if !fields[0].starts_with('(') {
            in_table = false;
        }
    }
    if out.is_empty() {
        return Err(ParseError(
            "no stressor table with 'bogo ops/s' (did the command run stress-ng with --metrics or --metrics-brief?)".into(),
        ));
    }
    Ok(out)
}

/// The percentiles estimated from a funclatency histogram, as seed 004's schbench table
/// lists them.
pub const FUNCLATENCY_PERCENTILES: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9];

/// One report of funclatency: the buckets of its histogram(s), summed, and its avg line.
#[derive(Default)]
struct FuncReport {
    unit: String,
    /// (low, high, count) per bucket, in the order printed.
    buckets: Vec<(u64, u64, u64)>,
    avg: Option<(f64, String, f64, u64)>,
}

/// A bucket line `   2048 -> 4095       : 124      |****   |`.
fn funclatency_bucket(line: &str) -> Option<(u64, u64, u64)> {
    let (range, rest) = line.split_once(':')?;
    let (low, high) = range.split_once("->")?;
    let low: u64 = low.trim().parse().ok()?;
    let high: u64 = high.trim().parse().ok()?;
    let count: u64 = rest.split_whitespace().next()?.parse().ok()?;
    (low <= high).then_some((low, high, count))
}

/// `avg = 13746 nsecs, total: 6543360 nsecs, count: 476`: (avg, unit, total, count).
fn funclatency_avg(line: &str) -> Option<(f64, String, f64, u64)> {
    let rest = line.trim().strip_prefix("avg =")?;
    let mut parts = rest.split(',');
    let mut avg = parts.next()?.split_whitespace();
    let value = number(avg.next()?)?;
    let unit = avg.next()?.to_string();
    let total = number(
        parts
            .next()?
            .trim()
            .strip_prefix("total:")?
            .split_whitespace()
            .next()?,
    )?;
    let count: u64 = parts
        .next()?
        .trim()
        .strip_prefix("count:")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((value, unit, total, count))
}

/// The value below which `p` percent of the calls of a log2 histogram fall, estimated by
/// spreading each bucket's calls evenly over its range `[low, high + 1)` and interpolating
/// linearly by rank: the true value lies somewhere in the bucket, so the estimate is off by
/// at most the bucket's width (a factor of 2).
pub fn histogram_percentile(buckets: &[(u64, u64, u64)], p: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|b| b.2).sum();
    if total == 0 {
        return None;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * total as f64;
    let mut below = 0u64;
    for &(low, high, count) in buckets {
        if count == 0 {
            continue;
        }
        if (below + count) as f64 >= rank {
            let frac = ((rank - below as f64) / count as f64).clamp(0.0, 1.0);
            let width = (high - low) as f64 + 1.0;
            return Some(low as f64 + frac * width);
        }
        below += count;
    }
    buckets
        .iter()
        .rev()
        .find(|b| b.2 > 0)
        .map(|b| b.1 as f64 + 1.0)
}

/// bcc funclatency. The headline figure is `avg` (the avg line's value, in its unit), lower
/// is better; `50.0th` .. `99.9th` are estimated from the
/// histogram ([`histogram_percentile`]), in the histogram's unit. A report is the histograms
/// up to an avg line (several with `-F`/`-P`, summed); with `-i` the last report wins, as the
/// last interval's figures are the ones printed last.
pub fn parse_funclatency(output: &str) -> Result<Vec<Metric>, ParseError> {
    let mut reports: Vec<FuncReport> = Vec::new();
    // A report is open until its avg line closes it.
    let mut open = false;
    let mut in_hist = false;
    for line in output.lines() {
        let t = line.trim();
        if let Some(head) = t.strip_suffix("distribution") {
            let fields: Vec<&str> = head.split_whitespace().collect();
            if let [unit, ":", "count"] = fields[..] {
                if !open {
                    reports.push(FuncReport::default());
                    open = true;
                }
                let r = reports.last_mut().expect("pushed above");
                if !r.unit.is_empty() && r.unit != unit {
                    return Err(ParseError(format!(
                        "funclatency histograms in {} and {unit} in one report",
                        r.unit
                    )));
                }
                r.unit = unit.to_string();
                in_hist = true;
                continue;
            }
        }
        if in_hist && let Some((low, high, count)) = funclatency_bucket(t) {
            let r = reports.last_mut().expect("a histogram is open");
            match r.buckets.iter_mut().find(|b| b.0 == low && b.1 == high) {
                Some(b) => b.2 += count,
                None => r.buckets.push((low, high, count)),
            }
            continue;
        }
        in_hist = false;
        if let Some(avg) = funclatency_avg(t) {
            if !open {
                reports.push(FuncReport::default());
            }
            reports.last_mut().expect("pushed above").avg = Some(avg);
            open = false;
        }
    }
    let Some(report) = reports.pop() else {
        return Err(ParseError(
            "no 'nsecs : count distribution' histogram or 'avg = N nsecs, total: N nsecs, \
             count: N' line (output of bcc funclatency?)"
                .into(),
        ));
    };
    let Some((avg, avg_unit, _total, count)) = report.avg else {
        return Err(ParseError(
            "a funclatency histogram without its 'avg = N nsecs, total: N nsecs, count: N' line \
             (no calls, an interrupted run, or a bcc older than the avg line)"
                .into(),
        ));
    };
    if count == 0 {
        return Err(ParseError("funclatency's avg line counts no calls".into()));
    }
    let mut out = vec![Metric::plain(
        "avg",
        &avg_unit,
        avg,
        Direction::LowerIsBetter,
        true,
    )];
    let group = format!(
        "funclatency percentiles ({}, estimated from the log2 histogram)",
        report.unit
    );
    for p in FUNCLATENCY_PERCENTILES {
        if let Some(v) = histogram_percentile(&report.buckets, p) {
            let label = format!("{p:.1}th");
            out.push(Metric {
                name: label.clone(),
                group: group.clone(),
                label,
                unit: report.unit.clone(),
                value: v,
                direction: Direction::LowerIsBetter,
                primary: false,
            });
        }
    }
    Ok(out)
}

/// The first capture group of the first match of `re`, as a number.
pub fn parse_regex(
    output: &str,
    re: &Regex,
    direction: Direction,
) -> Result<Vec<Metric>, ParseError> {
    let caps = re.captures(output).ok_or_else(|| {
        ParseError(format!(
            "regex '{}' matches nothing in the output",
            re.as_str()
        ))
    })?;
    let text = caps.get(1).map(|m| m.as_str()).unwrap_or("");
    let value = number(text).ok_or_else(|| {
        ParseError(format!(
            "regex '{}' captured '{text}', which is not a number",
            re.as_str()
        ))
    })?;
    Ok(vec![Metric::plain("regex", "", value, direction, true)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let path = format!("{}/tests/data/bench/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn get<'a>(ms: &'a [Metric], name: &str) -> &'a Metric {
        ms.iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name} in {ms:?}"))
    }

    #[test]
    fn perf_sched_pipe_captured() {
        let ms = parse_perf_sched_pipe(&data("perf-sched-pipe.txt")).unwrap();
        assert_eq!(ms.len(), 3);
        assert_eq!(get(&ms, "usecs/op").value, 69.1886);
        assert!(get(&ms, "usecs/op").primary);
        assert_eq!(get(&ms, "usecs/op").direction, Direction::LowerIsBetter);
        assert_eq!(get(&ms, "ops/sec").value, 14453.0);
        assert_eq!(get(&ms, "ops/sec").direction, Direction::HigherIsBetter);
        assert_eq!(get(&ms, "Total time").value, 0.691);
        // Threaded mode prints the same lines.
        let t = "# Running 'sched/pipe' benchmark:\n# Executed 2000 pipe operations between two threads\n\n     Total time: 0.062 [sec]\n\n      31.323500 usecs/op\n          31924 ops/sec\n";
        assert_eq!(
            get(&parse_perf_sched_pipe(t).unwrap(), "usecs/op").value,
            31.3235
        );
        assert!(parse_perf_sched_pipe("Total time: 1.0 [sec]\n").is_err());
    }

    #[test]
    fn perf_sched_messaging_captured() {
        let ms = parse_perf_sched_messaging(&data("perf-sched-messaging.txt")).unwrap();
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].value, 0.198);
        assert!(parse_perf_sched_messaging("# Running\n").is_err());
    }

    #[test]
    fn hackbench_captured() {
        assert_eq!(
            parse_hackbench(&data("hackbench.txt")).unwrap()[0].value,
            0.177
        );
        assert_eq!(
            parse_hackbench(&data("hackbench-threads-pipe.txt")).unwrap()[0].value,
            0.105
        );
        let e = parse_hackbench("Running in process mode\nTime: oops\n").unwrap_err();
        assert!(e.0.contains("Time:"), "{e}");
    }

    #[test]
    fn schbench_takes_the_last_block_of_each_kind() {
        let ms = parse_schbench(&data("schbench.txt")).unwrap();
        let names: Vec<&str> = ms.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Wakeup 50.0th",
                "Wakeup 90.0th",
                "Wakeup 99.0th",
                "Wakeup 99.9th",
                "Request 50.0th",
                "Request 90.0th",
                "Request 99.0th",
                "Request 99.9th",
                "RPS 20.0th",
                "RPS 50.0th",
                "RPS 90.0th",
                "average rps"
            ]
        );
        // The final (20 s) report, not the 10 s interval report.
        assert_eq!(get(&ms, "Wakeup 99.0th").value, 181.0);
        assert!(get(&ms, "Wakeup 99.0th").primary);
        assert_eq!(ms.iter().filter(|m| m.primary).count(), 1);
        assert_eq!(get(&ms, "Request 99.9th").value, 20064.0);
        assert_eq!(get(&ms, "RPS 20.0th").value, 2988.0);
        assert_eq!(get(&ms, "RPS 20.0th").direction, Direction::HigherIsBetter);
        assert_eq!(
            get(&ms, "Wakeup 50.0th").direction,
            Direction::LowerIsBetter
        );
        assert_eq!(
            get(&ms, "Wakeup 50.0th").group,
            "Wakeup Latencies percentiles (usec)"
        );
        assert_eq!(get(&ms, "RPS 50.0th").unit, "requests");
        assert_eq!(get(&ms, "average rps").value, 3024.55);
    }

    #[test]
    fn schbench_pipe_mode_and_old_format() {
        // -p (pipe) mode: one Wakeup block with the 20th percentile, then the transfer line.
        let pipe = "Wakeup Latencies percentiles (usec) runtime 30 (s) (1000 total samples)\n\t  20.0th: 3          (300 samples)\n\t  50.0th: 4          (400 samples)\n\t  90.0th: 6          (200 samples)\n\t* 99.0th: 11         (90 samples)\n\t  99.9th: 40         (10 samples)\n\t  min=1, max=95\navg worker transfer: 36522.13 ops/sec 35.67MB/s\n";
        let ms = parse_schbench(pipe).unwrap();
        assert_eq!(ms.len(), 5);
        assert_eq!(get(&ms, "Wakeup 20.0th").value, 3.0);
        assert!(get(&ms, "Wakeup 99.0th").primary);
        // The old schbench, as quoted in seed 004's mail.
        let old = parse_schbench(&data("schbench-old.txt")).unwrap();
        assert_eq!(old.len(), 7);
        assert_eq!(get(&old, "Latency 99.0th").value, 1786.0);
        assert!(get(&old, "Latency 99.0th").primary);
        assert_eq!(get(&old, "Latency 99.5th").value, 5240.0);
        assert_eq!(old[0].group, "Latency percentiles (usec)");
        assert!(parse_schbench("setting worker threads to 4\n").is_err());
    }

    #[test]
    fn stress_ng_captured_metrics_and_brief() {
        let ms = parse_stress_ng(&data("stress-ng-metrics.txt")).unwrap();
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].name, "cpu");
        assert_eq!(ms[0].unit, "bogo ops/s");
        assert_eq!(ms[0].value, 1406.67);
        assert_eq!(ms[0].direction, Direction::HigherIsBetter);
        // Two stressors; the "miscellaneous metrics" lines that follow are not stressors.
        let ms = parse_stress_ng(&data("stress-ng-metrics-brief.txt")).unwrap();
        let got: Vec<(&str, f64)> = ms.iter().map(|m| (m.name.as_str(), m.value)).collect();
        assert_eq!(got, [("cpu", 1406.63), ("matrix", 2487.82)]);
        // Older stress-ng tags the table "info:".
        let old = "stress-ng: info:  [2731] stressor       bogo ops real time  usr time  sys time   bogo ops/s   bogo ops/s\nstress-ng: info:  [2731]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)\nstress-ng: info:  [2731] vm                 9216     10.00      7.31      2.66       921.55       924.37\nstress-ng: info:  [2731] successful run completed in 10.00s\n";
        assert_eq!(parse_stress_ng(old).unwrap()[0].value, 921.55);
        assert!(parse_stress_ng("stress-ng: info:  [1] dispatching hogs: 1 cpu\n").is_err());
    }

    #[test]
    fn funclatency_avg_is_the_headline_and_percentiles_come_from_the_histogram() {
        let ms = parse_funclatency(&data("funclatency.txt")).unwrap();
        let avg = get(&ms, "avg");
        assert_eq!((avg.value, avg.unit.as_str()), (809.0, "nsecs"));
        assert!(avg.primary);
        assert_eq!(avg.direction, Direction::LowerIsBetter);
        assert_eq!(ms.iter().filter(|m| m.primary).count(), 1);
        // 200 calls: 10 in [256, 511], 160 in [512, 1023], 28 in [1024, 2047], 2 in [2048, 4095].
        // The median is call 100: 90 of the 160 into [512, 1024) -> 512 + 90/160 * 512.
        assert_eq!(get(&ms, "50.0th").value, 800.0);
        assert_eq!(get(&ms, "75.0th").value, 960.0);
        // Call 198 is the last of [1024, 2047]: its upper edge.
        assert_eq!(get(&ms, "99.0th").value, 2048.0);
        assert!((get(&ms, "99.9th").value - 3891.2).abs() < 1e-9);
        let p = get(&ms, "99.0th");
        assert_eq!(
            p.group,
            "funclatency percentiles (nsecs, estimated from the log2 histogram)"
        );
        assert_eq!((p.label.as_str(), p.unit.as_str()), ("99.0th", "nsecs"));
        assert_eq!(ms.len(), 1 + FUNCLATENCY_PERCENTILES.len());
        // By name, with percentile tables.
        let parser = Parser::by_name("funclatency").unwrap();
        assert!(parser.has_percentiles() && parser.has_gain_table());
        assert_eq!(parser.parse(&data("funclatency.txt"), 0.0).unwrap(), ms);
    }

    #[test]
    fn funclatency_sections_sum_and_the_last_interval_wins() {
        // -F: one histogram per function, one avg line for all.
        let ms = parse_funclatency(&data("funclatency-functions.txt")).unwrap();
        assert_eq!(get(&ms, "avg").value, 3072.0);
        assert_eq!(get(&ms, "50.0th").value, 4096.0);
        assert_eq!(get(&ms, "75.0th").value, 6144.0);
        // -i: a report per interval; the last is the one read, in its unit (usecs).
        let ms = parse_funclatency(&data("funclatency-interval.txt")).unwrap();
        let avg = get(&ms, "avg");
        assert_eq!((avg.value, avg.unit.as_str()), (4.0, "usecs"));
        assert_eq!(get(&ms, "50.0th").value, 4.0);
        assert!((get(&ms, "90.0th").value - 14.4).abs() < 1e-9);
        assert!(get(&ms, "90.0th").group.contains("(usecs,"));
    }

    #[test]
    fn funclatency_wide_buckets_and_bad_input() {
        // Past 2^32 bcc prints `%20d -> %-20d`.
        let wide = format!(
            "               {:<29} : count     distribution\n{:>20} -> {:<20} : {:<8} |{:<20}|\n{:>20} -> {:<20} : {:<8} |{:<20}|\n\navg = 5000000000 nsecs, total: 10000000000 nsecs, count: 2\n",
            "nsecs",
            2147483648u64,
            4294967295u64,
            1,
            "********************",
            4294967296u64,
            8589934591u64,
            1,
            "********************"
        );
        let ms = parse_funclatency(&wide).unwrap();
        assert_eq!(get(&ms, "avg").value, 5e9);
        assert_eq!(get(&ms, "50.0th").value, 4294967296.0);
        // Nothing of funclatency's.
        let e =
            parse_funclatency("Tracing 1 functions for \"f\"... Hit Ctrl-C to end.\n").unwrap_err();
        assert!(e.0.contains("nsecs : count distribution"), "{e}");
        // A histogram without its avg line: no headline to report.
        let cut: String = data("funclatency.txt")
            .lines()
            .filter(|l| !l.starts_with("avg"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(parse_funclatency(&cut).unwrap_err().0.contains("avg ="));
        // A malformed avg line is not one.
        assert!(parse_funclatency("avg = many nsecs, total: 1 nsecs, count: 1\n").is_err());
        assert!(parse_funclatency("avg = 5 nsecs, total: 10 nsecs\n").is_err());
        // Only an avg line (no histogram): the headline, no percentiles.
        let ms = parse_funclatency("avg = 5 nsecs, total: 10 nsecs, count: 2\n").unwrap();
        assert_eq!(ms.len(), 1);
        assert!(parse_funclatency("avg = 0 nsecs, total: 0 nsecs, count: 0\n").is_err());
        assert_eq!(histogram_percentile(&[], 50.0), None);
        assert_eq!(histogram_percentile(&[(0, 1, 0)], 50.0), None);
    }

    #[test]
    fn regex_first_group() {
        let p = Parser::regex(r"elapsed: ([0-9.]+) s", Direction::LowerIsBetter).unwrap();
        let ms = p.parse("adjacent: elapsed: 0.067310 s\n", 0.0).unwrap();
        assert_eq!(ms[0].value, 0.06731);
        assert!(
            p.parse("nothing here", 0.0)
                .unwrap_err()
                .0
                .contains("matches nothing")
        );
        let q = Parser::regex(r"x=(\w+)", Direction::HigherIsBetter).unwrap();
        assert!(
            q.parse("x=abc", 0.0)
                .unwrap_err()
                .0
                .contains("not a number")
        );
        assert!(Parser::regex("no group", Direction::LowerIsBetter).is_err());
        assert!(Parser::regex("(unclosed", Direction::LowerIsBetter).is_err());
    }

    #[test]
    fn names_round_trip() {
        for (name, _) in PARSERS {
            assert_eq!(Parser::by_name(name).unwrap().name(), *name);
        }
        assert!(Parser::by_name("nope").is_none());
        let w = Parser::Wall.parse("", 0.25).unwrap();
        assert_eq!(
            (w[0].value, w[0].direction),
            (0.25, Direction::LowerIsBetter)
        );
    }
}
