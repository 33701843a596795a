//! The DWARF reader against pahole, on objects that gcc and clang built at DWARF 4 and 5.
//! Inputs and oracle: tests/data/dwarf/ (bin/ and golden/, made by build.sh; see README.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lineup::readers::{Format, InputFile, load};
use lineup::types::{Kind, Qualifier, TypeId, Types};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dwarf")
}

fn bin(name: &str) -> PathBuf {
    data_dir().join("bin").join(name)
}

/// Outputs compared with the golden file of the same build without type units or zstd
/// compression: pahole 1.24 misreads type units and cannot read zstd.
const SAME_GOLDEN: &[(&str, &str)] = &[
    ("layouts-gcc-dwarf5-zstd.o", "layouts-gcc-dwarf5.o"),
    ("layouts-gcc-dwarf4-types.o", "layouts-gcc-dwarf4.o"),
    ("classes-gcc-dwarf4-types.o", "classes-gcc-dwarf4.o"),
    ("classes-gcc-dwarf4-types.so", "classes-gcc-dwarf4.o"),
    ("classes-clang-dwarf5-types.o", "classes-clang-dwarf5.o"),
    ("classes-clang-dwarf5-types.so", "classes-clang-dwarf5.o"),
];

/// Every output of build.sh that has an oracle, with its golden file.
fn outputs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(data_dir().join("bin"))
        .expect("tests/data/dwarf/bin exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        if name == "nodebug.o" || name.starts_with("atomics-") {
            continue;
        }
        let golden_of = SAME_GOLDEN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, g)| g.to_string())
            .unwrap_or_else(|| name.clone());
        let golden = data_dir()
            .join("golden")
            .join(format!("{golden_of}.pahole.txt"));
        assert!(
            golden.exists(),
            "{name}: no golden file {}",
            golden.display()
        );
        out.push((name, golden));
    }
    assert!(out.len() >= 25, "only {} outputs found", out.len());
    out
}

// ---------------------------------------------------------------------------------------------
// A small reader of pahole's text

#[derive(Debug, Default, Clone)]
struct PMember {
    /// "" for anonymous members and base classes (pahole's `<ancestor>`).
    name: String,
    offset: u64,
    size: u64,
    /// `(bit position in the storage unit at offset, width)`.
    bitfield: Option<(u64, u64)>,
    /// Members of an inline struct or union, with absolute offsets.
    children: Vec<PMember>,
    /// The line, for messages.
    line: String,
}

impl PMember {
    fn abs_bit(&self) -> u64 {
        self.offset * 8 + self.bitfield.map_or(0, |(bit, _)| bit)
    }
}

#[derive(Debug, Default)]
struct PType {
    kind: String,
    name: String,
    size: Option<u64>,
    members: Vec<PMember>,
    /// pahole printed an `<ERROR...>` line: a type it could not resolve.
    broken: bool,
    /// Named types whose definitions pahole prints inside this one (C++ nested classes).
    nested: Vec<String>,
    /// The whole block, to tell whether two blocks of one name are the same definition.
    text: String,
}

