/*
 * Seed 001's fix (Tim Chen, "Idle balancer: cache align nohz structure to improve idle load
 * balancing scalability", LKML 2011-10-19), copied member by member from its diff: each of the
 * four frequently written fields on a cache line of its own.
 */
struct nohz {
	atomic_t load_balancer ____cacheline_aligned;
	atomic_t first_pick_cpu ____cacheline_aligned;
	atomic_t second_pick_cpu ____cacheline_aligned;
	cpumask_var_t idle_cpus_mask ____cacheline_aligned;
	cpumask_var_t grp_idle_mask;
	unsigned long next_balance;     /* in jiffy units */
};
