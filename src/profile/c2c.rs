//! Importer for `perf c2c report --stdio` text.
//!
//! perf prints up to five sections: "Trace Event Information" and "Global Shared Cache Line
//! Event Information" (`key : value` totals), "c2c details" (events, sort order, grouping),
//! the "Shared Data Cache Line Table" (one row per contended line) and the "Shared Cache Line
//! Distribution Pareto" (per line: a header row with the line's HITM/peer and store counts
//! and its address, then one row per offset and code address with *percentages* of the
//! line's counts, mean cycles, records, CPU count, symbol, object, source line and nodes).
//!
//! Columns differ across perf versions and options (old `Rmt`/`Lcl` HITM columns, newer
//! `RmtHitm`/`LclHitm`, Arm SPE `Peer Snoop` columns, `Node`/`PA cnt`, `Pid`/`Tid` from
//! `-c`, `--no-source`, `-N`/`-NN` node columns), so they are read from the header lines by
//! name. Mail pastes drop the headers and collapse whitespace; then the column set is
//! inferred from each row's shape (see `docs/profile.md` for the exact rules).
//!
//! An input may hold several reports (a "Baseline:" and a "With this change:" table); each
//! becomes its own [`Profile`], labelled with the prose line that introduces it.

use std::collections::BTreeMap;

use super::error::ProfileError;
use super::model::{
    Access, CodeLocation, Counts, CpuUse, DEFAULT_CACHELINE_SIZE, Details, Latency, LineProfile,
    Names, Privilege, Profile, ThreadUse, Unit, parse_hex,
};
use super::table;

/// Options for [`import_c2c_with`].
#[derive(Clone, Debug)]
pub struct C2cOptions {
    /// Bytes per cache line; perf c2c groups by 64-byte lines (128 with `--double-cl`, which
    /// the importer also detects from the "Double-Cacheline" header).
    pub cacheline_size: u64,
}

impl Default for C2cOptions {
    fn default() -> Self {
        C2cOptions {
            cacheline_size: DEFAULT_CACHELINE_SIZE,
        }
    }
}

/// Reads `perf c2c report --stdio` output (full or pasted) into one profile per report.
pub fn import_c2c(text: &str) -> Result<Vec<Profile>, ProfileError> {
    import_c2c_with(text, &C2cOptions::default())
}

pub fn import_c2c_with(text: &str, opts: &C2cOptions) -> Result<Vec<Profile>, ProfileError> {
    let mut reader = C2cReader::new(opts)?;
    for raw in text.lines() {
        reader.line(raw)?;
    }
    reader.finish()
}

/// The c2c importer fed one line at a time, for text read as it comes: a 200k-line report
/// need not be held whole beside its profile. [`import_c2c_with`] is this over a string.
pub struct C2cReader {
    parser: Parser,
    no: usize,
}

impl C2cReader {
    pub fn new(opts: &C2cOptions) -> Result<Self, ProfileError> {
        if !opts.cacheline_size.is_power_of_two() {
            return Err(ProfileError::Option(format!(
                "cache line size {} is not a power of two",
                opts.cacheline_size
            )));
        }
        Ok(C2cReader {
            parser: Parser::new(opts),
            no: 0,
        })
    }

    /// The next line of the text, without its line end; errors name its 1-based number.
    pub fn line(&mut self, raw: &str) -> Result<(), ProfileError> {
        self.no += 1;
        self.parser.line(self.no, raw)
    }

    /// One profile per report read, or an error when the text held none.
    pub fn finish(self) -> Result<Vec<Profile>, ProfileError> {
        self.parser.finish()
    }
}

// ---------------------------------------------------------------------------------------
// Sections and the line loop
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    TraceEvents,
    SharedLines,
    Details,
    Table,
    Pareto,
}

const TITLES: [(&str, Section); 5] = [
    ("trace event information", Section::TraceEvents),
    (
        "global shared cache line event information",
        Section::SharedLines,
    ),
    ("c2c details", Section::Details),
    ("shared data cache line table", Section::Table),
    ("shared cache line distribution pareto", Section::Pareto),
];

fn section_of(trimmed: &str) -> Option<Section> {
    let t = trimmed
        .trim_matches(|c: char| c == '=' || c == '#' || c.is_whitespace())
        .to_ascii_lowercase();
    TITLES
        .iter()
        .find(|(title, _)| t == *title)
        .map(|&(_, s)| s)
}

/// HITM columns (x86, POWER) or peer-snoop columns (Arm SPE, `-d peer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Snoop {
    Hitm,
    Peer,
}

/// What the perf.data header (`perf c2c report --header`) says, shared by every report.
#[derive(Default)]
struct Header {
    tool_version: Option<String>,
    command: Option<String>,
    cpus_avail: Option<u32>,
    cpus_online: Option<u32>,
    description: Option<String>,
    nodes: u32,
}

struct Parser {
    cacheline_size: u64,
    header: Header,
    /// Reports read, with their first and last lines.
    done: Vec<(Profile, (usize, usize))>,
    report: Option<Report>,
    section: Option<Section>,
    /// The last prose line, a candidate label for the next report.
    prose: Option<String>,
    /// That line ends with a colon: it introduces what follows.
    caption: bool,
    /// The line number of `prose`.
    prose_line: usize,
    /// The last heading since the last report started: a caption (a line ending with a
    /// colon) or a mail heading (`Baseline:`, `With this change:`, `Before`, `After`, `v2`,
    /// "before this series:"), kept across the prose that may follow it ("(edited to fit)")
    /// until a report starts or a cache line continues the current one.
    heading: Option<Heading>,
    /// Header lines of a Pareto table not yet bound to rows (`#` replaced by a blank, so
    /// positions hold): perf's own or a paste's trimmed two-line form.
    pending: Vec<String>,
}

/// A line that may introduce the next report.
#[derive(Clone, Debug)]
struct Heading {
    line: usize,
    label: Option<String>,
    /// A mail heading (before/after, baseline, a version): starts a report whatever follows.
    strong: bool,
}

/// One report being read.
struct Report {
    /// The 1-based lines where the report starts (its heading, else its first line) and
    /// where its last row or total is.
    first_line: usize,
    last_line: usize,
    profile: Profile,
    sections_seen: Vec<Section>,
    snoop: Option<Snoop>,
    table: Option<Vec<String>>,
    pareto: Option<Vec<Col>>,
    /// Rows without a data offset were read (a table "edited to fit").
    no_offsets: bool,
    /// Cache line header rows without an address were read.
    no_address: bool,
    /// Index in `profile.lines` by line address.
    by_address: std::collections::HashMap<u64, usize>,
    /// The previous '#' line of the current section (a header's first line).
    prev_hash: Option<String>,
    /// Index in `profile.lines` of the Pareto line being read, with its header-row totals.
    current: Option<(usize, ClHeader)>,
    /// Events are continued on lines with an empty key.
    in_events: bool,
    /// One copy of each symbol, object and source line.
    names: Names,
    /// Accesses of the Pareto line being read, moved into it when it ends.
    rows: Vec<Access>,
}

impl Parser {
    fn new(opts: &C2cOptions) -> Self {
        Parser {
            cacheline_size: opts.cacheline_size,
            header: Header::default(),
            done: Vec::new(),
            report: None,
            section: None,
            prose: None,
            caption: false,
            prose_line: 0,
            heading: None,
            pending: Vec::new(),
        }
    }

    fn line(&mut self, no: usize, raw: &str) -> Result<(), ProfileError> {
        let text = strip_quote(raw);
        let trimmed = text.trim();
        if let Some(section) = section_of(trimmed) {
            self.enter(no, section);
            return Ok(());
        }
        if table::is_rule(trimmed) {
            // Dashes frame cache line header rows, dots underline `#` headers: no data.
            return Ok(());
        }
        if matches!(self.section, None | Some(Section::Pareto))
            && let Some(h) = header_line(text)
        {
            self.pending.push(h);
            return Ok(());
        }
        if trimmed.is_empty() || is_rule(trimmed, '=') {
            // Blank lines separate cache lines inside the Pareto and end key/value blocks.
            if matches!(
                self.section,
                Some(Section::TraceEvents | Section::SharedLines | Section::Details)
            ) && trimmed.is_empty()
            {
                self.section = None;
            }
            return Ok(());
        }
        let handled = match self.section {
            Some(s @ (Section::TraceEvents | Section::SharedLines | Section::Details)) => {
                self.key_value(no, s, trimmed)?
            }
            Some(Section::Table) => self.table_line(no, trimmed)?,
            Some(Section::Pareto) => self.pareto_line(no, trimmed)?,
            None => false,
        };
        if handled && let Some(r) = &mut self.report {
            r.last_line = no;
        }
        if !handled {
            // Prose (or the perf.data header) between or after sections.
            self.section = None;
            self.outside(no, trimmed)?;
        }
        Ok(())
    }

