/* Replica of Phoenix 2.0's histogram (pthread version): the data structures, allocation
 * and access pattern, not its code. An image of RGB bytes; one `thread_arg_t` per thread
 * (3096 bytes: three 256-entry int histograms after the slice's pointer and bounds) in
 * one calloc'd array, so the end of one thread's blue[] and the start of the next
 * thread's header share a line; each thread streams over its slice and increments its own
 * histograms. Run at -O0 as the literature does (layout: efeslab/huron's test suite
 * describes the 3096-byte thread_arg_t).
 *   histogram THREADS MEGAPIXELS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    unsigned char *data;
    long data_pos;
    long data_len;
    int red[256];
    int green[256];
    int blue[256];
} thread_arg_t;

static void *calc_hist(void *arg) {
    thread_arg_t *t = arg;
    unsigned char *val;
    for (long i = t->data_pos; i < t->data_pos + t->data_len; i += 3) {
        val = &t->data[i];
        t->blue[val[0]]++;
        t->green[val[1]]++;
        t->red[val[2]]++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    long pixels = (argc > 2 ? atol(argv[2]) : 16) * 1000000L;
    long bytes = pixels * 3;
    unsigned char *image = malloc(bytes);
    for (long i = 0; i < bytes; i++)
        image[i] = (unsigned char)(i * 31 % 251);
    thread_arg_t *arg = calloc(threads, sizeof(thread_arg_t));
    pthread_t *tid = malloc(threads * sizeof(pthread_t));
    long per = pixels / threads * 3;
    for (int i = 0; i < threads; i++) {
        arg[i].data = image;
        arg[i].data_pos = i * per;
        arg[i].data_len = i == threads - 1 ? bytes - i * per : per;
        pthread_create(&tid[i], NULL, calc_hist, &arg[i]);
    }
    long red = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        for (int j = 0; j < 256; j++)
            red += (long)arg[i].red[j] * j;
    }
    printf("%ld\n", red);
    free(tid);
    free(arg);
    free(image);
    return 0;
}
