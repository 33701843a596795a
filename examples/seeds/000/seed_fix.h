/*
 * Seed 000's fix ("sched/task_group: Re-layout structure to reduce false sharing", Deng Pan,
 * v3, Aug 2023) applied to struct task_group as the 6.18 fixture kernel declares it
 * (CONFIG_FAIR_GROUP_SCHED, CONFIG_RT_GROUP_SCHED, CONFIG_EXT_GROUP_SCHED,
 * CONFIG_SCHED_AUTOGROUP, CONFIG_CFS_BANDWIDTH): rcu, list, siblings, children and parent
 * move between load_avg and rt_se, so rt_se and rt_rq land on the next cache line.
 * Written by hand from the patch's diff; member names as the fixture's BTF has them.
 */
struct task_group {
	struct cgroup_subsys_state css;
	int idle;
	struct sched_entity **se;
	struct cfs_rq **cfs_rq;
	unsigned long shares;
	atomic_long_t load_avg ____cacheline_aligned;

	struct rcu_head rcu;
	struct list_head list;

	struct list_head siblings;
	struct list_head children;

	struct task_group *parent;

	struct sched_rt_entity **rt_se;
	struct rt_rq **rt_rq;
	struct rt_bandwidth rt_bandwidth;

	struct scx_task_group scx;
	struct autogroup *autogroup;
	struct cfs_bandwidth cfs_bandwidth;
};
