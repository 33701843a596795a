//! The layout model: where every member of a struct lies, which cache line it falls on, and the
//! holes and padding between members. Pure computation over [`Types`]; no I/O.
//!
//! Conventions follow pahole, so that numbers agree with what kernel engineers already read:
//! a bitfield's byte offset is the start of its storage unit (the unit being the size of its
//! declared type), holes are measured between the end of one member and the start of the next,
//! members of anonymous structs and unions are expanded in place with absolute offsets, and
//! alignment that BTF does not record is inferred from holes the way pahole infers it.

use serde::Serialize;

use crate::types::walk::Guard;
use crate::types::{Kind, SourceFormat, TypeId, Types, cname};

#[derive(Clone, Debug, Serialize)]
pub struct Layout {
    pub name: String,
    /// `"struct"` or `"union"`.
    pub kind: &'static str,
    #[serde(skip)]
    pub type_id: TypeId,
    pub size: u64,
    pub cacheline_size: u64,
    pub members: Vec<Field>,
    /// A hole before the first member (only an aligned first member leaves one).
    #[serde(skip_serializing_if = "is_zero")]
    pub leading_hole: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub leading_bit_hole: u64,
    pub summary: Summary,
    /// Alignment the whole type needs beyond its members' natural alignment: declared
    /// (DWARF), or inferred from trailing padding that natural alignment cannot explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced_align: Option<u64>,
    /// The type must be packed: a member sits where its natural alignment cannot put it, or
    /// the size is not a multiple of the members' alignment.
    pub packed: bool,
    /// Where the type was declared (DWARF only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The struct has no tag and `name` is its typedef's (`typedef struct { ... } name;`):
    /// C refers to it as `name`, never `struct name`.
    #[serde(skip)]
    pub tagless: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Field {
    /// Empty for anonymous members.
    pub name: String,
    #[serde(skip)]
    pub ty: TypeId,
    /// The C type (`struct list_head *`); for arrays and function pointers the rest of the
    /// declaration is in `declarator`.
    pub type_name: String,
    /// The member name with its array dimensions or function-pointer decoration.
    pub declarator: String,
    /// Absolute byte offset from the start of the outermost struct (for bitfields, the start of
    /// the storage unit).
    pub offset: u64,
    /// Size in bytes (for bitfields, the size of the storage unit).
    pub size: u64,
    /// For bitfields: bit position inside the storage unit, counted from its least
    /// significant bit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_size: Option<u32>,
    /// Cache line of the first and of the last byte of this member.
    pub cacheline: u64,
    pub last_cacheline: u64,
    /// Unused bytes and bits between this member's end and the next member.
    pub hole_after: u64,
    pub bit_hole_after: u64,
    /// Alignment this member was given beyond its type's natural alignment (declared in DWARF,
    /// or inferred from a hole its natural alignment cannot explain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced_align: Option<u64>,
    /// Trailing padding inside this member's own struct type, when the member is directly a
    /// struct (pahole's "last struct has N bytes of padding").
    #[serde(skip_serializing_if = "is_zero")]
    pub type_padding: u64,
    /// Set for members shown in place (unnamed struct or union types, and arrays of them):
    /// `"struct"` or `"union"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<&'static str>,
    /// Members of an inline struct or union (of the first element, for arrays).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Field>,
    /// For inline structs: what the hole scan found inside (hole before the first member,
    /// alignment and packing of the anonymous type).
    #[serde(skip)]
    pub inner: Inner,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Field {
    pub fn is_bitfield(&self) -> bool {
        self.bit_size.is_some()
    }
    pub fn end(&self) -> u64 {
        self.offset + self.size
    }
}

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    /// Number of direct members (an inline anonymous union counts once).
    pub members: usize,
    /// Bytes of direct non-bitfield members.
    pub sum_members: u64,
    /// Bits of direct bitfield members.
    pub sum_bitfield_bits: u64,
    pub holes: usize,
    pub sum_holes: u64,
    pub bit_holes: usize,
    pub sum_bit_holes: u64,
    pub padding: u64,
    pub bit_padding: u64,
    /// Members whose own struct type ends in padding, and the sum of it.
    pub paddings: usize,
    pub sum_paddings: u64,
    /// Members with an alignment beyond their natural one, and the holes right before them.
    pub forced_alignments: usize,
    pub forced_holes: usize,
    pub sum_forced_holes: u64,
    pub cachelines: u64,
    /// Bytes used in the last cache line; 0 when the size is a whole number of lines.
    pub last_cacheline: u64,
}

impl Layout {
    /// How C code refers to the type: `struct name`, or the typedef's name alone for a
    /// struct without a tag.
    pub fn c_name(&self) -> String {
        if self.tagless {
            self.name.clone()
        } else {
            format!("{} {}", self.kind, self.name)
        }
    }

