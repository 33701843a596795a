/* tests/cases/redis_io_threads_pending: Redis's per-IO-thread pending counts
 * (src/networking.c, io_threads_pending[IO_THREADS_MAX_NUM], atomic unsigned longs side by
 * side) before pull request 10892; the first four of the 128 entries, as a struct. Compiled
 * with cc -g -c by tests/cases.rs. */
struct io_pending {
	unsigned long t0;
	unsigned long t1;
	unsigned long t2;
	unsigned long t3;
};

struct io_pending io_threads_pending;
