/* Per-thread elements of one global array: thread i increments g[i].v only. The two 8-byte
 * elements share a line: false sharing between elements, not true sharing of `v`
 * (issue 16 item 3; tests/record.rs). */
#include <pthread.h>
#include <stdlib.h>

struct counter {
    long v;
};

struct counter g[2];
static long n = 100000;
static pthread_barrier_t start; /* workers begin together, so their writes interleave */

static void *worker(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    /* volatile: one load and one store per iteration at -O2 too */
    volatile long *v = &g[id].v;
    for (long i = 0; i < n; i++)
        (*v)++;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    pthread_t t[2];
    pthread_barrier_init(&start, NULL, 2);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return g[0].v + g[1].v == 2 * n ? 0 : 1;
}
