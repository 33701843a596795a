/* Layout corner cases for lineup's DWARF reader. Every type is used by a global so that
 * compilers emit it. Built by build.sh; see README.md. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ____cacheline_aligned __attribute__((__aligned__(64)))

/* Bitfields: signed and unsigned, bool, spanning storage units, zero-width. */
struct bits {
	unsigned int a : 3;
	signed int b : 5;
	bool flag : 1;
	unsigned int : 0;           /* zero-width: next field starts a new unit */
	unsigned int c : 7;
	unsigned long long wide : 40;
	unsigned long long more : 30; /* does not fit after wide: new unit */
	char ch : 4;
	short sh : 9;
	unsigned char tail;
};

/* Bitfields that straddle int boundaries in a packed struct. */
struct __attribute__((packed)) packed_bits {
	unsigned char lead;
	unsigned int x : 12;
	unsigned int y : 20;
	unsigned int z : 17;
	unsigned short end;
};

struct packed_plain {
	char c;
	int i;
	short s;
	long long l;
} __attribute__((packed));

union u_value {
	int i;
	float f;
	unsigned char bytes[8];
	struct {
		unsigned short lo;
		unsigned short hi;
	} halves;
};

/* Anonymous struct and union members, nested. */
struct nested_anon {
	int kind;
	union {
		struct {
			int x;
			int y;
		};
		struct {
			long long big;
			union {
				char tag;
				short wtag;
			};
		};
		double d;
	};
	struct {
		unsigned int r : 4;
		unsigned int g : 4;
	} color;
	char last;
};

/* Alignment on members and on the struct. */
struct aligned_members {
	char c;
	int i __attribute__((aligned(16)));
	char d;
	long long l __attribute__((aligned(32)));
};

struct aligned_struct {
	int a;
	char b;
} __attribute__((aligned(32)));

struct holder_of_aligned {
	char pre;
	struct aligned_struct as;
	int post;
};

/* Flexible array member and zero-length array. */
struct flex {
	size_t len;
	unsigned short flags;
	char data[];
};

struct zero_len {
	int n;
	int none[0];
};

/* Multi-dimensional arrays. */
struct matrix {
	int m[2][3];
	float cube[2][3][4];
	char names[4][16];
	struct bits grid[2][2];
};

/* Function pointers. */
typedef int (*cmp_fn)(const void *, const void *);
struct ops {
	void (*open)(struct ops *self, int flags);
	int (*read)(void *buf, size_t len, ...);
	cmp_fn compare;
	void *(*alloc)(size_t);
	int (*table[3])(int);
};

/* Kernel-style cache-line alignment. */
struct kstats {
	unsigned long hits;
	unsigned long misses ____cacheline_aligned;
	int lock ____cacheline_aligned;
	struct {
		unsigned long load_avg;
		unsigned long util_avg;
	} removed ____cacheline_aligned;
	bool dirty;
} ____cacheline_aligned;

/* Enums and typedefs, const and volatile. */
enum color { RED, GREEN = 5, BLUE = -1 };

enum big_enum { BIG = 0x100000000ULL };
typedef unsigned int u32;
typedef u32 myint_t;
typedef struct { int tx; int ty; } point_t;

struct quals {
	const int ci;
	volatile unsigned long vl;
	const volatile char cvc;
	const char *cp;
	char *const pc;
	int *restrict rp;
	enum color col;
	enum big_enum big;
	myint_t mi;
	point_t pt;
	const point_t *cpt;
	_Bool b;
	long double ld;
	double _Complex z;
	__int128 i128;
	uint8_t u8;
	int64_t s64;
};

struct self_ref {
	struct self_ref *next;
	struct undefined_elsewhere *opaque;
	struct list { struct list *prev, *next; } link;
};

struct bits g_bits;
struct packed_bits g_packed_bits;
struct packed_plain g_packed_plain;
union u_value g_u_value;
struct nested_anon g_nested_anon;
struct aligned_members g_aligned_members;
struct holder_of_aligned g_holder;
struct flex *g_flex;
struct zero_len g_zero_len;
struct matrix g_matrix;
struct ops g_ops;
struct kstats g_kstats;
struct quals *g_quals;
struct self_ref g_self_ref;

int use_all(void)
{
	return g_bits.a + g_flex->len + (int)sizeof(struct quals) + g_zero_len.n;
}
