/* tests/cases/mm_struct_mmap_lock_offset: the part of struct mm_struct (Linux 5.10-5.13, x86_64)
 * around mmap_lock, in the layout Linus Torvalds described as optimal: mmap_lock at offset 120,
 * so the rw_semaphore's count (120) and owner (128) sit on different lines. The members before
 * map_count are one opaque block here; write_protect_seq (added by commit 57efa1fe5957) is
 * placed after mmlist, where Feng Tang's fix moved it (its exact new place not verified).
 * Compiled with cc -g -c by tests/cases.rs. */
struct list_head_r { void *next, *prev; };

struct rw_semaphore_r {
	long count;
	long owner;
	int osq;
	int wait_lock;
	struct list_head_r wait_list;
};

struct mm_part {
	char earlier[112];
	int map_count;
	int page_table_lock;
	struct rw_semaphore_r mmap_lock;
	struct list_head_r mmlist;
	unsigned int write_protect_seq;
};

struct mm_part mm;
