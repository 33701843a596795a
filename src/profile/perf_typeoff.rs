//! Importer for perf's data-type profiling: `perf report --stdio -s type,typeoff` (Linux
//! 6.8+, after `perf mem record` or `perf record -e <precise memory event>`).
//!
//! perf resolves each sampled memory access to the data type and the offset in it from the
//! instruction and DWARF, and prints one row per (type, offset) with the share of the event
//! it took:
//!
//! ```text
//! # Samples: 12K of event 'cpu/mem-loads,ldlat=30/P'
//! # Overhead  Data Type  Data Type Offset
//!      6.52%  struct task_struct  struct task_struct +800 (cpus_ptr)
//! ```
//!
//! The `typeoff` column is `<type> +<offset> (<member path>)`: the offset decimal up to perf
//! 6.11 and hex (`+0x320`, `+0` for zero) from 6.12, the member path joined with dots
//! (`se.avg.load_avg`) or `no field` for types without members. The pseudo types
//! `(unknown)`, `(stack operation)` and `(stack canary)` carry no type; perf 6.15+ prints
//! them without offset. `--hierarchy` prints one level per sort key, indented by three
//! columns; other options add columns (`-n` Samples, `--show-total-period` Period, `--group`
//! one number per event of the group, further sort keys such as `sym`, `mem`, `snoop`,
//! `locked`). Columns are read from the header line by name; when the header is gone (a mail
//! paste, whitespace collapsed) they are inferred from each row's shape. See
//! `docs/profile.md` for the rules and how overhead becomes counts.

use std::collections::BTreeMap;

use super::error::ProfileError;
use super::model::{
    Access, CodeLocation, Counts, CpuUse, DEFAULT_CACHELINE_SIZE, Privilege, Profile, Unit,
    parse_hex,
};

/// `provenance.tool` of the profiles this importer makes.
pub const TOOL: &str = "perf report -s type,typeoff";

/// Columns of one hierarchy level are indented this much per level (perf's
/// `HIERARCHY_INDENT`).
const HIERARCHY_INDENT: usize = 3;

/// Reads `perf report --stdio` output sorted by `type,typeoff` (plain, `--hierarchy`, with
/// extra columns, or pasted into mail) into one profile of named types.
pub fn import_perf_typeoff(text: &str) -> Result<Profile, ProfileError> {
    let mut parser = Parser::default();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        // Mail from HTML clients turns spaces into no-break spaces.
        let raw = raw.replace('\u{a0}', " ");
        let line = unquote(&raw);
        // Quoted-printable mail splits long lines with a trailing '=' ("soft line break").
        let (no, joined) = match pending.take() {
            Some((no, mut head)) => {
                head.push_str(line.trim_start());
                (no, head)
            }
            None => (i + 1, line.to_string()),
        };
        if joined.ends_with('=') && looks_like_row(&joined) {
            let mut head = joined;
            head.pop();
            pending = Some((no, head));
            continue;
        }
        parser.line(no, &joined)?;
    }
    if let Some((no, head)) = pending {
        parser.line(no, &head)?;
    }
    parser.finish()
}

// ---------------------------------------------------------------------------------------
// Columns
// ---------------------------------------------------------------------------------------

/// A numeric column before the sort keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    /// `Overhead` (or `Self` with call graphs): the row's share of the event's period.
    Overhead,
    /// Other percentages (`Children`, `Latency`, `sys`, `usr`, ...): read, not used.
    OtherPct,
    /// `Samples` (`-n`): the row's samples.
    Samples,
    /// `Period` (`--show-total-period`): the row's period.
    Period,
}

/// A sort-key column (or a hierarchy level).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Type,
    TypeOff,
    TypeCln,
    Symbol,
    Object,
    MemAccess,
    Snoop,
    Locked,
    Command,
    PidCommand,
    Cpu,
    Other(String),
}

/// Header labels perf prints, longest first so that multi-word labels win.
const NUM_LABELS: &[(&str, Num)] = &[
    ("guest sys", Num::OtherPct),
    ("guest usr", Num::OtherPct),
    ("Overhead", Num::Overhead),
    ("Children", Num::OtherPct),
    ("Latency", Num::OtherPct),
    ("Samples", Num::Samples),
    ("Period", Num::Period),
    ("Self", Num::Overhead),
    ("sys", Num::OtherPct),
    ("usr", Num::OtherPct),
];

const KEY_LABELS: &[&str] = &[
    "Data Type Cacheline",
    "Data Type Offset",
    "Data Type",
    "Memory access",
    "Shared Object",
    "Pid:Command",
    "Data Symbol",
    "Data Object",
    "TLB access",
    "Local Weight",
    "Source:Line",
    "Command",
    "Symbol",
    "Locked",
    "Snoop",
    "Weight",
    "CPU",
    "Blocked",
];

/// The column a sort-key label of [`KEY_LABELS`] names.
fn key_of(label: &str) -> Key {
    match label {
        "Data Type Cacheline" => Key::TypeCln,
        "Data Type Offset" => Key::TypeOff,
        "Data Type" => Key::Type,
        "Memory access" => Key::MemAccess,
        "Shared Object" => Key::Object,
        "Pid:Command" => Key::PidCommand,
        "Command" => Key::Command,
        "Symbol" => Key::Symbol,
        "Locked" => Key::Locked,
        "Snoop" => Key::Snoop,
        "CPU" => Key::Cpu,
        other => Key::Other(other.to_string()),
    }
}

/// Words of `label` matching `words` from their start, case-insensitively: how many.
fn label_at(label: &str, words: &[&str]) -> Option<usize> {
    let mut n = 0;
    for lw in label.split(' ') {
        if !words.get(n).is_some_and(|w| w.eq_ignore_ascii_case(lw)) {
            return None;
        }
        n += 1;
    }
    Some(n)
}

/// The sort key's name on perf's command line, for `provenance.settings`.
fn key_name(k: &Key) -> String {
    match k {
        Key::Type => "type".into(),
        Key::TypeOff => "typeoff".into(),
        Key::TypeCln => "typecln".into(),
        Key::Symbol => "sym".into(),
        Key::Object => "dso".into(),
        Key::MemAccess => "mem".into(),
        Key::Snoop => "snoop".into(),
        Key::Locked => "locked".into(),
        Key::Command => "comm".into(),
        Key::PidCommand => "pid".into(),
        Key::Cpu => "cpu".into(),
        Key::Other(label) => label.to_ascii_lowercase().replace(' ', "_"),
    }
}

enum Label {
    Num(Num),
    Key(Key),
}

/// The columns of a report, from its header line.
#[derive(Clone, Debug)]
struct Layout {
    nums: Vec<Num>,
    keys: Vec<Key>,
    hierarchy: bool,
}

impl Layout {
    fn typeoff_index(&self) -> Option<usize> {
        self.keys.iter().position(|k| *k == Key::TypeOff)
    }
    fn sort_keys(&self) -> String {
        self.keys.iter().map(key_name).collect::<Vec<_>>().join(",")
    }
}

