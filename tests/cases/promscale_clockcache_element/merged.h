/* The padded element that promscale measured and then removed (pull request 1768): `_ [16]byte`
 * after size made each element 64 bytes, so that in the slice's line-aligned backing array
 * every element starts a line of its own. Written here as a 64-byte alignment per element. */
struct storage {
	struct element e0 __attribute__((aligned(64)));
	struct element e1 __attribute__((aligned(64)));
	struct element e2 __attribute__((aligned(64)));
	struct element e3 __attribute__((aligned(64)));
};
