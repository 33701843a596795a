/* tests/cases/rte_ring: a ring whose producer and consumer indexes share the metadata's line
 * (the layout DPDK's rte_ring avoids). Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct ring {
	uint32_t flags;
	uint32_t size;
	uint32_t mask;
	uint32_t capacity;
	volatile uint32_t prod_head;
	volatile uint32_t prod_tail;
	volatile uint32_t cons_head;
	volatile uint32_t cons_tail;
	void **slots;
};

struct ring ring;
