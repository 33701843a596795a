//! The members of one struct as a C source file declares them: order, alignment attributes,
//! `#if` blocks and the source lines each declaration spans (with its comments), for
//! `predict --layout FILE.h` candidates and for `optimize --source` patches.
//!
//! Not a C parser: it finds `struct NAME {`, follows braces, and splits the body at `;` and at
//! preprocessor lines. That is what struct bodies in kernel and userspace headers look like.

/// Deepest nesting of braces in a struct's body (the body itself is level 1): anonymous
/// structs and unions inside one another. The kernel's deepest (`struct page`) is about 5;
/// every level re-reads the declaration it holds, so the bound keeps the work linear in the
/// header's size (a 360 KB header of 30,000 nested structs took 7.9 GB before).
pub const MAX_NESTING: i32 = 64;

/// Longest declaration (one member, with any inline struct or union it holds, comments
/// left out), in bytes: the kernel's largest inline union is about 5 KB.
pub const MAX_DECL_BYTES: usize = 256 << 10;

/// Alignment an attribute asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// `____cacheline_aligned` and friends: the target's cache-line size.
    Line,
    Bytes(u64),
}

/// One declaration at the top level of the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decl {
    /// Member names it declares (several for `int a, b;`; an inline anonymous struct or union
    /// declares its members' names).
    pub names: Vec<String>,
    pub anonymous_inline: bool,
    pub align: Option<Align>,
    /// Lines (0-based, inclusive) of the declaration, with the comment and blank lines
    /// right above it.
    pub first_line: usize,
    pub last_line: usize,
    /// Line of the `;` that ends it.
    pub end_line: usize,
    /// Line where its code (not its comments) begins.
    pub code_line: usize,
    /// Index into [`CStruct::blocks`] of the outermost `#if` block holding it.
    pub block: Option<usize>,
    /// `__cacheline_group_begin/end(...)` markers are kept as declarations without names.
    pub marker: bool,
    /// A marker's members as the kernel's macros name them (`__cacheline_group_begin__GROUP`),
    /// with their alignment (`__cacheline_group_end_aligned` adds an aligned pad).
    pub marker_members: Vec<(String, Option<Align>)>,
    /// The declaration's code without its attributes (`char pad[48]`), for sizing members
    /// the struct being priced lacks.
    pub code: String,
}

/// An `#if`...`#endif` block at the top level of the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub first_line: usize,
    pub last_line: usize,
    /// The condition line (`#ifdef CONFIG_RT_GROUP_SCHED`).
    pub condition: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CStruct {
    pub name: String,
    /// Line of `struct NAME {` and of the closing `};`.
    pub open_line: usize,
    pub close_line: usize,
    pub decls: Vec<Decl>,
    pub blocks: Vec<Block>,
    /// Alignment of the whole type (`} ____cacheline_aligned;`, `struct __aligned(64) s {`).
    pub align: Option<Align>,
}

impl CStruct {
    /// Member names in declaration order, with the alignment each asks for.
    pub fn members(&self) -> Vec<(String, Option<Align>)> {
        let mut out = Vec::new();
        let mut pending: Option<Align> = None;
        for d in &self.decls {
            if d.marker {
                if d.align.is_some() {
                    pending = d.align;
                }
                continue;
            }
            for (k, n) in d.names.iter().enumerate() {
                let a = if k == 0 {
                    d.align.or(pending.take())
                } else {
                    None
                };
                out.push((n.clone(), a));
            }
        }
        out
    }

    /// [`CStruct::members`] with the kernel's group markers as the members they expand to
    /// (zero-size arrays that take their place, and their alignment, in the layout).
    pub fn members_and_markers(&self) -> Vec<(String, Option<Align>)> {
        let mut out = Vec::new();
        for d in &self.decls {
            if d.marker {
                out.extend(d.marker_members.iter().cloned());
                continue;
            }
            for (k, n) in d.names.iter().enumerate() {
                out.push((n.clone(), if k == 0 { d.align } else { None }));
            }
        }
        out
    }
}

/// Alignment attributes in `s` (the text between a struct's `}` and its `;`, or between its
/// keyword and its `{`).
fn attributes_align(s: &str) -> Option<Align> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    parse_decl(&format!("int x {s}"), 0, 0, None)
        .ok()
        .and_then(|d| d.align)
}

