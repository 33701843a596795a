/* Replica of pbzip2's shape (pbzip2 -p2 on its Debian source package): the workers'
 * compression runs in a library lineup does not instrument (libbz2), and between blocks each
 * worker stores its progress into its own slot of a small shared array, the two slots on one
 * cache line. Here the "library" is a loop that keeps its state in registers (no memory
 * access to record), a few tenths of a second of CPU per worker, and each worker stores into
 * its slot once per block, 200 times. Written by two threads on one line, concurrently, but
 * 400 stores against seconds of work: negligible, not false sharing.
 *
 * usage: library_work [blocks]; prints a checksum of the work and the slots. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 2
#define BLOCK_ROUNDS 1500000

static long blocks = 200;
static long *done; /* THREADS slots on one line */
static uint64_t sums[THREADS * 8]; /* each worker's result, a line apart */

/* The library's work: xorshift rounds, all in registers. */
__attribute__((noinline)) static uint64_t compress_block(uint64_t x) {
    for (long i = 0; i < BLOCK_ROUNDS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void *worker(void *arg) {
    long id = (long)(intptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull + (uint64_t)id;
    for (long b = 0; b < blocks; b++) {
        x = compress_block(x);
        done[id] = b + 1; /* one store per block */
    }
    sums[id * 8] = x;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        blocks = atol(argv[1]);
    done = aligned_alloc(64, 64); /* the slots on one line */
    for (int i = 0; i < THREADS; i++)
        done[i] = 0;
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], 0);
    for (int i = 0; i < THREADS; i++)
        printf("%ld %016llx\n", done[i], (unsigned long long)sums[i * 8]);
    free(done);
    return 0;
}
