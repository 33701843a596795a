// Per-thread size_t slots in blocks from posix_memalign, allocated in a function that runs
// its workers as std::thread (libstdc++'s std::thread, 8 bytes, divides the blocks' size):
// each block must be typed by what the program does with it, never as std::thread (issue 27
// item 3, clang's case; tests/record_alloc.rs).
// - `slots`: a local whose address is posix_memalign's out-parameter: an array of size_t;
// - `totals.counts`: a member of a global struct, posix_memalign's out-parameter: an array
//   of size_t, named by the member.
#include <cstdio>
#include <cstdlib>
#include <thread>

static struct totals {
    long threads;
    size_t *counts;
} totals;

static long n = 100000;

static void work(size_t *slots, long id) {
    volatile size_t *s = slots;
    volatile size_t *c = totals.counts;
    for (long i = 0; i < n; i++) {
        s[id] += 1;
        c[id] += 2;
    }
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    size_t *slots;
    if (posix_memalign((void **)&slots, 64, 4 * sizeof(size_t)) != 0)
        return 2;
    if (posix_memalign((void **)&totals.counts, 64, 4 * sizeof(size_t)) != 0)
        return 2;
    for (int i = 0; i < 4; i++)
        slots[i] = totals.counts[i] = 0;
    totals.threads = 2;
    std::thread *workers[2];
    for (long i = 0; i < 2; i++)
        workers[i] = new std::thread(work, slots, i);
    for (std::thread *t : workers) {
        t->join();
        delete t;
    }
    printf("%zu %zu\n", slots[0] + slots[1], totals.counts[0] + totals.counts[1]);
    free(slots);
    free(totals.counts);
    return 0;
}
