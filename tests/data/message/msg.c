/* tests/message_handoff.rs: a message handed from one CPU to another (an IPI's data, a
 * completion slot): 32 bytes, 8-byte aligned, so an instance can straddle two lines. The
 * sender fills every field and publishes it; the receiver reads them and clears `flag`.
 * Compiled with cc -g -c by the test. */
struct msg {
	void *next;
	void (*fn)(void *arg);
	void *arg;
	unsigned int flag;
};

struct msg m;
