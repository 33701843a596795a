/* tests/cases/pg_lwlock_padded: four PostgreSQL-style LWLocks packed in an array's worth of
 * bytes (16 bytes each: tranche, state, waiters), before LWLockPadded.
 * Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct lwlock {
	uint16_t tranche;
	uint32_t state;
	struct {
		uint32_t head;
		uint32_t tail;
	} waiters;
};

struct lwlocks {
	struct lwlock buf_mapping;
	struct lwlock lock_manager;
	struct lwlock wal_insert;
	struct lwlock proc_array;
};

struct lwlocks locks;
