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
    /// Struct type of heap blocks whose size fits it (repeatable), when the code does not
    /// say: a pointer the code declares, assigns or passes for a block types it, and a block
    /// whose accesses rule the struct out is not taken for one. (`--type` names the subject
    /// struct in every other command; here the old spelling is kept as a hidden alias.)
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

// ---- Signals -------------------------------------------------------------------------------
//
// lineup handles SIGINT, SIGTERM, SIGHUP and SIGQUIT from just before the program starts until
// it exits. The handler only writes a 16-byte note into a pipe; a thread (`watch_signals`)
// reads the notes and decides:
//
// - while the program runs, a signal is passed on to it, unless the program has it already:
//   a terminal's (si_code SI_KERNEL: Ctrl-C, Ctrl-\, hangup) reaches the whole foreground
//   process group, the program included; and one sent to the whole process group (`timeout`,
//   `kill -TERM -PGID`, a shell's `kill %1`) reached it too. lineup cannot tell the second
//   from a signal sent to it alone by its siginfo, so a sentinel process in the same group
//   (`lineup-sentinel`, a fork of lineup that only waits for signals) tells: what reaches it
//   was sent to the group. A signal from a sender that signalled the group with it within
//   `GROUP_WINDOW` is not passed on; otherwise it is, `GRACE` after it came (the time the
//   sentinel has to report);
// - after the program ended, during post-processing, the first one stops lineup: the
//   recording is kept and the command that resumes from it printed (`stop`), unless the
//   profile is being written to a file then, which is let finish (a moment: no partial file,
//   no lost recording).

/// Where lineup is, for the signal handler and the watcher thread.
static STATE: AtomicU8 = AtomicU8::new(BEFORE);
/// Handlers installed, the program not started yet.
const BEFORE: u8 = 0;
/// The program runs (`CHILD` holds its pid).
const RUNNING: u8 = 1;
/// The program ended (or `--from-raw`): reading, attributing, simulating.
const PROCESSING: u8 = 2;
/// Writing the profile to a file through a temporary one: let finish.
const WRITING_FILE: u8 = 3;
/// Writing the profile to a pipe, a device or a socket: may be stopped.
const WRITING_THROUGH: u8 = 4;
/// Written, or stopped.
const FINISHED: u8 = 5;

/// The recorded program's pid while it may be signalled (0 before and after). A lock rather
/// than an atomic: the program is reaped with it held, so that its pid cannot be reused
/// between reading it here and sending to it.
static CHILD: std::sync::Mutex<i32> = std::sync::Mutex::new(0);
/// The pipe the handler and the sentinel write their notes into (write end; -1: none).
static NOTES: AtomicI32 = AtomicI32::new(-1);
/// The line `stop` prints, and the spinner to clear first.
static STOP_NOTE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
static SPINNER: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);

const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// How long a signal to lineup waits for the sentinel's word before it is passed on.
const GRACE: Duration = Duration::from_millis(250);
/// A sender that signalled the group this recently is taken to have signalled it again.
const GROUP_WINDOW: Duration = Duration::from_secs(5);

/// One signal, as the handler or the sentinel saw it: 16 bytes, written whole into the pipe.
#[repr(C)]
#[derive(Clone, Copy)]
struct Note {
    sig: u8,
    /// `NOTE_*` bits.
    flags: u8,
    /// `STATE` when the handler ran.
    state: u8,
    _pad: u8,
    /// The sender (si_pid; 0 for the kernel's).
    from: i32,
    /// CLOCK_MONOTONIC, nanoseconds.
    ns: u64,
}

const NOTE_TERMINAL: u8 = 1;
const NOTE_SENTINEL: u8 = 2;

fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime (async-signal-safe) fills in the timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes a note into the pipe: one write(2) of 16 bytes, atomic on a pipe, never blocking
/// (the pipe is non-blocking; a full pipe drops it).
fn send_note(fd: i32, note: &Note) {
    // SAFETY: write(2) is async-signal-safe; `note` is 16 readable bytes.
    unsafe {
        libc::write(
            fd,
            (note as *const Note).cast(),
            std::mem::size_of::<Note>(),
        )
    };
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: errno is thread-local; saved and restored for the interrupted code.
    let saved = unsafe { *libc::__errno_location() };
    let (code, from) = if info.is_null() {
        (0, 0)
    } else {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        unsafe { ((*info).si_code, (*info).si_pid()) }
    };
    let note = Note {
        sig: sig as u8,
        flags: if code == libc::SI_KERNEL {
            NOTE_TERMINAL
        } else {
            0
        },
        state: STATE.load(Ordering::SeqCst),
        _pad: 0,
        from,
        ns: monotonic_ns(),
    };
    let fd = NOTES.load(Ordering::SeqCst);
    if fd >= 0 {
        send_note(fd, &note);
    }
    // SAFETY: restores errno for the code the signal interrupted.
    unsafe { *libc::__errno_location() = saved };
}

/// Installs the handler, the pipe and the thread that reads it; for the rest of lineup's
/// life (a signal after the profile is written is ignored: lineup is about to exit).
fn handle_signals(state: u8) -> Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills in two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        bail!(
            "cannot create a pipe for signals: {}",
            std::io::Error::last_os_error()
        );
    }
    let (read, write) = (fds[0], fds[1]);
    NOTES.store(write, Ordering::SeqCst);
    STATE.store(state, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("lineup-signals".into())
        .spawn(move || watch_signals(read))
        .context("cannot start a thread for signals")?;
    for sig in FORWARDED {
        // SAFETY: installs a handler that only reads atomics and calls clock_gettime and
        // write(2).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// The watcher thread: reads the notes, passes signals on to the program, stops
/// post-processing.
fn watch_signals(read: i32) {
    // (signal, sender) -> when the sentinel last saw it.
    let mut group: Vec<(u8, i32, u64)> = Vec::new();
    // Signals to pass on: (note, due).
    let mut pending: Vec<(Note, u64)> = Vec::new();
    let mut buf = [0u8; 16 * 64];
    loop {
        let now = monotonic_ns();
        let wait_ms = pending
            .iter()
            .map(|(_, due)| due.saturating_sub(now).div_ceil(1_000_000).max(1))
            .min()
            .map_or(-1, |ms| ms.min(1000) as i32);
        let mut pfd = libc::pollfd {
            fd: read,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd.
        unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        loop {
            // SAFETY: reads into our buffer.
            let n = unsafe { libc::read(read, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            for chunk in buf[..n as usize].chunks_exact(16) {
                // SAFETY: 16 bytes written as one Note (writes of up to PIPE_BUF are whole).
                let note: Note = unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast()) };
                if note.flags & NOTE_SENTINEL != 0 {
                    group.retain(|&(s, f, _)| (s, f) != (note.sig, note.from));
                    group.push((note.sig, note.from, note.ns));
                    continue;
                }
                match note.state {
                    BEFORE => pending.push((note, 0)),
                    RUNNING if note.flags & NOTE_TERMINAL == 0 => {
                        pending.push((note, note.ns + GRACE.as_nanos() as u64))
                    }
                    RUNNING => {}
                    PROCESSING | WRITING_THROUGH => stop(note.sig),
                    _ => {}
                }
            }
        }
        // Drop what the group was sent (the program has it), pass on what is due.
        let now = monotonic_ns();
        let window = GROUP_WINDOW.as_nanos() as u64;
        let grace = GRACE.as_nanos() as u64;
        pending.retain(|(note, due)| {
            let to_group = *due != 0
                && group.iter().any(|&(s, f, at)| {
                    s == note.sig
                        && f == note.from
                        && at + window >= note.ns
                        && at <= note.ns + grace
                });
            if to_group {
                return false;
            }
            if *due > now {
                return true;
            }
            match STATE.load(Ordering::SeqCst) {
                BEFORE => true,
                RUNNING => {
                    let child = CHILD.lock().unwrap_or_else(|e| e.into_inner());
                    if *child > 0 {
                        // SAFETY: our own child, not yet reaped (reaping takes this lock).
                        unsafe { libc::kill(*child, note.sig as i32) };
                    }
                    false
                }
                _ => false,
            }
        });
        group.retain(|&(_, _, at)| at + window + grace >= now);
    }
}

/// A signal during post-processing: unless a file is being written (let finish), lineup
/// stops here, with one line saying what was kept and how to go on. Never returns when it
/// stops.
fn stop(sig: u8) {
    for from in [PROCESSING, WRITING_THROUGH] {
        if STATE
            .compare_exchange(from, FINISHED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            if let Ok(bar) = SPINNER.lock()
                && let Some(bar) = bar.as_ref()
            {
                bar.finish_and_clear();
            }
            let note = STOP_NOTE
                .lock()
                .ok()
                .and_then(|n| n.clone())
                .unwrap_or_else(|| "no profile written".into());
            eprintln!(
                "lineup: {} during post-processing: {note}",
                record::signal_name(i32::from(sig))
            );
            // Nothing to clean up: the raw directory is kept on purpose, and no temporary
            // output file exists outside WRITING_FILE.
            // SAFETY: ends the process at once, without running destructors.
            unsafe { libc::_exit(128 + i32::from(sig)) };
        }
    }
}

/// Moves lineup to writing the profile: false when a signal stopped it first (it is exiting).
fn start_writing(to_file: bool) -> bool {
    let next = if to_file {
        WRITING_FILE
    } else {
        WRITING_THROUGH
    };
    STATE
        .compare_exchange(PROCESSING, next, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// The profile is written: later signals are ignored. False when a signal stopped lineup
/// while it wrote to a pipe (it is exiting).
fn finish_writing() -> bool {
    let now = STATE.load(Ordering::SeqCst);
    now != FINISHED
        && STATE
            .compare_exchange(now, FINISHED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
}

/// Waits for the watcher thread to end the process.
fn wait_for_stop() -> ! {
    loop {
        std::thread::park();
    }
}

/// The sentinel: a process in lineup's process group that reports the signals sent to the
/// group. Killed and reaped on drop.
struct Sentinel(libc::pid_t);

impl Sentinel {
    /// Forks it (None when it cannot: then every signal is passed on).
    fn start() -> Option<Sentinel> {
        let notes = NOTES.load(Ordering::SeqCst);
        if notes < 0 {
            return None;
        }
        // SAFETY: the child only makes async-signal-safe calls (prctl, sigwaitinfo, write,
        // close, _exit), as required after fork in a process with threads. The signals are
        // blocked across the fork so that the child never runs lineup's handler.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in FORWARDED {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            let parent = libc::getpid();
            let pid = libc::fork();
            if pid == 0 {
                sentinel_main(parent, notes, &set);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            (pid > 0).then_some(Sentinel(pid))
        }
    }
}

/// The sentinel's life: gone with lineup (PR_SET_PDEATHSIG), holding no descriptor but the
/// notes pipe, no directory (it chdirs to /), and waiting for the forwarded signals only.
unsafe fn sentinel_main(parent: libc::pid_t, notes: i32, set: &libc::sigset_t) -> ! {
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        libc::prctl(libc::PR_SET_NAME, c"lineup-sentinel".as_ptr());
        // Every descriptor but the pipe: it must not hold lineup's stdout open for a reader
        // waiting for its end.
        let n = notes as u32;
        if n > 0 {
            close_fds(0, n - 1);
        }
        close_fds(n + 1, u32::MAX);
        libc::chdir(c"/".as_ptr());
        loop {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let sig = libc::sigwaitinfo(set, &mut info);
            if sig <= 0 {
                continue;
            }
            let note = Note {
                sig: sig as u8,
                flags: NOTE_SENTINEL
                    | if info.si_code == libc::SI_KERNEL {
                        NOTE_TERMINAL
                    } else {
                        0
                    },
                state: 0,
                _pad: 0,
                from: info.si_pid(),
                ns: monotonic_ns(),
            };
            if libc::write(
                notes,
                (&note as *const Note).cast(),
                std::mem::size_of::<Note>(),
            ) < 0
                && *libc::__errno_location() != libc::EAGAIN
            {
                libc::_exit(0);
            }
        }
    }
}

/// Closes descriptors `lo..=hi` (close_range, else one by one up to 65535).
unsafe fn close_fds(lo: u32, hi: u32) {
    unsafe {
        if libc::syscall(libc::SYS_close_range, lo, hi, 0) != 0 {
            for fd in lo..=hi.min(65535) {
                libc::close(fd as i32);
            }
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        // SAFETY: our own child, killed and reaped.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            let mut status = 0;
            while libc::waitpid(self.0, &mut status, 0) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
        }
    }
}

/// Waits for `child` to end without reaping it first, then reaps it with `CHILD` cleared
/// under its lock (so its pid cannot be reused while the watcher may still send to it).
/// Returns its status, its peak resident memory in bytes and its user CPU time (its threads
/// and the children it waited for) in seconds.
fn wait_child(
    child: &mut std::process::Child,
) -> std::io::Result<(std::process::ExitStatus, u64, f64)> {
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
    let mut held = CHILD.lock().unwrap_or_else(|e| e.into_inner());
    *held = 0;
    // From here on a signal stops post-processing instead of being passed on.
    STATE.store(PROCESSING, Ordering::SeqCst);
    // Reaped here rather than by `child.wait()`, for its peak memory.
    let mut raw = 0;
    // SAFETY: wait4 on our own child, which has ended; rusage is filled in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        let r = unsafe { libc::wait4(pid, &mut raw, 0, &mut usage) };
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break r;
    };
    drop(held);
    if r != pid {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::unix::process::ExitStatusExt;
    let user = usage.ru_utime.tv_sec as f64 + usage.ru_utime.tv_usec as f64 / 1e6;
    Ok((
        std::process::ExitStatus::from_raw(raw),
        usage.ru_maxrss as u64 * 1024,
        user,
    ))
}

/// lineup's own peak resident memory so far, in bytes.
fn own_peak_rss() -> u64 {
    // SAFETY: getrusage fills in the struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

// ---- The raw directory ---------------------------------------------------------------------

/// The runtime's directory, removed on drop (and kept when a signal stops post-processing or
/// lineup is killed: then it stays in TMPDIR under its name, `lineup-record-` and 16 hex
/// digits).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl TempDir {
    /// Keeps the directory (post-processing failed: the recording cannot be repeated).
    fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

/// Where the raw directory goes: $TMPDIR (unless lineup runs with other effective ids than
/// its real ones: set-user-ID), else /tmp; made absolute with every link resolved (the
/// runtime opens it by this path after the program may have changed directory). Refused
/// unless it is owned by lineup's effective user or root and, when others may write into it,
/// sticky (as /tmp): others could otherwise rename the raw directory away and put theirs in
/// its place.
fn raw_base() -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: these calls have no preconditions.
    let (uid, euid, gid, egid) = unsafe {
        (
            libc::getuid(),
            libc::geteuid(),
            libc::getgid(),
            libc::getegid(),
        )
    };
    let from_env =
        std::env::var_os("TMPDIR").filter(|t| !t.is_empty() && uid == euid && gid == egid);
    let (shown, base) = match &from_env {
        Some(t) => (
            format!("TMPDIR={}", Path::new(t).display()),
            PathBuf::from(t),
        ),
        None => ("/tmp".to_string(), PathBuf::from("/tmp")),
    };
    let fix = "lineup keeps the recording there while the program runs; set TMPDIR to a directory of yours";
    let real = std::fs::canonicalize(&base).map_err(|e| anyhow!("{shown}: {e} ({fix})"))?;
    let meta = std::fs::metadata(&real).map_err(|e| anyhow!("{shown}: {e} ({fix})"))?;
    if !meta.is_dir() {
        bail!("{shown}: not a directory ({fix})");
    }
    let mode = meta.mode();
    if meta.uid() != euid && meta.uid() != 0 {
        bail!(
            "{shown}: owned by another user (uid {}), who could replace lineup's files there ({fix})",
            meta.uid()
        );
    }
    if mode & 0o022 != 0 && mode & libc::S_ISVTX as u32 == 0 {
        bail!(
            "{shown}: writable by {} and not sticky (mode {:o}): others could replace lineup's files there ({fix}, or chmod +t it)",
            if mode & 0o002 != 0 {
                "everyone"
            } else {
                "its group"
            },
            mode & 0o7777
        );
    }
    Ok(real)
}

/// 16 random hex digits (getrandom; the clock and pid where that fails).
fn random_name() -> String {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom fills in the buffer it is given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let value = if n == bytes.len() as isize {
        u64::from_ne_bytes(bytes)
    } else {
        monotonic_ns().rotate_left(17) ^ u64::from(std::process::id()) ^ (&bytes as *const _ as u64)
    };
    format!("{value:016x}")
}

/// Creates the raw directory: a fresh random name in `raw_base`, made by mkdir (which fails
/// rather than use anything already there: a directory, a file, a link), mode 0700 whatever
/// the umask, checked afterwards to be a directory owned by lineup's effective user. The
/// runtime opens its files under it and checks the same owner and mode.
fn raw_dir() -> Result<TempDir> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let base = raw_base()?;
    for _ in 0..32 {
        let path = base.join(format!("lineup-record-{}", random_name()));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!("{}: cannot create: {e}", path.display()),
        }
        let dir = TempDir(path);
        let c = std::ffi::CString::new(dir.0.as_os_str().as_encoded_bytes())
            .map_err(|_| anyhow!("{}: not a usable path", dir.0.display()))?;
        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            bail!(
                "{}: cannot open what lineup just created: {}",
                dir.0.display(),
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: the File owns and closes the descriptor.
        let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        // The umask may have taken the owner's bits too (umask 0277).
        // SAFETY: fchmod on our open descriptor.
        unsafe { libc::fchmod(fd, 0o700) };
        let meta = file.metadata()?;
        // SAFETY: geteuid has no preconditions.
        if !meta.is_dir()
            || meta.uid() != unsafe { libc::geteuid() }
            || meta.mode() & 0o7777 != 0o700
        {
            bail!(
                "{}: not the private directory lineup created (owner {}, mode {:o})",
                dir.0.display(),
                meta.uid(),
                meta.mode() & 0o7777
            );
        }
        return Ok(dir);
    }
    bail!(
        "{}: cannot find a free name for lineup's directory",
        base.display()
    )
}

/// A word as a shell reads it back: quoted when it holds anything but plain characters.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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
        // For `stop`, which clears it before its line.
        if let Ok(mut spinner) = SPINNER.lock() {
            *spinner = Some(bar.clone());
        }
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
    /// Its user CPU time in seconds (`--keep-raw` keeps it in [`USER_TIME_FILE`]).
    program_user: Option<f64>,
    /// The program as the messages name it.
    shown: String,
    /// The runtime's files, removed when done.
    _dir: Option<TempDir>,
}

/// The file `--keep-raw` writes the program's user CPU time into, in seconds.
const USER_TIME_FILE: &str = "user_seconds";

/// The program's user CPU time kept beside the runtime's files, if it was (read as every
/// text input is, within `input`'s bounds).
fn kept_user_time(raw: &Path) -> Result<Option<f64>> {
    let path = raw.join(USER_TIME_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let text = lineup::input::read_text_lossy(&path)?;
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(Some(s)),
        _ => bail!(
            "{}: not a CPU time in seconds: {:?}",
            path.display(),
            text.chars().take(40).collect::<String>()
        ),
    }
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
        program_user: kept_user_time(raw)?,
        _dir: None,
    })
}

/// `lineup record --from-raw DIR -o OUT` with the options that shape the profile, as a
/// shell reads it back.
fn resume_command(args: &RecordArgs, dir: &Path) -> String {
    let mut words = vec![
        "lineup record --from-raw".to_string(),
        shell_word(&dir.to_string_lossy()),
        "-o".into(),
        shell_word(&args.output.to_string_lossy()),
    ];
    for t in &args.types {
        words.push(format!("--heap-type {}", shell_word(t)));
    }
    for w in &args.alloc_wrappers {
        words.push(format!("--alloc-wrapper {}", shell_word(w)));
    }
    if let Some(n) = args.line_size {
        words.push(format!("--cacheline-size {n}"));
    }
    if args.adjacent_line {
        words.push("--adjacent-line".into());
    }
    words.join(" ")
}

/// An error after the program ran: the raw directory is kept (a recording cannot be
/// repeated) and the error says where, and how to build the profile from it.
fn kept(e: anyhow::Error, dir: TempDir, args: &RecordArgs) -> anyhow::Error {
    let path = dir.keep();
    anyhow!(
        "{e:#}; the recording is kept in {}, to build the profile: {}",
        path.display(),
        resume_command(args, &path)
    )
}

/// Runs the program under the runtime and reads what it wrote.
fn run_program(args: &RecordArgs, line_size: u64) -> Result<Ran> {
    let program = PathBuf::from(&args.command[0]);
    let shown = program.display().to_string();
    let path = resolve_program(&program).ok_or_else(|| anyhow!("{shown}: not found in PATH"))?;
    check_program(&shown, &path, &args.types, &args.alloc_wrappers)?;
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!(
            "lineup: program checked ({} MiB peak so far)",
            own_peak_rss() >> 20
        );
    }
    // Before the raw directory exists: a signal from here on is passed on to the program
    // once it runs (it cannot end lineup between creating the directory and removing it).
    handle_signals(BEFORE)?;
    let dir = raw_dir()?;
    if let Ok(mut note) = STOP_NOTE.lock() {
        *note = Some(format!(
            "stopped, no profile written; the recording is kept in {}, to build the profile: {}",
            dir.0.display(),
            resume_command(args, &dir.0)
        ));
    }

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
    let parent = std::process::id() as libc::pid_t;
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: close(2), prctl(2), getppid(2) and kill(2) are async-signal-safe, as
        // pre_exec requires.
        unsafe {
            cmd.pre_exec(move || {
                for fd in 0..3 {
                    if closed & (1 << fd) != 0 {
                        libc::close(fd);
                    }
                }
                // The program ends with lineup, however lineup ends (SIGKILL included):
                // otherwise it runs on, orphaned, with nobody to read what it records.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // lineup died before that was set: do now what it would have done.
                if libc::getppid() != parent {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                Ok(())
            });
        }
    }
    let sentinel = Sentinel::start();
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow!("{shown}: cannot run: {e}"))?;
    {
        let mut held = CHILD.lock().unwrap_or_else(|e| e.into_inner());
        *held = child.id() as i32;
        // Signals that came while it was being started are passed on now.
        STATE.store(RUNNING, Ordering::SeqCst);
    }
    let (status, program_rss, program_user) =
        wait_child(&mut child).map_err(|e| anyhow!("{shown}: lost track of the program: {e}"))?;
    drop(sentinel);
    let code = exit_code(&status);
    if std::env::var_os("LINEUP_TIMING").is_some() {
        eprintln!(
            "lineup: program ended ({} MiB peak so far)",
            own_peak_rss() >> 20
        );
    }

    let processes = match record::trace::read_dir(&dir.0) {
        Ok(p) => p,
        Err(e) => return Err(kept(anyhow!(e), dir, args)),
    };
    if processes.is_empty() {
        bail!(
            "{shown}: the recording runtime wrote nothing (the program exited with status {code} before it started, or it runs another program)"
        );
    }
    if let Some(keep) = &args.keep_raw {
        let copied = (|| -> Result<()> {
            std::fs::create_dir_all(keep)
                .with_context(|| format!("{}: cannot create", keep.display()))?;
            for e in std::fs::read_dir(&dir.0)?.flatten() {
                std::fs::copy(e.path(), keep.join(e.file_name()))
                    .with_context(|| format!("{}: cannot write", keep.display()))?;
            }
            // The program's user CPU time, which the run's floor for a finding uses: kept so that
            // `--from-raw` judges as the recording did.
            std::fs::write(keep.join(USER_TIME_FILE), format!("{program_user}\n"))
                .with_context(|| format!("{}: cannot write", keep.display()))?;
            Ok(())
        })();
        if let Err(e) = copied {
            return Err(kept(e, dir, args));
        }
    }
    Ok(Ran {
        processes,
        status: Some(status),
        code,
        program_rss: Some(program_rss),
        program_user: Some(program_user),
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
            if let Ok(mut note) = STOP_NOTE.lock() {
                *note = Some(format!(
                    "stopped, no profile written ({} is left as it was)",
                    raw.display()
                ));
            }
            handle_signals(PROCESSING)?;
            from_raw(raw)?
        }
        None => run_program(&args, line_size)?,
    };
    let Ran {
        processes,
        status,
        code,
        program_rss,
        program_user,
        shown,
        mut _dir,
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
    let built = record::build(&processes, &opts, &mut |s| progress.step(s));
    progress.finish();
    let mut built = match (built, _dir) {
        (Ok(b), dir) => {
            _dir = dir;
            b
        }
        (Err(e), Some(dir)) => return Err(kept(anyhow!(e), dir, &args)),
        (Err(e), None) => return Err(e.into()),
    };
    drop(processes);
    let recorder_rss = own_peak_rss();
    if let Some(sum) = built.profile.summary.get_mut("record") {
        if let Some(rss) = program_rss {
            sum.insert("peak_rss_program".into(), rss as f64);
        }
        if let Some(user) = program_user {
            sum.insert("user_seconds".into(), user);
        }
        sum.insert("peak_rss_recorder".into(), recorder_rss as f64);
        sum.insert("memory_budget".into(), args.memory as f64);
    }
    // A signal from here on lets a file be finished (a moment); to a pipe, it stops lineup.
    if !start_writing(output.is_replaced_file()) {
        wait_for_stop();
    }
    if let Err(e) = output.write_streamed(|w| built.profile.write_json(w)) {
        return Err(match _dir {
            Some(dir) => kept(e, dir, &args),
            None => e,
        });
    }
    if !finish_writing() {
        wait_for_stop();
    }
    tell(&args, &built, &shown, recorder_rss, status);
    Ok(code)
}

/// What lineup says on standard error after the profile is written: the memory budget's
/// step, sampling, bursts, the build's warnings, its own memory, the program's signal.
fn tell(
    args: &RecordArgs,
    built: &record::Built,
    shown: &str,
    recorder_rss: u64,
    status: Option<std::process::ExitStatus>,
) {
    if built.budget_level > 0 {
        // The runtime steps at 1/64, 1/16, 1/8 and 1/4 of the budget (runtime/lineup_rt.c,
        // budget_level): say which step, in bytes, not just "the budget".
        let (step, share) = match built.budget_level {
            1 => ("first", 64),
            2 => ("second", 16),
            3 => ("third", 8),
            _ => ("last", 4),
        };
        let what = lineup::record::budget_step(built.budget_level);
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
    for w in &built.warnings {
        eprintln!("lineup: {shown}: {w}");
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
                if args.output.as_os_str() == "-" {
                    "standard output".to_string()
                } else {
                    args.output.display().to_string()
                }
            );
        }
    }
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
