/* Replica of a single-producer single-consumer ring in its textbook (Lamport) form: the two
 * indices on one line, the slots on lines of their own. The producer loads `tail` to see
 * room and stores `head` after each push; the consumer loads `head` to see an item and
 * stores `tail` after each pop. Each side reads the other side's index on every operation,
 * so the line moves to the reader after every store whichever member the store was to:
 * moving the indices to lines of their own removes no transfer. True sharing, not false
 * sharing. (Queues that pad the indices apart also keep a private copy of the other side's
 * index, read again only when the copy says the ring is full or empty, as rigtorp's
 * SPSCQueue does with readIdxCache_ and writeIdxCache_: that copy is what removes the
 * transfers.)
 *
 * Who writes which member is the same in every run; how often each side finds the ring
 * full or empty and reads the other index again depends on the interleaving, so the number
 * of loads differs from run to run, never who makes them.
 *
 * usage: spsc [items]; prints the sum of the items consumed. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 256

struct spsc {
    unsigned head; /* next slot to fill: written by the producer */
    unsigned tail; /* next slot to drain: written by the consumer */
};

static struct spsc queue __attribute__((aligned(64)));
static long slots[SLOTS] __attribute__((aligned(64)));
static long items = 200000;

static void *producer(void *arg) {
    struct spsc *q = arg;
    unsigned h = 0;
    for (long i = 0; i < items; i++, h++) {
        while (h - __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) == SLOTS)
            sched_yield();
        slots[h % SLOTS] = i;
        __atomic_store_n(&q->head, h + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *consumer(void *arg) {
    struct spsc *q = arg;
    unsigned t = 0;
    long sum = 0;
    for (long i = 0; i < items; i++, t++) {
        while (__atomic_load_n(&q->head, __ATOMIC_ACQUIRE) == t)
            sched_yield();
        sum += slots[t % SLOTS];
        __atomic_store_n(&q->tail, t + 1, __ATOMIC_RELEASE);
    }
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc > 1)
        items = atol(argv[1]);
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, &queue);
    pthread_create(&p, NULL, producer, &queue);
    void *sum;
    pthread_join(p, NULL);
    pthread_join(c, &sum);
    printf("sum %ld\n", (long)sum);
    return 0;
}
