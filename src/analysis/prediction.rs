//! What `predict` and `replay` compare: the modeled cost of the current layout, lineup's
//! (and lineup's with per-thread slots padded to lines), and candidate files (a C
//! declaration such as a patch's, or pahole text), all priced by one [`Model`].

use std::path::{Path, PathBuf};

use crate::analysis::candidate;
use crate::analysis::cost::{self, Cost, Placement, Unit};
use crate::analysis::model::Model;
use crate::analysis::optimize::{self, Plan};
use crate::readers::{c_struct, pahole_text};
use crate::types::{TypeId, Types};

/// An error when no access of the profile falls on a member of struct `type_name`: there
/// is nothing to price.
pub fn require_streams(model: &Model, type_name: &str) -> Result<(), String> {
    if model.streams.is_empty() {
        return Err(format!(
            "no access of the profile falls on a member of struct {type_name}"
        ));
    }
    Ok(())
}

/// lineup's layout of struct `type_name`: the optimizer's search over the model, without
/// constraints, keeping the struct's forced alignment; a trailing array the allocation
/// extends (`buf[1]`, `area[0]`, a flexible array member) stays last, as `optimize` keeps it.
pub fn lineup_plan(model: &Model, type_name: &str) -> Result<Plan, String> {
    let min_align = model.layout.forced_align.unwrap_or(1);
    let constraints = optimize::Constraints {
        instances: model.instances.clone(),
        instance_count: model.instance_count,
        ..Default::default()
    };
    let plan = optimize::optimize(
        &model.units,
        &model.streams,
        &model.current,
        min_align,
        &constraints,
        model.cls,
        &model.machine,
        &model.queueing,
    )
    .map_err(|e| format!("struct {type_name}: {e}"))?;
    let plan = match optimize::trailing_array(&model.layout, &model.units) {
        Some(t) => optimize::keep_last(plan, &model.units, t, model.cls, min_align, |p| {
            model.evaluate(p)
        }),
        None => plan,
    };
    // As `optimize` proposes it: the type aligned to its size where that keeps instances
    // within a line; the layout as it is where the saving is negligible against the runs.
    let plan = match crate::analysis::plan::within_a_line(model, &plan, min_align, &constraints) {
        Some((aligned, _)) => aligned,
        None => plan,
    };
    let current = model.evaluate(&model.current);
    Ok(crate::analysis::plan::keep_if_negligible(model, plan, &current).0)
}

/// A candidate file laid out over the struct's units, and what it declares that the struct
/// lacks (priced where it falls: explicit padding moves what follows).
pub struct LoadedCandidate {
    pub placement: Placement,
    /// One line per member the candidate declares and the struct lacks, for the reader.
    pub notes: Vec<String>,
}

/// The placement a candidate file (C declaration or pahole text) gives the struct's units:
/// every member it declares is laid out, its own padding and members this build lacks
/// included.
pub fn load_candidate(
    model: &Model,
    types: &Types<'_>,
    type_name: &str,
    path: &Path,
) -> Result<LoadedCandidate, String> {
    let text = crate::input::read_text_lossy(path).map_err(|e| e.to_string())?;
    let name = candidate_name(path);
    if let Ok(cs) = c_struct::find_struct(&text, type_name) {
        let laid = candidate::from_c(&model.units, &cs, types, model.cls)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LoadedCandidate {
            notes: candidate::describe_extras(&name, type_name, &laid),
            placement: laid.placement,
        })
    } else {
        let facts = pahole_text::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let f = facts.iter().find(|f| f.name == type_name).ok_or_else(|| {
            format!(
                "{}: no struct {type_name} in it (as C or as pahole text)",
                path.display()
            )
        })?;
        let placement = candidate::from_pahole(&model.units, f)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LoadedCandidate {
            placement,
            notes: Vec::new(),
        })
    }
}

/// A candidate's name in tables: its file name.
pub fn candidate_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One layout of the comparison, priced.
pub struct PricedLayout {
    pub name: String,
    pub cost: Cost,
    pub placement: Placement,
    /// The units the placement indexes, where they are not the struct's own (padded slots).
    pub units: Option<Vec<Unit>>,
}

/// The layouts `predict` compares, the current one first, and the notes on candidates.
pub struct Prediction {
    pub layouts: Vec<PricedLayout>,
    /// Members candidates declare that the struct lacks, and how they were priced.
    pub notes: Vec<String>,
}

