/* Per-thread size_t slots in blocks from posix_memalign (PARSEC streamcluster's work_mem
 * shape), allocated in a function that also handles pointers to a struct of its own
 * (`struct job *`) whose size divides the blocks': each block must be typed by what the
 * program does with it, never as that struct (issue 27 item 3; tests/record_alloc.rs).
 * - `slots`: a local whose address is posix_memalign's out-parameter: an array of size_t;
 * - `totals.counts`: a member of a global struct, posix_memalign's out-parameter: an array
 *   of size_t, named by the member. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct job {
    size_t *slots;
    long id;
};

static struct totals {
    long threads;
    size_t *counts;
} totals;

static long n = 100000;

static void *work(void *arg) {
    struct job *j = arg;
    volatile size_t *s = j->slots;
    volatile size_t *c = totals.counts;
    for (long i = 0; i < n; i++) {
        s[j->id] += 1;
        c[j->id] += 2;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    size_t *slots;
    if (posix_memalign((void **)&slots, 64, 4 * sizeof(size_t)) != 0)
        return 2;
    if (posix_memalign((void **)&totals.counts, 64, 4 * sizeof(size_t)) != 0)
        return 2;
    for (int i = 0; i < 4; i++)
        slots[i] = totals.counts[i] = 0;
    totals.threads = 2;
    struct job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        struct job *j = &jobs[i];
        j->slots = slots;
        j->id = i;
        pthread_create(&th[i], NULL, work, j);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("%zu %zu\n", slots[0] + slots[1], totals.counts[0] + totals.counts[1]);
    free(slots);
    free(totals.counts);
    return 0;
}
