/* Record torture, class 10 (issue 23; tests/record_torture.rs): a recording that takes
 * lineup a while to process (seconds on a 2-core machine), so that a signal can reach lineup
 * after the program has ended and before the profile is written. Two threads each store
 * ROUNDS times over their half of every line of a 16 MiB array (thread 0 the even longs,
 * thread 1 the odd ones: every line shared and written, 2M places), then main writes its
 * pid to DONE (through DONE.tmp, renamed) just before it returns.
 *   heavy DONE ROUNDS
 * Correct run: prints "heavy sum S", S = ROUNDS * 2^20 * (2^21 - 1) (the last round's
 * values; 4398044413952 for ROUNDS 2), exit status 0.
 * Instrumented accesses: exactly ROUNDS * 2^21 (one store per long per round) + 2^21 (main's
 * loads of every long for the sum) + 1 (a load of `stdout`, to flush it). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LEN (1 << 21)

static volatile long arr[LEN];

static void *worker(void *arg) {
    long id = (long)arg & 1, rounds = (long)arg >> 1;
    for (long r = 1; r <= rounds; r++)
        for (long i = id; i < LEN; i += 2)
            arr[i] = r * i;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    long rounds = atol(argv[2]);
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(rounds << 1 | i)))
            return 3;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    long sum = 0;
    for (long i = 0; i < LEN; i++)
        sum += arr[i];
    printf("heavy sum %ld\n", sum);
    fflush(stdout);
    char tmp[4096], text[32];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) || rename(tmp, argv[1]))
        return 4;
    return 0;
}
