//! `lineup predict`: the modeled cost of the current layout, lineup's, and any candidate
//! (a C declaration such as a patch's, or pahole text), side by side, on one machine.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use lineup::analysis::prediction::{self, Workload};
use lineup::emit::{self, html};
use lineup::profile::Profile;

use super::subject::{self, ModelArgs, SubjectArgs};

#[derive(clap::Args)]
#[command(
    about = "Compare the modeled contention cost of layouts of one struct on one machine",
    after_help = "A candidate is a file holding the struct as C (`struct T { ... };`, attributes\n\
                  such as ____cacheline_aligned honoured, members this build lacks priced where they\n\
                  fall) or as pahole prints it.\n\nExamples:\n  \
                  lineup predict --type task_group --c2c tests/data/c2c/seed000_paste.txt --machine icelake-2s \\\n      --layout examples/seeds/000/seed_fix.h\n  \
                  lineup predict --type nohz --dwarf nohz.o --sketch examples/sketches/seed001_nohz.toml \\\n      --machine nehalem-ex-8s --layout fix.h --json\n\n\
                  Several evidence sets (repeat --c2c, --sketch, ...; kinds may be mixed) are workloads:\n\
                  every layout is priced under each with its own evidence, one column each, and a\n\
                  layout that helps one workload and hurts another is named. lineup's own layout is\n\
                  searched per workload (`lineup for W`). Example:\n  \
                  lineup predict --type task_group --btf data/vmlinux-6.18.44.btf --machine icelake-2s \\\n      \
                  --c2c tests/data/c2c/seed000_paste.txt --sketch examples/workloads/task_group_tree_walk.toml \\\n      \
                  --layout examples/seeds/000/seed_fix.h"
)]
pub struct Args {
    #[command(flatten)]
    subject: SubjectArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// A candidate layout: C declaration or pahole text (repeatable)
    #[arg(long = "layout", value_name = "FILE")]
    layouts: Vec<PathBuf>,
    /// Leave lineup's own optimized layout out of the table
    #[arg(long)]
    no_lineup: bool,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Also write every layout side by side as a self-contained HTML page (docs/html.md)
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let html_out = super::output::check_opt("--html", args.html.as_deref())?;
    let mut sets = args.subject.evidence.load_all(&args.subject.pick)?;
    if sets.len() > 1 {
        return run_workloads(&args, sets);
    }
    let (_, mut profile) = sets.pop().expect("clap requires one evidence flag");
    let opened = args.subject.source.for_profile(&profile).open()?;
    let types = opened.types()?;
    let type_name = &args.subject.type_name;
    // A recorded array of scalars: its per-thread slices as they are and padded to lines.
    if let Some(sp) = super::scalar::plan(&types, &profile, type_name, &args.model)? {
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &sp)?;
            writeln!(out)?;
        } else {
            out.write_all(sp.text(&args.model).as_bytes())?;
        }
        return Ok(());
    }
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
    let model = args
        .model
        .build(&types, id, &profile, &ev.accesses)?
        .with_evidence_instances(&profile, type_name, &ev.bindings, None)
        .map_err(anyhow::Error::msg)?;
    let mut predicted = prediction::predict(
        &model,
        &types,
        (id, type_name),
        !args.no_lineup,
        &args.layouts,
    )
    .map_err(anyhow::Error::msg)?;
    if let Some(cycles) = lineup::analysis::plan::current_as_allocated(
        &model,
        &profile,
        type_name,
        &ev.accesses,
        types.is_per_cpu(id),
    ) {
        predicted.note_as_allocated(cycles);
    }
    if let Some(path) = &args.html {
        let d = lineup::analysis::diagnose::diagnose(
            &model.layout,
            &ev.accesses,
            profile.provenance.machine.cpus,
        );
        let page = emit::prediction::html_page(
            &opened.source,
            &profile,
            &model,
            type_name,
            &predicted,
            &d,
        );
        html_out
            .as_ref()
            .expect("checked with --html")
            .write(html::render(&page).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = emit::prediction::json(&opened.source, &profile, &model, type_name, &predicted);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    let text = emit::prediction::text(
        &opened.source,
        &profile,
        &model,
        type_name,
        &ev.binding,
        &predicted,
    );
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// `predict` with several evidence sets, one per workload: every layout priced under each
/// workload's own model (the flags' machine, lines and utilization rule for all), the
/// trade-offs named.
fn run_workloads(args: &Args, sets: Vec<(String, Profile)>) -> Result<()> {
    if args.html.is_some() {
        bail!(
            "--html draws one evidence set; give one evidence file with --html, or leave --html out to compare {} workloads",
            sets.len()
        );
    }
    let opened = args.subject.source.for_profile(&sets[0].1).open()?;
    let types = opened.types()?;
    let type_name = &args.subject.type_name;
    let id = subject::find_type(&types, &opened.label, type_name)?;
    let size = types.composite(id).map(|c| c.size).unwrap_or(0);
    let mut workloads = Vec::new();
    for (label, mut profile) in sets {
        if super::scalar::plan(&types, &profile, type_name, &args.model)?.is_some() {
            bail!(
                "{label}: {type_name} is an array of scalars; predict compares workloads for a struct"
            );
        }
        let ev = subject::gather(
            &mut profile,
            (&types, &opened.label),
            id,
            type_name,
            size,
            (args.subject.line_offset, Vec::new()),
        )
        .with_context(|| label.clone())?;
        let model = args
            .model
            .build(&types, id, &profile, &ev.accesses)
            .and_then(|m| {
                m.with_evidence_instances(&profile, type_name, &ev.bindings, None)
                    .map_err(anyhow::Error::msg)
            })
            .with_context(|| label.clone())?;
        let evidence = profile.provenance.loaded_from.clone();
        workloads.push(Workload {
            label,
            model,
            unit: profile.unit,
            evidence: evidence.or(profile.provenance.input.clone()),
        });
    }
    let predicted = prediction::predict_workloads(
        &workloads,
        &types,
        type_name,
        !args.no_lineup,
        &args.layouts,
    )
    .map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = emit::prediction::workloads_json(&opened.source, type_name, &workloads, &predicted);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        let text =
            emit::prediction::workloads_text(&opened.source, type_name, &workloads, &predicted);
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}
