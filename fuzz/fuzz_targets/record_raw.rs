//! Fuzzes the reader of the recording runtime's raw files (`rt.<pid>.bin`, what `lineup
//! record --from-raw DIR` reads back): whatever the bytes, a one-line error or a process
//! whose counts come sorted by place with one entry per place and summary, and no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::record::trace::parse;

fuzz_target!(|data: &[u8]| {
    match parse(data, std::path::Path::new("rt.fuzz.bin")) {
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        Ok(p) => {
            for w in p.counted.windows(2) {
                assert!((w[0].place(), w[0].summary) < (w[1].place(), w[1].summary));
            }
        }
    }
});
