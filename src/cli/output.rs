//! Every file a command writes (`-o`, `--patch`, `--html`, `--csv`, `--svg`, `--emit-c`) goes
//! through here, so that no command can damage what its output path points at:
//!
//! - a regular file (or a path that does not exist yet) is replaced atomically: the data goes to
//!   a temporary file created exclusively (`O_EXCL`) beside the target under a name no user file
//!   can have, which is then renamed over it; the temporary file is removed on every failure;
//! - a symlink is followed, and its target written (the link stays a link);
//! - character devices, FIFOs, sockets and `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` are
//!   written straight through, never renamed over;
//! - directories and block devices are refused, and so is a path that can only name one
//!   (`new/`, `dir/.`), before any work rather than when the rename fails;
//! - `-` is standard output.
//!
//! The temporary name fits NAME_MAX whatever the target's name (that name's start, truncated,
//! then lineup's tag), so that every name the directory accepts can be written; a name the
//! directory cannot hold is refused by the check.
//!
//! Commands check all their output paths with [`Output::check`] before doing any work (before a
//! program is recorded, a benchmark run, a file parsed), and write them with [`commit`], which
//! stages every replaced file first so that a failure leaves none of them half-written.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

/// How many symlinks deep a dangling link chain is followed (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// One output path, checked.
#[derive(Debug, Clone)]
pub struct Output {
    /// The flag that named it (`-o`, `--html`), for error messages.
    flag: &'static str,
    /// The path as the user gave it.
    shown: PathBuf,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    /// A regular file, or nothing yet: replaced by a rename. The path is the final one, every
    /// symlink resolved.
    Replace(PathBuf),
    /// A device, FIFO or socket: opened and written in place.
    Through(PathBuf),
    /// One of lineup's own open descriptors (`/dev/stdout`, `/dev/fd/N`): written through a
    /// duplicate, which works for pipes and sockets that cannot be reopened by name.
    Descriptor(i32),
}

impl Output {
    /// Checks that `path` can be written once the command's work is done: its directory
    /// exists and is writable, it is not a directory or a block device.
    pub fn check(flag: &'static str, path: &Path) -> Result<Output> {
        let shown = path.to_path_buf();
        let fail = |what: String| anyhow!("{}: {what} ({flag})", path.display());
        if path.as_os_str().is_empty() {
            bail!("{flag}: an empty path");
        }
        if names_a_directory(path) {
            return Err(fail(
                "names a directory (it ends in '/', '.' or '..'), not a file".into(),
            ));
        }
        if let Some(fd) = descriptor_of(path) {
            // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
            if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
                return Err(fail(format!("descriptor {fd} is not open")));
            }
            return Ok(Output {
                flag,
                shown,
                target: Target::Descriptor(fd),
            });
        }
        let target = match std::fs::metadata(path) {
            Ok(meta) => {
                let ft = meta.file_type();
                if ft.is_dir() {
                    return Err(fail("is a directory, not a file".into()));
                }
                if ft.is_block_device() {
                    return Err(fail(
                        "is a block device; lineup will not write over a disk".into(),
                    ));
                }
                if ft.is_char_device() || ft.is_fifo() || ft.is_socket() {
                    Target::Through(path.to_path_buf())
                } else {
                    let real = std::fs::canonicalize(path)
                        .map_err(|e| fail(format!("cannot resolve: {e}")))?;
                    Target::Replace(real)
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Target::Replace(final_target(path).map_err(fail)?)
            }
            Err(e) => return Err(fail(format!("cannot inspect: {e}"))),
        };
        if let Target::Replace(real) = &target {
            let dir = parent_dir(real);
            match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(fail(format!("{}: not a directory", dir.display()))),
                Err(_) => return Err(fail(format!("{}: no such directory", dir.display()))),
            }
            if !writable(&dir) {
                return Err(fail(format!(
                    "cannot create files in {} (permission denied or read-only)",
                    dir.display()
                )));
            }
            let len = real.file_name().map_or(0, |n| n.len());
            let max = name_max(&dir);
            if len > max {
                return Err(fail(format!(
                    "file name too long ({len} bytes; {} takes at most {max})",
                    dir.display()
                )));
            }
        } else if let Target::Through(p) = &target
            && !writable(p)
        {
            return Err(fail("not writable".into()));
        }
        Ok(Output {
            flag,
            shown,
            target,
        })
    }

    /// Written through a temporary file renamed into place (not a device, pipe or socket).
    pub fn is_replaced_file(&self) -> bool {
        matches!(self.target, Target::Replace(_))
    }

    /// The path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Writes `bytes` as the whole content of this output.
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        commit(&[(self, bytes)])
    }

    /// Writes this output's content as `fill` produces it, without holding it all in memory
    /// (a large profile's JSON), with the same guarantees as [`Output::write`].
    pub fn write_streamed(
        &self,
        mut fill: impl FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        match &self.target {
            Target::Replace(real) => Staged::write(real, &mut fill)
                .and_then(|s| s.rename_to(real))
                .map_err(|e| self.error(e)),
            Target::Through(p) => write_through(p, &mut fill).map_err(|e| self.error(e)),
            Target::Descriptor(fd) => write_descriptor(*fd, &mut fill).map_err(|e| self.error(e)),
        }
    }

    fn error(&self, what: impl std::fmt::Display) -> anyhow::Error {
        anyhow!(
            "{}: cannot write: {what} ({})",
            self.shown.display(),
            self.flag
        )
    }
}

