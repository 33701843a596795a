//! `lineup import` and the evidence flags shared with `diagnose`: read c2c text, perf script
//! samples, a perf data-type report, a TOML sketch or a saved profile into one access
//! profile.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use lineup::profile::{self, Profile};

#[derive(clap::Args, Clone, Debug)]
#[group(required = true, multiple = false)]
pub struct EvidenceArgs {
    /// `perf c2c report --stdio` text (full report or a paste from mail)
    #[arg(long, value_name = "FILE")]
    pub c2c: Option<PathBuf>,
    /// `perf script` output of memory samples (perf mem / perf c2c record)
    #[arg(long, value_name = "FILE")]
    pub perf_script: Option<PathBuf>,
    /// `perf report --stdio -s type,typeoff` output (perf's data-type profiling, Linux 6.8+;
    /// plain, --hierarchy, extra columns or a paste from mail)
    #[arg(long, value_name = "FILE")]
    pub perf_typeoff: Option<PathBuf>,
    /// A hand-written access sketch (TOML, see docs/profile.md)
    #[arg(long, value_name = "FILE")]
    pub sketch: Option<PathBuf>,
    /// A profile saved by `lineup import` (JSON)
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

#[derive(clap::Args, Clone, Debug)]
pub struct PickArgs {
    /// Which report of a c2c text holding several ("Baseline:" then "With this change:"),
    /// counted from 1
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub report: usize,
}

fn read(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| {
        anyhow::anyhow!(
            "{}: {}",
            path.display(),
            match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            }
        )
    })?;
    // perf.data is refused with the flag that reads it; bytes that are not UTF-8 (a mail's
    // Latin-1) are replaced, with a warning naming the lines.
    let (text, bad) = profile::table::decode_text(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if !bad.is_empty() {
        let shown: Vec<String> = bad.iter().take(10).map(|n| n.to_string()).collect();
        eprintln!(
            "lineup: warning: {}: line{} {}{}: bytes that are not UTF-8 were replaced",
            path.display(),
            if bad.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if bad.len() > 10 { ", ..." } else { "" }
        );
    }
    Ok(match text {
        // Valid UTF-8: the bytes become the string without a copy.
        std::borrow::Cow::Borrowed(_) => String::from_utf8(bytes).expect("checked as UTF-8"),
        std::borrow::Cow::Owned(s) => s,
    })
}

/// Reads a text report whatever its bytes: invalid UTF-8 is replaced, with a warning that
/// names the lines.
fn read_lossy(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| {
        anyhow::anyhow!(
            "{}: {}",
            path.display(),
            match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            }
        )
    })?;
    let (text, bad) = profile::text::decode_lossy(&bytes);
    if let Some(w) = profile::text::lossy_warning(&path.display().to_string(), &bad) {
        eprintln!("lineup: {w}");
    }
    Ok(text.into_owned())
}

impl EvidenceArgs {
    fn path(&self) -> &Path {
        [
            &self.c2c,
            &self.perf_script,
            &self.perf_typeoff,
            &self.sketch,
            &self.profile,
        ]
        .into_iter()
        .flatten()
        .next()
        .expect("clap requires one evidence flag")
    }

    /// Reads the evidence; for c2c text holding several reports, the `pick.report`-th.
    pub fn load(&self, pick: &PickArgs) -> Result<Profile> {
        let path = self.path();
        let text = if self.perf_script.is_some() {
            read_lossy(path)?
        } else {
            read(path)?
        };
        let with_path = |e: profile::ProfileError| anyhow::anyhow!("{}: {e}", path.display());
        let mut p = if self.c2c.is_some() {
            let mut all = profile::import_c2c(&text).map_err(with_path)?;
            let n = all.len();
            if pick.report == 0 || pick.report > n {
                bail!(
                    "{}: --report {} but the text holds {n} report{}",
                    path.display(),
                    pick.report,
                    if n == 1 { "" } else { "s" }
                );
            }
            all.swap_remove(pick.report - 1)
        } else if self.perf_script.is_some() {
            profile::import_perf_script(&text, &profile::PerfScriptOptions::default())
                .map_err(with_path)?
        } else if self.perf_typeoff.is_some() {
            profile::import_perf_typeoff(&text).map_err(with_path)?
        } else if self.sketch.is_some() {
            profile::import_sketch(&text).map_err(with_path)?
        } else {
            Profile::from_json(&text).map_err(with_path)?
        };
        if p.provenance.input.is_none() {
            p.provenance.input = Some(path.display().to_string());
        }
        p.provenance.loaded_from = Some(path.display().to_string());
        Ok(p)
    }
}

#[derive(clap::Args)]
#[command(
    about = "Read contention evidence into one access profile (JSON)",
    after_help = "Examples:\n  lineup import --c2c c2c.txt -o profile.json        # perf c2c report --stdio\n  \
                  lineup import --c2c mail.txt --report 2 -o after.json\n  \
                  lineup import --perf-typeoff typeoff.txt -o types.json  # perf report --stdio -s type,typeoff\n  \
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
        // Files go through the output module (atomic replace, devices written through); the
        // JSON is serialized to bytes first.
        Some(out) => {
            let mut buf = Vec::new();
            p.write_json(&mut buf)?;
            out.write(&buf)?;
        }
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
