/* A streaming program (the pattern of Phoenix histogram / linear_regression: each thread
 * walks its own part of one big array), also the memory budget test (tests/record_memory.rs):
 *   stream MIB PASSES
 * allocates MIB MiB of longs, and each of 2 threads stores every element of its half once
 * and then loads it PASSES times: exactly (1 + PASSES) * MIB * 2^20 / 8 accesses to the
 * array. It prints the sum so that the loads are not optimized away. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct part {
    long *from;
    long n;
    int passes;
    long sum;
};

static void *walk(void *arg) {
    struct part *p = arg;
    long *a = p->from, n = p->n, s = 0;
    for (long i = 0; i < n; i++)
        a[i] = i;
    for (int k = 0; k < p->passes; k++)
        for (long i = 0; i < n; i++)
            s += a[i];
    p->sum = s;
    return NULL;
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 64;
    int passes = argc > 2 ? atoi(argv[2]) : 3;
    long n = mib * (1L << 20) / (long)sizeof(long);
    long *a = malloc((size_t)n * sizeof(long));
    if (!a)
        return 1;
    struct part parts[2] = {{a, n / 2, passes, 0}, {a + n / 2, n - n / 2, passes, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, walk, &parts[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", parts[0].sum + parts[1].sum);
    free(a);
    return 0;
}
