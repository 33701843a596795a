/* A lock next to the data it protects: every worker takes `lock`, updates `balance` and
 * `txns`, and lets go. The line moves with the lock from one worker to the next: that is
 * true sharing (the data really is shared), which no layout removes; fewer, larger critical
 * sections or per-thread accounts do. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

static pthread_barrier_t start; /* workers begin together */

struct account {
    pthread_mutex_t lock; /* 40 bytes on x86-64 glibc */
    long balance;         /* protected by lock */
    long txns;            /* protected by lock */
};

struct account acct __attribute__((aligned(64))) = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
static long iterations = 300000;

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    int rounds = work_rounds;
    long amount = (long)arg + 1;
    unsigned long seed = (unsigned long)amount;
    for (long i = 0; i < iterations; i++) {
        seed = work(seed, rounds); /* outside the lock */
        pthread_mutex_lock(&acct.lock);
        acct.balance += amount + (long)(seed >> 60);
        acct.txns++;
        pthread_mutex_unlock(&acct.lock);
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
    printf("txns %ld\n", acct.txns);
    return 0;
}
