//! Binding a report's raw cache lines to objects of a type, or honestly not.
//!
//! A full `perf c2c` report lists lines of many structs, kernel and userspace. Three kinds of
//! evidence say which type a line belongs to and where it lies in it:
//! - **prototypes**: the functions in the rows take or return pointers to structs (BTF
//!   records every kernel function's prototype); a line whose functions never name the type,
//!   nor a struct that holds or points to one, is not that type;
//! - **offsets**: each row's offset should start a member, with a matching size where known
//!   ([`super::attribute`]);
//! - **neighbours**: lines 64 or 128 bytes apart that are one object share one base.
//!
//! And where the code is at hand, the instruction itself: its memory operand's displacement
//! is the member offset, exactly ([`crate::readers::code`]). Every binding says whether it is
//! `exact` (decoded) or `inferred`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::attribute::{self, LineAccess, Scorer, embedded, type_names};
use crate::profile::{CodeLocation, LineProfile, Profile};
pub use crate::readers::code::Decoded;
use crate::types::{Kind, TypeId, Types};

/// A line whose offsets land on member starts for less than this share of its weight does
/// not fit the type.
pub const MIN_FIT: f64 = 0.5;
/// A line whose rows' functions (those with known prototypes) reach the type for less than
/// this share of their weight is not the type.
pub const MIN_REACH: f64 = 0.5;

/// Kernel or userspace: where a line's data lives, and which side a type describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    Kernel,
    User,
}

impl Domain {
    pub fn label(self) -> &'static str {
        match self {
            Domain::Kernel => "kernel",
            Domain::User => "userspace",
        }
    }
}

/// Whether one row's code is kernel code: `[kernel.kallsyms]`, a `vmlinux`, a module, or
/// perf's `[k]` marker. `None` when the row does not say.
pub fn code_domain(code: &CodeLocation) -> Option<Domain> {
    use crate::profile::Privilege;
    if let Some(obj) = &code.object {
        let base = obj.rsplit('/').next().unwrap_or(obj);
        let kernel = base.starts_with("[kernel")
            || base.starts_with("vmlinux")
            || base.ends_with(".ko")
            || base.ends_with(".ko]")
            || (base.starts_with('[') && base.ends_with(']') && !base.starts_with("[vdso"))
                && !base.starts_with("[unknown");
        return Some(if kernel { Domain::Kernel } else { Domain::User });
    }
    match code.privilege? {
        Privilege::Kernel | Privilege::GuestKernel => Some(Domain::Kernel),
        Privilege::User | Privilege::GuestUser => Some(Domain::User),
        Privilege::Hypervisor => None,
    }
}

/// Where a line's data lives: its address decides when it is a real virtual address (the
/// upper half is the kernel's on x86-64 and arm64; a futex word that kernel code touches is
/// still userspace memory); else the rows' code.
pub fn line_domain(line: &LineProfile) -> Option<Domain> {
    if line.address >= 0xffff_0000_0000_0000 {
        return Some(Domain::Kernel);
    }
    if line.address >= 0x1_0000 && line.address < 0x0001_0000_0000_0000 {
        return Some(Domain::User);
    }
    let mut seen = BTreeSet::new();
    for a in &line.accesses {
        if let Some(d) = a.code.as_ref().and_then(code_domain) {
            seen.insert(d as u8);
        }
    }
    match (
        seen.contains(&(Domain::Kernel as u8)),
        seen.contains(&(Domain::User as u8)),
    ) {
        (true, false) => Some(Domain::Kernel),
        (false, true) => Some(Domain::User),
        _ => None,
    }
}

/// A struct a prototype points to.
#[derive(Clone, Debug)]
pub struct TypeRef {
    /// The struct or union itself (typedefs and qualifiers followed).
    pub id: TypeId,
    /// The names it goes by (`raw_spinlock_t`, `raw_spinlock`).
    pub names: Vec<String>,
}

impl TypeRef {
    /// The name to show: the struct's tag, else its typedef.
    pub fn name(&self) -> &str {
        self.names.last().map(String::as_str).unwrap_or("?")
    }
}

/// Function → the structs its prototype takes or returns pointers to (BTF `FUNC` →
/// `FUNC_PROTO`, through typedefs, `const` and `volatile`).
#[derive(Default)]
pub struct Prototypes {
    by_function: HashMap<String, Vec<TypeRef>>,
}

impl Prototypes {
    pub fn new(types: &Types<'_>) -> Self {
        let mut by_function: HashMap<String, Vec<TypeRef>> = HashMap::new();
        for f in &types.functions {
            let Kind::FuncProto { ret, params, .. } = &types.get(types.resolve(f.proto)).kind
            else {
                continue;
            };
            let mut refs: Vec<TypeRef> = Vec::new();
            for &ty in params.iter().chain(std::iter::once(ret)) {
                if let Some(r) = pointee(types, ty)
                    && !refs.iter().any(|x| x.id == r.id)
                {
                    refs.push(r);
                }
            }
            by_function.entry(f.name.to_string()).or_insert(refs);
        }
        Prototypes { by_function }
    }

    /// Adds prototypes known by struct name (from DWARF: [`crate::readers::dwarf::function_prototypes`]);
    /// functions already known keep theirs.
    pub fn add_named(&mut self, types: &Types<'_>, functions: &[(String, Vec<String>)]) {
        let mut by_name: HashMap<&str, TypeId> = HashMap::new();
        for id in types.composites() {
            let n = types.get(id).name;
            if !n.is_empty() {
                by_name.entry(n).or_insert(id);
            }
        }
        for (f, structs) in functions {
            let refs: Vec<TypeRef> = structs
                .iter()
                .filter_map(|s| {
                    let &id = by_name.get(s.as_str())?;
                    Some(TypeRef {
                        id,
                        names: type_names(types, id),
                    })
                })
                .collect();
            self.by_function.entry(f.clone()).or_insert(refs);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_function.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_function.len()
    }

    /// The structs `symbol`'s prototype points to; `None` when the function is unknown.
    /// `update_load_avg+940`, `foo.isra.0` and `foo.constprop.0` are `foo`'s.
    pub fn of(&self, symbol: &str) -> Option<&[TypeRef]> {
        let name = function_name(symbol);
        self.by_function.get(name).map(Vec::as_slice)
    }
}

/// The function part of a symbol as perf prints it.
pub fn function_name(symbol: &str) -> &str {
    let s = symbol.split('+').next().unwrap_or(symbol);
    s.split('.').next().unwrap_or(s)
}

/// The struct `ty` points to, when it is a pointer to one.
fn pointee(types: &Types<'_>, ty: TypeId) -> Option<TypeRef> {
    let Kind::Pointer { target } = types.get(types.resolve(ty)).kind else {
        return None;
    };
    let id = types.resolve(target);
    types.composite(id)?;
    let names = type_names(types, target);
    if names.is_empty() {
        return None;
    }
    Some(TypeRef { id, names })
}

/// How a function's struct relates to the candidate type, nearest last. Each step away
/// weighs less in the ranking ([`PrototypeEvidence::strength`]), so functions that take the
/// type itself still rank it first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    None,
    /// Two steps: a struct the function's struct points to embeds the type
    /// (`task_struct->mm`, then `mm_struct.mmap_lock`).
    Far,
    /// One pointer: the function's struct (or a struct it embeds) points to the type
    /// (`cfs_rq->tg`, `p->mm`).
    Near,
    /// One holds the other by value: the function's struct embeds the type (`rq.cfs`,
    /// `p->se`), or the type embeds the function's struct (`mm_struct.mmap_lock` for
    /// `rwsem_spin_on_owner`).
    Embedded,
    /// The function takes or returns the type itself.
    Direct,
}

impl Reach {
    /// Weight in the ranking, by distance: 1, ¾ (the embedded type is placed where its
    /// parent object puts the line, so it is nearly as sure), ¼ and ⅛ through a pointer
    /// (another object, of which many small structs fit a few offsets).
    pub fn weight(self) -> f64 {
        match self {
            Reach::Direct => 1.0,
            Reach::Embedded => 0.75,
            Reach::Near => 0.25,
            Reach::Far => 0.125,
            Reach::None => 0.0,
        }
    }
}

/// A struct a function can get at from one of its prototype's structs.
#[derive(Clone, Debug)]
pub struct Reached {
    pub id: TypeId,
    pub names: Vec<String>,
    pub reach: Reach,
    /// How: `rq.cfs`, `task_struct->mm`, `task_struct->mm.mmap_lock`.
    pub path: String,
    /// Where the type lies in the function's struct when embedded in it: the byte offset of
    /// `rq.cfs` in `rq`, which tells which lines of the parent object the type occupies.
    pub offset_in_parent: Option<u64>,
    /// The function's struct (`rq`).
    pub parent: TypeId,
}

