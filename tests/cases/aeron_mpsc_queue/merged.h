/* Aeron pull request 1915: the producer's fields and the consumer's head on different cache
 * lines. The merged diff's exact padding was not verified here; written as the separation the
 * pull request describes: the producer block and the consumer's head each start a line. */
struct mpsc_queue {
	int8_t pre_pad[64 - 8];
	volatile uint64_t tail __attribute__((aligned(64)));
	uint64_t head_cache;
	volatile uint64_t shared_head_cache;
	int8_t producer_pad[64 - 3 * 8];
	volatile uint64_t head __attribute__((aligned(64)));
	int8_t consumer_pad[64 - 8];
	uint64_t capacity;
	uint64_t mask;
	void *volatile *buffer;
};
