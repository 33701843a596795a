//! Fuzzes the DWARF reader and every stage after it: whatever the bytes, reading fails with a
//! one-line error or yields types whose layouts, pahole text, C declarations and JSON are
//! computed without panicking, hanging or growing without bound
//! (`lineup::stages::check_types`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::stages::{TypeInput, check_types};

fuzz_target!(|data: &[u8]| {
    check_types(TypeInput::Dwarf, data);
});
