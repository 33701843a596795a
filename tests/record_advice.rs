//! Advice that can be carried out (issue 27 item 5): the allocation lineup's patches rewrite
//! keeps calloc's and malloc's contracts (NULL on failure, zeroed), compiled with gcc and
//! clang and run, down to the program's own NULL check.

mod common;

use lineup::emit::patch::align_allocation;

#[test]
fn calloc_and_malloc_become_aligned_allocations() {
    let src = "#include <stdlib.h>\nint main(void) {\n    T *a = calloc(n, sizeof(T));\n    T *b = malloc(sizeof(T) * 4);\n}\n";
    let out = align_allocation(src, 3, 64).unwrap();
    assert!(
        out.starts_with("#include <stdlib.h>\n#include <string.h>\n\n/* lineup: calloc(n, size)"),
        "{out}"
    );
    assert!(
        out.contains("    T *a = lineup_aligned_calloc(64, n, sizeof(T));\n"),
        "{out}"
    );
    assert_eq!(
        out.matches("static void *lineup_aligned_calloc(").count(),
        1
    );
    assert!(!out.contains("lineup_aligned_malloc"), "{out}");
    // The helper is emitted once: a second rewrite in the same file calls it again.
    let second = out.replace("malloc(sizeof(T) * 4)", "calloc(4, 8)");
    let at = second
        .lines()
        .position(|l| l.contains("= calloc(4, 8)"))
        .unwrap()
        + 1;
    let twice = align_allocation(&second, at, 64);
    let twice = twice.unwrap();
    assert_eq!(
        twice.matches("static void *lineup_aligned_calloc(").count(),
        1
    );
    assert!(
        twice.contains("T *b = lineup_aligned_calloc(64, 4, 8);"),
        "{twice}"
    );
    let out = align_allocation(src, 4, 128).unwrap();
    assert!(
        out.contains("    T *b = lineup_aligned_malloc(128, sizeof(T) * 4);\n"),
        "{out}"
    );
    assert!(!out.contains("string.h"), "{out}");
    assert!(!out.contains("lineup_aligned_calloc"), "{out}");
    let err = align_allocation(src, 2, 64).unwrap_err();
    assert!(err.contains("no calloc or malloc"), "{err}");
    assert!(align_allocation(src, 9, 64).is_err());
    // `my_calloc(` is not calloc.
    assert!(align_allocation("x = my_calloc(1, 2);\n", 1, 64).is_err());
}

#[test]
fn the_helper_goes_after_the_includes_and_their_conditionals() {
    // After an #if block of includes, before the code; CRLF kept.
    let src = "#include <stdio.h>\r\n#ifdef X\r\n#include <x.h>\r\n#endif\r\nint *p;\r\nvoid f(void) { p = calloc(2, 4); }\r\n";
    let out = align_allocation(src, 6, 64).unwrap();
    let helper = out.find("/* lineup: calloc").unwrap();
    assert!(
        out[..helper].ends_with("#endif\r\n#include <stdlib.h>\r\n#include <string.h>\r\n\r\n"),
        "{out}"
    );
    assert!(out[helper..].contains("}\r\n\r\nint *p;"), "{out}");
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
    // An include guard around the whole file: right after the include, inside it.
    let src = "#ifndef H\n#define H\n#include <stdlib.h>\n#include <string.h>\nstatic int *p;\nstatic void f(void) { p = calloc(2, 4); }\n#endif\n";
    let out = align_allocation(src, 6, 64).unwrap();
    assert!(
        out.starts_with(
            "#ifndef H\n#define H\n#include <stdlib.h>\n#include <string.h>\n\n/* lineup"
        ),
        "{out}"
    );
    // No include at all: at the top, with the headers it needs.
    let out = align_allocation("int *p;\nvoid f(void) { p = malloc(8); }\n", 2, 64).unwrap();
    assert!(
        out.starts_with("#include <stdlib.h>\n\n/* lineup: malloc"),
        "{out}"
    );
}

