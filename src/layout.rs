//! The layout model: where every member of a struct lies, which cache line it falls on, and the
//! holes and padding between members. Pure computation over [`Types`]; no I/O.
//!
//! Conventions follow pahole, so that numbers agree with what kernel engineers already read:
//! a bitfield's byte offset is the start of its storage unit (the unit being the size of its
//! declared type), holes are measured between the end of one member and the start of the next,
//! and members of anonymous structs and unions are expanded in place with absolute offsets.

use serde::Serialize;

use crate::types::{Kind, TypeId, Types, cname};

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
    pub summary: Summary,
    /// Alignment of the whole type: declared, or inferred when the size is a multiple of a
    /// larger power of two than its members need (only reported when it exceeds theirs).
    pub forced_align: Option<u64>,
    /// Where the type was declared (DWARF only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Field {
    /// Empty for anonymous members.
    pub name: String,
    #[serde(skip)]
    pub ty: TypeId,
    /// The C type, as pahole spells it (`struct list_head *`); for arrays and function
    /// pointers the rest of the declaration is in `declarator`.
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
    /// Trailing padding inside this member's own struct type (pahole's
    /// "last struct has N bytes of padding").
    #[serde(skip_serializing_if = "is_zero")]
    pub type_padding: u64,
    /// Set for inline anonymous structs and unions: `"struct"` or `"union"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<&'static str>,
    /// Members of an inline anonymous struct or union.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Field>,
    /// Holes inside an inline anonymous struct, before its first member.
    #[serde(skip)]
    pub leading_hole: u64,
    /// Padding at the end of an inline anonymous struct.
    #[serde(skip)]
    pub inner_padding: u64,
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
    /// Number of top-level members (an inline anonymous union counts once).
    pub members: usize,
    /// Sum of the sizes of top-level members (bitfields counted by their bits, rounded down
    /// to bytes per run, as pahole does).
    pub sum_members: u64,
    pub holes: usize,
    pub sum_holes: u64,
    pub bit_holes: usize,
    pub sum_bit_holes: u64,
    pub padding: u64,
    pub bit_padding: u64,
    /// Members whose own struct type ends in padding, and the sum of it.
    pub paddings: usize,
    pub sum_paddings: u64,
    pub forced_alignments: usize,
    pub forced_holes: usize,
    pub sum_forced_holes: u64,
    pub cachelines: u64,
    /// Bytes used in the last cache line; 0 when the size is a whole number of lines.
    pub last_cacheline: u64,
}

/// Computes the layout of struct or union `id`. Returns `None` when `id` is not a defined
/// struct or union.
pub fn layout(types: &Types<'_>, id: TypeId, cacheline_size: u64) -> Option<Layout> {
    let comp = types.composite(id)?;
    if comp.is_declaration {
        return None;
    }
    let is_union = types.is_union(id);
    let cls = cacheline_size.max(1);
    let mut members = Vec::with_capacity(comp.members.len());
    let inner = fields_of(types, id, 0, cls, 0, &mut members);
    let mut summary = Summary {
        members: members.len(),
        cachelines: comp.size.div_ceil(cls),
        last_cacheline: comp.size % cls,
        ..Summary::default()
    };
    if !is_union {
        summary.padding = inner.padding;
        summary.bit_padding = inner.bit_padding;
        summary.holes = usize::from(inner.leading_hole > 0);
        summary.sum_holes = inner.leading_hole;
        for f in &members {
            if f.hole_after > 0 {
                summary.holes += 1;
                summary.sum_holes += f.hole_after;
            }
            if f.bit_hole_after > 0 {
                summary.bit_holes += 1;
                summary.sum_bit_holes += f.bit_hole_after;
            }
        }
        summary.sum_members = sum_members(&members);
    } else {
        summary.sum_members = members.iter().map(|f| f.size).max().unwrap_or(0);
    }
    for f in &members {
        if f.type_padding > 0 {
            summary.paddings += 1;
            summary.sum_paddings += f.type_padding;
        }
    }
    if !is_union {
        let mut prev_end = 0u64;
        for f in &members {
            if let Some(a) = f.forced_align {
                summary.forced_alignments += 1;
                let natural = types.natural_align(f.ty);
                // The part of the hole before it that its own alignment would not have caused.
                let natural_start = prev_end.next_multiple_of(natural.max(1));
                if f.offset > natural_start {
                    summary.forced_holes += 1;
                    summary.sum_forced_holes += f.offset - natural_start;
                }
                let _ = a;
            }
            if !f.is_bitfield() || f.end() > prev_end {
                prev_end = prev_end.max(f.end());
            }
        }
    }
    let natural = types.natural_align(id);
    let forced_align = comp
        .declared_align
        .map(u64::from)
        .filter(|&a| a > natural)
        .or_else(|| infer_type_align(types, id, comp.size, natural, &members));
    Some(Layout {
        name: types.get(id).name.to_string(),
        kind: if is_union { "union" } else { "struct" },
        type_id: id,
        size: comp.size,
        cacheline_size: cls,
        members,
        summary,
        forced_align,
        origin: comp
            .origin
            .as_ref()
            .map(|o| format!("{}:{} ({})", o.file, o.line, o.unit)),
    })
}

