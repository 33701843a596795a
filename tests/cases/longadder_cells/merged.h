/* OpenJDK java.base, java/util/concurrent/atomic/Striped64.java: the Cell class is annotated
 * @jdk.internal.vm.annotation.Contended, which HotSpot pads by ContendedPaddingWidth (128
 * bytes by default) on each side, so each cell sits on lines of its own. Written here on the
 * replica's members as a 128-byte alignment per cell. */
struct cells {
	volatile long base;
	volatile int cells_busy;
	volatile long cell0 __attribute__((aligned(128)));
	volatile long cell1 __attribute__((aligned(128)));
	volatile long cell2 __attribute__((aligned(128)));
	volatile long cell3 __attribute__((aligned(128)));
};
