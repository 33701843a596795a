//! Issue 13, items 4 and 5: inputs that used to panic or give a quiet wrong answer (exit 0)
//! now give a clear error or a loud warning.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{lineup, repo};
use lineup::profile::{self, PerfScriptOptions};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lineup-quiet-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const OPTIMIZE_SEED: [&str; 6] = [
    "optimize",
    "--type",
    "task_group",
    "--btf",
    "data/vmlinux-6.18.44.btf",
    "--c2c",
];

/// `optimize --header` with a header whose struct is not the type: before, a panic in
/// src/emit/patch.rs (exit 101) or a 0-byte patch reported as written. Now a one-line error
/// naming the header and the members that differ, and no patch file.
#[test]
fn header_that_does_not_match_the_type_is_refused_naming_members() {
    let dir = scratch("header");
    let h = dir.join("h.h");
    std::fs::write(&h, "struct task_group { int x; };\n").unwrap();
    let patch = dir.join("fix.patch");
    let mut args = OPTIMIZE_SEED.to_vec();
    let (h_s, patch_s) = (h.to_str().unwrap(), patch.to_str().unwrap());
    args.extend([
        "tests/data/c2c/seed000_paste.txt",
        "--header",
        h_s,
        "--patch",
        patch_s,
    ]);
    let out = lineup(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(h_s), "{err}");
    assert!(
        err.contains("declares 'x', which the type has not"),
        "{err}"
    );
    assert!(
        err.contains("'css'") && err.contains("which the header lacks"),
        "{err}"
    );
    assert!(!patch.exists(), "a patch was written");
    assert!(out.stdout.is_empty(), "partial output");
}

/// The seed's own header (kernel members in #ifdef blocks the build lacks are fine) still
/// gives a patch: the check refuses mismatches, not headers.
#[test]
fn the_seed_header_still_patches() {
    let mut args = OPTIMIZE_SEED.to_vec();
    args.extend([
        "tests/data/c2c/seed000_paste.txt",
        "--header",
        "examples/seeds/000/task_group.h",
    ]);
    let out = lineup(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("+++ b/examples/seeds/000/task_group.h"),
        "{text}"
    );
}

/// perf script output of memory samples, with the data address column removed as
/// `perf script -F` without `addr` prints it: the raw data-source value (68100142...) was
/// taken as the address, inventing cache lines. Now an error on the first such line.
#[test]
fn perf_script_without_addr_is_refused() {
    let text = std::fs::read_to_string(repo().join("tests/data/perf/mem_script.txt")).unwrap();
    let opts = PerfScriptOptions::default();
    assert!(profile::import_perf_script(&text, &opts).is_ok());
    let mut first_sample = None;
    let no_addr: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let words: Vec<&str> = l.split_whitespace().collect();
            // `... cpu/mem-loads,ldlat=30/P:  ADDR  DATA_SRC |OP ...`: drop ADDR.
            match words.iter().position(|w| w.starts_with("|OP")) {
                Some(op) if op >= 2 => {
                    first_sample.get_or_insert(i + 1);
                    let addr = words[op - 2];
                    l.replacen(&format!(" {addr} "), " ", 1)
                }
                _ => l.to_string(),
            }
        })
        .collect();
    let err = profile::import_perf_script(&no_addr.join("\n"), &opts)
        .unwrap_err()
        .to_string();
    let line = first_sample.unwrap();
    assert!(
        err.starts_with(&format!("line {line}: no data address")),
        "{err}"
    );
    assert!(err.contains("68100142") && err.contains("addr"), "{err}");
}

/// One Latin-1 byte in a perf script text rejected the whole file without a line number.
/// Now it is read, with a warning naming the line.
#[test]
fn latin1_byte_in_perf_script_is_read_with_a_warning() {
    let dir = scratch("latin1");
    let mut bytes = std::fs::read(repo().join("tests/data/perf/mem_script.txt")).unwrap();
    // Line 2 is a header comment (`# captured on ...`): put a Latin-1 `é` in it.
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes.insert(nl + 3, 0xe9);
    let f = dir.join("script.txt");
    std::fs::write(&f, &bytes).unwrap();
    let out = lineup(&[
        "import",
        "--perf-script",
        f.to_str().unwrap(),
        "-o",
        dir.join("p.json").to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}: line 2 not UTF-8", f.display())),
        "{err}"
    );
    assert!(dir.join("p.json").exists());
}

#[test]
fn c2c_file_read_as_it_comes_equals_the_text_import() {
    // `import --c2c` reads the file line by line (a large report is never held whole): CRLF
    // line ends and a Latin-1 byte read as they do when the text is imported whole.
    let dir = scratch("c2c-stream");
    let original = std::fs::read(repo().join("tests/data/c2c/perf6_hitm_full.txt")).unwrap();
    let mut bytes = Vec::new();
    for (i, line) in original.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(line);
        if i == 1 {
            // `# captured on ...`: a Latin-1 `é` in the header comment.
            bytes.push(0xe9);
        }
    }
    let f = dir.join("c2c.txt");
    std::fs::write(&f, &bytes).unwrap();
    let json = dir.join("p.json");
    let out = lineup(&[
        "import",
        "--c2c",
        f.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}: line 2 not UTF-8", f.display())),
        "{err}"
    );
    let mut streamed =
        profile::Profile::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (text, _) = profile::text::decode_lossy(&original);
    let whole = profile::import_c2c(&text).unwrap().swap_remove(0);
    streamed.provenance.input = None;
    assert_eq!(streamed, whole);
    assert!(!whole.lines.is_empty());
}

