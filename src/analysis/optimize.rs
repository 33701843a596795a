//! `optimize`: the member order and alignment that minimize the modeled cost
//! ([`super::cost`]) under the engineer's constraints, and split advice where no order helps.
//!
//! The search works on *items* (a unit, or several units that must stay together) that have
//! streams. Only which hot items share a cache line matters to the coherence cost, so the
//! search is over groupings: every item that is written goes to a *write line* (alone or with
//! other items), an item that is only read goes to a write line or to the *read area* (lines
//! without writes). Items that are never touched fill holes afterwards. Because a line's cost
//! never drops when a stream joins it (`cost::tests::adding_a_stream_never_lowers_a_lines_cost`),
//! the cost of a partial grouping is a lower bound on every completion of it, and depth-first
//! branch and bound over groupings finds the optimum; a node budget keeps large cases fast,
//! and then the result is reported with a bound instead of as optimal.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::cost::{self, Cost, Placement, Queueing, Stream, Unit, queued_line_terms};
use super::instances::Instances;
use super::machine::MachineModel;
use crate::types::{Composite, Kind, Member, Type, TypeId, Types};

/// Nodes of the search before it settles for the best grouping found.
pub const NODE_BUDGET: u64 = 100_000;

/// What the engineer allows.
#[derive(Clone, Debug, Default)]
pub struct Constraints {
    /// Members that must keep their offset.
    pub pinned: Vec<String>,
    /// Sets of members that must stay together, in their current order (an `#ifdef` block).
    pub together: Vec<Vec<String>>,
    /// Largest acceptable size in bytes.
    pub max_size: Option<u64>,
    /// How instances are allocated: what growth costs ([`cost::size_term`]).
    pub allocator: cost::Allocator,
    /// How many instances live: what growth takes from the cache ([`cost::size_term`]).
    pub instance_count: cost::InstanceCount,
    /// Where instances start in their cache line: every candidate is priced, and ranked,
    /// over those starts ([`Instances::evaluate`]).
    pub instances: Instances,
}

/// The optimizer's answer.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// Unit indices in declaration order.
    pub order: Vec<usize>,
    /// Units that get a cache-line alignment attribute.
    pub line_aligned: Vec<usize>,
    pub placement: Placement,
    pub cost: Cost,
    /// The search explored every grouping (within the model, the result is the optimum).
    pub optimal: bool,
    /// A lower bound on the coherence and locality cycles of any grouping.
    pub lower_bound: f64,
    pub nodes: u64,
    /// The search stopped at its node budget (else: the grouping is optimal, and `optimal`
    /// is false only when the concrete order costs more than the grouping).
    pub budget_spent: bool,
    /// Units that change places in the declaration (others only shift).
    pub moved: Vec<String>,
    /// Hot members the search placed on lines of their own or with others, for the report.
    pub write_lines: Vec<Vec<String>>,
    /// The alignment of the `line_aligned` units when it is a pair of lines (128 bytes)
    /// rather than one: the machine's L2 fetches 128-byte aligned pairs of lines
    /// ([`MachineModel::adjacent_line_pairs`]) and the model prices hot lines a pair apart
    /// lower. None: one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_align: Option<u64>,
    /// With `pair_align`: what the best layout with one-line spacing costs in the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_spaced_cycles: Option<f64>,
    /// With `pair_align`: why the hot lines are a pair apart ([`spacing_reason`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spacing_reason: Option<String>,
    /// Embedded members the plan moved other members across, beyond the search, so that their
    /// offset parts their own sub-fields ([`phase_embedded`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phased: Vec<String>,
}

impl Plan {
    /// The alignment each unit of `line_aligned` is declared with: `cls`, or the pair.
    pub fn line_align(&self, cls: u64) -> u64 {
        self.pair_align.unwrap_or(cls).max(cls)
    }
}

/// Why a plan spaces hot lines a pair apart, for the reports.
pub const PAIR_REASON: &str = "the L2 fetches 128-byte pairs of lines on this machine";

/// Why hot groups a pair of lines apart can pay: the L2 fetches pairs ([`PAIR_REASON`]), or
/// instances do not start a line, and only a line of other bytes between two groups keeps
/// them apart at every start (or both).
pub fn spacing_reason(machine: &MachineModel, cls: u64, instances: &Instances) -> String {
    let pairs = machine.adjacent_line_pairs && cls == 64;
    let misaligned = instances.misaligned().then(|| {
        format!(
            "instances start {} ({}), where only a line between hot groups keeps them apart at every start",
            instances.describe_starts(cls),
            instances.describe_source()
        )
    });
    match (pairs, misaligned) {
        (true, Some(m)) => format!("{PAIR_REASON}, and {m}"),
        (false, Some(m)) => m,
        _ => PAIR_REASON.to_string(),
    }
}

#[derive(Clone, Debug)]
struct Item {
    units: Vec<usize>,
    size: u64,
    align: u64,
    streams: Vec<usize>,
    writes: f64,
    /// Larger than a line: it gets lines of its own.
    big: bool,
    /// Bytes from its start up to the end of the last byte its streams touch: an embedded
    /// struct whose touched members come first may end a line with the rest of it spilling
    /// onto the next ([`pack_order`]).
    reach: u64,
}

/// Computes offsets the way a C compiler does for members declared in `order`, with
/// `line_aligned` units aligned to `cls`; `min_align` is alignment the struct keeps anyway.
pub fn derive(
    units: &[Unit],
    order: &[usize],
    line_aligned: &BTreeSet<usize>,
    cls: u64,
    min_align: u64,
) -> Placement {
    let mut offsets = vec![0u64; units.len()];
    let mut cursor = 0u64;
    let mut struct_align = min_align.max(1);
    for &u in order {
        let mut align = units[u].align.max(1);
        if line_aligned.contains(&u) {
            align = align.max(cls);
        }
        struct_align = struct_align.max(align);
        let off = cursor.div_ceil(align) * align;
        offsets[u] = off;
        cursor = off + units[u].size;
    }
    Placement {
        offsets,
        size: cursor.div_ceil(struct_align) * struct_align,
        align: struct_align,
    }
}

fn pack_fits(items: &[&Item], cls: u64, spill: bool) -> bool {
    match pack_order(items, cls) {
        Some(o) if !spill => end_of(items, &o, false) <= cls,
        found => found.is_some(),
    }
}

/// Where `order` (indices into `items`) ends when packed from a line's start; with
/// `last_reach`, the last item counts only up to the end of its touched bytes.
fn end_of(items: &[&Item], order: &[usize], last_reach: bool) -> u64 {
    let mut cur = 0u64;
    for (n, &i) in order.iter().enumerate() {
        let a = items[i].align.max(1);
        let start = cur.div_ceil(a) * a;
        cur = if last_reach && n + 1 == order.len() {
            start + items[i].reach.min(items[i].size)
        } else {
            start + items[i].size
        };
    }
    cur
}

/// The order in which `items` fill one line of `cls` bytes from its start, largest alignment
/// first (as a write line is declared), or None where they do not fit. Where they do not fit
/// whole, one item may go last and spill onto the next line if the bytes of it that are
/// touched ([`Item::reach`]) still end on this one: an embedded struct is moved whole, and
/// its own layout decides which of its members can share a line with others (page_pool's
/// `alloc_stats`, whose first counter the fragment path bumps, beside the 24-byte frag block:
/// the block and the counter on one line, the other counters on the next). Indices into
/// `items`.
fn pack_order(items: &[&Item], cls: u64) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(items[i].align));
    let end = |order: &[usize], last_reach: bool| end_of(items, order, last_reach);
    if end(&order, false) <= cls {
        return Some(order);
    }
    // One item last, its touched bytes on the line and the rest spilling over.
    for k in 0..order.len() {
        let j = order[k];
        if items[j].reach >= items[j].size {
            continue;
        }
        let mut o = order.clone();
        o.remove(k);
        o.push(j);
        if end(&o, true) <= cls {
            return Some(o);
        }
    }
    None
}

struct Search<'a> {
    q: Queueing,
    items: &'a [Item],
    streams: &'a [Stream],
    machine: &'a MachineModel,
    cls: u64,
    /// Hot items in search order.
    order: Vec<usize>,
    /// Each item's cost on a line of its own.
    alone: Vec<f64>,
    /// Path name -> (rate, items).
    paths: Vec<(f64, Vec<usize>)>,
    /// Current line of each item: read-area items mostly stay where they are.
    read_line: Vec<usize>,
    best: Option<(f64, Vec<Option<usize>>)>,
    nodes: u64,
    exhausted: bool,
    max_bins: Option<usize>,
    /// An item may end a line with its untouched rest spilling onto the next ([`pack_order`]).
    spill: bool,
}

impl Search<'_> {
    fn bin_cost(&self, members: &[usize]) -> f64 {
        let s: Vec<&Stream> = members
            .iter()
            .flat_map(|&i| self.items[i].streams.iter().map(|&s| &self.streams[s]))
            .collect();
        let (_, _, f, t) = queued_line_terms(&s, self.machine, &self.q);
        f + t
    }

    fn locality(&self, assign: &[Option<usize>], read_area: usize) -> f64 {
        let mut total = 0.0;
        for (rate, items) in &self.paths {
            let lines: BTreeSet<usize> = items
                .iter()
                .filter_map(|&i| {
                    assign[i].map(|b| {
                        if b == read_area {
                            read_area - self.read_line[i]
                        } else {
                            b
                        }
                    })
                })
                .collect();
            total +=
                rate * lines.len().saturating_sub(1) as f64 * cost::locality_price(self.machine);
        }
        total
    }

    /// Depth-first over `self.order[depth..]`; `bins` are write lines (item lists),
    /// `assign[item]` = bin index, or `usize::MAX` for the read area.
    fn run(
        &mut self,
        depth: usize,
        bins: &mut Vec<Vec<usize>>,
        bin_costs: &mut Vec<f64>,
        assign: &mut Vec<Option<usize>>,
        rest_bound: f64,
    ) {
        self.nodes += 1;
        if self.nodes > NODE_BUDGET {
            self.exhausted = true;
            return;
        }
        let sum: f64 = bin_costs.iter().sum();
        let loc = self.locality(assign, usize::MAX);
        let bound = sum + loc + rest_bound;
        if let Some((best, _)) = &self.best
            && bound >= *best - 1e-9 * best.abs().max(1.0)
        {
            return;
        }
        if depth == self.order.len() {
            self.best = Some((sum + loc, assign.clone()));
            return;
        }
        let item = self.order[depth];
        let rest = (rest_bound - self.alone[item]).max(0.0);
        // Options, cheapest first: an existing write line, a new one, the read area.
        let mut options: Vec<(f64, usize)> = Vec::new();
        if !self.items[item].big {
            for (b, members) in bins.iter().enumerate() {
                if members.iter().any(|&m| self.items[m].big) {
                    continue;
                }
                let mut with: Vec<&Item> = members.iter().map(|&m| &self.items[m]).collect();
                with.push(&self.items[item]);
                if !pack_fits(&with, self.cls, self.spill) {
                    continue;
                }
                let mut m = members.clone();
                m.push(item);
                options.push((self.bin_cost(&m) - bin_costs[b], b));
            }
        }
        let can_open = self.max_bins.is_none_or(|max| bins.len() < max);
        // Read-only items, big ones too (an #ifdef block kept whole), may stay in the read
        // area: off every write line, where they cost nothing and need no line of their own.
        // Listed first, so that a tie goes to the layout that needs no new line.
        if self.items[item].writes == 0.0 {
            options.push((0.0, usize::MAX));
        }
        // A new line: for a written item, its own write line; for a read-only one that a
        // path reads with others, a line that gathers what the path reads (the read area
        // keeps items on their current lines, which a path may touch many of).
        let gathers = self.items[item].writes == 0.0
            && self
                .paths
                .iter()
                .any(|(_, members)| members.len() > 1 && members.contains(&item));
        if (self.items[item].writes > 0.0 || self.items[item].big || gathers) && can_open {
            options.push((self.alone[item], bins.len()));
        }
        options.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, choice) in options {
            if choice == usize::MAX {
                assign[item] = Some(usize::MAX);
                self.run(depth + 1, bins, bin_costs, assign, rest);
            } else if choice == bins.len() {
                bins.push(vec![item]);
                bin_costs.push(self.alone[item]);
                assign[item] = Some(choice);
                self.run(depth + 1, bins, bin_costs, assign, rest);
                bins.pop();
                bin_costs.pop();
            } else {
                let old = bin_costs[choice];
                bins[choice].push(item);
                bin_costs[choice] = self.bin_cost(&bins[choice]);
                assign[item] = Some(choice);
                self.run(depth + 1, bins, bin_costs, assign, rest);
                bins[choice].pop();
                bin_costs[choice] = old;
            }
            assign[item] = None;
            if self.exhausted && self.best.is_some() {
                return;
            }
        }
    }
}

