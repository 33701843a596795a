/* tests/cases/longadder_cells: four striped counter cells packed in one line, as
 * java.util.concurrent.atomic.Striped64's Cell objects would sit without @Contended.
 * Compiled with cc -g -c by tests/cases.rs. */
struct cells {
	volatile long base;
	volatile long cell0;
	volatile long cell1;
	volatile long cell2;
	volatile long cell3;
	volatile int cells_busy;
};

struct cells cells;
