//! The machine model: topology and the price of a cache-line transfer, as data.
//!
//! Presets for the seeds' machines live in `data/machines.toml` (each latency with its
//! source); `lineup` can also describe the host it runs on (`crate::readers::host`). Nothing
//! here does I/O.

use serde::{Deserialize, Serialize};

/// One machine, as the cost model needs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineModel {
    pub name: String,
    pub description: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// Hardware threads per core.
    pub smt: u32,
    /// Cores sharing one last-level cache.
    pub cores_per_llc: u32,
    pub llcs: u32,
    pub numa_nodes: u32,
    pub cacheline_size: u64,
    /// Load latencies in core cycles (see `data/machines.toml` for what each means).
    /// `l2_hit`: what each extra cache line a hot path needs costs it per run (the line is
    /// not in L1 when the path comes back; docs/cost-model.md, locality).
    #[serde(default = "default_l2_hit")]
    pub l2_hit: f64,
    pub llc_hit: f64,
    pub local_hitm: f64,
    pub remote_hitm: f64,
}

/// An L2 hit where a machine file does not say: the presets' middle (14-16 cycles).
fn default_l2_hit() -> f64 {
    14.0
}

#[derive(Deserialize)]
struct PresetFile {
    machine: Vec<MachineModel>,
}

const PRESETS: &str = include_str!("../../data/machines.toml");

/// Every preset, in file order.
pub fn presets() -> Vec<MachineModel> {
    let file: PresetFile = toml::from_str(PRESETS).expect("data/machines.toml is valid");
    file.machine
}

/// The preset called `name`.
pub fn preset(name: &str) -> Option<MachineModel> {
    presets().into_iter().find(|m| m.name == name)
}

impl MachineModel {
    /// A machine known only by its topology (the host), with generic latencies: 40 cycles
    /// for an LLC hit, 100 for a bounce within a socket, 250 across sockets — the middle of the
    /// presets' range, since we cannot time bounces without another tool.
    pub fn from_topology(
        name: &str,
        cpus: u32,
        smt: u32,
        cores_per_llc: u32,
        numa_nodes: u32,
        cacheline_size: u64,
    ) -> Self {
        let smt = smt.max(1);
        let cores = (cpus / smt).max(1);
        let cores_per_llc = cores_per_llc.clamp(1, cores);
        MachineModel {
            name: name.to_string(),
            description: format!(
                "{cpus} CPUs, SMT{smt}, {cores_per_llc} cores per LLC, {numa_nodes} NUMA node(s)"
            ),
            cpus: cpus.max(1),
            smt,
            cores_per_llc,
            llcs: cores.div_ceil(cores_per_llc),
            numa_nodes: numa_nodes.max(1),
            cacheline_size,
            l2_hit: default_l2_hit(),
            llc_hit: 40.0,
            local_hitm: 100.0,
            remote_hitm: 250.0,
        }
    }

    pub fn cpus_per_node(&self) -> u32 {
        (self.cpus / self.numa_nodes.max(1)).max(1)
    }

    /// Expected cycles of one modified-line transfer between two CPUs drawn from a set of
    /// `n` CPUs spread over the machine the way the scheduler spreads a busy workload: filling
    /// whole nodes, so that `n` CPUs span `ceil(n / cpus_per_node)` nodes and a transfer
    /// crosses nodes with probability `(s - 1) / s` for `s` spanned nodes.
    pub fn transfer_cycles(&self, n: u32) -> f64 {
        let spanned = n
            .div_ceil(self.cpus_per_node())
            .clamp(1, self.numa_nodes.max(1)) as f64;
        let remote = (spanned - 1.0) / spanned;
        remote * self.remote_hitm + (1.0 - remote) * self.local_hitm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_cover_the_seeds_machines() {
        let names: Vec<String> = presets().into_iter().map(|m| m.name).collect();
        for want in [
            "icelake-2s",
            "spr-1s",
            "xeon-2s-480",
            "nehalem-ex-8s",
            "power10-96",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        let p10 = preset("power10-96").unwrap();
        assert_eq!((p10.cacheline_size, p10.smt, p10.cpus), (128, 8, 96));
        for m in presets() {
            assert!(
                m.l2_hit < m.llc_hit && m.llc_hit < m.local_hitm && m.local_hitm <= m.remote_hitm,
                "{m:?}"
            );
            assert_eq!(m.cpus, m.smt * m.cores_per_llc * m.llcs, "{}", m.name);
        }
    }

    #[test]
    fn transfers_cross_sockets_only_when_the_cpus_do() {
        let m = preset("icelake-2s").unwrap();
        assert_eq!(m.transfer_cycles(1), m.local_hitm);
        assert_eq!(m.transfer_cycles(80), m.local_hitm);
        let both = m.transfer_cycles(160);
        assert!((both - (m.local_hitm + m.remote_hitm) / 2.0).abs() < 1e-9);
    }
}
