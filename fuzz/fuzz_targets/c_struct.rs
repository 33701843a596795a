//! Fuzzes a header's struct (`struct s { ... }`) through every stage `optimize --header`
//! takes it: reading the struct, rearranging its lines (with and without an added alignment,
//! both flavours) and the unified diff. Whatever the text: one-line errors, no panic, and a
//! rearrangement only moves lines (`lineup::stages::check_header`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lineup::stages::check_header(data);
});
