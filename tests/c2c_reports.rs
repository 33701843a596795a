//! Several reports in one c2c text (issue 25 item 7): split on every sign perf and mail
//! authors use, and said where each starts. The texts are the real ones in tests/data/c2c/
//! (sources in their headers) and a concatenation of three of them built here, as a thread
//! quoting several mails would hold them.

mod common;

use std::collections::BTreeSet;

use lineup::profile::{Profile, import_c2c};

const FILES: [&str; 3] = [
    "tests/data/c2c/seed000_paste.txt",
    "tests/data/c2c/lkml_address_space_i_mmap.txt",
    "tests/data/c2c/lkml_ovl_creds_edited_to_fit.txt",
];

fn text(path: &str) -> String {
    std::fs::read_to_string(common::repo().join(path)).unwrap()
}

fn addresses(p: &Profile) -> BTreeSet<u64> {
    p.lines.iter().map(|l| l.address).collect()
}

/// The 1-based line where `heading` stands alone (as a whole line, or ending a line), after
/// line `after`.
fn line_of(text: &str, heading: &str, after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.trim().ends_with(heading))
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("no line {heading:?} after {after}"))
}

fn first_line(p: &Profile) -> usize {
    let lines = &p.provenance.settings["report_lines"];
    lines.split('-').next().unwrap().parse().unwrap()
}

#[test]
fn each_file_alone_reads_as_its_author_wrote_it() {
    for (path, headings) in [
        (FILES[0], &["Baseline:", "With this change:"][..]),
        (FILES[1], &["Baseline:", "With this change:"][..]),
        (FILES[2], &["before this series:", "after this series:"][..]),
    ] {
        let t = text(path);
        let reports = import_c2c(&t).unwrap();
        assert_eq!(reports.len(), headings.len(), "{path}");
        let mut after = 0;
        for (p, h) in reports.iter().zip(headings) {
            let at = line_of(&t, h, after);
            assert_eq!(first_line(p), at, "{path}: {h}");
            assert!(
                p.label
                    .as_deref()
                    .unwrap()
                    .ends_with(h.trim_end_matches(':'))
            );
            after = at;
        }
    }
}

#[test]
fn a_concatenation_of_three_mails_reads_as_six_reports_none_mixed() {
    // Each mail alone, then all three one after the other.
    let alone: Vec<Vec<Profile>> = FILES
        .iter()
        .map(|f| import_c2c(&text(f)).unwrap())
        .collect();
    let all: String = FILES.iter().map(|f| text(f)).collect::<Vec<_>>().join("\n");
    let reports = import_c2c(&all).unwrap();
    let want: Vec<&Profile> = alone.iter().flatten().collect();
    assert_eq!(reports.len(), want.len(), "{}", want.len());
    assert_eq!(reports.len(), 6);
    for (i, (got, want)) in reports.iter().zip(&want).enumerate() {
        // The same lines, with the same rows: nothing of one mail's report in another's.
        assert_eq!(addresses(got), addresses(want), "report {}", i + 1);
        let rows = |p: &Profile| p.lines.iter().map(|l| l.accesses.len()).sum::<usize>();
        assert_eq!(rows(got), rows(want), "report {}", i + 1);
        assert_eq!(got.label, want.label, "report {}", i + 1);
        assert_eq!(got.provenance.settings["report"], format!("{} of 6", i + 1));
        let note = got.provenance.note.as_deref().unwrap();
        assert!(note.starts_with("the text holds 6 reports ("), "{note}");
    }
    // Each starts where its heading is in the concatenation, in order.
    let starts: Vec<usize> = reports.iter().map(first_line).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    assert_eq!(starts[2], line_of(&all, "Baseline:", starts[1]));
    assert_eq!(starts[5], line_of(&all, "after this series:", starts[4]));
    // And every report's rows lie within its own lines.
    for p in &reports {
        let (a, b) = p.provenance.settings["report_lines"]
            .split_once('-')
            .map(|(a, b)| (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()))
            .unwrap();
        assert!(a <= b);
    }
}

#[test]
fn diagnose_and_import_say_which_report_of_how_many() {
    let dir = std::env::temp_dir().join(format!("lineup-c2c-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("thread.txt");
    let all: String = FILES.iter().map(|f| text(f)).collect::<Vec<_>>().join("\n");
    std::fs::write(&path, &all).unwrap();
    let p = path.to_str().unwrap();
    let btf = common::bundled_btf();
    let out = common::lineup(&[
        "diagnose",
        "--c2c",
        p,
        "--report",
        "3",
        "--btf",
        btf.to_str().unwrap(),
        "--type",
        "address_space",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = line_of(&all, "Baseline:", line_of(&all, "Baseline:", 0));
    assert!(
        stdout.contains(&format!("\"Baseline\" (report 3 of 6, lines {start}-")),
        "{stdout}"
    );
    // The overview names the report too.
    let out = common::lineup(&[
        "diagnose",
        "--c2c",
        p,
        "--report",
        "2",
        "--btf",
        btf.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(report 2 of 6, lines "), "{stdout}");
    // Asking for a seventh lists where the six start.
    let out = common::lineup(&["import", "--c2c", p, "--report", "7"]);
    assert!(!out.status.success() && out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("holds 6 reports (1 at line ") && err.contains(&format!("3 at line {start}")),
        "{err}"
    );
    // A text of one report says nothing of the kind.
    let out = common::lineup(&[
        "diagnose",
        "--c2c",
        "tests/data/c2c/lkml_seed003_root_domain.txt",
        "--btf",
        btf.to_str().unwrap(),
        "--type",
        "root_domain",
    ]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("report 1 of"));
    let _ = std::fs::remove_dir_all(&dir);
}
