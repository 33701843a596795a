//! Running one benchmark command: `sh -c CMD` in a process group of its own, its output
//! captured, its wall time measured, a timeout, and Ctrl-C.
//!
//! Ctrl-C: the command runs in its own process group, so the terminal's SIGINT reaches only
//! lineup. lineup's handler marks the session interrupted and forwards SIGINT to the running
//! command's whole group (SIGKILL after two seconds); that run is not counted, and the
//! caller keeps the runs that finished before it.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Where the handler tells the waiting runner about Ctrl-C.
static WAKE: Mutex<Option<mpsc::Sender<Event>>> = Mutex::new(None);
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();

enum Event {
    Exited(std::io::Result<ExitStatus>, Instant),
    Interrupt,
}

/// Installs the Ctrl-C (SIGINT) handler, once per process.
pub fn install_interrupt_handler() -> Result<(), String> {
    HANDLER
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                INTERRUPTED.store(true, Ordering::SeqCst);
                if let Ok(guard) = WAKE.lock()
                    && let Some(tx) = guard.as_ref()
                {
                    let _ = tx.send(Event::Interrupt);
                }
            })
            .map_err(|e| format!("cannot catch Ctrl-C: {e}"))
        })
        .clone()
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A finished run.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From just before the spawn to the moment the shell exited.
    pub elapsed: Duration,
}

impl Output {
    /// What a parser reads: stdout, then stderr (schbench and stress-ng write to stderr).
    pub fn text(&self) -> String {
        let mut s = self.stdout.clone();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr);
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
    /// Ctrl-C during the run; the run was stopped and does not count.
    Interrupted,
    TimedOut(Duration),
    Spawn(std::io::Error),
}

/// Runs `sh -c command`, stdin from /dev/null, stdout and stderr captured.
pub fn run_shell(command: &str, timeout: Option<Duration>) -> Result<Output, Failure> {
    if interrupted() {
        return Err(Failure::Interrupted);
    }
    let (tx, rx) = mpsc::channel();
    if let Ok(mut w) = WAKE.lock() {
        *w = Some(tx.clone());
    }
    let result = run_inner(command, timeout, tx, &rx);
    if let Ok(mut w) = WAKE.lock() {
        *w = None;
    }
    result
}

fn run_inner(
    command: &str,
    timeout: Option<Duration>,
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
        child.stdout.take().map(|s| read_all(Box::new(s))),
        child.stderr.take().map(|s| read_all(Box::new(s))),
    ];
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
                    kill_group(pgid, libc::SIGINT);
                    let grace = pgid;
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_secs(2));
                        kill_group(grace, libc::SIGKILL);
                    });
                }
            }
        }
    };
    // Output still open in a grandchild that outlived the shell would block the readers:
    // the group goes once the shell has gone.
    kill_group(pgid, libc::SIGKILL);
    let mut texts = readers
        .into_iter()
        .map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default());
    let (stdout, stderr) = (
        texts.next().unwrap_or_default(),
        texts.next().unwrap_or_default(),
    );
    if let Some(f) = outcome {
        return Err(f);
    }
    if interrupted() {
        // Ctrl-C arrived as the run ended: do not count it either.
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

fn read_all(mut r: Box<dyn Read + Send>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
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
        assert_eq!(o.stdout, "out\n");
        assert_eq!(o.stderr, "err\n");
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.status_words(), "exited with status 3");
        assert_eq!(o.text(), "out\nerr\n");
    }

    #[test]
    fn times_out_and_kills_the_group() {
        let t0 = Instant::now();
        let r = run_shell(
            "sleep 5 & sleep 5; echo never",
            Some(Duration::from_millis(200)),
        );
        assert!(matches!(r, Err(Failure::TimedOut(_))), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn measures_wall_time() {
        let o = run_shell("sleep 0.05", None).unwrap();
        assert!(o.status.success());
        assert!(o.elapsed >= Duration::from_millis(50), "{:?}", o.elapsed);
    }
}
