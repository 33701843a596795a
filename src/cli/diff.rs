//! `lineup diff`: one struct in two layouts, member by member and line by line.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use lineup::analysis::contract::Placed;
use lineup::analysis::layout_diff::{self, LayoutDiff, Side};
use lineup::emit;
use lineup::layout::{self, Layout};
use lineup::readers::{self, Format, InputFile, c_struct, pahole_text};
use lineup::types::Types;

#[derive(clap::Args)]
#[command(
    about = "Compare two layouts of one struct: what moved, what changed cache line, holes gained and lost",
    long_about = "Compare two layouts of one struct, member by member and line by line, like \
                  pahole's codiff but about cache lines. OLD and NEW are each a BTF file (raw, or \
                  an ELF with .BTF), an ELF with DWARF, pahole text (`pahole -C T`, `lineup \
                  layout T`), or a C header that declares the struct (a proposal: its members \
                  take their sizes from the other side's build, in the header's order and \
                  alignments).",
    after_help = "Examples:\n  lineup diff --type task_group data/vmlinux-6.18.44.btf /sys/kernel/btf/vmlinux\n  \
                  lineup diff --type stats ./prog.old ./prog.new --all-members\n  \
                  lineup diff --type task_group /sys/kernel/btf/vmlinux examples/seeds/000/seed_fix.h --json\n\n\
                  Exit status, as diff(1) and codiff: 0 when the layouts are the same, 1 when they \
                  differ, 2 on trouble (a file that cannot be read, a type that is not there)."
)]
pub struct Args {
    /// The struct or union to compare (pahole's -C)
    #[arg(long = "type", short = 'C', value_name = "TYPE")]
    type_name: String,
    /// The old layout's file
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// The new layout's file
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// Cache line size in bytes
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(8..=4096))]
    cacheline_size: u64,
    /// List unchanged members too
    #[arg(long)]
    all_members: bool,
    /// Print JSON (schema key `schema`; the fields of LayoutDiff, docs/check.md)
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Document<'a> {
    schema: u32,
    old: String,
    new: String,
    #[serde(flatten)]
    diff: &'a LayoutDiff,
}

/// What kind of file one side is.
enum Input {
    Build(InputFile, Format),
    Pahole(String),
    Header(String),
}

fn open(path: &Path, type_name: &str) -> Result<Input> {
    let file = InputFile::open(path)?;
    let bytes = file.bytes();
    if bytes.starts_with(&[0x9f, 0xeb]) || bytes.starts_with(&[0xeb, 0x9f]) {
        return Ok(Input::Build(file, Format::Btf));
    }
    if bytes.starts_with(b"\x7fELF") {
        use object::{Object, ObjectSection};
        let obj = object::File::parse(bytes)
            .map_err(|e| anyhow!("{}: not a valid ELF file: {e}", path.display()))?;
        let has = |n: &str| obj.section_by_name(n).is_some_and(|s| s.size() > 0);
        let format = if has(".debug_info") {
            Format::Dwarf
        } else if has(".BTF") {
            Format::Btf
        } else {
            bail!("{}: ELF file with neither DWARF nor BTF", path.display());
        };
        return Ok(Input::Build(file, format));
    }
    // Text: within lineup's bounds on text (a line that never ends is not pahole text).
    lineup::input::check_text(path, bytes)?;
    let text = String::from_utf8_lossy(bytes).into_owned();
    let is_pahole = pahole_text::parse(&text)
        .map(|ts| {
            ts.iter()
                .any(|t| t.name == type_name && !t.members.is_empty())
        })
        .unwrap_or(false);
    if is_pahole {
        return Ok(Input::Pahole(text));
    }
    if c_struct::find_struct(&text, type_name).is_ok() {
        return Ok(Input::Header(text));
    }
    bail!(
        "{}: neither BTF, an ELF with debug info, pahole text nor a C declaration of '{type_name}'",
        path.display()
    )
}

