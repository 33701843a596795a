//! `lineup bench`: A/B runs of two commands, or of a matrix of cases and loads, compared in
//! the seeds' table format.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use lineup::bench::parsers::{Direction, PARSERS, Parser};
use lineup::bench::run::{self, Failure};
use lineup::bench::table::{self, Notes, Report, SetupReport};
use lineup::bench::{self as bench, Collected, Comparison, Setup, Side, matrix};

use super::report_files::ReportFiles;

const EXAMPLES: &str = "Examples:
  # perf's pipe ping-pong, A against B, 10 interleaved runs per side
  lineup bench --a 'perf bench sched pipe -l 20000' --b './perf-new bench sched pipe -l 20000' \\
      --parser perf-sched-pipe

  # any program that prints its own figure: the first ( ) of --regex is the figure
  lineup bench --a ./fs_adjacent --b ./fs_padded --regex 'cpu: ([0-9.]+) s' --lower-is-better

  # wall-clock time of two commands (the default parser)
  lineup bench --a 'make -j2' --b 'make -j2 CC=clang' --runs 5

  # the seeds' hackbench table: cases x loads from a file, with data and plots
  lineup bench --matrix examples/ab/hackbench.toml --csv out.csv --svg plots/

Runs are interleaved A B B A A B B A ... (after the warm-ups), so that a slow drift of the
machine weighs on both sides alike. Each command runs in a process group of its own; Ctrl-C,
SIGTERM (kill, timeout) or SIGHUP ends that group (SIGTERM, SIGKILL 2 s later), drops that run,
and prints the table of the runs finished before it (exit status 128 + the signal: 130, 143,
129). A run's output is streamed: the parsers read its last 1 MiB per stream (and, for --regex,
the first line that matches).";

fn parser_help() -> String {
    let mut s = String::from(
        "How to read the figure from a run's output (stdout, then stderr) [default: wall]:",
    );
    for (name, what) in PARSERS {
        s.push_str(&format!("\n  {name}: {what}"));
    }
    s
}

#[derive(clap::Args)]
#[command(
    about = "A/B benchmark two commands: interleaved runs, mean, std%, change%, Welch's t-test",
    long_about = "Runs two commands (or each case and load of a matrix file) in interleaved \
                  A B B A order, reads a figure from each run's output, and prints the seeds' \
                  table: case load baseline(std%) compare%( std%), with a mark on changes that \
                  Welch's t-test finds significant and a 95% confidence interval of B - A.",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Shell command of side A, the baseline (run with sh -c)
    #[arg(
        long = "a",
        value_name = "CMD",
        requires = "b",
        conflicts_with = "matrix"
    )]
    a: Option<String>,
    /// Shell command of side B, compared against A
    #[arg(long = "b", value_name = "CMD", requires = "a")]
    b: Option<String>,
    /// TOML file of cases, loads and commands with {load} (see examples/ab/hackbench.toml)
    #[arg(long, value_name = "FILE", required_unless_present = "a")]
    matrix: Option<PathBuf>,
    /// Measured runs per side and setup [default: 10, or the matrix file's runs]
    #[arg(long, value_name = "N")]
    runs: Option<usize>,
    /// Warm-up runs per side and setup, run and checked but not counted [default: 1]
    #[arg(long, value_name = "N")]
    warmup: Option<usize>,
    /// Time limit of one run in seconds; 0 for none [default: 600]
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    #[arg(long, value_name = "NAME", long_help = parser_help(), conflicts_with = "regex")]
    parser: Option<String>,
    /// Read the figure with a regular expression: its first capture group (needs
    /// --higher-is-better or --lower-is-better)
    #[arg(long, value_name = "RE")]
    regex: Option<String>,
    /// The --regex figure improves upward (throughput)
    #[arg(long, conflicts_with = "lower_is_better")]
    higher_is_better: bool,
    /// The --regex figure improves downward (time, latency)
    #[arg(long)]
    lower_is_better: bool,
    /// Figure(s) for the table, by name (e.g. ops/sec, "Request 99.0th", "average rps");
    /// default: the parser's headline figure(s). All figures go to --csv and --json.
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<String>,
    /// Case name of an --a/--b comparison (the table's first column)
    #[arg(long, value_name = "NAME", default_value = "a-vs-b")]
    name: String,
    /// Load label of an --a/--b comparison (the table's second column)
    #[arg(long, value_name = "LABEL", default_value = "-")]
    load: String,
    /// Title above the table [default: the matrix file's title, the parser's name, or --name]
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
    /// Significance level of Welch's t-test (0.05: 95% confidence intervals)
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    alpha: f64,
    /// Also print seed 004's `workload A B(%gain)` table of the table's figures (on by
    /// default with --parser funclatency)
    #[arg(long)]
    gain_table: bool,
    /// Print JSON (every run and statistic) on stdout instead of the tables
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    files: ReportFiles,
}

