/* Record torture, class 4 (issue 23; tests/record_torture.rs): the program owns SIGTRAP,
 * which the default recording mode (bursts) needs for itself while it rewrites hook call
 * sites under running threads (an int3 on the first byte of the call).
 *   sigtrap MODE MS
 *     signal      signal(SIGTRAP, handler): glibc's signal() does not go through sigaction
 *     ignore      signal(SIGTRAP, SIG_IGN)
 *     raw         a raw rt_sigaction syscall (kernel struct: handler, SA_RESTORER, restorer,
 *                 mask) installing the handler, with a restorer of the program's own
 *     rawmask     each worker blocks SIGTRAP with a raw rt_sigprocmask syscall
 * Two workers each add to their own volatile slot until main, after sleeping MS
 * milliseconds, sets `stop`. In signal and raw modes the program raises SIGTRAP twice (its
 * handler counts them); in ignore mode twice too (ignored); in rawmask mode not at all.
 * Correct run: stdout "MODE sum ok traps T" (T = 2 in signal and raw modes, else 0), exit
 * status 0; stderr "iterations A B" (each worker's iteration count, which depends on time).
 * Instrumented accesses: exactly 3(A + B) + 11 + 2T: per iteration a load of `stop` and a
 * load and a store of the worker's slot; per worker the last load of `stop` and a store of
 * its `iters`; main's store of `stop`, loads of the two `iters`, the two slots, `traps` and
 * `stderr`; 2 per trap in the handler (the comments at each access say the same). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long slot[2][8];
static volatile long iters[2];
static volatile int stop;
static volatile int traps;

static void on_trap(int sig) {
    (void)sig;
    traps++; /* 2 per trap */
}

/* The kernel's rt_sigreturn, as a restorer (SA_RESTORER) of the program's own. */
__asm__(".text\n"
        ".type torture_restore_rt, @function\n"
        "torture_restore_rt:\n"
        "\tmovq $15, %rax\n"
        "\tsyscall\n");
extern void torture_restore_rt(void);

struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

static void *worker(void *arg) {
    long id = (long)arg & 1, rawmask = (long)arg >> 1;
    if (rawmask) {
        unsigned long set = 1ul << (SIGTRAP - 1);
        if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 8))
            abort();
    }
    long n = 0;
    while (!stop) {     /* 1 load per iteration (and 1 more at the end) */
        slot[id][0]++;  /* a load and a store */
        n++;
    }
    iters[id] = n;      /* 1 store */
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    long ms = atol(argv[2]);
    int raises = 0;
    long rawmask = 0;
    if (!strcmp(mode, "signal")) {
        signal(SIGTRAP, on_trap);
        raises = 2;
    } else if (!strcmp(mode, "ignore")) {
        signal(SIGTRAP, SIG_IGN);
        raises = 2;
    } else if (!strcmp(mode, "raw")) {
        struct kernel_sigaction ka; /* field by field: an initializer may be a memcpy from a
                                     * constant, which the runtime records */
        ka.handler = on_trap;
        ka.flags = 0x04000000ul; /* SA_RESTORER */
        ka.restorer = torture_restore_rt;
        ka.mask = 0;
        if (syscall(SYS_rt_sigaction, SIGTRAP, &ka, NULL, 8))
            return 3;
        raises = 2;
    } else if (!strcmp(mode, "rawmask")) {
        rawmask = 1; /* a local, passed in the threads' argument: no access */
    } else {
        return 2;
    }
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(i | rawmask << 1)))
            return 4;
    if (raises)
        raise(SIGTRAP);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts))
        ;
    stop = 1; /* 1 store */
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    if (raises)
        raise(SIGTRAP);
    long a = iters[0], b = iters[1];             /* 2 loads */
    int ok = slot[0][0] == a && slot[1][0] == b; /* 2 loads */
    printf("%s sum %s traps %d\n", mode, ok ? "ok" : "WRONG", traps); /* 1 load */
    fprintf(stderr, "iterations %ld %ld\n", a, b); /* 1 load: stderr */
    return 0;
}
