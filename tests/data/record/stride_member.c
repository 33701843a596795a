/* A struct's array member indexed by thread with a #define stride too small for a line
 * (`counts[id * STRIDE]`, STRIDE 2 longs: four threads' slots on one 64-byte line). Each
 * worker starts at a barrier and adds to its own slot: false sharing however the threads
 * interleave. `diagnose` says `lineup optimize` pads the slots and writes the patch; it must.
 *   stride_member */
#include <pthread.h>
#include <stdio.h>

#define STRIDE 2
#define NT 4

struct stats {
    long counts[NT * STRIDE];
    long total;
};

static struct stats st;
static pthread_barrier_t start;

static void *worker(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    for (long r = 0; r < 50000; r++)
        st.counts[id * STRIDE] += 1;
    return NULL;
}

int main(void) {
    pthread_t t[NT];
    pthread_barrier_init(&start, NULL, NT);
    for (long i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NT; i++)
        st.total += st.counts[i * STRIDE];
    printf("%ld\n", st.total);
    return 0;
}
