/* What a program does with its own descriptors and signals must not change under
 * `lineup record` (tests/record_safety.rs). Two threads update a shared struct in every
 * mode, so there is always something to record:
 *   fds stdout        write to fd 1; exit 11 on EBADF (as when run with >&-)
 *   fds dup2 FILE     dup2 FILE onto fds 900..999, work, then exit 3 if FILE grew
 *   fds close         close fds 3..1023 first, then work
 *   fds touch FILE    create FILE, then work
 *   fds forever       work until a signal ends it, printing "started PID" once both
 *                     threads have stored
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
            usleep(1000);
        printf("started %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    return 64;
}
