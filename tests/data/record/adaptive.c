/* Adaptive sampling (`lineup record --sample auto`): each of two threads first streams over
 * an array of its own (private lines: the sampling backs off there), then increments its
 * own member of one global pair (one line written by both: false sharing, counted in
 * full). main writes the pair before the threads start, so the line is shared and written
 * from the workers' first access on.
 *   adaptive ELEMENTS ROUNDS INCREMENTS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct pair {
    long a; /* thread 0's */
    long b; /* thread 1's */
};

volatile struct pair shared_pair;
static long elements = 1 << 20, rounds = 4, increments = 200000;

static void *worker(void *arg) {
    long id = (long)arg;
    /* volatile: one access per element and round, as written (no vectorizing). */
    volatile long *mine = malloc(elements * sizeof *mine);
    if (!mine)
        return NULL;
    for (long i = 0; i < elements; i++)
        mine[i] = i;
    for (long r = 0; r < rounds; r++)
        for (long i = 0; i < elements; i++)
            mine[i] += r;
    for (long i = 0; i < increments; i++) {
        if (id == 0)
            shared_pair.a++;
        else
            shared_pair.b++;
    }
    long sum = mine[elements - 1];
    free((void *)mine);
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc > 1)
        elements = atol(argv[1]);
    if (argc > 2)
        rounds = atol(argv[2]);
    if (argc > 3)
        increments = atol(argv[3]);
    shared_pair.a = 0;
    shared_pair.b = 0;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    long total = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("%ld %ld %ld\n", shared_pair.a, shared_pair.b, total);
    return 0;
}
