//! `lineup typing`: which struct and member each access's instruction touches, from the
//! image's code and DWARF (lineup::readers::typing); with a profile, what share of it was
//! typed, and for a `lineup record` profile, how often the typing was right.

use std::path::PathBuf;

use anyhow::{Result, bail};

use lineup::readers::InputFile;
use lineup::readers::typing::{self, TypedAccess, Typer};

use super::evidence::{EvidenceArgs, PickArgs};

#[derive(clap::Args)]
#[command(
    about = "Type memory accesses from their instructions (struct and member, from code and DWARF)",
    after_help = "Examples:\n  lineup typing --image ./prog --function worker       # every access of a function\n  \
                  lineup typing --image ./prog --address 0x1234\n  \
                  lineup typing --image ./prog --perf-script samples.txt  # share of samples typed\n  \
                  lineup typing --image ./prog --profile recorded.json     # lineup record: accuracy"
)]
pub struct Args {
    /// The program, shared object or vmlinux whose code the accesses run (x86-64 with DWARF)
    #[arg(long, value_name = "FILE")]
    pub image: PathBuf,
    /// Type every memory access of this function
    #[arg(long, value_name = "NAME")]
    pub function: Vec<String>,
    /// Type the access at this image address (hex)
    #[arg(long, value_name = "ADDR")]
    pub address: Vec<String>,
    /// `perf script` memory samples: the share typed, and why the rest was not
    #[arg(long, value_name = "FILE")]
    pub perf_script: Option<PathBuf>,
    /// A perf.data file: the share typed
    #[arg(long, value_name = "FILE")]
    pub perf_data: Option<PathBuf>,
    /// A saved profile; a `lineup record` profile is checked against what it recorded
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Print every checked site of a recorded profile
    #[arg(long)]
    pub sites: bool,
    #[arg(long)]
    pub json: bool,
}

fn show(t: &Result<TypedAccess, typing::NotTyped>) -> String {
    match t {
        Ok(t) => format!(
            "struct {} +{} {}{} ({}; {})",
            t.type_name,
            t.offset,
            t.member,
            if t.indexed { " (indexed)" } else { "" },
            t.instruction,
            t.via
        ),
        Err(e) => format!("not typed: {e}"),
    }
}

pub fn run(args: Args) -> Result<()> {
    let file = InputFile::open(&args.image)?;
    let typer = Typer::new(&file)?;
    let image = args.image.display().to_string();
    let mut json = serde_json::Map::new();
    for f in &args.function {
        let list = typer.accesses_in(f);
        if list.is_empty() {
            bail!("{image}: no function `{f}` with memory accesses");
        }
        if args.json {
            json.insert(f.clone(), serde_json::to_value(&list)?);
        } else {
            println!("{f}:");
            for (pc, t) in &list {
                println!("  {pc:#x}  {}", show(t));
            }
        }
    }
    for a in &args.address {
        let pc = u64::from_str_radix(a.trim_start_matches("0x"), 16)
            .map_err(|_| anyhow::anyhow!("--address {a}: not a hex address"))?;
        let t = typer.type_at(pc);
        if args.json {
            json.insert(a.clone(), serde_json::to_value(&t)?);
        } else {
            println!("{pc:#x}  {}", show(&t));
        }
    }
    let evidence = EvidenceArgs {
        perf_script: args.perf_script.iter().cloned().collect(),
        perf_data: args.perf_data.iter().cloned().collect(),
        profile: args.profile.iter().cloned().collect(),
        ..Default::default()
    };
    let given = [&args.perf_script, &args.perf_data, &args.profile]
        .iter()
        .filter(|p| p.is_some())
        .count();
    if given > 1 {
        bail!("give one of --perf-script, --perf-data, --profile");
    }
    if given == 1 {
        let profile = evidence.load(&PickArgs {
            report: 1,
            kallsyms: None,
        })?;
        if profile.provenance.tool == lineup::record::TOOL {
            let acc = typing::check_recorded(&typer, &image, &profile);
            print_accuracy(&acc, &args, &mut json)?;
        } else {
            let (_, cov) = typing::type_rows(&typer, &image, &profile);
            if args.json {
                json.insert("coverage".into(), serde_json::to_value(&cov)?);
            } else {
                println!("{}", cov.describe());
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    Ok(())
}

fn print_accuracy(
    acc: &typing::Accuracy,
    args: &Args,
    json: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    if args.json {
        let mut v = serde_json::to_value(acc)?;
        if !args.sites
            && let Some(o) = v.as_object_mut()
        {
            o.remove("checks");
        }
        json.insert("accuracy".into(), v);
        return Ok(());
    }
    let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
    println!(
        "recorded struct-access sites: {}; typed from the instruction: {} ({:.1}%), right: {} ({:.1}% of typed); by accesses: {:.1}% typed, {:.1}% of typed right",
        acc.sites,
        acc.typed,
        pct(acc.typed as f64, acc.sites as f64),
        acc.right,
        pct(acc.right as f64, acc.typed as f64),
        pct(acc.accesses_typed, acc.accesses),
        pct(acc.accesses_right, acc.accesses_typed)
    );
    for (why, n) in &acc.untyped {
        println!("  not typed: {why}: {n} sites");
    }
    if args.sites {
        for c in &acc.checks {
            let t = match (&c.typed, &c.not_typed) {
                (Some(t), _) => show(&Ok(t.clone())),
                (_, Some(e)) => show(&Err(e.clone())),
                _ => String::new(),
            };
            println!(
                "  {:#x} {} {}.{}: {t}",
                c.address,
                match (c.right, c.typed.is_some()) {
                    (true, _) => "ok   ",
                    (false, true) => "WRONG",
                    (false, false) => "-    ",
                },
                c.truth_type,
                c.truth_member
            );
        }
    }
    Ok(())
}