/// Reads a header line (`Overhead  Data Type  Data Type Offset`, `Overhead  Data Type /
/// Data Type Offset`, with or without perf's spacing). None when the line is not one.
/// `strict` (a line without perf's `#`, which may be prose): every word must be a label.
fn parse_header(text: &str, strict: bool) -> Option<Layout> {
    let text = text.trim();
    let mut labels: Vec<Label> = Vec::new();
    let mut hierarchy = false;
    // Most lines are prose: they do not start with a label.
    let first_words: Vec<&str> = text.split_whitespace().take(3).collect();
    let starts_known = NUM_LABELS
        .iter()
        .map(|(l, _)| *l)
        .chain(KEY_LABELS.iter().copied())
        .any(|l| label_at(l, &first_words).is_some());
    if !starts_known {
        return None;
    }
    for (i, piece) in text.split(" / ").enumerate() {
        if i > 0 {
            hierarchy = true;
        }
        // Cells as perf spaced them (the shared table reader's notion: two blanks or a tab
        // end a name); inside each, known labels by longest match.
        for (_, _, cell) in super::table::cells(piece) {
            let words: Vec<&str> = cell.split_whitespace().collect();
            let mut w = 0;
            let mut other: Vec<&str> = Vec::new();
            while w < words.len() {
                let found = NUM_LABELS
                    .iter()
                    .find_map(|(l, n)| Some((label_at(l, &words[w..])?, Label::Num(*n))))
                    .or_else(|| {
                        KEY_LABELS
                            .iter()
                            .find_map(|l| Some((label_at(l, &words[w..])?, Label::Key(key_of(l)))))
                    });
                match found {
                    Some((n, label)) => {
                        if !other.is_empty() {
                            labels.push(Label::Key(Key::Other(other.join(" "))));
                            other.clear();
                        }
                        labels.push(label);
                        w += n;
                    }
                    None => {
                        other.push(words[w]);
                        w += 1;
                    }
                }
            }
            if !other.is_empty() {
                labels.push(Label::Key(Key::Other(other.join(" "))));
            }
        }
    }
    // A header starts with a number column (or, with `-F`, a data-type key) and names at
    // least one known sort key.
    let is_other = |l: &Label| matches!(l, Label::Key(Key::Other(_)));
    let type_key = |l: &Label| matches!(l, Label::Key(Key::Type | Key::TypeOff));
    let first_ok = match labels.first() {
        Some(Label::Num(_)) => true,
        Some(l) => type_key(l),
        None => false,
    };
    let known_key = labels
        .iter()
        .any(|l| matches!(l, Label::Key(_)) && !is_other(l));
    if !first_ok || !known_key || (strict && labels.iter().any(is_other)) {
        return None;
    }
    let mut layout = Layout {
        nums: Vec::new(),
        keys: Vec::new(),
        hierarchy,
    };
    for l in labels {
        match l {
            // Numbers come first in perf's default column order; a number after a sort key
            // (`-F type,overhead`) is not supported and read as an unknown key.
            Label::Num(n) if layout.keys.is_empty() => layout.nums.push(n),
            Label::Num(_) => layout.keys.push(Key::Other("number".into())),
            Label::Key(k) => layout.keys.push(k),
        }
    }
    Some(layout)
}

