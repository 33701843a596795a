//! `lineup diagnose`: the layout of one struct annotated with the evidence, and a verdict per
//! cache line.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Result, bail};
use serde::Serialize;

use lineup::analysis::bind;
use lineup::analysis::diagnose::{self, Diagnosis, LineBinding};
use lineup::emit::{self, html};
use lineup::layout::{self, Field};
use lineup::record::overview::{self, RankedObject, Skipped};

use super::subject;

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
                  lineup diagnose --type task_group --c2c mail.txt --report 2 --line-offset 256 --json"
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
    code: subject::CodeArgs,
    /// Price the lines on this machine (a preset, `host`, or a machine file: see `lineup
    /// optimize --help`); default: the evidence's CPUs with generic latencies. Presets of
    /// Intel parts also price aligned 128-byte pairs of lines (adjacent-line prefetch)
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
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

#[derive(Serialize)]
struct Report<'a> {
    schema: u32,
    layout_source: &'a lineup::readers::LayoutSource,
    evidence: Option<&'a str>,
    bindings: &'a [LineBinding],
    unbound: &'a [bind::Unbound],
    /// Where the struct's (or array's) heap blocks were allocated (recorded profiles).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    allocations: &'a [lineup::profile::AllocationSite],
    /// Accesses a recording's memory budget counted per code site over a range of bytes:
    /// exact in total, not split over the members and lines they cover.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    degraded: &'a [lineup::profile::DegradedRange],
    #[serde(flatten)]
    diagnosis: &'a Diagnosis,
}

/// The profile type whose heap blocks `selector` (`file.c:LINE`, `file.c`, a function)
/// names; a one-line error listing the sites there are when none.
fn type_allocated_at(profile: &lineup::profile::Profile, selector: &str) -> Result<String> {
    let mut found: Vec<&str> = Vec::new();
    for t in &profile.types {
        if t.allocations.iter().any(|a| a.matches(selector))
            && !found.contains(&t.type_name.as_str())
        {
            found.push(&t.type_name);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => {
            let mut sites: Vec<String> = Vec::new();
            for t in &profile.types {
                for a in &t.allocations {
                    let s = format!(
                        "{} ({})",
                        a.source.as_deref().unwrap_or("?"),
                        a.function.as_deref().unwrap_or("?")
                    );
                    if !sites.contains(&s) {
                        sites.push(s);
                    }
                }
            }
            bail!(
                "{}: no heap block with recorded accesses was allocated at '{selector}'; {}",
                subject::evidence_label(profile),
                if sites.is_empty() {
                    "the profile has no allocation sites (is it a `lineup record` profile?)"
                        .to_string()
                } else {
                    format!("sites: {}", sites.join(", "))
                }
            )
        }
        many => bail!(
            "{}: '{selector}' allocated blocks of several types: {}; name one site (file.c:LINE) or use --type",
            subject::evidence_label(profile),
            many.join(", ")
        ),
    }
}

#[derive(Serialize)]
struct OverviewReport<'a> {
    schema: u32,
    evidence: Option<&'a str>,
    types: &'a str,
    lines: &'a [bind::LineOverview],
}

/// The overview of a recording: its objects ranked by the model's cost.
#[derive(Serialize)]
struct RecordingOverviewReport<'a> {
    schema: u32,
    evidence: Option<&'a str>,
    types: &'a str,
    cacheline_size: u64,
    objects: &'a [RankedObject],
    skipped: &'a [Skipped],
}

/// Objects the text overview lists; `--json` lists all.
const OVERVIEW_OBJECTS: usize = 12;

