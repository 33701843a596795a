/* Redis pull request 10892: io_threads_pending becomes an array of structs each aligned to
 * CACHE_LINE_SIZE (64). */
struct io_pending {
	unsigned long t0 __attribute__((aligned(64)));
	unsigned long t1 __attribute__((aligned(64)));
	unsigned long t2 __attribute__((aligned(64)));
	unsigned long t3 __attribute__((aligned(64)));
};