    /// A section title: continues the current report if the section comes later in perf's
    /// order, else starts the next report.
    fn enter(&mut self, no: usize, section: Section) {
        let restart = self
            .report
            .as_ref()
            .is_some_and(|r| r.sections_seen.iter().any(|&s| s >= section));
        if restart {
            self.close_report();
        }
        let cacheline_size = self.cacheline_size;
        // The heading names the report; else the prose line just before it.
        let (first, label) = match (self.heading.take(), self.prose.take()) {
            (Some(h), prose) if h.label.is_some() || prose.is_none() => (h.line, h.label),
            (_, Some(p)) => (self.prose_line, Some(p)),
            (_, None) => (no, None),
        };
        self.caption = false;
        let report = self.report.get_or_insert_with(|| {
            let mut r = Report::new(label, cacheline_size);
            r.first_line = first;
            r.last_line = no;
            r
        });
        report.sections_seen.push(section);
        report.prev_hash = None;
        report.in_events = false;
        self.section = Some(section);
    }

    fn close_report(&mut self) {
        if let Some(r) = self.report.take() {
            let place = (r.first_line, r.last_line);
            self.done.push((r.finish(), place));
        }
    }

    fn outside(&mut self, no: usize, trimmed: &str) -> Result<(), ProfileError> {
        if let Some(rest) = trimmed.strip_prefix('#') {
            if rest.trim().is_empty() {
                // perf's `#` spacer above a header: the caption before it still holds.
                return Ok(());
            }
            self.perf_header(rest);
            self.prose = None;
            self.caption = false;
            return Ok(());
        }
        // The Trace Event totals pasted without their title.
        if let Some((key, _)) = trimmed.split_once(':')
            && let Some(section) = summary_section_of(key.trim())
        {
            self.enter(no, section);
            return self.key_value(no, section, trimmed).map(|_| ());
        }
        // A paste may start straight at a cache line header row.
        let tokens: Vec<&str> = trimmed.split_whitespace().collect();
        if looks_like_cl_header(&tokens, !self.pending.is_empty()) {
            // Text between two cache lines ("[snip]", "cache line 1:") does not end the
            // report; a mail heading ("Baseline:", "With this change:", "after this
            // series:", "v2:") since the last line starts the next one, and so does a
            // caption before a line the report already has ("cache line 0:" twice).
            let in_pareto = self
                .report
                .as_ref()
                .is_some_and(|r| r.sections_seen.last() == Some(&Section::Pareto));
            let repeats = self
                .report
                .as_ref()
                .is_some_and(|r| r.repeats_line(&tokens));
            let split = self.heading.as_ref().is_some_and(|h| h.strong || repeats);
            if in_pareto && !split {
                self.section = Some(Section::Pareto);
                self.prose = None;
                self.caption = false;
                self.heading = None;
            } else {
                self.enter(no, Section::Pareto);
            }
            let handled = self.pareto_line(no, trimmed)?;
            debug_assert!(handled);
            if let Some(r) = &mut self.report {
                r.last_line = no;
            }
            return Ok(());
        }
        self.prose = label_from(trimmed);
        self.prose_line = no;
        self.caption = trimmed.ends_with(':');
        let strong = is_mail_heading(trimmed);
        if self.caption || strong {
            // A weaker caption does not replace a mail heading ("Before:" then "cache
            // line 0:").
            if strong || !self.heading.as_ref().is_some_and(|h| h.strong) {
                self.heading = Some(Heading {
                    line: no,
                    label: self.prose.clone(),
                    strong,
                });
            }
        }
        Ok(())
    }

    /// `# perf version : 6.4.0` and friends, printed by `perf c2c report --header`.
    fn perf_header(&mut self, rest: &str) {
        let Some((key, value)) = rest.split_once(" : ") else {
            return;
        };
        let (key, value) = (key.trim(), value.trim());
        let h = &mut self.header;
        match key {
            "perf version" => h.tool_version = Some(value.to_string()),
            "cmdline" => h.command = Some(value.to_string()),
            "nrcpus avail" => h.cpus_avail = value.parse().ok(),
            "nrcpus online" => h.cpus_online = value.parse().ok(),
            "cpudesc" => h.description = Some(value.to_string()),
            k if k.starts_with("node") && k.ends_with("cpu list") => h.nodes += 1,
            _ => {}
        }
    }

    // --- key : value sections ------------------------------------------------------------

