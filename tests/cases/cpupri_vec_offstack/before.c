/* struct cpupri_vec as Linux 6.16 (kernel/sched/cpupri.h) builds it with
 * CONFIG_CPUMASK_OFFSTACK=y (include/linux/cpumask.h: cpumask_var_t is a pointer to a bitmap
 * allocated apart), the configuration of distribution kernels for machines of the seed's
 * size: the vector holds the count and a pointer, and the bits live on lines of their own. */
typedef struct {
	int counter;
} atomic_t;

struct cpumask {
	unsigned long bits[8];
};

typedef struct cpumask *cpumask_var_t;

struct cpupri_vec {
	atomic_t count;
	cpumask_var_t mask;
};

struct cpupri_vec pri_to_cpu[101];
