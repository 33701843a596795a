//! The record torture suite (issue 23): programs that do what real programs do to their own
//! process (signal handlers on instrumented data, `pthread_exit` from `main`, seccomp,
//! SIGTRAP of their own, W^X, stacks of their own, daemons, `_exit`, `exec`) and what users
//! and tools do to lineup (`kill -9`, SIGTERM while it post-processes, `timeout`). Each class
//! runs under the default mode (bursts: the runtime rewrites the program's hook call sites
//! from a thread of its own) and under `--sample 1` (every access, no rewriting), and checks
//! the program's stdout and exit status against a plain run and the profile's access count
//! (`summary.record.accesses`) against an exact expectation, or a stated bound where none
//! can be exact. Each program in `tests/data/record/torture/` says in its header what it
//! exercises, what a correct run prints and returns, and how many accesses it makes.
//!
//! Every run is bounded (`HANG`): a program or a lineup that does not end is killed with its
//! process group and the test fails with "hang", instead of stalling CI. The classes that
//! hung or crashed one run in a few (1, 2, 4) run 20 times in the default mode (1 and 2
//! under `--sample 1` too). Nothing
//! depends on timing but those bounds: programs that run for a time report how many
//! iterations they made (on stderr), and the exact count is computed from that.
//!
//! Needs a C compiler; x86-64 Linux (seccomp filters, raw signal syscalls and the rewriting
//! itself are x86-64 here).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A run that has not ended after this long hangs.
const HANG: Duration = Duration::from_secs(30);

/// Runs of the classes that hung or crashed now and then.
const REPEAT: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// No `--sample`: bursts, the runtime rewriting hook calls under the running program.
    Default,
    /// `--sample 1`: every access recorded, no rewriting.
    Every,
}

const MODES: [Mode; 2] = [Mode::Default, Mode::Every];

impl Mode {
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Default => &[],
            Mode::Every => &["--sample", "1"],
        }
    }
}

fn root() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-torture");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("tmp")).unwrap();
        d
    })
}

/// A fresh directory of the test's own, with `tmp/` in it for lineup's TMPDIR.
fn scratch(name: &str) -> PathBuf {
    let d = root().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("tmp")).unwrap();
    d
}

/// lineup, with a runtime cache of the suite's own and TMPDIR `dir/tmp`.
fn lineup(dir: &Path) -> Command {
    in_dir(Command::new(env!("CARGO_BIN_EXE_lineup")), dir)
}

/// `cmd` run in `dir`, with lineup's settings (for lineup itself or a command that runs it).
fn in_dir(mut cmd: Command, dir: &Path) -> Command {
    cmd.env("LINEUP_CACHE_DIR", root().join("cache"))
        .env("TMPDIR", dir.join("tmp"))
        .current_dir(dir);
    cmd
}

/// `tests/data/record/torture/NAME.c` (or, for a generated program, `src`) built with
/// `lineup cc OPT -pthread`, once per test binary.
fn build(name: &str, src: Option<&Path>, opt: &str) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, Arc<OnceLock<PathBuf>>>>> = Mutex::new(None);
    let cell = BUILT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(name.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let src = src
            .map(Path::to_path_buf)
            .unwrap_or_else(|| common::repo().join(format!("tests/data/record/torture/{name}.c")));
        let out = root().join("bin").join(name);
        let o = lineup(root())
            .args(["cc", opt, "-pthread", "-Wall"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "lineup cc {}: {}",
            src.display(),
            text(&o.stderr)
        );
        out
    })
    .clone()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// How a bounded run ended.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// A process started in a process group of its own, its streams in files `dir/TAG.out` and
/// `dir/TAG.err` (not pipes: a daemonised grandchild keeping a pipe open must not keep the
/// test reading), killed with its group if the test panics before it ended.
struct Spawned {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    what: String,
    done: bool,
}

fn spawn(mut cmd: Command, dir: &Path, tag: &str) -> Spawned {
    let (out, err) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.err")),
    );
    let what = format!("{tag}: {cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    Spawned {
        child,
        out,
        err,
        what,
        done: false,
    }
}

