//! Where types come from: `--btf`, `--dwarf`, or the running kernel's BTF with a bundled
//! fallback. Shared by every command that needs a layout.

use std::path::{Path, PathBuf};

use anyhow::Result;

use lineup::readers::{self, Format, InputFile, LoadError};
use lineup::types::Types;

/// The kernel's own BTF, present when built with CONFIG_DEBUG_INFO_BTF.
pub const RUNNING_KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// A copy of a 6.18 kernel's BTF (built with CONFIG_RT_GROUP_SCHED) shipped in the repository.
pub const BUNDLED_BTF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/vmlinux-6.18.44.btf");

#[derive(clap::Args, Clone, Debug)]
pub struct SourceArgs {
    /// Read types from BTF: raw (/sys/kernel/btf/vmlinux) or an ELF file with a .BTF section
    #[arg(long, value_name = "FILE", conflicts_with = "dwarf")]
    pub btf: Option<PathBuf>,
    /// Base BTF that --btf continues (a module's split BTF on top of vmlinux)
    #[arg(long, value_name = "FILE", requires = "btf")]
    pub base_btf: Option<PathBuf>,
    /// Read types from the DWARF of an ELF file (executable, library, object, vmlinux)
    #[arg(long, value_name = "FILE")]
    pub dwarf: Option<PathBuf>,
}

/// The opened input files; types borrow from them.
pub struct Opened {
    pub file: InputFile,
    pub base: Option<InputFile>,
    pub format: Format,
    /// What to tell the user the data came from.
    pub label: String,
}

impl SourceArgs {
    pub fn open(&self) -> Result<Opened> {
        let (path, format, label) = match (&self.btf, &self.dwarf) {
            (Some(p), _) => (p.clone(), Format::Btf, p.display().to_string()),
            (None, Some(p)) => (p.clone(), Format::Dwarf, p.display().to_string()),
            (None, None) => {
                if Path::new(RUNNING_KERNEL_BTF).exists() {
                    (
                        PathBuf::from(RUNNING_KERNEL_BTF),
                        Format::Btf,
                        RUNNING_KERNEL_BTF.to_string(),
                    )
                } else {
                    eprintln!(
                        "lineup: {RUNNING_KERNEL_BTF} is absent; using the bundled 6.18 kernel BTF ({BUNDLED_BTF})"
                    );
                    (
                        PathBuf::from(BUNDLED_BTF),
                        Format::Btf,
                        "bundled vmlinux-6.18.44.btf".to_string(),
                    )
                }
            }
        };
        let (file, label) = match InputFile::open(&path) {
            Ok(f) => (f, label),
            // The running kernel's BTF can exist and still be unreadable (a container, a
            // sandbox): the bundled copy is the documented fallback.
            Err(e)
                if self.btf.is_none()
                    && self.dwarf.is_none()
                    && path == Path::new(RUNNING_KERNEL_BTF) =>
            {
                eprintln!("lineup: {e}; using the bundled 6.18 kernel BTF ({BUNDLED_BTF})");
                (
                    InputFile::open(Path::new(BUNDLED_BTF))?,
                    "bundled vmlinux-6.18.44.btf".to_string(),
                )
            }
            Err(e) => return Err(e.into()),
        };
        let base = match &self.base_btf {
            Some(b) => Some(InputFile::open(b)?),
            None => None,
        };
        Ok(Opened {
            file,
            base,
            format,
            label,
        })
    }
}

impl Opened {
    pub fn types(&self) -> Result<Types<'_>, LoadError> {
        let types = readers::load(&self.file, self.format, self.base.as_ref())?;
        for w in &types.warnings {
            eprintln!("lineup: warning: {}: {w}", self.file.path.display());
        }
        Ok(types)
    }
}
