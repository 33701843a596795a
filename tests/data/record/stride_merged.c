/* PARSEC streamcluster's pgain() shape for `work_mem`: the per-thread stride is computed at
 * run time from the number of centres and rounded up to CACHE_LINE, a #define in bytes too
 * small for a 64-byte line; the block holds one slice per thread and one more (`gl_lower`)
 * that thread 0 fills; called twice with different numbers of centres, so blocks with
 * different strides come from one allocation site. Each worker starts at a barrier and adds
 * to the first two doubles of its own slice: false sharing however the threads interleave.
 * No per-thread slices of one length: `lineup optimize` has no plan, and `diagnose` must say
 * what to change by hand.
 *   stride_merged [CENTRES [CENTRES]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CACHE_LINE 32 /* bytes */
#define NPROC 2

static double *work_mem;
static int stride;
static pthread_barrier_t start, done;

static void *pgain(void *arg) {
    long pid = (long)arg;
    volatile double *lower = &work_mem[pid * stride];
    double *gl_lower = &work_mem[NPROC * stride];
    pthread_barrier_wait(&start);
    for (long r = 0; r < 100000; r++)
        lower[r & 1] += 1;
    pthread_barrier_wait(&done);
    if (pid == 0)
        for (int k = 0; k < stride; k++)
            gl_lower[k] = work_mem[k] + work_mem[stride + k];
    return NULL;
}

static double round_with(int numcenters) {
    stride = numcenters + 2;
    int cl = CACHE_LINE / sizeof(double);
    if (stride % cl != 0)
        stride = cl * (stride / cl + 1);
    work_mem = malloc(stride * (NPROC + 1) * sizeof(double));
    if (work_mem == NULL)
        return -1;
    for (int i = 0; i < stride * (NPROC + 1); i++)
        work_mem[i] = 0;
    pthread_t t[NPROC];
    for (long i = 0; i < NPROC; i++)
        pthread_create(&t[i], NULL, pgain, (void *)i);
    for (int i = 0; i < NPROC; i++)
        pthread_join(t[i], NULL);
    double total = work_mem[NPROC * stride];
    free(work_mem);
    return total;
}

int main(int argc, char **argv) {
    pthread_barrier_init(&start, NULL, NPROC);
    pthread_barrier_init(&done, NULL, NPROC);
    double total = round_with(argc > 1 ? atoi(argv[1]) : 1);
    if (argc > 2)
        total += round_with(atoi(argv[2]));
    printf("%.0f\n", total);
    return 0;
}
