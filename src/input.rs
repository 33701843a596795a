//! Bounded reading of input files. Every text input (perf c2c, perf script and data-type
//! reports, sketches, saved profiles, contracts, headers, pahole text, machine files,
//! kallsyms) goes through [`TextReader`], and every binary input that is not a regular file
//! (a pipe such as `--btf <(cat vmlinux.btf)` or `--btf /dev/stdin`) through [`read_stream`],
//! so no input can make lineup read without end or hold more than a stated amount: a line
//! that never ends (`/dev/zero`, a sparse file) is refused after [`MAX_LINE_BYTES`], a text
//! larger than [`MAX_TEXT_BYTES`] before it is read, a stream past [`MAX_STREAM_BYTES`] as
//! soon as it gets there. Every refusal is one line, `FILE: what is wrong`
//! (docs/inputs.md lists these limits and the readers' own).
//!
//! Regular binary files (BTF, ELF, perf.data) are mapped, not read: they cost address space,
//! not memory, and have no limit here.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::readers::LoadError;

/// Longest line of a text input, in bytes (without its line end). perf's widest lines (a c2c
/// report's cache-line table, a perf script sample with a long call chain) are a few KiB; a
/// line of a MiB is a binary file or a stream that never ends.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Largest text input, in bytes: texts are read whole (perf script, data-type reports,
/// profiles), so this bounds the memory they take before parsing. A large `perf c2c report`
/// is tens of MB and a saved profile of 200k lines 150 MB; for larger perf recordings,
/// give lineup the `perf.data` itself (`--perf-data`, mapped, not read).
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// Most bytes read from a binary input that is not a regular file (a pipe, a FIFO, a
/// device): such input cannot be mapped and is held in memory. A kernel's BTF is about
/// 6 MB; a large program's DWARF some hundreds of MB.
pub const MAX_STREAM_BYTES: u64 = 1 << 30;

/// The line sizes on the cache-line axis that lineup accepts, wherever they come from (the
/// `--cacheline-size` flags, a profile's or sketch's `cacheline_size`, a machine file, a
/// contract): work over a struct is per line, and a line of 2^40 bytes would make it
/// endless.
pub const CACHELINE_SIZES: std::ops::RangeInclusive<u64> = 8..=4096;

/// Whether `n` is a cache-line size lineup works with: a power of two in [`CACHELINE_SIZES`].
pub fn valid_cacheline_size(n: u64) -> bool {
    n.is_power_of_two() && CACHELINE_SIZES.contains(&n)
}

/// `n` bytes for a message: `1 GiB`, `1.5 MiB`, `300 bytes`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} bytes")
}

/// An I/O error as the rest of a one-line message.
pub(crate) fn io_problem(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory, not a file".to_string(),
        _ => format!("cannot read: {e}"),
    }
}

fn line_too_long(path: &Path, line: usize) -> LoadError {
    LoadError::new(
        path,
        format!(
            "line {line} is longer than {}, the longest line of text lineup reads (binary data, or a stream without line ends?)",
            human_bytes(MAX_LINE_BYTES as u64)
        ),
    )
}

fn text_too_large(path: &Path, size: Option<u64>) -> LoadError {
    let what = match size {
        Some(n) => human_bytes(n),
        None => format!("more than {}", human_bytes(MAX_TEXT_BYTES)),
    };
    LoadError::new(
        path,
        format!(
            "{what} of text; lineup reads at most {} from one text input",
            human_bytes(MAX_TEXT_BYTES)
        ),
    )
}

/// Opens `path` for reading, refusing a directory; also says whether it is a regular file
/// and its size when it is.
fn open(path: &Path) -> Result<(std::fs::File, Option<u64>), LoadError> {
    let file = std::fs::File::open(path).map_err(|e| LoadError::new(path, io_problem(&e)))?;
    let meta = file
        .metadata()
        .map_err(|e| LoadError::new(path, io_problem(&e)))?;
    if meta.is_dir() {
        return Err(LoadError::new(path, "is a directory, not a file"));
    }
    Ok((file, meta.is_file().then_some(meta.len())))
}

/// A text input read line by line within [`MAX_LINE_BYTES`] and [`MAX_TEXT_BYTES`].
pub struct TextReader {
    path: PathBuf,
    inner: BufReader<std::fs::File>,
    /// The file's size, when it is a regular file (pipes and devices have none).
    size: Option<u64>,
    /// Lines and bytes read so far.
    lines: usize,
    bytes: u64,
}

