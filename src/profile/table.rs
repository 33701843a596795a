//! perf's text tables as people post them: header lines into named columns.
//!
//! perf prints a table's header over one or two lines: the second names every column, the first
//! names groups (`----- HITM -----` over `RmtHitm  LclHitm`) or the upper half of a two-word
//! name (`Total` over `records`, `Shared` over `Object`). Engineers trimming a table for a mail
//! keep that form with their own words (`Rmt` over `Hitm%`, `Data` over `offset`), drop the
//! `#`, indent it or quote it. Columns are told apart by position: perf separates them by at
//! least two spaces, so a line's *cells* are its runs of text with single spaces inside; a
//! cell of an upper line belongs to the columns of the bottom line that it overlaps (one: the
//! upper half of the name; several: a group over them), or stands for a column of its own when
//! it overlaps none (a trimmed table whose last column has a one-line name).
//!
//! Where whitespace was collapsed, positions mean nothing; then the importer falls back to
//! reading the bottom line word by word. Shared by the `perf c2c` importer; the vocabulary
//! (which name means what) stays with each importer.

use std::borrow::Cow;

use super::error::ProfileError;

/// One column of a header, with every word printed above or below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The bottom line's name (`RmtHitm`, `Hitm%`, `records`); the upper cell where the bottom
    /// line has nothing under it.
    pub name: String,
    /// The upper half of a two-line name (`Total` over `records`, `Rmt` over `Hitm%`).
    pub upper: Option<String>,
    /// The group the column belongs to (`HITM`, `Store Refs`, `cycles`), dashes removed.
    pub group: Option<String>,
    /// Character span in the header line (start, end).
    pub span: (usize, usize),
}

impl Column {
    /// All words printed for the column, lowercased: group, upper half, name.
    pub fn words(&self) -> Vec<String> {
        let mut out = Vec::new();
        for part in [&self.group, &self.upper].into_iter().flatten() {
            out.extend(part.split_whitespace().map(str::to_ascii_lowercase));
        }
        out.extend(self.name.split_whitespace().map(str::to_ascii_lowercase));
        out
    }

