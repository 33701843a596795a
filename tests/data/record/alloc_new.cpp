/* A `new bool[8]` array (8 bytes, the size of a class with only a vtable pointer, which the
 * program also has) written by two threads, one element each: named by its site and
 * variable as an array of bool, never as the class and its `_vptr` (issue 16 item 2;
 * tests/record_alloc.rs). */
#include <pthread.h>
#include <cstdlib>

struct Shape {
    virtual ~Shape() {}
    virtual long area() const { return 1; }
};

static long n = 100000;
bool *is_center;

static void *worker(void *arg) {
    long id = (long)arg;
    volatile bool *c = is_center;
    for (long i = 0; i < n; i++)
        c[id] = !c[id];
    return nullptr;
}

int main(int argc, char **argv) {
    if (argc > 1)
        n = atol(argv[1]);
    Shape *s = new Shape();
    bool *centers = new bool[8]();
    is_center = centers;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], nullptr, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], nullptr);
    long a = s->area();
    delete s;
    delete[] centers;
    return a == 1 ? 0 : 1;
}
