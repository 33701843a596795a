//! Reads pahole's text output back into facts: for each struct or union, its size and every
//! member's name, offset, size and bitfield position, nested members included.
//!
//! This lets lineup take a layout from where engineers actually have one, a pahole dump pasted
//! into mail or a patch, and lets the tests hold lineup's own reader against pahole's.

/// One member line of pahole output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberFacts {
    /// 0 for top-level members, 1 inside an inline anonymous struct/union, and so on.
    pub depth: usize,
    /// Empty for an anonymous inline struct or union.
    pub name: String,
    pub offset: u64,
    pub size: u64,
    /// `(bit position in the storage unit, width in bits)` for bitfields; `size` is then the
    /// storage unit's size.
    pub bitfield: Option<(u64, u64)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeFacts {
    /// `"struct"` or `"union"`.
    pub kind: String,
    pub name: String,
    /// From the closing summary; pahole prints none for unions.
    pub size: Option<u64>,
    /// Members in declaration order, depth-first (an inline struct precedes its members).
    pub members: Vec<MemberFacts>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: {problem}")]
pub struct ParseError {
    pub line: usize,
    pub problem: String,
}

/// Parses every `struct NAME {` ... `};` block in `text`. Text outside blocks is ignored.
pub fn parse(text: &str) -> Result<Vec<TypeFacts>, ParseError> {
    let mut out = Vec::new();
    let mut current: Option<TypeFacts> = None;
    // For each open inline block: the index of its placeholder in `members` (None for an
    // inline enum, whose enumerators are not members).
    let mut open: Vec<Option<usize>> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let err = |problem: &str| ParseError {
            line: lineno,
            problem: problem.to_string(),
        };
        let line = raw.trim();
        let Some(cur) = current.as_mut() else {
            if let Some((kind, name)) = block_header(raw) {
                current = Some(TypeFacts {
                    kind: kind.to_string(),
                    name: name.to_string(),
                    size: None,
                    members: Vec::new(),
                });
                open.clear();
            }
            continue;
        };
        if raw.starts_with('}') {
            out.push(current.take().expect("inside a block"));
            continue;
        }
        if let Some(rest) = line.strip_prefix("/* size: ") {
            let n = rest.split(',').next().unwrap_or("");
            cur.size = Some(n.trim().parse().map_err(|_| err("bad size in summary"))?);
            continue;
        }
        if line.starts_with("/*") || line.is_empty() {
            continue;
        }
        if line.ends_with('{') {
            // `struct {`, `union {`, `enum {`: an inline anonymous type opens.
            if line.starts_with("enum") {
                open.push(None);
            } else {
                cur.members.push(MemberFacts {
                    depth: open.len(),
                    name: String::new(),
                    offset: 0,
                    size: 0,
                    bitfield: None,
                });
                open.push(Some(cur.members.len() - 1));
            }
            continue;
        }
        let Some((decl, comment)) = split_comment(line) else {
            // Enumerators and `:0;` alignment markers carry no offset.
            continue;
        };
        let (offset, size, bit) =
            parse_comment(comment).ok_or_else(|| err("bad offset comment"))?;
        if let Some(closing) = decl.strip_prefix('}') {
            let closing = strip_attributes(closing.trim_end_matches(';'));
            let placeholder = open
                .pop()
                .ok_or_else(|| err("'}' without an open inline type"))?;
            if closing.starts_with('*') {
                // `struct {...} * parts;`: pahole shows the pointed-to type, whose members
                // are not part of this layout.
                if let Some(idx) = placeholder {
                    cur.members.truncate(idx);
                }
                cur.members.push(MemberFacts {
                    depth: open.len(),
                    name: declared_name(&closing),
                    offset,
                    size,
                    bitfield: None,
                });
                continue;
            }
            let (name, bitfield) = split_bitfield(declared_name(&closing), bit).map_err(&err)?;
            match placeholder {
                Some(idx) => {
                    let m = &mut cur.members[idx];
                    m.name = name;
                    m.offset = offset;
                    m.size = size;
                    m.bitfield = bitfield;
                }
                None => cur.members.push(MemberFacts {
                    depth: open.len(),
                    name,
                    offset,
                    size,
                    bitfield,
                }),
            }
            continue;
        }
        let (name, bitfield) =
            split_bitfield(declared_name(decl.trim_end_matches(';')), bit).map_err(err)?;
        cur.members.push(MemberFacts {
            depth: open.len(),
            name,
            offset,
            size,
            bitfield,
        });
    }
    if let Some(cur) = current {
        return Err(ParseError {
            line: text.lines().count(),
            problem: format!("{} {} is not closed with '}};'", cur.kind, cur.name),
        });
    }
    Ok(out)
}