/// Structs embedded in `id` by value, at any depth (the first element of arrays), with their
/// member paths and offsets.
fn embedded_parts(types: &Types<'_>, id: TypeId) -> Vec<(TypeId, String, u64)> {
    fn walk(
        types: &Types<'_>,
        id: TypeId,
        prefix: &str,
        base: u64,
        depth: usize,
        out: &mut Vec<(TypeId, String, u64)>,
    ) {
        let Some(comp) = types.composite(types.resolve(id)) else {
            return;
        };
        if depth > 8 || out.len() > 512 {
            return;
        }
        for m in &comp.members {
            if m.is_bitfield() {
                continue;
            }
            let mut ty = types.resolve(m.ty);
            let mut path = if m.name.is_empty() {
                prefix.to_string()
            } else if prefix.is_empty() {
                m.name.to_string()
            } else {
                format!("{prefix}.{}", m.name)
            };
            if let Kind::Array { elem, .. } = types.get(ty).kind {
                ty = types.resolve(elem);
                path.push_str("[0]");
            }
            if types.composite(ty).is_none() {
                continue;
            }
            let offset = base + m.bit_offset / 8;
            // Anonymous structs and unions are the parent's own members, not a type a
            // function could take.
            if !m.name.is_empty() && !type_names(types, ty).is_empty() {
                out.push((ty, path.clone(), offset));
            }
            walk(types, ty, &path, offset, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(types, id, "", 0, 0, &mut out);
    out
}

/// Structs the pointer members of `id` and of the structs it embeds point to, with the
/// member path (`mm`, `se.cfs_rq`).
fn pointer_targets(types: &Types<'_>, id: TypeId) -> Vec<(TypeId, String)> {
    let mut holders = vec![(types.resolve(id), String::new())];
    holders.extend(
        embedded_parts(types, id)
            .into_iter()
            .map(|(t, p, _)| (t, p)),
    );
    let mut out: Vec<(TypeId, String)> = Vec::new();
    for (h, prefix) in holders {
        let Some(comp) = types.composite(h) else {
            continue;
        };
        for m in &comp.members {
            let mut ty = m.ty;
            if let Kind::Array { elem, .. } = types.get(types.resolve(ty)).kind {
                ty = elem;
            }
            let Some(p) = pointee(types, ty) else {
                continue;
            };
            if out.iter().any(|(t, _)| *t == p.id) {
                continue;
            }
            let path = match (prefix.is_empty(), m.name.is_empty()) {
                (true, _) => m.name.to_string(),
                (false, true) => prefix.clone(),
                (false, false) => format!("{prefix}.{}", m.name),
            };
            out.push((p.id, path));
        }
    }
    out
}

/// Memo of what each prototype struct reaches, two steps at most.
struct Relations<'t, 'a> {
    types: &'t Types<'a>,
    reached: HashMap<TypeId, Vec<Reached>>,
    embeds: HashMap<TypeId, BTreeSet<String>>,
}

impl<'t, 'a> Relations<'t, 'a> {
    fn new(types: &'t Types<'a>) -> Self {
        Relations {
            types,
            reached: HashMap::new(),
            embeds: HashMap::new(),
        }
    }

    /// The structs a function taking `from` can get at: `from` itself, the structs it
    /// embeds, the structs it (or what it embeds) points to, and the structs those embed.
    /// Pointers are followed once: two would reach nearly everything from a task.
    fn reached(&mut self, from: &TypeRef) -> &[Reached] {
        let types = self.types;
        self.reached.entry(from.id).or_insert_with(|| {
            let parent = from.name().to_string();
            let mut out = vec![Reached {
                id: from.id,
                names: from.names.clone(),
                reach: Reach::Direct,
                path: parent.clone(),
                offset_in_parent: Some(0),
                parent: from.id,
            }];
            let mut seen: BTreeSet<TypeId> = BTreeSet::from([from.id]);
            for (id, path, offset) in embedded_parts(types, from.id) {
                if seen.insert(id) {
                    out.push(Reached {
                        id,
                        names: type_names(types, id),
                        reach: Reach::Embedded,
                        path: format!("{parent}.{path}"),
                        offset_in_parent: Some(offset),
                        parent: from.id,
                    });
                }
            }
            let targets = pointer_targets(types, from.id);
            for (id, path) in &targets {
                if seen.insert(*id) {
                    out.push(Reached {
                        id: *id,
                        names: type_names(types, *id),
                        reach: Reach::Near,
                        path: format!("{parent}->{path}"),
                        offset_in_parent: None,
                        parent: from.id,
                    });
                }
            }
            for (target, path) in &targets {
                for (id, inner, _) in embedded_parts(types, *target) {
                    if seen.insert(id) {
                        out.push(Reached {
                            id,
                            names: type_names(types, id),
                            reach: Reach::Far,
                            path: format!("{parent}->{path}.{inner}"),
                            offset_in_parent: None,
                            parent: from.id,
                        });
                    }
                }
            }
            out
        })
    }

    /// How `from` reaches the type `target` (named `target_names`), and by which path.
    fn reach(
        &mut self,
        target: TypeId,
        target_names: &[String],
        from: &TypeRef,
    ) -> (Reach, String) {
        let mut best = (Reach::None, String::new());
        for r in self.reached(from) {
            if (r.id == target || r.names.iter().any(|n| target_names.contains(n)))
                && r.reach > best.0
            {
                best = (r.reach, r.path.clone());
            }
        }
        if best.0 >= Reach::Embedded {
            return best;
        }
        // The type embeds the function's struct (`mmap_lock` in `mm_struct`).
        if from
            .names
            .iter()
            .any(|n| self.of_embedded(target).contains(n))
        {
            return (
                Reach::Embedded,
                format!(
                    "{} in {}",
                    from.name(),
                    target_names.last().map(String::as_str).unwrap_or("?")
                ),
            );
        }
        best
    }

    fn of_embedded(&mut self, id: TypeId) -> &BTreeSet<String> {
        let types = self.types;
        self.embeds.entry(id).or_insert_with(|| {
            embedded(types, id)
                .into_iter()
                .flat_map(|e| e.names)
                .collect()
        })
    }
}

/// Which bytes of one struct a row's function can touch, by its prototype alone.
#[derive(Clone, Debug)]
pub enum Reachable {
    /// The function's prototype is unknown (or, in a userspace program, takes no struct).
    Unknown,
    /// Any member: it takes the struct, a struct that embeds it, or one pointing to it (how,
    /// and how near).
    Anywhere(String, Reach),
    /// Only the members whose types its prototype takes, where the struct embeds them by
    /// value (`start`, `end`, path): a function taking a `struct cpupri *` touches
    /// `root_domain.cpupri`, nothing else of the root_domain. Elsewhere it touches the struct
    /// only as far as another struct it takes reaches it (one pointer away, or embedded
    /// there), when one does.
    Within(Vec<(u64, u64, String)>, Option<Reach>),
    /// None of it: it takes other structs.
    Nowhere(String),
}

impl Reachable {
    /// Whether struct byte `x` is one the function can touch; `None` when its prototype does
    /// not say.
    pub fn holds(&self, x: i64) -> Option<bool> {
        match self {
            Reachable::Unknown => None,
            Reachable::Anywhere(..) => Some(true),
            Reachable::Nowhere(_) => Some(false),
            Reachable::Within(ranges, _) => Some(
                x >= 0
                    && ranges
                        .iter()
                        .any(|(lo, hi, _)| *lo <= x as u64 && (x as u64) < *hi),
            ),
        }
    }
}

/// Where struct `id` holds a struct named one of `names` by value, at any depth: (start,
/// end, member path); an array of them is one range.
fn embedded_ranges(types: &Types<'_>, id: TypeId, names: &[String]) -> Vec<(u64, u64, String)> {
    fn matches(types: &Types<'_>, ty: TypeId, names: &[String]) -> bool {
        types.composite(ty).is_some() && type_names(types, ty).iter().any(|n| names.contains(n))
    }
    fn walk(
        types: &Types<'_>,
        id: TypeId,
        prefix: &str,
        base: u64,
        depth: usize,
        names: &[String],
        out: &mut Vec<(u64, u64, String)>,
    ) {
        let Some(comp) = types.composite(types.resolve(id)) else {
            return;
        };
        if depth > 8 || out.len() > 256 {
            return;
        }
        for m in &comp.members {
            if m.is_bitfield() {
                continue;
            }
            let ty = types.resolve(m.ty);
            let offset = base + m.bit_offset / 8;
            let path = match (prefix.is_empty(), m.name.is_empty()) {
                (_, true) => prefix.to_string(),
                (true, false) => m.name.to_string(),
                (false, false) => format!("{prefix}.{}", m.name),
            };
            if let Kind::Array { elem, count } = types.get(ty).kind {
                let elem = types.resolve(elem);
                let esize = types.size_of(elem);
                if esize == 0 || types.composite(elem).is_none() {
                    continue;
                }
                if matches(types, elem, names) {
                    out.push((offset, offset + esize * count.max(1), format!("{path}[]")));
                } else {
                    for i in 0..count.min(64) {
                        let p = format!("{path}[{i}]");
                        walk(types, elem, &p, offset + i * esize, depth + 1, names, out);
                    }
                }
                continue;
            }
            if matches(types, ty, names) {
                out.push((offset, offset + types.size_of(ty).max(1), path));
            } else {
                walk(types, ty, &path, offset, depth + 1, names, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(types, id, "", 0, 0, names, &mut out);
    out
}

/// What `symbol`'s prototype lets it touch of struct `id` (named `names`): any member when it
/// takes the struct, a struct embedding it, or one pointing to it (once, or to a struct that
/// embeds it); only the members embedded by value whose types it takes; else nothing.
/// Structs its structs point to are not followed into members: `list_head` and `rb_node`
/// pointers would put every function on every list of every struct.
fn reachable(
    rel: &mut Relations<'_, '_>,
    protos: &Prototypes,
    id: TypeId,
    names: &[String],
    symbol: &str,
    domain: Option<Domain>,
) -> Reachable {
    let types = rel.types;
    let Some(refs) = protos
        .of(symbol)
        .filter(|r| !(r.is_empty() && domain == Some(Domain::User)))
    else {
        return Reachable::Unknown;
    };
    let function = function_name(symbol);
    let target = names.last().map(String::as_str).unwrap_or("?");
    let mut within: Vec<(u64, u64, String)> = Vec::new();
    // The nearest reach of the structs it takes that can touch any member.
    let mut anywhere: Option<(String, Reach)> = None;
    for r in refs {
        if r.id == id || r.names.iter().any(|n| names.contains(n)) {
            return Reachable::Anywhere(format!("{function} takes struct {target}"), Reach::Direct);
        }
        let inside = embedded_ranges(types, id, &r.names);
        let (reach, path) = rel.reach(id, names, r);
        let any = match reach {
            Reach::Near | Reach::Far | Reach::Direct => true,
            Reach::Embedded => inside.is_empty(),
            Reach::None => false,
        };
        if any && anywhere.as_ref().is_none_or(|(_, best)| reach > *best) {
            anywhere = Some((format!("{function} reaches it as {path}"), reach));
        }
        within.extend(inside.into_iter().map(|(lo, hi, p)| {
            (
                lo,
                hi,
                format!("{function} takes struct {}: {target}.{p}", r.name()),
            )
        }));
    }
    // A struct it takes that embeds this one (or this one itself) reaches every member at
    // least as near as a member's type does; one pointer away, only the members of the
    // types it takes are as near.
    match anywhere {
        Some((how, reach)) if reach >= Reach::Embedded || within.is_empty() => {
            return Reachable::Anywhere(how, reach);
        }
        _ => {}
    }
    if within.is_empty() {
        let takes: Vec<&str> = refs.iter().map(TypeRef::name).collect();
        return Reachable::Nowhere(if takes.is_empty() {
            format!("{function} takes no struct")
        } else {
            format!("{function} takes struct {}", takes.join(", struct "))
        });
    }
    Reachable::Within(within, anywhere.map(|a| a.1))
}

/// What placed one row of a bound line on its member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacedBy {
    /// Its instruction: typed from it, or its displacement (`exact`).
    Instruction,
    /// Its function's prototype takes the type of the member it lands in (embedded by value
    /// in the struct), and the offsets put it there.
    Prototype,
    /// The offsets alone: its function's prototype is unknown, or takes the struct (or
    /// reaches it) without saying which member.
    OffsetOnly,
    /// The engineer's `--line-offset`.
    Given,
    /// Where an earlier report of the same text put its function's rows in this struct
    /// ([`BindInput::earlier`]): the same code on the same object.
    EarlierReport,
}

impl PlacedBy {
    pub fn label(self) -> &'static str {
        match self {
            PlacedBy::Instruction => "placed by its instruction",
            PlacedBy::Prototype => "placed by prototype",
            PlacedBy::OffsetOnly => "placed by offset only",
            PlacedBy::Given => "placed as given",
            PlacedBy::EarlierReport => "placed as an earlier report of the text placed it",
        }
    }
}

/// One row of a bound line: where it landed and on what evidence.
#[derive(Clone, Debug, Serialize)]
pub struct RowEvidence {
    /// The row's index in the report's line.
    pub row: usize,
    /// The row's function (`update_load_avg`), when it names one.
    pub function: Option<String>,
    pub line_offset: u64,
    pub struct_offset: i64,
    /// The member it lands on (`load_avg.counter`).
    pub member: String,
    pub placed_by: PlacedBy,
    /// Why, in a few words: the instruction, the prototype's path to the member, or why the
    /// prototype did not decide (and when it says another member).
    pub why: String,
}

/// How one row's placement at struct byte `x` stands with its function's prototype.
fn row_by_prototype(reach: &Reachable, x: i64) -> (PlacedBy, String) {
    match reach {
        Reachable::Unknown => (
            PlacedBy::OffsetOnly,
            "its function's prototype is unknown".into(),
        ),
        Reachable::Anywhere(how, _) => (
            PlacedBy::OffsetOnly,
            format!("{how}, which does not say which member"),
        ),
        Reachable::Nowhere(how) => (PlacedBy::OffsetOnly, format!("{how}, none of this struct")),
        Reachable::Within(ranges, _) => {
            match ranges
                .iter()
                .find(|(lo, hi, _)| x >= 0 && *lo <= x as u64 && (x as u64) < *hi)
            {
                Some((_, _, how)) => (PlacedBy::Prototype, how.clone()),
                None => (
                    PlacedBy::OffsetOnly,
                    format!(
                        "against its prototype: {}",
                        ranges
                            .iter()
                            .take(3)
                            .map(|(lo, hi, how)| format!("{how} (bytes {lo}..{})", hi - 1))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                ),
            }
        }
    }
}

/// The rows of a line placed with the line at struct byte `line_start`: the member each
/// lands on (`fields`, in row order) and what placed it, its instruction where `decoded`
/// names the row (row index, why), else its function's prototype.
fn rows_at(
    accesses: &[(usize, LineAccess)],
    reach: &[Reachable],
    line_start: i64,
    fields: &[String],
    decoded: &[(usize, String)],
) -> Vec<RowEvidence> {
    accesses
        .iter()
        .enumerate()
        .map(|(j, (i, a))| {
            let x = line_start + a.offset as i64;
            let (placed_by, why) = match decoded.iter().find(|e| e.0 == *i) {
                Some(e) => (PlacedBy::Instruction, e.1.clone()),
                None => row_by_prototype(reach.get(j).unwrap_or(&Reachable::Unknown), x),
            };
            RowEvidence {
                row: *i,
                function: a.symbols.first().map(|s| function_name(s).to_string()),
                line_offset: a.offset,
                struct_offset: x,
                member: fields.get(j).cloned().unwrap_or_default(),
                placed_by,
                why,
            }
        })
        .collect()
}

/// `rows: 6 placed by prototype, 4 by offset only (1 against its prototype)`: one binding's
/// rows by what placed them, for the binding's header.
pub fn rows_summary(b: &LineBinding) -> Option<String> {
    if b.rows.is_empty() {
        return None;
    }
    let count = |p: PlacedBy| b.rows.iter().filter(|r| r.placed_by == p).count();
    let mut parts = Vec::new();
    for (p, label) in [
        (PlacedBy::Instruction, "by its instruction"),
        (PlacedBy::Prototype, "by prototype"),
        (PlacedBy::OffsetOnly, "by offset only"),
        (PlacedBy::Given, "as given"),
        (PlacedBy::EarlierReport, "as an earlier report placed them"),
    ] {
        let n = count(p);
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    let against = b
        .rows
        .iter()
        .filter(|r| r.why.starts_with("against its prototype"))
        .count();
    Some(format!(
        "rows of {:#x} placed: {}{}",
        b.address,
        parts.join(", "),
        if against > 0 {
            format!(" ({against} against their prototypes)")
        } else {
            String::new()
        }
    ))
}

/// The rows of one raw line as attribution needs them, with what their prototypes say.
pub fn line_accesses(line: &LineProfile, protos: &Prototypes) -> Vec<(usize, LineAccess)> {
    line.accesses
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let total = a.counts.accesses();
            let symbols: Vec<String> = a.code.iter().map(|c| c.function()).collect();
            let types = symbols
                .iter()
                .filter_map(|s| protos.of(s))
                .flatten()
                .flat_map(|r| r.names.iter().cloned())
                .collect();
            Some((
                i,
                LineAccess {
                    offset: a.offset?,
                    size: a.size.and_then(|s| u32::try_from(s).ok()),
                    weight: total.max(a.counts.transfers()).max(1.0),
                    store_share: if total > 0.0 {
                        a.counts.writes() / total
                    } else {
                        0.0
                    },
                    symbols,
                    types,
                },
            ))
        })
        .collect()
}

/// Access sizes from decoded instructions, where the evidence gave none: a 4-byte load
/// cannot be an 8-byte member's start and a neighbour's too.
fn with_decoded_sizes(accesses: &mut [(usize, LineAccess)], address: u64, decoded: &Decoded) {
    for (i, a) in accesses.iter_mut() {
        if a.size.is_none()
            && let Some(op) = decoded.get(&(address, *i))
        {
            a.size = op.size;
        }
    }
}

/// What the prototypes of a line's functions say about one type.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PrototypeEvidence {
    /// Share of the line's weight made by functions whose prototypes are known.
    pub known: f64,
    /// Share of the known weight whose functions take the type itself.
    pub direct: f64,
    /// Share of the known weight whose functions take a struct that embeds the type, or
    /// that the type embeds.
    pub embedded: f64,
    /// Share of the known weight whose functions take a struct pointing to it.
    pub near: f64,
    /// Share of the known weight whose functions take a struct pointing to one that embeds
    /// it (two steps).
    pub far: f64,
    /// The functions that take it, or a struct it embeds or is embedded in.
    pub functions: Vec<String>,
    /// How the other functions reach it (`rq.cfs`, `task_struct->mm`), with the function.
    pub paths: Vec<String>,
    /// Structs the other known functions take instead.
    pub others: Vec<String>,
}

impl PrototypeEvidence {
    /// Share of the known weight whose functions relate to the type at all.
    pub fn reach(&self) -> f64 {
        self.direct + self.embedded + self.near + self.far
    }
    /// For ranking: each step away weighs less ([`Reach::weight`]).
    pub fn strength(&self) -> f64 {
        Reach::Direct.weight() * self.direct
            + Reach::Embedded.weight() * self.embedded
            + Reach::Near.weight() * self.near
            + Reach::Far.weight() * self.far
    }
    /// Whether the prototypes speak at all (functions with known prototypes made at least
    /// half the line's weight).
    pub fn speaks(&self) -> bool {
        self.known >= 0.5
    }
}

fn prototype_evidence(
    rel: &mut Relations<'_, '_>,
    protos: &Prototypes,
    line: &LineProfile,
    accesses: &[(usize, LineAccess)],
    target: TypeId,
    target_names: &[String],
    domain: Option<Domain>,
) -> PrototypeEvidence {
    let total: f64 = accesses
        .iter()
        .map(|(_, a)| a.weight)
        .sum::<f64>()
        .max(1e-12);
    let mut known = 0.0;
    let mut by_reach: BTreeMap<Reach, f64> = BTreeMap::new();
    let mut functions = BTreeSet::new();
    let mut paths = BTreeSet::new();
    let mut others = BTreeSet::new();
    for (i, a) in accesses {
        let Some(sym) = line.accesses[*i]
            .code
            .as_ref()
            .and_then(|c| c.symbol.clone())
        else {
            continue;
        };
        // In a userspace program a prototype that takes no struct pointer (`main`, a thread
        // body's `void *arg`) says nothing about which struct the function touches: globals
        // and `void *` casts reach any, so it is as silent as an unknown one.
        let Some(refs) = protos
            .of(&sym)
            .filter(|r| !(r.is_empty() && domain == Some(Domain::User)))
        else {
            continue;
        };
        known += a.weight;
        let (best, path) = refs
            .iter()
            .map(|r| rel.reach(target, target_names, r))
            .max_by_key(|(r, _)| *r)
            .unwrap_or((Reach::None, String::new()));
        *by_reach.entry(best).or_default() += a.weight;
        match best {
            Reach::Direct | Reach::Embedded => {
                functions.insert(function_name(&sym).to_string());
                if best == Reach::Embedded {
                    paths.insert(format!("{} ({path})", function_name(&sym)));
                }
            }
            Reach::Near | Reach::Far => {
                paths.insert(format!("{} ({path})", function_name(&sym)));
            }
            Reach::None => {
                others.extend(refs.iter().map(|r| r.name().to_string()));
            }
        }
    }
    let k = known.max(1e-12);
    let share = |r: Reach| by_reach.get(&r).copied().unwrap_or(0.0) / k;
    PrototypeEvidence {
        known: known / total,
        direct: share(Reach::Direct),
        embedded: share(Reach::Embedded),
        near: share(Reach::Near),
        far: share(Reach::Far),
        functions: functions.into_iter().collect(),
        paths: paths.into_iter().collect(),
        others: others.into_iter().collect(),
    }
}

/// How much a placement whose writes land on atomics gains:
/// a contended line is written by read-modify-writes of atomics and by lock functions (perf
/// c2c counts them as locked loads and stores); a placement that puts the writes of
/// `update_load_avg` on a `struct cfs_rq *` member reads them as plain stores of a pointer.
pub const WRITES_IN_PLACE: f64 = 1.0;

/// Share of a line's written weight that a placement puts on atomics (lock words are placed
/// by the lock functions' prototypes instead); scaled down on lines written less than one
/// access in 20, where a few stores say little.
fn writes_in_place(
    scorer: &Scorer,
    accesses: &[(usize, LineAccess)],
    reach: &[Reachable],
    line_start: i64,
) -> f64 {
    let total: f64 = accesses
        .iter()
        .map(|(_, a)| a.weight)
        .sum::<f64>()
        .max(1e-12);
    let (mut written, mut in_place) = (0.0, 0.0);
    for ((_, a), r) in accesses.iter().zip(reach) {
        let w = a.weight * a.store_share;
        if w <= 0.0 {
            continue;
        }
        written += w;
        let x = line_start + a.offset as i64;
        if x < 0 {
            continue;
        }
        let Some(leaf) = scorer.leaf_holding(x as u64) else {
            continue;
        };
        // A write counts where its function takes the struct (or one embedding it, or the
        // member's type), or reaches it through one pointer and is named after the member
        // (`update_load_avg` adding to `cfs_rq->tg->load_avg`): atomics are in most structs,
        // and one pointer from a function's struct reaches many.
        let takes = match r {
            Reachable::Anywhere(_, reach) if *reach >= Reach::Embedded => true,
            Reachable::Anywhere(_, Reach::Near) => attribute::named_after(&a.symbols, &leaf.top),
            Reachable::Within(..) => r.holds(x) == Some(true),
            _ => false,
        };
        if leaf.atomic && takes {
            in_place += w;
        }
    }
    if written <= 0.0 {
        return 0.0;
    }
    in_place / written * (written / total / 0.05).min(1.0)
}

/// A candidate placement's rows against their functions' prototypes, as shares of the
/// known weight.
struct RowsByPrototype {
    /// Rows inside a member whose type their function takes.
    by_prototype: f64,
    /// Rows of functions that take only members embedded in the struct, placed outside them.
    against: f64,
    /// The member every placed row lies in, when one holds them all and a row's function
    /// takes its type.
    inside_one_member: Option<String>,
}

fn rows_by_prototype(
    accesses: &[(usize, LineAccess)],
    reach: &[Reachable],
    line_start: i64,
    known: f64,
) -> RowsByPrototype {
    let total: f64 = accesses
        .iter()
        .map(|(_, a)| a.weight)
        .sum::<f64>()
        .max(1e-12);
    let known_w = (known * total).max(1e-12);
    let (mut by_prototype, mut against) = (0.0, 0.0);
    let mut ranges: Vec<(u64, u64, String)> = Vec::new();
    for ((_, a), r) in accesses.iter().zip(reach) {
        let x = line_start + a.offset as i64;
        if let Reachable::Within(rs, _) = r {
            match rs
                .iter()
                .find(|(lo, hi, _)| x >= 0 && *lo <= x as u64 && (x as u64) < *hi)
            {
                Some(hit) => {
                    by_prototype += a.weight;
                    ranges.push(hit.clone());
                }
                None => against += a.weight,
            }
        }
    }
    let inside_one_member = ranges
        .iter()
        .find(|(lo, hi, _)| {
            accesses.iter().all(|(_, a)| {
                let x = line_start + a.offset as i64;
                x >= 0 && *lo <= x as u64 && (x as u64) < *hi
            })
        })
        .map(|(_, _, how)| how.rsplit(": ").next().unwrap_or(how).to_string());
    RowsByPrototype {
        by_prototype: by_prototype / known_w,
        against: against / known_w,
        inside_one_member,
    }
}

/// The prototypes' support for a placement, as [`PrototypeEvidence::strength`] weighs it
/// but row by row where the placement puts each row: a function taking only the types of
/// some members supports the struct inside those members, and elsewhere only as far as
/// another struct it takes reaches the struct (`cpupri_find_fitness` takes a cpumask, which
/// an rq embeds in several members, and a task_struct: a row of it on `rq.cfs` is no
/// cpumask of the rq). A share of the known weight.
fn placed_strength(accesses: &[(usize, LineAccess)], reach: &[Reachable], line_start: i64) -> f64 {
    let (mut known, mut support) = (0.0, 0.0);
    for ((_, a), r) in accesses.iter().zip(reach) {
        let x = line_start + a.offset as i64;
        let weight = match r {
            Reachable::Unknown => continue,
            Reachable::Anywhere(_, reach) => reach.weight(),
            Reachable::Within(_, fallback) => match r.holds(x) {
                Some(true) => Reach::Embedded.weight(),
                _ => fallback.map_or(0.0, Reach::weight),
            },
            Reachable::Nowhere(_) => 0.0,
        };
        known += a.weight;
        support += a.weight * weight;
    }
    if known > 0.0 { support / known } else { 0.0 }
}

/// What binding needs besides the profile and the types.
#[derive(Default)]
pub struct BindInput {
    /// Which side the types describe (kernel BTF, a userspace binary's DWARF); `None` when
    /// unknown.
    pub domain: Option<Domain>,
    /// The struct offset where every line starts, as the engineer gave it.
    pub line_start: Option<i64>,
    /// Decoded instructions (`--vmlinux`).
    pub decoded: Decoded,
    /// What share of the rows in that image was typed from its instruction, and why the rest
    /// was not (an image with DWARF).
    pub typing: Option<crate::readers::typing::Coverage>,
    /// Function prototypes by struct name, besides the types' own (DWARF subprograms).
    pub prototypes: Vec<(String, Vec<String>)>,
    /// The reports that come before this one in its text, in order (a mail's "Baseline:"
    /// before its "With this change:", one attachment before the next): reports of one text
    /// share their objects, so where those bound a function's rows (struct and member) is
    /// evidence for this report's rows of the same function ([`CARRIED`]).
    pub earlier: Vec<Profile>,
}

/// How a line was bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// The engineer gave the offset (`--line-offset`).
    Given,
    /// A decoded instruction's displacement put a row on its member.
    Exact,
    /// Offsets, prototypes and neighbours made it the best fit.
    Inferred,
}

impl How {
    pub fn label(self) -> &'static str {
        match self {
            How::Given => "as given",
            How::Exact => "exact",
            How::Inferred => "inferred",
        }
    }
}

/// How one raw cache line of the evidence was bound to the struct.
#[derive(Clone, Debug, Serialize)]
pub struct LineBinding {
    #[serde(serialize_with = "crate::hex::address")]
    pub address: u64,
    /// Struct offset where the line starts.
    pub line_start: i64,
    /// Whether the engineer gave it (`--line-offset`) rather than lineup inferring it.
    pub given: bool,
    /// `given`, `exact` (decoded from the code) or `inferred`.
    pub binding: How,
    /// Lines bound with one base share an object number.
    pub object: u32,
    /// Other placements that fit the offsets as well (within 0.05 of the best score).
    pub alternatives: Vec<i64>,
    pub score: f64,
    /// Share of the line's weight on member starts.
    pub fit: f64,
    /// Why, in a few words each.
    pub reasons: Vec<String>,
    /// Each row with an offset: the member it lands on and what placed it there.
    pub rows: Vec<RowEvidence>,
}

/// A line left unbound, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Unbound {
    #[serde(serialize_with = "crate::hex::address")]
    pub address: u64,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    pub bound: Vec<LineBinding>,
    pub unbound: Vec<Unbound>,
}

/// The side the types describe, for every command that binds (one rule): kernel BTF and the
/// DWARF of a `vmlinux` or a `.ko` are the kernel's; other DWARF is a userspace program's only
/// when the evidence's rows run that program's code (a row's object is the file). Otherwise
/// (an object file or program compiled to replicate a kernel struct, a C header) the types
/// say nothing of the side: a replica binds kernel lines by offsets and prototypes, as the
/// struct it copies would.
pub fn types_domain(types: &Types<'_>, path: &str, profile: &Profile) -> Option<Domain> {
    match source_domain(types, path) {
        Domain::Kernel => Some(Domain::Kernel),
        Domain::User => {
            let base = path.rsplit('/').next().unwrap_or(path);
            let runs = profile.lines.iter().flat_map(|l| &l.accesses).any(|a| {
                a.code
                    .as_ref()
                    .and_then(|c| c.object.as_deref())
                    .is_some_and(|o| o.rsplit('/').next() == Some(base))
            });
            runs.then_some(Domain::User)
        }
    }
}

/// The side a type source describes: kernel BTF is the kernel's; DWARF of a `vmlinux` or a
/// `.ko` too; other DWARF is a userspace program's.
pub fn source_domain(types: &Types<'_>, path: &str) -> Domain {
    let base = path.rsplit('/').next().unwrap_or(path);
    match types.source {
        crate::types::SourceFormat::Btf => Domain::Kernel,
        crate::types::SourceFormat::Dwarf
            if base.starts_with("vmlinux") || base.ends_with(".ko") =>
        {
            Domain::Kernel
        }
        crate::types::SourceFormat::Dwarf => Domain::User,
    }
}

fn objects_of(line: &LineProfile) -> String {
    let objs: BTreeSet<&str> = line
        .accesses
        .iter()
        .filter_map(|a| a.code.as_ref()?.object.as_deref())
        .collect();
    objs.into_iter().take(3).collect::<Vec<_>>().join(", ")
}

/// Why a line cannot be `type_name` on grounds other than offsets, if it cannot.
fn exclusion(
    line: &LineProfile,
    type_domain: Option<Domain>,
    type_name: &str,
    proto: &PrototypeEvidence,
) -> Option<String> {
    if let (Some(td), Some(ld)) = (type_domain, line_domain(line))
        && td != ld
    {
        let objs = objects_of(line);
        return Some(format!(
            "{} data{}; struct {type_name} is a {} type",
            ld.label(),
            if objs.is_empty() {
                String::new()
            } else {
                format!(" (code in {objs})")
            },
            td.label()
        ));
    }
    if proto.speaks() && proto.reach() < MIN_REACH {
        let others = if proto.others.is_empty() {
            "no struct".to_string()
        } else {
            proto
                .others
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Some(format!(
            "its functions' prototypes take {others}: {:.0}% of the known weight reaches struct {type_name} (itself, a struct it embeds or is embedded in, or one pointer away)",
            proto.reach() * 100.0
        ));
    }
    None
}

/// How a row's instruction places it in struct `id`, when the image gave its operand.
enum RowPlace {
    /// Typed from the instruction (its base register's type at that address): the struct
    /// offset of the access, and why.
    Typed(i64, String),
    /// Typed as a struct that is neither `id` nor embedded in it once: not this struct's row.
    Other(String),
    /// Decoded only: the displacement, assuming the base register points to `id`'s start.
    Displacement,
}

fn row_place(
    types: &Types<'_>,
    id: TypeId,
    names: &[String],
    op: &crate::readers::code::MemoryOperand,
) -> RowPlace {
    let Some(t) = &op.typed else {
        return RowPlace::Displacement;
    };
    let why = |at: &str| {
        format!(
            "typed from its instruction `{}`: struct {} +{} {}{} ({})",
            t.instruction, t.type_name, t.offset, t.member, at, t.via
        )
    };
    if names.iter().any(|n| *n == t.type_name) {
        return RowPlace::Typed(t.offset, why(""));
    }
    let parts: Vec<(String, u64)> = embedded_parts(types, id)
        .into_iter()
        .filter(|(ty, _, _)| type_names(types, *ty).contains(&t.type_name))
        .map(|(_, path, off)| (path, off))
        .collect();
    match parts.as_slice() {
        [(path, off)] => RowPlace::Typed(*off as i64 + t.offset, why(&format!(", inside {path}"))),
        _ => RowPlace::Other(t.type_name.clone()),
    }
}

/// The exact line starts the code gives, strongest first: a row typed from its instruction
/// as this struct (or a struct it embeds once) puts the line where its member is (strength
/// 2); a decoded row whose displacement lands on a member start with the decoded size, when
/// the row was not typed as another struct, puts it there assuming the base register points
/// to the struct's start (strength 1).
fn decoded_start(
    scorer: &Scorer,
    types: &Types<'_>,
    id: TypeId,
    decoded: &Decoded,
    address: u64,
    accesses: &[(usize, LineAccess)],
) -> Vec<(i64, String, usize, usize)> {
    let names = type_names(types, id);
    let mut out = Vec::new();
    for (i, a) in accesses {
        let Some(op) = decoded.get(&(address, *i)) else {
            continue;
        };
        match row_place(types, id, &names, op) {
            RowPlace::Typed(at, why) => {
                if !op.typed.as_ref().is_some_and(|t| t.indexed) {
                    out.push((at - a.offset as i64, why, 2, *i));
                }
                continue;
            }
            RowPlace::Other(_) => continue,
            RowPlace::Displacement => {}
        }
        if op.displacement < 0 {
            continue;
        }
        let d = op.displacement as u64;
        let Some(leaf) = scorer.leaf_starting_at(d, op.size) else {
            continue;
        };
        out.push((
            op.displacement - a.offset as i64,
            format!(
                "{} `{}` reads displacement {:#x}: {}",
                a.symbols.first().map(String::as_str).unwrap_or("?"),
                op.instruction,
                op.displacement,
                leaf.path
            ),
            1,
            *i,
        ));
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.2));
    out
}

/// Why a line is not struct `id` by what its instructions were typed as: most of its typed
/// weight typed as other structs (neither `id` nor embedded in it).
fn typed_elsewhere(
    types: &Types<'_>,
    id: TypeId,
    decoded: &Decoded,
    address: u64,
    accesses: &[(usize, LineAccess)],
) -> Option<String> {
    let names = type_names(types, id);
    let (mut mine, mut other) = (0.0, 0.0);
    let mut others: BTreeSet<String> = BTreeSet::new();
    for (i, a) in accesses {
        let Some(op) = decoded.get(&(address, *i)) else {
            continue;
        };
        match row_place(types, id, &names, op) {
            RowPlace::Typed(..) => mine += a.weight,
            RowPlace::Other(t) => {
                other += a.weight;
                others.insert(t);
            }
            RowPlace::Displacement => {}
        }
    }
    (other > 0.0 && other > mine).then(|| {
        format!(
            "its rows' instructions were typed as struct {} ({:.0}% of the typed weight), not this struct",
            others.into_iter().collect::<Vec<_>>().join(", struct "),
            100.0 * other / (other + mine)
        )
    })
}

/// Binds the raw lines of `profile` that fit struct `id` (named `type_name`), jointly per
/// object: lines close enough to be one object share one base. Lines of the other side
/// (userspace data for a kernel type), lines whose functions' prototypes never reach the
/// type, and lines whose offsets fit no placement stay unbound, with the reason.
pub fn bind_type(
    profile: &mut Profile,
    types: &Types<'_>,
    id: TypeId,
    type_name: &str,
    input: &BindInput,
) -> Outcome {
    let cls = profile.cacheline_size.max(1);
    let size = types.size_of(id);
    let mut protos = Prototypes::new(types);
    protos.add_named(types, &input.prototypes);
    let mut rel = Relations::new(types);
    let mut names = type_names(types, id);
    if !names.iter().any(|n| n == type_name) {
        names.push(type_name.to_string());
    }
    let scorer = Scorer::new(types, id);
    let mut out = Outcome::default();
    let mut fitting: Vec<GroupLine> = Vec::new();
    let mut reach_memo: HashMap<String, Reachable> = HashMap::new();
    let mut ranking = None;
    // The instruction's width is the row's access size where the report gave none: the
    // diagnosis then names the union alternative of that width.
    for line in profile.lines.iter_mut().filter(|l| l.binding.is_none()) {
        for (i, a) in line.accesses.iter_mut().enumerate() {
            if a.size.is_none()
                && let Some(op) = input.decoded.get(&(line.address, i))
            {
                a.size = op.size.map(u64::from);
            }
        }
    }
    if input.line_start.is_none() {
        ranking = Some(Ranking::new(profile, types, input));
    }
    for line in profile.lines.iter().filter(|l| l.binding.is_none()) {
        let mut accesses = line_accesses(line, &protos);
        with_decoded_sizes(&mut accesses, line.address, &input.decoded);
        if accesses.is_empty() {
            if !line.accesses.is_empty() || line.totals.is_some() {
                out.unbound.push(Unbound {
                    address: line.address,
                    reason: "its rows give no offsets: members cannot be named".into(),
                });
            }
            continue;
        }
        let proto =
            prototype_evidence(&mut rel, &protos, line, &accesses, id, &names, input.domain);
        // The engineer's offset overrides what the prototypes say, not the side.
        let proto_for_exclusion = if input.line_start.is_some() {
            PrototypeEvidence::default()
        } else {
            proto.clone()
        };
        let typed_out = if input.line_start.is_none() {
            typed_elsewhere(types, id, &input.decoded, line.address, &accesses)
        } else {
            None
        };
        // Where the overview places the struct on this line; and, where the prototypes'
        // reach would exclude it, whether the overview ranks it first: then it does not (the
        // overview said it is this struct), and the line is bound where the overview put it.
        let by_reach = input.line_start.is_none()
            && exclusion(line, input.domain, type_name, &proto_for_exclusion).is_some();
        let ranked = match (&mut ranking, &typed_out) {
            (Some(r), None) => ranked_placement(r, profile, line, input, &names, by_reach),
            _ => None,
        };
        let first = ranked.as_ref().is_some_and(Ranked::first);
        let proto_for_exclusion = if first {
            PrototypeEvidence::default()
        } else {
            proto_for_exclusion
        };
        if let Some(mut reason) =
            typed_out.or_else(|| exclusion(line, input.domain, type_name, &proto_for_exclusion))
        {
            if let Some((at, of, leader)) = ranked.as_ref().and_then(|r| r.rank.as_ref()) {
                reason.push_str(&format!(
                    "; the overview ranks it {} of {of} candidate types on this line, struct {leader} first",
                    ordinal(at + 1),
                ));
            }
            out.unbound.push(Unbound {
                address: line.address,
                reason,
            });
            continue;
        }
        let w: f64 = accesses.iter().map(|(_, a)| a.weight).sum();
        let reach: Vec<Reachable> = accesses
            .iter()
            .map(|(_, a)| match a.symbols.first() {
                Some(sym) => reach_memo
                    .entry(function_name(sym).to_string())
                    .or_insert_with(|| reachable(&mut rel, &protos, id, &names, sym, input.domain))
                    .clone(),
                None => Reachable::Unknown,
            })
            .collect();
        fitting.push(GroupLine {
            address: line.address,
            accesses,
            weight: w,
            proto,
            reach,
            ranked,
        });
    }
    if let Some(start) = input.line_start {
        for g in &fitting {
            let only: Vec<LineAccess> = g.accesses.iter().map(|(_, a)| a.clone()).collect();
            let fields = scorer
                .at(types, &only, start, cls)
                .map(|c| c.fields)
                .unwrap_or_default();
            let rows = g
                .accesses
                .iter()
                .enumerate()
                .map(|(j, (i, a))| RowEvidence {
                    row: *i,
                    function: a.symbols.first().map(|s| function_name(s).to_string()),
                    line_offset: a.offset,
                    struct_offset: start + a.offset as i64,
                    member: fields.get(j).cloned().unwrap_or_default(),
                    placed_by: PlacedBy::Given,
                    why: "--line-offset".into(),
                })
                .collect();
            out.bound.push(LineBinding {
                address: g.address,
                line_start: start,
                given: true,
                binding: How::Given,
                object: 0,
                alternatives: Vec::new(),
                score: 1.0,
                fit: 1.0,
                reasons: vec!["--line-offset".into()],
                rows,
            });
        }
    } else {
        // Lines the overview places the struct on are bound where it places them (one
        // mechanism for both: the overview's candidate is this binding); the others jointly
        // per object, by their offsets and prototypes.
        let (ranked, mut fitting): (Vec<GroupLine>, Vec<GroupLine>) =
            fitting.into_iter().partition(|g| g.ranked.is_some());
        for g in &ranked {
            let Some(r) = &g.ranked else { continue };
            match binding_as_ranked(&scorer, types, cls, g, r) {
                Ok(mut b) => {
                    if g.proto.speaks() {
                        b.reasons.push(prototype_reason(&g.proto, type_name));
                    }
                    out.bound.push(b);
                }
                Err(reason) => out.unbound.push(Unbound {
                    address: g.address,
                    reason,
                }),
            }
        }
        fitting.sort_by_key(|f| f.address);
        let mut object = 0u32;
        let mut i = 0;
        while i < fitting.len() {
            // Lines within one struct's size of the first are candidates for one object.
            let first = fitting[i].address;
            let mut j = i + 1;
            while j < fitting.len() && fitting[j].address - first < size + cls {
                j += 1;
            }
            let group = &fitting[i..j];
            let placed = bind_group(&scorer, types, id, cls, group, &input.decoded);
            let mut any = false;
            for (k, p) in placed.into_iter().enumerate() {
                let GroupLine { address, proto, .. } = &group[k];
                match p {
                    Ok(mut b) => {
                        any = true;
                        b.object = object;
                        if proto.speaks() {
                            b.reasons.push(prototype_reason(proto, type_name));
                        }
                        out.bound.push(b);
                    }
                    Err(reason) => out.unbound.push(Unbound {
                        address: *address,
                        reason,
                    }),
                }
            }
            if any {
                object += 1;
            }
            i = j;
        }
    }
    // One object per base: lines whose struct starts at one address are one object.
    out.bound.sort_by_key(|b| b.address);
    let mut bases: Vec<i128> = Vec::new();
    for b in out.bound.iter_mut().filter(|b| !b.given) {
        let base = b.address as i128 - b.line_start as i128;
        let k = bases.iter().position(|x| *x == base).unwrap_or_else(|| {
            bases.push(base);
            bases.len() - 1
        });
        b.object = k as u32;
    }
    for b in &out.bound {
        let own: Vec<(usize, i64)> = b
            .rows
            .iter()
            .filter(|r| r.struct_offset != b.line_start + r.line_offset as i64)
            .map(|r| (r.row, r.struct_offset))
            .collect();
        profile.bind_line_rows(b.address, type_name, b.line_start, own);
    }
    out.unbound.sort_by_key(|u| u.address);
    out
}

/// `prototypes: 36% of the known weight reaches task_group (… take it)`.
fn prototype_reason(proto: &PrototypeEvidence, type_name: &str) -> String {
    format!(
        "prototypes: {:.0}% of the known weight reaches {type_name}{}",
        proto.reach() * 100.0,
        if proto.functions.is_empty() {
            String::new()
        } else {
            format!(" ({} take it)", proto.functions.join(", "))
        }
    )
}

/// One line of a group bound jointly: its rows, weight, what the prototypes say of the
/// struct, and what each row's function can touch of it.
struct GroupLine {
    address: u64,
    accesses: Vec<(usize, LineAccess)>,
    weight: f64,
    proto: PrototypeEvidence,
    reach: Vec<Reachable>,
    /// The overview's placement of the struct on this line, when it names the struct.
    ranked: Option<Ranked>,
}

/// The overview's candidate for one struct on one line: its placement and, where the other
/// candidates were ranked too, its rank (0 is first, ties with the first included) among how
/// many, and the first one's name.
struct Ranked {
    candidate: TypeCandidate,
    rank: Option<(usize, usize, String)>,
}

impl Ranked {
    fn first(&self) -> bool {
        self.rank.as_ref().is_some_and(|r| r.0 == 0)
    }
}

/// Where the overview places the struct named `names` on `line`, if it is a candidate there;
/// with `rank`, among every candidate (slower: every struct the prototypes reach is placed).
fn ranked_placement(
    ranking: &mut Ranking<'_, '_>,
    profile: &Profile,
    line: &LineProfile,
    input: &BindInput,
    names: &[String],
    rank: bool,
) -> Option<Ranked> {
    let view = ranking.line(profile, line, input, false, (!rank).then_some(names));
    let k = view
        .candidates
        .iter()
        .position(|c| names.contains(&c.type_name))?;
    let top = view.candidates[0].score;
    let at = if view.candidates[k].score >= top - 1e-9 {
        0
    } else {
        k
    };
    Some(Ranked {
        rank: rank.then(|| {
            (
                at,
                view.candidates.len(),
                view.candidates[0].type_name.clone(),
            )
        }),
        candidate: view.candidates[k].clone(),
    })
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, x) if x != 11 => "st",
        (2, x) if x != 12 => "nd",
        (3, x) if x != 13 => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A line bound where the overview places the struct: its rows on the overview's members,
/// each saying what placed it.
fn binding_as_ranked(
    scorer: &Scorer,
    types: &Types<'_>,
    cls: u64,
    g: &GroupLine,
    r: &Ranked,
) -> Result<LineBinding, String> {
    let c = &r.candidate;
    if c.fit < MIN_FIT {
        return Err(format!(
            "where the overview places it (line at byte {}) only {:.0}% of its weight lands on member starts",
            c.line_start,
            c.fit * 100.0
        ));
    }
    let alternatives = if c.binding == How::Exact {
        Vec::new()
    } else {
        let only: Vec<LineAccess> = g.accesses.iter().map(|(_, a)| a.clone()).collect();
        let all = scorer.candidates(types, &only, cls);
        let top = all.iter().map(|x| x.score()).fold(f64::MIN, f64::max);
        all.iter()
            .filter(|x| top - x.score() < 0.05 && x.line_start != c.line_start)
            .map(|x| x.line_start)
            .collect()
    };
    let mut reasons = c.reasons.clone();
    reasons.push(match &r.rank {
        Some((0, of, _)) => format!(
            "the overview ranks it first of {of} candidate types, though its functions' prototypes reach it for less than half the known weight"
        ),
        Some((at, of, leader)) => format!(
            "the overview ranks it {} of {of} candidate types, struct {leader} first",
            ordinal(at + 1)
        ),
        None => "placed as the overview places it".to_string(),
    });
    Ok(LineBinding {
        address: g.address,
        line_start: c.line_start,
        given: false,
        binding: c.binding,
        object: 0,
        alternatives,
        score: c.score,
        fit: c.fit,
        reasons,
        rows: c.rows.clone(),
    })
}

/// One base for the lines of `group` (sorted by address): the struct offset of the first
/// line's start that fits every line best, decoded rows first; then the placement that puts
/// the most weight on members the rows' functions' prototypes name (a function taking a
/// `struct cpupri *` lands inside `root_domain.cpupri`) and the least on members they cannot
/// reach; then the offsets.
fn bind_group(
    scorer: &Scorer,
    types: &Types<'_>,
    id: TypeId,
    cls: u64,
    group: &[GroupLine],
    decoded: &Decoded,
) -> Vec<Result<LineBinding, String>> {
    let first = group[0].address;
    let total_w: f64 = group.iter().map(|g| g.weight).sum::<f64>().max(1e-12);
    // Candidate bases: every placement of every line, shifted to the first line; and the
    // decoded ones.
    let mut bases: BTreeMap<i64, usize> = BTreeMap::new();
    let mut exact: Vec<(usize, i64, String, usize, usize)> = Vec::new();
    let lines: Vec<Vec<LineAccess>> = group
        .iter()
        .map(|g| g.accesses.iter().map(|(_, a)| a.clone()).collect())
        .collect();
    for (k, g) in group.iter().enumerate() {
        let shift = (g.address - first) as i64;
        for c in scorer.candidates(types, &lines[k], cls) {
            bases.entry(c.line_start - shift).or_default();
        }
        for (start, why, strength, row) in
            decoded_start(scorer, types, id, decoded, g.address, &g.accesses)
        {
            bases.insert(start - shift, 0);
            exact.push((k, start - shift, why, strength, row));
        }
    }
    struct Scored {
        base: i64,
        exact: usize,
        /// Weight on members the prototypes name, less weight on members they cannot
        /// reach, in hundredths of the group's weight (a stray row does not decide).
        prototype: i64,
        value: f64,
        per: Vec<Option<attribute::Candidate>>,
    }
    let eval = |base: i64| -> Scored {
        let mut value = 0.0;
        let mut ex = 0;
        let mut prototype = 0.0;
        let mut per = Vec::with_capacity(group.len());
        for (k, g) in group.iter().enumerate() {
            let start = base + (g.address - first) as i64;
            let c = scorer.at(types, &lines[k], start, cls);
            if let Some(c) = &c
                && c.fit >= MIN_FIT
            {
                value += g.weight / total_w * c.score();
                // A typed row outweighs a displacement: strength 2 against 1.
                ex += exact
                    .iter()
                    .filter(|e| e.0 == k && e.1 == base)
                    .map(|e| e.3)
                    .max()
                    .unwrap_or(0);
                for ((_, a), reach) in g.accesses.iter().zip(&g.reach) {
                    let x = start + a.offset as i64;
                    match (reach, reach.holds(x)) {
                        (Reachable::Within(..), Some(true)) => prototype += a.weight,
                        (Reachable::Within(..), Some(false)) => prototype -= a.weight,
                        _ => {}
                    }
                }
            }
            per.push(c);
        }
        Scored {
            base,
            exact: ex,
            prototype: (100.0 * prototype / total_w).round() as i64,
            value,
            per,
        }
    };
    let mut scored: Vec<Scored> = bases.keys().map(|&b| eval(b)).collect();
    let size = types.size_of(id);
    let aligned = |s: &Scored| allocator_aligned(first, s.base, size);
    scored.sort_by(|a, b| {
        b.exact
            .cmp(&a.exact)
            .then(b.prototype.cmp(&a.prototype))
            .then(b.value.total_cmp(&a.value))
            .then_with(|| aligned(b).cmp(&aligned(a)))
            .then(a.base.abs().cmp(&b.base.abs()))
    });
    let Some(top) = scored.first() else {
        return group
            .iter()
            .map(|_| Err("its offsets fit no placement inside the struct".to_string()))
            .collect();
    };
    let best = top.base;
    let alternatives: Vec<i64> = scored
        .iter()
        .skip(1)
        .filter(|s| {
            s.exact == top.exact && s.prototype == top.prototype && top.value - s.value < 0.05
        })
        .map(|s| s.base)
        .collect();
    group
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let shift = (g.address - first) as i64;
            let start = best + shift;
            match &top.per[k] {
                Some(c) if c.fit >= MIN_FIT => {
                    let mut reasons = vec![format!(
                        "offsets: {:.0}% of the weight on member starts",
                        c.fit * 100.0
                    )];
                    if c.contained > 0.0 {
                        reasons.push(format!(
                            "{:.0}% inside embedded structs their functions take",
                            c.contained * 100.0
                        ));
                    }
                    if group.len() > 1 {
                        reasons.push(format!(
                            "one object with {} other line(s) of the report, base chosen jointly",
                            group.len() - 1
                        ));
                    }
                    let own_exact: Vec<&(usize, i64, String, usize, usize)> = exact
                        .iter()
                        .filter(|e| e.0 == k && e.1 == best)
                        .collect();
                    let how = if own_exact.is_empty() {
                        How::Inferred
                    } else {
                        reasons.extend(own_exact.iter().map(|e| format!("decoded: {}", e.2)));
                        How::Exact
                    };
                    let decoded_rows: Vec<(usize, String)> =
                        own_exact.iter().map(|e| (e.4, e.2.clone())).collect();
                    let rows = rows_at(&g.accesses, &g.reach, start, &c.fields, &decoded_rows);
                    Ok(LineBinding {
                        address: g.address,
                        line_start: start,
                        given: false,
                        binding: how,
                        object: 0,
                        alternatives: if how == How::Exact {
                            Vec::new()
                        } else {
                            alternatives.iter().map(|a| a + shift).collect()
                        },
                        score: c.score(),
                        fit: c.fit,
                        reasons,
                        rows,
                    })
                }
                Some(c) => Err(format!(
                    "at the base that fits its object best (line at byte {start}) only {:.0}% of its weight lands on member starts",
                    c.fit * 100.0
                )),
                None => Err(format!(
                    "at the base that fits its object best its line would start at byte {start}, outside the struct"
                )),
            }
        })
        .collect()
}

