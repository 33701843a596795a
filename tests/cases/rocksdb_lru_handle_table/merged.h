/* RocksDB pull request 2520 (closed, not merged): length_, elems_ and list_ each
 * CACHE_ALIGNED(CACHE_LINE_SIZE), 64 bytes. */
struct lru_handle_table {
	uint32_t length_ __attribute__((aligned(64)));
	uint32_t elems_ __attribute__((aligned(64)));
	void **list_ __attribute__((aligned(64)));
};
