//! A hand-written access sketch (TOML): the pattern an engineer knows without PEBS or IBS —
//! "`cpupri_vec.count` is incremented by every CPU in cpupri_set, `mask` is read by all CPUs in
//! cpupri_find" — turned into the same [`Profile`] the samplers produce.
//!
//! ```toml
//! [sketch]
//! title = "cpupri_vec under 480 RT threads"
//! source = "seed 003"
//!
//! [machine]
//! cpus = 480
//!
//! [[type]]
//! name = "cpupri_vec"
//!
//! [[type.access]]
//! field = "count"          # or offset = 0 (and size = 4)
//! kind = "rmw"             # load | store | rmw
//! by = "cpupri_set"        # the function (optional)
//! weight = 100             # relative; or rate = 2.0e6 (per second)
//! cpus = "all"             # or a number, or the CPUs: [0, 1]
//! groups = ["enqueue"]     # code paths that touch fields together (optional)
//! under_lock = "rq->lock"  # made holding this lock, not a member of the struct (optional;
//!                          # also on [[type]], for every access of the type)
//! ```
//!
//! The full format is in `docs/profile.md`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::error::ProfileError;
use super::model::{
    Access, AccessGroup, CodeLocation, CountSource, Counts, CpuUse, DEFAULT_CACHELINE_SIZE,
    GroupMember, InstanceFacts, Latency, Place, Profile, ThreadUse, Unit,
};

/// Largest weight or rate (per second) an access may have: far above any real rate (a
/// billion per second on each of a million CPUs), far enough below `f64::MAX` that the cost
/// model's products and sums of them stay finite.
const MAX_AMOUNT: f64 = 1e15;
/// Largest latency of one access, in cycles.
const MAX_CYCLES: f64 = 1e9;
/// Most CPUs, NUMA nodes or threads a sketch may name.
const MAX_CPUS: u32 = 1 << 20;
/// Largest offset or size of an access, in bytes.
const MAX_BYTES: u64 = 1 << 32;
/// Most accesses a sketch may hold (over all its types), and most types, and most group
/// members. Each access is a stream the optimizer prices on every candidate layout, pairwise
/// with the other streams of its line: a sketch of 10^4 accesses took 61 s. Sketches are
/// written by hand; the largest in lineup's cases has 93 accesses.
pub const MAX_ACCESSES: usize = 1024;
/// Most CPUs a sketch's `cpus = [...]` lists may name in all: the cost model prices the
/// listed CPUs one by one. Real sketches list a few.
pub const MAX_LISTED_CPUS: usize = 4096;

/// Reads a TOML access sketch into a profile with one [`super::TypeProfile`] per `[[type]]`.
/// Accesses are named by field (resolved against a layout later) or by explicit offset.
pub fn import_sketch(text: &str) -> Result<Profile, ProfileError> {
    let raw: RawSketch = toml::from_str(text)
        .map_err(|e| ProfileError::Sketch(super::text::toml_error(text, &e)))?;
    convert(text, raw)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSketch {
    #[serde(default)]
    sketch: RawHeader,
    #[serde(default)]
    machine: RawMachine,
    #[serde(default, rename = "type")]
    types: Vec<Spanned<RawType>>,
    #[serde(default, rename = "group")]
    groups: Vec<Spanned<RawGroup>>,
    #[serde(default, rename = "path")]
    paths: Vec<Spanned<RawPath>>,
}

/// `[[path]]`: what one run of a code path (an access's `by`) costs in all, in cycles.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    name: String,
    cycles_per_run: f64,
    /// Where the figure comes from.
    #[allow(dead_code)]
    source: Option<String>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    title: Option<String>,
    /// Where the knowledge comes from (a mail, a seed, a benchmark).
    source: Option<String>,
    note: Option<String>,
    unit: Option<RawUnit>,
}

