//! Issue 24 item 7: what `optimize` prints is what it priced. Every struct of the fixture BTF
//! (a 6.18 kernel) with members to move gets synthetic evidence (one member written from many
//! CPUs, one read on every CPU, one written by a single CPU); the plan's C declaration, in
//! kernel and userspace flavour, is compiled with gcc and clang after a prelude with the
//! kernel's x86-64 definitions of its macros and stand-ins of the right size and alignment for
//! every type it names, with a `_Static_assert` on every unit's offset and on the size: the
//! compilers must lay it out exactly as priced. The build-time checks lineup prints must hold
//! on its own declaration.
//!
//! Needs gcc and clang; a missing compiler is skipped with a note.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;

use lineup::analysis::cost::{self, Placement, Queueing, Stream, Unit};
use lineup::analysis::{machine, optimize};
use lineup::emit::c::Flavour;
use lineup::emit::proposal;
use lineup::layout::{Field, Layout};
use lineup::types::{Kind, TypeId, Types};

const KERNEL_PRELUDE: &str = "\
#define SMP_CACHE_BYTES 64
#define __aligned(x) __attribute__((__aligned__(x)))
#define ____cacheline_aligned __attribute__((__aligned__(SMP_CACHE_BYTES)))
#define __maybe_unused __attribute__((__unused__))
typedef unsigned char __u8;
#define __cacheline_group_begin(GROUP) __u8 __cacheline_group_begin__##GROUP[0]
#define __cacheline_group_end(GROUP) __u8 __cacheline_group_end__##GROUP[0]
#define offsetof(T, m) __builtin_offsetof(T, m)
#define sizeof_field(T, m) sizeof(((T *)0)->m)
#define offsetofend(T, m) (offsetof(T, m) + sizeof_field(T, m))
#define BUILD_BUG_ON(c) _Static_assert(!(c), #c)
#define CACHELINE_ASSERT_GROUP_MEMBER(T, G, M) BUILD_BUG_ON(!(offsetof(T, M) >= offsetofend(T, __cacheline_group_begin__##G) && offsetofend(T, M) <= offsetof(T, __cacheline_group_end__##G)))
#define CACHELINE_ASSERT_GROUP_SIZE(T, G, S) BUILD_BUG_ON(offsetof(T, __cacheline_group_end__##G) - offsetofend(T, __cacheline_group_begin__##G) > S)
";

const USER_PRELUDE: &str = "\
#define alignas _Alignas
#define static_assert _Static_assert
#define offsetof(T, m) __builtin_offsetof(T, m)
";

/// Stand-ins for the types a declaration names: structs, unions and typedefs of structs
/// as byte arrays of their size and alignment, typedefs of scalars as themselves, enums of
/// their size; pointed-to structs stay incomplete.
struct Prelude<'t, 'a> {
    types: &'t Types<'a>,
    skip: String,
    done: BTreeSet<(bool, TypeId)>,
    names: BTreeSet<String>,
    out: String,
}

impl Prelude<'_, '_> {
    fn blob(&self, id: TypeId) -> String {
        let size = self.types.size_of(id);
        let align = self.types.natural_align(id);
        format!("{{ _Alignas({align}) unsigned char __b[{size}]; }}")
    }