/// Checks a directory a command will write files into (created if missing): it is one, or
/// its parent is.
pub fn check_dir(flag: &'static str, dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => bail!("{}: not a directory ({flag} wants one)", dir.display()),
        Err(_) => {
            let parent = parent_dir(dir);
            if !parent.is_dir() {
                bail!(
                    "{}: no such directory to create {} in ({flag})",
                    parent.display(),
                    dir.display()
                );
            }
            Ok(())
        }
    }
}

/// Checks an optional output path.
pub fn check_opt(flag: &'static str, path: Option<&Path>) -> Result<Option<Output>> {
    path.map(|p| Output::check(flag, p)).transpose()
}

/// Writes several outputs as one: every replaced file is staged in its temporary file first,
/// then the write-through outputs are written, then the staged files are renamed into place.
/// A failure before the renames leaves no replaced file changed and no temporary file behind;
/// the error names the output that failed.
pub fn commit(items: &[(&Output, &[u8])]) -> Result<()> {
    let mut staged: Vec<Staged> = Vec::new();
    for (out, bytes) in items {
        if let Target::Replace(real) = &out.target {
            staged
                .push(Staged::write(real, &mut |w| w.write_all(bytes)).map_err(|e| out.error(e))?);
        }
    }
    for (out, bytes) in items {
        match &out.target {
            Target::Through(p) => {
                write_through(p, &mut |w| w.write_all(bytes)).map_err(|e| out.error(e))?;
            }
            Target::Descriptor(fd) => {
                write_descriptor(*fd, &mut |w| w.write_all(bytes)).map_err(|e| out.error(e))?;
            }
            Target::Replace(_) => {}
        }
    }
    let mut staged = staged.into_iter();
    for (out, _) in items {
        if let Target::Replace(real) = &out.target {
            let s = staged.next().expect("one staged file per replaced output");
            s.rename_to(real).map_err(|e| out.error(e))?;
        }
    }
    Ok(())
}

/// What produces an output's bytes, written straight to where they go.
type Fill<'a> = dyn FnMut(&mut dyn Write) -> std::io::Result<()> + 'a;

/// A temporary file beside its target, removed unless renamed into place.
struct Staged {
    path: Option<PathBuf>,
}

