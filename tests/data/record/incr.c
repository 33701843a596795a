/* `x++` at -O0 is a load and a store of x: each worker increments its own member N times,
 * which c2c would see as N loads and N stores (tests/record.rs). */
#include <pthread.h>
#include <stdlib.h>

struct twice {
    long a;
    long b;
};

struct twice tw;
static long n = 100000;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < n; i++) {
        if (id)
            tw.b++;
        else
            tw.a++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return tw.a + tw.b == 2 * n ? 0 : 1;
}
