//! `lineup predict`: the modeled cost of the current layout, lineup's, and any candidate
//! (a C declaration such as a patch's, or pahole text), side by side, on one machine.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use lineup::analysis::prediction;
use lineup::emit::{self, html};

use super::subject::{self, ModelArgs, SubjectArgs};

#[derive(clap::Args)]
#[command(
    about = "Compare the modeled contention cost of layouts of one struct on one machine",
    after_help = "A candidate is a file holding the struct as C (`struct T { ... };`, attributes\n\
                  such as ____cacheline_aligned honoured, members this kernel lacks skipped) or\n\
                  as pahole prints it.\n\nExamples:\n  \
                  lineup predict --type task_group --c2c tests/data/c2c/seed000_paste.txt --machine icelake-2s \\\n      --layout examples/seeds/000/seed_fix.h\n  \
                  lineup predict --type nohz --dwarf nohz.o --sketch examples/sketches/seed001_nohz.toml \\\n      --machine nehalem-ex-8s --layout fix.h --json"
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
    let mut profile = args.subject.evidence.load(&args.subject.pick)?;
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
        args.subject.line_offset,
    )?;
    let model = args.model.build(&types, id, &profile, &ev.accesses)?;
    let predicted = prediction::predict(
        &model,
        &types,
        (id, type_name),
        !args.no_lineup,
        &args.layouts,
    )
    .map_err(anyhow::Error::msg)?;
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
