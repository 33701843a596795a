//! The access profile: who loads and stores which bytes of which struct, from where.
//!
//! [`model`] is the normalized, versioned profile every importer produces and every analysis
//! consumes (documented in `docs/profile.md`). The importers read evidence and know nothing
//! about layouts:
//! - [`c2c`]: `perf c2c report --stdio` text, including the trimmed forms pasted into mail;
//! - [`perf_data`]: `perf.data` itself (perf mem / perf c2c / perf record -d), decoded sample
//!   by sample;
//! - [`perf_script`]: `perf script` output of memory samples;
//! - [`perf_typeoff`]: `perf report --stdio -s type,typeoff` (perf's data-type profiling),
//!   already in type coordinates;
//! - [`sketch`]: a hand-written TOML access sketch.

pub mod c2c;
mod error;
pub mod model;
pub mod perf_data;
pub mod perf_script;
pub mod perf_typeoff;
pub mod sketch;
pub mod table;
pub mod text;

pub use c2c::{C2cOptions, C2cReader, import_c2c, import_c2c_with};
pub use error::ProfileError;
pub use model::*;
pub use perf_data::{PerfDataOptions, import_perf_data};
pub use perf_script::{PerfScriptOptions, import_perf_script};
pub use perf_typeoff::import_perf_typeoff;
pub use sketch::import_sketch;
