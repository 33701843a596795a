/* Control: per-thread counters done right. Each slot has a cache line of its own
 * (aligned(64)), so no two workers ever write the same line: nothing to report. The slots
 * are one heap array. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

struct slot {
    unsigned long hits;
    unsigned long misses;
} __attribute__((aligned(64)));

static long iterations = 2000000;

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    struct slot *s = arg;
    unsigned long seed = (unsigned long)(uintptr_t)s;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        if ((seed >> 33) & 1)
            __atomic_store_n(&s->hits, s->hits + 1, __ATOMIC_RELAXED);
        else
            __atomic_store_n(&s->misses, s->misses + 1, __ATOMIC_RELAXED);
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
    struct slot *slots = aligned_alloc(64, (size_t)n * sizeof *slots);
    for (int i = 0; i < n; i++)
        slots[i].hits = slots[i].misses = 0;
    pthread_barrier_init(&start, NULL, n);
    pthread_t t[64];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, &slots[i]);
    unsigned long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        total += slots[i].hits + slots[i].misses;
    }
    printf("events %lu\n", total);
    free(slots);
    return 0;
}