#[derive(Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawUnit {
    PerSecond,
    Relative,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMachine {
    cpus: Option<u32>,
    numa_nodes: Option<u32>,
    cacheline_size: Option<u64>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawType {
    name: String,
    note: Option<String>,
    /// Every access of the type is made holding this lock (one not in the struct), unless
    /// the access names its own.
    under_lock: Option<String>,
    /// Where instances start in their cache line (`analysis::instances`).
    instances: Option<RawInstances>,
    #[serde(default, rename = "access")]
    accesses: Vec<Spanned<RawAccess>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstances {
    offsets: Option<Vec<u64>>,
    align: Option<u64>,
    honours_alignment: Option<bool>,
    at: Option<String>,
    /// How many instances live (a global: 1), which prices growth (`cost::size_term`).
    count: Option<u64>,
    #[allow(dead_code)]
    note: Option<String>,
}

/// `[type.instances]` checked: offsets below the line, an alignment that is a power of two,
/// one of the two, unless it states only how many instances there are (`count`, at least 1).
fn instance_facts(i: &RawInstances, ty: &str, cls: u64) -> Result<InstanceFacts, ProfileError> {
    let bad = |what: String| {
        Err(ProfileError::Sketch(format!(
            "type {ty:?}: [type.instances] {what}"
        )))
    };
    if i.count == Some(0) {
        return bad("count = 0: there is at least the one instance the accesses go to".into());
    }
    match (&i.offsets, i.align) {
        (Some(_), Some(_)) => return bad("gives offsets and align: one of them".into()),
        (None, None) if i.count.is_some() && i.honours_alignment.is_none() => {}
        (None, None) if i.count.is_some() => {
            return bad("honours_alignment needs offsets = [...] or align = N".into());
        }
        (None, None) => return bad("needs offsets = [...] or align = N (or count = N)".into()),
        (Some(o), None) if o.is_empty() || o.iter().any(|&x| x >= cls) => {
            return bad(format!(
                "offsets = {o:?}: each must be below the {cls}-byte line, at least one"
            ));
        }
        (None, Some(a)) if a == 0 || !a.is_power_of_two() => {
            return bad(format!("align = {a}: not a power of two"));
        }
        _ => {}
    }
    Ok(InstanceFacts {
        offsets: i.offsets.clone(),
        align: i.align,
        honours_alignment: i.honours_alignment,
        at: i.at.clone(),
        count: i.count,
        counted_by: i.count.map(|_| CountSource::Sketch),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccess {
    field: Option<String>,
    offset: Option<u64>,
    size: Option<u64>,
    kind: RawKind,
    by: Option<String>,
    rate: Option<f64>,
    weight: Option<f64>,
    cpus: Option<RawCpus>,
    nodes: Option<Vec<u32>>,
    threads: Option<u32>,
    cycles: Option<RawCycles>,
    #[serde(default)]
    groups: Vec<String>,
    note: Option<String>,
    /// The lock the access is made holding, one that is not a member of the struct.
    under_lock: Option<String>,
}

/// Longest lock name `under_lock` takes (a name, not a text).
const MAX_LOCK_NAME: usize = 256;

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawKind {
    Load,
    Store,
    Rmw,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCpus {
    Count(u32),
    Word(String),
    /// The CPUs themselves (`cpus = [0, 1]`): streams with lists are known to share CPUs or
    /// not, where counts alone are assumed nested.
    List(Vec<u32>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCycles {
    Mean(f64),
    Range([f64; 2]),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: String,
    weight: Option<f64>,
    /// `type.field` (the field may itself be a dotted path).
    members: Vec<String>,
}

/// Sets `[[path]]`'s `cycles_per_run` on every access made by that path. A path no access is
/// made by, a path given twice, or a cost that is not a positive number of cycles is refused.
fn path_costs(
    paths: &[Spanned<RawPath>],
    profile: &mut Profile,
    err: &dyn Fn(std::ops::Range<usize>, String) -> ProfileError,
) -> Result<(), ProfileError> {
    let mut seen: BTreeMap<&str, ()> = BTreeMap::new();
    for p in paths {
        let span = p.span();
        let p = p.get_ref();
        if p.name.is_empty() || p.name.len() > MAX_LOCK_NAME {
            return Err(err(
                span,
                format!("[[path]] name: name the function (at most {MAX_LOCK_NAME} bytes)"),
            ));
        }
        if seen.insert(p.name.as_str(), ()).is_some() {
            return Err(err(span, format!("[[path]] {:?} is given twice", p.name)));
        }
        let c = p.cycles_per_run;
        if !c.is_finite() || c <= 0.0 || c > MAX_CYCLES {
            return Err(err(
                span,
                format!(
                    "[[path]] {:?}: cycles_per_run = {c:e} must be above 0 and at most {MAX_CYCLES:e}",
                    p.name
                ),
            ));
        }
        let mut used = false;
        for t in &mut profile.types {
            for a in &mut t.accesses {
                if a.code.as_ref().and_then(|c| c.symbol.as_deref()) == Some(p.name.as_str()) {
                    a.cycles_per_run = Some(c);
                    used = true;
                }
            }
        }
        if !used {
            return Err(err(
                span,
                format!("[[path]] {:?}: no access is made `by` it", p.name),
            ));
        }
    }
    Ok(())
}

fn convert(text: &str, raw: RawSketch) -> Result<Profile, ProfileError> {
    let err = |span: std::ops::Range<usize>, msg: String| {
        ProfileError::Sketch(format!(
            "line {}: {msg}",
            super::text::line_of(text, span.start)
        ))
    };
    let cls = raw.machine.cacheline_size.unwrap_or(DEFAULT_CACHELINE_SIZE);
    for (what, v) in [
        ("machine.cpus", raw.machine.cpus),
        ("machine.numa_nodes", raw.machine.numa_nodes),
    ] {
        if let Some(v) = v
            && !(1..=MAX_CPUS).contains(&v)
        {
            return Err(ProfileError::Sketch(format!(
                "{what} = {v}: must be between 1 and {MAX_CPUS}"
            )));
        }
    }
    if !crate::input::valid_cacheline_size(cls) {
        return Err(ProfileError::Sketch(format!(
            "machine.cacheline_size {cls} is not a power of two from {} to {}",
            crate::input::CACHELINE_SIZES.start(),
            crate::input::CACHELINE_SIZES.end()
        )));
    }
    let mut unit = raw.sketch.unit.map(|u| match u {
        RawUnit::PerSecond => Unit::PerSecond,
        RawUnit::Relative => Unit::Relative,
    });
    let mut profile = Profile::new("lineup sketch", Unit::Relative, cls);
    profile.label = raw.sketch.title.clone();
    profile.provenance.tool_version = Some(env!("CARGO_PKG_VERSION").to_string());
    profile.provenance.note = match (&raw.sketch.source, &raw.sketch.note) {
        (Some(s), Some(n)) => Some(format!("{s}; {n}")),
        (s, n) => s.clone().or_else(|| n.clone()),
    };
    let m = &mut profile.provenance.machine;
    m.cpus = raw.machine.cpus;
    m.numa_nodes = raw.machine.numa_nodes;
    m.cacheline_size = raw.machine.cacheline_size;
    m.description = raw.machine.description.clone();
    let machine_cpus = raw.machine.cpus;
    let counted = [
        (
            "accesses ([[type.access]])",
            raw.types.iter().map(|t| t.get_ref().accesses.len()).sum(),
            MAX_ACCESSES,
        ),
        ("types ([[type]])", raw.types.len(), MAX_ACCESSES),
        (
            "group members",
            raw.groups.iter().map(|g| g.get_ref().members.len()).sum(),
            MAX_ACCESSES,
        ),
        (
            "listed CPUs (cpus = [...])",
            raw.types
                .iter()
                .flat_map(|t| &t.get_ref().accesses)
                .map(|a| match &a.get_ref().cpus {
                    Some(RawCpus::List(l)) => l.len(),
                    _ => 0,
                })
                .sum(),
            MAX_LISTED_CPUS,
        ),
    ];
    for (what, n, limit) in counted {
        if n > limit {
            return Err(ProfileError::Sketch(format!(
                "{n} {what}; a sketch holds at most {limit}"
            )));
        }
    }

    // Group name → (weight, members), from the accesses' `groups` tags.
    let mut tagged: BTreeMap<String, (f64, Vec<GroupMember>)> = BTreeMap::new();
    let mut total_accesses = 0;
    for ty in &raw.types {
        let span = ty.span();
        let ty = ty.get_ref();
        if ty.name.trim().is_empty() {
            return Err(err(span, "a [[type]] needs a name".into()));
        }
        if profile.type_profile(&ty.name).is_some() {
            return Err(err(span, format!("type {:?} is sketched twice", ty.name)));
        }
        let mut accesses = Vec::new();
        for acc in &ty.accesses {
            let span = acc.span();
            let a = acc.get_ref();
            let under_lock = match a.under_lock.as_ref().or(ty.under_lock.as_ref()) {
                None => None,
                Some(l) if l.trim().is_empty() || l.len() > MAX_LOCK_NAME => {
                    return Err(err(
                        span,
                        format!(
                            "{}: under_lock = {l:?}: name the lock (at most {MAX_LOCK_NAME} bytes)",
                            ty.name
                        ),
                    ));
                }
                Some(l) => Some(l.trim().to_string()),
            };
            let what = a
                .field
                .clone()
                .or_else(|| a.offset.map(|o| format!("offset {o}")))
                .ok_or_else(|| {
                    err(
                        span.clone(),
                        format!("an access to {} needs `field` or `offset`", ty.name),
                    )
                })?;
            let place = format!("{}.{what}", ty.name);
            let (amount, this_unit) = match (a.rate, a.weight) {
                (Some(r), None) => (r, Unit::PerSecond),
                (None, Some(w)) => (w, Unit::Relative),
                (Some(_), Some(_)) => {
                    return Err(err(
                        span,
                        format!("{place}: give `rate` or `weight`, not both"),
                    ));
                }
                (None, None) => {
                    return Err(err(
                        span,
                        format!("{place}: give `rate` (per second) or `weight` (relative)"),
                    ));
                }
            };
            if !amount.is_finite() || amount < 0.0 {
                return Err(err(span, format!("{place}: rate/weight must be ≥ 0")));
            }
            if amount > MAX_AMOUNT {
                let what = if a.rate.is_some() { "rate" } else { "weight" };
                return Err(err(
                    span,
                    format!(
                        "{place}: {what} = {amount:e} is beyond {MAX_AMOUNT:e}; costs would overflow (weights are relative: scale them down)"
                    ),
                ));
            }
            for (what, v) in [
                ("offset", a.offset),
                ("size", a.size),
                (
                    "cpus",
                    match a.cpus {
                        Some(RawCpus::Count(n)) => Some(n as u64),
                        _ => None,
                    },
                ),
                ("threads", a.threads.map(u64::from)),
            ] {
                let limit = if matches!(what, "offset" | "size") {
                    MAX_BYTES
                } else {
                    MAX_CPUS as u64
                };
                if let Some(v) = v
                    && v > limit
                {
                    return Err(err(
                        span,
                        format!("{place}: {what} = {v} is beyond {limit}"),
                    ));
                }
            }
            match unit {
                None => unit = Some(this_unit),
                Some(u) if u != this_unit => {
                    return Err(err(
                        span,
                        format!("{place}: mixes rates and weights; a sketch uses one or the other"),
                    ));
                }
                Some(_) => {}
            }
            let mut counts = Counts::default();
            match a.kind {
                RawKind::Load => counts.loads = amount,
                RawKind::Store => counts.stores = amount,
                RawKind::Rmw => counts.rmw = amount,
            }
            let cpus = match &a.cpus {
                None => None,
                Some(RawCpus::Count(n)) => Some(CpuUse::count(*n)),
                Some(RawCpus::List(l)) if !l.is_empty() => Some(CpuUse::list(l.iter().copied())),
                Some(RawCpus::List(_)) => {
                    return Err(err(span, format!("{place}: cpus = []: an empty CPU list")));
                }
                Some(RawCpus::Word(w)) if w == "all" => Some(CpuUse {
                    count: machine_cpus,
                    all: true,
                    list: Vec::new(),
                }),
                Some(RawCpus::Word(w)) => {
                    return Err(err(
                        span,
                        format!("{place}: cpus = {w:?}; expected a number or \"all\""),
                    ));
                }
            };
            let ok = |c: &f64| c.is_finite() && (0.0..=MAX_CYCLES).contains(c);
            let finite = match &a.cycles {
                Some(RawCycles::Mean(c)) => ok(c),
                Some(RawCycles::Range(r)) => r.iter().all(ok),
                None => true,
            };
            if !finite {
                return Err(err(
                    span,
                    format!("{place}: cycles must be between 0 and {MAX_CYCLES:e}"),
                ));
            }
            let reads = counts.reads();
            let latency = match a.cycles {
                None => None,
                Some(RawCycles::Mean(c)) => Some(Latency {
                    mean_load: Some(c),
                    total_cycles: (reads > 0.0).then_some(c * reads),
                    ..Default::default()
                }),
                Some(RawCycles::Range([lo, hi])) if lo <= hi => Some(Latency {
                    range: Some((lo, hi)),
                    ..Default::default()
                }),
                Some(RawCycles::Range(_)) => {
                    return Err(err(
                        span,
                        format!("{place}: cycles range must be [low, high]"),
                    ));
                }
            };
            let access = Access {
                offset: a.offset,
                size: a.size,
                field: a.field.clone(),
                counts,
                latency,
                cpus,
                nodes: a.nodes.clone(),
                threads: a.threads.map(|n| {
                    Box::new(ThreadUse {
                        count: Some(n),
                        ..Default::default()
                    })
                }),
                code: a.by.as_ref().map(|f| CodeLocation {
                    symbol: Some(f.as_str().into()),
                    ..Default::default()
                }),
                groups: a.groups.clone(),
                note: a.note.clone(),
                under_lock,
                ..Default::default()
            };
            for g in &a.groups {
                let entry = tagged.entry(g.clone()).or_default();
                entry.0 += amount;
                let member = GroupMember {
                    place: Place::Type {
                        name: ty.name.clone(),
                    },
                    offset: a.offset,
                    size: a.size,
                    field: a.field.clone(),
                };
                if !entry.1.contains(&member) {
                    entry.1.push(member);
                }
            }
            accesses.push(access);
        }
        total_accesses += accesses.len();
        let instances = match &ty.instances {
            Some(i) => Some(instance_facts(i, &ty.name, profile.cacheline_size)?),
            None => None,
        };
        let t = profile.type_profile_mut(&ty.name);
        t.note = ty.note.clone();
        t.accesses = accesses;
        t.instances = instances;
    }
    if total_accesses == 0 {
        return Err(ProfileError::Sketch(
            "no accesses: add [[type]] tables with [[type.access]] entries".into(),
        ));
    }
    path_costs(&raw.paths, &mut profile, &err)?;
    profile.unit = unit.unwrap_or(Unit::Relative);

    for g in &raw.groups {
        let span = g.span();
        let g = g.get_ref();
        let mut members = Vec::new();
        for m in &g.members {
            let (ty, field) = m.split_once('.').ok_or_else(|| {
                err(
                    span.clone(),
                    format!("group {:?}: member {m:?} should be type.field", g.name),
                )
            })?;
            members.push(GroupMember {
                place: Place::Type { name: ty.into() },
                offset: None,
                size: None,
                field: Some(field.into()),
            });
        }
        let entry = tagged.entry(g.name.clone()).or_default();
        if let Some(w) = g.weight {
            if !w.is_finite() || !(0.0..=MAX_AMOUNT).contains(&w) {
                return Err(err(
                    span.clone(),
                    format!(
                        "group {:?}: weight = {w:e} must be between 0 and {MAX_AMOUNT:e}",
                        g.name
                    ),
                ));
            }
            entry.0 = w;
        }
        for m in members {
            if !entry.1.contains(&m) {
                entry.1.push(m);
            }
        }
    }
    profile.groups = tagged
        .into_iter()
        .map(|(name, (weight, members))| AccessGroup {
            name,
            weight,
            members,
        })
        .collect();
    profile.derive_function_groups();
    Ok(profile)
}

/// 1-based line of byte `offset` in `text`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_sketch() {
        let p = import_sketch(
            r#"
            [machine]
            cpus = 8
            [[type]]
            name = "s"
            access = [
              { field = "a", kind = "rmw", by = "f", rate = 1000.0, cpus = "all", groups = ["p"] },
              { field = "b", kind = "load", by = "f", rate = 10.0, cpus = 2, groups = ["p"] },
            ]
            "#,
        )
        .unwrap();
        assert_eq!(p.unit, Unit::PerSecond);
        let t = p.type_profile("s").unwrap();
        assert_eq!(t.accesses[0].counts.rmw, 1000.0);
        assert_eq!(t.accesses[0].cpus.as_ref().unwrap().count, Some(8));
        assert!(p.groups.iter().any(|g| g.name == "p" && g.weight == 1010.0));
        assert!(
            p.groups
                .iter()
                .any(|g| g.name == "f" && g.members.len() == 2)
        );
    }

    #[test]
    fn cpus_can_be_listed() {
        let p = import_sketch(
            r#"
            [machine]
            cpus = 8
            [[type]]
            name = "s"
            access = [
              { field = "a", kind = "rmw", by = "push", weight = 1, cpus = [0, 1] },
              { field = "b", kind = "rmw", by = "pop", weight = 1, cpus = [3, 2, 3] },
            ]
            "#,
        )
        .unwrap();
        let t = p.type_profile("s").unwrap();
        let c = t.accesses[1].cpus.as_ref().unwrap();
        assert_eq!((c.list.clone(), c.count), (vec![2, 3], Some(2)));
        let e = import_sketch(
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\nweight = 1\ncpus = []\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("an empty CPU list"), "{e}");
    }

    #[test]
    fn a_lock_outside_the_struct_is_named_per_type_or_per_access() {
        let p = import_sketch(
            r#"
            [[type]]
            name = "t"
            under_lock = "shard.mutex"
            access = [
              { field = "a", kind = "load", by = "lookup", weight = 1 },
              { field = "b", kind = "store", by = "insert", weight = 1, under_lock = "other" },
            ]
            [[type]]
            name = "u"
            access = [ { field = "c", kind = "load", weight = 1 } ]
            "#,
        )
        .unwrap();
        let t = p.type_profile("t").unwrap();
        assert_eq!(t.accesses[0].under_lock.as_deref(), Some("shard.mutex"));
        assert_eq!(t.accesses[1].under_lock.as_deref(), Some("other"));
        assert_eq!(p.type_profile("u").unwrap().accesses[0].under_lock, None);
        let e = import_sketch(
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\nweight = 1\nunder_lock = \" \"\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("name the lock"), "{e}");
    }

    /// `[[path]]` sets what a run of the path costs on each of its accesses; a path no access
    /// is made by, one given twice, and a cost that is no positive number are refused.
    #[test]
    fn a_path_gives_its_cost_per_run_to_its_accesses() {
        let sketch = |path: &str| {
            format!(
                "[[type]]\nname = \"t\"\naccess = [\n  {{ field = \"a\", kind = \"store\", by = \"enter\", weight = 2 }},\n  {{ field = \"b\", kind = \"load\", by = \"other\", weight = 1 }},\n]\n{path}"
            )
        };
        let p = import_sketch(&sketch(
            "[[path]]\nname = \"enter\"\ncycles_per_run = 2500\nsource = \"a mail\"\n",
        ))
        .unwrap();
        let t = p.type_profile("t").unwrap();
        assert_eq!(t.accesses[0].cycles_per_run, Some(2500.0));
        assert_eq!(t.accesses[1].cycles_per_run, None);
        for (path, says) in [
            (
                "[[path]]\nname = \"nobody\"\ncycles_per_run = 10\n",
                "no access is made `by` it",
            ),
            (
                "[[path]]\nname = \"enter\"\ncycles_per_run = 10\n[[path]]\nname = \"enter\"\ncycles_per_run = 20\n",
                "given twice",
            ),
            (
                "[[path]]\nname = \"enter\"\ncycles_per_run = 0\n",
                "must be above 0",
            ),
            (
                "[[path]]\nname = \"enter\"\ncycles_per_run = nan\n",
                "must be above 0",
            ),
        ] {
            let e = import_sketch(&sketch(path)).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("line "), "{path}: {e}");
        }
    }

    /// `[type.instances] count = N` alone says how many instances live, for the size term,
    /// and nothing about where they start; 0 is refused.
    #[test]
    fn instances_may_give_only_their_count() {
        let sketch = |block: &str| {
            import_sketch(&format!(
                "[[type]]\nname = \"s\"\n{block}[[type.access]]\nfield = \"a\"\nkind = \"load\"\nweight = 1\n"
            ))
        };
        let p = sketch("[type.instances]\ncount = 1\n").unwrap();
        let facts = p.type_profile("s").unwrap().instances.clone().unwrap();
        assert_eq!(
            (facts.count, facts.counted_by),
            (Some(1), Some(CountSource::Sketch))
        );
        assert_eq!((facts.offsets, facts.align), (None, None));
        let e = sketch("[type.instances]\ncount = 0\n").unwrap_err();
        assert!(e.to_string().contains("count = 0"), "{e}");
        let e = sketch("[type.instances]\ncount = 2\nhonours_alignment = true\n").unwrap_err();
        assert!(e.to_string().contains("honours_alignment needs"), "{e}");
        let e = sketch("[type.instances]\nat = \"main\"\n").unwrap_err();
        assert!(e.to_string().contains("or count = N"), "{e}");
        // With the starts: both kept.
        let p = sketch("[type.instances]\noffsets = [16]\ncount = 8\n").unwrap();
        let facts = p.type_profile("s").unwrap().instances.clone().unwrap();
        assert_eq!((facts.offsets, facts.count), (Some(vec![16]), Some(8)));
    }

    #[test]
    fn errors_name_the_line() {
        let e = import_sketch(
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"load\"\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "sketch: line 3: s.a: give `rate` (per second) or `weight` (relative)"
        );
        let e = import_sketch(
            "[[type]]\nname = \"s\"\n[[type.access]]\nfield = \"a\"\nkind = \"peek\"\nrate = 1\n",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("sketch: line 5: "), "{e}");
    }
}
