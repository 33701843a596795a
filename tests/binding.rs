//! Binding a multi-object report's lines to the right object and field, or honestly not
//! (issue 14 item 2), on the real 6.18 BTF and on code compiled here.

mod common;

use std::path::Path;
use std::process::Command;

use lineup::analysis::bind::{self, BindInput, Domain, How, Selection};
use lineup::analysis::diagnose::{accesses_for, diagnose};
use lineup::analysis::fields::resolve_path;
use lineup::layout;
use lineup::profile::{Access, CodeLocation, Counts, LineProfile, Profile, import_c2c};
use lineup::readers::code::{CodeImage, CodeSource, decode_rows};
use lineup::readers::{Format, InputFile, load};

fn c2c(path: &str) -> Vec<Profile> {
    let text = std::fs::read_to_string(common::repo().join(path)).unwrap();
    import_c2c(&text).unwrap()
}

fn kernel_input() -> BindInput {
    BindInput {
        domain: Some(Domain::Kernel),
        ..Default::default()
    }
}

/// A kernel row: `function` at `offset` of the line.
fn row(offset: u64, function: &str, loads: f64, stores: f64) -> Access {
    Access {
        offset: Some(offset),
        counts: Counts {
            loads,
            stores,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(function.into()),
            object: Some("[kernel.kallsyms]".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Bytes 192..255 of task_group in the fixture (`se` 216, `cfs_rq` 224, `shares` 232), as
/// the kernel's own code touches them (kernel/sched/fair.c, core.c): tg_unthrottle_up and
/// tg_throttle_down read `tg->cfs_rq[cpu]`, sched_group_set_shares stores `tg->shares`,
/// update_cfs_group reads it in calc_group_shares (inlined). The first three take a
/// `struct task_group *`; update_cfs_group takes a `struct sched_entity *`. The weights are
/// made up; the functions, prototypes and offsets are the kernel's.
const TG_LINE: u64 = 0xff28_4d17_b5c0_f9c0;

fn task_group_line() -> LineProfile {
    LineProfile {
        address: TG_LINE,
        rank: Some(4),
        accesses: vec![
            row(0x20, "tg_unthrottle_up", 400.0, 0.0),
            row(0x20, "tg_throttle_down", 300.0, 0.0),
            row(0x28, "sched_group_set_shares", 0.0, 50.0),
            row(0x28, "update_cfs_group", 250.0, 0.0),
        ],
        ..Default::default()
    }
}

/// perf6_hitm_full.txt (two userspace ring-buffer lines and a kernel futex line) with seed
/// 000's task_group line (bytes 256..319, address from the seed's paste) and the line
/// just before it in the same object: one report of many objects.
fn multi_object_report() -> Profile {
    let mut p = c2c("tests/data/c2c/perf6_hitm_full.txt").remove(0);
    let seed = c2c("tests/data/c2c/seed000_paste.txt").remove(0);
    let mut seed_line = seed.lines[0].clone();
    seed_line.rank = Some(3);
    p.lines.push(seed_line);
    p.lines.push(task_group_line());
    p
}

fn fixture() -> InputFile {
    InputFile::open(&common::bundled_btf()).unwrap()
}

#[test]
fn task_group_binds_no_userspace_line() {
    let file = fixture();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("task_group")[0];
    let mut p = c2c("tests/data/c2c/perf6_hitm_full.txt").remove(0);
    let out = bind::bind_type(&mut p, &types, id, "task_group", &kernel_input());
    assert!(out.bound.is_empty(), "{out:#?}");
    assert_eq!(out.unbound.len(), 3, "{out:#?}");
    for u in &out.unbound[..2] {
        assert!(
            u.reason.starts_with("userspace data (code in ringbench)"),
            "{u:?}"
        );
    }
    // The futex line is kernel data, but its functions take futex structs.
    assert!(
        out.unbound[2].reason.contains("futex_hash_bucket"),
        "{:?}",
        out.unbound[2]
    );
    assert!(p.lines.iter().all(|l| l.binding.is_none()));

    // In a report that also holds task_group lines, those bind and only those.
    let mut p = multi_object_report();
    let out = bind::bind_type(&mut p, &types, id, "task_group", &kernel_input());
    let bound: Vec<u64> = out.bound.iter().map(|b| b.address).collect();
    assert_eq!(bound, [TG_LINE, 0xff28_4d17_b5c0_fa00], "{out:#?}");
    assert_eq!(out.unbound.len(), 3);
}

#[test]
fn cli_type_task_group_on_a_userspace_report_says_why_and_fails() {
    let tmp = std::env::temp_dir().join(format!("lineup-binding-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lineup"))
        .args(["diagnose", "--type", "task_group", "--c2c"])
        .arg(common::repo().join("tests/data/c2c/perf6_hitm_full.txt"))
        .arg("--btf")
        .arg(common::bundled_btf())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no partial output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no line of the report fits struct task_group")
            && err.contains("line 0x55d1c2a3e0c0: userspace data"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn rq_does_not_take_update_load_avg_stores_on_its_lock() {
    let file = fixture();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("rq")[0];
    let mut p = c2c("tests/data/c2c/seed000_paste.txt").remove(0);
    let out = bind::bind_type(&mut p, &types, id, "rq", &kernel_input());
    let (accesses, _) = accesses_for(&mut p, &types, id, "rq");
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, p.provenance.machine.cpus);
    // Wherever the line lands, update_load_avg's stores are not on rq.__lock: a spinlock
    // that update_load_avg (which takes a cfs_rq and a sched_entity) never takes. If it
    // binds at all, it is inside the cfs_rq that rq embeds, which the prototype names.
    for m in &d.members {
        assert_ne!(m.name, "__lock", "{out:#?}\n{d:#?}");
    }
    for b in &out.bound {
        let line = b.line_start;
        assert!(
            (128..128 + 512).contains(&line),
            "not inside rq.cfs: {b:#?}"
        );
        assert!(
            b.reasons
                .iter()
                .any(|r| r.contains("inside embedded structs")),
            "{b:#?}"
        );
    }
}

#[test]
fn overview_ranks_task_group_first_where_prototypes_name_it() {
    let file = fixture();
    let types = load(&file, Format::Btf, None).unwrap();
    let p = multi_object_report();
    let lines = bind::overview(&p, &types, &kernel_input(), &Selection::default(), false);
    assert_eq!(lines.len(), 5);
    // Userspace lines: no kernel type, and the overview says so.
    for l in &lines[..2] {
        assert_eq!(l.domain, Some(Domain::User));
        assert!(l.candidates.is_empty());
        assert!(
            l.note.as_deref().unwrap().contains("userspace data"),
            "{l:?}"
        );
    }
    // The futex line: futex_q_lock takes a futex_hash_bucket, _raw_spin_lock the spinlock
    // it embeds.
    assert_eq!(lines[2].candidates[0].type_name, "futex_hash_bucket");
    // The line whose functions' prototypes take a task_group.
    let tg = lines.iter().find(|l| l.address == TG_LINE).unwrap();
    let first = &tg.candidates[0];
    assert_eq!(first.type_name, "task_group", "{tg:#?}");
    assert_eq!(
        first.prototypes.functions,
        [
            "sched_group_set_shares",
            "tg_throttle_down",
            "tg_unthrottle_up"
        ]
    );
    assert!((first.prototypes.direct - 0.75).abs() < 1e-9, "{first:?}");
    assert!(tg.candidates.iter().any(|c| c.type_name == "sched_entity"));
    // Its neighbour (the seed's line) fits the same task_group object.
    assert_eq!(first.neighbours, [0xff28_4d17_b5c0_fa00], "{first:#?}");
    assert!(first.score > tg.candidates[1].score);
    // --line selects by the report's rank.
    let one = bind::overview(
        &p,
        &types,
        &kernel_input(),
        &Selection {
            ranks: vec![4],
            ..Default::default()
        },
        false,
    );
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].address, TG_LINE);
}

#[test]
fn two_lines_of_one_object_get_one_base() {
    let file = fixture();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("task_group")[0];
    // Alone, the line's offsets fit several placements.
    let mut alone = Profile::new("test", lineup::profile::Unit::Samples, 64);
    alone.lines.push(task_group_line());
    let out = bind::bind_type(&mut alone, &types, id, "task_group", &kernel_input());
    assert_eq!(out.bound.len(), 1);
    assert!(!out.bound[0].alternatives.is_empty(), "{out:#?}");
    // With the seed's line 64 bytes above it, one base fits both: bytes 192 and 256.
    let mut p = multi_object_report();
    let out = bind::bind_type(&mut p, &types, id, "task_group", &kernel_input());
    let starts: Vec<(i64, u32)> = out.bound.iter().map(|b| (b.line_start, b.object)).collect();
    assert_eq!(starts, [(192, 0), (256, 0)], "{out:#?}");
    assert!(out.bound.iter().all(|b| b.binding == How::Inferred));
    let (accesses, _) = accesses_for(&mut p, &types, id, "task_group");
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, None);
    let names: Vec<&str> = d.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["cfs_rq", "shares", "load_avg", "rt_se", "rt_rq"]);
}

#[test]
fn prototypes_outrank_member_names() {
    // rwsem_spin_on_owner takes a `struct rw_semaphore *`; mm_struct embeds one
    // (`mmap_lock`, bytes 184..223 in the fixture) and also has a member named `owner`
    // (1296). A row at offset 0x10 fits both readings by offset; the name alone pointed at
    // mm_struct.owner, the prototype puts it inside mmap_lock.
    let file = fixture();
    let types = load(&file, Format::Btf, None).unwrap();
    let id = types.find_composites("mm_struct")[0];
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0xffff_8881_0000_0040,
        accesses: vec![row(0x10, "rwsem_spin_on_owner", 500.0, 0.0)],
        ..Default::default()
    });
    let out = bind::bind_type(&mut p, &types, id, "mm_struct", &kernel_input());
    assert_eq!(out.bound.len(), 1, "{out:#?}");
    let (accesses, _) = accesses_for(&mut p, &types, id, "mm_struct");
    let l = layout::layout(&types, id, 64).unwrap();
    let d = diagnose(&l, &accesses, None);
    let names: Vec<&str> = d.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["mmap_lock"], "{out:#?}");
}