/// Finds the best order and alignment for `units` under `constraints`. `current` is the
/// struct as it is; `min_align` is the struct's own alignment.
///
/// On a machine whose L2 fetches 128-byte aligned pairs of 64-byte lines
/// ([`MachineModel::adjacent_line_pairs`]), hot lines written from different CPUs still
/// contend when they share a pair (`contention::pairs`). The search runs a second time with
/// pairs as its lines (what it separates starts 128 bytes apart); that layout is priced with
/// the real 64-byte model, pair term included, and kept only where it costs less (a tie keeps
/// the smaller one-line layout).
#[allow(clippy::too_many_arguments)]
pub fn optimize(
    units: &[Unit],
    streams: &[Stream],
    current: &Placement,
    min_align: u64,
    constraints: &Constraints,
    cls: u64,
    machine: &MachineModel,
    q: &Queueing,
) -> Result<Plan, String> {
    let search = |spacing: u64| {
        optimize_spaced(
            units,
            streams,
            current,
            min_align,
            constraints,
            cls,
            machine,
            q,
            spacing,
        )
    };
    let lines = search(cls);
    // Hot lines a line apart hold only on instances that start a line: where the instances
    // start elsewhere, a layout whose hot groups are a pair of lines apart (a line of other
    // bytes between two groups) keeps them apart at every start, and is a candidate too.
    let pairs = machine.adjacent_line_pairs && cls == 64;
    if !pairs && !constraints.instances.misaligned() {
        return lines;
    }
    let mut pairs = match search(2 * cls) {
        Ok(p) if !p.line_aligned.is_empty() => p,
        _ => return lines,
    };
    pairs.spacing_reason = Some(spacing_reason(machine, cls, &constraints.instances));
    let Ok(lines) = lines else {
        return Ok(pairs);
    };
    let (by_line, by_pair) = (lines.cost.total_cycles(), pairs.cost.total_cycles());
    if by_pair >= by_line - 1e-9 * by_line.abs().max(1.0) {
        return Ok(lines);
    }
    // The pair search prices a pair as one line, which bounds nothing: the bound is the
    // one-line search's (the pair term only adds to a layout's cost).
    let lower_bound = lines.lower_bound.min(by_pair);
    Ok(Plan {
        optimal: false,
        lower_bound,
        nodes: lines.nodes + pairs.nodes,
        budget_spent: lines.budget_spent || pairs.budget_spent,
        pair_align: Some(2 * cls),
        line_spaced_cycles: Some(by_line),
        ..pairs
    })
}

/// [`optimize`] with one-line spacing only, whatever the machine's L2 fetches: for structs
/// whose instances cannot take a pair's alignment.
#[allow(clippy::too_many_arguments)]
pub fn optimize_line_spaced(
    units: &[Unit],
    streams: &[Stream],
    current: &Placement,
    min_align: u64,
    constraints: &Constraints,
    cls: u64,
    machine: &MachineModel,
    q: &Queueing,
) -> Result<Plan, String> {
    optimize_spaced(
        units,
        streams,
        current,
        min_align,
        constraints,
        cls,
        machine,
        q,
        cls,
    )
}

/// Where `text` (the source that declares struct `name`) declares an instance of it with an
/// alignment below `align` (`static alignas(64) struct counters counters;`): the first such
/// line. A struct aligned to `align` makes that declaration an error (an alignment specifier
/// cannot reduce the type's).
pub fn instance_aligned_below(text: &str, name: &str, align: u64) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| instance_below(l, name, align).is_some())
        .map(str::to_string)
}

/// `text` with every instance of struct `name` declared below `align` declared at `align`
/// (`static alignas(64) struct counters counters;` to `alignas(128)`), so that the struct
/// aligned to `align` still compiles; None where one of them gives its alignment otherwise
/// than by number (`____cacheline_aligned`), which this cannot rewrite.
pub fn realign_instances(text: &str, name: &str, align: u64) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match instance_below(line.trim(), name, align) {
            None => out.push_str(line),
            Some(false) => return None,
            Some(true) => {
                let mut l = line.to_string();
                for key in ALIGN_KEYS {
                    let mut from = 0;
                    while let Some(i) = l[from..].find(key).map(|i| i + from) {
                        let at = i + key.len();
                        let digits = l[at..].chars().take_while(|c| c.is_ascii_digit()).count();
                        if l[at..at + digits].parse::<u64>().is_ok_and(|n| n < align) {
                            l.replace_range(at..at + digits, &align.to_string());
                        }
                        from = at;
                    }
                }
                out.push_str(&l);
            }
        }
    }
    Some(out)
}

const ALIGN_KEYS: [&str; 4] = ["alignas(", "_Alignas(", "__aligned(", "aligned("];

