//! The host's topology from sysfs (`/sys/devices/system/cpu`, `/sys/devices/system/node`),
//! as a [`MachineModel`] with generic latencies.

use std::path::Path;

use crate::analysis::machine::MachineModel;

/// Reads the topology under `sys` (normally `/sys`). Missing files fall back to one CPU, no
/// SMT, one node and 64-byte lines, so that a container without sysfs still gets a model.
pub fn read_host(sys: &Path) -> MachineModel {
    let cpu = sys.join("devices/system/cpu");
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let cpus = read(&cpu.join("online"))
        .map(|s| cpu_list_len(s.trim()))
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let smt = read(&cpu.join("cpu0/topology/thread_siblings_list"))
        .map(|s| cpu_list_len(s.trim()))
        .filter(|&n| n > 0)
        .unwrap_or(1);
    // The last-level cache is the highest-numbered cache index.
    let mut llc_cpus = None;
    let mut line = None;
    for index in (0..8).rev() {
        let dir = cpu.join(format!("cpu0/cache/index{index}"));
        if let Some(list) = read(&dir.join("shared_cpu_list")) {
            llc_cpus = Some(cpu_list_len(list.trim()));
            line = read(&dir.join("coherency_line_size")).and_then(|s| s.trim().parse().ok());
            break;
        }
    }
    let nodes = std::fs::read_dir(sys.join("devices/system/node"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("node") && n[4..].parse::<u32>().is_ok()
                })
                .count() as u32
        })
        .unwrap_or(1)
        .max(1);
    let cores_per_llc = llc_cpus.unwrap_or(cpus) / smt.max(1);
    let mut m =
        MachineModel::from_topology("host", cpus, smt, cores_per_llc, nodes, line.unwrap_or(64));
    // CPU 0's level-1 data (or unified) cache: its caches hold no instruction cache.
    m.l1d_bytes = cpu_caches(&cpu.join("cpu0"), 0)
        .iter()
        .find(|c| c.level == 1)
        .map(|c| c.bytes);
    m
}

/// The data and unified caches of CPU `n` (its sysfs directory `dir`, `cache/indexM`),
/// lowest level first.
fn cpu_caches(dir: &Path, n: u32) -> Vec<Cache> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut caches: Vec<Cache> = (0..16)
        .filter_map(|i| {
            let c = dir.join(format!("cache/index{i}"));
            let kind = read(&c.join("type"))?;
            if kind == "Instruction" {
                return None;
            }
            Some(Cache {
                level: read(&c.join("level"))?.parse().ok()?,
                kind,
                bytes: read(&c.join("size")).and_then(|s| parse_size(&s))?,
                line: read(&c.join("coherency_line_size"))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(64),
                shared_cpus: read(&c.join("shared_cpu_list"))
                    .map(|s| parse_cpu_list(&s))
                    .unwrap_or_else(|| vec![n]),
            })
        })
        .collect();
    caches.sort_by_key(|c| c.level);
    caches
}

/// One cache of a CPU, from `cpuN/cache/indexM`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub bytes: u64,
    pub line: u64,
    pub shared_cpus: Vec<u32>,
}

/// Where one online CPU sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    pub cpu: u32,
    /// The hardware threads of its core (`core_cpus_list`, older kernels
    /// `thread_siblings_list`), itself included.
    pub core: Vec<u32>,
    pub package: u32,
    /// The CPUs sharing its last-level cache (the highest level's `shared_cpu_list`).
    pub llc: Vec<u32>,
    pub node: u32,
    /// Its data and unified caches, lowest level first.
    pub caches: Vec<Cache>,
}

/// The host's topology: every online CPU, from sysfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub cpus: Vec<Cpu>,
    pub nodes: u32,
}

