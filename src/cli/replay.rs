//! `lineup replay`: generate a C microbenchmark that replays the profile's access mix on each
//! layout, compile it, run the layouts interleaved, and set the measured change beside the
//! model's prediction.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use lineup::analysis::optimize;
use lineup::bench::parsers::Direction;
use lineup::bench::replay::{self, Variant};
use lineup::bench::stats::{self, Summary, Welch};
use lineup::bench::{Comparison, run as bench_run, table};

use super::predict::{candidate_name, load_candidate};
use super::report_files::ReportFiles;
use super::subject::{self, ModelArgs, SubjectArgs};

const ALPHA: f64 = 0.05;

#[derive(clap::Args)]
#[command(
    about = "Measure layouts of one struct with a generated C microbenchmark that replays the profile",
    long_about = "Generates a C program that replays the profile's loads, stores and atomic \
                  read-modify-writes on one instance of the struct per layout (the current one, \
                  lineup's, and any --layout candidate), compiles it with the system compiler, \
                  runs the layouts interleaved on pinned threads, and reports the measured \
                  change of throughput next to the cost model's prediction (docs/replay.md).",
    after_help = "Examples:\n  \
                  lineup replay --type task_group --btf data/vmlinux-6.18.44.btf \\\n      --c2c tests/data/c2c/seed000_paste.txt\n  \
                  lineup replay --type task_group --c2c tests/data/c2c/seed000_paste.txt \\\n      --layout examples/seeds/000/seed_fix.h --runs 20 --duration-ms 300\n  \
                  lineup replay --type task_group --c2c tests/data/c2c/seed000_paste.txt --self-test\n  \
                  lineup replay --type task_group --c2c tests/data/c2c/seed000_paste.txt --atomic update_load_avg\n  \
                  lineup replay --type task_group --c2c tests/data/c2c/seed000_paste.txt --csv replay.csv --svg plots/\n  \
                  lineup replay --type task_group --c2c tests/data/c2c/seed000_paste.txt --emit-c replay.c --runs 0"
)]
pub struct Args {
    #[command(flatten)]
    subject: SubjectArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// A candidate layout: C declaration or pahole text (repeatable)
    #[arg(long = "layout", value_name = "FILE")]
    layouts: Vec<PathBuf>,
    /// Stores by this function are atomic read-modify-writes (`lock add` for the kernel's
    /// atomic_long_add, which perf c2c counts as a store); repeatable; `all` for every store
    #[arg(long = "atomic", value_name = "FUNCTION")]
    atomic: Vec<String>,
    /// Leave lineup's own optimized layout out
    #[arg(long)]
    no_lineup: bool,
    /// Replay the current layout against itself (a check of the harness: no difference
    /// should show)
    #[arg(long)]
    self_test: bool,
    /// Threads (default: the CPUs this process may run on)
    #[arg(long, value_name = "N")]
    threads: Option<u32>,
    /// Length of one run in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 200)]
    duration_ms: u64,
    /// Measured runs per layout (0: generate and compile only)
    #[arg(long, value_name = "N", default_value_t = 10)]
    runs: usize,
    /// Iterations of private arithmetic between two accesses to the struct (0: back to back;
    /// real code does other work between its accesses)
    #[arg(long, value_name = "N", default_value_t = 0)]
    think: u32,
    /// Warm-up runs per layout, not counted
    #[arg(long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// Write the generated C source to FILE
    #[arg(long, value_name = "FILE")]
    emit_c: Option<PathBuf>,
    /// C compiler
    #[arg(long, value_name = "CC", default_value = "cc")]
    cc: String,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    files: ReportFiles,
}

#[derive(Serialize)]
struct VariantReport {
    layout: String,
    size: u64,
    predicted_cycles: f64,
    /// Change of modeled cycles against the first layout, in percent (lower is better).
    predicted_change_pct: Option<f64>,
    /// Operations per second while all threads ran together, per run (the figure).
    runs: Vec<f64>,
    /// Operations per second of thread CPU time, per run.
    runs_cpu: Vec<f64>,
    /// Share of each run's operations made while all threads ran together.
    corun_share: Vec<f64>,
    /// Runs in which the threads never ran together: they have no figure and are not in
    /// `runs` (a machine busy with other work).
    runs_without_corun_time: usize,
    summary: Option<Summary>,
    /// Change of throughput against the first layout, in percent (higher is better).
    measured_change_pct: Option<f64>,
    welch: Option<Welch>,
    significant: bool,
}

