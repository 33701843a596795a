/*
 * Replica of seed 001's hot path (Tim Chen, "Idle balancer: cache align nohz structure to
 * improve idle load balancing scalability", 2011): CPUs of a pipe ping-pong workload go idle
 * and wake up all the time, and each transition goes through select_nohz_load_balancer()
 * (Linux 3.1, kernel/sched_fair.c) on the global `nohz`:
 *
 *   idle entry (tick_nohz_stop_sched_tick):   set the CPU's bit in idle_cpus_mask; if it was
 *       first_pick_cpu or second_pick_cpu, give them up (cmpxchg); take load_balancer when
 *       nobody has it (cmpxchg)
 *   idle exit (tick_nohz_restart_sched_tick): clear the bit; give load_balancer up if held
 *   busy tick (nohz_kick_needed):             claim first_pick_cpu / second_pick_cpu (cmpxchg)
 *                                             and read next_balance
 *
 * Our reading of what 3.1 does, written from scratch; the struct is `struct nohz` of
 * nohz.c beside this file (CONFIG_CPUMASK_OFFSTACK: the masks are pointers to bitmaps
 * allocated elsewhere). Two layouts, chosen on the command line:
 *
 *   current  the kernel's: all six members on one cache line
 *   seed     the seed's fix (seed_fix.h): load_balancer, first_pick_cpu, second_pick_cpu and
 *            idle_cpus_mask each ____cacheline_aligned
 *
 *   cc -O2 -pthread idle.c -o idle
 *   ./idle current 300            # layout, milliseconds [threads] [work]
 *
 * It prints "transitions/s: N" (wall clock, all threads) and "together transitions/s: N"
 * (summed over threads, counted only while all threads ran at once: on a shared machine, the
 * figure to compare).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_CPUS 64
#define NO_CPU NR_CPUS

typedef struct { int counter; } atomic_t;
typedef unsigned long *cpumask_var_t;

struct nohz {
	atomic_t load_balancer;
	atomic_t first_pick_cpu;
	atomic_t second_pick_cpu;
	cpumask_var_t idle_cpus_mask;
	cpumask_var_t grp_idle_mask;
	unsigned long next_balance;
} __attribute__((aligned(64)));

struct nohz_seed {
	_Alignas(64) atomic_t load_balancer;
	_Alignas(64) atomic_t first_pick_cpu;
	_Alignas(64) atomic_t second_pick_cpu;
	_Alignas(64) cpumask_var_t idle_cpus_mask;
	cpumask_var_t grp_idle_mask;
	unsigned long next_balance;
} __attribute__((aligned(64)));

struct nohz nohz;
struct nohz_seed nohz_seed;

static unsigned work = 100;

static int cmpxchg(atomic_t *v, int old, int new)
{
	__atomic_compare_exchange_n(&v->counter, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return old;
}

#define READ(x) __atomic_load_n(&(x).counter, __ATOMIC_RELAXED)

/* The three paths, once per layout; the current layout's keep the kernel's names. */
#define DEFINE_PATHS(NZ, S)                                                                 \
__attribute__((noinline)) static void select_nohz_load_balancer##S(struct NZ *nz, int cpu,  \
								   int stop_tick)           \
{                                                                                           \
	unsigned long bit = 1ul << (cpu % 64);                                              \
	if (stop_tick) {                                                                    \
		__atomic_fetch_or(nz->idle_cpus_mask, bit, __ATOMIC_RELAXED);               \
		if (READ(nz->first_pick_cpu) == cpu)                                        \
			cmpxchg(&nz->first_pick_cpu, cpu, NO_CPU);                          \
		if (READ(nz->second_pick_cpu) == cpu)                                       \
			cmpxchg(&nz->second_pick_cpu, cpu, NO_CPU);                         \
		if (READ(nz->load_balancer) == NO_CPU)                                      \
			cmpxchg(&nz->load_balancer, NO_CPU, cpu);                           \
	} else {                                                                            \
		__atomic_fetch_and(nz->idle_cpus_mask, ~bit, __ATOMIC_RELAXED);             \
		if (READ(nz->load_balancer) == cpu)                                         \
			cmpxchg(&nz->load_balancer, cpu, NO_CPU);                           \
	}                                                                                   \
}                                                                                           \
__attribute__((noinline)) static int nohz_kick_needed##S(struct NZ *nz, int cpu,            \
							 unsigned long now)                 \
{                                                                                           \
	if (__atomic_load_n(&nz->next_balance, __ATOMIC_RELAXED) > now)                     \
		return 0;                                                                   \
	int first = cmpxchg(&nz->first_pick_cpu, NO_CPU, cpu);                              \
	if (first == NO_CPU || first == cpu)                                                \
		return 0;                                                                   \
	int second = cmpxchg(&nz->second_pick_cpu, NO_CPU, cpu);                            \
	return second != NO_CPU && second != cpu;                                           \
}                                                                                           \
static void transitions##S(struct NZ *nz, int cpu, unsigned long *tick, unsigned long *sink,\
			   unsigned n)                                                      \
{                                                                                           \
	for (unsigned i = 0; i < n; i++) {                                                  \
		select_nohz_load_balancer##S(nz, cpu, 1); /* the pipe reader blocks */      \
		select_nohz_load_balancer##S(nz, cpu, 0); /* the writer wakes it */         \
		*sink += (unsigned long)nohz_kick_needed##S(nz, cpu, ++*tick);              \
		for (unsigned k = 0; k < work; k++)                                         \
			*sink = *sink * 6364136223846793005ull + k;                         \
	}                                                                                   \
}

