//! `lineup import` and the evidence flags shared with `diagnose`: read c2c text, perf script
//! samples, perf.data itself, a perf data-type report, a TOML sketch or a saved profile into one access
//! profile.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use lineup::profile::{self, Profile};

/// The evidence flags. Each may be given more than once, and kinds may be mixed, but only
/// `predict` takes several evidence sets (one per workload, [`EvidenceArgs::load_all`]); every
/// other command refuses a second one ([`EvidenceArgs::load`]).
#[derive(clap::Args, Clone, Debug, Default)]
#[group(required = true, multiple = true)]
pub struct EvidenceArgs {
    /// `perf c2c report --stdio` text (full report or a paste from mail)
    #[arg(long, value_name = "FILE")]
    pub c2c: Vec<PathBuf>,
    /// `perf script` output of memory samples (perf mem / perf c2c record)
    #[arg(long, value_name = "FILE")]
    pub perf_script: Vec<PathBuf>,
    /// `perf report --stdio -s type,typeoff` output (perf's data-type profiling, Linux 6.8+;
    /// plain, --hierarchy, extra columns or a paste from mail)
    #[arg(long, value_name = "FILE")]
    pub perf_typeoff: Vec<PathBuf>,
    /// A `perf.data` file itself (perf c2c record, perf mem record, perf record -d): samples
    /// decoded with their data source, weight, CPU and addresses
    #[arg(long, value_name = "FILE")]
    pub perf_data: Vec<PathBuf>,
    /// A hand-written access sketch (TOML, see docs/profile.md)
    #[arg(long, value_name = "FILE")]
    pub sketch: Vec<PathBuf>,
    /// A profile saved by `lineup import` (JSON)
    #[arg(long, value_name = "FILE")]
    pub profile: Vec<PathBuf>,
}

/// Which flag gave an evidence file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    C2c,
    PerfScript,
    PerfTypeoff,
    PerfData,
    Sketch,
    Profile,
}

