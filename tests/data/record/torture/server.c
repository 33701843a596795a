/* Record torture, class 11 (issue 23; tests/record_torture.rs): a server stopped by
 * `timeout 1 ...`, which sends SIGTERM to its child and to its own process group: the
 * server must get SIGTERM once, as it does without lineup (two signals sent back to back
 * to a process that has one pending are one), not once from the group and once more
 * forwarded by lineup.
 *   server
 * Works a little (1000 iterations), then waits in read(2) on a pipe its SIGTERM handler
 * writes to; after the first wake-up waits 300 ms more for further SIGTERMs, then prints
 * the number its handler counted.
 * Correct run under `timeout 1`: prints "terms 1", exit status 0 (timeout's own: 124).
 * Instrumented accesses: exactly 2000 + 2 * terms + 1 (a load and a store per iteration
 * and per SIGTERM, one load to print); the pipe's write end is a fixed descriptor, so the
 * handler reads no global for it. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAKE_FD 200

static volatile long counter;
static volatile int terms;

static void on_term(int sig) {
    (void)sig;
    terms++; /* a load and a store */
    ssize_t r = write(WAKE_FD, "x", 1); /* main only reads the pipe: errno is not its */
    (void)r;
}

int main(void) {
    int p[2];
    if (pipe(p) || dup2(p[1], WAKE_FD) != WAKE_FD)
        return 3;
    close(p[1]);
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL))
        return 4;
    for (long i = 0; i < 1000; i++)
        counter++;
    char c;
    while (read(p[0], &c, 1) != 1)
        ;
    struct timespec ts; /* field by field: an initializer may be a memcpy from a constant,
                         * which the runtime records */
    ts.tv_sec = 0;
    ts.tv_nsec = 300 * 1000 * 1000;
    while (nanosleep(&ts, &ts))
        ;
    printf("terms %d\n", terms);
    return 0;
}
