//! `diagnose`'s answers rendered: one struct's report as text (verdict per line, the layout
//! annotated), as JSON and as an HTML page; the candidate types per contended line; a
//! recording's objects ranked by cost.

use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::bind::{self, LineOverview, Unbound};
use crate::analysis::diagnose::{Diagnosis, LineBinding, MemberUse};
use crate::analysis::struct_diagnosis::StructDiagnosis;
use crate::emit::html;
use crate::layout::Field;
use crate::profile::{AllocationSite, DegradedRange, Profile};
use crate::readers::LayoutSource;
use crate::readers::typing::Coverage;
use crate::record::overview::{RankedObject, Skipped};
use crate::types::Types;

/// One struct's report as `--json` prints it.
#[derive(Serialize)]
pub struct Report<'a> {
    pub schema: u32,
    pub layout_source: &'a LayoutSource,
    pub evidence: Option<&'a str>,
    pub bindings: &'a [LineBinding],
    pub unbound: &'a [Unbound],
    /// Where the struct's (or array's) heap blocks were allocated (recorded profiles).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub allocations: &'a [AllocationSite],
    /// Accesses a recording's memory budget counted per code site over a range of bytes:
    /// exact in total, not split over the members and lines they cover.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub degraded: &'a [DegradedRange],
    /// What share of the rows in the image (`--vmlinux`) was typed from its instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typing: Option<&'a Coverage>,
    #[serde(flatten)]
    pub diagnosis: &'a Diagnosis,
}

impl<'a> Report<'a> {
    pub fn new(source: &'a LayoutSource, profile: &'a Profile, sd: &'a StructDiagnosis) -> Self {
        Report {
            schema: 1,
            layout_source: source,
            evidence: profile.provenance.input.as_deref(),
            bindings: &sd.bindings,
            unbound: &sd.unbound,
            allocations: &sd.allocations,
            degraded: &sd.degraded,
            typing: sd.typing.as_ref(),
            diagnosis: &sd.diagnosis,
        }
    }
}

/// The candidate types per contended line as `--json` prints them.
#[derive(Serialize)]
pub struct OverviewReport<'a> {
    pub schema: u32,
    pub evidence: Option<&'a str>,
    pub types: &'a str,
    /// What share of the rows in the image (`--vmlinux`) was typed from its instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typing: Option<&'a Coverage>,
    pub lines: &'a [LineOverview],
}

/// The overview of a recording as `--json` prints it: its objects ranked by the model's
/// cost.
#[derive(Serialize)]
pub struct RecordingOverviewReport<'a> {
    pub schema: u32,
    pub evidence: Option<&'a str>,
    pub types: &'a str,
    pub cacheline_size: u64,
    pub objects: &'a [RankedObject],
    pub skipped: &'a [Skipped],
}

/// Objects the text overview of a recording lists; `--json` lists all.
const OVERVIEW_OBJECTS: usize = 12;

/// A recording's objects, most costly first (the first [`OVERVIEW_OBJECTS`]), and those not
/// diagnosed.
pub fn recording_overview_text(
    objects: &[RankedObject],
    skipped: &[Skipped],
    evidence: &str,
) -> String {
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
    for s in skipped {
        let _ = writeln!(text, "not diagnosed: {}: {}", s.type_name, s.reason);
    }
    text
}

/// Per contended line, the candidate types read from `label` with their reasons.
pub fn overview_text(
    lines: &[LineOverview],
    label: &str,
    evidence: &str,
    typing: Option<&Coverage>,
) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} contended line(s) in {evidence}; candidate types from {label}, best first",
        lines.len()
    );
    if let Some(t) = typing {
        let _ = writeln!(text, "{}", t.describe());
    }
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