/// One candidate type for one line, with its reasons.
#[derive(Clone, Debug, Serialize)]
pub struct TypeCandidate {
    pub type_name: String,
    /// Struct offset where the line starts at the best placement.
    pub line_start: i64,
    pub binding: How,
    pub score: f64,
    /// Field each row lands on, in row order.
    pub fields: Vec<String>,
    pub prototypes: PrototypeEvidence,
    pub fit: f64,
    /// Neighbouring lines of the report that fit the same object.
    #[serde(serialize_with = "crate::hex::addresses")]
    pub neighbours: Vec<u64>,
    pub reasons: Vec<String>,
    /// Each row with an offset, in row order: the struct offset and member it lands on, and
    /// what placed it there. `--type` binds the line with these very rows.
    pub rows: Vec<RowEvidence>,
}

/// The overview of one contended line: candidate types, best first.
#[derive(Clone, Debug, Serialize)]
pub struct LineOverview {
    #[serde(serialize_with = "crate::hex::address")]
    pub address: u64,
    /// The report's rank of the line (c2c's index).
    pub rank: Option<u32>,
    pub domain: Option<Domain>,
    /// Functions in its rows, heaviest first.
    pub functions: Vec<String>,
    pub candidates: Vec<TypeCandidate>,
    /// Why there are none, or what limits them.
    pub note: Option<String>,
}