/// `diagnose --profile REC.json` without `--type`: the recording's objects ranked by the
/// model's cost of their contended lines ([`lineup::record::overview`]).
fn recording_overview(
    args: &Args,
    profile: &mut lineup::profile::Profile,
    types: &mut lineup::types::Types<'_>,
    label: &str,
) -> Result<()> {
    let machine = match &args.machine {
        Some(name) => Some(
            subject::ModelArgs {
                machine: name.clone(),
                cacheline_size: None,
                utilization: None,
            }
            .machine()?,
        ),
        None => None,
    };
    let (objects, skipped) = overview::rank_objects(profile, types, machine.as_ref());
    let evidence = subject::evidence_label(profile);
    if objects.is_empty() {
        bail!(
            "{evidence}: no recorded object could be diagnosed{}",
            skipped
                .first()
                .map(|s| format!(" ({}: {})", s.type_name, s.reason))
                .unwrap_or_default()
        );
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let report = RecordingOverviewReport {
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
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} object(s) recorded in {evidence}, most costly first (the contention model's cost of their contended lines, modeled cycles in the evidence's unit); `--type NAME` diagnoses one",
        objects.len()
    );
    for (i, o) in objects.iter().take(OVERVIEW_OBJECTS).enumerate() {
        let at = if o.allocations.is_empty() {
            String::new()
        } else {
            format!("; allocated in {}", o.allocations.join(", "))
        };
        let line = match (o.line, o.members.is_empty()) {
            (Some(l), false) => format!("; line {l}: {}", o.members.join(", ")),
            _ => String::new(),
        };
        let _ = writeln!(
            text,
            "{:>3}. {} ({}{at}): {}, cost {:.0}{line}; {} of {} line(s) with accesses contended, {:.0} accesses",
            i + 1,
            o.type_name,
            o.kind,
            o.verdict.label(),
            o.cost,
            o.contended_lines,
            o.lines_with_accesses,
            o.accesses
        );
    }
    if objects.len() > OVERVIEW_OBJECTS {
        let _ = writeln!(
            text,
            "     and {} more, none costlier (--json lists them)",
            objects.len() - OVERVIEW_OBJECTS
        );
    }
    for s in &skipped {
        let _ = writeln!(text, "not diagnosed: {}: {}", s.type_name, s.reason);
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Text of the overview: per line, candidate types with their reasons.
/// What a recording's memory budget degraded, one line per site and thread (the first
/// eight), for the text report.
fn degraded_text(degraded: &[lineup::profile::DegradedRange]) -> String {
    let mut text = String::new();
    for g in degraded.iter().take(8) {
        let counts: Vec<String> = [(g.loads, "loads"), (g.stores, "stores"), (g.rmw, "rmw")]
            .iter()
            .filter(|(n, _)| *n > 0.0)
            .map(|(n, what)| format!("{n:.0} {what}"))
            .collect();
        let offsets = match (g.offset_start, g.offset_end) {
            (Some(a), Some(b)) => format!(" (struct bytes {a}..{})", b.saturating_sub(1)),
            _ => String::new(),
        };
        let _ = writeln!(
            text,
            "degraded by the memory budget: {} by thread {} at {} over bytes {}..{}{offsets} of {}, {} line(s): counted per code site, exact in total, their split over those places not known",
            counts.join(" and "),
            g.tid,
            g.code,
            g.start,
            g.end.saturating_sub(1),
            g.object,
            g.lines
        );
    }
    if degraded.len() > 8 {
        let _ = writeln!(
            text,
            "degraded by the memory budget: {} more (--json lists them)",
            degraded.len() - 8
        );
    }
    text
}

fn overview_text(lines: &[bind::LineOverview], label: &str, evidence: &str) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} contended line(s) in {evidence}; candidate types from {label}, best first",
        lines.len()
    );
    for l in lines {
        text.push('\n');
        let _ = writeln!(
            text,
            "line {}{:#x}{}: {}",
            l.rank.map(|r| format!("{r} ")).unwrap_or_default(),
            l.address,
            l.domain
                .map(|d| format!(" ({} data)", d.label()))
                .unwrap_or_default(),
            if l.functions.is_empty() {
                "no functions named".to_string()
            } else {
                l.functions
                    .iter()
                    .take(4)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        if let Some(n) = &l.note {
            let _ = writeln!(text, "  {n}");
        }
        for (i, c) in l.candidates.iter().enumerate() {
            let mut fields: Vec<&str> = Vec::new();
            for f in &c.fields {
                if !fields.contains(&f.as_str()) {
                    fields.push(f);
                }
            }
            let _ = writeln!(
                text,
                "  {}. {} at bytes {}..{} ({}, score {:.2}): {}",
                i + 1,
                c.type_name,
                c.line_start,
                c.line_start + 63,
                c.binding.label(),
                c.score,
                fields.join(", ")
            );
            for r in &c.reasons {
                let _ = writeln!(text, "       {r}");
            }
        }
    }
    text
}

pub fn run(args: Args) -> Result<()> {
    let html_out = super::output::check_opt("--html", args.html.as_deref())?;
    let mut profile = args.evidence.load(&args.pick)?;
    let opened = args.source.for_profile(&profile).open()?;
    let mut types = opened.types()?;
    let alloc_type = match &args.alloc {
        Some(sel) => Some(type_allocated_at(&profile, sel)?),
        None => None,
    };
    let decoded = args.code.decode(&profile)?;
    let source_path = args
        .source
        .btf
        .as_ref()
        .or(args.source.dwarf.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| opened.label.clone());
    // DWARF records functions as subprograms, not in the types: read their prototypes.
    let prototypes = if opened.format == lineup::readers::Format::Dwarf {
        let arena = typed_arena::Arena::new();
        lineup::readers::dwarf::function_prototypes(opened.file.bytes(), &arena).unwrap_or_default()
    } else {
        Vec::new()
    };
    let input = bind::BindInput {
        domain: bind::types_domain(&types, &source_path, &profile),
        line_start: args.line_offset,
        decoded,
        prototypes,
    };
    let Some(type_name) = args.type_name.clone().or(alloc_type) else {
        if profile.lines.is_empty() && profile.provenance.tool == lineup::record::TOOL {
            return recording_overview(&args, &mut profile, &mut types, &opened.label);
        }
        if profile.lines.is_empty() {
            bail!(
                "{}: the evidence holds no raw cache lines (it is already about {}): give --type",
                subject::evidence_label(&profile),
                profile
                    .types
                    .iter()
                    .map(|t| t.type_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let selection = bind::Selection {
            ranks: args.lines.clone(),
            addresses: args.addresses.clone(),
        };
        let few = if selection.is_empty() {
            profile.lines.len() <= 3
        } else {
            true
        };
        // A full report takes seconds: show progress on a terminal.
        let total = profile.lines.len() as u64;
        let bar = if total > 2000 {
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
            Some(bar)
        } else {
            None
        };
        let lines =
            bind::overview_with_progress(&profile, &types, &input, &selection, few, &mut |done| {
                if let Some(b) = &bar
                    && done % 256 == 0
                {
                    b.set_position(done as u64);
                }
            });
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        if lines.is_empty() {
            bail!(
                "{}: no line matches --line/--address (the report has {} line(s))",
                subject::evidence_label(&profile),
                profile.lines.len()
            );
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        if args.json {
            let report = OverviewReport {
                schema: 1,
                evidence: profile.provenance.input.as_deref(),
                types: &opened.label,
                lines: &lines,
            };
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else {
            out.write_all(
                overview_text(&lines, &opened.label, &subject::evidence_label(&profile)).as_bytes(),
            )?;
        }
        return Ok(());
    };
    // Arrays of scalars and untyped heap blocks of a recording have no struct in the
    // program's DWARF: their type is built from the allocation site.
    let allocations = profile
        .type_profile(&type_name)
        .map(|t| t.allocations.clone())
        .unwrap_or_default();
    let degraded = profile
        .type_profile(&type_name)
        .map(|t| t.degraded.clone())
        .unwrap_or_default();
    let built = match profile.type_profile(&type_name) {
        Some(tp) if types.find_composites(&type_name).is_empty() => {
            let tp = tp.clone();
            lineup::record::allocation_type(&mut types, &tp)
        }
        _ => None,
    };
    let id = match built {
        Some(id) => id,
        None => subject::find_type(&types, &opened.label, &type_name)?,
    };
    if let Some(n) = args.cacheline_size
        && !n.is_power_of_two()
    {
        bail!("--cacheline-size {n} is not a power of two");
    }
    // The evidence's data lines have the size it was taken with; the layout is drawn and
    // judged in the lines asked for.
    let data_line = profile.cacheline_size.max(1);
    let cls = args.cacheline_size.unwrap_or(data_line);
    let layout = layout::layout(&types, id, cls).expect("a defined struct has a layout");
    let subject::Evidence {
        bindings,
        unbound,
        accesses,
        missing,
        ..
    } = subject::gather_with(&mut profile, &types, id, &type_name, layout.size, &input)?;
    let run = diagnose::RunTotals::from_profile(&profile);
    let machine = match &args.machine {
        Some(name) => Some(
            subject::ModelArgs {
                machine: name.clone(),
                cacheline_size: None,
                utilization: None,
            }
            .machine()?,
        ),
        None => None,
    };
    let mut d = diagnose::diagnose_on(
        &layout,
        &accesses,
        profile.provenance.machine.cpus,
        run,
        machine.as_ref(),
        types.is_per_cpu(id),
    );
    d.unresolved_fields = missing;
    if let Some(t) = profile.types.iter().find(|t| t.type_name == type_name) {
        diagnose::name_elements(&mut d, &layout, &t.element_lines);
        if built.is_some() {
            lineup::record::advise_scalar_lines(&mut d, t, cls);
        }
    }

    if let Some(path) = &args.html {
        let mut notes = vec![
            opened.source.describe(),
            format!(
                "{} bytes, {} cache lines of {cls} bytes; evidence: {}{}",
                d.size,
                d.size.div_ceil(cls),
                profile.provenance.tool,
                profile
                    .label
                    .as_ref()
                    .map(|l| format!(" \"{l}\""))
                    .unwrap_or_default()
            ),
        ];
        if let Some(input) = &profile.provenance.input {
            notes.push(format!("evidence file: {input}"));
        }
        for a in &allocations {
            notes.push(format!("allocated in {}", a.describe()));
        }
        for b in &bindings {
            notes.push(format!(
                "data line {:#x} is bytes {}..{} of the struct ({})",
                b.address,
                b.line_start,
                b.line_start + data_line as i64 - 1,
                b.binding.label()
            ));
        }
        for u in &unbound {
            notes.push(format!(
                "data line {:#x} left unbound: {}",
                u.address, u.reason
            ));
        }
        if !d.unresolved_fields.is_empty() {
            notes.push(format!(
                "fields the profile names that the struct lacks (ignored): {}",
                d.unresolved_fields.join(", ")
            ));
        }
        let page = html::Page {
            schema: html::PAGE_SCHEMA,
            command: "diagnose".into(),
            type_name: d.type_name.clone(),
            cacheline_size: cls,
            notes,
            layouts: vec![html::LayoutView {
                name: "current".into(),
                size: layout.size,
                cells: html::cells_from_layout(&layout, Some(&d)),
                lines: html::lines_from_diagnosis(layout.size, cls, &d),
                cost: None,
                measured: None,
            }],
        };
        html_out
            .as_ref()
            .expect("checked with --html")
            .write(html::render(&page).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let report = Report {
            schema: 1,
            layout_source: &opened.source,
            evidence: profile.provenance.input.as_deref(),
            bindings: &bindings,
            unbound: &unbound,
            allocations: &allocations,
            degraded: &degraded,
            diagnosis: &d,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let mut text = String::new();
    let _ = writeln!(text, "{}", opened.source.describe());
    let _ = writeln!(
        text,
        "struct {}: {} bytes, {} cache lines of {cls} bytes; evidence: {}{}",
        d.type_name,
        d.size,
        d.size.div_ceil(cls),
        profile.provenance.tool,
        profile
            .label
            .as_ref()
            .map(|l| format!(" \"{l}\""))
            .unwrap_or_default()
            + &profile
                .report_place()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default()
    );
    for a in &allocations {
        let _ = writeln!(text, "allocated in {}", a.describe());
        if let (Some(var), Some(n)) = (&a.variable, a.element_size)
            && a.element_kind.as_deref() != Some("struct")
            && n > 0
        {
            // Which elements each line holds: `buf[0..7]` on line 0.
            let per = (cls / n).max(1);
            let total = a.type_size / n;
            let ranges: Vec<String> = (0..total.div_ceil(per))
                .take(4)
                .map(|i| {
                    format!(
                        "line {i}: {var}[{}..{}]",
                        i * per,
                        ((i + 1) * per).min(total) - 1
                    )
                })
                .collect();
            let _ = writeln!(
                text,
                "  elements per line, counted from the block's start: {}{}",
                ranges.join(", "),
                if total.div_ceil(per) > 4 { ", ..." } else { "" }
            );
        }
    }
    text.push_str(&degraded_text(&degraded));
    for b in &bindings {
        let how = b.binding.label();
        let _ = write!(
            text,
            "data line {:#x} is bytes {}..{} of the struct ({how}{})",
            b.address,
            b.line_start,
            b.line_start + data_line as i64 - 1,
            if bindings.iter().any(|x| x.object != b.object) {
                format!(", object {}", b.object + 1)
            } else {
                String::new()
            }
        );
        if !b.alternatives.is_empty() {
            let alts: Vec<String> = b.alternatives.iter().take(6).map(i64::to_string).collect();
            let _ = write!(
                text,
                "; the offsets fit {} other placements about as well (--line-offset {} ...)",
                b.alternatives.len(),
                alts.join(", ")
            );
        }
        text.push('\n');
        for r in b.reasons.iter().filter(|r| r.starts_with("decoded")) {
            let _ = writeln!(text, "  {r}");
        }
        if let Some(summary) = bind::rows_summary(b) {
            let _ = writeln!(text, "  {summary}");
        }
    }
    for u in &unbound {
        let _ = writeln!(
            text,
            "data line {:#x} left unbound: {}",
            u.address, u.reason
        );
    }
    if !d.unresolved_fields.is_empty() {
        let _ = writeln!(
            text,
            "fields the profile names that the struct lacks (ignored): {}",
            d.unresolved_fields.join(", ")
        );
    }
    if !d.misfits.is_empty() {
        let _ = writeln!(text, "offsets that do not fit this layout:");
        for m in d.misfits.iter().take(8) {
            let _ = writeln!(text, "  {m}");
        }
        if d.misfits.len() > 8 {
            let _ = writeln!(text, "  ... and {} more", d.misfits.len() - 8);
        }
    }
    text.push('\n');
    if !d.has_contention() {
        text.push_str(
            "no contention found: no line has a written member shared with other accesses\n\n",
        );
    }
    for line in &d.lines {
        let _ = writeln!(
            text,
            "cache line {} (bytes {}-{}): {}{}",
            line.index,
            line.start,
            line.end,
            line.verdict.label(),
            if line.cost > 0.0 && !line.terms.is_empty() {
                format!(", modeled {:.0} transfer cycles", line.cost)
            } else if line.cost > 0.0 {
                format!(", estimated cost {:.0}", line.cost)
            } else {
                String::new()
            }
        );
        let _ = writeln!(text, "  {}", line.explanation);
        let _ = writeln!(
            text,
            "  {:<24} {:>6} {:>5} {:>10} {:>10} {:>10} {:>10} {:>5}  functions",
            "member", "offset", "size", "loads", "stores", "rmw", "HITM", "CPUs"
        );
        for m in &line.members {
            let fns: Vec<&str> = m
                .functions
                .iter()
                .take(3)
                .map(|f| f.name.as_str())
                .collect();
            let _ = writeln!(
                text,
                "  {:<24} {:>6} {:>5} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>5}  {}",
                m.name,
                m.offset,
                m.size,
                m.counts.loads,
                m.counts.stores,
                m.counts.rmw,
                m.counts.hitm() + m.counts.peer(),
                m.cpus,
                fns.join(", ")
            );
        }
        text.push('\n');
    }
    for f in &d.findings {
        let _ = writeln!(
            text,
            "{} (lines {:?}): {}\n",
            f.verdict.label(),
            f.lines,
            f.explanation
        );
    }
    // Lines whose accesses the memory budget counted only per code site are not cold.
    let summarized = lineup::record::degraded_lines(&degraded, cls, d.size)
        .into_iter()
        .filter(|l| !d.lines.iter().any(|x| x.index == *l))
        .count() as u64;
    let _ = writeln!(
        text,
        "{} cache line(s) without recorded accesses{}; lines priced on {} (modeled cycles are in the evidence's unit: per sample, per event or per unit of sketch weight)\n",
        d.cold_lines.saturating_sub(summarized),
        if summarized > 0 {
            format!(
                ", and {summarized} whose accesses the memory budget counted per code site only (degraded, above)"
            )
        } else {
            String::new()
        },
        d.machine
    );
    out.write_all(text.as_bytes())?;

    // The layout, each touched member annotated.
    let note = |f: &Field| -> Option<String> {
        // The member itself, or its elements when it is an array shown per element.
        let element = |m: &&diagnose::MemberUse| {
            !f.name.is_empty()
                && m.name.starts_with(&format!("{}[", f.name))
                && m.offset >= f.offset
                && m.offset < f.offset + f.size.max(1)
        };
        let parts: Vec<&diagnose::MemberUse> = d
            .members
            .iter()
            .filter(|m| {
                (m.offset == f.offset && (m.name == f.name || f.name.is_empty())) || element(m)
            })
            .collect();
        let first = *parts.first()?;
        let mut merged = first.clone();
        for m in &parts[1..] {
            merged.counts.add(&m.counts);
            merged.cpus = merged.cpus.max(m.cpus);
            for f in &m.functions {
                if !merged.functions.iter().any(|x| x.name == f.name) {
                    merged.functions.push(f.clone());
                }
            }
        }
        if parts.len() > 1 {
            merged.cpus = parts.iter().map(|m| m.cpus).sum();
        }
        let m = &merged;
        let mut s = String::new();
        if m.counts.writes() > 0.0 {
            let _ = write!(s, "writes {:.0} ", m.counts.writes());
        }
        if m.counts.reads() > 0.0 {
            let _ = write!(s, "reads {:.0} ", m.counts.reads());
        }
        if m.counts.hitm() > 0.0 {
            let _ = write!(s, "HITM {:.0} ", m.counts.hitm());
        }
        if m.cpus > 0 {
            let _ = write!(s, "on {} CPUs ", m.cpus);
        }
        let fns: Vec<&str> = m
            .functions
            .iter()
            .take(2)
            .map(|f| f.name.as_str())
            .collect();
        let _ = write!(s, "by {}", fns.join(", "));
        Some(s)
    };
    let mut buf = Vec::new();
    emit::pahole::write_layout_with_notes(&mut buf, &types, &layout, Some(&note));
    out.write_all(&buf)?;
    Ok(())
}
