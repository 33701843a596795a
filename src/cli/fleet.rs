//! `lineup fleet` (`--features fleet`, docs/fleet.md): add profiles to a store of Parquet
//! files and ask it questions. Flags in, text or JSON out; the store and its SQL live in
//! `lineup::fleet`.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};

use lineup::fleet::{self, query};

#[derive(clap::Args)]
#[command(
    about = "Store typed profiles of many hosts and builds in Parquet, and rank, compare and merge them (DataFusion SQL)",
    after_help = "Examples:\n  lineup fleet add --store fleet --host web1 --workload nginx --build 6.18.44 --perf-typeoff typeoff.txt\n  \
                  lineup fleet add --store fleet --host db2 --workload pg --build 6.18.44 --c2c c2c.txt --type task_group --btf vmlinux\n  \
                  lineup fleet top --store fleet --build 6.18.44 --limit 20\n  \
                  lineup fleet compare --store fleet 6.18.44 6.19.2\n  \
                  lineup fleet profile --store fleet --type task_group -o merged.json"
)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    Add(Box<AddArgs>),
    Top(TopArgs),
    Compare(CompareArgs),
    Profile(ProfileArgs),
}

/// Add one profile's typed accesses to the store
#[derive(clap::Args)]
struct AddArgs {
    /// The store: a folder of Parquet files, `build=<id>/date=<YYYY-MM-DD>/<hash>.parquet`
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The host the evidence was taken on
    #[arg(long, value_name = "H")]
    host: String,
    /// The workload that ran
    #[arg(long, value_name = "W")]
    workload: String,
    /// The machine model (free text: "icelake-2s")
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
    /// The kernel or binary build-id (default: the evidence's, where perf.data names one)
    #[arg(long, value_name = "ID")]
    build: Option<String>,
    /// The day the evidence was taken (default: today, UTC)
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// Keep instruction addresses (dropped by default: kernel addresses reveal the KASLR base)
    #[arg(long)]
    keep_addresses: bool,
    /// Bind the evidence's raw cache lines to this struct, as `diagnose --type` does, and
    /// store only its accesses
    #[arg(long = "type", value_name = "TYPE")]
    type_name: Option<String>,
    #[command(flatten)]
    evidence: super::evidence::EvidenceArgs,
    #[command(flatten)]
    pick: super::evidence::PickArgs,
    #[command(flatten)]
    source: super::source::SourceArgs,
}

/// Types and members ranked by cost across the fleet, per build
#[derive(clap::Args)]
struct TopArgs {
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// Only this build
    #[arg(long, value_name = "ID")]
    build: Option<String>,
    /// How many types and how many members
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Print JSON (docs/schema/fleet-top.schema.json)
    #[arg(long)]
    json: bool,
}

/// Member by member, what got better or worse from BUILD_A to BUILD_B (exit 0 same, 1
/// different, 2 trouble, as diff)
#[derive(clap::Args)]
struct CompareArgs {
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    build_a: String,
    build_b: String,
    /// Print JSON (docs/schema/fleet-compare.schema.json)
    #[arg(long)]
    json: bool,
}

/// One merged profile of a type over the fleet, as `lineup import` writes profiles
#[derive(clap::Args)]
struct ProfileArgs {
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    #[arg(long = "type", value_name = "TYPE")]
    type_name: String,
    /// Only this build
    #[arg(long, value_name = "ID")]
    build: Option<String>,
    /// Write the profile here (`-`: standard output)
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: Args) -> Result<i32> {
    match args.command {
        Command::Add(a) => add(*a).map(|()| 0),
        Command::Top(a) => top(a).map(|()| 0),
        Command::Compare(a) => compare(a),
        Command::Profile(a) => profile(a).map(|()| 0),
    }
}

