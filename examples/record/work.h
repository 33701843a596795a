/* The work a program does between its accesses to shared data (parsing a request, hashing
 * a key): register-only arithmetic, so the compiler instruments nothing in it. The corpus
 * programs take the number of rounds as an argument (default 16, about 30 ns); 0 makes
 * them tight loops of bare memory operations, the worst case for recording overhead. */
#ifndef WORK_H
#define WORK_H
#include <stdlib.h>

static int work_rounds = 16;

static inline unsigned long work(unsigned long x, int rounds) {
    for (int i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 29;
    }
    return x * 6364136223846793005ull + 1442695040888963407ull;
}

static inline void work_from_args(int argc, char **argv, int at) {
    if (argc > at)
        work_rounds = atoi(argv[at]);
}
#endif
