/* Record torture, class 3 (issue 23; tests/record_torture.rs): the program confines itself
 * with seccomp, after which the runtime's own system calls (opening its file by path,
 * mprotect, ...) fail or kill it.
 *   seccomp strict N   N iterations of work, then prctl(SECCOMP_MODE_STRICT) (read, write,
 *                      exit and sigreturn only), two write(2)s, syscall(SYS_exit, 0): no
 *                      atexit, no thread destructors. Prints "strict sum N" and
 *                      "strict done", exit status 0.
 *   seccomp filter N   PR_SET_NO_NEW_PRIVS and a BPF filter (SECCOMP_MODE_FILTER) making
 *                      open and openat fail with EPERM (everything else allowed); checks
 *                      that open fails so, then N iterations of work in main and in each of
 *                      two threads created after the filter (they inherit it), and returns
 *                      normally. Prints "filter open EPERM sum 3N", exit status 0.
 * Work: a load and a store of one of the thread's own 8 volatile globals per iteration;
 * the sum reads all 3 x 8.
 * Instrumented accesses: strict exactly 2N + 24; filter exactly 6N + 25 (one more: the
 * load of errno, in the main thread's TLS). */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile long work[3][8]; /* main's, and each worker's */

static void do_work(long id, long n) {
    for (long i = 0; i < n; i++)
        work[id][i & 7] += 1;
}

static void *worker(void *arg) {
    do_work((long)arg & 3, (long)arg >> 2);
    return NULL;
}

static long sum(void) {
    long s = 0;
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 8; k++)
            s += work[t][k];
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    long n = atol(argv[2]);
    if (!strcmp(argv[1], "strict")) {
        do_work(0, n);
        char line[64];
        int len = snprintf(line, sizeof line, "strict sum %ld\n", sum());
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
            return 4;
        if (write(1, line, (size_t)len) != len || write(1, "strict done\n", 12) != 12)
            syscall(SYS_exit, 5);
        syscall(SYS_exit, 0);
        return 6; /* not reached */
    }
    if (!strcmp(argv[1], "filter")) {
        static const struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 2, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        };
        struct sock_fprog prog; /* field by field: an initializer may be a memcpy from a
                                 * constant, which the runtime records */
        prog.len = (unsigned short)(sizeof f / sizeof f[0]);
        prog.filter = (struct sock_filter *)f;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
            return 4;
        int fd = open(argv[0], O_RDONLY);
        if (fd >= 0 || errno != EPERM)
            return 5;
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, worker, (void *)(n << 2 | (i + 1))))
                return 6;
        do_work(0, n);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        printf("filter open EPERM sum %ld\n", sum());
        return 0;
    }
    return 2;
}