/// Splits on runs of two or more spaces: perf's column separator. Type names, member paths
/// and perf's labels never contain two spaces in a row.
fn split_cells(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace()
            && bytes.get(i + 1).is_some_and(|b| b.is_ascii_whitespace())
        {
            let cell = s[start..i].trim();
            if !cell.is_empty() {
                out.push(cell);
            }
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    let cell = s[start.min(s.len())..].trim();
    if !cell.is_empty() {
        out.push(cell);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Row contents
// ---------------------------------------------------------------------------------------

/// perf's pseudo data types: samples it could not attribute to a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pseudo {
    Unknown,
    StackOp,
    Canary,
}

impl Pseudo {
    fn from_name(s: &str) -> Option<Self> {
        match s.trim() {
            "(unknown)" => Some(Pseudo::Unknown),
            "(stack operation)" => Some(Pseudo::StackOp),
            "(stack canary)" => Some(Pseudo::Canary),
            _ => None,
        }
    }
    fn key(self) -> &'static str {
        match self {
            Pseudo::Unknown => "unknown",
            Pseudo::StackOp => "stack_operation",
            Pseudo::Canary => "stack_canary",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Pseudo::Unknown => "(unknown)",
            Pseudo::StackOp => "(stack operation)",
            Pseudo::Canary => "(stack canary)",
        }
    }
}

/// A `typeoff` value.
#[derive(Clone, Debug, PartialEq)]
struct TypeOff {
    type_name: String,
    /// Negative offsets are printed by perf's `%+d` but cannot be placed in a type.
    offset: i64,
    field: Option<String>,
}

/// What one row (with its hierarchy ancestors) says.
#[derive(Clone, Debug, Default)]
struct Cells {
    type_name: Option<String>,
    typeoff: Option<TypeOff>,
    pseudo: Option<Pseudo>,
    code: Option<CodeLocation>,
    hitm: bool,
    peer: bool,
    remote: bool,
    locked: bool,
    comm: Option<String>,
    tid: Option<i64>,
    cpu: Option<u32>,
    /// Only the pseudo type's name, once (a hierarchy parent, or perf 6.15's bare
    /// `typeoff` of a pseudo type).
    bare: bool,
}

impl Cells {
    /// Fills what `self` lacks from an ancestor's cells.
    fn inherit(&mut self, from: &Cells) {
        if self.type_name.is_none() {
            self.type_name.clone_from(&from.type_name);
        }
        if self.typeoff.is_none() {
            self.typeoff.clone_from(&from.typeoff);
        }
        if self.pseudo.is_none() {
            self.pseudo = from.pseudo;
        }
        if self.code.is_none() {
            self.code.clone_from(&from.code);
        }
        self.hitm |= from.hitm;
        self.peer |= from.peer;
        self.remote |= from.remote;
        self.locked |= from.locked;
        if self.comm.is_none() {
            self.comm.clone_from(&from.comm);
        }
        if self.tid.is_none() {
            self.tid = from.tid;
        }
        if self.cpu.is_none() {
            self.cpu = from.cpu;
        }
    }

    /// Reads one sort key's value.
    fn set(&mut self, no: usize, key: &Key, value: &str) -> Result<(), ProfileError> {
        let value = value.trim();
        match key {
            Key::Type => match Pseudo::from_name(value) {
                Some(p) => self.pseudo = Some(p),
                None => self.type_name = Some(value.to_string()),
            },
            Key::TypeOff => match parse_typeoff(value) {
                Ok(Some(TypeOffValue::Member(t))) => self.typeoff = Some(t),
                Ok(Some(TypeOffValue::Pseudo(p))) => self.pseudo = Some(p),
                Ok(None) => {
                    return Err(ProfileError::parse(
                        no,
                        format!(
                            "Data Type Offset column: expected `<type> +<offset> (<member>)`, found {value:?} (truncated?)"
                        ),
                    ));
                }
                Err(e) => return Err(ProfileError::parse(no, e)),
            },
            Key::Symbol => self.code = Some(parse_symbol(value, self.code.take())),
            Key::Object => {
                let mut code = self.code.take().unwrap_or_default();
                code.object = Some(value.into());
                self.code = Some(code);
            }
            Key::MemAccess => self.remote |= value.contains("Remote"),
            Key::Snoop => {
                self.hitm |= value.contains("HitM");
                self.peer |= value.contains("Peer");
            }
            Key::Locked => self.locked |= value.starts_with("Yes"),
            Key::Command => self.comm = Some(value.to_string()),
            Key::PidCommand => {
                // `%7d:%-*.*s`: tid, then the command.
                if let Some((tid, comm)) = value.split_once(':') {
                    self.tid = tid.trim().parse().ok();
                    let comm = comm.trim();
                    if !comm.is_empty() {
                        self.comm = Some(comm.to_string());
                    }
                }
            }
            Key::Cpu => self.cpu = value.parse().ok(),
            Key::TypeCln | Key::Other(_) => {}
        }
        Ok(())
    }
}

enum TypeOffValue {
    Member(TypeOff),
    Pseudo(Pseudo),
}

/// `struct task_struct +800 (cpus_ptr)`, `struct cfs_rq +0x14 (h_nr_running)`, `int +0 (no
/// field)`, `(unknown) +0 (no field)`, or a bare pseudo type. Ok(None): not a typeoff value;
/// Err: one that is damaged (bad offset, no closing parenthesis).
fn parse_typeoff(s: &str) -> Result<Option<TypeOffValue>, String> {
    let s = s.trim();
    if let Some(p) = Pseudo::from_name(s) {
        return Ok(Some(TypeOffValue::Pseudo(p)));
    }
    let Some(open) = s.rfind(" (") else {
        return match offset_token_in(s) {
            Some(t) => Err(format!(
                "Data Type Offset column: {t:?} is not followed by `(<member>)` (truncated?)"
            )),
            None => Ok(None),
        };
    };
    let head = &s[..open];
    let Some((type_name, off)) = head.rsplit_once(' ') else {
        return Ok(None);
    };
    if !is_offset_token(off) {
        return match offset_token_in(s) {
            Some(t) => Err(format!(
                "Data Type Offset column: {t:?} is not followed by `(<member>)`"
            )),
            None => Ok(None),
        };
    }
    let Some(field) = s[open + 2..].strip_suffix(')') else {
        return Err(format!(
            "Data Type Offset column: member name without its closing parenthesis in {s:?} (truncated?)"
        ));
    };
    let offset = parse_offset(off)
        .ok_or_else(|| format!("Data Type Offset column: bad offset {off:?} in {s:?}"))?;
    let type_name = type_name.trim();
    if type_name.is_empty() {
        return Err(format!("Data Type Offset column: no type name in {s:?}"));
    }
    if let Some(p) = Pseudo::from_name(type_name) {
        return Ok(Some(TypeOffValue::Pseudo(p)));
    }
    let field = field.trim();
    Ok(Some(TypeOffValue::Member(TypeOff {
        type_name: type_name.to_string(),
        offset,
        field: (!field.is_empty() && field != "no field").then(|| field.to_string()),
    })))
}

/// `+8`, `+0x1a8`, `-16`: what perf's `%+d` and `+%#x` print.
fn is_offset_token(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('+').or_else(|| t.strip_prefix('-')) else {
        return false;
    };
    rest.as_bytes().first().is_some_and(u8::is_ascii_digit)
}

fn offset_token_in(s: &str) -> Option<&str> {
    s.split_whitespace().find(|t| is_offset_token(t))
}

fn parse_offset(t: &str) -> Option<i64> {
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'+') => (false, &t[1..]),
        Some(b'-') => (true, &t[1..]),
        _ => return None,
    };
    let v = if rest.starts_with("0x") || rest.starts_with("0X") {
        i64::try_from(parse_hex(rest)?).ok()?
    } else {
        if !rest.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        rest.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// `[k] update_load_avg`, `[.] ring_push+0x40`, or with `-v` `0xffffffff81234567 k [k]
/// update_load_avg`.
fn parse_symbol(value: &str, code: Option<CodeLocation>) -> CodeLocation {
    let mut code = code.unwrap_or_default();
    let toks: Vec<&str> = value.split_whitespace().collect();
    let marker = toks.iter().position(|t| {
        t.len() == 3 && t.starts_with('[') && t.ends_with(']') && t.is_char_boundary(1)
    });
    let name_from = match marker {
        Some(i) => {
            code.privilege = toks[i][1..2]
                .chars()
                .next()
                .and_then(Privilege::from_perf_marker);
            if let Some(addr) = toks[..i].iter().find_map(|t| parse_hex(t)) {
                code.address = Some(addr);
            }
            i + 1
        }
        None => 0,
    };
    let name = toks[name_from.min(toks.len())..].join(" ");
    if name.is_empty() {
        return code;
    }
    match name
        .rsplit_once('+')
        .and_then(|(n, off)| Some((n, parse_hex(off)?)))
    {
        Some((n, off)) if !n.is_empty() => {
            code.symbol = Some(n.into());
            code.symbol_offset = Some(off);
        }
        _ => {
            if let Some(addr) = parse_hex(&name) {
                code.address = Some(addr);
            } else {
                code.symbol = Some(name.into());
            }
        }
    }
    code
}

/// `[k] name` or `[.] name`: a Symbol value.
fn is_symbol_value(s: &str) -> bool {
    let b = s.trim_start().as_bytes();
    b.len() >= 4 && b[0] == b'[' && b[2] == b']' && b[3] == b' '
}

/// Reads the sort-key part of a non-hierarchy row whose cells could not be told apart
/// (whitespace collapsed, or a column that overflowed into the next): the `typeoff` value
/// is found by its shape (`+<offset> (<member>)`), the `type` column before it repeats its
/// type name, and a Symbol after it starts with `[k]`.
fn parse_collapsed(no: usize, text: &str, keys: Option<&[Key]>) -> Result<Cells, ProfileError> {
    let toks: Vec<&str> = text.split_whitespace().collect();
    let mut cells = Cells::default();
    // The offset token, followed by the parenthesized member.
    let found = toks
        .iter()
        .enumerate()
        .find(|(i, t)| is_offset_token(t) && toks.get(i + 1).is_some_and(|n| n.starts_with('(')));
    let after: &[&str] = match found {
        Some((j, _)) => {
            let Some(close) = (j + 1..toks.len()).find(|&k| toks[k].ends_with(')')) else {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "Data Type Offset column: member name without its closing parenthesis in {text:?} (truncated?)"
                    ),
                ));
            };
            let offset = parse_offset(toks[j]).ok_or_else(|| {
                ProfileError::parse(
                    no,
                    format!("Data Type Offset column: bad offset {:?}", toks[j]),
                )
            })?;
            let field = toks[j + 1..=close].join(" ");
            let field = field
                .strip_prefix('(')
                .and_then(|f| f.strip_suffix(')'))
                .unwrap_or("")
                .trim()
                .to_string();
            let before = &toks[..j];
            let type_toks = type_tokens(before, keys);
            if type_toks.is_empty() {
                return Err(ProfileError::parse(
                    no,
                    format!("Data Type Offset column: no type name before {:?}", toks[j]),
                ));
            }
            let type_name = type_toks.join(" ");
            match Pseudo::from_name(&type_name) {
                Some(p) => cells.pseudo = Some(p),
                None => {
                    cells.typeoff = Some(TypeOff {
                        type_name,
                        offset,
                        field: (!field.is_empty() && field != "no field").then_some(field),
                    });
                }
            }
            &toks[close + 1..]
        }
        None => {
            if let Some(t) = toks.iter().find(|t| is_offset_token(t)) {
                // `+0x1` where the member should follow: a damaged or cut row.
                let at = toks.iter().position(|x| x == t).unwrap_or(0);
                if at > 0 && toks.get(at + 1).is_none() {
                    return Err(ProfileError::parse(
                        no,
                        format!(
                            "Data Type Offset column: {t:?} is not followed by `(<member>)` (truncated?)"
                        ),
                    ));
                }
            }
            // A pseudo type, once (hierarchy parent, `-s typeoff` or perf 6.15's bare form)
            // or twice (`type` and `typeoff` columns).
            let mut rest: &[&str] = &toks;
            for p in [Pseudo::Unknown, Pseudo::StackOp, Pseudo::Canary] {
                let words: Vec<&str> = p.name().split(' ').collect();
                if toks.starts_with(&words) {
                    cells.pseudo = Some(p);
                    rest = &toks[words.len()..];
                    if rest.starts_with(&words) {
                        rest = &rest[words.len()..];
                    } else {
                        cells.bare = true;
                    }
                    break;
                }
            }
            if cells.pseudo.is_some() {
                rest
            } else if is_symbol_value(text) {
                &toks[..]
            } else {
                // A hierarchy parent: the type alone.
                cut_row_check(no, text)?;
                cells.type_name = Some(text.trim().to_string());
                return Ok(cells);
            }
        }
    };
    // After the typeoff: a Symbol (`[k] name`) and what the header says follows.
    let after_keys: Vec<&Key> = keys
        .map(|ks| {
            ks.iter()
                .skip_while(|k| **k != Key::TypeOff)
                .skip(1)
                .collect()
        })
        .unwrap_or_default();
    if after.is_empty() {
        return Ok(cells);
    }
    let text_after = after.join(" ");
    match after_keys.as_slice() {
        [] | [Key::Symbol] if is_symbol_value(&text_after) => {
            cells.code = Some(parse_symbol(&text_after, None));
        }
        [only] => cells.set(no, only, &text_after)?,
        _ => {
            // Several columns after it: single-word values can be split.
            let mut i = 0;
            for k in after_keys {
                if i >= after.len() {
                    break;
                }
                match k {
                    Key::Symbol => {
                        let Some(m) = after[i..]
                            .iter()
                            .position(|t| t.len() == 3 && t.starts_with('[') && t.ends_with(']'))
                        else {
                            break;
                        };
                        let end = (i + m + 2).min(after.len());
                        cells.code =
                            Some(parse_symbol(&after[i..end].join(" "), cells.code.take()));
                        i = end;
                    }
                    Key::Object | Key::Snoop | Key::Locked | Key::Cpu | Key::PidCommand => {
                        cells.set(no, k, after[i])?;
                        i += 1;
                    }
                    _ => break,
                }
            }
        }
    }
    Ok(cells)
}

