/* tests/cases/go_gcwork_full_empty: the head of the Go runtime's GC work state (runtime/mgc.go,
 * var work) before the fix: full and empty, the two lock-free stacks of work buffers, next to
 * each other, then one cache-line pad that keeps them off nproc/nwait. Only nproc and nwait of
 * what follows the pad are written here (the runtime has more between them). lfstack is a
 * uint64; cpu.CacheLinePad is 64 bytes on amd64. Compiled with cc -g -c by tests/cases.rs. */
#include <stdint.h>

struct gcwork {
	uint64_t full;
	uint64_t empty;
	char pad0[64];
	uint32_t nproc;
	uint32_t nwait;
};

struct gcwork work;