/// Whether the trimmed line `l` declares an instance of struct `name` aligned below `align`:
/// Some(true) where every such alignment is a number, Some(false) where one is a kernel
/// marker (`____cacheline_aligned`), None where it does not.
fn instance_below(l: &str, name: &str, align: u64) -> Option<bool> {
    let word = |l: &str, w: &str| {
        l.match_indices(w).any(|(i, _)| {
            let before = l[..i].chars().next_back();
            let after = l[i + w.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    if !word(l, name) || l.contains('{') || !l.ends_with(';') || l.starts_with("typedef") {
        return None;
    }
    let marker = word(l, "____cacheline_aligned") && align > 64;
    let mut numeric = false;
    for key in ALIGN_KEYS {
        for (i, _) in l.match_indices(key) {
            let rest = &l[i + key.len()..];
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            numeric |= n.parse::<u64>().is_ok_and(|n| n < align);
        }
    }
    match (marker, numeric) {
        (true, _) => Some(false),
        (false, true) => Some(true),
        (false, false) => None,
    }
}

/// [`optimize`] with `spacing` (a line, or a pair of lines) as the search's line: what it
/// puts on lines of their own is aligned to `spacing`; the cost is the model's at `cls`.
#[allow(clippy::too_many_arguments)]
fn optimize_spaced(
    units: &[Unit],
    streams: &[Stream],
    current: &Placement,
    min_align: u64,
    constraints: &Constraints,
    cls: u64,
    machine: &MachineModel,
    q: &Queueing,
    spacing: u64,
) -> Result<Plan, String> {
    // Candidates, priced with the size term: the best grouping, then the best with one hot
    // line fewer, and so on, while the layout grows the struct (as allocated) or is over the
    // size budget: each hot line the search opens starts a fresh line, and the members around
    // it may not fill the gaps. The cheapest wins, so padding that removes fewer transfers
    // than its growth costs loses to a reorder within the size. With fewer hot lines the
    // coherence cost only rises, so the descent stops once that alone prices above the best.
    // Within a budget, when no grouping fits, the current layout is the answer if it fits
    // ("nothing within N lines beats it"), else the members packed tightest; a refusal says
    // the least any layout of the members needs.
    let allocator = constraints.allocator;
    let from = cost::Footprint::of(streams, current, cls);
    let price = |c: Cost, p: &Placement| {
        c.with_size_term(
            streams,
            p,
            from,
            cls,
            machine,
            (constraints.allocator, &constraints.instance_count),
        )
    };
    let fits = |size: u64| constraints.max_size.is_none_or(|m| size <= m);
    let now_lines = allocator.lines(current.size, cls);
    let tolerance = |x: f64| 1e-9 * x.abs().max(1.0);
    let mut best: Option<Plan> = None;
    let mut last: Option<Plan> = None;
    let mut hot_lines = None;
    loop {
        let lines_with = |spill: bool| {
            optimize_lines(
                units,
                streams,
                current,
                min_align,
                constraints,
                cls,
                machine,
                q,
                spacing,
                hot_lines,
                spill,
            )
        };
        let plan = match lines_with(false) {
            Ok(p) => p,
            Err(e) if hot_lines.is_none() => return Err(e),
            Err(_) => break,
        };
        let mut plan = plan;
        plan.cost = price(plan.cost, &plan.placement);
        last = Some(plan.clone());
        let opened = plan.write_lines.len();
        let size = plan.placement.size;
        let unsized_cycles = plan.cost.total_cycles() - plan.cost.size_cycles;
        if fits(size)
            && best.as_ref().is_none_or(|b| {
                plan.cost.total_cycles() < b.cost.total_cycles() - tolerance(b.cost.total_cycles())
            })
        {
            best = Some(plan);
        }
        // The same search with an item ending a line and spilling over (an embedded struct
        // whose touched members come first): a candidate beside it, where it fits and costs
        // less; the descent follows the search without it.
        if let Ok(mut spilled) = lines_with(true) {
            spilled.cost = price(spilled.cost, &spilled.placement);
            if fits(spilled.placement.size)
                && best.as_ref().is_none_or(|b| {
                    spilled.cost.total_cycles()
                        < b.cost.total_cycles() - tolerance(b.cost.total_cycles())
                })
            {
                best = Some(spilled);
            }
        }
        let done = opened <= 1
            || hot_lines == Some(opened)
            || (fits(size) && allocator.lines(size, cls) <= now_lines)
            || best.as_ref().is_some_and(|b| {
                unsized_cycles >= b.cost.total_cycles() - tolerance(b.cost.total_cycles())
            });
        if done {
            break;
        }
        hot_lines = Some(opened - 1);
    }
    if let Some(plan) = best {
        return Ok(plan);
    }
    let max = constraints.max_size.unwrap_or(u64::MAX);
    let some = last.expect("a first plan, or its error was returned");
    if current.size <= max {
        let cost = price(
            constraints
                .instances
                .evaluate(units, streams, current, cls, machine, q),
            current,
        );
        return Ok(as_current(some, units, current, cost));
    }
    let (order, packed) = packed(units, current, min_align);
    if packed.size <= max && keeps_structure(units, current, &order, &packed, constraints) {
        let cost = price(
            constraints
                .instances
                .evaluate(units, streams, &packed, cls, machine, q),
            &packed,
        );
        let mut plan = as_current(some, units, current, cost);
        plan.moved = reordered(&order, current)
            .into_iter()
            .map(|u| units[u].name.clone())
            .collect();
        plan.order = order;
        plan.placement = packed;
        plan.optimal = false;
        return Ok(plan);
    }
    Err(format!(
        "no layout of the members fits in {max} bytes ({} lines of {cls}): the smallest takes {} bytes ({} lines)",
        max / cls,
        packed.size,
        packed.size.div_ceil(cls)
    ))
}

/// The members in the current order sorted by alignment, largest first: no hole between
/// them, the least size any order of them takes.
pub fn packed(units: &[Unit], current: &Placement, min_align: u64) -> (Vec<usize>, Placement) {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| (current.offsets[u], u));
    order.sort_by_key(|&u| std::cmp::Reverse(units[u].align.max(1)));
    let p = derive(units, &order, &BTreeSet::new(), 1, min_align);
    (order, p)
}

/// Whether `order` (at `p`) keeps what must not move: pinned members' offsets, `together`
/// sets and the struct's marker blocks in their current order, next to each other.
fn keeps_structure(
    units: &[Unit],
    current: &Placement,
    order: &[usize],
    p: &Placement,
    constraints: &Constraints,
) -> bool {
    let index = |name: &str| {
        units
            .iter()
            .position(|u| u.name == name || u.members.iter().any(|m| m == name))
    };
    let pins = constraints
        .pinned
        .iter()
        .all(|n| index(n).is_some_and(|u| p.offsets[u] == current.offsets[u]));
    let mut blocks = marker_blocks(units);
    for t in &constraints.together {
        let Some(mut us) = t.iter().map(|n| index(n)).collect::<Option<Vec<usize>>>() else {
            return false;
        };
        us.sort_by_key(|&u| (current.offsets[u], u));
        blocks.push(us);
    }
    let pos = |u: usize| order.iter().position(|&x| x == u).unwrap_or(usize::MAX);
    pins && blocks
        .iter()
        .all(|b| b.windows(2).all(|w| pos(w[1]) == pos(w[0]) + 1))
}

/// [`optimize_spaced`] with the search opening at most `hot_lines` lines (of `spacing`
/// bytes) for hot members (beyond what the size budget allows), and no check of the final
/// size.
#[allow(clippy::too_many_arguments)]
fn optimize_lines(
    units: &[Unit],
    streams: &[Stream],
    current: &Placement,
    min_align: u64,
    constraints: &Constraints,
    cls: u64,
    machine: &MachineModel,
    q: &Queueing,
    spacing: u64,
    hot_lines: Option<usize>,
    spill: bool,
) -> Result<Plan, String> {
    if units.len() > 1 && units.iter().all(|u| u.offset == 0) {
        return Err(
            "a union: its members share their bytes, there is no order to change".to_string(),
        );
    }
    let unit_of = |name: &str| -> Result<usize, String> {
        units
            .iter()
            .position(|u| u.name == name || u.members.iter().any(|m| m == name))
            .ok_or_else(|| format!("no member named '{name}'"))
    };
    // Items: the struct's own marker blocks (cache-line groups) and together-groups first,
    // then every other unit alone.
    let mut item_of = vec![usize::MAX; units.len()];
    let mut items: Vec<Item> = Vec::new();
    let blocks = marker_blocks(units);
    let in_block = |u: usize| blocks.iter().any(|b| b.contains(&u));
    for b in &blocks {
        for &u in b {
            item_of[u] = items.len();
        }
        items.push(Item {
            units: b.clone(),
            size: 0,
            align: 1,
            streams: vec![],
            writes: 0.0,
            big: false,
            reach: 0,
        });
    }
    for group in &constraints.together {
        let mut us: Vec<usize> = group.iter().map(|n| unit_of(n)).collect::<Result<_, _>>()?;
        // Members inside a marker block already move with it, in their order.
        us.retain(|&u| !in_block(u));
        if us.len() < 2 {
            continue;
        }
        us.sort_by_key(|&u| (current.offsets[u], u));
        us.dedup();
        if let Some(&u) = us.iter().find(|&&u| item_of[u] != usize::MAX) {
            return Err(format!(
                "member '{}' is in two --together groups",
                units[u].name
            ));
        }
        // A block moves whole, so it must be one: nothing of the struct between its members.
        let (lo, hi) = (current.offsets[us[0]], current.offsets[*us.last().unwrap()]);
        if let Some(between) = (0..units.len())
            .find(|u| !us.contains(u) && current.offsets[*u] > lo && current.offsets[*u] < hi)
        {
            return Err(format!(
                "--together {}: '{}' lies between its members; list it too or move it first",
                group.join(","),
                units[between].name
            ));
        }
        for &u in &us {
            item_of[u] = items.len();
        }
        items.push(Item {
            units: us,
            size: 0,
            align: 1,
            streams: vec![],
            writes: 0.0,
            big: false,
            reach: 0,
        });
    }
    for u in 0..units.len() {
        if item_of[u] == usize::MAX {
            item_of[u] = items.len();
            items.push(Item {
                units: vec![u],
                size: 0,
                align: 1,
                streams: vec![],
                writes: 0.0,
                big: false,
                reach: 0,
            });
        }
    }
    for it in &mut items {
        let first = current.offsets[it.units[0]];
        let last = *it.units.last().unwrap();
        it.size = if it.units.len() == 1 {
            units[last].size
        } else {
            current.offsets[last] + units[last].size - first
        };
        it.align = it.units.iter().map(|&u| units[u].align).max().unwrap_or(1);
        it.big = it.size > spacing;
    }
    // Streams of a together-group keep their offsets relative to its first unit.
    let mut streams: Vec<Stream> = streams.to_vec();
    for s in &mut streams {
        let it = &items[item_of[s.unit]];
        let base = current.offsets[it.units[0]];
        s.inner += current.offsets[s.unit] - base;
    }
    for (i, s) in streams.iter().enumerate() {
        let it = &mut items[item_of[s.unit]];
        it.streams.push(i);
        // A critical section of a lock outside the struct takes what it touches from the
        // previous holder (`cost::Sharing::HandOff`): written, for the search, whether it
        // loads or stores there, so it is priced on its line, never left free in the read area.
        it.writes += if s.under_lock.is_some() {
            s.reads + s.writes
        } else {
            s.writes
        };
    }
    for it in &mut items {
        it.reach = if it.units.len() == 1 && !it.streams.is_empty() {
            it.streams
                .iter()
                .map(|&i| streams[i].inner + streams[i].size)
                .max()
                .unwrap_or(it.size)
                .min(it.size)
        } else {
            it.size
        };
    }
    let pinned: BTreeSet<usize> = constraints
        .pinned
        .iter()
        .map(|n| unit_of(n).map(|u| item_of[u]))
        .collect::<Result<_, _>>()?;

    // Search over hot, movable items.
    let hot: Vec<usize> = (0..items.len())
        .filter(|&i| !items[i].streams.is_empty() && !pinned.contains(&i))
        .collect();
    // Costs on a line of its own (a big item: its streams by the line they fall on).
    let scratch = Search {
        q: *q,
        items: &items,
        streams: &streams,
        machine,
        cls: spacing,
        order: vec![],
        alone: vec![],
        paths: vec![],
        read_line: vec![],
        best: None,
        nodes: 0,
        exhausted: false,
        max_bins: None,
        spill,
    };
    let alone: Vec<f64> = (0..items.len())
        .map(|i| {
            if items[i].big {
                let mut by_line: BTreeMap<u64, Vec<&Stream>> = BTreeMap::new();
                for &s in &items[i].streams {
                    for line in streams[s].lines(0, cls) {
                        by_line.entry(line).or_default().push(&streams[s]);
                    }
                }
                by_line
                    .values()
                    .map(|v| {
                        let (_, _, f, t) = queued_line_terms(v, machine, q);
                        f + t
                    })
                    .sum()
            } else {
                scratch.bin_cost(&[i])
            }
        })
        .collect();
    let mut order = hot.clone();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (items[i].writes > 0.0, alone[i], items[i].writes);
        let (ka, kb) = (key(a), key(b));
        kb.0.cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
    });
    // The hot items each run of a path touches, at the run's rate: the model's runs
    // ([`cost::path_runs`]), so that a function on disjoint CPUs (each thread its own slot)
    // is one run per CPU set, touching its own line, as the model prices the layout.
    let hot_set: BTreeSet<usize> = hot.iter().copied().collect();
    let paths: Vec<(f64, Vec<usize>)> = cost::path_runs(&streams)
        .into_iter()
        .map(|r| {
            let touched: BTreeSet<usize> = r
                .streams
                .iter()
                .map(|&s| item_of[streams[s].unit])
                .filter(|i| hot_set.contains(i))
                .collect();
            (r.rate, touched.into_iter().collect::<Vec<usize>>())
        })
        .filter(|(_, touched)| !touched.is_empty())
        .collect();
    let max_bins = match (
        constraints.max_size.map(|m| (m / spacing).max(1) as usize),
        hot_lines,
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut search = Search {
        q: *q,
        items: &items,
        streams: &streams,
        machine,
        cls: spacing,
        order: order.clone(),
        alone: alone.clone(),
        paths,
        read_line: items
            .iter()
            .map(|it| (current.offsets[it.units[0]] / spacing) as usize + 1)
            .collect(),
        best: None,
        nodes: 0,
        exhausted: false,
        max_bins,
        spill,
    };
    // A line's cost only grows as members join it, so a partial grouping's cost bounds every
    // completion from below; members not placed yet add nothing to the bound.
    let rest = 0.0;
    let mut assign = vec![None; items.len()];
    search.run(0, &mut Vec::new(), &mut Vec::new(), &mut assign, rest);
    let nodes = search.nodes;
    let optimal = !search.exhausted;
    let Some((search_cycles, assign)) = search.best else {
        return Err("no grouping of the hot members fits the size budget".to_string());
    };

    // Build the declaration order with as few moves as possible: walk the current order;
    // where a write line's first item comes, start a fresh line with the whole group, then
    // fill the rest of that line with the cold items that follow (hot items met meanwhile wait
    // until the line is full); everything else keeps its place.
    let mut bins: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &i in &hot {
        if let Some(b) = assign[i].filter(|&b| b != usize::MAX) {
            bins.entry(b).or_default().push(i);
        }
    }
    let bin_of: BTreeMap<usize, usize> = bins
        .iter()
        .flat_map(|(&b, members)| members.iter().map(move |&i| (i, b)))
        .collect();
    // Named by their hot units: a block kept whole (an #ifdef) brings cold neighbours along.
    let hot_units: BTreeSet<usize> = streams.iter().map(|s| s.unit).collect();
    let mut write_lines: Vec<Vec<String>> = bins
        .values()
        .map(|m| {
            m.iter()
                .flat_map(|&i| items[i].units.iter())
                .filter(|u| hot_units.contains(u))
                .map(|&u| units[u].name.clone())
                .collect()
        })
        .collect();
    let mut by_offset: Vec<usize> = (0..items.len()).collect();
    // Zero-size markers share offsets with their neighbours: declaration order breaks ties.
    by_offset.sort_by_key(|&i| (current.offsets[items[i].units[0]], items[i].units[0]));
    let mut emitted = vec![false; items.len()];
    let mut item_order: Vec<usize> = Vec::new();
    let mut aligned_items: BTreeSet<usize> = BTreeSet::new();
    let mut cursor = 0u64;
    // An item's lead: the unit that starts a line when the item must (its first hot unit: a
    // block kept whole may begin with cold members, which can stay on the line before).
    // A kernel cache-line group starts its line with its begin marker.
    let lead = |i: usize| -> usize {
        let first = items[i].units[0];
        if units[first].size == 0 {
            return first;
        }
        items[i]
            .units
            .iter()
            .copied()
            .find(|u| hot_units.contains(u))
            .unwrap_or(first)
    };
    // Unit by unit, as `derive` and the compiler place them.
    let place = |i: usize, cursor: &mut u64, aligned: bool| {
        for &u in &items[i].units {
            let mut a = units[u].align.max(1);
            if aligned && u == lead(i) {
                a = a.max(spacing);
            }
            *cursor = cursor.div_ceil(a) * a + units[u].size;
        }
    };
    // After a write line: the end of that line, which nothing hot may reach back into.
    let mut fence: Option<u64> = None;
    let mut waiting: Vec<usize> = Vec::new();
    // A line that only gathers what a path reads goes first, at the struct's start, where it
    // starts a line without an alignment that would grow the struct (what Linux 3.9 did for
    // the VMA tree walk: its members first, none aligned). Only with nothing pinned and no
    // marker block in it; written lines keep their places.
    let read_only_bin = bins.values().find(|members| {
        members
            .iter()
            .all(|&i| items[i].writes == 0.0 && !items[i].big && units[items[i].units[0]].size > 0)
    });
    if let Some(group) = read_only_bin.filter(|_| pinned.is_empty()) {
        let mut group = group.clone();
        group.sort_by_key(|&x| {
            (
                std::cmp::Reverse(items[x].align),
                current.offsets[items[x].units[0]],
            )
        });
        for &g in &group {
            item_order.push(g);
            emitted[g] = true;
            place(g, &mut cursor, false);
        }
        fence = Some(cursor.div_ceil(spacing) * spacing);
    }
    let mut k = 0;
    while k < by_offset.len() || !waiting.is_empty() {
        // Once the line is full, the items that waited come next.
        if fence.is_some_and(|f| cursor >= f) || (k >= by_offset.len() && !waiting.is_empty()) {
            fence = None;
            for i in std::mem::take(&mut waiting) {
                if !emitted[i] {
                    item_order.push(i);
                    emitted[i] = true;
                    place(i, &mut cursor, false);
                }
            }
            continue;
        }
        if k >= by_offset.len() {
            break;
        }
        let i = by_offset[k];
        k += 1;
        if emitted[i] {
            continue;
        }
        if let Some(&b) = bin_of.get(&i) {
            // Hot readers that shared the old line with this item, after it, stay on the line
            // before the write line instead of being pushed past it.
            if fence.is_none() {
                let line = current.offsets[items[i].units[0]] / cls;
                for &j in &by_offset[k..] {
                    let off = current.offsets[items[j].units[0]];
                    if off / cls != line {
                        break;
                    }
                    if !emitted[j] && assign[j] == Some(usize::MAX) && !pinned.contains(&j) {
                        item_order.push(j);
                        emitted[j] = true;
                        place(j, &mut cursor, false);
                    }
                }
            }
            // A new write line starts a fresh line even if the last one is still open; what
            // waited goes after it.
            let mut group = bins[&b].clone();
            group.sort_by(|&x, &y| {
                items[y].align.cmp(&items[x].align).then(
                    current.offsets[items[x].units[0]].cmp(&current.offsets[items[y].units[0]]),
                )
            });
            // As the search packed it: an item that spills onto the next line goes last.
            let refs: Vec<&Item> = group.iter().map(|&g| &items[g]).collect();
            if let Some(o) = pack_order(&refs, spacing).filter(|_| spill) {
                group = o.into_iter().map(|k| group[k]).collect();
            }
            for (n, &g) in group.iter().enumerate() {
                if n == 0 {
                    aligned_items.insert(g);
                }
                item_order.push(g);
                emitted[g] = true;
                place(g, &mut cursor, n == 0);
            }
            fence = Some(cursor.div_ceil(spacing) * spacing);
            continue;
        }
        // While a write line is open, hot items wait; a cold item goes on even when it
        // straddles into the next line (it keeps its place in the order).
        if fence.is_some() && (!items[i].streams.is_empty() || pinned.contains(&i)) {
            waiting.push(i);
            continue;
        }
        item_order.push(i);
        emitted[i] = true;
        place(i, &mut cursor, false);
    }
    // Anything hot right after a write line that did not fill up must start a new line.
    let mut unit_order = Vec::new();
    let mut line_aligned = BTreeSet::new();
    let mut cur = 0u64;
    let mut open_fence: Option<u64> = None;
    for &i in &item_order {
        let mut al = aligned_items.contains(&i);
        if let Some(f) = open_fence {
            if cur >= f {
                open_fence = None;
            } else if !items[i].streams.is_empty() && !bin_of.contains_key(&i) {
                al = true;
                open_fence = None;
            }
        }
        if al {
            line_aligned.insert(lead(i));
        }
        place(i, &mut cur, al);
        if bin_of.contains_key(&i) {
            open_fence = Some(cur.div_ceil(spacing) * spacing);
        }
        unit_order.extend(items[i].units.iter().copied());
    }
    // Pinned units: align them back onto their offsets when the cursor allows.
    let mut placement = derive(units, &unit_order, &line_aligned, spacing, min_align);
    for &i in &pinned {
        let u = items[i].units[0];
        let want = current.offsets[u];
        if placement.offsets[u] != want {
            return Err(format!(
                "cannot keep '{}' at offset {want}: the new order puts it at {}",
                units[u].name, placement.offsets[u]
            ));
        }
    }
    // Drop alignments the layout does not need, so the declaration carries only attributes
    // that do something: those where the cursor was on a line start anyway, and those whose
    // only effect is a bigger struct at no lower cost (a block that must stay whole, such as
    // an #ifdef, aligned as a whole when one member of it already carries its own alignment).
    let unit_streams = streams_in_units(&streams, &items, &item_of, current);
    let keeps_pins = |p: &Placement| {
        pinned
            .iter()
            .all(|&i| p.offsets[items[i].units[0]] == current.offsets[items[i].units[0]])
    };
    // Priced with the size term, so an alignment whose only effect is growth is dropped.
    let from = cost::Footprint::of(&unit_streams, current, cls);
    let priced = |p: &Placement| {
        constraints
            .instances
            .evaluate(units, &unit_streams, p, cls, machine, q)
            .with_size_term(
                &unit_streams,
                p,
                from,
                cls,
                machine,
                (constraints.allocator, &constraints.instance_count),
            )
            .total_cycles()
    };
    let mut cycles = priced(&placement);
    for u in line_aligned.clone() {
        let mut without = line_aligned.clone();
        without.remove(&u);
        let p = derive(units, &unit_order, &without, spacing, min_align);
        if p == placement {
            line_aligned = without;
            continue;
        }
        if p.size > placement.size || !keeps_pins(&p) {
            continue;
        }
        let c = priced(&p);
        if c <= cycles + 1e-9 * cycles.abs().max(1.0) {
            line_aligned = without;
            placement = p;
            cycles = c;
        }
    }
    // Fill padding with untouched members: the order above leaves holes before line-aligned
    // units and only fills write lines with the cold items that follow, so untouched members
    // can spill onto an extra line. A cold item (no accesses, not pinned, on no write line)
    // later in the order moves up into a hole it fits, when its members end sooner, the
    // struct grows no larger and the model prices it no higher.
    let movable = |i: usize| {
        items[i].streams.is_empty()
            && items[i].size > 0
            && !pinned.contains(&i)
            && !bin_of.contains_key(&i)
            && !items[i].units.iter().any(|u| line_aligned.contains(u))
    };
    let units_of = |order: &[usize]| -> Vec<usize> {
        order
            .iter()
            .flat_map(|&i| items[i].units.iter().copied())
            .collect()
    };
    // Progress is the end of the last member (the size itself moves in whole alignments, so
    // one move alone may not shrink it); the size may never grow.
    let end_of = |p: &Placement| {
        (0..units.len())
            .map(|u| p.offsets[u] + units[u].size)
            .max()
            .unwrap_or(0)
    };
    let mut filled = derive(units, &unit_order, &line_aligned, spacing, min_align);
    let mut current_end = end_of(&filled);
    // Bounded work on huge structs: each trial derives a whole placement.
    let mut trials = 0usize;
    const FILL_TRIALS: usize = 4096;
    let mut rounds = 0;
    'fill: while rounds < items.len() && trials < FILL_TRIALS {
        rounds += 1;
        let p = &filled;
        for pos in 1..item_order.len() {
            let prev = *items[item_order[pos - 1]].units.last().unwrap();
            let end = p.offsets[prev] + units[prev].size;
            let next_start = p.offsets[items[item_order[pos]].units[0]];
            if next_start <= end {
                continue;
            }
            for r in pos + 1..item_order.len() {
                let c = item_order[r];
                if !movable(c) || items[c].size > next_start - end {
                    continue;
                }
                trials += 1;
                if trials > FILL_TRIALS {
                    break 'fill;
                }
                let mut order = item_order.clone();
                order.remove(r);
                order.insert(pos, c);
                let u_order = units_of(&order);
                let trial = derive(units, &u_order, &line_aligned, spacing, min_align);
                if trial.size > p.size || end_of(&trial) >= current_end || !keeps_pins(&trial) {
                    continue;
                }
                let c2 = priced(&trial);
                if c2 <= cycles + 1e-9 * cycles.abs().max(1.0) {
                    item_order = order;
                    unit_order = u_order;
                    current_end = end_of(&trial);
                    filled = trial;
                    cycles = c2;
                    continue 'fill;
                }
            }
        }
        break;
    }
    // Read-only hot members the order left on lines of their own (the read area keeps them
    // near where they were) go where the paths that read them are: each is tried at every
    // place in the order; the cheapest place in the model stays, the size never growing. One
    // that lands on a write line is named with it (the report's claims and asserts).
    let readers: Vec<usize> = item_order
        .iter()
        .copied()
        .filter(|&i| {
            !items[i].streams.is_empty()
                && items[i].writes == 0.0
                && items[i].size > 0
                && !pinned.contains(&i)
                && !bin_of.contains_key(&i)
                && !items[i].units.iter().any(|u| line_aligned.contains(u))
        })
        .collect();
    let mut relocated: BTreeSet<usize> = BTreeSet::new();
    for i in readers {
        let Some(from) = item_order.iter().position(|&x| x == i) else {
            continue;
        };
        let mut best: Option<(f64, Vec<usize>, Vec<usize>, Placement)> = None;
        for to in 0..item_order.len() {
            if to == from || trials > 2 * FILL_TRIALS {
                continue;
            }
            trials += 1;
            let mut order = item_order.clone();
            order.remove(from);
            order.insert(to, i);
            let u_order = units_of(&order);
            let trial = derive(units, &u_order, &line_aligned, spacing, min_align);
            if trial.size > filled.size || !keeps_pins(&trial) {
                continue;
            }
            let c = priced(&trial);
            let bar = best.as_ref().map_or(cycles, |b| b.0);
            if c < bar - 1e-9 * bar.abs().max(1.0) {
                best = Some((c, order, u_order, trial));
            }
        }
        if let Some((c, order, u_order, trial)) = best {
            relocated.insert(i);
            item_order = order;
            unit_order = u_order;
            filled = trial;
            cycles = c;
        }
    }
    placement = derive(units, &unit_order, &line_aligned, spacing, min_align);
    for (b, members) in bins.values().enumerate() {
        let first = items[members[0]].units[0];
        let line = placement.offsets[first] / spacing;
        for &i in &relocated {
            let it = &items[i];
            if it
                .units
                .iter()
                .all(|&u| placement.offsets[u] / spacing == line)
            {
                for &u in &it.units {
                    if hot_units.contains(&u) && !write_lines[b].contains(&units[u].name) {
                        write_lines[b].push(units[u].name.clone());
                    }
                }
            }
        }
    }
    let cost = constraints
        .instances
        .evaluate(units, &unit_streams, &placement, cls, machine, q);
    let moved = reordered(&unit_order, current)
        .into_iter()
        .map(|u| units[u].name.clone())
        .collect();
    // The search is exact over groupings; the concrete order can cost a little more (a hot
    // path's read-only members split over two lines). Only call it optimal when it does not.
    let tolerance = 1e-6 * search_cycles.abs().max(1.0);
    let optimal = optimal && cost.total_cycles() <= search_cycles + tolerance;
    Ok(Plan {
        order: unit_order,
        line_aligned: line_aligned.into_iter().collect(),
        placement,
        optimal,
        // Exhausted: every line costs at least its costliest member alone (costs only grow
        // as members join), so the costliest hot member alone bounds the whole.
        lower_bound: if optimal {
            cost.total_cycles()
        } else if !search.exhausted {
            search_cycles
        } else {
            hot.iter().map(|&i| alone[i]).fold(0.0, f64::max)
        },
        nodes,
        budget_spent: search.exhausted,
        moved,
        write_lines,
        cost,
        pair_align: None,
        line_spaced_cycles: None,
        spacing_reason: None,
        phased: Vec::new(),
    })
}

/// The struct's own structure, as blocks of unit indices that must move whole, in their
/// order: each `__cacheline_group_begin__X` ... `__cacheline_group_end__X` pair with what lies
/// between (the kernel's `__cacheline_group_begin(X)` markers; nested or overlapping groups
/// merge), and each other zero-size member (`CACHELINE_PADDING(_padN_)`, `_pad_[0]`) glued to
/// the member it precedes, whose line it exists to start. Markers carry no bytes and no
/// accesses: moved apart from their members they would mean nothing, or the wrong thing.
pub fn marker_blocks(units: &[Unit]) -> Vec<Vec<usize>> {
    const BEGIN: &str = "__cacheline_group_begin__";
    const END: &str = "__cacheline_group_end__";
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        if u.size != 0 {
            continue;
        }
        if let Some(group) = u.name.strip_prefix(BEGIN) {
            let end = format!("{END}{group}");
            if let Some(j) = (i + 1..units.len()).find(|&j| units[j].name == end) {
                spans.push((i, j));
                continue;
            }
        }
        if u.name.starts_with(END) {
            // Its begin found it already (or it has none: keep it with what it closes).
            if spans.iter().any(|&(_, e)| e == i) {
                continue;
            }
            if i > 0 {
                spans.push((i - 1, i));
            }
            continue;
        }
        if i + 1 < units.len() {
            spans.push((i, i + 1));
        } else if i > 0 {
            spans.push((i - 1, i));
        }
    }
    spans.sort();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged.into_iter().map(|(a, b)| (a..=b).collect()).collect()
}

