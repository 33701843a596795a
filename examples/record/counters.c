/* Array of per-thread counters: each worker bumps its own slot, but eight slots share one
 * cache line, so every increment takes the line from the other workers (false sharing).
 * The fix: give each slot its own line (alignas(64) on the slot's type). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

#define MAX_THREADS 8

struct counters {
    unsigned long hits[MAX_THREADS]; /* one per worker, all on line 0 */
    unsigned long total;             /* summed by main at the end */
};

struct counters stats __attribute__((aligned(64)));
static long iterations = 2000000;

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    long id = (long)arg;
    unsigned long seed = (unsigned long)id * 2654435761u + 1;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        if ((seed >> 33) & 1)
            __atomic_store_n(&stats.hits[id], stats.hits[id] + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2)
        iterations = atol(argv[2]);
    work_from_args(argc, argv, 3);
    if (n < 1 || n > MAX_THREADS)
        n = 2;
    pthread_barrier_init(&start, NULL, n);
    pthread_t t[MAX_THREADS];
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++)
        stats.total += stats.hits[i];
    printf("total %lu\n", stats.total);
    return 0;
}
