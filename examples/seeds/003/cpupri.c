/*
 * cpupri.c - a small replica of the Linux scheduler's RT priority map (kernel/sched/cpupri.c)
 * for seed 003 (Pan Deng, "sched/rt: mitigate root_domain cache line contention", 2025).
 *
 * The kernel keeps, per RT priority level, a count of the CPUs running at that level and a
 * cpumask of them:
 *
 *     struct cpupri_vec { atomic_t count; cpumask_var_t mask; };   // 4 + 4 hole + 32 bytes
 *     struct cpupri { struct cpupri_vec pri_to_cpu[101]; int *cpu_to_pri; };
 *
 * cpupri_set() runs when a CPU's highest RT priority changes (an RT task enqueued on an empty
 * runqueue, or the last one dequeued): it sets the CPU's bit in the new level's mask and
 * increments that level's count, then decrements the old level's count and clears the bit.
 * cpupri_find() runs when an RT task looks for a CPU to push to: for every level below the
 * task's, it reads the count, and where the count is not zero it reads the mask. With the
 * seed's FFmpeg threads at SCHED_FIFO 99, the CPUs swing between level 0 (CPUPRI_NORMAL, no
 * RT task) and level 99, so pri_to_cpu[0] and pri_to_cpu[99] are written by every CPU and
 * read by every CPU.
 *
 * Here each thread plays one CPU (pinned when the machine has enough CPUs) and loops:
 *     cpupri_set(cpu, 99); cpupri_find(task at 99); cpupri_set(cpu, 0); cpupri_find(...)
 * with the kernel's order of operations and barriers (x86: smp_mb__before_atomic and
 * smp_rmb are compiler barriers; set_bit/clear_bit are locked read-modify-writes).
 *
 * Layouts, chosen on the command line:
 *   baseline  the kernel's: count and mask of one level side by side on one cache line
 *   patched   patch 1 of the series as its author posted it: all counts in one array, then
 *             padding, then all masks (count and mask of a level on different lines)
 *   aligned   lineup's layout of cpupri_vec: count and mask each ____cacheline_aligned
 *   split     patch 4 on top of `aligned`: each level's mask split in two halves, one per
 *             (pretend) NUMA node, each on its own line; a CPU sets its bit in its node's half,
 *             cpupri_find reads its own node's half first
 *
 * Usage: cpupri [baseline|patched|aligned|split] [THREADS] [ROUNDS] [turns]
 *        (defaults: baseline, 2 threads, 2000000 rounds per thread)
 * Prints "LAYOUT THREADS threads: ops/s: N ops/cpu-s: M found: F": set+find operations per
 * second of wall time and per second of the threads' CPU time (the steadier figure on a
 * machine shared with other work: time spent waiting for a line counts, time spent
 * preempted does not).
 *
 * `turns`: the threads take turns, in thread order, one half-round each (set 99 and find,
 * then set 0 and find), handing over through a pipe per thread. What one thread does
 * between two of its turns, every other thread has done once, whatever the machine's load:
 * the order of all accesses, and so what a recording sees (who reads and writes which
 * level, how far each find scans, every line moving between the threads), is the same in
 * every run. For recording (tests/seed003.rs); it measures the hand-over, not contention.
 * With 2 threads F is then exactly 2 x ROUNDS (each thread finds the other once a round).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NR_CPUS 256                 /* the fixture kernel's cpumask: 32 bytes */
#define CPUPRI_NR_PRIORITIES 101    /* MAX_RT_PRIO + 1 */
#define CPUPRI_NORMAL 0
#define CPUPRI_TASK 99              /* SCHED_FIFO 99: kernel prio 0, cpupri level 99 */
#define BITS_PER_LONG 64
#define MASK_LONGS (NR_CPUS / BITS_PER_LONG)
#define LINE 64

#define barrier() __asm__ __volatile__("" ::: "memory")

typedef struct { int counter; } atomic_t;
struct cpumask { unsigned long bits[MASK_LONGS]; };
#ifdef CPUMASK_OFFSTACK
/* CONFIG_CPUMASK_OFFSTACK=y (distribution kernels for big machines such as the seed's): the
 * vector holds a pointer, read-only after init, and the bitmap is allocated on its own */
