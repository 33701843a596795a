//! Fuzzes the reading of `perf report -s type,typeoff` text alone: the bounds every text input goes through, the
//! importer, and the profile's JSON round trip (`lineup::stages::check_import`), thousands
//! of inputs a second where the `typeoff` target, which runs the optimizer on each, manages a few.
//! Whatever the text: one-line errors, no panic. Shares `fuzz/corpus/typeoff` with `typeoff`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::stages::{ProfileInput, check_import};

fuzz_target!(|data: &[u8]| {
    check_import(ProfileInput::Typeoff, data);
});
