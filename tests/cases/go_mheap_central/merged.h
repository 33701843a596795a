/* Go runtime/mheap.go, mheap.central: each mcentral is followed by a pad of
 * cpu.CacheLinePadSize - sizeof(mcentral) % cpu.CacheLinePadSize bytes, "so that each
 * mcentral.lock gets its own cache line" (the runtime's comment). CacheLinePadSize is 64 on
 * amd64. Written here on the replica's members as a 64-byte alignment per mcentral. */
struct central {
	struct mcentral c0 __attribute__((aligned(64)));
	struct mcentral c1 __attribute__((aligned(64)));
	struct mcentral c2 __attribute__((aligned(64)));
	struct mcentral c3 __attribute__((aligned(64)));
};
