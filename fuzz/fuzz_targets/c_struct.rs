//! Fuzzes the reader of a struct in a C header (`optimize --header`, `predict --layout`):
//! whatever the text, it finds the struct or says why not in one line, never panics or hangs,
//! and what it finds is consistent (line ranges inside the file and in order).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lineup::readers::c_struct::find_struct;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    match find_struct(&text, "s") {
        Ok(cs) => {
            assert!(cs.open_line <= cs.close_line && cs.close_line < lines.max(1));
            for d in &cs.decls {
                assert!(d.first_line <= d.end_line && d.end_line <= cs.close_line);
            }
            let _ = cs.members();
        }
        Err(e) => assert!(!e.contains('\n'), "multi-line error: {e}"),
    }
});
