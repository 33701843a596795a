#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct pair {
    long left;  /* worker 0 */
    long right; /* worker 1 */
};

struct pair pair;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 100000; i++) {
        if (id == 0)
            __atomic_store_n(&pair.left, pair.left + 1, __ATOMIC_RELAXED);
        else
            __atomic_store_n(&pair.right, pair.right + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void run(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

int main(void) {
    pid_t child = fork();
    if (child == 0) {
        run();
        printf("child %ld %ld\n", pair.left, pair.right);
        fflush(stdout);
        exit(3);
    }
    int status = 0;
    waitpid(child, &status, 0);
    run();
    printf("parent %ld %ld child status %d\n", pair.left, pair.right, WEXITSTATUS(status));
    return 0;
}
