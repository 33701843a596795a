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
    /// The L2 fetches 128-byte aligned pairs of lines (Intel's spatial, or adjacent-line,
    /// prefetcher): hot lines of one pair contend though they are different lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adjacent_line_pairs: bool,
    /// With `adjacent_line_pairs`: what writers on the two lines of one aligned pair cost, as a
    /// share of the same writers on one line (`lineup calibrate` measures it; absent: the
    /// presets' guess, `contention::PAIR_PREFETCH_SHARE`). Above 1 where the pair costs more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_share: Option<f64>,
    /// Bytes of one core's L1 data cache, where the part's published figure (a preset) or
    /// sysfs (the host) says: what the size term weighs a known number of instances' added hot
    /// lines against ([`MachineModel::capacity_cache`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d_bytes: Option<u64>,
}

/// L1 data cache where the machine does not say: 32 KiB, the smallest of the parts modeled
/// here (every x86 server core since Core 2). The smaller the cache, the more of it the
/// added lines take, so a guess at the low end keeps the size term's price on the high side.
pub const DEFAULT_L1D_BYTES: u64 = 32 * 1024;

/// The cache the size term weighs growth against, and where its size came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CapacityCache {
    pub bytes: u64,
    /// `machine`: the machine model's `l1d_bytes` (a preset's published figure, the host's
    /// sysfs); `assumed`: [`DEFAULT_L1D_BYTES`].
    pub from: &'static str,
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

/// What `lineup calibrate` measured, as it writes it under `[calibration]` in a machine file
/// (`--machine FILE` reads it back; the cost model reads only `[[machine]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The file's version.
    pub schema: u32,
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
    /// `uname -r` of the kernel it ran under.
    pub kernel: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// The CPU model and topology it is valid for (`lineup::readers::host::topology_key`);
    /// `--machine host` uses a cached calibration only when this matches the host's.
    pub key: String,
    /// The CPUs it was allowed to use.
    pub cpus: String,
    pub quick: bool,
    /// Core clock used to turn nanoseconds into cycles.
    pub ghz: f64,
    /// How `ghz` was found.
    pub ghz_method: String,
    /// How the figures were taken.
    pub method: String,
    /// Cache-line transfer latency per class of CPU pair that this machine has.
    #[serde(default)]
    pub transfer: Vec<Measured>,
    /// Load latency per level of the memory hierarchy.
    #[serde(default)]
    pub load: Vec<Measured>,
    /// Two threads incrementing counters of their own one line, one aligned pair of lines and
    /// two pairs apart: ns per increment (the adjacent-line prefetcher's price).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbours: Vec<Measured>,
    /// What could not be measured, and why (a class this machine lacks, a level sysfs does
    /// not describe): said, never invented.
    #[serde(default)]
    pub absent: Vec<String>,
    /// How each latency of `[[machine]]` was derived from the figures above.
    #[serde(default)]
    pub derived: Vec<String>,
}

/// One measured latency: the median over repetitions, with their spread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The class of CPU pair ("SMT siblings", "same LLC", "other LLC, same node",
    /// "other node") or the level ("L1", "L2", "LLC", "DRAM").
    pub what: String,
    /// The CPUs used: one pair per entry, or the one CPU of a load chase.
    pub cpus: Vec<Vec<u32>>,
    /// For loads: the pointer-chase buffer, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    pub ns: f64,
    pub cycles: f64,
    /// Lowest and highest median of one repetition, ns.
    pub spread_ns: [f64; 2],
    pub repetitions: u32,
    /// Transfers (one-way, counted twice per round trip) or loads timed.
    pub samples: u64,
}

/// The names of `lineup calibrate`'s two-writer figures ([`Calibration::neighbours`]): the
/// two counters on one line, on the two lines of one aligned pair, two pairs apart.
pub const NEIGHBOURS: [&str; 3] = ["one line", "one aligned pair", "two pairs apart"];