/// Lines to look at, by the report's rank (`--line N`) or by an address inside them.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub ranks: Vec<u32>,
    pub addresses: Vec<u64>,
}

impl Selection {
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty() && self.addresses.is_empty()
    }
    fn selects(&self, position: usize, line: &LineProfile, cls: u64) -> bool {
        if self.is_empty() {
            return true;
        }
        let rank = line.rank.unwrap_or(position as u32);
        self.ranks.contains(&rank)
            || self
                .addresses
                .iter()
                .any(|a| a - a % cls.max(1) == line.address)
    }
}

/// How many candidate types to show per line.
const SHOWN: usize = 5;

/// The overview without `--type`: per selected line, the types its functions' prototypes
/// name, ranked by prototypes, offsets and neighbours; structure-only ranking over every
/// type when the prototypes say nothing and `structural` allows it (it is slow on a kernel).
pub fn overview(
    profile: &Profile,
    types: &Types<'_>,
    input: &BindInput,
    selection: &Selection,
    structural: bool,
) -> Vec<LineOverview> {
    overview_with_progress(profile, types, input, selection, structural, &mut |_| {})
}

/// [`overview`], calling `progress(lines done)` after each line of the report.
pub fn overview_with_progress(
    profile: &Profile,
    types: &Types<'_>,
    input: &BindInput,
    selection: &Selection,
    structural: bool,
    progress: &mut dyn FnMut(usize),
) -> Vec<LineOverview> {
    let mut ranking = Ranking::new(profile, types, input);
    let mut out = Vec::new();
    for (pos, line) in profile.lines.iter().enumerate() {
        progress(pos + 1);
        if !selection.selects(pos, line, ranking.cls) {
            continue;
        }
        let mut view = ranking.line(profile, line, input, structural, None);
        view.candidates.truncate(SHOWN);
        out.push(view);
    }
    out
}