/// Layouts of every named struct and union, in input order, each distinct definition once:
/// a second type with the same name, size and members (as BTF keeps for a struct that differs
/// only in a member's type name) is left out, as pahole does.
pub fn all_named(types: &Types<'_>, cacheline_size: u64) -> Vec<Layout> {
    let mut seen: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    let mut out: Vec<Layout> = Vec::new();
    for id in types.composites() {
        let name = types.get(id).name;
        if name.is_empty() {
            continue;
        }
        let Some(l) = layout(types, id, cacheline_size) else {
            continue;
        };
        let earlier = seen.entry(name).or_default();
        if earlier.iter().any(|&i| same_shape(&out[i], &l)) {
            continue;
        }
        earlier.push(out.len());
        out.push(l);
    }
    out
}

fn same_shape(a: &Layout, b: &Layout) -> bool {
    a.kind == b.kind
        && a.size == b.size
        && a.members.len() == b.members.len()
        && a.members.iter().zip(&b.members).all(|(x, y)| {
            x.name == y.name
                && x.offset == y.offset
                && x.size == y.size
                && x.bit_offset == y.bit_offset
                && x.bit_size == y.bit_size
        })
}

/// A struct whose size is not explained by its members' alignment must carry an alignment
/// attribute itself (typically `____cacheline_aligned` on the type).
fn infer_type_align(
    types: &Types<'_>,
    id: TypeId,
    size: u64,
    natural: u64,
    members: &[Field],
) -> Option<u64> {
    let max_member_align = members
        .iter()
        .map(|f| f.forced_align.unwrap_or_else(|| types.natural_align(f.ty)))
        .max()
        .unwrap_or(1)
        .max(natural);
    let end = members.iter().map(Field::end).max().unwrap_or(0);
    if size == 0 || end == 0 {
        return None;
    }
    let needed = end.next_multiple_of(max_member_align);
    if size > needed {
        let align = 1u64 << size.trailing_zeros().min(12);
        if align > max_member_align {
            let _ = id;
            return Some(align);
        }
    }
    None
}

/// pahole's `sum members`: whole-byte members add their size; a run of bitfields sharing a
/// storage unit adds its bits, converted to bytes when the run ends.
fn sum_members(members: &[Field]) -> u64 {
    let mut bytes = 0u64;
    let mut bits = 0u64;
    for f in members {
        match f.bit_size {
            Some(b) => bits += b as u64,
            None => {
                bytes += bits / 8;
                bits = 0;
                bytes += f.size;
            }
        }
    }
    bytes + bits / 8
}

/// What the hole scan of one struct found besides the per-member holes.
struct Inner {
    leading_hole: u64,
    padding: u64,
    bit_padding: u64,
}

/// Builds the fields of composite `id` placed at absolute byte `base`, appending to `out`.
fn fields_of(
    types: &Types<'_>,
    id: TypeId,
    base: u64,
    cls: u64,
    depth: usize,
    out: &mut Vec<Field>,
) -> Inner {
    let comp = match types.composite(id) {
        Some(c) => c,
        None => {
            return Inner {
                leading_hole: 0,
                padding: 0,
                bit_padding: 0,
            };
        }
    };
    let is_union = types.is_union(id);
    for m in &comp.members {
        let resolved = types.resolve(m.ty);
        let size = types.size_of(m.ty);
        let (rel_offset, bit_offset, bit_size) = if m.is_bitfield() {
            // Storage unit: the declared type's size, aligned down (pahole's convention).
            let unit_bits = size * 8;
            if unit_bits == 0 {
                (m.bit_offset / 8, Some(m.bit_offset % 8), Some(m.bitfield_size))
            } else {
                let unit_start = m.bit_offset / unit_bits * unit_bits / 8;
                (unit_start, Some(m.bit_offset - unit_start * 8), Some(m.bitfield_size))
            }
        } else {
            (m.bit_offset / 8, None, None)
        };
        let offset = base + rel_offset;
        let last_byte = offset + size.max(1) - 1;
        let rt = types.get(resolved);
        // Members of an unnamed struct/union type are shown in place, named or not, and so
        // are those of an array of one (the first element); a typedef of one (`atomic_t`) is
        // shown by its typedef name.
        let elem = types.strip_arrays(m.ty);
        let et = types.get(elem);
        let anonymous_composite = et.name.is_empty()
            && matches!(et.kind, Kind::Struct(_) | Kind::Union(_))
            && depth < 32;
        let decl = cname::member_decl(types, m.ty, m.name);
        let mut field = Field {
            name: m.name.to_string(),
            ty: m.ty,
            type_name: decl.type_part,
            declarator: decl.declarator,
            offset,
            size,
            bit_offset,
            bit_size,
            cacheline: offset / cls,
            last_cacheline: last_byte / cls,
            hole_after: 0,
            bit_hole_after: 0,
            forced_align: m.declared_align.map(u64::from),
            type_padding: 0,
            inline: None,
            members: Vec::new(),
            leading_hole: 0,
            inner_padding: 0,
        };
        if anonymous_composite {
            field.inline = Some(if types.is_union(elem) {
                "union"
            } else {
                "struct"
            });
            let inner = fields_of(types, elem, offset, cls, depth + 1, &mut field.members);
            field.leading_hole = inner.leading_hole;
            field.inner_padding = inner.padding;
        } else if let Kind::Struct(_) = rt.kind {
            field.type_padding = struct_tail_padding(types, resolved);
        }
        out.push(field);
    }
    let start = out.len() - comp.members.len();
    if is_union {
        return Inner {
            leading_hole: 0,
            padding: 0,
            bit_padding: 0,
        };
    }
    let inner = find_holes(&mut out[start..], base, comp.size);
    infer_member_alignment(types, &mut out[start..], base);
    inner
}

