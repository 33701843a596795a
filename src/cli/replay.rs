//! `lineup replay`: generate a C microbenchmark that replays the profile's access mix on each
//! layout, compile it, run the layouts interleaved, and set the measured change beside the
//! model's prediction.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use lineup::analysis::prediction;
use lineup::bench::replay;
use lineup::bench::replay_compare::{self, ALPHA, Measured, Progress};
use lineup::bench::{Comparison, run as bench_run};
use lineup::emit;

use super::report_files::ReportFiles;
use super::subject::{self, ModelArgs, SubjectArgs};

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
    let type_name = &args.subject.type_name;
    let id = subject::find_type(&types, &opened.label, type_name)?;
    let size = types.composite(id).map(|c| c.size).unwrap_or(0);
    let ev = subject::gather(
        &mut profile,
        (&types, &opened.label),
        id,
        type_name,
        size,
        (
            args.subject.line_offset,
            args.subject.evidence.earlier(&args.subject.pick)?,
        ),
    )?;
    let model = args.model.build(&types, id, &profile, &ev.accesses)?;
    prediction::require_streams(&model, type_name).map_err(anyhow::Error::msg)?;
    let variants = replay_compare::variants(
        &model,
        &types,
        type_name,
        (args.self_test, !args.no_lineup),
        &args.layouts,
    )
    .map_err(anyhow::Error::msg)?;
    let profile_cpus = replay_compare::profile_cpus(&profile, &model);
    let streams = replay_compare::streams(&model, &ev.accesses, profile_cpus, &args.atomic)
        .map_err(anyhow::Error::msg)?;
    let threads = match args.threads {
        Some(0) => bail!("--threads 0: at least one thread"),
        Some(n) => n,
        None => std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
    };
    let evidence = subject::evidence_label(&profile);
    let source = replay::generate(&replay::Replay {
        type_name,
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
    let measured = result?;
    let interrupted = measured.interrupted;
    if interrupted && measured.runs.iter().any(|r| r.len() < 2) {
        eprintln!(
            "lineup: interrupted before every layout had 2 finished runs ({}); nothing to compare",
            measured
                .runs
                .iter()
                .zip(&variants)
                .map(|(r, v)| format!("{} {}", v.name, r.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(bench_run::interrupt_exit_status());
    }

    let load = format!("{threads}-threads");
    let (comparisons, reports) = replay_compare::reports(&model, &variants, &measured, &load);
    let rows: Vec<&Comparison> = comparisons.iter().collect();
    args.files.write(&comparisons, &rows, ALPHA)?;

    let mut out = std::io::stdout().lock();
    let status = if interrupted {
        eprintln!(
            "lineup: interrupted by {}: the figures are those of the {} runs finished before it",
            bench_run::interrupt_words(),
            measured.runs.iter().map(Vec::len).sum::<usize>()
        );
        bench_run::interrupt_exit_status()
    } else {
        0
    };
    let settings = emit::replay::Settings {
        threads,
        profile_cpus,
        duration_ms: args.duration_ms,
        think: args.think,
        runs: args.runs,
        warmup: args.warmup,
    };
    if args.json {
        let v = emit::replay::json(
            &opened.source,
            type_name,
            &model,
            &settings,
            (interrupted, &streams),
            &reports,
        );
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(status);
    }
    if args.runs == 0 {
        let text = emit::replay::compiled_only_text(
            &opened.source,
            type_name,
            &settings,
            variants.len(),
            streams.len(),
        );
        out.write_all(text.as_bytes())?;
        return Ok(0);
    }
    let signal = interrupted.then(bench_run::interrupt_words);
    let text = emit::replay::text(
        &opened.source,
        (type_name, &model),
        &settings,
        (&variants, &measured, signal),
        &rows,
        &reports,
    );
    out.write_all(text.as_bytes())?;
    Ok(status)
}

/// Compiles the source and runs every layout ([`replay_compare::measure`]), with a
/// progress bar on stderr.
fn measure(args: &Args, dir: &std::path::Path, source: &str, variants: usize) -> Result<Measured> {
    let runs = replay_compare::Runs {
        runs: args.runs,
        warmup: args.warmup,
        duration: Duration::from_millis(args.duration_ms),
        think: args.think,
    };
    let mut bar: Option<ProgressBar> = None;
    let mut progress = |p: Progress| match p {
        Progress::Starting(total) => {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs {msg}",
                )
                .expect("valid template"),
            );
            bar = Some(b);
        }
        Progress::RunDone => {
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
        Progress::Finished => {
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
        }
    };
    replay_compare::measure(&args.cc, dir, source, variants, &runs, &mut progress)
        .map_err(anyhow::Error::msg)
}
