//! The command line is thin (issue 24 item 13): `src/cli/` parses flags, calls the library
//! and prints, and no function there is over 150 lines. The decisions live in the library
//! (`src/analysis/`, `src/bench/`, `src/record/`), the renderings in `src/emit/`.
//!
//! The sources are rustfmt-formatted (CI checks `cargo fmt --check`), so a function ends at
//! the first line that is its own indentation followed by `}`.

use std::path::Path;

/// Each function in `source` (free, or in an `impl`): (name, lines from `fn` to its `}`).
fn function_lengths(source: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let rest = body
            .strip_prefix("pub(crate) ")
            .or_else(|| body.strip_prefix("pub "))
            .unwrap_or(body);
        let Some(rest) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration without a body (a trait's) ends with `;` before any `{`.
        let close = format!("{indent}}}");
        if let Some(end) = (i..lines.len()).find(|&j| lines[j] == close) {
            out.push((name, end - i + 1));
        }
    }
    out
}

#[test]
fn the_measure_sees_a_long_function_and_a_short_one() {
    let long: String = (0..160).map(|i| format!("    let x{i} = {i};\n")).collect();
    let src = format!(
        "pub fn long() {{\n{long}}}\n\nimpl A {{\n    fn short(&self) -> u32 {{\n        1\n    }}\n}}\n"
    );
    assert_eq!(
        function_lengths(&src),
        [("long".to_string(), 162), ("short".to_string(), 3)]
    );
}

#[test]
fn no_function_in_the_cli_is_over_150_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut over = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for (name, n) in function_lengths(&source) {
            seen += 1;
            if n > 150 {
                over.push(format!("{}: {name}: {n} lines", path.display()));
            }
        }
    }
    assert!(
        seen > 20,
        "only {seen} functions found under {}",
        dir.display()
    );
    assert!(over.is_empty(), "{}", over.join("\n"));
}
