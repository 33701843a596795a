//! `lineup predict`: the modeled cost of the current layout, lineup's, and any candidate
//! (a C declaration such as a patch's, or pahole text), side by side, on one machine.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::Serialize;

use lineup::analysis::cost::{Cost, Placement};
use lineup::analysis::{candidate, optimize};
use lineup::emit::html;
use lineup::readers::{c_struct, pahole_text};

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

#[derive(Serialize)]
struct Row {
    layout: String,
    cost: Cost,
    total_cycles: f64,
    /// Change of total cycles against the current layout, in percent.
    change_pct: Option<f64>,
}

/// A candidate file laid out over the struct's units, and what it declares that the struct
/// lacks (priced where it falls: explicit padding moves what follows).
pub struct LoadedCandidate {
    pub placement: lineup::analysis::cost::Placement,
    /// One line per member the candidate declares and the struct lacks, for the reader.
    pub notes: Vec<String>,
}

/// The placement a candidate file (C declaration or pahole text) gives the struct's units:
/// every member it declares is laid out, its own padding and members this build lacks
/// included.
pub fn load_candidate(
    model: &subject::Model,
    types: &lineup::types::Types<'_>,
    type_name: &str,
    path: &std::path::Path,
) -> Result<LoadedCandidate> {
    let text = lineup::input::read_text_lossy(path)?;
    let name = candidate_name(path);
    if let Ok(cs) = c_struct::find_struct(&text, type_name) {
        let laid = candidate::from_c(&model.units, &cs, types, model.cls)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(LoadedCandidate {
            notes: candidate::describe_extras(&name, type_name, &laid),
            placement: laid.placement,
        })
    } else {
        let facts =
            pahole_text::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let f = facts.iter().find(|f| f.name == type_name).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no struct {type_name} in it (as C or as pahole text)",
                path.display()
            )
        })?;
        let placement = candidate::from_pahole(&model.units, f)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(LoadedCandidate {
            placement,
            notes: Vec::new(),
        })
    }
}

