//! `lineup diagnose`: the layout of one struct annotated with the evidence, and a verdict per
//! cache line.

use std::io::Write;

use anyhow::Result;

use lineup::analysis::{bind, struct_diagnosis, subject};
use lineup::emit::{diagnosis, html};
use lineup::profile::Profile;

#[derive(clap::Args)]
#[command(
    about = "Explain each cache line of a struct from contention evidence; without --type, which types each contended line can be",
    after_help = "Examples:\n  lineup diagnose --type task_group --c2c c2c.txt\n  \
                  lineup diagnose --c2c c2c.txt                     # overview: candidate types per line\n  \
                  lineup diagnose --c2c c2c.txt --line 2 --json     # one line, every struct ranked\n  \
                  lineup diagnose --type mm_struct --c2c c2c.txt --vmlinux vmlinux --kallsyms kallsyms\n  \
                  lineup diagnose --type root_domain --sketch examples/sketches/seed003_root_domain.toml\n  \
                  lineup diagnose --type task_group --c2c c2c.txt --machine icelake-2s   # price on a preset\n  \
                  lineup diagnose --type task_group --perf-typeoff typeoff.txt    # perf report -s type,typeoff\n  \
                  lineup diagnose --profile linreg.json --alloc linreg.c:48     # a recording's heap blocks by site\n  \
                  lineup diagnose --type task_group --c2c mail.txt --report 2 --line-offset 256 --json\n  \
                  lineup diagnose --type cpupri_vec --btf data/vmlinux-6.18.44.btf --sketch examples/sketches/seed003_cpupri_vec.toml --layout examples/seeds/003/seed_fix_patch1_vec.h   # the layout a patch gives it"
)]
pub struct Args {
    /// The struct the evidence is about; without it, an overview of the report: per
    /// contended line, candidate types ranked with their reasons
    #[arg(long = "type", value_name = "TYPE")]
    type_name: Option<String>,
    /// A recorded program's heap blocks allocated at this call site (`file.c:LINE`) or in
    /// this function, instead of --type: their element type, or the array of scalars or
    /// untyped block they are
    #[arg(long, value_name = "FILE:LINE|FUNCTION", conflicts_with = "type_name")]
    alloc: Option<String>,
    /// Draw and judge the struct in lines of this many bytes (128 for adjacent-line
    /// prefetch or POWER); the evidence's own lines keep the size they were taken with
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(8..=4096))]
    cacheline_size: Option<u64>,
    #[command(flatten)]
    evidence: super::evidence::EvidenceArgs,
    #[command(flatten)]
    pick: super::evidence::PickArgs,
    /// Struct offset at which the evidence's cache line starts, when lineup's inference
    /// (shown by `diagnose`) picks the wrong one
    #[arg(
        long,
        value_name = "BYTES",
        allow_negative_numbers = true,
        requires = "type_name"
    )]
    line_offset: Option<i64>,
    /// Overview: only the line the report ranks N (c2c's cache line index); repeatable
    #[arg(long = "line", value_name = "N", conflicts_with = "type_name")]
    lines: Vec<u32>,
    /// Overview: only the line holding this data address (hex); repeatable
    #[arg(long = "address", value_name = "ADDR", value_parser = parse_address, conflicts_with = "type_name")]
    addresses: Vec<u64>,
    #[command(flatten)]
    source: super::source::SourceArgs,
    #[command(flatten)]
    code: super::subject::CodeArgs,
    /// Price the lines on this machine (a preset, `host`, or a machine file: see `lineup
    /// optimize --help`); default: the evidence's CPUs with generic latencies. Presets of
    /// Intel parts also price aligned 128-byte pairs of lines (adjacent-line prefetch)
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
    /// Judge the layout this C declaration of the struct gives it instead (as `predict
    /// --layout` reads one: a patch's layout, or the one a regression brought), with the same
    /// evidence, each access moved with its member
    #[arg(long, value_name = "FILE", requires = "type_name")]
    layout: Option<std::path::PathBuf>,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Also write the report as a self-contained HTML page (docs/html.md)
    #[arg(long, value_name = "OUT.html")]
    html: Option<std::path::PathBuf>,
}

fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(hex, 16).map_err(|_| format!("'{s}' is not a hex address"))
}

