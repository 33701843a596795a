/*
 * Seed 003, patch 1 ("sched/rt: Optimize cpupri_vec layout to mitigate cache line
 * contention", Pan Deng, v2, 2025) in its count/mask-separating form, seen from one
 * struct cpupri_vec. The patch turns cpupri's array of {count, mask} into one array of all
 * counts, padding, then one array of all masks, so a level's count and its mask never share
 * a line. A layout of struct cpupri_vec cannot say "arrays", so this candidate says the
 * part that matters to one level: count on one line, mask on another.
 * (For predict: lineup predict --type cpupri_vec --layout this file.)
 */
struct cpupri_vec {
	atomic_t count;
	cpumask_var_t mask ____cacheline_aligned;
};
