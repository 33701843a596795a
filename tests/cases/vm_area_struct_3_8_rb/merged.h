/* Michel Lespinasse, "mm: rearrange vm_area_struct for fewer cache misses": the first line holds
 * what a VMA tree walk needs (vm_start, vm_end, vm_next, vm_prev, vm_rb, rb_subtree_gap); vm_mm,
 * vm_page_prot and vm_flags start the second line. */
struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	void *vm_next, *vm_prev;
	struct rb_node_r vm_rb;
	unsigned long rb_subtree_gap;
	void *vm_mm;
	unsigned long vm_page_prot;
	unsigned long vm_flags;
	union {
		struct {
			struct rb_node_r rb;
			unsigned long rb_subtree_last;
		} linear;
		struct list_head_r nonlinear;
	} shared;
	struct list_head_r anon_vma_chain;
	void *anon_vma;
	const void *vm_ops;
	unsigned long vm_pgoff;
	void *vm_file;
	void *vm_private_data;
	void *vm_policy;
};