impl Staged {
    fn write(target: &Path, fill: &mut Fill<'_>) -> std::io::Result<Staged> {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let dir = parent_dir(target);
        let base = target
            .file_name()
            .map(|n| n.as_bytes().to_vec())
            .unwrap_or_default();
        let max = name_max(&dir);
        // Hidden, tagged with lineup, the pid and a counter, and created with O_EXCL: a user's
        // `data.json.partial` can neither be overwritten nor removed by it. The target's name
        // is cut short where the whole would pass NAME_MAX (a 250-byte name is valid, and
        // `.NAME.lineup-...` would not be).
        for attempt in 0..100u32 {
            let tag = format!(".lineup-{}-{:x}-{attempt}.tmp", std::process::id(), nonce());
            let keep = base.len().min(max.saturating_sub(1 + tag.len()));
            let mut name = Vec::with_capacity(1 + keep + tag.len());
            name.push(b'.');
            name.extend_from_slice(&base[..keep]);
            name.extend_from_slice(tag.as_bytes());
            let path = dir.join(OsString::from_vec(name));
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(&path);
            let mut file = match file {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            // From here on, dropping `staged` on an error removes the file.
            let staged = Staged { path: Some(path) };
            {
                let mut w = std::io::BufWriter::new(&mut file);
                fill(&mut w)?;
                w.flush()?;
            }
            file.sync_all()?;
            // A replaced file keeps its permission bits (a user's 0600 stays 0600) and, where
            // we may (root), its owner: lineup run as root must not take a user's file.
            if let Ok(meta) = std::fs::metadata(target) {
                use std::os::unix::fs::MetadataExt;
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
                let _ = file.set_permissions(meta.permissions());
            }
            return Ok(staged);
        }
        Err(std::io::Error::other(
            "cannot find a free temporary name beside it",
        ))
    }

    fn rename_to(mut self, target: &Path) -> std::io::Result<()> {
        let path = self.path.take().expect("staged once");
        std::fs::rename(&path, target).inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    t ^ (&t as *const u64 as u64)
}

/// Opens a device or FIFO by name, or connects to a Unix socket, and writes to it; never
/// truncates or renames.
fn write_through(path: &Path, fill: &mut Fill<'_>) -> std::io::Result<()> {
    let is_socket = std::fs::metadata(path)
        .map(|m| m.file_type().is_socket())
        .unwrap_or(false);
    if is_socket {
        let mut s = std::os::unix::net::UnixStream::connect(path)?;
        {
            let mut w = std::io::BufWriter::new(&mut s);
            fill(&mut w)?;
            w.flush()?;
        }
        return s.shutdown(std::net::Shutdown::Write);
    }
    let f = OpenOptions::new().write(true).open(path)?;
    let mut w = std::io::BufWriter::new(f);
    fill(&mut w)?;
    w.flush()
}

/// Writes through a duplicate of one of lineup's own descriptors.
fn write_descriptor(fd: i32, fill: &mut Fill<'_>) -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    // Flush what Rust buffered for our own stdout before writing beside it.
    if fd == 1 {
        std::io::stdout().flush()?;
    }
    // SAFETY: dup returns a new descriptor that the File then owns and closes.
    let dup = unsafe { libc::dup(fd) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let f = unsafe { File::from_raw_fd(dup) };
    let mut w = std::io::BufWriter::new(f);
    fill(&mut w)?;
    w.flush()
}

/// `-` (standard output), `/dev/stdout`, `/dev/stderr`, `/dev/stdin`, `/dev/fd/N` and
/// `/proc/self/fd/N` name one of lineup's own descriptors.
fn descriptor_of(path: &Path) -> Option<i32> {
    let s = path.to_str()?;
    match s {
        "-" => return Some(1),
        "/dev/stdin" => return Some(0),
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let n = s
        .strip_prefix("/dev/fd/")
        .or_else(|| s.strip_prefix("/proc/self/fd/"))?;
    n.parse::<i32>().ok().filter(|&fd| fd >= 0)
}

/// The file a path that does not exist will create: a dangling symlink is followed to the
/// name it points at.
fn final_target(path: &Path) -> Result<PathBuf, String> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| format!("cannot read link: {e}"))?;
                p = if to.is_absolute() {
                    to
                } else {
                    parent_dir(&p).join(to)
                };
            }
            _ => {
                if p.file_name().is_none() {
                    return Err("not a file name".into());
                }
                return Ok(p);
            }
        }
    }
    Err("too many levels of symbolic links".into())
}

/// A path whose last component is empty, `.` or `..` (`new/`, `out/.`): only a directory
/// can be there. (`Path` itself drops a trailing `/` and `.`, and would take `new/` for a
/// file `new` whose rename then fails.)
fn names_a_directory(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or_default();
    matches!(last, b"" | b"." | b"..")
}

/// The longest file name `dir` takes (NAME_MAX; 255 where it cannot be asked).
fn name_max(dir: &Path) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 255;
    };
    // SAFETY: a valid NUL-terminated path; pathconf only reads it.
    let n = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) };
    if n > 0 { n as usize } else { 255 }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; access() only reads it. AT_EACCESS checks with the
    // effective ids (root still meets read-only file systems).
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_recognized_by_name() {
        assert_eq!(descriptor_of(Path::new("/dev/stdout")), Some(1));
        assert_eq!(descriptor_of(Path::new("/dev/fd/7")), Some(7));
        assert_eq!(descriptor_of(Path::new("/proc/self/fd/3")), Some(3));
        assert_eq!(descriptor_of(Path::new("/dev/fd/x")), None);
        assert_eq!(descriptor_of(Path::new("/tmp/stdout")), None);
        assert_eq!(descriptor_of(Path::new("-")), Some(1));
        assert_eq!(descriptor_of(Path::new("./-")), None);
    }

    #[test]
    fn paths_that_can_only_be_directories() {
        for p in ["new/", "a/b/", "/", "out/.", "out/..", ".", ".."] {
            assert!(names_a_directory(Path::new(p)), "{p}");
        }
        for p in ["new", "a/b", "-", ".hidden", "a/..b"] {
            assert!(!names_a_directory(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn a_name_of_255_bytes_is_staged_and_renamed() {
        let dir = std::env::temp_dir().join(format!("lineup-output-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("n".repeat(name_max(&dir)));
        let out = Output::check("-o", &target).unwrap();
        out.write(b"data").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"data");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        let longer = dir.join("n".repeat(name_max(&dir) + 1));
        assert!(Output::check("-o", &longer).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
