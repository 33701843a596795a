//! Inputs of the fleet store's tests (`tests/fleet.rs`, `tests/fleet_spark.rs`).

use std::path::Path;

use serde_json::{Value, json};

pub const TYPEOFF: &str = "tests/data/perf/typeoff_columns.txt";
pub const C2C: &str = "tests/data/c2c/lkml_seed003_root_domain.txt";
pub const SKETCH: &str = "examples/sketches/seed003_root_domain.toml";
pub const BTF: &str = "data/vmlinux-6.18.44.btf";

/// A saved profile of struct `s`: (member, offset, stores, lcl_hitm) each, loads
/// `loads_per_store` times the stores, each member written by `write_<member>` at an
/// instruction address of its own (kept in the store only with `--keep-addresses`).
pub fn layout_profile(path: &Path, members: &[(&str, u64, f64, f64)], loads_per_store: f64) {
    let accesses: Vec<Value> = members
        .iter()
        .map(|(m, off, stores, hitm)| {
            json!({"offset": off, "size": 8, "field": m,
                   "counts": {"stores": stores, "loads": stores * loads_per_store,
                              "lcl_hitm": hitm},
                   "code": {"symbol": format!("write_{m}"),
                            "address": format!("{:#x}", 0xffffffff81000000u64 + off)}})
        })
        .collect();
    let p = json!({"schema": 1, "provenance": {"tool": "test"}, "unit": "samples",
                   "cacheline_size": 64,
                   "types": [{"type_name": "s", "accesses": accesses}]});
    std::fs::write(path, p.to_string()).unwrap();
}