    /// What the hole scan found for the whole type, as for an inline member's `inner`.
    pub fn inner(&self) -> Inner {
        Inner {
            leading_hole: self.leading_hole,
            leading_bit_hole: self.leading_bit_hole,
            padding: self.summary.padding,
            bit_padding: self.summary.bit_padding,
            forced_align: self.forced_align,
            packed: self.packed,
        }
    }
}

/// What scanning one struct's members found besides per-member holes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inner {
    pub leading_hole: u64,
    pub leading_bit_hole: u64,
    pub padding: u64,
    pub bit_padding: u64,
    pub forced_align: Option<u64>,
    pub packed: bool,
}

/// Computes the layout of struct or union `id`. Returns `None` when `id` is not a defined
/// struct or union.
pub fn layout(types: &Types<'_>, id: TypeId, cacheline_size: u64) -> Option<Layout> {
    layout_with(types, id, cacheline_size, true)
}

/// [`layout`], leaving `type_name` and `declarator` empty unless `c_names` (the pahole text
/// printer spells types itself, and skipping them halves the work of `layout --all`).
pub fn layout_with(
    types: &Types<'_>,
    id: TypeId,
    cacheline_size: u64,
    c_names: bool,
) -> Option<Layout> {
    let comp = types.composite(id)?;
    if comp.is_declaration {
        return None;
    }
    let is_union = types.is_union(id);
    let cls = cacheline_size.max(1);
    let mut members = Vec::with_capacity(comp.members.len());
    let inner = fields_of(types, id, 0, cls, &mut Guard::new(), c_names, &mut members);
    let size = types.size_of(id);
    let mut summary = Summary {
        members: members.len(),
        cachelines: size.div_ceil(cls),
        last_cacheline: size % cls,
        ..Summary::default()
    };
    for f in &members {
        match f.bit_size {
            Some(bits) => summary.sum_bitfield_bits += bits as u64,
            None => summary.sum_members += f.size,
        }
        if f.type_padding > 0 {
            summary.paddings += 1;
            summary.sum_paddings += f.type_padding;
        }
    }
    if !is_union {
        summary.padding = inner.padding;
        summary.bit_padding = inner.bit_padding;
        let mut hole_before = inner.leading_hole;
        if inner.leading_hole > 0 {
            summary.holes += 1;
            summary.sum_holes += inner.leading_hole;
        }
        if inner.leading_bit_hole > 0 {
            summary.bit_holes += 1;
            summary.sum_bit_holes += inner.leading_bit_hole;
        }
        for f in &members {
            if f.forced_align.is_some() {
                summary.forced_alignments += 1;
                if hole_before > 0 {
                    summary.forced_holes += 1;
                    summary.sum_forced_holes += hole_before;
                }
            }
            if f.hole_after > 0 {
                summary.holes += 1;
                summary.sum_holes += f.hole_after;
            }
            if f.bit_hole_after > 0 {
                summary.bit_holes += 1;
                summary.sum_bit_holes += f.bit_hole_after;
            }
            hole_before = f.hole_after;
        }
    }
    Some(Layout {
        // An anonymous struct behind a typedef is known by the typedef's name.
        name: match types.get(id).name {
            "" => types.typedef_name_of(id).unwrap_or("").to_string(),
            n => n.to_string(),
        },
        tagless: types.get(id).name.is_empty() && types.typedef_name_of(id).is_some(),
        kind: if is_union { "union" } else { "struct" },
        type_id: id,
        size,
        cacheline_size: cls,
        members,
        leading_hole: inner.leading_hole,
        leading_bit_hole: inner.leading_bit_hole,
        summary,
        forced_align: inner.forced_align,
        packed: inner.packed,
        origin: comp
            .origin
            .as_ref()
            .map(|o| format!("{}:{} ({})", o.file, o.line, o.unit)),
    })
}

