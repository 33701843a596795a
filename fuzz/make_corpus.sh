#!/usr/bin/env bash
# Builds the seed corpus for the `btf` fuzz target: raw BTF blobs of small C programs, made by
# compiling with gcc -g, encoding BTF with `pahole -J`, and extracting the .BTF section.
set -euo pipefail
cd "$(dirname "$0")"
out=corpus/btf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/a.c" <<'C'
#define ____cacheline_aligned __attribute__((__aligned__(64)))
struct list_head { struct list_head *next, *prev; };
struct flags { unsigned int a:1, b:3, :0, c:5; unsigned long long d:40; char e; };
union u { int i; float f; struct { short lo, hi; } parts; };
enum color { RED = -1, GREEN = 7 };
typedef void (*cb_t)(struct list_head *, int, ...);
struct grp {
	int idle;
	long shares;
	long load_avg ____cacheline_aligned;
	struct list_head *rt_se[2][3];
	const char *name;
	volatile enum color c;
	cb_t cb;
	union u un;
	struct { int x; char y; } anon;
	struct flags fl;
	char tail[];
};
struct __attribute__((packed)) pk { char a; int b; short c; };
struct grp g; struct pk p;
C
cat > "$work/b.c" <<'C'
struct node { struct node *left, *right; unsigned long key; };
struct tree { struct node *root; int (*cmp)(const void *, const void *); unsigned count; };
struct tree t;
C
for f in a b; do
    gcc -g -c -o "$work/$f.o" "$work/$f.c"
    pahole -J "$work/$f.o"
    objcopy -O binary --only-section=.BTF --set-section-flags .BTF=alloc "$work/$f.o" "$out/$f.btf"
done
# A slice of real kernel BTF: the header and first types, which the reader must reject or read.
head -c 4096 ../data/vmlinux-6.18.44.btf > "$out/vmlinux-head.btf"
ls -l "$out"
