/* Two threads store to their own member of one global struct, and main reads the other's:
 * false sharing that a hardware data breakpoint (perf record -e mem:ADDR/LEN:w) sees on a
 * machine without PEBS or IBS. Built with -no-pie so `nm` gives the run-time address.
 * Usage: watch [N]: N stores to each member, N loads of `b` by main. */
#include <pthread.h>
#include <stdlib.h>

struct pair {
  long a;
  long b;
} __attribute__((aligned(64))) shared_pair = {1, 2};

static long n = 100000;

static void *store_b(void *arg) {
  for (long i = 0; i < n; i++)
    __atomic_store_n(&shared_pair.b, i, __ATOMIC_RELAXED);
  return arg;
}

int main(int argc, char **argv) {
  if (argc > 1)
    n = atol(argv[1]);
  pthread_t t;
  pthread_create(&t, 0, store_b, 0);
  for (long i = 0; i < n; i++)
    __atomic_store_n(&shared_pair.a, i, __ATOMIC_RELAXED);
  pthread_join(t, 0);
  long sum = 0;
  for (long i = 0; i < n; i++)
    sum += __atomic_load_n(&shared_pair.b, __ATOMIC_RELAXED);
  return sum == -1;
}