    fn key_value(
        &mut self,
        no: usize,
        section: Section,
        trimmed: &str,
    ) -> Result<bool, ProfileError> {
        let Some((key, value)) = trimmed.split_once(':') else {
            return Ok(false);
        };
        let (key, value) = (key.trim(), value.trim());
        let report = self.report.as_mut().expect("a section implies a report");
        if section == Section::Details {
            match key {
                "Events" => {
                    report.profile.provenance.events.push(value.to_string());
                    report.in_events = true;
                }
                "" if report.in_events => report.profile.provenance.events.push(value.into()),
                _ => {
                    report.in_events = false;
                    let k = match snake(key).as_str() {
                        "cachelines_sort_on" => "sort_on".to_string(),
                        "cacheline_data_grouping" => "grouping".to_string(),
                        other => other.to_string(),
                    };
                    if k == "sort_on" && value.to_ascii_lowercase().contains("peer") {
                        report.snoop = Some(Snoop::Peer);
                    }
                    report.profile.provenance.settings.insert(k, value.into());
                }
            }
            return Ok(true);
        }
        if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Ok(false);
        }
        let (number, pct) = match value.strip_suffix('%') {
            Some(v) => (v.trim(), true),
            None => (value, false),
        };
        // perf prints its shares with `%10.1f%%`: a share of nothing (no LLC misses) is
        // printf's `-nan%`, which is a value, not the end of the block.
        let Some(v) = parse_number(number).or_else(|| is_not_a_number(number).then_some(f64::NAN))
        else {
            // Prose with a colon ends the block; a damaged count is an error.
            if value.contains(|c: char| c.is_ascii_digit()) {
                return Err(ProfileError::parse(
                    no,
                    format!("{key:?}: expected a number, found {value:?}"),
                ));
            }
            return Ok(false);
        };
        let name = if pct {
            format!("{}_pct", snake(key))
        } else {
            snake(key)
        };
        let group = match section {
            Section::TraceEvents => "trace_events",
            _ => "shared_lines",
        };
        report
            .profile
            .summary
            .entry(group.to_string())
            .or_default()
            .insert(name, v);
        Ok(true)
    }

    // --- Shared Data Cache Line Table -------------------------------------------------------

    fn table_line(&mut self, no: usize, trimmed: &str) -> Result<bool, ProfileError> {
        let report = self.report.as_mut().expect("a section implies a report");
        if let Some(rest) = header_text(trimmed) {
            let labels = header_labels(rest);
            if labels.iter().any(|l| l == "Index") {
                let line0 = report.prev_hash.take();
                report.note_double_cl(line0.as_deref(), rest);
                report
                    .profile
                    .provenance
                    .settings
                    .insert("table_columns".into(), labels.join(", "));
                report.table = Some(table_keys(&labels));
            }
            report.prev_hash = Some(rest.to_string());
            return Ok(true);
        }
        let tokens: Vec<&str> = trimmed.split_whitespace().collect();
        let is_row = tokens.len() >= 2 && is_uint(tokens[0]) && tokens[1].starts_with("0x");
        if !is_row {
            if is_uint(tokens[0]) {
                return Err(ProfileError::parse(
                    no,
                    "cannot read this Shared Data Cache Line Table row: expected an index and a 0x address",
                ));
            }
            return Ok(false);
        }
        let keys = match &report.table {
            Some(k) => k.clone(),
            None => default_table_keys(tokens.len(), report.snoop).ok_or_else(|| {
                ProfileError::parse(
                    no,
                    format!(
                        "Shared Data Cache Line Table row has {} fields and no header says what they are",
                        tokens.len()
                    ),
                )
            })?,
        };
        if tokens.len() != keys.len() {
            return Err(ProfileError::parse(
                no,
                format!(
                    "Shared Data Cache Line Table row has {} fields, the header announces {}",
                    tokens.len(),
                    keys.len()
                ),
            ));
        }
        let mut line = LineProfile::default();
        let mut totals = Counts::default();
        for (key, tok) in keys.iter().zip(&tokens) {
            match key.as_str() {
                "index" => line.rank = tok.parse().ok(),
                "address" => {
                    line.address = parse_hex(tok).ok_or_else(|| {
                        ProfileError::parse(no, format!("bad cache line address {tok:?}"))
                    })?;
                }
                "data_node" => line.data_nodes = parse_node_list(tok),
                "" => {}
                k => {
                    let v = parse_number(tok).ok_or_else(|| {
                        ProfileError::parse(
                            no,
                            format!("column {k}: expected a number, found {tok:?}"),
                        )
                    })?;
                    match k {
                        "loads" => totals.loads = v,
                        "stores" => totals.stores = v,
                        "lcl_hitm" => totals.lcl_hitm = v,
                        "rmt_hitm" => totals.rmt_hitm = v,
                        "lcl_peer" => totals.lcl_peer = v,
                        "rmt_peer" => totals.rmt_peer = v,
                        _ => {}
                    }
                    line.details.insert(k.to_string(), v);
                }
            }
        }
        if line.address % report.profile.cacheline_size != 0 {
            return Err(ProfileError::parse(
                no,
                format!("{:#x} is not the start of a cache line", line.address),
            ));
        }
        line.totals = Some(totals);
        report.merge_line(line);
        Ok(true)
    }

    // --- Shared Cache Line Distribution Pareto ----------------------------------------------

    fn pareto_line(&mut self, no: usize, trimmed: &str) -> Result<bool, ProfileError> {
        let pending = std::mem::take(&mut self.pending);
        let report = self.report.as_mut().expect("a section implies a report");
        if !pending.is_empty() {
            report.set_pareto_header(&pending);
        }
        if trimmed.starts_with('#') {
            // `#` alone, or a comment: perf's headers were taken above.
            return Ok(true);
        }
        let tokens: Vec<&str> = trimmed.split_whitespace().collect();
        if tokens[0].ends_with('%') {
            report.offset_row(no, &tokens)?;
            return Ok(true);
        }
        if is_uint(tokens[0]) {
            report.cl_header_row(no, &tokens)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn finish(mut self) -> Result<Vec<Profile>, ProfileError> {
        self.close_report();
        let h = &self.header;
        let mut out = Vec::new();
        let mut places = Vec::new();
        for (mut p, place) in self.done {
            if p.lines.is_empty() && p.summary.is_empty() {
                continue;
            }
            places.push(place);
            let prov = &mut p.provenance;
            prov.tool_version = h.tool_version.clone();
            prov.command = h.command.clone();
            prov.machine.cpus = h.cpus_avail.or(h.cpus_online);
            prov.machine.numa_nodes = (h.nodes > 0).then_some(h.nodes);
            prov.machine.description = h.description.clone();
            out.push(p);
        }
        let n = out.len();
        let starts: Vec<String> = out
            .iter()
            .zip(&places)
            .enumerate()
            .map(|(i, (p, (first, _)))| match &p.label {
                Some(l) => format!("{} \"{l}\" at line {first}", i + 1),
                None => format!("{} at line {first}", i + 1),
            })
            .collect();
        for (i, (p, (first, last))) in out.iter_mut().zip(&places).enumerate() {
            let prov = &mut p.provenance;
            prov.settings
                .insert("report".into(), format!("{} of {n}", i + 1));
            prov.settings
                .insert("report_lines".into(), format!("{first}-{last}"));
            if n > 1 {
                let note = format!(
                    "the text holds {n} reports ({}); this is report {} (lines {first}-{last})",
                    starts.join(", "),
                    i + 1
                );
                prov.note = Some(match prov.note.take() {
                    Some(old) => format!("{note}; {old}"),
                    None => note,
                });
            }
        }
        if out.is_empty() {
            return Err(ProfileError::NoData(
                "no perf c2c data found: expected \"Shared Cache Line Distribution Pareto\" rows, \
                 the \"Shared Data Cache Line Table\" or \"Trace Event Information\" (the text \
                 of `perf c2c report --stdio`; `perf report -s type,typeoff` text goes to \
                 --perf-typeoff, `perf script` output to --perf-script)"
                    .into(),
            ));
        }
        Ok(out)
    }
}

impl Report {
    fn new(label: Option<String>, cacheline_size: u64) -> Self {
        let mut profile = Profile::new("perf c2c report", Unit::Samples, cacheline_size);
        profile.label = label;
        Report {
            first_line: 0,
            last_line: 0,
            profile,
            sections_seen: Vec::new(),
            snoop: None,
            table: None,
            pareto: None,
            no_offsets: false,
            no_address: false,
            by_address: Default::default(),
            prev_hash: None,
            current: None,
            in_events: false,
            names: Names::default(),
            rows: Vec::new(),
        }
    }

    /// `--double-cl` reports on 128-byte line pairs; its headers say "Double-Cacheline".
    fn note_double_cl(&mut self, line0: Option<&str>, line1: &str) {
        let text = format!("{} {line1}", line0.unwrap_or(""));
        if text.contains("Double-C") {
            self.profile.cacheline_size = 2 * DEFAULT_CACHELINE_SIZE;
        }
    }

    /// Adds a line from the table or a Pareto header row, merging with what the other gave.
    fn merge_line(&mut self, line: LineProfile) -> usize {
        let lines = &mut self.profile.lines;
        // Indexed by address: a full report lists tens of thousands of lines twice.
        match self.by_address.get(&line.address).copied() {
            Some(i) => {
                let old = &mut lines[i];
                old.rank = old.rank.or(line.rank);
                if old.data_nodes.is_none() {
                    old.data_nodes = line.data_nodes;
                }
                old.details.extend(line.details);
                match (&mut old.totals, line.totals) {
                    (Some(t), Some(n)) => {
                        // The Pareto header knows stores and snoops; loads only the table.
                        let loads = t.loads.max(n.loads);
                        *t = Counts { loads, ..n };
                    }
                    (None, n) => old.totals = n,
                    _ => {}
                }
                i
            }
            None => {
                self.by_address.insert(line.address, lines.len());
                lines.push(line);
                lines.len() - 1
            }
        }
    }

    /// Binds a Pareto header (its lines, top to bottom) to columns, and notes which.
    fn set_pareto_header(&mut self, lines: &[String]) {
        let text = lines.join(" ");
        if text.contains("Double-C") {
            self.profile.cacheline_size = 2 * DEFAULT_CACHELINE_SIZE;
        }
        let (cols, names) = pareto_header_cols(lines);
        if !cols.iter().any(|c| c.is_pct() || *c == Col::Offset) {
            return;
        }
        if cols
            .iter()
            .any(|c| matches!(c, Col::PctRmtPeer | Col::PctLclPeer))
        {
            self.snoop = Some(Snoop::Peer);
        } else if cols
            .iter()
            .any(|c| matches!(c, Col::PctRmtHitm | Col::PctLclHitm))
        {
            self.snoop = Some(Snoop::Hitm);
        }
        self.profile
            .provenance
            .settings
            .insert("pareto_columns".into(), names.join(", "));
        self.pareto = Some(cols);
    }

    /// The percentage columns of the Pareto header, in order: a cache line header row gives
    /// one count for each.
    fn pct_cols(&self) -> Vec<Col> {
        self.pareto
            .as_ref()
            .map(|c| c.iter().copied().filter(|c| c.is_pct()).collect())
            .unwrap_or_default()
    }

    /// A cache line header row names a line this report already holds (the same address, or
    /// the same index): the table is another run of the same thing.
    fn repeats_line(&self, tokens: &[&str]) -> bool {
        let Ok(h) = parse_cl_header(
            0,
            tokens,
            &self.pct_cols(),
            self.snoop.unwrap_or(Snoop::Hitm),
        ) else {
            return false;
        };
        self.profile.lines.iter().any(|l| {
            h.address
                .is_some_and(|a| a == l.address && l.details.get("address_unknown").is_none())
                || (h.index.is_some() && l.rank == h.index)
        })
    }

    fn cl_header_row(&mut self, no: usize, tokens: &[&str]) -> Result<(), ProfileError> {
        let snoop = self.snoop.unwrap_or(Snoop::Hitm);
        let h = parse_cl_header(no, tokens, &self.pct_cols(), snoop)?;
        let cls = self.profile.cacheline_size;
        let mut details = Details::new();
        let address = match h.address {
            Some(a) if a % cls != 0 => {
                return Err(ProfileError::parse(
                    no,
                    format!("{a:#x} is not the start of a {cls}-byte cache line"),
                ));
            }
            Some(a) => a,
            None => {
                // Edited out: lines are told apart by their index, which stands in for the
                // address (marked, so nothing reads it as one).
                self.no_address = true;
                details.insert("address_unknown", 1.0);
                let n = h.index.map_or(self.profile.lines.len() as u64, u64::from);
                n * cls
            }
        };
        let mut totals = Counts {
            stores: h.total(Col::PctStL1Hit) + h.total(Col::PctStL1Miss) + h.total(Col::PctStNa),
            rmt_hitm: h.total(Col::PctRmtHitm),
            lcl_hitm: h.total(Col::PctLclHitm),
            rmt_peer: h.total(Col::PctRmtPeer),
            lcl_peer: h.total(Col::PctLclPeer),
            ..Default::default()
        };
        // A snoop-peer column that does not split local from remote: counted as local (the
        // nearer, cheaper transfer), and kept as printed.
        totals.lcl_peer += h.total(Col::PctPeer);
        for (col, v) in &h.totals {
            let key = match col {
                Col::PctStL1Hit => "st_l1hit",
                Col::PctStL1Miss => "st_l1miss",
                Col::PctStNa => "st_na",
                Col::PctPeer => "peer",
                _ => continue,
            };
            details.insert(key, *v);
        }
        self.end_line();
        let i = self.merge_line(LineProfile {
            address,
            rank: h.index,
            totals: Some(totals),
            details,
            ..Default::default()
        });
        self.current = Some((i, h));
        Ok(())
    }

    fn offset_row(&mut self, no: usize, tokens: &[&str]) -> Result<(), ProfileError> {
        let Some((_, totals)) = &self.current else {
            return Err(ProfileError::parse(
                no,
                "offset row before any cache line header row (the `0 1031 3927 ... 0x...` line)",
            ));
        };
        let snoop = self.snoop.unwrap_or(Snoop::Hitm);
        let inferred;
        let cols: &[Col] = match &self.pareto {
            Some(cols) => cols,
            None => {
                inferred = infer_cols(no, tokens, snoop)?;
                &inferred
            }
        };
        let row = parse_row(no, tokens, cols, self.pareto.is_some())?;
        let cls = self.profile.cacheline_size;
        match row.offset {
            Some(offset) if offset >= cls => {
                return Err(ProfileError::parse(
                    no,
                    format!("offset {offset:#x} is outside a {cls}-byte cache line"),
                ));
            }
            Some(_) => {}
            None if cols.contains(&Col::Offset) => {
                return Err(ProfileError::parse(no, "row has no Offset value"));
            }
            // A table "edited to fit" without the offset column: what is there is imported.
            None => self.no_offsets = true,
        }
        let access = row.into_access(totals, &mut self.names);
        self.rows.push(access);
        Ok(())
    }

    /// The Pareto line being read has all its rows: they move into it in one allocation of
    /// their size (a vector grown row by row keeps up to half its size spare, and shrinking
    /// it in place frees nothing with every allocator).
    fn end_line(&mut self) {
        if let Some((i, _)) = self.current.take() {
            let accesses = &mut self.profile.lines[i].accesses;
            accesses.reserve_exact(self.rows.len());
            accesses.append(&mut self.rows);
        }
    }

    fn finish(mut self) -> Profile {
        self.end_line();
        let mut notes: Vec<&str> = Vec::new();
        if self.no_offsets {
            notes.push(
                "the rows carry no data offsets (the table was edited to fit): members cannot \
                 be named without offsets",
            );
        }
        if self.no_address {
            notes.push("cache line addresses were edited out: lines are told apart by index");
        }
        if !notes.is_empty() {
            let mut all: Vec<String> = self.profile.provenance.note.take().into_iter().collect();
            all.extend(notes.iter().map(|n| n.to_string()));
            self.profile.provenance.note = Some(all.join("; "));
        }
        self.profile.derive_function_groups();
        self.profile
    }
}

// ---------------------------------------------------------------------------------------
// Pareto rows
// ---------------------------------------------------------------------------------------

/// Pareto per-offset columns, by what they mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    PctRmtHitm,
    PctLclHitm,
    PctRmtPeer,
    PctLclPeer,
    /// The snoop-peer share beside the HITM columns (perf 5.19+), local and remote together.
    PctPeer,
    PctStL1Hit,
    PctStL1Miss,
    PctStNa,
    Offset,
    DataNode,
    PaCount,
    Pid,
    Tid,
    CodeAddr,
    CycRmtHitm,
    CycLclHitm,
    CycRmtPeer,
    CycLclPeer,
    /// Mean cycles of peer-snoop loads (local and remote together).
    CycPeer,
    CycLoad,
    Records,
    CpuCount,
    Symbol,
    Object,
    Source,
    Nodes,
    /// A column this importer does not know: one token, skipped.
    Other,
}