/// Prices the current layout, lineup's unless `with_lineup` is false (and lineup's with
/// per-thread slots padded to lines, where array members have slots different threads
/// write), and each candidate file, on `model`.
pub fn predict(
    model: &Model,
    types: &Types<'_>,
    (id, type_name): (TypeId, &str),
    with_lineup: bool,
    candidates: &[PathBuf],
) -> Result<Prediction, String> {
    require_streams(model, type_name)?;
    let mut layouts = vec![PricedLayout {
        name: "current".to_string(),
        cost: model.evaluate(&model.current),
        placement: model.current.clone(),
        units: None,
    }];
    if with_lineup {
        let plan = lineup_plan(model, type_name)?;
        layouts.push(PricedLayout {
            name: "lineup".to_string(),
            cost: plan.cost,
            placement: plan.placement,
            units: None,
        });
        layouts.extend(lineup_with_slots_padded(model, types, id, type_name)?);
    }
    let mut notes: Vec<String> = Vec::new();
    for path in candidates {
        let c = load_candidate(model, types, type_name, path)?;
        layouts.push(PricedLayout {
            name: candidate_name(path),
            cost: model.evaluate(&c.placement),
            placement: c.placement,
            units: None,
        });
        notes.extend(c.notes);
    }
    // The layout priced lowest, where its saving rests on what the evidence does not settle.
    let base = layouts[0].cost.total_cycles();
    if let Some(best) = layouts[1..]
        .iter()
        .min_by(|a, b| a.cost.total_cycles().total_cmp(&b.cost.total_cycles()))
        && let Some(why) = crate::analysis::plan::rests_on(model, base - best.cost.total_cycles())
    {
        notes.push(format!("{}: {why}", best.name));
    }
    // A layout whose saving is negligible against what the runs cost is no fix, as
    // `optimize` keeps the layout for lineup's ([`crate::analysis::plan::keep_if_negligible`]).
    if let Some(work) = cost::RunWork::of(&model.streams) {
        for l in &layouts[1..] {
            let saving = base - l.cost.total_cycles();
            if saving > 0.0 && work.negligible(saving) {
                notes.push(format!(
                    "{}: no fix, it saves {}",
                    l.name,
                    work.weighed(saving)
                ));
            }
        }
    }
    Ok(Prediction { layouts, notes })
}

impl Prediction {
    /// Where a recording's elements of one array share lines as allocated: what the
    /// current layout costs as allocated ([`crate::analysis::plan::current_as_allocated`],
    /// the figure `optimize` prints), beside the table's line-aligned figure.
    pub fn note_as_allocated(&mut self, current_as_allocated: f64) {
        let aligned = self.layouts.first().map_or(0.0, |l| l.cost.total_cycles());
        self.notes.push(format!(
            "as allocated (the elements' shared lines priced as `diagnose` prices them): the current layout costs {current_as_allocated:.0} modeled cycles, {aligned:.0} on line-aligned instances (the table); a layout whose element is padded and aligned costs its table figure only with the allocation line-aligned (`lineup optimize` says where)"
        ));
    }
}

/// Array members whose slots different threads write: lineup's search again with each slot
/// padded to a line (what `optimize` proposes when it prices lower); `None` without such
/// slots.
fn lineup_with_slots_padded(
    model: &Model,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
) -> Result<Option<PricedLayout>, String> {
    let found = match types.composite(id) {
        Some(c) => crate::analysis::slots::per_thread_slots(
            types,
            c,
            &model.units,
            &model.streams,
            model.cls,
        ),
        None => Vec::new(),
    };
    if found.is_empty() {
        return Ok(None);
    }
    let min_align = model.layout.forced_align.unwrap_or(1);
    let constraints = optimize::Constraints {
        instances: model.instances.clone(),
        instance_count: model.instance_count,
        ..Default::default()
    };
    let Some((_, (pu, _), padded)) =
        crate::analysis::plan::slots_padded_plan(model, &found, min_align, &constraints).map_err(
            |e| match e {
                crate::analysis::plan::ProposeError::Search(e)
                | crate::analysis::plan::ProposeError::Request(e) => {
                    format!("struct {type_name}: {e}")
                }
            },
        )?
    else {
        return Ok(None);
    };
    Ok(Some(PricedLayout {
        name: "lineup, slots padded".to_string(),
        cost: padded.cost,
        placement: padded.placement,
        units: Some(pu),
    }))
}

/// One workload of a comparison: its evidence's label (the file name), the model built from
/// it, the unit of its rates and the file it came from.
pub struct Workload {
    pub label: String,
    pub model: Model,
    pub unit: crate::profile::Unit,
    pub evidence: Option<String>,
}

/// One layout priced under every workload, by the workload's own model.
pub struct WorkloadRow {
    pub name: String,
    /// For lineup's layouts: the workload whose evidence alone the search ran on.
    pub optimized_for: Option<String>,
    pub placement: Placement,
    /// Its cost under each workload, in the workloads' order.
    pub costs: Vec<Cost>,
}