DEFINE_PATHS(nohz, )
DEFINE_PATHS(nohz_seed, _seed)

/*
 * As in examples/seeds/000/task_group.c: a batch of transitions counts as "together" when
 * every other thread's heartbeat moved during it and it took under 0.5 ms.
 */
#define BATCH 64
struct worker {
	pthread_t thread;
	int cpu, layout;
	unsigned long transitions, together, sink;
	double together_s;
} __attribute__((aligned(64)));
static struct worker workers[NR_CPUS];
static struct { volatile unsigned long beat; } __attribute__((aligned(64))) beats[NR_CPUS];
static int nthreads;
static volatile int stop;
static pthread_barrier_t barrier;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	int me = (int)(w - workers);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	unsigned long tick = 0, seen[NR_CPUS];
	pthread_barrier_wait(&barrier);
	double t = now_s();
	while (!stop) {
		for (int o = 0; o < nthreads; o++)
			seen[o] = beats[o].beat;
		if (w->layout == 0)
			transitions(&nohz, me, &tick, &w->sink, BATCH);
		else
			transitions_seed(&nohz_seed, me, &tick, &w->sink, BATCH);
		w->transitions += BATCH;
		beats[me].beat++;
		int together = 1;
		for (int o = 0; o < nthreads; o++)
			if (o != me && beats[o].beat == seen[o])
				together = 0;
		double t1 = now_s();
		if (together && t1 - t < 0.0005) {
			w->together += BATCH;
			w->together_s += t1 - t;
		}
		t = t1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "current", "seed" };
	int layout = argc > 1 ? (strcmp(argv[1], "current") == 0 ? 0 : strcmp(argv[1], "seed") == 0 ? 1 : -1) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 300;
	if (layout < 0 || ms <= 0) {
		fprintf(stderr, "usage: %s current|seed [MS] [THREADS] [WORK]\n", argv[0]);
		return 2;
	}
	cpu_set_t allowed;
	int cpus[NR_CPUS], ncpus = 0;
	sched_getaffinity(0, sizeof allowed, &allowed);
	for (int c = 0; c < CPU_SETSIZE && ncpus < NR_CPUS; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpus++] = c;
	nthreads = argc > 3 ? atoi(argv[3]) : ncpus;
	if (argc > 4)
		work = (unsigned)atol(argv[4]);
	if (nthreads < 1 || nthreads > NR_CPUS) {
		fprintf(stderr, "threads: 1 to %d\n", NR_CPUS);
		return 2;
	}
	/* The bitmaps live elsewhere (CONFIG_CPUMASK_OFFSTACK), each on a line of its own. */
	static unsigned long masks[2][8] __attribute__((aligned(64)));
	nohz.idle_cpus_mask = masks[0];
	nohz_seed.idle_cpus_mask = masks[1];
	nohz.load_balancer.counter = nohz.first_pick_cpu.counter = nohz.second_pick_cpu.counter = NO_CPU;
	nohz_seed.load_balancer.counter = nohz_seed.first_pick_cpu.counter =
		nohz_seed.second_pick_cpu.counter = NO_CPU;

	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
	for (int t = 0; t < nthreads; t++) {
		workers[t].cpu = cpus[t % ncpus];
		workers[t].layout = layout;
		if (pthread_create(&workers[t].thread, NULL, run, &workers[t]) != 0) {
			perror("pthread_create");
			return 3;
		}
	}
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_barrier_wait(&barrier);
	double t0 = now_s();
	nanosleep(&d, NULL);
	stop = 1;
	unsigned long total = 0, together = 0, sink = 0;
	double rate = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(workers[t].thread, NULL);
		total += workers[t].transitions;
		together += workers[t].together;
		sink += workers[t].sink;
		if (workers[t].together_s > 0)
			rate += (double)workers[t].together / workers[t].together_s;
	}
	double wall = now_s() - t0;
	printf("layout: %s, %d threads, work %u\n", names[layout], nthreads, work);
	printf("transitions/s: %.0f\n", (double)total / wall);
	printf("together transitions/s: %.0f (%.0f%% of transitions ran together)\n", rate,
	       total ? 100.0 * (double)together / (double)total : 0.0);
	printf("sink: %lu\n", sink & 1);
	return 0;
}
