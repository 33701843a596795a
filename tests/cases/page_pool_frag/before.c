/* tests/cases/page_pool_frag: struct page_pool (include/net/page_pool.h, Linux 6.5, x86_64,
 * CONFIG_PAGE_POOL_STATS=y, no lock debugging) before "page_pool: place frag_* fields in one
 * cacheline". Offsets as the commit gives them: the parameters fill the first line, the frag
 * block ends with frag_users at 192 (the start of the fourth line), alloc_stats at 200.
 * Member types are written as same-sized stand-ins (the delayed work as 88 bytes of words, the
 * ring as its three line-aligned sections). Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct pp_params {
	uint32_t flags;
	uint32_t order;
	uint32_t pool_size;
	int nid;
	void *dev;
	void *napi;
	int dma_dir;
	uint32_t max_len;
	uint32_t offset;
	void *init_callback;
	void *init_arg;
};

struct pp_delayed_work {
	void *words[11];
};

struct pp_alloc_stats {
	uint64_t fast;
	uint64_t slow;
	uint64_t slow_high_order;
	uint64_t empty;
	uint64_t refill;
	uint64_t waive;
};

struct pp_alloc_cache {
	uint32_t count;
	void *cache[128];
};

struct pp_ring {
	int producer __attribute__((aligned(64)));
	int producer_lock;
	int consumer_head __attribute__((aligned(64)));
	int consumer_tail;
	int consumer_lock;
	int size __attribute__((aligned(64)));
	int batch;
	void **queue;
};

struct page_pool {
	struct pp_params p;
	struct pp_delayed_work release_dw;
	void *disconnect;
	unsigned long defer_start;
	unsigned long defer_warn;
	uint32_t pages_state_hold_cnt;
	unsigned int frag_offset;
	void *frag_page;
	long frag_users;
	struct pp_alloc_stats alloc_stats;
	uint32_t xdp_mem_id;
	struct pp_alloc_cache alloc __attribute__((aligned(64)));
	struct pp_ring ring;
	void *recycle_stats;
	int pages_state_release_cnt;
	int user_cnt;
	uint64_t destroy_cnt;
};

struct page_pool pool;