/// Compiles `src` with `gcc -O2 -g -c` into `dir`, returning the object's path.
fn compile(dir: &Path, src: &str) -> std::path::PathBuf {
    let c = dir.join("s.c");
    std::fs::write(&c, src).unwrap();
    let o = dir.join("s.o");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status()
        .expect("gcc");
    assert!(st.success());
    o
}

/// Per function, the offset of its first instruction through `%rdi` (the struct pointer),
/// as objdump (the oracle) disassembles it.
fn rdi_accesses(o: &Path) -> Vec<(String, u64)> {
    let out = Command::new("objdump")
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
        // "  10:\tmov    %rsi,0x30(%rdi)"
        let Some((addr, insn)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        if let Some((name, start)) = &func
            && insn.contains("(%rdi)")
            && !result.iter().any(|(n, _): &(String, u64)| n == name)
        {
            let at = u64::from_str_radix(addr.trim(), 16).unwrap();
            result.push((name.clone(), at - start));
        }
    }
    result
}

const STRUCT_S: &str = r#"
struct s { long a; int b; short c; char pad[34]; long d; long e; };
long get_b(struct s *p) { return p->b; }
void set_d(struct s *p, long v) { p->d = v; }
void inc_e(struct s *p) { __atomic_fetch_add(&p->e, 1, __ATOMIC_RELAXED); }
long scaled_c(struct s *p, long x) { if (x > 3) x = x * 7 + 1; return x + p->c; }
"#;

