//! What `lineup optimize` prints and writes, from its decisions ([`crate::analysis::plan`]):
//! the proposed layout as a type and as a C declaration, the patch against the header, the
//! report as text or JSON, and the HTML page.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::analysis::cost::{Cost, Placement, Stream, Unit};
use crate::analysis::machine::MachineModel;
use crate::analysis::optimize::{self, Plan, SplitOption};
use crate::analysis::plan::{
    ElementAdvice, InstanceAlignment, InstanceRealigned, Proposal, SlotAdvice, Split,
};
use crate::analysis::slots;
use crate::emit::c::Flavour;
use crate::emit::{self, patch};
use crate::layout::Layout;
use crate::readers::LayoutSource;
use crate::readers::c_struct::CStruct;
use crate::types::{TypeId, Types};

/// The plan's layout as a type of `types` (the padded slots' element types added when the
/// plan pads them), laid out again, and its C declaration: what is printed is what was
/// priced. Write lines made of the struct's own cache-line groups keep those groups (and
/// their asserts, in the kernel's source): lineup makes a group only of what none holds.
pub fn proposal_as_c<'a>(
    types: &mut Types<'a>,
    id: TypeId,
    original: &Layout,
    model_units: &[Unit],
    proposal: &Proposal,
    flavour: Flavour,
) -> Result<(Layout, String), String> {
    let cls = original.cacheline_size;
    let (plan, plan_units) = (&proposal.plan, proposal.units(model_units));
    let accepted_slots = proposal.slots.as_ref().filter(|s| s.accepted);
    let new_layout = emit::proposal::layout_of(
        types,
        id,
        original,
        plan_units,
        plan,
        cls,
        proposal.min_align,
        |types, new_type| {
            if let Some(sa) = accepted_slots {
                let slot_types: Vec<TypeId> = sa
                    .arrays
                    .iter()
                    .map(|a| slots::slot_array_type(types, a, cls))
                    .collect();
                slots::retype(new_type, &sa.arrays, &slot_types);
            }
        },
    )?;
    let (_marks, declaration) =
        emit::proposal::declaration(&new_layout, plan_units, plan, types, flavour)
            .map_err(|e| format!("{e}; nothing printed"))?;
    Ok((new_layout, declaration))
}

/// The header that declares the struct, as read, and the path the diff shows.
pub struct Header<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub declaration: &'a CStruct,
    pub shown: &'a str,
}

