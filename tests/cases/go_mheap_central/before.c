/* tests/cases/go_mheap_central: four span-class central free lists side by side, each with
 * its own lock, without the padding Go's runtime gives them. Compiled with cc -g -c by
 * tests/cases.rs. */
#include <stdint.h>

struct mcentral {
	uintptr_t lock;
	int32_t spanclass;
	void *partial;
	void *full;
};

struct central {
	struct mcentral c0;
	struct mcentral c1;
	struct mcentral c2;
	struct mcentral c3;
};

struct central central;
