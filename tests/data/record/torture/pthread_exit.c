/* Record torture, class 2 (issue 23; tests/record_torture.rs): `main` ends with
 * pthread_exit() while a worker thread still runs. The process ends when its last thread
 * does (glibc then calls exit(0): atexit handlers, stdio flushed), so a runtime thread that
 * never ends keeps it alive forever.
 *   pthread_exit N
 * Correct run: prints "worker sum 2N" (the worker adds 2 to a volatile global N times),
 * exit status 0.
 * Instrumented accesses: exactly 2N + 1 (a load and a store per iteration, one load to
 * print); main makes none (its thread handle is on its own stack). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long total;

static void *worker(void *arg) {
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        total += 2;
    printf("worker sum %ld\n", total);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)n))
        return 9;
    pthread_exit(NULL);
}