/// Runs `lineup bench`; returns the exit status (128 + the signal after SIGINT, SIGTERM or
/// SIGHUP).
pub fn run(args: Args) -> Result<i32> {
    // Before the matrix is read or anything runs.
    args.files.check()?;
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        bail!("--alpha {} must lie between 0 and 1", args.alpha);
    }
    let (mut setups, title, file_runs, file_warmup, file_timeout) = setups_of(&args)?;
    let runs = args.runs.or(file_runs).unwrap_or(10);
    bench::limits::check_runs(runs, "--runs").map_err(|e| anyhow!(e))?;
    let warmup = args.warmup.or(file_warmup).unwrap_or(1);
    bench::limits::check_warmup(warmup, "--warmup").map_err(|e| anyhow!(e))?;
    let timeout_s = args.timeout.or(file_timeout).unwrap_or(600.0);
    bench::limits::check_timeout(timeout_s, "--timeout").map_err(|e| anyhow!(e))?;
    let timeout = (timeout_s > 0.0).then(|| Duration::from_secs_f64(timeout_s));
    run::install_interrupt_handler().map_err(|e| anyhow!(e))?;

    let steps = bench::schedule(runs, warmup);
    let total = (steps.len() * setups.len()) as u64;
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs, ETA {eta} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let mut collected: Vec<Collected> = vec![Collected::default(); setups.len()];
    let outcome = run_all(
        &mut setups,
        &steps,
        runs,
        timeout,
        &args.metrics,
        &bar,
        &mut collected,
    );
    bar.finish_and_clear();
    let interrupted = outcome?;

    let alpha = args.alpha;
    let mut comparisons: Vec<Comparison> = Vec::new();
    for (s, c) in setups.iter().zip(&collected) {
        comparisons.extend(bench::compare(s, c, alpha));
    }
    let table_rows: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| {
            if args.metrics.is_empty() {
                c.primary
            } else {
                args.metrics.contains(&c.metric)
            }
        })
        .collect();
    let done_a: usize = collected.iter().map(|c| c.len(Side::A)).sum();
    let done_b: usize = collected.iter().map(|c| c.len(Side::B)).sum();
    if interrupted && table_rows.is_empty() {
        eprintln!(
            "lineup: interrupted before any setup had a finished run on both sides ({done_a} A, \
             {done_b} B); nothing to compare"
        );
        return Ok(run::interrupt_exit_status());
    }
    let method = if interrupted {
        format!(
            "interrupted by {} after {done_a} A and {done_b} B runs (of {runs} per side and \
             setup), interleaved A B B A; the interrupted run is not counted",
            run::interrupt_words()
        )
    } else {
        let warm = match warmup {
            0 => "no warm-up".to_string(),
            1 => "after 1 warm-up".to_string(),
            n => format!("after {n} warm-ups"),
        };
        format!("{runs} per side {warm}, interleaved A B B A")
    };
    let notes = Notes {
        alpha,
        method: &method,
    };

    // Files first, each complete or absent.
    args.files.write(&comparisons, &table_rows, alpha)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let shown = Shown {
        title: &title,
        runs,
        warmup,
        interrupted,
    };
    print_report(
        &args,
        &shown,
        (&setups, &collected),
        (&comparisons, &table_rows),
        &notes,
        &mut out,
    )?;
    out.flush()?;
    if interrupted {
        eprintln!(
            "lineup: interrupted by {}: the figures are those of the {} runs finished before it",
            run::interrupt_words(),
            done_a + done_b
        );
        return Ok(run::interrupt_exit_status());
    }
    Ok(0)
}