/// The unified diff that rearranges the header's struct into the plan's order (none when it
/// already declares that order). In the same patch: padded array slots (their declarations
/// and uses in this file) and a heap array's allocation made line-aligned when its site is in
/// this file; `slots` and `elements` say what the patch did with them. An instance declared
/// below the plan's pair alignment (`instance`) is raised to it.
#[allow(clippy::too_many_arguments)]
pub fn header_diff(
    header: &Header<'_>,
    type_name: &str,
    model_units: &[Unit],
    plan_units: &[Unit],
    plan: &Plan,
    flavour: Flavour,
    cls: u64,
    slots: Option<&mut SlotAdvice>,
    elements: Option<&mut ElementAdvice>,
    instance: Option<&InstanceRealigned>,
) -> Result<Option<String>, String> {
    let (path, text) = (header.path, header.text);
    let aligned_names: Vec<String> = plan
        .line_aligned
        .iter()
        .map(|&u| plan_units[u].members.first().cloned().unwrap_or_default())
        .collect();
    let rank = |name: &str| -> Option<usize> {
        let u = model_units
            .iter()
            .position(|u| u.members.iter().any(|m| m == name))?;
        plan.order.iter().position(|&x| x == u)
    };
    let cplusplus = patch::is_cplusplus(path);
    let new_text = patch::rearrange_source(
        text,
        header.declaration,
        &rank,
        &aligned_names,
        flavour,
        plan.line_align(cls),
        cplusplus,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let new_text = match instance {
        Some(i) => optimize::realign_instances(&new_text, type_name, i.align).ok_or_else(|| {
            format!(
                "{}: `{}` cannot be aligned to {} bytes by a number",
                path.display(),
                i.declaration,
                i.align
            )
        })?,
        None => new_text,
    };
    // The allocation site of a heap array of elements, when it is in this file: rewritten
    // to a line-aligned allocation in the same patch.
    let mut allocation: Option<Result<(), String>> = None;
    let site = elements
        .as_ref()
        .and_then(|e| e.site.as_ref())
        .filter(|(file, _)| patch::same_file(path, file));
    let new_text = match site {
        Some((_, line)) => match patch::align_allocation(&new_text, *line, plan.line_align(cls)) {
            Ok(t) => {
                allocation = Some(Ok(()));
                t
            }
            Err(why) => {
                allocation = Some(Err(why));
                new_text
            }
        },
        None => new_text,
    };
    // Array members padded to slots: their declarations and their uses in this file.
    let mut new_text = Some(new_text);
    if let Some(sa) = slots.filter(|s| s.accepted) {
        for a in &sa.arrays {
            let Some(t) = new_text.take() else { break };
            match patch::slot_member(
                &t,
                type_name,
                &a.member,
                flavour,
                a.slot_align.max(cls),
                cplusplus,
            ) {
                Ok((t, n)) => {
                    sa.uses_rewritten += n;
                    new_text = Some(t);
                }
                Err(why) => {
                    // A reorder without the padding it was priced with is no fix.
                    sa.advice.push_str(&format!(" (no patch written: {why})"));
                }
            }
        }
        sa.in_patch = new_text.is_some();
    }
    if let Some(e) = elements {
        e.allocation_in_patch = matches!(allocation, Some(Ok(())));
        match allocation {
            Some(Err(why)) => {
                e.advice
                    .push_str(&format!(" (the patch leaves the allocation alone: {why})"));
            }
            Some(Ok(())) => e.advice.push_str(" (the patch rewrites it)"),
            None => {}
        }
    }
    let new_text = new_text.unwrap_or_else(|| text.to_string());
    // Nothing to move: say so rather than write an empty patch.
    Ok((new_text != text).then(|| patch::unified_diff(text, &new_text, header.shown)))
}

/// The warning for a header that initializes the struct by position, which the reorder
/// breaks silently.
pub fn initializer_warning(path: &Path, text: &str, c_name: &str) -> Option<String> {
    patch::positional_initializer(text, c_name).map(|line| {
        format!(
            "warning: {}:{line} initializes {c_name} by position; the reorder changes what those values mean: use designated initializers (.field = value)",
            path.display(),
        )
    })
}

/// Everything `optimize` reports, for the text, the JSON and the HTML page.
pub struct Outcome<'a> {
    pub layout_source: &'a LayoutSource,
    pub type_name: &'a str,
    pub machine: &'a MachineModel,
    pub cls: u64,
    /// The evidence's tool and the label the engineer gave it.
    pub evidence_tool: &'a str,
    pub evidence_label: Option<&'a str>,
    /// The busiest line's utilization and where it came from.
    pub utilization: f64,
    pub utilization_source: &'a str,
    /// The binding of the evidence in words.
    pub binding: &'a str,
    /// The current layout's placement (the model's units).
    pub current_placement: &'a Placement,
    pub proposal: &'a Proposal,
    /// The units and streams the plan indexes ([`Proposal::units`]).
    pub plan_units: &'a [Unit],
    pub plan_streams: &'a [Stream],
    pub types: &'a Types<'a>,
    pub new_layout: &'a Layout,
    pub flavour: Flavour,
    pub declaration: &'a str,
    pub diff: Option<&'a str>,
    /// `--header` and `--patch`, as given.
    pub header: Option<&'a Path>,
    pub patch: Option<&'a Path>,
    /// Fields the profile names that the struct lacks.
    pub missing: &'a [String],
    /// Where instances start in their line (every layout was priced there).
    pub instances: &'a crate::analysis::instances::Instances,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: u32,
    layout_source: &'a LayoutSource,
    type_name: &'a str,
    machine: &'a MachineModel,
    cacheline_size: u64,
    current: &'a Cost,
    /// The movable units; `plan.placement.offsets` and `plan.order` index them.
    units: &'a [Unit],
    plan: &'a Plan,
    search_ms: f64,
    declaration: &'a str,
    splits: &'a [Split],
    /// Locks kept on one line with the data written under them (members, in order).
    kept_together: &'a [Vec<String>],
    /// Why lineup's layout is no fix (the model prices it above the current one): then
    /// no patch is written and `declaration` is not advice.
    #[serde(skip_serializing_if = "Option::is_none")]
    rejected: Option<&'a str>,
    /// Why the current layout is kept though the model prices a lower one: the saving is
    /// negligible against what the runs cost (the evidence's `cycles_per_run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    negligible: Option<&'a str>,
    /// What the plan's saving rests on, where the evidence settles neither a run's cost nor
    /// the busiest line's utilization.
    #[serde(skip_serializing_if = "Option::is_none")]
    rests_on: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance_alignment: Option<&'a InstanceAlignment>,
    /// Per-thread elements of one array share lines: what fixes them besides the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    elements: Option<&'a ElementAdvice>,
    /// Array members whose slots different threads write: padded to a line each, priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    slots: Option<&'a SlotAdvice>,
}

