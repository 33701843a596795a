/* Record torture, class 5 (issue 23; tests/record_torture.rs): W^X. After its hook call
 * sites have run once (the default recording mode registers each site at its first
 * execution, making its page writable to rewrite it later), the program mprotects its own
 * text (__executable_start to etext, page-aligned) back to PROT_READ|PROT_EXEC, then runs
 * two workers on those sites for MS milliseconds, through many of the recorder's switches.
 *   wx MS
 * Correct run: stdout "wx sum ok", exit status 0; stderr "iterations A B" (each worker's
 * iteration count, which depends on time).
 * Instrumented accesses: exactly 3(A + B) + 13: main's first pass over the loop (a load of
 * `stop`, a load and a store of slot 0); per worker iteration a load of `stop` and a load
 * and a store of its slot; per worker the last load of `stop` and a store of its `iters`;
 * main's store of `stop` and loads of the two `iters`, the two slots and `stderr`. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern char __executable_start, etext;

static volatile long slot[2][8];
static volatile long iters[2];
static volatile int stop;

/* Up to `max` iterations (0: until `stop`). Not inlined: main's first pass and the workers
 * run the same call sites. */
static __attribute__((noinline)) long spin(long id, long max) {
    long n = 0;
    while (!stop) {    /* 1 load per iteration (and 1 more when stopped) */
        slot[id][0]++; /* a load and a store */
        if (++n == max)
            break;
    }
    return n;
}

static void *worker(void *arg) {
    long id = (long)arg;
    iters[id] = spin(id, 0); /* 1 store */
    return NULL;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 500;
    spin(0, 1); /* 3 accesses: every site of the loop has run */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)&__executable_start & ~(page - 1);
    uintptr_t hi = ((uintptr_t)&etext + page - 1) & ~(page - 1);
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC))
        return 3;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i))
            return 4;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts))
        ;
    stop = 1; /* 1 store */
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    long a = iters[0], b = iters[1];                 /* 2 loads */
    int ok = slot[0][0] == a + 1 && slot[1][0] == b; /* 2 loads */
    printf("wx sum %s\n", ok ? "ok" : "WRONG");
    fprintf(stderr, "iterations %ld %ld\n", a, b); /* 1 load: stderr */
    return 0;
}
