/* Replica of Phoenix word_count's per-thread result arrays (word_count-pthread.c): each
 * worker counts words of its share of the input in private memory and stores into its own
 * slot of a small array only a handful of times in the run (here 6), the slots of
 * neighbouring threads on one cache line. Written by two threads on one line, concurrently,
 * but 6 stores against millions of accesses: negligible, not false sharing.
 *
 * usage: few_stores [words]; prints the counts. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 2
#define STORES 6

static unsigned char *text;
static size_t length = 2000000;
static long *found; /* THREADS slots, calloc'd: one line */

static void *worker(void *arg) {
    long id = (long)(intptr_t)arg;
    size_t lo = length / THREADS * (size_t)id, hi = lo + length / THREADS;
    size_t part = (hi - lo) / STORES;
    long words = 0;
    for (int s = 0; s < STORES; s++) {
        for (size_t i = lo + part * (size_t)s; i < lo + part * (size_t)(s + 1); i++)
            words += text[i] == ' ';
        found[id] = words; /* one store per part of the input */
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        length = (size_t)atol(argv[1]);
    text = malloc(length);
    for (size_t i = 0; i < length; i++)
        text[i] = (unsigned char)(i % 7 == 0 ? ' ' : 'a' + i % 26);
    found = aligned_alloc(64, 64); /* the slots on one line */
    for (int i = 0; i < THREADS; i++)
        found[i] = 0;
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], 0);
    for (int i = 0; i < THREADS; i++)
        printf("%ld\n", found[i]);
    free(found);
    free(text);
    return 0;
}
