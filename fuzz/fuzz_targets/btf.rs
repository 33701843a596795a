//! Fuzzes the BTF reader and everything a layout does with what it returns: whatever the
//! bytes, reading either fails with an error or yields types whose layouts and pahole text
//! can be computed without panicking or hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::{emit, layout, readers::btf};

fuzz_target!(|data: &[u8]| {
    let Ok(types) = btf::parse(data) else {
        return;
    };
    let mut out = Vec::new();
    for id in types.composites().take(64) {
        if let Some(l) = layout::layout(&types, id, 64) {
            emit::pahole::write_layout(&mut out, &types, &l);
            out.clear();
        }
    }
});
