/* Record torture, class 6 (issue 23; tests/record_torture.rs): threads on stacks the
 * program provides (pthread_attr_setstack). The recorder skips each thread's own stack,
 * and must find that stack's bounds without taking in the memory around it: one stack is an
 * array in .bss (beside the program's .bss globals), the other a malloc'd block (an mmap,
 * placed next to the heap block its thread writes).
 *   own_stacks own       thread A on the .bss stack, thread B on the malloc'd one
 *   own_stacks default   both on default stacks (the same accesses: the reference)
 * Each thread stores N = 200000 times to each of: its half of an array in .data, its half of
 * an array in .bss, and its own heap block (64 longs, passed as its argument; A's block is
 * small, from the brk heap, B's a 1 MiB block, mmap'd). Then main adds all four arrays up.
 * Correct run: prints "stacks sum 51193728", exit status 0.
 * Instrumented accesses: exactly 6N + 256 = 1200256 (3 stores per iteration per thread,
 * main's 4 x 64 loads). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 200000
#define STACK (1 << 20)

static volatile long gdata[64] = {1}; /* .data */
static volatile long gbss[64];        /* .bss */
static char bss_stack[STACK] __attribute__((aligned(4096)));

static __attribute__((noinline)) void work(volatile long *h, long id) {
    for (long i = 0; i < N; i++) {
        gdata[(i & 31) + 32 * id] = i;
        gbss[(i & 31) + 32 * id] = i;
        h[i & 63] = i;
    }
}

static void *work_a(void *h) {
    work(h, 0);
    return NULL;
}

static void *work_b(void *h) {
    work(h, 1);
    return NULL;
}

int main(int argc, char **argv) {
    int own = argc > 1 && !strcmp(argv[1], "own");
    /* B's heap block first, its stack second: two mmaps, the stack right below the block. */
    volatile long *hb = malloc(1 << 20);
    char *heap_stack = malloc(STACK);
    volatile long *ha = malloc(64 * sizeof(long));
    if (!hb || !heap_stack || !ha)
        return 3;
    pthread_attr_t attr[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_attr_init(&attr[i]);
        if (own && pthread_attr_setstack(&attr[i], i ? heap_stack : bss_stack, STACK))
            return 4;
    }
    if (pthread_create(&t[0], &attr[0], work_a, (void *)ha) ||
        pthread_create(&t[1], &attr[1], work_b, (void *)hb))
        return 5;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    long sum = 0;
    for (int k = 0; k < 64; k++)
        sum += gdata[k] + gbss[k] + ha[k] + hb[k];
    printf("stacks sum %ld\n", sum);
    return 0;
}
