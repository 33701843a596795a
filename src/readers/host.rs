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
    MachineModel::from_topology("host", cpus, smt, cores_per_llc, nodes, line.unwrap_or(64))
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
