//! Layouts as JSON for scripts: the same facts as the text, plus each member's cache line.

use serde::Serialize;

use crate::layout::Layout;
use crate::readers::LayoutSource;

/// Version of the JSON layout document; bump on incompatible changes.
pub const LAYOUT_SCHEMA: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    schema: u32,
    source: &'a str,
    /// Which file the layouts came from, and whether it is the bundled kernel's.
    layout_source: &'a LayoutSource,
    cacheline_size: u64,
    types: &'a [Layout],
}

/// Writes `layouts` as one JSON document.
pub fn write_layouts(
    out: &mut dyn std::io::Write,
    source: &LayoutSource,
    cacheline_size: u64,
    layouts: &[Layout],
) -> std::io::Result<()> {
    let doc = Document {
        schema: LAYOUT_SCHEMA,
        source: &source.file,
        layout_source: source,
        cacheline_size,
        types: layouts,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
