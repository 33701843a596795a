/* A pointer declared on one line and assigned the allocation on another, as C89-style code
 * (Phoenix's, PARSEC's) writes it, built at -O0: lineup finds the local from the store of
 * the call's result into its frame slot (issue 16 item 2; tests/record_alloc.rs). */
#include <pthread.h>
#include <stdlib.h>

static long n = 100000;
long *shared_counts;

static void *worker(void *arg) {
    long id = (long)arg;
    /* Through a volatile access, so that -O2 keeps every increment (it folds the loop into
     * one add otherwise, and 13 accesses in a run are negligible, not false sharing). */
    for (long i = 0; i < n; i++)
        ((volatile long *)shared_counts)[id]++;
    return NULL;
}

int main(int argc, char **argv) {
    long *counts;
    pthread_t th[2];
    if (argc > 1)
        n = atol(argv[1]);
    counts = calloc(8, sizeof *counts);
    shared_counts = counts;
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    return counts[0] == n && counts[1] == n ? 0 : 1;
}