/// The line of the `{` of `typedef struct [tag] { ... } NAME;` (or union), if `lines` hold one.
fn typedef_body(lines: &[&str], name: &str) -> Option<usize> {
    for (i, l) in lines.iter().enumerate() {
        let code = strip_line_comment(l);
        let Some(pos) = find_word(code, "typedef") else {
            continue;
        };
        let rest = code[pos + "typedef".len()..].trim_start();
        if !(rest.starts_with("struct") || rest.starts_with("union")) {
            continue;
        }
        // The `{` on this line or the next; then the matching `}` and the name after it.
        let open = if code.contains('{') {
            i
        } else if lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('{'))
        {
            i + 1
        } else {
            continue;
        };
        let mut depth = 0i32;
        for (j, l) in lines.iter().enumerate().skip(open) {
            let code = strip_line_comment(l);
            for (k, c) in code.char_indices() {
                match c {
                    '{' => {
                        depth += 1;
                        // Deeper than any struct reads: not this typedef (bounded work).
                        if depth > MAX_NESTING {
                            break;
                        }
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            let tail = code[k + 1..].trim_start();
                            let after =
                                tail.trim_start_matches(|c: char| c == '*' || c.is_whitespace());
                            let named = after.starts_with(name)
                                && !after[name.len()..]
                                    .starts_with(|c: char| c.is_alphanumeric() || c == '_');
                            if named {
                                return Some(open);
                            }
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if (depth <= 0 && j > open) || depth > MAX_NESTING {
                break;
            }
        }
    }
    None
}

/// Finds `struct NAME {` (or `union NAME {`) in `text` and reads its body.
pub fn find_struct(text: &str, name: &str) -> Result<CStruct, String> {
    let lines: Vec<&str> = text.lines().collect();
    // Where the body starts: the `{` after `struct name`.
    let mut open = None;
    for (i, l) in lines.iter().enumerate() {
        let code = strip_line_comment(l);
        // C++ declares the same thing with `class` (and may name bases after a `:`).
        for kw in ["struct", "union", "class"] {
            if let Some(pos) = find_word(code, kw) {
                let rest = code[pos + kw.len()..].trim_start();
                if rest.starts_with(name)
                    && !rest[name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                {
                    let after = rest[name.len()..].trim_start();
                    if after.starts_with('{')
                        || (after.starts_with(':')
                            && !after.starts_with("::")
                            && after.contains('{'))
                        || (after.starts_with("final") && after.contains('{'))
                        || (after.is_empty()
                            && lines
                                .get(i + 1)
                                .is_some_and(|n| n.trim_start().starts_with('{')))
                    {
                        open = Some(if after.is_empty() { i + 1 } else { i });
                        break;
                    }
                }
            }
        }
        if open.is_some() {
            break;
        }
    }
    // `typedef struct [tag] { ... } NAME;`: the name comes after the body.
    let open = open.or_else(|| typedef_body(&lines, name));
    let Some(open_line) = open else {
        return Err(format!("no definition of struct {name}"));
    };
    // Walk characters from the `{`, tracking depth, comments and statement boundaries.
    let mut decls = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut block_stack: Vec<usize> = Vec::new();
    let mut depth = 0i32;
    let mut stmt = String::new();
    let mut stmt_first: Option<usize> = None;
    let mut lead_first: Option<usize> = None;
    let mut in_comment = false;
    let mut started = false;
    for (i, raw) in lines.iter().enumerate().skip(open_line) {
        let trimmed = raw.trim_start();
        if started
            && depth == 1
            && !in_comment
            && trimmed.starts_with('#')
            && stmt.trim().is_empty()
        {
            let directive = trimmed[1..].trim_start();
            if directive.starts_with("if") {
                if block_stack.is_empty() {
                    blocks.push(Block {
                        first_line: lead_first.unwrap_or(i),
                        last_line: i,
                        condition: trimmed.trim_end().to_string(),
                    });
                }
                block_stack.push(blocks.len() - 1);
            } else if directive.starts_with("endif") {
                if block_stack.pop().is_none() {
                    return Err(format!("struct {name}, line {}: #endif without #if", i + 1));
                }
                if block_stack.is_empty()
                    && let Some(b) = blocks.last_mut()
                {
                    b.last_line = i;
                }
            }
            lead_first = None;
            continue;
        }
        let chars: Vec<char> = raw.chars().collect();
        let mut ended_here = false;
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            if in_comment {
                if c == '*' && chars.get(k + 1) == Some(&'/') {
                    in_comment = false;
                    k += 1;
                }
                k += 1;
                continue;
            }
            if c == '/' && chars.get(k + 1) == Some(&'*') {
                in_comment = true;
                k += 2;
                continue;
            }
            if c == '/' && chars.get(k + 1) == Some(&'/') {
                break;
            }
            match c {
                '{' => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return Err(format!(
                            "struct {name}, line {}: braces nested deeper than {MAX_NESTING} levels",
                            i + 1
                        ));
                    }
                    if !started {
                        started = true;
                        k += 1;
                        continue;
                    }
                }
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        if !stmt.trim().is_empty() {
                            return Err(format!(
                                "struct {name}: declaration without ';' before line {}",
                                i + 1
                            ));
                        }
                        if !block_stack.is_empty() {
                            return Err(format!("struct {name}: #if without #endif"));
                        }
                        // Attributes of the whole type follow the `}` up to the `;`.
                        let mut tail: String = chars[k + 1..].iter().collect();
                        for next in lines.iter().skip(i + 1).take(4) {
                            if tail.contains(';') {
                                break;
                            }
                            tail.push(' ');
                            tail.push_str(strip_line_comment(next));
                        }
                        let tail = tail.split(';').next().unwrap_or("");
                        let head = strip_line_comment(lines[open_line]);
                        let head = head.split('{').next().unwrap_or("");
                        return Ok(CStruct {
                            name: name.to_string(),
                            open_line,
                            close_line: i,
                            decls,
                            blocks,
                            align: attributes_align(tail).or_else(|| attributes_align(head)),
                        });
                    }
                }
                _ => {}
            }
            if started && depth >= 1 {
                if c == ';' && depth == 1 {
                    let first = stmt_first.unwrap_or(i);
                    let mut d = parse_decl(
                        &stmt,
                        lead_first.unwrap_or(first).min(first),
                        i,
                        block_stack.first().copied(),
                    )
                    .map_err(|e| format!("struct {name}, line {}: {e}", i + 1))?;
                    d.code_line = first;
                    decls.push(d);
                    stmt.clear();
                    stmt_first = None;
                    lead_first = None;
                    ended_here = true;
                } else {
                    if !c.is_whitespace() && stmt_first.is_none() {
                        stmt_first = Some(i);
                    }
                    stmt.push(c);
                    if stmt.len() > MAX_DECL_BYTES {
                        return Err(format!(
                            "struct {name}, line {}: a declaration longer than {} KiB (no ';')",
                            i + 1,
                            MAX_DECL_BYTES >> 10
                        ));
                    }
                }
            }
            k += 1;
        }
        if started {
            stmt.push(' ');
            if stmt.trim().is_empty()
                && lead_first.is_none()
                && !ended_here
                && depth == 1
                && i > open_line
            {
                lead_first = Some(i);
            }
        }
    }
    Err(format!("struct {name}: no closing brace"))
}

