/* One code site run both inside and outside a critical section, on the same counter: each
 * worker bumps `hits` under the mutex, then once more without it. The locked bumps are
 * ordered with each other; the unlocked ones can meet anything: true sharing. A runtime that
 * kept the lock a code site held when its cache entry was filled, and counted later
 * executions of the site under it, would call every bump ordered ("handed from thread to
 * thread under a lock"). The unlocked bump is a data race on purpose; the program prints
 * only what does not depend on it.
 *
 * usage: lock_then_not [rounds per worker] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct tally {
    pthread_mutex_t mutex;
    char pad[64];
    volatile unsigned long hits;
};

static struct tally tally = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
static unsigned long rounds = 200000;

static __attribute__((noinline)) void bump(volatile unsigned long *n) { *n = *n + 1; }

static void *worker(void *arg) {
    (void)arg;
    for (unsigned long i = 0; i < rounds; i++) {
        pthread_mutex_lock(&tally.mutex);
        bump(&tally.hits);
        pthread_mutex_unlock(&tally.mutex);
        bump(&tally.hits);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = strtoul(argv[1], NULL, 10);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%lu rounds each\n", rounds);
    return 0;
}
