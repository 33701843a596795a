/* tests/cases/crossbeam_array_queue: a bounded MPMC queue's indexes and its read-only fields
 * in one line, before crossbeam's CachePadded. Compiled with cc -g -c by tests/cases.rs. */
#include <stddef.h>

struct array_queue {
	size_t head;
	size_t tail;
	void *buffer;
	size_t cap;
	size_t one_lap;
};

struct array_queue queue;
