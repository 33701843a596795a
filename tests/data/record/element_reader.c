/* Element-boundary sharing without a second writer: thread 0 increments a[0].x, thread 1
 * only reads a[1].y; the two 16-byte elements sit on one 64-byte line (the array is aligned
 * to it). Each thread uses its own element, yet every write by thread 0 takes the line
 * from thread 1's cache: false sharing between elements (issue 16 item 3;
 * tests/record_elements.rs). */
#include <pthread.h>
#include <stdlib.h>

struct pair {
    long x;
    long y;
};

struct pair a[2] __attribute__((aligned(64)));
static long n = 100000;
static long sink;
static pthread_barrier_t start; /* the threads begin together, so their accesses interleave */

static void *writer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    /* volatile: one load and one store per iteration at -O2 too */
    volatile long *x = &a[0].x;
    for (long i = 0; i < n; i++)
        (*x)++;
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    volatile long *y = &a[1].y;
    long s = 0;
    for (long i = 0; i < n; i++)
        s += *y;
    sink = s;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    a[1].y = 1;
    pthread_t t[2];
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&t[0], NULL, writer, NULL);
    pthread_create(&t[1], NULL, reader, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return a[0].x == n && sink == n ? 0 : 1;
}
