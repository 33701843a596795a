/* crossbeam-epoch struct Local after pull request 1026: epoch: CachePadded<AtomicEpoch>.
 * CachePadded aligns to 128 bytes on x86_64. */
struct local {
	void *entry;
	void *collector;
	struct bag bag;
	uintptr_t guard_count;
	uintptr_t handle_count;
	uintptr_t pin_count;
	uintptr_t epoch __attribute__((aligned(128)));
};
