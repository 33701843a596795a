//! Binding a contended cache line to a struct: c2c reports data addresses and offsets within a
//! line, never types. Given the offsets touched in one line, find which line of which struct
//! they can be: every offset should land on a field boundary, consistently with the struct's
//! alignment.

use super::fields::{Leaf, leaf_at, leaves, member_name, members_at};
use crate::types::{TypeId, Types};

/// One access to a cache line, as far as attribution needs it.
#[derive(Clone, Debug)]
pub struct LineAccess {
    /// Byte offset within the cache line.
    pub offset: u64,
    /// Access size in bytes, when the evidence says.
    pub size: Option<u32>,
    /// How much this access counts (samples, HITM, a sketch's rate).
    pub weight: f64,
    /// Share of this access that writes (stores, atomic read-modify-writes), 0.0 to 1.0.
    pub store_share: f64,
    /// Functions that made it (`update_load_avg`, `set_task_cpu+279`).
    pub symbols: Vec<String>,
    /// Structs those functions' prototypes take or return pointers to (`rw_semaphore` for
    /// `rwsem_spin_on_owner`); empty when unknown. A placement that puts the access inside
    /// an embedded member of one of them is what the code says.
    pub types: Vec<String>,
}

/// One way the line can lie over a struct.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub type_id: TypeId,
    pub type_name: String,
    /// Struct offset at which the cache line starts (negative when the struct starts
    /// part-way into the line).
    pub line_start: i64,
    /// Cache line index within the struct, for a line-aligned struct.
    pub line_index: i64,
    /// Fraction of access weight that lands on the start of a field (1.0 = all).
    pub fit: f64,
    /// Tie-breakers, each 0.0 to 1.0: how much the accessing functions' names share words
    /// with the fields they would touch (`update_load_avg` and `load_avg`); how much of the
    /// written weight lands on atomics and locks; how shallow the touched fields are (hot
    /// data is usually a struct's own member, not deep inside an embedded timer).
    pub name_affinity: f64,
    /// Share of weight landing inside an embedded member whose type the accessing
    /// function's prototype names (`rwsem_spin_on_owner` inside `mmap_lock`).
    pub contained: f64,
    pub writes_on_atomics: f64,
    pub shallowness: f64,
    /// The field each access lands on, in input order (empty when outside the struct).
    pub fields: Vec<String>,
}

impl Candidate {
    /// Overall rank: fit first, then what the prototypes say (an access inside an embedded
    /// struct its function takes); the name-based tie-breakers together weigh less than one
    /// misplaced access in ten and never override offsets or prototypes.
    pub fn score(&self) -> f64 {
        self.fit
            + 0.2 * self.contained
            + 0.03 * (0.5 * self.name_affinity + self.writes_on_atomics + self.shallowness)
    }
}

/// Scores every placement of `accesses` (offsets in a line of `cacheline_size` bytes) over
/// struct `id`. Instances of the struct start at multiples of its alignment, so a struct
/// aligned to less than a line can start anywhere such a multiple allows. Best first.
pub fn candidates(
    types: &Types<'_>,
    id: TypeId,
    accesses: &[LineAccess],
    cacheline_size: u64,
) -> Vec<Candidate> {
    if types.size_of(id) == 0 || accesses.is_empty() {
        return Vec::new();
    }
    Scorer::new(types, id).candidates(types, accesses, cacheline_size)
}

/// Best placement for each struct of `types` that the accesses fit, best first: for when the
/// engineer does not know the type. Only placements where every access lands inside the
/// struct count.
pub fn rank_types(
    types: &Types<'_>,
    accesses: &[LineAccess],
    cacheline_size: u64,
    limit: usize,
) -> Vec<Candidate> {
    let span = accesses.iter().map(|a| a.offset).max().unwrap_or(0)
        - accesses.iter().map(|a| a.offset).min().unwrap_or(0);
    let mut best: Vec<Candidate> = crate::layout::distinct_named(types)
        .into_iter()
        .filter(|&id| types.size_of(id) > span)
        .filter_map(|id| {
            candidates(types, id, accesses, cacheline_size)
                .into_iter()
                .next()
        })
        .filter(|c| c.fit > 0.0)
        .collect();
    best.sort_by(|a, b| {
        b.score()
            .total_cmp(&a.score())
            .then(a.type_name.cmp(&b.type_name))
    });
    best.truncate(limit);
    best
}

/// The placement of `accesses` over struct `id` with the line starting at struct offset
/// `line_start`; `None` when an access falls outside the struct.
pub fn placement(
    types: &Types<'_>,
    id: TypeId,
    accesses: &[LineAccess],
    line_start: i64,
    cacheline_size: u64,
) -> Option<Candidate> {
    if types.size_of(id) == 0 || accesses.is_empty() {
        return None;
    }
    Scorer::new(types, id).at(types, accesses, line_start, cacheline_size)
}

/// What scoring placements over one struct needs, computed once.
pub struct Scorer {
    pub id: TypeId,
    pub size: u64,
    leaves: Vec<Leaf>,
    embedded: Vec<Embedded>,
    align: u64,
    /// The largest leaf's size: how far before an offset a leaf holding it can start.
    widest: u64,
}

