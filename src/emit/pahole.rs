//! Layouts as pahole prints them: the text kernel engineers read in mail and commit logs.

use std::io::{self, Write};

use crate::layout::{Field, Layout};

/// Width pahole pads a member's type to, and its name to, before the offset comment.
const TYPE_WIDTH: usize = 26;
const NAME_WIDTH: usize = 21;

/// Writes one layout in pahole's format.
pub fn write_layout(out: &mut dyn Write, layout: &Layout) -> io::Result<()> {
    let mut w = Writer {
        out,
        cls: layout.cacheline_size,
        last_cacheline: 0,
    };
    w.layout(layout)
}

struct Writer<'o> {
    out: &'o mut dyn Write,
    cls: u64,
    /// The cache line of the last boundary comment printed, shared across nesting levels.
    last_cacheline: u64,
}

fn tabs(n: usize) -> &'static str {
    const T: &str = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    &T[..n.min(T.len())]
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Writer<'_> {
    fn layout(&mut self, l: &Layout) -> io::Result<()> {
        if l.name.is_empty() {
            writeln!(self.out, "{} {{", l.kind)?;
        } else {
            writeln!(self.out, "{} {} {{", l.kind, l.name)?;
        }
        let is_struct = l.kind == "struct";
        self.members(&l.members, 1, is_struct, 0)?;
        let s = &l.summary;
        if is_struct && s.padding > 0 {
            // pahole closes with the padding note only in the summary; nothing inline.
        }
        writeln!(self.out)?;
        writeln!(
            self.out,
            "\t/* size: {}, cachelines: {}, members: {} */",
            l.size, s.cachelines, s.members
        )?;
        if s.holes > 0 {
            writeln!(
                self.out,
                "\t/* sum members: {}, holes: {}, sum holes: {} */",
                s.sum_members, s.holes, s.sum_holes
            )?;
        }
        if s.bit_holes > 0 {
            writeln!(
                self.out,
                "\t/* sum bitfield members: {} bits, bit holes: {}, sum bit holes: {} bits */",
                0, s.bit_holes, s.sum_bit_holes
            )?;
        }
        if s.padding > 0 {
            writeln!(self.out, "\t/* padding: {} */", s.padding)?;
        }
        if s.paddings > 0 {
            writeln!(
                self.out,
                "\t/* paddings: {}, sum paddings: {} */",
                s.paddings, s.sum_paddings
            )?;
        }
        if s.bit_padding > 0 {
            writeln!(self.out, "\t/* bit_padding: {} bits */", s.bit_padding)?;
        }
        if s.forced_alignments > 0 {
            if s.forced_holes > 0 {
                writeln!(
                    self.out,
                    "\t/* forced alignments: {}, forced holes: {}, sum forced holes: {} */",
                    s.forced_alignments, s.forced_holes, s.sum_forced_holes
                )?;
            } else {
                writeln!(self.out, "\t/* forced alignments: {} */", s.forced_alignments)?;
            }
        }
        if s.last_cacheline > 0 {
            writeln!(self.out, "\t/* last cacheline: {} bytes */", s.last_cacheline)?;
        }
        match l.forced_align {
            Some(a) => writeln!(self.out, "}} __attribute__((__aligned__({a})));"),
            None => writeln!(self.out, "}};"),
        }
    }

    fn members(
        &mut self,
        fields: &[Field],
        depth: usize,
        in_struct: bool,
        _leading_hole: u64,
    ) -> io::Result<()> {
        for f in fields {
            self.boundary(f.offset, depth)?;
            if let Some(kind) = f.inline {
                writeln!(self.out, "{}{} {{", tabs(depth), kind)?;
                self.members(&f.members, depth + 1, kind == "struct", f.leading_hole)?;
                let closing = if f.name.is_empty() {
                    "};".to_string()
                } else {
                    format!("}} {};", f.declarator)
                };
                self.comment_line(depth, &closing, "", f)?;
            } else {
                let mut decl = String::with_capacity(64);
                decl.push_str(&f.type_name);
                self.member_line(depth, &decl, f)?;
            }
            if in_struct {
                if f.type_padding > 0 {
                    writeln!(self.out)?;
                    writeln!(
                        self.out,
                        "{}/* XXX last struct has {} byte{} of padding */",
                        tabs(depth),
                        f.type_padding,
                        plural(f.type_padding)
                    )?;
                    writeln!(self.out)?;
                }
                if f.bit_hole_after > 0 || f.hole_after > 0 {
                    writeln!(self.out)?;
                    if f.bit_hole_after > 0 {
                        writeln!(
                            self.out,
                            "{}/* XXX {} bit{} hole, try to pack */",
                            tabs(depth),
                            f.bit_hole_after,
                            plural(f.bit_hole_after)
                        )?;
                    }
                    if f.hole_after > 0 {
                        writeln!(
                            self.out,
                            "{}/* XXX {} byte{} hole, try to pack */",
                            tabs(depth),
                            f.hole_after,
                            plural(f.hole_after)
                        )?;
                    }
                    writeln!(self.out)?;
                }
            }
        }
        Ok(())
    }

    fn boundary(&mut self, offset: u64, depth: usize) -> io::Result<()> {
        let line = offset / self.cls;
        if line > self.last_cacheline {
            self.last_cacheline = line;
            let boundary = line * self.cls;
            let ago = offset - boundary;
            if ago == 0 {
                writeln!(
                    self.out,
                    "{}/* --- cacheline {} boundary ({} bytes) --- */",
                    tabs(depth),
                    line,
                    boundary
                )?;
            } else {
                writeln!(
                    self.out,
                    "{}/* --- cacheline {} boundary ({} bytes) was {} bytes ago --- */",
                    tabs(depth),
                    line,
                    boundary,
                    ago
                )?;
            }
        }
        Ok(())
    }

    fn member_line(&mut self, depth: usize, type_part: &str, f: &Field) -> io::Result<()> {
        let mut name = String::with_capacity(f.declarator.len() + 40);
        name.push_str(&f.declarator);
        if let Some(bits) = f.bit_size {
            name.push(':');
            name.push_str(&bits.to_string());
        }
        if let Some(a) = f.forced_align {
            name.push_str(&format!(" __attribute__((__aligned__({a})))"));
        }
        name.push(';');
        self.comment_line(depth, type_part, &name, f)
    }

    /// `<tabs><type padded> <name padded> /* offset size */`
    fn comment_line(&mut self, depth: usize, type_part: &str, name: &str, f: &Field) -> io::Result<()> {
        let mut line = String::with_capacity(96);
        line.push_str(tabs(depth));
        if name.is_empty() {
            // Closing brace of an inline struct/union: pad as the whole declaration.
            line.push_str(type_part);
            pad_to(&mut line, depth, TYPE_WIDTH + 1 + NAME_WIDTH);
        } else {
            line.push_str(type_part);
            pad_to(&mut line, depth, TYPE_WIDTH);
            line.push(' ');
            line.push_str(name);
            pad_to(&mut line, depth, TYPE_WIDTH + 1 + NAME_WIDTH);
        }
        line.push(' ');
        match (f.bit_offset, f.bit_size) {
            (Some(bit), Some(_)) => {
                line.push_str(&format!("/* {:5}:{:2} {:2} */", f.offset, bit, f.size));
            }
            _ => line.push_str(&format!("/* {:5} {:5} */", f.offset, f.size)),
        }
        writeln!(self.out, "{line}")
    }
}

/// Pads `line` (which starts with `depth` tabs) with spaces to `width` visible columns after
/// the tabs, pahole counting each tab as 8 columns less per level.
fn pad_to(line: &mut String, depth: usize, width: usize) {
    let used = line.chars().count() - depth;
    let want = width.saturating_sub((depth - 1) * 8);
    for _ in used..want {
        line.push(' ');
    }
}