/// How far apart two CPUs are, nearest first: what a cache-line transfer between them crosses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PairClass {
    // The discriminants index `ALL`.
    /// Two hardware threads of one core.
    SmtSiblings,
    /// Two cores under one last-level cache.
    SameLlc,
    /// Two last-level caches of one NUMA node (AMD's CCXs, or two packages on one node).
    OtherLlcSameNode,
    /// Two NUMA nodes.
    OtherNode,
}

impl PairClass {
    pub const ALL: [PairClass; 4] = [
        PairClass::SmtSiblings,
        PairClass::SameLlc,
        PairClass::OtherLlcSameNode,
        PairClass::OtherNode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PairClass::SmtSiblings => "SMT siblings",
            PairClass::SameLlc => "same LLC",
            PairClass::OtherLlcSameNode => "other LLC, same node",
            PairClass::OtherNode => "other node",
        }
    }
}

/// One class of CPU pair on a machine: how many pairs it has, and the ones picked to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassPairs {
    pub class: PairClass,
    pub count: u64,
    pub picked: Vec<(u32, u32)>,
}

impl Topology {
    pub fn get(&self, cpu: u32) -> Option<&Cpu> {
        // Sorted by CPU number as read (the online list is ascending); else a scan.
        match self.cpus.binary_search_by_key(&cpu, |c| c.cpu) {
            Ok(i) => Some(&self.cpus[i]),
            Err(_) => self.cpus.iter().find(|c| c.cpu == cpu),
        }
    }

    /// The class of the pair `a`, `b` (both online, `a != b`).
    pub fn classify(&self, a: u32, b: u32) -> Option<PairClass> {
        let (x, y) = (self.get(a)?, self.get(b)?);
        Some(if x.node != y.node {
            PairClass::OtherNode
        } else if x.core.contains(&b) {
            PairClass::SmtSiblings
        } else if x.llc.contains(&b) {
            PairClass::SameLlc
        } else {
            PairClass::OtherLlcSameNode
        })
    }

    /// Pairs among `allowed` (all online CPUs when `None`) per class, in class order: the
    /// class's number of pairs and up to `per_class` representatives, chosen so that the
    /// representatives of one class share no CPU where the machine allows it (two different
    /// cores, LLCs or nodes rather than one measured twice).
    pub fn representative_pairs(
        &self,
        allowed: Option<&[u32]>,
        per_class: usize,
    ) -> Vec<ClassPairs> {
        let cpus: Vec<u32> = self
            .cpus
            .iter()
            .map(|c| c.cpu)
            .filter(|c| allowed.is_none_or(|a| a.contains(c)))
            .collect();
        // One pass over the pairs (480 CPUs: 115,000 of them), each classified once.
        let mut out: Vec<ClassPairs> = PairClass::ALL
            .iter()
            .map(|&class| ClassPairs {
                class,
                count: 0,
                picked: Vec::new(),
            })
            .collect();
        let mut used: Vec<Vec<u32>> = vec![Vec::new(); out.len()];
        for (i, &a) in cpus.iter().enumerate() {
            for &b in &cpus[i + 1..] {
                let Some(class) = self.classify(a, b) else {
                    continue;
                };
                let k = class as usize;
                let (entry, used) = (&mut out[k], &mut used[k]);
                entry.count += 1;
                if entry.picked.len() < per_class && !used.contains(&a) && !used.contains(&b) {
                    entry.picked.push((a, b));
                    used.extend([a, b]);
                }
            }
        }
        out.retain(|c| c.count > 0);
        out
    }