impl Col {
    fn is_tail(self) -> bool {
        matches!(self, Col::Symbol | Col::Object | Col::Source | Col::Nodes)
    }

    /// A percentage of one of the line's totals (the cache line header row prints them).
    fn is_pct(self) -> bool {
        matches!(
            self,
            Col::PctRmtHitm
                | Col::PctLclHitm
                | Col::PctRmtPeer
                | Col::PctLclPeer
                | Col::PctPeer
                | Col::PctStL1Hit
                | Col::PctStL1Miss
                | Col::PctStNa
        )
    }
}

/// The columns of a Pareto header and the names they were found under. Aligned headers are
/// read by position (see [`table`]); collapsed ones word by word.
fn pareto_header_cols(lines: &[String]) -> (Vec<Col>, Vec<String>) {
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    // perf prints two lines; a third from the top would be a stray caption.
    let refs = &refs[refs.len().saturating_sub(2)..];
    if table::aligned(refs) {
        let columns = table::header_columns(refs);
        let peer_mode = columns.iter().any(|c| {
            c.group
                .as_deref()
                .is_some_and(|g| g.to_ascii_lowercase().contains("peer"))
        });
        let mut cols = Vec::new();
        let mut names = Vec::new();
        for c in &columns {
            if let Some(col) = col_of(c, cols.last().copied(), peer_mode) {
                cols.push(col);
                names.push(c.full_name());
            }
        }
        return (cols, names);
    }
    let labels = header_labels(refs[refs.len() - 1]);
    let line0 = (refs.len() > 1).then(|| refs[0]);
    let cols = pareto_cols(line0, &labels);
    let names = labels.into_iter().filter(|l| l != "Num").collect();
    (cols, names)
}

/// perf's Pareto vocabulary (`tools/perf/builtin-c2c.c`: the `percent_*`, `mean_*`,
/// `tot_recs`, `cpucnt`, `dcacheline`/`offset`, `iaddr`, `symbol`, `dso`, `cl_srcline` and
/// node dimensions), and the words authors use for them in trimmed tables (`Rmt` over
/// `Hitm%`, `Data` over `offset`, `Load` over `cycles`). `None`: a column rows do not print
/// (`Num`, shown in cache line header rows only).
fn col_of(c: &table::Column, prev: Option<Col>, peer_mode: bool) -> Option<Col> {
    let words: Vec<String> = c
        .words()
        .into_iter()
        .map(|w| w.trim_end_matches('%').to_string())
        .collect();
    let has = |x: &str| words.iter().any(|w| w == x);
    let name = c.name.trim_end_matches('%').to_ascii_lowercase();
    let cycles = has("cycles");
    let col = if name == "num" || name == "index" {
        return None;
    } else if name.starts_with("node{") {
        Col::Nodes
    } else if name == "node" {
        if prev == Some(Col::Offset) {
            Col::DataNode
        } else {
            Col::Nodes
        }
    } else if has("offset") || name == "off" {
        Col::Offset
    } else if name == "code address" || (has("code") && has("address")) {
        Col::CodeAddr
    } else if name == "pa cnt" {
        Col::PaCount
    } else if name == "pid" {
        Col::Pid
    } else if name == "tid" {
        Col::Tid
    } else if has("records") {
        Col::Records
    } else if name == "cnt" {
        Col::CpuCount
    } else if has("symbol") {
        Col::Symbol
    } else if has("object") {
        Col::Object
    } else if name == "source:line" {
        Col::Source
    } else if cycles {
        let rest: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .filter(|w| *w != "cycles")
            .collect();
        match rest.join(" ").as_str() {
            "rmt hitm" => Col::CycRmtHitm,
            "lcl hitm" => Col::CycLclHitm,
            "rmt peer" => Col::CycRmtPeer,
            "lcl peer" => Col::CycLclPeer,
            "peer" => Col::CycPeer,
            "load" | "" => Col::CycLoad,
            _ => Col::Other,
        }
    } else if has("l1") && has("hit") {
        Col::PctStL1Hit
    } else if has("l1") && has("miss") {
        Col::PctStL1Miss
    } else if name == "n/a" || name == "any lvl" || name == "anylvl" {
        Col::PctStNa
    } else if name == "rmthitm" || (has("rmt") && has("hitm")) {
        Col::PctRmtHitm
    } else if name == "lclhitm" || (has("lcl") && has("hitm")) {
        Col::PctLclHitm
    } else if has("rmt") && (has("peer") || peer_mode) {
        Col::PctRmtPeer
    } else if has("lcl") && (has("peer") || peer_mode) {
        Col::PctLclPeer
    } else if name == "rmt" {
        Col::PctRmtHitm
    } else if name == "lcl" {
        Col::PctLclHitm
    } else if name == "peer" {
        Col::PctPeer
    } else {
        Col::Other
    };
    Some(col)
}

/// Column meaning from the header's second line (`line1`), the first line (`line0`) telling
/// HITM from peer where both use the short `Rmt`/`Lcl` labels.
fn pareto_cols(line0: Option<&str>, labels: &[String]) -> Vec<Col> {
    let peer = line0.is_some_and(|l| l.to_ascii_lowercase().contains("peer"));
    let mut cols: Vec<Col> = Vec::new();
    for label in labels {
        let col = match label.as_str() {
            // The cache line number is printed in header rows only (`cl_num_empty`).
            "Num" => continue,
            "RmtHitm" => Col::PctRmtHitm,
            "LclHitm" => Col::PctLclHitm,
            "Peer" => Col::PctPeer,
            "peer" => Col::CycPeer,
            "Any Lvl" | "Anylvl" => Col::PctStNa,
            "Rmt" if peer => Col::PctRmtPeer,
            "Lcl" if peer => Col::PctLclPeer,
            "Rmt" => Col::PctRmtHitm,
            "Lcl" => Col::PctLclHitm,
            "L1 Hit" => Col::PctStL1Hit,
            "L1 Miss" => Col::PctStL1Miss,
            "N/A" => Col::PctStNa,
            "Offset" | "Off" => Col::Offset,
            "Node" if cols.last() == Some(&Col::Offset) => Col::DataNode,
            "PA cnt" => Col::PaCount,
            "Pid" => Col::Pid,
            "Tid" => Col::Tid,
            "Code address" => Col::CodeAddr,
            "rmt hitm" => Col::CycRmtHitm,
            "lcl hitm" => Col::CycLclHitm,
            "rmt peer" => Col::CycRmtPeer,
            "lcl peer" => Col::CycLclPeer,
            "load" => Col::CycLoad,
            "records" => Col::Records,
            "cnt" => Col::CpuCount,
            "Symbol" => Col::Symbol,
            "Object" => Col::Object,
            "Source:Line" => Col::Source,
            l if l == "Node" || l.starts_with("Node{") => Col::Nodes,
            _ => Col::Other,
        };
        cols.push(col);
    }
    cols
}