/// What ranking the candidate types of a report's lines needs, built once per report: the
/// overview ranks with it, and `--type` binds each line where it places the type (one
/// mechanism, so that the two cannot disagree).
struct Ranking<'t, 'a> {
    types: &'t Types<'a>,
    protos: Prototypes,
    rel: Relations<'t, 'a>,
    scorers: HashMap<TypeId, Scorer>,
    embedders: Option<Embedders>,
    /// The report's lines by address (address, index), for neighbours.
    by_address: Vec<(u64, usize)>,
    cls: u64,
    /// Where the earlier reports of the text bound each function's rows, by function name.
    carried: HashMap<String, Vec<CarriedRow>>,
}

impl<'t, 'a> Ranking<'t, 'a> {
    fn new(profile: &Profile, types: &'t Types<'a>, input: &BindInput) -> Self {
        let mut by_address: Vec<(u64, usize)> = profile
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.address, i))
            .collect();
        by_address.sort_unstable();
        let mut protos = Prototypes::new(types);
        protos.add_named(types, &input.prototypes);
        Ranking {
            types,
            protos,
            rel: Relations::new(types),
            scorers: HashMap::new(),
            embedders: None,
            by_address,
            cls: profile.cacheline_size.max(1),
            carried: carry_from(&input.earlier, profile, types, input),
        }
    }

    /// One line's candidate types, best first, every one of them (the overview shows the
    /// first few): the types its functions' prototypes name, ranked by prototypes, offsets
    /// and neighbours, each with its placement row by row; structure-only ranking over every
    /// type when the prototypes say nothing and `structural` allows it.
    fn line(
        &mut self,
        profile: &Profile,
        line: &LineProfile,
        input: &BindInput,
        structural: bool,
        focus: Option<&[String]>,
    ) -> LineOverview {
        let Ranking {
            types,
            protos,
            rel,
            scorers,
            embedders,
            by_address,
            cls,
            carried,
        } = self;
        let (types, cls, by_address) = (*types, *cls, &by_address[..]);
        let mut accesses = line_accesses(line, protos);
        with_decoded_sizes(&mut accesses, line.address, &input.decoded);
        let mut by_fn: BTreeMap<String, f64> = BTreeMap::new();
        for (_, a) in &accesses {
            for s in &a.symbols {
                *by_fn.entry(function_name(s).to_string()).or_default() += a.weight;
            }
        }
        let mut functions: Vec<(String, f64)> = by_fn.into_iter().collect();
        functions.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut view = LineOverview {
            address: line.address,
            rank: line.rank,
            domain: line_domain(line),
            functions: functions.into_iter().map(|f| f.0).collect(),
            candidates: Vec::new(),
            note: None,
        };
        if accesses.is_empty() {
            view.note = Some("its rows give no offsets: members cannot be named".into());
            return view;
        }
        if let (Some(td), Some(ld)) = (input.domain, view.domain)
            && td != ld
        {
            let objs = objects_of(line);
            view.note = Some(format!(
                "{} data{}: the {} types at hand do not describe it{}",
                ld.label(),
                if objs.is_empty() {
                    String::new()
                } else {
                    format!(" (code in {objs})")
                },
                td.label(),
                if ld == Domain::User {
                    "; give --dwarf with the program's binary"
                } else {
                    ""
                }
            ));
            return view;
        }
        // Candidate types: every struct the rows' functions' prototypes point to, and what
        // those reach (embedded, one pointer away, embedded there), nearest first.
        let mut ids: Vec<TypeId> = Vec::new();
        let mut via: HashMap<TypeId, Reached> = HashMap::new();
        for (i, _) in &accesses {
            let Some(sym) = line.accesses[*i]
                .code
                .as_ref()
                .and_then(|c| c.symbol.clone())
            else {
                continue;
            };
            for r in protos.of(&sym).unwrap_or(&[]) {
                for x in rel.reached(r) {
                    if !ids.contains(&x.id) {
                        ids.push(x.id);
                    }
                    if via.get(&x.id).is_none_or(|v| v.reach < x.reach) {
                        via.insert(x.id, x.clone());
                    }
                }
            }
        }
        ids.sort_by_key(|id| std::cmp::Reverse(via.get(id).map(|v| v.reach)));
        let only: Vec<LineAccess> = accesses.iter().map(|(_, a)| a.clone()).collect();
        let span = only.iter().map(|a| a.offset).max().unwrap_or(0)
            - only.iter().map(|a| a.offset).min().unwrap_or(0);
        let mut cands: Vec<TypeCandidate> = Vec::new();
        // Where each ranked type put the line, for the structs embedded in it.
        let mut placed: HashMap<TypeId, Vec<i64>> = HashMap::new();
        // Focused on one struct (`--type`): it, and the structs it is placed in when embedded
        // in one a prototype takes; its candidate is the same as among all.
        let kept: Option<Vec<TypeId>> = focus.map(|names| {
            let mut kept: Vec<TypeId> = ids
                .iter()
                .copied()
                .filter(|id| type_names(types, *id).iter().any(|n| names.contains(n)))
                .collect();
            let mut k = 0;
            while k < kept.len() && kept.len() < 8 {
                if let Some(v) = via.get(&kept[k])
                    && v.reach == Reach::Embedded
                    && v.parent != kept[k]
                    && !kept.contains(&v.parent)
                {
                    kept.push(v.parent);
                }
                k += 1;
            }
            kept
        });
        for &id in &ids {
            if kept.as_ref().is_some_and(|k| !k.contains(&id)) {
                continue;
            }
            let size = types.size_of(id);
            if size <= span {
                continue;
            }
            let names = type_names(types, id);
            let name = names.last().cloned().unwrap_or_default();
            let proto = prototype_evidence(rel, protos, line, &accesses, id, &names, input.domain);
            let scorer = scorers.entry(id).or_insert_with(|| Scorer::new(types, id));
            // Embedded in a prototype's struct: the line is in it only where the parent
            // object's placement puts it inside the member's bytes; ranked at that place.
            let embedded_in = via.get(&id).and_then(|v| {
                let o = v.offset_in_parent?;
                (v.reach == Reach::Embedded && v.parent != id).then_some((v, o))
            });
            let fixed = match embedded_in {
                Some((v, o)) => {
                    let Some(starts) = placed.get(&v.parent) else {
                        continue;
                    };
                    let Some((k, at)) = starts
                        .iter()
                        .map(|start| start - o as i64)
                        .enumerate()
                        .find(|(_, at)| *at < size as i64 && at + cls as i64 > 0)
                    else {
                        continue;
                    };
                    Some((k == 0, at))
                }
                None => None,
            };
            let at_parents_choice = fixed.is_none_or(|f| f.0);
            let fixed = fixed.map(|f| f.1);
            let reach: Vec<Reachable> = accesses
                .iter()
                .map(|(_, a)| match a.symbols.first() {
                    Some(sym) => reachable(rel, protos, id, &names, sym, input.domain),
                    None => Reachable::Unknown,
                })
                .collect();
            if let Some(mut c) = rank_one(
                profile,
                types,
                id,
                &name,
                scorer,
                line,
                (&accesses, &reach),
                proto,
                input,
                cls,
                by_address,
                (fixed, 0.0),
            ) {
                if let Some((v, o)) = embedded_in {
                    let parent = v.path.split('.').next().unwrap_or("?");
                    // Only another placement of the parent, about as good as its chosen
                    // one, holds the line in the member: it weighs as two steps away.
                    if !at_parents_choice {
                        c.score -= (Reach::Embedded.weight() - Reach::Far.weight())
                            * c.prototypes.embedded;
                        c.reasons.push(format!(
                            "only at another placement of the {parent} than its best"
                        ));
                    }
                    let at = c.line_start + o as i64;
                    c.reasons.push(format!(
                        "embedded as {} at byte {o}: this line is bytes {at}..{} of the {parent}",
                        v.path,
                        at + cls as i64 - 1
                    ));
                }
                // The chosen placement first, then the others about as good.
                let mut starts = vec![c.line_start];
                if let Some(scorer) = scorers.get(&id) {
                    let all = scorer.candidates(types, &only, cls);
                    let top = all.first().map(|x| x.score()).unwrap_or(0.0);
                    starts.extend(
                        all.iter()
                            .take_while(|x| top - x.score() < 0.05)
                            .map(|x| x.line_start)
                            .filter(|s| *s != c.line_start),
                    );
                }
                placed.insert(id, starts);
                cands.push(c);
            }
        }
        if !ids.is_empty() {
            for c in joint_candidates(
                types, embedders, rel, protos, line, &accesses, input, cls, focus,
            ) {
                match cands.iter_mut().find(|x| x.type_name == c.type_name) {
                    Some(x) if x.score >= c.score => {}
                    Some(x) => *x = c,
                    None => cands.push(c),
                }
            }
        }
        if !carried.is_empty() {
            let ctx = CarryContext {
                profile,
                types,
                carried,
                input,
                cls,
                by_address,
                focus,
            };
            for c in carried_candidates(&ctx, rel, protos, scorers, line, &accesses) {
                match cands.iter_mut().find(|x| x.type_name == c.type_name) {
                    Some(x) if x.score >= c.score => {}
                    Some(x) => *x = c,
                    None => cands.push(c),
                }
            }
        }
        if ids.is_empty() {
            if structural {
                for c in attribute::rank_types(types, &only, cls, SHOWN) {
                    cands.push(TypeCandidate {
                        type_name: c.type_name.clone(),
                        line_start: c.line_start,
                        binding: How::Inferred,
                        score: c.score(),
                        fields: c.fields.clone(),
                        prototypes: PrototypeEvidence::default(),
                        fit: c.fit,
                        neighbours: Vec::new(),
                        reasons: vec![format!(
                            "offsets only: {:.0}% of the weight on member starts; many structs fit a few offsets",
                            c.fit * 100.0
                        )],
                        rows: rows_at(&accesses, &[], c.line_start, &c.fields, &[]),
                    });
                }
            }
            view.note = Some(if structural {
                "no function in its rows has a known prototype: ranked by offsets alone".into()
            } else {
                "no function in its rows has a known prototype; select it with --line or --address to rank every struct by offsets alone".into()
            });
        }
        cands.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.type_name.cmp(&b.type_name))
        });
        view.candidates = cands;
        view
    }
}

