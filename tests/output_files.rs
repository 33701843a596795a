//! Issue 13 item 1: what every command's output path (`-o`, `--patch`, `--html`, `--csv`,
//! `--emit-c`) does to what it points at. Regular files are replaced atomically, symlinks
//! followed, devices, FIFOs and `/dev/stdout` written through, directories refused, user
//! files beside the target left alone, and every path checked before any work.

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lineup() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineup"));
    c.current_dir(common::repo());
    c.env("LINEUP_CACHE_DIR", scratch("cache"));
    c
}

/// A fresh directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("output-files")
        .join(name);
    if name != "cache" {
        let _ = std::fs::remove_dir_all(&d);
    }
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const C2C: &str = "tests/data/c2c/seed000_paste.txt";

fn import_to(out: &Path) -> Output {
    lineup()
        .args(["import", "--c2c", C2C, "-o"])
        .arg(out)
        .output()
        .unwrap()
}

/// The profile `lineup import` writes for the seed 000 paste: its input, and the data
/// address of the hot task_group line that the paste's Pareto table shows.
fn assert_is_seed000_profile(bytes: &[u8]) {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not a JSON profile ({e}): {}", text(bytes)));
    assert_eq!(v["provenance"]["input"], C2C);
    assert_eq!(v["lines"][0]["address"], "0xff284d17b5c0fa00");
}