/// The setups to run (from `--matrix FILE`, or the one `--a`/`--b` pair), the title, and
/// the matrix file's runs, warm-ups and timeout.
#[allow(clippy::type_complexity)]
fn setups_of(
    args: &Args,
) -> Result<(
    Vec<Setup>,
    String,
    Option<usize>,
    Option<usize>,
    Option<f64>,
)> {
    let cli_parser = cli_parser(args)?;
    let (setups, title, file_runs, file_warmup, file_timeout) = match &args.matrix {
        Some(path) => {
            let text = lineup::input::read_text_lossy(path)?;
            let m = matrix::parse(&text, cli_parser.as_ref())
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let title = args.title.clone().or(m.title).unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "bench".into())
            });
            (m.setups, title, m.runs, m.warmup, m.timeout)
        }
        None => {
            let (Some(a), Some(b)) = (&args.a, &args.b) else {
                bail!("give --a CMD and --b CMD, or --matrix FILE");
            };
            check_label("--name", &args.name)?;
            check_label("--load", &args.load)?;
            let parser = cli_parser.clone().unwrap_or(Parser::Wall);
            // A built-in parser names the benchmark; otherwise the case does.
            let title = args.title.clone().unwrap_or_else(|| match parser {
                Parser::Regex { .. } | Parser::Wall => args.name.clone(),
                _ => parser.name().to_string(),
            });
            let setup = Setup {
                case: args.name.clone(),
                load: args.load.clone(),
                a: a.clone(),
                b: b.clone(),
                parser,
            };
            (vec![setup], title, None, None, None)
        }
    };
    for s in &setups {
        for side in [Side::A, Side::B] {
            if s.command(side).trim().is_empty() {
                bail!(
                    "case '{}' load {}: command {} is empty",
                    s.case,
                    s.load,
                    side.letter()
                );
            }
        }
    }
    Ok((setups, title, file_runs, file_warmup, file_timeout))
}

/// What the report says about the whole run.
struct Shown<'a> {
    title: &'a str,
    runs: usize,
    warmup: usize,
    interrupted: bool,
}

/// The report on standard output: JSON, or the seeds' table (and the gain and percentile
/// tables where the parsers give them).
fn print_report(
    args: &Args,
    shown: &Shown<'_>,
    (setups, collected): (&[Setup], &[Collected]),
    (comparisons, table_rows): (&[Comparison], &[&Comparison]),
    notes: &Notes<'_>,
    out: &mut impl Write,
) -> Result<()> {
    if args.json {
        let report = Report {
            schema: 1,
            title: shown.title,
            alpha: args.alpha,
            order: "ABBA",
            runs_per_side: shown.runs,
            warmup_per_side: shown.warmup,
            interrupted: shown.interrupted,
            setups: setups
                .iter()
                .zip(collected)
                .map(|(s, c)| SetupReport {
                    case: &s.case,
                    load: &s.load,
                    a: &s.a,
                    b: &s.b,
                    parser: s.parser.name(),
                    runs_a: c.len(Side::A),
                    runs_b: c.len(Side::B),
                })
                .collect(),
            comparisons,
        };
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            table::seeds_table(shown.title, &table_rows, &notes)
        )?;
        if args.gain_table || setups.iter().any(|s| s.parser.has_gain_table()) {
            writeln!(out)?;
            write!(
                out,
                "{}",
                table::gain_table(shown.title, &table_rows, &notes)
            )?;
        }
        let percentiles: Vec<&Comparison> = setups
            .iter()
            .filter(|s| s.parser.has_percentiles())
            .flat_map(|s| {
                comparisons
                    .iter()
                    .filter(move |c| c.case == s.case && c.load == s.load)
            })
            .collect();
        if !percentiles.is_empty() {
            writeln!(out)?;
            write!(
                out,
                "{}",
                table::percentile_table(shown.title, &percentiles, &notes)
            )?;
        }
    }
    Ok(())
}

