//! Typing accesses from their instructions (issue 25 item 1): small C programs compiled here
//! with gcc and clang at -O2 -g, whose accesses through struct pointers (a parameter, a call's
//! result, a pointer member loaded, container_of, a pointer spilled to the stack, a global,
//! an indexed array of structs, a list walk) are typed from the instruction and checked
//! against the member the source touches; a profile's coverage; binding typed rows exactly.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use lineup::analysis::bind::{self, BindInput, Domain, How};
use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile, Unit};
use lineup::readers::code::{CodeSource, decode_rows};
use lineup::readers::typing::{self, Typer};
use lineup::readers::{Format, InputFile, load};

const SHAPES: &str = r#"
#include <stddef.h>
#include <stdlib.h>

struct inner { long d; long e; };
struct obj { long a; long b; long c; struct inner *inner; };
struct node { struct node *next; struct node *prev; };
struct item { long key; struct node link; long val; };

struct obj gobj;
struct obj *table[16];

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))
#define NOINLINE __attribute__((noinline))

NOINLINE long param(struct obj *o) { return o->b; }
NOINLINE struct obj *lookup(int k) { return table[k & 15]; }
NOINLINE long returned(int k) { struct obj *o = lookup(k); return o->c + 1; }
NOINLINE long via_member(struct obj *o) { return o->inner->e; }
NOINLINE long from_node(struct node *n) {
    struct item *it = container_of(n, struct item, link);
    return it->val;
}
NOINLINE void opaque(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }
NOINLINE long spilled(struct obj *o) {
    struct obj *volatile slot = o;
    opaque(0);
    return slot->c;
}
NOINLINE void global_store(long x) { gobj.b = x; }
NOINLINE long indexed(struct obj *a, int i) { return a[i].c; }
NOINLINE long walk(struct node *head) {
    long n = 0;
    for (struct node *p = head; p; p = p->next)
        n += container_of(p, struct item, link)->key;
    return n;
}

int main(int argc, char **argv) {
    struct obj *o = calloc(4, sizeof *o);
    struct inner in = {1, 2};
    struct item it = {3, {0, 0}, 4};
    o->inner = &in;
    table[0] = o;
    long s = param(o) + returned(argc) + via_member(o) + from_node(&it.link) + spilled(o) +
             indexed(o, argc) + walk(&it.link);
    global_store(s);
    return (int)gobj.b;
}
"#;

/// Per function, the members its struct accesses touch: each must be typed, and no access
/// may be typed as anything else.
const EXPECTED: &[(&str, &[(&str, &str)])] = &[
    ("param", &[("obj", "b")]),
    ("returned", &[("obj", "c")]),
    ("via_member", &[("obj", "inner"), ("inner", "e")]),
    ("from_node", &[("item", "val")]),
    ("spilled", &[("obj", "c")]),
    ("global_store", &[("obj", "b")]),
    ("indexed", &[("obj", "c")]),
    ("walk", &[("item", "key"), ("node", "next")]),
];

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-typing-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `src` with `cc` at -O2 -g; `None` when that compiler is not installed.
fn compile(dir: &Path, cc: &str, src: &str, name: &str) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(format!("{name}-{cc}"));
    let r = Command::new(cc)
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(&c)
        .output();
    match r {
        Ok(r) if r.status.success() => Some(out),
        Ok(r) => panic!("{cc}: {}", String::from_utf8_lossy(&r.stderr)),
        Err(_) => {
            eprintln!("{cc} not installed: skipped");
            None
        }
    }
}