typedef struct cpumask *cpumask_var_t;
#else
/* CONFIG_CPUMASK_OFFSTACK=n (the fixture kernel's BTF): the bitmap sits in the vector */
typedef struct cpumask cpumask_var_t[1];
#endif

/* baseline: the kernel's declaration (kernel/sched/cpupri.h) */
struct cpupri_vec {
	atomic_t count;
	cpumask_var_t mask;
};
struct cpupri {
	struct cpupri_vec pri_to_cpu[CPUPRI_NR_PRIORITIES];
	int *cpu_to_pri;
};

/* patched: patch 1, struct-of-arrays with padding between the counts and the masks */
struct cpupri_p1 {
	atomic_t counts[CPUPRI_NR_PRIORITIES];
	char padding[LINE - (CPUPRI_NR_PRIORITIES * sizeof(atomic_t)) % LINE];
	cpumask_var_t masks[CPUPRI_NR_PRIORITIES];
	int *cpu_to_pri;
};

/* aligned: lineup's layout of cpupri_vec (lineup optimize --machine xeon-2s-480) */
struct cpupri_vec_aligned {
	_Alignas(LINE) atomic_t count;
	_Alignas(LINE) cpumask_var_t mask;
};
struct cpupri_aligned {
	struct cpupri_vec_aligned pri_to_cpu[CPUPRI_NR_PRIORITIES];
	int *cpu_to_pri;
};

/* split: patch 4 on top: one half-mask per node, each on its own line */
#define NODES 2
struct cpupri_vec_split {
	_Alignas(LINE) atomic_t count;
	struct { _Alignas(LINE) cpumask_var_t mask; } node[NODES];
};
struct cpupri_split {
	struct cpupri_vec_split pri_to_cpu[CPUPRI_NR_PRIORITIES];
	int *cpu_to_pri;
};

static _Alignas(LINE) struct cpupri cp_baseline;
static _Alignas(LINE) struct cpupri_p1 cp_patched;
static _Alignas(LINE) struct cpupri_aligned cp_aligned;
static _Alignas(LINE) struct cpupri_split cp_split;

static int nr_threads = 2;
static unsigned long rounds = 2000000UL;
static pthread_barrier_t start_line;
static int turns;                   /* take turns (above) */
static int (*turn_pipe)[2];         /* per thread: a byte in it is the thread's turn */

/* kernel primitives */
static inline void atomic_inc(atomic_t *v) { __atomic_fetch_add(&v->counter, 1, __ATOMIC_RELAXED); }
static inline void atomic_dec(atomic_t *v) { __atomic_fetch_sub(&v->counter, 1, __ATOMIC_RELAXED); }
static inline int atomic_read(atomic_t *v) { return __atomic_load_n(&v->counter, __ATOMIC_RELAXED); }
static inline void cpumask_set_cpu(int cpu, struct cpumask *m)
{
	__atomic_fetch_or(&m->bits[cpu / BITS_PER_LONG], 1UL << (cpu % BITS_PER_LONG), __ATOMIC_RELAXED);
}
static inline void cpumask_clear_cpu(int cpu, struct cpumask *m)
{
	__atomic_fetch_and(&m->bits[cpu / BITS_PER_LONG], ~(1UL << (cpu % BITS_PER_LONG)), __ATOMIC_RELAXED);
}
/* cpumask_any_and(): first CPU in both masks, or NR_CPUS (plain loads, as the kernel's) */
static inline int cpumask_any_and(const struct cpumask *a, const struct cpumask *b)
{
	for (int i = 0; i < MASK_LONGS; i++) {
		unsigned long w = __atomic_load_n(&a->bits[i], __ATOMIC_RELAXED) & b->bits[i];
		if (w)
			return i * BITS_PER_LONG + __builtin_ctzl(w);
	}
	return NR_CPUS;
}

/*
 * One cpupri_set()/cpupri_find() pair per layout. COUNT(cp, idx) names the level's count,
 * MASK(cp, idx, cpu) the mask that holds `cpu`'s bit, FIND_MASK(cp, idx, k, cpu) the k-th of
 * NMASKS masks cpupri_find reads for a task on `cpu`.
 */
