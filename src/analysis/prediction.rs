//! What `predict` and `replay` compare: the modeled cost of the current layout, lineup's
//! (and lineup's with per-thread slots padded to lines), and candidate files (a C
//! declaration such as a patch's, or pahole text), all priced by one [`Model`].

use std::path::{Path, PathBuf};

use crate::analysis::candidate;
use crate::analysis::cost::{Cost, Placement, Unit};
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
/// constraints, keeping the struct's forced alignment.
pub fn lineup_plan(model: &Model, type_name: &str) -> Result<Plan, String> {
    optimize::optimize(
        &model.units,
        &model.streams,
        &model.current,
        model.layout.forced_align.unwrap_or(1),
        &optimize::Constraints::default(),
        model.cls,
        &model.machine,
        &model.queueing,
    )
    .map_err(|e| format!("struct {type_name}: {e}"))
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
    Ok(Prediction { layouts, notes })
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
    let (pu, ps) = crate::analysis::slots::padded(&model.units, &model.streams, &found, model.cls);
    let mut order: Vec<usize> = (0..pu.len()).collect();
    order.sort_by_key(|&u| model.units[u].offset);
    let as_declared = optimize::derive(&pu, &order, &Default::default(), model.cls, min_align);
    let padded = optimize::optimize(
        &pu,
        &ps,
        &as_declared,
        min_align,
        &optimize::Constraints::default(),
        model.cls,
        &model.machine,
        &model.queueing,
    )
    .map_err(|e| format!("struct {type_name}: {e}"))?;
    Ok(Some(PricedLayout {
        name: "lineup, slots padded".to_string(),
        cost: padded.cost,
        placement: padded.placement,
        units: Some(pu),
    }))
}
