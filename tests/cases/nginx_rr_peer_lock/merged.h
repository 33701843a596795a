/* nginx pull request 1251 (closed unmerged): lock moved to open the next cache line, with refs
 * and host ("lock opens CL3 alongside refs and host"); written as lock's 64-byte alignment. */
struct rr_peer {
	void *sockaddr;
	unsigned int socklen;
	struct ngx_str_r name;
	struct ngx_str_r server;
	long current_weight;
	long effective_weight;
	long weight;
	unsigned long conns;
	unsigned long max_conns;
	unsigned long fails;
	long accessed;
	long checked;
	unsigned long max_fails;
	long fail_timeout;
	unsigned long slow_start;
	unsigned long start_time;
	unsigned long down;
	void *ssl_session;
	int ssl_session_len;
	unsigned zombie:1;
	unsigned long lock __attribute__((aligned(64)));
	unsigned long refs;
	void *host;
	void *next;
};