/// Makes a character device node with `major:minor` in `dir` (only root may); `None` when
/// this user may not, so the caller can say so and skip.
fn mknod_char(dir: &Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let p = dir.join(name);
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path; mknod creates one node.
    let rc = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    if rc != 0 {
        eprintln!(
            "skipped: mknod {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(p)
}

#[test]
fn a_symlink_is_followed_and_stays_a_link() {
    let dir = scratch("symlink");
    let real = dir.join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let o = import_to(&link);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a file"
    );
    assert_is_seed000_profile(&std::fs::read(&real).unwrap());

    // A dangling link creates the file it names.
    let dangling = dir.join("dangling.json");
    std::os::unix::fs::symlink("new.json", &dangling).unwrap();
    let o = import_to(&dangling);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_is_seed000_profile(&std::fs::read(dir.join("new.json")).unwrap());
    assert_eq!(
        listing(&dir),
        ["dangling.json", "link.json", "new.json", "real.json"]
    );
}

/// Reads what a concurrently running writer sends, never blocking for good: `read_some`
/// returns `Ok(0)` or `WouldBlock` while nothing is there; once `done` is set (the lineup
/// process exited) whatever arrived is returned. A lineup that replaced the FIFO or socket
/// instead of writing to it gives an empty result, not a hung test.
fn collect(
    done: &std::sync::atomic::AtomicBool,
    mut read_some: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
) -> Vec<u8> {
    use std::sync::atomic::Ordering;
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let finished = done.load(Ordering::SeqCst);
        match read_some(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            Ok(_) => {
                if finished {
                    return got;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if finished {
                    return got;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[test]
fn a_fifo_is_written_through_and_stays_a_fifo() {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // The read end, open before lineup starts (a non-blocking open of a FIFO's read end
    // does not wait for a writer).
    let mut end = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        std::thread::spawn(move || collect(&done, |b| end.read(b)))
    };
    let o = import_to(&fifo);
    done.store(true, Ordering::SeqCst);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_is_seed000_profile(&reader.join().unwrap());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(listing(&dir), ["pipe"]);
}

#[test]
fn a_unix_socket_is_written_through_and_stays_a_socket() {
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = scratch("socket");
    let sock = dir.join("sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut conn = None;
            collect(&done, |b| {
                if conn.is_none() {
                    let (c, _) = listener.accept()?;
                    c.set_nonblocking(true)?;
                    conn = Some(c);
                }
                // Read at once: what a finished lineup sent is already there.
                std::os::unix::net::UnixStream::read(conn.as_mut().unwrap(), b)
            })
        })
    };
    let o = import_to(&sock);
    done.store(true, Ordering::SeqCst);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_is_seed000_profile(&reader.join().unwrap());
    assert!(std::fs::metadata(&sock).unwrap().file_type().is_socket());
    assert_eq!(listing(&dir), ["sock"]);
}

#[test]
fn dev_stdout_on_a_pipe_prints_the_data() {
    let o = lineup()
        .args(["import", "--c2c", C2C, "-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_is_seed000_profile(&o.stdout);
}

#[test]
fn a_character_device_is_written_through_and_stays_one() {
    let dir = scratch("chardev");
    // The null device's numbers (1:3), as a node of our own: never /dev/null itself.
    let Some(null) = mknod_char(&dir, "null", 1, 3) else {
        return;
    };
    let o = import_to(&null);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let meta = std::fs::metadata(&null).unwrap();
    assert!(meta.file_type().is_char_device(), "the device was replaced");
    assert_eq!(listing(&dir), ["null"]);
}

#[test]
fn a_directory_is_refused_in_one_line_and_nothing_is_left_beside_it() {
    let dir = scratch("directory");
    let target = dir.join("DIR");
    std::fs::create_dir(&target).unwrap();
    let o = import_to(&target);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&*target.to_string_lossy()) && err.contains("directory"),
        "{err}"
    );
    assert_eq!(listing(&dir), ["DIR"]);
    assert!(listing(&target).is_empty());
}

#[test]
fn a_users_partial_file_beside_the_target_survives() {
    let dir = scratch("partial");
    let mine = ["data.json.partial", ".data.json.partial", "data.partial"];
    for name in mine {
        std::fs::write(dir.join(name), format!("user data {name}")).unwrap();
    }
    let o = import_to(&dir.join("data.json"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    for name in mine {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            format!("user data {name}")
        );
    }
    assert_is_seed000_profile(&std::fs::read(dir.join("data.json")).unwrap());
    let mut want: Vec<String> = mine.iter().map(|s| s.to_string()).collect();
    want.push("data.json".into());
    want.sort();
    assert_eq!(listing(&dir), want);
}

#[test]
fn a_replaced_file_keeps_its_permissions_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = scratch("mode");
    let target = dir.join("p.json");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Another user's file, where this test may give it away (root): lineup run as root
    // must leave it theirs.
    let other = std::os::unix::fs::chown(&target, Some(65534), Some(65534)).is_ok();
    let o = import_to(&target);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let meta = std::fs::metadata(&target).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    if other {
        assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    }
    assert_is_seed000_profile(&std::fs::read(&target).unwrap());
}

/// A C program that creates the file its first argument names: whether it ran at all.
fn marker_program(dir: &Path) -> PathBuf {
    let src = dir.join("marker.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n\
         struct box { long a; long b; };\n\
         struct box the_box;\n\
         int main(int argc, char **argv) {\n\
             FILE *f = fopen(argv[1], \"w\");\n\
             the_box.a++;\n\
             return f ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("marker");
    let o = lineup()
        .args(["cc", "-O1", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "lineup cc: {}", text(&o.stderr));
    exe
}

#[test]
fn record_checks_its_output_before_running_the_program() {
    let dir = scratch("record");
    let exe = marker_program(&dir);
    let marker = dir.join("ran");
    let o = lineup()
        .args(["record", "-o", "/no/such/dir/p.json", "--"])
        .arg(&exe)
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("/no/such/dir/p.json"), "{err}");
    assert!(
        !marker.exists(),
        "the program ran before the path was checked"
    );

    // --keep-raw names a directory: a regular file there is refused before the run too.
    let file = dir.join("not-a-dir");
    std::fs::write(&file, "mine").unwrap();
    let o = lineup()
        .arg("record")
        .arg("-o")
        .arg(dir.join("p.json"))
        .arg("--keep-raw")
        .arg(&file)
        .arg("--")
        .arg(&exe)
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--keep-raw"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !marker.exists(),
        "the program ran before --keep-raw was checked"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");

    // The same program with a writable path runs and leaves its marker: the check above
    // is what kept it from running.
    let o = lineup()
        .arg("record")
        .arg("-o")
        .arg(dir.join("p.json"))
        .arg("--")
        .arg(&exe)
        .arg(&marker)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(marker.exists());
    assert!(dir.join("p.json").exists());
}

/// The kstats header and object of tests/data/optimize (built with the system `cc -g`), in
/// `dir`.
fn kstats(dir: &Path) -> (PathBuf, PathBuf) {
    let data = common::repo().join("tests/data/optimize");
    for f in ["kernel_style.h", "kstats.c"] {
        std::fs::copy(data.join(f), dir.join(f)).unwrap();
    }
    let st = Command::new("cc")
        .args(["-g", "-c", "kstats.c", "-o", "kstats.o"])
        .current_dir(dir)
        .status()
        .expect("cc");
    assert!(st.success());
    (dir.join("kernel_style.h"), dir.join("kstats.o"))
}

fn optimize(obj: &Path, header: &Path, sketch: &str) -> Command {
    let mut c = lineup();
    c.args(["optimize", "--type", "kstats", "--machine", "icelake-2s"])
        .arg("--dwarf")
        .arg(obj)
        .args(["--sketch", sketch])
        .arg("--header")
        .arg(header);
    c
}

#[test]
fn every_output_is_checked_before_any_input_is_read() {
    let dir = scratch("check-first");
    let (header, obj) = kstats(&dir);
    let patch = dir.join("fix");
    // The sketch does not exist: the bad --html must be the error, so it was checked first.
    let o = optimize(&obj, &header, "/no/such/sketch.toml")
        .arg("--patch")
        .arg(&patch)
        .args(["--html", "/no/such/dir/page.html"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("/no/such/dir/page.html") && err.contains("--html"),
        "{err}"
    );
    assert!(!patch.exists());
}

#[test]
fn when_the_second_of_two_outputs_fails_neither_is_written() {
    let dir = scratch("two-outputs");
    let (header, obj) = kstats(&dir);
    let patch = dir.join("fix");
    std::fs::write(&patch, "the old patch").unwrap();
    std::fs::write(dir.join("fix.partial"), "a user's file").unwrap();

    // Both written: the patch replaces the old one, fix.partial is untouched.
    let html = dir.join("page.html");
    let o = optimize(&obj, &header, "tests/data/optimize/kstats.toml")
        .arg("--patch")
        .arg(&patch)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let new_patch = std::fs::read_to_string(&patch).unwrap();
    assert!(new_patch.starts_with("---"), "{new_patch}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    assert_eq!(
        std::fs::read_to_string(dir.join("fix.partial")).unwrap(),
        "a user's file"
    );

    // The HTML goes to a device that refuses every write (the numbers of /dev/full, 1:7):
    // the patch must stay as it was, with no temporary file left.
    let Some(full) = mknod_char(&dir, "full", 1, 7) else {
        return;
    };
    std::fs::write(&patch, "the old patch").unwrap();
    std::fs::remove_file(&html).unwrap();
    let before = listing(&dir);
    let o = optimize(&obj, &header, "tests/data/optimize/kstats.toml")
        .arg("--patch")
        .arg(&patch)
        .arg("--html")
        .arg(&full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains(&*full.to_string_lossy()) && err.contains("--html"),
        "the error must say which output failed: {err}"
    );
    assert_eq!(std::fs::read_to_string(&patch).unwrap(), "the old patch");
    assert_eq!(listing(&dir), before);
    assert!(
        std::fs::metadata(&full)
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn csv_to_a_directory_is_refused_before_any_run() {
    let dir = scratch("csv");
    let marker = dir.join("ran");
    let o = lineup()
        .args(["bench", "--runs", "2", "--warmup", "0", "--a"])
        .arg(format!("touch {}", marker.display()))
        .arg("--b")
        .arg(format!("touch {}", marker.display()))
        .arg("--csv")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("directory") && err.contains("--csv"), "{err}");
    assert!(!marker.exists(), "the benchmark ran");
}
