/* crossbeam-queue src/array_queue.rs: ArrayQueue holds head: CachePadded<AtomicUsize> and
 * tail: CachePadded<AtomicUsize>, then buffer, cap and one_lap. crossbeam-utils' CachePadded
 * is 128-byte aligned on x86_64 because the spatial prefetcher pulls pairs of 64-byte lines
 * (its documentation, citing Intel's optimization manual). */
struct array_queue {
	size_t head __attribute__((aligned(128)));
	size_t tail __attribute__((aligned(128)));
	void *buffer __attribute__((aligned(128)));
	size_t cap;
	size_t one_lap;
};
