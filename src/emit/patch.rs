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
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
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
    let mut covered_to = body_start;
    for &(first, last, key) in &spans {
        let first = first.max(covered_to);
        chunks.push(Chunk {
            lines: lines[first..=last].to_vec(),
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
