/* tests/cases/memcg_vmstats_pair: the part of struct mem_cgroup (include/linux/memcontrol.h,
 * Linux 5.10-rc5, x86_64) around its two MEMCG_PADDING blocks, after commit bd0b230fe145
 * ("mm/memcg: unify swap and memsw page counters") moved them by one struct page_counter.
 * From Feng Tang's description (linux-kernel, 2020-11-25): the block after the first padding
 * holds moving_account, move_lock_task and the two per-CPU stats pointers, vmstats_local and
 * vmstats_percpu, on one line; the stats block after the second padding starts with the
 * atomic vmstats[] array on the next line, and the two lines are one aligned 128-byte pair
 * (2N, 2N+1). The members before the first padding stand as one 96-byte block that puts it
 * on an even line; the array lengths are stand-ins (the diff itself was not read here).
 * MEMCG_PADDING is ____cacheline_internodealigned_in_smp: 64 bytes on x86_64.
 * Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct memcg_padding {
	char x[0];
} __attribute__((aligned(64)));

struct mem_cgroup {
	char counters_and_limits[96];
	unsigned long move_charge_at_immigrate;
	int move_lock;
	unsigned long move_lock_flags;
	struct memcg_padding _pad1_;
	int moving_account;
	void *move_lock_task;
	void *vmstats_local;
	void *vmstats_percpu;
	struct memcg_padding _pad2_;
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
};

struct mem_cgroup memcg;
