//! `lineup diagnose`: the layout of one struct annotated with the evidence, and a verdict per
//! cache line.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use lineup::analysis::diagnose::{self, Diagnosis, LineBinding};
use lineup::emit::{self, html};
use lineup::layout::{self, Field};

use super::subject::{self, SubjectArgs};

#[derive(clap::Args)]
#[command(
    about = "Explain each cache line of a struct from contention evidence",
    after_help = "Examples:\n  lineup diagnose --type task_group --c2c c2c.txt\n  \
                  lineup diagnose --type root_domain --sketch examples/sketches/seed003_root_domain.toml\n  \
                  lineup diagnose --type task_group --perf-typeoff typeoff.txt    # perf report -s type,typeoff\n  \
                  lineup diagnose --type task_group --c2c mail.txt --report 2 --line-offset 256 --json"
)]
pub struct Args {
    #[command(flatten)]
    subject: SubjectArgs,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Also write the report as a self-contained HTML page (docs/html.md)
    #[arg(long, value_name = "OUT.html")]
    html: Option<std::path::PathBuf>,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: u32,
    layout_source: &'a lineup::readers::LayoutSource,
    evidence: Option<&'a str>,
    bindings: &'a [LineBinding],
    #[serde(flatten)]
    diagnosis: &'a Diagnosis,
}

pub fn run(args: Args) -> Result<()> {
    let html_out = super::output::check_opt("--html", args.html.as_deref())?;
    let mut profile = args.subject.evidence.load(&args.subject.pick)?;
    let opened = args.subject.source.open()?;
    let types = opened.types()?;
    let id = subject::find_type(&types, &opened.label, &args.subject.type_name)?;
    let cls = profile.cacheline_size.max(1);
    let layout = layout::layout(&types, id, cls).expect("a defined struct has a layout");
    let subject::Evidence {
        bindings,
        accesses,
        missing,
    } = subject::gather(
        &mut profile,
        &types,
        id,
        &args.subject.type_name,
        layout.size,
        args.subject.line_offset,
    )?;
    let mut d = diagnose::diagnose(&layout, &accesses, profile.provenance.machine.cpus);
    d.unresolved_fields = missing;

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
    );
    for b in &bindings {
        let how = if b.given { "as given" } else { "inferred" };
        let _ = write!(
            text,
            "data line {:#x} is bytes {}..{} of the struct ({how})",
            b.address,
            b.line_start,
            b.line_start + cls as i64 - 1
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
            if line.cost > 0.0 {
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
    let _ = writeln!(
        text,
        "{} cache line(s) without recorded accesses\n",
        d.cold_lines
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
