//! Layouts as pahole prints them: the text kernel engineers read in mail and commit logs.
//!
//! The target is pahole 1.24 (Debian 12) byte for byte, quirks included (`const char  *`,
//! `struct sched_entity * *`, the padding widths), so that lineup's output diffs cleanly
//! against pahole's. Spacing follows pahole's two column widths: the type is padded to
//! `type_width` and the comment starts `type_width + name_width` columns after the indent.

use crate::layout::{Field, Inner, Layout, Summary};
use crate::types::walk::{self, Guard};
use crate::types::{Kind, Qualifier, SourceFormat, TypeId, Types};

const TYPE_WIDTH: i64 = 26;
const NAME_WIDTH: i64 = 23;
/// pahole gives top-level unions a narrower name column.
const UNION_NAME_WIDTH: i64 = 21;
/// Type-printing steps allowed per top-level member (the kernel's deepest needs under 100).
const MEMBER_BUDGET: usize = 4096;
/// Deepest nesting of pointed-to anonymous types printed in place.
const MAX_NESTING: usize = 15;

/// Appends the pahole text of `layout` (a type from `types`) to `out`.
pub fn write_layout(out: &mut Vec<u8>, types: &Types<'_>, layout: &Layout) {
    write_layout_with_notes(out, types, layout, None)
}

/// [`write_layout`], with `notes(field)` printed after the offset comment of each struct
/// member it returns a note for.
pub fn write_layout_with_notes(
    out: &mut Vec<u8>,
    types: &Types<'_>,
    layout: &Layout,
    notes: Option<Notes<'_>>,
) {
    let mut p = Printer {
        types,
        cls: layout.cacheline_size,
        cell: 0,
        notes,
        guard: Guard::with_steps(MEMBER_BUDGET),
    };
    let conf = Conf {
        indent: 0,
        t: TYPE_WIDTH,
        n: if layout.kind == "union" {
            UNION_NAME_WIDTH
        } else {
            NAME_WIDTH
        },
        base: 0,
        rel: false,
        union_member: false,
        first: false,
        last: false,
        emit_stats: true,
    };
    let inner = layout.inner();
    // pahole prints a struct without a tag by its typedef (`typedef struct { ... } name;`).
    let typedef = layout.tagless && types.get(layout.type_id).name.is_empty();
    if typedef {
        out.extend_from_slice(b"typedef ");
    }
    if layout.kind == "union" {
        p.union(out, layout.type_id, &layout.members, conf, None);
    } else {
        p.structure(
            out,
            layout.type_id,
            &layout.members,
            &inner,
            conf,
            None,
            Some(&layout.summary),
        );
    }
    if typedef {
        out.push(b' ');
        push_str(out, &layout.name);
    }
    out.extend_from_slice(b";\n");
}

/// How the current nesting level prints (pahole's print configuration).
#[derive(Clone, Copy)]
struct Conf {
    indent: usize,
    /// Width the type is padded to.
    t: i64,
    /// Width of the name column.
    n: i64,
    /// Absolute offset of the enclosing struct.
    base: u64,
    /// Offsets are relative (inside a pointed-to anonymous struct).
    rel: bool,
    /// Anywhere below a union: flexible arrays print as `[0]`.
    union_member: bool,
    first: bool,
    last: bool,
    /// Whether an anonymous struct reached here prints its own summary (pahole does for
    /// `const struct { ... };` members, a quirk kept for byte-identical output).
    emit_stats: bool,
}

/// A note to print after a member's line (`diagnose` puts who touched it there).
pub type Notes<'n> = &'n dyn Fn(&Field) -> Option<String>;

impl Conf {
    /// pahole prints a zero-length array as `[]` only as the last (not only) member of a
    /// struct outside any union; elsewhere as `[0]`.
    fn flexible_array_slot(&self) -> bool {
        self.last && !self.first && !self.union_member
    }
}

struct Printer<'t, 'a, 'n> {
    types: &'t Types<'a>,
    cls: u64,
    /// Last cache line a boundary comment was printed for; shared by all nesting levels.
    cell: u64,
    notes: Option<Notes<'n>>,
    /// Bounds type printing (the shared type-graph guard), with a step budget refilled per
    /// top-level member: a prototype whose parameters point back at it branches at every
    /// level, and must not take forever.
    guard: Guard,
}

