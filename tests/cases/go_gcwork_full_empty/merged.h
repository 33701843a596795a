/* Go runtime/mgc.go, workType after "runtime: pad work.full and pad.empty to avoid false
 * sharing": full, a cpu.CacheLinePad, empty, another cpu.CacheLinePad, then the rest. Written
 * on the replica's members, the first pad as empty's 64-byte alignment and the second as the
 * replica's pad0 after empty (72 bytes from empty's start to nproc where Go has 72 too). */
struct gcwork {
	uint64_t full;
	uint64_t empty __attribute__((aligned(64)));
	char pad0[64];
	uint32_t nproc;
	uint32_t nwait;
};
