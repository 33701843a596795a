#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shared_state {
    long produced; /* written by worker 0 */
    long consumed; /* written by worker 1 */
};

struct shared_state state;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 200000; i++) {
        if (id == 0)
            __atomic_store_n(&state.produced, state.produced + 1, __ATOMIC_RELAXED);
        else
            __atomic_store_n(&state.consumed, state.consumed + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("about to crash\n");
    fflush(stdout);
    const char *how = argc > 1 ? argv[1] : "segv";
    if (strcmp(how, "abort") == 0)
        abort();
    volatile int *nowhere = NULL;
    return *nowhere;
}