#[test]
fn struct_accesses_are_typed_from_their_instructions_with_gcc_and_clang() {
    let dir = temp_dir("shapes");
    for cc in ["gcc", "clang"] {
        let Some(bin) = compile(&dir, cc, SHAPES, "shapes") else {
            continue;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        for (function, members) in EXPECTED {
            let accesses = typer.accesses_in(function);
            assert!(!accesses.is_empty(), "{cc} {function}: no accesses");
            let typed: Vec<(String, String)> = accesses
                .iter()
                .filter_map(|(_, r)| r.as_ref().ok())
                .map(|t| (t.type_name.clone(), t.member.clone()))
                .collect();
            for (ty, m) in *members {
                assert!(
                    typed.iter().any(|(t, mm)| t == ty && mm == m),
                    "{cc} {function}: {ty}.{m} not typed; got {accesses:?}"
                );
            }
            for (t, m) in &typed {
                assert!(
                    members.iter().any(|(ty, mm)| ty == t && mm == m),
                    "{cc} {function}: typed {t}.{m}, which it does not touch: {accesses:?}"
                );
            }
            // The stack slot of `spilled` is a local, not a struct member.
            for (_, r) in &accesses {
                if let Err(e) = r {
                    assert_eq!(e.label, typing::STACK, "{cc} {function}: {e}");
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn row(symbol: &str, offset: u64, at: u64, loads: f64) -> Access {
    Access {
        offset: Some(offset),
        counts: Counts {
            loads,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(symbol.into()),
            symbol_offset: Some(at),
            object: Some("shapes-gcc".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The offset of the first access of `function` typed as `member`, from the symbol.
fn site(typer: &Typer<'_>, function: &str, member: &str) -> u64 {
    let start = typer.symbol_address(function).unwrap();
    let (pc, _) = typer
        .accesses_in(function)
        .into_iter()
        .find(|(_, r)| r.as_ref().is_ok_and(|t| t.member == member))
        .unwrap_or_else(|| panic!("{function}: no access to {member}"));
    pc - start
}

#[test]
fn a_profiles_coverage_counts_typed_rows_and_says_why_the_rest_were_not() {
    let dir = temp_dir("coverage");
    let Some(bin) = compile(&dir, "gcc", SHAPES, "shapes") else {
        return;
    };
    let file = InputFile::open(&bin).unwrap();
    let typer = Typer::new(&file).unwrap();
    let b = site(&typer, "param", "b");
    let spill = typer
        .accesses_in("spilled")
        .into_iter()
        .find(|(_, r)| r.is_err())
        .map(|(pc, _)| pc - typer.symbol_address("spilled").unwrap())
        .unwrap();
    let mut p = Profile::new("test", Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0x7f00_0000_1000,
        accesses: vec![row("param", 8, b, 30.0), row("spilled", 0, spill, 10.0)],
        ..Default::default()
    });
    let (typed, cov) = typing::type_rows(&typer, bin.to_str().unwrap(), &p);
    assert_eq!((cov.rows, cov.rows_typed), (2, 1));
    assert!(
        (cov.weight_typed / cov.weight - 0.75).abs() < 1e-9,
        "{cov:?}"
    );
    assert_eq!(typed.len(), 1);
    assert_eq!(typed[&(0x7f00_0000_1000, 0)].member, "b");
    assert_eq!(cov.untyped[typing::STACK].0, 1);
    let text = cov.describe();
    assert!(text.contains("75% of the weight (1 of 2 rows)"), "{text}");
    assert!(text.contains(typing::STACK), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_row_typed_from_its_instruction_binds_its_line_exactly() {
    let dir = temp_dir("bind");
    let Some(bin) = compile(&dir, "gcc", SHAPES, "shapes") else {
        return;
    };
    let file = InputFile::open(&bin).unwrap();
    let typer = Typer::new(&file).unwrap();
    // `it->val` through container_of: the displacement (0x10) is relative to the node, not to
    // the item; the typed offset (24) is the member's. The line starts 16 bytes into the item
    // when the row is at line offset 8.
    let val = site(&typer, "from_node", "val");
    let line_address = 0x7f00_0000_2000;
    let mut p = Profile::new("test", Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: line_address,
        accesses: vec![row("from_node", 8, val, 50.0)],
        ..Default::default()
    });
    let image = CodeSource::open(&bin, false).unwrap();
    let decoded = decode_rows(&image, None, &p);
    let op = &decoded[&(line_address, 0)];
    assert_eq!(op.displacement, 0x10);
    assert_eq!(op.typed.as_ref().unwrap().offset, 24);
    let types_file = InputFile::open(&bin).unwrap();
    let types = load(&types_file, Format::Dwarf, None).unwrap();
    let id = *types.find_composites("item").first().expect("struct item");
    let input = BindInput {
        domain: Some(Domain::User),
        decoded,
        ..Default::default()
    };
    let out = bind::bind_type(&mut p, &types, id, "item", &input);
    assert_eq!(out.bound.len(), 1, "{out:?}");
    assert_eq!(out.bound[0].binding, How::Exact);
    assert_eq!(out.bound[0].line_start, 16);
    // Bound as struct node (the register's declared type) the line is left unbound: the
    // instruction says it is an item's.
    let node = *types.find_composites("node").first().expect("struct node");
    p.lines[0].binding = None;
    let out = bind::bind_type(&mut p, &types, node, "node", &input);
    assert!(out.bound.is_empty(), "{out:?}");
    assert!(
        out.unbound[0].reason.contains("typed as struct item"),
        "{out:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_image_without_dwarf_is_one_clear_error() {
    let dir = temp_dir("nodwarf");
    let c = dir.join("plain.c");
    std::fs::write(&c, "int main(void) { return 0; }\n").unwrap();
    let out = dir.join("plain");
    let ok = Command::new("gcc")
        .args(["-O2", "-g0", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return;
    }
    let r = common::lineup(&[
        "typing",
        "--image",
        out.to_str().unwrap(),
        "--function",
        "main",
    ]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("debug_info") || err.contains("DWARF"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