/// Columns of a headerless (pasted) row, from its shape: leading percentages (4 without the
/// store `N/A` column, 5 with it), the offset, 0-4 data columns before the `0x` code address
/// (Pid; Node + PA cnt; Node + PA cnt + Pid; + Tid), then 5 numbers (3 cycle means, records,
/// cpu count), then symbol, object, source line and nodes.
fn infer_cols(no: usize, tokens: &[&str], snoop: Snoop) -> Result<Vec<Col>, ProfileError> {
    let pcts = tokens.iter().take_while(|t| t.ends_with('%')).count();
    let (rmt, lcl, cyc_rmt, cyc_lcl) = match snoop {
        Snoop::Hitm => (
            Col::PctRmtHitm,
            Col::PctLclHitm,
            Col::CycRmtHitm,
            Col::CycLclHitm,
        ),
        Snoop::Peer => (
            Col::PctRmtPeer,
            Col::PctLclPeer,
            Col::CycRmtPeer,
            Col::CycLclPeer,
        ),
    };
    let mut cols = match pcts {
        4 => vec![rmt, lcl, Col::PctStL1Hit, Col::PctStL1Miss],
        5 => vec![rmt, lcl, Col::PctStL1Hit, Col::PctStL1Miss, Col::PctStNa],
        6 => vec![
            rmt,
            lcl,
            Col::PctPeer,
            Col::PctStL1Hit,
            Col::PctStL1Miss,
            Col::PctStNa,
        ],
        n => {
            return Err(ProfileError::parse(
                no,
                format!("row starts with {n} percentage columns; perf prints 4, 5 or 6"),
            ));
        }
    };
    let truncated = || ProfileError::parse(no, "row ends early (truncated?)");
    if !tokens.get(pcts).ok_or_else(truncated)?.starts_with("0x") {
        return Err(ProfileError::parse(
            no,
            format!(
                "expected the 0x data offset after the percentages, found {:?}",
                tokens[pcts]
            ),
        ));
    }
    cols.push(Col::Offset);
    let rest = &tokens[pcts + 1..];
    let before_code = rest
        .iter()
        .position(|t| t.starts_with("0x"))
        .ok_or_else(|| ProfileError::parse(no, "no 0x code address in the row"))?;
    cols.extend(match before_code {
        0 => &[][..],
        1 => &[Col::Pid][..],
        2 => &[Col::DataNode, Col::PaCount][..],
        3 => &[Col::DataNode, Col::PaCount, Col::Pid][..],
        4 => &[Col::DataNode, Col::PaCount, Col::Pid, Col::Tid][..],
        n => {
            return Err(ProfileError::parse(
                no,
                format!("{n} fields between the offset and the code address; expected at most 4"),
            ));
        }
    });
    cols.push(Col::CodeAddr);
    let numbers = rest[before_code + 1..]
        .iter()
        .take_while(|t| parse_number(t).is_some())
        .count();
    cols.extend_from_slice(&[cyc_rmt, cyc_lcl, Col::CycLoad]);
    if numbers == 6 && pcts == 6 {
        cols.push(Col::CycPeer);
    }
    cols.extend(match numbers - (numbers == 6 && pcts == 6) as usize {
        5 => [Col::Records, Col::CpuCount],
        n => {
            return Err(ProfileError::parse(
                no,
                format!(
                    "{n} numbers after the code address; expected 3 cycle means, records and cpu count"
                ),
            ));
        }
    });
    cols.extend([Col::Symbol, Col::Object, Col::Source, Col::Nodes]);
    Ok(cols)
}

/// One Pareto offset row, as printed.
#[derive(Default)]
struct Row {
    pct: BTreeMap<&'static str, f64>,
    cyc: BTreeMap<&'static str, f64>,
    offset: Option<u64>,
    data_nodes: Option<Vec<u32>>,
    pa_count: Option<f64>,
    pid: Option<i64>,
    tid: Option<(i64, Option<String>)>,
    code_addr: Option<u64>,
    records: Option<f64>,
    cpu_count: Option<u32>,
    privilege: Option<Privilege>,
    symbol: Option<String>,
    object: Option<String>,
    source: Option<String>,
    nodes: Option<NodeInfo>,
}

fn parse_row(
    no: usize,
    tokens: &[&str],
    cols: &[Col],
    from_header: bool,
) -> Result<Row, ProfileError> {
    let mut row = Row::default();
    let mut i = 0;
    let truncated = |what: &str| {
        ProfileError::parse(
            no,
            format!(
                "row has {} fields and ends before the {what} column (truncated?)",
                tokens.len()
            ),
        )
    };
    let fixed: Vec<Col> = cols.iter().copied().filter(|c| !c.is_tail()).collect();
    for (ci, &col) in fixed.iter().enumerate() {
        let tok = *tokens.get(i).ok_or_else(|| truncated(col_name(col)))?;
        i += 1;
        let bad = |what: &str| {
            ProfileError::parse(
                no,
                format!("{} column: expected {what}, found {tok:?}", col_name(col)),
            )
        };
        match col {
            Col::PctRmtHitm
            | Col::PctLclHitm
            | Col::PctRmtPeer
            | Col::PctLclPeer
            | Col::PctPeer
            | Col::PctStL1Hit
            | Col::PctStL1Miss
            | Col::PctStNa => {
                let v = tok
                    .strip_suffix('%')
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| (0.0..=100.0).contains(v))
                    .ok_or_else(|| bad("a percentage from 0% to 100%"))?;
                row.pct.insert(col_name(col), v);
            }
            Col::Offset => row.offset = Some(parse_hex(tok).ok_or_else(|| bad("a 0x offset"))?),
            Col::DataNode => row.data_nodes = parse_node_list(tok),
            Col::PaCount => row.pa_count = Some(parse_number(tok).ok_or_else(|| bad("a count"))?),
            Col::Pid => row.pid = Some(tok.parse().map_err(|_| bad("a pid"))?),
            Col::Tid => {
                // `tid:comm`; a comm with spaces spills into more tokens.
                let mut text = tok.to_string();
                if fixed.get(ci + 1) == Some(&Col::CodeAddr) {
                    while i < tokens.len() && !tokens[i].starts_with("0x") {
                        text.push(' ');
                        text.push_str(tokens[i]);
                        i += 1;
                    }
                }
                let (tid, comm) = match text.split_once(':') {
                    Some((t, c)) => (t, Some(c.trim().to_string()).filter(|c| !c.is_empty())),
                    None => (text.as_str(), None),
                };
                row.tid = Some((tid.trim().parse().map_err(|_| bad("tid:comm"))?, comm));
            }
            Col::CodeAddr => {
                row.code_addr = Some(parse_hex(tok).ok_or_else(|| bad("a 0x code address"))?)
            }
            Col::CycRmtHitm
            | Col::CycLclHitm
            | Col::CycRmtPeer
            | Col::CycLclPeer
            | Col::CycPeer
            | Col::CycLoad => {
                let v = parse_number(tok).ok_or_else(|| bad("mean cycles"))?;
                row.cyc.insert(col_name(col), v);
            }
            Col::Records => row.records = Some(parse_number(tok).ok_or_else(|| bad("a count"))?),
            Col::CpuCount => row.cpu_count = Some(tok.parse().map_err(|_| bad("a CPU count"))?),
            Col::Other | Col::Symbol | Col::Object | Col::Source | Col::Nodes => {}
        }
    }
    let tail_cols: Vec<Col> = cols.iter().copied().filter(|c| c.is_tail()).collect();
    parse_tail(
        no,
        &tokens[i.min(tokens.len())..],
        &tail_cols,
        from_header,
        &mut row,
    )?;
    Ok(row)
}

/// Symbol, object, source line and nodes: free text, split from both ends.
fn parse_tail(
    no: usize,
    tokens: &[&str],
    cols: &[Col],
    from_header: bool,
    row: &mut Row,
) -> Result<(), ProfileError> {
    let has = |c: Col| cols.contains(&c);
    let mut toks: Vec<&str> = tokens.to_vec();
    let mut privilege = None;
    if has(Col::Symbol)
        && let Some(p) = toks.first().and_then(|t| privilege_marker(t))
    {
        privilege = Some(p);
        toks.remove(0);
    }
    // Without a header, a source column is assumed when there is room for it.
    let source = if from_header {
        has(Col::Source)
    } else {
        has(Col::Source) && non_node_len(&toks) >= 3
    };
    let needed = has(Col::Symbol) as usize + has(Col::Object) as usize + source as usize;
    if has(Col::Nodes) {
        if let Some(start) = toks.iter().position(|t| t.contains('{')) {
            row.nodes = Some(parse_node_groups(&toks[start..].join(" ")));
            toks.truncate(start);
        } else {
            let mut start = toks.len();
            while start > needed && is_uint(toks[start - 1]) {
                start -= 1;
            }
            let ids: Vec<u32> = toks[start..]
                .iter()
                .filter_map(|t| t.parse().ok())
                .collect();
            if !ids.is_empty() {
                row.nodes = Some(NodeInfo {
                    nodes: ids,
                    ..Default::default()
                });
            }
            toks.truncate(start);
        }
    }
    if toks.len() < needed {
        return Err(ProfileError::parse(
            no,
            "row ends before its symbol / object / source columns (truncated?)",
        ));
    }
    if source {
        row.source = toks.pop().map(str::to_string);
    }
    if has(Col::Object) {
        row.object = toks.pop().map(str::to_string);
    }
    if has(Col::Symbol) {
        row.symbol = Some(toks.join(" "));
    } else if !toks.is_empty() && from_header {
        return Err(ProfileError::parse(
            no,
            format!("{} more fields than the header announces", toks.len()),
        ));
    }
    row.privilege = privilege;
    Ok(())
}

