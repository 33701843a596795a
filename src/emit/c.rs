//! A struct as a C declaration, in kernel or userspace flavour, with the alignment the
//! optimizer chose and a build-time check that each hot group stays on its own line.

use std::fmt::Write as _;

use crate::layout::{Field, Layout};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// `____cacheline_aligned`, `__cacheline_group_begin/end`, `CACHELINE_ASSERT_GROUP_*`.
    Kernel,
    /// C11 `alignas` and `static_assert` on `offsetof`.
    Userspace,
}

/// Where the optimizer wants lines to start.
#[derive(Clone, Debug, Default)]
pub struct Marks {
    /// Members that begin a hot group (a write line), with the members of the group.
    pub groups: Vec<Vec<String>>,
    /// Members that must start a cache line (group starts and the member after a group).
    pub line_aligned: Vec<String>,
    /// Their alignment: the line, or a pair of lines (128 bytes) where the L2 fetches
    /// 128-byte pairs; 0 (the default) is the line.
    pub align: u64,
    /// Why hot lines are a pair apart (the plan's `spacing_reason`); empty: the L2's pairs.
    pub reason: String,
}

fn decl(f: &Field, indent: usize, flavour: Flavour, out: &mut String) {
    let tabs = "\t".repeat(indent);
    // A member of an inline struct with an alignment of its own (the slot type lineup gives
    // per-thread array elements: `struct { alignas(64) unsigned long v; } hits[8];`).
    let (align_before, align_after) = match f.forced_align.filter(|_| indent > 1) {
        Some(a) if flavour == Flavour::Userspace => (format!("alignas({a}) "), String::new()),
        Some(a) => (String::new(), format!(" {}", kernel_line_align(a))),
        None => (String::new(), String::new()),
    };
    if let Some(kind) = f.inline {
        let _ = writeln!(out, "{tabs}{align_before}{kind} {{");
        for m in &f.members {
            decl(m, indent + 1, flavour, out);
        }
        // An array of an inline struct keeps its dimensions.
        let name = if f.declarator.is_empty() {
            &f.name
        } else {
            &f.declarator
        };
        let _ = writeln!(
            out,
            "{tabs}}}{}{align_after};",
            if name.is_empty() {
                String::new()
            } else {
                format!(" {name}")
            }
        );
        return;
    }
    // pahole spells `struct x * *`; C people write `struct x **`.
    let mut ty = f.type_name.clone();
    while ty.contains("* *") {
        ty = ty.replace("* *", "**");
    }
    let sep = if ty.ends_with('*') { "" } else { " " };
    let bits = f.bit_size.map(|b| format!(":{b}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "{tabs}{align_before}{ty}{sep}{}{bits}{align_after};",
        f.declarator
    );
}

/// A zero-size member that is one of the kernel's cache-line group markers, as the kernel
/// writes it (`__cacheline_group_begin(tcp_sock_read_tx);`).
fn kernel_marker(f: &Field) -> Option<String> {
    if f.size != 0 {
        return None;
    }
    for (prefix, mac) in [
        ("__cacheline_group_begin__", "__cacheline_group_begin"),
        ("__cacheline_group_end__", "__cacheline_group_end"),
    ] {
        if let Some(group) = f.name.strip_prefix(prefix) {
            return Some(format!("\t{mac}({group});\n"));
        }
    }
    None
}

/// The zero-size member that carries the alignment of bit-field `name`.
pub fn align_member(name: &str) -> String {
    format!("__lineup_align_{name}")
}

/// The kernel attribute that aligns a member to a `cls`-byte line. `____cacheline_aligned`
/// is `__aligned(SMP_CACHE_BYTES)`: 64 on x86-64, 128 on POWER and arm64 with 128-byte
/// lines, 256 on s390. A layout priced at another line size says so explicitly.
pub fn kernel_line_align(cls: u64) -> String {
    if cls == 64 {
        "____cacheline_aligned".to_string()
    } else {
        format!("__aligned({cls})")
    }
}

/// What else must change when instances are not `cls`-byte aligned: member alignment places
/// members within the instance, not within a line, so the allocation or the embedding must
/// align the instance (in the words of the C flavour of the fix).
pub fn instance_align_advice(flavour: Flavour, cls: u64) -> String {
    match flavour {
        Flavour::Kernel => format!(
            "member alignment places members within the instance, not within a cache line: the layout's lines hold only where instances are {cls}-byte aligned. Create the slab cache with SLAB_HWCACHE_ALIGN (kmem_cache_create), align the member that embeds the struct in its parent ({} on it), or allocate it from a cache of that alignment; kmalloc aligns only power-of-two size classes",
            kernel_line_align(cls)
        ),
        Flavour::Userspace => format!(
            "member alignment places members within the instance, not within a cache line: the layout's lines hold only where instances are {cls}-byte aligned. Allocate with aligned_alloc({cls}, size) or posix_memalign, align the member that embeds the struct in its parent (alignas({cls})), or give the struct itself alignas({cls}) (new and static instances honour it; malloc does not)"
        ),
    }
}

/// The size bound of a group's assert: `SMP_CACHE_BYTES` for the usual 64-byte line.
fn kernel_line_bytes(cls: u64) -> String {
    if cls == 64 {
        "SMP_CACHE_BYTES".to_string()
    } else {
        cls.to_string()
    }
}

fn group_name(type_name: &str, i: usize) -> String {
    format!("{type_name}_hot{i}")
}

/// The declaration of `layout` (a rearranged struct) with `marks`.
pub fn declaration(layout: &Layout, marks: &Marks, flavour: Flavour) -> String {
    let cls = layout.cacheline_size;
    let mut out = String::new();
    if flavour == Flavour::Kernel && cls != 64 {
        let _ = writeln!(
            out,
            "/* lineup: priced for {cls}-byte lines: __aligned({cls}) where the usual\n * ____cacheline_aligned would mean SMP_CACHE_BYTES, which is 64 on x86-64. */"
        );
    }
    if layout.tagless {
        let _ = writeln!(out, "typedef {} {{", layout.kind);
    } else {
        let _ = writeln!(out, "{} {} {{", layout.kind, layout.name);
    }
    // (group index, group name, end of the group's last line)
    let mut open_group: Option<(usize, String, u64)> = None;
    for (i, f) in layout.members.iter().enumerate() {
        // A trailing array the allocation extends must stay last: a group closes before it.
        let trailing = i + 1 == layout.members.len() && f.size == 0 && f.declarator.ends_with(']');
        // An anonymous struct or union is known by its first named member (as units are).
        let key = if f.name.is_empty() {
            f.members
                .iter()
                .map(|m| &m.name)
                .find(|n| !n.is_empty())
                .cloned()
                .unwrap_or_default()
        } else {
            f.name.clone()
        };
        let starts_group = marks
            .groups
            .iter()
            .position(|g| g.first() == Some(&key) && !key.is_empty());
        // Close a group where its lines end.
        if let Some((_, name, end)) = &open_group
            && (starts_group.is_some() || f.offset >= *end || f.end() > *end || trailing)
        {
            if flavour == Flavour::Kernel {
                let _ = writeln!(out, "\t__cacheline_group_end({name});");
            }
            open_group = None;
        }
        // Every alignment the layout was priced with is written out: a line start the
        // optimizer chose (a line, or a pair of lines), and alignment the member had before (a
        // read-mostly/read-write boundary, an aligned lock block): dropping one moves the
        // members after it.
        let line_align = marks.align.max(cls);
        let line = (marks.line_aligned.contains(&key) && !key.is_empty()).then_some(line_align);
        let want = line.max(f.forced_align).filter(|&a| a > 1);
        // A group's begin marker carries the line alignment in the kernel flavour (a pair's
        // where the optimizer spaced the group a pair apart).
        let marker_align = line.unwrap_or(cls);
        if let Some(i) = starts_group {
            let name = group_name(&layout.name, i);
            if line_align > cls {
                let _ = writeln!(
                    out,
                    "\n\t/* lineup: hot fields on a cache line of their own, {line_align} bytes from other hot lines ({}) */",
                    if marks.reason.is_empty() {
                        crate::analysis::optimize::PAIR_REASON
                    } else {
                        marks.reason.as_str()
                    }
                );
            } else {
                let _ = writeln!(
                    out,
                    "\n\t/* lineup: hot fields on a cache line of their own (written from many CPUs, or read together by one path) */"
                );
            }
            if flavour == Flavour::Kernel {
                let _ = writeln!(
                    out,
                    "\t__cacheline_group_begin({name}) {};",
                    kernel_line_align(marker_align)
                );
            }
            // The group covers the lines of its hot members.
            let last_end = marks.groups[i]
                .iter()
                .filter_map(|m| layout.members.iter().find(|x| &x.name == m))
                .map(|x| x.end())
                .max()
                .unwrap_or(f.end());
            open_group = Some((i, name, last_end.max(f.offset + 1).div_ceil(cls) * cls));
        }
        let mut d = String::new();
        match kernel_marker(f) {
            Some(m) if flavour == Flavour::Kernel => d = m,
            _ => decl(f, 1, flavour, &mut d),
        }
        // A group's begin marker carries the line alignment in the kernel flavour.
        let covered = flavour == Flavour::Kernel && starts_group.is_some();
        if let Some(a) = want.filter(|&a| !(covered && a <= marker_align)) {
            if f.is_bitfield() {
                // C allows no alignment on a bit-field: a zero-size member before it carries it.
                let attr = match flavour {
                    Flavour::Userspace => format!("alignas({a}) unsigned char"),
                    Flavour::Kernel => "unsigned char".to_string(),
                };
                let after = match flavour {
                    Flavour::Userspace => String::new(),
                    Flavour::Kernel => format!(" {}", kernel_line_align(a)),
                };
                d = format!("\t{attr} {}[0]{after};\n{d}", align_member(&f.name));
            } else if flavour == Flavour::Userspace {
                d = format!("\talignas({a}) {}", d.trim_start_matches('\t'));
            } else if let Some(pos) = d.rfind(';') {
                d.insert_str(pos, &format!(" {}", kernel_line_align(a)));
            }
        }
        out.push_str(&d);
    }
    if let Some((_, name, _)) = &open_group
        && flavour == Flavour::Kernel
    {
        let _ = writeln!(out, "\t__cacheline_group_end({name});");
    }
    // Alignment of the whole type beyond its members' (an instance-alignment the struct
    // already had): it rounds the size up and moves the struct within its parents.
    let whole = match layout.forced_align.filter(|&a| a > 1) {
        Some(a) if flavour == Flavour::Kernel => format!(" {}", kernel_line_align(a)),
        Some(a) => format!(" __attribute__((aligned({a})))"),
        None => String::new(),
    };
    if layout.tagless {
        let _ = writeln!(out, "}}{whole} {};", layout.name);
    } else {
        let _ = writeln!(out, "}}{whole};");
    }

    // Build-time checks.
    let hot: Vec<(usize, &Vec<String>)> = marks
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .collect();
    if hot.is_empty() {
        return out;
    }
    // offsetof and sizeof take no bit-field: a bit-field is checked by the zero-size member
    // that aligns it, or not at all.
    let find = |n: &String| {
        layout
            .members
            .iter()
            .flat_map(|f| std::iter::once(f).chain(f.members.iter()))
            .find(|f| &f.name == n)
    };
    let checkable = |n: &String| find(n).is_none_or(|f| !f.is_bitfield());
    let hot: Vec<(usize, Vec<String>)> = hot
        .into_iter()
        .map(|(i, g)| {
            let v: Vec<String> = g
                .iter()
                .enumerate()
                .filter_map(|(k, n)| {
                    if checkable(n) {
                        Some(n.clone())
                    } else if k == 0 && flavour == Flavour::Userspace {
                        Some(align_member(n))
                    } else {
                        None
                    }
                })
                .collect();
            (i, v)
        })
        .filter(|(_, g)| !g.is_empty())
        .collect();
    match flavour {
        Flavour::Kernel => {
            let _ = writeln!(
                out,
                "\n/* Put in a function of the .c file that uses the struct: fails the build if a\n * hot group outgrows its cache line or loses a member. */\nstatic void __maybe_unused {}_layout_check(void)\n{{",
                layout.name
            );
            for (i, g) in &hot {
                let name = group_name(&layout.name, *i);
                for m in g.iter() {
                    let _ = writeln!(
                        out,
                        "\tCACHELINE_ASSERT_GROUP_MEMBER({}, {name}, {m});",
                        layout.c_name()
                    );
                }
                let _ = writeln!(
                    out,
                    "\tCACHELINE_ASSERT_GROUP_SIZE({}, {name}, {});",
                    layout.c_name(),
                    kernel_line_bytes(cls)
                );
            }
            out.push_str("}\n");
        }
        Flavour::Userspace => {
            out.push('\n');
            for (_, g) in &hot {
                let first = &g[0];
                for m in g.iter().skip(1) {
                    let _ = writeln!(
                        out,
                        "static_assert(offsetof({t}, {m}) / {cls} == offsetof({t}, {first}) / {cls}, \"{m} left {first}'s cache line\");",
                        t = layout.c_name()
                    );
                }
                let _ = writeln!(
                    out,
                    "static_assert(offsetof({t}, {first}) % {cls} == 0, \"{first} must start a cache line\");",
                    t = layout.c_name()
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Composite, Kind, Member, Type, Types};

    /// `struct q { long lock; long data; }` laid out for `cls`-byte lines, `data` on a line
    /// of its own.
    fn two_longs(cls: u64) -> Layout {
        spaced(cls, cls)
    }

    /// `struct q { long lock; long data; }` laid out for `cls`-byte lines, `data` aligned to
    /// and at `apart` bytes.
    fn spaced(cls: u64, apart: u64) -> Layout {
        let mut t = Types::new(8);
        let long = t.push(Type {
            name: "long",
            kind: Kind::Int {
                size: 8,
                signed: true,
                is_char: false,
                is_bool: false,
            },
        });
        let member = |name: &'static str, bit_offset: u64, align: Option<u32>| Member {
            name,
            ty: long,
            bit_offset,
            bitfield_size: 0,
            declared_align: align,
        };
        let q = t.push(Type {
            name: "q",
            kind: Kind::Struct(Composite {
                size: 2 * apart,
                members: vec![
                    member("lock", 0, None),
                    member("data", apart * 8, Some(apart as u32)),
                ],
                declared_align: None,
                is_declaration: false,
                origin: None,
            }),
        });
        crate::layout::layout(&t, q, cls).unwrap()
    }

    #[test]
    fn a_128_byte_layout_emits_a_128_byte_alignment() {
        let marks = Marks {
            groups: vec![vec!["data".to_string()]],
            line_aligned: vec!["data".to_string()],
            align: 0,
            reason: String::new(),
        };
        let d = declaration(&two_longs(128), &marks, Flavour::Kernel);
        assert!(
            d.contains("__cacheline_group_begin(q_hot0) __aligned(128);"),
            "{d}"
        );
        assert!(!d.contains("____cacheline_aligned;"), "{d}");
        assert!(
            d.contains("CACHELINE_ASSERT_GROUP_SIZE(struct q, q_hot0, 128);"),
            "{d}"
        );
        assert!(d.contains("64 on x86-64"), "{d}");
        // At 64 bytes the kernel's own macro is the right one.
        let d = declaration(&two_longs(64), &marks, Flavour::Kernel);
        assert!(
            d.contains("__cacheline_group_begin(q_hot0) ____cacheline_aligned;"),
            "{d}"
        );
        assert!(d.contains("SMP_CACHE_BYTES"), "{d}");
        // Userspace: alignas with the priced size.
        let marks = Marks {
            groups: vec![],
            line_aligned: vec!["data".to_string()],
            align: 0,
            reason: String::new(),
        };
        let d = declaration(&two_longs(128), &marks, Flavour::Userspace);
        assert!(d.contains("alignas(128) long data;"), "{d}");
    }

    #[test]
    fn hot_lines_a_pair_apart_are_aligned_to_the_pair() {
        // 64-byte lines, `data` 128 bytes from `lock`: the plan spaced its hot lines a pair
        // apart (the L2 fetches 128-byte pairs). The alignment written is the pair's, on the
        // group's begin marker in the kernel flavour, and the comment says why.
        let marks = Marks {
            groups: vec![vec!["data".to_string()]],
            line_aligned: vec!["data".to_string()],
            align: 128,
            reason: String::new(),
        };
        let layout = spaced(64, 128);
        let d = declaration(&layout, &marks, Flavour::Kernel);
        assert!(
            d.contains("__cacheline_group_begin(q_hot0) __aligned(128);"),
            "{d}"
        );
        assert!(d.contains("long data;"), "{d}");
        assert!(d.contains("128-byte pairs of lines"), "{d}");
        // The group still holds one 64-byte line.
        assert!(
            d.contains("CACHELINE_ASSERT_GROUP_SIZE(struct q, q_hot0, SMP_CACHE_BYTES);"),
            "{d}"
        );
        let d = declaration(&layout, &marks, Flavour::Userspace);
        assert!(d.contains("alignas(128) long data;"), "{d}");
        // A one-line plan on the same lines says nothing of pairs.
        let marks = Marks { align: 64, ..marks };
        let d = declaration(&two_longs(64), &marks, Flavour::Kernel);
        assert!(
            d.contains("__cacheline_group_begin(q_hot0) ____cacheline_aligned;"),
            "{d}"
        );
        assert!(!d.contains("pairs"), "{d}");
    }
}