/// A candidate's name in tables: its file name.
pub fn candidate_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn run(args: Args) -> Result<()> {
    let html_out = super::output::check_opt("--html", args.html.as_deref())?;
    let mut profile = args.subject.evidence.load(&args.subject.pick)?;
    let opened = args.subject.source.for_profile(&profile).open()?;
    let types = opened.types()?;
    // A recorded array of scalars: its per-thread slices as they are and padded to lines.
    if let Some(sp) = super::scalar::plan(&types, &profile, &args.subject.type_name, &args.model)? {
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &sp)?;
            writeln!(out)?;
        } else {
            out.write_all(sp.text(&args.model).as_bytes())?;
        }
        return Ok(());
    }
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
    let mut rows: Vec<(String, Cost)> =
        vec![("current".to_string(), model.evaluate(&model.current))];
    // Placements of the rows, for the HTML page.
    let mut placements: Vec<Placement> = vec![model.current.clone()];
    // The units a row's placement indexes, where they are not the struct's own (padded slots).
    let mut row_units: Vec<Option<Vec<lineup::analysis::cost::Unit>>> = vec![None];
    if !args.no_lineup {
        let min_align = model.layout.forced_align.unwrap_or(1);
        let plan = optimize::optimize(
            &model.units,
            &model.streams,
            &model.current,
            min_align,
            &optimize::Constraints::default(),
            model.cls,
            &model.machine,
            &model.queueing,
        )
        .map_err(|e| anyhow::anyhow!("struct {}: {e}", args.subject.type_name))?;
        rows.push(("lineup".to_string(), plan.cost));
        placements.push(plan.placement);
        row_units.push(None);
        // Array members whose slots different threads write: lineup's search again with each
        // slot padded to a line (what `optimize` proposes when it prices lower).
        let found = match types.composite(id) {
            Some(c) => lineup::analysis::slots::per_thread_slots(
                &types,
                c,
                &model.units,
                &model.streams,
                model.cls,
            ),
            None => Vec::new(),
        };
        if !found.is_empty() {
            let (pu, ps) =
                lineup::analysis::slots::padded(&model.units, &model.streams, &found, model.cls);
            let mut order: Vec<usize> = (0..pu.len()).collect();
            order.sort_by_key(|&u| model.units[u].offset);
            let as_declared =
                optimize::derive(&pu, &order, &Default::default(), model.cls, min_align);
            let padded = optimize::optimize(
                &pu,
                &ps,
                &as_declared,
                min_align,
                &optimize::Constraints::default(),
                model.cls,
                &model.machine,
                &model.queueing,
            )
            .map_err(|e| anyhow::anyhow!("struct {}: {e}", args.subject.type_name))?;
            rows.push(("lineup, slots padded".to_string(), padded.cost));
            placements.push(padded.placement);
            row_units.push(Some(pu));
        }
    }
    let mut notes: Vec<String> = Vec::new();
    for path in &args.layouts {
        let c = load_candidate(&model, &types, &args.subject.type_name, path)?;
        rows.push((candidate_name(path), model.evaluate(&c.placement)));
        placements.push(c.placement);
        row_units.push(None);
        notes.extend(c.notes);
    }

    if let Some(path) = &args.html {
        let d = lineup::analysis::diagnose::diagnose(
            &model.layout,
            &ev.accesses,
            profile.provenance.machine.cpus,
        );
        let base = rows[0].1.total_cycles();
        let mut layouts: Vec<html::LayoutView> = rows
            .iter()
            .zip(&placements)
            .zip(&row_units)
            .map(|(((name, cost), p), units)| {
                html::LayoutView::modeled(
                    name,
                    units.as_deref().unwrap_or(&model.units),
                    p,
                    cost,
                    Some(base),
                    model.cls,
                    Some(&d),
                )
            })
            .collect();
        // The current layout as diagnose shows it: every member, diagnose's verdicts.
        layouts[0].cells = html::cells_from_layout(&model.layout, Some(&d));
        for (line, diag) in layouts[0].lines.iter_mut().zip(html::lines_from_diagnosis(
            model.layout.size,
            model.cls,
            &d,
        )) {
            line.verdict = diag.verdict;
            line.label = diag.label;
            line.explanation = diag.explanation;
        }
        let mut page = html::Page {
            schema: html::PAGE_SCHEMA,
            command: "predict".into(),
            type_name: args.subject.type_name.clone(),
            cacheline_size: model.cls,
            notes: vec![
                opened.source.describe(),
                format!(
                    "machine {} ({}), {}-byte lines; rates in {:?} of the evidence, cycles = transfers x modeled latency",
                    model.machine.name, model.machine.description, model.cls, profile.unit
                ),
                format!(
                    "queueing: the busiest line of the current layout runs at utilization {:.2} ({})",
                    model.queueing.utilization, model.utilization_source
                ),
            ],
            layouts,
        };
        page.fill_type_names();
        html_out
            .as_ref()
            .expect("checked with --html")
            .write(html::render(&page).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let base = rows[0].1.total_cycles();
    if args.json {
        let json: Vec<Row> = rows
            .into_iter()
            .map(|(layout, cost)| {
                let total = cost.total_cycles();
                Row {
                    layout,
                    change_pct: (base > 0.0).then(|| (total - base) / base * 100.0),
                    total_cycles: total,
                    cost,
                }
            })
            .collect();
        let v = serde_json::json!({
            "schema": 1,
            "layout_source": opened.source,
            "type_name": args.subject.type_name,
            "machine": model.machine,
            "cacheline_size": model.cls,
            "unit": profile.unit,
            "layouts": json,
            "notes": notes,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    let refs: Vec<(String, &Cost)> = rows.iter().map(|(n, c)| (n.clone(), c)).collect();
    writeln!(out, "{}", opened.source.describe())?;
    writeln!(
        out,
        "struct {} on {} ({}), {}-byte lines; rates in {:?} of the evidence, cycles = transfers x modeled latency",
        args.subject.type_name,
        model.machine.name,
        model.machine.description,
        model.cls,
        profile.unit
    )?;
    writeln!(
        out,
        "queueing: the busiest line of the current layout runs at utilization {:.2} ({})\n",
        model.queueing.utilization, model.utilization_source
    )?;
    out.write_all(ev.binding.as_bytes())?;
    out.write_all(subject::cost_table(&refs).as_bytes())?;
    for note in &notes {
        writeln!(out, "{note}")?;
    }
    for (name, c) in &rows {
        let hot: Vec<String> = c
            .lines
            .iter()
            .filter(|l| l.false_cycles + l.true_cycles > 0.0)
            .map(|l| format!("line {}: {}", l.index, l.fields.join(" ")))
            .collect();
        if !hot.is_empty() {
            writeln!(out, "{name}: contended {}", hot.join("; "))?;
        }
    }
    Ok(())
}