/// Prints the comparison; returns the exit status: 0 when the layouts are the same, 1 when
/// they differ (diff(1) and codiff do the same; trouble is an error, exit 2).
pub fn run(args: Args) -> Result<i32> {
    let line = args.cacheline_size;
    let (old_in, new_in) = (
        open(&args.old, &args.type_name)?,
        open(&args.new, &args.type_name)?,
    );
    let old_types = match &old_in {
        Input::Build(f, fmt) => Some(readers::load(f, *fmt, None)?),
        _ => None,
    };
    let new_types = match &new_in {
        Input::Build(f, fmt) => Some(readers::load(f, *fmt, None)?),
        _ => None,
    };
    let build_layout = |types: &Option<Types<'_>>, path: &Path| -> Result<Option<Layout>> {
        let Some(t) = types else { return Ok(None) };
        let label = path.display().to_string();
        let id = super::subject::find_type(t, &label, &args.type_name)?;
        Ok(Some(layout::layout(t, id, line).with_context(|| {
            format!("{label}: '{}' has no layout", args.type_name)
        })?))
    };
    let old_layout = build_layout(&old_types, &args.old)?;
    let new_layout = build_layout(&new_types, &args.new)?;
    // A header side borrows sizes from the other side's build.
    let side = |input: &Input,
                path: &Path,
                own: &Option<Layout>,
                other: (&Option<Types<'_>>, &Option<Layout>)|
     -> Result<Side> {
        match input {
            Input::Build(..) => Ok(Side::from_layout(own.as_ref().expect("built above"), line)),
            Input::Pahole(text) => from_pahole(text, &args.type_name, line, path),
            Input::Header(text) => match other {
                (Some(t), Some(l)) => from_header(text, t, l, line, path),
                _ => bail!(
                    "{}: a C header can only be compared with a build (BTF or DWARF) that gives its members' sizes",
                    path.display()
                ),
            },
        }
    };
    let old = side(&old_in, &args.old, &old_layout, (&new_types, &new_layout))?;
    let new = side(&new_in, &args.new, &new_layout, (&old_types, &old_layout))?;
    let d = layout_diff::diff(&old, &new, line);
    let (ol, nl) = (
        args.old.display().to_string(),
        args.new.display().to_string(),
    );
    if args.json {
        let doc = Document {
            schema: 1,
            old: ol,
            new: nl,
            diff: &d,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!(
            "{}",
            emit::layout_diff::render(&d, &ol, &nl, args.all_members)
        );
    }
    Ok(if d.is_identical() { 0 } else { 1 })
}

fn from_pahole(text: &str, name: &str, line: u64, path: &Path) -> Result<Side> {
    let facts = pahole_text::parse(text)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| anyhow!("{}: no struct '{name}' in the pahole text", path.display()))?;
    let mut out = Vec::new();
    // Names as placed_members gives them: anonymous inline members by their own names,
    // members of named inline aggregates as outer.inner.
    let mut prefix: Vec<String> = Vec::new();
    for m in &facts.members {
        prefix.truncate(m.depth);
        let full = format!("{}{}", prefix.concat(), m.name);
        if !m.name.is_empty() && m.size > 0 {
            out.push(Placed::new(full.clone(), m.offset, m.size, line));
        }
        // Whatever follows at depth + 1 is inside this member.
        prefix.push(if m.name.is_empty() {
            String::new()
        } else {
            format!("{}.", m.name)
        });
    }
    let size = facts
        .size
        .unwrap_or_else(|| out.iter().map(|p| p.offset + p.size).max().unwrap_or(0));
    Ok(Side::from_placed(name, size, out))
}

/// The layout a compiler gives the header's declaration, with member sizes and natural
/// alignments from `base` (the same struct in a build).
fn from_header(
    text: &str,
    types: &Types<'_>,
    base: &Layout,
    line: u64,
    path: &Path,
) -> Result<Side> {
    let cs =
        c_struct::find_struct(text, &base.name).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let base_placed = lineup::analysis::contract::placed_members(base, line);
    let mut used: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut cur = 0u64;
    let mut max_align = base.forced_align.unwrap_or(1);
    for (name, align) in cs.members() {
        // A top-level member, or a member of an anonymous inline struct/union (which moves as
        // a whole with its first-named member).
        let idx = base
            .members
            .iter()
            .position(|f| f.name == name)
            .or_else(|| {
                base.members.iter().position(|f| {
                    f.name.is_empty()
                        && f.inline.is_some()
                        && f.members.iter().any(|m| m.name == name)
                })
            });
        let Some(idx) = idx else {
            bail!(
                "{}: member '{name}' of the declaration is not in the build's {} {}, so its size is unknown",
                path.display(),
                base.kind,
                base.name
            );
        };
        if used.contains(&idx) {
            continue;
        }
        used.push(idx);
        let f = &base.members[idx];
        let want = match align {
            Some(c_struct::Align::Line) => line,
            Some(c_struct::Align::Bytes(n)) => n,
            None => 1,
        };
        let a = types.natural_align(f.ty).max(want).max(1);
        max_align = max_align.max(a);
        let off = cur.div_ceil(a) * a;
        let delta = off as i128 - f.offset as i128;
        // The member itself (if named) and everything nested in it move by delta.
        let inner: Vec<&str> = if f.name.is_empty() {
            f.members.iter().map(|m| m.name.as_str()).collect()
        } else {
            vec![f.name.as_str()]
        };
        for p in &base_placed {
            let ours = inner
                .iter()
                .any(|n| p.name == *n || p.name.starts_with(&format!("{n}.")));
            if ours {
                let o = (p.offset as i128 + delta) as u64;
                out.push(Placed::new(p.name.clone(), o, p.size, line));
            }
        }
        cur = off + f.size;
    }
    let size = cur.div_ceil(max_align) * max_align;
    Ok(Side::from_placed(&base.name, size, out))
}