/// A row read as a type alone (a hierarchy parent) that is really a `type  typeoff` row cut
/// before its offset: two C tag keywords (`struct foo struct fo`), or the start of an offset.
fn cut_row_check(no: usize, text: &str) -> Result<(), ProfileError> {
    let keywords = text
        .split_whitespace()
        .filter(|t| matches!(*t, "struct" | "union" | "enum"))
        .count();
    if keywords >= 2 || text.contains(" +") || text.ends_with(" (") {
        return Err(ProfileError::parse(
            no,
            format!(
                "Data Type Offset column: expected `<type> +<offset> (<member>)` after the type, found {:?} (truncated?)",
                text.trim()
            ),
        ));
    }
    Ok(())
}

/// The type name among the tokens before the offset: with a `type` column the name appears
/// twice in a row (`struct rq struct rq`), and whatever precedes belongs to other columns.
fn type_tokens<'a>(before: &'a [&'a str], keys: Option<&[Key]>) -> &'a [&'a str] {
    let n = before.len();
    for k in (1..=n / 2).rev() {
        if before[n - 2 * k..n - k] == before[n - k..] {
            return &before[n - k..];
        }
    }
    let type_column = keys.is_none_or(|ks| ks.contains(&Key::Type));
    let other_before = keys.is_some_and(|ks| {
        ks.iter()
            .take_while(|k| **k != Key::TypeOff)
            .any(|k| *k != Key::Type)
    });
    if type_column || other_before {
        // Columns we cannot split: the name starts at its last C keyword, if any.
        if let Some(i) = before
            .iter()
            .rposition(|t| matches!(*t, "struct" | "union" | "enum"))
        {
            return &before[i..];
        }
    }
    before
}

// ---------------------------------------------------------------------------------------
// Blocks (one per event), rows and the line loop
// ---------------------------------------------------------------------------------------

/// One event's table (`# Samples: 12K of event '...'`), or a group's (`--group`).
#[derive(Clone, Debug, Default)]
struct Block {
    /// The event, or the members of an event group in perf's order.
    events: Vec<String>,
    /// `# Samples:` as printed (12K → 12000) and whether that is exact (below 1000).
    samples: Option<(f64, bool)>,
    /// The count as perf printed it (`12K`).
    samples_text: String,
    event_count: Option<f64>,
}

impl Block {
    fn members(&self) -> usize {
        self.events.len().max(1)
    }
}

/// The numbers of one row, one per event of the block.
#[derive(Clone, Debug, Default)]
struct Nums {
    overhead: Vec<f64>,
    samples: Option<Vec<f64>>,
    period: Option<Vec<f64>>,
}

/// A row that names a place in a type, with everything its hierarchy ancestors said.
#[derive(Clone, Debug)]
struct Entry {
    block: usize,
    nums: Nums,
    cells: Cells,
}

/// A pseudo-type row, counted in the summary.
#[derive(Clone, Debug)]
struct PseudoRow {
    block: usize,
    nums: Nums,
    kind: Pseudo,
}

/// State of the table being read (rows between a header and a blank line).
#[derive(Default)]
struct Table {
    /// Under a header or after a row, no blank line since: a line starting with a digit
    /// must be a row.
    open: bool,
    /// Column where the first row's first number ends, and whether rows keep perf's
    /// alignment (hierarchy depth is then read from the indentation).
    base_col: Option<usize>,
    aligned: bool,
    /// Hierarchy ancestors of the next row: (depth, cells).
    path: Vec<(usize, Cells)>,
    /// The last row at or below the `typeoff` level; emitted unless children follow.
    pending: Option<(usize, Entry)>,
    /// The previous row, for telling a pseudo type's hierarchy child from its parent.
    prev_bare: Option<(Pseudo, Vec<f64>)>,
}

#[derive(Default)]
struct PerfHeader {
    tool_version: Option<String>,
    command: Option<String>,
    cpus_avail: Option<u32>,
    cpus_online: Option<u32>,
    description: Option<String>,
    nodes: u32,
    events: Vec<String>,
}

#[derive(Default)]
struct Parser {
    header: PerfHeader,
    blocks: Vec<Block>,
    layout: Option<Layout>,
    /// Sort keys of a report header without a `typeoff` column, for the error message.
    other_report: Option<String>,
    table: Table,
    entries: Vec<Entry>,
    pseudo: Vec<PseudoRow>,
    rows: usize,
    negative: usize,
    lost: Option<f64>,
    sort_order: Option<String>,
}

impl Parser {
    fn line(&mut self, no: usize, line: &str) -> Result<(), ProfileError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            self.end_table();
            return Ok(());
        }
        if let Some(rest) = trimmed.strip_prefix('#') {
            return self.comment(no, rest.trim());
        }
        if is_dots(trimmed) {
            return Ok(());
        }
        // Lines a paste keeps without their '#'.
        if self.meta(no, trimmed, false)? {
            return Ok(());
        }
        if !starts_with_number(trimmed)
            && let Some(layout) = parse_header(trimmed, true)
        {
            self.set_layout(layout);
            return Ok(());
        }
        if self.row(no, line)? {
            self.table.open = true;
        }
        Ok(())
    }

    /// A `#` line: the perf.data header (`--header`), the per-event lines, the column
    /// header, or a comment.
    fn comment(&mut self, no: usize, rest: &str) -> Result<(), ProfileError> {
        if rest.is_empty() || is_dots(rest) {
            return Ok(());
        }
        if self.meta(no, rest, true)? {
            return Ok(());
        }
        if let Some((key, value)) = rest.split_once(" : ") {
            let (key, value) = (key.trim(), value.trim());
            let h = &mut self.header;
            match key {
                "perf version" => h.tool_version = Some(value.to_string()),
                "cmdline" => h.command = Some(value.to_string()),
                "nrcpus avail" => h.cpus_avail = value.parse().ok(),
                "nrcpus online" => h.cpus_online = value.parse().ok(),
                "cpudesc" => h.description = Some(value.to_string()),
                "event" => {
                    if let Some(name) = value
                        .strip_prefix("name = ")
                        .and_then(|v| v.split(", ").next())
                    {
                        h.events.push(name.trim().to_string());
                    }
                }
                k if k.starts_with("node") && k.ends_with("cpu list") => h.nodes += 1,
                _ => {}
            }
            return Ok(());
        }
        if let Some(layout) = parse_header(rest, false) {
            self.set_layout(layout);
        }
        Ok(())
    }

    /// `Samples: 12K of event '...'`, `Event count (approx.): N`, `Total Lost Samples: N`,
    /// `Total weight : N`, `Sort order : ...` (with or without the '#'; without it, a line
    /// that does not read as one is prose). Each starts a new table.
    fn meta(&mut self, no: usize, text: &str, hash: bool) -> Result<bool, ProfileError> {
        let found = self.meta_inner(no, text, hash)?;
        if found {
            self.end_table();
        }
        Ok(found)
    }

    fn meta_inner(&mut self, no: usize, text: &str, hash: bool) -> Result<bool, ProfileError> {
        if let Some(rest) = text.strip_prefix("Samples:") {
            match parse_samples_line(no, rest) {
                Ok(block) => {
                    self.end_table();
                    self.blocks.push(block);
                    return Ok(true);
                }
                Err(e) if hash => return Err(e),
                Err(_) => return Ok(false),
            }
        }
        let number = |v: &str| v.trim().parse::<f64>().ok().filter(|x| x.is_finite());
        if let Some(rest) = text.strip_prefix("Event count (approx.):") {
            match number(rest) {
                Some(v) => {
                    self.current_block().event_count = Some(v);
                    return Ok(true);
                }
                None if hash => {
                    return Err(ProfileError::parse(
                        no,
                        format!("Event count: expected a number, found {:?}", rest.trim()),
                    ));
                }
                None => return Ok(false),
            }
        }
        if let Some(rest) = text.strip_prefix("Total Lost Samples:") {
            self.lost = number(rest);
            return Ok(true);
        }
        if let Some((key, value)) = text.split_once(':') {
            match key.trim() {
                "Total weight" => {
                    if self.current_block().event_count.is_none() {
                        self.current_block().event_count = number(value);
                    }
                    return Ok(true);
                }
                "Sort order" => {
                    self.sort_order = Some(value.trim().to_string());
                    return Ok(true);
                }
                _ => {}
            }
        }
        Ok(false)
    }

    fn current_block(&mut self) -> &mut Block {
        if self.blocks.is_empty() {
            self.blocks.push(Block::default());
        }
        self.blocks.last_mut().expect("just ensured")
    }

    fn set_layout(&mut self, layout: Layout) {
        self.end_table();
        self.table.open = true;
        if layout.typeoff_index().is_none() {
            self.other_report.get_or_insert_with(|| layout.sort_keys());
        }
        self.layout = Some(layout);
    }

    /// Ends the table being read: the last pending row is emitted.
    fn end_table(&mut self) {
        if let Some((_, e)) = self.table.pending.take() {
            self.emit(e);
        }
        self.table = Table::default();
    }

    /// A data row; Ok(false) for prose.
    fn row(&mut self, no: usize, line: &str) -> Result<bool, ProfileError> {
        let toks = token_spans(line);
        let mut i = 0;
        // A fold marker from a pasted TUI screen (`-`, `+`).
        if toks.len() > 1
            && matches!(toks[0].1, "-" | "+")
            && toks[1].1.as_bytes()[0].is_ascii_digit()
        {
            i = 1;
        }
        let Some(&(_, first)) = toks.get(i) else {
            return Ok(false);
        };
        if !first.as_bytes()[0].is_ascii_digit() {
            return Ok(false);
        }
        let layout = self.layout.clone().filter(|l| l.typeoff_index().is_some());
        if self.layout.is_some() && layout.is_none() {
            // A report without a typeoff column (`perf report` by symbol): not ours.
            return Ok(true);
        }
        // In a table under a header, a row that does not read is an error; elsewhere a line
        // starting with a digit may be prose (`2 sockets, ...`).
        let strict = self.table.open && layout.is_some();
        let pct_first = layout
            .as_ref()
            .is_none_or(|l| matches!(l.nums.first(), Some(Num::Overhead | Num::OtherPct)));
        if pct_first && !first.ends_with('%') {
            if strict {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "Overhead column: expected a percentage from 0% to 100% such as 12.34%, found {first:?} (truncated?)"
                    ),
                ));
            }
            return Ok(false);
        }
        self.current_block();
        let block = self.blocks.len() - 1;
        let members = self.blocks[block].members();
        let (nums, next, end_col) = match &layout {
            Some(l) => numbers_by_header(no, &toks, i, &l.nums, members)?,
            None => numbers_by_shape(no, &toks, i, members)?,
        };
        if nums.overhead.is_empty() && nums.samples.is_none() {
            return Ok(false);
        }
        let Some(&(start, _)) = toks.get(next) else {
            return Err(ProfileError::parse(
                no,
                "row without a data type after its numbers (truncated?)",
            ));
        };
        self.rows += 1;
        let text = line[start..].trim_end();
        if self.table.base_col.is_none() {
            self.table.base_col = Some(end_col);
            self.table.aligned = line.starts_with(char::is_whitespace);
        }
        match &layout {
            Some(l) if l.hierarchy => self.hierarchy_row(no, block, l, text, end_col, nums),
            Some(l) => {
                let cells = self.flat_cells(no, l, text)?;
                if cells.typeoff.is_none() && cells.pseudo.is_none() {
                    return Err(ProfileError::parse(
                        no,
                        format!(
                            "Data Type Offset column: expected `<type> +<offset> (<member>)`, found {text:?} (truncated?)"
                        ),
                    ));
                }
                let depth = l.typeoff_index().unwrap_or(0);
                self.place_row(block, depth, depth, cells, nums);
                Ok(true)
            }
            None => {
                let cells = parse_collapsed(no, text, None)?;
                // Without a header, a row's level in a hierarchy shows in its contents.
                let depth = if cells.typeoff.is_some() {
                    1
                } else if cells.pseudo.is_some() {
                    self.pseudo_depth(&cells, &nums, 1)
                } else if cells.code.is_some() && cells.type_name.is_none() {
                    2
                } else {
                    0
                };
                self.place_row(block, depth, 1, cells, nums);
                Ok(true)
            }
        }
    }

    /// A non-hierarchy row's sort-key cells: by perf's spacing when it kept it, else by
    /// shape.
    fn flat_cells(&self, no: usize, l: &Layout, text: &str) -> Result<Cells, ProfileError> {
        let parts = split_cells(text);
        if parts.len() == l.keys.len() {
            let mut cells = Cells::default();
            let mut ok = true;
            for (k, v) in l.keys.iter().zip(&parts) {
                if *k == Key::TypeOff && !matches!(parse_typeoff(v), Ok(Some(_))) {
                    ok = false;
                    break;
                }
                cells.set(no, k, v)?;
            }
            if ok {
                return Ok(cells);
            }
        }
        parse_collapsed(no, text, Some(&l.keys))
    }

    /// A pseudo type's depth: perf prints the parent and (perf 6.15+) the child the same
    /// way, so the second of two equal rows is the child.
    fn pseudo_depth(&self, cells: &Cells, nums: &Nums, typeoff_depth: usize) -> usize {
        if !cells.bare {
            return typeoff_depth;
        }
        match &self.table.prev_bare {
            Some((p, o)) if Some(*p) == cells.pseudo && *o == nums.overhead => typeoff_depth,
            _ => 0,
        }
    }

    fn hierarchy_row(
        &mut self,
        no: usize,
        block: usize,
        l: &Layout,
        text: &str,
        end_col: usize,
        nums: Nums,
    ) -> Result<bool, ProfileError> {
        let typeoff_depth = l.typeoff_index().unwrap_or(0);
        let base = self.table.base_col.unwrap_or(end_col);
        let depth = if self.table.aligned {
            let steps = end_col.saturating_sub(base) as f64 / HIERARCHY_INDENT as f64;
            let depth = steps.round() as usize;
            if depth >= l.keys.len() || end_col < base {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "hierarchy row indented to level {} but the header has {} level(s)",
                        depth + 1,
                        l.keys.len()
                    ),
                ));
            }
            depth
        } else {
            // Whitespace collapsed: the level shows in the contents.
            match parse_typeoff(text) {
                Ok(Some(TypeOffValue::Member(_))) => typeoff_depth,
                Ok(Some(TypeOffValue::Pseudo(p))) => {
                    let cells = Cells {
                        pseudo: Some(p),
                        bare: Pseudo::from_name(text).is_some(),
                        ..Default::default()
                    };
                    self.pseudo_depth(&cells, &nums, typeoff_depth)
                }
                Err(e) => return Err(ProfileError::parse(no, e)),
                Ok(None) => {
                    let find = |k: &Key| l.keys.iter().position(|x| x == k);
                    if is_symbol_value(text) {
                        find(&Key::Symbol).unwrap_or(typeoff_depth + 1)
                    } else if text.contains(": cache-line ") {
                        find(&Key::TypeCln).unwrap_or(0)
                    } else {
                        cut_row_check(no, text)?;
                        find(&Key::Type).unwrap_or(0)
                    }
                }
            }
        };
        let key = &l.keys[depth.min(l.keys.len() - 1)];
        let mut cells = Cells::default();
        if *key == Key::TypeOff {
            match parse_typeoff(text) {
                Ok(Some(TypeOffValue::Member(t))) => cells.typeoff = Some(t),
                Ok(Some(TypeOffValue::Pseudo(p))) => {
                    cells.pseudo = Some(p);
                    cells.bare = Pseudo::from_name(text).is_some();
                }
                Ok(None) => {
                    return Err(ProfileError::parse(
                        no,
                        format!(
                            "Data Type Offset level: expected `<type> +<offset> (<member>)`, found {text:?} (truncated?)"
                        ),
                    ));
                }
                Err(e) => return Err(ProfileError::parse(no, e)),
            }
        } else {
            cells.set(no, key, text)?;
            cells.bare = cells.pseudo.is_some();
        }
        self.place_row(block, depth, typeoff_depth, cells, nums);
        Ok(true)
    }

    /// Places a row in the hierarchy (flat reports: every row at the typeoff level) and
    /// emits the previous leaf unless this row is its child.
    fn place_row(
        &mut self,
        block: usize,
        depth: usize,
        typeoff_depth: usize,
        cells: Cells,
        nums: Nums,
    ) {
        if let Some((d, e)) = self.table.pending.take()
            && depth <= d
        {
            self.emit(e);
        }
        self.table.path.retain(|(d, _)| *d < depth);
        let ancestor_pseudo = self.table.path.iter().any(|(_, c)| c.pseudo.is_some());
        let mut merged = cells.clone();
        for (_, c) in self.table.path.iter().rev() {
            merged.inherit(c);
        }
        self.table.prev_bare = if cells.bare {
            cells.pseudo.map(|p| (p, nums.overhead.clone()))
        } else {
            None
        };
        self.table.path.push((depth, cells));
        if let Some(kind) = merged.pseudo {
            // Counted once, at its shallowest row; what lies under it is not data.
            if !ancestor_pseudo {
                self.pseudo.push(PseudoRow { block, nums, kind });
            }
            return;
        }
        if depth >= typeoff_depth && merged.typeoff.is_some() {
            self.table.pending = Some((
                depth,
                Entry {
                    block,
                    nums,
                    cells: merged,
                },
            ));
        }
    }

    fn emit(&mut self, e: Entry) {
        if e.cells.typeoff.as_ref().is_some_and(|t| t.offset < 0) {
            self.negative += 1;
            return;
        }
        self.entries.push(e);
    }

    fn finish(mut self) -> Result<Profile, ProfileError> {
        self.end_table();
        if self.entries.is_empty() {
            let why = if self.rows > 0 && !self.pseudo.is_empty() {
                "every row of the perf report is a pseudo type ((unknown), (stack operation), (stack canary)): perf resolved no data type; check that it found debug info (vmlinux with DWARF)".to_string()
            } else if let Some(keys) = &self.other_report {
                format!(
                    "the perf report has no Data Type Offset column (its sort keys: {keys}): run perf report --stdio -s type,typeoff"
                )
            } else {
                "no perf report data-type rows found: expected `perf report --stdio -s type,typeoff` output, rows like `12.34%  struct task_struct  struct task_struct +8 (cpus_ptr)`".to_string()
            };
            return Err(ProfileError::NoData(why));
        }
        build_profile(self)
    }
}

