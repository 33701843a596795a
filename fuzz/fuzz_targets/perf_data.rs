//! Fuzzes the perf.data reader: whatever the bytes, importing either fails with a one-line
//! error or yields a profile that aggregates per byte range, serializes, and reads back as a
//! valid lineup profile, without panicking, hanging or allocating what the file merely claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::profile::{PerfDataOptions, Profile, import_perf_data};

fuzz_target!(|data: &[u8]| {
    let opts = PerfDataOptions {
        // No file system: the paths in MMAP records are the fuzzer's.
        symbolize: false,
        ..Default::default()
    };
    match import_perf_data(data, &opts, &mut |_, _| {}) {
        Ok(p) => {
            for line in &p.lines {
                let _ = p.line_ranges(line.address);
            }
            Profile::from_json(&p.to_json()).expect("a profile reads back its own JSON");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
