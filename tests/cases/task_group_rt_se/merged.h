/* struct task_group as Deng Pan's patch proposes it ("sched/task_group: Re-layout structure to
 * reduce false sharing", LKML 2023-05-25), applied to the 6.18.44 fixture's layout: rcu, list,
 * siblings, children and parent move up to follow load_avg, so rt_se and rt_rq start the
 * second line of the block load_avg's alignment opens. Same-sized C types replace the
 * kernel's (sizes from the fixture BTF). */
struct css_r { char b[208]; };
struct list_head_r { void *next, *prev; };
struct rcu_head_r { void *next; void *func; };
struct rt_bandwidth_r { char b[96]; };
struct scx_task_group_r { };
struct cfs_bandwidth_r { char b[240]; };

struct task_group {
	struct css_r css;
	int idle;
	void *se;
	void *cfs_rq;
	unsigned long shares;
	long load_avg __attribute__((aligned(64)));
	struct rcu_head_r rcu;
	struct list_head_r list;
	struct list_head_r siblings;
	struct list_head_r children;
	void *parent;
	void *rt_se;
	void *rt_rq;
	struct rt_bandwidth_r rt_bandwidth;
	struct scx_task_group_r scx;
	void *autogroup;
	struct cfs_bandwidth_r cfs_bandwidth;
} __attribute__((aligned(64)));
