//! `cargo bench --bench optimize_all`: times the optimizer on every struct of the fixture BTF
//! with a synthetic hot set (up to 24 members touched, every third written from a varying
//! number of CPUs), and prints the median, the 99th percentile and the worst case, and how
//! many searches proved their optimum. Goal (issue 4): well under a second on any struct.

use std::time::Instant;

use lineup::analysis::cost::{self, Queueing, Stream};
use lineup::analysis::machine::preset;
use lineup::analysis::optimize::{Constraints, optimize};
use lineup::layout::{distinct_named, layout};
use lineup::readers::{Format, InputFile, load};

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/vmlinux-6.18.44.btf");
    let file = InputFile::open(std::path::Path::new(path)).expect("fixture BTF");
    let types = load(&file, Format::Btf, None).expect("BTF loads");
    let machine = preset("icelake-2s").unwrap();
    let mut times = Vec::new();
    let (mut optimal, mut total, mut budget, mut order_cost, mut failed) =
        (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut worst = (0.0f64, String::new());
    for id in distinct_named(&types) {
        if types.is_union(id) {
            continue;
        }
        let Some(l) = layout(&types, id, 64) else {
            continue;
        };
        let units = cost::units(&types, &l);
        if units.len() < 2 {
            continue;
        }
        // Deterministic pseudo-random hot set.
        let mut streams = Vec::new();
        let mut x = id as u64 * 2654435761 + 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (u, unit) in units.iter().enumerate().take(24) {
            let written = u % 3 == 0;
            streams.push(Stream {
                unit: u,
                inner: 0,
                size: unit.size.clamp(1, 8),
                field: unit.name.clone(),
                path: format!("path{}", next() % 6),
                reads: if written {
                    0.0
                } else {
                    (next() % 100 + 1) as f64
                },
                writes: if written {
                    (next() % 100 + 1) as f64
                } else {
                    0.0
                },
                rmw: 0.0,
                cpus: [1u32, 8, 40, 160][(next() % 4) as usize],
                cpu_list: Vec::new(),
                lock: false,
                run_atomic: false,
                under_lock: None,
            });
        }
        let current = cost::current_placement(&l, &units);
        let q = Queueing {
            reference: cost::busiest_line(&streams, &current, 64, &machine),
            utilization: cost::DEFAULT_UTILIZATION,
        };
        let t = Instant::now();
        let plan = optimize(
            &units,
            &streams,
            &current,
            l.forced_align.unwrap_or(1),
            &Constraints::default(),
            64,
            &machine,
            &q,
        );
        let dt = t.elapsed().as_secs_f64();
        total += 1;
        match &plan {
            Ok(p) if p.optimal => optimal += 1,
            Ok(p) if p.nodes > lineup::analysis::optimize::NODE_BUDGET => budget += 1,
            Ok(_) => order_cost += 1,
            Err(_) => failed += 1,
        }
        if dt > worst.0 {
            worst = (dt, l.name.clone());
        }
        times.push(dt);
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize] * 1e3;
    println!(
        "lineup optimize over {total} structs of the fixture BTF (synthetic hot sets of up to 24 members):"
    );
    println!(
        "  median {:.3} ms, p99 {:.3} ms, worst {:.1} ms (struct {}); goal < 1000 ms: {}",
        pct(0.5),
        pct(0.99),
        worst.0 * 1e3,
        worst.1,
        if worst.0 < 1.0 { "met" } else { "MISSED" }
    );
    println!(
        "  proved optimal: {optimal} of {total}; search budget spent: {budget}; concrete order costlier than the best grouping: {order_cost}; no layout: {failed}"
    );
}
