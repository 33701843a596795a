/* Control: read-shared configuration. main fills the table before the workers start, and
 * they only read it afterwards: every cache keeps a valid copy, nothing moves. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

struct tunables {
    int weights[16];
    long scale;
    long bias;
};

struct tunables cfg __attribute__((aligned(64)));
static long iterations = 2000000;

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    unsigned long seed = (unsigned long)(long)arg + 7, sum = 0;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        int w = __atomic_load_n(&cfg.weights[(seed >> 40) & 15], __ATOMIC_RELAXED);
        sum += (unsigned long)(w * cfg.scale + cfg.bias);
    }
    return (void *)sum;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2)
        iterations = atol(argv[2]);
    work_from_args(argc, argv, 3);
    if (n < 1 || n > 64)
        n = 2;
    for (int i = 0; i < 16; i++)
        cfg.weights[i] = i * 3 + 1;
    cfg.scale = 5;
    cfg.bias = 11;
    pthread_barrier_init(&start, NULL, n);
    pthread_t t[64];
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    unsigned long total = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (unsigned long)r;
    }
    printf("checksum %lu\n", total % 1000003);
    return 0;
}
