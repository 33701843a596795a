/*
 * shared_runq.c - a userspace replica of the hot path of SHARED_RUNQ (seed 002: David
 * Vernet, "sched: Shard per-LLC shared runqueues", v3 7/7, August 2023).
 *
 * SHARED_RUNQ keeps one FIFO queue per LLC. A task is put into it when it is enqueued on a
 * CPU of that LLC, and a CPU that would otherwise go idle pulls the first task from it. Every
 * CPU of the LLC takes the queue's spinlock and writes its list head: on a large LLC (56
 * cores, 112 threads on the Sapphire Rapids of the seed) that one cache line is contended.
 * Patch 7/7 shards the queue: each CPU pushes into the shard it belongs to, and pulls from its
 * own shard first and from the others only when its own is empty.
 *
 * Here a thread stands for a CPU and a `struct task` for a task. Each thread, per operation:
 *   - "goes idle" and pulls a task (its own shard first, then the next ones, as the patch);
 *   - "runs" it: some register-only work, then one store into the task;
 *   - "enqueues" it again, which pushes it into its own shard's FIFO.
 * By default there are two tasks per thread in circulation, so a pull almost never finds
 * every shard empty. With fewer tasks than threads (TASKS; hackbench's 2 groups put 56 tasks
 * on 112 CPUs), some CPUs have nothing in their own shard: their pulls scan the other shards
 * (a lock attempt on each) and migrate the task they find, which is the cost of sharding.
 * Task j starts in the shard of thread j, so with TASKS < THREADS thread TASKS's first pull
 * always finds its own shard empty. One shard is the queue before the patch (struct
 * shared_runq of patches 1-6: a list and a raw_spinlock_t on one cache line); N shards is
 * the patch.
 *
 * Usage: shared_runq SHARDS [THREADS] [OPS] [WORK] [TASKS]
 *   SHARDS   number of shards of the one LLC queue (1 = no sharding)
 *   THREADS  number of "CPUs" (default: the online CPUs, at least 2)
 *   OPS      pull-run-push operations per thread (default 2000000)
 *   WORK     rounds of register-only work per run of a task (default 8, a few ns each)
 *   TASKS    tasks in circulation (default 2 per thread)
 * Prints the total operations per second of wall time ("throughput: X ops/s") and per second
 * of CPU time the threads used together ("cpu-throughput: X ops/s"); on a machine shared with
 * other work the second is the steadier figure: time spent waiting for the queue's line or
 * spinning on its lock counts, time spent preempted does not.
 *
 *   cc -O2 -pthread examples/seeds/002/shared_runq.c -o shared_runq
 *   ./shared_runq 1 && ./shared_runq 4
 *
 * Portable C11 and POSIX threads. The lock is a test-and-test-and-set spinlock on one atomic
 * int, like the kernel's raw_spinlock_t (4 bytes). Unlike the kernel's, a waiter yields the
 * CPU after a while: kernel code holding a raw spinlock cannot be preempted, a thread can, and
 * with more threads than CPUs the waiters would otherwise spin out the holder's time slice.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct list_head {
	struct list_head *next, *prev;
};

typedef struct {
	atomic_int locked;
} raw_spinlock_t;

/* One shard: a FIFO of tasks and the lock that guards it, alone on its cache line. */
struct shared_runq_shard {
	alignas(64) struct list_head list;
	raw_spinlock_t lock;
};

/* The per-LLC queue: its shards (one shard = the queue before patch 7/7). */
struct shared_runq {
	unsigned int num_shards;
	struct shared_runq_shard *shards;
};

struct task {
	alignas(64) struct list_head shared_runq_node;
	unsigned long sum_exec_runtime;
	int last_cpu;
};

struct cpu {
	pthread_t thread;
	int id;
	struct shared_runq_shard *shard; /* the shard this CPU pushes into */
	unsigned long idle_misses;
	unsigned long own_empty;	/* pulls that found this CPU's own shard empty */
	unsigned long migrations;	/* tasks pulled from another shard */
	double cpu_seconds;
};

static struct shared_runq runq;
/* file-scope, so that lineup record can tell the 64-byte shards from the 64-byte tasks by the
 * function that allocates them (main holds no pointer to either) */
static struct cpu *cpus;
static struct task *tasks;
static unsigned long ops_per_cpu = 2000000UL;
static int work_rounds = 8;
static pthread_barrier_t start_line;

static void raw_spin_lock(raw_spinlock_t *l)
{
	unsigned int spins = 0;

	while (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire)) {
		while (atomic_load_explicit(&l->locked, memory_order_relaxed)) {
			if (++spins % 1024 == 0)
				sched_yield();
		}
	}
}

