//! Every stage an input goes through, end to end, without the command line: a header through
//! rearrangement to a patch; profile text through import, binding, diagnosis and the
//! optimizer; type bytes through layout to pahole text, C and JSON.
//!
//! The fuzz targets (`fuzz/fuzz_targets/`) drive these, and `tests/fuzz_corpus.rs` replays
//! the fuzz corpora (seeds and past crashes) through them, so a crash found in any stage
//! stays fixed without a nightly toolchain. Each function returns what it produced, for the
//! caller to check.

use crate::analysis::{cost, diagnose, fields, machine, optimize};
use crate::emit::{self, c::Flavour};
use crate::layout::{self, Layout};
use crate::profile::Profile;
use crate::readers::c_struct::{self, CStruct};
use crate::types::{TypeId, Types};

/// The struct a header run looks for: fuzz inputs name it `s` (`struct s { ... }`).
pub const HEADER_STRUCT: &str = "s";

/// What [`header_to_patch`] made of a header.
#[derive(Debug)]
pub struct HeaderRun {
    pub header: CStruct,
    /// The rearranged file text, per attempt: reversed order without alignment, then with
    /// the new first member line-aligned, kernel and userspace flavour.
    pub rearranged: Vec<Result<String, String>>,
    /// The unified diffs of the successful attempts.
    pub diffs: Vec<String>,
}

/// Reads `struct name` from `text` and rearranges it: its members in reverse order (every
/// member moves), plain and with an alignment added, in both flavours. Errors only when the
/// struct cannot be read; each rearrangement's own error is in the result.
pub fn header_to_patch(text: &str, name: &str) -> Result<HeaderRun, String> {
    let header = c_struct::find_struct(text, name)?;
    let mut order: Vec<String> = header.members().into_iter().map(|(n, _)| n).collect();
    order.reverse();
    let rank = |n: &str| order.iter().position(|m| m == n);
    let first: Vec<String> = order.first().cloned().into_iter().collect();
    let mut rearranged = Vec::new();
    let mut diffs = Vec::new();
    for (aligned, flavour) in [
        (&[][..], Flavour::Kernel),
        (&first[..], Flavour::Kernel),
        (&first[..], Flavour::Userspace),
    ] {
        let r = emit::patch::rearrange_source(text, &header, &rank, aligned, flavour, 64, false);
        if let Ok(new) = &r {
            diffs.push(emit::patch::unified_diff(text, new, "h.h"));
        }
        rearranged.push(r);
    }
    Ok(HeaderRun {
        header,
        rearranged,
        diffs,
    })
}

/// What [`types_to_text`] rendered.
#[derive(Debug, Default)]
pub struct TextRun {
    pub layouts: usize,
    pub pahole_bytes: usize,
    pub c_bytes: usize,
    pub json_bytes: usize,
}

/// Lays out up to `max` structs and unions of `types` and renders each as pahole text and
/// as a C declaration (both flavours), and all of them as one JSON document; also computes
/// the optimizer's units and the analysis' leaves of each.
pub fn types_to_text(types: &Types<'_>, max: usize) -> TextRun {
    let mut run = TextRun::default();
    let mut layouts: Vec<Layout> = Vec::new();
    for id in types.composites().take(max) {
        let Some(l) = layout::layout(types, id, 64) else {
            continue;
        };
        let mut out = Vec::new();
        emit::pahole::write_layout(&mut out, types, &l);
        run.pahole_bytes += out.len();
        for flavour in [Flavour::Kernel, Flavour::Userspace] {
            run.c_bytes += emit::c::declaration(&l, &emit::c::Marks::default(), flavour).len();
        }
        let _ = cost::units(types, &l);
        let _ = fields::leaves(types, id);
        layouts.push(l);
    }
    let mut json = Vec::new();
    let source = crate::readers::LayoutSource {
        file: "fuzz".into(),
        format: "btf",
        base: None,
        running_kernel: false,
        bundled_fallback: false,
    };
    if emit::json::write_layouts(&mut json, &source, 64, &layouts).is_ok() {
        run.json_bytes = json.len();
    }
    run.layouts = layouts.len();
    run
}

/// What [`profile_to_plan`] found for one struct.
#[derive(Debug)]
pub struct PlanRun {
    pub type_name: String,
    pub accesses: usize,
    pub diagnosed_lines: usize,
    /// The model's cost of the current layout and of the optimizer's, in cycles, when the
    /// profile has accesses to place.
    pub current_cycles: Option<f64>,
    pub planned_cycles: Option<f64>,
}

