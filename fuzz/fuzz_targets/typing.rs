//! Fuzzes typing accesses from their instructions (`lineup typing`): whatever the bytes, an
//! image that fails to read in one line, or code whose accesses are typed (DWARF locations,
//! the backward walk, jump tables, calls' arguments) without panicking, hanging or growing
//! without bound, each typed access inside its struct (`lineup::stages::check_typing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lineup::stages::check_typing(data);
});
