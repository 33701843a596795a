//! `--csv FILE` and `--svg DIR`, shared by `lineup bench` and `lineup replay`: checked before
//! any run (so a long measurement never ends in an unwritable path), written whole or not at
//! all afterwards.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use lineup::bench::{Comparison, svg, table};

#[derive(clap::Args)]
pub struct ReportFiles {
    /// Also write every figure's statistics as CSV to FILE
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write one SVG plot per case into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
}

impl ReportFiles {
    /// Fails before any run when an output could not be written afterwards.
    pub fn check(&self) -> Result<()> {
        if let Some(path) = &self.csv {
            let parent = parent_dir(path);
            if !parent.is_dir() {
                bail!("{}: no such directory for --csv", parent.display());
            }
            if path.is_dir() {
                bail!("{}: is a directory (--csv wants a file)", path.display());
            }
        }
        if let Some(dir) = &self.svg
            && dir.exists()
            && !dir.is_dir()
        {
            bail!("{}: not a directory (--svg wants one)", dir.display());
        }
        Ok(())
    }

    /// Writes the CSV of `all` and one SVG per case of `plotted` (the table's rows), with
    /// confidence intervals at `1 - alpha`.
    pub fn write(&self, all: &[Comparison], plotted: &[&Comparison], alpha: f64) -> Result<()> {
        if let Some(path) = &self.csv {
            write_atomically(path, table::csv(all).as_bytes())?;
        }
        if let Some(dir) = &self.svg {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
            let mut cases: Vec<&str> = Vec::new();
            for c in plotted {
                if !cases.contains(&c.case.as_str()) {
                    cases.push(&c.case);
                }
            }
            for case in cases {
                let rows: Vec<&Comparison> =
                    plotted.iter().copied().filter(|c| c.case == case).collect();
                let text = svg::case_plot(case, &rows, 1.0 - alpha);
                write_atomically(&dir.join(svg::file_name(case)), text.as_bytes())?;
            }
        }
        Ok(())
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: readers see
/// the old file or the whole new one, never a part.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("{}: not a file name", path.display()))?;
    let tmp = parent_dir(path).join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!("{}: cannot write: {e}", path.display()));
    }
    Ok(())
}
