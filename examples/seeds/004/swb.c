/*
 * Replica of should_we_balance()'s scan (kernel/sched/fair.c, Linux 6.6-rc) for seed 004,
 * "sched/fair: optimize should_we_balance for higher SMT systems": the seed's machine
 * (POWER10, 12 cores x SMT8 = 96 CPUs), one small per-CPU `struct rq` holding the fields
 * idle_cpu() reads, "owner" threads that make CPUs busy and idle by writing their rq, and
 * a scanner that calls the scan over a sched group spanning the 12 cores, timing each call
 * like bcc's funclatency does.
 *
 *   cc -O2 -pthread examples/seeds/004/swb.c -o swb
 *   ./swb baseline busy:12          # the scan before the patch, 12 busy CPUs (1 per core)
 *   ./swb patched busy:12           # after: a busy core's other siblings are skipped
 *
 * Usage: swb baseline|patched WORKLOAD [CALLS [OWNERS]]
 *   WORKLOAD  idle        every CPU idle (the seed's "idle system")
 *             busy:N      N CPUs running a task, spread over the cores as the scheduler
 *                         does (N/12 per core, the rest on the first cores); each owner moves
 *                         a task to another sibling of its core now and then (stress-ng
 *                         -l 100 with N threads)
 *             util:P      every CPU busy P% of the time, flipping (stress-ng -l P, 96 threads)
 *   CALLS     calls of the scan to time [200000]
 *   OWNERS    owner threads writing the rqs [1]
 *
 * Output: a histogram of the calls' latency in bcc funclatency's format (log2 buckets of
 * nanoseconds, then "avg = N nsecs, total: N nsecs, count: N"), then exact percentiles in
 * the old schbench's format ("Latency percentiles (nsec)", "*99.0000th: N").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_CPUS 96
#define SMT 8
#define NR_CORES (NR_CPUS / SMT)
#define MASK_WORDS ((NR_CPUS + 63) / 64)

/* ---- the kernel's data, reduced to what the scan reads -------------------------------- */

struct task_struct {
	int pid;
	int on_cpu;
};

/*
 * What idle_cpu() reads of a CPU's runqueue. Per-CPU data in the kernel: every CPU's rq
 * lives in that CPU's per-CPU area, so two CPUs' rqs never share a cache line. Here each
 * is its own 64-byte-aligned heap block (alloc_rq()).
 */
struct rq {
	unsigned int nr_running;
	int ttwu_pending;
	struct task_struct *curr;
	struct task_struct *idle;
} __attribute__((aligned(64)));

struct cpumask {
	uint64_t bits[MASK_WORDS];
};

struct rq *runqueues[NR_CPUS];  /* per_cpu(runqueues, cpu) */
struct task_struct idle_tasks[NR_CPUS];
struct task_struct hog_tasks[NR_CPUS];

/* Topology, written once before the threads start. */
struct cpumask smt_masks[NR_CORES];  /* cpu_smt_mask(): the siblings of a core */
struct cpumask group_mask;           /* group_balance_mask(sg): all 12 cores */
struct cpumask online_mask;          /* env->cpus */
struct cpumask swb_tmpmask;          /* per-CPU should_we_balance_tmpmask (the scanner's) */

#define cpu_rq(cpu) (runqueues[(cpu)])

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

static const struct cpumask *cpu_smt_mask(int cpu)
{
	return &smt_masks[cpu / SMT];
}

static void cpumask_set_cpu(int cpu, struct cpumask *m)
{
	m->bits[cpu / 64] |= 1ull << (cpu % 64);
}

static void cpumask_copy(struct cpumask *dst, const struct cpumask *src)
{
	*dst = *src;
}

static void cpumask_andnot(struct cpumask *dst, const struct cpumask *a,
			   const struct cpumask *b)
{
	for (int i = 0; i < MASK_WORDS; i++)
		dst->bits[i] = a->bits[i] & ~b->bits[i];
}

/* The first CPU after `prev` set in both masks, or NR_CPUS: find_next_and_bit(). */
static int cpumask_next_and(int prev, const struct cpumask *a, const struct cpumask *b)
{
	int n = prev + 1;
	while (n < NR_CPUS) {
		int w = n / 64;
		uint64_t word = (a->bits[w] & b->bits[w]) >> (n % 64);
		if (word) {
			n += __builtin_ctzll(word);
			return n < NR_CPUS ? n : NR_CPUS;
		}
		n = (w + 1) * 64;
	}
	return NR_CPUS;
}

