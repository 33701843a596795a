/* Patch 1 of the seed (Pan Deng, "sched/rt: Optimize cpupri_vec layout to mitigate cache
 * line contention", v2, 2025) as one vector sees it: the patch puts all counts in one array
 * and all masks in another, so a level's count and its mask pointer never share a line. */
struct cpupri_vec {
	atomic_t count;
	cpumask_var_t mask ____cacheline_aligned;
};
