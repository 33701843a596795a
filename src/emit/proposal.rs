//! What `optimize` prints for a priced layout, checked before it is printed: the C
//! declaration is re-read with lineup's own C reader and laid out again, and must give every
//! member the offset it was priced at; the claims (own cache line) must hold in the priced
//! placement. A rendering that fails is refused, never printed.

use crate::analysis::candidate;
use crate::analysis::cost::{Placement, Unit};
use crate::analysis::optimize;
use crate::emit::c::Marks;
use crate::layout::Layout;
use crate::readers::c_struct;
use crate::types::Types;

/// The groups lineup marks in the declaration: the plan's write lines (by unit name) that
/// the struct's own kernel cache-line groups do not already hold and that start a line in
/// the priced `placement` (a group that does not is no line of its own: marking it would
/// align it, and move what was priced), each named by its members' first declared names in
/// layout order; `line_aligned` the units that start a line.
pub fn marks(
    units: &[Unit],
    write_lines: &[Vec<String>],
    line_aligned: &[usize],
    layout: &Layout,
    placement: &Placement,
) -> Marks {
    let cls = layout.cacheline_size.max(1);
    let starts_line = |g: &Vec<String>| {
        g.iter()
            .filter_map(|n| units.iter().position(|u| &u.name == n))
            .map(|u| placement.offsets[u])
            .min()
            .is_some_and(|o| o % cls == 0)
    };
    let marker_blocks: Vec<Vec<usize>> = optimize::marker_blocks(units)
        .into_iter()
        .filter(|b| units[b[0]].name.starts_with("__cacheline_group_begin__"))
        .collect();
    let in_kernel_group = |name: &String| {
        units
            .iter()
            .position(|u| &u.name == name)
            .is_some_and(|u| marker_blocks.iter().any(|b| b.contains(&u)))
    };
    let first = |n: &String| {
        units
            .iter()
            .find(|u| &u.name == n)
            .and_then(|u| u.members.first().cloned())
    };
    Marks {
        groups: write_lines
            .iter()
            .filter(|g| !g.iter().all(in_kernel_group) && starts_line(g))
            .map(|g| {
                let mut v: Vec<String> = g.iter().filter_map(first).collect();
                // In layout order (an anonymous member by the members it holds).
                v.sort_by_key(|n| {
                    layout
                        .members
                        .iter()
                        .position(|f| &f.name == n || f.members.iter().any(|m| &m.name == n))
                });
                v
            })
            .collect(),
        line_aligned: line_aligned
            .iter()
            .map(|&u| units[u].members.first().cloned().unwrap_or_default())
            .collect(),
        align: cls,
        reason: String::new(),
    }
}

/// Re-reads `text`, a C declaration of `name`, and lays it out over `units` as a compiler
/// would (their types' alignment and the attributes the text writes): every unit must land
/// at its offset in `priced`, and the size must be the priced one. `what` names the text in
/// the error (`the C declaration`, `the patched header`).
pub fn verify_declaration(
    what: &str,
    text: &str,
    name: &str,
    units: &[Unit],
    priced: &Placement,
    types: &Types<'_>,
    cls: u64,
) -> Result<(), String> {
    let cs = c_struct::find_struct(text, name)
        .map_err(|e| format!("{what} cannot be read back: {e}"))?;
    let laid = candidate::from_c(units, &cs, types, cls)
        .map_err(|e| format!("{what} for {name} cannot be laid out: {e}"))?;
    if let Some(m) = laid.unsized_members.first() {
        return Err(format!(
            "{what} for {name} declares `{m}`, whose size lineup cannot tell"
        ));
    }
    for (u, unit) in units.iter().enumerate() {
        let (got, want) = (laid.placement.offsets[u], priced.offsets[u]);
        if got != want {
            return Err(format!(
                "{what} for {name} puts {} at byte {got}, but the layout was priced with it at byte {want}",
                unit.name
            ));
        }
    }
    if laid.placement.size != priced.size {
        return Err(format!(
            "{what} for {name} is {} bytes, but the layout was priced at {} bytes",
            laid.placement.size, priced.size
        ));
    }
    Ok(())
}