impl Kind {
    fn flag(self) -> &'static str {
        match self {
            Kind::C2c => "--c2c",
            Kind::PerfScript => "--perf-script",
            Kind::PerfTypeoff => "--perf-typeoff",
            Kind::PerfData => "--perf-data",
            Kind::Sketch => "--sketch",
            Kind::Profile => "--profile",
        }
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct PickArgs {
    /// Which report of a c2c text holding several ("Baseline:" then "With this change:"),
    /// counted from 1; what the reports before it bound carries over to it (reports of one
    /// text share their objects)
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub report: usize,
    /// `/proc/kallsyms` of the machine a --perf-data file was recorded on, to name kernel
    /// addresses (default: this machine's, when the file's OS release is the running one)
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
}

/// A text input whole, within lineup's bounds on text (`lineup::input`: the line length and
/// the size).
fn read(path: &Path) -> Result<String> {
    let mut input = lineup::input::TextReader::open(path)?;
    // perf.data is refused with the flag that reads it (before its "lines" are judged).
    if let Some(hint) = profile::perf_data::text_importer_hint(input.head()?) {
        bail!("{}: {hint}", path.display());
    }
    let bytes = input.read_to_end()?;
    // Bytes that are not UTF-8 (a mail's Latin-1) are replaced, with a warning naming the lines.
    let (text, bad) = profile::table::decode_text(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if let Some(w) = profile::text::lossy_warning(&path.display().to_string(), &bad) {
        eprintln!("lineup: {w}");
    }
    Ok(match text {
        // Valid UTF-8: the bytes become the string without a copy.
        std::borrow::Cow::Borrowed(_) => String::from_utf8(bytes).expect("checked as UTF-8"),
        std::borrow::Cow::Owned(s) => s,
    })
}

/// A progress bar that stays hidden until `started` is 2 s old (then on stderr): counts bytes.
fn late_bar(what: String) -> (indicatif::ProgressBar, std::time::Instant) {
    let bar = indicatif::ProgressBar::hidden();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what);
    (bar, std::time::Instant::now())
}

fn show_late(bar: &indicatif::ProgressBar, started: std::time::Instant) {
    if bar.is_hidden() && started.elapsed() > std::time::Duration::from_secs(2) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
}

/// Reads c2c text line by line as the file gives it: a large report is never held whole
/// beside its profile. perf.data is refused with the flag that reads it; bytes that are not
/// UTF-8 are replaced, with a warning naming the lines, as [`read`] does.
fn load_c2c(path: &Path) -> Result<Vec<Profile>> {
    let with_path = |e: profile::ProfileError| anyhow::anyhow!("{}: {e}", path.display());
    // Lines within lineup's bounds on text (`lineup::input`): a line that never ends is
    // refused after 1 MiB, not read until memory runs out.
    let mut input = lineup::input::TextReader::open(path)?;
    if let Some(hint) = profile::perf_data::text_importer_hint(input.head()?) {
        bail!("{}: {hint}", path.display());
    }
    let mut reader = profile::C2cReader::new(&profile::C2cOptions::default()).map_err(with_path)?;
    let (bar, started) = late_bar(format!("reading {}", path.display()));
    bar.set_length(input.size().unwrap_or(0));
    let mut bad = Vec::new();
    let mut read_all = || -> Result<()> {
        let mut buf = Vec::new();
        while input.next_line(&mut buf)? {
            let no = input.line_number();
            let text = String::from_utf8_lossy(&buf);
            if matches!(text, std::borrow::Cow::Owned(_)) {
                bad.push(no);
            }
            reader.line(&text).map_err(with_path)?;
            if no % 4096 == 0 {
                show_late(&bar, started);
                bar.set_position(input.bytes_read());
            }
        }
        Ok(())
    };
    let read = read_all();
    bar.finish_and_clear();
    if let Some(w) = profile::text::lossy_warning(&path.display().to_string(), &bad) {
        eprintln!("lineup: {w}");
    }
    read?;
    reader.finish().map_err(with_path)
}

/// Maps the file (bounded memory for any size; a pipe is read whole, within
/// `lineup::input::MAX_STREAM_BYTES`), reads it with the kallsyms of this machine when the
/// file was recorded on this kernel, and shows a progress bar once it runs past 2 s.
fn load_perf_data(path: &Path, kallsyms_file: Option<&Path>) -> Result<Profile> {
    let file = lineup::readers::InputFile::open(path).map_err(|e| match e.problem.as_str() {
        "is a directory, not a file" => {
            anyhow::anyhow!("{}: is a directory, not a perf.data file", path.display())
        }
        _ => e.into(),
    })?;
    let map = file.bytes();
    let with_path = |e: profile::ProfileError| anyhow::anyhow!("{}: {e}", path.display());
    let header = profile::perf_data::read_header(map).map_err(with_path)?;
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let kallsyms = match (kallsyms_file, &header.os_release, running) {
        (Some(k), _, _) => Some(lineup::input::read_text_lossy(k)?),
        (None, Some(rec), Some(run)) if rec.trim() == run.trim() => {
            std::fs::read_to_string("/proc/kallsyms").ok()
        }
        _ => None,
    };
    let opts = profile::PerfDataOptions {
        kallsyms,
        ..Default::default()
    };
    let (bar, started) = late_bar(format!("reading {}", path.display()));
    let mut progress = |done: u64, total: u64| {
        show_late(&bar, started);
        bar.set_length(total);
        bar.set_position(done);
    };
    let p = profile::import_perf_data(map, &opts, &mut progress).map_err(with_path);
    bar.finish_and_clear();
    p
}

impl EvidenceArgs {
    /// Every evidence file given, by flag (in the order the flags are listed above), each
    /// flag's files in the order given.
    fn sets(&self) -> Vec<(Kind, &Path)> {
        [
            (Kind::C2c, &self.c2c),
            (Kind::PerfScript, &self.perf_script),
            (Kind::PerfTypeoff, &self.perf_typeoff),
            (Kind::PerfData, &self.perf_data),
            (Kind::Sketch, &self.sketch),
            (Kind::Profile, &self.profile),
        ]
        .into_iter()
        .flat_map(|(k, v)| v.iter().map(move |p| (k, p.as_path())))
        .collect()
    }

    /// Every evidence file given, each with the flag that gave it (`fleet add` hashes them).
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub fn files(&self) -> Vec<(&'static str, &Path)> {
        self.sets()
            .into_iter()
            .map(|(k, p)| (k.flag(), p))
            .collect()
    }

    /// Reads the one evidence set; for c2c text holding several reports, the
    /// `pick.report`-th. A second evidence file is refused in one line: only `predict`
    /// compares workloads.
    pub fn load(&self, pick: &PickArgs) -> Result<Profile> {
        let sets = self.sets();
        match sets.as_slice() {
            [(kind, path)] => load_one(*kind, path, pick),
            [] => bail!(
                "no evidence given (--c2c, --perf-script, --perf-typeoff, --perf-data, --sketch or --profile)"
            ),
            more => {
                let given: Vec<String> = more
                    .iter()
                    .map(|(k, p)| format!("{} {}", k.flag(), p.display()))
                    .collect();
                bail!(
                    "{} evidence sets given ({}): this command reads one; `lineup predict` compares layouts under several",
                    more.len(),
                    given.join(", ")
                )
            }
        }
    }