/// `Samples: 12K of event 'cpu/mem-loads,ldlat=30/P'` (after `Samples:`).
fn parse_samples_line(no: usize, rest: &str) -> Result<Block, ProfileError> {
    let rest = rest.trim();
    let count_tok = rest.split_whitespace().next().unwrap_or("");
    let (digits, unit) = match count_tok.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&count_tok[..i], Some(c)),
        _ => (count_tok, None),
    };
    let scale = match unit {
        None => 1.0,
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some(_) => 0.0,
    };
    let n: Option<f64> = digits
        .parse::<u64>()
        .ok()
        .filter(|_| scale > 0.0)
        .map(|v| v as f64 * scale);
    let Some(n) = n else {
        return Err(ProfileError::parse(
            no,
            format!("Samples: expected a count such as 12K, found {count_tok:?}"),
        ));
    };
    let mut block = Block {
        samples: Some((n, unit.is_none())),
        samples_text: count_tok.to_string(),
        ..Default::default()
    };
    if let (Some(a), Some(b)) = (rest.find('\''), rest.rfind('\''))
        && b > a
    {
        block.events = group_members(&rest[a + 1..b]);
    }
    Ok(block)
}

/// `anon group { cpu/mem-loads,ldlat=30/P, cpu/mem-stores/P }` → its members; an event name
/// alone → itself.
fn group_members(name: &str) -> Vec<String> {
    let name = name.trim();
    if let (Some(a), Some(inner)) = (name.find(" { "), name.strip_suffix(" }"))
        && a + 3 <= inner.len()
    {
        return inner[a + 3..]
            .split(", ")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    if name.is_empty() {
        Vec::new()
    } else {
        vec![name.to_string()]
    }
}

/// The leading numbers of a row, as the header lists them: each column has one number per
/// event of the block. Returns the numbers, the index of the first sort-key token and the
/// column where the first number ends.
fn numbers_by_header(
    no: usize,
    toks: &[(usize, &str)],
    from: usize,
    cols: &[Num],
    members: usize,
) -> Result<(Nums, usize, usize), ProfileError> {
    let mut nums = Nums::default();
    let mut i = from;
    let end_col = toks.get(from).map_or(0, |(p, t)| p + t.len());
    for col in cols {
        let mut values = Vec::with_capacity(members);
        for _ in 0..members {
            let Some(&(_, t)) = toks.get(i) else {
                return Err(ProfileError::parse(
                    no,
                    format!("{} column missing (truncated row?)", num_label(*col)),
                ));
            };
            let v = match col {
                Num::Overhead | Num::OtherPct => parse_pct(t),
                Num::Samples | Num::Period => t.parse::<u64>().ok().map(|v| v as f64),
            };
            let Some(v) = v else {
                return Err(ProfileError::parse(
                    no,
                    format!(
                        "{} column: expected {}, found {t:?}",
                        num_label(*col),
                        match col {
                            Num::Overhead | Num::OtherPct =>
                                "a percentage from 0% to 100% such as 12.34%",
                            _ => "a whole number",
                        }
                    ),
                ));
            };
            values.push(v);
            i += 1;
        }
        match col {
            Num::Overhead if nums.overhead.is_empty() => nums.overhead = values,
            Num::Samples => nums.samples = Some(values),
            Num::Period => nums.period = Some(values),
            _ => {}
        }
    }
    Ok((nums, i, end_col))
}

fn num_label(n: Num) -> &'static str {
    match n {
        Num::Overhead => "Overhead",
        Num::OtherPct => "percentage",
        Num::Samples => "Samples",
        Num::Period => "Period",
    }
}