    /// The full name as a reader sees it: `Total records`, `Rmt Hitm%`.
    pub fn full_name(&self) -> String {
        match &self.upper {
            Some(u) => format!("{u} {}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Runs of text separated by two or more blanks (or a tab): `(start, end, text)`.
pub fn cells(line: &str) -> Vec<(usize, usize, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while i < chars.len() {
            if chars[i] == '\t' {
                break;
            }
            if chars[i] == ' ' {
                // One blank inside a name; two end the cell.
                if chars.get(i + 1).is_none_or(|c| c.is_whitespace()) {
                    break;
                }
            } else {
                end = i + 1;
            }
            i += 1;
        }
        out.push((start, end, chars[start..end].iter().collect()));
    }
    out
}

/// Whether the header keeps perf's alignment: its bottom line separates some columns by two
/// blanks or a tab. Collapsed whitespace leaves only single blanks.
pub fn aligned(lines: &[&str]) -> bool {
    lines
        .last()
        .is_some_and(|l| l.trim().contains("  ") || l.trim().contains('\t'))
}

/// A group label: `----- HITM -----` → `HITM`.
fn group_text(cell: &str) -> String {
    cell.trim_matches(|c: char| c == '-' || c.is_whitespace())
        .to_string()
}

/// Columns of a header given as its lines, top to bottom, with the same left margin (a `#`
/// prefix replaced by a blank, quoting removed). The bottom line names the columns; upper
/// lines add halves and groups by position.
pub fn header_columns(lines: &[&str]) -> Vec<Column> {
    let Some((bottom, upper)) = lines.split_last() else {
        return Vec::new();
    };
    let mut cols: Vec<Column> = cells(bottom)
        .into_iter()
        .map(|(s, e, t)| Column {
            name: t,
            upper: None,
            group: None,
            span: (s, e),
        })
        .collect();
    let base = cols.len();
    for line in upper {
        for (s, e, text) in cells(line) {
            let hits: Vec<usize> = (0..base)
                .filter(|&i| cols[i].span.0 < e && s < cols[i].span.1)
                .collect();
            let dashed = text.starts_with('-') || text.ends_with('-');
            let right_of_all = (0..base).all(|i| cols[i].span.1 <= s);
            match hits.as_slice() {
                [] if dashed => {}
                // Past the bottom line's last column: a column of its own.
                [] if right_of_all || base == 0 => cols.push(Column {
                    name: text,
                    upper: None,
                    group: None,
                    span: (s, e),
                }),
                // Between two columns: the upper half of the nearer one.
                [] => {
                    let gap = |i: usize| {
                        let (cs, ce) = cols[i].span;
                        if ce <= s {
                            s - ce
                        } else {
                            cs.saturating_sub(e)
                        }
                    };
                    let near = (0..base).min_by_key(|&i| gap(i)).expect("base > 0");
                    let c = &mut cols[near];
                    c.upper = Some(match c.upper.take() {
                        Some(u) => format!("{u} {text}"),
                        None => text,
                    });
                }
                [one] if !dashed => {
                    let c = &mut cols[*one];
                    c.upper = Some(match c.upper.take() {
                        Some(u) => format!("{u} {text}"),
                        None => text,
                    });
                }
                many => {
                    let g = group_text(&text);
                    for &i in many {
                        cols[i].group = Some(g.clone());
                    }
                }
            }
        }
    }
    cols.sort_by_key(|c| c.span.0);
    cols
}

/// A rule: dashes (or dots under a `#` header), possibly in groups, nothing else.
pub fn is_rule(trimmed: &str) -> bool {
    let t = trimmed.trim_start_matches('#').trim();
    t.len() >= 3
        && (t.chars().all(|c| c == '-' || c == ' ') || t.chars().all(|c| c == '.' || c == ' '))
        && t.chars().any(|c| c == '-' || c == '.')
}

/// Text of an importer's input: perf.data is refused with the flag that reads it; bytes that
/// are not UTF-8 (a mail's Latin-1 `±`, a damaged copy) are replaced, and the lines where
/// that happened are returned so the caller can warn.
pub fn decode_text(bytes: &[u8]) -> Result<(Cow<'_, str>, Vec<usize>), ProfileError> {
    if let Some(hint) = super::perf_data::text_importer_hint(bytes) {
        return Err(ProfileError::NoData(hint.into()));
    }
    Ok(super::text::decode_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_single_blanks_inside_names() {
        let c = cells(
            "#   Num  RmtHitm   L1 Hit  PA cnt        Code address  Node{cpus %hitms %stores}",
        );
        let names: Vec<&str> = c.iter().map(|x| x.2.as_str()).collect();
        assert_eq!(
            names,
            [
                "#",
                "Num",
                "RmtHitm",
                "L1 Hit",
                "PA cnt",
                "Code address",
                "Node{cpus %hitms %stores}"
            ]
        );
    }

    #[test]
    fn two_line_trimmed_header_pairs_by_position() {
        // Seed 003's trimmed form (columns re-ordered and renamed by the author).
        let cols = header_columns(&[
            " Rmt      Lcl     Store   Data    Load    Total    Symbol",
            "Hitm%    Hitm%   L1 Hit%  offset  cycles  records",
        ]);
        let names: Vec<String> = cols.iter().map(Column::full_name).collect();
        assert_eq!(
            names,
            [
                "Rmt Hitm%",
                "Lcl Hitm%",
                "Store L1 Hit%",
                "Data offset",
                "Load cycles",
                "Total records",
                "Symbol"
            ]
        );
    }

    #[test]
    fn groups_span_several_columns() {
        let cols = header_columns(&[
            "        ----- HITM -----    Snoop  ------- Store Refs ------",
            "   Num  RmtHitm  LclHitm     Peer   L1 Hit  L1 Miss  Any Lvl",
        ]);
        assert_eq!(cols[1].group.as_deref(), Some("HITM"));
        assert_eq!(cols[2].group.as_deref(), Some("HITM"));
        assert_eq!(cols[3].full_name(), "Snoop Peer");
        assert_eq!(cols[6].group.as_deref(), Some("Store Refs"));
        assert_eq!(cols[6].name, "Any Lvl");
    }

    #[test]
    fn rules_and_perf_data() {
        assert!(is_rule("-------  -------  ------"));
        assert!(is_rule("# .....  ......."));
        assert!(!is_rule("0x0  -"));
        assert!(decode_text(b"PERFILE2....").is_err());
        let (t, bad) = decode_text(b"a\nb\xb1c\nd").unwrap();
        assert_eq!(bad, [2]);
        assert!(t.contains('\u{fffd}'));
    }
}