/// Units that changed places: everything outside a longest run that keeps its current
/// relative order (what a reviewer sees move in the diff).
fn reordered(order: &[usize], current: &Placement) -> Vec<usize> {
    let key: Vec<u64> = order
        .iter()
        .map(|&u| current.offsets[u] * 4096 + u as u64)
        .collect();
    // Longest increasing subsequence, O(n log n), with back links.
    let mut tails: Vec<usize> = Vec::new();
    let mut prev = vec![usize::MAX; key.len()];
    for i in 0..key.len() {
        let pos = tails.partition_point(|&t| key[t] < key[i]);
        if pos > 0 {
            prev[i] = tails[pos - 1];
        }
        if pos == tails.len() {
            tails.push(i);
        } else {
            tails[pos] = i;
        }
    }
    let mut keep = vec![false; key.len()];
    let mut at = tails.last().copied().unwrap_or(usize::MAX);
    while at != usize::MAX {
        keep[at] = true;
        at = prev[at];
    }
    let mut out: Vec<usize> = (0..order.len())
        .filter(|&i| !keep[i])
        .map(|i| order[i])
        .collect();
    out.sort_by_key(|&u| current.offsets[u]);
    out
}

/// Streams back in unit coordinates (undoing the together-group shift).
fn streams_in_units(
    streams: &[Stream],
    items: &[Item],
    item_of: &[usize],
    current: &Placement,
) -> Vec<Stream> {
    streams
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let base = current.offsets[items[item_of[s.unit]].units[0]];
            s.inner -= current.offsets[s.unit] - base;
            s
        })
        .collect()
}

/// Whether a member of C type `type_name` is a lock: `raw_spinlock_t`, `spinlock_t`,
/// `arch_spinlock_t`, `rwlock_t`, `seqlock_t`, `struct mutex`, `pthread_mutex_t`,
/// `pthread_spinlock_t`... (a pointer to one is not).
pub fn is_lock_type(type_name: &str) -> bool {
    if type_name.contains('*') || type_name.contains('(') {
        return false;
    }
    let base = type_name
        .split_whitespace()
        .next_back()
        .unwrap_or("")
        .to_ascii_lowercase();
    [
        "spinlock",
        "mutex",
        "rwlock",
        "seqlock",
        "rwsem",
        "rw_semaphore",
    ]
    .iter()
    .any(|k| base.contains(k))
}

