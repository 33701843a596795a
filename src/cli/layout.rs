//! `lineup layout`: show where every field of a struct lies, pahole-style.

use std::io::{BufWriter, Write};

use anyhow::{Result, bail};

use lineup::emit;
use lineup::layout::{self, Layout};
use lineup::types::{TypeId, Types};

use super::source::SourceArgs;

#[derive(clap::Args)]
#[command(
    about = "Show struct layouts: offsets, sizes, holes, padding, cache lines",
    after_help = "Examples:\n  lineup layout task_group                      # running kernel's BTF (or the bundled copy)\n  \
                  lineup layout -C task_group,cfs_rq            # pahole's spelling; --type works too\n  \
                  lineup layout --btf vmlinux.btf --all > all.txt\n  \
                  lineup layout --dwarf ./prog my_stats --cacheline-size 128 --json"
)]
pub struct Args {
    /// Struct or union names to show
    #[arg(value_name = "TYPE", required_unless_present_any = ["all", "named"])]
    types: Vec<String>,
    /// The same, as pahole (`-C task_group`, comma-separated lists too) and the other commands
    /// (`--type`) spell it
    #[arg(short = 'C', long = "type", value_name = "TYPE", value_delimiter = ',')]
    named: Vec<String>,
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
    // Types that share their name with another definition (two compile units, say): each is
    // labelled with where it was declared.
    // (Sets, not lists: 10^5 definitions of one name were 10^10 steps of lookups.)
    let mut ambiguous: std::collections::HashSet<TypeId> = std::collections::HashSet::new();
    // A program recorded with `lineup cc` carries lineup's runtime and libc's header types:
    // they are not the program's, and `--all` leaves them out.
    let recorded = opened.format == lineup::readers::Format::Dwarf
        && lineup::record::cc::has_runtime(opened.file.bytes());
    let ids: Vec<TypeId> = if args.all {
        let mut ids = layout::distinct_named(&types);
        if recorded {
            ids.retain(|&id| !lineup::record::is_foreign_type(&types, id));
        }
        ids
    } else {
        let mut ids: Vec<TypeId> = Vec::new();
        for name in args.types.iter().chain(&args.named) {
            let found = types.find_composites(name);
            if found.is_empty() {
                let close = lineup::record::similar_program_names(&types, name, 5);
                let hint = if close.is_empty() {
                    String::new()
                } else {
                    format!("; did you mean: {}?", close.join(", "))
                };
                bail!("{}: no struct or union named '{name}'{hint}", opened.label);
            }
            if found.len() > 1 {
                ambiguous.extend(found.iter().copied());
            }
            ids.extend(found);
        }
        ids
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.json {
        let layouts: Vec<Layout> = ids
            .iter()
            .filter_map(|&id| layout::layout(&types, id, args.cacheline_size))
            .collect();
        emit::json::write_layouts(&mut out, &opened.source, args.cacheline_size, &layouts)?;
    } else if args.all {
        writeln!(out, "/* {} */", opened.source.describe())?;
        for chunk in render_text(&types, &ids, args.cacheline_size) {
            out.write_all(&chunk)?;
        }
    } else {
        // How many definitions share each ambiguous name.
        let mut definitions: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::new();
        for &a in &ambiguous {
            *definitions.entry(types.get(a).name).or_default() += 1;
        }
        let mut buf = Vec::new();
        writeln!(buf, "/* {} */", opened.source.describe())?;
        for &id in &ids {
            let Some(l) = layout::layout_with(&types, id, args.cacheline_size, false) else {
                continue;
            };
            if ambiguous.contains(&id) {
                let n = definitions.get(types.get(id).name).copied().unwrap_or(1);
                let at = l.origin.as_deref().unwrap_or("an unknown place");
                writeln!(
                    buf,
                    "/* {} {}: one of {n} definitions; this one from {at} */",
                    l.kind, l.name
                )?;
            }
            emit::pahole::write_layout(&mut buf, &types, &l);
        }
        out.write_all(&buf)?;
    }
    out.flush()?;
    Ok(())
}

/// Renders the pahole text of `ids`, split over the machine's cores (a kernel's 10k structs
/// render in parallel; each chunk keeps input order).
fn render_text(types: &Types<'_>, ids: &[TypeId], cacheline_size: u64) -> Vec<Vec<u8>> {
    let render = |part: &[TypeId]| {
        let mut buf = Vec::with_capacity(part.len() * 700);
        for &id in part {
            if let Some(l) = layout::layout_with(types, id, cacheline_size, false) {
                emit::pahole::write_layout(&mut buf, types, &l);
            }
        }
        buf
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads == 1 || ids.len() < 256 {
        return vec![render(ids)];
    }
    // Alignments are memoized on first use; fill the memo before the threads share it.
    types.natural_align(0);
    let per = ids.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(per)
            .map(|part| s.spawn(move || render(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("render thread panicked"))
            .collect()
    })
}
