//! `lineup check`: hold a struct's layout to a contract (separate lines, groups within k
//! lines, a size budget), for CI after every build.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use lineup::analysis::contract::{self, AssertFlavour, Contract, Violation};
use lineup::layout;

use super::source::SourceArgs;

#[derive(clap::Args)]
#[command(
    about = "Check a struct's layout against a layout contract (exit 1 on any violation)",
    long_about = "Check a struct's layout against a layout contract: members that must stay on \
                  separate cache lines, groups that must stay within k lines, a size and line \
                  budget. Prints one line per violation naming the members and the lines they \
                  landed on, and exits 1; exits 0 when every rule holds and 2 on bad input. \
                  `lineup optimize --contract FILE` writes a contract for the layout it proposes; \
                  the file is TOML and can be written by hand (docs/check.md).",
    after_help = "Examples:\n  lineup check --btf vmlinux task_group.contract.toml\n  \
                  lineup check --dwarf ./prog stats.contract.toml --json\n  \
                  lineup check task_group.contract.toml --asserts kernel >> task_group_asserts.h"
)]
pub struct Args {
    /// The contract (TOML: type, cacheline_size, max_size, max_lines, [[separate]], [[group]], [[alone]])
    #[arg(value_name = "CONTRACT")]
    contract: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// Print the contract as C static asserts (kernel: static_assert + sizeof_field; user: C11) instead of checking
    #[arg(long, value_name = "FLAVOUR", value_parser = ["kernel", "user"])]
    asserts: Option<String>,
    /// Print the result as JSON (schema key `schema`, docs/check.md)
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: u32,
    contract: String,
    source: &'a str,
    layout_source: &'a lineup::readers::LayoutSource,
    #[serde(rename = "type")]
    type_name: &'a str,
    size: u64,
    ok: bool,
    violations: &'a [Violation],
}

/// Returns 0 when the layout keeps the contract, 1 when it breaks a rule.
pub fn run(args: Args) -> Result<i32> {
    let path = &args.contract;
    let text = lineup::input::read_text_lossy(path)?;
    let c = Contract::from_toml(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a layout contract: {e}", path.display()))?;
    if let Some(flavour) = &args.asserts {
        let f = if flavour == "kernel" {
            AssertFlavour::Kernel
        } else {
            AssertFlavour::User
        };
        // The kind (struct or union) comes from the types when they can be read.
        let kind = args
            .source
            .open()
            .ok()
            .and_then(|o| {
                let types = o.types().ok()?;
                let id = *types.find_composites(&c.type_name).first()?;
                layout::layout(&types, id, c.cacheline_size).map(|l| l.kind)
            })
            .unwrap_or("struct");
        print!("{}", contract::static_asserts(&c, kind, f));
        return Ok(0);
    }
    let opened = args.source.open()?;
    let types = opened.types()?;
    let id = super::subject::find_type(&types, &opened.label, &c.type_name)?;
    let l = layout::layout(&types, id, c.cacheline_size)
        .with_context(|| format!("{}: '{}' has no layout", opened.label, c.type_name))?;
    let violations = contract::check(&c, &l);
    if args.json {
        let r = Report {
            schema: 1,
            contract: path.display().to_string(),
            source: &opened.label,
            layout_source: &opened.source,
            type_name: &c.type_name,
            size: l.size,
            ok: violations.is_empty(),
            violations: &violations,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else if violations.is_empty() {
        println!("/* {} */", opened.source.describe());
        println!(
            "{}: {} {} keeps the contract in {} ({} bytes, {} rule(s))",
            opened.label,
            l.kind,
            c.type_name,
            path.display(),
            l.size,
            rule_count(&c)
        );
    } else {
        println!("/* {} */", opened.source.describe());
        for v in &violations {
            println!("{}: {}", opened.label, v.message);
        }
        eprintln!(
            "lineup: {} violation(s) of {} in {}",
            violations.len(),
            path.display(),
            opened.label
        );
    }
    Ok(if violations.is_empty() { 0 } else { 1 })
}

fn rule_count(c: &Contract) -> usize {
    c.separate.len()
        + c.group.len()
        + c.alone.len()
        + usize::from(c.max_size.is_some())
        + usize::from(c.max_lines.is_some())
}
