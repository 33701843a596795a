/*
 * Replica of seed 000's hot path ("sched/task_group: Re-layout structure to reduce false
 * sharing", Deng Pan, 2023): every CPU, on every wakeup of a task in the group,
 *
 *   set_task_cpu()     -> set_task_rq(): loads tg->cfs_rq[cpu], tg->se[cpu],
 *                         tg->rt_rq[cpu], tg->rt_se[cpu]            (read-mostly pointers)
 *   update_load_avg()  -> update_tg_load_avg(): atomic_long_add(delta, &tg->load_avg) when
 *                         the CPU's contribution moved by more than 1/64 (write-hot)
 *   update_cfs_group() -> calc_group_shares(): atomic_long_read(&tg->load_avg)
 *
 * with some private work in between (the rest of a context switch: --work). struct
 * task_group has the offsets of the 6.18 fixture kernel (data/vmlinux-6.18.44.btf,
 * CONFIG_RT_GROUP_SCHED); the members nobody touches here are opaque bytes of their size.
 * Three layouts of it, chosen on the command line:
 *
 *   current  the kernel's: load_avg, rt_se and rt_rq share cache line 4
 *   seed     the seed's fix: rcu, list, siblings, children and parent moved between
 *            load_avg and rt_se, so rt_se/rt_rq land on line 5
 *   lineup   lineup's (`lineup optimize` on the seed's c2c paste): load_avg moved after
 *            rt_rq, onto line 4 with only cold rt_bandwidth beside it
 *
 *   cc -O2 -pthread task_group.c -o task_group
 *   ./task_group current 500        # layout, milliseconds [threads] [work]
 *
 * It prints "wakeups/s: N" (all threads, wall clock), "wakeups per cpu-second: N" (per
 * second of the threads' CPU time) and "together wakeups/s: N" (summed over threads, counted
 * only while all threads ran at once: on a shared machine, the figure to compare).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_CPUS 64

typedef struct { long counter; } atomic_long_t;
struct list_head { struct list_head *next, *prev; };
struct callback_head { struct callback_head *next; void (*func)(struct callback_head *); };

/* Per-CPU objects the group points at. */
struct sched_avg { unsigned long load_avg; };
struct cfs_rq {
	struct sched_avg avg;
	unsigned long tg_load_avg_contrib;
	unsigned long weight;
} __attribute__((aligned(64)));
struct sched_entity { struct sched_entity *parent; struct cfs_rq *cfs_rq; } __attribute__((aligned(64)));
struct rt_rq { int rt_nr_running; } __attribute__((aligned(64)));
struct sched_rt_entity { struct sched_rt_entity *parent; struct rt_rq *rt_rq; } __attribute__((aligned(64)));

/* Opaque stand-ins, each of its kernel size and alignment. */
struct cgroup_subsys_state { _Alignas(8) unsigned char bytes[208]; };
struct rt_bandwidth { _Alignas(8) unsigned char bytes[96]; };
struct cfs_bandwidth { _Alignas(8) unsigned char bytes[240]; };
struct autogroup;

/* The kernel's layout (fixture BTF). */
struct task_group {
	struct cgroup_subsys_state css;
	int idle;
	struct sched_entity **se;
	struct cfs_rq **cfs_rq;
	unsigned long shares;
	_Alignas(64) atomic_long_t load_avg;
	struct sched_rt_entity **rt_se;
	struct rt_rq **rt_rq;
	struct rt_bandwidth rt_bandwidth;
	struct callback_head rcu;
	struct list_head list;
	struct task_group *parent;
	struct list_head siblings;
	struct list_head children;
	struct autogroup *autogroup;
	struct cfs_bandwidth cfs_bandwidth;
} __attribute__((aligned(64)));

/* The seed's fix (examples/seeds/000/seed_fix.h). */
struct task_group_seed {
	struct cgroup_subsys_state css;
	int idle;
	struct sched_entity **se;
	struct cfs_rq **cfs_rq;
	unsigned long shares;
	_Alignas(64) atomic_long_t load_avg;
	struct callback_head rcu;
	struct list_head list;
	struct list_head siblings;
	struct list_head children;
	struct task_group_seed *parent;
	struct sched_rt_entity **rt_se;
	struct rt_rq **rt_rq;
	struct rt_bandwidth rt_bandwidth;
	struct autogroup *autogroup;
	struct cfs_bandwidth cfs_bandwidth;
} __attribute__((aligned(64)));

/* lineup's layout (`lineup optimize --type task_group --c2c seed000 --machine icelake-2s`). */
struct task_group_lineup {
	struct cgroup_subsys_state css;
	int idle;
	struct sched_entity **se;
	struct cfs_rq **cfs_rq;
	unsigned long shares;
	struct sched_rt_entity **rt_se;
	struct rt_rq **rt_rq;
	_Alignas(64) atomic_long_t load_avg;
	struct rt_bandwidth rt_bandwidth;
	struct callback_head rcu;
	struct list_head list;
	struct task_group_lineup *parent;
	struct list_head siblings;
	struct list_head children;
	struct autogroup *autogroup;
	struct cfs_bandwidth cfs_bandwidth;
} __attribute__((aligned(64)));