#define DEFINE_CPUPRI(name, type, COUNT, MASK, NMASKS, FIND_MASK)                           \
static void set_##name(type *cp, int cpu, int newpri)                                       \
{                                                                                            \
	int oldpri = cp->cpu_to_pri[cpu];                                                    \
	if (newpri == oldpri)                                                                \
		return;                                                                      \
	cpumask_set_cpu(cpu, MASK(cp, newpri, cpu));                                         \
	barrier(); /* smp_mb__before_atomic() */                                             \
	atomic_inc(COUNT(cp, newpri));                                                       \
	if (oldpri >= 0) {                                                                   \
		atomic_dec(COUNT(cp, oldpri));                                               \
		barrier(); /* smp_mb__after_atomic() */                                      \
		cpumask_clear_cpu(cpu, MASK(cp, oldpri, cpu));                               \
	}                                                                                    \
	cp->cpu_to_pri[cpu] = newpri;                                                        \
}                                                                                            \
static int find_##name(type *cp, __attribute__((unused)) int cpu, int task_pri,             \
		       const struct cpumask *allowed)                                         \
{                                                                                            \
	for (int idx = 0; idx < task_pri; idx++) {                                           \
		if (!atomic_read(COUNT(cp, idx)))                                            \
			continue;                                                            \
		barrier(); /* smp_rmb() */                                                   \
		for (int k = 0; k < (NMASKS); k++) {                                         \
			int found = cpumask_any_and(FIND_MASK(cp, idx, k, cpu), allowed);    \
			if (found < NR_CPUS)                                                 \
				return found;                                                \
		}                                                                            \
	}                                                                                    \
	return -1;                                                                           \
}

#define VEC_COUNT(cp, idx) (&(cp)->pri_to_cpu[idx].count)
#define VEC_MASK(cp, idx, cpu) ((cp)->pri_to_cpu[idx].mask)
#define VEC_FIND_MASK(cp, idx, k, cpu) ((cp)->pri_to_cpu[idx].mask)
#define P1_COUNT(cp, idx) (&(cp)->counts[idx])
#define P1_MASK(cp, idx, cpu) ((cp)->masks[idx])
#define P1_FIND_MASK(cp, idx, k, cpu) ((cp)->masks[idx])
#define NODE_OF(cpu) ((cpu) % NODES)
#define SPLIT_MASK(cp, idx, cpu) ((cp)->pri_to_cpu[idx].node[NODE_OF(cpu)].mask)
#define SPLIT_FIND_MASK(cp, idx, k, cpu) ((cp)->pri_to_cpu[idx].node[(NODE_OF(cpu) + (k)) % NODES].mask)

DEFINE_CPUPRI(baseline, struct cpupri, VEC_COUNT, VEC_MASK, 1, VEC_FIND_MASK)
DEFINE_CPUPRI(patched, struct cpupri_p1, P1_COUNT, P1_MASK, 1, P1_FIND_MASK)
DEFINE_CPUPRI(aligned, struct cpupri_aligned, VEC_COUNT, VEC_MASK, 1, VEC_FIND_MASK)
DEFINE_CPUPRI(split, struct cpupri_split, VEC_COUNT, SPLIT_MASK, NODES, SPLIT_FIND_MASK)

enum layout { BASELINE, PATCHED, ALIGNED, SPLIT };
static const char *const layout_names[] = { "baseline", "patched", "aligned", "split" };
static enum layout layout;

struct worker {
	pthread_t tid;
	int cpu;
	unsigned long found;
	unsigned long together_ops;     /* operations in blocks that ran alongside every other thread */
	double together_seconds;        /* and the wall time of those blocks */
	double cpu_seconds;
};

/* Blocks completed per thread, one line each: how a thread sees that the others ran too. */
static struct { _Alignas(LINE) unsigned long blocks; } *progress;
#define BLOCK 64                    /* rounds per block: tens of microseconds */

static double seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long blocks_of(int t) { return __atomic_load_n(&progress[t].blocks, __ATOMIC_RELAXED); }

/*
 * Did every other thread complete one or two blocks while this one completed its block? Then
 * they all ran alongside it, at about its pace. On a machine shared with other work (or a VM
 * whose virtual CPUs the host deschedules) the threads often do not run at the same time, and
 * a thread running alone meets no contention; the "together" figure counts only the blocks
 * in which the contention could happen.
 */
