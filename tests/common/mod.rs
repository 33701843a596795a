//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

use lineup::layout::{Field, Layout};
use lineup::readers::pahole_text::MemberFacts;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bundled_btf() -> PathBuf {
    repo().join("data/vmlinux-6.18.44.btf")
}

pub fn read_gz(path: &Path) -> String {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .unwrap();
    s
}

/// lineup's layout as the facts pahole prints: members depth-first with offsets and sizes.
pub fn facts_of(layout: &Layout) -> Vec<MemberFacts> {
    fn walk(fields: &[Field], depth: usize, out: &mut Vec<MemberFacts>) {
        for f in fields {
            out.push(MemberFacts {
                depth,
                name: f.name.clone(),
                offset: f.offset,
                size: f.size,
                bitfield: f.bit_offset.zip(f.bit_size.map(u64::from)),
            });
            walk(&f.members, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(&layout.members, 0, &mut out);
    out
}