/// Every named struct and union, in input order, each distinct definition once: a second type
/// with the same name, size and members (names, bit offsets, bitfield widths; as BTF keeps
/// for a struct that differs only in a member's type name) is left out, as pahole does.
///
/// Definitions are compared only with earlier ones of the same name, size and member offsets
/// (what [`same_shape`] needs equal), at most [`MAX_SHAPE_COMPARISONS`] of them: 10^5
/// definitions of one name in a crafted BTF must not take 10^10 comparisons.
pub fn distinct_named(types: &Types<'_>) -> Vec<TypeId> {
    type Shape<'n> = (&'n str, u64, Vec<(u64, u32)>);
    let mut seen: std::collections::HashMap<Shape<'_>, Vec<TypeId>> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for id in types.composites() {
        let name = types.get(id).name;
        let Some(c) = types.composite(id) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let offsets = c
            .members
            .iter()
            .map(|m| (m.bit_offset, m.bitfield_size))
            .collect();
        let earlier = seen.entry((name, c.size, offsets)).or_default();
        if earlier
            .iter()
            .take(MAX_SHAPE_COMPARISONS)
            .any(|&e| same_shape(types, e, id))
        {
            continue;
        }
        earlier.push(id);
        out.push(id);
    }
    out
}

/// How many earlier definitions of the same name and offsets [`distinct_named`] compares a
/// definition with (real inputs have a handful: the same struct from a few compile units).
pub const MAX_SHAPE_COMPARISONS: usize = 64;

/// Layouts of [`distinct_named`] types.
pub fn all_named(types: &Types<'_>, cacheline_size: u64) -> Vec<Layout> {
    distinct_named(types)
        .into_iter()
        .filter_map(|id| layout(types, id, cacheline_size))
        .collect()
}

fn same_shape(types: &Types<'_>, a: TypeId, b: TypeId) -> bool {
    let (Some(x), Some(y)) = (types.composite(a), types.composite(b)) else {
        return false;
    };
    x.size == y.size
        && x.members.len() == y.members.len()
        && x.members.iter().zip(&y.members).all(|(m, n)| {
            (m.name.is_empty() || n.name.is_empty() || m.name == n.name)
                && m.bit_offset == n.bit_offset
                && m.bitfield_size == n.bitfield_size
        })
}

/// One member reduced to what the hole scan needs.
#[derive(Clone, Copy)]
struct Span {
    /// Byte offset of the member (of its storage unit, for bitfields), relative to the struct.
    unit_offset: u64,
    size: u64,
    start_bit: u64,
    end_bit: u64,
    is_bitfield: bool,
}

/// Where member `m` lies in its struct: (byte offset of its storage unit, size, bit position
/// in the unit for bitfields).
fn place(types: &Types<'_>, m: &crate::types::Member<'_>) -> (u64, u64, Option<u64>) {
    let size = types.size_of(m.ty);
    if !m.is_bitfield() {
        return (m.bit_offset / 8, size, None);
    }
    // Storage unit: the declared type's size, aligned down (pahole's convention).
    let unit_bits = size * 8;
    if unit_bits == 0 {
        return (m.bit_offset / 8, size, Some(m.bit_offset % 8));
    }
    let unit_start = m.bit_offset / unit_bits * unit_bits / 8;
    (unit_start, size, Some(m.bit_offset - unit_start * 8))
}

fn spans_of(types: &Types<'_>, id: TypeId) -> Vec<Span> {
    let Some(c) = types.composite(id) else {
        return Vec::new();
    };
    c.members
        .iter()
        .map(|m| {
            let (unit_offset, size, _) = place(types, m);
            Span {
                unit_offset,
                size,
                start_bit: m.bit_offset,
                end_bit: if m.is_bitfield() {
                    m.bit_offset + m.bitfield_size as u64
                } else {
                    m.bit_offset + size * 8
                },
                is_bitfield: m.is_bitfield(),
            }
        })
        .collect()
}

/// Trailing padding of struct `id`, as its own hole scan measures it.
pub fn tail_padding(types: &Types<'_>, id: TypeId) -> u64 {
    let spans = spans_of(types, id);
    let mut holes = vec![(0, 0); spans.len()];
    scan_holes(&spans, types.size_of(id), &mut holes).padding
}

