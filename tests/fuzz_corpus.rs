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
