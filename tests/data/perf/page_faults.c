#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
/* Touches fresh pages from two functions so page faults land in both. */
__attribute__((noinline)) void fill_a(char *p, size_t n) { for (size_t i = 0; i < n; i += 4096) p[i] = 1; }
__attribute__((noinline)) void fill_b(char *p, size_t n) { for (size_t i = 0; i < n; i += 4096) p[i] = 2; }
int main(void) {
  size_t n = 64 * 4096;
  char *a = mmap(0, n, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  char *b = mmap(0, 2*n, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  fill_a(a, n); fill_b(b, 2*n);
  return 0;
}
