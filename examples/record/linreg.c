/* Replica of Phoenix 2.0's linear_regression (pthread version): the data structures,
 * allocation and access pattern, not its code. Points of two chars; one `lreg_args` per
 * thread in one calloc'd array (64 bytes each, 16 or 32 bytes into a line: neighbours share
 * lines); each thread streams over its slice of the points and adds into its own element's
 * five sums on every point. The false sharing survives at -O0, where the sums stay in
 * memory (the layout: github.com/kozyraki/phoenix, phoenix-2.0/tests/linear_regression; as
 * quoted in efeslab/huron's test suite).
 *   linreg THREADS MILLION_POINTS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char x;
    char y;
} POINT_T;

typedef struct {
    pthread_t tid;
    POINT_T *points;
    int num_elems;
    long long SX;
    long long SY;
    long long SXX;
    long long SYY;
    long long SXY;
} lreg_args;

static void *linear_regression_pthread(void *arg) {
    lreg_args *args = arg;
    for (int i = 0; i < args->num_elems; i++) {
        args->SX += args->points[i].x;
        args->SXX += args->points[i].x * args->points[i].x;
        args->SY += args->points[i].y;
        args->SYY += args->points[i].y * args->points[i].y;
        args->SXY += args->points[i].x * args->points[i].y;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    long n = (argc > 2 ? atol(argv[2]) : 16) * 1000000L;
    POINT_T *points = malloc(n * sizeof(POINT_T));
    for (long i = 0; i < n; i++) {
        points[i].x = (char)(i * 7 % 101);
        points[i].y = (char)(i * 13 % 97);
    }
#ifdef LINE_ALIGNED
    /* Where ThreadSanitizer's allocator puts the calloc'd block (its 128-byte size class
     * starts on a line): no false sharing. bench/record_overhead.py runs this build too, to
     * compare lineup with TSan at the same placement. */
    lreg_args *tid_args = aligned_alloc(64, sizeof(lreg_args) * threads);
    memset(tid_args, 0, sizeof(lreg_args) * threads);
#else
    lreg_args *tid_args = calloc(sizeof(lreg_args), threads);
#endif
    long per = n / threads;
    for (int i = 0; i < threads; i++) {
        tid_args[i].points = points + i * per;
        tid_args[i].num_elems = (int)(i == threads - 1 ? n - i * per : per);
        pthread_create(&tid_args[i].tid, NULL, linear_regression_pthread, &tid_args[i]);
    }
    long long SX = 0, SXY = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid_args[i].tid, NULL);
        SX += tid_args[i].SX;
        SXY += tid_args[i].SXY;
    }
    printf("%lld %lld\n", SX, SXY);
    free(tid_args);
    free(points);
    return 0;
}