fn parse_pahole(text: &str) -> Vec<PType> {
    let mut out = Vec::new();
    let mut cur: Option<PType> = None;
    // Inline blocks being read: their members so far.
    let mut open: Vec<Vec<PMember>> = Vec::new();
    // For each open block, the name of the type it defines (`struct Inner {`), if any.
    let mut open_names: Vec<Option<String>> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        let Some(t) = cur.as_mut() else {
            if let Some(h) = raw.strip_suffix(" {")
                && let Some((kind, rest)) = h.split_once(' ')
                && matches!(kind, "struct" | "union" | "class")
            {
                let name = rest.split(" : ").next().unwrap_or(rest);
                cur = Some(PType {
                    kind: kind.to_string(),
                    name: name.to_string(),
                    ..PType::default()
                });
                open.clear();
                open_names.clear();
            }
            continue;
        };
        t.text.push_str(line);
        t.text.push('\n');
        if raw.starts_with('}') {
            out.push(cur.take().unwrap());
            continue;
        }
        if line.contains("<ERROR") {
            t.broken = true;
            continue;
        }
        if open.is_empty()
            && let Some(rest) = line.strip_prefix("/* size: ")
        {
            t.size = rest.split(',').next().and_then(|n| n.trim().parse().ok());
            continue;
        }
        // A base class: `/* struct Base <ancestor>; */ /* 0 8 */`.
        if line.starts_with("/*") && line.contains("<ancestor>") {
            if let Some((_, c)) = split_comment(line)
                && let Some((offset, size, _)) = parse_offsets(c)
            {
                push_member(
                    t,
                    &mut open,
                    PMember {
                        name: String::new(),
                        offset,
                        size,
                        line: line.to_string(),
                        ..PMember::default()
                    },
                );
            }
            continue;
        }
        if line.is_empty() || line.starts_with("/*") {
            continue;
        }
        if let Some(head) = line.strip_suffix('{') {
            open.push(Vec::new());
            let mut words = head.split_whitespace();
            let name = match (words.next(), words.next()) {
                (Some("struct" | "union" | "class"), Some(n)) => Some(n.to_string()),
                _ => None,
            };
            open_names.push(name);
            continue;
        }
        if line.starts_with("static ") || line.starts_with("extern ") {
            // A static member: no room in the struct.
            continue;
        }
        if let Some(closing) = line.strip_prefix('}') {
            let children = open.pop().unwrap_or_default();
            let defines = open_names.pop().flatten();
            // Without an offset comment the block was a nested type definition or an enum,
            // not a member.
            if let Some((decl, c)) = split_comment(closing)
                && let Some((offset, size, bit)) = parse_offsets(c)
            {
                let (name, width) = declared_name(decl);
                push_member(
                    t,
                    &mut open,
                    PMember {
                        name,
                        offset,
                        size,
                        bitfield: bit.zip(width),
                        children,
                        line: line.to_string(),
                    },
                );
                continue;
            }
            if let Some(n) = defines {
                t.nested.push(n);
            }
            continue;
        }
        // Methods, static members and pahole's `:0` markers have no offset comment.
        let Some((decl, c)) = split_comment(line) else {
            continue;
        };
        let Some((offset, size, bit)) = parse_offsets(c) else {
            continue;
        };
        let (name, width) = declared_name(decl);
        push_member(
            t,
            &mut open,
            PMember {
                name,
                offset,
                size,
                bitfield: bit.zip(width),
                line: line.to_string(),
                ..PMember::default()
            },
        );
    }
    assert!(cur.is_none(), "golden file ends inside a type");
    out
}

fn push_member(t: &mut PType, open: &mut [Vec<PMember>], m: PMember) {
    match open.last_mut() {
        Some(block) => block.push(m),
        None => t.members.push(m),
    }
}

/// `decl /* comment */` split at the last comment.
fn split_comment(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_end().strip_suffix("*/")?;
    let start = body.rfind("/*")?;
    Some((body[..start].trim(), body[start + 2..].trim()))
}

/// `off size` or `off: bit size`.
fn parse_offsets(c: &str) -> Option<(u64, u64, Option<u64>)> {
    if let Some((off, rest)) = c.split_once(':') {
        let mut it = rest.split_whitespace();
        let bit = it.next()?.parse().ok()?;
        let size = it.next()?.parse().ok()?;
        return Some((off.trim().parse().ok()?, size, Some(bit)));
    }
    let mut it = c.split_whitespace();
    let off = it.next()?.parse().ok()?;
    let size = it.next()?.parse().ok()?;
    it.next().is_none().then_some((off, size, None))
}

/// The member name of a declaration, and its bitfield width.
fn declared_name(decl: &str) -> (String, Option<u64>) {
    let decl = strip_attributes(decl.trim().trim_end_matches(';'));
    let decl = decl.trim();
    if let Some(start) = decl.find("(*") {
        let rest = decl[start + 2..].trim_start_matches('*');
        let end = rest.find([')', '[']).unwrap_or(rest.len());
        return (rest[..end].trim().to_string(), None);
    }
    let last = decl
        .rsplit(|c: char| c.is_whitespace() || c == '*' || c == '&')
        .next()
        .unwrap_or("");
    let last = last.split('[').next().unwrap_or("");
    match last.rsplit_once(':') {
        Some((n, w)) if !n.ends_with(':') => (n.to_string(), w.parse().ok()),
        _ => (last.to_string(), None),
    }
}