/// Scans members in order for byte and bit holes, pahole-style: a run of bitfields occupies
/// its storage unit, bits left in a unit before the next member are a bit hole, whole bytes
/// skipped are a byte hole. `holes[i]` receives the (byte, bit) hole after member `i`.
fn scan_holes(spans: &[Span], size: u64, holes: &mut [(u64, u64)]) -> Inner {
    let mut inner = Inner::default();
    let mut last_seen = 0u64;
    let mut in_bitfield = false;
    let mut unit_end = size * 8;
    let mut unit_bits = 0u64;
    for (i, s) in spans.iter().enumerate() {
        let mut bit_hole = 0u64;
        let mut byte_hole = 0u64;
        if in_bitfield {
            let run_end = s.start_bit.min(unit_end);
            bit_hole = run_end.saturating_sub(last_seen);
            last_seen = run_end;
        }
        if s.is_bitfield {
            let aligned_start = s.unit_offset * 8;
            if last_seen < aligned_start && aligned_start <= s.start_bit {
                byte_hole = s.unit_offset - last_seen / 8;
                last_seen = aligned_start;
            }
            bit_hole += s.start_bit.saturating_sub(last_seen);
        } else {
            byte_hole = (s.start_bit / 8).saturating_sub(last_seen / 8);
        }
        if i == 0 {
            inner.leading_hole = byte_hole;
            inner.leading_bit_hole = bit_hole;
        } else {
            holes[i - 1] = (byte_hole, bit_hole);
        }
        // Members overlapping earlier ones (odd packing) never move the scan backwards.
        last_seen = last_seen.max(s.end_bit);
        if s.is_bitfield {
            in_bitfield = true;
            let fbits = s.size * 8;
            if s.end_bit > unit_end || fbits > unit_bits {
                unit_bits = fbits;
                unit_end = s.unit_offset * 8 + unit_bits;
                if s.end_bit > unit_end {
                    unit_end += unit_bits;
                }
            }
        } else {
            in_bitfield = false;
            unit_bits = 0;
            unit_end = s.end_bit;
        }
    }
    if in_bitfield {
        let run_end = (size * 8).min(unit_end);
        inner.bit_padding = run_end.saturating_sub(last_seen);
        last_seen = run_end;
    }
    inner.padding = size.saturating_sub(last_seen / 8);
    inner
}

/// pahole's guess at an alignment attribute: a member at `offset` (or a struct of size
/// `offset`) that starts `delta` bytes after the previous member's end, where natural
/// alignment `natural` cannot explain `delta`, was aligned to the next power of two above
/// `delta`, rounded up to 64 (`____cacheline_aligned`) when the offset is 64-aligned.
fn infer_align(offset: u64, natural: u64, prev_end: u64) -> Option<u64> {
    if offset <= prev_end || !offset.is_multiple_of(2) {
        return None;
    }
    let delta = offset - prev_end;
    let a = 1u64 << (64 - delta.leading_zeros()).min(63);
    if a <= natural || a == 1 {
        return None;
    }
    if a < 64 && 64 % a == 0 && offset.is_multiple_of(64) {
        return Some(64);
    }
    Some(a)
}

