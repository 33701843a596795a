/* tests/cases/call_single_data: struct call_single_data of Linux 4.13 (include/linux/smp.h,
 * x86_64) before Huang Ying's fix: 32 bytes, 8-byte aligned, so an instance embedded in another
 * structure or allocated at an 8-byte boundary can straddle two cache lines. Compiled with
 * cc -g -c by tests/cases.rs. */
struct llist_node_r { void *next; };

struct call_single_data {
	struct llist_node_r llist;
	void (*func)(void *info);
	void *info;
	unsigned int flags;
};

struct call_single_data csd;
