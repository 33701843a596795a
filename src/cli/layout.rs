//! `lineup layout`: show where every field of a struct lies, pahole-style.

use std::io::{BufWriter, Write};

use anyhow::{Result, bail};

use lineup::emit;
use lineup::layout::{self, Layout};
use lineup::types::TypeId;

use super::source::SourceArgs;

#[derive(clap::Args)]
#[command(
    about = "Show struct layouts: offsets, sizes, holes, padding, cache lines",
    after_help = "Examples:\n  lineup layout task_group                      # running kernel's BTF (or the bundled copy)\n  \
                  lineup layout --btf vmlinux.btf --all > all.txt\n  \
                  lineup layout --dwarf ./prog my_stats --cacheline-size 128 --json"
)]
pub struct Args {
    /// Struct or union names to show
    #[arg(value_name = "TYPE", required_unless_present = "all")]
    types: Vec<String>,
    /// Show every struct and union
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    source: SourceArgs,
    /// Cache line size in bytes (128 on POWER and some Arm servers)
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(8..=4096))]
    cacheline_size: u64,
    /// Print JSON instead of pahole-style text
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<()> {
    let opened = args.source.open()?;
    let types = opened.types()?;
    if args.cacheline_size & (args.cacheline_size - 1) != 0 {
        bail!(
            "--cacheline-size {} is not a power of two",
            args.cacheline_size
        );
    }
    let layouts: Vec<Layout> = if args.all {
        layout::all_named(&types, args.cacheline_size)
    } else {
        let mut ids: Vec<TypeId> = Vec::new();
        for name in &args.types {
            let found = types.find_composites(name);
            if found.is_empty() {
                let close = types.similar_composite_names(name, 5);
                let hint = if close.is_empty() {
                    String::new()
                } else {
                    format!("; did you mean: {}?", close.join(", "))
                };
                bail!("{}: no struct or union named '{name}'{hint}", opened.label);
            }
            ids.extend(found);
        }
        ids.iter()
            .filter_map(|&id| layout::layout(&types, id, args.cacheline_size))
            .collect()
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.json {
        emit::json::write_layouts(&mut out, &opened.label, args.cacheline_size, &layouts)?;
    } else {
        let mut buf = Vec::with_capacity(1 << 16);
        for l in &layouts {
            emit::pahole::write_layout(&mut buf, &types, l);
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
    }
    out.flush()?;
    Ok(())
}
