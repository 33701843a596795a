/* Dlopens the instrumented shared object named by argv[1] (dlopen_lib.c), calls bump(n)
 * and prints "total N". Built with `lineup cc`, without -rdynamic: the hooks the object
 * needs must be in the program's dynamic symbol table all the same. Exit 1 if dlopen
 * fails, with its message. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    void (*bump)(long) = (void (*)(long))dlsym(h, "bump");
    long (*total)(void) = (long (*)(void))dlsym(h, "total");
    bump(atol(argv[2]));
    printf("total %ld\n", total());
    return 0;
}
