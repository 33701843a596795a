//! `lineup calibrate`: measure this machine's cache-line transfer and load latencies and
//! write a machine file that `--machine FILE` reads (and `--machine host` uses from the cache).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use lineup::analysis::machine::{self, Calibration, MachineModel, Measured};
use lineup::bench::calibrate::{self as cal, Effort};
use lineup::readers::host::{self, PairClass};

#[derive(clap::Args)]
#[command(
    about = "Measure this machine's cache-line transfer and load latencies into a machine model",
    long_about = "Measure this machine: the topology from sysfs; the one-way cache-line \
                  transfer latency per class of CPU pair (SMT siblings, same LLC, other LLC of \
                  the same node, other node) by ping-pong on one line between two pinned \
                  threads; L1, L2, LLC and DRAM load latencies by chasing pointers through a \
                  random cycle sized to each level. Writes a machine file (the format of \
                  data/machines.toml, plus how it was measured) that `--machine FILE` reads, \
                  and keeps a copy in lineup's cache ($LINEUP_CACHE_DIR, \
                  $XDG_CACHE_HOME/lineup or ~/.cache/lineup) under a key of the CPU model and \
                  topology, which `--machine host` then uses instead of generic latencies. A \
                  class this machine lacks is reported as not measured, never invented.",
    after_help = "Examples:\n  lineup calibrate                       # measure; --machine host uses it from now on\n  \
                  lineup calibrate --quick -o machine.toml\n  \
                  lineup predict --type task_group --c2c c2c.txt --machine machine.toml\n  \
                  lineup calibrate --cpus 0-3,8-11 --json"
)]
pub struct Args {
    /// Also write the machine file here
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the result as JSON (schema key `schema`; docs/schema/calibrate.schema.json)
    #[arg(long)]
    json: bool,
    /// Measure only on these CPUs (a sysfs list such as 0-3,8); such a partial calibration
    /// is not cached for `--machine host`
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Fewer repetitions, one pair per class, smaller buffers (a few seconds)
    #[arg(long)]
    quick: bool,
    /// Do not keep the result in the cache for `--machine host`
    #[arg(long)]
    no_cache: bool,
}

#[derive(Serialize)]
struct Document<'a> {
    schema: u32,
    machine: &'a MachineModel,
    calibration: &'a Calibration,
    /// The `-o` file, when written.
    file: Option<String>,
    /// The cached copy `--machine host` uses, when written.
    cache: Option<String>,
}

