/* PostgreSQL src/include/storage/lwlock.h: LWLockPadded is a union of an LWLock and
 * char pad[LWLOCK_PADDED_SIZE], with LWLOCK_PADDED_SIZE = PG_CACHE_LINE_SIZE (128), so that
 * the main array's locks never share a line. Written here on the replica's members as a
 * 128-byte alignment per lock. */
struct lwlocks {
	struct lwlock buf_mapping __attribute__((aligned(128)));
	struct lwlock lock_manager __attribute__((aligned(128)));
	struct lwlock wal_insert __attribute__((aligned(128)));
	struct lwlock proc_array __attribute__((aligned(128)));
};
