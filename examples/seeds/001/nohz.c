/*
 * Replica of the idle load balancer's global state in Linux 3.1 (kernel/sched_fair.c), the
 * struct seed 001 re-lays out. The kernel declares it as an anonymous struct; it is named
 * here so that tools can find it. CONFIG_CPUMASK_OFFSTACK (the 8-socket machine of the seed
 * has a large NR_CPUS), so cpumask_var_t is a pointer.
 *
 *   cc -g -c examples/seeds/001/nohz.c -o nohz.o
 *   lineup layout --dwarf nohz.o nohz
 */
typedef struct {
	int counter;
} atomic_t;
struct cpumask;
typedef struct cpumask *cpumask_var_t;

struct nohz {
	atomic_t load_balancer;
	atomic_t first_pick_cpu;
	atomic_t second_pick_cpu;
	cpumask_var_t idle_cpus_mask;
	cpumask_var_t grp_idle_mask;
	unsigned long next_balance; /* in jiffy units */
};

struct nohz nohz __attribute__((aligned(64)));
