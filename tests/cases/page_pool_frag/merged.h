/* struct page_pool after "page_pool: place frag_* fields in one cacheline" (Alexander Lobakin,
 * Linux 6.6): the frag block (with pages_state_hold_cnt, which it is paired with) moved up to
 * right after the parameters, at the start of the second line; alloc_stats still at 200. */
struct page_pool {
	struct pp_params p;
	long frag_users;
	void *frag_page;
	unsigned int frag_offset;
	uint32_t pages_state_hold_cnt;
	struct pp_delayed_work release_dw;
	void *disconnect;
	unsigned long defer_start;
	unsigned long defer_warn;
	struct pp_alloc_stats alloc_stats;
	uint32_t xdp_mem_id;
	struct pp_alloc_cache alloc __attribute__((aligned(64)));
	struct pp_ring ring;
	void *recycle_stats;
	int pages_state_release_cnt;
	int user_cnt;
	uint64_t destroy_cnt;
};
