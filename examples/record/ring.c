/* A single-producer single-consumer queue whose head and tail share a line: the producer
 * stores `head` after each push, the consumer stores `tail` after each pop, and each reads
 * the other's index on every push and pop. That traffic is true sharing: each side needs
 * the other's index, so head and tail on separate lines alone move the lines as often; the
 * fix is each side caching the other's index (read again only when the ring looks full or
 * empty), then the indices on separate lines. The queue is on the heap: lineup types the
 * block from the allocating function. */
#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>

#include "work.h"

#define SLOTS 1024

struct ring {
    unsigned head; /* next slot to fill: written by the producer */
    unsigned tail; /* next slot to drain: written by the consumer */
    unsigned long produced;
    unsigned long consumed;
    long slots[SLOTS];
};

static long items = 1000000;

/* Each side keeps its own index in a register and stores it for the other side. */
static void *producer(void *arg) {
    struct ring *q = arg;
    int rounds = work_rounds;
    long n = items;
    unsigned h = 0;
    for (long i = 0; i < n; i++, h++) {
        long item = (long)(work((unsigned long)i, rounds) >> 1); /* produce it */
        while (h - __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) == SLOTS)
            sched_yield();
        q->slots[h % SLOTS] = item;
        __atomic_store_n(&q->head, h + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *consumer(void *arg) {
    struct ring *q = arg;
    int rounds = work_rounds;
    long n = items, sum = 0;
    unsigned t = 0;
    for (long i = 0; i < n; i++, t++) {
        while (__atomic_load_n(&q->head, __ATOMIC_ACQUIRE) == t)
            sched_yield();
        long item = q->slots[t % SLOTS];
        __atomic_store_n(&q->tail, t + 1, __ATOMIC_RELEASE);
        sum += (long)(work((unsigned long)item, rounds) & 0xffff); /* consume it */
    }
    return (void *)sum;
}

static struct ring *ring_new(void) {
    struct ring *q = aligned_alloc(64, sizeof *q);
    q->head = q->tail = 0;
    q->produced = q->consumed = 0;
    return q;
}

int main(int argc, char **argv) {
    if (argc > 1)
        items = atol(argv[1]);
    work_from_args(argc, argv, 2);
    struct ring *q = ring_new();
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, q);
    pthread_create(&p, NULL, producer, q);
    void *sum;
    pthread_join(p, NULL);
    pthread_join(c, &sum);
    printf("sum %ld\n", (long)sum);
    free(q);
    return 0;
}
