/* Included by both dup_a.c and dup_b.c: must appear once after deduplication. */
#ifndef SHARED_H
#define SHARED_H

struct shared_hdr {
	unsigned int magic;
	unsigned short version;
	unsigned char flags : 3;
	unsigned char kind : 5;
	void *owner;
	struct shared_hdr *next;
	struct opaque_thing *handle; /* only dup_b.c defines it */
};

typedef struct {
	long sum;
	int count;
} shared_anon_t;

#endif