fn strip_line_comment(l: &str) -> &str {
    l.find("//").map(|p| &l[..p]).unwrap_or(l)
}

fn find_word(s: &str, w: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = s[from..].find(w) {
        let at = from + p;
        let before = s[..at].chars().last();
        let after = s[at + w.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !ident(before) && !ident(after) {
            return Some(at);
        }
        from = at + w.len();
    }
    None
}

/// Removes `name(...)` (balanced) wherever it occurs; returns the text and the argument of
/// the first occurrence. One pass over the text (each removal used to rescan it from the
/// start: quadratic in the occurrences).
fn remove_call(s: &str, name: &str) -> (String, Option<String>) {
    let mut out = String::with_capacity(s.len());
    let mut arg = None;
    let mut rest = s;
    while let Some(at) = find_word(rest, name) {
        out.push_str(&rest[..at]);
        let after = &rest[at + name.len()..];
        let Some(open) = after.find('(').filter(|p| after[..*p].trim().is_empty()) else {
            // The word without a call: removed alone.
            out.push(' ');
            rest = after;
            continue;
        };
        let mut depth = 0;
        let mut end = None;
        for (j, c) in after[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(open + j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            // Unbalanced: the rest stays as it is.
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        if arg.is_none() {
            arg = Some(after[open + 1..end].trim().to_string());
        }
        out.push(' ');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (out, arg)
}

fn align_of(arg: &str) -> Align {
    let a = arg
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let a = a
        .strip_prefix("aligned")
        .unwrap_or(a)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let a = a
        .strip_prefix("__aligned__")
        .unwrap_or(a)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    if let Some(h) = a.strip_prefix("0x")
        && let Ok(v) = u64::from_str_radix(h, 16)
    {
        return Align::Bytes(v);
    }
    match a.parse::<u64>() {
        Ok(v) => Align::Bytes(v),
        Err(_) => Align::Line,
    }
}

fn parse_decl(
    stmt: &str,
    first_line: usize,
    end_line: usize,
    block: Option<usize>,
) -> Result<Decl, String> {
    let mut s = stmt.trim().to_string();
    // C++ access labels (`public:`) belong to no member.
    loop {
        let t = s.trim_start();
        let label = ["public", "private", "protected"].into_iter().find(|kw| {
            t.strip_prefix(kw).is_some_and(|r| {
                let r = r.trim_start();
                r.starts_with(':') && !r.starts_with("::")
            })
        });
        let Some(kw) = label else { break };
        let r = t[kw.len()..].trim_start();
        s = r[1..].to_string();
    }
    let mut align = None;
    let mut marker = false;
    let mut marker_members = Vec::new();
    for m in [
        "__cacheline_group_begin_aligned",
        "__cacheline_group_begin",
        "__cacheline_group_end_aligned",
        "__cacheline_group_end",
    ] {
        if find_word(&s, m).is_some() {
            marker = true;
            let (rest, arg) = remove_call(&s, m);
            s = rest;
            let arg = arg.unwrap_or_default();
            let mut parts = arg.splitn(2, ',');
            let group = parts.next().unwrap_or("").trim().to_string();
            // The optional second argument is the alignment (default: the line).
            let line = match parts.next().map(str::trim).filter(|a| !a.is_empty()) {
                Some(a) => align_of(a),
                None => Align::Line,
            };
            // The kernel's <linux/cache.h>: the aligned begin aligns its marker; the aligned
            // end aligns its marker to a long and adds an empty struct aligned to the line.
            match m {
                "__cacheline_group_begin_aligned" => {
                    align = Some(line);
                    marker_members.push((format!("__cacheline_group_begin__{group}"), Some(line)));
                }
                "__cacheline_group_begin" => {
                    marker_members.push((format!("__cacheline_group_begin__{group}"), None))
                }
                "__cacheline_group_end_aligned" => {
                    marker_members.push((
                        format!("__cacheline_group_end__{group}"),
                        Some(Align::Bytes(8)),
                    ));
                    marker_members.push((format!("__cacheline_group_pad__{group}"), Some(line)));
                }
                _ => marker_members.push((format!("__cacheline_group_end__{group}"), None)),
            }
        }
    }
    for w in [
        "____cacheline_aligned_in_smp",
        "____cacheline_aligned",
        "__cacheline_aligned_in_smp",
        "__cacheline_aligned",
        "____cacheline_internodealigned_in_smp",
    ] {
        if find_word(&s, w).is_some() {
            align = Some(Align::Line);
            s = s.replacen(w, " ", usize::MAX);
        }
    }
    for call in ["__aligned", "alignas", "_Alignas"] {
        let (rest, arg) = remove_call(&s, call);
        if let Some(a) = arg {
            align = Some(align_of(&a));
        }
        s = rest;
    }
    loop {
        let (rest, arg) = remove_call(&s, "__attribute__");
        let Some(a) = arg else { break };
        if a.contains("aligned") {
            align = Some(align_of(&a));
        }
        s = rest;
    }
    for w in [
        "__randomize_layout",
        "__packed",
        "__rcu",
        "__percpu",
        "volatile",
        "const",
    ] {
        s = s.replacen(w, " ", usize::MAX);
    }
    let s = s.trim();
    if marker && s.is_empty() {
        // `__cacheline_group_begin(g) ____cacheline_aligned;`: the attribute is the marker's.
        if let (Some(a), Some(first)) = (align, marker_members.first_mut())
            && first.1.is_none()
        {
            first.1 = Some(a);
        }
        return Ok(Decl {
            names: vec![],
            anonymous_inline: false,
            align,
            first_line,
            last_line: end_line,
            end_line,
            code_line: first_line,
            block,
            marker: true,
            marker_members: std::mem::take(&mut marker_members),
            code: String::new(),
        });
    }
    if s.is_empty() {
        return Err("empty declaration".to_string());
    }
    // Inline struct or union: names after the closing brace, or the inner names.
    if let (Some(open), Some(close)) = (s.find('{'), s.rfind('}')) {
        let after = s[close + 1..].trim();
        let (names, anonymous_inline) = if after.is_empty() {
            let inner = &s[open + 1..close];
            let mut names = Vec::new();
            for part in split_top(inner, ';') {
                if let Ok(d) = parse_decl(&part, 0, 0, None) {
                    names.extend(d.names);
                }
            }
            (names, true)
        } else {
            (declarator_names(after), false)
        };
        return Ok(Decl {
            names,
            anonymous_inline,
            align,
            first_line,
            last_line: end_line,
            end_line,
            code_line: first_line,
            block,
            marker: false,
            marker_members: Vec::new(),
            code: s.to_string(),
        });
    }
    // `type a, *b, c[4]`: the type is everything before the first declarator.
    let parts = split_top(s, ',');
    let mut names = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let n = if k == 0 {
            declarator_name(p)
        } else {
            declarator_name(&format!("x {p}"))
        };
        match n {
            Some(n) => names.push(n),
            None => return Err(format!("cannot find the member name in '{}'", p.trim())),
        }
    }
    Ok(Decl {
        names,
        anonymous_inline: false,
        align,
        first_line,
        last_line: end_line,
        end_line,
        code_line: first_line,
        block,
        marker: false,
        marker_members: Vec::new(),
        code: s.to_string(),
    })
}

fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        if c == sep && depth == 0 {
            if !cur.trim().is_empty() {
                out.push(cur.clone());
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

fn declarator_names(s: &str) -> Vec<String> {
    split_top(s, ',')
        .iter()
        .filter_map(|p| declarator_name(&format!("x {p}")))
        .collect()
}

/// The identifier a declarator declares: `(*name)(args)`, `name[4]`, `name : 3`, `*name`.
fn declarator_name(decl: &str) -> Option<String> {
    let d = decl.trim();
    // Function pointer.
    if let Some(p) = d.find("(*") {
        let rest = &d[p + 2..];
        let name: String = rest
            .trim_start_matches(['*', ' '])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        return (!name.is_empty()).then_some(name);
    }
    let mut d = d.to_string();
    if let Some(colon) = d.find(':') {
        d.truncate(colon);
    }
    if let Some(br) = d.find('[') {
        d.truncate(br);
    }
    let d = d.trim_end();
    let name: String = d
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    // A bare type (`int :3` anonymous bitfield) declares nothing we can move by name.
    let before = d[..d.len() - name.len()].trim();
    if name.is_empty()
        || before.is_empty()
        || name.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"
/* a kernel-style header */
struct other { int x; };

struct task_group {
	struct cgroup_subsys_state css;

#ifdef CONFIG_FAIR_GROUP_SCHED
	/* schedulable entities of this group on each CPU */
	struct sched_entity	**se;
	unsigned long		shares;
	/*
	 * load_avg can be heavily contended at clock tick time, so put
	 * it in its own cache-line separated from the fields above which
	 * will also be accessed at each tick.
	 */
	atomic_long_t		load_avg ____cacheline_aligned;
#endif
	struct rcu_head		rcu;
	void (*func)(struct rcu_head *head, int x);
	unsigned int a:3, b:5;
	union {
		int u1;
		long u2;
	};
	struct { int p; } named;
	char name[16] __aligned(8);
	__cacheline_group_begin_aligned(hot);
	int after_marker;
	__cacheline_group_end_aligned(hot);
} __randomize_layout;
"#;

    #[test]
    fn reads_a_kernel_style_struct() {
        let s = find_struct(HEADER, "task_group").unwrap();
        let m = s.members();
        let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "css",
                "se",
                "shares",
                "load_avg",
                "rcu",
                "func",
                "a",
                "b",
                "u1",
                "u2",
                "named",
                "name",
                "after_marker"
            ]
        );
        assert_eq!(m[3].1, Some(Align::Line));
        assert_eq!(m[11].1, Some(Align::Bytes(8)));
        assert_eq!(m[12].1, Some(Align::Line));
        assert_eq!(s.blocks.len(), 1);
        assert_eq!(s.blocks[0].condition, "#ifdef CONFIG_FAIR_GROUP_SCHED");
        let se = s.decls.iter().find(|d| d.names == ["se"]).unwrap();
        assert_eq!(se.block, Some(0));
        // The comment above `se` belongs to it.
        assert_eq!(
            HEADER.lines().nth(se.first_line).unwrap().trim(),
            "/* schedulable entities of this group on each CPU */"
        );
        let load = s.decls.iter().find(|d| d.names == ["load_avg"]).unwrap();
        assert!(HEADER.lines().nth(load.first_line).unwrap().contains("/*"));
        assert!(HEADER.lines().nth(s.close_line).unwrap().starts_with('}'));
        let anon = s.decls.iter().find(|d| d.names == ["u1", "u2"]).unwrap();
        assert!(anon.anonymous_inline);
    }

    #[test]
    fn missing_struct_and_broken_bodies_are_errors() {
        assert!(
            find_struct(HEADER, "nope")
                .unwrap_err()
                .contains("no definition")
        );
        assert!(
            find_struct("struct s {\n int a;\n", "s")
                .unwrap_err()
                .contains("no closing brace")
        );
        assert!(find_struct("struct s {\n#ifdef X\n int a;\n};\n", "s").is_err());
    }

    /// The earlier remove_call, which rescanned the text after each removal.
    fn remove_call_rescanning(s: &str, name: &str) -> (String, Option<String>) {
        let mut out = s.to_string();
        let mut arg = None;
        while let Some(at) = find_word(&out, name) {
            let rest = &out[at + name.len()..];
            let Some(open) = rest.find('(').filter(|p| rest[..*p].trim().is_empty()) else {
                out.replace_range(at..at + name.len(), " ");
                continue;
            };
            let mut depth = 0;
            let mut end = None;
            for (j, c) in rest[open..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(open + j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            if arg.is_none() {
                arg = Some(rest[open + 1..end].trim().to_string());
            }
            out.replace_range(at..at + name.len() + end + 1, " ");
        }
        (out, arg)
    }

    #[test]
    fn calls_are_removed_in_one_pass_as_before() {
        for s in [
            "int x __aligned(8) __aligned (4)",
            "__aligned(8)__aligned(4) y",
            "x__aligned(8) __aligned z __aligned(1",
            "long a __attribute__((aligned(64), packed)) __attribute__((x))",
            "__aligned __aligned(2) (*f)(int) __aligned((1)(2))",
            "",
        ] {
            for name in ["__aligned", "__attribute__"] {
                assert_eq!(remove_call(s, name), remove_call_rescanning(s, name), "{s}");
            }
        }
    }

    #[test]
    fn nesting_and_declaration_length_are_bounded() {
        let n = MAX_NESTING as usize;
        let nested = |levels: usize| {
            format!(
                "struct s {{\n{}int x;\n{}}};\n",
                "struct {\n".repeat(levels),
                "};\n".repeat(levels)
            )
        };
        let ok = find_struct(&nested(n - 1), "s").unwrap();
        assert_eq!(ok.members()[0].0, "x");
        let e = find_struct(&nested(n), "s").unwrap_err();
        assert!(e.contains("nested deeper than 64 levels"), "{e}");
        let long = format!("struct s {{\n int {};\n}};\n", "a".repeat(MAX_DECL_BYTES));
        assert!(
            find_struct(&long, "s")
                .unwrap_err()
                .contains("longer than 256 KiB")
        );
    }
}