fn block_header(raw: &str) -> Option<(&str, &str)> {
    let line = raw.strip_suffix(" {")?;
    let (kind, name) = line.split_once(' ')?;
    if (kind == "struct" || kind == "union") && !name.contains(' ') {
        Some((kind, name))
    } else {
        None
    }
}

/// Splits `decl; /* comment */` at the last comment.
fn split_comment(line: &str) -> Option<(&str, &str)> {
    let body = line.strip_suffix("*/")?;
    let start = body.rfind("/*")?;
    Some((body[..start].trim_end(), body[start + 2..].trim()))
}

/// `0 8` or `1188: 3 4` (offset: bit size): offset, size, and the bit position if any.
fn parse_comment(c: &str) -> Option<(u64, u64, Option<u64>)> {
    if let Some((off, rest)) = c.split_once(':') {
        let mut it = rest.split_whitespace();
        let bit = it.next()?.parse().ok()?;
        let size = it.next()?.parse().ok()?;
        return Some((off.trim().parse().ok()?, size, Some(bit)));
    }
    let mut it = c.split_whitespace();
    let off = it.next()?.parse().ok()?;
    let size = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some((off, size, None))
}

/// The member name in a declaration: the last identifier outside brackets and parentheses
/// (`(*func)(args)` names `func`; `x[4]` names `x`; `a:3` keeps `:3` for the caller).
fn declared_name(decl: &str) -> String {
    let decl = &strip_attributes(decl);
    if let Some(start) = decl.find("(*") {
        let rest = &decl[start + 2..];
        let rest = rest.trim_start_matches('*');
        let end = rest.find(')').unwrap_or(rest.len());
        return rest[..end]
            .split('[')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
    }
    let decl = decl.split('[').next().unwrap_or(decl).trim_end();
    let start = decl
        .rfind([' ', '*', '\t', '}'])
        .map(|i| i + 1)
        .unwrap_or(0);
    decl[start..].to_string()
}

/// For a bitfield (`bit` is its position), splits `name:width` into the name and
/// `(bit, width)`.
fn split_bitfield(
    name: String,
    bit: Option<u64>,
) -> Result<(String, Option<(u64, u64)>), &'static str> {
    let Some(bit) = bit else {
        return Ok((name, None));
    };
    let (n, width) = name
        .rsplit_once(':')
        .ok_or("bitfield offset on a member without ':width'")?;
    let width = width.parse().map_err(|_| "bad bitfield width")?;
    Ok((n.to_string(), Some((bit, width))))
}

/// Removes every `__attribute__((...))`, wherever pahole placed it.
fn strip_attributes(decl: &str) -> String {
    let mut out = String::with_capacity(decl.len());
    let mut rest = decl;
    while let Some(start) = rest.find("__attribute__") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
struct maple_big_node {
\tlong unsigned int          pivot[33];            /*     0   264 */
\tunion {
\t\tstruct maple_enode * slot[34];           /*   264   272 */
\t\tstruct {
\t\t\tlong unsigned int padding[21];   /*   264   168 */
\t\t\tlong unsigned int gap[21];       /*   432   168 */
\t\t};                                       /*   264   336 */
\t};                                               /*   264   336 */
\tenum {
\t\tA = 0,
\t} type;                                          /*   600     4 */
\tunsigned int               frozen:1;             /*  1192:12  4 */
\tstruct {
\t\tlong unsigned int  load_avg;             /*   200     8 */
\t} __attribute__((__aligned__(64))) removed;                                       /*   192    64 */
\tvoid                       (*func)(struct callback_head *); /*     8     8 */

\t/* size: 608, cachelines: 10, members: 4 */
};
";

    #[test]
    fn reads_nested_members_bitfields_and_function_pointers() {
        let facts = parse(SAMPLE).unwrap();
        assert_eq!(facts.len(), 1);
        let t = &facts[0];
        assert_eq!((t.name.as_str(), t.size), ("maple_big_node", Some(608)));
        let summary: Vec<_> = t
            .members
            .iter()
            .map(|m| (m.depth, m.name.as_str(), m.offset, m.size))
            .collect();
        assert_eq!(
            summary,
            [
                (0, "pivot", 0, 264),
                (0, "", 264, 336),
                (1, "slot", 264, 272),
                (1, "", 264, 336),
                (2, "padding", 264, 168),
                (2, "gap", 432, 168),
                (0, "type", 600, 4),
                (0, "frozen", 1192, 4),
                (0, "removed", 192, 64),
                (1, "load_avg", 200, 8),
                (0, "func", 8, 8),
            ]
        );
        assert_eq!(t.members[7].bitfield, Some((12, 1)));
    }

    #[test]
    fn unclosed_block_is_an_error() {
        let err = parse("struct a {\n\tint x; /* 0 4 */\n").unwrap_err();
        assert!(err.problem.contains("not closed"), "{err}");
    }
}