/// What a recording's memory budget degraded, one line per site and thread (the first
/// eight), for the text report.
pub fn degraded_text(degraded: &[DegradedRange]) -> String {
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

/// One struct's text report: where the layout and the evidence came from, how the evidence
/// bound, a verdict and a table of members per contended line, the findings; then the
/// layout, each touched member annotated.
pub fn text_report(
    source: &LayoutSource,
    profile: &Profile,
    types: &Types<'_>,
    sd: &StructDiagnosis,
) -> Vec<u8> {
    let mut text = String::new();
    let _ = writeln!(text, "{}", source.describe());
    text.push_str(&header_text(profile, sd));
    text.push_str(&binding_text(sd));
    text.push('\n');
    text.push_str(&lines_text(sd));
    let mut out = text.into_bytes();
    let note = |f: &Field| member_note(&sd.diagnosis, f);
    crate::emit::pahole::write_layout_with_notes(&mut out, types, &sd.layout, Some(&note));
    out
}

/// "N bytes, K cache lines of C bytes; evidence: TOOL \"LABEL\"", as the text and the HTML
/// page head a struct's report.
fn size_and_evidence(profile: &Profile, size: u64, cls: u64) -> String {
    format!(
        "{size} bytes, {} cache lines of {cls} bytes; evidence: {}{}",
        size.div_ceil(cls),
        profile.provenance.tool,
        profile
            .label
            .as_ref()
            .map(|l| format!(" \"{l}\""))
            .unwrap_or_default()
    )
}

/// The struct's size and lines, the evidence, where its blocks were allocated and what the
/// memory budget degraded.
fn header_text(profile: &Profile, sd: &StructDiagnosis) -> String {
    let (d, cls) = (&sd.diagnosis, sd.cls);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "struct {}: {}{}",
        d.type_name,
        size_and_evidence(profile, d.size, cls),
        profile
            .report_place()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default()
    );
    for a in &sd.allocations {
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
    text.push_str(&degraded_text(&sd.degraded));
    text
}

/// Which struct bytes each data line is and how that was found, the lines left unbound,
/// the fields and offsets that fit nothing.
fn binding_text(sd: &StructDiagnosis) -> String {
    let (d, bindings) = (&sd.diagnosis, &sd.bindings);
    let mut text = String::new();
    if let Some(t) = &sd.typing {
        let _ = writeln!(text, "{}", t.describe());
    }
    for b in bindings {
        let how = b.binding.label();
        let _ = write!(
            text,
            "data line {:#x} is bytes {}..{} of the struct ({how}{})",
            b.address,
            b.line_start,
            b.line_start + sd.data_line as i64 - 1,
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
    for u in &sd.unbound {
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
    text
}

/// Per contended line its verdict, explanation and members; the findings; the lines
/// without accesses and the machine they were priced on.
fn lines_text(sd: &StructDiagnosis) -> String {
    let d = &sd.diagnosis;
    let mut text = String::new();
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
    let summarized = crate::record::degraded_lines(&sd.degraded, sd.cls, d.size)
        .into_iter()
        .filter(|l| !d.lines.iter().any(|x| x.index == *l))
        .count() as u64;
    let _ = writeln!(
        text,
        "{} cache line(s) without recorded accesses{}; lines priced on {} (modeled cycles are in the evidence's unit: per sample, per event or per unit of sketch weight; queueing: {}, as `predict` prices it)\n",
        d.cold_lines.saturating_sub(summarized),
        if summarized > 0 {
            format!(
                ", and {summarized} whose accesses the memory budget counted per code site only (degraded, above)"
            )
        } else {
            String::new()
        },
        d.machine,
        d.queueing
    );
    text
}

/// The note beside member `f` in the annotated layout: its writes, reads, HITM, CPUs and
/// functions (an array's elements merged); `None` when nothing touched it.
fn member_note(d: &Diagnosis, f: &Field) -> Option<String> {
    // The member itself, or its elements when it is an array shown per element.
    let element = |m: &&MemberUse| {
        !f.name.is_empty()
            && m.name.starts_with(&format!("{}[", f.name))
            && m.offset >= f.offset
            && m.offset < f.offset + f.size.max(1)
    };
    let parts: Vec<&MemberUse> = d
        .members
        .iter()
        .filter(|m| (m.offset == f.offset && (m.name == f.name || f.name.is_empty())) || element(m))
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
}

/// One struct's report as a self-contained HTML page (docs/html.md).
pub fn html_page(source: &LayoutSource, profile: &Profile, sd: &StructDiagnosis) -> html::Page {
    let (d, cls) = (&sd.diagnosis, sd.cls);
    let mut notes = vec![source.describe(), size_and_evidence(profile, d.size, cls)];
    if let Some(input) = &profile.provenance.input {
        notes.push(format!("evidence file: {input}"));
    }
    for a in &sd.allocations {
        notes.push(format!("allocated in {}", a.describe()));
    }
    if let Some(t) = &sd.typing {
        notes.push(t.describe());
    }
    for b in &sd.bindings {
        notes.push(format!(
            "data line {:#x} is bytes {}..{} of the struct ({})",
            b.address,
            b.line_start,
            b.line_start + sd.data_line as i64 - 1,
            b.binding.label()
        ));
    }
    for u in &sd.unbound {
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
    html::Page {
        schema: html::PAGE_SCHEMA,
        command: "diagnose".into(),
        type_name: d.type_name.clone(),
        cacheline_size: cls,
        notes,
        layouts: vec![html::LayoutView {
            name: "current".into(),
            size: sd.layout.size,
            cells: html::cells_from_layout(&sd.layout, Some(d)),
            lines: html::lines_from_diagnosis(sd.layout.size, cls, d),
            cost: None,
            measured: None,
        }],
    }
}
