//! `--csv FILE` and `--svg DIR`, shared by `lineup bench` and `lineup replay`: checked before
//! any run (so a long measurement never ends in an unwritable path), written whole or not at
//! all afterwards.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::output::{self, Output};

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
        output::check_opt("--csv", self.csv.as_deref())?;
        if let Some(dir) = &self.svg {
            output::check_dir("--svg", dir)?;
        }
        Ok(())
    }

    /// Writes the CSV of `all` and one SVG per case of `plotted` (the table's rows), with
    /// confidence intervals at `1 - alpha`: all of them or none.
    pub fn write(&self, all: &[Comparison], plotted: &[&Comparison], alpha: f64) -> Result<()> {
        let mut files: Vec<(Output, Vec<u8>)> = Vec::new();
        if let Some(path) = &self.csv {
            files.push((Output::check("--csv", path)?, table::csv(all).into_bytes()));
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
                let path = dir.join(svg::file_name(case));
                files.push((Output::check("--svg", &path)?, text.into_bytes()));
            }
        }
        let refs: Vec<(&Output, &[u8])> = files.iter().map(|(o, b)| (o, b.as_slice())).collect();
        output::commit(&refs)
    }
}
