/* tests/instances.rs: a ring whose head (pushed by CPUs 0-3) and tail (popped by CPUs 4-7)
 * are on two lines of a line-aligned instance, and on one line of an instance that starts 16
 * bytes into a line (calloc's 16-byte blocks). */
struct ring {
	unsigned long stats[7];
	unsigned long head;
	unsigned long tail;
	unsigned long more[7];
};

struct ring the_ring;