/// Builds the fields of composite `id` placed at absolute byte `base`, appending to `out`.
fn fields_of(
    types: &Types<'_>,
    id: TypeId,
    base: u64,
    cls: u64,
    g: &mut Guard,
    c_names: bool,
    out: &mut Vec<Field>,
) -> Inner {
    let Some(comp) = types.composite(id) else {
        return Inner::default();
    };
    let is_union = types.is_union(id);
    let start = out.len();
    let mut prev_end = 0u64;
    for m in &comp.members {
        let (rel_offset, size, bit_offset) = place(types, m);
        let offset = base + rel_offset;
        let last_byte = offset + size.max(1) - 1;
        let decl = if c_names {
            cname::member_decl(types, m.ty, m.name)
        } else {
            cname::Decl::default()
        };
        // BTF has no alignment; infer it from the gap before the member. Declared (DWARF)
        // alignment wins. Zero-size members do not advance the previous end.
        let forced_align = match m.declared_align {
            Some(a) => Some(a as u64),
            None if size == 0 || is_union || types.source == SourceFormat::Dwarf => None,
            None => infer_align(rel_offset, types.natural_align(m.ty), prev_end),
        };
        if size > 0 {
            prev_end = rel_offset + size;
        }
        let mut field = Field {
            name: m.name.to_string(),
            ty: m.ty,
            type_name: decl.type_part,
            declarator: decl.declarator,
            offset,
            size,
            bit_offset,
            bit_size: m.is_bitfield().then_some(m.bitfield_size),
            cacheline: offset / cls,
            last_cacheline: last_byte / cls,
            hole_after: 0,
            bit_hole_after: 0,
            forced_align,
            type_padding: 0,
            inline: None,
            members: Vec::new(),
            inner: Inner::default(),
        };
        // Members of an unnamed struct/union type are shown in place, named or not, and so
        // are those of an array of one (the first element); a typedef of one (`atomic_t`) is
        // shown by its typedef name.
        let elem = types.strip_arrays(m.ty);
        let et = types.get(elem);
        // A corrupt input can make such a type contain itself: the guard bounds the walk.
        if et.name.is_empty() && matches!(et.kind, Kind::Struct(_) | Kind::Union(_)) && g.enter() {
            field.inline = Some(if types.is_union(elem) {
                "union"
            } else {
                "struct"
            });
            field.inner = fields_of(types, elem, offset, cls, g, c_names, &mut field.members);
            g.leave();
        }
        if matches!(types.get(m.ty).kind, Kind::Struct(_)) && !is_union {
            field.type_padding = if field.inline.is_some() && elem == m.ty {
                field.inner.padding
            } else {
                tail_padding(types, m.ty)
            };
        }
        out.push(field);
    }
    let size = types.size_of(id);
    let natural = types.natural_align(id);
    let fields = &mut out[start..];
    let mut inner = if is_union {
        Inner::default()
    } else {
        let spans: Vec<Span> = fields
            .iter()
            .zip(&comp.members)
            .map(|(f, m)| Span {
                unit_offset: f.offset - base,
                size: f.size,
                start_bit: m.bit_offset,
                end_bit: match f.bit_size {
                    Some(b) => m.bit_offset + b as u64,
                    None => m.bit_offset + f.size * 8,
                },
                is_bitfield: f.is_bitfield(),
            })
            .collect();
        let mut holes = vec![(0, 0); spans.len()];
        let inner = scan_holes(&spans, size, &mut holes);
        for (f, (byte, bit)) in fields.iter_mut().zip(holes) {
            f.hole_after = byte;
            f.bit_hole_after = bit;
        }
        inner
    };
    inner.forced_align = match comp.declared_align {
        Some(a) => Some(a as u64),
        None if types.source == SourceFormat::Dwarf => None,
        None => infer_align(size, natural, prev_end_of(fields, base)),
    };
    inner.packed = !is_union && infer_packed(types, fields, base, size, &inner);
    if inner.packed {
        inner.forced_align = None;
    }
    inner
}

/// End of the last member with a size, relative to `base`.
fn prev_end_of(fields: &[Field], base: u64) -> u64 {
    fields
        .iter()
        .rev()
        .find(|f| f.size > 0)
        .map(|f| f.end() - base)
        .unwrap_or(0)
}

/// A struct without holes or padding must be packed if a member sits off its natural
/// alignment, or if its size is not a multiple of its strictest member's alignment.
fn infer_packed(types: &Types<'_>, fields: &[Field], base: u64, size: u64, inner: &Inner) -> bool {
    let has_holes = inner.leading_hole > 0 || fields.iter().any(|f| f.hole_after > 0);
    if inner.padding != 0 || has_holes {
        return false;
    }
    let mut max_align = 1;
    for f in fields {
        let a = types.natural_align(f.ty);
        if a == 1 {
            continue;
        }
        max_align = max_align.max(a);
        if !(f.offset - base).is_multiple_of(a) {
            return true;
        }
    }
    max_align != 1 && !size.is_multiple_of(max_align)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_guess_follows_the_gap() {
        // load_avg at 256 after a member ending at 240: aligned to a cache line.
        assert_eq!(infer_align(256, 8, 240), Some(64));
        // A gap natural alignment explains is no attribute.
        assert_eq!(infer_align(8, 8, 4), None);
        // 52 bytes of gap at a non-64-aligned offset: next power of two above 52.
        assert_eq!(infer_align(96, 8, 44), Some(64));
        assert_eq!(infer_align(48, 4, 32), Some(32));
        assert_eq!(infer_align(16, 8, 16), None);
    }
}