/* The kernel's offsets, checked here; tests/seed000.rs checks them against the BTF too. */
_Static_assert(offsetof(struct task_group, load_avg) == 256, "load_avg");
_Static_assert(offsetof(struct task_group, rt_se) == 264, "rt_se");
_Static_assert(offsetof(struct task_group, rt_rq) == 272, "rt_rq");
_Static_assert(offsetof(struct task_group, parent) == 408, "parent");
_Static_assert(sizeof(struct task_group) == 704, "size");
_Static_assert(offsetof(struct task_group_seed, rt_se) / 64 != offsetof(struct task_group_seed, load_avg) / 64, "seed: split");
_Static_assert(offsetof(struct task_group_lineup, rt_rq) / 64 != offsetof(struct task_group_lineup, load_avg) / 64, "lineup: split");

/* One instance per layout, as globals so that `lineup record` can name them from DWARF. */
struct task_group tg_current;
struct task_group_seed tg_seed;
struct task_group_lineup tg_lineup;

static struct cfs_rq cfs_rqs[NR_CPUS];
static struct sched_entity ses[NR_CPUS];
static struct rt_rq rt_rqs[NR_CPUS];
static struct sched_rt_entity rt_ses[NR_CPUS];
static struct cfs_rq *cfs_rq_ptrs[NR_CPUS];
static struct sched_entity *se_ptrs[NR_CPUS];
static struct rt_rq *rt_rq_ptrs[NR_CPUS];
static struct sched_rt_entity *rt_se_ptrs[NR_CPUS];

/* A task's view of where it runs, as set_task_rq() fills it. */
struct task {
	struct cfs_rq *cfs_rq;
	struct sched_entity *se_parent;
	struct rt_rq *rt_rq;
	struct sched_rt_entity *rt_parent;
	unsigned long weight;
} __attribute__((aligned(64)));

static volatile int stop;
static unsigned work = 200;

/* The kernel's loads of tg->rt_se and friends happen on every wakeup; here the compiler could
 * hoist them out of the loop, so they are volatile, as READ_ONCE() would make them. */
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

/* The three paths, once per layout (the same code on different offsets); the current
 * layout's keep the kernel's names, so that profiles read like the seed's. */
#define DEFINE_PATHS(TG, S)                                                               \
__attribute__((noinline)) static void set_task_cpu##S(struct TG *tg, struct task *p, int cpu) \
{                                                                                         \
	p->cfs_rq = READ_ONCE(tg->cfs_rq)[cpu];                                           \
	p->se_parent = READ_ONCE(tg->se)[cpu];                                            \
	p->rt_rq = READ_ONCE(tg->rt_rq)[cpu];                                             \
	p->rt_parent = READ_ONCE(tg->rt_se)[cpu];                                         \
}                                                                                         \
__attribute__((noinline)) static void update_tg_load_avg##S(struct TG *tg, struct cfs_rq *cfs_rq) \
{                                                                                         \
	long delta = (long)cfs_rq->avg.load_avg - (long)cfs_rq->tg_load_avg_contrib;      \
	if (labs(delta) > (long)(cfs_rq->tg_load_avg_contrib / 64)) {                     \
		__atomic_fetch_add(&tg->load_avg.counter, delta, __ATOMIC_RELAXED);       \
		cfs_rq->tg_load_avg_contrib = cfs_rq->avg.load_avg;                       \
	}                                                                                 \
}                                                                                         \
__attribute__((noinline)) static unsigned long update_cfs_group##S(struct TG *tg, struct cfs_rq *cfs_rq) \
{                                                                                         \
	long tg_weight = __atomic_load_n(&tg->load_avg.counter, __ATOMIC_RELAXED);        \
	long load = (long)cfs_rq->avg.load_avg;                                           \
	tg_weight += load - (long)cfs_rq->tg_load_avg_contrib;                            \
	if (tg_weight < 1)                                                                \
		tg_weight = 1;                                                            \
	return (unsigned long)(1024 * load / tg_weight);                                  \
}                                                                                         \
static void wakeups##S(struct TG *tg, struct task *p, int cpu, unsigned long *x,         \
		       unsigned long *sink, unsigned n)                                 \
{                                                                                         \
	struct cfs_rq *cfs_rq = cfs_rqs + cpu;                                            \
	for (unsigned i = 0; i < n; i++) {                                                \
		set_task_cpu##S(tg, p, cpu);                                              \
		/* enqueue: the CPU's load moves by up to a task's weight */              \
		*x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;                            \
		cfs_rq->avg.load_avg = 4096 + (*x & 1023);                                \
		update_tg_load_avg##S(tg, p->cfs_rq);                                     \
		*sink += update_cfs_group##S(tg, p->cfs_rq);                              \
		*sink += (unsigned long)p->rt_parent + (unsigned long)p->se_parent;       \
		for (unsigned k = 0; k < work; k++)                                       \
			*sink = *sink * 6364136223846793005ull + k;                       \
	}                                                                                 \
}

DEFINE_PATHS(task_group, )
DEFINE_PATHS(task_group_seed, _seed)
DEFINE_PATHS(task_group_lineup, _lineup)

