/* Record torture, class 8 (issue 23; tests/record_torture.rs): children that end without
 * the runtime's exit path.
 *   forks exit   the child does 1000 iterations of work and ends with _exit(7)
 *   forks exec   the child execs /bin/true (not instrumented: not recorded) at once
 * The parent does 100000 iterations of work first, then forks and waits.
 * Correct run: prints "forks exit: child status 7" or "forks exec: child status 0", exit
 * status 0.
 * Instrumented accesses: exactly 200000 + 2 in the parent (a load and a store of a volatile
 * global per iteration; loads of `stdout`, to flush it before forking, and of the global,
 * to check it), plus 2000 in the child in exit mode, none in exec mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long counter;

static void work(long n) {
    for (long i = 0; i < n; i++)
        counter++;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    int exec = !strcmp(argv[1], "exec");
    work(100000);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0) {
        if (exec) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        work(1000);
        _exit(7);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 4;
    printf("forks %s: child status %d%s\n", argv[1], WEXITSTATUS(status),
           counter == 100000 ? "" : " (WRONG counter)");
    return 0;
}
