/* struct vm_area_struct as merged (Linux 6.15 vm_refcnt series; the layout read from
 * data/vmlinux-6.18.44.btf with `lineup layout --btf data/vmlinux-6.18.44.btf --type
 * vm_area_struct`): vm_refcnt ____cacheline_aligned_in_smp at offset 128, 192 bytes, struct
 * aligned to 64. Same-sized C types replace the kernel's (see before.c). */
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
	unsigned int vm_lock_seq;
	struct list_head_r anon_vma_chain;
	void *anon_vma;
	const void *vm_ops;
	unsigned long vm_pgoff;
	void *vm_file;
	void *vm_private_data;
	long swap_readahead_info;
	void *vm_policy;
	void *numab_state;
	int vm_refcnt __attribute__((aligned(64)));
	struct {
		struct rb_node_r rb;
		unsigned long rb_subtree_last;
	} shared;
	void *vm_userfaultfd_ctx;
	void *pfnmap_track_pad; /* pfnmap_track_ctx (6.17), absent in 6.14 */
} __attribute__((aligned(64)));
