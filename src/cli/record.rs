//! `lineup cc`, `lineup c++` and `lineup record`: build a program with every load and store
//! instrumented, run it, and write its access profile.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use lineup::profile::Profile;
use lineup::record::{self, Options, Step, cc};

#[derive(clap::Args)]
#[command(
    about = "Compile C with every load and store recorded (a wrapper around clang or gcc)",
    long_about = "Runs the C compiler (clang when installed, else gcc; $LINEUP_CC overrides) with \
                  -g and ThreadSanitizer's instrumentation of every load, store and atomic, and \
                  links lineup's recording runtime in place of ThreadSanitizer's. All arguments \
                  go to the compiler unchanged: the program is recorded at your optimization \
                  level. Use it as CC. The runtime stays idle unless the program runs under \
                  `lineup record`.",
    after_help = "Examples:\n  lineup cc -O2 -pthread counters.c -o counters\n  \
                  make CC='lineup cc'\n  \
                  LINEUP_CC=gcc lineup cc -O2 -c queue.c && lineup cc queue.o main.o -o app"
)]
pub struct CcArgs {
    /// Arguments for the compiler
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

#[derive(clap::Args)]
#[command(
    about = "Compile C++ with every load and store recorded (a wrapper around clang++ or g++)",
    long_about = "As `lineup cc`, for C++ ($LINEUP_CXX overrides the compiler). Virtual table \
                  pointer updates and std::atomic operations are recorded too.",
    after_help = "Examples:\n  lineup c++ -O2 -std=c++17 -pthread server.cc -o server\n  \
                  make CXX='lineup c++'"
)]
pub struct CxxArgs {
    /// Arguments for the compiler
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

pub fn run_cc(args: CcArgs) -> Result<i32> {
    compile(false, &args.args)
}

pub fn run_cxx(args: CxxArgs) -> Result<i32> {
    compile(true, &args.args)
}

fn compile(cxx: bool, user: &[OsString]) -> Result<i32> {
    let (compiler, family) = cc::choose_compiler(cxx);
    let mode = cc::mode(user);
    let runtime = if mode.links && !mode.shared {
        Some(cc::runtime_object(&compiler, family).map_err(|e| anyhow!(e))?)
    } else {
        None
    };
    let stubs = if mode.links && family == cc::Family::Gcc {
        Some(cc::gcc_stub_dir(&compiler).map_err(|e| anyhow!(e))?)
    } else {
        None
    };
    let full = cc::arguments(family, user, runtime.as_deref(), stubs.as_deref());
    if std::env::var_os("LINEUP_VERBOSE").is_some() {
        eprintln!("lineup: {}", cc::display_args(&compiler, &full));
    }
    let status = Command::new(&compiler).args(&full).status().map_err(|e| {
        anyhow!(
            "{compiler}: cannot run the compiler: {}",
            match e.kind() {
                std::io::ErrorKind::NotFound =>
                    "not found (install clang or gcc, or set LINEUP_CC)".to_string(),
                _ => e.to_string(),
            }
        )
    })?;
    Ok(exit_code(&status))
}

#[derive(clap::Args)]
#[command(
    about = "Run a program built with `lineup cc` and write its exact access profile",
    long_about = "Runs PROGRAM with its arguments, its standard streams and its exit status \
                  untouched, while lineup's runtime counts every load and store to globals and \
                  heap memory per thread and code location. Afterwards lineup attributes the \
                  accesses to struct fields (DWARF), simulates the cache-line transfers between \
                  threads, and writes one profile (JSON, docs/profile.md) for `lineup diagnose`. \
                  lineup exits with the program's status (128+N when a signal ended it, whose \
                  partial profile is still written).",
    after_help = "Examples:\n  lineup cc -O2 -pthread counters.c -o counters\n  \
                  lineup record -o counters.json -- ./counters 4\n  \
                  lineup diagnose --type counters --dwarf ./counters --profile counters.json\n  \
                  lineup record --type queue --sample 16 -o q.json -- ./server --port 8080\n  \
                  lineup record --adjacent-line --line-size 64 -- ./prog"
)]
pub struct RecordArgs {
    /// Write the profile here
    #[arg(
        short,
        long,
        value_name = "FILE",
        default_value = "lineup.profile.json"
    )]
    output: PathBuf,
    /// Struct type of heap blocks whose size fits it (repeatable), when lineup cannot tell
    /// from the allocating function
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Count one burst of accesses in N per thread (scaled back up): for long runs
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    sample: u32,
    /// Cache line size to simulate and report [default: this machine's]
    #[arg(long, value_name = "BYTES", value_parser = parse_line_size)]
    line_size: Option<u64>,
    /// Also simulate pairs of lines, as the adjacent-line prefetcher moves them
    /// (counts in each access's details: pair_true_sharing, pair_false_sharing)
    #[arg(long)]
    adjacent_line: bool,
    /// Ordered-trace events per sampling level before trace windows thin out
    #[arg(long, value_name = "EVENTS", hide = true)]
    trace_budget: Option<u64>,
    /// Keep the runtime's raw files in this directory
    #[arg(long, value_name = "DIR")]
    keep_raw: Option<PathBuf>,
    /// Print a summary of the contended lines to standard error afterwards
    #[arg(short, long)]
    verbose: bool,
    /// The program and its arguments (after `--`)
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    command: Vec<OsString>,
}