    /// The reports before the picked one in a c2c text holding several, in order (none for
    /// other evidence, or for the first report): binding carries what they bound over to the
    /// picked one (`bind::BindInput::earlier`), reports of one text sharing their objects.
    pub fn earlier(&self, pick: &PickArgs) -> Result<Vec<Profile>> {
        let sets = self.sets();
        let [(Kind::C2c, path)] = sets.as_slice() else {
            return Ok(Vec::new());
        };
        if pick.report <= 1 {
            return Ok(Vec::new());
        }
        let mut all = load_c2c(path)?;
        all.truncate(pick.report - 1);
        Ok(all)
    }

    /// Reads every evidence set given (one per workload), each labelled by its file name (by
    /// the path as given where two share a file name).
    pub fn load_all(&self, pick: &PickArgs) -> Result<Vec<(String, Profile)>> {
        let sets = self.sets();
        let names: Vec<String> = sets
            .iter()
            .map(|(_, p)| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.display().to_string())
            })
            .collect();
        sets.iter()
            .enumerate()
            .map(|(i, (kind, path))| {
                let shared = names.iter().filter(|n| **n == names[i]).count() > 1;
                let label = if shared {
                    path.display().to_string()
                } else {
                    names[i].clone()
                };
                Ok((label, load_one(*kind, path, pick)?))
            })
            .collect()
    }
}

/// Reads one evidence file of `kind`; for c2c text holding several reports, the
/// `pick.report`-th.
fn load_one(kind: Kind, path: &Path, pick: &PickArgs) -> Result<Profile> {
    let with_path = |e: profile::ProfileError| anyhow::anyhow!("{}: {e}", path.display());
    let mut p = match kind {
        Kind::PerfData => {
            let mut p = load_perf_data(path, pick.kallsyms.as_deref())?;
            p.provenance.input = Some(path.display().to_string());
            return Ok(p);
        }
        Kind::C2c => {
            let mut all = load_c2c(path)?;
            let n = all.len();
            if pick.report == 0 || pick.report > n {
                let starts: Vec<String> = all
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let lines = p.provenance.settings.get("report_lines");
                        let first = lines.and_then(|l| l.split('-').next()).unwrap_or("?");
                        format!("{} at line {first}", i + 1)
                    })
                    .collect();
                bail!(
                    "{}: --report {} but the text holds {n} report{} ({})",
                    path.display(),
                    pick.report,
                    if n == 1 { "" } else { "s" },
                    starts.join(", ")
                );
            }
            all.swap_remove(pick.report - 1)
        }
        Kind::PerfScript => {
            let text = read(path)?;
            profile::import_perf_script(&text, &profile::PerfScriptOptions::default())
                .map_err(with_path)?
        }
        Kind::PerfTypeoff => profile::import_perf_typeoff(&read(path)?).map_err(with_path)?,
        Kind::Sketch => profile::import_sketch(&read(path)?).map_err(with_path)?,
        Kind::Profile => Profile::from_json(&read(path)?).map_err(with_path)?,
    };
    if p.provenance.input.is_none() {
        p.provenance.input = Some(path.display().to_string());
    }
    p.provenance.loaded_from = Some(path.display().to_string());
    Ok(p)
}

#[derive(clap::Args)]
#[command(
    about = "Read contention evidence into one access profile (JSON)",
    after_help = "Examples:\n  lineup import --c2c c2c.txt -o profile.json        # perf c2c report --stdio\n  \
                  lineup import --c2c mail.txt --report 2 -o after.json\n  \
                  lineup import --perf-typeoff typeoff.txt -o types.json  # perf report --stdio -s type,typeoff\n  \
                  lineup import --perf-data perf.data -o mem.json   # perf c2c record / perf mem record\n  \
                  lineup import --sketch examples/sketches/seed003_root_domain.toml"
)]
pub struct ImportArgs {
    #[command(flatten)]
    evidence: EvidenceArgs,
    #[command(flatten)]
    pick: PickArgs,
    /// Write the profile here instead of standard output
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run_import(args: ImportArgs) -> Result<()> {
    use std::io::Write;
    let output = super::output::check_opt("-o", args.output.as_deref())?;
    let p = args.evidence.load(&args.pick)?;
    match &output {
        // Files go through the output module (atomic replace, devices written through),
        // streamed: a large report's JSON is as big as its profile.
        Some(out) => out.write_streamed(|w| p.write_json(w))?,
        // Streamed, not built as one string: a large report's JSON is as big as its profile.
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            p.write_json(&mut w)
                .and_then(|()| writeln!(w))
                .and_then(|()| w.flush())
                .context("standard output: cannot write")?;
        }
    }
    Ok(())
}