/// Below this share of a line's false sharing, writers on the two lines of one pair are taken
/// not to couple: the difference is within what the control's own spread shows.
pub const PAIR_SHARE_FLOOR: f64 = 0.1;

/// What the two-writer figures say about adjacent-line pairs: the one rule that
/// `lineup calibrate` writes into a machine file and `--machine host` reads back.
#[derive(Debug, PartialEq)]
pub enum PairDecision<'a> {
    /// Not all three figures.
    NotMeasured,
    /// One line cost no more than the control, or inside its spread: no false sharing
    /// measured, so nothing about pairs either.
    Undecided {
        one: &'a Measured,
        apart: &'a Measured,
    },
    /// `share = (pair - apart) / (one - apart)`, clamped to 0..4 and rounded to hundredths;
    /// `adjacent` where it is at least [`PAIR_SHARE_FLOOR`] and the pair was slower than the
    /// control in every repetition (`pair_slower`).
    Decided {
        one: &'a Measured,
        pair: &'a Measured,
        apart: &'a Measured,
        share: f64,
        pair_slower: bool,
        adjacent: bool,
    },
}

/// Decides adjacent-line pairs from the two-writer figures (ns per increment, medians with
/// their spreads).
pub fn decide_pairs(figures: &[Measured]) -> PairDecision<'_> {
    let get = |name: &str| figures.iter().find(|f| f.what == name);
    let (Some(one), Some(pair), Some(apart)) =
        (get(NEIGHBOURS[0]), get(NEIGHBOURS[1]), get(NEIGHBOURS[2]))
    else {
        return PairDecision::NotMeasured;
    };
    let excess = one.ns - apart.ns;
    // Decided only where every repetition of the line was slower than every one of the
    // control: a median that differs inside the spread is this machine's noise.
    if excess < 0.25 * apart.ns || one.spread_ns[0] <= apart.spread_ns[1] {
        return PairDecision::Undecided { one, apart };
    }
    let share = (((pair.ns - apart.ns) / excess).clamp(0.0, 4.0) * 100.0).round() / 100.0;
    let pair_slower = pair.spread_ns[0] > apart.spread_ns[1];
    PairDecision::Decided {
        one,
        pair,
        apart,
        share,
        pair_slower,
        adjacent: share >= PAIR_SHARE_FLOOR && pair_slower,
    }
}

