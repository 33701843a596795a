//! Which field a byte offset falls in, down through nested structs, unions and arrays:
//! what an engineer does by eye when a c2c report says "offset 0x8 of that line".

use crate::types::walk::MAX_STEPS as MAX_LEAVES;
use crate::types::{Kind, TypeId, Types};

/// A scalar-ish piece of a struct: a member that is not itself expanded further (pointers,
/// integers, arrays of scalars, bitfields), with its path from the outer struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Dotted path from the outer struct: `rt_bandwidth.rt_runtime_lock`, `pid_links[2].next`.
    pub path: String,
    /// The top-level member this leaf belongs to.
    pub top: String,
    pub offset: u64,
    pub size: u64,
    /// Depth below the top-level member (0 = the member itself).
    pub depth: usize,
    /// The leaf or a struct it sits in is an atomic, a lock or a reference count: the kind
    /// of field many CPUs write on purpose.
    pub synchronizing: bool,
    /// The leaf or a struct it sits in is an atomic or a reference count (not a lock): any
    /// function writes it in place, where a lock word is written by the lock's functions.
    pub atomic: bool,
}

/// Type names of atomics and reference counts.
fn is_atomic(name: &str) -> bool {
    ["atomic", "refcount", "kref"]
        .iter()
        .any(|w| name.contains(w))
}

/// Type names that mark data written concurrently by design.
fn is_synchronizing(name: &str) -> bool {
    ["atomic", "lock", "refcount", "seqcount", "mutex", "kref"]
        .iter()
        .any(|w| name.contains(w))
}

/// How far `leaves` descends into nested types; beyond it a member counts as one leaf.
const MAX_DEPTH: usize = 6;
/// Arrays longer than this are one leaf each, not one per element.
const MAX_ELEMS: u64 = 16;

/// Every leaf of struct/union `id`, in offset order (union alternatives all included).
pub fn leaves(types: &Types<'_>, id: TypeId) -> Vec<Leaf> {
    let mut out = Vec::new();
    walk(types, id, 0, "", "", 0, (false, false), &mut out);
    out.sort_by(|a, b| a.offset.cmp(&b.offset).then(a.depth.cmp(&b.depth)));
    out
}