impl Scorer {
    pub fn new(types: &Types<'_>, id: TypeId) -> Self {
        Scorer {
            id,
            size: types.size_of(id),
            widest: 1,
            leaves: leaves(types, id),
            embedded: embedded(types, id),
            align: struct_align(types, id),
        }
        .with_widest()
    }

    fn with_widest(mut self) -> Self {
        self.widest = self.leaves.iter().map(|l| l.size.max(1)).max().unwrap_or(1);
        self
    }

    /// Every placement of `accesses` over the struct, best first ([`candidates`]).
    pub fn candidates(
        &self,
        types: &Types<'_>,
        accesses: &[LineAccess],
        cacheline_size: u64,
    ) -> Vec<Candidate> {
        let size = self.size;
        if size == 0 || accesses.is_empty() {
            return Vec::new();
        }
        let align = self.align.clamp(1, cacheline_size);
        let cls = cacheline_size as i64;
        let mut out = Vec::new();
        // The struct starts `shift` bytes into some line.
        let mut shift = 0;
        while shift < cls {
            let mut line_start = -shift;
            while line_start < size as i64 {
                if let Some(c) = score(
                    types,
                    self.id,
                    (&self.leaves, self.widest),
                    &self.embedded,
                    accesses,
                    line_start,
                    size,
                ) {
                    out.push(Candidate {
                        line_index: line_start.div_euclid(cls),
                        ..c
                    });
                }
                line_start += cls;
            }
            shift += align as i64;
        }
        out.sort_by(|a, b| {
            b.score()
                .total_cmp(&a.score())
                .then(a.line_start.cmp(&b.line_start))
        });
        out
    }

    /// Like [`placement`], without recomputing the struct's leaves.
    pub fn at(
        &self,
        types: &Types<'_>,
        accesses: &[LineAccess],
        line_start: i64,
        cacheline_size: u64,
    ) -> Option<Candidate> {
        if self.size == 0 || accesses.is_empty() {
            return None;
        }
        let c = score(
            types,
            self.id,
            (&self.leaves, self.widest),
            &self.embedded,
            accesses,
            line_start,
            self.size,
        )?;
        Some(Candidate {
            line_index: line_start.div_euclid(cacheline_size.max(1) as i64),
            ..c
        })
    }

    /// The deepest member holding struct byte `x`.
    pub fn leaf_holding(&self, x: u64) -> Option<&Leaf> {
        leaf_near(&self.leaves, self.widest, x)
    }

    /// The deepest member starting exactly at `offset` that holds an access of `size` bytes.
    pub fn leaf_starting_at(&self, offset: u64, size: Option<u32>) -> Option<&Leaf> {
        self.leaves
            .iter()
            .filter(|l| {
                l.offset == offset && size.is_none_or(|s| l.size == 0 || s as u64 <= l.size)
            })
            .max_by_key(|l| l.depth)
    }
}

/// A struct or union embedded (not pointed to) somewhere in another, with its byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Embedded {
    pub offset: u64,
    pub size: u64,
    /// The struct's tag or typedef name (`rw_semaphore`, `raw_spinlock`).
    pub names: Vec<String>,
}

/// Every struct or union embedded in `id` at any depth (array elements included, up to a
/// bound), by offset.
pub fn embedded(types: &Types<'_>, id: TypeId) -> Vec<Embedded> {
    let mut out = Vec::new();
    embed_walk(types, id, 0, 0, &mut out);
    out
}

fn embed_walk(types: &Types<'_>, id: TypeId, base: u64, depth: usize, out: &mut Vec<Embedded>) {
    let Some(comp) = types.composite(types.resolve(id)) else {
        return;
    };
    if depth > 8 {
        return;
    }
    for m in &comp.members {
        if m.is_bitfield() {
            continue;
        }
        embed_member(types, m.ty, base + m.bit_offset / 8, depth, out);
    }
}

