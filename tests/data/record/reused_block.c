/* Two workers run one after the other (the second is created after the first is joined),
 * each with a private block from one allocation site: glibc hands the second worker the
 * first one's arena, and the block comes back at the same address. Two objects, each used
 * by one thread, never at the same time: nothing is shared.
 *
 * usage: reused_block [rounds]; prints the sum and whether the blocks shared an address. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds = 100000;
static uintptr_t where[2];

static void *work(void *arg) {
    long id = (long)arg;
    long *private = calloc(64, sizeof *private);
    if (!private)
        return NULL;
    where[id] = (uintptr_t)private;
    for (long i = 0; i < rounds; i++)
        private[(i * 3) % 64] += 1;
    long sum = 0;
    for (int i = 0; i < 64; i++)
        sum += private[i];
    free(private);
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atol(argv[1]);
    long total = 0;
    for (long i = 0; i < 2; i++) {
        pthread_t t;
        void *r;
        pthread_create(&t, NULL, work, (void *)i);
        pthread_join(t, &r);
        total += (long)r;
    }
    printf("%ld %s\n", total, where[0] == where[1] ? "same address" : "different addresses");
    return 0;
}