fn strip_attributes(decl: &str) -> String {
    let mut out = String::new();
    let mut rest = decl;
    while let Some(start) = rest.find("__attribute__") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// Comparing

/// Things pahole 1.24 gets wrong, checked by hand in the tests below instead.
/// A struct it cannot print at all:
const PAHOLE_BROKEN_TYPES: &[&str] = &["MemberPtrs"];
/// Members whose size pahole cannot work out (rvalue references have no type in 1.24):
const PAHOLE_BROKEN_SIZES: &[(&str, &str)] = &[("Derived", "rref")];

fn load_types(file: &InputFile) -> Types<'_> {
    load(file, Format::Dwarf, None).unwrap_or_else(|e| panic!("{e}"))
}

fn open(name: &str) -> InputFile {
    InputFile::open(&bin(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Compares composite `id` placed at absolute bit `base` with pahole's members. Returns the
/// first difference.
fn compare(
    types: &Types<'_>,
    owner: &str,
    id: TypeId,
    base: u64,
    want: &[PMember],
) -> Result<(), String> {
    let c = types
        .composite(id)
        .ok_or_else(|| format!("type [{id}] is not a struct or union"))?;
    let names: Vec<&str> = c.members.iter().map(|m| m.name).collect();
    let want_names: Vec<&str> = want.iter().map(|m| m.name.as_str()).collect();
    if names != want_names {
        return Err(format!("members {names:?}, pahole has {want_names:?}"));
    }
    for (m, w) in c.members.iter().zip(want) {
        let bit = base + m.bit_offset;
        let size = types.size_of(m.ty);
        let what = format!("member '{}' (pahole: `{}`)", m.name, w.line);
        if bit != w.abs_bit() {
            return Err(format!("{what}: at bit {bit}, pahole says {}", w.abs_bit()));
        }
        let want_width = w.bitfield.map_or(0, |(_, width)| width);
        if m.bitfield_size as u64 != want_width {
            return Err(format!("{what}: {} bits wide", m.bitfield_size));
        }
        let skip_size = PAHOLE_BROKEN_SIZES.contains(&(owner, m.name));
        if size != w.size && !skip_size {
            return Err(format!("{what}: {size} bytes"));
        }
        if !w.children.is_empty() {
            let inner = types.strip_arrays(m.ty);
            compare(types, owner, inner, bit, &w.children)
                .map_err(|e| format!("in '{}': {e}", m.name))?;
        }
    }
    Ok(())
}

fn composites_named<'t>(types: &'t Types<'_>) -> HashMap<&'t str, Vec<TypeId>> {
    let mut by_name: HashMap<&str, Vec<TypeId>> = HashMap::new();
    for id in types.composites() {
        let name = types.get(id).name;
        if !name.is_empty() {
            by_name.entry(name).or_default().push(id);
        }
    }
    by_name
}

#[test]
fn every_struct_pahole_prints_has_the_same_layout() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, golden) in outputs() {
        let expected = parse_pahole(&std::fs::read_to_string(&golden).unwrap());
        assert!(!expected.is_empty(), "{}: no types", golden.display());
        let file = open(&name);
        let types = load_types(&file);
        let ours = composites_named(&types);
        for want in &expected {
            if want.broken || PAHOLE_BROKEN_TYPES.contains(&want.name.as_str()) {
                continue;
            }
            checked += 1;
            let Some(candidates) = ours.get(want.name.as_str()) else {
                failures.push(format!("{name}: {} {}: missing", want.kind, want.name));
                continue;
            };
            let results: Vec<Result<(), String>> = candidates
                .iter()
                .map(|&id| {
                    let c = types.composite(id).unwrap();
                    let is_union = types.is_union(id);
                    if is_union != (want.kind == "union") {
                        return Err(format!("union is {is_union}"));
                    }
                    if let Some(size) = want.size
                        && c.size != size
                    {
                        return Err(format!("size {}, pahole says {size}", c.size));
                    }
                    compare(&types, &want.name, id, 0, &want.members)
                })
                .collect();
            if !results.iter().any(Result::is_ok) {
                let why = results.into_iter().find_map(Result::err).unwrap();
                failures.push(format!("{name}: {} {}: {why}", want.kind, want.name));
            }
        }
        // Each distinct definition once: as many of a name as pahole prints different
        // blocks (pahole repeats a struct with anonymous members once per compile unit).
        let mut pahole_texts: HashMap<&str, std::collections::HashSet<&str>> = HashMap::new();
        for want in &expected {
            pahole_texts
                .entry(want.name.as_str())
                .or_default()
                .insert(want.text.as_str());
            for n in &want.nested {
                pahole_texts
                    .entry(n.as_str())
                    .or_default()
                    .insert(n.as_str());
            }
        }
        let pahole_count: HashMap<&str, usize> =
            pahole_texts.iter().map(|(n, t)| (*n, t.len())).collect();
        for (n, ids) in &ours {
            if PAHOLE_BROKEN_TYPES.contains(n) {
                continue;
            }
            let want = pahole_count.get(n).copied().unwrap_or(0);
            let memberless = ids
                .iter()
                .all(|&id| types.composite(id).unwrap().members.is_empty());
            if want == 0 && memberless {
                // pahole leaves out some types without data members (`std::__byte_operand<T>`
                // of <cstddef>), though not all (`struct bpf_timer { __u64 :64; ... }`).
                continue;
            }
            if ids.len() != want {
                failures.push(format!(
                    "{name}: {} definitions of {n}, pahole prints {want}",
                    ids.len()
                ));
            }
        }
    }
    assert!(checked > 150, "only {checked} types checked");
    assert!(
        failures.is_empty(),
        "{} differences from pahole:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Many compile units

#[test]
fn two_units_keep_both_definitions_of_dup_and_one_of_the_shared_header() {
    for cc in ["gcc", "clang"] {
        for v in [4, 5] {
            let name = format!("dup-{cc}-dwarf{v}");
            let file = open(&name);
            let types = load_types(&file);
            let dups = types.find_composites("dup");
            assert_eq!(dups.len(), 2, "{name}: struct dup: {dups:?}");
            let origins: Vec<_> = dups
                .iter()
                .map(|&id| types.composite(id).unwrap().origin.clone().expect("origin"))
                .collect();
            assert_ne!(origins[0], origins[1], "{name}");
            let mut files: Vec<&str> = origins.iter().map(|o| o.file.as_str()).collect();
            files.sort();
            assert_eq!(files, ["dup_a.c", "dup_b.c"], "{name}");
            let mut units: Vec<&str> = origins.iter().map(|o| o.unit.as_str()).collect();
            units.sort();
            assert_eq!(units, ["dup_a.c", "dup_b.c"], "{name}");
            assert!(origins.iter().all(|o| o.line == 4), "{name}: {origins:?}");
            let sizes: Vec<u64> = dups.iter().map(|&id| types.size_of(id)).collect();
            assert!(
                sizes.contains(&8) && sizes.contains(&24),
                "{name}: {sizes:?}"
            );

            let shared = types.find_composites("shared_hdr");
            assert_eq!(shared.len(), 1, "{name}: struct shared_hdr: {shared:?}");
            let o = types.composite(shared[0]).unwrap().origin.clone().unwrap();
            assert_eq!((o.file.as_str(), o.line), ("shared.h", 5), "{name}");
            // Its self-pointer, in both units, points at the one definition left.
            let next = member(&types, "shared_hdr", "next").ty;
            match types.get(next).kind {
                Kind::Pointer { target } => assert_eq!(target, shared[0], "{name}"),
                ref k => panic!("{name}: next is {k:?}"),
            }
            // The anonymous struct behind `shared_anon_t` is listed once too.
            let anon: Vec<TypeId> = types
                .composites()
                .filter(|&id| {
                    let c = types.composite(id).unwrap();
                    types.get(id).name.is_empty()
                        && c.members.iter().map(|m| m.name).eq(["sum", "count"])
                })
                .collect();
            assert_eq!(anon.len(), 1, "{name}: shared_anon_t bodies {anon:?}");
        }
    }
}

#[test]
fn declarations_resolve_to_the_only_definition() {
    for cc in ["gcc", "clang"] {
        for v in [4, 5] {
            let name = format!("dup-{cc}-dwarf{v}");
            let file = open(&name);
            let types = load_types(&file);
            // shared.h only declares struct opaque_thing; dup_b.c defines it. The kept
            // shared_hdr may come from dup_a.c, where it is a declaration: it must lead to the
            // definition all the same.
            let handle = member(&types, "shared_hdr", "handle");
            let Kind::Pointer { target } = types.get(handle.ty).kind else {
                panic!("{name}: handle")
            };
            let c = types.composite(target).expect("a struct");
            assert!(!c.is_declaration, "{name}");
            assert_eq!(types.size_of(target), 4, "{name}");
            assert_eq!(types.find_composites("opaque_thing"), [target], "{name}");
        }
    }
    // A struct defined nowhere stays a declaration, and is not listed.
    let file = open("layouts-gcc-dwarf5.o");
    let types = load_types(&file);
    let opaque = member(&types, "self_ref", "opaque");
    let Kind::Pointer { target } = types.get(opaque.ty).kind else {
        panic!("{opaque:?}")
    };
    assert_eq!(types.get(target).name, "undefined_elsewhere");
    assert!(types.composite(target).unwrap().is_declaration);
    assert!(types.find_composites("undefined_elsewhere").is_empty());
}

// ---------------------------------------------------------------------------------------------
// By hand: what pahole does not show or cannot read

fn member<'t>(types: &'t Types<'_>, s: &str, m: &str) -> &'t lineup::types::Member<'t> {
    let id = *types
        .find_composites(s)
        .first()
        .unwrap_or_else(|| panic!("no struct {s}"));
    types
        .composite(id)
        .unwrap()
        .members
        .iter()
        .find(|x| x.name == m)
        .unwrap_or_else(|| panic!("no member {s}.{m}"))
}

fn every_build(stem: &str) -> Vec<String> {
    let mut out = Vec::new();
    for cc in ["gcc", "clang"] {
        for v in [4, 5] {
            out.push(format!("{stem}-{cc}-dwarf{v}.o"));
        }
    }
    out
}

#[test]
fn arrays_nest_outermost_first_and_flexible_arrays_have_no_count() {
    let mut builds = every_build("layouts");
    builds.push("layouts-gcc-dwarf5-gz.o".into());
    builds.push("layouts-gcc-dwarf5-zstd.o".into());
    builds.push("layouts-gcc-dwarf4-zdebug.o".into());
    builds.push("layouts-gcc-dwarf4-types.o".into());
    for name in builds {
        let file = open(&name);
        let t = load_types(&file);
        let dims = |ty: TypeId| {
            let mut out = Vec::new();
            let mut ty = ty;
            while let Kind::Array { elem, count } = t.get(ty).kind {
                out.push(count);
                ty = elem;
            }
            (out, t.get(ty).name)
        };
        assert_eq!(
            dims(member(&t, "matrix", "m").ty),
            (vec![2, 3], "int"),
            "{name}"
        );
        assert_eq!(
            dims(member(&t, "matrix", "cube").ty),
            (vec![2, 3, 4], "float"),
            "{name}"
        );
        assert_eq!(
            dims(member(&t, "matrix", "names").ty),
            (vec![4, 16], "char"),
            "{name}"
        );
        assert_eq!(
            dims(member(&t, "matrix", "grid").ty),
            (vec![2, 2], "bits"),
            "{name}"
        );
        assert_eq!(
            dims(member(&t, "flex", "data").ty),
            (vec![0], "char"),
            "{name}"
        );
        assert_eq!(
            dims(member(&t, "zero_len", "none").ty),
            (vec![0], "int"),
            "{name}"
        );
        assert_eq!(t.size_of(member(&t, "matrix", "cube").ty), 96, "{name}");
    }
}

#[test]
fn base_types_enums_qualifiers_and_function_pointers() {
    for name in every_build("layouts") {
        let file = open(&name);
        let t = load_types(&file);
        assert_eq!(t.pointer_size, 8);
        // Function pointer with a variadic prototype.
        let read = member(&t, "ops", "read");
        let Kind::Pointer { target } = t.get(read.ty).kind else {
            panic!("{name}: read")
        };
        let Kind::FuncProto {
            ret,
            ref params,
            variadic,
        } = t.get(target).kind
        else {
            panic!("{name}: read is not a function pointer")
        };
        assert_eq!(
            (t.get(ret).name, params.len(), variadic),
            ("int", 2, true),
            "{name}"
        );
        // Typedef chains and qualifiers.
        let mi = member(&t, "quals", "mi");
        assert_eq!(t.get(mi.ty).name, "myint_t");
        assert_eq!(t.get(t.resolve(mi.ty)).name, "unsigned int", "{name}");
        let cvc = member(&t, "quals", "cvc");
        let mut quals = Vec::new();
        let mut ty = cvc.ty;
        while let Kind::Qualified { qualifier, target } = t.get(ty).kind {
            quals.push(qualifier);
            ty = target;
        }
        quals.sort_by_key(|q| q.keyword());
        assert_eq!(quals, [Qualifier::Const, Qualifier::Volatile], "{name}");
        let rp = member(&t, "quals", "rp");
        assert!(
            matches!(
                t.get(rp.ty).kind,
                Kind::Qualified {
                    qualifier: Qualifier::Restrict,
                    ..
                }
            ),
            "{name}"
        );
        // Base types keep the compiler's names; sizes and kinds.
        let vl = t.strip_qualifiers(member(&t, "quals", "vl").ty);
        assert!(
            matches!(t.get(vl).name, "long unsigned int" | "unsigned long"),
            "{name}: {}",
            t.get(vl).name
        );
        assert!(matches!(
            t.get(vl).kind,
            Kind::Int {
                size: 8,
                signed: false,
                ..
            }
        ));
        let b = member(&t, "quals", "b");
        assert!(
            matches!(
                t.get(b.ty).kind,
                Kind::Int {
                    size: 1,
                    is_bool: true,
                    ..
                }
            ),
            "{name}"
        );
        let ld = member(&t, "quals", "ld");
        assert!(
            matches!(t.get(ld.ty).kind, Kind::Float { size: 16 }),
            "{name}"
        );
        let z = member(&t, "quals", "z");
        assert!(
            matches!(t.get(z.ty).kind, Kind::Float { size: 16 }),
            "{name}"
        );
        // Enums: size and (signed) values.
        let col = member(&t, "quals", "col");
        let Kind::Enum {
            size,
            signed,
            ref values,
        } = t.get(col.ty).kind
        else {
            panic!("{name}: col")
        };
        let vals: Vec<(&str, i64)> = values.iter().map(|v| (v.name, v.value as i64)).collect();
        assert_eq!(vals, [("RED", 0), ("GREEN", 5), ("BLUE", -1)], "{name}");
        assert_eq!((size, signed), (4, true), "{name}");
        let big = member(&t, "quals", "big");
        assert!(
            matches!(t.get(big.ty).kind, Kind::Enum { size: 8, .. }),
            "{name}"
        );
        // Declared alignments.
        assert_eq!(
            member(&t, "kstats", "misses").declared_align,
            Some(64),
            "{name}"
        );
        assert_eq!(
            member(&t, "aligned_members", "l").declared_align,
            Some(32),
            "{name}"
        );
        let ks = t.find_composites("kstats")[0];
        assert_eq!(t.composite(ks).unwrap().declared_align, Some(64), "{name}");
        assert_eq!(t.size_of(ks), 256, "{name}");
        // Origins of a single unit.
        let o = t.composite(ks).unwrap().origin.clone().unwrap();
        assert_eq!(
            (o.unit.as_str(), o.file.as_str()),
            ("layouts.c", "layouts.c"),
            "{name}"
        );
    }
}

#[test]
fn bitfields_have_absolute_bit_offsets() {
    let mut builds = every_build("layouts");
    builds.push("layouts-gcc-dwarf4-types.o".into());
    for name in builds {
        let file = open(&name);
        let t = load_types(&file);
        let bf = |s: &str, m: &str| {
            let m = member(&t, s, m);
            (m.bit_offset, m.bitfield_size)
        };
        assert_eq!(bf("bits", "a"), (0, 3), "{name}");
        assert_eq!(bf("bits", "b"), (3, 5), "{name}");
        assert_eq!(bf("bits", "flag"), (8, 1), "{name}");
        // After `unsigned int : 0`, a new unit.
        assert_eq!(bf("bits", "c"), (32, 7), "{name}");
        assert_eq!(bf("bits", "wide"), (64, 40), "{name}");
        assert_eq!(bf("bits", "more"), (128, 30), "{name}");
        assert_eq!(bf("bits", "ch"), (160, 4), "{name}");
        assert_eq!(bf("bits", "sh"), (164, 9), "{name}");
        assert_eq!(bf("bits", "tail"), (176, 0), "{name}");
        // Packed: fields straddle the int storage units.
        assert_eq!(bf("packed_bits", "x"), (8, 12), "{name}");
        assert_eq!(bf("packed_bits", "y"), (20, 20), "{name}");
        assert_eq!(bf("packed_bits", "z"), (40, 17), "{name}");
        assert_eq!(bf("packed_bits", "end"), (64, 0), "{name}");
        let sb = member(&t, "bits", "b");
        assert!(
            matches!(t.get(sb.ty).kind, Kind::Int { signed: true, .. }),
            "{name}"
        );
        let flag = member(&t, "bits", "flag");
        assert!(
            matches!(t.get(flag.ty).kind, Kind::Int { is_bool: true, .. }),
            "{name}"
        );
    }
}

#[test]
fn atomics() {
    for name in every_build("atomics") {
        let file = open(&name);
        let t = load_types(&file);
        let s = t.find_composites("atomics")[0];
        assert_eq!(t.size_of(s), 32, "{name}");
        let got: Vec<(&str, u64, u64)> = t
            .composite(s)
            .unwrap()
            .members
            .iter()
            .map(|m| (m.name, m.bit_offset / 8, t.size_of(m.ty)))
            .collect();
        assert_eq!(
            got,
            [
                ("c", 0, 1),
                ("ai", 4, 4),
                ("al", 8, 8),
                ("ap", 16, 8),
                ("ac", 24, 1)
            ],
            "{name}"
        );
        let ai = member(&t, "atomics", "ai");
        if name.contains("dwarf4") {
            // gcc and clang write DW_TAG_atomic_type only from DWARF 5 on.
            assert_eq!(t.get(ai.ty).name, "int");
            continue;
        }
        assert!(
            matches!(
                t.get(ai.ty).kind,
                Kind::Qualified {
                    qualifier: Qualifier::Atomic,
                    ..
                }
            ),
            "{name}"
        );
        assert_eq!(t.natural_align(s), 8, "{name}");
    }
}

#[test]
fn cxx_classes_references_and_member_pointers() {
    let mut builds = every_build("classes");
    builds.extend(
        SAME_GOLDEN
            .iter()
            .filter(|(n, _)| n.starts_with("classes"))
            .map(|(n, _)| n.to_string()),
    );
    for name in builds {
        let file = open(&name);
        let t = load_types(&file);
        let derived = t.find_composites("Derived");
        assert_eq!(derived.len(), 1, "{name}");
        let c = t.composite(derived[0]).unwrap();
        let got: Vec<(&str, u64, u64)> = c
            .members
            .iter()
            .map(|m| (m.name, m.bit_offset / 8, t.size_of(m.ty)))
            .collect();
        // Base classes are unnamed members; the static `instances` takes no room.
        assert_eq!(
            got,
            [
                ("", 0, 8),
                ("", 8, 8),
                ("extra", 16, 2),
                ("ref", 24, 8),
                ("cref", 32, 8),
                ("rref", 40, 8)
            ],
            "{name}"
        );
        assert_eq!(t.get(c.members[0].ty).name, "Base", "{name}");
        assert_eq!(t.get(c.members[1].ty).name, "Mixin", "{name}");
        assert!(
            matches!(t.get(c.members[5].ty).kind, Kind::Pointer { .. }),
            "{name}"
        );
        // Pointers to members: data 8 bytes, member function 16, nullptr_t 8.
        let mp = t.find_composites("MemberPtrs")[0];
        let got: Vec<(&str, u64, u64)> = t
            .composite(mp)
            .unwrap()
            .members
            .iter()
            .map(|m| (m.name, m.bit_offset / 8, t.size_of(m.ty)))
            .collect();
        assert_eq!(
            got,
            [("data_ptr", 0, 8), ("method_ptr", 8, 16), ("np", 24, 8)],
            "{name}"
        );
        assert_eq!(t.natural_align(mp), 8, "{name}");
        // The vtable pointer is a member.
        let v = t.find_composites("Virt")[0];
        let names: Vec<&str> = t
            .composite(v)
            .unwrap()
            .members
            .iter()
            .map(|m| m.name)
            .collect();
        // gcc calls it `_vptr.Virt`, clang `_vptr$Virt`.
        assert_eq!(names.len(), 2, "{name}");
        assert!(
            names[0].starts_with("_vptr") && names[1] == "v",
            "{name}: {names:?}"
        );
        // Template instances keep their names.
        assert_eq!(
            t.find_composites("Box<long int>").len() + t.find_composites("Box<long>").len(),
            1,
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn object_without_debug_info_says_so() {
    let file = open("nodebug.o");
    let err = load(&file, Format::Dwarf, None).unwrap_err().to_string();
    assert!(
        err.ends_with("no .debug_info section (not built with -g?)"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

fn temp_file(tag: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lineup-dwarf-test-{}-{tag}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn garbage_elf_is_a_one_line_error() {
    let mut junk = b"\x7fELF".to_vec();
    junk.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
    let p = temp_file("garbage", &junk);
    let file = InputFile::open(&p).unwrap();
    let err = load(&file, Format::Dwarf, None).unwrap_err().to_string();
    std::fs::remove_file(&p).ok();
    assert!(err.contains("not a valid ELF file"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

fn parse_bytes(bytes: &[u8]) -> Result<usize, String> {
    let arena = typed_arena::Arena::new();
    lineup::readers::dwarf::parse(bytes, &arena)
        .map(|t| t.len())
        .map_err(|e| e.to_string())
}

#[test]
fn truncated_and_corrupted_objects_never_panic() {
    for name in [
        "dup_b-clang-dwarf5.o",
        "dup_b-gcc-dwarf4.o",
        "classes-clang-dwarf5-types.o",
    ] {
        let good = std::fs::read(bin(name)).unwrap();
        assert!(parse_bytes(&good).is_ok());
        for len in (0..good.len()).step_by(97) {
            let _ = parse_bytes(&good[..len]);
        }
        let mut errors = 0;
        // About 300 places in each file (an odd stride, to hit every field alignment).
        let stride = (good.len() / 300) | 1;
        for pos in (0..good.len()).step_by(stride) {
            for v in [0x00, 0xff] {
                let mut bad = good.clone();
                bad[pos] = if bad[pos] == v { v ^ 0x80 } else { v };
                if let Err(e) = parse_bytes(&bad) {
                    assert!(!e.contains('\n') && !e.is_empty(), "{e}");
                    errors += 1;
                }
            }
        }
        assert!(errors > 0, "{name}: no corruption was noticed");
    }
}

#[test]
fn dwarf_of_a_non_elf_file_is_refused() {
    let p = temp_file("text", b"struct foo { int a; };\n");
    let file = InputFile::open(&p).unwrap();
    let err = load(&file, Format::Dwarf, None).unwrap_err().to_string();
    std::fs::remove_file(&p).ok();
    assert!(err.contains("not an ELF file"), "{err}");
}

/// How long a big input takes to read:
/// `LINEUP_DWARF_BENCH=path/to/elf cargo test --release --test dwarf_reader -- --ignored --nocapture`
#[test]
#[ignore]
fn parse_speed() {
    let Ok(path) = std::env::var("LINEUP_DWARF_BENCH") else {
        eprintln!("set LINEUP_DWARF_BENCH to an ELF file with DWARF");
        return;
    };
    let file = InputFile::open(Path::new(&path)).unwrap();
    let start = std::time::Instant::now();
    let types = load_types(&file);
    let took = start.elapsed();
    eprintln!(
        "{path}: {} types, {} composites in {took:.2?}",
        types.len(),
        types.composites().count()
    );
}
