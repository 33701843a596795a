//! `lineup optimize`: a better member order and alignment for one struct, as a layout, a C
//! declaration and (with `--source`) a patch; split advice where only splitting helps.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};

use lineup::analysis::cost::Unit;
use lineup::analysis::plan::{self, Proposal, ProposeError, Request};
use lineup::emit::optimize::{Diagnosed, Header, Outcome};
use lineup::emit::{self, c::Flavour};
use lineup::readers::c_struct::{self, CStruct};
use lineup::types::SourceFormat;

use super::output;
use super::subject::{self, ModelArgs, SubjectArgs};

#[derive(clap::Args)]
#[command(
    about = "Find the member order and alignment that minimize modeled contention",
    after_help = "Examples:\n  lineup optimize --type task_group --c2c tests/data/c2c/seed000_paste.txt --machine icelake-2s\n  \
                  lineup optimize --type root_domain --sketch examples/sketches/seed003_root_domain.toml \\\n      --machine xeon-2s-480 --pin span --max-lines 20\n  \
                  lineup optimize --type stats --dwarf ./prog --profile rec.json --source stats.h --patch fix.diff\n  \
                  lineup optimize --type shared_runq_shard --sketch examples/sketches/seed002_shared_runq.toml \\\n      --machine spr-1s --queued 56"
)]
pub struct Args {
    #[command(flatten)]
    subject: SubjectArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// A member that must keep its offset (repeatable)
    #[arg(long, value_name = "MEMBER")]
    pin: Vec<String>,
    /// Members that must stay together in their order, comma-separated (repeatable)
    #[arg(long, value_name = "A,B,...")]
    together: Vec<String>,
    /// Largest acceptable size in bytes
    #[arg(long, value_name = "BYTES")]
    max_size: Option<u64>,
    /// Largest acceptable size in cache lines
    #[arg(long, value_name = "N", conflicts_with = "max_size")]
    max_lines: Option<u64>,
    /// The header that declares the struct: print a unified diff against it (its #if blocks
    /// stay whole)
    #[arg(long = "header", value_name = "FILE")]
    header: Option<PathBuf>,
    /// Path to show in the diff (default: the --header path as given)
    #[arg(long, value_name = "PATH", requires = "header")]
    diff_path: Option<String>,
    /// Write the diff to this file instead of printing it
    #[arg(long, value_name = "FILE", requires = "header")]
    patch: Option<PathBuf>,
    /// C flavour of the declaration: kernel (____cacheline_aligned) or user (alignas);
    /// default: kernel for BTF, user for DWARF
    #[arg(long, value_name = "FLAVOUR", value_parser = ["kernel", "user"])]
    flavour: Option<String>,
    /// Instances are only N-byte aligned (a slab cache without SLAB_HWCACHE_ALIGN, an
    /// embedded struct, malloc): price lineup's layout at every offset that allows, and say
    /// what else must change (default: from the evidence's addresses, else line-aligned)
    #[arg(long, value_name = "N")]
    instance_align: Option<u64>,
    /// Write a layout contract (TOML) for the proposed layout, for `lineup check` in CI:
    /// write-hot groups stay whole and off the other hot members' lines, and the size holds
    #[arg(long, value_name = "FILE")]
    contract: Option<PathBuf>,
    /// Items waiting in a queue the member guards, on average, all shards together: split
    /// advice then prices finding work across shards (a pull whose own shard is empty probes
    /// the others and migrates an item), so a shard sweep has an optimum
    #[arg(long, value_name = "N")]
    queued: Option<f64>,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Also write the current and the new layout side by side as a self-contained HTML page
    /// (docs/html.md)
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
}