/// The helpers compiled and run (with `cc`, and `clang` where installed): aligned, zeroed,
/// NULL where calloc and malloc return NULL (n * size overflows, a size no machine has),
/// so the program's own NULL check runs.
#[test]
fn the_helpers_keep_calloc_and_malloc_contracts() {
    let prog = "#include <stdio.h>\n#include <stdint.h>\n#include <stdlib.h>\n\nstatic void *volatile sink;\n\nstatic int fails(size_t n, size_t size) {\n    long *v = calloc(n, size);\n    if (v == NULL)\n        return 1;\n    sink = v;\n    free(v);\n    return 0;\n}\n\nstatic int mfails(size_t size) {\n    char *v = malloc(size);\n    if (!v)\n        return 1;\n    sink = v;\n    free(v);\n    return 0;\n}\n\nint main(void) {\n    for (size_t n = 1; n < 40; n++) {\n        unsigned char *a = calloc(n, 3);\n        if ((uintptr_t)a % 64 != 0)\n            return 2;\n        for (size_t i = 0; i < n * 3; i++)\n            if (a[i] != 0)\n                return 3;\n        free(a);\n    }\n    printf(\"%d %d %d %d %d\\n\", fails((size_t)1 << 62, 8), fails((size_t)1 << 50, 1), fails(3, 5), mfails((size_t)-1 - 10), mfails(7));\n    return 0;\n}\n";
    let mut text = prog.to_string();
    while let Some(i) = text
        .lines()
        .position(|l| l.contains("= calloc(") || l.contains("= malloc("))
    {
        text = align_allocation(&text, i + 1, 64).unwrap();
    }
    assert_eq!(
        text.matches("static void *lineup_aligned_calloc(").count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches("static void *lineup_aligned_malloc(").count(),
        1,
        "{text}"
    );
    let dir = std::env::temp_dir().join(format!("lineup-align-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("t.c");
    std::fs::write(&c, &text).unwrap();
    let mut ran = 0;
    for cc in ["cc", "clang"] {
        let exe = dir.join(format!("t-{cc}"));
        let Ok(o) = std::process::Command::new(cc)
            .args(["-std=c11", "-Wall", "-Werror", "-O2", "-o"])
            .arg(&exe)
            .arg(&c)
            .output()
        else {
            continue;
        };
        assert!(
            o.status.success(),
            "{cc}: {}\n{text}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = std::process::Command::new(&exe).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{cc}: {o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "1 1 0 1 0\n", "{cc}");
        ran += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran > 0, "no C compiler");
}

// ---- Recorded programs: what diagnose promises, optimize does (and its asserts compile). ----

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-advice-tests");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fn lineup() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.env("LINEUP_CACHE_DIR", scratch().join("cache"));
    c
}

/// Builds `src` (relative to the repository) with `lineup cc` (compiler `cc`, level `opt`)
/// into `name`, records it with `args`, and returns the profile.
fn recorded(src: &str, name: &str, cc: &str, opt: &str, args: &[&str]) -> PathBuf {
    let prog = scratch().join(name);
    common::run_ok(
        lineup()
            .env("LINEUP_CC", cc)
            .arg("cc")
            .args([opt, "-pthread", "-Wall"])
            .arg(common::repo().join(src))
            .arg("-o")
            .arg(&prog),
    );
    let profile = prog.with_extension("json");
    common::run_ok(
        lineup()
            .arg("record")
            .arg("-o")
            .arg(&profile)
            .arg("--")
            .arg(&prog)
            .args(args),
    );
    profile
}

/// The recorded type allocated at `site` (`file.c:N`).
fn type_at(profile: &Path, site: &str) -> String {
    let p: Value = serde_json::from_slice(&std::fs::read(profile).unwrap()).unwrap();
    p["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["allocations"]
                .as_array()
                .is_some_and(|a| a.iter().any(|a| a["source"] == site))
        })
        .unwrap_or_else(|| panic!("no type allocated at {site}"))["type_name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// What `optimize` did: its exit status, standard error, and the patch it wrote (if any).
struct Optimized {
    status: Option<i32>,
    stderr: String,
    patch: Option<String>,
}

/// `diagnose --json`'s line explanations of `ty` and what `optimize --header` (a copy of
/// `src` in its own directory) does on the same recording.
fn diagnose_and_optimize(
    profile: &Path,
    ty: &str,
    src: &str,
    dir: &str,
) -> (Vec<String>, Optimized, PathBuf) {
    let d: Value = serde_json::from_slice(&common::run_ok(
        lineup()
            .args(["diagnose", "--json", "--type", ty, "--profile"])
            .arg(profile),
    ))
    .unwrap();
    let explanations: Vec<String> = d["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["verdict"] == "false_sharing")
        .map(|l| l["explanation"].as_str().unwrap().to_string())
        .collect();
    assert!(!explanations.is_empty(), "no false sharing: {d:#}");
    let dir = scratch().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let header = dir.join(Path::new(src).file_name().unwrap());
    std::fs::copy(common::repo().join(src), &header).unwrap();
    let patch = dir.join("fix.diff");
    let o = lineup()
        .args(["optimize", "--type", ty, "--profile"])
        .arg(profile)
        .arg("--header")
        .arg(&header)
        .arg("--patch")
        .arg(&patch)
        .output()
        .unwrap();
    let optimized = Optimized {
        status: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        patch: std::fs::read_to_string(&patch).ok(),
    };
    (explanations, optimized, header)
}

/// The promise and the refusal cannot disagree: where diagnose says `lineup optimize`
/// writes the patch, optimize exits 0 with one; where optimize refuses (exit 2), diagnose
/// says it has no plan, with optimize's reason, and what to do by hand.
fn assert_agree(explanations: &[String], o: &Optimized) {
    let promised = explanations.iter().any(|e| e.contains("writes the patch"));
    let no_plan = explanations
        .iter()
        .any(|e| e.contains("`lineup optimize` has no plan for it ("));
    assert!(promised != no_plan, "{explanations:#?}");
    if promised {
        assert_eq!(o.status, Some(0), "{}", o.stderr);
        assert!(
            o.patch.as_ref().is_some_and(|p| p.contains("+++ ")),
            "{}",
            o.stderr
        );
    } else {
        assert_eq!(o.status, Some(2), "{}", o.stderr);
        assert!(o.patch.is_none());
        // Optimize's reason, word for word, in diagnose's sentence.
        let why = o
            .stderr
            .split("(no per-thread slices to pad: ")
            .nth(1)
            .and_then(|w| w.trim_end().strip_suffix(')'))
            .unwrap_or_else(|| panic!("{}", o.stderr));
        assert!(
            explanations
                .iter()
                .any(|e| e.contains(&format!("has no plan for it ({why}): by hand, "))),
            "{why}\n{explanations:#?}"
        );
    }
}

fn run(exe: &Path, args: &[&str]) -> std::process::Output {
    Command::new(exe).args(args).output().unwrap()
}

/// Per-thread slices whose length is a #define in bytes (`SLICE_BYTES 32`,
/// tests/data/record/stride_bytes.c): diagnose says optimize writes the patch, and it does:
/// the byte macro padded to the line (32 -> 64) and the calloc made a line-aligned
/// `lineup_aligned_calloc`; the patched program builds with gcc and clang, prints what the
/// original prints, and where the allocation fails (a count whose bytes overflow, and one
/// no machine has) its own NULL check runs, as with calloc.
#[test]
fn a_stride_in_bytes_gets_the_patch_diagnose_promises() {
    let src = "tests/data/record/stride_bytes.c";
    let site = common::source_site(src, "sums = calloc");
    let profile = recorded(src, "stride_bytes", "gcc", "-O0", &["2"]);
    let ty = type_at(&profile, &site);
    let (explanations, o, header) = diagnose_and_optimize(&profile, &ty, src, "stride-bytes-fixed");
    assert_agree(&explanations, &o);
    assert!(
        explanations.iter().any(|e| e.contains(
            "per-thread slices of 4 elements (32 bytes) that share 64-byte lines: pad each slice to 8 elements (64 bytes"
        )),
        "{explanations:#?}"
    );
    let diff = o.patch.unwrap();
    assert!(
        diff.contains("\n-#define SLICE_BYTES 32\n")
            && diff.contains("\n+#define SLICE_BYTES 64\n"),
        "{diff}"
    );
    assert!(
        diff.contains("+    sums = lineup_aligned_calloc(64, count, SLICE_BYTES);\n"),
        "{diff}"
    );
    let dir = header.parent().unwrap();
    let p = Command::new("patch")
        .current_dir(dir)
        .args(["-s", "stride_bytes.c", "fix.diff"])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    let plain = common::repo().join(src);
    for cc in ["gcc", "clang"] {
        let orig = dir.join(format!("orig-{cc}"));
        let fixed = dir.join(format!("fixed-{cc}"));
        for (from, to) in [(&plain, &orig), (&header, &fixed)] {
            let c = Command::new(cc)
                .args(["-std=gnu11", "-O2", "-Wall", "-Werror", "-pthread", "-o"])
                .arg(to)
                .arg(from)
                .output()
                .unwrap();
            assert!(
                c.status.success(),
                "{cc}: {}",
                String::from_utf8_lossy(&c.stderr)
            );
        }
        let (a, b) = (run(&orig, &["2"]), run(&fixed, &["2"]));
        assert_eq!(
            (a.status.code(), &a.stdout),
            (Some(0), &b"100000\n".to_vec())
        );
        assert_eq!((b.status.code(), &b.stdout), (Some(0), &a.stdout));
        for count in ["1152921504606846976", "17592186044416"] {
            for exe in [&orig, &fixed] {
                let r = run(exe, &["2", count]);
                assert_eq!(r.status.code(), Some(1), "{cc} {count}: {r:?}");
                assert_eq!(String::from_utf8_lossy(&r.stderr), "out of memory\n");
            }
        }
    }
}

/// PARSEC streamcluster's work_mem as pgain() uses it (tests/data/record/stride_merged.c):
/// a stride computed at run time from a CACHE_LINE #define in bytes too small for the line,
/// one more slice than threads, and two calls with different strides at one site. optimize
/// finds no per-thread slices and refuses (exit 2); diagnose says so, with the same reason,
/// and what to change by hand, never that optimize writes the patch.
#[test]
fn merged_strides_get_advice_by_hand_where_optimize_refuses() {
    let src = "tests/data/record/stride_merged.c";
    let site = common::source_site(src, "work_mem = malloc");
    let profile = recorded(src, "stride_merged", "gcc", "-O0", &["1", "5"]);
    let ty = type_at(&profile, &site);
    let (explanations, o, _) = diagnose_and_optimize(&profile, &ty, src, "stride-merged");
    assert_agree(&explanations, &o);
    assert!(
        explanations.iter().any(|e| e.contains(
            "a multiple of 8 elements (64 bytes; where the program computes that stride, round it up to 64 bytes"
        ) && e.contains("2 blocks of up to 192 bytes were allocated there")),
        "{explanations:#?}"
    );
}

/// The `#define` stride of PARSEC streamcluster's replica (`STRIDE 4` doubles, half a line):
/// diagnose's promise holds (optimize writes the patch).
#[test]
fn a_stride_macro_in_elements_gets_the_patch_diagnose_promises() {
    let src = "examples/record/streamcluster.c";
    let site = common::source_site(src, "work_mem = calloc");
    let profile = recorded(src, "streamcluster", "gcc", "-O2", &["2", "4", "2"]);
    let ty = type_at(&profile, &site);
    let (explanations, o, _) = diagnose_and_optimize(&profile, &ty, src, "streamcluster-fixed");
    assert_agree(&explanations, &o);
    assert!(o.patch.unwrap().contains("+#define STRIDE 8\n"));
}

/// Phoenix histogram's per-thread `thread_arg_t` elements (examples/record/histogram.c):
/// the C declaration optimize prints and the static_asserts it prints with it compile
/// together, with gcc and clang, as C11 (the asserts check lineup's own proposed layout).
#[test]
fn histogram_asserts_compile_against_the_printed_declaration() {
    for cc in ["gcc", "clang"] {
        let profile = recorded(
            "examples/record/histogram.c",
            &format!("histogram-{cc}"),
            cc,
            "-O0",
            &["2", "1"],
        );
        let out = common::run_ok(
            lineup()
                .args(["optimize", "--type", "thread_arg_t", "--profile"])
                .arg(&profile),
        );
        let text = String::from_utf8(out).unwrap();
        let decl: String = text
            .split("C declaration (userspace):\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"))
            .lines()
            .scan(false, |seen_assert, l| {
                // Up to the first blank line after the asserts.
                if l.starts_with("static_assert") {
                    *seen_assert = true;
                } else if *seen_assert {
                    return None;
                }
                Some(l)
            })
            .collect::<Vec<_>>()
            .join("\n");
        let asserts = decl.matches("static_assert(").count();
        assert!(asserts >= 3, "{text}");
        assert!(decl.contains("alignas("), "{decl}");
        let c = scratch().join(format!("histogram-asserts-{cc}.c"));
        std::fs::write(
            &c,
            format!("#include <assert.h>\n#include <stdalign.h>\n#include <stddef.h>\n\n{decl}\n"),
        )
        .unwrap();
        for compiler in ["gcc", "clang"] {
            let o = Command::new(compiler)
                .args(["-std=c11", "-Wall", "-Werror", "-c", "-o", "/dev/null"])
                .arg(&c)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{compiler} on {cc}'s recording: {}\n{decl}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // The asserts are checks that can fail: the same declaration without its alignments,
        // shifted by 8 bytes, puts the members lineup starts lines with off their lines, and
        // they do not compile. (Which members those are, and whether 64 or 128 bytes apart,
        // the recording's rates decide: every such layout keeps the threads' elements apart.)
        let mut shifted = false;
        let broken: String = decl
            .lines()
            .map(|l| {
                let mut l = l.to_string();
                while let Some(a) = l.find("alignas(") {
                    let Some(e) = l[a..].find(") ") else { break };
                    l.replace_range(a..a + e + 2, "");
                }
                if !shifted && l.contains("struct") && l.trim_end().ends_with('{') {
                    shifted = true;
                    format!("{l}\n\tchar lineup_test_shift[8];\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert!(shifted && decl.contains("% 64 == 0"), "{decl}");
        {
            std::fs::write(
                &c,
                format!(
                    "#include <assert.h>\n#include <stdalign.h>\n#include <stddef.h>\n\n{broken}\n"
                ),
            )
            .unwrap();
            let o = Command::new("gcc")
                .args(["-std=c11", "-c", "-o", "/dev/null"])
                .arg(&c)
                .output()
                .unwrap();
            assert!(!o.status.success(), "{broken}");
        }
    }
}

/// An array member indexed by thread with a `#define` stride too small for a line
/// (tests/data/record/stride_member.c, `counts[id * STRIDE]`): diagnose's promise that
/// optimize pads the slots and writes the patch holds; the patched program builds with gcc
/// and clang and prints what the original prints.
#[test]
fn a_strided_array_member_gets_the_patch_diagnose_promises() {
    let src = "tests/data/record/stride_member.c";
    let profile = recorded(src, "stride_member", "gcc", "-O0", &[]);
    let (explanations, o, header) =
        diagnose_and_optimize(&profile, "stats", src, "stride-member-fixed");
    assert_agree(&explanations, &o);
    let diff = o.patch.unwrap();
    assert!(
        diff.contains("+        st.counts[id * STRIDE].v += 1;\n"),
        "{diff}"
    );
    let dir = header.parent().unwrap();
    let p = Command::new("patch")
        .current_dir(dir)
        .args(["-s", "stride_member.c", "fix.diff"])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    for cc in ["gcc", "clang"] {
        let fixed = dir.join(format!("fixed-{cc}"));
        let c = Command::new(cc)
            .args(["-std=gnu11", "-O2", "-Wall", "-Werror", "-pthread", "-o"])
            .arg(&fixed)
            .arg(&header)
            .output()
            .unwrap();
        assert!(
            c.status.success(),
            "{cc}: {}",
            String::from_utf8_lossy(&c.stderr)
        );
        let r = run(&fixed, &[]);
        assert_eq!(
            (r.status.code(), r.stdout),
            (Some(0), b"200000\n".to_vec()),
            "{cc}"
        );
    }
}
