//! Running one benchmark command: `sh -c CMD` in a process group of its own, its output
//! streamed through a bounded buffer, its wall time measured, a timeout, and the terminating
//! signals.
//!
//! Signals: the command runs in its own process group, so the terminal's SIGINT, and the
//! SIGTERM of `timeout` or a service manager, reach only lineup. lineup's handler (SIGINT,
//! SIGTERM, SIGHUP) marks the session interrupted and ends the running command's whole group:
//! SIGTERM, then SIGKILL after [`GRACE`]. That run is not counted; the caller keeps the runs
//! that finished before it and exits with 128 + the signal's number (130, 143, 129).
//!
//! Output: a run's output is not kept whole (a benchmark may print hundreds of megabytes).
//! Per stream, lineup keeps the first [`HEAD_BYTES`] (for error messages), the last
//! [`TAIL_BYTES`] (what the parsers read: every built-in parser reads the last report of its
//! benchmark), and, when the caller gives a regular expression, the first line that matches
//! it (lines longer than [`MAX_LINE_BYTES`] are not matched). So memory stays under about
//! `2 * (HEAD_BYTES + 2 * TAIL_BYTES + MAX_LINE_BYTES)` whatever the command prints.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use regex::Regex;

/// What a stream keeps of its start.
pub const HEAD_BYTES: usize = 64 << 10;
/// What a stream keeps of its end: the parsers' input when a stream is longer. The longest
/// final report of a built-in parser (schbench's percentile blocks, funclatency's histograms,
/// stress-ng's table) is a few kilobytes.
pub const TAIL_BYTES: usize = 1 << 20;
/// Longest line matched against a caller's regular expression.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Between SIGTERM and SIGKILL to an interrupted command's group.
pub const GRACE: Duration = Duration::from_secs(2);

/// The first terminating signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The write end of the pipe the handler wakes the watcher thread through (-1: none).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// Where the watcher thread tells the waiting runner about a signal.
static WAKE: Mutex<Option<mpsc::Sender<Event>>> = Mutex::new(None);
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();

/// The signals that end a session: Ctrl-C, `kill`/`timeout`, a closed terminal.
pub const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

