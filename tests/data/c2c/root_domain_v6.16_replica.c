/* Replica of struct root_domain as Pan Deng's "[PATCH v2 2/4] sched/rt: Restructure root_domain to
 * reduce cacheline contention" (LKML, 21 Jul 2025) shows it with pahole in its appendix: a kernel
 * with CONFIG_CPUMASK_OFFSTACK=y (cpumask_var_t is a pointer), 1816 bytes, cpupri at 184, pd at
 * 1808. Member types are reduced to their sizes and alignments (dl_bw 24, cpudl 24, irq_work 32,
 * cpupri_vec 16); tests/seed003.rs compiles it with `cc -g` and diagnoses the series' real c2c
 * tables (lkml_seed003_root_domain.txt) against it. */
typedef struct { int counter; } atomic_t;
typedef struct { int raw_lock; } raw_spinlock_t;
typedef unsigned long *cpumask_var_t;
struct callback_head { struct callback_head *next; void (*func)(struct callback_head *); };
struct dl_bw { raw_spinlock_t lock; unsigned long long bw; unsigned long long total_bw; };
struct cpudl { raw_spinlock_t lock; int size; cpumask_var_t free_cpus; void *elements; };
struct irq_work { void *llnode; unsigned int flags; int cpu; void (*func)(struct irq_work *); void *irqwait; };
struct cpupri_vec { atomic_t count; cpumask_var_t mask; };
struct cpupri { struct cpupri_vec pri_to_cpu[101]; int *cpu_to_pri; };
struct root_domain {
	atomic_t refcount;
	atomic_t rto_count;
	struct callback_head rcu __attribute__((__aligned__(8)));
	cpumask_var_t span;
	cpumask_var_t online;
	_Bool overloaded;
	_Bool overutilized;
	cpumask_var_t dlo_mask;
	atomic_t dlo_count;
	struct dl_bw dl_bw;
	struct cpudl cpudl;
	unsigned long long visit_gen;
	struct irq_work rto_push_work;
	raw_spinlock_t rto_lock;
	int rto_loop;
	int rto_cpu;
	atomic_t rto_loop_next;
	atomic_t rto_loop_start;
	cpumask_var_t rto_mask;
	struct cpupri cpupri;
	struct perf_domain *pd;
} __attribute__((__aligned__(8)));
struct root_domain rd;