/// Without a header: leading percentages (the first `members` are the overhead), then
/// whole numbers: as many as events are the Samples column, twice as many add the Period.
fn numbers_by_shape(
    no: usize,
    toks: &[(usize, &str)],
    from: usize,
    members: usize,
) -> Result<(Nums, usize, usize), ProfileError> {
    let mut nums = Nums::default();
    let mut i = from;
    let end_col = toks.get(from).map_or(0, |(p, t)| p + t.len());
    let mut pcts = Vec::new();
    while let Some(&(_, t)) = toks.get(i) {
        if !t.ends_with('%') {
            break;
        }
        let v = parse_pct(t).ok_or_else(|| {
            ProfileError::parse(
                no,
                format!("Overhead column: expected a percentage from 0% to 100% such as 12.34%, found {t:?}"),
            )
        })?;
        pcts.push(v);
        i += 1;
    }
    pcts.truncate(members.max(1));
    nums.overhead = pcts;
    let mut ints = Vec::new();
    while let Some(&(_, t)) = toks.get(i) {
        match t.parse::<u64>() {
            Ok(v) => ints.push(v as f64),
            Err(_) => break,
        }
        i += 1;
    }
    if ints.len() == members {
        nums.samples = Some(ints);
    } else if ints.len() == 2 * members {
        nums.period = Some(ints.split_off(members));
        nums.samples = Some(ints);
    }
    Ok((nums, i, end_col))
}

