//! AArch64 code behind evidence rows (issue 14 item 2): the A64 instruction at a row's code
//! address gives the member offset, as iced-x86 does for x86-64 (`tests/binding.rs`).
//! Objects are compiled here with the cross compiler (`gcc-aarch64-linux-gnu`); the member
//! offsets come from that compiler's DWARF, and `aarch64-linux-gnu-objdump` (binutils) is the
//! oracle for where each access is and what it encodes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use lineup::analysis::bind::{self, BindInput, Domain, How};
use lineup::analysis::fields::resolve_path;
use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile};
use lineup::readers::code::{CodeImage, CodeSource, Isa, Kallsyms, decode_rows};
use lineup::readers::{Format, InputFile, load};

const GCC: &str = "aarch64-linux-gnu-gcc";
const AS: &str = "aarch64-linux-gnu-as";
const OBJDUMP: &str = "aarch64-linux-gnu-objdump";

/// Whether the cross tools are here; scripts/test.sh installs them, so only a machine set up
/// otherwise skips, and says so.
fn cross_tools() -> bool {
    let have = |t: &str| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let ok = have(GCC) && have(AS) && have(OBJDUMP);
    if !ok {
        eprintln!(
            "skipped: {GCC}, {AS} or {OBJDUMP} is missing (apt-get install gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu; scripts/test.sh does)"
        );
    }
    ok
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lineup-a64-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles `src` for AArch64 with `gcc -O2 -g -c -march=MARCH` (no outline atomics, so the
/// atomics are instructions here rather than calls into libgcc).
fn compile(dir: &Path, src: &str, march: &str) -> PathBuf {
    let c = dir.join("s.c");
    std::fs::write(&c, src).unwrap();
    let o = dir.join(format!("s-{march}.o"));
    let st = Command::new(GCC)
        .args(["-O2", "-g", "-c", "-mno-outline-atomics"])
        .arg(format!("-march={march}"))
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .expect("aarch64 gcc");
    assert!(st.success());
    o
}

/// One memory access as objdump disassembles it: function, offset in it, mnemonic and the
/// operand text.
#[derive(Debug)]
struct Site {
    function: String,
    offset: u64,
    mnemonic: String,
    operands: String,
}

/// Every instruction with a memory operand through a general register (`[x3]`, `[x0, #8]`)
/// in `o`, as objdump (the oracle) prints it; stack (`[sp`) operands are left out.
fn memory_sites(o: &Path) -> Vec<Site> {
    let out = Command::new(OBJDUMP)
        .args(["-d", "--no-show-raw-insn"])
        .arg(o)
        .output()
        .expect("objdump");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut result = Vec::new();
    let mut func: Option<(String, u64)> = None;
    for line in text.lines() {
        // "0000000000000010 <set_d>:"
        if let Some(rest) = line.strip_suffix(">:") {
            let (addr, name) = rest.split_once(" <").unwrap();
            func = Some((name.to_string(), u64::from_str_radix(addr, 16).unwrap()));
            continue;
        }
        // "  10:\tstr\tx1, [x0, #48]"
        let Some((addr, insn)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Some((name, start)) = &func else { continue };
        if !insn.contains("[x") {
            continue;
        }
        let (mnemonic, operands) = insn.split_once('\t').unwrap_or((insn, ""));
        let at = u64::from_str_radix(addr.trim(), 16).unwrap();
        result.push(Site {
            function: name.clone(),
            offset: at - start,
            mnemonic: mnemonic.trim().to_string(),
            operands: operands.trim().to_string(),
        });
    }
    result
}

/// Accesses to members at known offsets, in the forms the kernel uses on shared data:
/// plain loads and stores (unsigned-offset, scaled), sign-extending loads, a byte store, a
/// pair load, acquire/release (`ldar`/`stlr`), exclusives (`ldxr`/`stxr`, `ldaxr`/`stlxr`
/// on armv8-a) and LSE atomics (`ldadd`, `casal` on armv8.1-a).
const STRUCT_S: &str = r#"
struct s { long a; int b; short c; char pad[34]; long d; long e; unsigned char f; long g[2]; };
long get_b(struct s *p) { return p->b; }
void set_d(struct s *p, long v) { p->d = v; }
void inc_e(struct s *p) { __atomic_fetch_add(&p->e, 1, __ATOMIC_RELAXED); }
long scaled_c(struct s *p, long x) { if (x > 3) x = x * 7 + 1; return x + p->c; }
long acq_d(struct s *p) { return __atomic_load_n(&p->d, __ATOMIC_ACQUIRE); }
void rel_e(struct s *p, long v) { __atomic_store_n(&p->e, v, __ATOMIC_RELEASE); }
void set_f(struct s *p, unsigned char v) { p->f = v; }
long sum_g(struct s *p) { return p->g[0] + p->g[1]; }
long cas_a(struct s *p, long o, long n)
{ __atomic_compare_exchange_n(&p->a, &o, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return o; }
"#;

/// The member each function touches.
fn member(f: &str) -> &'static str {
    match f {
        "get_b" => "b",
        "set_d" | "acq_d" => "d",
        "inc_e" | "rel_e" => "e",
        "scaled_c" => "c",
        "set_f" => "f",
        "sum_g" => "g",
        "cas_a" => "a",
        other => panic!("{other}"),
    }
}

#[test]
fn aarch64_decoded_displacement_is_the_member_offset() {
    if !cross_tools() {
        return;
    }
    let dir = temp_dir("members");
    let mut mnemonics = std::collections::BTreeSet::new();
    for march in ["armv8-a", "armv8.1-a"] {
        let o = compile(&dir, STRUCT_S, march);
        let file = InputFile::open(&o).unwrap();
        let types = load(&file, Format::Dwarf, None).unwrap();
        let id = types.find_composites("s")[0];
        let image = CodeImage::open(&o).unwrap();
        assert_eq!(image.isa(), Isa::Aarch64);
        let sites = memory_sites(&o);
        // Every function has at least one access, and the exclusives' loop has two.
        assert!(sites.len() >= 9, "{march}: {sites:#?}");
        for site in &sites {
            let op = image
                .operand_at_symbol(&site.function, site.offset)
                .unwrap_or_else(|| panic!("{march} {site:?}: not decoded"));
            let (moff, msize) = resolve_path(&types, id, member(&site.function)).unwrap();
            assert_eq!(
                op.displacement,
                moff as i64,
                "{march} {site:?}: {op:?} is not offsetof({})",
                member(&site.function)
            );
            // The struct pointer is the first argument, x0, wherever the base was made.
            assert_eq!(op.base, "x0", "{march} {site:?}: {op:?}");
            assert_eq!(op.size, Some(msize as u32), "{march} {site:?}: {op:?}");
            // The decoded text ends in objdump's mnemonic.
            let last = op.instruction.rsplit("; ").next().unwrap();
            assert!(
                last.starts_with(&site.mnemonic),
                "{march} {site:?}: {}",
                op.instruction
            );
            let m = site.mnemonic.as_str();
            let atomic = m.starts_with("ldadd") || m.starts_with("cas");
            assert_eq!(
                (op.reads, op.writes),
                (atomic || m.starts_with("ld"), atomic || m.starts_with("st")),
                "{march} {site:?}: {op:?}"
            );
            mnemonics.insert(site.mnemonic.clone());
        }
        // An access without an offset field had its base made by an `add` before it.
        let op = image
            .operand_at_symbol(
                "acq_d",
                sites.iter().find(|s| s.function == "acq_d").unwrap().offset,
            )
            .unwrap();
        assert!(
            op.instruction.starts_with("add x0, x0, #0x30; ldar"),
            "{op:?}"
        );
    }
    // The forms the issue names were all met.
    for m in [
        "ldrsw", "str", "ldrsh", "strb", "ldp", "ldar", "stlr", "ldxr", "stxr", "ldaxr", "stlxr",
        "ldadd", "casal",
    ] {
        assert!(mnemonics.contains(m), "{m} not compiled: {mnemonics:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Addressing forms, assembled by `aarch64-linux-gnu-as`: what objdump prints as the
/// immediate is the displacement for the offset and pre-index forms; post-index accesses
/// the base itself; `sp` and PC-relative literals are no struct member.
const FORMS: &str = r#"
    .text
    .globl forms
    .type forms, %function
forms:
    ldr x1, [x0, #16]!
    ldr x1, [x0], #16
    stp w1, w2, [x0, #-8]
    ldur w3, [x0, #-3]
    ldr q0, [x0, #32]
    ldrh w1, [x0, x2, lsl #1]
    ldr x1, [sp, #8]
    ldr x1, 1f
    add x5, x0, #1, lsl #12
    ldr x1, [x5, #8]
    add x6, x0, #0x40
    bl other
    ldar x1, [x6]
    mov x7, x0
    sub x7, x7, #0x10
    stlr w1, [x7]
    prfm pldl1keep, [x0, #64]
    ret
1:  .quad 0
    .size forms, .-forms
    .globl other
    .type other, %function
other:
    ret
"#;

#[test]
fn aarch64_addressing_forms_match_the_assembler() {
    if !cross_tools() {
        return;
    }
    let dir = temp_dir("forms");
    let s = dir.join("forms.s");
    std::fs::write(&s, FORMS).unwrap();
    let o = dir.join("forms.o");
    let st = Command::new(AS).arg(&s).arg("-o").arg(&o).status().unwrap();
    assert!(st.success());
    let image = CodeImage::open(&o).unwrap();
    let at = |n: u64| image.operand_at_symbol("forms", 4 * n);
    let sites = memory_sites(&o);
    let imm_of = |k: u64| -> i64 {
        // objdump: "x1, [x0, #16]!" → 16
        let site = sites.iter().find(|s| s.offset == 4 * k).unwrap();
        let t = &site.operands;
        let i = t.find("#").unwrap();
        let num: String = t[i + 1..]
            .chars()
            .take_while(|c| *c == '-' || c.is_ascii_hexdigit() || *c == 'x')
            .collect();
        match num.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16).unwrap(),
            None => num.parse().unwrap(),
        }
    };
    // Pre-index: the access is at base + imm.
    let op = at(0).unwrap();
    assert_eq!((op.displacement, op.size), (imm_of(0), Some(8)));
    assert_eq!(op.displacement, 16);
    // Post-index: at the base; the immediate is added afterwards.
    let op = at(1).unwrap();
    assert_eq!((op.displacement, op.size), (0, Some(8)), "{op:?}");
    // A pair of words: 8 bytes from base - 8 (imm7 scaled by 4).
    let op = at(2).unwrap();
    assert_eq!(
        (op.displacement, op.size, op.writes),
        (imm_of(2), Some(8), true)
    );
    assert_eq!(op.displacement, -8);
    // Unscaled (ldur) and a 16-byte vector register.
    assert_eq!(at(3).unwrap().displacement, imm_of(3));
    assert_eq!(at(3).unwrap().size, Some(4));
    let op = at(4).unwrap();
    assert_eq!((op.displacement, op.size), (imm_of(4), Some(16)));
    // Register offset: the index is named, the displacement is 0.
    let op = at(5).unwrap();
    assert_eq!(
        (op.displacement, op.size, op.index.as_str()),
        (0, Some(2), "x2")
    );
    // A local on the stack and a literal: no struct member.
    assert_eq!(at(6), None);
    assert_eq!(at(7), None);
    // `add x5, x0, #1, lsl #12` then `[x5, #8]`: 0x1008 from x0.
    let op = at(9).unwrap();
    assert_eq!(
        (op.displacement, op.base.as_str()),
        (0x1008, "x0"),
        "{op:?}"
    );
    // A call between the `add` and the access may have changed x6: not folded.
    let op = at(12).unwrap();
    assert_eq!((op.displacement, op.base.as_str()), (0, "x6"), "{op:?}");
    // `mov` and `sub` fold: x0 - 0x10, a 4-byte store-release.
    let op = at(15).unwrap();
    assert_eq!(
        (op.displacement, op.base.as_str(), op.size, op.writes),
        (-0x10, "x0", Some(4), true),
        "{op:?}"
    );
    // A prefetch is no access.
    assert_eq!(at(16), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A row at `symbol+offset` in object `o`.
fn row(offset: u64, f: &str, at: u64, loads: f64, stores: f64) -> Access {
    Access {
        offset: Some(offset),
        counts: Counts {
            loads,
            stores,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(f.into()),
            symbol_offset: Some(at),
            object: Some("s.o".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn aarch64_rows_bind_exactly_from_the_image_and_from_kernel_memory() {
    use object::{Object, ObjectSection, ObjectSymbol};
    if !cross_tools() {
        return;
    }
    let dir = temp_dir("bind");
    let o = compile(&dir, STRUCT_S, "armv8.1-a");
    let file = InputFile::open(&o).unwrap();
    let types = load(&file, Format::Dwarf, None).unwrap();
    let id = types.find_composites("s")[0];
    let sites = memory_sites(&o);
    let at = |f: &str| sites.iter().find(|s| s.function == f).unwrap().offset;
    // The object starts 8 bytes into a line: `d` (48) at line offset 0x38, `e` (56) at 0x0
    // of the next line, reached by `ldadd` whose base an `add` made.
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0x5555_0000_1000,
        accesses: vec![row(0x38, "set_d", at("set_d"), 0.0, 100.0)],
        ..Default::default()
    });
    p.lines.push(LineProfile {
        address: 0x5555_0000_1040,
        accesses: vec![row(0x0, "inc_e", at("inc_e"), 80.0, 80.0)],
        ..Default::default()
    });
    let decoded = decode_rows(&CodeSource::Image(CodeImage::open(&o).unwrap()), None, &p);
    assert_eq!(decoded.len(), 2);
    let input = BindInput {
        domain: Some(Domain::User),
        decoded: decoded.clone(),
        ..Default::default()
    };
    let out = bind::bind_type(&mut p.clone(), &types, id, "s", &input);
    let got: Vec<(i64, How)> = out
        .bound
        .iter()
        .map(|b| (b.line_start, b.binding))
        .collect();
    assert_eq!(got, [(-8, How::Exact), (56, How::Exact)], "{out:#?}");
    assert!(
        out.bound[1].reasons.iter().any(|r| r.contains("ldadd")),
        "{out:#?}"
    );

    // The same code as the live kernel's memory shows it: an ELF core of machine
    // EM_AARCH64 (183) mapping the text at a kernel address, placed by kallsyms.
    let bytes = std::fs::read(&o).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    let text = obj
        .section_by_name(".text")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    let base = 0xffff_8000_8001_0000u64;
    let mut kallsyms = String::new();
    for s in obj.symbols() {
        if s.kind() == object::SymbolKind::Text {
            let name = s.name().unwrap();
            kallsyms.push_str(&format!("{:016x} T {name}\n", base + s.address()));
        }
    }
    let core = dir.join("kcore");
    write_core(&core, 183, base, &text);
    let ks_path = dir.join("kallsyms");
    std::fs::write(&ks_path, &kallsyms).unwrap();
    let ks = Kallsyms::parse(&ks_path, &kallsyms).unwrap();
    let source = CodeSource::open(&core, true).unwrap();
    let from_core = decode_rows(&source, Some(&ks), &p);
    assert_eq!(from_core, decoded);

    // Code of a machine lineup does not decode is refused in one line naming the file.
    let other = dir.join("kcore-riscv");
    write_core(&other, 243, base, &text);
    let err = CodeSource::open(&other, true).err().unwrap().to_string();
    assert!(
        err.contains("kcore-riscv") && err.contains("x86-64 and AArch64"),
        "{err}"
    );
    let mut riscv = bytes.clone();
    riscv[18..20].copy_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    let ro = dir.join("riscv.o");
    std::fs::write(&ro, &riscv).unwrap();
    let err = CodeImage::open(&ro).err().unwrap().to_string();
    assert!(
        err.contains("riscv.o") && err.contains("x86-64 and AArch64"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A minimal ELF core (`/proc/kcore`'s shape): one `PT_LOAD` mapping `code` at `vaddr`.
fn write_core(path: &Path, machine: u16, vaddr: u64, code: &[u8]) {
    let mut f = vec![0u8; 4096];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2; // ELFCLASS64
    f[5] = 1; // little endian
    f[6] = 1; // EV_CURRENT
    f[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
    f[18..20].copy_from_slice(&machine.to_le_bytes());
    f[20..24].copy_from_slice(&1u32.to_le_bytes());
    f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
    f[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    f[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
    let ph = &mut f[64..120];
    ph[..4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    ph[4..8].copy_from_slice(&5u32.to_le_bytes()); // R+X
    ph[8..16].copy_from_slice(&4096u64.to_le_bytes()); // p_offset
    ph[16..24].copy_from_slice(&vaddr.to_le_bytes());
    ph[32..40].copy_from_slice(&(code.len() as u64).to_le_bytes()); // p_filesz
    ph[40..48].copy_from_slice(&(code.len() as u64).to_le_bytes()); // p_memsz
    f.extend_from_slice(code);
    std::fs::write(path, f).unwrap();
}
