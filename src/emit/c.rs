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
}

fn decl(f: &Field, indent: usize, out: &mut String) {
    let tabs = "\t".repeat(indent);
    if let Some(kind) = f.inline {
        let _ = writeln!(out, "{tabs}{kind} {{");
        for m in &f.members {
            decl(m, indent + 1, out);
        }
        let _ = writeln!(
            out,
            "{tabs}}}{};",
            if f.name.is_empty() {
                String::new()
            } else {
                format!(" {}", f.name)
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
    let _ = writeln!(out, "{tabs}{ty}{sep}{}{bits};", f.declarator);
}

fn group_name(type_name: &str, i: usize) -> String {
    format!("{type_name}_hot{i}")
}

/// The declaration of `layout` (a rearranged struct) with `marks`.
pub fn declaration(layout: &Layout, marks: &Marks, flavour: Flavour) -> String {
    let cls = layout.cacheline_size;
    let mut out = String::new();
    let _ = writeln!(out, "{} {} {{", layout.kind, layout.name);
    // (group index, group name, end of the group's last line)
    let mut open_group: Option<(usize, String, u64)> = None;
    for f in &layout.members {
        let starts_group = marks
            .groups
            .iter()
            .position(|g| g.first() == Some(&f.name) && !f.name.is_empty());
        // Close a group where its lines end.
        if let Some((_, name, end)) = &open_group
            && (starts_group.is_some() || f.offset >= *end || f.end() > *end)
        {
            if flavour == Flavour::Kernel {
                let _ = writeln!(out, "\t__cacheline_group_end({name});");
            }
            open_group = None;
        }
        if let Some(i) = starts_group {
            let name = group_name(&layout.name, i);
            let _ = writeln!(
                out,
                "\n\t/* lineup: written from many CPUs; kept off the other hot fields' lines */"
            );
            if flavour == Flavour::Kernel {
                let _ = writeln!(
                    out,
                    "\t__cacheline_group_begin({name}) ____cacheline_aligned;"
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
        let aligned = marks.line_aligned.contains(&f.name) && !f.name.is_empty();
        let mut d = String::new();
        decl(f, 1, &mut d);
        if aligned && !(flavour == Flavour::Kernel && starts_group.is_some()) {
            // Attach the alignment to the declaration.
            let attr = match flavour {
                Flavour::Kernel => " ____cacheline_aligned",
                Flavour::Userspace => "",
            };
            if flavour == Flavour::Userspace {
                d = format!("\talignas({cls}) {}", d.trim_start_matches('\t'));
            } else if let Some(pos) = d.rfind(';') {
                d.insert_str(pos, attr);
            }
        }
        out.push_str(&d);
    }
    if let Some((_, name, _)) = &open_group
        && flavour == Flavour::Kernel
    {
        let _ = writeln!(out, "\t__cacheline_group_end({name});");
    }
    out.push_str("};\n");

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
                        "\tCACHELINE_ASSERT_GROUP_MEMBER({} {}, {name}, {m});",
                        layout.kind, layout.name
                    );
                }
                let _ = writeln!(
                    out,
                    "\tCACHELINE_ASSERT_GROUP_SIZE({} {}, {name}, SMP_CACHE_BYTES);",
                    layout.kind, layout.name
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
                        "static_assert(offsetof({k} {n}, {m}) / {cls} == offsetof({k} {n}, {first}) / {cls}, \"{m} left {first}'s cache line\");",
                        k = layout.kind,
                        n = layout.name
                    );
                }
                let _ = writeln!(
                    out,
                    "static_assert(offsetof({k} {n}, {first}) % {cls} == 0, \"{first} must start a cache line\");",
                    k = layout.kind,
                    n = layout.name
                );
            }
        }
    }
    out
}
