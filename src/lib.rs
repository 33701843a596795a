//! lineup: find and fix cache-line contention in C data structures.
//!
//! Data flows one way: `readers` (BTF, DWARF) fill the `types` graph; `layout` computes where
//! every byte of a struct lies; `emit` renders layouts (pahole text, JSON); `bench` runs and compares A/B benchmarks;
//! `cli` is thin glue. `fleet` (`--features fleet`) stores typed profiles of many hosts in
//! Parquet and queries them with DataFusion.

pub mod analysis;
pub mod bench;
pub mod clock;
pub mod emit;
#[cfg(feature = "fleet")]
pub mod fleet;
pub mod hex;
pub mod input;
pub mod layout;
pub mod profile;
pub mod readers;
pub mod record;
pub mod stages;
pub mod types;