impl TextReader {
    /// Opens a text input; a regular file larger than [`MAX_TEXT_BYTES`] is refused here.
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let (file, size) = open(path)?;
        if let Some(n) = size
            && n > MAX_TEXT_BYTES
        {
            return Err(text_too_large(path, Some(n)));
        }
        Ok(TextReader {
            path: path.to_path_buf(),
            inner: BufReader::with_capacity(1 << 16, file),
            size,
            lines: 0,
            bytes: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size of a regular file (for a progress bar); None for a pipe.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The first bytes of the input (up to 64 KiB), without consuming them: to recognize a
    /// binary file before its lines are judged.
    pub fn head(&mut self) -> Result<&[u8], LoadError> {
        let path = &self.path;
        self.inner
            .fill_buf()
            .map_err(|e| LoadError::new(path, io_problem(&e)))
    }

    /// Appends the next line, with its line end, to `out`; false at the end of the input.
    fn append_line(&mut self, out: &mut Vec<u8>) -> Result<bool, LoadError> {
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.inner)
            .take(limit)
            .read_until(b'\n', out)
            .map_err(|e| LoadError::new(&self.path, io_problem(&e)))?;
        if n == 0 {
            return Ok(false);
        }
        self.lines += 1;
        self.bytes += n as u64;
        if n as u64 == limit && out.last() != Some(&b'\n') {
            return Err(line_too_long(&self.path, self.lines));
        }
        if self.bytes > MAX_TEXT_BYTES {
            return Err(text_too_large(&self.path, None));
        }
        Ok(true)
    }

    /// The next line into `buf` (replacing what it held), without its line end (`\n` or
    /// `\r\n`, as `str::lines` takes them); false at the end of the input.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> Result<bool, LoadError> {
        buf.clear();
        if !self.append_line(buf)? {
            return Ok(false);
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        Ok(true)
    }

    /// The 1-based number of the line [`TextReader::next_line`] returned last.
    pub fn line_number(&self) -> usize {
        self.lines
    }

    /// The rest of the input, every line checked.
    pub fn read_to_end(mut self) -> Result<Vec<u8>, LoadError> {
        let mut out = Vec::new();
        if let Some(n) = self.size {
            out.reserve(n as usize);
        }
        while self.append_line(&mut out)? {}
        Ok(out)
    }
}

/// The whole text of `path`, within [`MAX_LINE_BYTES`] per line and [`MAX_TEXT_BYTES`].
pub fn read_text(path: &Path) -> Result<Vec<u8>, LoadError> {
    TextReader::open(path)?.read_to_end()
}

/// [`read_text`] as a string, bytes that are not UTF-8 replaced (U+FFFD): for headers,
/// contracts, machine files and other text a person wrote.
pub fn read_text_lossy(path: &Path) -> Result<String, LoadError> {
    let bytes = read_text(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The same limits for text already in memory (a mapped file that turned out to be text).
pub fn check_text(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        return Err(text_too_large(path, Some(bytes.len() as u64)));
    }
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            return Err(line_too_long(path, i + 1));
        }
    }
    Ok(())
}

/// Reads a binary input that cannot be mapped (a pipe, a FIFO, a device) to its end, at most
/// [`MAX_STREAM_BYTES`].
pub fn read_stream(path: &Path, file: std::fs::File) -> Result<Vec<u8>, LoadError> {
    let mut out = Vec::new();
    let n = file
        .take(MAX_STREAM_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| LoadError::new(path, io_problem(&e)))?;
    if n as u64 > MAX_STREAM_BYTES {
        return Err(LoadError::new(
            path,
            format!(
                "more than {} from a pipe or device, the most lineup reads from one (give a regular file: it is mapped)",
                human_bytes(MAX_STREAM_BYTES)
            ),
        ));
    }
    Ok(out)
}

/// Reads a whole regular file at most [`MAX_STREAM_BYTES`] long (one that cannot be mapped,
/// such as a sysfs file of a kernel that refuses mmap).
pub fn read_file_bounded(path: &Path) -> Result<Vec<u8>, LoadError> {
    let (file, _) = open(path)?;
    read_stream(path, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lineup-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn lines_are_read_without_their_ends() {
        let p = temp("lines.txt", b"a\r\nbb\n\nccc");
        let mut r = TextReader::open(&p).unwrap();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while r.next_line(&mut buf).unwrap() {
            got.push((r.line_number(), String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            [(1, "a"), (2, "bb"), (3, ""), (4, "ccc")]
                .map(|(n, s)| (n, s.to_string()))
                .to_vec()
        );
        assert_eq!(read_text(&p).unwrap(), b"a\r\nbb\n\nccc");
    }

    #[test]
    fn a_line_of_exactly_the_limit_reads_one_byte_more_does_not() {
        let mut ok = vec![b'x'; MAX_LINE_BYTES];
        ok.push(b'\n');
        ok.extend_from_slice(b"next\n");
        assert_eq!(read_text(&temp("ok.txt", &ok)).unwrap().len(), ok.len());
        let mut long = vec![b'y'; 10];
        long.push(b'\n');
        long.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        let e = read_text(&temp("long.txt", &long)).unwrap_err().to_string();
        assert!(e.contains("line 2 is longer than 1 MiB"), "{e}");
        assert!(!e.contains('\n'));
        let e = check_text(Path::new("m"), &long).unwrap_err().to_string();
        assert!(e.starts_with("m: line 2 is longer than 1 MiB"), "{e}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(300), "300 bytes");
        assert!(valid_cacheline_size(64) && valid_cacheline_size(4096));
        assert!(!valid_cacheline_size(1 << 40) && !valid_cacheline_size(48));
        assert!(!valid_cacheline_size(4) && !valid_cacheline_size(0));
    }
}
