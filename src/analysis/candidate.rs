//! Candidate layouts to compare: a member order with alignment attributes (a C declaration,
//! such as the seed's own patch) or offsets read from pahole text, turned into a
//! [`Placement`] of the struct's units.

use std::collections::BTreeSet;

use super::cost::{Placement, Unit};
use super::optimize::derive;
use crate::readers::c_struct::{Align, CStruct};
use crate::readers::pahole_text::TypeFacts;
use crate::types::{Kind, Types};

/// A member a candidate declares that the struct being priced lacks (explicit padding, a
/// member of another configuration, a marker lineup added), priced where it falls.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Extra {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// A candidate C declaration laid out over the struct's units.
#[derive(Clone, Debug)]
pub struct Laid {
    pub placement: Placement,
    /// Members the candidate declares that the struct lacks, with their place.
    pub extra: Vec<Extra>,
    /// Members the candidate declares whose size lineup cannot tell (a type this build
    /// lacks): laid out as zero bytes, so the offsets after them are a lower bound.
    pub unsized_members: Vec<String>,
    /// Members it declares inside `#if` blocks that this build lacks: compiled out here,
    /// so not laid out.
    pub compiled_out: Vec<String>,
}

/// What a reader of a candidate's price must know: the members it declares that the struct
/// lacks (priced where they fall), those whose size is unknown, those compiled out.
pub fn describe_extras(candidate: &str, type_name: &str, laid: &Laid) -> Vec<String> {
    let mut out = Vec::new();
    if !laid.extra.is_empty() {
        let list: Vec<String> = laid
            .extra
            .iter()
            .filter(|e| !laid.unsized_members.contains(&e.name))
            .map(|e| format!("{} ({} bytes at {})", e.name, e.size, e.offset))
            .collect();
        if !list.is_empty() {
            out.push(format!(
                "{candidate}: declares {} that struct {type_name} lacks here; priced where they fall (they hold no accesses, and move what follows)",
                list.join(", ")
            ));
        }
    }
    if !laid.unsized_members.is_empty() {
        out.push(format!(
            "{candidate}: size unknown here of {}: laid out as 0 bytes, so the offsets after them are a lower bound",
            laid.unsized_members.join(", ")
        ));
    }
    if !laid.compiled_out.is_empty() {
        out.push(format!(
            "{candidate}: {} inside #if blocks this build lacks: not laid out",
            laid.compiled_out.join(", ")
        ));
    }
    out
}

/// Size and alignment of a C scalar type spelled `ty` (no pointers), on LP64.
fn scalar(ty: &str) -> Option<(u64, u64)> {
    let words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| !matches!(*w, "signed" | "unsigned" | "const" | "volatile" | "int"))
        .collect();
    let n = match words.as_slice() {
        [] => 4,
        ["char"] | ["_Bool"] | ["bool"] => 1,
        ["short"] => 2,
        ["long"] | ["long", "long"] => 8,
        ["float"] => 4,
        ["double"] => 8,
        ["long", "double"] => 16,
        [w] => match *w {
            "u8" | "s8" | "__u8" | "__s8" | "uint8_t" | "int8_t" => 1,
            "u16" | "s16" | "__u16" | "__s16" | "uint16_t" | "int16_t" | "__be16" | "__le16" => 2,
            "u32" | "s32" | "__u32" | "__s32" | "uint32_t" | "int32_t" | "__be32" | "__le32" => 4,
            "u64" | "s64" | "__u64" | "__s64" | "uint64_t" | "int64_t" | "__be64" | "__le64"
            | "size_t" | "ssize_t" | "uintptr_t" | "intptr_t" | "ptrdiff_t" => 8,
            _ => return None,
        },
        _ => return None,
    };
    Some((n, n))
}

