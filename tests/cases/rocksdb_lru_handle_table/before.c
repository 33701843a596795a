/* tests/cases/rocksdb_lru_handle_table: RocksDB's LRUHandleTable (cache/lru_cache.h) as pull
 * request 2520's diff shows it before: length_, elems_, list_. Each cache shard has one, and
 * every access to it is made holding the shard's mutex. Compiled with cc -g -c by
 * tests/cases.rs. */
#include <stdint.h>

struct lru_handle_table {
	uint32_t length_;
	uint32_t elems_;
	void **list_;
};

struct lru_handle_table table;