/// `optimize` on a recorded array of scalars: the priced plan of padded per-thread slices,
/// and its patch when `--header` is the allocating file.
fn run_scalar(
    args: &Args,
    mut sp: super::scalar::ScalarPlan,
    patch_out: Option<output::Output>,
) -> Result<()> {
    let mut no_patch: Option<String> = None;
    let mut diff: Option<String> = None;
    if let Some(path) = &args.header {
        let text = lineup::input::read_text_lossy(path)?;
        let shown = args
            .diff_path
            .clone()
            .unwrap_or_else(|| path.display().to_string());
        match sp.patch(path, &text, &shown) {
            Ok(d) => diff = Some(d),
            Err(why) => no_patch = Some(why),
        }
    }
    if let (Some(out), Some(d)) = (&patch_out, &diff) {
        output::commit(&[(out, d.as_bytes())])?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        if args.patch.is_none() {
            sp.diff = diff.clone();
        }
        serde_json::to_writer_pretty(&mut out, &sp)?;
        writeln!(out)?;
        return Ok(());
    }
    let mut s = sp.text(&args.model);
    match (&args.patch, &diff, &no_patch) {
        (Some(p), Some(_), _) => {
            let _ = writeln!(s, "\npatch written to {}", p.display());
        }
        (None, Some(d), _) => {
            let _ = writeln!(s, "\n{d}");
        }
        (_, None, Some(why)) => {
            let _ = writeln!(s, "\nno patch: {why}");
        }
        _ => {}
    }
    out.write_all(s.as_bytes())?;
    Ok(())
}

/// The header `--header` names, read, with the struct's declaration in it; refused when it
/// declares other members than the type has (the patch would lose or invent members).
fn read_header(
    args: &Args,
    unit_members: &[Vec<String>],
    types_label: &str,
) -> Result<Option<(String, CStruct)>> {
    let Some(path) = &args.header else {
        return Ok(None);
    };
    let text = lineup::input::read_text_lossy(path)?;
    let cs = c_struct::find_struct(&text, &args.subject.type_name)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if let Some(why) = emit::patch::header_mismatch(&cs, unit_members) {
        bail!("{}: {why} (type read from {types_label})", path.display());
    }
    Ok(Some((text, cs)))
}

