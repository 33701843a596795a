/* Second compile unit: a different struct dup with the same name. */
#include "shared.h"

struct dup {
	long long x;
	long long y;
	short z;
};

struct opaque_thing {
	int secret;
};

struct dup dup_b_var;
struct opaque_thing thing_b;
struct shared_hdr hdr_b;
shared_anon_t anon_b;

int dup_a_size(void);

int dup_b_size(void) { return sizeof(struct dup) + hdr_b.magic; }

int main(void) { return dup_a_size() + dup_b_size(); }