#[allow(clippy::too_many_arguments)]
fn walk(
    types: &Types<'_>,
    id: TypeId,
    base: u64,
    prefix: &str,
    top: &str,
    depth: usize,
    (synchronizing, atomic): (bool, bool),
    out: &mut Vec<Leaf>,
) {
    let Some(comp) = types.composite(types.resolve(id)) else {
        return;
    };
    for m in &comp.members {
        let offset = base + m.bit_offset / 8;
        let name = if m.name.is_empty() {
            String::new()
        } else if prefix.is_empty() {
            m.name.to_string()
        } else {
            format!("{prefix}.{}", m.name)
        };
        // Anonymous members keep their parent's path.
        let path = if name.is_empty() {
            prefix.to_string()
        } else {
            name
        };
        let top_name = if depth == 0 {
            if m.name.is_empty() { "" } else { m.name }
        } else {
            top
        };
        let sync = synchronizing || is_synchronizing(types.get(m.ty).name);
        let atomic = atomic || is_atomic(types.get(m.ty).name);
        let bitfield = m.is_bitfield();
        member(
            types,
            m.ty,
            offset,
            &path,
            top_name,
            depth,
            bitfield,
            (sync, atomic),
            out,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn member(
    types: &Types<'_>,
    ty: TypeId,
    offset: u64,
    path: &str,
    top: &str,
    depth: usize,
    bitfield: bool,
    (synchronizing, atomic): (bool, bool),
    out: &mut Vec<Leaf>,
) {
    let own = types.get(resolved_name_source(types, ty)).name;
    let sync = synchronizing || is_synchronizing(own);
    let atomic = atomic || is_atomic(own);
    let size = types.size_of(ty);
    let resolved = types.resolve(ty);
    match &types.get(resolved).kind {
        // The shared type-graph bound caps the leaves: a corrupt type holding itself
        // several times by value would otherwise multiply them at every level.
        Kind::Struct(_) | Kind::Union(_)
            if depth < MAX_DEPTH && !bitfield && out.len() < MAX_LEAVES =>
        {
            // A struct's first byte is also a place to name: keep the aggregate itself as a
            // leaf at depth, its members below it.
            out.push(Leaf {
                path: path.to_string(),
                top: top.to_string(),
                offset,
                size,
                depth,
                synchronizing: sync,
                atomic,
            });
            walk(
                types,
                resolved,
                offset,
                path,
                top,
                depth + 1,
                (sync, atomic),
                out,
            );
        }
        Kind::Array { elem, count }
            if *count > 1
                && (*count <= MAX_ELEMS || small_struct_elems(types, *elem, *count))
                && depth < MAX_DEPTH
                && out.len() < MAX_LEAVES =>
        {
            let esize = types.size_of(*elem);
            for i in 0..*count {
                let p = format!("{path}[{i}]");
                member(
                    types,
                    *elem,
                    offset + i * esize,
                    &p,
                    top,
                    depth + 1,
                    false,
                    (sync, atomic),
                    out,
                );
            }
        }
        _ => out.push(Leaf {
            path: path.to_string(),
            top: top.to_string(),
            offset,
            size,
            depth,
            synchronizing: sync,
            atomic,
        }),
    }
}

/// Longer arrays whose elements are structs of at most a line (`cpupri.pri_to_cpu[101]`):
/// a line holds whole elements, and a row lands on an element's member.
fn small_struct_elems(types: &Types<'_>, elem: TypeId, count: u64) -> bool {
    count <= MAX_SMALL_ELEMS
        && matches!(types.get(types.resolve(elem)).kind, Kind::Struct(_))
        && types.size_of(elem) <= 64
}

/// How many elements of an array of small structs are leaves of their own.
const MAX_SMALL_ELEMS: u64 = 128;

/// The type whose name says what a member is: the member's type with qualifiers removed
/// (`atomic_long_t`, `raw_spinlock_t`), typedef names kept.
fn resolved_name_source(types: &Types<'_>, ty: TypeId) -> TypeId {
    types.strip_qualifiers(ty)
}

/// The deepest leaf containing byte `offset`, preferring one that starts exactly there; a
/// zero-size leaf (a cache-line group marker) only when no sized leaf holds the byte.
pub fn leaf_at(leaves: &[Leaf], offset: u64) -> Option<&Leaf> {
    leaves
        .iter()
        .filter(|l| l.offset <= offset && offset < l.offset + l.size.max(1))
        .max_by_key(|l| (l.size > 0, l.depth, l.offset == offset))
}

/// The members an access of `size` bytes (when known) at byte `offset` can be: the
/// innermost leaves holding the byte (several where union alternatives overlap it, in
/// declaration order), narrowed to those the access fits in, then to those of exactly its
/// size starting there; without a size, to those starting there. Which alternative of a
/// union the code used is not in the offset: a 4-byte load of `vlag | vprot` is `vlag`
/// when `vprot` is 8 bytes, and both when nothing says how wide the access was.
pub fn members_at(leaves: &[Leaf], offset: u64, size: Option<u32>) -> Vec<&Leaf> {
    let holds = |l: &&Leaf| l.offset <= offset && offset < l.offset + l.size.max(1);
    let mut holding: Vec<&Leaf> = leaves.iter().filter(|l| l.size > 0).filter(holds).collect();
    if holding.is_empty() {
        holding = leaves.iter().filter(holds).collect();
    }
    // A struct or union is kept as a leaf of its own beside its members: a holder with a
    // deeper holder inside it, on its own path, is that container, not an alternative.
    let inside = |m: &Leaf, l: &Leaf| {
        m.depth > l.depth
            && m.offset >= l.offset
            && m.offset + m.size <= l.offset + l.size
            && (l.path.is_empty()
                || m.path == l.path
                || m.path
                    .strip_prefix(l.path.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('[')))
    };
    let innermost: Vec<&Leaf> = holding
        .iter()
        .copied()
        .filter(|l| {
            !holding
                .iter()
                .any(|m| !std::ptr::eq(*m, *l) && inside(m, l))
        })
        .collect();
    fn narrow<'a>(all: Vec<&'a Leaf>, keep: impl Fn(&Leaf) -> bool) -> Vec<&'a Leaf> {
        let some: Vec<&Leaf> = all.iter().copied().filter(|l| keep(l)).collect();
        if some.is_empty() { all } else { some }
    }
    match size {
        Some(s) => {
            let s = s as u64;
            let fitting = narrow(innermost, |l| offset + s <= l.offset + l.size.max(1));
            narrow(fitting, |l| l.offset == offset && l.size == s)
        }
        None => narrow(innermost, |l| l.offset == offset),
    }
}

/// The name of what [`members_at`] finds: one member's path, or the alternatives it cannot
/// tell apart joined with ` | ` (`vlag | vprot`).
pub fn member_name(leaves: &[Leaf], offset: u64, size: Option<u32>) -> Option<String> {
    let alternatives = members_at(leaves, offset, size);
    if alternatives.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for l in alternatives {
        if !names.contains(&l.path.as_str()) {
            names.push(&l.path);
        }
    }
    Some(names.join(" | "))
}

/// Offset and size of the member at dotted `path` in struct/union `id`
/// (`rto_count`, `cpupri.pri_to_cpu[0].count`, `load_avg.counter`). Members of anonymous
/// structs and unions are found by their own names, as C lets code name them.
pub fn resolve_path(types: &Types<'_>, id: TypeId, path: &str) -> Option<(u64, u64)> {
    let mut ty = id;
    let mut offset = 0u64;
    for part in path.split('.') {
        let (name, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        let (member_offset, member_ty) = find_member(types, ty, name, 0)?;
        offset += member_offset;
        ty = member_ty;
        for idx in indices.split('[').skip(1) {
            let i: u64 = idx.strip_suffix(']')?.trim().parse().ok()?;
            let Kind::Array { elem, count } = &types.get(types.resolve(ty)).kind else {
                return None;
            };
            if *count != 0 && i >= *count {
                return None;
            }
            offset += i * types.size_of(*elem);
            ty = *elem;
        }
    }
    Some((offset, types.size_of(ty)))
}

/// The member `name` of `ty`, looking through anonymous members; (offset, type).
fn find_member(types: &Types<'_>, ty: TypeId, name: &str, depth: usize) -> Option<(u64, TypeId)> {
    let comp = types.composite(types.resolve(ty))?;
    for m in &comp.members {
        if m.name == name {
            return Some((m.bit_offset / 8, m.ty));
        }
    }
    if depth > MAX_DEPTH {
        return None;
    }
    comp.members
        .iter()
        .filter(|m| m.name.is_empty())
        .find_map(|m| {
            find_member(types, m.ty, name, depth + 1).map(|(o, t)| (m.bit_offset / 8 + o, t))
        })
}