/// The hot members a plan claims a line of its own for (`write_lines`, by unit name) that
/// share a line with a unit outside their group in `placement`: a claim the text must not
/// make. Zero-size units (markers) and units without streams may share.
pub fn shared_claims(
    units: &[Unit],
    hot: &[bool],
    write_lines: &[Vec<String>],
    placement: &Placement,
    cls: u64,
) -> Vec<(String, String)> {
    let lines = |u: usize| {
        let o = placement.offsets[u];
        let size = units[u].size;
        (o / cls, (o + size.max(1) - 1) / cls)
    };
    let mut out = Vec::new();
    for g in write_lines {
        let members: Vec<usize> = g
            .iter()
            .filter_map(|n| units.iter().position(|u| &u.name == n))
            .collect();
        for &m in &members {
            let (a, b) = lines(m);
            for (v, unit) in units.iter().enumerate() {
                if members.contains(&v) || unit.size == 0 || !hot[v] {
                    continue;
                }
                let (c, d) = lines(v);
                if c <= b && a <= d {
                    out.push((units[m].name.clone(), unit.name.clone()));
                }
            }
        }
    }
    out
}

/// The priced plan as a struct of its own, laid out: the struct `id` (whose layout is
/// `original`) rearranged into `plan`'s order with every alignment it was priced with;
/// `retype` changes member types first (padded slots). Named and tagged as the original.
#[allow(clippy::too_many_arguments)]
pub fn layout_of<'a>(
    types: &mut Types<'a>,
    id: crate::types::TypeId,
    original: &Layout,
    units: &[Unit],
    plan: &optimize::Plan,
    cls: u64,
    min_align: u64,
    retype: impl FnOnce(&mut Types<'a>, &mut crate::types::Type<'a>),
) -> Result<Layout, String> {
    let mut new_type = optimize::rearranged(
        types,
        id,
        units,
        &plan.order,
        &plan.line_aligned,
        &plan.placement,
        plan.line_align(cls),
        min_align,
    )
    .ok_or("the struct has no members to rearrange")?;
    retype(types, &mut new_type);
    let new_id = types.push(new_type);
    let mut layout =
        crate::layout::layout(types, new_id, cls).ok_or("the rearranged struct has no layout")?;
    // The new type has no typedef of its own: a struct without a tag keeps the original's
    // typedef name, which the printers spell `typedef struct { ... } name;`.
    layout.name = original.name.clone();
    layout.tagless = original.tagless;
    Ok(layout)
}

/// The C declaration of `layout` (from [`layout_of`]) with lineup's groups, verified: read
/// back and laid out again it gives every unit its priced offset, or an error (one line).
pub fn declaration(
    layout: &Layout,
    units: &[Unit],
    plan: &optimize::Plan,
    types: &Types<'_>,
    flavour: crate::emit::c::Flavour,
) -> Result<(Marks, String), String> {
    let cls = layout.cacheline_size;
    let mut marks = marks(
        units,
        &plan.write_lines,
        &plan.line_aligned,
        layout,
        &plan.placement,
    );
    marks.align = plan.line_align(cls);
    marks.reason = plan.spacing_reason.clone().unwrap_or_default();
    let text = crate::emit::c::declaration(layout, &marks, flavour);
    // The struct as it is (nothing moves, nothing aligned anew) is priced at the offsets
    // its compiler gave it, which a bit-field packed into the bytes before it can make
    // unreachable for lineup's reading; the text is then the original order with the
    // original's alignments, and must read back as that order does.
    let unchanged = plan.moved.is_empty() && plan.line_aligned.is_empty();
    let reference = if unchanged {
        let as_read = c_struct::find_struct(&text, &layout.name)
            .ok()
            .and_then(|cs| candidate::from_c(units, &cs, types, cls).ok())
            .map(|l| l.placement);
        let model = optimize::derive(
            units,
            &plan.order,
            &Default::default(),
            cls,
            layout.forced_align.unwrap_or(1),
        );
        // A bit-field run whose storage unit overlaps the member before it (the bits packed
        // into that member's unit): the one layout lineup's reading cannot reach.
        let mut end = 0u64;
        let mut overlaps = false;
        for &u in &plan.order {
            let o = plan.placement.offsets[u];
            overlaps |= units[u].size > 0 && o < end;
            end = end.max(o + units[u].size);
        }
        match as_read {
            // Only a difference the model's own order shows as well is the bit-fields'.
            Some(p) if overlaps && p == model && model != plan.placement => model,
            _ => plan.placement.clone(),
        }
    } else {
        plan.placement.clone()
    };
    verify_declaration(
        "the C declaration lineup wrote",
        &text,
        &layout.name,
        units,
        &reference,
        types,
        cls,
    )?;
    Ok((marks, text))
}
