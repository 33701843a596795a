/* Record torture, class 9 (issue 23; tests/record_torture.rs): the program, or lineup, is
 * killed with SIGKILL while the program runs. The program first stores once to each of the
 * 1M longs of an 8 MiB array (1M distinct places: the recorder flushes its per-thread table
 * of places every 24K or so), then writes its pid to PIDFILE (through PIDFILE.tmp, renamed)
 * and goes on storing over the array until killed, or for 60 s at most (then it prints
 * "not killed" and exits 1).
 *   killed PIDFILE
 * Correct run: none; it is killed. Instrumented accesses: at least 1048576 before PIDFILE
 * exists (one store each), of which the test requires at least 200000 in the profile. */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define LEN (1 << 20)

static volatile long arr[LEN];

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    for (long i = 0; i < LEN; i++)
        arr[i] = i;
    char tmp[4096], text[32];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) || rename(tmp, argv[1]))
        return 3;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (long i = 0; i < LEN; i++)
            arr[i] = i;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 60);
    printf("not killed\n");
    return 1;
}
