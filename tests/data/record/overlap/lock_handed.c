/* Replica of zstd -T2's checksum state (lib/compress/zstdmt_compress.c,
 * ZSTDMT_serialState_update): jobs run on a pool of worker threads, and each job, in job
 * order, takes the serial state's mutex, waits for its turn on a condition variable, feeds
 * its input to one shared XXH64-like state, passes the turn on and unlocks. The state is
 * written by every worker, one after another: handed from thread to thread under a lock,
 * never used by two threads at once. Not contention.
 *
 * usage: lock_handed [jobs] [words per job]; prints the checksum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 2

struct checksum_state {
    uint64_t total_len;
    uint64_t v[4];
    uint64_t mem[4];
    unsigned memsize;
};

struct serial_state {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    unsigned next_job;
    char pad[64];
    struct checksum_state xxh;
};

static struct serial_state serial;
static unsigned jobs = 64;
static unsigned words = 20000;

static uint64_t round64(uint64_t acc, uint64_t input) {
    acc += input * 0x9E3779B185EBCA87ull;
    acc = (acc << 31) | (acc >> 33);
    return acc * 0xC2B2AE3D27D4EB4Full;
}

/* One stripe into the state, as XXH64_update does for each 32-byte stripe: the state is
 * read and written in memory (noinline: the compiler keeps nothing in registers across). */
static __attribute__((noinline)) void update(struct checksum_state *s, const uint64_t *p) {
    for (int i = 0; i < 4; i++)
        s->v[i] = round64(s->v[i], p[i]);
    s->total_len += 32;
}

static void *worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    uint64_t *input = malloc(words * sizeof *input);
    for (unsigned job = id; job < jobs; job += WORKERS) {
        /* The job's own work: private. */
        for (unsigned i = 0; i < words; i++)
            input[i] = round64(job, i);
        pthread_mutex_lock(&serial.mutex);
        while (serial.next_job < job)
            pthread_cond_wait(&serial.cond, &serial.mutex);
        for (unsigned i = 0; i + 4 <= words; i += 4)
            update(&serial.xxh, input + i);
        serial.next_job++;
        pthread_cond_broadcast(&serial.cond);
        pthread_mutex_unlock(&serial.mutex);
    }
    free(input);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        jobs = (unsigned)atoi(argv[1]);
    if (argc > 2)
        words = (unsigned)atoi(argv[2]);
    pthread_mutex_init(&serial.mutex, 0);
    pthread_cond_init(&serial.cond, 0);
    pthread_t t[WORKERS];
    for (uintptr_t i = 0; i < WORKERS; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], 0);
    uint64_t h = serial.xxh.total_len;
    for (int i = 0; i < 4; i++)
        h ^= serial.xxh.v[i];
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}
