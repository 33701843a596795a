/*
 * false_sharing.c - the smallest demonstration of false sharing, for `lineup bench`.
 *
 * Two threads each increment their own counter. Built plainly, both counters sit next to
 * each other in one struct, on one cache line, and every increment of one thread steals the
 * line from the other. Built with -DPADDED, each counter is alignas(64) and owns its line.
 * Built with -DPADDED_PAIR, each is alignas(128) and owns an aligned pair of lines: where the
 * L2's adjacent-line prefetcher fetches pairs (Intel), two lines of one pair still contend,
 * and a -DPADDED build whose counters share a pair can be slower than no padding at all.
 *
 *   cc -O2 -pthread -o fs_adjacent examples/ab/false_sharing.c
 *   cc -O2 -pthread -DPADDED -o fs_padded examples/ab/false_sharing.c
 *   lineup bench --a ./fs_adjacent --b ./fs_padded --regex 'cpu: ([0-9.]+) s' --lower-is-better
 *   cc -O2 -pthread -DPADDED_PAIR -o fs_pair examples/ab/false_sharing.c
 *
 * Usage: false_sharing [ITERATIONS [CPU CPU]]   (default 20000000 per thread, CPUs 0 and 1)
 * Prints "LAYOUT: elapsed: SECONDS s cpu: SECONDS s": the wall time of the two threads, and
 * the CPU time they used together. The threads are pinned to CPUs 0 and 1 (or the two given:
 * in a VM two vCPUs can be one core's hardware threads, which share an L1 and show no false
 * sharing) when there are two and start together at a barrier. On a machine shared with other work, the CPU time is the
 * steadier figure: time spent waiting for the line counts, time spent preempted does not.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(PADDED_PAIR)
#define LINE_ALIGNED alignas(128)
#elif defined(PADDED)
#define LINE_ALIGNED alignas(64)
#else
#define LINE_ALIGNED
#endif

struct counters {
	LINE_ALIGNED unsigned long a;
	LINE_ALIGNED unsigned long b;
};

#ifdef PADDED_PAIR
/* its members' alignment aligns it to 128: an alignas(64) here would not compile */
static struct counters counters;
#else
static alignas(64) struct counters counters;
#endif
static unsigned long iterations = 20000000UL;
static pthread_barrier_t start_line;

struct worker {
	volatile unsigned long *counter;
	int cpu;
	double cpu_seconds;
};

static double seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *count(void *arg)
{
	struct worker *w = arg;
	/* volatile: every increment is a real load and store of the counter's line */
	volatile unsigned long *c = w->counter;
	cpu_set_t set;
	double t0;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	/* best effort: a machine with one CPU still runs the demo, without contention */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(&start_line);
	t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
	for (unsigned long i = 0; i < iterations; i++)
		*c = *c + 1;
	w->cpu_seconds = seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker wa = { &counters.a, 0, 0 }, wb = { &counters.b, 1, 0 };
	pthread_t ta, tb;
	double start;

	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 0);
	if (argc > 3) {
		wa.cpu = atoi(argv[2]);
		wb.cpu = atoi(argv[3]);
	}
	pthread_barrier_init(&start_line, NULL, 2);
	start = seconds(CLOCK_MONOTONIC);
	if (pthread_create(&ta, NULL, count, &wa) ||
	    pthread_create(&tb, NULL, count, &wb)) {
		fprintf(stderr, "false_sharing: pthread_create failed\n");
		return 1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	if (counters.a != iterations || counters.b != iterations) {
		fprintf(stderr, "false_sharing: lost increments\n");
		return 1;
	}
	printf("%s: elapsed: %.6f s cpu: %.6f s\n",
	       sizeof(struct counters) > 128 ? "pair-padded" : sizeof(struct counters) > 64 ? "padded" : "adjacent",
	       seconds(CLOCK_MONOTONIC) - start, wa.cpu_seconds + wb.cpu_seconds);
	return 0;
}