#define for_each_cpu_and(cpu, a, b) \
	for ((cpu) = cpumask_next_and(-1, (a), (b)); (cpu) < NR_CPUS; \
	     (cpu) = cpumask_next_and((cpu), (a), (b)))
#define for_each_cpu(cpu, m) for_each_cpu_and(cpu, m, m)

/* The rq fields change under the scanner (the kernel reads them with plain loads too). */
#define READ(x) (*(volatile __typeof__(x) *)&(x))
#define WRITE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

/* kernel/sched/core.c */
static int idle_cpu(int cpu)
{
	struct rq *rq = cpu_rq(cpu);

	if (READ(rq->curr) != READ(rq->idle))
		return 0;
	if (READ(rq->nr_running))
		return 0;
	if (READ(rq->ttwu_pending))
		return 0;
	return 1;
}

/* kernel/sched/fair.c */
static int is_core_idle(int cpu)
{
	int sibling;

	for_each_cpu(sibling, cpu_smt_mask(cpu)) {
		if (cpu == sibling)
			continue;
		if (!idle_cpu(sibling))
			return 0;
	}
	return 1;
}

struct lb_env {
	int dst_cpu;
	const struct cpumask *cpus;
	const struct cpumask *group;  /* group_balance_mask(env->sd->groups) */
	int share_cpucapacity;        /* env->sd->flags & SD_SHARE_CPUCAPACITY */
};

/* Before the patch: every idle CPU of a busy core runs is_core_idle() again. */
__attribute__((noinline)) int should_we_balance_baseline(struct lb_env *env)
{
	int cpu, idle_smt = -1;

	for_each_cpu_and(cpu, env->group, env->cpus) {
		if (!idle_cpu(cpu))
			continue;
		if (!env->share_cpucapacity && !is_core_idle(cpu)) {
			if (idle_smt == -1)
				idle_smt = cpu;
			continue;
		}
		return cpu == env->dst_cpu;
	}
	if (idle_smt == env->dst_cpu)
		return 1;
	return env->dst_cpu == cpumask_next_and(-1, env->group, env->cpus);
}

/* The patch: after the first idle sibling of a busy core, drop the core's other siblings. */
__attribute__((noinline)) int should_we_balance_patched(struct lb_env *env)
{
	struct cpumask *swb_cpus = &swb_tmpmask;
	int cpu, idle_smt = -1;

	cpumask_copy(swb_cpus, env->group);
	for_each_cpu_and(cpu, swb_cpus, env->cpus) {
		if (!idle_cpu(cpu))
			continue;
		if (!env->share_cpucapacity && !is_core_idle(cpu)) {
			if (idle_smt == -1)
				idle_smt = cpu;
			cpumask_andnot(swb_cpus, swb_cpus, cpu_smt_mask(cpu));
			continue;
		}
		return cpu == env->dst_cpu;
	}
	if (idle_smt == env->dst_cpu)
		return 1;
	return env->dst_cpu == cpumask_next_and(-1, env->group, env->cpus);
}

/* ---- owners: tasks starting and stopping on CPUs ------------------------------------- */

enum kind { IDLE, BUSY, UTIL };

struct workload {
	enum kind kind;
	int n;  /* BUSY: busy CPUs; UTIL: percent busy */
};

static struct workload wl;
static int nr_owners = 1;
static volatile int stop;

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A task starts on `cpu`: woken (ttwu_pending), enqueued, then running. */
static void cpu_start(int cpu)
{
	struct rq *rq = cpu_rq(cpu);

	WRITE(rq->ttwu_pending, 1);
	WRITE(rq->nr_running, 1);
	WRITE(rq->curr, &hog_tasks[cpu]);
	WRITE(rq->ttwu_pending, 0);
}

/* The task leaves `cpu`, which switches to its idle task. */
static void cpu_stop(int cpu)
{
	struct rq *rq = cpu_rq(cpu);

	WRITE(rq->nr_running, 0);
	WRITE(rq->curr, rq->idle);
}

static int cpu_busy(int cpu)
{
	return READ(cpu_rq(cpu)->curr) != READ(cpu_rq(cpu)->idle);
}

