/* Replica of PARSEC streamcluster's work_mem (pgain in streamcluster.cpp): one calloc'd
 * array of doubles, a 32-byte block per thread (`lower = &work_mem[pid*stride]`), each
 * thread adding into its own block while it reads points: neighbouring threads' blocks share
 * a line and are written at the same time. The blocks are a small share of the run's
 * accesses (the points are most of them), so the verdict cannot rest on the access share:
 * false sharing, from the writes' rates and overlapping windows, whatever the interleaving.
 *
 * Each worker does half its rounds, meets the other at a barrier, then does the rest: the
 * threads' windows on the line overlap by construction, on an idle or a loaded machine.
 *
 * usage: adjacent_blocks [points] [rounds]; prints the sums. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 2
#define STRIDE 4 /* doubles per thread: 32 bytes */
#define DIM 256

static float *points;
static int npoints = 1000, rounds = 20;
static double *work_mem;
static pthread_barrier_t half;

static void rounds_of(long id, int from, int to) {
    double *lower = &work_mem[id * STRIDE];
    int lo = npoints / THREADS * (int)id, hi = lo + npoints / THREADS;
    for (int r = from; r < to; r++)
        for (int i = lo; i < hi; i++) {
            float d = 0;
            for (int k = 0; k < DIM; k++)
                d += points[i * DIM + k] * (float)(r + 1);
            lower[i & (STRIDE - 1)] += d;
        }
}

static void *worker(void *arg) {
    long id = (long)(intptr_t)arg;
    rounds_of(id, 0, rounds / 2);
    pthread_barrier_wait(&half);
    rounds_of(id, rounds / 2, rounds);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        npoints = atoi(argv[1]);
    if (argc > 2)
        rounds = atoi(argv[2]);
    points = malloc(sizeof(float) * (size_t)npoints * DIM);
    for (int i = 0; i < npoints * DIM; i++)
        points[i] = (float)(i % 13) * 0.25f;
    /* On one line whatever the allocator does (calloc could put the two blocks 32 bytes
     * into a line, one on each of two lines). */
    work_mem = aligned_alloc(64, THREADS * STRIDE * sizeof(double));
    for (int i = 0; i < THREADS * STRIDE; i++)
        work_mem[i] = 0;
    pthread_barrier_init(&half, 0, THREADS);
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], 0);
    double s = 0;
    for (int i = 0; i < THREADS * STRIDE; i++)
        s += work_mem[i];
    printf("%.1f\n", s);
    free(work_mem);
    free(points);
    return 0;
}
