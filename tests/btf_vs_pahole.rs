//! The layout of every struct and union in a real 6.18 kernel's BTF agrees with pahole.
//! Oracle: tests/golden/btf/vmlinux-6.18.44.pahole.txt.gz, made by tests/golden/btf/regen.sh.

mod common;

use std::collections::HashMap;

use lineup::layout::{self, Layout};
use lineup::readers::{Format, InputFile, load, pahole_text};

#[test]
fn every_kernel_struct_matches_pahole() {
    let golden =
        common::read_gz(&common::repo().join("tests/golden/btf/vmlinux-6.18.44.pahole.txt.gz"));
    let expected = pahole_text::parse(&golden).expect("golden parses");
    assert!(
        expected.len() > 9000,
        "golden holds {} types",
        expected.len()
    );

    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let mut ours: HashMap<&str, Vec<Layout>> = HashMap::new();
    for id in types.composites() {
        let l = layout::layout(&types, id, 64).unwrap();
        ours.entry(types.get(id).name).or_default().push(l);
    }

    let mut mismatches = Vec::new();
    for want in &expected {
        let Some(candidates) = ours.get(want.name.as_str()) else {
            mismatches.push(format!("{} {}: missing", want.kind, want.name));
            continue;
        };
        // Several BTF types can share a name; pahole prints one of them.
        let matched = candidates.iter().any(|l| {
            l.kind == want.kind
                && want.size.is_none_or(|s| s == l.size)
                && common::facts_of(l) == want.members
        });
        if !matched {
            let l = &candidates[0];
            let got = common::facts_of(l);
            let first_diff = got
                .iter()
                .zip(&want.members)
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("lineup {a:?} vs pahole {b:?}"))
                .unwrap_or_else(|| format!("{} members vs {}", got.len(), want.members.len()));
            mismatches.push(format!(
                "{} {} (size {} vs {:?}): {first_diff}",
                want.kind, want.name, l.size, want.size
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} types differ from pahole, first ones:\n{}",
        mismatches.len(),
        expected.len(),
        mismatches
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Not only the numbers: the whole text of `lineup layout --all` is pahole's, byte for byte,
/// quirks included, so the two can be diffed.
#[test]
fn all_kernel_layouts_print_exactly_as_pahole() {
    let golden =
        common::read_gz(&common::repo().join("tests/golden/btf/vmlinux-6.18.44.pahole.txt.gz"));
    let file = InputFile::open(&common::bundled_btf()).unwrap();
    let types = load(&file, Format::Btf, None).unwrap();
    let mut text = Vec::new();
    for l in layout::all_named(&types, 64) {
        lineup::emit::pahole::write_layout(&mut text, &types, &l);
    }
    let text = String::from_utf8(text).unwrap();
    if text != golden {
        let (n, (ours, theirs)) = text
            .lines()
            .zip(golden.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .expect("outputs differ in length only");
        panic!("line {}: lineup {ours:?}\n        pahole {theirs:?}", n + 1);
    }
}