fn add(args: AddArgs) -> Result<()> {
    let mut profile = args.evidence.load(&args.pick)?;
    let files = args.evidence.files();
    let label = files
        .iter()
        .map(|(_, p)| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(t) = &args.type_name {
        let opened = args.source.for_profile(&profile).open()?;
        let types = opened.types()?;
        let id = super::subject::find_type(&types, &opened.label, t)?;
        let earlier = args.evidence.earlier(&args.pick)?;
        super::subject::gather(
            &mut profile,
            (&types, &opened.label),
            id,
            t,
            types.size_of(id),
            (None, earlier),
        )?;
    }
    let rows = fleet::rows(&profile, args.type_name.as_deref(), args.keep_addresses);
    if rows.is_empty() {
        bail!(
            "{label}: no access typed to a struct to store (raw cache lines are typed with --type T and --btf/--dwarf, as diagnose binds them)"
        );
    }
    let build = match args.build.clone() {
        Some(b) => b,
        None => fleet::evidence_build_id(&profile)
            .ok_or_else(|| anyhow!("{label}: the evidence names no build-id: give --build ID"))?,
    };
    let tags = fleet::Tags {
        build,
        date: args.date.clone().unwrap_or_else(lineup::clock::today),
        host: args.host.clone(),
        machine: args.machine.clone(),
        workload: args.workload.clone(),
    };
    let mut hash = fleet::ContentHash::default();
    for (flag, path) in &files {
        hash.field(flag.as_bytes());
        let mut f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
        }
    }
    hash.field(args.type_name.as_deref().unwrap_or("").as_bytes());
    hash.field(&args.pick.report.to_le_bytes());
    hash.tags(&tags, args.keep_addresses);
    let batch = fleet::batch(&profile, &tags, &rows).map_err(|e| anyhow!("{label}: {e}"))?;
    let path = fleet::write(&args.store, &tags, &hash.hex(), &batch)
        .map_err(|e| anyhow!("{label}: {e}"))?;
    println!(
        "stored {} rows of {label} in {}",
        rows.len(),
        path.display()
    );
    Ok(())
}

fn top(args: TopArgs) -> Result<()> {
    let t = query::top(&args.store, args.build.as_deref(), args.limit).map_err(|e| anyhow!(e))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &t)?;
        writeln!(out)?;
        return Ok(());
    }
    let member = |r: &query::Ranked| match (&r.member, r.offset) {
        (Some(m), Some(o)) => format!("{m} (+{o})"),
        (Some(m), None) => m.clone(),
        (None, Some(o)) => format!("+{o}"),
        (None, None) => "?".into(),
    };
    for (title, list, members) in [("types", &t.types, false), ("members", &t.members, true)] {
        writeln!(
            out,
            "{title} by cost (transfers, then writes, then accesses):"
        )?;
        writeln!(
            out,
            "  {:<16} {:<24} {:<28} {:>5} {:>12} {:>12} {:>12} {:>12}",
            "build", "type", "member", "hosts", "transfers", "hitm", "writes", "accesses"
        )?;
        for r in list.iter() {
            writeln!(
                out,
                "  {:<16} {:<24} {:<28} {:>5} {:>12.0} {:>12.0} {:>12.0} {:>12.0}",
                r.build,
                r.type_name,
                if members { member(r) } else { String::new() },
                r.hosts,
                r.transfers,
                r.hitm,
                r.writes,
                r.accesses
            )?;
        }
    }
    Ok(())
}

fn compare(args: CompareArgs) -> Result<i32> {
    let c = query::compare(&args.store, &args.build_a, &args.build_b).map_err(|e| anyhow!(e))?;
    let code = i32::from(c.differs());
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &c)?;
        writeln!(out)?;
        return Ok(code);
    }
    let off = |s: &Option<query::Side>| match s {
        Some(query::Side {
            offset: Some(o), ..
        }) => format!("+{o}"),
        Some(_) => "?".into(),
        None => "-".into(),
    };
    let per_host = |s: &Option<query::Side>| match s {
        Some(s) => format!("{:.1}", s.transfers / s.hosts.max(1) as f64),
        None => "-".into(),
    };
    writeln!(
        out,
        "{} -> {} ({}): member, offset, transfers per host, change",
        c.build_a,
        c.build_b,
        args.store.display()
    )?;
    for m in c.members.iter().filter(|m| m.moved || m.change != "same") {
        writeln!(
            out,
            "  {}.{}  {} -> {}  {} -> {}  {}{}",
            m.type_name,
            m.member,
            off(&m.a),
            off(&m.b),
            per_host(&m.a),
            per_host(&m.b),
            m.change,
            if m.moved { ", moved" } else { "" }
        )?;
    }
    let same = c.members.iter().filter(|m| !m.moved && m.change == "same");
    writeln!(out, "  {} member(s) the same", same.count())?;
    Ok(code)
}

fn profile(args: ProfileArgs) -> Result<()> {
    let output = super::output::Output::check("-o", &args.output)?;
    let p = query::profile(&args.store, &args.type_name, args.build.as_deref())
        .map_err(|e| anyhow!(e))?;
    output.write_streamed(|w| {
        p.write_json(&mut *w)?;
        writeln!(w)
    })
}