pub fn run(args: Args) -> Result<()> {
    let out = super::output::check_opt("-o", args.output.as_deref())?;
    let sys = Path::new("/sys");
    let topology = host::read_topology(sys);
    let online: Vec<u32> = topology.cpus.iter().map(|c| c.cpu).collect();
    let cpus = chosen_cpus(args.cpus.as_deref(), &online)?;
    let partial = cpus.len() < online.len();
    let effort = if args.quick {
        Effort::quick()
    } else {
        Effort::full()
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = host::cpu_model(&cpuinfo);
    let key = topology.key(&cpu_model);
    let started = Instant::now();
    let m = measure(&topology, &cpus, &effort, &cpuinfo);

    let date = lineup::clock::utc_now();
    let guess = host::read_host(sys);
    let (mut model, mut derived) = cal::machine_from(&guess, &m.transfers, &m.loads);
    derived.push(cal::machine_pairs(&mut model, &m.neighbours));
    model.name = "calibrated".to_string();
    model.description = format!(
        "{cpu_model}: {}; measured by lineup calibrate{} on {}",
        guess.description,
        if args.quick { " --quick" } else { "" },
        date
    );
    let calibration = Calibration {
        schema: 1,
        date,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".to_string()),
        cpu_model,
        key: key.clone(),
        cpus: host::format_cpu_list(&cpus),
        quick: args.quick,
        ghz: (m.ghz * 1000.0).round() / 1000.0,
        ghz_method: m.ghz_method,
        method: method_text(&effort, m.line),
        transfer: m.transfers.iter().map(|(_, _, t)| t.clone()).collect(),
        load: m.loads,
        neighbours: m.neighbours,
        absent: m.absent,
        derived,
    };
    let text = machine::machine_file_text(&model, Some(&calibration));
    // What is written must read back as what was measured.
    let (back, _) = machine::parse_machine_file(&text)
        .map_err(|e| anyhow!("calibrate: the machine file does not read back: {e}"))?;
    debug_assert_eq!(back, model);

    let cache = if args.no_cache || partial {
        None
    } else {
        let dir = lineup::record::cc::checked_cache_dir().map_err(|e| anyhow!(e))?;
        let path = host::calibration_path(&dir, &key);
        Some(super::output::Output::check("cache", &path)?)
    };
    let mut writes: Vec<(&super::output::Output, &[u8])> = Vec::new();
    if let Some(o) = &out {
        writes.push((o, text.as_bytes()));
    }
    if let Some(c) = &cache {
        writes.push((c, text.as_bytes()));
    }
    super::output::commit(&writes)?;

    let shown =
        |o: &Option<super::output::Output>| o.as_ref().map(|o| o.path().display().to_string());
    if args.json {
        let doc = Document {
            schema: 1,
            machine: &model,
            calibration: &calibration,
            file: shown(&out),
            cache: shown(&cache),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    print!(
        "{}",
        report(
            &model,
            &calibration,
            &m.transfers,
            started.elapsed(),
            shown(&out),
            shown(&cache),
            partial
        )
    );
    Ok(())
}

/// The CPUs to measure on: `--cpus` when given (each online and allowed), else every
/// online CPU this process may run on.
fn chosen_cpus(list: Option<&str>, online: &[u32]) -> Result<Vec<u32>> {
    let affinity = cal::allowed_cpus();
    let usable: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| affinity.is_empty() || affinity.contains(c))
        .collect();
    let cpus: Vec<u32> = match list {
        Some(list) => {
            let want = host::try_parse_cpu_list(list)
                .filter(|l| !l.is_empty())
                .ok_or_else(|| anyhow!("--cpus {list}: not a CPU list such as 0-3,8"))?;
            if let Some(bad) = want.iter().find(|c| !usable.contains(c)) {
                bail!(
                    "--cpus {list}: CPU {bad} is not one lineup may run on (online and allowed: {})",
                    host::format_cpu_list(&usable)
                );
            }
            want
        }
        None => usable,
    };
    if cpus.is_empty() {
        bail!("calibrate: no online CPU that this process may run on");
    }
    Ok(cpus)
}

/// What one calibration measured.
struct Measurements {
    ghz: f64,
    ghz_method: String,
    /// Per class of CPU pair: the class, how many pairs the machine has of it, the latency.
    transfers: Vec<(PairClass, u64, Measured)>,
    loads: Vec<Measured>,
    /// Two writers one line, one aligned pair and two pairs apart (`cal::neighbours`).
    neighbours: Vec<Measured>,
    /// What was not measured, and why.
    absent: Vec<String>,
    /// The line size the loads chased.
    line: u64,
}

/// The clock, the transfer latency of each class of CPU pair and the load latency of each
/// cache level, with a progress bar on standard error.
fn measure(
    topology: &host::Topology,
    cpus: &[u32],
    effort: &Effort,
    cpuinfo: &str,
) -> Measurements {
    let pairs = topology.representative_pairs(Some(cpus), effort.pairs_per_class);
    let (sizes, mut absent) = cal::chase_sizes(topology, effort.max_dram_bytes);
    absent.splice(0..0, topology.absent_classes(Some(cpus)));
    let steps = 2 + pairs.iter().map(|p| p.picked.len()).sum::<usize>() + sizes.len();
    let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));

    bar.set_message("core clock");
    let (ghz, ghz_method) = cal::clock_ghz(cpus[0], cpuinfo);
    bar.inc(1);

    let mut transfers: Vec<(PairClass, u64, Measured)> = Vec::new();
    for host::ClassPairs {
        class,
        count,
        picked: reps,
    } in &pairs
    {
        let mut medians = Vec::new();
        let mut samples = 0;
        let mut used = Vec::new();
        for &(a, b) in reps {
            bar.set_message(format!("{}: CPUs {a} and {b}", class.name()));
            match cal::ping_pong(a, b, effort) {
                Ok((m, n)) => {
                    medians.extend(m);
                    samples += n;
                    used.push(vec![a, b]);
                }
                Err(e) => absent.push(format!("{} CPUs {a},{b}: not measured, {e}", class.name())),
            }
            bar.inc(1);
        }
        if !used.is_empty() {
            let m = cal::summarize(class.name(), used, None, medians, samples, ghz);
            transfers.push((*class, *count, m));
        }
    }
    let line = topology
        .caches()
        .first()
        .map_or(64, |c| c.line)
        .clamp(16, 4096);
    // The prefetcher pairs lines in a core's L2: two cores (SMT siblings share it), of the
    // nearest class that has them.
    let tried: Vec<(u32, u32)> = pairs
        .iter()
        .find(|p| p.class != PairClass::SmtSiblings)
        .map(|p| p.picked.clone())
        .unwrap_or_default();
    bar.set_message("adjacent lines");
    let (neighbours, not_kept) = cal::neighbours_best(&tried, line, effort, ghz);
    absent.extend(not_kept);
    bar.inc(1);
    let mut loads: Vec<Measured> = Vec::new();
    let _ = cal::pin(cpus[0]);
    for (name, bytes) in &sizes {
        bar.set_message(format!("{name}: chasing {} KiB", bytes >> 10));
        let (medians, n) = cal::chase(*bytes, line, effort);
        loads.push(cal::summarize(
            name,
            vec![vec![cpus[0]]],
            Some(*bytes),
            medians,
            n,
            ghz,
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Measurements {
        ghz,
        ghz_method,
        transfers,
        loads,
        neighbours,
        absent,
        line,
    }
}

/// How the figures were measured, as the machine file records it.
fn method_text(effort: &Effort, line: u64) -> String {
    format!(
        "transfer: one-way latency = round trip / 2 of a ping-pong on one 128-byte-aligned \
         atomic between two threads pinned with sched_setaffinity, timed in batches of 64 \
         round trips, median over batches per repetition, median over {} repetitions of \
         {} ms per pair; load: pointer chase through a random cycle of {line}-byte lines, \
         median of 16 slices per repetition over {} repetitions (includes TLB misses); \
         adjacent lines: two pinned threads each add to its own counter with a locked add, the two \
         counters on one line, on the two lines of one aligned pair, and two pairs apart, \
         ns per increment (mean of the threads), the three interleaved, median over the \
         repetitions; cycles = ns x ghz",
        effort.repetitions,
        effort.repetition.as_millis(),
        effort.repetitions
    )
}

fn report(
    m: &MachineModel,
    c: &Calibration,
    transfers: &[(PairClass, u64, Measured)],
    took: Duration,
    file: Option<String>,
    cache: Option<String>,
    partial: bool,
) -> String {
    let mut s = format!(
        "lineup calibrate: {} on CPUs {} ({}), kernel {}; clock {:.2} GHz ({}); {:.1} s\n\n",
        c.cpu_model,
        c.cpus,
        m.description
            .split("; measured")
            .next()
            .unwrap_or_default()
            .trim_start_matches(&format!("{}: ", c.cpu_model)),
        c.kernel,
        c.ghz,
        c.ghz_method,
        took.as_secs_f64()
    );
    s.push_str(&format!(
        "{:<24} {:>7} {:>9} {:>8} {:>17} {:>10}\n",
        "one-way transfer", "pairs", "ns", "cycles", "spread ns", "transfers"
    ));
    for (_, count, x) in transfers {
        s.push_str(&format!(
            "{:<24} {:>7} {:>9.1} {:>8.1} {:>17} {:>10}\n",
            x.what,
            format!("{}/{count}", x.cpus.len()),
            x.ns,
            x.cycles,
            format!("{:.1}-{:.1}", x.spread_ns[0], x.spread_ns[1]),
            x.samples
        ));
    }
    s.push_str(&format!(
        "\n{:<24} {:>7} {:>9} {:>8} {:>17} {:>10}\n",
        "load (pointer chase)", "KiB", "ns", "cycles", "spread ns", "loads"
    ));
    for x in &c.load {
        s.push_str(&format!(
            "{:<24} {:>7} {:>9.2} {:>8.1} {:>17} {:>10}\n",
            x.what,
            x.bytes.unwrap_or(0) >> 10,
            x.ns,
            x.cycles,
            format!("{:.2}-{:.2}", x.spread_ns[0], x.spread_ns[1]),
            x.samples
        ));
    }
    if !c.neighbours.is_empty() {
        s.push_str(&format!(
            "\n{:<24} {:>7} {:>9} {:>8} {:>17} {:>10}\n",
            "two writers", "CPUs", "ns", "cycles", "spread ns", "increments"
        ));
        for x in &c.neighbours {
            let cpus: Vec<String> = x.cpus.iter().flatten().map(u32::to_string).collect();
            s.push_str(&format!(
                "{:<24} {:>7} {:>9.2} {:>8.1} {:>17} {:>10}\n",
                x.what,
                cpus.join(","),
                x.ns,
                x.cycles,
                format!("{:.2}-{:.2}", x.spread_ns[0], x.spread_ns[1]),
                x.samples
            ));
        }
    }
    if !c.absent.is_empty() {
        s.push('\n');
        for a in &c.absent {
            s.push_str(&format!("{a}\n"));
        }
    }
    s.push_str(&format!(
        "\nmachine model (cycles): l2_hit {} llc_hit {} local_hitm {} remote_hitm {}\n",
        m.l2_hit, m.llc_hit, m.local_hitm, m.remote_hitm
    ));
    for d in &c.derived {
        s.push_str(&format!("  {d}\n"));
    }
    s.push('\n');
    if let Some(f) = file {
        s.push_str(&format!("written: {f} (use with --machine {f})\n"));
    }
    match cache {
        Some(p) => s.push_str(&format!("cached for --machine host: {p}\n")),
        None if partial => {
            s.push_str("not cached for --machine host: measured on a part of the CPUs (--cpus)\n")
        }
        None => s.push_str("not cached for --machine host (--no-cache)\n"),
    }
    s
}
