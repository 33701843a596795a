/* tests/cases/vm_area_struct_3_8_rb: struct vm_area_struct of Linux 3.8 (include/linux/
 * mm_types.h, x86_64, CONFIG_NUMA) before Michel Lespinasse's rearrangement: vm_mm first, the
 * rb-tree node vm_rb at offset 56, straddling lines 0 and 1. Kernel types replaced by C types
 * of the same size. Compiled with cc -g -c by tests/cases.rs. */
struct rb_node_r { unsigned long parent_color; void *right, *left; };
struct list_head_r { void *next, *prev; };

struct vm_area_struct {
	void *vm_mm;
	unsigned long vm_start;
	unsigned long vm_end;
	void *vm_next, *vm_prev;
	unsigned long vm_page_prot;
	unsigned long vm_flags;
	struct rb_node_r vm_rb;
	unsigned long rb_subtree_gap;
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

struct vm_area_struct vma;
