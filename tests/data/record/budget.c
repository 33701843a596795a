/* Known per-element counts under a small memory budget (tests/record_budget.rs).
 *
 * Two workers, each N iterations, meeting at a barrier every PHASE iterations so that both
 * touch the shared line in every phase whatever the scheduling:
 *  - counters[t].hits++ every iteration and counters[t].misses++ every other one: elements
 *    0 and 1 of `counters` share one line that both threads write (false sharing between
 *    elements). Exactly N loads and N stores of hits, N/2 of misses, per worker.
 *  - tallies[t].bins[i % BINS]++: a 4 KiB struct per thread, lines only its thread touches
 *    (what the memory budget may degrade). N loads and N stores per worker.
 *  - a private heap buffer streamed over (stream[i % STREAM] = i): one thread's lines.
 * main then reads every bin (BINS loads per tally) and prints the sums.
 *   budget N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BINS 512
#define PHASE 4096
#define STREAM (1 << 16)

struct counter {
    volatile long hits;
    volatile long misses;
};

struct tally {
    volatile long bins[BINS];
};

static struct counter counters[4] __attribute__((aligned(64)));
static struct tally tallies[2] __attribute__((aligned(64)));
static pthread_barrier_t barrier;
static long n;

static void *work(void *arg) {
    long t = (long)arg;
    long *stream = malloc(STREAM * sizeof(long));
    if (!stream)
        return NULL;
    for (long i = 0; i < n; i++) {
        if (i % PHASE == 0)
            pthread_barrier_wait(&barrier);
        counters[t].hits++;
        if (i % 2 == 0)
            counters[t].misses++;
        tallies[t].bins[i % BINS]++;
        stream[i % STREAM] = i;
    }
    long keep = stream[n % STREAM];
    free(stream);
    return (void *)keep;
}

int main(int argc, char **argv) {
    n = argc > 1 ? atol(argv[1]) : 1000000;
    if (n <= 0 || n % PHASE) {
        fprintf(stderr, "usage: budget N (a positive multiple of %d)\n", PHASE);
        return 2;
    }
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    long sum = 0;
    for (int t = 0; t < 2; t++)
        for (int b = 0; b < BINS; b++)
            sum += tallies[t].bins[b];
    printf("%ld %ld %ld\n", counters[0].hits + counters[1].hits,
           counters[0].misses + counters[1].misses, sum);
    return 0;
}
