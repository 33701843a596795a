//! `lineup cc`, `lineup c++` and `lineup record`: build a program with every load and store
//! instrumented, run it, and write its access profile.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
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
                  lineup record --heap-type queue --sample 16 -o q.json -- ./server --port 8080\n  \
                  lineup record --alloc-wrapper xmalloc -o p.json -- ./prog input.dat\n  \
                  lineup record --sample auto -o long.json -- ./solver big.input\n  \
                  lineup record --sample bursts:500/5000/0 -o long.json -- ./solver big.input\n  \
                  lineup record --sample 1 -o every-access.json -- ./prog\n  \
                  lineup record --adjacent-line --cacheline-size 64 -- ./prog\n  \
                  lineup record --memory 256M -o big.json -- ./stream input.dat\n  \
                  lineup record --keep-raw raw -o a.json -- ./prog && lineup record --from-raw raw -o b.json"
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
    /// from the allocating function. (`--type` names the subject struct in every other command;
    /// here the old spelling is kept as a hidden alias.)
    #[arg(long = "heap-type", alias = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// A function of the program that allocates and returns the block to its caller
    /// (`xmalloc`; repeatable): its callers name and type the blocks. Wrappers whose code
    /// hands the allocator's result back untyped are found without it
    #[arg(long = "alloc-wrapper", value_name = "FUNCTION")]
    alloc_wrappers: Vec<String>,
    /// What to record [default: bursts]. `bursts` (`bursts:ON/PERIOD/WARMUP`, microseconds,
    /// default 1000/20000/100000): every access during the first WARMUP (so a short run is
    /// recorded in full), then ON of every PERIOD, the program running at nearly full speed
    /// in between with its hook calls rewritten into jumps that only count each code site's
    /// executions: counts stay exact per code site and thread, their places and the
    /// simulated transfers come from the recorded windows (x86-64; elsewhere every access
    /// is recorded). `1`: every access, the whole run. N: one burst of 1024 accesses in N
    /// per thread, scaled back up. `auto`: per code site, back off exponentially on sites
    /// whose accesses meet only lines that are not contended, and count the rest in full
    #[arg(long, value_name = "1|N|auto|bursts", value_parser = parse_sample)]
    sample: Option<Sample>,
    /// Memory budget of the recording, for the program's runtime and for lineup each
    /// (bytes, or with K, M, G): past it, places are summarized per code site, and the
    /// profile and standard error say so
    #[arg(long, value_name = "SIZE", default_value = "512M", value_parser = parse_size)]
    memory: u64,
    /// Cache line size to simulate and report [default: this machine's] (`--line-size`, the
    /// old spelling, is a hidden alias)
    #[arg(long = "cacheline-size", alias = "line-size", value_name = "BYTES", value_parser = parse_line_size)]
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
    /// Run nothing: build the profile again from a directory kept with --keep-raw (the
    /// program it recorded must still be where it ran)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["keep_raw", "command"])]
    from_raw: Option<PathBuf>,
    /// Print a summary of the contended lines to standard error afterwards
    #[arg(short, long)]
    verbose: bool,
    /// The program and its arguments (after `--`)
    #[arg(
        required_unless_present = "from_raw",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    command: Vec<OsString>,
}

/// `--sample`: a fixed period, or adaptive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sample {
    Every(u32),
    Auto,
    /// The first `warmup_us` recorded, then `on_us` of every `period_us`.
    Bursts {
        on_us: u32,
        period_us: u32,
        warmup_us: u32,
    },
}

/// `--sample bursts` without numbers, and `--sample` left out: the first 100 ms in full,
/// then 1 ms of every 20 ms.
const BURSTS_DEFAULT: Sample = Sample::Bursts {
    on_us: 1000,
    period_us: 20000,
    warmup_us: 100_000,
};

