/* Heap blocks named by where they were allocated (issue 16 item 2). Two threads each write
 * their own element of
 *   - `sums`, a `double *` buffer of 12 (96 bytes: the size of glibc's `struct lconv`,
 *     which this program also uses, so a type chosen by size would be lconv), declared on
 *     the allocation's line: found by its declaration;
 *   - `flags`, a `bool *` array, a global assigned on the allocation's line: found by the
 *     store of the block's address;
 *   - `stats->counts`, a `long *` member of a heap struct: found by the store into it;
 *   - `pairs`, a calloc'd array of a typedef'd anonymous struct.
 * The globals are not static: clang would otherwise turn a block stored only into a static
 * global into a global of its own (GlobalOpt). */
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

static long n = 100000;
double *shared_sums;
bool *flags;

struct tally {
    long *counts;
    long rounds;
};
struct tally *stats;

typedef struct {
    long hits;
    long misses;
} pair_t;
pair_t *pairs;

static void *worker(void *arg) {
    long id = (long)arg;
    volatile double *s = shared_sums;
    volatile bool *f = flags;
    volatile long *c = stats->counts;
    volatile pair_t *p = pairs;
    for (long i = 0; i < n; i++) {
        s[id] += 1.0;
        f[id] = !f[id];
        c[id]++;
        p[id].hits++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    struct lconv *lc = localeconv();
    double *sums = calloc(12, sizeof(double));
    shared_sums = sums;
    flags = malloc(8 * sizeof(bool));
    flags[0] = flags[1] = false;
    struct tally *t = malloc(sizeof *t);
    stats = t;
    t->counts = calloc(8, sizeof(long));
    pair_t *ps = calloc(2, sizeof *ps);
    pairs = ps;
    pthread_t th[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    int ok = sums[0] + sums[1] == 2.0 * n && t->counts[0] == n && lc->decimal_point[0];
    return ok ? 0 : 1;
}
