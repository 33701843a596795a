//! A [`LayoutDiff`] as text in pahole's spirit: one row per member, offsets and cache lines
//! before and after, then the lines whose members changed and the holes gained and lost.

use std::fmt::Write;

use crate::analysis::contract::Placed;
use crate::analysis::layout_diff::{Change, LayoutDiff};

fn signed(d: i128) -> String {
    if d == 0 {
        "±0".into()
    } else {
        format!("{d:+}")
    }
}

fn lines_of(p: &Placed) -> String {
    if p.first_line == p.last_line {
        p.first_line.to_string()
    } else {
        format!("{}-{}", p.first_line, p.last_line)
    }
}

/// Renders `d`; `all` lists unchanged members too. `old_label`/`new_label` name the sources.
pub fn render(d: &LayoutDiff, old_label: &str, new_label: &str, all: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "struct {}: {old_label} -> {new_label}", d.name);
    let _ = writeln!(
        s,
        "/* size: {} -> {} ({}), cachelines: {} -> {} ({}), sum holes: {} -> {} ({}) */",
        d.old_size,
        d.new_size,
        signed(d.new_size as i128 - d.old_size as i128),
        d.old_lines,
        d.new_lines,
        signed(d.new_lines as i128 - d.old_lines as i128),
        d.old_hole_bytes,
        d.new_hole_bytes,
        signed(d.new_hole_bytes as i128 - d.old_hole_bytes as i128),
    );
    if d.is_identical() {
        let _ = writeln!(s, "/* identical: every member at the same offset */");
        return s;
    }
    let rows: Vec<_> = d
        .members
        .iter()
        .filter(|m| all || m.change != Change::Same)
        .collect();
    let width = rows.iter().map(|m| m.name.len()).max().unwrap_or(6).max(6);
    let _ = writeln!(
        s,
        "\n\t{:<width$}  {:>13}  {:>11}  {:>9}  what",
        "member", "offset", "size", "line"
    );
    for m in rows {
        let pair = |f: &dyn Fn(&Placed) -> String| match (&m.old, &m.new) {
            (Some(a), Some(b)) if f(a) == f(b) => f(a),
            (Some(a), Some(b)) => format!("{} -> {}", f(a), f(b)),
            (Some(a), None) => format!("{} -> -", f(a)),
            (None, Some(b)) => format!("- -> {}", f(b)),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "\t{:<width$}  {:>13}  {:>11}  {:>9}  {}",
            m.name,
            pair(&|p| p.offset.to_string()),
            pair(&|p| p.size.to_string()),
            pair(&lines_of),
            m.change.label()
        );
    }
    if !d.lines.is_empty() {
        let _ = writeln!(
            s,
            "\ncache lines whose members changed ({} bytes):",
            d.cacheline_size
        );
        for l in &d.lines {
            let gone: Vec<&str> = l
                .old_members
                .iter()
                .filter(|m| !l.new_members.contains(m))
                .map(String::as_str)
                .collect();
            let came: Vec<&str> = l
                .new_members
                .iter()
                .filter(|m| !l.old_members.contains(m))
                .map(String::as_str)
                .collect();
            let mut what = Vec::new();
            if !came.is_empty() {
                what.push(format!("+ {}", came.join(", ")));
            }
            if !gone.is_empty() {
                what.push(format!("- {}", gone.join(", ")));
            }
            let _ = writeln!(
                s,
                "\tline {:>3}: {}  (now: {})",
                l.line,
                what.join("; "),
                if l.new_members.is_empty() {
                    "nothing".to_string()
                } else {
                    l.new_members.join(", ")
                }
            );
        }
    }
    for (label, holes) in [("gained", &d.holes_gained), ("lost", &d.holes_lost)] {
        if holes.is_empty() {
            continue;
        }
        let list: Vec<String> = holes
            .iter()
            .map(|h| format!("{} bytes after {} (at {})", h.bytes, h.after, h.offset))
            .collect();
        let _ = writeln!(s, "\nholes {label}: {}", list.join("; "));
    }
    s
}