fn parse_line_size(s: &str) -> Result<u64, String> {
    let n: u64 = s.parse().map_err(|_| format!("not a number: {s}"))?;
    if !(16..=4096).contains(&n) || !n.is_power_of_two() {
        return Err("a power of two from 16 to 4096".into());
    }
    Ok(n)
}

fn exit_code(status: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 2,
    }
}

/// The file `exe` names: a path, or a name looked up in PATH as a shell does.
fn resolve_program(exe: &Path) -> Option<PathBuf> {
    if exe.components().count() > 1 || exe.is_absolute() {
        return Some(exe.to_path_buf());
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

fn host_line_size() -> u64 {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|n: &u64| n.is_power_of_two() && *n >= 16)
        .unwrap_or(64)
}

/// Checks the program before running it: it exists, is an ELF executable, carries lineup's
/// runtime and DWARF.
fn check_program(shown: &str, path: &Path, types: &[String]) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow!("{shown}: no such file"),
        std::io::ErrorKind::PermissionDenied => anyhow!("{shown}: permission denied"),
        _ => anyhow!("{shown}: cannot read: {e}"),
    })?;
    if !bytes.starts_with(b"\x7fELF") {
        bail!("{shown}: not an ELF executable (a script? record the compiled program itself)");
    }
    if !cc::has_runtime(&bytes) {
        bail!(
            "{shown}: not built with `lineup cc` (it has no lineup recording runtime): rebuild it with `lineup cc` / `lineup c++`"
        );
    }
    let debug = record::debuginfo::DebugInfo::read(&bytes).map_err(|e| anyhow!("{shown}: {e}"))?;
    if !debug.has_dwarf {
        bail!("{shown}: no DWARF debug info (stripped?): lineup needs it to name struct fields");
    }
    if !types.is_empty() {
        let arena = typed_arena::Arena::new();
        let graph =
            lineup::readers::dwarf::parse(&bytes, &arena).map_err(|e| anyhow!("{shown}: {e}"))?;
        if let Some(t) = types.iter().find(|t| graph.find_composites(t).is_empty()) {
            bail!("{shown}: --type {t}: no struct or union of that name in its DWARF");
        }
    }
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("{shown}: cannot read"))?;
    if meta.permissions().mode() & 0o111 == 0 {
        bail!("{shown}: not executable (chmod +x?)");
    }
    Ok(())
}

struct SignalGuard;

impl SignalGuard {
    /// While the program runs, a Ctrl-C from the terminal is for the program: lineup waits
    /// for it to end, then writes what it recorded.
    fn ignore() -> SignalGuard {
        // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        }
        SignalGuard
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        // SAFETY: restores the default disposition.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
        }
    }
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir() -> Result<TempDir> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir =
        std::env::temp_dir().join(format!("lineup-record-{}-{nanos:08x}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    Ok(TempDir(dir))
}

/// A spinner on standard error, shown only if post-processing takes over 2 seconds and
/// standard error is a terminal.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
}

impl Progress {
    fn new() -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} lineup record: {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        Progress {
            bar,
            start: Instant::now(),
            shown: false,
        }
    }

    fn step(&mut self, s: Step) {
        if std::env::var_os("LINEUP_TIMING").is_some() {
            eprintln!("lineup: {:>8.3}s {s:?}", self.start.elapsed().as_secs_f64());
        }
        let msg = match s {
            Step::DebugInfo => "reading debug info".to_string(),
            Step::Simulate { process, of } => {
                format!("simulating cache lines (process {} of {of})", process + 1)
            }
            Step::Attribute { process, of } => {
                format!(
                    "attributing to struct fields (process {} of {of})",
                    process + 1
                )
            }
            Step::Done => "writing the profile".to_string(),
        };
        self.bar.set_message(msg);
        if !self.shown
            && self.start.elapsed() > Duration::from_secs(2)
            && std::io::stderr().is_terminal()
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(120));
            self.shown = true;
        }
    }

    fn finish(self) {
        self.bar.finish_and_clear();
    }
}

