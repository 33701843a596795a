/* One contended object among quiet ones, for the overview of a recording (`diagnose
 * --profile` without `--type`, issue 27 item 7; tests/record_overview.rs):
 * - `hits`: two threads increment their own member of one global struct (one line):
 *   false sharing, the object to rank first;
 * - `config`: a global struct main writes once and the workers only read;
 * - `private`: each worker's own heap buffer of longs, written by that worker alone;
 * - `totals`: a global struct only main writes, after the workers are done. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct hits {
    long left;
    long right;
};

struct config {
    long rounds;
    long stride;
    long scale;
};

struct totals {
    long sum;
    long checks;
};

struct hits hits;
struct config config;
struct totals totals;

static void *work(void *arg) {
    long id = (long)arg;
    volatile long *mine = id ? &hits.right : &hits.left;
    long *private = calloc(64, sizeof *private);
    if (!private)
        return NULL;
    for (long i = 0; i < config.rounds; i++) {
        *mine += config.scale;
        private[(i * config.stride) % 64] += 1;
    }
    long sum = 0;
    for (int i = 0; i < 64; i++)
        sum += private[i];
    free(private);
    return (void *)sum;
}

int main(int argc, char **argv) {
    config.rounds = argc > 1 ? atol(argv[1]) : 100000;
    config.stride = 3;
    config.scale = 1;
    pthread_t th[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, work, (void *)i);
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(th[i], &r);
        totals.sum += (long)r;
        totals.checks++;
    }
    printf("%ld %ld %ld\n", hits.left + hits.right, totals.sum, totals.checks);
    return 0;
}
