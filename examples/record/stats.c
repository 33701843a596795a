/* A stats struct with a hot counter next to read-mostly configuration: the accounting
 * thread bumps `requests` on every event while the workers read `max_batch` and
 * `timeout_ms` on every request. The config never changes, yet every worker keeps missing
 * on it, because the counter's line keeps moving to the accounting thread (false sharing).
 * The fix: move `requests` to a line of its own, away from the config. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

struct server_stats {
    unsigned long requests; /* hot: stored by the accounting thread */
    int max_batch;          /* read-mostly config, read by every worker */
    int timeout_ms;
    long started;           /* written once */
};

struct server_stats stats __attribute__((aligned(64))) = {.max_batch = 32, .timeout_ms = 250};
static long iterations = 2000000;

static void *accounting(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    unsigned long seed = (unsigned long)(long)arg + 99;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        __atomic_store_n(&stats.requests, stats.requests + 1 + (seed >> 63), __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    unsigned long seed = (unsigned long)(long)arg + 1, sum = 0;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds);
        int batch = __atomic_load_n(&stats.max_batch, __ATOMIC_RELAXED);
        int timeout = __atomic_load_n(&stats.timeout_ms, __ATOMIC_RELAXED);
        sum += (seed >> 40) % (unsigned long)batch + (unsigned long)timeout;
    }
    return (void *)sum;
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 2)
        iterations = atol(argv[2]);
    work_from_args(argc, argv, 3);
    if (workers < 1 || workers > 64)
        workers = 1;
    pthread_barrier_init(&start, NULL, workers + 1);
    pthread_t acct, w[64];
    stats.started = 1;
    pthread_create(&acct, NULL, accounting, NULL);
    for (long i = 0; i < workers; i++)
        pthread_create(&w[i], NULL, worker, (void *)i);
    unsigned long total = 0;
    for (int i = 0; i < workers; i++) {
        void *r;
        pthread_join(w[i], &r);
        total += (unsigned long)r;
    }
    pthread_join(acct, NULL);
    printf("requests %s checksum %lu\n", stats.requests >= (unsigned long)iterations ? "ok" : "lost", total % 1000003);
    return 0;
}