/// A sketch weight of 1e308 gave cost `inf` and `NaN%`: every number is bounded at import,
/// the error saying which value of which entry, on which line.
#[test]
fn sketch_values_out_of_range_are_refused_naming_the_entry() {
    let base = std::fs::read_to_string(repo().join("tests/data/optimize/kstats.toml")).unwrap();
    let cases = [
        (
            "weight = 100\ncpus = \"all\"\n\n[[type.access]]\nfield = \"limit\"",
            "weight = 1e308\ncpus = \"all\"\n\n[[type.access]]\nfield = \"limit\"",
            "kstats.events: weight = 1e308 is beyond 1e15",
        ),
        (
            "cpus = 160",
            "cpus = 4000000000",
            "machine.cpus = 4000000000: must be between 1 and",
        ),
    ];
    for (from, to, want) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let err = profile::import_sketch(&text).unwrap_err().to_string();
        assert!(err.contains(want), "{err}");
    }
    // And end to end: the 1e308 weight no longer reaches the cost model.
    let dir = scratch("sketch");
    let f = dir.join("big.toml");
    std::fs::write(&f, base.replacen("weight = 5", "weight = 1e308", 1)).unwrap();
    let out = lineup(&[
        "optimize",
        "--type",
        "kstats",
        "--dwarf",
        "tests/data/dwarf/bin/atomics-gcc-dwarf4.o",
        "--sketch",
        f.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line ") && err.contains("kstats.name: weight = 1e308"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("inf") && !stdout.contains("NaN"));
}

/// A DWARF name that is not UTF-8 (here a Latin-1 `é` patched into the string table of an
/// object gcc built) no longer makes a struct anonymous or a member nameless.
#[test]
fn non_utf8_dwarf_names_are_kept_lossily() {
    let dir = scratch("dwarf-name");
    let c = dir.join("n.c");
    std::fs::write(
        &c,
        "struct cafe_marker { int zzmember_marker; long b; };\nstruct cafe_marker v;\n",
    )
    .unwrap();
    let o = dir.join("n.o");
    let st = Command::new("cc")
        .args(["-g", "-c", "-o"])
        .arg(&o)
        .arg(&c)
        .status()
        .expect("cc");
    assert!(st.success());
    let mut bytes = std::fs::read(&o).unwrap();
    for (from, to) in [
        (&b"cafe_marker\0"[..], &b"caf\xe9_marker\0"[..]),
        (&b"zzmember_marker\0"[..], &b"zz\xffmember_marke\0"[..]),
    ] {
        let at = bytes
            .windows(from.len())
            .position(|w| w == from)
            .expect("name in the object");
        bytes[at..at + from.len()].copy_from_slice(to);
    }
    std::fs::write(&o, &bytes).unwrap();
    let out = lineup(&["layout", "--dwarf", o.to_str().unwrap(), "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("struct caf\u{fffd}_marker {"), "{text}");
    assert!(text.contains("zz\u{fffd}member_marke;"), "{text}");
}

/// Split DWARF (`-gsplit-dwarf`): the object holds only a skeleton unit, and lineup printed
/// nothing and said nothing. Now it warns, naming the .dwo, and reads the .dwo itself
/// (DWARF 5 and the GNU DWARF 4 extension).
#[test]
fn split_dwarf_is_named_and_its_dwo_is_read() {
    let dir = scratch("split");
    let c = dir.join("sp.c");
    std::fs::write(
        &c,
        "struct split_probe { int a; long b; char c[3]; };\nstruct split_probe v;\n",
    )
    .unwrap();
    for version in ["-gdwarf-5", "-gdwarf-4"] {
        let st = Command::new("gcc")
            .args(["-g", version, "-gsplit-dwarf", "-c", "sp.c", "-o", "sp.o"])
            .current_dir(&dir)
            .status()
            .expect("gcc");
        assert!(st.success());
        let obj = dir.join("sp.o");
        let out = lineup(&["layout", "--dwarf", obj.to_str().unwrap(), "--all"]);
        let err = stderr(&out);
        assert!(
            err.contains("warning:")
                && err.contains("1 compile unit keeps its types in split DWARF")
                && err.contains("sp.dwo"),
            "{version}: {err}"
        );
        let dwo = dir.join("sp.dwo");
        let out = lineup(&["layout", "--dwarf", dwo.to_str().unwrap(), "split_probe"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{version}: {}", stderr(&out));
        assert!(
            text.contains("long int                   b;                    /*     8     8 */"),
            "{version}: {text}"
        );
        assert!(
            text.contains("/* size: 24, cachelines: 1, members: 3 */"),
            "{text}"
        );
    }
}
