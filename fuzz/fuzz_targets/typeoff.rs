//! Fuzzes the `perf report -s type,typeoff` importer: whatever the text, importing either
//! fails with a one-line error or yields a profile of named types that aggregates per byte
//! range, serializes, and reads back as a valid lineup profile, without panicking or
//! hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::profile::{Profile, import_perf_typeoff};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match import_perf_typeoff(&text) {
        Ok(p) => {
            assert!(!p.types.is_empty() && p.lines.is_empty());
            for t in &p.types {
                assert!(t.accesses.iter().all(|a| a.offset.is_some()));
                let _ = p.type_line_ranges(&t.type_name, 0);
            }
            Profile::from_json(&p.to_json()).expect("a profile reads back its own JSON");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
