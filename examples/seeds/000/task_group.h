/*
 * struct task_group as the 6.18 fixture kernel lays it out (data/vmlinux-6.18.44.btf;
 * `lineup layout --btf data/vmlinux-6.18.44.btf task_group` or `pahole -C task_group` on the
 * same file print it). Written by hand from that BTF: member order, types and the forced
 * alignment are the BTF's; the #ifdef blocks are the configuration the fixture was built with,
 * so that `lineup optimize --header` shows how its patch keeps them whole. Comments are ours.
 */
struct task_group {
	struct cgroup_subsys_state css;

#ifdef CONFIG_GROUP_SCHED_WEIGHT
	/* A positive value indicates that this is a SCHED_IDLE group. */
	int idle;
#endif

#ifdef CONFIG_FAIR_GROUP_SCHED
	/* per-CPU entities and runqueues of the group */
	struct sched_entity **se;
	struct cfs_rq **cfs_rq;
	unsigned long shares;
	/*
	 * The sum of the CPUs' load contributions; written on every load update of every
	 * CPU (update_tg_load_avg) and read when shares are computed (update_cfs_group).
	 */
	atomic_long_t load_avg ____cacheline_aligned;
#endif

#ifdef CONFIG_RT_GROUP_SCHED
	struct sched_rt_entity **rt_se;
	struct rt_rq **rt_rq;

	struct rt_bandwidth rt_bandwidth;
#endif

#ifdef CONFIG_EXT_GROUP_SCHED
	struct scx_task_group scx;
#endif

	struct rcu_head rcu;
	struct list_head list;

	struct task_group *parent;
	struct list_head siblings;
	struct list_head children;

#ifdef CONFIG_SCHED_AUTOGROUP
	struct autogroup *autogroup;
#endif

	struct cfs_bandwidth cfs_bandwidth;
};