static int ran_together(int self, const unsigned long *before)
{
	for (int t = 0; t < nr_threads; t++) {
		unsigned long d = blocks_of(t) - before[t];
		if (t != self && (d < 1 || d > 2))
			return 0;
	}
	return 1;
}

/* One CPU: its RT task runs (level 99), pushes look for a lower CPU, it goes (level 0). */
#define LOOP(name, cp)                                                                       \
	for (unsigned long r = 0; r < rounds; r += BLOCK) {                                  \
		double b0 = seconds(CLOCK_MONOTONIC);                                        \
		for (int t = 0; t < nr_threads; t++)                                         \
			before[t] = blocks_of(t);                                            \
		for (unsigned long i = 0; i < BLOCK; i++) {                                  \
			set_##name(cp, w->cpu, CPUPRI_TASK);                                 \
			w->found += find_##name(cp, w->cpu, CPUPRI_TASK, &allowed) >= 0;     \
			set_##name(cp, w->cpu, CPUPRI_NORMAL);                               \
			w->found += find_##name(cp, w->cpu, CPUPRI_TASK, &allowed) >= 0;     \
		}                                                                            \
		if (ran_together(w->cpu, before)) {                                          \
			w->together_ops += 2 * BLOCK;                                        \
			w->together_seconds += seconds(CLOCK_MONOTONIC) - b0;                \
		}                                                                            \
		__atomic_store_n(&progress[w->cpu].blocks, blocks_of(w->cpu) + 1,            \
				 __ATOMIC_RELAXED);                                          \
	}

/* Turns: wait for this thread's, and hand the next to the next thread. The byte goes
 * through the kernel: no access of the program's own between turns. */
static void turn_wait(int self)
{
	char c;

	while (read(turn_pipe[self][0], &c, 1) != 1)
		;
}

static void turn_pass(int self)
{
	while (write(turn_pipe[(self + 1) % nr_threads][1], "", 1) != 1)
		;
}

#define TURNS(name, cp)                                                                      \
	for (unsigned long r = 0; r < rounds; r++) {                                         \
		turn_wait(w->cpu);                                                           \
		set_##name(cp, w->cpu, CPUPRI_TASK);                                         \
		w->found += find_##name(cp, w->cpu, CPUPRI_TASK, &allowed) >= 0;             \
		turn_pass(w->cpu);                                                           \
		turn_wait(w->cpu);                                                           \
		set_##name(cp, w->cpu, CPUPRI_NORMAL);                                       \
		w->found += find_##name(cp, w->cpu, CPUPRI_TASK, &allowed) >= 0;             \
		turn_pass(w->cpu);                                                           \
	}

