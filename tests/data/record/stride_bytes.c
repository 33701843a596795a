/* Per-thread slices of a `double *` array whose length is given in bytes (`SLICE_BYTES`, as
 * PARSEC streamcluster's CACHE_LINE of 32): two threads' slices share a 64-byte line. Each
 * worker starts at a barrier and adds to the first two doubles of its own slice, so the
 * slices are false sharing however the threads interleave. `lineup optimize --header` pads
 * the byte macro to a whole line and makes the calloc line-aligned; the program checks the
 * allocation for NULL (a second argument gives the element count to allocate, so a test can
 * make the allocation fail: the patched allocation must return NULL as calloc does).
 *   stride_bytes [THREADS [COUNT]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SLICE_BYTES 32

static double *sums;
static pthread_barrier_t start;

static void *worker(void *arg) {
    long id = (long)arg;
    volatile double *mine = sums + id * (SLICE_BYTES / sizeof(double));
    pthread_barrier_wait(&start);
    for (long i = 0; i < 100000; i++)
        mine[i & 1] += 1;
    return NULL;
}

int main(int argc, char **argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 2;
    size_t count = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)nthreads;
    sums = calloc(count, SLICE_BYTES);
    if (sums == NULL) {
        fputs("out of memory\n", stderr);
        return 1;
    }
    pthread_t t[16];
    pthread_barrier_init(&start, NULL, nthreads);
    for (long i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    double total = 0;
    for (long i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        total += sums[i * (SLICE_BYTES / sizeof(double))];
    }
    printf("%.0f\n", total);
    free(sums);
    return 0;
}