fn parse_pct(t: &str) -> Option<f64> {
    let v: f64 = t.strip_suffix('%')?.parse().ok()?;
    (v.is_finite() && (0.0..=100.0).contains(&v) && !t.starts_with(['+', '-'])).then_some(v)
}

fn starts_with_number(s: &str) -> bool {
    s.trim_start()
        .trim_start_matches(['-', '+', ' '])
        .starts_with(|c: char| c.is_ascii_digit())
}

/// A line worth joining with its quoted-printable continuation: a data row.
fn looks_like_row(s: &str) -> bool {
    let t = s.trim_start();
    !t.starts_with('#') && starts_with_number(t) && t.contains('%')
}

fn is_dots(s: &str) -> bool {
    s.contains("...") && s.chars().all(|c| c == '.' || c.is_whitespace())
}

/// Mail quoting: `> ` (any depth) in front of the line, perf's own spacing kept.
fn unquote(raw: &str) -> &str {
    let mut s = raw;
    loop {
        let t = s.trim_start();
        match t.strip_prefix('>') {
            Some(r) => s = r.strip_prefix(' ').unwrap_or(r),
            None => return s,
        }
    }
}

fn token_spans(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(st)) => {
                out.push((st, &s[st..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Building the profile
// ---------------------------------------------------------------------------------------

/// What one event counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Load,
    Store,
    Rmw,
    /// Not a load or store event (`cycles:P`, AMD `ibs_op//`, Arm SPE): counted as loads.
    Assumed,
}

fn event_op(name: &str) -> Op {
    let l = name.to_ascii_lowercase();
    if l.contains("store") {
        Op::Store
    } else if l.contains("lock") && l.contains("load") {
        Op::Rmw
    } else if l.contains("load") || l.contains("ldlat") {
        Op::Load
    } else {
        Op::Assumed
    }
}

/// How overhead becomes counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scale {
    /// The Samples column (`-n`).
    Exact,
    /// Overhead × the event's `# Samples:` total.
    Estimated,
    /// Overhead percentages as they are.
    Relative,
}

/// Rounds to two decimals: estimates carry perf's precision, not float noise.
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn build_profile(p: Parser) -> Result<Profile, ProfileError> {
    let Parser {
        header,
        mut blocks,
        layout,
        entries,
        pseudo,
        rows,
        negative,
        lost,
        sort_order,
        ..
    } = p;
    // The perf.data header's events name the block of a paste that lost `# Samples:`.
    if blocks.len() == 1 && blocks[0].events.is_empty() && header.events.len() == 1 {
        blocks[0].events = header.events.clone();
    }
    let used: Vec<usize> = entries
        .iter()
        .map(|e| e.block)
        .chain(pseudo.iter().map(|r| r.block))
        .collect();
    let all_nums = || {
        entries
            .iter()
            .map(|e| (&e.nums, e.block))
            .chain(pseudo.iter().map(|r| (&r.nums, r.block)))
    };
    let scale = if all_nums().all(|(n, b)| {
        n.samples
            .as_ref()
            .is_some_and(|s| s.len() == blocks[b].members())
    }) {
        Scale::Exact
    } else if used
        .iter()
        .all(|&b| blocks[b].members() == 1 && blocks[b].samples.is_some())
        && all_nums().all(|(n, _)| !n.overhead.is_empty())
    {
        Scale::Estimated
    } else {
        Scale::Relative
    };
    let value = |n: &Nums, b: usize, m: usize| -> f64 {
        match scale {
            Scale::Exact => n
                .samples
                .as_ref()
                .and_then(|s| s.get(m))
                .copied()
                .unwrap_or(0.0),
            Scale::Estimated => {
                let total = blocks[b].samples.map_or(0.0, |s| s.0);
                round2(n.overhead.get(m).copied().unwrap_or(0.0) / 100.0 * total)
            }
            Scale::Relative => n.overhead.get(m).copied().unwrap_or(0.0),
        }
    };
    let ops: Vec<Vec<Op>> = blocks
        .iter()
        .map(|b| {
            if b.events.is_empty() {
                vec![Op::Assumed]
            } else {
                b.events.iter().map(|e| event_op(e)).collect()
            }
        })
        .collect();

    let unit = if scale == Scale::Relative {
        Unit::Relative
    } else {
        Unit::Samples
    };
    let mut profile = Profile::new(TOOL, unit, DEFAULT_CACHELINE_SIZE);

    // Accesses per (type, offset, member, code location), in perf's order of types.
    let mut order: Vec<String> = Vec::new();
    let mut kinds: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut merged: BTreeMap<(String, u64, Option<String>, String), Access> = BTreeMap::new();
    for e in &entries {
        let Some(t) = &e.cells.typeoff else { continue };
        let Ok(offset) = u64::try_from(t.offset) else {
            continue;
        };
        let (name, kind) = split_kind(t.type_name.trim());
        if let Some(k) = kind {
            kinds.entry(name.clone()).or_insert(k);
        }
        if !order.contains(&name) {
            order.push(name.clone());
        }
        let mut counts = Counts::default();
        let mut period = 0.0;
        for m in 0..blocks[e.block].members() {
            let v = value(&e.nums, e.block, m);
            let op = ops[e.block].get(m).copied().unwrap_or(Op::Assumed);
            add_counts(&mut counts, op, v, &e.cells);
            if let Some(p) = e.nums.period.as_ref().and_then(|p| p.get(m)) {
                period += p;
            }
        }
        let code = e.cells.code.clone();
        let key = (
            name,
            offset,
            t.field.clone(),
            code.as_ref().map(CodeLocation::display).unwrap_or_default(),
        );
        let a = merged.entry(key).or_insert_with(|| Access {
            offset: Some(offset),
            field: t.field.clone(),
            code: code.clone(),
            ..Default::default()
        });
        a.counts.add(&counts);
        if e.nums.period.is_some() {
            a.details.add("period", period);
        }
        if let Some(cpu) = e.cells.cpu {
            let mut list = a.cpus.take().map(|c| c.list).unwrap_or_default();
            list.push(cpu);
            a.cpus = Some(CpuUse::list(list));
        }
        if e.cells.comm.is_some() || e.cells.tid.is_some() {
            let th = a.threads.get_or_insert_with(Box::default);
            if let Some(c) = &e.cells.comm
                && !th.comms.contains(c)
            {
                th.comms.push(c.clone());
                th.comms.sort();
            }
            if let Some(t) = e.cells.tid
                && !th.tids.contains(&t)
            {
                th.tids.push(t);
                th.tids.sort_unstable();
                th.count = Some(th.tids.len() as u32);
            }
        }
    }
    for name in &order {
        let tp = profile.type_profile_mut(name);
        tp.note = kinds.get(name).map(|k| (*k).to_string());
    }
    for ((name, ..), a) in merged {
        if a.counts.is_empty() {
            continue;
        }
        profile.type_profile_mut(&name).accesses.push(a);
    }
    profile.types.retain(|t| !t.accesses.is_empty());
    for t in &mut profile.types {
        t.accesses.sort_by(|a, b| {
            a.offset.cmp(&b.offset).then_with(|| {
                b.counts
                    .accesses()
                    .total_cmp(&a.counts.accesses())
                    .then_with(|| {
                        let d = |c: &Option<CodeLocation>| c.as_ref().map(CodeLocation::display);
                        d(&a.code).cmp(&d(&b.code))
                    })
            })
        });
    }
    if profile.types.is_empty() {
        return Err(ProfileError::NoData(
            "the perf report's data-type rows all have zero samples".into(),
        ));
    }

    // Summary: totals as perf printed them, and what was not a type.
    let mut s: BTreeMap<String, f64> = BTreeMap::new();
    let used_blocks: Vec<&Block> = {
        let mut seen: Vec<usize> = used.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.iter().map(|&b| &blocks[b]).collect()
    };
    let samples: Vec<f64> = used_blocks
        .iter()
        .filter_map(|b| b.samples.map(|s| s.0))
        .collect();
    if !samples.is_empty() {
        s.insert("samples".into(), samples.iter().sum());
    }
    let counts: Vec<f64> = used_blocks.iter().filter_map(|b| b.event_count).collect();
    if !counts.is_empty() {
        s.insert("event_count".into(), counts.iter().sum());
    }
    if let Some(l) = lost {
        s.insert("lost_samples".into(), l);
    }
    s.insert("rows".into(), rows as f64);
    s.insert("type_rows".into(), entries.len() as f64);
    for r in &pseudo {
        let v: f64 = (0..blocks[r.block].members())
            .map(|m| value(&r.nums, r.block, m))
            .sum();
        *s.entry(r.kind.key().into()).or_insert(0.0) += v;
    }
    for v in s.values_mut() {
        *v = round2(*v);
    }
    if negative > 0 {
        s.insert("negative_offset_rows".into(), negative as f64);
    }
    profile.summary.insert("perf_report".into(), s);

    // Provenance.
    let prov = &mut profile.provenance;
    prov.tool_version = header.tool_version;
    prov.command = header.command;
    prov.machine.cpus = header.cpus_avail.or(header.cpus_online);
    prov.machine.numa_nodes = (header.nodes > 0).then_some(header.nodes);
    prov.machine.description = header.description;
    for b in &blocks {
        for e in &b.events {
            if !prov.events.contains(e) {
                prov.events.push(e.clone());
            }
        }
    }
    if let Some(l) = &layout {
        prov.settings.insert("sort_keys".into(), l.sort_keys());
        if l.hierarchy {
            prov.settings.insert("hierarchy".into(), "yes".into());
        }
    }
    if let Some(o) = sort_order {
        prov.settings.insert("sort_order".into(), o);
    }
    let mut notes = vec![match scale {
        Scale::Exact => "counts are perf's Samples column (-n)".to_string(),
        Scale::Estimated => {
            let rounded = used_blocks.iter().find(|b| b.samples.is_some_and(|s| !s.1));
            format!(
                "counts are estimated: each row's overhead (its share of the event's period) times the event's sample total from `# Samples:`{}",
                match rounded {
                    Some(b) => format!(" (which perf rounds down: {})", b.samples_text),
                    None => String::new(),
                }
            )
        }
        Scale::Relative => "counts are perf's overhead percentages (the input gives no sample totals per event): relative within each event".to_string(),
    }];
    let mut assumed: Vec<String> = Vec::new();
    let mut unnamed = false;
    for block in &used_blocks {
        if block.events.is_empty() {
            unnamed = true;
        }
        for e in &block.events {
            if event_op(e) == Op::Assumed && !assumed.contains(e) {
                assumed.push(e.clone());
            }
        }
    }
    if unnamed {
        notes.push("the input does not name the sampled event: rows counted as loads".into());
    }
    for e in assumed {
        notes.push(format!(
            "event '{e}' is neither a load nor a store event: its rows counted as loads"
        ));
    }
    prov.note = Some(notes.join("; "));
    profile.derive_function_groups();
    Ok(profile)
}

fn add_counts(c: &mut Counts, op: Op, v: f64, cells: &Cells) {
    let reads = match op {
        Op::Store if !cells.locked => {
            c.stores += v;
            false
        }
        Op::Rmw | Op::Store => {
            c.rmw += v;
            true
        }
        Op::Load | Op::Assumed if cells.locked => {
            c.rmw += v;
            true
        }
        Op::Load | Op::Assumed => {
            c.loads += v;
            true
        }
    };
    if reads {
        match (cells.hitm, cells.peer, cells.remote) {
            (true, _, true) => c.rmt_hitm += v,
            (true, _, false) => c.lcl_hitm += v,
            (false, true, true) => c.rmt_peer += v,
            (false, true, false) => c.lcl_peer += v,
            _ => {}
        }
    }
}

/// `struct task_struct` → (`task_struct`, struct); other names (`long unsigned int`,
/// `atomic_t`, `struct page*`) stay whole.
fn split_kind(name: &str) -> (String, Option<&'static str>) {
    for kind in ["struct", "union", "enum"] {
        if let Some(rest) = name.strip_prefix(kind).and_then(|r| r.strip_prefix(' '))
            && !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return (rest.to_string(), Some(kind));
        }
    }
    (name.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typeoff_values() {
        let Ok(Some(TypeOffValue::Member(t))) = parse_typeoff("struct task_struct +800 (cpus_ptr)")
        else {
            panic!()
        };
        assert_eq!(
            (t.type_name.as_str(), t.offset),
            ("struct task_struct", 800)
        );
        assert_eq!(t.field.as_deref(), Some("cpus_ptr"));
        let Ok(Some(TypeOffValue::Member(t))) = parse_typeoff("struct cfs_rq +0x14 (h_nr_running)")
        else {
            panic!()
        };
        assert_eq!(t.offset, 0x14);
        let Ok(Some(TypeOffValue::Member(t))) = parse_typeoff("long unsigned int +0 (no field)")
        else {
            panic!()
        };
        assert_eq!((t.offset, t.field), (0, None));
        assert!(matches!(
            parse_typeoff("(stack operation) +0 (no field)"),
            Ok(Some(TypeOffValue::Pseudo(Pseudo::StackOp)))
        ));
        assert!(matches!(
            parse_typeoff("(unknown)"),
            Ok(Some(TypeOffValue::Pseudo(Pseudo::Unknown)))
        ));
        assert!(parse_typeoff("struct rq +0x1g (clock)").is_err());
        assert!(parse_typeoff("struct rq +8 (clo").is_err());
        assert!(matches!(parse_typeoff("struct rq"), Ok(None)));
    }

    #[test]
    fn headers() {
        let l = parse_header("Overhead  Data Type  Data Type Offset", true).unwrap();
        assert_eq!(l.nums, vec![Num::Overhead]);
        assert_eq!(l.keys, vec![Key::Type, Key::TypeOff]);
        let l = parse_header(
            "Overhead Samples Data Type / Data Type Offset / Symbol",
            true,
        )
        .unwrap();
        assert!(l.hierarchy);
        assert_eq!(l.nums, vec![Num::Overhead, Num::Samples]);
        assert_eq!(l.keys, vec![Key::Type, Key::TypeOff, Key::Symbol]);
        assert!(parse_header("Overhead is what we look at", true).is_none());
        assert!(parse_header("Data Type profiling is new", true).is_none());
        assert!(parse_header("Symbol resolution failed", false).is_none());
        let l = parse_header("Overhead  Command  Shared Object  Symbol", false).unwrap();
        assert_eq!(l.typeoff_index(), None);
    }

    #[test]
    fn kinds() {
        assert_eq!(
            split_kind("struct task_group"),
            ("task_group".into(), Some("struct"))
        );
        assert_eq!(
            split_kind("union bpf_attr"),
            ("bpf_attr".into(), Some("union"))
        );
        assert_eq!(
            split_kind("long unsigned int"),
            ("long unsigned int".into(), None)
        );
        assert_eq!(split_kind("struct page*"), ("struct page*".into(), None));
        assert_eq!(event_op("cpu/mem-loads,ldlat=30/P"), Op::Load);
        assert_eq!(event_op("cpu/mem-stores/P"), Op::Store);
        assert_eq!(event_op("mem_inst_retired.lock_loads:P"), Op::Rmw);
        assert_eq!(event_op("ibs_op//"), Op::Assumed);
    }
}