    /// Defines what naming `id` needs: its body where `by_value`, else only typedef names.
    fn need(&mut self, id: TypeId, by_value: bool, depth: usize) {
        if depth > 64 || !self.done.insert((by_value, id)) {
            return;
        }
        let t = self.types.get(id);
        match &t.kind {
            Kind::Pointer { target } => self.need(*target, false, depth + 1),
            Kind::Array { elem, .. } => self.need(*elem, by_value, depth + 1),
            Kind::Qualified { target, .. } | Kind::TypeTag { target, .. } => {
                self.need(*target, by_value, depth + 1)
            }
            Kind::FuncProto { ret, params, .. } => {
                self.need(*ret, false, depth + 1);
                for &p in params {
                    self.need(p, false, depth + 1);
                }
            }
            Kind::Typedef { target } => {
                let inner = self.types.resolve(*target);
                let anon = self.types.get(inner).name.is_empty();
                if !anon {
                    self.need(*target, by_value, depth + 1);
                }
                if !self.names.insert(format!("t {}", t.name)) {
                    return;
                }
                let anon = anon
                    && matches!(
                        self.types.get(inner).kind,
                        Kind::Struct(_) | Kind::Union(_) | Kind::Enum { .. }
                    );
                if anon {
                    let body = match &self.types.get(inner).kind {
                        Kind::Enum { .. } => enum_body(self.types, inner),
                        _ => self.blob(inner),
                    };
                    let kw = match self.types.get(inner).kind {
                        Kind::Union(_) => "union",
                        Kind::Enum { .. } => "enum",
                        _ => "struct",
                    };
                    let _ = writeln!(self.out, "typedef {kw} {body} {};", t.name);
                } else {
                    let d = lineup::types::cname::member_decl(self.types, *target, t.name);
                    let _ = writeln!(self.out, "typedef {} {};", d.type_part, d.declarator);
                }
            }
            Kind::Struct(c) | Kind::Union(c) if by_value && !t.name.is_empty() => {
                let kw = if matches!(t.kind, Kind::Union(_)) {
                    "union"
                } else {
                    "struct"
                };
                if t.name == self.skip || c.is_declaration {
                    return;
                }
                if self.names.insert(format!("s {}", t.name)) {
                    let _ = writeln!(self.out, "{kw} {} {};", t.name, self.blob(id));
                }
            }
            Kind::Struct(c) | Kind::Union(c) if by_value => {
                // Anonymous: printed inline, its members named here.
                for m in &c.members {
                    self.need(m.ty, true, depth + 1);
                }
            }
            Kind::Enum { .. } if !t.name.is_empty() => {
                if self.names.insert(format!("e {}", t.name)) {
                    let _ = writeln!(self.out, "enum {} {};", t.name, enum_body(self.types, id));
                }
            }
            _ => {}
        }
    }
}

fn enum_body(types: &Types<'_>, id: TypeId) -> String {
    let size = match types.get(id).kind {
        Kind::Enum { size, .. } => size,
        _ => 4,
    };
    let tag = format!("__lineup_e{id}");
    match size {
        1 => format!("{{ {tag} }} __attribute__((packed))"),
        2 => format!("{{ {tag} = 256 }} __attribute__((packed))"),
        8 => format!("{{ {tag} = 0x100000000ULL }}"),
        _ => format!("{{ {tag} }}"),
    }
}

/// Deterministic synthetic evidence, as a sketch: a member written (atomically) from 16
/// CPUs, one read on all 32, one written by one CPU, chosen among the struct's members by
/// the struct's place in the list.
fn streams(
    types: &Types<'_>,
    id: TypeId,
    name: &str,
    layout: &Layout,
    units: &[Unit],
    seed: u64,
) -> Vec<Stream> {
    // A unit by a member name the sketch can give (an anonymous member's first named one).
    let named: Vec<String> = units
        .iter()
        .filter(|u| u.size > 0 && u.size <= 64)
        .filter_map(|u| u.members.iter().find(|n| !n.is_empty()).cloned())
        .collect();
    if named.len() < 3 {
        return Vec::new();
    }
    let pick = |k: u64| {
        named[(seed.wrapping_mul(2654435761).wrapping_add(k * 40503) % named.len() as u64) as usize]
            .clone()
    };
    let mut toml = format!(
        "[sketch]\ntitle = \"roundtrip\"\n[machine]\ncpus = 32\nnuma_nodes = 2\ncacheline_size = 64\n[[type]]\nname = \"{name}\"\n"
    );
    for (k, (kind, by, cpus)) in [
        ("rmw", "hot_inc", "16"),
        ("load", "fast_read", "\"all\""),
        ("store", "owner", "1"),
    ]
    .into_iter()
    .enumerate()
    {
        let _ = writeln!(
            toml,
            "[[type.access]]\nfield = \"{}\"\nkind = \"{kind}\"\nby = \"{by}\"\nweight = 100\ncpus = {cpus}",
            pick(k as u64)
        );
    }
    let Ok(mut profile) = lineup::profile::sketch::import_sketch(&toml) else {
        return Vec::new();
    };
    let (accesses, _) = lineup::analysis::diagnose::accesses_for(&mut profile, types, id, name);
    cost::streams(units, layout, &accesses, 32)
}

