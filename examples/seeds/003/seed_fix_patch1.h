/*
 * Seed 003, patch 1 ("sched/rt: Optimize cpupri_vec layout to mitigate cache line
 * contention", Pan Deng, v2, 2025), in the form its author posted as the simple alternative
 * (LKML, 2 Apr 2026, "RE: [PATCH v2 1/4]"): `struct cpupri cpupri ____cacheline_aligned;` in
 * struct root_domain. Member order as the 6.18 fixture kernel's BTF has it. Patch 2's diff
 * (the root_domain reorder) was not at hand, so it is not expressed here.
 */
struct root_domain {
	atomic_t refcount;
	atomic_t rto_count;
	struct rcu_head rcu;
	cpumask_var_t span;
	cpumask_var_t online;
	bool overloaded;
	bool overutilized;
	cpumask_var_t dlo_mask;
	atomic_t dlo_count;
	struct dl_bw dl_bw;
	struct cpudl cpudl;
	u64 visit_cookie;
	struct irq_work rto_push_work;
	raw_spinlock_t rto_lock;
	int rto_loop;
	int rto_cpu;
	atomic_t rto_loop_next;
	atomic_t rto_loop_start;
	cpumask_var_t rto_mask;
	struct cpupri cpupri ____cacheline_aligned;
	struct perf_domain *pd;
};
