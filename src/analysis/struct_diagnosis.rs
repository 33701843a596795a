//! What `lineup diagnose` answers, built from the evidence and the types: one struct's
//! diagnosis ([`diagnose_struct`]), or without a struct, the candidate types of each
//! contended line ([`candidate_types`]) or a recording's objects ranked by cost
//! ([`rank_recording`]). Refusals are one line naming the evidence file.

use crate::analysis::bind::{self, BindInput, LineOverview, Selection, Unbound};
use crate::analysis::diagnose::{self, Diagnosis, LineBinding};
use crate::analysis::{model, subject};
use crate::layout::Layout;
use crate::profile::{AllocationSite, DegradedRange, Profile};
use crate::record::overview::{self, RankedObject, Skipped};
use crate::types::Types;

/// One struct judged line by line, with the evidence that went into it.
pub struct StructDiagnosis {
    /// The struct's layout in lines of [`Self::cls`] bytes.
    pub layout: Layout,
    /// The line size the struct is drawn and judged in.
    pub cls: u64,
    /// The line size the evidence was taken with.
    pub data_line: u64,
    pub bindings: Vec<LineBinding>,
    /// Raw lines that fit nothing of the struct, and why.
    pub unbound: Vec<Unbound>,
    /// Where the struct's (or array's) heap blocks were allocated (recorded profiles).
    pub allocations: Vec<AllocationSite>,
    /// Accesses a recording's memory budget counted per code site over a range of bytes.
    pub degraded: Vec<DegradedRange>,
    /// What share of the rows in the image was typed from its instruction (`--vmlinux`).
    pub typing: Option<crate::readers::typing::Coverage>,
    pub diagnosis: Diagnosis,
}

/// Diagnoses struct `type_name` (found in the types read from `label`) from `profile`:
/// binds the evidence with `input`, judges it in lines of `cacheline_size` bytes (default:
/// the evidence's), priced on the machine `machine` names (default: the evidence's CPUs with
/// generic latencies). With `relayout` (a C declaration's text and its file's name), the
/// layout that declaration gives the struct is judged instead ([`relaid`]).
pub fn diagnose_struct(
    profile: &mut Profile,
    types: &mut Types<'_>,
    (type_name, label): (&str, &str),
    cacheline_size: Option<u64>,
    machine: Option<&str>,
    input: &BindInput,
    relayout: Option<(&str, &str)>,
) -> Result<StructDiagnosis, String> {
    let allocations = profile
        .type_profile(type_name)
        .map(|t| t.allocations.clone())
        .unwrap_or_default();
    let degraded = profile
        .type_profile(type_name)
        .map(|t| t.degraded.clone())
        .unwrap_or_default();
    // Arrays of scalars and untyped heap blocks of a recording have no struct in the
    // program's DWARF: their type is built from the allocation site.
    let built = match profile.type_profile(type_name) {
        Some(tp) if types.find_composites(type_name).is_empty() => {
            let tp = tp.clone();
            crate::record::allocation_type(types, &tp)
        }
        _ => None,
    };
    let id = match built {
        Some(id) => id,
        None => subject::find_type(types, label, type_name)?,
    };
    if let Some(n) = cacheline_size
        && !n.is_power_of_two()
    {
        return Err(format!("--cacheline-size {n} is not a power of two"));
    }
    // The evidence's data lines have the size it was taken with; the layout is drawn and
    // judged in the lines asked for.
    let data_line = profile.cacheline_size.max(1);
    let cls = cacheline_size.unwrap_or(data_line);
    let layout = crate::layout::layout(types, id, cls).expect("a defined struct has a layout");
    let subject::Evidence {
        bindings,
        unbound,
        accesses,
        missing,
        ..
    } = subject::gather_with(profile, types, id, type_name, layout.size, input)?;
    let (layout, accesses) = match relayout {
        Some((text, name)) => relaid(types, id, &layout, accesses, text, name)?,
        None => (layout, accesses),
    };
    let run = diagnose::RunTotals::from_profile(profile);
    let machine = machine.map(model::machine_named).transpose()?;
    // Where instances start, as `predict` and `optimize` take it (`Model::with_evidence_instances`).
    let units = crate::analysis::cost::units(types, &layout);
    let facts = profile
        .type_profile(type_name)
        .and_then(|t| t.instances.as_ref());
    let instances = crate::analysis::instances::of_evidence(
        None,
        facts,
        &bindings,
        (cls, data_line),
        crate::analysis::cost::layout_align(&layout, &units),
    )?;
    let mut d = diagnose::diagnose_with(
        &layout,
        &accesses,
        profile.provenance.machine.cpus,
        run,
        machine.as_ref(),
        types.is_per_cpu(id),
        &instances,
    );
    d.unresolved_fields = missing;
    if let Some(t) = profile.types.iter().find(|t| t.type_name == type_name) {
        diagnose::name_elements(&mut d, &layout, &t.element_lines);
        if built.is_some() {
            crate::record::advise_scalar_lines(&mut d, t, cls);
        }
    }
    Ok(StructDiagnosis {
        layout,
        cls,
        data_line,
        bindings,
        unbound,
        allocations,
        degraded,
        typing: input.typing.clone(),
        diagnosis: d,
    })
}

