/* DPDK lib/ring/rte_ring_core.h, struct rte_ring: the read-only metadata first, then an empty
 * cache line (pad0), the producer's rte_ring_headtail (head and tail) __rte_cache_aligned,
 * another empty line (pad1), the consumer's headtail __rte_cache_aligned, and pad2. Written
 * here on the replica's members: the empty lines become the 128-byte alignment of prod and
 * cons. */
struct ring {
	uint32_t flags;
	uint32_t size;
	uint32_t mask;
	uint32_t capacity;
	void **slots;
	volatile uint32_t prod_head __attribute__((aligned(128)));
	volatile uint32_t prod_tail;
	volatile uint32_t cons_head __attribute__((aligned(128)));
	volatile uint32_t cons_tail;
};
