//! Two layouts of one struct side by side, member by member and line by line: what moved,
//! what changed cache line, what was added or removed, holes gained and lost. Like pahole's
//! `codiff`, but about cache lines. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::contract::{Placed, placed_members};
use crate::layout::{Field, Layout};

/// What happened to one member between the old and the new layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Same,
    /// Another offset, the same cache line(s).
    Moved,
    /// Another cache line.
    ChangedLine,
    /// Another size (and perhaps another place).
    Resized,
    Added,
    Removed,
}

impl Change {
    pub fn label(self) -> &'static str {
        match self {
            Change::Same => "same",
            Change::Moved => "moved within its line",
            Change::ChangedLine => "changed line",
            Change::Resized => "resized",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MemberChange {
    pub name: String,
    pub old: Option<Placed>,
    pub new: Option<Placed>,
    pub change: Change,
}

/// A cache line whose set of members differs.
#[derive(Clone, Debug, Serialize)]
pub struct LineChange {
    pub line: u64,
    pub old_members: Vec<String>,
    pub new_members: Vec<String>,
}

/// A hole after a top-level member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hole {
    pub after: String,
    pub offset: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LayoutDiff {
    pub name: String,
    pub cacheline_size: u64,
    pub old_size: u64,
    pub new_size: u64,
    pub old_lines: u64,
    pub new_lines: u64,
    pub members: Vec<MemberChange>,
    pub lines: Vec<LineChange>,
    /// Holes of the new layout that the old did not have (by the member they follow and size).
    pub holes_gained: Vec<Hole>,
    /// Holes of the old layout that are gone.
    pub holes_lost: Vec<Hole>,
    pub old_hole_bytes: u64,
    pub new_hole_bytes: u64,
}

impl LayoutDiff {
    /// Members whose place or size changed, or that exist on one side only.
    pub fn changed(&self) -> impl Iterator<Item = &MemberChange> {
        self.members.iter().filter(|m| m.change != Change::Same)
    }
    pub fn is_identical(&self) -> bool {
        self.old_size == self.new_size
            && self.changed().next().is_none()
            && self.holes_gained.is_empty()
            && self.holes_lost.is_empty()
    }
}

/// One side of a comparison: where each member lies, however that was learned (a build's
/// debug info, pahole text, a proposed declaration).
#[derive(Clone, Debug)]
pub struct Side {
    pub name: String,
    pub size: u64,
    pub placed: Vec<Placed>,
    /// Holes after top-level members.
    pub holes: Vec<Hole>,
}

impl Side {
    pub fn from_layout(l: &Layout, line: u64) -> Side {
        Side {
            name: l.name.clone(),
            size: l.size,
            placed: placed_members(l, line),
            holes: holes(&l.members),
        }
    }

    /// From members already placed (top-level ones have no `.` in their name); holes are the
    /// gaps between consecutive top-level members.
    pub fn from_placed(name: &str, size: u64, placed: Vec<Placed>) -> Side {
        let mut top: Vec<&Placed> = placed.iter().filter(|p| !p.name.contains('.')).collect();
        top.sort_by_key(|p| p.offset);
        let holes = top
            .windows(2)
            .filter(|w| w[1].offset > w[0].offset + w[0].size)
            .map(|w| Hole {
                after: w[0].name.clone(),
                offset: w[0].offset + w[0].size,
                bytes: w[1].offset - (w[0].offset + w[0].size),
            })
            .collect();
        Side {
            name: name.to_string(),
            size,
            placed,
            holes,
        }
    }
}

fn holes(fields: &[Field]) -> Vec<Hole> {
    fields
        .iter()
        .filter(|f| f.hole_after > 0)
        .map(|f| Hole {
            after: if f.name.is_empty() {
                "(anonymous)".into()
            } else {
                f.name.clone()
            },
            offset: f.end(),
            bytes: f.hole_after,
        })
        .collect()
}

/// Compares `old` and `new` (the same struct from two builds, or a build and a proposal),
/// matching members by name, with `line`-byte cache lines.
pub fn diff(old: &Side, new: &Side, line: u64) -> LayoutDiff {
    let line = line.max(1);
    let (a, b) = (&old.placed, &new.placed);
    let mut members = Vec::new();
    for p in a {
        let q = b.iter().find(|q| q.name == p.name);
        let change = match q {
            None => Change::Removed,
            Some(q) if q.size != p.size => Change::Resized,
            Some(q) if q.first_line != p.first_line || q.last_line != p.last_line => {
                Change::ChangedLine
            }
            Some(q) if q.offset != p.offset => Change::Moved,
            Some(_) => Change::Same,
        };
        members.push(MemberChange {
            name: p.name.clone(),
            old: Some(p.clone()),
            new: q.cloned(),
            change,
        });
    }
    // Added members go where they sit in the new layout: after the member before them there.
    for (i, q) in b.iter().enumerate() {
        if a.iter().any(|p| p.name == q.name) {
            continue;
        }
        let at = b[..i]
            .iter()
            .rev()
            .find_map(|prev| members.iter().position(|m| m.name == prev.name))
            .map(|k| k + 1)
            .unwrap_or(0);
        members.insert(
            at,
            MemberChange {
                name: q.name.clone(),
                old: None,
                new: Some(q.clone()),
                change: Change::Added,
            },
        );
    }
    // Line membership counts top-level names only: a nested member travels with its parent.
    let by_line = |ps: &[Placed]| {
        let mut m: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        for p in ps.iter().filter(|p| !p.name.contains('.')) {
            for l in p.first_line..=p.last_line {
                m.entry(l).or_default().insert(p.name.clone());
            }
        }
        m
    };
    let (la, lb) = (by_line(a), by_line(b));
    let all_lines: BTreeSet<u64> = la.keys().chain(lb.keys()).copied().collect();
    let empty = BTreeSet::new();
    let order = |set: &BTreeSet<String>, ps: &[Placed]| -> Vec<String> {
        ps.iter()
            .filter(|p| set.contains(&p.name))
            .map(|p| p.name.clone())
            .collect()
    };
    let lines = all_lines
        .into_iter()
        .filter_map(|l| {
            let (x, y) = (la.get(&l).unwrap_or(&empty), lb.get(&l).unwrap_or(&empty));
            (x != y).then(|| LineChange {
                line: l,
                old_members: order(x, a),
                new_members: order(y, b),
            })
        })
        .collect();
    let (ha, hb) = (&old.holes, &new.holes);
    let same_hole = |h: &Hole, other: &[Hole]| {
        other
            .iter()
            .any(|o| o.after == h.after && o.bytes == h.bytes)
    };
    LayoutDiff {
        name: new.name.clone(),
        cacheline_size: line,
        old_size: old.size,
        new_size: new.size,
        old_lines: old.size.div_ceil(line),
        new_lines: new.size.div_ceil(line),
        members,
        lines,
        holes_gained: hb.iter().filter(|h| !same_hole(h, ha)).cloned().collect(),
        holes_lost: ha.iter().filter(|h| !same_hole(h, hb)).cloned().collect(),
        old_hole_bytes: ha.iter().map(|h| h.bytes).sum(),
        new_hole_bytes: hb.iter().map(|h| h.bytes).sum(),
    }
}