/// Takes `profile` through every stage after import for each struct of `types` it is about
/// (its named types, or `default_type` for raw cache lines): binding raw lines, resolving
/// fields, diagnosis, the cost model and the optimizer. The profile also goes through its
/// own JSON and back.
pub fn profile_to_plan(
    profile: &mut Profile,
    types: &Types<'_>,
    default_type: &str,
) -> Result<Vec<PlanRun>, String> {
    let json = profile.to_json();
    Profile::from_json(&json).map_err(|e| format!("profile JSON does not read back: {e}"))?;
    let mut names: Vec<String> = profile.types.iter().map(|t| t.type_name.clone()).collect();
    if !profile.lines.is_empty() {
        names.push(default_type.to_string());
    }
    names.sort();
    names.dedup();
    let machine = machine::preset("icelake-2s").ok_or("no icelake-2s preset")?;
    let mut runs = Vec::new();
    for name in names.iter().take(8) {
        let Some(&id) = types.find_composites(name).first() else {
            continue;
        };
        runs.push(plan_one(profile, types, id, name, &machine));
    }
    Ok(runs)
}

fn plan_one(
    profile: &mut Profile,
    types: &Types<'_>,
    id: TypeId,
    name: &str,
    machine: &machine::MachineModel,
) -> PlanRun {
    let cls = 64;
    let layout = layout::layout(types, id, cls).expect("a defined struct has a layout");
    diagnose::bind_raw_lines(profile, types, id, name, None);
    let (accesses, _missing) = diagnose::accesses_for(profile, types, id, name);
    let d = diagnose::diagnose(&layout, &accesses, profile.provenance.machine.cpus);
    let units = cost::units(types, &layout);
    let cpus = profile
        .provenance
        .machine
        .cpus
        .unwrap_or(machine.cpus)
        .clamp(1, machine.cpus.max(1));
    let streams = cost::streams(&units, &layout, &accesses, cpus);
    let current = cost::current_placement(&layout, &units);
    let q = cost::Queueing {
        reference: cost::busiest_line(&streams, &current, cls, machine),
        utilization: cost::DEFAULT_UTILIZATION,
    };
    let mut run = PlanRun {
        type_name: name.to_string(),
        accesses: accesses.len(),
        diagnosed_lines: d.lines.len(),
        current_cycles: None,
        planned_cycles: None,
    };
    if streams.is_empty() {
        return run;
    }
    // Priced as the optimizer prices its plan: line-aligned instances, at either half of a
    // pair where the machine fetches pairs.
    run.current_cycles = Some(
        crate::analysis::instances::Instances::aligned()
            .evaluate(&units, &streams, &current, cls, machine, &q)
            .total_cycles(),
    );
    if let Ok(plan) = optimize::optimize(
        &units,
        &streams,
        &current,
        layout.forced_align.unwrap_or(1),
        &optimize::Constraints::default(),
        cls,
        machine,
        &q,
    ) {
        run.planned_cycles = Some(plan.cost.total_cycles());
    }
    run
}

// ---------------------------------------------------------------------------------------
// Whole runs with their invariants: one per fuzz target, replayed by the corpus test.
// ---------------------------------------------------------------------------------------

/// Which reader a type input goes to.
#[derive(Clone, Copy, Debug)]
pub enum TypeInput {
    Btf,
    /// An ELF file with DWARF.
    Dwarf,
}

/// Reads `data` as `kind` and renders what it holds. Panics (a fuzz finding) if a stage
/// panics or an error is not one line; returns the layouts rendered.
pub fn check_types(kind: TypeInput, data: &[u8]) -> usize {
    let arena = typed_arena::Arena::new();
    let types = match kind {
        TypeInput::Btf => crate::readers::btf::parse(data).map_err(|e| e.to_string()),
        TypeInput::Dwarf => crate::readers::dwarf::parse(data, &arena)
            .map(|mut t| {
                t.source = crate::types::SourceFormat::Dwarf;
                t
            })
            .map_err(|e| e.to_string()),
    };
    match types {
        Ok(types) => {
            let run = types_to_text(&types, 64);
            assert!(
                run.layouts == 0 || run.json_bytes > 0,
                "no JSON for {run:?}"
            );
            run.layouts
        }
        Err(e) => {
            assert_one_line(&e);
            0
        }
    }
}

/// Runs a header (`struct s { ... }`) through [`header_to_patch`] and checks what it made:
/// line ranges inside the file and in order, the struct matching its own members, a
/// rearrangement without alignment that only moves lines, one-line errors.
pub fn check_header(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    let run = match header_to_patch(&text, HEADER_STRUCT) {
        Ok(run) => run,
        Err(e) => {
            assert_one_line(&e);
            return false;
        }
    };
    let cs = &run.header;
    assert!(cs.open_line <= cs.close_line && cs.close_line < lines.max(1));
    for d in &cs.decls {
        assert!(d.first_line <= d.end_line && d.end_line <= cs.close_line);
    }
    let own: Vec<Vec<String>> = cs.decls.iter().map(|d| d.names.clone()).collect();
    assert_eq!(emit::patch::header_mismatch(cs, &own), None);
    for r in &run.rearranged {
        if let Err(e) = r {
            assert_one_line(e);
        }
    }
    if let Some(Ok(moved)) = run.rearranged.first() {
        let mut a: Vec<&str> = text.lines().collect();
        let mut b: Vec<&str> = moved.lines().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "a rearrangement without alignment only moves lines");
    }
    true
}