pub fn run_record(args: RecordArgs) -> Result<i32> {
    // Checked first: a recording must never be lost to an unwritable path after the run.
    let output = super::output::Output::check("-o", &args.output)?;
    if let Some(keep) = &args.keep_raw {
        super::output::check_dir("--keep-raw", keep)?;
    }
    let program = PathBuf::from(&args.command[0]);
    let shown = program.display().to_string();
    let path = resolve_program(&program).ok_or_else(|| anyhow!("{shown}: not found in PATH"))?;
    check_program(&shown, &path, &args.types)?;
    let line_size = args.line_size.unwrap_or_else(host_line_size);
    let dir = temp_dir()?;

    let mut cmd = Command::new(&path);
    cmd.args(&args.command[1..]);
    // What the user typed as argv[0], as a shell passes it.
    {
        use std::os::unix::process::CommandExt;
        cmd.arg0(&args.command[0]);
    }
    cmd.env("LINEUP_OUT", &dir.0);
    cmd.env("LINEUP_SAMPLE", args.sample.to_string());
    let unit = if args.adjacent_line {
        line_size * 2
    } else {
        line_size
    };
    cmd.env("LINEUP_BLOCK_SHIFT", unit.trailing_zeros().to_string());
    if let Some(b) = args.trace_budget {
        cmd.env("LINEUP_TRACE_BUDGET", b.to_string());
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow!("{shown}: cannot run: {e}"))?;
    let status = {
        let _guard = SignalGuard::ignore();
        child
            .wait()
            .map_err(|e| anyhow!("{shown}: lost track of the program: {e}"))?
    };
    let code = exit_code(&status);

    let processes = record::trace::read_dir(&dir.0)?;
    if processes.is_empty() {
        bail!(
            "{shown}: the recording runtime wrote nothing (the program exited with status {code} before it started, or it runs another program)"
        );
    }
    if let Some(keep) = &args.keep_raw {
        std::fs::create_dir_all(keep)
            .with_context(|| format!("{}: cannot create", keep.display()))?;
        for e in std::fs::read_dir(&dir.0)?.flatten() {
            std::fs::copy(e.path(), keep.join(e.file_name()))
                .with_context(|| format!("{}: cannot write", keep.display()))?;
        }
    }
    let opts = Options {
        line_size,
        adjacent_line: args.adjacent_line,
        types: args.types.clone(),
        command: Some(
            args.command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        machine_cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
    };
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!("lineup: program ran, reading its recording");
    }
    let mut progress = Progress::new();
    let built = record::build(&processes, &opts, &mut |s| progress.step(s))?;
    progress.finish();
    output.write(built.profile.to_json().as_bytes())?;

    if args.verbose {
        eprint!("{}", summary(&built.profile, &built.ambiguous_heap));
    }
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            eprintln!(
                "lineup: {shown}: killed by {}{}; partial profile written to {}",
                record::signal_name(sig),
                if status.core_dumped() {
                    " (core dumped)"
                } else {
                    ""
                },
                args.output.display()
            );
        }
    }
    Ok(code)
}

/// Per type, the lines with simulated transfers, most first.
fn summary(p: &Profile, ambiguous: &[(u64, Vec<String>)]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let rec = p.summary.get("record");
    let get = |k: &str| rec.and_then(|r| r.get(k)).copied().unwrap_or(0.0);
    let _ = writeln!(
        s,
        "lineup record: {:.0} accesses by {:.0} threads, {:.0}% attributed to struct fields; {:.0} traced for the simulation",
        get("accesses"),
        get("threads"),
        if get("accesses") > 0.0 {
            100.0 * get("accesses_attributed") / get("accesses")
        } else {
            0.0
        },
        get("traced_accesses")
    );
    let cls = p.cacheline_size.max(1);
    let mut rows: Vec<(f64, String)> = Vec::new();
    for t in &p.types {
        let mut lines: std::collections::BTreeMap<u64, (f64, f64, Vec<String>)> =
            Default::default();
        for a in &t.accesses {
            let Some(off) = a.offset else { continue };
            let e = lines.entry(off / cls).or_default();
            e.0 += a.details.get("sim_false_sharing").copied().unwrap_or(0.0);
            e.1 += a.details.get("sim_true_sharing").copied().unwrap_or(0.0);
            if let Some(f) = &a.field
                && a.counts.transfers() > 0.0
                && !e.2.contains(f)
            {
                e.2.push(f.clone());
            }
        }
        for (i, (fs, ts, fields)) in lines {
            if fs + ts == 0.0 {
                continue;
            }
            rows.push((
                fs + ts,
                format!(
                    "  struct {} line {i}: {:.0} transfers ({:.0} false sharing, {:.0} true sharing): {}",
                    t.type_name,
                    fs + ts,
                    fs,
                    ts,
                    fields.join(", ")
                ),
            ));
        }
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, row) in rows.iter().take(10) {
        let _ = writeln!(s, "{row}");
    }
    if rows.len() > 10 {
        let _ = writeln!(s, "  ... and {} more lines with transfers", rows.len() - 10);
    }
    for (size, names) in ambiguous.iter().take(5) {
        let _ = writeln!(
            s,
            "  heap blocks of {size} bytes not attributed: could be {} (--type names one)",
            names.join(", ")
        );
    }
    s
}
