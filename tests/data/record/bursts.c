/* `--sample bursts` rewrites the program's hook calls while its threads run them: the
 * program must not notice (tests/record_bursts.rs). Four workers each add to their own slot
 * of one array (false sharing between the slots) with every signal blocked, as servers'
 * worker threads do, and the program has a SIGTRAP handler of its own, which must still
 * get the program's own SIGTRAPs; every 16th iteration also adds to a shared counter
 * atomically (an atomic hook, which does the operation itself: between windows its site
 * calls the runtime's quiet twin). Prints the slots' sum, the atomic count and the
 * handler's count:
 *   bursts ITERATIONS */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

struct slots {
    volatile long v[4]; /* volatile: a load and a store per iteration, even at -O1 */
};

static struct slots shared_slots __attribute__((aligned(64)));
static long iterations = 1000000;
static volatile int traps;
static long events;

static void on_trap(int sig) {
    (void)sig;
    traps++;
}

static void *worker(void *arg) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0);
    long id = (long)arg;
    for (long i = 0; i < iterations; i++) {
        shared_slots.v[id] += (i & 3) + 1;
        if ((i & 15) == 0)
            __atomic_fetch_add(&events, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        iterations = atol(argv[1]);
    struct sigaction sa = {0};
    sa.sa_handler = on_trap;
    sigfillset(&sa.sa_mask);
    sigaction(SIGTRAP, &sa, 0);
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    raise(SIGTRAP);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], 0);
    raise(SIGTRAP);
    long sum = 0;
    for (int i = 0; i < 4; i++)
        sum += shared_slots.v[i];
    printf("sum %ld events %ld traps %d\n", sum, __atomic_load_n(&events, __ATOMIC_RELAXED),
           traps);
    return 0;
}
