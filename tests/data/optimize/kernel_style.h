/*
 * A kernel-style header for tests/optimize.rs: comments above members, an #ifdef block, an
 * existing alignment attribute. The test patches it with lineup's diff, compiles it, and reads
 * the layout back from DWARF. The kernel macros are defined here so that it builds in
 * userspace.
 */
#ifndef KERNEL_STYLE_H
#define KERNEL_STYLE_H

#define ____cacheline_aligned __attribute__((__aligned__(64)))
#define __aligned(x) __attribute__((__aligned__(x)))
#define CONFIG_KSTATS_EXTRA 1

typedef struct {
	long counter;
} atomic_long_t;

struct list_head {
	struct list_head *next, *prev;
};

struct kstats {
	/* identity: read on every event */
	const char *name;
	unsigned long flags;
	struct list_head node;

	/* bumped on every event, by every CPU */
	atomic_long_t events;
	unsigned long limit;		/* read on every event */
	unsigned long period;

#ifdef CONFIG_KSTATS_EXTRA
	/* extra statistics, kept together */
	unsigned long extra_a;
	unsigned long extra_b;
#endif
	int state;
	char tag[20];
	/* written on every event too, but only by the CPU that owns the stats */
	unsigned long last_seen;
};

#endif
