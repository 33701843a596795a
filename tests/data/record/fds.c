/* What a program does with its own descriptors and signals must not change under
 * `lineup record` (tests/record_safety.rs). Two threads update a shared struct in every
 * mode, so there is always something to record:
 *   fds stdout        write to fd 1; exit 11 on EBADF (as when run with >&-)
 *   fds dup2 FILE     dup2 FILE onto fds 900..999, work, then exit 3 if FILE grew
 *   fds close         close fds 3..1023 first, then work
 *   fds touch FILE    create FILE, then work
 *   fds forever       work until a signal ends it, printing "started PID" once both
 *                     threads have stored
 *   fds quiet         work, then exit 0 (nothing printed)
 *   fds count         count SIGTERMs in a handler: print "started PID", work, spin until
 *                     one came (60 s at most), wait 2 s more, print "sigterm N"
 *   fds fifo          work, leave a FIFO named like a runtime file in $LINEUP_OUT (lineup
 *                     then blocks on it after the run), print "started PID"
 * (tests/record_cli_safety.rs uses the last three and `touch`, `forever`.)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* volatile: every increment is a load and a store the compiler keeps in memory. */
struct pair {
    volatile long a;
    volatile long b;
};

struct pair pair;
static volatile int forever;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; forever || i < 100000; i++) {
        if (id)
            pair.b++;
        else
            pair.a++;
    }
    return NULL;
}

static void work(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

static volatile sig_atomic_t terms;

static void on_term(int sig) {
    (void)sig;
    terms++;
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "stdout")) {
        work();
        if (write(1, "hello\n", 6) < 0)
            return errno == EBADF ? 11 : 12;
        return 0;
    }
    if (!strcmp(mode, "dup2") && argc > 2) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 20;
        for (int k = 900; k < 1000; k++)
            if (dup2(fd, k) < 0)
                return 21;
        work();
        struct stat st;
        if (fstat(fd, &st) != 0)
            return 22;
        return st.st_size == 0 ? 0 : 3;
    }
    if (!strcmp(mode, "close")) {
        for (int k = 3; k < 1024; k++)
            close(k);
        work();
        return 0;
    }
    if (!strcmp(mode, "touch") && argc > 2) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            close(fd);
        work();
        return 0;
    }
    if (!strcmp(mode, "forever")) {
        /* "started" once both workers have stored: a signal right after it (the tests
         * send one) finds stores to record however loaded the machine is. */
        forever = 1;
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, worker, (void *)i);
        while (pair.a < 1000 || pair.b < 1000)
            nap_ms(1);
        printf("started %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (!strcmp(mode, "quiet")) {
        work();
        return 0;
    }
    if (!strcmp(mode, "count")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        printf("started %d\n", (int)getpid());
        fflush(stdout);
        work();
        /* Spinning, not sleeping: a signal reaches a running thread at once, so that a
         * second one sent a moment later is counted apart instead of merging with the
         * first while that is still pending. */
        time_t start = time(NULL);
        while (!terms && time(NULL) - start < 60)
            ;
        nap_ms(2000);
        printf("sigterm %d\n", (int)terms);
        return 0;
    }
    if (!strcmp(mode, "fifo")) {
        work();
        const char *dir = getenv("LINEUP_OUT");
        if (!dir)
            return 30;
        char path[4096];
        snprintf(path, sizeof path, "%s/rt.4000000000.bin", dir);
        if (mkfifo(path, 0600) != 0)
            return 31;
        printf("started %d\n", (int)getpid());
        fflush(stdout);
        return 0;
    }
    return 64;
}
