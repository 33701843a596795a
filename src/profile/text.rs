//! Text of an importer's input, read lossily: one byte that is not UTF-8 (a mail's Latin-1
//! `±`, a damaged copy) must not reject a whole report. The caller warns with the lines.

use std::borrow::Cow;

/// `bytes` as text, with invalid sequences replaced by U+FFFD, and the 1-based numbers of
/// the lines where that happened (empty when the text is valid UTF-8).
pub fn decode_lossy(bytes: &[u8]) -> (Cow<'_, str>, Vec<usize>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), Vec::new()),
        Err(_) => {
            let bad = bytes
                .split(|&b| b == b'\n')
                .enumerate()
                .filter(|(_, l)| std::str::from_utf8(l).is_err())
                .map(|(i, _)| i + 1)
                .collect();
            (String::from_utf8_lossy(bytes), bad)
        }
    }
}

/// The warning for `bad` lines of `file`, or None when there are none.
pub fn lossy_warning(file: &str, bad: &[usize]) -> Option<String> {
    let (&first, rest) = bad.split_first()?;
    let more = match rest.len() {
        0 => String::new(),
        n => format!(" and {n} more line{}", if n == 1 { "" } else { "s" }),
    };
    Some(format!(
        "warning: {file}: line {first}{more} not UTF-8; read with replacement characters (U+FFFD)"
    ))
}

/// The 1-based line of byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A TOML parse error as one line, `line N: what` where the parser says where (sketches,
/// bench matrices and layout contracts are TOML), without the file name: callers add it.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match e.span() {
        Some(span) => format!("line {}: {msg}", line_of(text, span.start)),
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_byte_is_replaced_and_its_line_named() {
        let (text, bad) = decode_lossy(b"a\nb \xb1 c\nd\n\xe9\n");
        assert_eq!(text, "a\nb \u{fffd} c\nd\n\u{fffd}\n");
        assert_eq!(bad, vec![2, 4]);
        assert_eq!(
            lossy_warning("x.txt", &bad).unwrap(),
            "warning: x.txt: line 2 and 1 more line not UTF-8; read with replacement characters (U+FFFD)"
        );
        assert_eq!(decode_lossy(b"ok").1, Vec::<usize>::new());
    }
}
