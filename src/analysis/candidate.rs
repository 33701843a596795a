//! Candidate layouts to compare: a member order with alignment attributes (a C declaration,
//! such as the seed's own patch) or offsets read from pahole text, turned into a
//! [`Placement`] of the struct's units.

use std::collections::BTreeSet;

use super::cost::{Placement, Unit};
use super::optimize::derive;
use crate::readers::c_struct::Align;
use crate::readers::pahole_text::TypeFacts;

/// Offsets a C compiler gives `members` (name, alignment attribute) declared in that order.
/// Units the declaration does not name are an error; names the struct lacks (members
/// compiled out of this kernel's configuration) are skipped.
pub fn from_declaration(
    units: &[Unit],
    members: &[(String, Option<Align>)],
    cls: u64,
) -> Result<Placement, String> {
    let mut order: Vec<usize> = Vec::new();
    let mut aligned: Vec<Unit> = units.to_vec();
    for u in aligned.iter_mut() {
        u.align = u.natural_align;
    }
    for (name, align) in members {
        let Some(u) = units
            .iter()
            .position(|u| u.members.first() == Some(name) || u.name == *name)
        else {
            continue;
        };
        if order.contains(&u) {
            continue;
        }
        order.push(u);
        match align {
            Some(Align::Line) => aligned[u].align = aligned[u].align.max(cls),
            Some(Align::Bytes(n)) => aligned[u].align = aligned[u].align.max(*n),
            None => {}
        }
    }
    // Units named only by a later member (a bitfield run named by its first field) were
    // matched above; anything left is missing from the candidate.
    let missing: Vec<&str> = (0..units.len())
        .filter(|u| !order.contains(u))
        .map(|u| units[u].name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!("it does not declare {}", missing.join(", ")));
    }
    Ok(derive(&aligned, &order, &BTreeSet::new(), cls, 1))
}

/// Offsets as pahole printed them.
pub fn from_pahole(units: &[Unit], facts: &TypeFacts) -> Result<Placement, String> {
    let mut offsets = Vec::with_capacity(units.len());
    for u in units {
        let first = u.members.first().map(String::as_str).unwrap_or("");
        let Some(m) = facts
            .members
            .iter()
            .find(|m| !m.name.is_empty() && m.name == first)
        else {
            return Err(format!("it has no member '{first}'"));
        };
        // A member inside an inline anonymous struct/union: the unit starts at the
        // enclosing inline member, which pahole prints just before its members.
        let offset = if u.name.starts_with('{') {
            let idx = facts
                .members
                .iter()
                .position(|x| std::ptr::eq(x, m))
                .unwrap_or(0);
            facts.members[..idx]
                .iter()
                .rev()
                .find(|x| x.depth + 1 == m.depth)
                .map(|x| x.offset)
                .unwrap_or(m.offset)
        } else {
            m.offset
        };
        offsets.push(offset);
    }
    let size = facts.size.unwrap_or_else(|| {
        units
            .iter()
            .zip(&offsets)
            .map(|(u, o)| o + u.size)
            .max()
            .unwrap_or(0)
    });
    Ok(Placement { offsets, size })
}