/// A layout that lowers one workload's modeled cycles and raises another's: the workloads
/// with their change against the current layout, in percent.
#[derive(Clone, Debug)]
pub struct Tradeoff {
    pub layout: String,
    pub helps: Vec<(String, f64)>,
    pub hurts: Vec<(String, f64)>,
}

/// `predict` under several workloads: the current layout first, then lineup's per workload,
/// then each candidate; the notes on candidates; the trade-offs found.
pub struct WorkloadPrediction {
    pub layouts: Vec<WorkloadRow>,
    pub notes: Vec<String>,
    pub tradeoffs: Vec<Tradeoff>,
}

/// A change of modeled cycles smaller than this, in percent, neither helps nor hurts (it
/// prints as 0.0 %).
pub const TRADEOFF_MIN_PCT: f64 = 0.05;

/// Change of `cost` against `base` in percent; `None` where the base costs nothing.
pub fn change_pct(cost: &Cost, base: &Cost) -> Option<f64> {
    let b = base.total_cycles();
    (b > 0.0).then(|| (cost.total_cycles() - b) / b * 100.0)
}

/// Prices the current layout, lineup's layout searched on each workload's evidence alone
/// (unless `with_lineup` is false), and each candidate file under every workload, each
/// workload with its own model: a row's cost under workload W is what `predict` on W's
/// evidence alone prints for that layout. Names every layout that helps one workload and
/// hurts another.
pub fn predict_workloads(
    workloads: &[Workload],
    types: &Types<'_>,
    type_name: &str,
    with_lineup: bool,
    candidates: &[PathBuf],
) -> Result<WorkloadPrediction, String> {
    let first = &workloads.first().ok_or("no workload to price")?.model;
    for w in workloads {
        require_streams(&w.model, type_name).map_err(|e| format!("{}: {e}", w.label))?;
        let same = w.model.cls == first.cls
            && w.model.units.len() == first.units.len()
            && w.model.units.iter().zip(&first.units).all(|(a, b)| {
                (&a.name, a.offset, a.size, a.align) == (&b.name, b.offset, b.size, b.align)
            });
        if !same {
            return Err(format!(
                "{}: struct {type_name} is laid out differently than under {}",
                w.label, workloads[0].label
            ));
        }
    }
    let price = |name: String, optimized_for: Option<String>, placement: Placement| WorkloadRow {
        costs: workloads
            .iter()
            .map(|w| w.model.evaluate(&placement))
            .collect(),
        name,
        optimized_for,
        placement,
    };
    let mut layouts = vec![price("current".to_string(), None, first.current.clone())];
    if with_lineup {
        for (i, w) in workloads.iter().enumerate() {
            let plan = lineup_plan(&w.model, type_name)?;
            let mut row = price(
                format!("lineup for {}", w.label),
                Some(w.label.clone()),
                plan.placement,
            );
            // Under its own workload, the search's own figure, as `predict` alone prints it.
            row.costs[i] = plan.cost;
            layouts.push(row);
        }
    }
    let mut notes = Vec::new();
    for path in candidates {
        let c = load_candidate(first, types, type_name, path)?;
        layouts.push(price(candidate_name(path), None, c.placement));
        notes.extend(c.notes);
    }
    let tradeoffs = tradeoffs(workloads, &layouts);
    Ok(WorkloadPrediction {
        layouts,
        notes,
        tradeoffs,
    })
}

/// Every layout after the first (the current one) that helps some workload by more than
/// [`TRADEOFF_MIN_PCT`] and hurts another by more than that.
fn tradeoffs(workloads: &[Workload], layouts: &[WorkloadRow]) -> Vec<Tradeoff> {
    let Some((base, rest)) = layouts.split_first() else {
        return Vec::new();
    };
    rest.iter()
        .filter_map(|row| {
            let changes: Vec<(String, f64)> = workloads
                .iter()
                .zip(row.costs.iter().zip(&base.costs))
                .filter_map(|(w, (c, b))| Some((w.label.clone(), change_pct(c, b)?)))
                .collect();
            let helps: Vec<(String, f64)> = changes
                .iter()
                .filter(|c| c.1 < -TRADEOFF_MIN_PCT)
                .cloned()
                .collect();
            let hurts: Vec<(String, f64)> = changes
                .into_iter()
                .filter(|c| c.1 > TRADEOFF_MIN_PCT)
                .collect();
            (!helps.is_empty() && !hurts.is_empty()).then(|| Tradeoff {
                layout: row.name.clone(),
                helps,
                hurts,
            })
        })
        .collect()
}
