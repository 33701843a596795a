/* tests/cases/nginx_rr_peer_lock: nginx's upstream peer (src/http/ngx_http_upstream_round_robin.h,
 * struct ngx_http_upstream_rr_peer_s) on x86_64 with SSL and the upstream zone, as the pull
 * request's pahole shows it: lock at offset 168, on the line of slow_start, start_time and
 * down (128-191). ngx_str_t is a length and a pointer; ngx_int_t, ngx_uint_t, time_t,
 * ngx_msec_t and ngx_atomic_t are 8 bytes; the NGX_COMPAT spare words are left out. Compiled
 * with cc -g -c by tests/cases.rs. */
#include <stddef.h>

struct ngx_str_r { size_t len; unsigned char *data; };

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
	unsigned long lock;
	unsigned long refs;
	void *host;
	void *next;
};

struct rr_peer peer;