/// Size and alignment of one member a candidate declares: `code` is its declaration without
/// attributes (`char pad[48]`), `name` the member. Scalars, pointers, arrays of them, and
/// types `types` defines by name; `None` for anything else (a bitfield included).
pub fn member_size(types: &Types<'_>, code: &str, name: &str) -> Option<(u64, u64)> {
    let code = code.trim();
    if code.contains('{') {
        return None;
    }
    // The declarator of `name`: what follows the last whole-word occurrence of it.
    let mut at = None;
    let mut from = 0;
    while let Some(p) = code[from..].find(name) {
        let i = from + p;
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !ident(code[..i].chars().last()) && !ident(code[i + name.len()..].chars().next()) {
            at = Some(i);
        }
        from = i + name.len();
    }
    let at = at?;
    let after = code[at + name.len()..].trim();
    if after.starts_with(':') {
        return None;
    }
    // The type: up to the first declarator (`int a, *b` declares `b` as a pointer).
    let before = code[..at].trim_end();
    let first = before.split(',').next().unwrap_or(before);
    let pointer = before.ends_with('*') || before.ends_with('(') || after.starts_with(')');
    let base = first.trim_end_matches(['*', '(', ' ']).trim();
    let base_words: Vec<&str> = base.split_whitespace().collect();
    // A declaration of several names: strip the earlier declarators from the type.
    let base = if before.contains(',') {
        let w = base_words.len().saturating_sub(1);
        base_words[..w].join(" ")
    } else {
        base_words.join(" ")
    };
    let (mut size, align) = if pointer {
        (types.pointer_size as u64, types.pointer_size as u64)
    } else if let Some(s) = scalar(&base) {
        s
    } else {
        let (kw, tag) = match base.split_once(' ') {
            Some((k @ ("struct" | "union" | "enum"), t)) => (Some(k), t.trim()),
            _ => (None, base.as_str()),
        };
        let id = (0..types.len() as u32).find(|&id| {
            let t = types.get(id);
            t.name == tag
                && match (kw, &t.kind) {
                    (Some("struct"), Kind::Struct(c)) | (Some("union"), Kind::Union(c)) => {
                        !c.is_declaration
                    }
                    (Some("enum"), Kind::Enum { .. }) => true,
                    (None, Kind::Typedef { .. }) => true,
                    _ => false,
                }
        })?;
        (types.size_of(id), types.natural_align(id))
    };
    // Array dimensions: `[48]`, `[2][4]`; `[]` and `[0]` are empty.
    let mut rest = after;
    while let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        let dim = r[..close].trim();
        let n: u64 = if dim.is_empty() {
            0
        } else if let Some(h) = dim.strip_prefix("0x") {
            u64::from_str_radix(h, 16).ok()?
        } else {
            dim.parse().ok()?
        };
        size = size.checked_mul(n)?;
        rest = r[close + 1..].trim_start();
    }
    Some((size, align.max(1)))
}

/// Offsets a C compiler gives the candidate declaration `cs`, over the struct's `units`:
/// every member it declares is laid out, the struct's own by their units, the others
/// (explicit padding, markers, members this build lacks) sized from their declaration.
/// The struct's units it does not declare are an error.
pub fn from_c(units: &[Unit], cs: &CStruct, types: &Types<'_>, cls: u64) -> Result<Laid, String> {
    let mut all: Vec<Unit> = units.to_vec();
    for u in all.iter_mut() {
        u.align = u.natural_align;
    }
    let mut order: Vec<usize> = Vec::new();
    let mut extra_units: Vec<usize> = Vec::new();
    let mut unsized_members = Vec::new();
    let mut compiled_out = Vec::new();
    let align_bytes = |a: Option<Align>| match a {
        Some(Align::Line) => cls,
        Some(Align::Bytes(n)) => n.max(1),
        None => 1,
    };
    for d in &cs.decls {
        let named: Vec<(String, Option<Align>)> = if d.marker {
            d.marker_members.clone()
        } else if d.anonymous_inline {
            // One unit, named by whichever of its (nested) members the struct's unit lists.
            let hit = d.names.iter().find(|n| {
                units
                    .iter()
                    .any(|u| u.name == **n || (!n.is_empty() && u.members.contains(n)))
            });
            let name = hit.or(d.names.first()).cloned().unwrap_or_default();
            vec![(name, d.align)]
        } else {
            d.names
                .iter()
                .enumerate()
                .map(|(k, n)| (n.clone(), if k == 0 { d.align } else { None }))
                .collect()
        };
        for (name, align) in named {
            // A unit is placed where the candidate first names one of its members (a
            // bitfield run by its first field, an anonymous union by any of its members).
            let found = units
                .iter()
                .position(|u| u.name == name || (!name.is_empty() && u.members.contains(&name)));
            let u = match found {
                Some(u) if order.contains(&u) => continue,
                Some(u) => u,
                None if d.block.is_some() => {
                    compiled_out.push(name.clone());
                    continue;
                }
                None => {
                    let (size, natural) = if d.marker {
                        (0, 1)
                    } else if d.anonymous_inline {
                        unsized_members.push(name.clone());
                        (0, 1)
                    } else {
                        match member_size(types, &d.code, &name) {
                            Some(s) => s,
                            None => {
                                unsized_members.push(name.clone());
                                (0, 1)
                            }
                        }
                    };
                    all.push(Unit {
                        name: name.clone(),
                        members: vec![name.clone()],
                        member_indices: Vec::new(),
                        offset: 0,
                        size,
                        align: natural,
                        natural_align: natural,
                    });
                    extra_units.push(all.len() - 1);
                    all.len() - 1
                }
            };
            order.push(u);
            all[u].align = all[u].align.max(align_bytes(align));
        }
    }
    let missing: Vec<&str> = (0..units.len())
        .filter(|u| !order.contains(u))
        .map(|u| units[u].name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!("it does not declare {}", missing.join(", ")));
    }
    let min_align = align_bytes(cs.align);
    let p = derive(&all, &order, &BTreeSet::new(), cls, min_align);
    Ok(Laid {
        placement: Placement {
            offsets: p.offsets[..units.len()].to_vec(),
            size: p.size,
            align: p.align,
        },
        extra: extra_units
            .iter()
            .map(|&u| Extra {
                name: all[u].name.clone(),
                offset: p.offsets[u],
                size: all[u].size,
            })
            .collect(),
        unsized_members,
        compiled_out,
    })
}

