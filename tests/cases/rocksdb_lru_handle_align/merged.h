/* RocksDB pull request 10884's first version: LRUHandle allocated cache-line aligned
 * (port::cacheline_aligned_alloc), so each handle starts a line; written as the struct's
 * alignment. Rejected in review (not in what was merged). */
struct lru_handle {
	void *value;
	void (*deleter)(void);
	void *next_hash;
	void *next;
	void *prev;
	size_t charge;
	size_t key_length;
	uint32_t hash;
	uint32_t refs;
	uint8_t flags;
	char key_data[16];
} __attribute__((aligned(64)));