/// Tokens before the first node-group token (`0{...`), for the headerless source guess.
fn non_node_len(toks: &[&str]) -> usize {
    let end = toks
        .iter()
        .position(|t| t.contains('{'))
        .unwrap_or(toks.len());
    let mut n = end;
    while n > 0 && is_uint(toks[n - 1]) {
        n -= 1;
    }
    n
}

fn privilege_marker(tok: &str) -> Option<Privilege> {
    let b = tok.as_bytes();
    if b.len() == 3 && b[0] == b'[' && b[2] == b']' {
        Privilege::from_perf_marker(b[1] as char)
    } else {
        None
    }
}

fn col_name(c: Col) -> &'static str {
    match c {
        Col::PctRmtHitm => "rmt_hitm",
        Col::PctLclHitm => "lcl_hitm",
        Col::PctRmtPeer => "rmt_peer",
        Col::PctLclPeer => "lcl_peer",
        Col::PctPeer => "peer",
        Col::PctStL1Hit => "st_l1hit",
        Col::PctStL1Miss => "st_l1miss",
        Col::PctStNa => "st_na",
        Col::Offset => "Offset",
        Col::DataNode => "Node",
        Col::PaCount => "PA cnt",
        Col::Pid => "Pid",
        Col::Tid => "Tid",
        Col::CodeAddr => "Code address",
        Col::CycRmtHitm => "rmt hitm",
        Col::CycLclHitm => "lcl hitm",
        Col::CycRmtPeer => "rmt peer",
        Col::CycLclPeer => "lcl peer",
        Col::CycPeer => "peer cycles",
        Col::CycLoad => "load",
        Col::Records => "records",
        Col::CpuCount => "cpu cnt",
        Col::Symbol => "Symbol",
        Col::Object => "Object",
        Col::Source => "Source:Line",
        Col::Nodes => "Node",
        Col::Other => "unknown",
    }
}

impl Row {
    /// Percentages of the line's totals become counts; loads are the records that are not
    /// stores; cycle means times their counts give total load cycles.
    fn into_access(self, h: &ClHeader, names: &mut Names) -> Access {
        let share = |col: Col| {
            self.pct
                .get(col_name(col))
                .map_or(0.0, |p| (p / 100.0 * h.total(col)).round())
        };
        let stores = share(Col::PctStL1Hit) + share(Col::PctStL1Miss) + share(Col::PctStNa);
        let mut counts = Counts {
            stores,
            rmt_hitm: share(Col::PctRmtHitm),
            lcl_hitm: share(Col::PctLclHitm),
            rmt_peer: share(Col::PctRmtPeer),
            lcl_peer: share(Col::PctLclPeer) + share(Col::PctPeer),
            ..Default::default()
        };
        let transfers = counts.transfers();
        // Records count loads and stores; without them, HITM/peer loads are all we know.
        counts.loads = match self.records {
            Some(r) => (r - stores).max(transfers),
            None => transfers,
        };
        let latency = self.latency(&counts);
        let mut details = Details::new();
        if let Some(r) = self.records {
            details.insert("records", r);
        }
        if let Some(pa) = self.pa_count {
            details.insert("pa_count", pa);
        }
        let mut cpus = self.cpu_count.map(CpuUse::count);
        let mut nodes = None;
        if let Some(n) = self.nodes {
            if !n.cpus.is_empty() {
                let count = cpus.as_ref().and_then(|c| c.count);
                let mut c = CpuUse::list(n.cpus);
                c.count = count.or(c.count);
                cpus = Some(c);
            }
            nodes = Some(n.nodes);
        }
        let threads = (self.pid.is_some() || self.tid.is_some()).then(|| ThreadUse {
            count: None,
            pids: self.pid.into_iter().collect(),
            tids: self.tid.iter().map(|t| t.0).collect(),
            comms: self.tid.iter().filter_map(|t| t.1.clone()).collect(),
        });
        Access {
            offset: self.offset,
            counts,
            latency,
            cpus,
            nodes,
            data_nodes: self.data_nodes,
            threads: threads.map(Box::new),
            code: Some(code_location(
                self.symbol,
                self.code_addr,
                self.object,
                self.source,
                self.privilege,
                names,
            )),
            details,
            ..Default::default()
        }
    }

    fn latency(&self, c: &Counts) -> Option<Latency> {
        if self.cyc.is_empty() {
            return None;
        }
        // perf prints 0 for a mean over no samples: that is "unknown", not "free".
        let mean = |k: &str| self.cyc.get(k).copied().filter(|&v| v > 0.0);
        let l = Latency {
            mean_load: mean("load"),
            mean_lcl_hitm: mean("lcl hitm"),
            mean_rmt_hitm: mean("rmt hitm"),
            mean_lcl_peer: mean("lcl peer").or(mean("peer cycles")),
            mean_rmt_peer: mean("rmt peer"),
            ..Default::default()
        };
        let other_loads = (c.loads - c.transfers()).max(0.0);
        let total = l.mean_load.unwrap_or(0.0) * other_loads
            + l.mean_lcl_hitm.unwrap_or(0.0) * c.lcl_hitm
            + l.mean_rmt_hitm.unwrap_or(0.0) * c.rmt_hitm
            + l.mean_lcl_peer.unwrap_or(0.0) * c.lcl_peer
            + l.mean_rmt_peer.unwrap_or(0.0) * c.rmt_peer;
        Some(Latency {
            total_cycles: (total > 0.0 && total.is_finite()).then_some(total),
            ..l
        })
    }
}

fn code_location(
    symbol: Option<String>,
    address: Option<u64>,
    object: Option<String>,
    source: Option<String>,
    privilege: Option<Privilege>,
    names: &mut Names,
) -> CodeLocation {
    // perf prints the address where it has no symbol.
    let symbol = symbol.filter(|s| !s.is_empty() && parse_hex(s).is_none());
    let mut loc = CodeLocation {
        symbol: symbol.map(|s| names.get(&s)),
        address,
        object: object.map(|o| names.get(&o)),
        privilege,
        ..Default::default()
    };
    if let Some(src) = source {
        // Without debug info perf's source column is `symbol+offset`.
        let sym_off = src.rsplit_once('+').and_then(|(s, off)| {
            let off = parse_hex(off).or_else(|| off.parse().ok())?;
            (Some(s) == loc.symbol.as_deref()).then_some(off)
        });
        match sym_off {
            Some(off) => loc.symbol_offset = Some(off),
            None if src != "??:0" && !src.is_empty() => loc.source = Some(names.get(&src)),
            None => {}
        }
    }
    loc
}

/// A Pareto cache line header row: the line's index (perf's `Num`; trimmed tables drop it),
/// one count per percentage column of the rows below (HITM or peer, [peer,] store L1 hit,
/// L1 miss, [N/A]; or the author's subset), and the line's address (edited out at times).
#[derive(Clone, Debug)]
struct ClHeader {
    index: Option<u32>,
    totals: Vec<(Col, f64)>,
    address: Option<u64>,
}

impl ClHeader {
    fn total(&self, col: Col) -> f64 {
        self.totals
            .iter()
            .find(|(c, _)| *c == col)
            .map_or(0.0, |(_, v)| *v)
    }
}