/// The members of an inline struct or union, when the layout computed them.
type Body<'f> = Option<(&'f [Field], &'f Inner)>;

fn tabs(out: &mut Vec<u8>, n: usize) {
    for _ in 0..n.min(15) {
        out.push(b'\t');
    }
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

/// `%-*s`: `s` left-justified in `width` columns, never cut. Deep nesting drives pahole's
/// widths negative, and printf reads a negative width as its absolute value.
fn pad(out: &mut Vec<u8>, s: &str, width: i64) {
    push_str(out, s);
    for _ in s.len() as i64..width.abs() {
        out.push(b' ');
    }
}

fn spaces(out: &mut Vec<u8>, n: i64) {
    for _ in 0..n {
        out.push(b' ');
    }
}

/// `%*u`: `v` right-aligned in `width` columns.
fn num(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut x = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    for _ in len..width {
        out.push(b' ');
    }
    out.extend_from_slice(&digits[i..]);
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn hole_comment(out: &mut Vec<u8>, indent: usize, n: u64, unit: &str) {
    tabs(out, indent);
    push_str(out, "/* XXX ");
    num(out, n, 0);
    out.push(b' ');
    push_str(out, unit);
    push_str(out, plural(n));
    push_str(out, " hole, try to pack */");
}

impl<'t, 'a> Printer<'t, 'a, '_> {
    fn kind(&self, id: TypeId) -> &'t Kind<'a> {
        &self.types.get(id).kind
    }

    /// Struct, union or enum written directly (not through a typedef): printed by name, or
    /// expanded when anonymous.
    fn is_aggregate(&self, id: TypeId) -> bool {
        matches!(
            self.kind(id),
            Kind::Struct(_) | Kind::Union(_) | Kind::Enum { .. } | Kind::Fwd { .. }
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn structure(
        &mut self,
        out: &mut Vec<u8>,
        id: TypeId,
        fields: &[Field],
        inner: &Inner,
        conf: Conf,
        suffix: Option<&str>,
        stats: Option<&Summary>,
    ) {
        push_str(out, "struct");
        let name = self.types.get(id).name;
        if !name.is_empty() {
            out.push(b' ');
            push_str(out, name);
        }
        push_str(out, " {\n");
        let ind = conf.indent + 1;
        let mut cc = conf;
        cc.indent = ind;
        let mut newline = false;
        if inner.leading_bit_hole > 0 {
            newline = true;
            out.push(b'\n');
            hole_comment(out, ind, inner.leading_bit_hole, "bit");
            out.push(b'\n');
        }
        if inner.leading_hole > 0 {
            if !newline {
                newline = true;
                out.push(b'\n');
            }
            hole_comment(out, ind, inner.leading_hole, "byte");
            out.push(b'\n');
        }
        let mut last: Option<&Field> = None;
        let mut last_size = 0u64;
        for (k, f) in fields.iter().enumerate() {
            if let Some(l) = last.filter(|_| last_size != 0) {
                if l.bit_hole_after > 0 && f.is_bitfield() {
                    // pahole writes the unnamed bitfield the compiler must have seen.
                    let mut bits = l.bit_hole_after;
                    if l.offset != f.offset {
                        out.push(b'\n');
                        tabs(out, ind);
                        push_str(out, "/* Force alignment to the next boundary: */\n");
                        bits = 0;
                    }
                    tabs(out, ind);
                    self.type_print(out, f.ty, Some(""), cc, None);
                    out.push(b':');
                    num(out, bits, 0);
                    push_str(out, ";\n");
                }
                let combined = if f.offset < l.offset
                    || (f.offset == l.offset && !l.is_bitfield() && f.is_bitfield())
                {
                    Some("previous")
                } else if f.offset > l.offset && f.offset - l.offset < last_size {
                    Some("next")
                } else {
                    None
                };
                if let Some(which) = combined {
                    if !newline {
                        newline = true;
                        out.push(b'\n');
                    }
                    tabs(out, ind);
                    push_str(out, "/* Bitfield combined with ");
                    push_str(out, which);
                    push_str(out, " fields */\n");
                }
            }
            if newline {
                out.push(b'\n');
                newline = false;
            }
            cc.last = k + 1 == fields.len();
            cc.first = last.is_none();
            tabs(out, ind);
            if conf.indent == 0 {
                self.guard.refill();
            }
            self.member_line(out, f, false, cc);
            if let Some(note) = self.notes.and_then(|n| n(f)) {
                push_str(out, " <- ");
                push_str(out, &note);
            }
            if f.type_padding > 0 {
                if !newline {
                    newline = true;
                    out.push(b'\n');
                }
                out.push(b'\n');
                tabs(out, ind);
                push_str(out, "/* XXX last struct has ");
                num(out, f.type_padding, 0);
                push_str(out, " byte");
                push_str(out, plural(f.type_padding));
                push_str(out, " of padding */");
            }
            if f.bit_hole_after > 0 {
                if !newline {
                    newline = true;
                    out.push(b'\n');
                }
                out.push(b'\n');
                hole_comment(out, ind, f.bit_hole_after, "bit");
            }
            if f.hole_after > 0 {
                if !newline {
                    newline = true;
                    out.push(b'\n');
                }
                out.push(b'\n');
                hole_comment(out, ind, f.hole_after, "byte");
            }
            out.push(b'\n');
            match last {
                Some(l) if last_size != 0 && l.offset == f.offset => {
                    if !l.is_bitfield() && f.is_bitfield() {
                        last_size = f.size;
                    }
                }
                _ => last_size = f.size,
            }
            last = Some(f);
        }
        if let Some(s) = stats {
            self.stats(
                out,
                ind,
                conf.base,
                self.types.size_of(id),
                fields.len(),
                s,
                inner,
            );
        }
        tabs(out, conf.indent);
        out.push(b'}');
        if inner.packed {
            push_str(out, " __attribute__((__packed__))");
        }
        if let Some(sfx) = suffix {
            out.push(b' ');
            push_str(out, sfx);
        }
        if let (Some(a), false) = (inner.forced_align, inner.packed) {
            push_str(out, " __attribute__((__aligned__(");
            num(out, a, 0);
            push_str(out, ")))");
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn stats(
        &self,
        out: &mut Vec<u8>,
        ind: usize,
        base: u64,
        size: u64,
        members: usize,
        s: &Summary,
        inner: &Inner,
    ) {
        let line = |out: &mut Vec<u8>, text: &str| {
            tabs(out, ind);
            push_str(out, text);
            out.push(b'\n');
        };
        out.push(b'\n');
        line(
            out,
            &format!(
                "/* size: {size}, cachelines: {}, members: {members} */",
                s.cachelines
            ),
        );
        let any_holes = s.sum_holes > 0 || s.sum_bit_holes > 0;
        if any_holes && s.sum_members > 0 {
            let mut t = format!("/* sum members: {}", s.sum_members);
            if s.sum_holes > 0 {
                t.push_str(&format!(", holes: {}, sum holes: {}", s.holes, s.sum_holes));
            }
            t.push_str(" */");
            line(out, &t);
        }
        if any_holes && s.sum_bitfield_bits > 0 {
            let mut t = format!("/* sum bitfield members: {} bits", s.sum_bitfield_bits);
            if s.sum_bit_holes > 0 {
                t.push_str(&format!(
                    ", bit holes: {}, sum bit holes: {} bits",
                    s.bit_holes, s.sum_bit_holes
                ));
            } else {
                t.push_str(&format!(" ({} bytes)", s.sum_bitfield_bits / 8));
            }
            t.push_str(" */");
            line(out, &t);
        }
        if s.padding > 0 {
            line(out, &format!("/* padding: {} */", s.padding));
        }
        if s.paddings > 0 {
            line(
                out,
                &format!(
                    "/* paddings: {}, sum paddings: {} */",
                    s.paddings, s.sum_paddings
                ),
            );
        }
        if s.bit_padding > 0 {
            line(out, &format!("/* bit_padding: {} bits */", s.bit_padding));
        }
        if s.forced_alignments > 0 {
            let mut t = format!("/* forced alignments: {}", s.forced_alignments);
            if s.forced_holes > 0 {
                t.push_str(&format!(
                    ", forced holes: {}, sum forced holes: {}",
                    s.forced_holes, s.sum_forced_holes
                ));
            }
            t.push_str(" */");
            line(out, &t);
        }
        let last = (base + size) % self.cls;
        if last > 0 {
            line(out, &format!("/* last cacheline: {last} bytes */"));
        }
        let accounted = s.sum_members * 8
            + s.sum_bitfield_bits
            + s.sum_holes * 8
            + s.sum_bit_holes
            + inner.padding * 8
            + inner.bit_padding;
        if members > 0 && size * 8 != accounted {
            out.push(b'\n');
            line(
                out,
                &format!(
                    "/* BRAIN FART ALERT! {} bytes != {} (member bytes) + {} (member bits) + {} (byte holes) + {} (bit holes), diff = {} bits */",
                    size,
                    s.sum_members,
                    s.sum_bitfield_bits,
                    s.sum_holes,
                    s.sum_bit_holes,
                    size as i64 * 8 - accounted as i64
                ),
            );
        }
    }

    /// One member: boundary comment, declaration, gap, `/* offset size */`. The caller has
    /// written the indentation.
    fn member_line(&mut self, out: &mut Vec<u8>, f: &Field, in_union: bool, conf: Conf) {
        let off = f.offset;
        let mut sc = conf;
        if !conf.rel && !in_union {
            sc.base = off;
        }
        self.boundary(out, off, conf.indent);
        let mut body = Vec::with_capacity(64);
        let body_of = f.inline.map(|_| (f.members.as_slice(), &f.inner));
        let direct = self.is_aggregate(f.ty);
        let anonymous = direct && self.types.get(f.ty).name.is_empty();
        if direct {
            self.type_print(&mut body, f.ty, None, sc, body_of);
            if !f.name.is_empty() {
                if anonymous {
                    body.push(b' ');
                }
                push_str(&mut body, &f.name);
            }
        } else {
            self.type_print(&mut body, f.ty, Some(&f.name), sc, body_of);
        }
        if let Some(bits) = f.bit_size {
            body.push(b':');
            num(&mut body, bits as u64, 0);
        }
        let mut attr_len = 0;
        if let Some(a) = f.forced_align {
            let before = body.len();
            push_str(&mut body, " __attribute__((__aligned__(");
            num(&mut body, a, 0);
            push_str(&mut body, ")))");
            attr_len = (body.len() - before) as i64;
        }
        body.push(b';');
        out.extend_from_slice(&body);
        let gap = if anonymous {
            let name_len = if f.name.is_empty() {
                -1
            } else {
                f.name.len() as i64
            };
            let packed = matches!(self.kind(f.ty), Kind::Struct(_)) && f.inner.packed;
            let w = sc.t + sc.n - (attr_len + name_len + if packed { 28 } else { 0 }) - 3;
            // printf("%*s", w, " "): at least one column, a negative width left-justifies.
            if w > 1 {
                w
            } else if w >= -1 {
                1
            } else {
                -w
            }
        } else {
            (sc.t + sc.n - body.len() as i64).max(1)
        };
        spaces(out, gap);
        push_str(out, "/* ");
        num(out, off, 5);
        match (f.bit_offset, f.bit_size) {
            (Some(bit), Some(_)) => {
                out.push(b':');
                num(out, bit, 2);
                out.push(b' ');
                num(out, f.size, 2);
            }
            _ => {
                out.push(b' ');
                num(out, f.size, 5);
            }
        }
        push_str(out, " */");
    }

    fn boundary(&mut self, out: &mut Vec<u8>, off: u64, indent: usize) {
        let line = off / self.cls;
        if line <= self.cell {
            return;
        }
        self.cell = line;
        let pos = off % self.cls;
        push_str(out, "/* --- cacheline ");
        num(out, line, 0);
        push_str(out, " boundary (");
        num(out, line * self.cls, 0);
        push_str(out, " bytes)");
        if pos > 0 {
            push_str(out, " was ");
            num(out, pos, 0);
            push_str(out, " byte");
            if pos > 1 {
                out.push(b's');
            }
            push_str(out, " ago");
        }
        push_str(out, " --- */\n");
        tabs(out, indent);
    }

    /// A type in a member declaration, with the member's name where C puts it.
    fn type_print(
        &mut self,
        out: &mut Vec<u8>,
        id: TypeId,
        name: Option<&str>,
        conf: Conf,
        body: Body<'_>,
    ) {
        // Arrays of arrays and prototypes taking pointers to themselves recurse; corrupted
        // input can make that a cycle.
        if !self.guard.enter() {
            push_str(out, "<type loop>");
            return;
        }
        self.type_print_inner(out, id, name, conf, body);
        self.guard.leave();
    }

    fn type_print_inner(
        &mut self,
        out: &mut Vec<u8>,
        id: TypeId,
        name: Option<&str>,
        conf: Conf,
        body: Body<'_>,
    ) {
        let mut tc = conf;
        let mut suffix: Option<String> = if self.is_aggregate(id) {
            tc.emit_stats = false;
            name.map(str::to_string)
        } else {
            None
        };
        let mut name = name.map(str::to_string);
        let mut t = id;
        let mut body = body;
        let mut pointee_layout = None;
        for _ in 0..64 {
            let ty = self.types.get(t);
            match &ty.kind {
                Kind::Pointer { target } if *target != 0 => {
                    let pt = self.types.get(*target);
                    match &pt.kind {
                        Kind::FuncProto { .. } => {
                            return self.ftype(
                                out,
                                *target,
                                name.as_deref().unwrap_or(""),
                                true,
                                tc.t,
                            );
                        }
                        // Expansion stops at a depth real code never reaches: a corrupted or
                        // self-referencing anonymous type must not recurse without end.
                        Kind::Struct(_) | Kind::Union(_) | Kind::Enum { .. }
                            if pt.name.is_empty() && tc.indent < MAX_NESTING =>
                        {
                            // pahole shows the pointed-to anonymous type, offsets relative.
                            let n = format!("* {}", name.as_deref().unwrap_or(""));
                            name = Some(n.clone());
                            suffix = Some(n);
                            tc.rel = true;
                            tc.emit_stats = false;
                            tc.t -= 8;
                            t = *target;
                            pointee_layout = crate::layout::layout(self.types, t, self.cls);
                            body = None;
                            continue;
                        }
                        _ => break,
                    }
                }
                Kind::FuncProto { .. } => {
                    return self.ftype(out, t, name.as_deref().unwrap_or(""), false, tc.t);
                }
                Kind::Qualified {
                    qualifier: Qualifier::Const,
                    target,
                } => {
                    push_str(out, "const ");
                    tc.t -= 6;
                    t = *target;
                }
                Kind::TypeTag { target, .. } => t = *target,
                Kind::Array { .. } if self.types.source == SourceFormat::Dwarf => {
                    // DWARF: dimensions in declaration order, outermost first.
                    let mut dims = Vec::new();
                    let mut elem = t;
                    // An array of itself (corrupt input) must not loop for ever.
                    for _ in walk::chain() {
                        let Kind::Array { elem: e, count } = self.kind(elem) else {
                            break;
                        };
                        dims.push(*count);
                        elem = *e;
                    }
                    self.type_print(out, elem, name.as_deref(), tc, body);
                    let flexible = dims.len() == 1 && dims[0] == 0 && tc.flexible_array_slot();
                    for (i, count) in dims.iter().enumerate() {
                        if i == 0 && flexible {
                            push_str(out, "[]");
                        } else {
                            out.push(b'[');
                            num(out, *count, 0);
                            out.push(b']');
                        }
                    }
                    return;
                }
                Kind::Array { elem, count } => {
                    // BTF: pahole prints nested arrays innermost dimension first.
                    let mut elem = *elem;
                    if *count == 0
                        && let Kind::Qualified {
                            qualifier: Qualifier::Const,
                            target,
                        } = self.kind(elem)
                    {
                        elem = *target;
                    }
                    self.type_print(out, elem, name.as_deref(), tc, body);
                    let flexible = *count == 0 && tc.flexible_array_slot();
                    if flexible {
                        push_str(out, "[]");
                    } else {
                        out.push(b'[');
                        num(out, *count, 0);
                        out.push(b']');
                    }
                    return;
                }
                Kind::Struct(_) | Kind::Union(_) | Kind::Enum { .. } | Kind::Fwd { .. }
                    if !ty.name.is_empty() =>
                {
                    let (kw, w) = match &ty.kind {
                        Kind::Struct(_) | Kind::Fwd { is_union: false } => ("struct ", 7),
                        Kind::Union(_) | Kind::Fwd { is_union: true } => ("union ", 6),
                        _ => ("enum ", 5),
                    };
                    push_str(out, kw);
                    pad(out, ty.name, tc.t - w);
                    out.push(b' ');
                    push_str(out, name.as_deref().unwrap_or(""));
                    return;
                }
                Kind::Struct(_) | Kind::Union(_) => {
                    tc.t -= 8;
                    let is_union = matches!(ty.kind, Kind::Union(_));
                    let owned;
                    let (fields, inner) = match (body, &pointee_layout) {
                        (Some(b), _) => b,
                        (None, Some(l)) => {
                            owned = l.inner();
                            (l.members.as_slice(), &owned)
                        }
                        (None, None) => (&[][..], &Inner::default()),
                    };
                    if is_union {
                        self.union(out, t, fields, tc, suffix.as_deref());
                    } else {
                        let own = if tc.emit_stats {
                            crate::layout::layout(self.types, t, self.cls)
                        } else {
                            None
                        };
                        let stats = own.as_ref().map(|l| &l.summary);
                        self.structure(out, t, fields, inner, tc, suffix.as_deref(), stats);
                    }
                    return;
                }
                Kind::Enum { .. } => {
                    self.enumeration(out, t, tc, suffix.as_deref());
                    return;
                }
                _ => break,
            }
        }
        let mut type_name = String::with_capacity(32);
        self.name_into(&mut type_name, t);
        pad(out, &type_name, tc.t);
        out.push(b' ');
        push_str(out, name.as_deref().unwrap_or("(null)"));
    }

    fn union(
        &mut self,
        out: &mut Vec<u8>,
        id: TypeId,
        fields: &[Field],
        conf: Conf,
        suffix: Option<&str>,
    ) {
        push_str(out, "union");
        let name = self.types.get(id).name;
        if !name.is_empty() {
            out.push(b' ');
            push_str(out, name);
        }
        push_str(out, " {\n");
        let mut uc = conf;
        uc.indent += 1;
        uc.union_member = true;
        // Each alternative reports its own cache-line boundaries.
        let saved = self.cell;
        for f in fields {
            tabs(out, uc.indent);
            if conf.indent == 0 {
                self.guard.refill();
            }
            self.member_line(out, f, true, uc);
            out.push(b'\n');
            self.cell = saved;
        }
        tabs(out, conf.indent);
        out.push(b'}');
        if let Some(sfx) = suffix {
            out.push(b' ');
            push_str(out, sfx);
        }
    }

    fn enumeration(&mut self, out: &mut Vec<u8>, id: TypeId, conf: Conf, suffix: Option<&str>) {
        let Kind::Enum { size, values, .. } = self.kind(id) else {
            return;
        };
        push_str(out, "enum");
        if !values.is_empty() {
            push_str(out, " {\n");
            let width = values.iter().map(|v| v.name.len()).max().unwrap_or(0) as i64;
            for v in values {
                tabs(out, conf.indent + 1);
                pad(out, v.name, width);
                push_str(out, " = ");
                // pahole 1.24 prints values unsigned, 32 bits wide for 4-byte enums.
                let value = if *size <= 4 {
                    v.value & 0xffff_ffff
                } else {
                    v.value
                };
                num(out, value, 0);
                push_str(out, ",\n");
            }
            tabs(out, conf.indent);
            out.push(b'}');
            if *size != 4 {
                push_str(out, " __attribute__((__packed__))");
            }
        }
        if let Some(sfx) = suffix {
            out.push(b' ');
            push_str(out, sfx);
        }
    }

    /// `ret (*name)(params)` for function pointers, `ret (name)(params)` for prototypes.
    fn ftype(&mut self, out: &mut Vec<u8>, proto: TypeId, name: &str, pointer: bool, width: i64) {
        if !self.guard.enter() {
            push_str(out, "<type loop>");
            return;
        }
        self.ftype_inner(out, proto, name, pointer, width);
        self.guard.leave();
    }

    fn ftype_inner(
        &mut self,
        out: &mut Vec<u8>,
        proto: TypeId,
        name: &str,
        pointer: bool,
        width: i64,
    ) {
        let Kind::FuncProto {
            ret,
            params,
            variadic,
        } = self.kind(proto)
        else {
            return;
        };
        let mut ret_name = String::with_capacity(32);
        self.name_into(&mut ret_name, *ret);
        pad(out, &ret_name, width);
        push_str(out, " (");
        if pointer {
            out.push(b'*');
        }
        push_str(out, name);
        out.push(b')');
        let (params, variadic) = (params.clone(), *variadic);
        self.params(out, &params, variadic);
    }

    fn params(&mut self, out: &mut Vec<u8>, params: &[TypeId], variadic: bool) {
        // A prototype taking itself as a parameter (corrupted input) is a cycle.
        if !self.guard.enter() {
            push_str(out, "(<type loop>)");
            return;
        }
        self.params_inner(out, params, variadic);
        self.guard.leave();
    }

    fn params_inner(&mut self, out: &mut Vec<u8>, params: &[TypeId], variadic: bool) {
        out.push(b'(');
        if params.is_empty() && !variadic {
            push_str(out, "void");
        }
        for (i, &p) in params.iter().enumerate() {
            if i > 0 {
                push_str(out, ", ");
            }
            if self.guard.spent() {
                // The rest of a prototype that points back at itself: one marker.
                push_str(out, "<type loop>");
                break;
            }
            match self.kind(p) {
                Kind::Pointer { target }
                    if matches!(self.kind(*target), Kind::FuncProto { .. }) =>
                {
                    let target = *target;
                    self.ftype(out, target, "", true, 0);
                }
                Kind::FuncProto {
                    ret,
                    params,
                    variadic,
                } => {
                    let (ret, params, variadic) = (*ret, params.clone(), *variadic);
                    push_str(out, "inline ");
                    let mut s = String::new();
                    self.name_into(&mut s, ret);
                    push_str(out, &s);
                    out.push(b' ');
                    self.params(out, &params, variadic);
                }
                _ => {
                    let mut s = String::new();
                    self.name_into(&mut s, p);
                    push_str(out, &s);
                }
            }
        }
        if variadic {
            if !params.is_empty() {
                push_str(out, ", ");
            }
            push_str(out, "...");
        }
        out.push(b')');
    }

    /// pahole's name for a type standing alone (`const char  *`, `struct list_head * *`).
    fn name_into(&mut self, s: &mut String, id: TypeId) {
        if !self.guard.enter() {
            s.push_str("<type loop>");
            return;
        }
        self.name_into_inner(s, id);
        self.guard.leave();
    }

    fn name_into_inner(&mut self, s: &mut String, id: TypeId) {
        let types = self.types;
        let t = types.get(id);
        match &t.kind {
            Kind::Void => s.push_str("void"),
            Kind::Int { .. } => s.push_str(if t.name.is_empty() {
                "nameless base type!"
            } else {
                t.name
            }),
            Kind::Float { .. } => {
                // pahole's BTF loader marks every float "single".
                if self.types.source == SourceFormat::Btf {
                    s.push_str("single ");
                }
                s.push_str(t.name);
            }
            Kind::Typedef { .. } | Kind::Other => s.push_str(t.name),
            Kind::Struct(_) | Kind::Fwd { is_union: false } => {
                s.push_str("struct ");
                s.push_str(t.name);
            }
            Kind::Union(_) | Kind::Fwd { is_union: true } => {
                s.push_str("union ");
                s.push_str(t.name);
            }
            Kind::Enum { .. } => {
                s.push_str("enum ");
                s.push_str(t.name);
            }
            Kind::Pointer { target } => {
                if *target == 0 {
                    s.push_str("void *");
                    return;
                }
                let mut nt = *target;
                let mut const_pointer = "";
                if let Kind::Qualified {
                    qualifier: Qualifier::Const,
                    target: inner,
                } = self.kind(nt)
                    && matches!(self.kind(*inner), Kind::Pointer { .. })
                {
                    const_pointer = "const ";
                    nt = *inner;
                }
                self.name_into(s, nt);
                s.push(' ');
                s.push_str(const_pointer);
                s.push('*');
            }
            Kind::Array { elem, .. } => self.name_into(s, *elem),
            Kind::Qualified { qualifier, target } => match qualifier {
                Qualifier::Restrict => {
                    self.name_into(s, *target);
                    s.push_str(" restrict ");
                }
                q => {
                    s.push_str(q.keyword());
                    s.push(' ');
                    self.name_into(s, *target);
                    s.push(' ');
                }
            },
            Kind::TypeTag { target, .. } => self.name_into(s, *target),
            Kind::FuncProto {
                ret,
                params,
                variadic,
            } => {
                self.name_into(s, *ret);
                s.push_str(" ()");
                let mut buf = Vec::new();
                self.params(&mut buf, params, *variadic);
                s.push_str(&String::from_utf8_lossy(&buf));
            }
        }
    }
}
