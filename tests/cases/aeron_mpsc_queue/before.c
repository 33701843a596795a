/* tests/cases/aeron_mpsc_queue: Aeron's C MPSC array queue (aeron_mpsc_concurrent_array_queue_t)
 * as pull request 1915 quotes it: a leading pad of one line less 8 bytes, the producer block
 * (tail, head_cache, shared_head_cache, a pad of one line less 24 bytes), the consumer block
 * (head, a pad of one line less 8 bytes), then capacity, mask, buffer. The producer's and the
 * consumer's pads are flattened into members here. Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct mpsc_queue {
	int8_t pre_pad[64 - 8];
	volatile uint64_t tail;
	uint64_t head_cache;
	volatile uint64_t shared_head_cache;
	int8_t producer_pad[64 - 3 * 8];
	volatile uint64_t head;
	int8_t consumer_pad[64 - 8];
	uint64_t capacity;
	uint64_t mask;
	void *volatile *buffer;
};

struct mpsc_queue q;
