/* One instance of struct kstats, so that the compiler emits its DWARF. */
#include "kernel_style.h"

struct kstats the_stats;
