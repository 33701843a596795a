//! A unified diff that rearranges a struct in the header that declares it.
//!
//! Declarations move as whole source lines, with the comments above them; an `#if` block
//! moves whole (the optimizer was told to keep its members together); alignment attributes
//! the source already has stay with their members. Members the optimizer wants on a new
//! line get an attribute added.

use crate::emit::c::Flavour;
use crate::readers::c_struct::CStruct;

/// One movable run of source lines.
struct Chunk {
    lines: Vec<String>,
    /// Position of the chunk's first member in the new order, if it has one.
    key: Option<usize>,
}

/// The new text of the file: the body of `cs` in the order `new_order` gives member names,
/// with `line_aligned` members given a cache-line alignment.
pub fn rearrange_source(
    text: &str,
    cs: &CStruct,
    rank_of: &dyn Fn(&str) -> Option<usize>,
    line_aligned: &[String],
    flavour: Flavour,
    cacheline_size: u64,
    cplusplus: bool,
) -> Result<String, String> {
    // Split at '\n' only: a CRLF header keeps its '\r's, so the diff touches only the lines
    // that move.
    let mut lines: Vec<String> = text.split_terminator('\n').map(str::to_string).collect();
    check_line_structure(cs, lines.len())?;
    // Alignment first, in place, on the declarations' own lines.
    for name in line_aligned {
        // A kernel group's begin marker (`__cacheline_group_begin__X` in BTF) is the line
        // `__cacheline_group_begin(X)` in the source.
        let group_marker = name
            .strip_prefix("__cacheline_group_begin__")
            .map(|g| format!("({g}"));
        let Some(d) = cs.decls.iter().find(|d| match &group_marker {
            Some(g) => {
                d.marker
                    && lines[d.first_line..=d.end_line]
                        .iter()
                        .any(|l| l.contains("__cacheline_group_begin") && l.contains(g.as_str()))
            }
            None => !d.marker && d.names.first() == Some(name),
        }) else {
            return Err(format!(
                "struct {}: no declaration of '{name}' to align",
                cs.name
            ));
        };
        if d.align.is_some() {
            continue;
        }
        match flavour {
            Flavour::Kernel => {
                let l = &mut lines[d.end_line];
                let Some(semi) = semicolon_of(l) else {
                    return Err(format!(
                        "struct {}: cannot find the ';' of '{name}'",
                        cs.name
                    ));
                };
                l.insert_str(
                    semi,
                    &format!(" {}", crate::emit::c::kernel_line_align(cacheline_size)),
                );
            }
            Flavour::Userspace => {
                let l = &mut lines[d.code_line];
                let indent = l.len() - l.trim_start().len();
                // `_Alignas` is C11 without any header; C++ spells it `alignas`.
                let kw = if cplusplus { "alignas" } else { "_Alignas" };
                l.insert_str(indent, &format!("{kw}({cacheline_size}) "));
            }
        }
    }
    // Chunks: each #if block whole, each other declaration with its leading comments. Lines
    // of the body that belong to no declaration (a comment before the closing brace) stay
    // last.
    let body_start = cs.open_line + 1;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut spans: Vec<(usize, usize, Option<usize>)> = Vec::new();
    for (bi, b) in cs.blocks.iter().enumerate() {
        let names: Vec<&String> = cs
            .decls
            .iter()
            .filter(|d| d.block == Some(bi))
            .flat_map(|d| &d.names)
            .collect();
        let key = names.iter().filter_map(|n| rank_of(n)).min();
        spans.push((b.first_line, b.last_line, key));
    }
    for d in cs.decls.iter().filter(|d| d.block.is_none()) {
        let key = d.names.iter().filter_map(|n| rank_of(n)).min();
        spans.push((d.first_line, d.last_line, key));
    }
    spans.sort();
    // Declarations that share a source line (`int a; int b;`, a block that ends on a
    // member's line) cannot be moved apart: they move as one chunk, placed by its first
    // member in the new order.
    let mut merged: Vec<(usize, usize, Option<usize>)> = Vec::new();
    for (first, last, key) in spans {
        match merged.last_mut() {
            Some(m) if first <= m.1 => {
                m.1 = m.1.max(last);
                m.2 = match (m.2, key) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            _ => merged.push((first, last, key)),
        }
    }
    // Lines between chunks that belong to no declaration (a `#pragma`, a directive the
    // reader does not know) travel with the chunk after them: no line may be lost.
    let mut covered_to = body_start;
    for (_, last, key) in merged {
        chunks.push(Chunk {
            lines: lines[covered_to..=last].to_vec(),
            key,
        });
        covered_to = last + 1;
    }
    let tail: Vec<String> = lines[covered_to..cs.close_line].to_vec();
    // Chunks without members in the new order (compiled-out blocks, end markers) stay right
    // after the chunk they followed; a group's begin marker stays right before the chunk it
    // opens.
    let mut keyed: Vec<(f64, usize)> = Vec::new();
    let mut last_key = -1.0f64;
    for (i, c) in chunks.iter().enumerate() {
        let opens_group = c.key.is_none()
            && c.lines
                .iter()
                .any(|l| l.contains("__cacheline_group_begin"));
        let k = match c.key {
            Some(k) => k as f64,
            None if opens_group => match chunks[i + 1..].iter().find_map(|n| n.key) {
                Some(next) => next as f64 - 0.5 + 0.001 * i as f64 / chunks.len() as f64,
                None => last_key + 0.001,
            },
            None => last_key + 0.001,
        };
        last_key = k;
        keyed.push((k, i));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut body: Vec<String> = Vec::new();
    for (_, i) in keyed {
        body.extend(chunks[i].lines.iter().cloned());
    }
    body.extend(tail);
    let mut out: Vec<String> = lines[..body_start].to_vec();
    out.extend(body);
    out.extend(lines[cs.close_line..].iter().cloned());
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// The patch moves whole source lines, so every declaration and `#if` block must lie on
/// lines of its own between the line of the `{` and the line of the `}`. A header that puts
/// the body on one line (`struct s { int x; };`) or a member on the brace's line
/// (`int y; };`) is refused, naming the line, rather than cut apart.
fn check_line_structure(cs: &CStruct, n_lines: usize) -> Result<(), String> {
    let name = &cs.name;
    if cs.close_line >= n_lines || cs.open_line >= cs.close_line {
        return Err(format!(
            "struct {name}: its body is on one line ({}); the patch moves whole lines, so put each member on a line of its own",
            cs.open_line + 1
        ));
    }
    let what = |d: &crate::readers::c_struct::Decl| match d.names.first() {
        Some(n) => format!("member '{n}'"),
        None => "a declaration".to_string(),
    };
    for d in &cs.decls {
        let lines = [d.first_line, d.last_line, d.end_line, d.code_line];
        if d.first_line > d.last_line || lines.iter().any(|&l| l >= n_lines) {
            return Err(format!(
                "struct {name}: cannot place {} (line {}) in the file",
                what(d),
                d.end_line + 1
            ));
        }
        if d.first_line <= cs.open_line || d.code_line <= cs.open_line {
            return Err(format!(
                "struct {name}, line {}: {} shares its line with the struct's opening brace; the patch moves whole lines, so put it on a line of its own",
                d.code_line + 1,
                what(d)
            ));
        }
        if d.last_line >= cs.close_line || d.end_line >= cs.close_line {
            return Err(format!(
                "struct {name}, line {}: {} shares its line with the struct's closing brace; the patch moves whole lines, so put the '}}' on a line of its own",
                d.end_line + 1,
                what(d)
            ));
        }
    }
    for b in &cs.blocks {
        if b.first_line <= cs.open_line
            || b.last_line >= cs.close_line
            || b.first_line > b.last_line
        {
            return Err(format!(
                "struct {name}, line {}: '{}' block does not lie between the struct's braces",
                b.first_line + 1,
                b.condition
            ));
        }
    }
    Ok(())
}

/// The helper a rewritten `calloc(n, size)` calls: calloc's contract (NULL when `n * size`
/// overflows or the allocation fails, else a zeroed block) with the block aligned to
/// `align`; aligned_alloc gets a size rounded up to a multiple of the alignment, as C11
/// requires.
const ALIGNED_CALLOC: &str = concat!(
    "/* lineup: calloc(n, size) with the block aligned to `align` (a power of two): NULL when\n",
    " * n * size overflows or the allocation fails, as calloc; aligned_alloc's size rounded up\n",
    " * to a multiple of the alignment */\n",
    "static void *lineup_aligned_calloc(size_t align, size_t n, size_t size)\n",
    "{\n",
    "    size_t bytes;\n",
    "    void *p;\n",
    "    if (size != 0 && n > ((size_t)-1 - (align - 1)) / size)\n",
    "        return NULL;\n",
    "    bytes = (n * size + align - 1) / align * align;\n",
    "    p = aligned_alloc(align, bytes != 0 ? bytes : align);\n",
    "    if (p != NULL)\n",
    "        memset(p, 0, bytes);\n",
    "    return p;\n",
    "}\n",
);

/// The helper a rewritten `malloc(size)` calls: NULL when the rounded size overflows or the
/// allocation fails, as malloc, else a block aligned to `align`.
const ALIGNED_MALLOC: &str = concat!(
    "/* lineup: malloc(size) with the block aligned to `align` (a power of two): NULL when the\n",
    " * allocation fails, as malloc; aligned_alloc's size rounded up to a multiple of the\n",
    " * alignment */\n",
    "static void *lineup_aligned_malloc(size_t align, size_t size)\n",
    "{\n",
    "    if (size > (size_t)-1 - (align - 1))\n",
    "        return NULL;\n",
    "    return aligned_alloc(align, size != 0 ? (size + align - 1) / align * align : align);\n",
    "}\n",
);

/// Rewrites the allocation call on 1-based `line` of `text` to return a `cls`-aligned block
/// and keep the call's contract: `calloc(n, size)` becomes `lineup_aligned_calloc(cls, n,
/// size)` and `malloc(size)` `lineup_aligned_malloc(cls, size)`, static helpers emitted once
/// per file after its includes ([`ALIGNED_CALLOC`], [`ALIGNED_MALLOC`]; `<stdlib.h>` and
/// `<string.h>` included when they are not), which return NULL where the call would, so the
/// program's own NULL check still runs, and give aligned_alloc a size that is a multiple of
/// the alignment. Errors say why the line cannot be rewritten (no such call, arguments that
/// do not parse or continue past the line).
pub fn align_allocation(text: &str, line: usize, cls: u64) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(at) = line.checked_sub(1).and_then(|i| lines.get(i)) else {
        return Err(format!("line {line} is past the end of the file"));
    };
    let call = |name: &str| {
        at.match_indices(name).map(|(i, _)| i).find(|&i| {
            let before = at[..i].chars().next_back();
            let after = at[i + name.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(')
        })
    };
    let (start, name) = match (call("calloc"), call("malloc")) {
        (Some(i), _) => (i, "calloc"),
        (None, Some(i)) => (i, "malloc"),
        (None, None) => {
            return Err(format!(
                "line {line} holds no calloc or malloc call to align: `{}`",
                at.trim()
            ));
        }
    };
    let open = start + at[start..].find('(').expect("checked");
    // The arguments up to the matching parenthesis, split at top-level commas.
    let mut depth = 0;
    let mut args: Vec<String> = vec![String::new()];
    let mut close = None;
    for (i, c) in at[open..].char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().expect("one").push(c);
    }
    let Some(close) = close else {
        return Err(format!(
            "line {line}: the {name} call's arguments continue past the line"
        ));
    };
    let args: Vec<String> = args.iter().map(|a| a.trim().to_string()).collect();
    let (replacement, helper, helper_name) = match (name, args.as_slice()) {
        ("calloc", [n, size]) => (
            format!("lineup_aligned_calloc({cls}, {n}, {size})"),
            ALIGNED_CALLOC,
            "lineup_aligned_calloc(size_t",
        ),
        ("malloc", [size]) => (
            format!("lineup_aligned_malloc({cls}, {size})"),
            ALIGNED_MALLOC,
            "lineup_aligned_malloc(size_t",
        ),
        _ => {
            return Err(format!(
                "line {line}: {name} with {} argument(s)",
                args.len()
            ));
        }
    };
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[line - 1] = format!("{}{replacement}{}", &at[..start], &at[close + 1..]);
    if !text.contains(helper_name) {
        let (at, eol) = helper_place(&lines, line - 1);
        let mut add = String::new();
        for h in ["<stdlib.h>", "<string.h>"] {
            let has = lines
                .iter()
                .any(|l| l.trim_start().starts_with("#include") && l.contains(h));
            if !has && (h == "<stdlib.h>" || name == "calloc") {
                add.push_str(&format!("#include {h}{eol}"));
            }
        }
        add.push_str(eol);
        add.push_str(&helper.replace('\n', eol));
        if at < out.len() && !out[at].trim().is_empty() {
            add.push_str(eol);
        }
        out.insert(at, add);
    }
    Ok(out.concat())
}

/// Where a helper for the allocation on 0-based line `alloc` goes, and the file's line
/// ending: after the last `#include` above the allocation (after the `#endif` of a
/// conditional block that include is in, unless the block holds the allocation too), at the
/// top of the file when there is none.
fn helper_place(lines: &[&str], alloc: usize) -> (usize, &'static str) {
    let eol = if lines.first().is_some_and(|l| l.ends_with("\r\n")) {
        "\r\n"
    } else {
        "\n"
    };
    let directive = |l: &str| -> Option<String> {
        let rest = l.trim_start().strip_prefix('#')?;
        Some(
            rest.trim_start()
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("")
                .to_string(),
        )
    };
    let Some(last) = lines[..alloc]
        .iter()
        .rposition(|l| directive(l).as_deref() == Some("include"))
    else {
        return (0, eol);
    };
    // Open conditionals at the include: the helper goes after the block closes.
    let mut depth = 0usize;
    for l in &lines[..=last] {
        match directive(l).as_deref() {
            Some("if" | "ifdef" | "ifndef") => depth += 1,
            Some("endif") => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut at = last + 1;
    while depth > 0 && at < alloc {
        match directive(lines[at]).as_deref() {
            Some("if" | "ifdef" | "ifndef") => depth += 1,
            Some("endif") => depth -= 1,
            _ => {}
        }
        at += 1;
    }
    // A block that holds the allocation too (an include guard): right after the include.
    if depth > 0 {
        at = last + 1;
    }
    (at, eol)
}

/// Rewrites array member `member` of the struct named `type_name` in `text` into an array of
/// line-sized slots, each element the member `v` of an anonymous struct aligned to the line
/// (`unsigned long hits[8];` becomes `struct { _Alignas(64) unsigned long v; } hits[8];`, or
/// `struct { unsigned long v; } ____cacheline_aligned hits[8];` in the kernel), and every
/// use of it in the file (`x.hits[i]`, `p->hits[i]`) into a use of the slot's element
/// (`x.hits[i].v`). Returns the new text and how many uses it rewrote. Errors say why the
/// declaration cannot be rewritten (not found, several names, over several lines).
pub fn slot_member(
    text: &str,
    type_name: &str,
    member: &str,
    flavour: Flavour,
    cls: u64,
    cplusplus: bool,
) -> Result<(String, usize), String> {
    let cs = crate::readers::c_struct::find_struct(text, type_name)?;
    let mut lines: Vec<String> = text.split_terminator('\n').map(str::to_string).collect();
    check_line_structure(&cs, lines.len())?;
    let Some(d) = cs
        .decls
        .iter()
        .find(|d| !d.marker && d.names.iter().any(|n| n == member))
    else {
        return Err(format!("struct {type_name}: no declaration of '{member}'"));
    };
    if d.names.len() != 1 || d.code_line != d.end_line {
        return Err(format!(
            "struct {type_name}: '{member}' is declared with other names or over several lines; rewrite it by hand"
        ));
    }
    let l = &lines[d.code_line];
    let Some(at) = array_use(l, member, 0, false) else {
        return Err(format!(
            "struct {type_name}: the declaration of '{member}' is not `TYPE {member}[N];`"
        ));
    };
    let indent = &l[..l.len() - l.trim_start().len()];
    let mut ty = l[indent.len()..at].trim();
    // An alignment already on the array (lineup's own, or the author's) stays in front.
    let mut prefix = String::new();
    for kw in ["_Alignas(", "alignas("] {
        if let Some(rest) = ty.strip_prefix(kw)
            && let Some(close) = rest.find(')')
        {
            prefix = format!("{} ", &ty[..kw.len() + close + 1]);
            ty = rest[close + 1..].trim_start();
        }
    }
    if ty.is_empty() {
        return Err(format!(
            "struct {type_name}: no element type before '{member}'"
        ));
    }
    let slot = match flavour {
        Flavour::Kernel => format!(
            "struct {{ {ty} v; }} {}",
            crate::emit::c::kernel_line_align(cls)
        ),
        Flavour::Userspace => {
            let kw = if cplusplus { "alignas" } else { "_Alignas" };
            format!("struct {{ {kw}({cls}) {ty} v; }}")
        }
    };
    lines[d.code_line] = format!("{indent}{prefix}{slot} {}", &l[at..]);
    // Uses: `.member[...]` and `->member[...]` outside the declaration get `.v`.
    let mut uses = 0;
    for (i, l) in lines.iter_mut().enumerate() {
        if (cs.open_line..=cs.close_line).contains(&i) {
            continue;
        }
        let mut from = 0;
        while let Some(start) = array_use(l, member, from, true) {
            let open = start + l[start..].find('[').expect("found by array_use");
            let Some(close) = matching_bracket(l, open) else {
                break;
            };
            let after = &l[close + 1..];
            let already = after.starts_with(".v")
                && !after[2..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            if !already {
                l.insert_str(close + 1, ".v");
                uses += 1;
            }
            // Uses inside the brackets too (`a.hits[b.hits[0]]`).
            from = open + 1;
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok((out, uses))
}

/// The byte offset at or after `from` in `l` where `member` starts as a whole word followed
/// by `[` (after blanks); with `accessed`, only where `.` or `->` comes right before it.
fn array_use(l: &str, member: &str, from: usize, accessed: bool) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    l[from..]
        .match_indices(member)
        .map(|(i, _)| from + i)
        .find(|&i| {
            let before = &l[..i];
            let after = &l[i + member.len()..];
            !before.ends_with(ident)
                && after.trim_start().starts_with('[')
                && (!accessed
                    || before.trim_end().ends_with('.')
                    || before.trim_end().ends_with("->"))
        })
}

/// The `]` that closes the `[` at `open`, on the same line.
fn matching_bracket(l: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in l[open..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// How a header's struct differs from the type being optimized, or None when they declare
/// the same members. `type_members` holds, per unit of the type, the member names it
/// covers. A header member the type lacks is fine inside an `#if` block (compiled out in the
/// build the type came from) and a mismatch elsewhere; a member of the type the header does
/// not declare is always a mismatch: the patch could not place it.
pub fn header_mismatch(cs: &CStruct, type_members: &[Vec<String>]) -> Option<String> {
    let known = |n: &str| type_members.iter().any(|u| u.iter().any(|m| m == n));
    let mut extra = Vec::new();
    for d in cs.decls.iter().filter(|d| !d.marker && d.block.is_none()) {
        extra.extend(d.names.iter().filter(|n| !known(n)).cloned());
    }
    let declared: Vec<&String> = cs.decls.iter().flat_map(|d| &d.names).collect();
    let missing: Vec<String> = type_members
        .iter()
        .filter(|u| !u.iter().any(|m| declared.contains(&m)))
        .filter_map(|u| u.first().cloned())
        .collect();
    let list = |v: &[String]| {
        let shown: Vec<String> = v.iter().take(5).map(|n| format!("'{n}'")).collect();
        let more = if v.len() > 5 {
            format!(" and {} more", v.len() - 5)
        } else {
            String::new()
        };
        format!("{}{more}", shown.join(", "))
    };
    let mut parts = Vec::new();
    if !extra.is_empty() {
        parts.push(format!(
            "the header declares {}, which the type has not",
            list(&extra)
        ));
    }
    if !missing.is_empty() {
        parts.push(format!(
            "the type has {}, which the header lacks",
            list(&missing)
        ));
    }
    if parts.is_empty() {
        None
    } else {
        Some(format!(
            "struct {} does not match the type: {}",
            cs.name,
            parts.join("; ")
        ))
    }
}

/// Byte index of the `;` that ends the declaration on line `l` (outside comments).
fn semicolon_of(l: &str) -> Option<usize> {
    let code_end = [l.find("/*"), l.find("//")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(l.len());
    l[..code_end].rfind(';')
}

/// A unified diff from `old` to `new`, for `patch -p1` / `git apply` (paths `a/PATH`, `b/PATH`).
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Whether the header the patch is for is the recorded allocation site's file (the debug
/// info's path may be absolute, the header's relative, or the other way round).
pub fn same_file(header: &std::path::Path, site: &str) -> bool {
    let a = std::fs::canonicalize(header).ok();
    let b = std::fs::canonicalize(site).ok();
    // A copy of the source (the header given is not the compiled path) is the same file
    // by name: the patch is reviewed before it is applied.
    (a.is_some() && a == b) || header.file_name() == std::path::Path::new(site).file_name()
}

/// C++ sources by their extension (`alignas` is a keyword there; C11 spells it `_Alignas`).
pub fn is_cplusplus(path: &std::path::Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "C" | "H")
    )
}

/// Whether `text` initializes the type C calls `needle` (`struct name`, or a typedef's name
/// for a struct without a tag) positionally (`= { 0, 32 }`), which a reorder silently
/// breaks; designated initializers (`.field = 1`) are safe. The line, from 1.
pub fn positional_initializer(text: &str, needle: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices(needle) {
            let rest = &line[at + needle.len()..];
            if line[..at].ends_with(ident)
                || rest.starts_with(ident)
                || rest.trim_start().starts_with('{')
            {
                continue;
            }
            if let Some(eq) = rest.find("= {").or_else(|| rest.find("={")) {
                let body = rest[eq..].trim_start_matches(['=', ' ', '{']);
                if !body.trim_start().starts_with('.') && !body.trim_start().starts_with('}') {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod initializer_tests {
    use super::positional_initializer;

    #[test]
    fn positional_initializers_are_found_and_designated_ones_are_not() {
        let text = "struct s { int a; int b; };\nstruct s x = {1, 2};\n";
        assert_eq!(positional_initializer(text, "struct s"), Some(2));
        let text = "struct s { int a; int b; };\nstatic struct s x __attribute__((aligned(64))) = { .b = 2 };\n";
        assert_eq!(positional_initializer(text, "struct s"), None);
        assert_eq!(
            positional_initializer("struct s2 y = {1};\nstruct s *p = 0;\n", "struct s"),
            None
        );
        // A struct without a tag, by its typedef's name, as a whole word.
        let text = "typedef struct { int a; int b; } t;\nt x = {1, 2};\n";
        assert_eq!(positional_initializer(text, "t"), Some(2));
        assert_eq!(positional_initializer("my_t y = {1};\n", "t"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTERS: &str = "struct counters {\n    unsigned long hits[MAX_THREADS]; /* one per worker */\n    unsigned long total;\n};\n\nvoid f(struct counters *c, long id)\n{\n    c->hits[id]++;\n    stats.total += stats.hits[c->hits[0]] + other.hits_2[1];\n    g(&stats.hits[id].v);\n}\n";

    #[test]
    fn a_slotted_member_and_its_uses_are_rewritten() {
        let (out, uses) =
            slot_member(COUNTERS, "counters", "hits", Flavour::Userspace, 64, false).unwrap();
        assert!(
            out.contains(
                "    struct { _Alignas(64) unsigned long v; } hits[MAX_THREADS]; /* one per worker */\n"
            ),
            "{out}"
        );
        assert!(out.contains("    c->hits[id].v++;\n"), "{out}");
        // Nested uses both, another member with a longer name not, a rewritten one not again.
        assert!(
            out.contains("stats.hits[c->hits[0].v].v + other.hits_2[1];"),
            "{out}"
        );
        assert!(out.contains("g(&stats.hits[id].v);"), "{out}");
        assert_eq!(uses, 3);
        let (out, _) =
            slot_member(COUNTERS, "counters", "hits", Flavour::Kernel, 64, false).unwrap();
        assert!(
            out.contains("struct { unsigned long v; } ____cacheline_aligned hits[MAX_THREADS];"),
            "{out}"
        );
        // lineup's own alignment on the array stays in front.
        let aligned = COUNTERS.replace(
            "    unsigned long hits",
            "    _Alignas(64) unsigned long hits",
        );
        let (out, _) =
            slot_member(&aligned, "counters", "hits", Flavour::Userspace, 64, true).unwrap();
        assert!(
            out.contains("    _Alignas(64) struct { alignas(64) unsigned long v; } hits["),
            "{out}"
        );
    }

    #[test]
    fn a_member_that_is_no_array_is_refused() {
        let e =
            slot_member(COUNTERS, "counters", "total", Flavour::Userspace, 64, false).unwrap_err();
        assert!(e.contains("is not `TYPE total[N];`"), "{e}");
        let e =
            slot_member(COUNTERS, "counters", "nope", Flavour::Userspace, 64, false).unwrap_err();
        assert!(e.contains("no declaration of 'nope'"), "{e}");
    }
}