/// A machine file: the presets' format, plus the calibration that produced it when there was one.
#[derive(Debug, Serialize, Deserialize)]
pub struct MachineFile {
    pub machine: Vec<MachineModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// Parses a machine file with exactly one `[[machine]]`; the error is one line (what is wrong,
/// and where).
pub fn parse_machine_file(text: &str) -> Result<(MachineModel, Option<Calibration>), String> {
    let file: MachineFile =
        toml::from_str(text).map_err(|e| crate::profile::text::toml_error(text, &e))?;
    let mut machines = file.machine;
    if machines.len() != 1 {
        return Err(format!(
            "{} [[machine]] tables; a machine file describes one machine",
            machines.len()
        ));
    }
    let m = machines.remove(0);
    let latencies = [m.l2_hit, m.llc_hit, m.local_hitm, m.remote_hitm];
    if latencies.iter().any(|l| !l.is_finite() || *l <= 0.0) {
        return Err(format!(
            "machine {:?}: every latency must be a positive number of cycles",
            m.name
        ));
    }
    if m.cpus == 0 || !crate::input::valid_cacheline_size(m.cacheline_size) {
        return Err(format!(
            "machine {:?}: cpus must be at least 1 and cacheline_size a power of two from {} to {}",
            m.name,
            crate::input::CACHELINE_SIZES.start(),
            crate::input::CACHELINE_SIZES.end()
        ));
    }
    Ok((m, file.calibration))
}

/// The machine file for `m`, as `parse_machine_file` reads it.
pub fn machine_file_text(m: &MachineModel, calibration: Option<&Calibration>) -> String {
    let file = MachineFile {
        machine: vec![m.clone()],
        calibration: calibration.cloned(),
    };
    let body = toml::to_string(&file).expect("a machine serializes");
    format!(
        "# A machine model for `lineup predict/optimize/replay --machine FILE`.\n\
         # Latencies are in core cycles (data/machines.toml says what each means);\n\
         # [calibration] says how they were measured.\n\n{body}"
    )
}

impl MachineModel {
    /// What writers on the two lines of one aligned pair cost as a share of one line's false
    /// sharing: measured by `lineup calibrate` where it ran, else the presets' guess.
    pub fn pair_share(&self) -> f64 {
        self.pair_share
            .unwrap_or(crate::analysis::contention::PAIR_PREFETCH_SHARE)
    }

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
            adjacent_line_pairs: false,
            pair_share: None,
            l1d_bytes: None,
        }
    }

    /// The cache whose capacity growth takes from: one core's L1 data cache. The size term
    /// prices each fetch capacity loses at an L2 hit, a line that no longer stays in L1;
    /// and a core may run every instance's hot path, so the smallest cache, one core's, is
    /// the one the added lines must fit beside everything else.
    pub fn capacity_cache(&self) -> CapacityCache {
        match self.l1d_bytes {
            Some(b) if b > 0 => CapacityCache {
                bytes: b,
                from: "machine",
            },
            _ => CapacityCache {
                bytes: DEFAULT_L1D_BYTES,
                from: "assumed",
            },
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
    fn a_machine_file_reads_what_it_writes() {
        let mut m = preset("icelake-2s").unwrap();
        m.pair_share = Some(1.56);
        let cal = Calibration {
            schema: 1,
            date: "2026-11-24T10:00:00Z".into(),
            kernel: "6.18.0".into(),
            cpu_model: "Test CPU".into(),
            key: "0123".into(),
            cpus: "0-159".into(),
            quick: true,
            ghz: 2.6,
            ghz_method: "given".into(),
            method: "ping-pong".into(),
            transfer: vec![Measured {
                what: "same LLC".into(),
                cpus: vec![vec![0, 1]],
                bytes: None,
                ns: 50.0,
                cycles: 130.0,
                spread_ns: [48.0, 55.5],
                repetitions: 3,
                samples: 1000,
            }],
            load: vec![Measured {
                what: "L2".into(),
                cpus: vec![vec![0]],
                bytes: Some(1 << 19),
                ns: 5.25,
                cycles: 13.65,
                spread_ns: [5.0, 6.0],
                repetitions: 3,
                samples: 4096,
            }],
            neighbours: vec![Measured {
                what: "one aligned pair".into(),
                cpus: vec![vec![0, 1]],
                bytes: None,
                ns: 30.0,
                cycles: 78.0,
                spread_ns: [29.0, 31.0],
                repetitions: 3,
                samples: 1 << 20,
            }],
            absent: vec!["other node: one NUMA node".into()],
            derived: vec!["remote_hitm = local_hitm".into()],
        };
        let text = machine_file_text(&m, Some(&cal));
        let (back, back_cal) = parse_machine_file(&text).unwrap();
        assert_eq!(back, m);
        assert_eq!(back_cal.as_ref(), Some(&cal));
        // Without a calibration, the presets' format exactly.
        let (plain, none) = parse_machine_file(&machine_file_text(&m, None)).unwrap();
        assert_eq!((plain, none), (m.clone(), None));
        // Two machines, a bad latency, a syntax error: one-line errors.
        let two = format!(
            "{text}\n[[machine]]\n{}",
            &text[text.find("name").unwrap()..]
        );
        assert!(parse_machine_file(&two).is_err());
        let neg = machine_file_text(&m, None).replace("llc_hit = 55.0", "llc_hit = -1.0");
        assert_ne!(neg, machine_file_text(&m, None));
        assert!(parse_machine_file(&neg).unwrap_err().contains("positive"));
        let e = parse_machine_file("[[machine]]\nname = \n").unwrap_err();
        assert!(e.starts_with("line 2"), "{e}");
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