/// Which importer a profile text goes to.
#[derive(Clone, Copy, Debug)]
pub enum ProfileInput {
    C2c,
    Typeoff,
    PerfScript,
    Sketch,
}

/// Imports `data` as `kind` and takes every profile it yields through [`profile_to_plan`]
/// against `types` (raw cache lines are bound to `default_type`). Panics on a stage's panic,
/// a multi-line error, or a cost that is not a finite number; returns the profiles imported.
pub fn check_profile(
    kind: ProfileInput,
    data: &[u8],
    types: &Types<'_>,
    default_type: &str,
) -> usize {
    use crate::profile;
    let text = String::from_utf8_lossy(data);
    let imported = match kind {
        ProfileInput::C2c => profile::import_c2c(&text),
        ProfileInput::Typeoff => profile::import_perf_typeoff(&text).map(|p| vec![p]),
        ProfileInput::PerfScript => {
            profile::import_perf_script(&text, &profile::PerfScriptOptions::default())
                .map(|p| vec![p])
        }
        ProfileInput::Sketch => profile::import_sketch(&text).map(|p| vec![p]),
    };
    let mut profiles = match imported {
        Ok(p) => p,
        Err(e) => {
            assert_one_line(&e.to_string());
            return 0;
        }
    };
    for p in &mut profiles {
        for line in &p.lines {
            let _ = p.line_ranges(line.address);
        }
        match profile_to_plan(p, types, default_type) {
            Ok(runs) => {
                for r in runs {
                    for c in [r.current_cycles, r.planned_cycles].into_iter().flatten() {
                        assert!(c.is_finite() && c >= 0.0, "{}: cost {c}", r.type_name);
                    }
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
    profiles.len()
}

/// Imports `data` as `kind` and stops there: the reading stage alone, which the `*_read` fuzz
/// targets run thousands of times a second where [`check_profile`], which runs the optimizer
/// on every input, manages a few. The bytes first go through the bounds every text file
/// goes through ([`crate::input::check_text`]); each profile then through its JSON and
/// back. Panics on a panic of the reader or a multi-line error; returns the profiles
/// imported.
pub fn check_import(kind: ProfileInput, data: &[u8]) -> usize {
    use crate::profile::{self, Profile};
    if let Err(e) = crate::input::check_text(std::path::Path::new("input"), data) {
        assert_one_line(&e.to_string());
        return 0;
    }
    let text = String::from_utf8_lossy(data);
    let imported = match kind {
        ProfileInput::C2c => profile::import_c2c(&text),
        ProfileInput::Typeoff => profile::import_perf_typeoff(&text).map(|p| vec![p]),
        ProfileInput::PerfScript => {
            profile::import_perf_script(&text, &profile::PerfScriptOptions::default())
                .map(|p| vec![p])
        }
        ProfileInput::Sketch => profile::import_sketch(&text).map(|p| vec![p]),
    };
    let profiles = match imported {
        Ok(p) => p,
        Err(e) => {
            assert_one_line(&e.to_string());
            return 0;
        }
    };
    for p in &profiles {
        for line in &p.lines {
            let _ = p.line_ranges(line.address);
        }
        if let Err(e) = Profile::from_json(&p.to_json()) {
            panic!("profile JSON does not read back: {e}");
        }
    }
    profiles.len()
}

/// Reads `data` as an image (ELF code and DWARF) and types its memory accesses from their
/// instructions (`lineup typing`), at most `MAX_TYPED` of them, and each call as an access to
/// its arguments. Panics on a panic of the typer, a multi-line error or reason, or a typed
/// access outside its struct; returns the accesses typed.
pub fn check_typing(data: &[u8]) -> usize {
    use crate::readers::{InputFile, typing::Typer};
    const MAX_TYPED: usize = 256;
    let file = InputFile::from_bytes(std::path::Path::new("input.elf"), data.to_vec());
    let typer = match Typer::new(&file) {
        Ok(t) => t,
        Err(e) => {
            assert_one_line(&e.to_string());
            return 0;
        }
    };
    let mut seen = 0;
    let mut typed = 0;
    for name in typer.function_names() {
        if seen >= MAX_TYPED {
            break;
        }
        for (pc, result) in typer.accesses_in(name).into_iter().take(MAX_TYPED - seen) {
            seen += 1;
            let call = typer.type_call_argument(pc);
            for r in [result, call] {
                match r {
                    Ok(t) => {
                        assert!(t.offset >= 0, "{name} {pc:#x}: {t:?}");
                        assert_one_line(&t.via);
                        typed += 1;
                    }
                    Err(e) => assert_one_line(&e.to_string()),
                }
            }
        }
    }
    typed
}

fn assert_one_line(e: &str) {
    assert!(!e.contains('\n'), "multi-line error: {e}");
}
