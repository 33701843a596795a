/* First compile unit: its own struct dup. */
#include "shared.h"

struct dup {
	int a;
	char b;
};

struct dup dup_a_var;
struct shared_hdr hdr_a;
shared_anon_t anon_a;

int dup_a_size(void) { return sizeof(struct dup) + hdr_a.version; }
