/* Record torture, class 7 (issue 23; tests/record_torture.rs): a daemonising child that
 * outlives the recording. The program forks; the child calls setsid(), writes its pid and
 * the LINEUP_OUT it inherited (empty when not recorded) to INFO (through INFO.tmp, renamed),
 * and tells the parent, which then prints and exits. The child then waits for the file GO
 * to appear (the test creates it once lineup has returned and removed its directory; at
 * most 60 s), does its work, and exits: whatever the recorder in it does at exit must not
 * write through a path someone else may have planted since.
 *   daemon INFO GO
 * Correct run: the parent prints "parent done" and exits 0 (the child prints nothing).
 * Instrumented accesses: the parent makes exactly 2 * 100000 + 1 (a load and a store of a
 * volatile global per iteration, and a load of `stdout` to flush it, before forking); the
 * child none before GO, 2 * 100000 after it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long counter;

static void work(void) {
    for (long i = 0; i < 100000; i++)
        counter++;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    work();
    int ready[2];
    if (pipe(ready))
        return 3;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 4;
    if (pid > 0) {
        char c;
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1)
            return 5;
        printf("parent done\n");
        return 0;
    }
    close(ready[0]);
    setsid();
    const char *out = getenv("LINEUP_OUT");
    char tmp[4096], text[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    int len = snprintf(text, sizeof text, "%d\n%s\n", (int)getpid(), out ? out : "");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) || rename(tmp, argv[1]))
        _exit(6);
    if (write(ready[1], "x", 1) != 1)
        _exit(7);
    close(ready[1]);
    for (int i = 0; i < 6000 && access(argv[2], F_OK); i++) {
        usleep(10000);
    }
    work();
    exit(0);
}
