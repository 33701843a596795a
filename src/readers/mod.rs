//! Readers turn debug-info files into the [`Types`] graph. They know nothing about analysis.

pub mod btf;
pub mod c_struct;
pub mod code;
pub mod dwarf;
pub mod host;
pub mod pahole_text;
pub mod typing;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::input::io_problem;
use crate::types::Types;

/// Which debug-info format to read from a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Raw BTF, or the `.BTF` section of an ELF file.
    Btf,
    /// The DWARF sections of an ELF file.
    Dwarf,
}

/// A problem with one input file, always displayed as `FILE: what is wrong`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct LoadError {
    pub path: PathBuf,
    pub problem: String,
}

impl LoadError {
    pub fn new(path: &Path, problem: impl Into<String>) -> Self {
        LoadError {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }
}

/// Where a command's types came from, for the header of every answer: the user must see
/// which kernel (or program) a layout belongs to.
#[derive(Clone, Debug, Serialize)]
pub struct LayoutSource {
    /// The file as given, `/sys/kernel/btf/vmlinux`, or the name of the bundled copy.
    pub file: String,
    /// `btf` or `dwarf`.
    pub format: &'static str,
    /// The base BTF that `file` continues (a module's split BTF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// True when nothing was given and the running kernel's BTF was read.
    pub running_kernel: bool,
    /// True when nothing was given, the running kernel has no readable BTF, and the copy
    /// compiled into lineup (another kernel's layout) was used instead.
    pub bundled_fallback: bool,
}

impl LayoutSource {
    /// One line for a text header: `layout from: FILE (FORMAT...)`, loud when it is the
    /// bundled copy.
    pub fn describe(&self) -> String {
        let format = match self.format {
            "dwarf" => "DWARF",
            _ => "BTF",
        };
        let base = self
            .base
            .as_ref()
            .map(|b| format!(" on base {b}"))
            .unwrap_or_default();
        if self.bundled_fallback {
            format!(
                "layout from: {}{base} -- WARNING: the bundled kernel's layout, NOT the running kernel's (it has no readable BTF); give --btf or --dwarf for yours",
                self.file
            )
        } else if self.running_kernel {
            format!(
                "layout from: {} ({format} of the running kernel)",
                self.file
            )
        } else {
            format!("layout from: {}{base} ({format})", self.file)
        }
    }
}

/// A memory-mapped input file, plus room for section data that had to be decompressed.
/// Types read from it borrow from it.
pub struct InputFile {
    pub path: PathBuf,
    map: Option<memmap2::Mmap>,
    /// The file's bytes when it cannot be mapped (sysfs files of kernels that do not offer
    /// mmap on /sys/kernel/btf/vmlinux answer EACCES/ENODEV to it, yet can be read), or
    /// bytes compiled into the program.
    read: Cow<'static, [u8]>,
    /// Decompressed ELF sections (`SHF_COMPRESSED`) live here as long as the file.
    pub arena: typed_arena::Arena<Vec<u8>>,
}

impl InputFile {
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let file = std::fs::File::open(path).map_err(|e| LoadError::new(path, io_problem(&e)))?;
        let meta = file
            .metadata()
            .map_err(|e| LoadError::new(path, io_problem(&e)))?;
        if meta.is_dir() {
            return Err(LoadError::new(path, "is a directory, not a file"));
        }
        let read = |bytes: Vec<u8>| InputFile {
            path: path.to_path_buf(),
            map: None,
            read: Cow::Owned(bytes),
            arena: typed_arena::Arena::new(),
        };
        // A pipe (`--btf <(cat f)`, `--btf /dev/stdin`), a FIFO or a device has no size and
        // cannot be mapped: read to its end, within a bound (crate::input).
        if !meta.is_file() {
            return Ok(read(crate::input::read_stream(path, file)?));
        }
        // sysfs files (/sys/kernel/btf/vmlinux) report their true size; empty files cannot be
        // mapped, and are reported as such by the format readers.
        let map = if meta.len() == 0 {
            None
        } else {
            // SAFETY: the map is read-only and lineup does not write the file; a file truncated
            // by another process underneath us is the usual mmap caveat that every
            // debug-info tool shares.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(m) => Some(m),
                Err(map_error) => {
                    let bytes = crate::input::read_file_bounded(path).map_err(|e| {
                        // Past the bound, say so; else why it could not be mapped.
                        if e.problem.starts_with("more than") {
                            e
                        } else {
                            LoadError::new(path, io_problem(&map_error))
                        }
                    })?;
                    return Ok(read(bytes));
                }
            }
        };
        Ok(InputFile {
            path: path.to_path_buf(),
            map,
            read: Cow::Borrowed(&[]),
            arena: typed_arena::Arena::new(),
        })
    }

    /// Data compiled into the program (a bundled BTF), shown under `name` in messages.
    pub fn from_static(name: &Path, bytes: &'static [u8]) -> Self {
        InputFile {
            path: name.to_path_buf(),
            map: None,
            read: Cow::Borrowed(bytes),
            arena: typed_arena::Arena::new(),
        }
    }

    /// Bytes held in memory (a fuzz input), shown under `name` in messages.
    pub fn from_bytes(name: &Path, bytes: Vec<u8>) -> Self {
        InputFile {
            path: name.to_path_buf(),
            map: None,
            read: Cow::Owned(bytes),
            arena: typed_arena::Arena::new(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &self.read,
        }
    }
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Reads `file` as `format`. `base` is the vmlinux BTF that a module's split BTF continues.
pub fn load<'a>(
    file: &'a InputFile,
    format: Format,
    base: Option<&'a InputFile>,
) -> Result<Types<'a>, LoadError> {
    let data = file.bytes();
    let err = |p: String| LoadError::new(&file.path, p);
    if data.is_empty() {
        return Err(err("empty file".into()));
    }
    match format {
        Format::Btf => {
            let blob = if data.starts_with(ELF_MAGIC) {
                elf_btf_section(data).map_err(err)?
            } else {
                data
            };
            match base {
                None => btf::parse(blob).map_err(|e| err(e.to_string())),
                Some(base_file) => {
                    let base_data = base_file.bytes();
                    let base_blob = if base_data.starts_with(ELF_MAGIC) {
                        elf_btf_section(base_data)
                            .map_err(|p| LoadError::new(&base_file.path, p))?
                    } else {
                        base_data
                    };
                    btf::parse_split(base_blob, blob).map_err(|e| match e {
                        btf::SplitError::Base(e) => LoadError::new(&base_file.path, e.to_string()),
                        btf::SplitError::Split(e) => err(e.to_string()),
                    })
                }
            }
        }
        Format::Dwarf => {
            if !data.starts_with(ELF_MAGIC) {
                return Err(err("not an ELF file, so it has no DWARF".into()));
            }
            let mut types = dwarf::parse(data, &file.arena).map_err(|e| err(e.to_string()))?;
            types.source = crate::types::SourceFormat::Dwarf;
            Ok(types)
        }
    }
}

fn elf_btf_section(data: &[u8]) -> Result<&[u8], String> {
    use object::{Object, ObjectSection};
    let obj = object::File::parse(data).map_err(|e| format!("not a valid ELF file: {e}"))?;
    let section = obj
        .section_by_name(".BTF")
        .ok_or_else(|| "ELF file has no .BTF section".to_string())?;
    section
        .data()
        .map_err(|e| format!("cannot read the .BTF section: {e}"))
}
