/* The layout after commit 57efa1fe5957 ("mm/gup: prevent gup_fast from racing with COW during
 * fork"), which added write_protect_seq before mmap_lock: the rw_semaphore moves to offset 128
 * and count and owner share one line. It measured -9.2% on will-it-scale mmap1 and was undone
 * by relocating write_protect_seq. */
struct mm_part {
	char earlier[112];
	int map_count;
	int page_table_lock;
	unsigned int write_protect_seq;
	struct rw_semaphore_r mmap_lock;
	struct list_head_r mmlist;
};
