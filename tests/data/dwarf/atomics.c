/* _Atomic members. pahole 1.24 cannot print DW_TAG_atomic_type, so this file has no golden
 * file: tests/dwarf_reader.rs checks it by hand. */
struct bits;

struct atomics {
	char c;
	_Atomic int ai;
	_Atomic(long) al;
	_Atomic(struct bits *) ap;
	_Atomic char ac;
};

struct atomics g_atomics;
