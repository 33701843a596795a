//! Fuzzes the `perf script` memory-sample importer and every stage after it: the profile's JSON round
//! trip, binding to a struct of the bundled kernel BTF (raw cache lines to `task_group`),
//! diagnosis, the cost model and the optimizer. Whatever the text: one-line errors, no
//! panic, finite costs (`lineup::stages::check_profile`).
#![no_main]

mod bundled;

use libfuzzer_sys::fuzz_target;
use lineup::stages::{ProfileInput, check_profile};

fuzz_target!(|data: &[u8]| {
    check_profile(ProfileInput::PerfScript, data, bundled::types(), "task_group");
});