impl Spawned {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for the end, `limit` at most; past it the group is killed and the test fails.
    fn wait_for(mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                self.kill_group();
                let err = std::fs::read(&self.err).unwrap_or_default();
                panic!(
                    "hang: {} did not end within {limit:?}; its stderr: {}",
                    self.what,
                    text(&err)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.done = true;
        Run {
            status,
            stdout: text(&std::fs::read(&self.out).unwrap()),
            stderr: text(&std::fs::read(&self.err).unwrap()),
        }
    }

    fn wait(self) -> Run {
        self.wait_for(HANG)
    }

    fn kill_group(&mut self) {
        // SAFETY: signals the process group this test started (its leader's pid).
        unsafe { libc::kill(-self.pid(), libc::SIGKILL) };
        let _ = self.child.wait();
        self.done = true;
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if !self.done {
            self.kill_group();
        }
    }
}

/// The program alone, bounded.
fn plain(dir: &Path, tag: &str, prog: &Path, args: &[&str]) -> Run {
    let mut c = Command::new(prog);
    c.args(args).current_dir(dir);
    spawn(c, dir, tag).wait()
}

/// `lineup record MODE -o dir/TAG.json -- PROG ARGS`, started (an earlier run's profile
/// removed first).
fn start_record(dir: &Path, mode: Mode, tag: &str, prog: &Path, args: &[&str]) -> Spawned {
    start_record_with(dir, mode, tag, prog, args, &[])
}

/// [`start_record`] with these variables in lineup's environment (and so the program's).
fn start_record_with(
    dir: &Path,
    mode: Mode,
    tag: &str,
    prog: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Spawned {
    let out = dir.join(format!("{tag}.json"));
    let _ = std::fs::remove_file(&out);
    let mut c = lineup(dir);
    c.envs(env.iter().copied());
    c.arg("record")
        .args(mode.args())
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(prog)
        .args(args);
    spawn(c, dir, tag)
}

/// `lineup record` run to its end (bounded), and the profile it wrote, if any.
fn record(dir: &Path, mode: Mode, tag: &str, prog: &Path, args: &[&str]) -> (Run, Option<Value>) {
    record_with(dir, mode, tag, prog, args, &[])
}

/// [`record`] with these variables in lineup's environment.
fn record_with(
    dir: &Path,
    mode: Mode,
    tag: &str,
    prog: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Run, Option<Value>) {
    let run = start_record_with(dir, mode, tag, prog, args, env).wait();
    (run, profile(&dir.join(format!("{tag}.json"))))
}

fn profile(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The profile's access count.
fn accesses(p: &Value) -> u64 {
    p["summary"]["record"]["accesses"]
        .as_f64()
        .unwrap_or_else(|| panic!("no summary.record.accesses: {}", p["summary"])) as u64
}

fn partial(p: &Value) -> bool {
    p["summary"]["record"]["partial"] != 0.0 || p["provenance"]["settings"]["partial"] == "true"
}

/// The recorded run behaved as the plain one (stdout, exit status), and lineup wrote a
/// profile: returned.
fn same_as_plain(ctx: &str, run: &Run, p: Option<Value>, plain: &Run) -> Value {
    assert_eq!(run.status.signal(), None, "{ctx}: crash: {}", run.stderr);
    assert_eq!(
        run.stdout, plain.stdout,
        "{ctx}: stdout; stderr: {}",
        run.stderr
    );
    assert_eq!(
        run.code(),
        plain.code(),
        "{ctx}: exit status; stderr: {}",
        run.stderr
    );
    p.unwrap_or_else(|| panic!("{ctx}: no profile written; stderr: {}", run.stderr))
}

fn exact(ctx: &str, p: &Value, want: u64, run: &Run) {
    assert_eq!(
        accesses(p),
        want,
        "{ctx}: wrong access count (want exactly {want}); {}; stderr: {}",
        p["summary"]["record"],
        run.stderr
    );
}

/// The numbers on the first line of `stderr` that starts with `key` (a program's report of
/// how many iterations it made: they depend on time, the count on them).
fn reported(stderr: &str, key: &str) -> Vec<u64> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` line in the program's stderr: {stderr}"));
    line.split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// Whether `pid` runs: it exists and is not a zombie (one that has ended; its parent has not
/// reaped it yet).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z'))
}

/// Waits up to `limit` for `pid` to end (or become a zombie).
fn ended_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while running(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The processes still running in process group `pgid`.
fn group_members(pgid: i32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|s| {
            let rest = s.rsplit_once(')').map(|r| r.1).unwrap_or("");
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
        })
        .collect()
}

/// Kills a process the test did not start directly (a daemonised child, an orphaned
/// program; a negative pid: a process group) when the test ends, whatever happened.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0 < 0 || running(self.0) {
            // SAFETY: a process (group) of this test's program or lineup.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// Waits (bounded) for a file a program writes (through a rename) and reads it.
fn wait_file(path: &Path, spawned: &mut Spawned) -> String {
    let deadline = Instant::now() + HANG;
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            return s;
        }
        if let Some(s) = spawned.child.try_wait().unwrap() {
            spawned.done = true;
            panic!(
                "{} ended ({s}) before writing {}: {}",
                spawned.what,
                path.display(),
                text(&std::fs::read(&spawned.err).unwrap_or_default())
            );
        }
        if Instant::now() > deadline {
            panic!("hang: {} never wrote {}", spawned.what, path.display());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

// ---- 1. A signal handler on instrumented data while 20,000 sites register -------------

const SITES: u64 = 20_000;

/// 20,000 functions, each one call site (`g[i % 64]++`, at -O0 a load and a store), called
/// through a constant table, round after round until MS milliseconds have passed, each
/// round also storing to the next 8192 longs of a 64K array (new places: more than a
/// thread's table holds, so the main thread writes its table out every round or so until
/// the memory budget's first step), with SIGALRM every 50 us whose handler does `ticks++`
/// (instrumented too: it runs inside the runtime's hooks and buffer writes). Prints "sites
/// sum ok"; stderr "rounds R ticks T". Accesses: exactly (2 * 20000 + 8192) * R + 2T + 66
/// (main: a load of `ticks`, 64 of `g`, one of `stderr`). More sites than the runtime
/// patches (16384): the rest stay calls. The timer starts before main's first
/// instrumented access (`argv[1]`, on the stack), so the handler also interrupts the
/// runtime making the thread's state (whose accesses went uncounted until the runtime held
/// signals meanwhile: 2 to 6 short in every run).
fn sites_source() -> String {
    let mut s = String::from(
        "/* Record torture, class 1 (generated by tests/record_torture.rs). */\n\
         #include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <sys/time.h>\n\
         #include <time.h>\n\
         static volatile long g[64];\nstatic volatile long ticks;\n\
         static volatile long big[1 << 16];\n\
         static void on_alarm(int sig) { (void)sig; ticks++; }\n",
    );
    for i in 0..SITES {
        writeln!(s, "static void f{i}(void) {{ g[{}]++; }}", i % 64).unwrap();
    }
    s.push_str("static void (*const table[])(void) = {\n");
    for i in 0..SITES {
        write!(s, "f{i},{}", if i % 16 == 15 { "\n" } else { " " }).unwrap();
    }
    s.push_str(
        r#"};
#define N ((long)(sizeof table / sizeof table[0]))
int main(int argc, char **argv) {
    struct sigaction sa;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it;
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = 50;
    it.it_value.tv_sec = 0;
    it.it_value.tv_usec = 50;
    setitimer(ITIMER_REAL, &it, NULL);
    long ms = argc > 1 ? atol(argv[1]) : 200;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long rounds = 0;
    do {
        for (long i = 0; i < N; i++)
            table[i]();
        for (long k = 0; k < 8192; k++)
            big[(rounds * 8192 + k) & 65535] = k;
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    it.it_value.tv_usec = 0;
    it.it_interval.tv_usec = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    long t = ticks;
    long sum = 0;
    for (int k = 0; k < 64; k++)
        sum += g[k];
    printf("sites sum %s\n", sum == rounds * N ? "ok" : "WRONG");
    fprintf(stderr, "rounds %ld ticks %ld\n", rounds, t);
    return 0;
}
"#,
    );
    s
}

#[test]
fn a_signal_handler_on_instrumented_data_while_20000_sites_register() {
    let dir = scratch("sites");
    let src = dir.join("sites.c");
    std::fs::write(&src, sites_source()).unwrap();
    let prog = build("sites", Some(&src), "-O0");
    let base = plain(&dir, "plain", &prog, &["100"]);
    assert_eq!(base.stdout, "sites sum ok\n");
    // Short runs, and one past the runtime's first periodic flush (1 s into the run), which
    // the handler interrupts too; the short runs ask for a flush every 2 ms (as often as the
    // runtime's thread wakes: every window in bursts, every 100 ms otherwise), so that
    // the handler often meets one while it interrupts the hooks' fast path, whose counter
    // a flush must not clear under it (rec_slow).
    for mode in MODES {
        for (i, ms) in std::iter::repeat_n("200", REPEAT)
            .chain(["1500"])
            .enumerate()
        {
            let ctx = format!("{mode:?} run {i} ({ms} ms)");
            let flush: &[(&str, &str)] = if ms == "200" {
                &[("LINEUP_FLUSH_US", "2000")]
            } else {
                &[]
            };
            let (run, p) = record_with(&dir, mode, "r", &prog, &[ms], flush);
            let p = same_as_plain(&ctx, &run, p, &base);
            let [rounds, ticks] = reported(&run.stderr, "rounds ")[..] else {
                panic!("{ctx}: {}", run.stderr)
            };
            // Exact, or short by the handler's updates (a load and a store each) that its
            // thread could not keep while it wrote its buffers out, and said so.
            let dropped = p["summary"]["record"]["dropped"].as_f64().unwrap() as u64;
            exact(
                &ctx,
                &p,
                (2 * SITES + 8192) * rounds + 2 * ticks + 66 - 2 * dropped,
                &run,
            );
            assert!(
                dropped == 0
                    || run.stderr.contains(&format!(
                        "{dropped} accesses made by signal handlers while their thread was writing"
                    )),
                "{ctx}: {dropped} dropped, not said: {}",
                run.stderr
            );
        }
    }
}

// ---- 2. pthread_exit from main -------------------------------------------------------

#[test]
fn pthread_exit_from_main_ends_the_process() {
    let dir = scratch("pthread_exit");
    let prog = build("pthread_exit", None, "-O1");
    let n: u64 = 20_000_000;
    let arg = n.to_string();
    let base = plain(&dir, "plain", &prog, &[&arg]);
    assert_eq!(base.stdout, format!("worker sum {}\n", 2 * n));
    assert_eq!(base.code(), Some(0));
    for mode in MODES {
        for i in 0..REPEAT {
            let ctx = format!("{mode:?} run {i}");
            let (run, p) = record(&dir, mode, "r", &prog, &[&arg]);
            let p = same_as_plain(&ctx, &run, p, &base);
            exact(&ctx, &p, 2 * n + 1, &run);
        }
    }
}

/// Threads that end with a bare SYS_exit, main last with status 5: the process ends with
/// main's status, and what the threads recorded (never flushed by a thread exit of glibc's)
/// is all in the profile.
#[test]
fn threads_ending_with_a_bare_sys_exit_end_the_process_with_mains_status() {
    let dir = scratch("raw_exit");
    let prog = build("raw_exit", None, "-O1");
    let n: u64 = 2_000_000;
    let arg = n.to_string();
    let base = plain(&dir, "plain", &prog, &[&arg]);
    assert_eq!(base.stdout, format!("raw exit {}\n", 2 * n));
    assert_eq!(base.code(), Some(5));
    for mode in MODES {
        for i in 0..3 {
            let ctx = format!("{mode:?} run {i}");
            let (run, p) = record(&dir, mode, "r", &prog, &[&arg]);
            let p = same_as_plain(&ctx, &run, p, &base);
            exact(&ctx, &p, 4 * n + 2, &run);
            assert!(!partial(&p), "{ctx}: {}", run.stderr);
        }
    }
}

// ---- 3. seccomp ----------------------------------------------------------------------

/// A line of lineup's on stderr saying that accesses were lost.
fn says_lost(stderr: &str) -> bool {
    stderr.lines().any(|l| {
        l.starts_with("lineup:")
            && [
                "lost",
                "missing",
                "not recorded",
                "partial",
                "not after",
                "could not be written",
            ]
            .iter()
            .any(|w| l.contains(w))
    })
}

/// Output and status as plain, and the count exact, or short of it with lineup saying so
/// on stderr: never a silent loss (nor a count over the exact one).
fn seccomp_case(how: &str, n: u64, want: u64) {
    let dir = scratch(&format!("seccomp-{how}"));
    let prog = build("seccomp", None, "-O1");
    let arg = n.to_string();
    let base = plain(&dir, "plain", &prog, &[how, &arg]);
    assert_eq!(base.code(), Some(0), "plain: {}", base.stderr);
    assert!(
        base.stdout
            .contains(&format!("sum {}", if how == "strict" { n } else { 3 * n }))
    );
    for mode in MODES {
        let ctx = format!("seccomp {how}, {mode:?}");
        let (run, p) = record(&dir, mode, "r", &prog, &[how, &arg]);
        let p = same_as_plain(&ctx, &run, p, &base);
        let got = accesses(&p);
        assert!(
            got == want || (got < want && says_lost(&run.stderr)),
            "{ctx}: {got} accesses, want exactly {want}, or fewer and lineup saying on stderr \
             that accesses were lost (silent loss); {}; stderr: {}",
            p["summary"]["record"],
            run.stderr
        );
    }
}

#[test]
fn seccomp_strict_mode_exits_as_without_lineup() {
    // 2N + 24: the work and the sum, all before entering strict mode.
    seccomp_case("strict", 100_000, 2 * 100_000 + 24);
}

#[test]
fn a_seccomp_filter_denying_open_loses_nothing_silently() {
    // 6N + 25: main's and two workers' work, the sum, and main's load of errno.
    seccomp_case("filter", 100_000, 6 * 100_000 + 25);
}

// ---- 4. SIGTRAP owned by the program ------------------------------------------------

/// The program's handler counts the program's own SIGTRAPs (2 in these modes).
fn sigtrap_case(how: &str, traps: u64) {
    let dir = scratch(&format!("sigtrap-{how}"));
    let prog = build("sigtrap", None, "-O1");
    let base = plain(&dir, "plain", &prog, &[how, "100"]);
    assert_eq!(base.stdout, format!("{how} sum ok traps {traps}\n"));
    assert_eq!(base.code(), Some(0));
    // The default mode switches windows every 1 ms of 20 after a 100 ms warm-up: half a
    // second is about 40 rewrites of every site under the two running workers. Under
    // --sample 1 nothing is rewritten: fewer, shorter runs.
    for (mode, runs, ms) in [(Mode::Default, REPEAT, "500"), (Mode::Every, 3, "100")] {
        for i in 0..runs {
            let ctx = format!("sigtrap {how}, {mode:?} run {i}");
            let (run, p) = record(&dir, mode, "r", &prog, &[how, ms]);
            let p = same_as_plain(&ctx, &run, p, &base);
            let n: u64 = reported(&run.stderr, "iterations ").iter().sum();
            exact(&ctx, &p, 3 * n + 11 + 2 * traps, &run);
        }
    }
}

#[test]
fn sigtrap_handler_set_with_signal() {
    sigtrap_case("signal", 2);
}

#[test]
fn sigtrap_ignored_with_signal() {
    sigtrap_case("ignore", 0);
}

#[test]
fn sigtrap_handler_set_with_a_raw_rt_sigaction() {
    sigtrap_case("raw", 2);
}

#[test]
fn sigtrap_blocked_with_a_raw_rt_sigprocmask_in_workers() {
    sigtrap_case("rawmask", 0);
}

// ---- 5. W^X --------------------------------------------------------------------------

#[test]
fn text_protected_back_to_read_execute_does_not_crash() {
    let dir = scratch("wx");
    let prog = build("wx", None, "-O1");
    let base = plain(&dir, "plain", &prog, &["100"]);
    assert_eq!(base.stdout, "wx sum ok\n");
    for (mode, ms) in [(Mode::Default, "500"), (Mode::Every, "200")] {
        let ctx = format!("wx, {mode:?}");
        let (run, p) = record(&dir, mode, "r", &prog, &[ms]);
        let p = same_as_plain(&ctx, &run, p, &base);
        assert!(accesses(&p) > 0, "{ctx}: empty profile");
        let n: u64 = reported(&run.stderr, "iterations ").iter().sum();
        exact(&ctx, &p, 3 * n + 13, &run);
    }
}

// ---- 6. Stacks the program provides ---------------------------------------------------

#[test]
fn threads_on_stacks_in_bss_and_on_the_heap_are_counted_exactly() {
    let dir = scratch("own_stacks");
    let prog = build("own_stacks", None, "-O1");
    for how in ["own", "default"] {
        let base = plain(&dir, "plain", &prog, &[how]);
        assert_eq!(base.stdout, "stacks sum 51193728\n");
        for mode in MODES {
            let ctx = format!("{how} stacks, {mode:?}");
            let (run, p) = record(&dir, mode, "r", &prog, &[how]);
            let p = same_as_plain(&ctx, &run, p, &base);
            // 3 stores per iteration per thread (.data, .bss, its heap block), N = 200000,
            // and main's 4 x 64 loads.
            exact(&ctx, &p, 6 * 200_000 + 256, &run);
        }
    }
}

// ---- 7. A daemonised child outliving lineup -------------------------------------------

#[test]
fn a_daemonised_child_never_writes_through_a_planted_symlink() {
    let prog = build("daemon", None, "-O1");
    for mode in MODES {
        let dir = scratch(&format!("daemon-{mode:?}"));
        let (info, go) = (dir.join("info"), dir.join("go"));
        std::fs::write(&go, "").unwrap();
        let base = plain(
            &dir,
            "plain",
            &prog,
            &[info.to_str().unwrap(), go.to_str().unwrap()],
        );
        assert_eq!(base.stdout, "parent done\n");
        let plain_child: i32 = std::fs::read_to_string(&info)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            ended_within(plain_child, HANG),
            "the plain run's child did not end"
        );
        std::fs::remove_file(&go).unwrap();
        std::fs::remove_file(&info).unwrap();

        let ctx = format!("daemon, {mode:?}");
        let args = [info.to_str().unwrap(), go.to_str().unwrap()];
        let (run, p) = record(&dir, mode, "r", &prog, &args);
        // The child is still waiting for `go` here; it is killed if the test fails.
        let said = std::fs::read_to_string(&info).unwrap();
        let mut lines = said.lines();
        let child: i32 = lines.next().unwrap().parse().unwrap();
        let _cleanup = KillOnDrop(child);
        let raw = PathBuf::from(lines.next().unwrap_or(""));
        let p = same_as_plain(&ctx, &run, p, &base);
        // The parent's accesses; the child has made none yet.
        exact(&ctx, &p, 2 * 100_000 + 1, &run);
        assert!(raw.is_absolute(), "{ctx}: the child's LINEUP_OUT: {said:?}");
        assert!(!raw.exists(), "{ctx}: lineup left {}", raw.display());
        // Someone recreates lineup's directory and plants symlinks where the child's
        // recording would go, to a file of the test's.
        let victim = dir.join("victim");
        std::fs::write(&victim, "ORIGINAL").unwrap();
        std::fs::create_dir_all(&raw).unwrap();
        let planted: Vec<String> = [
            format!("rt.{child}.bin"),
            format!("rt.{child}.0.bin"),
            format!("rt.{child}.1.bin"),
        ]
        .into();
        for name in &planted {
            std::os::unix::fs::symlink(&victim, raw.join(name)).unwrap();
        }
        std::fs::write(&go, "").unwrap();
        assert!(
            ended_within(child, HANG),
            "hang: {ctx}: the child did not end"
        );
        let now = std::fs::read(&victim).unwrap();
        assert!(
            now == b"ORIGINAL",
            "{ctx}: the child wrote through a symlink planted in {}: the file is now {} bytes, \
             starting {:?}",
            raw.display(),
            now.len(),
            text(&now[..now.len().min(16)])
        );
        let mut left: Vec<String> = std::fs::read_dir(&raw)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = planted.clone();
        want.sort();
        assert_eq!(
            left,
            want,
            "{ctx}: the child wrote into the recreated {}",
            raw.display()
        );
    }
}

// ---- 8. fork + _exit, fork + exec ---------------------------------------------------

fn forks_case(how: &str, want: u64) {
    let dir = scratch(&format!("forks-{how}"));
    let prog = build("forks", None, "-O1");
    let base = plain(&dir, "plain", &prog, &[how]);
    assert_eq!(
        base.stdout,
        format!(
            "forks {how}: child status {}\n",
            if how == "exit" { 7 } else { 0 }
        )
    );
    for mode in MODES {
        let ctx = format!("forks {how}, {mode:?}");
        let (run, p) = record(&dir, mode, "r", &prog, &[how]);
        let p = same_as_plain(&ctx, &run, p, &base);
        assert!(
            !partial(&p),
            "{ctx}: the profile is marked partial: {}; {}",
            p["provenance"]["note"],
            p["summary"]["record"]
        );
        exact(&ctx, &p, want, &run);
    }
}

#[test]
fn a_child_ending_with_exit_underscore_leaves_a_complete_profile() {
    // The parent's 200002 and the child's 2000.
    forks_case("exit", 200_002 + 2_000);
}

#[test]
fn a_child_execing_an_uninstrumented_program_leaves_a_complete_profile() {
    forks_case("exec", 200_002);
}

// ---- 9. kill -9 ------------------------------------------------------------------------

/// What a SIGKILLed program had flushed: its first pass stores to 1M distinct places, of
/// which the runtime has written at least this many by the time it says its pid (its table
/// of places is written out every 24K or so, until the memory budget's first step, 8 MiB
/// of counts, about 262K places).
const FLUSHED_BEFORE_KILL: u64 = 200_000;

#[test]
fn kill_9_of_the_program_leaves_a_partial_profile_with_what_was_flushed() {
    let prog = build("killed", None, "-O1");
    for mode in MODES {
        let ctx = format!("kill -9 of the program, {mode:?}");
        let dir = scratch(&format!("killed-{mode:?}"));
        let pidfile = dir.join("pid");
        let mut lu = start_record(&dir, mode, "r", &prog, &[pidfile.to_str().unwrap()]);
        let pid: i32 = wait_file(&pidfile, &mut lu).trim().parse().unwrap();
        let _cleanup = KillOnDrop(pid);
        std::thread::sleep(Duration::from_secs(1));
        // SAFETY: the recorded program, which said its pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let run = lu.wait();
        assert_eq!(
            run.code(),
            Some(128 + libc::SIGKILL),
            "{ctx}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("SIGKILL"),
            "{ctx}: lineup did not report the kill: {}",
            run.stderr
        );
        let p = profile(&dir.join("r.json"))
            .unwrap_or_else(|| panic!("{ctx}: no profile; stderr: {}", run.stderr));
        assert!(
            partial(&p),
            "{ctx}: not marked partial: {}",
            p["summary"]["record"]
        );
        assert!(
            accesses(&p) >= FLUSHED_BEFORE_KILL,
            "{ctx}: {} accesses, want at least {FLUSHED_BEFORE_KILL}: {}",
            accesses(&p),
            p["summary"]["record"]
        );
    }
}

#[test]
fn kill_9_of_lineup_does_not_leave_the_program_running() {
    let prog = build("killed", None, "-O1");
    for mode in MODES {
        let ctx = format!("kill -9 of lineup, {mode:?}");
        let dir = scratch(&format!("orphan-{mode:?}"));
        let pidfile = dir.join("pid");
        let mut lu = start_record(&dir, mode, "r", &prog, &[pidfile.to_str().unwrap()]);
        let pid: i32 = wait_file(&pidfile, &mut lu).trim().parse().unwrap();
        let _cleanup = KillOnDrop(pid);
        let group = lu.pid();
        let _group_cleanup = KillOnDrop(-group);
        // SAFETY: the lineup process this test started (only it, not its group).
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = lu.child.wait();
        lu.done = true;
        assert!(
            ended_within(pid, Duration::from_secs(5)),
            "{ctx}: the program (pid {pid}) still runs 5 s after lineup was killed"
        );
        // Nor anything else of lineup's (it ran in a process group of its own).
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_members(group).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            group_members(group),
            Vec::<String>::new(),
            "{ctx}: left running"
        );
    }
}

// ---- 10. SIGTERM to lineup while it post-processes ----------------------------------

#[test]
fn sigterm_during_post_processing_loses_nothing_silently() {
    let prog = build("heavy", None, "-O1");
    // Two threads store over 2^21 longs twice, main reads them all, and loads `stdout`.
    let want = 2 * (1u64 << 21) + (1 << 21) + 1;
    for mode in MODES {
        let ctx = format!("SIGTERM while post-processing, {mode:?}");
        let dir = scratch(&format!("heavy-{mode:?}"));
        let done = dir.join("done");
        let mut lu = start_record(&dir, mode, "r", &prog, &[done.to_str().unwrap(), "2"]);
        let pid: i32 = wait_file(&done, &mut lu).trim().parse().unwrap();
        let _cleanup = KillOnDrop(pid);
        // The program returned from main; once it has ended (its runtime's last chunks
        // written), lineup is reading and processing them.
        assert!(
            ended_within(pid, HANG),
            "hang: {ctx}: the program did not end"
        );
        // SAFETY: the lineup process this test started.
        unsafe { libc::kill(lu.pid(), libc::SIGTERM) };
        let run = lu.wait_for(HANG * 2);
        assert_eq!(
            run.stdout, "heavy sum 4398044413952\n",
            "{ctx}: {}",
            run.stderr
        );
        if run.status.success() {
            eprintln!("{ctx}: lineup finished before the signal took effect");
            let p =
                profile(&dir.join("r.json")).unwrap_or_else(|| panic!("{ctx}: exit 0, no profile"));
            exact(&ctx, &p, want, &run);
            continue;
        }
        // Stopped: it must say how to resume, from a recording it kept.
        let raw = run
            .stderr
            .split("--from-raw")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(|w| PathBuf::from(w.trim_matches('\'')))
            .unwrap_or_else(|| {
                panic!(
                    "{ctx}: lineup ended with {} and no `lineup record --from-raw DIR` on stderr \
                     (silent loss): {}",
                    run.status, run.stderr
                )
            });
        eprintln!(
            "{ctx}: stopped ({}), resuming from {}",
            run.status,
            raw.display()
        );
        assert!(
            std::fs::read_dir(&raw)
                .map(|d| d
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("rt.")))
                .unwrap_or(false),
            "{ctx}: no recording kept in {}: {}",
            raw.display(),
            run.stderr
        );
        let mut c = lineup(&dir);
        c.arg("record")
            .arg("--from-raw")
            .arg(&raw)
            .arg("-o")
            .arg(dir.join("resumed.json"));
        let resumed = spawn(c, &dir, "resume").wait_for(HANG * 2);
        assert!(
            resumed.status.success(),
            "{ctx}: resuming: {}",
            resumed.stderr
        );
        let p = profile(&dir.join("resumed.json")).expect("resumed profile");
        exact(&ctx, &p, want, &resumed);
    }
}

// ---- 11. timeout 1 lineup record -- ./server ----------------------------------------

#[test]
fn timeout_sends_one_sigterm_to_the_program_as_without_lineup() {
    let dir = scratch("server");
    let prog = build("server", None, "-O1");
    // --foreground: timeout signals the command only. Without it, GNU timeout sends SIGTERM
    // to the command and then to its process group, and whether the program's handler runs
    // once or twice depends on scheduling (the plain run printed "terms 2" 1 time in 4 on a
    // loaded machine). Group signals through lineup are tested in record_cli_safety.
    let mut c = Command::new("timeout");
    c.arg("--foreground").arg("1").arg(&prog).current_dir(&dir);
    let base = spawn(c, &dir, "plain").wait();
    assert_eq!(base.stdout, "terms 1\n", "plain: {}", base.stderr);
    assert_eq!(base.code(), Some(124));
    for mode in MODES {
        for i in 0..3 {
            let ctx = format!("timeout 1 lineup record, {mode:?} run {i}");
            let _ = std::fs::remove_file(dir.join("r.json"));
            let mut c = in_dir(Command::new("timeout"), &dir);
            c.arg("--foreground")
                .arg("1")
                .arg(env!("CARGO_BIN_EXE_lineup"))
                .arg("record")
                .args(mode.args())
                .arg("-o")
                .arg(dir.join("r.json"))
                .arg("--")
                .arg(&prog);
            let run = spawn(c, &dir, "r").wait();
            let p = same_as_plain(&ctx, &run, profile(&dir.join("r.json")), &base);
            // The work, 2 per SIGTERM (one), and the load to print.
            exact(&ctx, &p, 2000 + 2 + 1, &run);
        }
    }
}