static void raw_spin_unlock(raw_spinlock_t *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

static void list_init(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static void list_add_tail(struct list_head *n, struct list_head *h)
{
	struct list_head *last = h->prev;

	n->next = h;
	n->prev = last;
	last->next = n;
	h->prev = n;
}

static void list_del_init(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* enqueue: the task goes to the tail of this CPU's shard */
static void shared_runq_push_task(struct shared_runq_shard *shard, struct task *p)
{
	raw_spin_lock(&shard->lock);
	list_add_tail(&p->shared_runq_node, &shard->list);
	raw_spin_unlock(&shard->lock);
}

/* the first task of one shard, or NULL */
static struct task *shared_runq_pop_task(struct shared_runq_shard *shard)
{
	struct task *p = NULL;

	raw_spin_lock(&shard->lock);
	if (shard->list.next != &shard->list) {
		/* shared_runq_node is the task's first member */
		p = (struct task *)(void *)shard->list.next;
		list_del_init(&p->shared_runq_node);
	}
	raw_spin_unlock(&shard->lock);
	return p;
}

/* newidle balance: this CPU's own shard first, then the others in order */
static struct task *shared_runq_pick_next_task(struct cpu *c)
{
	unsigned int n = runq.num_shards;
	unsigned int first = (unsigned int)(c->shard - runq.shards);

	for (unsigned int i = 0; i < n; i++) {
		struct task *p = shared_runq_pop_task(&runq.shards[(first + i) % n]);

		if (p) {
			if (i > 0)
				c->migrations++;
			return p;
		}
		if (i == 0)
			c->own_empty++;
	}
	return NULL;
}

/* the shards of one LLC's queue, empty, each on its own cache line */
static struct shared_runq_shard *shared_runq_shards_alloc(unsigned int num_shards)
{
	struct shared_runq_shard *shards = aligned_alloc(64, sizeof(*shards) * num_shards);

	for (unsigned int i = 0; shards && i < num_shards; i++) {
		list_init(&shards[i].list);
		atomic_init(&shards[i].lock.locked, 0);
	}
	return shards;
}

static struct task *tasks_alloc(size_t n)
{
	struct task *tasks = aligned_alloc(64, sizeof(*tasks) * n);

	if (tasks)
		memset(tasks, 0, sizeof(*tasks) * n);
	return tasks;
}

static unsigned long work(unsigned long x, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

static double seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *cpu_main(void *arg)
{
	struct cpu *c = arg;
	unsigned long done = 0, x = (unsigned long)c->id + 1;
	double t0;

	pthread_barrier_wait(&start_line);
	t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
	while (done < ops_per_cpu) {
		struct task *p = shared_runq_pick_next_task(c);

		if (!p) {
			c->idle_misses++;
			continue;
		}
		x = work(x, work_rounds);
		p->sum_exec_runtime += x & 0xff;
		p->last_cpu = c->id;
		shared_runq_push_task(c->shard, p);
		done++;
	}
	c->cpu_seconds = seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

static long parse(const char *s, const char *what, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "shared_runq: %s must be an integer from %ld to %ld, not '%s'\n",
			what, min, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int nr_shards, nr_tasks, nr_cpus = online >= 2 ? (int)online : 2;
	double t0, wall, cpu = 0;
	unsigned long idle = 0, own_empty = 0, migrations = 0;

	if (argc < 2 || argc > 6) {
		fprintf(stderr, "usage: shared_runq SHARDS [THREADS] [OPS] [WORK] [TASKS]\n");
		return 2;
	}
	nr_shards = (int)parse(argv[1], "SHARDS", 1, 1024);
	if (argc > 2)
		nr_cpus = (int)parse(argv[2], "THREADS", 1, 1024);
	if (argc > 3)
		ops_per_cpu = (unsigned long)parse(argv[3], "OPS", 1, 1000000000L);
	if (argc > 4)
		work_rounds = (int)parse(argv[4], "WORK", 0, 1000000);
	nr_tasks = 2 * nr_cpus;
	if (argc > 5)
		nr_tasks = (int)parse(argv[5], "TASKS", 1, 1 << 20);

	cpus = calloc((size_t)nr_cpus, sizeof(*cpus));
	tasks = tasks_alloc((size_t)nr_tasks);
	runq.num_shards = (unsigned int)nr_shards;
	runq.shards = shared_runq_shards_alloc(runq.num_shards);
	if (!runq.shards || !cpus || !tasks) {
		fprintf(stderr, "shared_runq: out of memory\n");
		return 1;
	}
	pthread_barrier_init(&start_line, NULL, (unsigned int)nr_cpus + 1);
	for (int i = 0; i < nr_cpus; i++) {
		cpus[i].id = i;
		cpus[i].shard = &runq.shards[i % nr_shards];
	}
	/* the runnable tasks, task j enqueued on CPU j (round robin) */
	for (int j = 0; j < nr_tasks; j++)
		shared_runq_push_task(cpus[j % nr_cpus].shard, &tasks[j]);
	for (int i = 0; i < nr_cpus; i++) {
		if (pthread_create(&cpus[i].thread, NULL, cpu_main, &cpus[i]) != 0) {
			fprintf(stderr, "shared_runq: cannot start thread %d\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&start_line);
	t0 = seconds(CLOCK_MONOTONIC);
	for (int i = 0; i < nr_cpus; i++) {
		pthread_join(cpus[i].thread, NULL);
		cpu += cpus[i].cpu_seconds;
		idle += cpus[i].idle_misses;
		own_empty += cpus[i].own_empty;
		migrations += cpus[i].migrations;
	}
	wall = seconds(CLOCK_MONOTONIC) - t0;

	printf("shared_runq: %d shard(s), %d threads, %d tasks, %lu ops each, %d work rounds; "
	       "%lu pulls found every shard empty\n",
	       nr_shards, nr_cpus, nr_tasks, ops_per_cpu, work_rounds, idle);
	printf("own-shard-empty: %lu pulls, migrations: %lu\n", own_empty, migrations);
	printf("elapsed: %.4f s cpu: %.4f s\n", wall, cpu);
	printf("throughput: %.0f ops/s\n", ops_per_cpu * nr_cpus / wall);
	printf("cpu-throughput: %.0f ops/s\n", ops_per_cpu * nr_cpus / (cpu > 0 ? cpu : 1e-9));
	free(tasks);
	free(cpus);
	free(runq.shards);
	return 0;
}