fn parse_sample(s: &str) -> Result<Sample, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Sample::Auto);
    }
    if let Some(rest) = s.trim().strip_prefix("bursts") {
        if rest.is_empty() {
            return Ok(BURSTS_DEFAULT);
        }
        let Some(spec) = rest.strip_prefix(':') else {
            return Err(format!(
                "not a sampling period: {s} (a whole number from 1, auto, or bursts)"
            ));
        };
        let numbers: Vec<Option<u32>> = spec.split('/').map(|n| n.trim().parse().ok()).collect();
        let Sample::Bursts { warmup_us, .. } = BURSTS_DEFAULT else {
            unreachable!()
        };
        return match numbers[..] {
            [Some(on), Some(period)] if on >= 1 && period > on => Ok(Sample::Bursts {
                on_us: on,
                period_us: period,
                warmup_us,
            }),
            [Some(on), Some(period), Some(warmup)] if on >= 1 && period > on => {
                Ok(Sample::Bursts {
                    on_us: on,
                    period_us: period,
                    warmup_us: warmup,
                })
            }
            _ => Err(format!(
                "not a bursts setting: {s} (bursts:ON/PERIOD[/WARMUP], microseconds, ON from 1 and below PERIOD)"
            )),
        };
    }
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Sample::Every(n)),
        _ => Err(format!(
            "not a sampling period: {s} (a whole number from 1, auto, or bursts)"
        )),
    }
}

/// Bytes as MiB, or KiB below one MiB.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("not a size: {s} (bytes, or a number with K, M or G)"))?;
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "not a size: {s} (bytes, or a number with K, M or G)"
            ));
        }
    };
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("too large: {s}"))?;
    if bytes < 16 << 20 {
        return Err(format!(
            "{s}: at least 16M (the runtime's fixed tables need it)"
        ));
    }
    Ok(bytes)
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
fn check_program(shown: &str, path: &Path, types: &[String], wrappers: &[String]) -> Result<()> {
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
    // Only whether the DWARF is there: it is read once, after the run.
    let has_dwarf =
        record::debuginfo::DebugInfo::has_dwarf(&bytes).map_err(|e| anyhow!("{shown}: {e}"))?;
    if !has_dwarf {
        bail!("{shown}: no DWARF debug info (stripped?): lineup needs it to name struct fields");
    }
    if !wrappers.is_empty() {
        // Named wrappers only: the symbol table is read for them, the rest after the run.
        let debug =
            record::debuginfo::DebugInfo::read(&bytes).map_err(|e| anyhow!("{shown}: {e}"))?;
        if let Some(w) = wrappers.iter().find(|w| debug.function_named(w).is_none()) {
            bail!("{shown}: --alloc-wrapper {w}: no function of that name in its symbol table");
        }
    }
    if !types.is_empty() {
        let arena = typed_arena::Arena::new();
        let graph =
            lineup::readers::dwarf::parse(&bytes, &arena).map_err(|e| anyhow!("{shown}: {e}"))?;
        if let Some(t) = types.iter().find(|t| graph.find_composites(t).is_empty()) {
            bail!("{shown}: --heap-type {t}: no struct or union of that name in its DWARF");
        }
    }
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("{shown}: cannot read"))?;
    if meta.permissions().mode() & 0o111 == 0 {
        bail!("{shown}: not executable (chmod +x?)");
    }
    Ok(())
}

/// Which of the standard descriptors 0-2 were closed when lineup started (bit n: fd n).
/// Rust's runtime opens /dev/null on closed standard descriptors before `main`, so this
/// is noted earlier, from `.init_array`, and the program gets them closed again.
static CLOSED_STD_FDS: AtomicU8 = AtomicU8::new(0);

extern "C" fn note_closed_std_fds() {
    let mut bits = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            bits |= 1 << fd;
        }
    }
    CLOSED_STD_FDS.store(bits, Ordering::Relaxed);
}

#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STD_FDS: extern "C" fn() = note_closed_std_fds;

/// The recorded program's pid while it runs (0 before and after), for the signal handler.
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The last terminating signal lineup received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