fn embed_member(types: &Types<'_>, ty: TypeId, offset: u64, depth: usize, out: &mut Vec<Embedded>) {
    let resolved = types.resolve(ty);
    match &types.get(resolved).kind {
        crate::types::Kind::Struct(_) | crate::types::Kind::Union(_) => {
            let names = type_names(types, ty);
            if !names.is_empty() {
                out.push(Embedded {
                    offset,
                    size: types.size_of(resolved),
                    names,
                });
            }
            embed_walk(types, resolved, offset, depth + 1, out);
        }
        crate::types::Kind::Array { elem, count } => {
            let esize = types.size_of(*elem);
            if esize == 0 {
                return;
            }
            for i in 0..(*count).min(64) {
                embed_member(types, *elem, offset + i * esize, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The names a type goes by: every typedef on the way to it and its own tag
/// (`raw_spinlock_t`, `raw_spinlock`).
pub fn type_names(types: &Types<'_>, mut id: TypeId) -> Vec<String> {
    let mut names = Vec::new();
    for _ in 0..16 {
        let t = types.get(id);
        match &t.kind {
            crate::types::Kind::Typedef { target } => {
                names.push(t.name.to_string());
                id = *target;
            }
            crate::types::Kind::Qualified { target, .. }
            | crate::types::Kind::TypeTag { target, .. } => id = *target,
            _ => {
                if !t.name.is_empty() {
                    names.push(t.name.to_string());
                }
                break;
            }
        }
    }
    names
}

fn struct_align(types: &Types<'_>, id: TypeId) -> u64 {
    let natural = types.natural_align(id);
    crate::layout::layout_with(types, id, 64, false)
        .and_then(|l| l.forced_align)
        .unwrap_or(natural)
        .max(natural)
}

fn score(
    types: &Types<'_>,
    id: TypeId,
    (leaves, widest): (&[Leaf], u64),
    embedded: &[Embedded],
    accesses: &[LineAccess],
    line_start: i64,
    size: u64,
) -> Option<Candidate> {
    let total: f64 = accesses
        .iter()
        .map(|a| a.weight.max(0.0))
        .sum::<f64>()
        .max(f64::MIN_POSITIVE);
    let store_total: f64 = accesses
        .iter()
        .map(|a| a.weight.max(0.0) * a.store_share)
        .sum();
    let mut fit = 0.0;
    let mut affinity = 0.0;
    let mut contained = 0.0;
    let mut atomics = 0.0;
    let mut shallow = 0.0;
    let mut fields = Vec::with_capacity(accesses.len());
    for a in accesses {
        let x = line_start + a.offset as i64;
        if x < 0 || x as u64 >= size {
            // An access outside the struct rules this placement out.
            return None;
        }
        let x = x as u64;
        let w = a.weight.max(0.0) / total;
        if !a.types.is_empty()
            && embedded.iter().any(|e| {
                e.offset <= x
                    && x < e.offset + e.size.max(1)
                    && e.names.iter().any(|n| a.types.contains(n))
            })
        {
            contained += w;
        }
        // Union alternatives at `x` narrowed by the access's size: the first is scored, all
        // that remain are named.
        let alternatives = members_at(near(leaves, widest, x), x, a.size);
        match alternatives.first().copied() {
            Some(leaf) => {
                let fits_size = a
                    .size
                    .is_none_or(|s| x + s as u64 <= leaf.offset + leaf.size.max(1));
                if leaf.offset == x && fits_size {
                    fit += w;
                } else if fits_size {
                    // Inside a field: a byte of a word, a bitfield's unit; plausible, weaker.
                    fit += 0.3 * w;
                }
                affinity += w * name_overlap(&a.symbols, &leaf.path);
                shallow += w / (1.0 + leaf.depth as f64);
                if leaf.synchronizing && store_total > 0.0 {
                    atomics += a.weight.max(0.0) * a.store_share / store_total;
                }
                fields.push(
                    member_name(near(leaves, widest, x), x, a.size)
                        .unwrap_or_else(|| leaf.path.clone()),
                );
            }
            None => fields.push(String::from("<hole>")),
        }
    }
    Some(Candidate {
        type_id: id,
        type_name: types.get(id).name.to_string(),
        line_start,
        line_index: 0,
        fit,
        name_affinity: affinity,
        contained,
        writes_on_atomics: atomics,
        shallowness: shallow,
        fields,
    })
}

/// [`leaf_at`] on the leaves [`near`] `x`.
fn leaf_near(leaves: &[Leaf], widest: u64, x: u64) -> Option<&Leaf> {
    leaf_at(near(leaves, widest, x), x)
}

/// The leaves, sorted by offset, that can hold byte `x`: every one that does starts at most
/// the largest leaf's size before it.
fn near(leaves: &[Leaf], widest: u64, x: u64) -> &[Leaf] {
    let hi = leaves.partition_point(|l| l.offset <= x);
    let lo = leaves[..hi].partition_point(|l| l.offset + widest <= x);
    &leaves[lo..hi]
}

/// Words too common in kernel function names to say anything about a field.
const STOP_WORDS: &[&str] = &[
    "update", "set", "get", "init", "do", "the", "add", "sub", "put",
];

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 2 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOP_WORDS.contains(w))
}

/// Whether one of `symbols` names member `member` whole (`update_load_avg` and `load_avg`).
pub fn named_after(symbols: &[String], member: &str) -> bool {
    let member_words: Vec<&str> = words(member).collect();
    !member_words.is_empty()
        && symbols.iter().any(|sym| {
            let sym = sym.split('+').next().unwrap_or(sym);
            let sym_words: Vec<&str> = words(sym).collect();
            member_words.iter().all(|w| sym_words.contains(w))
        })
}

/// Share of the field path's words that appear in the best-matching symbol's name.
fn name_overlap(symbols: &[String], path: &str) -> f64 {
    let field_words: Vec<&str> = words(path).collect();
    if field_words.is_empty() {
        return 0.0;
    }
    symbols
        .iter()
        .map(|sym| {
            let sym = sym.split('+').next().unwrap_or(sym);
            let sym_words: Vec<&str> = words(sym).collect();
            field_words.iter().filter(|w| sym_words.contains(w)).count() as f64
                / field_words.len() as f64
        })
        .fold(0.0, f64::max)
}
