/*
 * false_sharing.c - the smallest demonstration of false sharing, for `lineup bench`.
 *
 * Two threads each increment their own counter. Built plainly, both counters sit next to
 * each other in one struct, on one cache line, and every increment of one thread steals the
 * line from the other. Built with -DPADDED, each counter is alignas(64) and owns its line.
 *
 *   cc -O2 -pthread -o fs_adjacent examples/ab/false_sharing.c
 *   cc -O2 -pthread -DPADDED -o fs_padded examples/ab/false_sharing.c
 *   lineup bench --a ./fs_adjacent --b ./fs_padded --regex 'elapsed: ([0-9.]+) s' --lower-is-better
 *
 * Usage: false_sharing [ITERATIONS]   (default 20000000 per thread)
 * Prints "elapsed: SECONDS s", the wall time of the counting phase only.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef PADDED
#define LINE_ALIGNED alignas(64)
#else
#define LINE_ALIGNED
#endif

struct counters {
	LINE_ALIGNED unsigned long a;
	LINE_ALIGNED unsigned long b;
};

static alignas(64) struct counters counters;
static unsigned long iterations = 20000000UL;

static void *count(void *arg)
{
	/* volatile: every increment is a real load and store of the shared line */
	volatile unsigned long *c = arg;

	for (unsigned long i = 0; i < iterations; i++)
		*c = *c + 1;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	pthread_t ta, tb;
	double start;

	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 0);
	start = now();
	if (pthread_create(&ta, NULL, count, &counters.a) ||
	    pthread_create(&tb, NULL, count, &counters.b)) {
		fprintf(stderr, "false_sharing: pthread_create failed\n");
		return 1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	if (counters.a != iterations || counters.b != iterations) {
		fprintf(stderr, "false_sharing: lost increments\n");
		return 1;
	}
	printf("%s: elapsed: %.6f s\n", sizeof(struct counters) > 64 ? "padded" : "adjacent",
	       now() - start);
	return 0;
}
