/* Per-thread argument structs in one calloc'd array, the shape of Phoenix's
 * linear_regression (one args struct per thread, each thread summing into its own): two
 * 24-byte elements share a line, and calloc places the array at 16 mod 64, so padding the
 * element alone cannot separate them (issue 16 item 3; tests/record.rs). */
#include <pthread.h>
#include <stdlib.h>

typedef struct {
    long sum;
    long count;
    long id;
} worker_args;

static long n = 100000;
static pthread_barrier_t start; /* workers begin together, so their writes interleave */

static void *worker(void *arg) {
    pthread_barrier_wait(&start);
    /* volatile: every update is a load and a store at -O2 too */
    volatile worker_args *a = arg;
    for (long i = 0; i < n; i++) {
        a->sum += i;
        a->count++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    worker_args *args = calloc(2, sizeof(worker_args));
    pthread_t t[2];
    pthread_barrier_init(&start, NULL, 2);
    for (long i = 0; i < 2; i++) {
        args[i].id = i;
        pthread_create(&t[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    int ok = args[0].count + args[1].count == 2 * n;
    free(args);
    return ok ? 0 : 1;
}