/// Offsets a C compiler gives `members` (name, alignment attribute) declared in that order.
/// Units the declaration does not name are an error; names the struct lacks (members
/// compiled out of this kernel's configuration) are skipped.
pub fn from_declaration(
    units: &[Unit],
    members: &[(String, Option<Align>)],
    cls: u64,
) -> Result<Placement, String> {
    let mut order: Vec<usize> = Vec::new();
    let mut aligned: Vec<Unit> = units.to_vec();
    for u in aligned.iter_mut() {
        u.align = u.natural_align;
    }
    for (name, align) in members {
        let Some(u) = units
            .iter()
            .position(|u| u.members.first() == Some(name) || u.name == *name)
        else {
            continue;
        };
        if order.contains(&u) {
            continue;
        }
        order.push(u);
        match align {
            Some(Align::Line) => aligned[u].align = aligned[u].align.max(cls),
            Some(Align::Bytes(n)) => aligned[u].align = aligned[u].align.max(*n),
            None => {}
        }
    }
    // Units named only by a later member (a bitfield run named by its first field) were
    // matched above; anything left is missing from the candidate.
    let missing: Vec<&str> = (0..units.len())
        .filter(|u| !order.contains(u))
        .map(|u| units[u].name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!("it does not declare {}", missing.join(", ")));
    }
    Ok(derive(&aligned, &order, &BTreeSet::new(), cls, 1))
}

/// Offsets as pahole printed them.
pub fn from_pahole(units: &[Unit], facts: &TypeFacts) -> Result<Placement, String> {
    let mut offsets = Vec::with_capacity(units.len());
    for u in units {
        let first = u.members.first().map(String::as_str).unwrap_or("");
        let Some(m) = facts
            .members
            .iter()
            .find(|m| !m.name.is_empty() && m.name == first)
        else {
            return Err(format!("it has no member '{first}'"));
        };
        // A member inside an inline anonymous struct/union: the unit starts at the
        // enclosing inline member, which pahole prints just before its members.
        let offset = if u.name.starts_with('{') {
            let idx = facts
                .members
                .iter()
                .position(|x| std::ptr::eq(x, m))
                .unwrap_or(0);
            facts.members[..idx]
                .iter()
                .rev()
                .find(|x| x.depth + 1 == m.depth)
                .map(|x| x.offset)
                .unwrap_or(m.offset)
        } else {
            m.offset
        };
        offsets.push(offset);
    }
    let size = facts.size.unwrap_or_else(|| {
        units
            .iter()
            .zip(&offsets)
            .map(|(u, o)| o + u.size)
            .max()
            .unwrap_or(0)
    });
    // pahole prints no alignment: the members' own.
    let align = units.iter().map(|u| u.align).max().unwrap_or(1);
    Ok(Placement {
        offsets,
        size,
        align,
    })
}