/// A lock and the data it guards, which must stay on one line: for each lock unit
/// (`is_lock[u]`) written from several CPUs, the other units on its line in `placement` that
/// are written from several CPUs by a code path that also writes the lock. Whoever takes the
/// lock writes that data next; on two lines, each holder would fetch two lines where it fetched
/// one, while the model, which sees only rates, would price the two lines' queues as shorter.
/// Groups are unit indices in offset order; a unit is in at most one group.
pub fn lock_groups(
    units: &[Unit],
    streams: &[Stream],
    placement: &Placement,
    cls: u64,
    is_lock: &[bool],
) -> Vec<Vec<usize>> {
    let cls = cls.max(1);
    let line = |u: usize| placement.offsets[u] / cls;
    // Per unit: the paths that write it and the CPUs that do.
    let writers = |u: usize| -> (BTreeSet<&str>, u32) {
        let mut paths = BTreeSet::new();
        let mut list = BTreeSet::new();
        let mut widest = 0;
        for s in streams.iter().filter(|s| s.unit == u && s.writes > 0.0) {
            paths.insert(s.path.as_str());
            list.extend(s.cpu_list.iter().copied());
            widest = widest.max(s.cpus);
        }
        (paths, widest.max(list.len() as u32))
    };
    let mut taken = BTreeSet::new();
    let mut out = Vec::new();
    for lock in 0..units.len() {
        if !is_lock.get(lock).copied().unwrap_or(false) || taken.contains(&lock) {
            continue;
        }
        let (lock_paths, lock_cpus) = writers(lock);
        if lock_cpus < 2 {
            continue;
        }
        let mut group: Vec<usize> = (0..units.len())
            .filter(|&u| u != lock && !taken.contains(&u) && line(u) == line(lock))
            .filter(|&u| {
                let (paths, cpus) = writers(u);
                cpus >= 2 && paths.iter().any(|p| lock_paths.contains(p))
            })
            .collect();
        if group.is_empty() {
            continue;
        }
        group.push(lock);
        group.sort_by_key(|&u| (placement.offsets[u], u));
        taken.extend(group.iter().copied());
        out.push(group);
    }
    out
}

/// One way to split a truly shared member, and what the model predicts for it.
#[derive(Clone, Debug, Serialize)]
pub struct SplitOption {
    /// "per CPU", "per LLC", "per NUMA node", "4 shards".
    pub how: String,
    pub copies: u32,
    /// Modeled cycles of the member's traffic after the split.
    pub cycles: f64,
    /// The same before.
    pub cycles_before: f64,
    /// Extra bytes: one line per copy beyond the first.
    pub extra_bytes: u64,
    /// Of `cycles`, what finding work across copies costs: a pull whose own copy is empty
    /// probes the others (a lock attempt on each, a transfer) and takes an item another CPU
    /// pushed (a migration: the item's line moves). Zero unless the queue depth is known.
    #[serde(skip_serializing_if = "is_zero")]
    pub scan_cycles: f64,
    /// Probability that a pull finds its own copy empty (a queue of `queued` items spread
    /// evenly over the copies).
    #[serde(skip_serializing_if = "is_zero")]
    pub own_empty: f64,
    /// The terms that make `cycles` (finding work aside): all copies' transfers, at a mean
    /// price, on each copy's queue.
    pub terms: SplitTerms,
    /// The same before: the one line.
    pub terms_before: SplitTerms,
}

/// What a member's lines cost, as the model composes it: `transfers` (all copies together, in
/// the profile's rate unit) times `cycles_per_transfer` (the unloaded latencies of where
/// each goes: local or remote HITM, an LLC hit for a node's later readers) times
/// `queue_factor` (each line's queue, `1 / (1 - utilization)` on the line's share of the
/// busiest line's traffic). A split trades these: copies written from their own CPUs take
/// nearer, less queued transfers, and readers that sum every copy take more of them.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SplitTerms {
    pub transfers: f64,
    pub cycles_per_transfer: f64,
    pub queue_factor: f64,
}

impl SplitTerms {
    /// The terms of `copies` alike copies whose lines carry `streams`, and one copy's queued
    /// cycles (what [`queued_line_terms`] prices it at), from one pricing of the line.
    fn of(
        streams: &[&Stream],
        copies: u32,
        machine: &MachineModel,
        q: &Queueing,
    ) -> (SplitTerms, f64) {
        let (ft, tt, fc, tc) = cost::line_terms(streams, machine);
        let transfers = ft + tt;
        let factor = q.factor(fc + tc);
        let terms = SplitTerms {
            transfers: transfers * f64::from(copies),
            cycles_per_transfer: if transfers > 0.0 {
                (fc + tc) / transfers
            } else {
                0.0
            },
            queue_factor: factor,
        };
        (terms, fc * factor + tc * factor)
    }

    /// What going from `self` to `after` trades, term by term: "8807 -> 9444 transfers (more),
    /// 292 -> 362 cycles each (dearer), queue 3.63 -> 1.93 (shorter)".
    pub fn trade(&self, after: &SplitTerms) -> String {
        let way = |a: f64, b: f64, less: &'static str, more: &'static str| {
            if (b - a).abs() <= 0.005 * a.abs().max(b.abs()) {
                "the same"
            } else if b < a {
                less
            } else {
                more
            }
        };
        if after.transfers <= 0.0 {
            return format!("{:.0} -> 0 transfers", self.transfers);
        }
        format!(
            "{:.0} -> {:.0} transfers ({}), {:.0} -> {:.0} cycles each ({}), queue {:.2} -> {:.2} ({})",
            self.transfers,
            after.transfers,
            way(self.transfers, after.transfers, "fewer", "more"),
            self.cycles_per_transfer,
            after.cycles_per_transfer,
            way(
                self.cycles_per_transfer,
                after.cycles_per_transfer,
                "nearer",
                "dearer"
            ),
            self.queue_factor,
            after.queue_factor,
            way(self.queue_factor, after.queue_factor, "shorter", "longer"),
        )
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// What finding work costs a sharded queue, per pull, in transfers: (probes of other copies,
/// migrations, the probability the own copy is empty). `queued` items wait in the queue on
/// average, spread over `k` copies as a Poisson count each (mean `queued / k`), so a copy is
/// empty with probability `e = exp(-queued / k)`. A pull takes from its own copy first; when
/// that is empty it probes the next ones in order until one is not: `e + e^2 + .. + e^(k-1)`
/// probes of other copies expected. It comes back with an item from another copy (a
/// migration) with probability `e (1 - e^(k-1))`.
pub fn scan_per_pull(queued: f64, k: u32) -> (f64, f64, f64) {
    if k <= 1 || queued.is_nan() {
        return (0.0, 0.0, 0.0);
    }
    let e = (-queued.max(0.0) / f64::from(k)).exp();
    let probes: f64 = (1..k).map(|j| e.powi(j as i32)).sum();
    let migrations = e * (1.0 - e.powi(k as i32 - 1));
    (probes, migrations, e)
}

/// Whether readers need every copy (a total: `rto_count`) or only their own (a queue shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadScope {
    AllCopies,
    OwnCopy,
}

/// Split advice for the truly shared unit `unit`: per CPU, per LLC, per node and a few shard
/// counts, each with its modeled cost. Each copy sits on its own line; writers spread evenly
/// over copies; readers read all copies or their own, as `scope` says.
///
/// `queued` is the mean number of items waiting in a queue (all copies together), when the
/// member guards one: readers of their own copy then pay for finding work across copies
/// ([`scan_per_pull`]), so that more copies stop paying once their shards run empty.
pub fn split_options(
    unit: usize,
    streams: &[Stream],
    machine: &MachineModel,
    q: &Queueing,
    scope: ReadScope,
    queued: Option<f64>,
) -> Vec<SplitOption> {
    let mine: Vec<&Stream> = streams.iter().filter(|s| s.unit == unit).collect();
    if mine.is_empty() {
        return Vec::new();
    }
    // Every stream with its CPUs: the evidence's list, else the first `cpus` CPUs of the
    // machine (numbered node by node: a busy workload fills whole nodes first). With lists,
    // each CPU touches a copy at its own rate, so a reader that sums the copies now and then
    // mostly hits (no copy written since), and a copy's writers bounce it within their node.
    let listed: Vec<Stream> = mine
        .iter()
        .map(|s| {
            let mut c = (*s).clone();
            if c.cpu_list.is_empty() {
                c.cpu_list = (0..s.cpus.max(1)).collect();
            }
            c
        })
        .collect();
    // Copy 0 of `k` (the copies are alike): its writers are the first of `k` runs of each
    // writing stream's CPUs, at 1/k of the writes; readers read it from all their CPUs (a
    // total: every read reads every copy) or from that run at 1/k of the reads (their own).
    let copy_of = |k: u32| -> Vec<Stream> {
        let kf = f64::from(k);
        listed
            .iter()
            .map(|s| {
                let mut c = s.clone();
                let run = s.cpu_list.len().div_ceil(k as usize).max(1);
                let first: Vec<u32> = s.cpu_list[..run.min(s.cpu_list.len())].to_vec();
                let own = s.writes > 0.0 || scope == ReadScope::OwnCopy;
                c.writes /= kf;
                c.rmw /= kf;
                if own {
                    c.cpu_list = first;
                    c.cpus = c.cpu_list.len() as u32;
                }
                if scope == ReadScope::OwnCopy {
                    c.reads /= kf;
                }
                c
            })
            .collect()
    };
    // (the terms of `k` copies, one copy's queued cycles)
    let priced = |set: &[Stream], k: u32| {
        let refs: Vec<&Stream> = set.iter().collect();
        SplitTerms::of(&refs, k, machine, q)
    };
    let (terms_before, before) = priced(&listed, 1);
    let mut ways: Vec<(String, u32)> = vec![
        ("per NUMA node".to_string(), machine.numa_nodes),
        ("per LLC".to_string(), machine.llcs),
        ("per CPU".to_string(), machine.cpus),
    ];
    for k in [2u32, 4, 8, 16] {
        ways.push((format!("{k} shards"), k));
    }
    ways.retain(|(_, k)| *k > 1);
    ways.sort_by_key(|w| w.1);
    ways.dedup_by_key(|w| w.1);
    // Pulls: a queue takes out what it puts in, so half its write operations (each push or
    // pull writes the member once: a lock's acquisition, a list head's store) are pulls.
    let pulls = listed.iter().map(|s| s.writes).sum::<f64>() / 2.0;
    // A probe of another copy, or a migrated item, is a line another CPU wrote: a transfer
    // between CPUs spread as the member's writers are.
    let widest = listed.iter().map(|s| s.cpus).max().unwrap_or(1);
    let price = machine.transfer_cycles(widest);
    let mut out = Vec::new();
    for (how, k) in ways {
        let (scan_cycles, own_empty) = match (scope, queued) {
            (ReadScope::OwnCopy, Some(depth)) => {
                // Items go only to shards some CPU pushes to: no more than the CPUs.
                let (probes, migrations, e) = scan_per_pull(depth, k.min(widest.max(1)));
                (pulls * (probes + migrations) * price, e)
            }
            _ => (0.0, 0.0),
        };
        let (terms, per_copy) = priced(&copy_of(k), k);
        out.push(SplitOption {
            how,
            copies: k,
            cycles: per_copy * f64::from(k) + scan_cycles,
            cycles_before: before,
            extra_bytes: u64::from(k - 1) * machine.cacheline_size,
            scan_cycles,
            own_empty,
            terms,
            terms_before,
        });
    }
    out
}

/// One line on where a split's optimum lies and why, for `options` of one [`ReadScope`].
pub fn split_verdict(options: &[SplitOption], scope: ReadScope, queued: Option<f64>) -> String {
    let Some(least) = options.iter().map(|o| o.cycles).min_by(f64::total_cmp) else {
        return String::new();
    };
    // Of the options within 0.1% of the least cost (of the member's cost before), the
    // fewest copies: they cost less memory.
    let slack = 1e-3 * options[0].cycles_before.abs().max(least.abs()).max(1.0);
    let Some(best) = options
        .iter()
        .filter(|o| o.cycles <= least + slack)
        .min_by_key(|o| o.copies)
    else {
        return String::new();
    };
    let before = best.cycles_before;
    let pct = |o: &SplitOption| {
        if before > 0.0 {
            (o.cycles - before) / before * 100.0
        } else {
            0.0
        }
    };
    let most = options.iter().max_by_key(|o| o.copies).unwrap_or(best);
    // The terms that decide, so that two machines' different answers say why: what the
    // chosen split trades against the one line (and the per-node split's trade beside it).
    let node = options
        .iter()
        .find(|o| o.how == "per NUMA node" && o.copies != best.copies)
        .map(|o| format!("; per NUMA node trades {}", o.terms_before.trade(&o.terms)))
        .unwrap_or_default();
    let trade = best.terms_before.trade(&best.terms);
    let verdict = match scope {
        ReadScope::AllCopies if best.cycles >= before => format!(
            "readers that sum every copy: no split pays; the cheapest, {} ({:+.1}%), trades {trade}: each sum reads every copy, a transfer for each one written since the reader last read it",
            best.how,
            pct(best)
        ),
        ReadScope::AllCopies => format!(
            "readers that sum every copy: best {} ({:+.1}%); it trades {trade}: each copy is written from its own CPUs only, while each more copy costs every sum one more line, a transfer whenever that copy was written since",
            best.how,
            pct(best)
        ),
        ReadScope::OwnCopy => match queued {
            Some(q) if best.copies < most.copies => format!(
                "readers of their own copy (queue depth {q}): best {} ({:+.1}%); fewer copies queue more CPUs on each line, more leave a pull's own copy empty ({:.0}% at {}), so pulls probe the others' lines and migrate their items ({:.0} cycles there)",
                best.how,
                pct(best),
                most.own_empty * 100.0,
                most.how,
                most.scan_cycles
            ),
            Some(q) => format!(
                "readers of their own copy (queue depth {q}): best {} ({:+.1}%); a copy per CPU ends the contention, and at queue depth {q} a pull finds its own copy empty {:.0}% of the time, which costs less ({:.0} cycles of probes and migrations) than the queues of fewer copies",
                best.how,
                pct(best),
                best.own_empty * 100.0,
                best.scan_cycles
            ),
            None => format!(
                "readers of their own copy: best {} ({:+.1}%), but the cost of finding work across copies is not priced: give --queued N (items waiting, on average) for a queue",
                best.how,
                pct(best)
            ),
        },
    };
    match scope {
        ReadScope::AllCopies => verdict + &node,
        ReadScope::OwnCopy => format!("{verdict}; {} trades {trade}{node}", best.how),
    }
}

/// Raises unit alignments (and returns the struct's) so that the units in their current
/// order lay out at their current offsets, as a compiler would: BTF records no alignment,
/// and a zero-size marker the kernel aligns (`__cacheline_group_begin_aligned`) or a member
/// whose hole the inference leaves unexplained would otherwise be priced, and printed,
/// somewhere else than the struct has it. An offset no alignment explains is left alone.
pub fn fit_aligns(units: &mut [Unit], current: &Placement, min_align: u64) -> u64 {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| (current.offsets[u], u));
    let mut cursor = 0u64;
    let mut struct_align = min_align.max(1);
    for &u in &order {
        let want = current.offsets[u];
        let mut a = units[u].align.max(1);
        while cursor.div_ceil(a) * a < want && want.is_multiple_of(a * 2) {
            a *= 2;
        }
        if cursor.div_ceil(a) * a == want {
            units[u].align = a;
        }
        struct_align = struct_align.max(units[u].align);
        cursor = cursor.max(want + units[u].size);
    }
    let mut a = struct_align;
    while cursor.div_ceil(a) * a < current.size && current.size.is_multiple_of(a * 2) {
        a *= 2;
    }
    if cursor.div_ceil(a) * a == current.size {
        a.max(min_align)
    } else {
        min_align
    }
}

