/* tests/cases/vm_area_struct_6.14: struct vm_area_struct as Linux 6.14's
 * include/linux/mm_types.h declared it (x86_64, CONFIG_PER_VMA_LOCK, NUMA, NUMA_BALANCING,
 * userfaultfd), before Suren Baghdasaryan's vm_refcnt series (Linux 6.15).
 * Member order follows 6.14: vm_start/vm_end (in a union with the rcu_head vm_rcu),
 * vm_mm, vm_page_prot, vm_flags, detached, vm_lock_seq, vm_lock, shared, anon_vma_chain,
 * anon_vma, vm_ops, vm_pgoff, vm_file, vm_private_data, swap_readahead_info, vm_policy,
 * numab_state, vm_userfaultfd_ctx.
 * Mapping: 6.14 held `struct vma_lock *vm_lock` (8 bytes) at this place and took the
 * rw_semaphore in the separately allocated vma_lock; 6.15 replaced both `detached` and the
 * lock with one refcount_t vm_refcnt. The replica puts a 4-byte int `vm_refcnt` where
 * `detached` was and drops the 8-byte pointer (6.14's 16 bytes of detached + pad +
 * vm_lock_seq + vm_lock become 8), i.e. the lock word embedded where 6.14 kept its lock
 * fields, so the sketch's vm_refcnt names the same member in both layouts; the replica is
 * 168 bytes. Member order checked against mm_types.h as quoted in the linux-mm thread of
 * the series (find_string "struct vma_lock *vm_lock;"). Kernel types are replaced by same-sized C types (pointers, unsigned long,
 * 16-byte structs for list_head/rcu_head, 32 bytes for `shared`).
 * Compiled with cc -g -c by tests/cases.rs. */
struct list_head_r { void *next, *prev; };
struct rb_node_r { unsigned long parent_color; void *right, *left; };

struct vm_area_struct {
	/* 6.14: a union of {vm_start, vm_end} with the 16-byte vm_rcu (6.18: with vm_freeptr);
	 * the overlay is left out, the two members keep its 16 bytes. */
	unsigned long vm_start;
	unsigned long vm_end;
	void *vm_mm;
	unsigned long vm_page_prot;
	unsigned long vm_flags;
	int vm_refcnt;
	unsigned int vm_lock_seq;
	struct {
		struct rb_node_r rb;
		unsigned long rb_subtree_last;
	} shared;
	struct list_head_r anon_vma_chain;
	void *anon_vma;
	const void *vm_ops;
	unsigned long vm_pgoff;
	void *vm_file;
	void *vm_private_data;
	long swap_readahead_info;
	void *vm_policy;
	void *numab_state;
	void *vm_userfaultfd_ctx;
};

struct vm_area_struct vm_area_struct;
