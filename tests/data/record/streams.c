#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct tally {
    long lines;
    long bytes;
};

struct tally tally;

static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 2000; i++) {
        __atomic_fetch_add(&tally.lines, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&tally.bytes, id + i % 7, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int status = argc > 1 ? atoi(argv[1]) : 0;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 300; i++) {
        printf("out %d: %ld lines\n", i, tally.lines);
        if (i % 7 == 0)
            fprintf(stderr, "err %d: %ld bytes\n", i, tally.bytes);
    }
    fflush(stdout);
    fputs("no newline at the end", stderr);
    return status;
}