/// `--together A,B,...` as lists of members.
fn together_lists(args: &Args) -> Vec<Vec<String>> {
    args.together
        .iter()
        .map(|t| {
            t.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .collect()
}

/// Loads the struct and its evidence, asks the library for the proposal and its renderings,
/// writes the files asked for and prints the report.
pub fn run(args: Args) -> Result<()> {
    if let Some(q) = args.queued
        && !(q.is_finite() && q >= 0.0)
    {
        bail!("--queued {q}: must be a number of items, 0 or more");
    }
    let patch_out = output::check_opt("--patch", args.patch.as_deref())?;
    let html_out = output::check_opt("--html", args.html.as_deref())?;
    let contract_out = output::check_opt("--contract", args.contract.as_deref())?;
    let mut profile = args.subject.evidence.load(&args.subject.pick)?;
    let opened = args.subject.source.for_profile(&profile).open()?;
    let mut types = opened.types()?;
    let type_name = &args.subject.type_name;
    if let Some(sp) = super::scalar::plan(&types, &profile, type_name, &args.model)? {
        return run_scalar(&args, sp, patch_out);
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
    let mut model = args
        .model
        .build(&types, id, &profile, &ev.accesses)?
        .with_evidence_instances(&profile, type_name, &ev.bindings, args.instance_align)
        .map_err(anyhow::Error::msg)?;
    if model.streams.is_empty() {
        bail!("no access of the profile falls on a member of struct {type_name}");
    }
    let cls = model.cls;
    let flavour = flavour(&args, types.source);
    let unit_members: Vec<Vec<String>> = model.units.iter().map(|u| u.members.clone()).collect();
    let header = read_header(&args, &unit_members, &opened.label)?;
    // Elements of one array sharing lines: the current layout priced as allocated.
    let current_as_allocated = plan::current_as_allocated(
        &model,
        &profile,
        type_name,
        &ev.accesses,
        types.is_per_cpu(id),
    );
    let request = Request {
        pinned: args.pin.clone(),
        together: together_lists(&args),
        max_size: args.max_size,
        max_lines: args.max_lines,
        header: header.as_ref().map(|(_, cs)| cs),
        queued: args.queued,
        instance_advice: emit::c::instance_align_advice(flavour, cls),
        element_lines: plan::element_lines(&profile, type_name),
        header_text: header.as_ref().map(|(text, _)| text.as_str()),
        current_as_allocated,
    };
    let mut proposal = plan::propose(&mut model, &types, id, &request).map_err(|e| match e {
        ProposeError::Search(e) => anyhow!("{}: struct {type_name}: {e}", opened.label),
        ProposeError::Request(e) => anyhow!(e),
    })?;
    let model = &model;
    // What is printed is what was priced: the declaration, read back and laid out again.
    let (new_layout, declaration) = emit::optimize::proposal_as_c(
        &mut types,
        id,
        &model.layout,
        &model.units,
        &proposal,
        flavour,
    )
    .map_err(|e| anyhow!("struct {type_name}: {e}"))?;
    let diff = header_patch(
        &args,
        header.as_ref(),
        &mut proposal,
        &model.units,
        flavour,
        cls,
    )?;
    if let (Some(path), Some((text, _))) = (&args.header, &header)
        && let Some(w) = emit::optimize::initializer_warning(path, text, &model.layout.c_name())
    {
        eprintln!("lineup: {w}");
    }
    let outcome = Outcome {
        layout_source: &opened.source,
        type_name,
        machine: &model.machine,
        cls,
        evidence_tool: &profile.provenance.tool,
        evidence_label: profile.label.as_deref(),
        utilization: model.queueing.utilization,
        utilization_source: &model.utilization_source,
        binding: &ev.binding,
        current_placement: &model.current,
        proposal: &proposal,
        plan_units: proposal.units(&model.units),
        plan_streams: proposal.streams(&model.streams),
        types: &types,
        new_layout: &new_layout,
        flavour,
        declaration: &declaration,
        diff: diff.as_deref(),
        header: args.header.as_deref(),
        patch: args.patch.as_deref(),
        missing: &ev.missing,
        instances: &model.instances,
    };
    let html_text = html_out.as_ref().map(|_| {
        outcome.html(&Diagnosed {
            layout: &model.layout,
            units: &model.units,
            accesses: &ev.accesses,
            profile: &profile,
            element_lines: &request.element_lines,
        })
    });
    let contract_text = contract_out.as_ref().map(|_| {
        let why = format!("lineup optimize on {}", subject::evidence_label(&profile));
        let c = plan::contract(
            &new_layout,
            &model.units,
            &model.streams,
            &proposal.plan,
            cls,
            &why,
        );
        c.to_toml()
    });
    write_files([
        (&contract_out, contract_text.as_deref()),
        (&patch_out, diff.as_deref()),
        (&html_out, html_text.as_deref()),
    ])?;
    if let Some(out) = &html_out {
        eprintln!("wrote {}", out.path().display());
    }
    print(&args, &outcome)
}

/// The C flavour of the declaration: `--flavour`, else kernel for BTF, user for DWARF.
fn flavour(args: &Args, types_from: SourceFormat) -> Flavour {
    match args.flavour.as_deref() {
        Some("kernel") => Flavour::Kernel,
        Some(_) => Flavour::Userspace,
        None if types_from == SourceFormat::Btf => Flavour::Kernel,
        None => Flavour::Userspace,
    }
}

/// The diff against the `--header` file (none without one, and none when the new layout
/// is no fix); the proposal's slot and element advice say what the patch did with them.
fn header_patch(
    args: &Args,
    header: Option<&(String, CStruct)>,
    proposal: &mut Proposal,
    model_units: &[Unit],
    flavour: Flavour,
    cls: u64,
) -> Result<Option<String>> {
    let (Some(path), Some((text, cs)), None) = (&args.header, header, &proposal.rejected) else {
        return Ok(None);
    };
    let shown = (args.diff_path.clone()).unwrap_or_else(|| path.display().to_string());
    let h = Header {
        path,
        text,
        declaration: cs,
        shown: &shown,
    };
    let plan_units = proposal.padded.as_ref().map_or(model_units, |(u, _)| u);
    emit::optimize::header_diff(
        &h,
        &args.subject.type_name,
        model_units,
        plan_units,
        &proposal.plan,
        flavour,
        cls,
        proposal.slots.as_mut(),
        proposal.elements.as_mut(),
        proposal.instance_realigned.as_ref(),
    )
    .map_err(anyhow::Error::msg)
}

/// Writes each file asked for that has content: all of them or none.
fn write_files(files: [(&Option<output::Output>, Option<&str>); 3]) -> Result<()> {
    let files: Vec<(&output::Output, &[u8])> = files
        .into_iter()
        .filter_map(|(out, text)| Some((out.as_ref()?, text?.as_bytes())))
        .collect();
    output::commit(&files)
}

/// The report on stdout, as JSON or as text.
fn print(args: &Args, outcome: &Outcome<'_>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", outcome.json()?)?;
        return Ok(());
    }
    out.write_all(outcome.text().as_bytes())?;
    Ok(())
}