    /// Why each class this topology lacks among `allowed` is absent, one line each.
    pub fn absent_classes(&self, allowed: Option<&[u32]>) -> Vec<String> {
        let present: Vec<PairClass> = self
            .representative_pairs(allowed, 0)
            .into_iter()
            .map(|p| p.class)
            .collect();
        let n = self
            .cpus
            .iter()
            .filter(|c| allowed.is_none_or(|a| a.contains(&c.cpu)))
            .count();
        PairClass::ALL
            .into_iter()
            .filter(|c| !present.contains(c))
            .map(|c| {
                let why = match c {
                    _ if n < 2 => "fewer than two CPUs to measure on".to_string(),
                    PairClass::SmtSiblings => {
                        "no core has two hardware threads among these CPUs (core_cpus_list)"
                            .to_string()
                    }
                    PairClass::SameLlc => {
                        "no two cores share a last-level cache among these CPUs".to_string()
                    }
                    PairClass::OtherLlcSameNode => {
                        "every NUMA node has one last-level cache among these CPUs".to_string()
                    }
                    PairClass::OtherNode => format!(
                        "these CPUs are on one NUMA node ({} node(s) online)",
                        self.nodes
                    ),
                };
                format!("{}: not measured, {why}", c.name())
            })
            .collect()
    }

    /// The data/unified caches of the first CPU, lowest level first.
    pub fn caches(&self) -> &[Cache] {
        self.cpus.first().map(|c| &c.caches[..]).unwrap_or(&[])
    }

    /// What a calibration depends on: the CPU model and this topology (cores, LLCs, nodes,
    /// cache sizes), as 16 hex digits. A calibration made under another key is not used.
    pub fn key(&self, cpu_model: &str) -> String {
        let mut text = format!("{cpu_model}\n");
        for c in &self.cpus {
            text.push_str(&format!(
                "{} {:?} {} {:?} {}",
                c.cpu, c.core, c.package, c.llc, c.node
            ));
            for k in &c.caches {
                text.push_str(&format!(
                    " L{}{}:{}:{}:{:?}",
                    k.level, k.kind, k.bytes, k.line, k.shared_cpus
                ));
            }
            text.push('\n');
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// Reads every online CPU's place from sysfs under `sys` (normally `/sys`). A CPU whose
/// topology files are missing is its own core, package 0, its own LLC, node 0.
pub fn read_topology(sys: &Path) -> Topology {
    let cpu_dir = sys.join("devices/system/cpu");
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let online = read(&cpu_dir.join("online"))
        .map(|s| parse_cpu_list(&s))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| vec![0]);
    let node_dir = sys.join("devices/system/node");
    let mut node_of: Vec<(u32, Vec<u32>)> = std::fs::read_dir(&node_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    let n = name.strip_prefix("node")?.parse::<u32>().ok()?;
                    let list = read(&e.path().join("cpulist")).unwrap_or_default();
                    Some((n, parse_cpu_list(&list)))
                })
                .collect()
        })
        .unwrap_or_default();
    node_of.sort();
    let nodes = (node_of.len() as u32).max(1);
    let cpus = online
        .iter()
        .map(|&n| {
            let dir = cpu_dir.join(format!("cpu{n}"));
            let topo = dir.join("topology");
            let core = read(&topo.join("core_cpus_list"))
                .or_else(|| read(&topo.join("thread_siblings_list")))
                .map(|s| parse_cpu_list(&s))
                .filter(|l| l.contains(&n))
                .unwrap_or_else(|| vec![n]);
            let package = read(&topo.join("physical_package_id"))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let caches = cpu_caches(&dir, n);
            let llc = caches
                .last()
                .map(|c| c.shared_cpus.clone())
                .filter(|l| l.contains(&n))
                .unwrap_or_else(|| core.clone());
            let node = node_of
                .iter()
                .find(|(_, l)| l.contains(&n))
                .map(|(id, _)| *id)
                .unwrap_or(0);
            Cpu {
                cpu: n,
                core,
                package,
                llc,
                node,
                caches,
            }
        })
        .collect();
    Topology { cpus, nodes }
}

/// A sysfs cache size such as `32K`, `1024K`, `32M` or a plain byte count.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// The CPUs of a sysfs CPU list such as `0-3,8,10-11`, ascending, without repeats; `None`
/// when it is not one.
pub fn try_parse_cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// A CPU list in sysfs's form (`0-3,8`), from ascending CPUs.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// As [`try_parse_cpu_list`], ignoring what does not parse.
pub fn parse_cpu_list(list: &str) -> Vec<u32> {
    try_parse_cpu_list(list).unwrap_or_default()
}