/// `diagnose --profile REC.json` without `--type`: the recording's objects ranked by the
/// model's cost of their contended lines.
fn recording_overview(
    args: &Args,
    profile: &mut Profile,
    types: &mut lineup::types::Types<'_>,
    label: &str,
) -> Result<()> {
    let (objects, skipped) =
        struct_diagnosis::rank_recording(profile, types, args.machine.as_deref())
            .map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = diagnosis::RecordingOverviewReport {
            schema: 1,
            evidence: profile.provenance.input.as_deref(),
            types: label,
            cacheline_size: profile.cacheline_size,
            objects: &objects,
            skipped: &skipped,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let evidence = subject::evidence_label(profile);
    out.write_all(diagnosis::recording_overview_text(&objects, &skipped, &evidence).as_bytes())?;
    Ok(())
}

/// Without `--type`: per contended line of the report, the candidate types ranked.
fn line_overview(
    args: &Args,
    profile: &Profile,
    types: &lineup::types::Types<'_>,
    input: &bind::BindInput,
    label: &str,
) -> Result<()> {
    let selection = bind::Selection {
        ranks: args.lines.clone(),
        addresses: args.addresses.clone(),
    };
    // A full report takes seconds: show progress on a terminal.
    let total = profile.lines.len() as u64;
    let bar = (total > 2000).then(|| {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} lines")
        {
            bar.set_style(style);
        }
        bar.set_message("ranking types");
        bar
    });
    let lines = struct_diagnosis::candidate_types(profile, types, input, &selection, &mut |done| {
        if let Some(b) = &bar
            && done % 256 == 0
        {
            b.set_position(done as u64);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let lines = lines.map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = diagnosis::OverviewReport {
            schema: 1,
            evidence: profile.provenance.input.as_deref(),
            types: label,
            typing: input.typing.as_ref(),
            lines: &lines,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        let evidence = subject::evidence_label(profile);
        out.write_all(
            diagnosis::overview_text(&lines, label, &evidence, input.typing.as_ref()).as_bytes(),
        )?;
    }
    Ok(())
}

/// What binding takes from the types' side: where they come from, the line offset given,
/// the rows' decoded instructions, and (DWARF records functions as subprograms, not in the
/// types) the functions' prototypes.
fn bind_input(
    args: &Args,
    opened: &super::source::Opened,
    types: &lineup::types::Types<'_>,
    profile: &Profile,
) -> Result<bind::BindInput> {
    let (decoded, typing) = args.code.decode(profile)?;
    let source_path = args
        .source
        .btf
        .as_ref()
        .or(args.source.dwarf.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| opened.label.clone());
    let prototypes = if opened.format == lineup::readers::Format::Dwarf {
        let arena = typed_arena::Arena::new();
        lineup::readers::dwarf::function_prototypes(opened.file.bytes(), &arena).unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(bind::BindInput {
        domain: bind::types_domain(types, &source_path, profile),
        line_start: args.line_offset,
        decoded,
        typing,
        prototypes,
        earlier: args.evidence.earlier(&args.pick)?,
    })
}

pub fn run(args: Args) -> Result<()> {
    let html_out = super::output::check_opt("--html", args.html.as_deref())?;
    let mut profile = args.evidence.load(&args.pick)?;
    let opened = args.source.for_profile(&profile).open()?;
    let mut types = opened.types()?;
    let alloc_type = match &args.alloc {
        Some(sel) => Some(subject::type_allocated_at(&profile, sel).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let input = bind_input(&args, &opened, &types, &profile)?;
    let Some(type_name) = args.type_name.clone().or(alloc_type) else {
        if profile.lines.is_empty() && profile.provenance.tool == lineup::record::TOOL {
            return recording_overview(&args, &mut profile, &mut types, &opened.label);
        }
        return line_overview(&args, &profile, &types, &input, &opened.label);
    };
    let relayout = match &args.layout {
        Some(p) => Some((lineup::input::read_text_lossy(p)?, p.display().to_string())),
        None => None,
    };
    let sd = struct_diagnosis::diagnose_struct(
        &mut profile,
        &mut types,
        (&type_name, &opened.label),
        args.cacheline_size,
        args.machine.as_deref(),
        &input,
        relayout.as_ref().map(|(t, n)| (t.as_str(), n.as_str())),
    )
    .map_err(anyhow::Error::msg)?;
    if let Some(path) = &args.html {
        let page = diagnosis::html_page(&opened.source, &profile, &sd);
        html_out
            .as_ref()
            .expect("checked with --html")
            .write(html::render(&page).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = diagnosis::Report::new(&opened.source, &profile, &sd);
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    if let Some((_, name)) = &relayout {
        writeln!(
            out,
            "the layout {name} declares, with the evidence moved with its members"
        )?;
    }
    out.write_all(&diagnosis::text_report(
        &opened.source,
        &profile,
        &types,
        &sd,
    ))?;
    Ok(())
}
