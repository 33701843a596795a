//! An overview of a recording (`lineup diagnose --profile REC.json` without `--type`): every
//! object the recording attributed accesses to (a struct type, with its globals and heap
//! blocks; an array of scalars or an untyped block by its allocation site) diagnosed as
//! `diagnose --type` would, and ranked by the contention model's cost of its contended
//! lines, most costly first. The kernel's overview ranks candidate types per raw cache line
//! (`bind::LineOverview`); a recording has no raw lines, its objects are already typed.

use serde::Serialize;

use crate::analysis::diagnose::{self, Diagnosis, RunTotals, Verdict};
use crate::analysis::machine::MachineModel;
use crate::profile::Profile;
use crate::types::Types;

/// Contended lines' verdicts: what the cost of an object adds up.
fn contended(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::FalseSharing
            | Verdict::TrueSharing
            | Verdict::CoWritten
            | Verdict::ReadMostlyNextToWriteHot
    )
}

/// One object of a recording, with what `diagnose --type` finds for it.
#[derive(Clone, Debug, Serialize)]
pub struct RankedObject {
    /// The profile type: a struct, or `var@file.c:LINE` for an array of scalars or an
    /// untyped heap block (select it with `--type` or `--alloc`).
    pub type_name: String,
    /// `struct` (globals and heap blocks of a struct type), `heap array` (an array of
    /// scalars built from its allocation site) or `untyped heap block`.
    pub kind: &'static str,
    /// Where its heap blocks were allocated (`main at file.c:44`); empty for globals only.
    pub allocations: Vec<String>,
    /// The model's cost of its contended lines, summed (modeled cycles, in the evidence's
    /// unit); 0 when no line is contended.
    pub cost: f64,
    /// The verdict of its costliest contended line, else of its busiest line.
    pub verdict: Verdict,
    /// That line's index in the object's own layout.
    pub line: Option<u64>,
    /// That line's touched members, most accessed first (at most four).
    pub members: Vec<String>,
    /// Contended lines among the lines with accesses.
    pub contended_lines: usize,
    pub lines_with_accesses: usize,
    /// Recorded accesses to it (loads, stores and read-modify-writes).
    pub accesses: f64,
}

/// An object the overview could not diagnose, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub type_name: String,
    pub reason: String,
}

/// Every object of `profile`, diagnosed on `types` (the recorded program's, extended with
/// the allocation sites' types) and ranked by cost, most costly first (then by accesses,
/// then by name, so that ties read the same every time).
pub fn rank_objects(
    profile: &mut Profile,
    types: &mut Types<'_>,
    machine: Option<&MachineModel>,
) -> (Vec<RankedObject>, Vec<Skipped>) {
    let cls = profile.cacheline_size.max(1);
    let run = RunTotals::from_profile(profile);
    let cpus = profile.provenance.machine.cpus;
    let mut ranked = Vec::new();
    let mut skipped = Vec::new();
    let names: Vec<String> = profile.types.iter().map(|t| t.type_name.clone()).collect();
    for name in names {
        let Some(tp) = profile.type_profile(&name).cloned() else {
            continue;
        };
        let composites = types.find_composites(&name);
        let (id, kind) = match composites.first() {
            Some(&id) => (id, "struct"),
            None => match super::allocation_type(types, &tp) {
                Some(id) => {
                    let typed = tp
                        .allocations
                        .iter()
                        .any(|a| a.element_type.is_some() && a.element_size.is_some());
                    (
                        id,
                        if typed {
                            "heap array"
                        } else {
                            "untyped heap block"
                        },
                    )
                }
                None => {
                    skipped.push(Skipped {
                        type_name: name,
                        reason: "no struct of that name in the program's types".into(),
                    });
                    continue;
                }
            },
        };
        let Some(layout) = crate::layout::layout(types, id, cls) else {
            skipped.push(Skipped {
                type_name: name,
                reason: "a declaration without a layout".into(),
            });
            continue;
        };
        let (accesses, _) = diagnose::accesses_for(profile, types, id, &name);
        if accesses.iter().all(|a| a.offset.is_none()) {
            skipped.push(Skipped {
                type_name: name,
                reason: "no access placed in its layout (degraded by the memory budget, or named by fields it lacks)".into(),
            });
            continue;
        }
        let mut d =
            diagnose::diagnose_on(&layout, &accesses, cpus, run, machine, types.is_per_cpu(id));
        diagnose::name_elements(&mut d, &layout, &tp.element_lines);
        ranked.push(summarize(&name, kind, &tp, &d));
    }
    ranked.sort_by(|a, b| {
        b.cost
            .total_cmp(&a.cost)
            .then(b.accesses.total_cmp(&a.accesses))
            .then(a.type_name.cmp(&b.type_name))
    });
    (ranked, skipped)
}

fn summarize(
    name: &str,
    kind: &'static str,
    tp: &crate::profile::TypeProfile,
    d: &Diagnosis,
) -> RankedObject {
    let hot: Vec<_> = d.lines.iter().filter(|l| contended(l.verdict)).collect();
    let cost = hot.iter().fold(0.0, |sum, l| sum + l.cost);
    let top = hot
        .iter()
        .copied()
        .max_by(|a, b| a.cost.total_cmp(&b.cost))
        .or_else(|| {
            d.lines.iter().max_by(|a, b| {
                let n = |l: &diagnose::LineDiagnosis| -> f64 {
                    l.members.iter().map(|m| m.counts.accesses()).sum()
                };
                n(a).total_cmp(&n(b))
            })
        });
    let mut members: Vec<&diagnose::MemberUse> =
        top.map(|l| l.members.iter().collect()).unwrap_or_default();
    members.sort_by(|a, b| b.counts.accesses().total_cmp(&a.counts.accesses()));
    let mut allocations: Vec<String> = Vec::new();
    for a in &tp.allocations {
        let at = format!(
            "{} at {}",
            a.function.as_deref().unwrap_or("?"),
            a.source.as_deref().unwrap_or("?")
        );
        if !allocations.contains(&at) {
            allocations.push(at);
        }
    }
    RankedObject {
        type_name: name.to_string(),
        kind,
        allocations,
        cost,
        verdict: top.map_or(Verdict::Cold, |l| l.verdict),
        line: top.map(|l| l.index),
        members: members.iter().take(4).map(|m| m.name.clone()).collect(),
        contended_lines: hot.len(),
        lines_with_accesses: d.lines.len(),
        accesses: d.members.iter().map(|m| m.counts.accesses()).sum(),
    }
}