struct Case {
    name: String,
    c_name: String,
    text: String,
    /// (expression naming a member, priced offset)
    offsets: Vec<(String, u64)>,
    size: u64,
}

/// `offsetof`-able name of each unit's first member, and its priced offset.
fn unit_offsets(layout: &Layout, units: &[Unit], placement: &Placement) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        let Some(&mi) = unit.member_indices.first() else {
            continue;
        };
        let f: &Field = &layout.members[mi];
        if f.is_bitfield() {
            continue;
        }
        // An anonymous member: its first named member, at its offset within.
        let (name, delta) = if f.name.is_empty() {
            match f
                .members
                .iter()
                .find(|m| !m.name.is_empty() && !m.is_bitfield())
            {
                Some(m) => (m.name.clone(), m.offset - f.offset),
                None => continue,
            }
        } else {
            (f.name.clone(), 0)
        };
        out.push((name, placement.offsets[u] + delta));
    }
    out
}

fn compile(cc: &str, text: &str, dir: &std::path::Path, tag: &str) -> Result<(), String> {
    let path = dir.join(format!("{tag}.c"));
    std::fs::write(&path, text).unwrap();
    let o = Command::new(cc)
        .args(["-std=gnu11", "-fsyntax-only", "-w", "-c"])
        .arg(&path)
        .output()
        .map_err(|e| format!("{cc}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&o.stderr);
        Err(err.lines().take(6).collect::<Vec<_>>().join("\n"))
    }
}

fn have(cc: &str) -> bool {
    Command::new(cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[ignore = "issue 24 item 7 open: 60 of 616 declarations still fail (30 structs: cname spellings of anonymous enums and function pointers, bit-fields packed across storage units, zero-size arrays mid-struct); run with --ignored"]
fn every_declaration_optimize_prints_compiles_to_the_priced_offsets() {
    let compilers: Vec<&str> = ["gcc", "clang"].into_iter().filter(|c| have(c)).collect();
    if compilers.is_empty() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let data = std::fs::read(common::bundled_btf()).unwrap();
    let mut types = lineup::readers::btf::parse(&data).unwrap();
    let cls = 64;
    let m = machine::preset("icelake-2s").unwrap();
    let mut ids: Vec<(String, TypeId)> = types
        .composites()
        .filter(|&id| !types.is_union(id) && !types.get(id).name.is_empty())
        .filter(|&id| {
            types
                .composite(id)
                .is_some_and(|c| !c.is_declaration && c.members.len() >= 3)
        })
        .map(|id| (types.get(id).name.to_string(), id))
        .collect();
    ids.sort();
    ids.dedup_by(|a, b| a.0 == b.0);
    // Every 20th struct (several hundred), plus the kernel structs with cache-line groups.
    let picked: Vec<(String, TypeId)> = ids
        .iter()
        .enumerate()
        .filter(|(i, (_, id))| {
            i % 20 == 0
                || types.composite(*id).is_some_and(|c| {
                    c.members
                        .iter()
                        .any(|m| m.name.starts_with("__cacheline_group_begin__"))
                })
        })
        .map(|(_, x)| x.clone())
        .collect();
    let mut cases: Vec<Case> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for (seed, (name, id)) in picked.iter().enumerate() {
        let Some(layout) = lineup::layout::layout(&types, *id, cls) else {
            continue;
        };
        let mut units = cost::units(&types, &layout);
        let st = streams(&types, *id, name, &layout, &units, seed as u64);
        if st.is_empty() {
            continue;
        }
        let current = cost::current_placement(&layout, &units);
        let min_align =
            optimize::fit_aligns(&mut units, &current, layout.forced_align.unwrap_or(1));
        let q = Queueing {
            reference: cost::busiest_line(&st, &current, cls, &m),
            utilization: 0.5,
        };
        let plan = match optimize::optimize(
            &units,
            &st,
            &current,
            min_align,
            &Default::default(),
            cls,
            &m,
            &q,
        ) {
            Ok(p) => p,
            Err(e) => {
                refused.push(format!("{name}: optimize: {e}"));
                continue;
            }
        };
        let now = cost::evaluate(&units, &st, &current, cls, &m, &q);
        let plan = match optimize::trailing_array(&layout, &units) {
            Some(t) => optimize::keep_last(plan, &units, t, cls, min_align, |p| {
                cost::evaluate(&units, &st, p, cls, &m, &q)
            }),
            None => plan,
        };
        let plan = if plan.cost.total_cycles() >= now.total_cycles() {
            optimize::as_current(plan, &units, &current, now)
        } else {
            plan
        };
        let new_layout = match proposal::layout_of(
            &mut types,
            *id,
            &layout,
            &units,
            &plan,
            cls,
            min_align,
            |_, _| {},
        ) {
            Ok(l) => l,
            Err(e) => {
                refused.push(format!("{name}: {e}"));
                continue;
            }
        };
        for flavour in [Flavour::Kernel, Flavour::Userspace] {
            match proposal::declaration(&new_layout, &units, &plan, &types, flavour) {
                Ok((_, text)) => cases.push(Case {
                    name: format!("{name} ({flavour:?})"),
                    c_name: new_layout.c_name(),
                    text: {
                        let mut p = Prelude {
                            types: &types,
                            skip: name.clone(),
                            done: BTreeSet::new(),
                            names: BTreeSet::new(),
                            out: String::new(),
                        };
                        for f in &new_layout.members {
                            p.need(f.ty, true, 0);
                        }
                        let prelude = match flavour {
                            Flavour::Kernel => KERNEL_PRELUDE,
                            Flavour::Userspace => USER_PRELUDE,
                        };
                        // The kernel flavour's check is a function: called once, so it is
                        // compiled.
                        format!("{prelude}{}\n{text}", p.out)
                    },
                    offsets: unit_offsets(&layout, &units, &plan.placement),
                    size: plan.placement.size,
                }),
                Err(e) => refused.push(format!("{name} ({flavour:?}): {e}")),
            }
        }
    }
    assert!(cases.len() >= 200, "only {} declarations", cases.len());
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("optimize-roundtrip");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mismatches: std::sync::Mutex<Vec<String>> = Default::default();
    let chunks: Vec<&[Case]> = cases.chunks(cases.len().div_ceil(4)).collect();
    std::thread::scope(|s| {
        for (k, chunk) in chunks.iter().enumerate() {
            let (dir, mismatches, compilers) = (&dir, &mismatches, &compilers);
            s.spawn(move || {
                for (i, c) in chunk.iter().enumerate() {
                    let mut text = c.text.clone();
                    for (member, off) in &c.offsets {
                        let _ = writeln!(
                            text,
                            "_Static_assert(__builtin_offsetof({}, {member}) == {off}, \"{member} at {off}\");",
                            c.c_name
                        );
                    }
                    let _ = writeln!(
                        text,
                        "_Static_assert(sizeof({}) == {}, \"size\");",
                        c.c_name, c.size
                    );
                    for cc in compilers.iter() {
                        if let Err(e) = compile(cc, &text, dir, &format!("{k}_{i}_{cc}")) {
                            mismatches
                                .lock()
                                .unwrap()
                                .push(format!("{} with {cc}: {e}", c.name));
                        }
                    }
                }
            });
        }
    });
    let mismatches = mismatches.into_inner().unwrap();
    let by_kind: BTreeMap<&str, usize> = refused.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(if r.contains("cannot tell") {
            "unsized"
        } else {
            "other"
        })
        .or_default() += 1;
        m
    });
    eprintln!(
        "{} structs picked, {} declarations compiled with {:?}, {} refused ({by_kind:?}), {} mismatches",
        picked.len(),
        cases.len(),
        compilers,
        refused.len(),
        mismatches.len()
    );
    for r in refused.iter().take(30) {
        eprintln!("refused: {r}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} declarations do not compile to the priced layout:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
}
