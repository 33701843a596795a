//! The binding of raw evidence lines to a struct, in words, as `optimize`, `predict` and
//! `replay` print it before their tables.

use std::fmt::Write;

use crate::analysis::bind;
use crate::analysis::subject::Evidence;
use crate::profile::Profile;
use crate::types::{TypeId, Types};

/// The binding in words: per raw line bound, the struct bytes it covers, how (exact,
/// inferred, as given) and the evidence; per row, the member it landed on; the lines left
/// unbound and why. Empty when the evidence was already in struct coordinates.
pub fn binding_text(
    profile: &Profile,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
    ev: &Evidence,
) -> String {
    let mut text = String::new();
    let cls = profile.cacheline_size.max(1);
    let members = crate::layout::layout(types, id, cls)
        .map(|l| l.members)
        .unwrap_or_default();
    let member_at = |x: i64| {
        members
            .iter()
            .find(|m| m.offset as i64 <= x && x < (m.offset + m.size.max(1)) as i64)
            .map(|m| m.name.to_string())
            .unwrap_or_else(|| "a hole".into())
    };
    for b in &ev.bindings {
        let _ = writeln!(
            text,
            "binding: data line {:#x} is bytes {}..{} of struct {type_name} ({}: {})",
            b.address,
            b.line_start,
            b.line_start + cls as i64 - 1,
            b.binding.label(),
            b.reasons.join("; ")
        );
        let Some(line) = profile.lines.iter().find(|l| l.address == b.address) else {
            continue;
        };
        if let Some(summary) = bind::rows_summary(b) {
            let _ = writeln!(text, "  {summary}");
        }
        for (i, a) in line.accesses.iter().enumerate().take(12) {
            let Some(off) = a.offset else { continue };
            // The row's own placement where the binding gives one: rows placed one by one by
            // prototype may lie at other distances than the report's line held them.
            let row = b.rows.iter().find(|r| r.row == i);
            let x = row.map_or(b.line_start + off as i64, |r| r.struct_offset);
            let evidence = row
                .map(|r| format!(" ({}: {})", r.placed_by.label(), r.why))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "  row {} at line offset {off:#x} -> struct offset {x}: {}{evidence}",
                a.code
                    .as_ref()
                    .map(|c| c.display())
                    .unwrap_or_else(|| "?".into()),
                member_at(x)
            );
        }
        if line.accesses.len() > 12 {
            let _ = writeln!(text, "  and {} more rows", line.accesses.len() - 12);
        }
    }
    for u in &ev.unbound {
        let _ = writeln!(
            text,
            "binding: data line {:#x} left unbound: {}",
            u.address, u.reason
        );
    }
    text
}
