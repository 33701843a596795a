/* Two struct arrays allocated through one wrapper, as real programs allocate: Phoenix 2.0's
 * tests call MALLOC/CALLOC, which go to mem_malloc/mem_calloc in its lib/memory.c (a
 * malloc or calloc, a NULL check that reports and exits, the block returned); PARSEC and
 * many C projects have an xmalloc of that shape. The runtime logs every block at the
 * wrapper's own malloc call; lineup must name each block by its caller's line and type it
 * by the caller's pointer (issue 16 item 2; tests/record_alloc.rs).
 *
 * - `struct tally` (16 bytes): one per thread in one block, each thread incrementing its
 *   own `hits` (false sharing between elements: the block is 16-byte aligned);
 * - `struct sample` (24 bytes): a table main fills in and the workers read. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tally {
    long hits;
    long misses;
};

struct sample {
    double value;
    long weight;
    long flags;
};

static long rounds = 100000;
static int samples = 64;
static struct tally *tallies;
static struct sample *table;
static pthread_barrier_t start; /* workers begin together, so their writes interleave */

static void *mem_malloc(size_t size) {
    void *p = malloc(size);
    if (p == NULL) {
        perror("mem_malloc");
        exit(1);
    }
    return p;
}

static void *mem_calloc(size_t n, size_t size) {
    void *p = mem_malloc(n * size);
    memset(p, 0, n * size);
    return p;
}

static void *worker(void *arg) {
    struct tally *t = &tallies[(long)arg];
    pthread_barrier_wait(&start);
    for (long i = 0; i < rounds; i++) {
        const struct sample *s = &table[i % samples];
        if (s->value > 0.5)
            t->hits++;
        else
            t->misses++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = 2;
    if (argc > 1)
        rounds = atol(argv[1]);
    tallies = mem_calloc(threads, sizeof(struct tally));
    table = mem_malloc(samples * sizeof(struct sample));
    for (int i = 0; i < samples; i++) {
        table[i].value = (double)(i * 37 % 64) / 64.0;
        table[i].weight = i;
        table[i].flags = 0;
    }
    pthread_t t[2];
    pthread_barrier_init(&start, NULL, threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    long hits = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        hits += tallies[i].hits;
    }
    printf("%ld\n", hits);
    free(table);
    free(tallies);
    return 0;
}