/// One row of a line of an earlier report of the text, as that report's binding placed it.
#[derive(Clone, Debug)]
struct CarriedRow {
    type_name: String,
    struct_offset: i64,
    member: String,
    /// The row's share of its function's weight in that struct (a function whose rows lay on
    /// two members there splits its vote between them).
    weight: f64,
    /// `report 1, line 0x…`.
    from: String,
}

/// What a line's placement gains per share of its known weight that lands where an earlier
/// report of the same text put the same functions' rows in the struct (same struct byte):
/// the step from "embedded in what the function takes" to "the struct itself" (¼: the
/// earlier report showed these functions working on this struct, not on any other that
/// embeds the member's type), and an agreeing neighbour's ¼ (evidence of the same object
/// from elsewhere in the text).
pub const CARRIED: f64 = 0.5;

/// The least share of a line's known weight an earlier report's placement must explain to
/// be weighed at all.
const MIN_CARRIED: f64 = 0.5;

/// Where the reports before this one in its text (`earlier`, in order) bound each function's
/// rows: each earlier report is ranked once, in order, as the overview ranks it with what the
/// ones before it carried (so a text of n reports ranks n-1 of them, not 2^n), on the lines
/// that share a function with `current`; a line's first candidate counts when it leads the
/// second (a tie names no object).
fn carry_from(
    earlier: &[Profile],
    current: &Profile,
    types: &Types<'_>,
    input: &BindInput,
) -> HashMap<String, Vec<CarriedRow>> {
    let mut out: HashMap<String, Vec<CarriedRow>> = HashMap::new();
    if earlier.is_empty() {
        return out;
    }
    let fn_of = |a: &crate::profile::Access| {
        a.code
            .as_ref()
            .and_then(|c| c.symbol.as_deref())
            .map(|s| function_name(s).to_string())
    };
    let wanted: BTreeSet<String> = current
        .lines
        .iter()
        .flat_map(|l| l.accesses.iter().filter_map(fn_of))
        .collect();
    if wanted.is_empty() {
        return out;
    }
    let none = Prototypes::default();
    let sub = BindInput {
        domain: input.domain,
        prototypes: input.prototypes.clone(),
        ..Default::default()
    };
    for (j, e) in earlier.iter().enumerate() {
        let addresses: Vec<u64> = e
            .lines
            .iter()
            .filter(|l| {
                l.accesses
                    .iter()
                    .any(|a| fn_of(a).is_some_and(|f| wanted.contains(&f)))
            })
            .map(|l| l.address)
            .collect();
        if addresses.is_empty() {
            continue;
        }
        let selection = Selection {
            ranks: Vec::new(),
            addresses,
        };
        let mut ranking = Ranking::new(e, types, &sub);
        ranking.carried = normalised(out.clone());
        let mut found: Vec<(String, CarriedRow)> = Vec::new();
        for (pos, line) in e.lines.iter().enumerate() {
            if !selection.selects(pos, line, ranking.cls) {
                continue;
            }
            let view = ranking.line(e, line, &sub, false, None);
            let Some(first) = view.candidates.first() else {
                continue;
            };
            if view
                .candidates
                .get(1)
                .is_some_and(|second| second.score >= first.score - 1e-9)
            {
                continue;
            }
            let weights: HashMap<usize, f64> = line_accesses(line, &none)
                .into_iter()
                .map(|(i, a)| (i, a.weight))
                .collect();
            for r in &first.rows {
                let Some(f) = &r.function else { continue };
                found.push((
                    f.clone(),
                    CarriedRow {
                        type_name: first.type_name.clone(),
                        struct_offset: r.struct_offset,
                        member: r.member.clone(),
                        weight: weights.get(&r.row).copied().unwrap_or(0.0),
                        from: format!("report {}, line {:#x}", j + 1, line.address),
                    },
                ));
            }
        }
        for (f, r) in found {
            out.entry(f).or_default().push(r);
        }
    }
    normalised(out)
}

/// Each function's carried weight per struct made to sum to one (rows without weight share
/// alike).
fn normalised(mut carried: HashMap<String, Vec<CarriedRow>>) -> HashMap<String, Vec<CarriedRow>> {
    for rows in carried.values_mut() {
        let mut total: HashMap<String, (f64, usize)> = HashMap::new();
        for r in rows.iter() {
            let t = total.entry(r.type_name.clone()).or_default();
            t.0 += r.weight;
            t.1 += 1;
        }
        for r in rows.iter_mut() {
            let (w, n) = total.get(&r.type_name).copied().unwrap_or((0.0, 1));
            r.weight = if w > 0.0 {
                r.weight / w
            } else {
                1.0 / n as f64
            };
        }
    }
    carried
}

/// What [`carried_candidates`] reads besides the line.
struct CarryContext<'c, 't, 'a> {
    profile: &'c Profile,
    types: &'t Types<'a>,
    carried: &'c HashMap<String, Vec<CarriedRow>>,
    input: &'c BindInput,
    cls: u64,
    by_address: &'c [(u64, usize)],
    focus: Option<&'c [String]>,
}

/// The structs an earlier report of the text bound this line's functions in, each placed
/// where the most of the line's weight lands on the struct bytes that report put the same
/// functions' rows on (a mail's "With this change:" line of `rw_semaphore` functions, where
/// its "Baseline:" placed them in `address_space.i_mmap_rwsem`), ranked as any placement is
/// ([`rank_one`] at that base) and credited [`CARRIED`] per share of the weight so placed.
fn carried_candidates(
    ctx: &CarryContext<'_, '_, '_>,
    rel: &mut Relations<'_, '_>,
    protos: &Prototypes,
    scorers: &mut HashMap<TypeId, Scorer>,
    line: &LineProfile,
    accesses: &[(usize, LineAccess)],
) -> Vec<TypeCandidate> {
    let types = ctx.types;
    let known: f64 = accesses.iter().map(|(_, a)| a.weight).sum();
    if known <= 0.0 {
        return Vec::new();
    }
    // Votes for (struct, struct byte of the line's start).
    let mut votes: BTreeMap<(String, i64), f64> = BTreeMap::new();
    for (_, a) in accesses {
        let Some(f) = a.symbols.first().map(|s| function_name(s)) else {
            continue;
        };
        for r in ctx.carried.get(f).into_iter().flatten() {
            let at = r.struct_offset - a.offset as i64;
            *votes.entry((r.type_name.clone(), at)).or_default() += a.weight * r.weight;
        }
    }
    let mut best: BTreeMap<String, (i64, f64)> = BTreeMap::new();
    for ((name, at), v) in votes {
        if best.get(&name).is_none_or(|b| v > b.1 + 1e-12) {
            best.insert(name, (at, v));
        }
    }
    let mut out = Vec::new();
    for (type_name, (at, v)) in best {
        let share = v / known;
        if share < MIN_CARRIED {
            continue;
        }
        let Some(&id) = types.find_composites(&type_name).first() else {
            continue;
        };
        let names = type_names(types, id);
        if ctx
            .focus
            .is_some_and(|f| !names.iter().any(|n| f.contains(n)))
        {
            continue;
        }
        let name = names.last().cloned().unwrap_or_default();
        let proto = prototype_evidence(rel, protos, line, accesses, id, &names, ctx.input.domain);
        let reach: Vec<Reachable> = accesses
            .iter()
            .map(|(_, a)| match a.symbols.first() {
                Some(sym) => reachable(rel, protos, id, &names, sym, ctx.input.domain),
                None => Reachable::Unknown,
            })
            .collect();
        let scorer = scorers.entry(id).or_insert_with(|| Scorer::new(types, id));
        let Some(mut c) = rank_one(
            ctx.profile,
            types,
            id,
            &name,
            scorer,
            line,
            (accesses, &reach),
            proto,
            ctx.input,
            ctx.cls,
            ctx.by_address,
            (Some(at), share),
        ) else {
            continue;
        };
        // Which rows land where the earlier report put their function, and what it said.
        let mut said: Vec<String> = Vec::new();
        for (row, (_, a)) in c.rows.iter_mut().zip(accesses) {
            let Some(f) = a.symbols.first().map(|s| function_name(s)) else {
                continue;
            };
            if let Some(r) = ctx
                .carried
                .get(f)
                .into_iter()
                .flatten()
                .find(|r| r.type_name == type_name && r.struct_offset == at + a.offset as i64)
            {
                row.placed_by = PlacedBy::EarlierReport;
                row.why = format!("{}: {f} on {type_name}.{}", r.from, r.member);
                let words = format!("{f} on {} ({})", r.member, r.from);
                if !said.contains(&words) {
                    said.push(words);
                }
            }
        }
        c.reasons.insert(
            0,
            format!(
                "earlier report of this text: {:.0}% of the known weight lands where it placed the same functions' rows in struct {type_name} ({}); reports of one text share their objects",
                share * 100.0,
                said.iter().take(4).cloned().collect::<Vec<_>>().join("; ")
            ),
        );
        out.push(c);
    }
    out
}