/// `model name` (x86) or the first `CPU part`/`Hardware` line of /proc/cpuinfo.
pub fn cpu_model(cpuinfo: &str) -> String {
    ["model name", "Hardware", "CPU part", "cpu"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

/// Where `lineup calibrate` keeps the host's calibration, by topology key.
pub fn calibration_path(cache_dir: &Path, key: &str) -> std::path::PathBuf {
    cache_dir.join(format!("machine-{key}.toml"))
}

/// The host's machine model and where its latencies come from: the calibration cached under
/// `cache_dir` for this CPU model and topology when there is one, else the topology with
/// generic latencies. A cached file that does not parse, or was made for another key, is
/// not used (and said).
pub fn host_machine(sys: &Path, cpuinfo: &str, cache_dir: &Path) -> MachineModel {
    let mut m = read_host(sys);
    let l1d_bytes = m.l1d_bytes;
    let key = read_topology(sys).key(&cpu_model(cpuinfo));
    let path = calibration_path(cache_dir, &key);
    let found = std::fs::read_to_string(&path).ok().map(|text| {
        crate::analysis::machine::parse_machine_file(&text).and_then(|(c, cal)| match cal {
            Some(cal) if cal.key == key => Ok((c, cal)),
            Some(cal) => Err(format!("made for topology key {}", cal.key)),
            None => Err("no [calibration] table".to_string()),
        })
    });
    // Intel parts pair lines in L2 (data/machines.toml, adjacent_line_pairs): the guess
    // where no calibration measured it.
    let intel = cpuinfo
        .lines()
        .any(|l| l.starts_with("vendor_id") && l.contains("GenuineIntel"));
    let mut pairs_measured = false;
    match found {
        Some(Ok((c, cal))) => {
            // What calibrate decided from the two-writer figures, by the rule it used.
            pairs_measured = matches!(
                crate::analysis::machine::decide_pairs(&cal.neighbours),
                crate::analysis::machine::PairDecision::Decided { .. }
            );
            m = MachineModel {
                name: "host".to_string(),
                description: format!(
                    "{}; latencies measured by lineup calibrate{} on {} ({})",
                    m.description,
                    if cal.quick { " --quick" } else { "" },
                    cal.date,
                    path.display()
                ),
                ..c
            };
        }
        Some(Err(e)) => {
            m.description = format!(
                "{}; latencies guessed ({}: {e}; run `lineup calibrate`)",
                m.description,
                path.display()
            )
        }
        None => {
            m.description = format!(
                "{}; latencies guessed (no calibration for this CPU and topology: run `lineup calibrate`)",
                m.description
            )
        }
    }
    if !pairs_measured {
        m.adjacent_line_pairs = intel;
        m.pair_share = None;
    }
    // A machine file calibrated before it recorded the L1 data cache: sysfs's.
    m.l1d_bytes = m.l1d_bytes.or(l1d_bytes);
    m
}

/// Number of CPUs in a sysfs CPU list such as `0-3,8,10-11`.
pub fn cpu_list_len(list: &str) -> u32 {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(part.parse::<u32>().is_ok()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0-3,8,10-11"), 7);
        assert_eq!(cpu_list_len("0"), 1);
        assert_eq!(cpu_list_len(""), 0);
        assert_eq!(cpu_list_len("5-2"), 0);
    }

    /// Writes a fake sysfs: 2 nodes, each with 2 LLCs of 2 cores of 2 threads (16 CPUs,
    /// numbered like Linux does on x86: the second threads after all the first ones).
    fn fake_two_node_tree(root: &Path) {
        let cpu = root.join("devices/system/cpu");
        let w = |p: std::path::PathBuf, s: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{s}\n")).unwrap();
        };
        w(cpu.join("online"), "0-15");
        for n in 0..16u32 {
            let core = n % 8; // threads n and n + 8 share a core
            let llc = core / 2; // two cores per LLC
            let node = llc / 2; // two LLCs per node
            let d = cpu.join(format!("cpu{n}"));
            w(
                d.join("topology/core_cpus_list"),
                &format!("{},{}", core, core + 8),
            );
            w(d.join("topology/physical_package_id"), &node.to_string());
            let llc_cpus = format!(
                "{}-{},{}-{}",
                llc * 2,
                llc * 2 + 1,
                llc * 2 + 8,
                llc * 2 + 9
            );
            for (i, (level, kind, size, shared)) in [
                (1, "Data", "48K", format!("{},{}", core, core + 8)),
                (1, "Instruction", "32K", format!("{},{}", core, core + 8)),
                (2, "Unified", "2048K", format!("{},{}", core, core + 8)),
                (3, "Unified", "16M", llc_cpus.clone()),
            ]
            .into_iter()
            .enumerate()
            {
                let c = d.join(format!("cache/index{i}"));
                w(c.join("level"), &level.to_string());
                w(c.join("type"), kind);
                w(c.join("size"), size);
                w(c.join("shared_cpu_list"), &shared);
                w(c.join("coherency_line_size"), "64");
            }
        }
        w(root.join("devices/system/node/node0/cpulist"), "0-3,8-11");
        w(root.join("devices/system/node/node1/cpulist"), "4-7,12-15");
    }

    #[test]
    fn a_fake_topology_gives_each_class_its_pairs() {
        let root = std::env::temp_dir().join(format!("lineup-topo-{}", std::process::id()));
        fake_two_node_tree(&root);
        let t = read_topology(&root);
        // The host's model takes its L1 data cache (48K here), not the instruction cache.
        let m = read_host(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(m.l1d_bytes, Some(48 * 1024));
        assert_eq!(m.capacity_cache().from, "machine");
        assert_eq!((t.cpus.len(), t.nodes), (16, 2));
        let c5 = t.get(5).unwrap();
        assert_eq!(
            (&c5.core[..], c5.package, &c5.llc[..], c5.node),
            (&[5, 13][..], 1, &[4, 5, 12, 13][..], 1)
        );
        assert_eq!(
            c5.caches
                .iter()
                .map(|c| (c.level, c.bytes))
                .collect::<Vec<_>>(),
            [(1, 48 << 10), (2, 2 << 20), (3, 16 << 20)]
        );
        use PairClass::*;
        assert_eq!(t.classify(0, 8), Some(SmtSiblings));
        assert_eq!(t.classify(0, 1), Some(SameLlc));
        assert_eq!(t.classify(0, 9), Some(SameLlc));
        assert_eq!(t.classify(0, 2), Some(OtherLlcSameNode));
        assert_eq!(t.classify(3, 11), Some(SmtSiblings));
        assert_eq!(t.classify(0, 4), Some(OtherNode));
        assert_eq!(t.classify(0, 99), None);
        let pairs = t.representative_pairs(None, 2);
        // 120 pairs: 8 SMT, 4 LLCs x (C(4,2) - 2) = 16 same LLC, per node 8x8 - ... = 32
        // other LLC same node, 8 x 8 = 64 across nodes.
        let summary: Vec<(PairClass, u64, Vec<(u32, u32)>)> = pairs
            .into_iter()
            .map(|p| (p.class, p.count, p.picked))
            .collect();
        assert_eq!(
            summary,
            vec![
                (SmtSiblings, 8, vec![(0, 8), (1, 9)]),
                (SameLlc, 16, vec![(0, 1), (2, 3)]),
                (OtherLlcSameNode, 32, vec![(0, 2), (1, 3)]),
                (OtherNode, 64, vec![(0, 4), (1, 5)]),
            ]
        );
        assert!(t.absent_classes(None).is_empty());
        // On one thread per core of node 0, only two classes remain, and the others say why.
        let some = [0, 1, 2, 3];
        let classes: Vec<PairClass> = t
            .representative_pairs(Some(&some), 1)
            .into_iter()
            .map(|p| p.class)
            .collect();
        assert_eq!(classes, [SameLlc, OtherLlcSameNode]);
        let absent = t.absent_classes(Some(&some));
        assert_eq!(absent.len(), 2, "{absent:?}");
        assert!(
            absent[0].starts_with("SMT siblings: not measured"),
            "{absent:?}"
        );
        assert!(
            absent[1].starts_with("other node: not measured"),
            "{absent:?}"
        );
        // The key changes with the topology and the CPU model.
        let mut other = t.clone();
        other.cpus[3].node = 1;
        assert_ne!(t.key("X"), other.key("X"));
        assert_ne!(t.key("X"), t.key("Y"));
        assert_eq!(t.key("X"), t.key("X"));
    }

    #[test]
    fn cpuinfo_model() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.128\n";
        assert_eq!(cpu_model(text), "AMD EPYC");
        assert_eq!(cpu_model(""), "unknown CPU");
    }

    #[test]
    fn the_host_uses_a_calibration_made_for_its_topology_only() {
        let root = std::env::temp_dir().join(format!("lineup-hostcal-{}", std::process::id()));
        fake_two_node_tree(&root);
        let cache = root.join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let cpuinfo = "model name\t: Fake CPU\n";
        let guessed = host_machine(&root, cpuinfo, &cache);
        assert!(
            guessed.description.contains("latencies guessed"),
            "{guessed:?}"
        );
        let key = read_topology(&root).key("Fake CPU");
        let mut measured = guessed.clone();
        measured.local_hitm = 77.5;
        let cal = crate::analysis::machine::Calibration {
            schema: 1,
            date: "2026-11-24T10:00:00Z".into(),
            kernel: "k".into(),
            cpu_model: "Fake CPU".into(),
            key: key.clone(),
            cpus: "0-15".into(),
            quick: false,
            ghz: 3.0,
            ghz_method: "m".into(),
            method: "m".into(),
            transfer: vec![],
            load: vec![],
            neighbours: vec![],
            absent: vec![],
            derived: vec![],
        };
        let path = calibration_path(&cache, &key);
        std::fs::write(
            &path,
            crate::analysis::machine::machine_file_text(&measured, Some(&cal)),
        )
        .unwrap();
        let used = host_machine(&root, cpuinfo, &cache);
        assert_eq!(used.local_hitm, 77.5);
        // Adjacent-line pairs: the vendor's guess where the calibration did not decide them,
        // what it measured where it did.
        let intel = "vendor_id\t: GenuineIntel\nmodel name\t: Fake CPU\n";
        assert!(host_machine(&root, intel, &cache).adjacent_line_pairs);
        let mut no_pairs = measured.clone();
        no_pairs.adjacent_line_pairs = false;
        // Figures that decide (one line 20 ns, the pair and the control 2 ns): what the file's
        // [[machine]] says about pairs is what calibrate measured.
        let figure = |what: &str, ns: f64| crate::analysis::machine::Measured {
            what: what.into(),
            cpus: vec![vec![0, 1]],
            bytes: None,
            ns,
            cycles: 3.0 * ns,
            spread_ns: [ns, ns],
            repetitions: 7,
            samples: 1 << 20,
        };
        let decided = crate::analysis::machine::Calibration {
            neighbours: vec![
                figure("one line", 20.0),
                figure("one aligned pair", 2.0),
                figure("two pairs apart", 2.0),
            ],
            ..cal.clone()
        };
        std::fs::write(
            &path,
            crate::analysis::machine::machine_file_text(&no_pairs, Some(&decided)),
        )
        .unwrap();
        assert!(!host_machine(&root, intel, &cache).adjacent_line_pairs);
        let mut dear = measured.clone();
        dear.adjacent_line_pairs = true;
        dear.pair_share = Some(1.56);
        std::fs::write(
            &path,
            crate::analysis::machine::machine_file_text(&dear, Some(&decided)),
        )
        .unwrap();
        let read = host_machine(&root, "model name\t: Fake CPU\n", &cache);
        assert!(
            read.adjacent_line_pairs && read.pair_share == Some(1.56),
            "{read:?}"
        );
        std::fs::write(
            &path,
            crate::analysis::machine::machine_file_text(&measured, Some(&cal)),
        )
        .unwrap();
        assert!(
            used.description
                .contains("measured by lineup calibrate on 2026-11-24"),
            "{used:?}"
        );
        // Another CPU model has another key: the file is not its.
        let other = host_machine(&root, "model name\t: Other CPU\n", &cache);
        assert_eq!(other.local_hitm, guessed.local_hitm);
        // A file under the right name made for another key is refused, and said.
        let wrong = crate::analysis::machine::Calibration {
            key: "ffff".into(),
            ..cal
        };
        std::fs::write(
            &path,
            crate::analysis::machine::machine_file_text(&measured, Some(&wrong)),
        )
        .unwrap();
        let refused = host_machine(&root, cpuinfo, &cache);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(refused.local_hitm, guessed.local_hitm);
        assert!(
            refused.description.contains("made for topology key ffff"),
            "{refused:?}"
        );
    }

    #[test]
    fn sizes_and_lists() {
        assert_eq!(parse_size("32K"), Some(32768));
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(try_parse_cpu_list("3,0-2,2"), Some(vec![0, 1, 2, 3]));
        assert_eq!(try_parse_cpu_list("1-x"), None);
        assert_eq!(try_parse_cpu_list("4-2"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn this_machines_topology_has_its_online_cpus() {
        let t = read_topology(Path::new("/sys"));
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Every online CPU is described, each in its own core and LLC lists.
        assert!(t.cpus.len() >= n.min(1), "{t:?}");
        for c in &t.cpus {
            assert!(c.core.contains(&c.cpu) && c.llc.contains(&c.cpu), "{c:?}");
        }
        // The classes present are those its pairs fall in, each pair in exactly one class.
        let pairs = t.representative_pairs(None, 1);
        let total: u64 = pairs.iter().map(|p| p.count).sum();
        let m = t.cpus.len() as u64;
        assert_eq!(total, m * (m - 1) / 2);
        assert_eq!(pairs.len() + t.absent_classes(None).len(), 4);
    }

    #[test]
    fn a_fake_sysfs_tree() {
        let root = std::env::temp_dir().join(format!("lineup-sys-{}", std::process::id()));
        let cpu = root.join("devices/system/cpu");
        std::fs::create_dir_all(cpu.join("cpu0/topology")).unwrap();
        std::fs::create_dir_all(cpu.join("cpu0/cache/index3")).unwrap();
        std::fs::create_dir_all(root.join("devices/system/node/node0")).unwrap();
        std::fs::create_dir_all(root.join("devices/system/node/node1")).unwrap();
        std::fs::write(cpu.join("online"), "0-15\n").unwrap();
        std::fs::write(cpu.join("cpu0/topology/thread_siblings_list"), "0,8\n").unwrap();
        std::fs::write(cpu.join("cpu0/cache/index3/shared_cpu_list"), "0-7\n").unwrap();
        std::fs::write(cpu.join("cpu0/cache/index3/coherency_line_size"), "128\n").unwrap();
        let m = read_host(&root);
        std::fs::remove_dir_all(&root).unwrap();
        // No level-1 cache described: the size term's assumed one.
        assert_eq!(m.l1d_bytes, None);
        assert_eq!(
            (
                m.cpus,
                m.smt,
                m.cores_per_llc,
                m.llcs,
                m.numa_nodes,
                m.cacheline_size
            ),
            (16, 2, 4, 2, 2, 128)
        );
    }
}