struct worker {
	pthread_t thread;
	int cpu, layout;
	unsigned long wakeups, together, sink;
	double cpu_s, together_s;
} __attribute__((aligned(64)));

/*
 * Contention needs the threads on their CPUs at the same time, which a shared machine does
 * not promise. Each thread bumps a heartbeat of its own line after every batch of wakeups; a
 * batch counts as "together" when every other thread's heartbeat moved during it and it took
 * under 0.5 ms (longer: this thread was preempted). The together figure is the one to compare.
 */
#define BATCH 64
static struct worker workers[NR_CPUS];
static int nthreads;
static struct { volatile unsigned long beat; } __attribute__((aligned(64))) beats[NR_CPUS];
static pthread_barrier_t barrier;

static double now_s(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
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
	struct task p = { .weight = 1024 };
	unsigned long x = (unsigned long)me * 2654435761u + 1, seen[NR_CPUS];
	pthread_barrier_wait(&barrier);
	double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), t = now_s(CLOCK_MONOTONIC);
	while (!stop) {
		for (int o = 0; o < nthreads; o++)
			seen[o] = beats[o].beat;
		switch (w->layout) {
		case 0: wakeups(&tg_current, &p, w->cpu, &x, &w->sink, BATCH); break;
		case 1: wakeups_seed(&tg_seed, &p, w->cpu, &x, &w->sink, BATCH); break;
		default: wakeups_lineup(&tg_lineup, &p, w->cpu, &x, &w->sink, BATCH); break;
		}
		w->wakeups += BATCH;
		beats[me].beat++;
		int together = 1;
		for (int o = 0; o < nthreads; o++)
			if (o != me && beats[o].beat == seen[o])
				together = 0;
		double t1 = now_s(CLOCK_MONOTONIC);
		if (together && t1 - t < 0.0005) {
			w->together += BATCH;
			w->together_s += t1 - t;
		}
		t = t1;
	}
	w->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "current", "seed", "lineup" };
	int layout = -1;
	for (int i = 0; i < 3 && argc > 1; i++)
		if (strcmp(argv[1], names[i]) == 0)
			layout = i;
	long ms = argc > 2 ? atol(argv[2]) : 500;
	if (layout < 0 || ms <= 0) {
		fprintf(stderr, "usage: %s current|seed|lineup [MS] [THREADS] [WORK]\n", argv[0]);
		return 2;
	}
	cpu_set_t allowed;
	int cpus[NR_CPUS], ncpus = 0;
	sched_getaffinity(0, sizeof allowed, &allowed);
	for (int c = 0; c < CPU_SETSIZE && ncpus < NR_CPUS; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpus++] = c;
	int threads = argc > 3 ? atoi(argv[3]) : ncpus;
	if (argc > 4)
		work = (unsigned)atol(argv[4]);
	if (threads < 1 || threads > NR_CPUS) {
		fprintf(stderr, "threads: 1 to %d\n", NR_CPUS);
		return 2;
	}
	for (int c = 0; c < NR_CPUS; c++) {
		cfs_rq_ptrs[c] = cfs_rqs + c;
		se_ptrs[c] = ses + c;
		rt_rq_ptrs[c] = rt_rqs + c;
		rt_se_ptrs[c] = rt_ses + c;
		cfs_rqs[c].avg.load_avg = cfs_rqs[c].tg_load_avg_contrib = 4096;
	}
#define INIT(tg) do { (tg).se = se_ptrs; (tg).cfs_rq = cfs_rq_ptrs; (tg).rt_se = rt_se_ptrs; \
		(tg).rt_rq = rt_rq_ptrs; (tg).load_avg.counter = 4096L * threads; } while (0)
	INIT(tg_current);
	INIT(tg_seed);
	INIT(tg_lineup);

	nthreads = threads;
	pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
	for (int t = 0; t < threads; t++) {
		workers[t].cpu = cpus[t % ncpus];
		workers[t].layout = layout;
		if (pthread_create(&workers[t].thread, NULL, run, &workers[t]) != 0) {
			perror("pthread_create");
			return 3;
		}
	}
	struct timespec t0, t1, d = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_barrier_wait(&barrier);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nanosleep(&d, NULL);
	stop = 1;
	unsigned long total = 0, together = 0, sink = 0;
	double cpu_s = 0, together_rate = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(workers[t].thread, NULL);
		total += workers[t].wakeups;
		together += workers[t].together;
		sink += workers[t].sink;
		cpu_s += workers[t].cpu_s;
		if (workers[t].together_s > 0)
			together_rate += (double)workers[t].together / workers[t].together_s;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("layout: %s, %d threads, work %u\n", names[layout], threads, work);
	printf("wakeups/s: %.0f\n", (double)total / wall);
	printf("wakeups per cpu-second: %.0f\n", cpu_s > 0 ? (double)total / cpu_s : 0.0);
	printf("together wakeups/s: %.0f (%.0f%% of wakeups ran together)\n", together_rate,
	       total ? 100.0 * (double)together / (double)total : 0.0);
	printf("sink: %lu\n", sink & 1);
	return 0;
}