/// The alignment kmalloc gives an object of `size` bytes: its power-of-two size class.
fn kmalloc_class(size: u64) -> u64 {
    size.max(1).next_power_of_two()
}

/// Whether the object a line belongs to, placed with the line at struct byte `line_start`,
/// starts on the boundary of its kmalloc size class: for structs of more than a line (every
/// line starts on a line boundary, which says nothing) and at most a page, where that
/// boundary is wider than the struct and at most one placement of a line can start the
/// object on it, so that placement is evidence rather than a coincidence among many.
fn allocator_aligned(address: u64, line_start: i64, size: u64) -> bool {
    if size <= 64 || size > 4096 {
        return false;
    }
    let class = kmalloc_class(size);
    let base = address as i128 - line_start as i128;
    base > 0 && base % class as i128 == 0
}

#[allow(clippy::too_many_arguments)]
fn rank_one(
    profile: &Profile,
    types: &Types<'_>,
    id: TypeId,
    name: &str,
    scorer: &Scorer,
    line: &LineProfile,
    (accesses, reach): (&[(usize, LineAccess)], &[Reachable]),
    proto: PrototypeEvidence,
    input: &BindInput,
    cls: u64,
    by_address: &[(u64, usize)],
    (fixed, carried): (Option<i64>, f64),
) -> Option<TypeCandidate> {
    let only: Vec<LineAccess> = accesses.iter().map(|(_, a)| a.clone()).collect();
    let exact = decoded_start(scorer, types, id, &input.decoded, line.address, accesses);
    let mut best = None;
    let mut how = How::Inferred;
    let mut reasons = Vec::new();
    for (start, why, _, _) in &exact {
        if let Some(c) = scorer.at(types, &only, *start, cls)
            && c.fit >= MIN_FIT
        {
            best = Some(c);
            how = How::Exact;
            reasons.push(format!("decoded: {why}"));
            break;
        }
    }
    // Placements about as good as the best, the decoded one alone when there is one; of
    // those, the one most neighbouring lines of the report agree with.
    let pool: Vec<attribute::Candidate> = match best {
        Some(b) => vec![b],
        None if fixed.is_some() => {
            let c = scorer.at(types, &only, fixed?, cls)?;
            if c.fit < MIN_FIT {
                return None;
            }
            vec![c]
        }
        None => {
            let all = scorer.candidates(types, &only, cls);
            let top = all.first()?.score();
            let size = types.size_of(id);
            let about: Vec<attribute::Candidate> = all
                .into_iter()
                .take_while(|c| top - c.score() < 0.05)
                .collect();
            let mut pool: Vec<attribute::Candidate> = about.iter().take(32).cloned().collect();
            if !pool
                .iter()
                .any(|c| allocator_aligned(line.address, c.line_start, size))
                && let Some(c) = about
                    .iter()
                    .find(|c| allocator_aligned(line.address, c.line_start, size))
            {
                pool.push(c.clone());
            }
            pool
        }
    };
    let size = types.size_of(id) as i64;
    let protos_none = Prototypes::default();
    // Only lines within the struct's size of this one can be the same object.
    let within = size as u64 + cls;
    let lo = by_address.partition_point(|&(a, _)| a < line.address.saturating_sub(within));
    let hi = by_address.partition_point(|&(a, _)| a <= line.address.saturating_add(within));
    let nearby: Vec<&LineProfile> = by_address[lo..hi]
        .iter()
        .map(|&(_, i)| &profile.lines[i])
        .collect();
    // Of placements about as good, with as many neighbours and as much of the written weight
    // on atomics: the one that starts the object where the allocator would put it, when one
    // does (a kmalloc'd object of 2 KiB starts on a 2 KiB boundary; the offsets' small
    // preferences, such as shallower members, say less).
    let own_weight: f64 = accesses.iter().map(|(_, a)| a.weight).sum();
    let mut evaluated = Vec::new();
    for c in pool {
        let mut neighbours = Vec::new();
        let mut near_lines = 0;
        // The object's fit at this base: every nearby line's offsets score where the base
        // puts it, by weight (lines that do not fit count as nothing).
        let (mut value, mut weight) = (own_weight * c.score(), own_weight);
        for other in nearby.iter().copied() {
            if other.address == line.address {
                continue;
            }
            let delta = other.address as i64 - line.address as i64;
            let start = c.line_start + delta;
            if start <= -(cls as i64) || start >= size {
                continue;
            }
            if line_domain(other) != line_domain(line) {
                continue;
            }
            near_lines += 1;
            let acc: Vec<LineAccess> = line_accesses(other, &protos_none)
                .into_iter()
                .map(|(_, a)| a)
                .collect();
            let w: f64 = acc.iter().map(|a| a.weight).sum();
            weight += w;
            if let Some(x) = scorer
                .at(types, &acc, start, cls)
                .filter(|x| x.fit >= MIN_FIT)
                && !acc.is_empty()
            {
                neighbours.push(other.address);
                value += w * x.score();
            }
        }
        evaluated.push((c, neighbours, near_lines, value / weight.max(1e-12)));
    }
    // The first with the most neighbours (of those, where neighbours there are, the base that
    // fits the whole object best: the lines of one object are placed jointly, and each of
    // them finds the same base); or one as neighboured and as good that starts the object on
    // a kmalloc boundary and puts as much of the written weight on atomics.
    let most = evaluated.iter().map(|e| e.1.len()).max()?;
    let mut first = evaluated.iter().position(|e| e.1.len() == most)?;
    if most > 0 {
        for (k, e) in evaluated.iter().enumerate() {
            if e.1.len() == most && e.3 > evaluated[first].3 + 1e-9 {
                first = k;
            }
        }
    }
    let joint = evaluated[first].3;
    let writes = |c: &attribute::Candidate| {
        (100.0 * writes_in_place(scorer, accesses, reach, c.line_start)).round() as i64
    };
    let aligned_one =
        (!allocator_aligned(line.address, evaluated[first].0.line_start, size as u64))
            .then(|| {
                let w = writes(&evaluated[first].0);
                evaluated.iter().position(|e| {
                    e.1.len() == most
                        && (most == 0 || e.3 >= joint - 1e-9)
                        && allocator_aligned(line.address, e.0.line_start, size as u64)
                        && writes(&e.0) >= w
                })
            })
            .flatten();
    let (best, neighbours, near_lines, _) = evaluated.swap_remove(aligned_one.unwrap_or(first));
    if aligned_one.is_some() {
        reasons.push(format!(
            "of the placements that fit about as well, the one that starts the object at a {}-byte boundary, where kmalloc puts an object of {size} bytes",
            kmalloc_class(size as u64)
        ));
    }
    let neighbour_share = if near_lines > 0 {
        neighbours.len() as f64 / near_lines as f64
    } else {
        0.0
    };
    if proto.reach() > 0.0 {
        let mut parts = vec![format!(
            "{:.0}% of the known weight by functions taking it",
            proto.direct * 100.0
        )];
        for (share, what) in [
            (proto.embedded, "embedded in or embedding what they take"),
            (proto.near, "one pointer away"),
            (proto.far, "embedded one pointer away"),
        ] {
            if share > 0.0 {
                parts.push(format!("{:.0}% {what}", share * 100.0));
            }
        }
        let mut text = format!("prototypes: {}", parts.join(", "));
        if !proto.functions.is_empty() {
            text.push_str(&format!(" ({})", proto.functions.join(", ")));
        }
        if !proto.paths.is_empty() {
            text.push_str(&format!(
                "; reached as {}",
                proto
                    .paths
                    .iter()
                    .take(4)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        reasons.push(text);
    }
    reasons.push(format!(
        "offsets: {:.0}% of the weight on member starts at bytes {}..{}",
        best.fit * 100.0,
        best.line_start,
        best.line_start + cls as i64 - 1
    ));
    if best.contained > 0.0 {
        reasons.push(format!(
            "{:.0}% inside embedded structs their functions take",
            best.contained * 100.0
        ));
    }
    if !neighbours.is_empty() {
        reasons.push(format!(
            "neighbours: {} fit the same object",
            neighbours
                .iter()
                .map(|a| format!("{a:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    } else if near_lines > 0 {
        reasons.push(format!(
            "neighbours: none of {near_lines} nearby line(s) fits the same object"
        ));
    }
    let rows = rows_by_prototype(accesses, reach, best.line_start, proto.known);
    if rows.against > 0.0 {
        reasons.push(format!(
            "{:.0}% of the known weight on members its functions' prototypes cannot reach",
            rows.against * 100.0
        ));
    }
    // A struct whose rows all lie inside one member whose type the functions take says no
    // more than that type does (task_struct for functions taking a sched_entity, on bytes
    // of `se`): its rows count as one step further away than the member's own type.
    // An earlier report of the text that put these functions' rows in this struct says more
    // than the member's type: there the rows were this struct's.
    let embedding_only = rows.inside_one_member.as_ref().filter(|_| carried <= 0.0);
    if let Some(member) = embedding_only {
        reasons.push(format!(
            "every row lies inside {member}, whose type its functions take: the fit is the member's, not this struct's"
        ));
    }
    let strength = placed_strength(accesses, reach, best.line_start)
        - embedding_only.map_or(0.0, |_| {
            (Reach::Embedded.weight() - Reach::Near.weight()) * rows.by_prototype
        });
    let writes = writes_in_place(scorer, accesses, reach, best.line_start);
    if writes > 0.0 {
        reasons.push(format!(
            "writes: {:.0}% of the written weight on atomics, by functions reaching it",
            writes * 100.0
        ));
    }
    let score =
        strength + best.fit + WRITES_IN_PLACE * writes + 0.25 * neighbour_share + CARRIED * carried;
    let decoded_rows: Vec<(usize, String)> = exact
        .iter()
        .filter(|e| how == How::Exact && e.0 == best.line_start)
        .map(|e| (e.3, e.1.clone()))
        .collect();
    let rows = rows_at(
        accesses,
        reach,
        best.line_start,
        &best.fields,
        &decoded_rows,
    );
    Some(TypeCandidate {
        type_name: name.to_string(),
        line_start: best.line_start,
        binding: how,
        score,
        fields: best.fields.clone(),
        prototypes: proto,
        fit: best.fit,
        neighbours,
        reasons,
        rows,
    })
}

/// Structs that hold each struct by value at any depth (`address_space` and `inode` for
/// `rw_semaphore`), built once per overview when a line's functions take several structs.
struct Embedders {
    by_part: HashMap<TypeId, Vec<TypeId>>,
}

impl Embedders {
    fn new(types: &Types<'_>) -> Self {
        let mut by_part: HashMap<TypeId, Vec<TypeId>> = HashMap::new();
        for id in types.composites() {
            if types.get(id).name.is_empty() {
                continue;
            }
            let mut seen = BTreeSet::new();
            for (part, _, _) in embedded_parts(types, id) {
                if part != id && seen.insert(part) {
                    by_part.entry(part).or_default().push(id);
                }
            }
        }
        Embedders { by_part }
    }
}

/// The rows of one line whose functions take one struct, placed together inside one member
/// of that type in a struct that embeds it.
struct Piece {
    /// The struct the functions take (`rw_semaphore`).
    ty: TypeId,
    /// Indices into the line's accesses.
    rows: Vec<usize>,
    /// The lowest line offset among them.
    anchor: u64,
    /// Byte of the taken struct at which the line starts, for these rows.
    shift: i64,
    /// Members of that type in the embedding struct: (offset, path).
    instances: Vec<(u64, String)>,
}

/// How many structs embedding several of a line's taken types are weighed per line, smallest
/// first (structs that embed those in turn, an inode for its address_space, come later).
const JOINT_CANDIDATES: usize = 48;

/// What a joint placement loses per line its pieces lie further apart than the report's line
/// held them: a layout that moved members a line apart is likelier than one that moved them
/// ten, and this breaks ties between structs that explain the rows alike.
const JOINT_SPREAD: f64 = 0.01;

/// Candidates that hold the structs several of a line's functions take, each by value (one
/// `address_space` holds the `rw_semaphore` `down_write` takes and the `rb_root_cached`
/// `vma_interval_tree_remove` takes). Their rows are placed one by one by prototype: the
/// rows of the functions taking one type land together inside a member of that type, at
/// the place within it that fits their offsets, so members the report's kernel had side by
/// side may lie apart in this layout (a layout changes between kernels), in the same order.
/// Of the members of each type, the ones keeping the report's order and lying nearest
/// together. Score: the share of the known weight so placed, plus the offsets' fit and the
/// written weight on atomics and locks, as [`rank_one`] scores a placement of the whole line;
/// a struct whose chosen members all lie inside one member of its own (`inode.i_data`) is
/// left to that member's type.
#[allow(clippy::too_many_arguments)]
fn joint_candidates(
    types: &Types<'_>,
    embedders: &mut Option<Embedders>,
    rel: &mut Relations<'_, '_>,
    protos: &Prototypes,
    line: &LineProfile,
    accesses: &[(usize, LineAccess)],
    input: &BindInput,
    cls: u64,
    focus: Option<&[String]>,
) -> Vec<TypeCandidate> {
    let refs: Vec<Option<&[TypeRef]>> = accesses
        .iter()
        .map(|(_, a)| {
            a.symbols
                .first()
                .and_then(|s| protos.of(s))
                .filter(|r| !(r.is_empty() && input.domain == Some(Domain::User)))
        })
        .collect();
    let mut taken: Vec<TypeId> = Vec::new();
    for r in refs.iter().flatten().copied().flatten() {
        if !taken.contains(&r.id) {
            taken.push(r.id);
        }
    }
    if taken.len() < 2 {
        return Vec::new();
    }
    let embedders = embedders.get_or_insert_with(|| Embedders::new(types));
    let total: f64 = accesses
        .iter()
        .map(|(_, a)| a.weight)
        .sum::<f64>()
        .max(1e-12);
    let known: f64 = accesses
        .iter()
        .zip(&refs)
        .filter(|(_, r)| r.is_some())
        .map(|((_, a), _)| a.weight)
        .sum::<f64>()
        .max(1e-12);
    // Structs embedding at least two of the taken types (not taken themselves), by the
    // weight whose functions take a type they embed, then smallest first.
    let mut holders: BTreeMap<TypeId, BTreeSet<TypeId>> = BTreeMap::new();
    for t in &taken {
        for s in embedders.by_part.get(t).into_iter().flatten() {
            if !taken.contains(s) {
                holders.entry(*s).or_default().insert(*t);
            }
        }
    }
    let mut ranked: Vec<(TypeId, f64)> = holders
        .into_iter()
        .filter(|(_, parts)| parts.len() >= 2)
        .map(|(s, parts)| {
            let w: f64 = accesses
                .iter()
                .zip(&refs)
                .filter(|(_, r)| r.is_some_and(|r| r.iter().any(|x| parts.contains(&x.id))))
                .map(|((_, a), _)| a.weight)
                .sum();
            (s, w)
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(types.size_of(a.0).cmp(&types.size_of(b.0)))
            .then(a.0.cmp(&b.0))
    });
    ranked.truncate(JOINT_CANDIDATES);
    // Focused on one struct (`--type`): only it is placed.
    if let Some(names) = focus {
        ranked.retain(|(s, _)| type_names(types, *s).iter().any(|n| names.contains(n)));
    }
    let mut part_scorers: HashMap<TypeId, Scorer> = HashMap::new();
    let mut out = Vec::new();
    'holder: for (s, _) in ranked {
        let names = type_names(types, s);
        let name = names.last().cloned().unwrap_or_default();
        // Each row to the first type its function takes that the struct embeds.
        let mut pieces: Vec<Piece> = Vec::new();
        let mut instances_of: HashMap<TypeId, Vec<(u64, String)>> = HashMap::new();
        for (j, r) in refs.iter().enumerate() {
            let Some(r) = r else { continue };
            for t in r.iter() {
                let inst = instances_of.entry(t.id).or_insert_with(|| {
                    let esize = types.size_of(t.id).max(1);
                    let mut v = Vec::new();
                    for (lo, hi, path) in embedded_ranges(types, s, &t.names) {
                        match path.strip_suffix("[]") {
                            Some(base) => {
                                for k in 0..((hi - lo) / esize).min(128) {
                                    v.push((lo + k * esize, format!("{base}[{k}]")));
                                }
                            }
                            None => v.push((lo, path)),
                        }
                    }
                    v
                });
                if inst.is_empty() {
                    continue;
                }
                let off = accesses[j].1.offset;
                match pieces.iter_mut().find(|p| p.ty == t.id) {
                    Some(p) => {
                        p.rows.push(j);
                        p.anchor = p.anchor.min(off);
                    }
                    None => pieces.push(Piece {
                        ty: t.id,
                        rows: vec![j],
                        anchor: off,
                        shift: 0,
                        instances: inst.clone(),
                    }),
                }
                break;
            }
        }
        if pieces.len() < 2 {
            continue;
        }
        // Where in its type each piece's rows fit best: the offsets' fit, then the written
        // weight on atomics and locks, then the lowest row nearest the type's start.
        for p in &mut pieces {
            let rows: Vec<LineAccess> = p.rows.iter().map(|&j| accesses[j].1.clone()).collect();
            let size = types.size_of(p.ty) as i64;
            let lo = rows.iter().map(|a| a.offset).min().unwrap_or(0) as i64;
            let hi = rows.iter().map(|a| a.offset).max().unwrap_or(0) as i64;
            let scorer = part_scorers
                .entry(p.ty)
                .or_insert_with(|| Scorer::new(types, p.ty));
            let mut best: Option<(f64, f64, i64)> = None;
            for shift in -lo..size - hi {
                let Some(c) = scorer.at(types, &rows, shift, cls) else {
                    continue;
                };
                let better = best.is_none_or(|(f, w, b)| {
                    (c.fit, c.writes_on_atomics, -(shift + lo).abs())
                        .partial_cmp(&(f, w, -(b + lo).abs()))
                        .is_some_and(|o| o.is_gt())
                });
                if better {
                    best = Some((c.fit, c.writes_on_atomics, shift));
                }
            }
            let Some((_, _, shift)) = best else {
                continue 'holder;
            };
            p.shift = shift;
        }
        // One member per piece: the report's order kept, then the least spread.
        pieces.sort_by_key(|p| p.anchor);
        let combos: usize = pieces
            .iter()
            .map(|p| p.instances.len())
            .try_fold(1usize, |n, k| n.checked_mul(k))
            .unwrap_or(usize::MAX);
        if combos > 4096 {
            continue;
        }
        let mut chosen: Option<(i64, Vec<usize>)> = None;
        let mut pick = vec![0usize; pieces.len()];
        'combos: for mut c in 0..combos {
            for (k, p) in pieces.iter().enumerate() {
                pick[k] = c % p.instances.len();
                c /= p.instances.len();
            }
            let starts: Vec<i64> = pieces
                .iter()
                .zip(&pick)
                .map(|(p, &k)| p.instances[k].0 as i64 + p.shift)
                .collect();
            for k in 1..pieces.len() {
                let (a, b) = (&pieces[k - 1], &pieces[k]);
                if b.anchor > a.anchor
                    && starts[k] + (b.anchor as i64) <= starts[k - 1] + a.anchor as i64
                {
                    continue 'combos;
                }
            }
            let spread = starts.iter().max().unwrap() - starts.iter().min().unwrap();
            if chosen.as_ref().is_none_or(|(s, _)| spread < *s) {
                chosen = Some((spread, pick.clone()));
            }
        }
        let Some((spread, pick)) = chosen else {
            continue;
        };
        let paths: Vec<&str> = pieces
            .iter()
            .zip(&pick)
            .map(|(p, &k)| p.instances[k].1.as_str())
            .collect();
        let outer = |p: &str| p.split(['.', '[']).next().unwrap_or(p).to_string();
        if paths
            .iter()
            .all(|p| p.contains(['.', '[']) && outer(p) == outer(paths[0]))
        {
            // All inside one member: the type of that member explains them as well.
            continue;
        }
        let starts: Vec<i64> = pieces
            .iter()
            .zip(&pick)
            .map(|(p, &k)| p.instances[k].0 as i64 + p.shift)
            .collect();
        let scorer = Scorer::new(types, s);
        let mut fields = Vec::with_capacity(accesses.len());
        let (mut fit, mut explained, mut written, mut in_place) = (0.0, 0.0, 0.0, 0.0);
        let mut by_member = 0.0;
        let mut row_words = Vec::new();
        let mut rows = Vec::with_capacity(accesses.len());
        for (j, (i, a)) in accesses.iter().enumerate() {
            let piece = pieces.iter().position(|p| p.rows.contains(&j));
            // A row no taken type explains lies beside a piece, by its offset: the one where
            // it lands best on a member, then the nearest.
            let k = piece.unwrap_or_else(|| {
                let row_fit = |k: usize| {
                    scorer
                        .at(types, std::slice::from_ref(a), starts[k], cls)
                        .map_or(0.0, |c| c.fit)
                };
                (0..pieces.len())
                    .min_by(|&x, &y| {
                        row_fit(y).total_cmp(&row_fit(x)).then(
                            pieces[x]
                                .anchor
                                .abs_diff(a.offset)
                                .cmp(&pieces[y].anchor.abs_diff(a.offset)),
                        )
                    })
                    .unwrap_or(0)
            });
            let x = starts[k] + a.offset as i64;
            let c = scorer.at(types, std::slice::from_ref(a), starts[k], cls);
            fields.push(
                c.as_ref()
                    .and_then(|c| c.fields.first().cloned())
                    .unwrap_or_else(|| "<outside>".into()),
            );
            fit += a.weight * c.as_ref().map_or(0.0, |c| c.fit);
            let w = a.weight * a.store_share;
            written += w;
            let path = &paths[k];
            let function = a
                .symbols
                .first()
                .map(|s| function_name(s).to_string())
                .unwrap_or_default();
            let (placed_by, why) = match piece {
                Some(k) => (
                    PlacedBy::Prototype,
                    format!(
                        "{function} takes struct {}: {name}.{path}",
                        type_names(types, pieces[k].ty)
                            .last()
                            .map(String::as_str)
                            .unwrap_or("?")
                    ),
                ),
                None => {
                    let reach = match a.symbols.first() {
                        Some(sym) => reachable(rel, protos, s, &names, sym, input.domain),
                        None => Reachable::Unknown,
                    };
                    let (p, why) = row_by_prototype(&reach, x);
                    (p, format!("{why}; beside `{path}`"))
                }
            };
            rows.push(RowEvidence {
                row: *i,
                function: a.symbols.first().map(|s| function_name(s).to_string()),
                line_offset: a.offset,
                struct_offset: x,
                member: fields[j].clone(),
                placed_by,
                why,
            });
            if piece.is_some() {
                explained += a.weight;
                by_member += a.weight;
                if x >= 0
                    && scorer
                        .leaf_holding(x as u64)
                        .is_some_and(|l| l.synchronizing)
                {
                    in_place += w;
                }
                row_words.push(format!(
                    "row {i} {function} at {:#x}: {}, {} (through `{path}`)",
                    a.offset,
                    fields[j],
                    PlacedBy::Prototype.label()
                ));
            } else {
                // A function reaching the struct itself (through a pointer, `rq->rd`) may
                // touch any member: its row counts as far as its reach weighs.
                if let Some(sym) = a.symbols.first()
                    && let Reachable::Anywhere(_, reach) =
                        reachable(rel, protos, s, &names, sym, input.domain)
                {
                    explained += a.weight * reach.weight();
                }
                row_words.push(format!(
                    "row {i} {function} at {:#x}: {}, {} (beside `{path}`)",
                    a.offset,
                    fields[j],
                    PlacedBy::OffsetOnly.label()
                ));
            }
        }
        let fit = fit / total;
        let explained = explained / known;
        let writes = if written > 0.0 {
            in_place / written * (written / total / 0.05).min(1.0)
        } else {
            0.0
        };
        let mut reasons = vec![format!(
            "rows placed one by one by prototype: {:.0}% of the known weight on members whose types their functions take{}",
            by_member / known * 100.0,
            if explained > by_member / known + 1e-9 {
                format!(
                    ", {:.0}% by functions reaching the struct itself (weighed by how near)",
                    (explained - by_member / known) * 100.0
                )
            } else {
                String::new()
            }
        )];
        for (p, path) in pieces.iter().zip(&paths) {
            let mut fns: Vec<String> = p
                .rows
                .iter()
                .filter_map(|&j| accesses[j].1.symbols.first())
                .map(|s| function_name(s).to_string())
                .collect();
            fns.dedup();
            fns.sort();
            fns.dedup();
            let (lo, _) = p
                .instances
                .iter()
                .find(|(_, q)| q == path)
                .cloned()
                .unwrap_or_default();
            reasons.push(format!(
                "{} {} struct {}: {name}.{path} at byte {lo}",
                fns.join(", "),
                if fns.len() == 1 { "takes" } else { "take" },
                type_names(types, p.ty)
                    .last()
                    .map(String::as_str)
                    .unwrap_or("?")
            ));
        }
        if spread > 0 {
            reasons.push(format!(
                "members the report's line held together lie up to {spread} bytes further apart here, in the report's order: the layout changed since"
            ));
        }
        reasons.extend(row_words);
        reasons.push(format!(
            "offsets: {:.0}% of the weight on member starts",
            fit * 100.0
        ));
        if writes > 0.0 {
            reasons.push(format!(
                "writes: {:.0}% of the written weight on atomics and locks, by functions taking them",
                writes * 100.0
            ));
        }
        let heaviest = (0..pieces.len())
            .max_by(|&a, &b| {
                let w = |k: usize| -> f64 {
                    pieces[k].rows.iter().map(|&j| accesses[j].1.weight).sum()
                };
                w(a).total_cmp(&w(b))
            })
            .unwrap_or(0);
        let proto = prototype_evidence(rel, protos, line, accesses, s, &names, input.domain);
        out.push(TypeCandidate {
            type_name: name,
            line_start: starts[heaviest],
            binding: How::Inferred,
            // Members kept nearer need less of a layout change: a hundredth per line apart.
            score: explained + fit + WRITES_IN_PLACE * writes
                - JOINT_SPREAD * spread as f64 / cls as f64,
            fields,
            prototypes: proto,
            fit,
            neighbours: Vec::new(),
            reasons,
            rows,
        });
    }
    out
}
