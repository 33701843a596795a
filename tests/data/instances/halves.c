/* tests/instances.rs: two 40-byte halves, each written at its first and its last word by its
 * own CPUs; instances 32-byte aligned. On a line-aligned instance the halves are a line each;
 * 32 bytes into a line, a half straddles two lines, and no layout of these 128 bytes keeps the
 * two apart at both starts. */
struct halves {
	unsigned long a[5];
	char pad[24];
	unsigned long b[5];
	char pad2[24];
};
struct halves the_halves;