/* Busy CPUs of core `core` in the initial placement of BUSY:n. */
static int busy_on_core(int core, int n)
{
	return n / NR_CORES + (core < n % NR_CORES);
}

static void pause_a_while(uint64_t *seed)
{
	/* 0.5-2 us between two changes by one owner. */
	struct timespec t0, t;
	long ns = 500 + (long)(xorshift(seed) % 1500);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		cpu_relax();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static void *owner(void *arg)
{
	long id = (long)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);

	while (!READ(stop)) {
		if (wl.kind == IDLE) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			continue;
		}
		/* This owner's cores: id, id + nr_owners, ... */
		int ncores = (NR_CORES - (int)id + nr_owners - 1) / nr_owners;
		if (ncores <= 0)
			return NULL;
		int core = (int)id + nr_owners * (int)(xorshift(&seed) % (uint64_t)ncores);
		int first = core * SMT;
		if (wl.kind == BUSY) {
			/* Move one task of the core to an idle sibling (a migration or a wakeup
			 * elsewhere): the busy count of the core stays the same. */
			int from = -1, to = -1, busy[SMT], idle[SMT], nb = 0, ni = 0;
			for (int c = first; c < first + SMT; c++) {
				if (cpu_busy(c))
					busy[nb++] = c;
				else
					idle[ni++] = c;
			}
			if (nb && ni) {
				from = busy[xorshift(&seed) % (uint64_t)nb];
				to = idle[xorshift(&seed) % (uint64_t)ni];
				cpu_start(to);
				cpu_stop(from);
			}
		} else {
			int cpu = first + (int)(xorshift(&seed) % SMT);
			int want = (int)(xorshift(&seed) % 100) < wl.n;
			if (want && !cpu_busy(cpu))
				cpu_start(cpu);
			else if (!want && cpu_busy(cpu))
				cpu_stop(cpu);
		}
		pause_a_while(&seed);
	}
	return NULL;
}

