/* Replica of the pattern of PARSEC streamcluster's pgain(): the data structures and access
 * pattern, not its code. Points { weight, coord pointer, assign, cost } in one array; each
 * thread takes a contiguous range, computes every point's distance to a candidate centre
 * and, where it is cheaper, writes the point's cost and assignment; per-thread partial
 * costs go into one shared `double *work_mem` array, a slice of STRIDE doubles per thread
 * (PARSEC pads each slice to its CACHE_LINE of 32 bytes, half a 64-byte line), indexed by
 * the point's current assignment as PARSEC's `lower[center_table[p[i].assign]]`:
 * neighbouring threads' slices share a line. Its false sharing survives at -O2 because the
 * index is loaded per point, so the compiler cannot keep the slot in a register (a fixed
 * `work_mem[pid] += d` is hoisted out of the loop at -O2 and leaves one store per round).
 *   streamcluster THREADS THOUSAND_POINTS ROUNDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DIM 8
/* Doubles per thread's slice: 32 bytes. Built with -DSTRIDE=8 -DLINE_ALIGNED it is the fix
 * `lineup optimize` advises for this array (whole lines per thread, a line-aligned block). */
#ifndef STRIDE
#define STRIDE 4
#endif

typedef struct {
    float weight;
    float *coord;
    long assign;
    float cost;
} Point;

static Point *points;
static long npoints;
static int nthreads, rounds;
static double *work_mem;

static float dist(const float *a, const float *b) {
    float s = 0;
    for (int i = 0; i < DIM; i++)
        s += (a[i] - b[i]) * (a[i] - b[i]);
    return s;
}

static void *pgain(void *arg) {
    long pid = (long)arg;
    long k1 = npoints / nthreads * pid;
    long k2 = pid == nthreads - 1 ? npoints : k1 + npoints / nthreads;
    double *lower = work_mem + pid * STRIDE;
    for (int r = 0; r < rounds; r++) {
        const float *centre = points[(r * 7919) % npoints].coord;
        for (long i = k1; i < k2; i++) {
            float d = dist(points[i].coord, centre) * points[i].weight;
            if (d < points[i].cost) {
                points[i].cost = d;
                points[i].assign = r;
            }
            lower[points[i].assign & (STRIDE - 1)] += d;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    nthreads = argc > 1 ? atoi(argv[1]) : 2;
    npoints = (argc > 2 ? atol(argv[2]) : 200) * 1000L;
    rounds = argc > 3 ? atoi(argv[3]) : 20;
    points = malloc(npoints * sizeof(Point));
    float *coords = malloc(npoints * DIM * sizeof(float));
    for (long i = 0; i < npoints; i++) {
        points[i].coord = coords + i * DIM;
        for (int j = 0; j < DIM; j++)
            points[i].coord[j] = (float)((i * 31 + j * 17) % 1000) / 10.0f;
        points[i].weight = 1.0f;
        points[i].assign = 0;
        points[i].cost = 1e30f;
    }
#ifdef LINE_ALIGNED
    work_mem = aligned_alloc(64, (size_t)nthreads * STRIDE * sizeof(double));
    for (long i = 0; i < (long)nthreads * STRIDE; i++)
        work_mem[i] = 0;
#else
    work_mem = calloc((size_t)nthreads * STRIDE, sizeof(double));
#endif
    pthread_t *t = malloc(nthreads * sizeof(pthread_t));
    for (long i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, pgain, (void *)i);
    double total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        for (int j = 0; j < STRIDE; j++)
            total += work_mem[i * STRIDE + j];
    }
    printf("%.0f\n", total);
    free(t);
    free(work_mem);
    free(coords);
    free(points);
    return 0;
}