/// Every count and duration in its range, before any work (see `lineup::bench::limits`).
fn check_ranges(args: &Args) -> Result<()> {
    use lineup::bench::limits::{self, MAX_DURATION_MS, MAX_THINK, MAX_THREADS};
    if args.duration_ms == 0 {
        bail!("--duration-ms 0: a run needs some time");
    }
    limits::check_range(args.duration_ms, 1, MAX_DURATION_MS, "--duration-ms", "ms")
        .map_err(anyhow::Error::msg)?;
    if args.runs == 1 {
        bail!("--runs 1: a t-test needs at least 2 runs per layout (0: compile only)");
    }
    if args.runs != 0 {
        limits::check_runs(args.runs, "--runs").map_err(anyhow::Error::msg)?;
    }
    limits::check_warmup(args.warmup, "--warmup").map_err(anyhow::Error::msg)?;
    limits::check_range(args.think, 0, MAX_THINK, "--think", "iterations")
        .map_err(anyhow::Error::msg)?;
    if let Some(t) = args.threads {
        if t == 0 {
            bail!("--threads 0: at least one thread");
        }
        limits::check_range(t, 1, MAX_THREADS, "--threads", "threads")
            .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Runs `lineup replay`; returns the exit status (128 + the signal after SIGINT, SIGTERM or
/// SIGHUP, with the table of the runs finished before it).
pub fn run(args: Args) -> Result<i32> {
    check_ranges(&args)?;
    let emit_c = super::output::check_opt("--emit-c", args.emit_c.as_deref())?;
    args.files.check()?;
    let mut profile = args.subject.evidence.load(&args.subject.pick)?;
    let opened = args.subject.source.for_profile(&profile).open()?;
    let types = opened.types()?;
    let id = subject::find_type(&types, &opened.label, &args.subject.type_name)?;
    let size = types.composite(id).map(|c| c.size).unwrap_or(0);
    let ev = subject::gather(
        &mut profile,
        (&types, &opened.label),
        id,
        &args.subject.type_name,
        size,
        args.subject.line_offset,
    )?;
    let model = args.model.build(&types, id, &profile, &ev.accesses)?;
    if model.streams.is_empty() {
        bail!(
            "no access of the profile falls on a member of struct {}",
            args.subject.type_name
        );
    }

    let mut variants = vec![Variant {
        name: "current".to_string(),
        placement: model.current.clone(),
    }];
    if args.self_test {
        variants.push(Variant {
            name: "current-again".to_string(),
            placement: model.current.clone(),
        });
    } else {
        if !args.no_lineup {
            let plan = optimize::optimize(
                &model.units,
                &model.streams,
                &model.current,
                model.layout.forced_align.unwrap_or(1),
                &optimize::Constraints::default(),
                model.cls,
                &model.machine,
                &model.queueing,
            )
            .map_err(|e| anyhow::anyhow!("struct {}: {e}", args.subject.type_name))?;
            variants.push(Variant {
                name: "lineup".to_string(),
                placement: plan.placement,
            });
        }
        for path in &args.layouts {
            variants.push(Variant {
                name: candidate_name(path),
                placement: load_candidate(&model, &types, &args.subject.type_name, path)?.placement,
            });
        }
    }
    if variants.len() < 2 {
        bail!("nothing to compare: give --layout FILE, drop --no-lineup, or use --self-test");
    }

    let profile_cpus = profile
        .provenance
        .machine
        .cpus
        .unwrap_or(model.machine.cpus)
        .max(1);
    let mut streams =
        replay::replay_streams(&model.units, &model.layout, &ev.accesses, profile_cpus);
    for f in &args.atomic {
        if f != "all" && !streams.iter().any(|s| &s.path == f) {
            bail!("--atomic {f}: no access of the profile comes from a function of that name");
        }
    }
    for s in &mut streams {
        if args.atomic.iter().any(|f| f == "all" || *f == s.path) {
            s.rmw += s.stores;
            s.stores = 0.0;
        }
    }
    let threads = match args.threads {
        Some(0) => bail!("--threads 0: at least one thread"),
        Some(n) => n,
        None => std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
    };
    let evidence = subject::evidence_label(&profile);
    let source = replay::generate(&replay::Replay {
        type_name: &args.subject.type_name,
        units: &model.units,
        streams: &streams,
        variants: &variants,
        profile_cpus,
        threads,
        cacheline_size: model.cls,
        evidence: &evidence,
    });
    if let Some(out) = &emit_c {
        out.write(source.as_bytes())?;
    }

    // From here on a signal must not kill lineup outright: the temporary directory goes,
    // and the running replay's process group with it.
    bench_run::install_interrupt_handler().map_err(anyhow::Error::msg)?;
    let dir = std::env::temp_dir().join(format!("lineup-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let result = measure(&args, &dir, &source, variants.len());
    let _ = std::fs::remove_dir_all(&dir);
    let Measured {
        runs,
        runs_cpu,
        corun_share,
        no_corun,
        interrupted,
    } = result?;
    if interrupted && runs.iter().any(|r| r.len() < 2) {
        eprintln!(
            "lineup: interrupted before every layout had 2 finished runs ({}); nothing to compare",
            runs.iter()
                .zip(&variants)
                .map(|(r, v)| format!("{} {}", v.name, r.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(bench_run::interrupt_exit_status());
    }

    // Predictions.
    let predicted: Vec<f64> = variants
        .iter()
        .map(|v| model.evaluate(&v.placement).total_cycles())
        .collect();
    let base_cycles = predicted[0];
    let load = format!("{threads}-threads");
    let comparisons: Vec<Comparison> = (1..variants.len())
        .filter_map(|i| comparison(&variants[i].name, &load, &runs[0], &runs[i]))
        .collect();
    let reports: Vec<VariantReport> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let c = (i > 0)
                .then(|| comparisons.iter().find(|c| c.case == v.name))
                .flatten();
            VariantReport {
                layout: v.name.clone(),
                size: v.placement.size,
                predicted_cycles: predicted[i],
                predicted_change_pct: (base_cycles > 0.0)
                    .then(|| stats::change_pct(base_cycles, predicted[i])),
                runs: runs[i].clone(),
                runs_cpu: runs_cpu[i].clone(),
                corun_share: corun_share[i].clone(),
                runs_without_corun_time: no_corun[i],
                summary: stats::summarize(&runs[i]),
                measured_change_pct: c.map(|c| c.change_pct),
                welch: c.and_then(|c| c.welch),
                significant: c.is_some_and(|c| c.significant),
            }
        })
        .collect();

    let rows: Vec<&Comparison> = comparisons.iter().collect();
    args.files.write(&comparisons, &rows, ALPHA)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let status = if interrupted {
        eprintln!(
            "lineup: interrupted by {}: the figures are those of the {} runs finished before it",
            bench_run::interrupt_words(),
            runs.iter().map(Vec::len).sum::<usize>()
        );
        bench_run::interrupt_exit_status()
    } else {
        0
    };
    if args.json {
        let v = serde_json::json!({
            "schema": 1,
            "interrupted": interrupted,
            "layout_source": opened.source,
            "type_name": args.subject.type_name,
            "machine": model.machine,
            "cacheline_size": model.cls,
            "threads": threads,
            "profile_cpus": profile_cpus,
            "duration_ms": args.duration_ms,
            "think": args.think,
            "runs_per_layout": args.runs,
            "warmup_per_layout": args.warmup,
            "alpha": ALPHA,
            "figure": "operations per second while all threads ran together, summed over threads",
            "streams": streams,
            "layouts": reports,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(status);
    }
    writeln!(out, "{}", opened.source.describe())?;
    if args.runs == 0 {
        writeln!(
            out,
            "generated and compiled the replay of struct {} ({} layouts, {} streams, {threads} threads); --runs 0: nothing measured",
            args.subject.type_name,
            variants.len(),
            streams.len()
        )?;
        return Ok(0);
    }
    let title = format!("replay {}", args.subject.type_name);
    let done = if interrupted {
        format!(
            "interrupted by {} after {} of {} runs per layout",
            bench_run::interrupt_words(),
            runs.iter().map(Vec::len).min().unwrap_or(0),
            args.runs
        )
    } else {
        format!("{} runs", args.runs)
    };
    let dropped: usize = no_corun.iter().sum();
    let dropped = if dropped > 0 {
        format!(
            "; {dropped} run(s) in which the threads never ran together have no figure and are \
             not counted"
        )
    } else {
        String::new()
    };
    let method = format!(
        "{done} of {} ms per layout after {} warm-up, interleaved A B B A, {threads} pinned threads; \
         the first layout ({}) is A{dropped}",
        args.duration_ms, args.warmup, variants[0].name
    );
    out.write_all(
        table::seeds_table(
            &title,
            &rows,
            &table::Notes {
                alpha: ALPHA,
                method: &method,
            },
        )
        .as_bytes(),
    )?;
    writeln!(
        out,
        "\nmodel vs measurement on {} ({}): predicted change of modeled cycles (lower is better) \
         beside the measured change of throughput (higher is better)",
        model.machine.name, model.machine.description
    )?;
    writeln!(
        out,
        "{:<16} {:>16} {:>14} {:>14} {:>24} {:>8}",
        "layout", "throughput ops/s", "predicted", "measured", "95% CI of measured", "agree"
    )?;
    for r in &reports {
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
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(
        out,
        "throughput: operations per second while all threads ran together (docs/replay.md), \
         summed over threads; agree: the measured change is significant and in the predicted \
         direction (or neither changed)"
    )?;
    Ok(status)
}

/// Per layout, the runs' figures; `interrupted` when a signal cut the runs short.
struct Measured {
    /// Operations per second while all threads ran together.
    runs: Vec<Vec<f64>>,
    /// Operations per second of thread CPU time.
    runs_cpu: Vec<Vec<f64>>,
    /// Share of operations made while all threads ran together.
    corun_share: Vec<Vec<f64>>,
    /// Runs without a moment when all threads ran together (no figure; not counted).
    no_corun: Vec<usize>,
    interrupted: bool,
}

/// Compiles the source and runs every layout. A signal stops the runs; those finished count.
fn measure(args: &Args, dir: &std::path::Path, source: &str, variants: usize) -> Result<Measured> {
    let c_path = dir.join("replay.c");
    let bin = dir.join("replay");
    std::fs::write(&c_path, source)
        .with_context(|| format!("{}: cannot write", c_path.display()))?;
    replay::compile(&args.cc, &c_path, &bin).map_err(anyhow::Error::msg)?;
    let mut runs = vec![Vec::new(); variants];
    let mut wall = vec![Vec::new(); variants];
    let mut share = vec![Vec::new(); variants];
    let mut no_corun = vec![0usize; variants];
    let mut interrupted = bench_run::interrupted();
    if args.runs == 0 || interrupted {
        return Ok(Measured {
            runs,
            runs_cpu: wall,
            corun_share: share,
            no_corun,
            interrupted,
        });
    }
    let order = replay::schedule(variants, args.runs, args.warmup);
    let bar = ProgressBar::with_draw_target(Some(order.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs {msg}",
        )
        .expect("valid template"),
    );
    let duration = Duration::from_millis(args.duration_ms);
    for (v, warm) in order {
        let figures = match replay::run_variant(&bin, v, duration, args.think) {
            Ok(f) => f,
            Err(_) if bench_run::interrupted() => {
                interrupted = true;
                break;
            }
            Err(e) => {
                bar.finish_and_clear();
                bail!(e);
            }
        };
        if !warm && !figures.has_corun_time() {
            // No moment when all threads ran together: the figure is undefined, not 0.
            no_corun[v] += 1;
        } else if !warm {
            runs[v].push(figures.ops_per_corun_second());
            wall[v].push(figures.ops_per_cpu_second());
            share[v].push(figures.corun_share());
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(Measured {
        runs,
        runs_cpu: wall,
        corun_share: share,
        no_corun,
        interrupted,
    })
}

/// The throughput of layout `name` against the first layout's, as `lineup bench` compares.
fn comparison(name: &str, load: &str, a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (sa, sb) = (stats::summarize(a)?, stats::summarize(b)?);
    let welch = stats::welch_from(&sa, &sb, 1.0 - ALPHA);
    Some(Comparison {
        case: name.to_string(),
        load: load.to_string(),
        metric: "throughput".to_string(),
        group: String::new(),
        label: "throughput".to_string(),
        unit: "ops/s".to_string(),
        direction: Direction::HigherIsBetter,
        primary: true,
        a_runs: a.to_vec(),
        b_runs: b.to_vec(),
        change_pct: stats::change_pct(sa.mean, sb.mean),
        gain_pct: stats::gain_pct(sa.mean, sb.mean, true),
        significant: stats::significant(welch.as_ref(), stats::change_pct(sa.mean, sb.mean), ALPHA),
        welch,
        a: sa,
        b: sb,
    })
}