/// The struct `id` (laid out as `layout`) as the C declaration `text` (from file `name`) lays
/// it out, as `predict --layout` prices it (a patch's layout, or the one a regression
/// brought), and the accesses moved with their members: the same evidence on that layout.
fn relaid(
    types: &mut Types<'_>,
    id: crate::types::TypeId,
    layout: &Layout,
    accesses: Vec<crate::profile::Access>,
    text: &str,
    name: &str,
) -> Result<(Layout, Vec<crate::profile::Access>), String> {
    use crate::analysis::{candidate, cost, optimize};
    let cls = layout.cacheline_size;
    let units = cost::units(types, layout);
    let cs = crate::readers::c_struct::find_struct(text, &layout.name)
        .map_err(|e| format!("{name}: {e}"))?;
    let p = candidate::from_c(&units, &cs, types, cls)
        .map_err(|e| format!("{name}: {e}"))?
        .placement;
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| (p.offsets[u], u));
    let t = optimize::rearranged(types, id, &units, &order, &[], &p, cls, 1)
        .ok_or_else(|| format!("{name}: struct {} has no members", layout.name))?;
    let new_id = types.push(t);
    let mut new = crate::layout::layout(types, new_id, cls)
        .ok_or_else(|| format!("{name}: the declared layout has none"))?;
    new.name = layout.name.clone();
    new.tagless = layout.tagless;
    let moved = accesses
        .into_iter()
        .map(|mut a| {
            if let Some(o) = a.offset
                && let Some(u) = cost::unit_at(&units, o)
            {
                a.offset = Some(o - units[u].offset + p.offsets[u]);
            }
            a
        })
        .collect();
    Ok((new, moved))
}

/// A report's raw lines without a struct: per contended line (those `selection` picks),
/// the candidate types ranked with their reasons. `progress` hears how many lines are done.
pub fn candidate_types(
    profile: &Profile,
    types: &Types<'_>,
    input: &BindInput,
    selection: &Selection,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<LineOverview>, String> {
    if profile.lines.is_empty() {
        return Err(format!(
            "{}: the evidence holds no raw cache lines (it is already about {}): give --type",
            subject::evidence_label(profile),
            profile
                .types
                .iter()
                .map(|t| t.type_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Ranking every type by structure alone is slow on a kernel: only for a few lines, or
    // for lines asked for.
    let few = if selection.is_empty() {
        profile.lines.len() <= 3
    } else {
        true
    };
    let lines = bind::overview_with_progress(profile, types, input, selection, few, progress);
    if lines.is_empty() {
        return Err(format!(
            "{}: no line matches --line/--address (the report has {} line(s))",
            subject::evidence_label(profile),
            profile.lines.len()
        ));
    }
    Ok(lines)
}

/// A recording without a struct named: its objects ranked by the model's cost of their
/// contended lines ([`overview::rank_objects`]), priced on the machine `machine` names, and
/// those it could not diagnose; an error when it could diagnose none.
pub fn rank_recording(
    profile: &mut Profile,
    types: &mut Types<'_>,
    machine: Option<&str>,
) -> Result<(Vec<RankedObject>, Vec<Skipped>), String> {
    let machine = machine.map(model::machine_named).transpose()?;
    let (objects, skipped) = overview::rank_objects(profile, types, machine.as_ref());
    if objects.is_empty() {
        return Err(format!(
            "{}: no recorded object could be diagnosed{}",
            subject::evidence_label(profile),
            skipped
                .first()
                .map(|s| format!(" ({}: {})", s.type_name, s.reason))
                .unwrap_or_default()
        ));
    }
    Ok((objects, skipped))
}
