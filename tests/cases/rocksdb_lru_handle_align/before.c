/* tests/cases/rocksdb_lru_handle_align: RocksDB's LRUHandle (cache/lru_cache.h, the layout
 * stored in the index read here): value, deleter, next_hash, next, prev, charge, key_length,
 * hash, refs, flags, then the key's bytes (key_data, allocated to the key's length; a 16-byte
 * key here, which makes the 88 bytes the review cites). Compiled with cc -g -c by
 * tests/cases.rs. */
#include <stdint.h>
#include <stddef.h>

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
};

struct lru_handle h;
