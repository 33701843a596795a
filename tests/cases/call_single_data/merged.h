/* Huang Ying, "smp: Avoid using two cache lines for struct call_single_data": the type
 * call_single_data_t is aligned to its own size (32 bytes), so no instance crosses a line. */
struct call_single_data {
	struct llist_node_r llist;
	void (*func)(void *info);
	void *info;
	unsigned int flags;
} __attribute__((aligned(32)));