enum Event {
    Exited(std::io::Result<ExitStatus>, Instant),
    Interrupt,
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: an atomic store and write(2).
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: writing one byte from a valid buffer to a pipe we own.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Installs the handler of SIGINT, SIGTERM and SIGHUP, once per process.
pub fn install_interrupt_handler() -> Result<(), String> {
    HANDLER.get_or_init(install).clone()
}

fn install() -> Result<(), String> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two descriptors of a valid array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot catch signals: pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    let [read_fd, write_fd] = fds;
    WAKE_FD.store(write_fd, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("lineup-signals".into())
        .spawn(move || {
            let mut byte = 0u8;
            loop {
                // SAFETY: reading one byte into a valid buffer from our pipe.
                let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
                if n == 0
                    || (n < 0
                        && std::io::Error::last_os_error().kind()
                            != std::io::ErrorKind::Interrupted)
                {
                    return;
                }
                if n > 0
                    && let Ok(guard) = WAKE.lock()
                    && let Some(tx) = guard.as_ref()
                {
                    let _ = tx.send(Event::Interrupt);
                }
            }
        })
        .map_err(|e| format!("cannot catch signals: {e}"))?;
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction with our handler and an empty mask is valid.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(format!(
                "cannot catch signal {sig}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Whether a terminating signal arrived.
pub fn interrupted() -> bool {
    SIGNAL.load(Ordering::SeqCst) != 0
}

/// The first terminating signal received, if any.
pub fn interrupt_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status after an interruption, as a shell reports a death by that signal:
/// 128 + its number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
pub fn interrupt_exit_status() -> i32 {
    128 + interrupt_signal().unwrap_or(libc::SIGINT)
}

/// What interrupted the session, in words: `Ctrl-C (SIGINT)`, `SIGTERM`, `SIGHUP`.
pub fn interrupt_words() -> &'static str {
    match interrupt_signal() {
        Some(libc::SIGTERM) => "SIGTERM",
        Some(libc::SIGHUP) => "SIGHUP",
        _ => "Ctrl-C (SIGINT)",
    }
}

/// What lineup kept of one output stream.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    /// The first [`HEAD_BYTES`] bytes.
    head: Vec<u8>,
    /// The last bytes, at most `2 * TAIL_BYTES` while reading, [`TAIL_BYTES`] at the end.
    tail: VecDeque<u8>,
    /// Bytes the stream carried in all.
    pub total_bytes: u64,
    /// The first line that matched the caller's regular expression.
    pub first_match: Option<String>,
}

impl Captured {
    /// Whether the stream was longer than what is kept of its end.
    pub fn truncated(&self) -> bool {
        self.total_bytes > self.tail.len() as u64
    }

    /// What a parser reads of this stream: all of it when it fits in [`TAIL_BYTES`]; else the
    /// first line matching the caller's expression (if any) and the kept end, from its first
    /// whole line.
    pub fn text(&self) -> String {
        let (a, b) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        if !self.truncated() {
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        let from = bytes
            .iter()
            .position(|&c| c == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        let mut s = String::new();
        if let Some(line) = &self.first_match {
            s.push_str(line);
            s.push('\n');
        }
        s.push_str(&String::from_utf8_lossy(&bytes[from..]));
        s
    }

    /// The start of the stream, for error messages.
    pub fn head(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        // Keep the last TAIL_BYTES (VecDeque: dropping the front costs no copy).
        let chunk = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        let over = (self.tail.len() + chunk.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..over.min(self.tail.len()));
        self.tail.extend(chunk);
    }
}

/// Finds the first line of a stream that matches an expression, line by line.
struct LineMatcher {
    re: Regex,
    line: Vec<u8>,
    /// The current line passed [`MAX_LINE_BYTES`]: skip it.
    too_long: bool,
    found: Option<String>,
}

impl LineMatcher {
    fn push(&mut self, mut chunk: &[u8]) {
        while self.found.is_none() && !chunk.is_empty() {
            let (part, rest, end) = match chunk.iter().position(|&c| c == b'\n') {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            if !self.too_long {
                if self.line.len() + part.len() > MAX_LINE_BYTES {
                    self.too_long = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if end {
                self.finish_line();
            }
            chunk = rest;
        }
    }

    fn finish_line(&mut self) {
        if !self.too_long && self.found.is_none() {
            let line = String::from_utf8_lossy(&self.line);
            if self.re.is_match(&line) {
                self.found = Some(line.into_owned());
            }
        }
        self.line.clear();
        self.too_long = false;
    }
}

/// A finished run.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Captured,
    pub stderr: Captured,
    /// From just before the spawn to the moment the shell exited.
    pub elapsed: Duration,
}

impl Output {
    /// What a parser reads: stdout, then stderr (schbench and stress-ng write to stderr),
    /// each as [`Captured::text`] keeps it.
    pub fn text(&self) -> String {
        let mut s = self.stdout.text();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr.text());
        s
    }

    /// The exit status in words: `exited with status 1`, `was killed by signal 9`.
    pub fn status_words(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            _ => "failed".to_string(),
        }
    }
}

/// Why a run has no output.
#[derive(Debug)]
pub enum Failure {
    /// A terminating signal during the run; the run was stopped and does not count.
    Interrupted,
    TimedOut(Duration),
    Spawn(std::io::Error),
}

/// Runs `sh -c command`, stdin from /dev/null, stdout and stderr streamed (see the module's
/// documentation for what is kept).
pub fn run_shell(command: &str, timeout: Option<Duration>) -> Result<Output, Failure> {
    run_shell_matching(command, timeout, None)
}

/// [`run_shell`], also keeping the first line of each stream that matches `first_line`.
pub fn run_shell_matching(
    command: &str,
    timeout: Option<Duration>,
    first_line: Option<&Regex>,
) -> Result<Output, Failure> {
    if interrupted() {
        return Err(Failure::Interrupted);
    }
    let (tx, rx) = mpsc::channel();
    if let Ok(mut w) = WAKE.lock() {
        *w = Some(tx.clone());
    }
    let result = run_inner(command, timeout, first_line, tx, &rx);
    if let Ok(mut w) = WAKE.lock() {
        *w = None;
    }
    result
}

fn run_inner(
    command: &str,
    timeout: Option<Duration>,
    first_line: Option<&Regex>,
    tx: mpsc::Sender<Event>,
    rx: &mpsc::Receiver<Event>,
) -> Result<Output, Failure> {
    let start = Instant::now();
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(Failure::Spawn)?;
    let pgid = child.id() as i32;
    let readers = [
        child
            .stdout
            .take()
            .map(|s| stream(Box::new(s), first_line.cloned())),
        child
            .stderr
            .take()
            .map(|s| stream(Box::new(s), first_line.cloned())),
    ];
    // A signal that arrived between the check in run_shell and the spawn.
    if interrupted() {
        let _ = tx.send(Event::Interrupt);
    }
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(Event::Exited(status, Instant::now()));
    });
    let deadline = timeout.map(|t| start + t);
    let mut outcome: Option<Failure> = None;
    let (status, end) = loop {
        let event = match deadline {
            Some(d) if outcome.is_none() => {
                let left = d.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(e) => e,
                    Err(_) => {
                        kill_group(pgid, libc::SIGKILL);
                        outcome = Some(Failure::TimedOut(timeout.unwrap_or_default()));
                        continue;
                    }
                }
            }
            _ => match rx.recv() {
                Ok(e) => e,
                Err(_) => unreachable!("the waiter thread holds a sender until it sends"),
            },
        };
        match event {
            Event::Exited(status, end) => break (status, end),
            Event::Interrupt => {
                if outcome.is_none() {
                    outcome = Some(Failure::Interrupted);
                    kill_group(pgid, libc::SIGTERM);
                    std::thread::spawn(move || {
                        std::thread::sleep(GRACE);
                        kill_group(pgid, libc::SIGKILL);
                    });
                }
            }
        }
    };
    // Output still open in a grandchild that outlived the shell would block the readers,
    // and a benchmark must not leave processes behind: the group goes once the shell has.
    kill_group(pgid, libc::SIGKILL);
    let mut kept = readers
        .into_iter()
        .map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default());
    let (stdout, stderr) = (
        kept.next().unwrap_or_default(),
        kept.next().unwrap_or_default(),
    );
    if let Some(f) = outcome {
        return Err(f);
    }
    if interrupted() {
        // A signal arrived as the run ended: do not count it either.
        return Err(Failure::Interrupted);
    }
    let status = status.map_err(Failure::Spawn)?;
    Ok(Output {
        status,
        stdout,
        stderr,
        elapsed: end - start,
    })
}