impl Outcome<'_> {
    /// The report as one JSON document (the diff in it unless it went to `--patch`).
    pub fn json(&self) -> serde_json::Result<String> {
        let p = self.proposal;
        let report = Report {
            schema: 1,
            layout_source: self.layout_source,
            type_name: self.type_name,
            machine: self.machine,
            cacheline_size: self.cls,
            current: &p.current,
            units: self.plan_units,
            plan: &p.plan,
            search_ms: p.search_ms,
            declaration: self.declaration,
            splits: &p.splits,
            kept_together: &p.kept_together,
            rejected: p.rejected.as_deref(),
            negligible: p.negligible.as_deref(),
            rests_on: p.rests_on.as_deref(),
            diff: if self.patch.is_some() {
                None
            } else {
                self.diff
            },
            instance_alignment: p.instance.as_ref(),
            elements: p.elements.as_ref(),
            slots: p.slots.as_ref(),
        };
        serde_json::to_string_pretty(&report)
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let p = self.proposal;
        let mut s = self.text_search();
        s.push('\n');
        s.push_str(&emit::cost_table::cost_table(&[
            ("current".to_string(), &p.current),
            ("lineup".to_string(), &p.plan.cost),
        ]));
        s.push('\n');
        self.text_moves(&mut s);
        s.push('\n');
        self.text_layout(&mut s);
        self.text_splits(&mut s);
        self.text_advice(&mut s);
        s
    }

    /// Where the layout and the evidence came from, the model's queueing, the binding and
    /// how the search went.
    fn text_search(&self) -> String {
        let (plan, cls, search_ms) = (&self.proposal.plan, self.cls, self.proposal.search_ms);
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.layout_source.describe());
        let _ = writeln!(
            s,
            "struct {} on {} ({}), {cls}-byte lines; evidence: {}{}",
            self.type_name,
            self.machine.name,
            self.machine.description,
            self.evidence_tool,
            self.evidence_label
                .map(|l| format!(" \"{l}\""))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "queueing: the busiest line of the current layout runs at utilization {:.2} ({})",
            self.utilization, self.utilization_source
        );
        s.push_str(self.binding);
        if let Some(line) = self.instances.headline(cls) {
            let _ = writeln!(s, "{line}");
        }
        if let Some(why) = &self.proposal.pair_refused {
            let _ = writeln!(s, "{why}");
        }
        if let Some(i) = &self.proposal.instance_realigned {
            let _ = writeln!(
                s,
                "instance: the header declares `{}`; a struct aligned to {} bytes cannot be declared with less, so the patch aligns it to {} too",
                i.declaration, i.align, i.align
            );
        }
        if let (Some(pair), Some(by_line)) = (plan.pair_align, plan.line_spaced_cycles) {
            let _ = writeln!(
                s,
                "search: hot lines {pair} bytes apart, as {}: the model prices that layout at {:.0} cycles, the best with {cls}-byte spacing at {by_line:.0} ({} groupings, {search_ms:.1} ms)",
                plan.spacing_reason
                    .as_deref()
                    .unwrap_or(optimize::PAIR_REASON),
                plan.cost.total_cycles(),
                plan.nodes
            );
        } else if !plan.phased.is_empty() {
            let _ = writeln!(
                s,
                "search: the best grouping of whole members on lines costs {:.0} cycles ({} groupings, {search_ms:.1} ms); moving members across {} (embedded, whose offset into a line decides which of its own sub-fields share one) lowers the layout to {:.0}",
                plan.lower_bound,
                plan.nodes,
                plan.phased
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                plan.cost.total_cycles()
            );
        } else if plan.optimal {
            let _ = writeln!(
                s,
                "search: optimal within the model ({} groupings explored, {search_ms:.1} ms)",
                plan.nodes
            );
        } else if plan.budget_spent {
            let _ = writeln!(
                s,
                "search: heuristic, node budget spent ({} nodes, {search_ms:.1} ms); lower bound {:.0} cycles, found {:.0}",
                plan.nodes,
                plan.lower_bound,
                plan.cost.total_cycles()
            );
        } else {
            let _ = writeln!(
                s,
                "search: the best grouping costs {:.0} cycles ({} groupings, {search_ms:.1} ms); as declared, its locality and growth priced, the layout costs {:.0}",
                plan.lower_bound,
                plan.nodes,
                plan.cost.total_cycles()
            );
        }
        s
    }

    /// What moved, which hot members got lines of their own, which locks stay with their
    /// data.
    fn text_moves(&self, s: &mut String) {
        let plan = &self.proposal.plan;
        if let Some(why) = &self.proposal.negligible {
            let _ = writeln!(s, "no member moves: {why}");
        } else if plan.moved.is_empty() && plan.placement == *self.current_placement {
            let _ = writeln!(
                s,
                "no member moves: the current layout is already the best the model finds"
            );
        } else if plan.moved.is_empty() && plan.placement.offsets == self.current_placement.offsets
        {
            // Only the struct's alignment changed (a type aligned to its size).
            let _ = writeln!(
                s,
                "no member changes place; the struct is aligned to {} bytes",
                plan.placement.align
            );
        } else if plan.moved.is_empty() {
            let _ = writeln!(
                s,
                "no member changes place; alignment starts new cache lines"
            );
        } else {
            let _ = writeln!(s, "moved: {}", plan.moved.join(", "));
        }
        if let Some(why) = &self.proposal.rests_on {
            let _ = writeln!(s, "{why}");
        }
        // A claim of a line of its own holds in the priced placement, or is not made.
        let hot: Vec<bool> = (0..self.plan_units.len())
            .map(|u| self.plan_streams.iter().any(|st| st.unit == u))
            .collect();
        for g in &plan.write_lines {
            let shared = emit::proposal::shared_claims(
                self.plan_units,
                &hot,
                std::slice::from_ref(g),
                &plan.placement,
                self.cls,
            );
            match shared.first() {
                None => {
                    let _ = writeln!(s, "own cache line for hot member(s): {}", g.join(", "));
                }
                Some((_, other)) => {
                    let _ = writeln!(
                        s,
                        "hot member(s) kept together: {} (their line also holds {other})",
                        g.join(", ")
                    );
                }
            }
        }
        for g in &self.proposal.kept_together {
            let _ = writeln!(
                s,
                "kept together: {} (a lock and the data written under it, from several CPUs: apart, each holder would fetch two lines instead of one; no layout removes this true sharing, only splitting the data does, below)",
                g.join(", ")
            );
        }
    }

    /// The new layout and its C declaration, or why there is none.
    fn text_layout(&self, s: &mut String) {
        if let Some(why) = &self.proposal.rejected {
            let _ = writeln!(
                s,
                "no fix: {why}; keep the current layout{}",
                if self.patch.is_some() {
                    " (no patch written)"
                } else {
                    ""
                }
            );
            return;
        }
        let mut buf = Vec::new();
        emit::pahole::write_layout(&mut buf, self.types, self.new_layout);
        s.push_str(&String::from_utf8_lossy(&buf));
        let _ = writeln!(
            s,
            "\nC declaration ({}):\n",
            if self.flavour == Flavour::Kernel {
                "kernel"
            } else {
                "userspace"
            }
        );
        s.push_str(self.declaration);
    }

    /// Each truly shared member's split options, as a table.
    fn text_splits(&self, s: &mut String) {
        for sp in &self.proposal.splits {
            let before = sp
                .readers_sum_copies
                .first()
                .map(|o| o.cycles_before)
                .unwrap_or(0.0);
            let _ = writeln!(
                s,
                "\n{}: truly shared (written from many CPUs, {before:.0} cycles); no order helps. Splitting it, one line per copy:",
                sp.member
            );
            let _ = writeln!(
                s,
                "  {:<14} {:>6} {:>24} {:>24} {:>8}",
                "split", "copies", "readers sum all copies", "readers use own copy", "bytes"
            );
            let pct = |o: &SplitOption| {
                if o.cycles_before > 0.0 {
                    (o.cycles - o.cycles_before) / o.cycles_before * 100.0
                } else {
                    0.0
                }
            };
            for (a, b) in sp.readers_sum_copies.iter().zip(&sp.readers_own_copy) {
                let _ = writeln!(
                    s,
                    "  {:<14} {:>6} {:>14.0} ({:>+7.1}%) {:>14.0} ({:>+7.1}%) {:>+8}",
                    a.how,
                    a.copies,
                    a.cycles,
                    pct(a),
                    b.cycles,
                    pct(b),
                    a.extra_bytes
                );
            }
            for why in sp.why.iter().filter(|w| !w.is_empty()) {
                let _ = writeln!(s, "  {why}");
            }
        }
    }

    /// Element, slot and instance advice, the patch (or where it went), and the fields the
    /// profile names that the struct lacks.
    fn text_advice(&self, s: &mut String) {
        let (p, cls) = (self.proposal, self.cls);
        if let Some(e) = &p.elements {
            let _ = writeln!(s, "\n{}", e.advice);
            if let (Some(cur), Some(new)) = (e.current_as_allocated, e.lineup_as_allocated) {
                let change = if cur > 0.0 {
                    format!(" ({:+.1}%)", (new - cur) / cur * 100.0)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    s,
                    "as allocated (the elements' shared lines priced as `diagnose` prices them): the current layout costs {cur:.0} modeled cycles ({:.0} on line-aligned instances, the table above); lineup's layout with the allocation line-aligned as advised costs {new:.0}{change}",
                    p.current.total_cycles()
                );
            }
        }
        if let Some(sa) = &p.slots {
            let _ = writeln!(s, "\n{}", sa.advice);
        }
        if let Some(ia) = &p.instance {
            let _ = writeln!(s, "\ninstances are not {cls}-byte aligned: {}", ia.advice);
        }
        if let (Some(path), None, None) = (self.header, self.diff, &p.rejected) {
            let _ = writeln!(
                s,
                "\n{} already declares this order: no patch{}",
                path.display(),
                if self.patch.is_some() { " written" } else { "" }
            );
        }
        if let Some(d) = self.diff {
            match self.patch {
                Some(p) => {
                    let _ = writeln!(s, "\npatch written to {}", p.display());
                }
                None => {
                    s.push('\n');
                    s.push_str(d);
                }
            }
        }
        if !self.missing.is_empty() {
            let _ = writeln!(
                s,
                "\nfields the profile names that the struct lacks (ignored): {}",
                self.missing.join(", ")
            );
        }
    }
}

