//! Fuzzes the `perf c2c report` importer: whatever the text, importing either fails with a
//! one-line error or yields profiles that aggregate per byte range, serialize, and read back
//! as valid lineup profiles, without panicking or hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::profile::{Profile, import_c2c};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match import_c2c(&text) {
        Ok(profiles) => {
            assert!(!profiles.is_empty());
            for p in &profiles {
                for line in &p.lines {
                    let _ = p.line_ranges(line.address);
                }
                Profile::from_json(&p.to_json()).expect("a profile reads back its own JSON");
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