/// Reads a stream to its end on a thread of its own, keeping what [`Captured`] keeps.
fn stream(
    mut r: Box<dyn Read + Send>,
    first_line: Option<Regex>,
) -> std::thread::JoinHandle<Captured> {
    std::thread::spawn(move || {
        let mut kept = Captured::default();
        let mut matcher = first_line.map(|re| LineMatcher {
            re,
            line: Vec::new(),
            too_long: false,
            found: None,
        });
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    kept.push(&buf[..n]);
                    if let Some(m) = matcher.as_mut() {
                        m.push(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        if let Some(mut m) = matcher {
            if !m.line.is_empty() || m.too_long {
                m.finish_line();
            }
            kept.first_match = m.found;
        }
        kept
    })
}

fn kill_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals the process group we created.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_both_streams_and_status() {
        let o = run_shell("echo out; echo err >&2; exit 3", None).unwrap();
        assert_eq!(o.stdout.text(), "out\n");
        assert_eq!(o.stderr.text(), "err\n");
        assert_eq!(o.stdout.head(), "out\n");
        assert!(!o.stdout.truncated());
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.status_words(), "exited with status 3");
        assert_eq!(o.text(), "out\nerr\n");
    }

    fn gone(pid: i32) -> bool {
        // A zombie waiting for init to reap it has ended too.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        }
    }

    #[test]
    fn times_out_and_kills_the_group() {
        let dir = std::env::temp_dir().join(format!("lineup-run-{}-timeout", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("pid");
        let r = run_shell(
            &format!(
                "sleep 60 & echo $! > '{}'; sleep 60; echo never",
                pidfile.display()
            ),
            Some(Duration::from_millis(300)),
        );
        assert!(matches!(r, Err(Failure::TimedOut(_))), "{r:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SIGKILL went to the group before run_shell returned; the kernel may take a moment
        // to tear the process down.
        let mut ok = false;
        for _ in 0..200 {
            if gone(pid) {
                ok = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(ok, "the background sleep {pid} outlived the timed-out run");
    }

    #[test]
    fn measures_wall_time() {
        let o = run_shell("sleep 0.05", None).unwrap();
        assert!(o.status.success());
        assert!(o.elapsed >= Duration::from_millis(50), "{:?}", o.elapsed);
    }

    #[test]
    fn keeps_a_bounded_tail_and_the_first_matching_line() {
        // 8 MiB of filler between two reports: only the end is kept, but the first line
        // that matches the expression survives.
        let re = Regex::new(r"figure: ([0-9]+)").unwrap();
        let o = run_shell_matching(
            "echo 'figure: 7'; head -c 8388608 /dev/zero | tr '\\0' 'x' | fold -w 100; \
             echo; echo 'figure: 9'; echo done >&2",
            None,
            Some(&re),
        )
        .unwrap();
        assert!(o.stdout.truncated());
        assert_eq!(o.stdout.total_bytes, 10 + 8388608 + 8388608 / 100 + 1 + 10);
        let text = o.text();
        assert!(text.len() <= TAIL_BYTES + 100, "{}", text.len());
        assert!(text.starts_with("figure: 7\nxxxx"), "{}", &text[..40]);
        assert!(text.ends_with("\nfigure: 9\ndone\n"));
        // The kept end starts at a whole line.
        assert_eq!(text.lines().nth(1).unwrap().len(), 100);
        assert_eq!(o.stdout.head().len(), HEAD_BYTES);
        assert!(o.stdout.head().starts_with("figure: 7\n"));
        assert_eq!(o.stderr.text(), "done\n");
        assert_eq!(o.stderr.first_match, None);
    }

    #[test]
    fn captured_tail_is_exact_across_chunks() {
        let mut c = Captured::default();
        let data: Vec<u8> = (0..3 * TAIL_BYTES + 17).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(65_521) {
            c.push(chunk);
        }
        assert_eq!(c.total_bytes, data.len() as u64);
        assert_eq!(c.tail.len(), TAIL_BYTES);
        assert!(c.tail.iter().eq(data[data.len() - TAIL_BYTES..].iter()));
        assert_eq!(c.head, data[..HEAD_BYTES]);
    }

    #[test]
    fn line_matcher_skips_overlong_lines_and_finds_split_lines() {
        let mut m = LineMatcher {
            re: Regex::new("^hit ([0-9]+)$").unwrap(),
            line: Vec::new(),
            too_long: false,
            found: None,
        };
        let mut long = vec![b'a'; MAX_LINE_BYTES + 1];
        long.extend_from_slice(b"hit 1\n");
        m.push(&long);
        assert_eq!(m.found, None);
        m.push(b"no\nhi");
        m.push(b"t 2\nhit 3\n");
        assert_eq!(m.found.as_deref(), Some("hit 2"));
    }
}
