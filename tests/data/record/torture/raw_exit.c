/* Record torture, class 2 (issue 23; tests/record_torture.rs): the program's threads end
 * with a bare SYS_exit, never through glibc's exit: the worker first, then main, with
 * status 5. The kernel ends the process when its last thread is gone, with that thread's
 * status; a runtime thread that outlives them keeps the process alive, or ends it with a
 * status of its own.
 *   raw_exit N
 * Correct run: prints "raw exit N" (main adds 1 to a volatile global N times after the
 * worker's N), exit status 5.
 * Instrumented accesses: exactly 4N + 2 (a load and a store per iteration in each thread,
 * one load of total to print, one of the stdout pointer to flush). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile long total;

static void *worker(void *arg) {
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        total += 1;
    syscall(SYS_exit, 0);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)n))
        return 9;
    /* The kernel clears the worker's tid at its SYS_exit, which is what join waits for. */
    pthread_join(t, NULL);
    for (long i = 0; i < n; i++)
        total += 1;
    printf("raw exit %ld\n", total);
    fflush(stdout);
    syscall(SYS_exit, 5);
    return 0;
}
