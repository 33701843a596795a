//! Where types come from: `--btf`, `--dwarf`, or the running kernel's BTF with a bundled
//! fallback compiled into the binary. Shared by every command that needs a layout.

use std::path::{Path, PathBuf};

use anyhow::Result;

use lineup::readers::{self, Format, InputFile, LayoutSource, LoadError};
use lineup::types::Types;

/// The kernel's own BTF, present when built with CONFIG_DEBUG_INFO_BTF.
pub const RUNNING_KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Overrides [`RUNNING_KERNEL_BTF`], for tests that need a machine without one (a path
/// that does not exist simulates a kernel built without BTF). Not for users.
pub const RUNNING_KERNEL_BTF_ENV: &str = "LINEUP_TEST_RUNNING_KERNEL_BTF";
/// The name the bundled BTF goes by in headers and messages.
pub const BUNDLED_BTF_NAME: &str = "bundled Linux 6.18.44 BTF (data/vmlinux-6.18.44.btf)";
/// A copy of a 6.18 kernel's BTF (built with CONFIG_RT_GROUP_SCHED), compiled into the
/// binary so that the fallback works after `cargo install`, away from the source tree.
static BUNDLED_BTF: &[u8] = include_bytes!("../../data/vmlinux-6.18.44.btf");

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
    /// What to tell the user the data came from, in messages.
    pub label: String,
    /// Where the layout came from, for every answer's header.
    pub source: LayoutSource,
}

impl SourceArgs {
    /// With neither --btf nor --dwarf, a profile that lineup recorded names its program: its
    /// DWARF holds the types, not the running kernel's BTF. Said on stderr.
    pub fn for_profile(&self, profile: &lineup::profile::Profile) -> SourceArgs {
        let mut s = self.clone();
        if s.btf.is_none()
            && s.dwarf.is_none()
            && let Some(program) = profile.provenance.settings.get("program")
            && Path::new(program).exists()
        {
            eprintln!(
                "lineup: types from the recorded program {program} (give --dwarf or --btf for others)"
            );
            s.dwarf = Some(PathBuf::from(program));
        }
        s
    }

    pub fn open(&self) -> Result<Opened> {
        let base = match &self.base_btf {
            Some(b) => Some(InputFile::open(b)?),
            None => None,
        };
        let given = |p: &PathBuf, name: &'static str| LayoutSource {
            file: p.display().to_string(),
            format: name,
            base: self.base_btf.as_ref().map(|b| b.display().to_string()),
            running_kernel: false,
            bundled_fallback: false,
        };
        let (file, format, source) = match (&self.btf, &self.dwarf) {
            (Some(p), _) => (InputFile::open(p)?, Format::Btf, given(p, "btf")),
            (None, Some(p)) => (InputFile::open(p)?, Format::Dwarf, given(p, "dwarf")),
            (None, None) => {
                let running = std::env::var_os(RUNNING_KERNEL_BTF_ENV)
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from(RUNNING_KERNEL_BTF));
                // The running kernel's BTF can be absent (built without it) or exist and
                // still be unreadable (a container, a sandbox): then the bundled copy, said
                // loudly, since it is another kernel's layout.
                match InputFile::open(&running) {
                    Ok(f) => (
                        f,
                        Format::Btf,
                        LayoutSource {
                            file: running.display().to_string(),
                            format: "btf",
                            base: None,
                            running_kernel: true,
                            bundled_fallback: false,
                        },
                    ),
                    Err(e) => {
                        eprintln!(
                            "lineup: {e}; WARNING: using the {BUNDLED_BTF_NAME}, which is NOT the running kernel's layout (give --btf or --dwarf)"
                        );
                        (
                            InputFile::from_static(Path::new(BUNDLED_BTF_NAME), BUNDLED_BTF),
                            Format::Btf,
                            LayoutSource {
                                file: BUNDLED_BTF_NAME.to_string(),
                                format: "btf",
                                base: None,
                                running_kernel: false,
                                bundled_fallback: true,
                            },
                        )
                    }
                }
            }
        };
        Ok(Opened {
            file,
            base,
            format,
            label: source.file.clone(),
            source,
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