/* ---- the scanner: funclatency of the scan -------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* bcc's bpf_log2l(): the slot of v is floor(log2(v)) + 1, 0 for 0. */
static int log2_slot(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/* One histogram line in bcc's print_log2_hist() layout. */
static void print_bucket(uint64_t low, uint64_t high, uint64_t count, uint64_t max)
{
	char stars[41];
	int width = 40, n = max ? (int)((double)count * width / (double)max) : 0;
	if (n > width)
		n = width;
	memset(stars, '*', (size_t)n);
	memset(stars + n, ' ', (size_t)(width - n));
	stars[width] = 0;
	printf("%10llu -> %-10llu : %-8llu |%s|\n", (unsigned long long)low,
	       (unsigned long long)high, (unsigned long long)count, stars);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The per-CPU area's rq of one CPU. */
static struct rq *alloc_rq(int cpu)
{
	struct rq *rq = aligned_alloc(64, sizeof(struct rq));
	if (rq) {
		memset(rq, 0, sizeof *rq);
		rq->idle = &idle_tasks[cpu];
		rq->curr = &idle_tasks[cpu];
	}
	return rq;
}

static int parse_workload(const char *s, struct workload *w)
{
	char *end;
	if (!strcmp(s, "idle")) {
		w->kind = IDLE;
		w->n = 0;
		return 0;
	}
	if (!strncmp(s, "busy:", 5)) {
		w->kind = BUSY;
		w->n = (int)strtol(s + 5, &end, 10);
		return *end || end == s + 5 || w->n < 0 || w->n > NR_CPUS ? -1 : 0;
	}
	if (!strncmp(s, "util:", 5)) {
		w->kind = UTIL;
		w->n = (int)strtol(s + 5, &end, 10);
		return *end || end == s + 5 || w->n < 0 || w->n > 100 ? -1 : 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5 || (strcmp(argv[1], "baseline") && strcmp(argv[1], "patched")) ||
	    parse_workload(argv[2], &wl)) {
		fprintf(stderr, "usage: %s baseline|patched idle|busy:N|util:P [CALLS [OWNERS]]\n",
			argv[0]);
		return 2;
	}
	int patched = !strcmp(argv[1], "patched");
	long calls = argc > 3 ? strtol(argv[3], NULL, 10) : 200000;
	nr_owners = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 1;
	if (calls < 1 || nr_owners < 1 || nr_owners > NR_CORES) {
		fprintf(stderr, "%s: CALLS must be >= 1 and OWNERS 1..%d\n", argv[0], NR_CORES);
		return 2;
	}

	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		idle_tasks[cpu].pid = 0;
		hog_tasks[cpu].pid = 1000 + cpu;
		runqueues[cpu] = alloc_rq(cpu);
		if (!runqueues[cpu]) {
			fprintf(stderr, "%s: out of memory\n", argv[0]);
			return 1;
		}
		cpumask_set_cpu(cpu, &smt_masks[cpu / SMT]);
		cpumask_set_cpu(cpu, &group_mask);
		cpumask_set_cpu(cpu, &online_mask);
	}
	/* Initial placement: BUSY spreads the tasks over the cores, on random siblings. */
	uint64_t seed = 12345;
	for (int core = 0; core < NR_CORES; core++) {
		int k = wl.kind == BUSY ? busy_on_core(core, wl.n) : 0;
		while (k > 0) {
			int cpu = core * SMT + (int)(xorshift(&seed) % SMT);
			if (!cpu_busy(cpu)) {
				cpu_start(cpu);
				k--;
			}
		}
		if (wl.kind == UTIL)
			for (int cpu = core * SMT; cpu < core * SMT + SMT; cpu++)
				if ((int)(xorshift(&seed) % 100) < wl.n)
					cpu_start(cpu);
	}

	pthread_t th[NR_CORES];
	for (long i = 0; i < nr_owners; i++)
		if (pthread_create(&th[i], NULL, owner, (void *)i)) {
			fprintf(stderr, "%s: cannot start an owner thread\n", argv[0]);
			return 1;
		}

	/* The balancing CPU: the last CPU of the last core, so that the scan does not stop
	 * early because dst_cpu itself is the first idle one. */
	struct lb_env env = {
		.dst_cpu = NR_CPUS - 1,
		.cpus = &online_mask,
		.group = &group_mask,
		.share_cpucapacity = 0,
	};
	uint32_t *lat = malloc((size_t)calls * sizeof *lat);
	if (!lat) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return 1;
	}
	uint64_t hist[65] = {0}, total = 0;
	int sink = 0;
	for (long i = 0; i < calls; i++) {
		uint64_t t0 = now_ns();
		sink += patched ? should_we_balance_patched(&env) : should_we_balance_baseline(&env);
		uint64_t d = now_ns() - t0;
		lat[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		hist[log2_slot(d)]++;
		total += d;
	}
	WRITE(stop, 1);
	for (int i = 0; i < nr_owners; i++)
		pthread_join(th[i], NULL);

	printf("Tracing 1 functions for \"should_we_balance_%s\" (workload %s)... %d balanced\n",
	       patched ? "patched" : "baseline", argv[2], sink);
	int idx_max = 0;
	uint64_t max = 0;
	for (int i = 0; i < 65; i++) {
		if (hist[i])
			idx_max = i;
		if (hist[i] > max)
			max = hist[i];
	}
	printf("     %-19s : count     distribution\n", "nsecs");
	for (int i = 1; i <= idx_max; i++) {
		uint64_t low = (1ull << i) >> 1, high = (1ull << i) - 1;
		if (low == high)
			low--;
		/* Slot 0 (a zero delta) is counted with 0 -> 1, as bcc's histogram starts at 1. */
		print_bucket(low, high, hist[i] + (i == 1 ? hist[0] : 0), max);
	}
	printf("\navg = %llu nsecs, total: %llu nsecs, count: %ld\n\n",
	       (unsigned long long)(total / (uint64_t)calls), (unsigned long long)total, calls);

	qsort(lat, (size_t)calls, sizeof *lat, cmp_u32);
	static const double pcts[] = {50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9};
	printf("Latency percentiles (nsec)\n");
	for (size_t i = 0; i < sizeof pcts / sizeof pcts[0]; i++) {
		long k = (long)(pcts[i] / 100.0 * (double)calls);
		if (k >= calls)
			k = calls - 1;
		printf("\t%s%2.4fth: %u\n", pcts[i] == 99.0 ? "*" : "", pcts[i], lat[k]);
	}
	printf("\tmin=%u, max=%u\n", lat[0], lat[calls - 1]);
	free(lat);
	return 0;
}
