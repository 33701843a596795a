/* A true-sharing atomic counter: every worker atomically increments the same `refs`. The
 * line has one member in use and it is written by everyone: no layout helps; per-thread
 * counts summed on demand (or a sharded counter) do. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

struct object_cache {
    atomic_long refs; /* incremented by every worker */
    long capacity;    /* cold */
    char name[48];    /* cold */
};

struct object_cache cache __attribute__((aligned(64))) = {0, 1024, "objects"};
static long iterations = 1000000;

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    unsigned long seed = (unsigned long)(long)arg + 1;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        atomic_fetch_add_explicit(&cache.refs, (long)(seed >> 63) + 1, memory_order_relaxed);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2)
        iterations = atol(argv[2]);
    work_from_args(argc, argv, 3);
    if (n < 1 || n > 64)
        n = 2;
    pthread_barrier_init(&start, NULL, n);
    pthread_t t[64];
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("refs %ld\n", atomic_load(&cache.refs) > 0 ? 1L : 0L);
    return 0;
}
