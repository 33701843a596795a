/* A shared object built with `lineup cc -shared -fPIC`: its accesses call the hooks, which
 * it leaves undefined; the program that dlopens it (dlopen_main.c) defines them.
 * bump(n) does n increments of counter[0]: n loads and n stores. */
volatile long counter[8];
void bump(long n) {
    for (long i = 0; i < n; i++)
        counter[0]++;
}
long total(void) { return counter[0]; }
