/* tests/cases/crossbeam_epoch_local: crossbeam-epoch's per-thread participant, struct Local
 * (crossbeam-epoch/src/internal.rs), before the epoch was wrapped in CachePadded. Field order
 * as declared (Rust may reorder; the sizes on x86_64): entry (the intrusive list link, one
 * pointer), collector (an Arc, one pointer), bag (64 deferred functions of 32 bytes and a
 * length), guard_count, handle_count, pin_count (Cells of usize), epoch (an AtomicUsize).
 * Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct bag {
	char deferreds[64 * 32];
	uintptr_t len;
};

struct local {
	void *entry;
	void *collector;
	struct bag bag;
	uintptr_t guard_count;
	uintptr_t handle_count;
	uintptr_t pin_count;
	uintptr_t epoch;
};

struct local local;
