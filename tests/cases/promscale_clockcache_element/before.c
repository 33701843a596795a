/* tests/cases/promscale_clockcache_element: four neighbouring elements of promscale's CLOCK
 * cache storage (pkg/clockcache/cache.go, type element, x86_64 Go sizes): key and value are
 * interfaces (two words each), then usedWithTs (a uint32: the CLOCK used bit packed with a
 * timestamp) and size (a uint64): 48 bytes, with the 16 bytes of padding that made it 64
 * removed (promscale pull request 1768). The storage is one Go slice of elements, so
 * neighbours sit back to back; the replica holds four of them as one struct.
 * Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct element {
	void *key[2];
	void *value[2];
	uint32_t used_with_ts;
	uint64_t size;
};

struct storage {
	struct element e0;
	struct element e1;
	struct element e2;
	struct element e3;
};

struct storage storage;