/// The unit of a trailing array the allocation extends (`area[0]`, `buf[1]`, a flexible
/// array member): the struct's last member, an array of at most one element. It must stay
/// last, whatever the order.
pub fn trailing_array(layout: &crate::layout::Layout, units: &[Unit]) -> Option<usize> {
    let last = layout.members.len().checked_sub(1)?;
    let f = &layout.members[last];
    let d = f.declarator.trim_end();
    let extends = d.ends_with("[]") || d.ends_with("[0]") || d.ends_with("[1]");
    if !extends || d.matches('[').count() != 1 {
        return None;
    }
    units.iter().position(|u| u.member_indices.contains(&last))
}

/// `plan` with unit `last` moved to the end of the order (a trailing array), laid out again
/// and priced again with `price`.
pub fn keep_last(
    mut plan: Plan,
    units: &[Unit],
    last: usize,
    cls: u64,
    min_align: u64,
    price: impl Fn(&Placement) -> Cost,
) -> Plan {
    if plan.order.last() == Some(&last) {
        return plan;
    }
    plan.order.retain(|&u| u != last);
    plan.order.push(last);
    plan.line_aligned.retain(|&u| u != last);
    let aligned: BTreeSet<usize> = plan.line_aligned.iter().copied().collect();
    plan.placement = derive(
        units,
        &plan.order,
        &aligned,
        plan.line_align(cls),
        min_align,
    );
    plan.cost = price(&plan.placement);
    plan
}

/// Units whose streams name two or more of their sub-fields, one of them written: embedded
/// structs whose offset decides which of their sub-fields share a line
/// ([`super::contention::embedded`]).
fn embedded_units(units: &[Unit], streams: &[Stream]) -> Vec<usize> {
    (0..units.len())
        .filter(|&u| {
            let own = || streams.iter().filter(move |s| s.unit == u);
            let names: BTreeSet<&str> = own().map(|s| s.field.as_str()).collect();
            names.len() > 1 && own().any(|s| s.writes > 0.0)
        })
        .collect()
}

/// `order` with the units `vs` moved across unit `u`: those after it to just before it, those
/// before it to just after it, each group in its order.
fn moved_across(order: &[usize], u: usize, vs: &[usize]) -> Vec<usize> {
    let pos = |x: usize| order.iter().position(|&y| y == x).unwrap_or(usize::MAX);
    let (pu, mut out) = (pos(u), Vec::with_capacity(order.len()));
    let before: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&v| vs.contains(&v) && pos(v) > pu)
        .collect();
    let after: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&v| vs.contains(&v) && pos(v) < pu)
        .collect();
    for &x in order.iter().filter(|x| !vs.contains(x)) {
        if x == u {
            out.extend(&before);
            out.push(u);
            out.extend(&after);
        } else {
            out.push(x);
        }
    }
    out
}

/// `plan` with the members around each embedded unit ([`embedded_units`]) moved where the model
/// prices the whole layout lower: the search places a unit whole on lines and cannot see that
/// its offset into a line parts its own sub-fields (an rwsem's `count` and `owner` on two
/// lines). Moves of one member, or of two in structs of up to 32 units, across the embedded
/// unit, each priced with `price` (the model); the best, repeated while it lowers the cost.
/// `fixed`: a unit that stays where it is (a trailing array).
#[allow(clippy::too_many_arguments)]
pub fn phase_embedded(
    mut plan: Plan,
    units: &[Unit],
    streams: &[Stream],
    current: &Placement,
    constraints: &Constraints,
    cls: u64,
    min_align: u64,
    fixed: Option<usize>,
    price: impl Fn(&Placement) -> Cost,
) -> Plan {
    let embedded = embedded_units(units, streams);
    if embedded.is_empty() {
        return plan;
    }
    let aligned: BTreeSet<usize> = plan.line_aligned.iter().copied().collect();
    let movable: Vec<usize> = (0..units.len()).filter(|&v| Some(v) != fixed).collect();
    for _ in 0..4 {
        let mut best: Option<(f64, usize, Vec<usize>, Placement, Cost)> = None;
        let base = price(&plan.placement).total_cycles();
        for &u in &embedded {
            let others: Vec<usize> = movable.iter().copied().filter(|&v| v != u).collect();
            let mut sets: Vec<Vec<usize>> = others.iter().map(|&v| vec![v]).collect();
            if units.len() <= 32 {
                for (i, &v) in others.iter().enumerate() {
                    sets.extend(others[i + 1..].iter().map(|&w| vec![v, w]));
                }
            }
            for vs in sets {
                let order = moved_across(&plan.order, u, &vs);
                let p = derive(units, &order, &aligned, plan.line_align(cls), min_align);
                if constraints.max_size.is_some_and(|m| p.size > m)
                    || !keeps_structure(units, current, &order, &p, constraints)
                {
                    continue;
                }
                let c = price(&p);
                let t = c.total_cycles();
                if t < base * (1.0 - 1e-6) && best.as_ref().is_none_or(|b| t < b.0) {
                    best = Some((t, u, order, p, c));
                }
            }
        }
        let Some((_, u, order, p, c)) = best else {
            break;
        };
        plan.moved = reordered(&order, current)
            .iter()
            .map(|&u| units[u].name.clone())
            .collect();
        plan.order = order;
        plan.placement = p;
        plan.cost = c;
        // The search's optimum and bound are of whole units on lines; this is beyond them.
        plan.optimal = false;
        // A unit moved across no longer has a line of its own.
        plan.write_lines.retain(|g| !g.contains(&units[u].name));
        if !plan.phased.contains(&units[u].name) {
            plan.phased.push(units[u].name.clone());
        }
    }
    plan
}

/// `plan` replaced by the current layout, as it is (costing `cost`): what `optimize`
/// proposes when the model finds nothing cheaper, so that it adds no group, alignment or
/// claim the model gives no gain for.
pub fn as_current(mut plan: Plan, units: &[Unit], current: &Placement, cost: Cost) -> Plan {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| (current.offsets[u], u));
    plan.order = order;
    plan.line_aligned.clear();
    plan.pair_align = None;
    plan.line_spaced_cycles = None;
    plan.spacing_reason = None;
    plan.placement = current.clone();
    plan.cost = cost;
    plan.moved.clear();
    plan.write_lines.clear();
    plan
}