/// What the HTML page shows besides the [`Outcome`]: the current layout as diagnosed from
/// the evidence.
pub struct Diagnosed<'a> {
    /// The current layout, its units (the model's) and their cost.
    pub layout: &'a Layout,
    pub units: &'a [Unit],
    pub accesses: &'a [crate::profile::Access],
    pub profile: &'a crate::profile::Profile,
    pub element_lines: &'a [crate::profile::ElementLine],
}

impl Outcome<'_> {
    /// The current and the new layout side by side, as a self-contained HTML page.
    pub fn html(&self, current: &Diagnosed<'_>) -> String {
        use crate::analysis::diagnose;
        use crate::emit::html;
        let (p, cls) = (self.proposal, self.cls);
        let plan = &p.plan;
        let mut d = diagnose::diagnose_in_run(
            current.layout,
            current.accesses,
            current.profile.provenance.machine.cpus,
            diagnose::RunTotals::from_profile(current.profile),
        );
        diagnose::name_elements(&mut d, current.layout, current.element_lines);
        let base = p.current.total_cycles();
        let mut cur = html::LayoutView::modeled(
            "current",
            current.units,
            self.current_placement,
            &p.current,
            Some(base),
            cls,
            Some(&d),
        );
        cur.cells = html::cells_from_layout(current.layout, Some(&d));
        for (line, diag) in
            cur.lines
                .iter_mut()
                .zip(html::lines_from_diagnosis(current.layout.size, cls, &d))
        {
            line.verdict = diag.verdict;
            line.label = diag.label;
            line.explanation = diag.explanation;
        }
        let new = html::LayoutView::modeled(
            "lineup",
            self.plan_units,
            &plan.placement,
            &plan.cost,
            Some(base),
            cls,
            Some(&d),
        );
        let mut notes = vec![
            self.layout_source.describe(),
            format!(
                "machine {} ({}), {cls}-byte lines; evidence: {}",
                self.machine.name, self.machine.description, self.evidence_tool
            ),
            format!(
                "queueing: the busiest line of the current layout runs at utilization {:.2} ({})",
                self.utilization, self.utilization_source
            ),
            if plan.optimal {
                format!(
                    "search: optimal within the model ({} groupings explored)",
                    plan.nodes
                )
            } else {
                format!(
                    "search: heuristic, node budget spent; lower bound {:.0} cycles",
                    plan.lower_bound
                )
            },
        ];
        if let Some(pair) = plan.pair_align {
            notes.push(format!(
                "hot lines {pair} bytes apart: {}",
                plan.spacing_reason
                    .as_deref()
                    .unwrap_or(optimize::PAIR_REASON)
            ));
        }
        if !plan.moved.is_empty() {
            notes.push(format!("moved: {}", plan.moved.join(", ")));
        }
        let mut page = html::Page {
            schema: html::PAGE_SCHEMA,
            command: "optimize".into(),
            type_name: self.type_name.to_string(),
            cacheline_size: cls,
            notes,
            layouts: vec![cur, new],
        };
        page.fill_type_names();
        html::render(&page)
    }
}