/// The runs of every setup in schedule order; `Ok(true)` when a signal stopped them.
fn run_all(
    setups: &mut [Setup],
    steps: &[bench::Step],
    runs: usize,
    timeout: Option<Duration>,
    wanted: &[String],
    bar: &ProgressBar,
    collected: &mut [Collected],
) -> Result<bool> {
    for (setup, col) in setups.iter().zip(collected.iter_mut()) {
        for step in steps {
            let which = if step.warmup {
                format!("{} warm-up {}", step.side.letter(), step.index + 1)
            } else {
                format!("{} run {}/{runs}", step.side.letter(), step.index + 1)
            };
            let whom = if setup.load == "-" {
                format!("case '{}' ({which})", setup.case)
            } else {
                format!("case '{}' load {} ({which})", setup.case, setup.load)
            };
            bar.set_message(if setup.load == "-" {
                format!("{} {which}", setup.case)
            } else {
                format!("{} {} {which}", setup.case, setup.load)
            });
            let cmd = setup.command(step.side);
            let first_line_re = match &setup.parser {
                Parser::Regex { re, .. } => Some(re),
                _ => None,
            };
            let output = match run::run_shell_matching(cmd, timeout, first_line_re) {
                Ok(o) => o,
                Err(Failure::Interrupted) => return Ok(true),
                Err(Failure::TimedOut(t)) => {
                    bail!(
                        "{whom}: `{cmd}` did not finish within {} s (--timeout)",
                        t.as_secs_f64()
                    )
                }
                Err(Failure::Spawn(e)) => bail!("{whom}: cannot run `{cmd}` with /bin/sh: {e}"),
            };
            if !output.status.success() {
                bail!(
                    "{whom}: `{cmd}` {}: {}",
                    output.status_words(),
                    first_line(&output.stderr.head(), &output.stdout.head())
                );
            }
            let metrics = setup
                .parser
                .parse(&output.text(), output.elapsed.as_secs_f64())
                .map_err(|e| {
                    anyhow!(
                        "{whom}: {} parser cannot read the output of `{cmd}`: {e}; it begins: {}",
                        setup.parser.name(),
                        first_line(&output.stdout.head(), &output.stderr.head())
                    )
                })?;
            for name in wanted {
                if !metrics.iter().any(|m| &m.name == name) {
                    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
                    bail!(
                        "{whom}: no figure '{name}' in the output of `{cmd}` (the {} parser found: {})",
                        setup.parser.name(),
                        names.join(", ")
                    );
                }
            }
            if !step.warmup {
                col.runs[step.side.index()].push(metrics);
            }
            bar.inc(1);
        }
    }
    Ok(false)
}

/// The first non-empty line of `first`, else of `second`, for one-line errors.
fn first_line(first: &str, second: &str) -> String {
    let line = first
        .lines()
        .chain(second.lines())
        .map(str::trim)
        .find(|l| !l.is_empty());
    match line {
        Some(l) if l.chars().count() > 200 => {
            format!("{}...", l.chars().take(200).collect::<String>())
        }
        Some(l) => l.to_string(),
        None => "(no output)".to_string(),
    }
}

fn cli_parser(args: &Args) -> Result<Option<Parser>> {
    let direction = match (args.higher_is_better, args.lower_is_better) {
        (true, _) => Some(Direction::HigherIsBetter),
        (_, true) => Some(Direction::LowerIsBetter),
        _ => None,
    };
    if let Some(re) = &args.regex {
        let Some(direction) = direction else {
            bail!("--regex needs --higher-is-better or --lower-is-better");
        };
        return Parser::regex(re, direction)
            .map(Some)
            .map_err(|e| anyhow!("--regex: {e}"));
    }
    if direction.is_some() {
        bail!(
            "--higher-is-better and --lower-is-better go with --regex; built-in parsers know \
             the direction of their figures"
        );
    }
    match &args.parser {
        None => Ok(None),
        Some(name) if name == "regex" => bail!("--parser regex: give --regex RE instead"),
        Some(name) => Parser::by_name(name).map(Some).ok_or_else(|| {
            anyhow!(
                "--parser {name}: unknown parser (known: {}, or --regex RE)",
                PARSERS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            )
        }),
    }
}

fn check_label(flag: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.contains(char::is_whitespace) {
        bail!("{flag} '{s}': must be one word (it is a column of the table)");
    }
    Ok(())
}