#[test]
fn decoded_displacement_is_the_member_offset() {
    let dir = std::env::temp_dir().join(format!("lineup-decode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir, STRUCT_S);
    let file = InputFile::open(&o).unwrap();
    let types = load(&file, Format::Dwarf, None).unwrap();
    let id = types.find_composites("s")[0];
    let image = CodeImage::open(&o).unwrap();
    let sites = rdi_accesses(&o);
    let member = |f: &str| match f {
        "get_b" => "b",
        "set_d" => "d",
        "inc_e" => "e",
        "scaled_c" => "c",
        other => panic!("{other}"),
    };
    assert_eq!(sites.len(), 4, "{sites:?}");
    // scaled_c's access is not its first instruction: symbol+offset must be followed.
    assert!(sites.iter().any(|(f, off)| f == "scaled_c" && *off > 0));
    for (f, off) in &sites {
        let op = image.operand_at_symbol(f, *off).unwrap();
        let (moff, msize) = resolve_path(&types, id, member(f)).unwrap();
        assert_eq!(op.displacement, moff as i64, "{f}+{off:#x}: {op:?}");
        assert_eq!(op.size, Some(msize as u32), "{f}: {op:?}");
        assert_eq!(op.base, "rdi");
    }
    let op = image.operand_at_symbol("set_d", 0).unwrap();
    assert!(op.writes && !op.reads, "{op:?}");
    let op = image.operand_at_symbol("inc_e", 0).unwrap();
    assert!(
        op.writes && op.reads,
        "a locked add reads and writes: {op:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn decoded_rows_bind_exactly() {
    let dir = std::env::temp_dir().join(format!("lineup-exact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir, STRUCT_S);
    let file = InputFile::open(&o).unwrap();
    let types = load(&file, Format::Dwarf, None).unwrap();
    let id = types.find_composites("s")[0];
    let image = CodeImage::open(&o).unwrap();
    let sites = rdi_accesses(&o);
    let at = |f: &str| sites.iter().find(|s| s.0 == f).unwrap().1;
    // An object starting 8 bytes into a line: `d` (48) at line offset 0x38, and in the
    // next line `e` (56) at 0x0. By offsets alone the struct could lie elsewhere; the
    // decoded displacements say where.
    let user_row = |offset: u64, f: &str, loads: f64, stores: f64| Access {
        offset: Some(offset),
        counts: Counts {
            loads,
            stores,
            ..Default::default()
        },
        code: Some(CodeLocation {
            symbol: Some(f.into()),
            symbol_offset: Some(at(f)),
            object: Some("s.o".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    p.lines.push(LineProfile {
        address: 0x5555_0000_1000,
        accesses: vec![user_row(0x38, "set_d", 0.0, 100.0)],
        ..Default::default()
    });
    p.lines.push(LineProfile {
        address: 0x5555_0000_1040,
        accesses: vec![user_row(0x0, "inc_e", 80.0, 80.0)],
        ..Default::default()
    });
    let decoded = decode_rows(&CodeSource::Image(image), None, &p);
    assert_eq!(decoded.len(), 2);
    let input = BindInput {
        domain: Some(Domain::User),
        decoded,
        ..Default::default()
    };
    let out = bind::bind_type(&mut p, &types, id, "s", &input);
    let got: Vec<(i64, How)> = out
        .bound
        .iter()
        .map(|b| (b.line_start, b.binding))
        .collect();
    assert_eq!(got, [(-8, How::Exact), (56, How::Exact)], "{out:#?}");
    assert!(out.bound[0].reasons.iter().any(|r| r.contains("0x30")));
    let (accesses, _) = accesses_for(&mut p, &types, id, "s");
    let offs: Vec<u64> = accesses.iter().filter_map(|a| a.offset).collect();
    assert_eq!(offs, [48, 56]);

    // Without the code the same rows bind, marked inferred.
    let mut p2 = p.clone();
    for l in &mut p2.lines {
        l.binding = None;
    }
    let out = bind::bind_type(
        &mut p2,
        &types,
        id,
        "s",
        &BindInput {
            domain: Some(Domain::User),
            ..Default::default()
        },
    );
    assert!(out.bound.iter().all(|b| b.binding == How::Inferred));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_overview_ranks_types_per_line_in_text_and_json() {
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lineup"))
            .args(["diagnose", "--c2c"])
            .arg(common::repo().join("tests/data/c2c/perf6_hitm_full.txt"))
            .arg("--btf")
            .arg(common::bundled_btf())
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&[]);
    assert!(
        text.contains("line 0 0x55d1c2a3e0c0 (userspace data): ring_push, ring_pop"),
        "{text}"
    );
    assert!(text.contains("1. futex_hash_bucket at bytes "), "{text}");
    assert!(text.contains("(inferred, score "), "{text}");
    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let lines = json["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["domain"], "user");
    assert!(lines[0]["candidates"].as_array().unwrap().is_empty());
    let first = &lines[2]["candidates"][0];
    assert_eq!(first["type_name"], "futex_hash_bucket");
    assert_eq!(first["binding"], "inferred");
    assert!(
        first["prototypes"]["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "futex_q_lock"),
        "{first}"
    );
    // --address picks one line by any byte of it.
    let json: serde_json::Value =
        serde_json::from_str(&run(&["--json", "--address", "0xffff8f2a41c3d248"])).unwrap();
    let lines = json["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["address"], "0xffff8f2a41c3d240");
}

#[test]
fn dwarf_subprograms_give_prototypes_too() {
    let dir = std::env::temp_dir().join(format!("lineup-dwarfproto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir, STRUCT_S);
    let file = InputFile::open(&o).unwrap();
    let types = load(&file, Format::Dwarf, None).unwrap();
    let arena = typed_arena::Arena::new();
    let protos = lineup::readers::dwarf::function_prototypes(file.bytes(), &arena).unwrap();
    let of = |f: &str| protos.iter().find(|p| p.0 == f).map(|p| p.1.clone());
    assert_eq!(of("set_d"), Some(vec!["s".to_string()]));
    assert_eq!(of("scaled_c"), Some(vec!["s".to_string()]));
    // A userspace line whose rows name those functions: `s` is the candidate, by prototype.
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    let mut r = row(0x30, "set_d", 0.0, 100.0);
    r.code.as_mut().unwrap().object = Some("s.o".into());
    p.lines.push(LineProfile {
        address: 0x5555_0000_1000,
        accesses: vec![r],
        ..Default::default()
    });
    let input = BindInput {
        domain: Some(Domain::User),
        prototypes: protos,
        ..Default::default()
    };
    let lines = bind::overview(&p, &types, &input, &Selection::default(), false);
    let first = &lines[0].candidates[0];
    assert_eq!(first.type_name, "s");
    assert_eq!(first.prototypes.functions, ["set_d"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ELF core file as /proc/kcore is: one `PT_LOAD` segment mapping `vaddr` to `code`.
/// (This VM has no /proc/kcore; the layout follows the ELF64 spec for ET_CORE files.)
fn write_core(path: &Path, vaddr: u64, code: &[u8]) {
    let mut f = vec![0u8; 4096];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2; // ELFCLASS64
    f[5] = 1; // little endian
    f[6] = 1; // EV_CURRENT
    f[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
    f[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
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

#[test]
fn kernel_memory_and_kallsyms_decode_like_the_image() {
    use object::{Object, ObjectSection, ObjectSymbol};
    let dir = std::env::temp_dir().join(format!("lineup-kcore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir, STRUCT_S);
    let bytes = std::fs::read(&o).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    let text = obj
        .section_by_name(".text")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    let base = 0xffff_ffff_8100_0000u64;
    let mut kallsyms = String::new();
    for s in obj.symbols() {
        if s.kind() == object::SymbolKind::Text {
            kallsyms.push_str(&format!(
                "{:016x} T {}\n",
                base + s.address(),
                s.name().unwrap()
            ));
        }
    }
    let core = dir.join("kcore");
    write_core(&core, base, &text);
    let ks_path = dir.join("kallsyms");
    std::fs::write(&ks_path, &kallsyms).unwrap();
    let ks = lineup::readers::code::Kallsyms::parse(&ks_path, &kallsyms).unwrap();
    // Without kallsyms a core is refused, naming the fix.
    let err = CodeSource::open(&core, false).err().unwrap().to_string();
    assert!(err.contains("--kallsyms"), "{err}");
    let source = CodeSource::open(&core, true).unwrap();
    assert!(matches!(source, CodeSource::Core(_)));
    let sites = rdi_accesses(&o);
    let image = CodeImage::open(&o).unwrap();
    for (f, off) in &sites {
        let from_image = image.operand_at_symbol(f, *off).unwrap();
        assert_eq!(
            source.operand_at_symbol(f, *off, Some(&ks)).as_ref(),
            Some(&from_image),
            "{f}+{off:#x}"
        );
        // A raw code address, as perf prints it for a kernel with KASLR.
        let addr = ks.address_of(f).unwrap() + off;
        assert_eq!(ks.locate(addr), Some((f.as_str(), *off)));
        assert_eq!(
            source.operand_at_address(addr, Some(&ks)).as_ref(),
            Some(&from_image)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_marks_decoded_bindings_exact() {
    let dir = std::env::temp_dir().join(format!("lineup-cliexact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = compile(&dir, STRUCT_S);
    let sites = rdi_accesses(&o);
    let at = |f: &str| sites.iter().find(|s| s.0 == f).unwrap().1;
    let mut p = Profile::new("test", lineup::profile::Unit::Samples, 64);
    let mut r = row(0x38, "set_d", 0.0, 100.0);
    r.code.as_mut().unwrap().symbol_offset = Some(at("set_d"));
    r.code.as_mut().unwrap().object = Some("s.o".into());
    let mut r2 = row(0x0, "inc_e", 50.0, 50.0);
    r2.code.as_mut().unwrap().symbol_offset = Some(at("inc_e"));
    r2.code.as_mut().unwrap().object = Some("s.o".into());
    p.lines.push(LineProfile {
        address: 0x5555_0000_1000,
        accesses: vec![r],
        ..Default::default()
    });
    p.lines.push(LineProfile {
        address: 0x5555_0000_1040,
        accesses: vec![r2],
        ..Default::default()
    });
    let pj = dir.join("p.json");
    std::fs::write(&pj, p.to_json()).unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lineup"))
            .args(["diagnose", "--type", "s", "--profile"])
            .arg(&pj)
            .arg("--dwarf")
            .arg(&o)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let vm = o.to_str().unwrap();
    let text = run(&["--vmlinux", vm]);
    assert!(
        text.contains("data line 0x555500001000 is bytes -8..55 of the struct (exact)"),
        "{text}"
    );
    // The object file has DWARF: the row is typed from its instruction (p, a `struct s *`,
    // in rdi), which names the member as well as the displacement does.
    assert!(
        text.contains("typed from its instruction `mov [rdi+0x30], rsi`: struct s +48 d"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&["--vmlinux", vm, "--json"])).unwrap();
    let b = json["bindings"].as_array().unwrap();
    assert_eq!(b.len(), 2);
    assert!(b.iter().all(|x| x["binding"] == "exact"), "{json}");
    // Without the code: inferred, and said so.
    let text = run(&[]);
    assert!(text.contains("(inferred"), "{text}");
    assert!(!text.contains("(exact"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