/// Reads a cache line header row against the percentage columns of the header (`pct`), or,
/// without a header, perf's own order told by the number of fields.
fn parse_cl_header(
    no: usize,
    tokens: &[&str],
    pct: &[Col],
    snoop: Snoop,
) -> Result<ClHeader, ProfileError> {
    let n = tokens.len();
    let address = match tokens.last() {
        Some(t) if t.starts_with("0x") || t.starts_with("0X") => {
            Some(parse_hex(t).ok_or_else(|| {
                ProfileError::parse(
                    no,
                    format!("cache line header row: expected a 0x address, found {t:?}"),
                )
            })?)
        }
        _ => None,
    };
    let nums = &tokens[..n - address.is_some() as usize];
    let (rmt, lcl) = match snoop {
        Snoop::Hitm => (Col::PctRmtHitm, Col::PctLclHitm),
        Snoop::Peer => (Col::PctRmtPeer, Col::PctLclPeer),
    };
    let cols: Vec<Col> = if !pct.is_empty() {
        pct.to_vec()
    } else {
        let perf_order = match nums.len() {
            5 if address.is_some() => vec![rmt, lcl, Col::PctStL1Hit, Col::PctStL1Miss],
            6 if address.is_some() => {
                vec![rmt, lcl, Col::PctStL1Hit, Col::PctStL1Miss, Col::PctStNa]
            }
            7 if address.is_some() => vec![
                rmt,
                lcl,
                Col::PctPeer,
                Col::PctStL1Hit,
                Col::PctStL1Miss,
                Col::PctStNa,
            ],
            _ => {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "cache line header row has {n} fields, expected 6, 7 or 8 (index, \
                         remote, local, [peer,] store L1 hit, L1 miss, [N/A,] address)"
                    ),
                ));
            }
        };
        perf_order
    };
    let has_index = if nums.len() == cols.len() + 1 {
        true
    } else if nums.len() == cols.len() {
        false
    } else {
        return Err(ProfileError::parse(
            no,
            format!(
                "cache line header row has {n} fields; the header's {} percentage columns \
                 call for {} counts, an optional index and the address",
                cols.len(),
                cols.len()
            ),
        ));
    };
    let num = |t: &str| {
        t.parse::<u64>().map(|v| v as f64).map_err(|_| {
            ProfileError::parse(
                no,
                format!("cache line header row: expected a count, found {t:?}"),
            )
        })
    };
    let index =
        if has_index {
            Some(nums[0].parse().map_err(|_| {
                ProfileError::parse(no, format!("bad cache line index {:?}", nums[0]))
            })?)
        } else {
            None
        };
    let mut totals = Vec::with_capacity(cols.len());
    for (col, t) in cols.iter().zip(&nums[has_index as usize..]) {
        totals.push((*col, num(t)?));
    }
    Ok(ClHeader {
        index,
        totals,
        address,
    })
}

/// A table header line: `#`-prefixed as perf prints it, or pasted without the `#`.
fn header_text(trimmed: &str) -> Option<&str> {
    if let Some(rest) = trimmed.strip_prefix('#') {
        return Some(rest);
    }
    const GROUPS: &[&str] = &[
        "Store Refs",
        "Data address",
        "Load Hitm",
        "Load Peer",
        "Core Load Hit",
        "Peer Snoop",
        "Cacheline",
    ];
    let first = trimmed.split_whitespace().next().unwrap_or("");
    let labelled = (trimmed.contains("Offset") && trimmed.contains("Symbol"))
        || first == "Index"
        || first == "Num";
    (labelled || GROUPS.iter().any(|g| trimmed.contains(g))).then_some(trimmed)
}

/// A cache line header row outside a section: counts then a `0x` address; or, under a
/// header that was just read, counts alone (an address edited out).
fn looks_like_cl_header(tokens: &[&str], under_header: bool) -> bool {
    let Some((last, counts)) = tokens.split_last() else {
        return false;
    };
    if counts.len() >= 2 && counts.iter().all(|t| is_uint(t)) && parse_hex(last).is_some() {
        return last.starts_with("0x");
    }
    under_header && tokens.len() >= 2 && tokens.iter().all(|t| is_uint(t))
}

/// Words of perf's c2c column headers and of the trimmed headers authors write.
const HEADER_WORDS: &[&str] = &[
    "num",
    "index",
    "rmt",
    "lcl",
    "tot",
    "hitm",
    "rmthitm",
    "lclhitm",
    "peer",
    "snoop",
    "store",
    "stores",
    "refs",
    "l1",
    "hit",
    "miss",
    "n/a",
    "any",
    "lvl",
    "anylvl",
    "data",
    "address",
    "offset",
    "off",
    "node",
    "pa",
    "cnt",
    "code",
    "cycles",
    "load",
    "loads",
    "total",
    "records",
    "cpu",
    "symbol",
    "shared",
    "object",
    "source:line",
    "pid",
    "tid",
    "cacheline",
    "remote",
    "local",
    "l1hit",
    "l1miss",
];

/// A line of a Pareto header (perf's `#` lines or a paste's own): mostly header words, no
/// numbers. Returned with a `#` prefix blanked, so columns keep their positions.
fn header_line(text: &str) -> Option<String> {
    let t = text.trim_start();
    let content = t.strip_prefix('#').unwrap_or(t);
    if content.contains(" : ") {
        // `# perf version : 6.4.0`, the perf.data header.
        return None;
    }
    let words: Vec<String> = content
        .split_whitespace()
        .map(|w| {
            w.trim_matches('-')
                .trim_end_matches('%')
                .to_ascii_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() < 2
        || words
            .iter()
            .any(|w| w.starts_with("0x") || w.parse::<f64>().is_ok())
    {
        return None;
    }
    let known = words
        .iter()
        .filter(|w| {
            HEADER_WORDS.contains(&w.as_str())
                || w.starts_with("node{")
                || w.starts_with('%')
                || w.ends_with('}')
        })
        .count();
    (known * 4 >= words.len() * 3).then(|| text.replacen('#', " ", 1))
}

/// A `key : value` line of perf's totals pasted without its section title.
fn summary_section_of(key: &str) -> Option<Section> {
    match key {
        "Total records"
        | "Locked Load/Store Operations"
        | "Load Operations"
        | "Load Local HITM"
        | "Load Remote HITM"
        | "Store Operations" => Some(Section::TraceEvents),
        "Total Shared Cache Lines" | "Load HITs on shared lines" => Some(Section::SharedLines),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Shared Data Cache Line Table columns
// ---------------------------------------------------------------------------------------

/// Keys for the table's columns. Labels repeat (`Total`, `Lcl`, `Rmt`, a second
/// `LclHitm`), so each is read in the context of the one before, the way the header's
/// first line groups them. Repeated columns get an empty key and are skipped.
fn table_keys(labels: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for label in labels {
        let prev = keys.last().map(String::as_str).unwrap_or("");
        let seen = |k: &str| keys.iter().any(|x| x == k);
        let key = match label.as_str() {
            "Index" => "index",
            "Address" | "Cacheline" => "address",
            "Node" => "data_node",
            "PA cnt" => "pa_count",
            "Hitm" | "Snoop" => "percent_costly_snoop",
            // Arm SPE prints the percentage as `Snoop`/`Peer` right after the line's
            // address columns; elsewhere `Peer` is the count of peer snoops (perf 5.19+).
            "Peer" if prev == "pa_count" => "percent_costly_snoop",
            "Peer" => "tot_peer",
            "Anylvl" | "Any Lvl" => "st_na",
            "Total" if prev == "percent_costly_snoop" => {
                if labels.iter().any(|l| l == "Snoop") {
                    "tot_peer"
                } else {
                    "tot_hitm"
                }
            }
            "Total" if prev == "rmt_hitm" || prev == "rmt_peer" => "stores",
            "Local" => "lcl_peer",
            "Remote" => "rmt_peer",
            "LclHitm" if seen("lcl_hitm") => "",
            "RmtHitm" if seen("rmt_hitm") => "",
            "LclHitm" => "lcl_hitm",
            "RmtHitm" => "rmt_hitm",
            "Lcl" if prev == "tot_hitm" => "lcl_hitm",
            "Lcl" if prev == "tot_peer" => "lcl_peer",
            "Lcl" => "dram_lcl",
            "Rmt" if prev == "lcl_hitm" => "rmt_hitm",
            "Rmt" if prev == "lcl_peer" => "rmt_peer",
            "Rmt" if prev == "dram_lcl" => "dram_rmt",
            "Rmt" if prev == "ld_llchit" => "ld_rmthit",
            "records" => "records",
            "Loads" => "loads",
            "Stores" => "stores",
            "L1Hit" => "st_l1hit",
            "L1Miss" => "st_l1miss",
            "N/A" => "st_na",
            "FB" => "ld_fbhit",
            "L1" => "ld_l1hit",
            "L2" => "ld_l2hit",
            "LclHit" | "Llc" => "ld_llchit",
            "RmtHit" => "ld_rmthit",
            "Ld Miss" => "ld_llcmiss",
            other => {
                keys.push(snake(other));
                continue;
            }
        };
        keys.push(key.to_string());
    }
    keys
}

/// The table's columns when the header was not pasted: current perf (23 columns) and 4.x
/// (19 columns).
fn default_table_keys(n: usize, snoop: Option<Snoop>) -> Option<Vec<String>> {
    let labels: &[&str] = match (n, snoop) {
        (23, Some(Snoop::Peer)) => &[
            "Index", "Address", "Node", "PA cnt", "Snoop", "Total", "Local", "Remote", "records",
            "Loads", "Stores", "L1Hit", "L1Miss", "N/A", "FB", "L1", "L2", "LclHit", "LclHitm",
            "RmtHit", "RmtHitm", "Lcl", "Rmt",
        ],
        (23, _) => &[
            "Index", "Address", "Node", "PA cnt", "Hitm", "Total", "LclHitm", "RmtHitm", "records",
            "Loads", "Stores", "L1Hit", "L1Miss", "N/A", "FB", "L1", "L2", "LclHit", "LclHitm",
            "RmtHit", "RmtHitm", "Lcl", "Rmt",
        ],
        (19, _) => &[
            "Index",
            "Cacheline",
            "records",
            "Hitm",
            "Total",
            "Lcl",
            "Rmt",
            "Total",
            "L1Hit",
            "L1Miss",
            "Lcl",
            "Rmt",
            "Ld Miss",
            "Loads",
            "FB",
            "L1",
            "L2",
            "Llc",
            "Rmt",
        ],
        _ => return None,
    };
    let labels: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    Some(table_keys(&labels))
}

// ---------------------------------------------------------------------------------------
// Small parsers
// ---------------------------------------------------------------------------------------

/// Header labels from a `#` line, multi-word labels kept together.
fn header_labels(line: &str) -> Vec<String> {
    const PAIRS: &[&str] = &[
        "L1 Hit",
        "L1 Miss",
        "PA cnt",
        "Code address",
        "rmt hitm",
        "lcl hitm",
        "rmt peer",
        "lcl peer",
        "Ld Miss",
        "Any Lvl",
    ];
    let words: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w.contains('{') && !w.contains('}') {
            // `Node{cpus %hitms %stores}`
            let mut label = w.to_string();
            i += 1;
            while i < words.len() {
                label.push(' ');
                label.push_str(words[i]);
                i += 1;
                if words[i - 1].contains('}') {
                    break;
                }
            }
            out.push(label);
            continue;
        }
        if let Some(next) = words.get(i + 1) {
            let pair = format!("{w} {next}");
            if PAIRS.contains(&pair.as_str()) {
                out.push(pair);
                i += 2;
                continue;
            }
        }
        out.push(w.to_string());
        i += 1;
    }
    out
}

/// Per-node CPU information from the last column.
#[derive(Default, Debug)]
struct NodeInfo {
    nodes: Vec<u32>,
    /// CPUs listed with `-NN` (`0{0-39}`).
    cpus: Vec<u32>,
}

/// `0{0-39} 1{40-79}` (`-NN`) or `0{ 2 100.0%  n/a} 1{...}` (`-N`).
fn parse_node_groups(text: &str) -> NodeInfo {
    let mut info = NodeInfo::default();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let node = rest[..open]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok());
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let inner = rest[open + 1..open + close].trim();
        if let Some(n) = node {
            info.nodes.push(n);
        }
        // `-NN` lists CPUs; `-N` gives counts and percentages, which the row's own CPU
        // count already covers.
        if !inner.contains(['%', ' ', 'n']) {
            push_cpu_list(inner, &mut info.cpus);
        }
        rest = &rest[open + close + 1..];
    }
    info
}

/// `0-3,8,10-11` → [0, 1, 2, 3, 8, 10, 11]; bounded so hostile ranges cannot run away.
fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    push_cpu_list(text, &mut out);
    out
}