static void *cpu_thread(void *arg)
{
	struct worker *w = arg;
	struct cpumask allowed;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long *before = calloc(nr_threads, sizeof(*before));
	double t0;

	/* the task may run anywhere but here */
	memset(&allowed, 0, sizeof(allowed));
	for (int c = 0; c < nr_threads; c++)
		if (c != w->cpu)
			allowed.bits[c / BITS_PER_LONG] |= 1UL << (c % BITS_PER_LONG);
	if (nr_threads <= ncpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
	}
	pthread_barrier_wait(&start_line);
	t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
	if (turns) {
		switch (layout) {
		case BASELINE: TURNS(baseline, &cp_baseline); break;
		case PATCHED:  TURNS(patched, &cp_patched); break;
		case ALIGNED:  TURNS(aligned, &cp_aligned); break;
		case SPLIT:    TURNS(split, &cp_split); break;
		}
	} else {
		switch (layout) {
		case BASELINE: LOOP(baseline, &cp_baseline); break;
		case PATCHED:  LOOP(patched, &cp_patched); break;
		case ALIGNED:  LOOP(aligned, &cp_aligned); break;
		case SPLIT:    LOOP(split, &cp_split); break;
		}
	}
	w->cpu_seconds = seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
	free(before);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	int *cpu_to_pri;
	unsigned long found = 0;
	double start, wall, cpu = 0, ops, together_rate = 0, together_seconds = 0;

	if (argc > 1) {
		int i;

		for (i = 0; i < 4 && strcmp(argv[1], layout_names[i]); i++)
			;
		if (i == 4) {
			fprintf(stderr, "usage: %s [baseline|patched|aligned|split] [THREADS] [ROUNDS] [turns]\n", argv[0]);
			return 2;
		}
		layout = i;
	}
	if (argc > 2)
		nr_threads = atoi(argv[2]);
	if (argc > 3)
		rounds = strtoul(argv[3], NULL, 10);
	if (argc > 4) {
		if (strcmp(argv[4], "turns")) {
			fprintf(stderr, "usage: %s [baseline|patched|aligned|split] [THREADS] [ROUNDS] [turns]\n", argv[0]);
			return 2;
		}
		turns = 1;
	}
	if (nr_threads < 1 || nr_threads > NR_CPUS) {
		fprintf(stderr, "THREADS must be 1..%d\n", NR_CPUS);
		return 2;
	}

	if (!turns)
		rounds = (rounds + BLOCK - 1) / BLOCK * BLOCK;
	if (turns) {
		turn_pipe = calloc(nr_threads, sizeof(*turn_pipe));
		for (int t = 0; t < nr_threads; t++)
			if (pipe(turn_pipe[t])) {
				perror("pipe");
				return 1;
			}
		/* the first turn is thread 0's */
		if (write(turn_pipe[0][1], "", 1) != 1) {
			perror("write");
			return 1;
		}
	}

	/* cpupri_init(): the masks, every CPU invalid, then every CPU at CPUPRI_NORMAL */
#ifdef CPUMASK_OFFSTACK
	/* alloc_cpumask_var() per level, in order, as cpupri_init() does */
	for (int i = 0; i < CPUPRI_NR_PRIORITIES; i++) {
		cp_baseline.pri_to_cpu[i].mask = calloc(1, sizeof(struct cpumask));
		cp_patched.masks[i] = calloc(1, sizeof(struct cpumask));
		cp_aligned.pri_to_cpu[i].mask = calloc(1, sizeof(struct cpumask));
		for (int n = 0; n < NODES; n++)
			cp_split.pri_to_cpu[i].node[n].mask = calloc(1, sizeof(struct cpumask));
	}
#endif
	cpu_to_pri = calloc(NR_CPUS, sizeof(int));
	for (int c = 0; c < NR_CPUS; c++)
		cpu_to_pri[c] = -1;
	cp_baseline.cpu_to_pri = cp_patched.cpu_to_pri = cpu_to_pri;
	cp_aligned.cpu_to_pri = cp_split.cpu_to_pri = cpu_to_pri;
	for (int c = 0; c < nr_threads; c++) {
		switch (layout) {
		case BASELINE: set_baseline(&cp_baseline, c, CPUPRI_NORMAL); break;
		case PATCHED:  set_patched(&cp_patched, c, CPUPRI_NORMAL); break;
		case ALIGNED:  set_aligned(&cp_aligned, c, CPUPRI_NORMAL); break;
		case SPLIT:    set_split(&cp_split, c, CPUPRI_NORMAL); break;
		}
	}

	workers = calloc(nr_threads, sizeof(*workers));
	progress = aligned_alloc(LINE, nr_threads * sizeof(*progress));
	memset(progress, 0, nr_threads * sizeof(*progress));
	pthread_barrier_init(&start_line, NULL, nr_threads);
	start = seconds(CLOCK_MONOTONIC);
	for (int t = 0; t < nr_threads; t++) {
		workers[t].cpu = t;
		pthread_create(&workers[t].tid, NULL, cpu_thread, &workers[t]);
	}
	for (int t = 0; t < nr_threads; t++) {
		pthread_join(workers[t].tid, NULL);
		found += workers[t].found;
		cpu += workers[t].cpu_seconds;
		if (workers[t].together_seconds > 0)
			together_rate += workers[t].together_ops / workers[t].together_seconds;
		together_seconds += workers[t].together_seconds;
	}
	wall = seconds(CLOCK_MONOTONIC) - start;
	ops = 2.0 * rounds * nr_threads; /* one set and one find, twice a round */
	printf("%s %d threads: ops/s: %.0f ops/cpu-s: %.0f together ops/s: %.0f "
	       "(together %.0f%% of the time) found: %lu\n",
	       layout_names[layout], nr_threads, ops / wall, ops / cpu, together_rate,
	       100.0 * together_seconds / (wall * nr_threads), found);
	free(progress);
	free(workers);
	free(cpu_to_pri);
	return 0;
}