/// The struct `id` with its members in `order` at the offsets of `placement`, as a new type
/// for the layout engine and the printers. Every unit's first member declares the alignment
/// the placement was priced with: `line_align` for units in `line_aligned` (the line, or a
/// pair of lines: [`Plan::line_align`]), and any alignment
/// beyond its type's that the unit had already (inferred from BTF holes, declared in DWARF);
/// the struct declares `min_align` where its members do not reach it. What is declared is
/// what the printers write, so the declaration lays out as priced.
#[allow(clippy::too_many_arguments)]
pub fn rearranged<'a>(
    types: &Types<'a>,
    id: TypeId,
    units: &[Unit],
    order: &[usize],
    line_aligned: &[usize],
    placement: &Placement,
    line_align: u64,
    min_align: u64,
) -> Option<Type<'a>> {
    let original = types.get(id);
    let c = types.composite(id)?;
    let mut members: Vec<Member<'a>> = Vec::with_capacity(c.members.len());
    for &u in order {
        let unit = &units[u];
        let shift = placement.offsets[u] as i64 - unit.offset as i64;
        for (k, &mi) in unit.member_indices.iter().enumerate() {
            let mut m = c.members.get(mi)?.clone();
            m.bit_offset = (m.bit_offset as i64 + shift * 8) as u64;
            if k == 0 {
                let mut want = if unit.align > unit.natural_align {
                    unit.align
                } else {
                    1
                };
                if line_aligned.contains(&u) {
                    want = want.max(line_align);
                }
                m.declared_align = m
                    .declared_align
                    .map(u64::from)
                    .max((want > 1).then_some(want))
                    .map(|a| a as u32);
            }
            members.push(m);
        }
    }
    let members_align = order
        .iter()
        .map(|&u| {
            units[u].align.max(if line_aligned.contains(&u) {
                line_align
            } else {
                1
            })
        })
        .max()
        .unwrap_or(1);
    let declared_align = match c.declared_align {
        Some(a) => Some(a),
        None if min_align > members_align => Some(min_align as u32),
        None => None,
    };
    let kind = Composite {
        size: placement.size,
        members,
        declared_align,
        is_declaration: false,
        origin: c.origin.clone(),
    };
    Some(Type {
        name: original.name,
        kind: if types.is_union(id) {
            Kind::Union(kind)
        } else {
            Kind::Struct(kind)
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_are_known_by_their_type_names() {
        for t in [
            "raw_spinlock_t",
            "spinlock_t",
            "arch_spinlock_t",
            "struct mutex",
            "pthread_mutex_t",
            "pthread_spinlock_t",
            "rwlock_t",
            "seqlock_t",
            "struct rw_semaphore",
            "volatile raw_spinlock_t",
        ] {
            assert!(is_lock_type(t), "{t}");
        }
        for t in [
            "struct list_head",
            "atomic_t",
            "struct mutex *",
            "unsigned long",
            "int (*)(struct mutex)",
        ] {
            assert!(!is_lock_type(t), "{t}");
        }
    }

    fn unit(name: &str, offset: u64, size: u64) -> Unit {
        Unit {
            name: name.to_string(),
            members: vec![name.to_string()],
            member_indices: Vec::new(),
            offset,
            size,
            align: size.min(8),
            natural_align: size.min(8),
        }
    }

    fn stream(unit: usize, path: &str, writes: f64, cpus: &[u32]) -> Stream {
        Stream {
            unit,
            inner: 0,
            size: 4,
            field: String::new(),
            path: path.to_string(),
            reads: 10.0,
            writes,
            rmw: 0.0,
            cpus: cpus.len() as u32,
            cpu_list: cpus.to_vec(),
            lock: false,
            run_atomic: false,
            under_lock: None,
            cycles_per_run: None,
        }
    }

    /// Redis's IO threads: each spins on its own count (on its own CPU) and the main thread
    /// sets and sums them all. One function on disjoint CPUs is one run per CPU that touches
    /// its own line (`cost::path_runs`), so parting the counts costs only the sum's extra
    /// lines, and for one instance (its growth ~0) the search puts each on a line of its own,
    /// as the model prices that layout cheapest.
    #[test]
    fn a_function_on_disjoint_cpus_is_searched_as_one_run_per_cpu() {
        let units = [unit("t1", 0, 8), unit("t2", 8, 8), unit("t3", 16, 8)];
        let with = |unit: usize, path: &str, reads: f64, writes: f64, cpu: u32| Stream {
            reads,
            ..stream(unit, path, writes, &[cpu])
        };
        let mut streams = Vec::new();
        for u in 0..3 {
            streams.push(with(u, "IOThreadMain", 100.0, 10.0, u as u32 + 1));
            streams.push(with(u, "setIOPendingCount", 0.0, 10.0, 0));
            streams.push(with(u, "getIOPendingCount", 100.0, 0.0, 0));
        }
        let mut m = crate::analysis::machine::preset("icelake-2s").unwrap();
        m.adjacent_line_pairs = false;
        let current = Placement {
            offsets: units.iter().map(|u| u.offset).collect(),
            size: 24,
            align: 8,
        };
        let q = Queueing {
            reference: cost::busiest_line(&streams, &current, 64, &m),
            utilization: 0.5,
        };
        let c = Constraints {
            instance_count: cost::InstanceCount::known(1, crate::profile::CountSource::Sketch),
            ..Constraints::default()
        };
        let plan = optimize(&units, &streams, &current, 8, &c, 64, &m, &q).unwrap();
        let lines: BTreeSet<u64> = plan.placement.offsets.iter().map(|o| o / 64).collect();
        assert_eq!(lines.len(), 3, "{:?}", plan.placement);
        // The model agrees: t1 and t3 kept together cost more.
        let together = Placement {
            offsets: vec![0, 64, 8],
            size: 128,
            align: 64,
        };
        let price = |p: &Placement| {
            cost::evaluate(&units, &streams, p, 64, &m, &q)
                .with_size_term(
                    &streams,
                    p,
                    cost::Footprint::of(&streams, &current, 64),
                    64,
                    &m,
                    (cost::Allocator::Lines, &c.instance_count),
                )
                .total_cycles()
        };
        assert!(plan.cost.total_cycles() < price(&together), "{plan:?}");
    }

    #[test]
    fn a_size_budget_is_searched_within_not_refused() {
        // Three members written by three CPUs and a 72-byte cold member: apart, each writer
        // on its own line, the struct needs more than the 2 lines it has today. Within 2
        // lines the search must still answer (fewer hot lines, or the current layout), not
        // refuse; under 2 lines nothing fits, the current layout included.
        let mut d = unit("d", 24, 72);
        d.align = 8;
        d.natural_align = 8;
        let units = [unit("a", 0, 8), unit("b", 8, 8), unit("c", 16, 8), d];
        let streams = [
            stream(0, "pa", 100.0, &[0]),
            stream(1, "pb", 100.0, &[1]),
            stream(2, "pc", 100.0, &[2]),
        ];
        let m = crate::analysis::machine::preset("icelake-2s").unwrap();
        let current = Placement {
            offsets: units.iter().map(|u| u.offset).collect(),
            size: 96,
            align: 8,
        };
        let q = Queueing {
            reference: cost::busiest_line(&streams, &current, 64, &m),
            utilization: 0.5,
        };
        let run = |max: Option<u64>| {
            let c = Constraints {
                max_size: max,
                ..Constraints::default()
            };
            optimize(&units, &streams, &current, 8, &c, 64, &m, &q)
        };
        let free = run(None).unwrap();
        assert!(free.placement.size > 128, "{:?}", free.placement);
        // The first search within 2 lines: its best grouping lays out over the budget.
        let c = Constraints {
            max_size: Some(128),
            ..Constraints::default()
        };
        let first = optimize_lines(
            &units, &streams, &current, 8, &c, 64, &m, &q, 64, None, false,
        )
        .unwrap();
        assert!(first.placement.size > 128, "{:?}", first.placement);
        let within = run(Some(128)).unwrap();
        assert!(within.placement.size <= 128, "{:?}", within.placement);
        let now = cost::evaluate(&units, &streams, &current, 64, &m, &q).total_cycles();
        assert!(within.cost.total_cycles() <= now + 1e-9, "{within:?}");
        let err = run(Some(64)).unwrap_err();
        assert!(
            err.contains("no layout of the members fits in 64 bytes")
                && err.contains("the smallest takes 96 bytes (2 lines)"),
            "{err}"
        );
    }

    fn plan_for(units: &[Unit], streams: &[Stream], size: u64) -> Plan {
        let m = crate::analysis::machine::preset("icelake-2s").unwrap();
        let current = Placement {
            offsets: units.iter().map(|u| u.offset).collect(),
            size,
            align: 8,
        };
        let q = Queueing {
            reference: cost::busiest_line(streams, &current, 64, &m),
            utilization: 0.5,
        };
        optimize(
            units,
            streams,
            &current,
            8,
            &Constraints::default(),
            64,
            &m,
            &q,
        )
        .unwrap()
    }

    #[test]
    fn where_the_l2_fetches_pairs_of_lines_two_writers_go_a_pair_apart() {
        // `a` written by `pa` on CPU 0, `b` by `pb` on CPU 1, side by side on one line. Any
        // machine puts them on different lines; where the L2 fetches 128-byte pairs of lines,
        // two written lines of one pair still contend, so the proposal puts them 128 bytes
        // apart (a pair each), and says so; without pairs, 64 bytes (a line each).
        let units = [unit("a", 0, 8), unit("b", 8, 8)];
        let streams = [stream(0, "pa", 100.0, &[0]), stream(1, "pb", 100.0, &[1])];
        let current = Placement {
            offsets: vec![0, 8],
            size: 16,
            align: 8,
        };
        let run = |m: &MachineModel| {
            let q = Queueing {
                reference: cost::busiest_line(&streams, &current, 64, m),
                utilization: 0.5,
            };
            let plan = optimize(
                &units,
                &streams,
                &current,
                8,
                &Constraints::default(),
                64,
                m,
                &q,
            )
            .unwrap();
            // What the plan declares is what it priced: its alignment gives its offsets.
            let aligned: BTreeSet<usize> = plan.line_aligned.iter().copied().collect();
            let again = derive(&units, &plan.order, &aligned, plan.line_align(64), 8);
            assert_eq!(again, plan.placement, "{plan:?}");
            // Growth from the 16 bytes there are now is priced too (the size term): the
            // writers' one hot line is two.
            let from = cost::Footprint::of(&streams, &current, 64);
            let priced = cost::evaluate(&units, &streams, &plan.placement, 64, m, &q)
                .with_size_term(
                    &streams,
                    &plan.placement,
                    from,
                    64,
                    m,
                    (cost::Allocator::Lines, &cost::InstanceCount::default()),
                );
            assert!(plan.cost.size_cycles > 0.0, "{plan:?}");
            assert!(
                (priced.total_cycles() - plan.cost.total_cycles()).abs() < 1e-6,
                "{plan:?}"
            );
            let apart = plan.placement.offsets[0].abs_diff(plan.placement.offsets[1]);
            (plan, apart)
        };
        let pairs = crate::analysis::machine::preset("icelake-2s").unwrap();
        assert!(pairs.adjacent_line_pairs);
        let mut no_pairs = pairs.clone();
        no_pairs.adjacent_line_pairs = false;
        let (by_pair, apart) = run(&pairs);
        assert_eq!(apart, 128, "{:?}", by_pair.placement);
        assert_eq!(by_pair.pair_align, Some(128));
        assert_eq!(by_pair.cost.pair_cycles, 0.0, "{:?}", by_pair.cost);
        // Kept because the model prices it lower than the best one-line spacing.
        let by_line = by_pair.line_spaced_cycles.expect("the one-line price");
        assert!(by_pair.cost.total_cycles() < by_line, "{by_pair:?}");
        let (plain, apart) = run(&no_pairs);
        assert_eq!(apart, 64, "{:?}", plain.placement);
        assert_eq!(plain.pair_align, None);
        assert_eq!(plain.line_spaced_cycles, None);
        assert!(plain.placement.size < by_pair.placement.size);
        // The same one-line layout on the machine with pairs costs what the pair plan beat:
        // as its 64-byte aligned instances are, at either half of a pair, so half the pair
        // term of the instances that start one (`instances::Instances::phases`).
        let q = Queueing {
            reference: cost::busiest_line(&streams, &current, 64, &pairs),
            utilization: 0.5,
        };
        let from = cost::Footprint::of(&streams, &current, 64);
        let one_phase = cost::evaluate(&units, &streams, &plain.placement, 64, &pairs, &q);
        let line_on_pairs = Instances::aligned()
            .evaluate(&units, &streams, &plain.placement, 64, &pairs, &q)
            .with_size_term(
                &streams,
                &plain.placement,
                from,
                64,
                &pairs,
                (cost::Allocator::Lines, &cost::InstanceCount::default()),
            );
        assert!(line_on_pairs.pair_cycles > 0.0, "{line_on_pairs:?}");
        assert!(
            (line_on_pairs.pair_cycles - one_phase.pair_cycles / 2.0).abs()
                < 1e-9 * one_phase.pair_cycles
        );
        assert!((line_on_pairs.total_cycles() - by_line).abs() < 1e-6 * by_line);
    }

    #[test]
    fn an_instance_aligned_below_the_pair_is_found() {
        let src = "struct counters {\n\tunsigned long a;\n};\nstatic alignas(64) struct counters counters;\n";
        assert_eq!(
            instance_aligned_below(src, "counters", 128).as_deref(),
            Some("static alignas(64) struct counters counters;")
        );
        assert_eq!(instance_aligned_below(src, "counters", 64), None);
        let plain = "struct counters {\n\tunsigned long a;\n};\nstatic struct counters counters;\n";
        assert_eq!(instance_aligned_below(plain, "counters", 128), None);
        let other = "static alignas(64) struct counters_x y;\n";
        assert_eq!(instance_aligned_below(other, "counters", 128), None);
    }

    #[test]
    fn instances_below_the_pair_are_realigned_where_a_number_says_it() {
        let src = "struct counters {\n\tunsigned long a;\n};\nstatic alignas(64) struct counters counters;\nstatic struct counters __attribute__((aligned(32))) two;\nalignas(64) struct counters_x y;\n";
        let out = realign_instances(src, "counters", 128).unwrap();
        assert_eq!(
            out,
            "struct counters {\n\tunsigned long a;\n};\nstatic alignas(128) struct counters counters;\nstatic struct counters __attribute__((aligned(128))) two;\nalignas(64) struct counters_x y;\n"
        );
        assert_eq!(instance_aligned_below(&out, "counters", 128), None);
        // Already at the pair, or above it: untouched.
        let big = "static alignas(256) struct counters c;\n";
        assert_eq!(
            realign_instances(big, "counters", 128).as_deref(),
            Some(big)
        );
        // A kernel marker is no number to rewrite.
        let kernel = "static struct counters c ____cacheline_aligned;\n";
        assert_eq!(realign_instances(kernel, "counters", 128), None);
    }

    #[test]
    fn an_embedded_struct_whose_touched_counter_comes_first_ends_a_line_and_spills_over() {
        // page_pool's 24-byte frag block and the 48-byte alloc_stats whose first counter the
        // fragment path bumps: whole, 72 bytes do not fit a line; the block and the counter do,
        // with the stats last and the rest of them on the next line.
        let item = |size: u64, reach: u64| Item {
            units: vec![0],
            size,
            align: 8,
            streams: vec![0],
            writes: 1.0,
            big: false,
            reach,
        };
        let (stats, block) = (item(48, 8), item(24, 24));
        assert_eq!(pack_order(&[&stats, &block], 64), Some(vec![1, 0]));
        assert!(pack_fits(&[&stats, &block], 64, true));
        assert!(!pack_fits(&[&stats, &block], 64, false));
        // A counter the path bumps at the stats' end: its bytes would fall on the next line.
        let late = item(48, 48);
        assert_eq!(pack_order(&[&late, &block], 64), None);
        // Only one item can end a line: the block and two such stats do not fit.
        let (a, b) = (item(48, 8), item(48, 8));
        assert_eq!(pack_order(&[&a, &b, &block], 64), None);
        // What fits whole keeps the declared order, largest alignment first.
        let (x, y) = (item(16, 16), item(8, 8));
        assert_eq!(pack_order(&[&x, &y], 64), Some(vec![0, 1]));
    }

    #[test]
    fn two_fields_one_path_writes_together_stay_on_one_line() {
        // head (0) and tail (64), both written by `push` on 16 CPUs; `flags` (128) read by
        // another path. The old model split head and tail (-33%): apart they are two lines
        // that each move once per push.
        let units = vec![
            unit("head", 0, 8),
            unit("pad", 8, 56),
            unit("tail", 64, 8),
            unit("pad2", 72, 56),
            unit("flags", 128, 8),
        ];
        let cpus: Vec<u32> = (0..16).collect();
        let mut s = vec![
            stream(0, "push", 100.0, &cpus),
            stream(2, "push", 100.0, &cpus),
            stream(4, "poll", 0.0, &cpus),
        ];
        s[2].reads = 500.0;
        let plan = plan_for(&units, &s, 192);
        let line = |u: usize| plan.placement.offsets[u] / 64;
        assert_eq!(line(0), line(2), "{:?}", plan.placement);
        assert_ne!(line(0), line(4), "{:?}", plan.placement);
    }

    #[test]
    fn eight_fields_one_path_reads_end_up_on_one_line() {
        // f0..f7, one per line with cold padding between, all read by `fast` on every run
        // from 8 CPUs; nothing writes them. Today's layout makes the path touch 8 lines.
        let mut units = Vec::new();
        for k in 0..8u64 {
            units.push(unit(&format!("f{k}"), k * 64, 8));
            units.push(unit(&format!("cold{k}"), k * 64 + 8, 56));
        }
        let cpus: Vec<u32> = (0..8).collect();
        let s: Vec<Stream> = (0..8)
            .map(|k| {
                let mut s = stream(2 * k, "fast", 0.0, &cpus);
                s.reads = 1000.0;
                s
            })
            .collect();
        let plan = plan_for(&units, &s, 512);
        let lines: BTreeSet<u64> = (0..8).map(|k| plan.placement.offsets[2 * k] / 64).collect();
        assert_eq!(lines.len(), 1, "{:?}", plan.placement);
        assert_eq!(plan.cost.path_lines["fast"], 1);
        // Ties go to the smaller struct: the gathered line costs no more than a line.
        assert!(plan.placement.size <= 512 + 64, "{}", plan.placement.size);
    }

    #[test]
    fn untouched_members_fill_the_holes_a_plan_leaves() {
        // `w` written on 16 CPUs, r0..r3 read by `fast` on those CPUs, and 72 bytes of
        // members nothing touches. The written line and the gathered read line leave holes;
        // the untouched members belong in them, not on a third line.
        let units = vec![
            unit("w", 0, 8),
            unit("r0", 8, 8),
            unit("r1", 16, 8),
            unit("c0", 24, 32),
            unit("r2", 56, 8),
            unit("r3", 64, 8),
            unit("c1", 72, 16),
            unit("c2", 88, 24),
        ];
        let cpus: Vec<u32> = (0..16).collect();
        let mut s = vec![stream(0, "tick", 200.0, &cpus)];
        for u in [1, 2, 4, 5] {
            let mut r = stream(u, "fast", 0.0, &cpus);
            r.reads = 1000.0;
            s.push(r);
        }
        let plan = plan_for(&units, &s, 112);
        let line = |u: usize| plan.placement.offsets[u] / 64;
        assert_ne!(line(0), line(1), "{:?}", plan.placement);
        assert!(plan.placement.size <= 128, "{:?}", plan.placement);
    }

    #[test]
    fn a_per_node_split_of_a_counter_written_often_and_summed_rarely_helps() {
        // A counter every CPU of a 2-node machine updates on each wake-up, read on a slower
        // path that sums all copies (task_group's load_avg; the per-node split Aaron Lu and
        // others measured as an improvement): per node, each write bounces the copy within
        // its node, and a rare reader mostly finds copies it already holds.
        let m = crate::analysis::machine::preset("icelake-2s").unwrap();
        let q = Queueing::NONE;
        let mut w = stream(0, "update_load_avg", 1000.0, &[]);
        w.reads = 0.0;
        w.cpus = 160;
        let mut r = stream(0, "update_cfs_group", 0.0, &[]);
        r.reads = 50.0;
        r.cpus = 160;
        let s = vec![w, r];
        let opts = split_options(0, &s, &m, &q, ReadScope::AllCopies, None);
        let node = opts.iter().find(|o| o.how == "per NUMA node").unwrap();
        assert!(node.cycles < node.cycles_before, "{node:?}");
        // Readers that sum every copy pay for each more copy: per CPU (160 copies, one read
        // of each per sum) costs more than per node.
        let per_cpu = opts.iter().find(|o| o.how == "per CPU").unwrap();
        assert!(per_cpu.cycles > node.cycles, "{opts:?}");
    }

    /// A counter every CPU of icelake-2s writes at `writes` and reads, summing all copies, at
    /// `reads` (rates relative), on a line at `utilization` of its queue.
    fn counter_split(writes: f64, reads: f64, utilization: f64) -> Vec<SplitOption> {
        let m = crate::analysis::machine::preset("icelake-2s").unwrap();
        let mut w = stream(0, "update_load_avg", 0.0, &[]);
        (w.reads, w.writes, w.rmw, w.cpus) = (0.0, writes, writes, 160);
        let mut r = stream(0, "update_cfs_group", 0.0, &[]);
        (r.reads, r.cpus) = (reads, 160);
        let s = vec![w, r];
        let refs: Vec<&Stream> = s.iter().collect();
        let (_, _, f, t) = cost::line_terms(&refs, &m);
        let q = Queueing {
            reference: f + t,
            utilization,
        };
        split_options(0, &s, &m, &q, ReadScope::AllCopies, None)
    }

    #[test]
    fn a_per_node_split_of_a_counter_read_as_often_as_written_helps_as_measured() {
        // Seed 000's own evidence (c2c paste, 160 CPUs): update_load_avg's atomic adds about
        // 8300 samples, update_cfs_group's loads about 14100, every CPU both; c2c measured
        // 4000-13000 cycles a HITM load against ~130-290 unloaded, a line at the model's
        // utilization cap. The per-node split of tg->load_avg (a sum over nodes on the read
        // side) was measured faster; summing all copies must come out cheaper per node.
        let opts = counter_split(8300.0, 14100.0, 0.95);
        let node = opts.iter().find(|o| o.how == "per NUMA node").unwrap();
        assert!(node.cycles < node.cycles_before * 0.9, "{opts:?}");
        // Each more copy costs every sum one more line: far more copies lose to few.
        let per_cpu = opts.iter().find(|o| o.how == "per CPU").unwrap();
        assert!(per_cpu.cycles > 3.0 * node.cycles, "{opts:?}");
        let why = split_verdict(&opts, ReadScope::AllCopies, None);
        assert!(why.contains("best ") && !why.contains("per CPU"), "{why}");
    }

    #[test]
    fn a_split_loses_when_readers_are_much_hotter_than_writers() {
        // The same counter read 50 times as often as it is written (a rarely changed limit
        // read on every fast path): a sum over copies reads two lines where one did, and the
        // line was hardly contended. No split pays.
        let opts = counter_split(100.0, 5000.0, 0.5);
        for o in &opts {
            assert!(o.cycles > o.cycles_before, "{o:?}");
        }
        assert!(split_verdict(&opts, ReadScope::AllCopies, None).contains("no split pays"));
    }

    #[test]
    fn finding_work_across_shards_gives_a_shard_sweep_an_optimum() {
        // A queue every CPU of spr-1s (112, one LLC) pushes to and pulls from, lock RMW on
        // both paths. With few items queued, a copy per CPU leaves most pulls' own copy
        // empty: they probe the others and migrate items. Some shard count in between wins.
        let m = crate::analysis::machine::preset("spr-1s").unwrap();
        let all: Vec<u32> = (0..112).collect();
        let mut push = stream(0, "push", 100.0, &all);
        let mut pull = stream(0, "pull", 100.0, &all);
        for s in [&mut push, &mut pull] {
            s.rmw = s.writes;
            s.reads = 0.0;
        }
        let s = vec![push, pull];
        let refs: Vec<&Stream> = s.iter().collect();
        let (_, _, f, t) = cost::line_terms(&refs, &m);
        let q = Queueing {
            reference: f + t,
            utilization: 0.5,
        };
        let best = |queued: Option<f64>| {
            let opts = split_options(0, &s, &m, &q, ReadScope::OwnCopy, queued);
            opts.iter()
                .min_by(|a, b| a.cycles.total_cmp(&b.cycles))
                .unwrap()
                .copies
        };
        // Unknown depth: more copies always win (the old advice).
        assert_eq!(best(None), 112);
        // 56 items (hackbench 2 groups of 28 on 112 CPUs): neither 1 nor per CPU.
        let mid = best(Some(56.0));
        assert!(mid > 1 && mid < 112, "{mid}");
        // Many items per CPU: the own copy is rarely empty, per CPU wins again.
        assert_eq!(best(Some(2000.0)), 112);
        // The probes: none for one copy, more the emptier the copies.
        assert_eq!(scan_per_pull(56.0, 1), (0.0, 0.0, 0.0));
        let (p16, m16, e16) = scan_per_pull(56.0, 16);
        let (p112, m112, e112) = scan_per_pull(56.0, 112);
        assert!(e16 < e112 && p16 < p112 && m16 < m112);
        assert!((e112 - (-0.5f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn kernel_cache_line_groups_stay_whole_and_ordered() {
        // struct { begin(rx); a; b; end(rx); c; _pad_[0]; d; } with every member hot: the
        // markers carry no accesses and the group moves as one block.
        let units = vec![
            unit("__cacheline_group_begin__s_rx", 0, 0),
            unit("a", 0, 8),
            unit("b", 8, 8),
            unit("__cacheline_group_end__s_rx", 16, 0),
            unit("c", 16, 8),
            unit("_pad_", 24, 0),
            unit("d", 24, 8),
        ];
        assert_eq!(marker_blocks(&units), vec![vec![0, 1, 2, 3], vec![5, 6]]);
        let cpus: Vec<u32> = (0..8).collect();
        let s = vec![
            stream(1, "rx", 50.0, &cpus),
            stream(2, "tx", 50.0, &cpus[..4]),
            stream(4, "tx", 80.0, &cpus),
            stream(6, "rx", 0.0, &cpus),
        ];
        let plan = plan_for(&units, &s, 64);
        let pos = |u: usize| plan.order.iter().position(|&x| x == u).unwrap();
        assert!(
            pos(0) < pos(1) && pos(1) < pos(2) && pos(2) < pos(3),
            "{:?}",
            plan.order
        );
        assert_eq!(pos(3) - pos(0), 3, "{:?}", plan.order);
        assert_eq!(pos(5) + 1, pos(6), "{:?}", plan.order);
        // A marker starts the group's line, not the member after it.
        for &u in &plan.line_aligned {
            assert!(![1, 2, 3].contains(&u), "{:?}", plan.line_aligned);
        }
    }

    #[test]
    fn a_lock_keeps_the_data_its_writers_write_on_its_line() {
        // list (0), lock (16), stat (24): list and lock written by both CPUs in one function,
        // stat written by both elsewhere, counter (64) on the next line.
        let units = vec![
            unit("list", 0, 16),
            unit("lock", 16, 4),
            unit("stat", 24, 8),
            unit("counter", 64, 8),
        ];
        let placement = Placement {
            offsets: vec![0, 16, 24, 64],
            size: 128,
            align: 8,
        };
        let is_lock = [false, true, false, false];
        let mut streams = vec![
            stream(0, "push", 5.0, &[0]),
            stream(0, "push", 5.0, &[1]),
            stream(1, "push", 10.0, &[0, 1]),
            stream(2, "tick", 10.0, &[0, 1]),
            stream(3, "push", 10.0, &[0, 1]),
        ];
        assert_eq!(
            lock_groups(&units, &streams, &placement, 64, &is_lock),
            vec![vec![0, 1]]
        );
        // Not a lock: no group.
        assert!(lock_groups(&units, &streams, &placement, 64, &[false; 4]).is_empty());
        // A lock only one CPU takes guards nothing from other CPUs.
        streams[2].cpus = 1;
        streams[2].cpu_list = vec![0];
        assert!(lock_groups(&units, &streams, &placement, 64, &is_lock).is_empty());
        // Data written by one CPU only is not shared through the lock.
        streams[2] = stream(1, "push", 10.0, &[0, 1]);
        streams[0].cpu_list = vec![0];
        streams[1].cpu_list = vec![0];
        streams[0].cpus = 1;
        streams[1].cpus = 1;
        assert!(lock_groups(&units, &streams, &placement, 64, &is_lock).is_empty());
    }
}