/// Appends the CPUs of `text` to `out`, [`MAX_CPUS`] at most in all.
fn push_cpu_list(text: &str, out: &mut Vec<u32>) {
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (part.parse(), part.parse()),
        };
        if let (Ok(lo), Ok(hi)) = (lo, hi)
            && lo <= hi
            && hi < MAX_CPUS
        {
            let room = MAX_CPUS as usize - out.len().min(MAX_CPUS as usize);
            out.extend((lo..=hi).take(room));
        }
    }
}

/// More CPUs than any machine perf runs on; a bound for parsing lists.
const MAX_CPUS: u32 = 1 << 16;

/// The data `Node` column: `1`, `0-1`, `0,2` or `N/A`.
fn parse_node_list(tok: &str) -> Option<Vec<u32>> {
    let nodes = parse_cpu_list(tok);
    (!nodes.is_empty()).then_some(nodes)
}

fn parse_number(tok: &str) -> Option<f64> {
    let t = tok.strip_suffix('%').unwrap_or(tok);
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// printf's spellings of a value that is not a finite number: `nan`, `-nan`, `inf`, `-inf`
/// (any case; C libraries differ), `infinity`.
fn is_not_a_number(tok: &str) -> bool {
    let t = tok.trim_start_matches(['-', '+']).to_ascii_lowercase();
    matches!(t.as_str(), "nan" | "inf" | "infinity") || t.starts_with("nan(")
}

fn is_uint(tok: &str) -> bool {
    !tok.is_empty() && tok.len() <= 20 && tok.bytes().all(|b| b.is_ascii_digit())
}

fn is_rule(trimmed: &str, c: char) -> bool {
    trimmed.len() >= 8 && trimmed.chars().all(|x| x == c)
}

/// Mail quoting (`> `, `>> `) in front of a pasted report: one blank after each `>` goes
/// with it, the rest is the text's own indentation (which aligns its columns).
fn strip_quote(raw: &str) -> &str {
    let t = raw.trim_start();
    if !t.starts_with('>') {
        return raw;
    }
    let mut s = t;
    while let Some(rest) = s.strip_prefix('>') {
        s = rest.strip_prefix(' ').unwrap_or(rest);
    }
    s
}

/// A prose line that can name the next report: "Baseline:", "With this change:".
/// A mail author's heading over a report: short, and naming a side of a comparison
/// ("Baseline:", "With this change:", "Before", "after this series:", "v2:", "Without the
/// patch:", "patched kernel:"). Sentences that merely mention one ("With this change,
/// Pipe-based Context Switching 160 parallel score is") are not headings: they are long or
/// do not end the line with a colon.
fn is_mail_heading(trimmed: &str) -> bool {
    let t = trimmed.trim_end_matches(':').trim().to_ascii_lowercase();
    if t.is_empty() || t.len() > 80 {
        return false;
    }
    let words: Vec<&str> = t
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let colon = trimmed.ends_with(':');
    if !(colon || words.len() <= 3) {
        return false;
    }
    let version = |w: &str| {
        w.strip_prefix('v')
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    };
    let side = [
        "baseline",
        "base",
        "before",
        "after",
        "without",
        "patched",
        "unpatched",
        "vanilla",
        "original",
        "upstream",
    ];
    words.iter().any(|w| side.contains(w) || version(w))
        || t.starts_with("with this")
        || t.starts_with("with the patch")
        || t.starts_with("with patch")
}

fn label_from(trimmed: &str) -> Option<String> {
    let label = trimmed.trim_end_matches(':').trim();
    (!label.is_empty() && label.len() <= 80 && label.chars().any(char::is_alphabetic))
        .then(|| label.to_string())
}

/// `Load Local HITM` → `load_local_hitm`; `LLC Misses to Remote cache (HITM)` →
/// `llc_misses_to_remote_cache_hitm`.
fn snake(label: &str) -> String {
    let mut out = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_labels_keep_multiword_names() {
        let l = header_labels(
            "   Num  RmtHitm  LclHitm   L1 Hit  L1 Miss      N/A    Offset  Node  PA cnt  Code address  rmt hitm  lcl hitm  load  records  cnt  Symbol  Object  Source:Line  Node{cpus %hitms %stores}",
        );
        assert_eq!(l[3], "L1 Hit");
        assert_eq!(l[8], "PA cnt");
        assert_eq!(l.last().unwrap(), "Node{cpus %hitms %stores}");
        let cols = pareto_cols(Some("----- HITM -----"), &l);
        assert_eq!(cols[0], Col::PctRmtHitm);
        assert_eq!(cols[6], Col::DataNode);
        assert_eq!(*cols.last().unwrap(), Col::Nodes);
    }

    #[test]
    fn table_keys_disambiguate_repeated_labels() {
        let labels: Vec<String> = "Index Cacheline records Hitm Total Lcl Rmt Total L1Hit L1Miss Lcl Rmt Ld Miss Loads FB L1 L2 Llc Rmt"
            .split(' ')
            .map(String::from)
            .collect();
        let labels = header_labels(&labels.join(" "));
        let keys = table_keys(&labels);
        assert_eq!(
            keys,
            [
                "index",
                "address",
                "records",
                "percent_costly_snoop",
                "tot_hitm",
                "lcl_hitm",
                "rmt_hitm",
                "stores",
                "st_l1hit",
                "st_l1miss",
                "dram_lcl",
                "dram_rmt",
                "ld_llcmiss",
                "loads",
                "ld_fbhit",
                "ld_l1hit",
                "ld_l2hit",
                "ld_llchit",
                "ld_rmthit"
            ]
        );
    }

    #[test]
    fn node_groups() {
        let n = parse_node_groups("0{0-3,8} 1{40-41}");
        assert_eq!(n.nodes, [0, 1]);
        assert_eq!(n.cpus, [0, 1, 2, 3, 8, 40, 41]);
        let n = parse_node_groups("0{ 2 100.0%    n/a} 1{ 1  50.0%  20.0%}");
        assert_eq!(n.nodes, [0, 1]);
        assert!(n.cpus.is_empty());
    }

    #[test]
    fn source_column_gives_symbol_offset() {
        let loc = code_location(
            Some("update_cfs_group".into()),
            Some(0x10),
            None,
            Some("update_cfs_group+78".into()),
            None,
            &mut Names::default(),
        );
        assert_eq!(loc.symbol_offset, Some(78));
        assert_eq!(loc.source, None);
        assert_eq!(loc.display(), "update_cfs_group+78");
    }

    #[test]
    fn snake_names() {
        assert_eq!(
            snake("LLC Misses to Remote cache (HITM)"),
            "llc_misses_to_remote_cache_hitm"
        );
        assert_eq!(snake("Loads - uncacheable"), "loads_uncacheable");
    }
}
