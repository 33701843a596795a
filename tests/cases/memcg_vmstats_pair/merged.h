/* struct mem_cgroup after Feng Tang: mm: memcg: relayout structure mem_cgroup to avoid cache
 * interference (commit 4df910620bebb5cfe234af16ac8f6474b60215fd, Linux 5.10-rc6): the two
 * blocks exchanged, the stats block after the first padding and moving_account,
 * move_lock_task and the stats pointers after the second, so the pointers' line no longer
 * pairs with vmstats[]'s; 64 bytes smaller with 0day's config. */
struct mem_cgroup {
	char counters_and_limits[96];
	unsigned long move_charge_at_immigrate;
	int move_lock;
	unsigned long move_lock_flags;
	struct memcg_padding _pad1_;
	long vmstats[40];
	long vmevents[80];
	long memory_events[8];
	long memory_events_local[8];
	unsigned long socket_pressure;
	_Bool tcpmem_active;
	int tcpmem_pressure;
	int kmemcg_id;
	int kmem_state;
	void *objcg;
	void *objcg_list[2];
	struct memcg_padding _pad2_;
	int moving_account;
	void *move_lock_task;
	void *vmstats_local;
	void *vmstats_percpu;
};