extern "C" fn forward_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    RECEIVED.store(sig, Ordering::Relaxed);
    // A terminal's Ctrl-C / Ctrl-\ / hangup (si_code SI_KERNEL) reaches the program
    // directly, as the same foreground process group: sending it again would be twice.
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 && !from_terminal {
        // SAFETY: kill is async-signal-safe; pid is our own child, not yet reaped.
        unsafe { libc::kill(pid, sig) };
    }
}

/// While lineup runs a program, SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to it:
/// lineup waits for it to end, then writes what it recorded and removes its files.
struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    fn forward() -> SignalGuard {
        let mut old = Vec::new();
        for sig in FORWARDED {
            // SAFETY: installs a handler that only touches atomics and calls kill(2).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = forward_signal as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores the disposition saved above.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// Waits for `child` to end without reaping it first (so its pid cannot be reused while the
/// signal handler may still send to it), then reaps it.
fn wait_child(child: &mut std::process::Child) -> std::io::Result<(std::process::ExitStatus, u64)> {
    let pid = child.id() as libc::pid_t;
    loop {
        // SAFETY: waitid on our own child with a zeroed siginfo to fill in.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    CHILD.store(0, Ordering::Relaxed);
    // Reaped here rather than by `child.wait()`, for its peak memory.
    let mut raw = 0;
    // SAFETY: wait4 on our own child, which has ended; rusage is filled in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut raw, 0, &mut usage) };
    if r != pid {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::unix::process::ExitStatusExt;
    Ok((
        std::process::ExitStatus::from_raw(raw),
        usage.ru_maxrss as u64 * 1024,
    ))
}

/// lineup's own peak resident memory so far, in bytes.
fn own_peak_rss() -> u64 {
    // SAFETY: getrusage fills in the struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

/// `-o` must name a file lineup can create, checked before the program runs: a recording
/// cannot be repeated.
fn check_output(out: &Path) -> Result<()> {
    let shown = out.display();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{shown}: cannot write: no directory {}", parent.display())
        }
        Err(e) => bail!("{shown}: cannot write: {e}"),
        Ok(m) if !m.is_dir() => bail!(
            "{shown}: cannot write: {} is not a directory",
            parent.display()
        ),
        Ok(_) => {}
    }
    if out.is_dir() {
        bail!("{shown}: is a directory");
    }
    let c = std::ffi::CString::new(parent.as_os_str().as_encoded_bytes())
        .map_err(|_| anyhow!("{shown}: not a usable path"))?;
    // SAFETY: access(2) with a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        bail!(
            "{shown}: cannot write in {}: {}",
            parent.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
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
    let mut base = std::env::temp_dir();
    // The runtime opens its file by this path after the program may have changed directory.
    if base.is_relative() {
        base = std::env::current_dir()?.join(base);
    }
    let dir = base.join(format!("lineup-record-{}-{nanos:08x}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
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
            eprintln!(
                "lineup: {:>8.3}s {:>6} MiB peak {s:?}",
                self.start.elapsed().as_secs_f64(),
                own_peak_rss() >> 20
            );
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

/// What running the program left: the runtime's files, read, and how the program ended.
struct Ran {
    processes: Vec<record::trace::Process>,
    /// `None` when nothing ran (`--from-raw`).
    status: Option<std::process::ExitStatus>,
    code: i32,
    program_rss: Option<u64>,
    /// The program as the messages name it.
    shown: String,
    /// The runtime's files, removed when done.
    _dir: Option<TempDir>,
}

/// `--from-raw`: the files of a recording kept with `--keep-raw`.
fn from_raw(raw: &Path) -> Result<Ran> {
    let processes = record::trace::read_dir(raw)?;
    let Some(first) = processes.first() else {
        bail!(
            "{}: no recording in it (no rt.<pid>.bin files: a directory kept with --keep-raw?)",
            raw.display()
        );
    };
    Ok(Ran {
        shown: first.exe.clone(),
        processes,
        status: None,
        code: 0,
        program_rss: None,
        _dir: None,
    })
}

/// Runs the program under the runtime and reads what it wrote.
fn run_program(args: &RecordArgs, line_size: u64) -> Result<Ran> {
    let program = PathBuf::from(&args.command[0]);
    let shown = program.display().to_string();
    let path = resolve_program(&program).ok_or_else(|| anyhow!("{shown}: not found in PATH"))?;
    check_program(&shown, &path, &args.types, &args.alloc_wrappers)?;
    check_output(&args.output)?;
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!(
            "lineup: program checked ({} MiB peak so far)",
            own_peak_rss() >> 20
        );
    }
    let dir = temp_dir()?;

    let mut cmd = Command::new(&path);
    cmd.args(&args.command[1..]);
    // What the user typed as argv[0], as a shell passes it.
    {
        use std::os::unix::process::CommandExt;
        cmd.arg0(&args.command[0]);
    }
    cmd.env("LINEUP_OUT", &dir.0);
    match args.sample.unwrap_or(BURSTS_DEFAULT) {
        Sample::Every(n) => {
            cmd.env("LINEUP_SAMPLE", n.to_string());
        }
        Sample::Auto => {
            cmd.env("LINEUP_SAMPLE", "1");
            cmd.env("LINEUP_ADAPTIVE", "1");
        }
        Sample::Bursts {
            on_us,
            period_us,
            warmup_us,
        } => {
            cmd.env("LINEUP_SAMPLE", "1");
            cmd.env("LINEUP_BURSTS", format!("{on_us}/{period_us}/{warmup_us}"));
        }
    }
    cmd.env("LINEUP_MEMORY", args.memory.to_string());
    let unit = if args.adjacent_line {
        line_size * 2
    } else {
        line_size
    };
    cmd.env("LINEUP_BLOCK_SHIFT", unit.trailing_zeros().to_string());
    if let Some(b) = args.trace_budget {
        cmd.env("LINEUP_TRACE_BUDGET", b.to_string());
    }
    let closed = CLOSED_STD_FDS.load(Ordering::Relaxed);
    if closed != 0 {
        use std::os::unix::process::CommandExt;
        // SAFETY: close(2) is async-signal-safe, as pre_exec requires.
        unsafe {
            cmd.pre_exec(move || {
                for fd in 0..3 {
                    if closed & (1 << fd) != 0 {
                        libc::close(fd);
                    }
                }
                Ok(())
            });
        }
    }
    let _signals = SignalGuard::forward();
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow!("{shown}: cannot run: {e}"))?;
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    // A signal that came while the program was being started.
    let early = RECEIVED.load(Ordering::Relaxed);
    if early != 0 {
        // SAFETY: our own child, not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, early) };
    }
    let (status, program_rss) =
        wait_child(&mut child).map_err(|e| anyhow!("{shown}: lost track of the program: {e}"))?;
    let code = exit_code(&status);
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!(
            "lineup: program ended ({} MiB peak so far)",
            own_peak_rss() >> 20
        );
    }

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
    Ok(Ran {
        processes,
        status: Some(status),
        code,
        program_rss: Some(program_rss),
        shown,
        _dir: Some(dir),
    })
}

pub fn run_record(args: RecordArgs) -> Result<i32> {
    // Checked first: a recording must never be lost to an unwritable path after the run.
    let output = super::output::Output::check("-o", &args.output)?;
    if let Some(keep) = &args.keep_raw {
        super::output::check_dir("--keep-raw", keep)?;
    }
    let line_size = args.line_size.unwrap_or_else(host_line_size);
    let ran = match &args.from_raw {
        Some(raw) => {
            check_output(&args.output)?;
            from_raw(raw)?
        }
        None => run_program(&args, line_size)?,
    };
    let Ran {
        processes,
        status,
        code,
        program_rss,
        shown,
        _dir,
    } = ran;
    let opts = Options {
        line_size,
        adjacent_line: args.adjacent_line,
        types: args.types.clone(),
        alloc_wrappers: args.alloc_wrappers.clone(),
        command: (!args.command.is_empty()).then(|| {
            args.command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        }),
        machine_cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
    };
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!(
            "lineup: program ran, recording read ({} MiB peak so far)",
            own_peak_rss() >> 20
        );
    }
    let mut progress = Progress::new();
    let mut built = record::build(&processes, &opts, &mut |s| progress.step(s))?;
    drop(processes);
    progress.finish();
    let recorder_rss = own_peak_rss();
    if let Some(sum) = built.profile.summary.get_mut("record") {
        if let Some(rss) = program_rss {
            sum.insert("peak_rss_program".into(), rss as f64);
        }
        sum.insert("peak_rss_recorder".into(), recorder_rss as f64);
        sum.insert("memory_budget".into(), args.memory as f64);
    }
    output.write_streamed(|w| built.profile.write_json(w))?;
    if built.budget_level > 0 {
        // The runtime steps at 1/64 and 1/16 of the budget (runtime/lineup_rt.c,
        // budget_level): say which step, in bytes, not just "the budget".
        let (step, share, what) = if built.budget_level >= 2 {
            (
                "second",
                16,
                "every place was summarized per code site and the ordered trace stopped from then on",
            )
        } else {
            (
                "first",
                64,
                "places on lines not contended (one thread's, handed over to one thread, or only read since shared) were summarized per code site",
            )
        };
        eprintln!(
            "lineup: {shown}: past {} of counts and trace written, the {step} step of the {} MiB memory budget (--memory; 1/{share} of it): {what}; {}, see the profile's note",
            size_text(args.memory / share),
            args.memory >> 20,
            if built.adaptive.is_some() {
                "counts are as sampled"
            } else {
                "counts stay exact"
            }
        );
    }
    if let Some((estimated, total, period)) = built.adaptive {
        eprintln!(
            "lineup: {shown}: adaptive sampling (--sample auto): {estimated} of {total} accesses were skipped and estimated from bursts of 256 per code site (sites on lines not contended backed off up to 1 in {period}; counts scaled by each burst's period); sites on contended lines were counted in full"
        );
    }
    if matches!(args.sample, Some(Sample::Bursts { .. })) && !built.bursts_ran {
        eprintln!(
            "lineup: {shown}: --sample bursts: the runtime could not rewrite this program's code (it needs x86-64 and membarrier), so every access was recorded"
        );
    }
    // Said on stderr when asked for (bursts by default are the profile note's business).
    if let Some(b) = &built.bursts
        && (args.verbose || args.sample.is_some())
    {
        eprintln!(
            "lineup: {shown}: bursts (--sample bursts, the default): after the first {}, recorded {} us of every {} us, {:.1} % of the run in {} windows; in between, the hook calls of {} code sites only counted their executions, which are spread over the places recorded in the windows (see the profile's note)",
            lineup::record::duration_text(b.warmup_us.max(u64::from(b.on_us))),
            b.on_us,
            b.period_us,
            100.0 * b.recorded_fraction,
            b.windows,
            b.patched_sites
        );
    }
    if recorder_rss > args.memory {
        eprintln!(
            "lineup: warning: lineup itself peaked at {} MiB, over the {} MiB budget",
            recorder_rss >> 20,
            args.memory >> 20
        );
    }

    if args.verbose {
        eprint!("{}", summary(&built.profile, &built.ambiguous_heap));
    }
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.and_then(|s| s.signal()) {
            eprintln!(
                "lineup: {shown}: killed by {}{}; partial profile written to {}",
                record::signal_name(sig),
                if status.is_some_and(|s| s.core_dumped()) {
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
            "  heap blocks of {size} bytes not attributed: could be {} (--heap-type names one)",
            names.join(", ")
        );
    }
    s
}