/// Trailing padding of a struct type: its size minus the end of its last member.
fn struct_tail_padding(types: &Types<'_>, id: TypeId) -> u64 {
    let Some(c) = types.composite(id) else {
        return 0;
    };
    let end_bits = c
        .members
        .iter()
        .map(|m| {
            if m.is_bitfield() {
                m.bit_offset + m.bitfield_size as u64
            } else {
                m.bit_offset + types.size_of(m.ty) * 8
            }
        })
        .max()
        .unwrap_or(0);
    c.size.saturating_sub(end_bits.div_ceil(8))
}

/// Scans members in order for byte and bit holes, pahole-style: a run of bitfields occupies
/// its storage unit, bits left in a unit before the next member are a bit hole, and whole
/// bytes skipped are a byte hole. Fills `hole_after`/`bit_hole_after`.
fn find_holes(fields: &mut [Field], base: u64, size: u64) -> Inner {
    let mut leading_hole = 0u64;
    let mut last_seen_bit = base * 8;
    let mut in_bitfield = false;
    let mut unit_end = (base + size) * 8;
    let mut unit_bits = 0u64;
    for i in 0..fields.len() {
        let f = &fields[i];
        let start = if f.is_bitfield() {
            f.offset * 8 + f.bit_offset.unwrap_or(0)
        } else {
            f.offset * 8
        };
        let end = match f.bit_size {
            Some(b) => start + b as u64,
            None => start + f.size * 8,
        };
        let mut bit_hole = 0u64;
        let mut byte_hole = 0u64;
        if in_bitfield {
            let run_end = start.min(unit_end);
            bit_hole = run_end.saturating_sub(last_seen_bit);
            last_seen_bit = run_end;
        }
        if f.is_bitfield() {
            let aligned_start = f.offset * 8;
            if last_seen_bit < aligned_start && aligned_start <= start {
                byte_hole = f.offset - last_seen_bit / 8;
                last_seen_bit = aligned_start;
            }
            bit_hole += start.saturating_sub(last_seen_bit);
        } else {
            byte_hole = (start / 8).saturating_sub(last_seen_bit / 8);
        }
        if i == 0 {
            leading_hole = byte_hole;
        } else {
            fields[i - 1].hole_after = byte_hole;
            fields[i - 1].bit_hole_after = bit_hole;
        }
        // A member that overlaps an earlier one (unions inside, odd packing) never moves the
        // scan backwards.
        last_seen_bit = last_seen_bit.max(end);
        let f = &fields[i];
        if f.is_bitfield() {
            in_bitfield = true;
            let fbits = f.size * 8;
            if end > unit_end || fbits > unit_bits {
                unit_bits = fbits;
                unit_end = f.offset * 8 + unit_bits;
                if end > unit_end {
                    unit_end += unit_bits;
                }
            }
        } else {
            in_bitfield = false;
            unit_bits = 0;
            unit_end = end;
        }
    }
    let mut bit_padding = 0;
    if in_bitfield {
        let run_end = ((base + size) * 8).min(unit_end);
        bit_padding = run_end.saturating_sub(last_seen_bit);
        last_seen_bit = run_end;
    }
    Inner {
        leading_hole,
        padding: (base + size).saturating_sub(last_seen_bit / 8),
        bit_padding,
    }
}

/// BTF records no alignment, so pahole infers it: a member placed further than its natural
/// alignment can explain must have been aligned on purpose. We report the largest power of two
/// that divides its offset, capped at the cache-line size convention of 64 used by
/// `____cacheline_aligned` on x86.
fn infer_member_alignment(types: &Types<'_>, fields: &mut [Field], base: u64) {
    let mut prev_end = base;
    for f in fields.iter_mut() {
        if f.forced_align.is_none() && !f.is_bitfield() {
            let natural = types.natural_align(f.ty).max(1);
            let rel = f.offset - base;
            let natural_start = prev_end.next_multiple_of(natural);
            if f.offset > natural_start && rel > 0 {
                let align = 1u64 << rel.trailing_zeros().min(6);
                if align > natural {
                    f.forced_align = Some(align);
                }
            }
        }
        if f.end() > prev_end {
            prev_end = f.end();
        }
    }
}
