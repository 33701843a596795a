//! Replays the fuzz corpora (seeds and past crashes) through the readers and the printer, so a
//! fixed crash stays fixed without a nightly toolchain.

mod common;

use lineup::{emit, layout, readers::btf};

#[test]
fn btf_corpus_reads_or_fails_cleanly() {
    let dir = common::repo().join("fuzz/corpus/btf");
    let mut files = 0;
    let mut parsed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        files += 1;
        let Ok(types) = btf::parse(&data) else {
            continue;
        };
        parsed += 1;
        let mut out = Vec::new();
        for id in types.composites() {
            let l = layout::layout(&types, id, 64).expect("composite has a layout");
            emit::pahole::write_layout(&mut out, &types, &l);
        }
        // Whatever was read renders to complete declarations.
        assert!(
            out.is_empty() || out.ends_with(b";\n"),
            "{}",
            path.display()
        );
    }
    assert!(files >= 4 && parsed >= 3, "{files} files, {parsed} parsed");
}

/// Every file of `fuzz/corpus/<target>` (seeds, inputs the fuzzer kept, past crashes copied
/// by `bench/fuzz.sh`), sorted.
fn corpus(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = common::repo().join("fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

/// The bundled kernel BTF, read once: the fuzz targets bind profiles to it too.
fn bundled() -> &'static lineup::types::Types<'static> {
    static TYPES: std::sync::OnceLock<lineup::types::Types<'static>> = std::sync::OnceLock::new();
    TYPES.get_or_init(|| {
        let data: &'static [u8] = Box::leak(
            std::fs::read(common::bundled_btf())
                .unwrap()
                .into_boxed_slice(),
        );
        btf::parse(data).unwrap()
    })
}

#[test]
fn type_corpora_go_through_layout_pahole_c_and_json() {
    use lineup::stages::{TypeInput, check_types};
    for (target, kind, min_read) in [("btf", TypeInput::Btf, 3), ("dwarf", TypeInput::Dwarf, 3)] {
        let mut read = 0;
        for (path, data) in corpus(target) {
            eprintln!("{}", path.display());
            if check_types(kind, &data) > 0 {
                read += 1;
            }
        }
        assert!(
            read >= min_read,
            "{target}: only {read} inputs gave layouts"
        );
    }
}

#[test]
fn header_corpus_goes_through_rearrangement_and_patch() {
    let mut read = 0;
    for (path, data) in corpus("c_struct") {
        eprintln!("{}", path.display());
        if lineup::stages::check_header(&data) {
            read += 1;
        }
    }
    assert!(read >= 3, "only {read} headers read");
}

#[test]
fn profile_corpora_go_through_import_binding_diagnosis_and_optimizer() {
    use lineup::stages::{ProfileInput, check_profile};
    for (target, kind) in [
        ("c2c", ProfileInput::C2c),
        ("typeoff", ProfileInput::Typeoff),
        ("perf_script", ProfileInput::PerfScript),
        ("sketch", ProfileInput::Sketch),
    ] {
        let mut imported = 0;
        for (path, data) in corpus(target) {
            eprintln!("{}", path.display());
            imported += check_profile(kind, &data, bundled(), "task_group");
        }
        assert!(imported >= 1, "{target}: nothing imported");
    }
}

/// The same corpora through the reading stage alone (the `*_read` fuzz targets): what the
/// full run reads, the reader alone reads without panicking or multi-line errors.
#[test]
fn profile_corpora_go_through_the_readers_alone() {
    use lineup::stages::{ProfileInput, check_import};
    for (target, kind) in [
        ("c2c", ProfileInput::C2c),
        ("typeoff", ProfileInput::Typeoff),
        ("perf_script", ProfileInput::PerfScript),
        ("sketch", ProfileInput::Sketch),
    ] {
        let mut imported = 0;
        for (path, data) in corpus(target) {
            eprintln!("{}", path.display());
            imported += check_import(kind, &data);
        }
        assert!(imported >= 1, "{target}: nothing imported");
    }
    // A line past lineup's bound on text is refused in one line, as from a file.
    let mut long = b"Shared Data Cache Line Table\n".to_vec();
    long.extend(std::iter::repeat_n(b'=', lineup::input::MAX_LINE_BYTES + 1));
    assert_eq!(check_import(ProfileInput::C2c, &long), 0);
}

/// The malformed headers of issue 13 (a one-line body, `};` on the last member's line, a
/// stray `#endif`, the minimized `struct s{}`) are refused with an error naming the line,
/// not a panic; two declarations on one line move together.
#[test]
fn malformed_headers_are_refused_by_the_patch_with_the_line() {
    use lineup::stages::header_to_patch;
    let err = |text: &str| -> String {
        match header_to_patch(text, "s") {
            Err(e) => e,
            Ok(run) => run.rearranged[0].clone().expect_err(text),
        }
    };
    assert!(err("struct s { int x; };\n").contains("on one line (1)"));
    assert!(err("struct s{}").contains("on one line"));
    let e = err("struct s {\n\tint x;\n\tint y; };\n");
    assert!(
        e.contains("line 3") && e.contains("'y'") && e.contains("closing brace"),
        "{e}"
    );
    let e = err("struct s {\n\tint x;\n#endif\n\tint y;\n};\n");
    assert!(e.contains("line 3: #endif without #if"), "{e}");
    let run = header_to_patch("struct s {\n\tint a; int b;\n\tint c;\n};\n", "s").unwrap();
    // Reversed order c, b, a: `a; b;` cannot be split, so it moves after c as one line.
    assert_eq!(
        run.rearranged[0].as_deref().unwrap(),
        "struct s {\n\tint c;\n\tint a; int b;\n};\n"
    );
}

/// The seed's c2c paste goes all the way: bound to task_group, priced, optimized.
#[test]
fn seed_paste_reaches_the_optimizer() {
    let text =
        std::fs::read_to_string(common::repo().join("fuzz/corpus/c2c/seed000_paste.txt")).unwrap();
    let mut p = lineup::profile::import_c2c(&text).unwrap().remove(0);
    let runs = lineup::stages::profile_to_plan(&mut p, bundled(), "task_group").unwrap();
    let run = runs.iter().find(|r| r.type_name == "task_group").unwrap();
    assert!(run.accesses > 0 && run.diagnosed_lines > 0, "{run:?}");
    let (now, planned) = (run.current_cycles.unwrap(), run.planned_cycles.unwrap());
    assert!(planned <= now, "{run:?}");
}

/// The runtime's raw files (`fuzz/corpus/record_raw`: a real recording of
/// `tests/data/record/incr.c` built by clang at -O0 with `lineup cc`, and a copy cut off
/// inside a chunk): each reads into places sorted one per place and summary, or fails in
/// one line. The whole seed holds clang's compound `x++` records, each read back as a load
/// and a store of one place and code.
#[test]
fn record_raw_corpus_reads_or_fails_cleanly() {
    let files = corpus("record_raw");
    assert!(files.len() >= 2, "{} files", files.len());
    let mut updates = 0;
    for (path, data) in files {
        match lineup::record::trace::parse(&data, &path) {
            Err(e) => assert!(!e.to_string().contains('\n'), "{}: {e}", path.display()),
            Ok(p) => {
                for w in p.counted.windows(2) {
                    assert!(
                        (w[0].place(), w[0].summary) < (w[1].place(), w[1].summary),
                        "{}",
                        path.display()
                    );
                }
                if p.complete() {
                    // A load and a store of the same place and code, counted alike.
                    updates += p
                        .counted
                        .windows(2)
                        .filter(|w| {
                            let (a, b) = (&w[0], &w[1]);
                            (a.thread, a.addr, a.pc) == (b.thread, b.addr, b.pc)
                                && a.kind == lineup::record::sim::Kind::Load
                                && b.kind == lineup::record::sim::Kind::Store
                                && a.count == b.count
                                && a.count >= 2000
                        })
                        .count();
                }
            }
        }
    }
    // Each worker's `x++` of its own member, 2000 times.
    assert!(
        updates >= 2,
        "{updates} increments read as a load and a store"
    );
}

/// The bursts seed (`tests/data/record/bursts.c` recorded with `--sample bursts:10/40/0`,
/// kept with `--keep-raw`): the patched sites and each thread's executions between windows
/// read back.
#[test]
fn record_raw_bursts_seed_names_patched_sites_and_their_executions() {
    let path = common::repo().join("fuzz/corpus/record_raw/seed-bursts-clang-O1.bin");
    let p = lineup::record::trace::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
    assert!(p.complete());
    let b = p.bursts.as_ref().expect("a bursts chunk");
    assert_eq!((b.on_us, b.period_us), (10, 40));
    assert!(!b.sites.is_empty());
    assert!(!p.hits.is_empty());
    // Every execution counted between windows is of a patched site.
    for &(_, pc, n) in &p.hits {
        assert!(b.sites.binary_search(&pc).is_ok() && n > 0, "{pc:#x}");
    }
}

/// The typing corpus (`fuzz/corpus/typing`: the typer's unit-test program built by gcc and
/// clang at -O2 -g, tests/typing.rs's shapes, a copy cut off in its ELF headers): each image
/// reads and has accesses typed, or fails in one line, through what the `typing` fuzz target
/// runs.
#[test]
fn typing_corpus_types_accesses_or_fails_cleanly() {
    let files = corpus("typing");
    assert!(files.len() >= 3, "{} files", files.len());
    let mut typed_images = 0;
    for (path, data) in files {
        eprintln!("{}", path.display());
        if lineup::stages::check_typing(&data) > 0 {
            typed_images += 1;
        }
    }
    assert!(
        typed_images >= 3,
        "only {typed_images} images had accesses typed"
    );
}
