/*
 * lineup's recording runtime: linked by `lineup cc` into programs compiled with
 * -fsanitize=thread, in place of the ThreadSanitizer runtime. The compiler calls
 * __tsan_read4(addr), __tsan_write8(addr), __tsan_atomic64_fetch_add(...) around every
 * load and store it kept in memory; this file counts them per thread and hands them to
 * `lineup record`, which attributes them to struct fields and simulates coherence.
 *
 * Design (docs/record.md has the long version):
 *  - Off unless LINEUP_OUT names a directory: every hook then returns after one compare.
 *  - Per thread, a state block (mmap'd, never malloc'd) holds an open-addressing table of
 *    (address, size, kind, pc) -> count, a trace buffer and an allocation log. Stack
 *    addresses of the thread itself are filtered first.
 *  - A global direct-mapped table of line-sized blocks remembers which thread owns a block,
 *    whether it was handed over to a second thread (main filling in what a worker then
 *    works on), whether another thread touched it after that (shared), and whether anyone
 *    wrote it since: each entry is written a handful of times at most. Only accesses to
 *    blocks both shared and written are "eligible" for the ordered trace, which carries a
 *    TSC timestamp per access and is decimated in aligned time windows once a budget of
 *    events is used, so that the trace stays bounded however long the program runs.
 *  - Data goes to $LINEUP_OUT/rt.<pid>.bin as self-describing chunks appended with one
 *    writev each (O_APPEND), from whichever thread fills a buffer, exits, or ends the
 *    process. A crash (SIGSEGV, SIGABRT, ...) flushes what is buffered and re-raises.
 *
 * Nothing here writes to the program's stdout or stderr, and the output file sits on a high
 * descriptor so the program's own descriptors keep their numbers.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define LINEUP_RT_VERSION 2

/* Marker section: `lineup record` refuses programs without it. */
__attribute__((used, section(".lineup_rt"))) static const char lineup_rt_marker[] =
    "lineup recording runtime v2";
__attribute__((visibility("default"))) const int __lineup_rt_version = LINEUP_RT_VERSION;

/* glibc's own allocator and string functions, reached without going through ours. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__memcpy_chk(void *, const void *, size_t, size_t);
extern void *__memmove_chk(void *, const void *, size_t, size_t);
extern void *__memset_chk(void *, int, size_t, size_t);

/* Called through volatile pointers so the compiler cannot fold them back into memcpy. */
static void *(*volatile real_memcpy_chk)(void *, const void *, size_t, size_t) = __memcpy_chk;
static void *(*volatile real_memmove_chk)(void *, const void *, size_t, size_t) = __memmove_chk;
static void *(*volatile real_memset_chk)(void *, int, size_t, size_t) = __memset_chk;

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RA() ((uintptr_t)__builtin_return_address(0))
#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------------- */
/* Output format (little-endian, native layout; src/record/trace.rs reads it)          */

#define CHUNK_MAGIC 0x4c555043u /* "CPUL" */
enum {
    CH_HEADER = 1,
    CH_THREAD = 2,
    CH_AGG = 3,
    CH_TRACE = 4,
    CH_ALLOC = 5,
    CH_END = 6,
    CH_CRASH = 7,
    CH_BURSTS = 8,
    CH_HITS = 9,
    CH_NOTE = 10, /* something the runtime did differently, and why: struct rt_note */
    CH_SUM = 11,  /* per-site summaries of the memory budget: struct sum_entry */
    CH_RHITS = 12, /* bursts: a thread's range pieces counted between windows, per code
                      site and kind: (pc, kind, pieces) words, cumulative (range_counted) */
};
struct chunk_head {
    uint32_t magic, type, thread, count;
    uint64_t bytes;
};
struct rt_header {
    uint32_t version, pid, ppid, flags;
    uint64_t exe_bias, tsc_start, ns_start;
    uint32_t sample, window_bits;
    uint64_t budget;
    char exe[512];
};
struct rt_note {
    uint32_t code, thread; /* NOTE_*; the thread it concerns (~0: the process) */
    uint64_t tsc;
};
/* CH_NOTE codes (src/record/trace.rs reads them): why bursts stopped or never started,
 * and what a thread was not recorded for. */
enum {
    NOTE_TRAP = 1,     /* SIGTRAP's disposition set by the program past the runtime */
    NOTE_MASK = 2,     /* SIGTRAP blocked by the program past the runtime */
    NOTE_TEXT = 3,     /* the program changed its code's protection */
    NOTE_SECCOMP = 4,  /* the program installed a seccomp filter */
    NOTE_STRICT = 5,   /* a thread entered seccomp strict mode: not recorded after */
    NOTE_NOPATCH = 6,  /* the code could not be made writable (W^X policy?) */
    NOTE_NOSYNC = 7,   /* membarrier SYNC_CORE refused */
    NOTE_NOTHREAD = 8, /* the runtime's thread could not be started */
};
struct rt_thread {
    uint32_t index, tid;
    uint64_t tsc_start, tsc_end;
    uint64_t accesses, dropped;
    char name[16];
};
struct rt_end {
    uint64_t tsc_end, ns_end;
    uint64_t traced, decimation;
    /* The memory budget: the level reached (0: full resolution; 1: entries of lines not
     * contended counted once between flushes summarized per code site; 2: the trace
     * thinned four times faster, entries counted fewer than 16 times summarized; 3: the
     * trace stopped, every entry of a line not contended summarized, contended lines still
     * exact; 4: every entry summarized), accesses summarized, bytes of counts written,
     * chunks lost. */
    uint64_t level, summarized, agg_bytes, lost;
    /* Adaptive sampling (LINEUP_ADAPTIVE): accesses skipped and stood for by the weights of
     * the bursts around them, and the largest period a code site backed off to. */
    uint64_t estimated, max_period;
};
/* key = address | info << 48; info = size | kind << 8 */
struct agg_entry {
    uint64_t key, pc, count, eligible;
};
/* A code site's summary under the memory budget: as agg_entry (the key's address is the
 * first one counted), and the addresses it covered, [lo, hi): lineup names the lines and
 * objects whose per-place counts were given up, instead of piling the count onto the one
 * address. The site cache counts at `count` and keeps lo and hi at count[2] and count[3]. */
struct sum_entry {
    uint64_t key, pc, count, eligible, lo, hi;
};
struct trace_ev {
    uint64_t tsc, key, pc;
};
enum { AL_MALLOC = 1, AL_FREE = 2 };
struct alloc_ev {
    uint64_t tsc, addr, size, pc;
    uint32_t kind, align;
};

/* K_UPDATE: a plain load and then a store of one place (`x++`, `x += v`), which clang's
 * compound instrumentation reports in one call: counted as a load and a store, as c2c sees
 * the two instructions, at the cost of one hook. */
enum { K_LOAD = 0, K_STORE = 1, K_RMW = 2, K_UPDATE = 3 };
/* Accesses one record stands for (an update is two), from its key (address or pc | info
 * << 48: the kind is in bits 56-57). */
static inline uint64_t per_record(uint64_t key) { return ((key >> 56) & 3) == K_UPDATE ? 2 : 1; }

/* ---------------------------------------------------------------------------------- */
/* State                                                                                */

#define AGG_BITS 15
#define PSITE_CAP (1u << 14) /* bursts: call sites it can patch */
#define SUM_BITS 12 /* per-site summaries: (size, kind, pc) -> count, and one of the
                        site's addresses (SUM_KEY: the key says so) */
#define SUM_KEY ((uint64_t)1 << 58)
/* A summary that has counted more than one address (without it, its address is exact). */
#define SUM_MANY ((uint64_t)1 << 59)
#define ADDR_MASK (((uint64_t)1 << 48) - 1)
#define TRACE_CAP 8192
#define ALLOC_CAP 2048
#define LINE_TABLE_BITS 22 /* 4M blocks: 64-byte blocks alias 256 MiB apart */
#define F_SHARED 0x40000000u
#define F_WRITTEN 0x80000000u
/* Handed over: a second thread took the block from its first one (main filling in an array
 * that a worker then owns). The owner is now the second; only a third touch by another
 * thread (the first one coming back, or a third) makes the block shared. */
#define F_MOVED 0x20000000u
#define OWNER_MASK 0x0000ffffu /* the owning thread: its index + 1 (mod 65535) */
/* The block number's bits above the table index: a block that maps to an entry another
 * block holds (256 MiB apart) is seen as such, and takes the entry over, instead of
 * inheriting the other's owner (a 144 MiB image main wrote made a worker's private
 * histogram look shared in about half the runs, by where ASLR put the two). */
#define ATAG_MASK 0x1fff0000u
#define ATAG(block) ((uint32_t)(((block) >> LINE_TABLE_BITS) << 16) & ATAG_MASK)

/* The site cache: per thread, one entry per code site (return address and access size and
 * kind), direct-mapped by the return address. An entry remembers where the site's last
 * access was counted: its counter (full resolution: one address; summarized: the site's
 * summary, whatever the address) and the value of the line's sharing-table entry then. An
 * access of the same site in that range whose line's entry holds that value is classified
 * as that access was (the value says everything the classification reads: owner, shared,
 * written), so it is counted with an increment, with no hashing, no table probe and no
 * atomics: a loop over one struct, or (summarized) over private or read-only lines, stays
 * on this path. Anything else (another address, a line whose state differs, a flush moved
 * the counters) refills the entry. Counts stay exact: the cache only decides where the
 * increment goes, as the full path would.
 *
 * The entry also carries the site's adaptive sampling state (`lineup record --sample
 * auto`): bursts of ABURST counted accesses, each counted one standing for `weight`, and
 * (weight - 1) x ABURST accesses skipped after each; a burst that met no contended line
 * doubles the weight of the next (up to AMAX), one that did resets it to 1. As in bursty
 * tracing (Hirzel and Chilimbi, FDDO 2001: bursts of full instrumentation between long
 * stretches of none) made adaptive per check (Chilimbi and Hauswirth, ASPLOS 2004, and
 * LiteRace, PLDI 2009, per function: a rate that starts at 100% and falls each time the
 * code runs, to a floor of 0.1%), with "cold" meaning here that the burst met no line
 * shared by threads and written, which sends the rate back to 100%. The last burst of a site may
 * stand for up to (AMAX - 1) x ABURST accesses that never came (the thread ended during the
 * skip after it): the bound of the over-estimate, per site and thread. */
#define PEND_CAP 4096
#define RHITS_BITS 9
#define AGG_FEW 256
#define SITES_BITS 12
enum { FILLED_LOG = 48 };
#define SITE_OF(pc) ((uint32_t)((pc) ^ ((pc) >> SITES_BITS)) & ((1u << SITES_BITS) - 1))
#define ABURST 256
#define MORE_TRACED 1
#define MORE_BURST 2
#define MORE_RANGE 4 /* a summary's entry: widen its address range */
#define AMAX 64
struct site {
    uint64_t tag;             /* pc ^ info << 48; 0: empty */
    uintptr_t lo, span;       /* addresses counted into *count: [lo, lo + span) (span 0
                                 while the site skips: every access takes the slow path) */
    uint64_t *count;          /* each access adds weight to it (and, traced, to the next
                                 word: the entry's eligible count) */
    uint32_t v;               /* the line's sharing-table entry when the entry was filled */
    uint32_t skip;            /* adaptive: accesses to skip before the next burst */
    uint16_t weight, burst;   /* adaptive: weight of this burst, accesses left in it (0: exact) */
    uint8_t traced;           /* the line is contended: eligible for the ordered trace */
    uint8_t hot;              /* adaptive: this burst met a contended line */
    uint8_t hotline;          /* adaptive: the entry's line is one (handed over or shared,
                                 and written): its accesses keep the burst hot though they
                                 take no slow path */
    uint8_t more;             /* MORE_*: what follows the increment */
    uintptr_t flo, fhi;       /* memory budget: the addresses the site counted on lines not
                                 contended since the entry was filled, [flo, fhi) (fhi 0:
                                 none yet); see site_fill */
} __attribute__((aligned(64)));

struct tstate {
    /* Hot: read on every access. The fast path reads only `sites` (and `lines`, once a
     * site matched): site entries never cover the thread's own stack, and a disabled
     * state's `sites` is an empty table, so every access of it takes the miss path, which
     * skips an address a when a - stk_lo < stk_size; a disabled state has stk_lo 0 and
     * stk_size ~0, which skips everything. */
    uintptr_t stk_lo, stk_size;
    struct agg_entry *agg;
    uint32_t agg_mask, agg_used, tag;
    /* The slots of the first AGG_FEW entries of the table, so that flushing a table
     * that holds few (a short-lived thread's) touches only them, not the whole 1 MiB. */
    uint32_t few[AGG_FEW];
    uint32_t slow; /* SLOW_BUSY | SLOW_SAMPLING: off the fast path */
    uint32_t win_closed; /* eligible accesses left before the clock is read again */
    uint32_t shift;      /* g_block_shift, here on the hot line */
    /* Depth of fast paths under way on the thread (rec: from its site check to its counters'
     * increments), for a signal handler's slow path to see what it interrupted: the counter
     * the interrupted path is about to increment must not be moved or cleared under it
     * (rec_slow). Balanced by every path, so a plain increment is safe against handlers. */
    volatile uint32_t in_fast;
    uint32_t *lines;     /* g_lines */
    struct site *sites;  /* 1 << SITES_BITS entries */
    struct trace_ev *tpos, *tend, *tbuf;
    uint64_t burst_left, skip_left;
    /* Cold. */
    uintptr_t saved_lo, saved_size;
    struct alloc_ev *abuf;
    struct sum_entry *sum;
    uint32_t sum_used;
    uint32_t an, index, tid;
    uint64_t tsc_start, accesses, dropped;
    struct tstate *next;
    int dead;
    uint32_t level;      /* g_level when the site cache was last filled */
    struct site *site_table; /* the thread's own site table (`sites` is g_no_sites once
                                the thread is disabled) */
    /* The site entries filled since the thread's innermost lock last changed (their
     * indices; past FILLED_LOG, only that there were more): at a change they are filled
     * again, so every entry counts under the lock it was filled under (site_fill). */
    uint32_t filled_n;
    uint16_t filled[FILLED_LOG];
    uint64_t estimated;  /* adaptive: accesses skipped, stood for by weights */
    uint64_t max_period; /* adaptive: the largest weight used */
    /* Accesses a signal handler made while the thread was writing its buffers out (its
     * tables are in flux then): kept here, counted once the writing is over. */
    volatile uint32_t pend_n;
    volatile int in_slow; /* inside rec_slow: a signal handler's access waits in pend */
    int draining;
    struct pending {
        uintptr_t a, pc;
        uint32_t info;
    } pend[PEND_CAP];
    /* Bursts: pieces of memory ranges (memcpy, memset, struct copies) counted between
     * windows per code site and kind instead of recorded at their places (range_counted). */
    uint32_t rhits_used;
    struct rhit {
        uintptr_t pc;
        uint32_t kind, execs;
        uint64_t pieces;
    } rhits[1u << RHITS_BITS];
    /* Bursts: executions of each patched site between windows, counted by the site's
     * trampoline (pages are touched only where a site runs). Last: it is large. */
    uint64_t hits[PSITE_CAP];
};

/* The site table of a disabled state: no entry matches (a tag is never 0), so every access
 * takes the miss path. */
static struct site g_no_sites[1u << SITES_BITS];
/* Another empty table: a thread whose `sites` point here is asked to write what it has
 * buffered (periodic_flush), and then points them back at its own. */
static struct site g_flush_sites[1u << SITES_BITS];
static struct tstate g_off = {.stk_lo = 0, .stk_size = ~(uintptr_t)0, .sites = g_no_sites};
/* initial-exec: the runtime is linked into the executable, and a general-dynamic access
 * (a call to __tls_get_addr, even when the linker relaxes it) makes every hook set up a
 * stack frame. */
static __thread struct tstate *tls __attribute__((tls_model("initial-exec")));

static volatile int g_enabled;   /* recording to a file */
static volatile int g_finished;  /* final flush begun: ignore everything */
static volatile int g_flushed;   /* final flush written */
static int g_inited;
static uint32_t g_sample = 1;     /* record a burst of BURST out of every g_sample*BURST */
static uint32_t g_adaptive;       /* LINEUP_ADAPTIVE: per-site bursty sampling */
static volatile uint64_t g_estimated, g_max_period;
static uint32_t g_window_bits = 21;
static uint32_t g_block_shift = 6; /* sharing filter granularity: the simulated unit */
static uint64_t g_budget = 1u << 16; /* trace events per decimation level */
static volatile uint64_t g_decim;    /* window mask: trace windows w with (w & g_decim) == 0 */
static uint64_t g_traced;
/* Memory budget (LINEUP_MEMORY bytes): counts and trace written may take 1/64 of it at
 * full resolution, then the places of lines that are not contended (one thread's, or
 * shared and only read since) that were counted once between two flushes of the table
 * (streaming) are summarized per code site; past 1/16 the trace thins four times faster
 * and places counted fewer than 16 times are summarized; past 1/8 the trace stops and
 * every place of a line not contended is. Contended lines (shared and written) keep every
 * place, which is what the answer rests on, until 1/4: only there is everything
 * summarized (the last resort, said loudly: the answer may change). */
static uint64_t g_memory = 512ull << 20;
static uint64_t g_flush_fixed_ns; /* LINEUP_FLUSH_US, in ns: flush_tick */
static volatile uint64_t g_agg_bytes;
static volatile uint32_t g_level;
static volatile uint64_t g_summarized;
static uint32_t g_next_index;
static uint32_t *g_lines;
static pthread_key_t g_key;
static struct tstate *g_threads;
static volatile int g_lock;
static uint64_t g_tsc_start;
#define BURST 1024
#define SLOW_BUSY 1u     /* writing a buffer out: accesses are dropped, not counted */
#define SLOW_SAMPLING 2u /* --sample: bursts */

static inline uint64_t now_tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void lock(void) {
    while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}
static int try_lock(int spins) {
    while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) {
        if (--spins <= 0)
            return 0;
        sched_yield();
    }
    return 1;
}
static void unlock(void) { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

static void *map(size_t n) {
    void *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? 0 : p;
}

static void zero(void *p, size_t n) { real_memset_chk(p, 0, n, (size_t)-1); }
static void copy(void *d, const void *s, size_t n) { real_memcpy_chk(d, s, n, (size_t)-1); }
static size_t slen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* The output file is opened for every chunk and closed again: the runtime keeps no
 * descriptor of its own between chunks, so a program that closes every descriptor,
 * dup2s onto any number, or counts its open files finds nothing of lineup's. One chunk,
 * one writev: O_APPEND keeps chunks of different threads whole.
 *
 * lineup may be root, and the program may outlive it (a daemonised child), so the file is
 * never reached by a path another user could redirect: the directory is opened without
 * following a symlink and must be the very one seen at the start (device and inode),
 * owned by us and writable by nobody else; the file is opened relative to it, without
 * following a symlink, and must be the one the runtime created. Once lineup has removed
 * the directory, nothing is written anywhere. */
static char g_dir[4096];
static char g_name[32];          /* rt.<pid>.bin */
static uint64_t g_dir_dev, g_dir_ino, g_file_dev, g_file_ino;
static volatile int g_file_state; /* FILE_*: the file of this process */
enum { FILE_NONE, FILE_LATER, FILE_CREATING, FILE_OPEN };
static volatile int g_keep_fd = -1; /* under a seccomp filter: a descriptor kept, in case
                                       open is denied */
static volatile uint64_t g_lost; /* chunks that could not be written */
static uint64_t g_ns_start;
static uint32_t g_pid; /* the process the runtime's state belongs to (not a vfork child) */
static void header_fill(struct rt_header *h);

static int owned_by_us(const struct stat *st) {
    return (st->st_uid == geteuid() || st->st_uid == getuid()) && !(st->st_mode & 022);
}

static int open_dir(void) {
    int d = open(g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return -1;
    struct stat st;
    if (fstat(d, &st) != 0 || !owned_by_us(&st) ||
        (g_dir_ino && ((uint64_t)st.st_dev != g_dir_dev || (uint64_t)st.st_ino != g_dir_ino))) {
        close(d);
        return -1;
    }
    g_dir_dev = st.st_dev;
    g_dir_ino = st.st_ino;
    return d;
}

/* The process's file, created (exclusively) or reopened; -1 if it is not ours any more. */
static int open_file(int create) {
    int d = open_dir();
    if (d < 0)
        return -1;
    int fd = openat(d, g_name,
                    O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0),
                    0600);
    close(d);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || !owned_by_us(&st) ||
        (!create && ((uint64_t)st.st_dev != g_file_dev || (uint64_t)st.st_ino != g_file_ino))) {
        close(fd);
        return -1;
    }
    g_file_dev = st.st_dev;
    g_file_ino = st.st_ino;
    return fd;
}

static int write_chunk(int fd, uint32_t type, uint32_t thread, uint32_t count, const void *data,
                       size_t bytes) {
    struct chunk_head h = {CHUNK_MAGIC, type, thread, count, bytes};
    struct iovec v[2] = {{&h, sizeof h}, {(void *)data, bytes}};
    size_t want = sizeof h + bytes, done = 0;
    while (done < want) {
        ssize_t r = writev(fd, v, bytes ? 2 : 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        done += (size_t)r;
        if (done >= want)
            break;
        /* Short write (disk full?): finish the rest from where it stopped. */
        size_t off = done;
        if (off < sizeof h) {
            v[0].iov_base = (char *)&h + off;
            v[0].iov_len = sizeof h - off;
        } else {
            v[0].iov_base = (char *)data + (off - sizeof h);
            v[0].iov_len = want - off;
            v[1].iov_len = 0;
        }
    }
    return 1;
}

/* The kept descriptor, if it is still our file (the program may have closed it, or put
 * something else on its number). */
static int kept_fd(void) {
    int fd = g_keep_fd;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_dev != g_file_dev ||
        (uint64_t)st.st_ino != g_file_ino)
        return -1;
    return fd;
}

static void emit(uint32_t type, uint32_t thread, uint32_t count, const void *data, size_t bytes) {
    if (!g_dir[0] || g_file_state == FILE_NONE)
        return;
    if (g_file_state != FILE_OPEN) {
        /* A forked child's file is made at its first chunk: a child that execs at once (or
         * records nothing) leaves none. */
        int want = FILE_LATER;
        if (__atomic_compare_exchange_n(&g_file_state, &want, FILE_CREATING, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            int fd = open_file(1);
            struct rt_header h;
            header_fill(&h);
            if (fd < 0 || !write_chunk(fd, CH_HEADER, 0, 1, &h, sizeof h)) {
                if (fd >= 0)
                    close(fd);
                g_file_state = FILE_NONE;
                return;
            }
            close(fd);
            g_file_state = FILE_OPEN;
        }
        for (int i = 0; g_file_state == FILE_CREATING && i < 100000; i++)
            sched_yield();
        if (g_file_state != FILE_OPEN)
            return;
    }
    int fd = open_file(0), kept = 0;
    if (fd < 0 && errno != ENOENT && (fd = kept_fd()) >= 0)
        kept = 1; /* open denied (a seccomp filter): the descriptor kept for this */
    if (fd < 0) {
        __atomic_add_fetch(&g_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!write_chunk(fd, type, thread, count, data, bytes))
        __atomic_add_fetch(&g_lost, 1, __ATOMIC_RELAXED);
    if (!kept)
        close(fd);
}

/* ---------------------------------------------------------------------------------- */
/* Stack bounds: the mapping of /proc/self/maps that holds the current stack pointer.  */

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static void stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    size_t have = 0;
    int eof = 0;
    while (!eof || have) {
        if (!eof && have < sizeof buf) {
            ssize_t r = read(fd, buf + have, sizeof buf - have);
            if (r <= 0)
                eof = 1;
            else
                have += (size_t)r;
        }
        size_t nl = 0;
        while (nl < have && buf[nl] != '\n')
            nl++;
        if (nl == have && !eof)
            continue;
        uintptr_t a = 0, b = 0;
        size_t i = 0;
        int d;
        while (i < nl && (d = hexval(buf[i])) >= 0)
            a = a * 16 + d, i++;
        if (i < nl && buf[i] == '-')
            i++;
        while (i < nl && (d = hexval(buf[i])) >= 0)
            b = b * 16 + d, i++;
        if (sp >= a && sp < b) {
            *lo = a;
            *hi = b;
            /* The main stack grows down into the rlimit. */
            if (nl >= 7 && buf[nl - 1] == ']' && buf[nl - 7] == '[') {
                struct rlimit rl;
                uintptr_t grow = 8u << 20;
                if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                    rl.rlim_cur < (64u << 20))
                    grow = rl.rlim_cur;
                else if (getrlimit(RLIMIT_STACK, &rl) == 0)
                    grow = 64u << 20;
                if (b - grow < *lo)
                    *lo = b > grow ? b - grow : 0;
            }
            break;
        }
        size_t used = nl < have ? nl + 1 : have;
        real_memmove_chk(buf, buf + used, have - used, (size_t)-1);
        have -= used;
    }
    close(fd);
}

/* ---------------------------------------------------------------------------------- */
/* Threads                                                                              */

/* The thread's stack: a thread pthread made or was given (pthread_attr_setstack: a stack
 * in .bss or on the heap, as fibers and pools do) has its bounds in its descriptor, and
 * only they are the stack (the mapping around it may hold every global, or the heap); the
 * main thread's is the [stack] mapping, grown down to the rlimit. Neither reads
 * /proc/self/maps for a thread that is not the main one. */
static void thread_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
    if ((pid_t)syscall(SYS_gettid) != getpid()) {
        pthread_attr_t a;
        void *addr = 0;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            int ok = pthread_attr_getstack(&a, &addr, &size) == 0;
            pthread_attr_destroy(&a);
            if (ok && sp - (uintptr_t)addr < size) {
                *lo = (uintptr_t)addr;
                *hi = (uintptr_t)addr + size;
                return;
            }
        }
        *lo = *hi = 0; /* not on the stack it says (a fiber's): nothing is taken for one */
        return;
    }
    stack_bounds(sp, lo, hi);
}

static void thread_exit(void *p);
static void seccomp_enter(long mode);
static void note_emit(uint32_t code, uint32_t thread);

static void read_name(struct tstate *t, char name[16]) {
    zero(name, 16);
    if (t == tls) {
        prctl(PR_GET_NAME, name, 0, 0, 0);
        return;
    }
    char path[64] = "/proc/self/task/";
    size_t n = slen(path);
    char digits[12];
    int k = 0;
    uint32_t v = t->tid;
    do
        digits[k++] = (char)('0' + v % 10), v /= 10;
    while (v);
    while (k)
        path[n++] = digits[--k];
    copy(path + n, "/comm", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t r = read(fd, name, 15);
    close(fd);
    if (r > 0 && name[r - 1] == '\n')
        name[r - 1] = 0;
}

/* Bytes of counts and trace written so far, against the budget's thresholds. */
static uint32_t budget_level(uint64_t bytes) {
    return bytes >= g_memory / 4    ? 4
           : bytes >= g_memory / 8  ? 3
           : bytes >= g_memory / 16 ? 2
           : bytes >= g_memory / 64 ? 1
                                    : 0;
}

static void raise_level(uint32_t want) {
    if (want > g_level) {
        g_level = want;
        if (want >= 3)
            g_decim = ~(uint64_t)0; /* the trace stops: only window 0 */
    }
}

static void account(uint64_t bytes) {
    raise_level(budget_level(__atomic_add_fetch(&g_agg_bytes, bytes, __ATOMIC_RELAXED)));
}

static void flush_trace(struct tstate *t) {
    size_t n = (size_t)(t->tpos - t->tbuf);
    if (!n)
        return;
    emit(CH_TRACE, t->index, (uint32_t)n, t->tbuf, n * sizeof(struct trace_ev));
    account(n * sizeof(struct trace_ev));
    t->tpos = t->tbuf;
    uint64_t total = __atomic_add_fetch(&g_traced, n, __ATOMIC_RELAXED);
    /* Past the budget's second step the trace thins four times faster: its windows stay
     * spread over the run, and the contended lines' counts, which are the answer, keep the
     * room. */
    uint64_t level = total / (g_level >= 2 && g_budget >= 4 ? g_budget / 4 : g_budget);
    if (level > 40)
        level = 40;
    uint64_t mask = (1ull << level) - 1;
    if (mask > g_decim)
        g_decim = mask;
}

static void flush_allocs(struct tstate *t) {
    if (!t->an)
        return;
    emit(CH_ALLOC, t->index, t->an, t->abuf, t->an * sizeof(struct alloc_ev));
    t->an = 0;
}

/* The counters the site cache points at moved (a flush cleared a table): every entry is
 * refilled at its next access. The adaptive sampling state stays. */
static void sites_forget(struct tstate *t) {
    /* Written only where set: a short-lived thread's untouched pages stay unallocated. */
    for (uint32_t i = 0; i < (1u << SITES_BITS); i++)
        if (t->site_table[i].span)
            t->site_table[i].span = 0;
}

static void flush_sum(struct tstate *t) {
    sites_forget(t);
    if (!t->sum_used)
        return;
    uint32_t n = 0;
    uint64_t summarized = 0; /* the hooks count into summaries without a running total */
    for (uint32_t i = 0; i < (1u << SUM_BITS); i++)
        if (t->sum[i].key) {
            summarized += t->sum[i].count * per_record(t->sum[i].key);
            if (n != i)
                t->sum[n] = t->sum[i];
            n++;
        }
    if (n)
        emit(CH_SUM, t->index, n, t->sum, n * sizeof(struct sum_entry));
    zero(t->sum, ((size_t)1 << SUM_BITS) * sizeof(struct sum_entry));
    t->sum_used = 0;
    __atomic_add_fetch(&g_summarized, summarized, __ATOMIC_RELAXED);
}

/* The summary entry of a code site (size, kind, return address; the address dropped, written
 * as 0), inserted with count 0 when new. */
static struct sum_entry *sum_entry(struct tstate *t, uint64_t key, uint64_t pc) {
    uint64_t addr = key & ADDR_MASK, size = (key >> 48) & 0xff;
    key = (key & ~ADDR_MASK) | SUM_KEY;
    uint64_t h = (key ^ (pc * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    uint32_t mask = (1u << SUM_BITS) - 1, i = (uint32_t)(h >> 40) & mask;
    for (;;) {
        struct sum_entry *s = &t->sum[i];
        if ((s->key & ~(ADDR_MASK | SUM_MANY)) == key && s->pc == pc)
            return s;
        if (!s->key) {
            if (t->sum_used * 4 >= mask * 3) {
                uint32_t busy = t->slow & SLOW_BUSY;
                t->slow |= SLOW_BUSY;
                flush_sum(t);
                t->slow = (t->slow & ~SLOW_BUSY) | busy;
                i = (uint32_t)(h >> 40) & mask;
                continue;
            }
            /* The first address counted here stands for the site's: lineup attributes the
             * summary to the member there (a code site reads one member of one type, as a
             * rule), so that summarized counts still reach fields. */
            s->key = key | addr;
            s->pc = pc;
            s->count = s->eligible = 0;
            s->lo = addr;
            s->hi = addr + size;
            t->sum_used++;
            return s;
        }
        i = (i + 1) & mask;
    }
}

/* Folds an entry into its code site's summary: the address is dropped, the count kept exact. */
static void summarize(struct tstate *t, const struct agg_entry *e) {
    struct sum_entry *s = sum_entry(t, e->key, e->pc);
    uint64_t addr = e->key & ADDR_MASK, end = addr + ((e->key >> 48) & 0xff);
    if ((s->key & ADDR_MASK) != addr)
        s->key |= SUM_MANY;
    if (addr < s->lo)
        s->lo = addr;
    if (end > s->hi)
        s->hi = end;
    s->count += e->count;
    s->eligible += e->eligible;
}

/* Contended: touched by a second thread and written since (the trace's eligibility). Lines
 * only one thread touched, and lines main filled in that the workers then only read, are
 * not: their per-address counts matter little, and they are most of a streaming program's. */
static int line_contended(uint64_t addr) {
    uint64_t block = addr >> g_block_shift;
    uint32_t v = __atomic_load_n(&g_lines[block & ((1u << LINE_TABLE_BITS) - 1)],
                                 __ATOMIC_RELAXED);
    return (v & ATAG_MASK) == ATAG(block) && (v & F_SHARED) && (v & F_WRITTEN);
}

/* Past the budget's first and second steps, a place on a line not contended is summarized
 * only when it was counted fewer than this many times since the table was last written: a
 * place a loop streams over, whose entry costs as much as the accesses it counts. A place
 * counted often costs no more kept than summarized, and it is what a verdict rests on: a
 * line one thread writes now may be written by another later (two workers' slices of one
 * line, one running after the other), and only its kept places can then say which thread
 * wrote which bytes. From the third step on every place of such a line is summarized. */
static uint64_t cold_below(uint32_t level) {
    return level >= 3 ? ~(uint64_t)0 : level == 2 ? 16 : level == 1 ? 2 : 0;
}

static void flush_agg(struct tstate *t) {
    /* Compact the entries kept at full resolution to the front, then write them; past the
     * budget's first threshold, cold entries (cold_below) of lines not contended go to the
     * per-site summary instead, past the last every entry does. */
    uint32_t level = g_level;
    uint32_t n = 0;
    /* A flush that would cross the first threshold is held to it already: a full table is
     * 768 KiB, more than a small budget's first step, and two threads flushing at once would
     * otherwise pass both. (The second is judged on what is kept, after.) */
    uint64_t all = g_agg_bytes + (uint64_t)t->agg_used * sizeof(struct agg_entry);
    uint32_t would = budget_level(all) ? 1 : 0;
    if (would > level) {
        raise_level(would);
        level = would;
    }
    sites_forget(t);
    uint64_t cold = cold_below(level);
    uint32_t used = t->agg_used, few = used <= AGG_FEW;
    if (few) {
        /* In slot order, so that compacting to the front never overwrites one not seen. */
        for (uint32_t a = 1; a < used; a++)
            for (uint32_t b = a; b > 0 && t->few[b - 1] > t->few[b]; b--) {
                uint32_t x = t->few[b];
                t->few[b] = t->few[b - 1];
                t->few[b - 1] = x;
            }
    }
    for (uint32_t k = 0, end = few ? used : t->agg_mask + 1; k < end; k++) {
        uint32_t i = few ? t->few[k] : k;
        if (t->agg[i].key) {
            t->accesses += t->agg[i].count * per_record(t->agg[i].key);
            uint64_t addr = t->agg[i].key & (((uint64_t)1 << 48) - 1);
            if (level >= 4 || (t->agg[i].count < cold && !line_contended(addr))) {
                summarize(t, &t->agg[i]);
                continue;
            }
            if (n != i)
                t->agg[n] = t->agg[i];
            n++;
        }
    }
    if (n) {
        emit(CH_AGG, t->index, n, t->agg, n * sizeof(struct agg_entry));
        account((uint64_t)n * sizeof(struct agg_entry));
    }
    if (few) {
        for (uint32_t k = 0; k < used; k++)
            zero(&t->agg[t->few[k]], sizeof(struct agg_entry));
        zero(t->agg, (size_t)n * sizeof(struct agg_entry));
    } else {
        zero(t->agg, (size_t)(t->agg_mask + 1) * sizeof(struct agg_entry));
    }
    t->agg_used = 0;
}

static void hits_emit(struct tstate *t);

static void pend_drain(struct tstate *t);

static void flush_thread(struct tstate *t, int final) {
    if (t->pend_n)
        pend_drain(t);
    flush_agg(t);
    flush_sum(t);
    flush_trace(t);
    flush_allocs(t);
    if (final) {
        /* Skips planned but not made: the weights stood for them, so they are estimated. */
        for (uint32_t i = 0; i < (1u << SITES_BITS); i++) {
            uint64_t left = t->site_table[i].skip * per_record(t->site_table[i].tag);
            t->estimated -= t->estimated >= left ? left : t->estimated;
        }
        __atomic_add_fetch(&g_estimated, t->estimated, __ATOMIC_RELAXED);
        uint64_t m = g_max_period;
        while (t->max_period > m &&
               !__atomic_compare_exchange_n(&g_max_period, &m, t->max_period, 0,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
        t->estimated = 0;
        struct rt_thread th;
        zero(&th, sizeof th);
        th.index = t->index;
        th.tid = t->tid;
        th.tsc_start = t->tsc_start;
        th.tsc_end = now_tsc();
        th.accesses = t->accesses;
        th.dropped = t->dropped;
        read_name(t, th.name);
        emit(CH_THREAD, t->index, 1, &th, sizeof th);
        hits_emit(t);
    }
}

static size_t state_bytes(void) {
    return sizeof(struct tstate) +
           ((size_t)1 << AGG_BITS) * sizeof(struct agg_entry) +
           ((size_t)1 << SUM_BITS) * sizeof(struct sum_entry) +
           TRACE_CAP * sizeof(struct trace_ev) + ALLOC_CAP * sizeof(struct alloc_ev) +
           ((size_t)1 << SITES_BITS) * sizeof(struct site) + 64;
}

static void global_init(void);
static uint64_t block_all(void);
static void restore_mask(uint64_t old);
static struct tstate *thread_init_held(void);

/* A thread's state, made at its first access. Signals are held meanwhile: while it is made
 * the thread's accesses go nowhere (tls is g_off), so a handler that ran now would lose its
 * accesses without a count of them. Held, the handler runs once the state is in place and
 * is recorded as any other. Once per thread, two system calls. */
static struct tstate *thread_init(void) {
    if (tls == &g_off)
        return &g_off;
    uint64_t old = block_all();
    struct tstate *t = thread_init_held();
    restore_mask(old);
    return t;
}

static struct tstate *thread_init_held(void) {
    tls = &g_off; /* whatever we call below is not recorded */
    if (!g_inited)
        global_init();
    if (!g_enabled || g_finished)
        return &g_off;
    char *mem = map(state_bytes());
    if (!mem)
        return &g_off;
    struct tstate *t = (struct tstate *)mem;
    mem += sizeof *t;
    t->agg = (struct agg_entry *)mem;
    t->agg_mask = (1u << AGG_BITS) - 1;
    mem += ((size_t)1 << AGG_BITS) * sizeof(struct agg_entry);
    t->sum = (struct sum_entry *)mem;
    mem += ((size_t)1 << SUM_BITS) * sizeof(struct sum_entry);
    t->tbuf = t->tpos = (struct trace_ev *)mem;
    t->tend = t->tbuf + TRACE_CAP;
    mem += TRACE_CAP * sizeof(struct trace_ev);
    t->abuf = (struct alloc_ev *)mem;
    mem += ALLOC_CAP * sizeof(struct alloc_ev);
    t->sites = t->site_table = (struct site *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    t->level = g_level;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->tsc_start = now_tsc();
    t->slow = g_sample > 1 ? SLOW_SAMPLING : 0;
    t->shift = g_block_shift;
    t->lines = g_lines;
    t->burst_left = BURST;
    uintptr_t lo, hi;
    int here;
    thread_stack((uintptr_t)&here, &lo, &hi);
    t->stk_lo = lo;
    t->stk_size = hi - lo;
    lock();
    t->index = g_next_index++;
    t->tag = t->index % OWNER_MASK + 1;
    t->next = g_threads;
    g_threads = t;
    unlock();
    pthread_setspecific(g_key, t);
    tls = t;
    return t;
}

static void thread_exit(void *p) {
    struct tstate *t = p;
    if (!t || t == &g_off)
        return;
    tls = &g_off;
    lock();
    if (!t->dead && !g_finished) {
        t->dead = 1;
        flush_thread(t, 1);
    }
    struct tstate **pp = &g_threads;
    while (*pp && *pp != t)
        pp = &(*pp)->next;
    if (*pp)
        *pp = t->next;
    unlock();
    munmap(t, state_bytes());
}

/* ---------------------------------------------------------------------------------- */
/* Bursts (LINEUP_BURSTS=ON_US/PERIOD_US[/WARMUP_US], `lineup record`'s default): hooks */
/* call sites rewritten into counting jumps between recorded windows                    */
/*
 * A hook that returns at once still costs its call, and the registers the compiler saved
 * around it: 2-10x on loops of plain loads and stores, whatever the runtime does. So for
 * long runs the runtime records in windows of time, ON_US out of every PERIOD_US after a
 * first window of WARMUP_US (a shorter run is recorded in full), and in
 * between rewrites every hook call it has seen (`call __tsan_read4`: 5 bytes, E8 rel32)
 * into a jump (E9 rel32) to a trampoline of its own, which only adds one to the thread's
 * count of that site and jumps back: the program runs its instrumented code at nearly
 * full speed, and each site's executions stay exact per thread. A background thread
 * switches. lineup spreads a site's executions between windows over the places its
 * recorded ones went to (CH_HITS per thread; CH_BURSTS names the sites and the times);
 * the ordered trace holds the recorded windows only.
 *
 * A trampoline (at most 74 bytes, in a block mapped within 2 GiB of the program's code)
 * counts the execution in the thread's state and jumps back; an atomic site's then calls
 * the hook's quiet twin, which does the operation and records nothing; one execution in
 * 1024 per thread goes to the hook, so that its place is known (tramp_write). r11
 * and the flags are free at a call site: the call they replace clobbers them.
 *
 * Code that other threads may be executing is rewritten as Linux's text_poke_bp does it:
 * an int3 on the first byte, a core-serializing barrier on every thread of the process
 * (membarrier SYNC_CORE), the other four bytes, a barrier, the first byte, a barrier. A
 * thread meeting the int3 meanwhile gets SIGTRAP, whose handler sends it on through the
 * site's trampoline, which counts the execution and returns past the 5 bytes: nothing is
 * lost. So SIGTRAP must reach the handler: a SIGTRAP handler the program installs with
 * sigaction is chained behind ours, and the runtime keeps SIGTRAP out of the masks the
 * program sets (pthread_sigmask, sigprocmask, sigaction's sa_mask). Not covered: signal()
 * (glibc calls its sigaction internally) and raw rt_sigaction/rt_sigprocmask syscalls.
 *
 * Only direct calls into the hooks of sections lineup_hooks and lineup_atomics (1- to
 * 8-byte atomics; gcc's ranges of up to 16 bytes) are patched (not calls through a PLT,
 * 16-byte atomics, memcpy and memset, or ranges of more than 16 bytes): the
 * others count every access in full and only their trace keeps to the windows. A site
 * first met between windows is patched at once. A forked child gets every call back and
 * is recorded in full.
 */
#if defined(__x86_64__)
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#include <ucontext.h>
#define HOOK_SECTION __attribute__((section("lineup_hooks")))
#define HOOK_ATOMIC_SECTION __attribute__((section("lineup_atomics")))
extern char __start_lineup_hooks[], __stop_lineup_hooks[];
extern char __start_lineup_atomics[], __stop_lineup_atomics[];
static uintptr_t quiet_twin(uintptr_t hook);
#define PSITE_BITS 16 /* lookup table: 4x PSITE_CAP */
/* Entries of the lookup table, patched sites and calls found not patchable together: past
 * it no site is looked at again (the table stays three quarters empty at most). */
#define PSITE_ENTRIES (3u << (PSITE_BITS - 2))
/* A call met and found not patchable: never looked at again. Not ~0u: psite_entry returns
 * the index + 1, and ~0u + 1 is 0, "no entry", so such a call was added again each time
 * the site cache met it (every piece of a memcpy's range, by its size), its probe chain
 * growing until the table was full (zstd: 8% of the run in psite_add, and no room left for
 * the sites bursts patch). */
#define PSITE_NOT 0x7fffffffu
/* CH_BURSTS body: recorded ns, run ns, recorded windows, ns spent switching, ON_US << 32
 * | PERIOD_US, WARMUP_US; then the patched sites as the hooks record them (the call's
 * return address). */
#define BURSTS_HEAD 6
static int g_bursts;               /* on: the patcher thread was started */
static volatile int g_patch_ok;    /* sites may still be rewritten (0: stopped for good) */
static volatile int g_armed = 1;   /* the calls are in place: a recorded window */
static uint64_t g_on_us, g_period_us, g_warmup_us;
static uint64_t *g_bursts_out;     /* BURSTS_HEAD words, then PSITE_CAP return addresses */
static uint32_t *g_pdisp;          /* each site's rel32, as compiled */
static uint8_t *g_tramps;          /* TRAMP bytes per site: read-execute once written */
/* What a site's trampoline jumps to, read through memory: the trampolines are written once
 * at the start, the same code for every site, and never writable again. */
struct tdata {
    uintptr_t back, hook, quiet;
};
static struct tdata *g_tdata;
static int32_t g_tls_tpoff;        /* &tls - the thread pointer: the same in every thread */
#define TRAMP 128
static uintptr_t *g_psites;        /* lookup by call address, open addressing: 0 is empty */
static uint32_t *g_psite_index;    /* the site's index (PSITE_NOT), beside each entry */
static volatile uint32_t g_npsites, g_pentries;
static volatile int g_plock;
static uint64_t g_run_start_ns, g_armed_since_ns;
static volatile uint64_t g_armed_ns, g_windows, g_switch_ns;
static struct sigaction g_prog_trap; /* the program's SIGTRAP disposition, chained */
static uintptr_t g_text_lo, g_text_hi; /* the program's executable segments */
#define TEXT_SEGS 4
static uintptr_t g_seg_lo[TEXT_SEGS], g_seg_hi[TEXT_SEGS];
static int g_seg_prot[TEXT_SEGS], g_nsegs;
static volatile int g_kick;          /* futex: changed to end the runtime thread's sleep */
static volatile int g_thread_exit;   /* the runtime thread is asked to end */
static volatile int g_patcher_tid;   /* the runtime thread's tid; the kernel clears it at its exit */
static long (*real_syscall)(long, ...);
static int (*real_mprotect)(void *, size_t, int);
static int (*real_prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
static void on_crash(int sig);
static void final_flush(int crash_signal);

/* System calls the runtime's own thread makes, and calls made with every signal blocked:
 * straight to the kernel, so that nothing touches glibc's thread state (the patcher has
 * none: it is not a pthread) or errno. Returns -errno on failure. */
static long rsys(long n, long a, long b, long c, long d, long e) {
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return r;
}

/* The kernel's signal set is one word here. */
static uint64_t block_all(void) {
    uint64_t all = ~(uint64_t)0, old = 0;
    rsys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8, 0);
    return old;
}
static void restore_mask(uint64_t old) {
    rsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0);
}

/* The patch lock. Only ever held with every signal blocked (by the patcher, which blocks
 * them all its life, or by a caller of plock_blocked), so no signal handler can run on a
 * thread that holds it, and a holder always gets to release it. */
static void plock(void) {
    while (__atomic_exchange_n(&g_plock, 1, __ATOMIC_ACQUIRE))
        rsys(SYS_sched_yield, 0, 0, 0, 0, 0);
}
static void punlock(void) { __atomic_store_n(&g_plock, 0, __ATOMIC_RELEASE); }
static uint64_t plock_blocked(void) {
    uint64_t old = block_all();
    plock();
    return old;
}
static void punlock_restore(uint64_t old) {
    punlock();
    restore_mask(old);
}

static uint32_t psite_slot(uintptr_t at) {
    return (uint32_t)((at * 0x9e3779b97f4a7c15ull) >> (64 - PSITE_BITS));
}

/* The entry of the call at `at`: its index (PSITE_NOT: not patchable) + 1, 0 if none.
 * Lock-free (the SIGTRAP handler asks): an entry is written once, then published. */
static uint32_t psite_entry(uintptr_t at) {
    if (!g_psites)
        return 0;
    for (uint32_t i = psite_slot(at);; i = (i + 1) & ((1u << PSITE_BITS) - 1)) {
        uintptr_t v = __atomic_load_n(&g_psites[i], __ATOMIC_ACQUIRE);
        if (v == at)
            return g_psite_index[i] + 1;
        if (!v)
            return 0;
    }
}
/* The patched site at `at`: its index + 1, 0 if none. */
static uint32_t psite_find(uintptr_t at) {
    uint32_t e = psite_entry(at);
    return e == PSITE_NOT + 1 ? 0 : e;
}

static void psite_add(uintptr_t at, uint32_t index) {
    uint32_t i = psite_slot(at);
    while (g_psites[i])
        i = (i + 1) & ((1u << PSITE_BITS) - 1);
    g_psite_index[i] = index;
    __atomic_store_n(&g_psites[i], at, __ATOMIC_RELEASE);
    g_pentries++;
}

static int sync_cores(void) {
    return rsys(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0, 0, 0) == 0;
}

/* The program's code is writable only while sites are rewritten, and read-execute (as
 * its segments say) the rest of the time. */
static int text_writable(int on) {
    for (int s = 0; s < g_nsegs; s++) {
        int prot = on ? PROT_READ | PROT_WRITE | PROT_EXEC : g_seg_prot[s];
        if (rsys(SYS_mprotect, (long)g_seg_lo[s], (long)(g_seg_hi[s] - g_seg_lo[s]), prot, 0,
                 0) != 0)
            return 0;
    }
    return 1;
}

static void poke(uintptr_t at, int from, int to, const uint8_t *bytes) {
    for (int i = from; i < to; i++)
        __atomic_store_n((volatile uint8_t *)at + i, bytes[i], __ATOMIC_RELAXED);
}

static void put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

/* Between windows, one execution in TRAMP_SAMPLE of each site and thread (the first, and
 * every TRAMP_SAMPLE-th after) still goes to the hook, which records its place: a thread
 * that runs only between windows has its places too. Such an execution is in hits[i] and
 * in the hook's count; lineup takes it out of hits (ceil(hits / TRAMP_SAMPLE) of them). */
#define TRAMP_SAMPLE 1024
/* hits[i] as the trampolines keep it: its low half goes down by TRAMP_STEP per execution
 * and borrows on the first and every TRAMP_SAMPLE-th after (2^32 / TRAMP_STEP of them),
 * which are the sampled ones, and its high half counts the borrows. One read-modify-write
 * per execution, whose flags say whether it is sampled (a test and an increment before:
 * two). hits_count gives the executions. Read between a borrow and the increment of the
 * high half (a handler's flush on the thread, or the final flush of a thread still running
 * at exit), the word reads as a count the thread had up to TRAMP_SAMPLE executions
 * earlier: a snapshot a little older, and lineup keeps each site's largest (hits_emit). */
#define TRAMP_STEP (1u << 22)
_Static_assert((1ull << 32) / TRAMP_STEP == TRAMP_SAMPLE, "one borrow per TRAMP_SAMPLE");
static uint64_t hits_count(uint64_t h) {
    uint64_t borrows = h >> 32;
    uint64_t part = (uint32_t)(0u - (uint32_t)h) / TRAMP_STEP; /* executions mod SAMPLE */
    if (!borrows)
        return 0;
    return part ? (borrows - 1) * TRAMP_SAMPLE + part : borrows * TRAMP_SAMPLE;
}

/* The first 27 bytes of every trampoline: the thread's state (to `none` where it has none
 * yet), and the count, to `sampled` on a sampled execution:
 *   0: mov r11, fs:[tpoff(tls)]; test r11, r11; je none
 *  14: sub dword [r11 + hits[i]], TRAMP_STEP; jb sampled
 * And at `sampled`, 7 bytes: inc dword [r11 + hits[i] + 4]. */
static void tramp_count(uint8_t *b, uint32_t i, int none, int sampled) {
    uint32_t hits = (uint32_t)(offsetof(struct tstate, hits) + 8 * (size_t)i);
    static const uint8_t head[5] = {0x64, 0x4c, 0x8b, 0x1c, 0x25}; /* mov r11, fs:[d32] */
    for (int k = 0; k < 5; k++)
        b[k] = head[k];
    put32(b + 5, (uint32_t)g_tls_tpoff);
    b[9] = 0x4d, b[10] = 0x85, b[11] = 0xdb;  /* test r11, r11 */
    b[12] = 0x74, b[13] = (uint8_t)(none - 14); /* je none */
    b[14] = 0x41, b[15] = 0x81, b[16] = 0xab; /* sub dword [r11 + d32], imm32 */
    put32(b + 17, hits);
    put32(b + 21, TRAMP_STEP);
    b[25] = 0x72, b[26] = (uint8_t)(sampled - 27); /* jb sampled */
    b[sampled] = 0x41, b[sampled + 1] = 0xff, b[sampled + 2] = 0x83; /* inc dword [r11+d32] */
    put32(b + sampled + 3, hits + 4);
}

/* Site i's trampoline, the same code for every site but for the counter's offset; what it
 * jumps to is read from g_tdata[i] (d below):
 *   0: tramp_count, to 62 (no state yet) and 55 (sampled)
 *  27: cmp qword [rip + d.quiet], 0; jne 43f
 *  37: jmp [rip + d.back]                    (a plain access: nothing else to do)
 *  43: push qword [rip + d.back]; jmp [rip + d.quiet]   (an atomic: the operation itself,
 *                                                        unrecorded, returning to the site)
 *  55: inc dword [r11 + hits[i] + 4]
 *  62: push qword [rip + d.back]; jmp [rip + d.hook]    (the call the site made)
 * r11 and the flags are free at a call site: the call they replace clobbers them. */
static void tramp_write(uint32_t i) {
    uint8_t *c = g_tramps + (size_t)i * TRAMP;
    struct tdata *d = &g_tdata[i];
    uintptr_t back = (uintptr_t)&d->back, hook = (uintptr_t)&d->hook,
              quiet = (uintptr_t)&d->quiet;
#define REL(at, end, to) put32(c + (at), (uint32_t)((to) - (uintptr_t)(c + (end))))
    tramp_count(c, i, 62, 55);
    c[27] = 0x48, c[28] = 0x83, c[29] = 0x3d; /* cmp qword [rip + d32], imm8 */
    REL(30, 35, quiet);
    c[34] = 0;
    c[35] = 0x75, c[36] = 43 - 37;            /* jne 43 */
    c[37] = 0xff, c[38] = 0x25;               /* jmp [rip + d32] */
    REL(39, 43, back);
    c[43] = 0xff, c[44] = 0x35;               /* push qword [rip + d32] */
    REL(45, 49, back);
    c[49] = 0xff, c[50] = 0x25;
    REL(51, 55, quiet);
    c[62] = 0xff, c[63] = 0x35;
    REL(64, 68, back);
    c[68] = 0xff, c[69] = 0x25;
    REL(70, 74, hook);
#undef REL
}

/* A plain (not atomic) site's trampoline, rewritten once its site is known and before the
 * site jumps to it: the jump back is direct, and there is no check for a quiet twin.
 *   0: tramp_count, to 39 (no state yet) and 32 (sampled)
 *  27: jmp site + 5
 *  32: inc dword [r11 + hits[i] + 4]
 *  39: push qword [rip + d.back]; jmp [rip + d.hook]             (the call the site made)
 * An execution between windows costs less than through the generic code: no load of the
 * way back, no compare (docs/record.md, "Trampolines", for what it saved).
 * The page is made writable for the write, as the program's code is for a patch; where
 * that is refused the generic trampoline stays, which does the same. No thread runs this
 * trampoline yet (its site still calls the hook, and indices are never reused), and the
 * site's jump to it is written after a core-serializing barrier (patch_sites).
 * With the patch lock held. */
static int stop_locked(uint32_t code);
static void tramp_plain(uint32_t i) {
    uint8_t *c = g_tramps + (size_t)i * TRAMP;
    struct tdata *d = &g_tdata[i];
    uintptr_t page = (uintptr_t)c & ~(uintptr_t)4095;
    if (rsys(SYS_mprotect, (long)page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0) != 0)
        return;
    uint8_t b[TRAMP];
#define REL(at, end, to) put32(b + (at), (uint32_t)((to) - (uintptr_t)(c + (end))))
    tramp_count(b, i, 39, 32);
    b[27] = 0xe9;                             /* jmp rel32: back to the site */
    REL(28, 32, d->back);
    b[39] = 0xff, b[40] = 0x35;               /* push qword [rip + d32] */
    REL(41, 45, (uintptr_t)&d->back);
    b[45] = 0xff, b[46] = 0x25;               /* jmp [rip + d32] */
    REL(47, 51, (uintptr_t)&d->hook);
#undef REL
    for (int k = 0; k < 51; k++)
        c[k] = b[k];
    if (rsys(SYS_mprotect, (long)page, 4096, PROT_READ | PROT_EXEC, 0, 0) != 0)
        stop_locked(NOTE_NOPATCH); /* never left writable: bursts stop, every site calls */
}

static void site_bytes(uint32_t i, int arm, uint8_t out[5]) {
    if (!arm) {
        uintptr_t pc = g_bursts_out[BURSTS_HEAD + i];
        out[0] = 0xe9;
        put32(out + 1, (uint32_t)((uintptr_t)(g_tramps + (size_t)i * TRAMP) - pc));
        return;
    }
    uint32_t d = g_pdisp[i];
    out[0] = 0xe8;
    for (int k = 0; k < 4; k++)
        out[k + 1] = (uint8_t)(d >> (8 * k));
}

/* Sites [from, to) of the list to their armed (calls) or disarmed (jumps to their
 * trampolines) bytes, as text_poke_bp does it. Called with the patch lock held and SIGTRAP
 * the runtime's. 0 (nothing written) when the code cannot be made writable. */
static int patch_sites(uint32_t from, uint32_t to, int arm) {
    static const uint8_t int3[1] = {0xcc};
    uint8_t b[5];
    if (from >= to)
        return 1;
    if (!text_writable(1)) {
        text_writable(0);
        return 0;
    }
    for (uint32_t i = from; i < to; i++)
        poke(g_bursts_out[BURSTS_HEAD + i] - 5, 0, 1, int3);
    sync_cores();
    for (uint32_t i = from; i < to; i++) {
        site_bytes(i, arm, b);
        poke(g_bursts_out[BURSTS_HEAD + i] - 5, 1, 5, b);
    }
    sync_cores();
    for (uint32_t i = from; i < to; i++) {
        site_bytes(i, arm, b);
        poke(g_bursts_out[BURSTS_HEAD + i] - 5, 0, 1, b);
    }
    sync_cores();
    text_writable(0);
    return 1;
}


static void stopped_at(void) {
    uint64_t now = now_ns();
    if (!g_armed) {
        g_armed_since_ns = now;
        g_armed = 1;
    }
}

/* No site is rewritten from now on: every call goes back in place (recording every access,
 * as --sample 1 does) and the runtime's thread is ended and waited for. With the patch
 * lock held and every signal blocked. Returns whether the calls are back in place. */
static int stop_locked(uint32_t code) {
    if (!g_patch_ok)
        return 1;
    int back = g_armed || patch_sites(0, g_npsites, 1);
    if (back)
        stopped_at();
    g_patch_ok = 0;
    note_emit(code, ~0u);
    return back;
}

static void wait_patcher_gone(void) {
    for (int i = 0; i < 1000; i++) {
        int tid = __atomic_load_n(&g_patcher_tid, __ATOMIC_ACQUIRE);
        if (!tid)
            return;
        struct timespec ts = {0, 1000000};
        rsys(SYS_futex, (long)&g_patcher_tid, FUTEX_WAIT, tid, (long)&ts, 0);
    }
}

/* Called from the program's threads before it does something that would make rewriting
 * its code unsafe (takes SIGTRAP, blocks it, re-protects its code, installs a seccomp
 * filter): the calls go back in place first, and the runtime's thread ends. */
static void bursts_stop(uint32_t code) {
    if (!g_bursts || !g_patch_ok)
        return;
    uint64_t old = plock_blocked();
    stop_locked(code);
    punlock_restore(old);
}

/* The runtime's thread ended, and waited for (a while at most): before a seccomp filter
 * that could kill the process for one of its system calls. */
static void thread_stop(void) {
    if (!g_patcher_tid)
        return;
    __atomic_store_n(&g_thread_exit, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&g_kick, 1, __ATOMIC_ACQ_REL);
    rsys(SYS_futex, (long)&g_kick, FUTEX_WAKE_PRIVATE, 1, 0, 0);
    wait_patcher_gone();
}

/* A hook's first call from `pc` (its return address) on some thread: remember the call if
 * it is a direct one into the hooks and write its trampoline data; between windows, patch
 * it out at once. Never waits on anything a signal handler could hold: the lock is taken
 * with every signal blocked. */
static void psite_register(uintptr_t pc) {
    uintptr_t at = pc - 5;
    if (!g_patch_ok || at < g_text_lo || pc > g_text_hi)
        return; /* not the program's code (a library's, or a pc passed in) */
    if (g_pentries >= PSITE_ENTRIES || g_npsites >= PSITE_CAP || psite_entry(at))
        return;
    uint64_t old = plock_blocked();
    const uint8_t *c = (const uint8_t *)at;
    uint32_t n = g_npsites;
    if (g_patch_ok && !psite_entry(at) && g_pentries < PSITE_ENTRIES && n < PSITE_CAP) {
        uint32_t d = 0;
        uintptr_t target = 0, quiet = 0;
        int hook = 0;
        if (c[0] == 0xe8) {
            d = (uint32_t)c[1] | (uint32_t)c[2] << 8 | (uint32_t)c[3] << 16 |
                (uint32_t)c[4] << 24;
            target = pc + (uintptr_t)(intptr_t)(int32_t)d;
            hook = target >= (uintptr_t)__start_lineup_hooks &&
                   target < (uintptr_t)__stop_lineup_hooks;
            if (!hook && target >= (uintptr_t)__start_lineup_atomics &&
                target < (uintptr_t)__stop_lineup_atomics)
                hook = (quiet = quiet_twin(target)) != 0;
        }
        if (hook) {
            g_pdisp[n] = d;
            g_tdata[n].back = pc;
            g_tdata[n].hook = target;
            g_tdata[n].quiet = quiet;
            if (!quiet)
                tramp_plain(n);
            g_bursts_out[BURSTS_HEAD + n] = pc;
            psite_add(at, n);
            __atomic_store_n(&g_npsites, n + 1, __ATOMIC_RELEASE);
            if (!g_armed && g_patch_ok && !patch_sites(n, n + 1, 0))
                stop_locked(NOTE_NOPATCH);
        } else {
            psite_add(at, PSITE_NOT);
        }
    }
    punlock_restore(old);
}

/* A call into the hooks whose executions are not one access each (gcc's __tsan_read_range of
 * a struct copy, counted per line piece): never patched, so that every execution is recorded
 * and the counts stay exact. */
static void psite_refuse(uintptr_t pc) {
    uintptr_t at = pc - 5;
    if (!g_bursts || !g_patch_ok || at < g_text_lo || pc > g_text_hi || psite_entry(at) ||
        g_pentries >= PSITE_ENTRIES)
        return;
    uint64_t old = plock_blocked();
    if (!psite_entry(at) && g_pentries < PSITE_ENTRIES)
        psite_add(at, PSITE_NOT);
    punlock_restore(old);
}

/* Bursts, between windows: a memory range (memcpy, memmove, memset, a struct copy) keeps
 * its call (its pieces vary with its length and alignment, so a trampoline's count of
 * executions would not be its count of accesses), but its pieces are counted per code
 * site, kind and thread instead of recorded at their places (CH_RHITS), as a trampoline
 * counts a patched site's executions; the first execution of every TRAMP_SAMPLE is still
 * recorded with its places, so that a thread that runs only between windows has them too.
 * lineup spreads the counted pieces over the places the recorded ones of that site, kind
 * and thread went to: the counts stay exact (zstd -T2's main thread copying its input into
 * the jobs' buffers: a 96 MiB run wrote 529K places of that one memcpy, two thirds of its
 * recording). 1: counted here; 0: record it. */
static int range_counted(struct tstate *t, uintptr_t a, size_t n, uint32_t kind, uintptr_t pc) {
    if (g_armed || !g_patch_ok || t->slow || t->in_slow || t->sites != t->site_table ||
        pc - g_text_lo >= g_text_hi - g_text_lo)
        return 0;
    uint32_t mask = (1u << RHITS_BITS) - 1;
    uint32_t i = (uint32_t)(((pc ^ kind) * 0x9E3779B97F4A7C15ull) >> 40) & mask;
    struct rhit *r;
    for (;;) {
        r = &t->rhits[i];
        if (r->pc == pc && r->kind == kind)
            break;
        if (!r->pc) {
            if (t->rhits_used * 4 >= mask * 3)
                return 0; /* full: recorded at their places, as outside bursts */
            r->kind = kind;
            r->execs = 0;
            r->pieces = 0;
            __atomic_store_n(&r->pc, pc, __ATOMIC_RELEASE);
            t->rhits_used++;
            break;
        }
        i = (i + 1) & mask;
    }
    if (r->execs++ % TRAMP_SAMPLE == 0)
        return 0;
    /* As many as rec_range's loop makes: one per 64-byte line piece. */
    r->pieces += ((a & 63) + n + 63) >> 6;
    return 1;
}

/* The runtime thread's sleep: ends early when thread_stop kicks it. */
static void patcher_sleep(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    int kick = __atomic_load_n(&g_kick, __ATOMIC_ACQUIRE);
    if (!g_thread_exit)
        rsys(SYS_futex, (long)&g_kick, FUTEX_WAIT_PRIVATE, kick, (long)&ts, 0);
}

/* Every thread is asked to write what it has buffered, at 1 s, 2 s, 4 s, ... (then every
 * 64 s) into the run: a process killed by SIGKILL keeps all but the last stretch, and a
 * long run writes its counts a few times over, not once a second. */
#define FLUSH_FIRST_NS 1000000000ull
#define FLUSH_MAX_NS (64ull * 1000000000ull)
/* LINEUP_FLUSH_US (g_flush_fixed_ns): every that many microseconds instead (as often as
 * the runtime's thread wakes, at most), so that a test meets flushes in a short run. */
static void flush_tick(void) {
    static uint64_t next, gap;
    if (!gap)
        gap = g_flush_fixed_ns ? g_flush_fixed_ns : FLUSH_FIRST_NS;
    uint64_t now = now_ns();
    if (!next)
        next = g_ns_start + gap;
    if (now < next)
        return;
    if (!g_flush_fixed_ns)
        gap = gap * 2 < FLUSH_MAX_NS ? gap * 2 : FLUSH_MAX_NS;
    next = now + gap;
    lock();
    if (!g_finished)
        for (struct tstate *t = g_threads; t; t = t->next)
            if (!t->dead) {
                struct site *own = t->site_table;
                __atomic_compare_exchange_n(&t->sites, &own, g_flush_sites, 0,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED);
            }
    unlock();
}

/* Threads of the process that are alive, from /proc/self/stat: num_threads (field 20),
 * less the main thread when it is a zombie (state Z, field 3: it ended by SYS_exit or
 * pthread_exit and stays until the whole process ends; other threads go at once); 0 if it
 * cannot be read. *status: the main thread's exit code (field 52, as wait reports it). */
static long threads_alive(long *status) {
    char buf[1024];
    long fd = rsys(SYS_open, (long)"/proc/self/stat", O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0)
        return 0;
    long n = rsys(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0);
    rsys(SYS_close, fd, 0, 0, 0, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    long i = n;
    while (i > 0 && buf[i - 1] != ')')
        i--;
    /* After "pid (comm)": field 3 is the first. */
    int field = 2, zombie = 0;
    long v = 0, code = 0;
    for (; i < n; i++) {
        if (buf[i] == ' ' || buf[i] == '\n') {
            if (++field > 52)
                break;
        } else if (field == 3) {
            zombie = buf[i] == 'Z';
        } else if (field == 20 && buf[i] >= '0' && buf[i] <= '9') {
            v = v * 10 + (buf[i] - '0');
        } else if (field == 52 && buf[i] >= '0' && buf[i] <= '9') {
            code = code * 10 + (buf[i] - '0');
        }
    }
    *status = code;
    if (field < 20 || !v)
        return 0;
    return v - (zombie && v > 1 ? 1 : 0);
}

/* The program's last thread ended without ending the process (a bare SYS_exit; glibc's
 * pthread_exit cannot, the runtime's thread not being one of its threads): flush what the
 * ended threads left, and end as the kernel would have ended it, with the status of the
 * main thread. */
static void patcher_alone(void) {
    long status = 0;
    if (threads_alive(&status) != 1)
        return;
    final_flush(0);
    /* The kernel reports the last thread's exit code: the main thread's, when it was the
     * program's last (one that left before it, by a bare SYS_exit, is not known). */
    for (;;)
        rsys(SYS_exit, (status >> 8) & 0xff, 0, 0, 0, 0);
}

static int trap_is_ours(void);

static void bursts_loop(void) {
    /* The first window lasts the warm-up: a run shorter than it is recorded in full. */
    uint64_t on = g_warmup_us > g_on_us ? g_warmup_us : g_on_us;
    for (;;) {
        patcher_sleep(on * 1000);
        on = g_on_us;
        if (g_thread_exit)
            break;
        patcher_alone();
        flush_tick();
        plock();
        if (g_finished || !g_patch_ok) {
            punlock();
            break;
        }
        if (!trap_is_ours()) {
            /* Taken past every wrapper (a raw syscall): the calls are in place now, so
             * nothing is rewritten any more, and SIGTRAP stays the program's. */
            stop_locked(NOTE_TRAP);
            punlock();
            break;
        }
        /* A switch takes tens of microseconds, through which a thread may run a site either
         * way: half of it counts as recorded, on either side. */
        uint64_t t0 = now_ns();
        if (!patch_sites(0, g_npsites, 0)) {
            stop_locked(NOTE_NOPATCH);
            punlock();
            break;
        }
        g_armed = 0;
        uint64_t t1 = now_ns();
        g_armed_ns += t0 + (t1 - t0) / 2 - g_armed_since_ns;
        g_switch_ns += t1 - t0;
        g_windows++;
        punlock();
        patcher_sleep((g_period_us - g_on_us) * 1000);
        patcher_alone();
        flush_tick();
        plock();
        if (g_finished || !g_patch_ok) {
            punlock();
            break;
        }
        t0 = now_ns();
        if (!trap_is_ours() || !patch_sites(0, g_npsites, 1)) {
            /* The program took SIGTRAP past the wrappers while the jumps were in: they stay
             * (the trampolines count every execution; one in TRAMP_SAMPLE is recorded). */
            g_patch_ok = 0;
            note_emit(trap_is_ours() ? NOTE_NOPATCH : NOTE_TRAP, ~0u);
            punlock();
            break;
        }
        g_armed = 1;
        t1 = now_ns();
        g_armed_since_ns = t0 + (t1 - t0) / 2;
        g_switch_ns += t1 - t0;
        punlock();
    }
}

/* The runtime's own thread: rewrites sites between windows (bursts), asks threads to flush
 * now and then, and ends the process when it is the last thread. Not a pthread (raw clone,
 * its own small TLS block, every signal blocked), so glibc never counts it among the
 * program's threads: the program ends when its last thread does, whether by exit,
 * pthread_exit or a bare SYS_exit. */
static int runtime_thread(void *arg) {
    (void)arg;
    rsys(SYS_prctl, PR_SET_NAME, (long)(g_bursts ? "lineup-bursts" : "lineup-flush"), 0, 0, 0);
    if (g_bursts)
        bursts_loop();
    while (!g_thread_exit && !g_finished) {
        patcher_sleep(100000000);
        if (g_thread_exit)
            break;
        patcher_alone();
        flush_tick();
    }
    return 0;
}

/* SIGTRAP: a thread met a site in the middle of being rewritten, and goes on through the
 * site's trampoline, which counts the execution (or makes the call) and returns past the
 * site; anything else is the program's (its handler, else a crash). */
static void on_trap(int sig, siginfo_t *si, void *ctx) {
    ucontext_t *uc = ctx;
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uint32_t found = psite_find(ip - 1);
    if (found && *(volatile uint8_t *)(ip - 1) == 0xcc) {
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(g_tramps + (size_t)(found - 1) * TRAMP);
        return;
    }
    if (found) {
        /* Rewritten back meanwhile: run the site's bytes as they are now. */
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(ip - 1);
        return;
    }
    if (g_prog_trap.sa_flags & SA_SIGINFO) {
        if (g_prog_trap.sa_sigaction)
            g_prog_trap.sa_sigaction(sig, si, ctx);
        return;
    }
    if (g_prog_trap.sa_handler == SIG_IGN)
        return;
    if (g_prog_trap.sa_handler != SIG_DFL) {
        g_prog_trap.sa_handler(sig);
        return;
    }
    on_crash(sig);
}

/* Kernel's struct sigaction on x86-64. */
struct ksigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};
static int trap_is_ours(void) {
    struct ksigaction k;
    if (rsys(SYS_rt_sigaction, SIGTRAP, 0, (long)&k, 8, 0) != 0)
        return 0;
    return k.handler == (void *)on_trap;
}

/* A thread's executions of patched sites between windows: CH_HITS, (pc, count) pairs. */
static void hits_emit(struct tstate *t) {
    if (!g_bursts)
        return;
    uint32_t n = g_npsites, k = 0;
    uint64_t pairs[2 * 256];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c = hits_count(t->hits[i]);
        if (!c)
            continue;
        pairs[2 * k] = g_bursts_out[BURSTS_HEAD + i];
        pairs[2 * k + 1] = c;
        if (++k == 256) {
            emit(CH_HITS, t->index, k, pairs, k * 2 * sizeof(uint64_t));
            k = 0;
        }
    }
    if (k)
        emit(CH_HITS, t->index, k, pairs, k * 2 * sizeof(uint64_t));
    uint64_t triples[3 * 128];
    k = 0;
    for (uint32_t i = 0; i < (1u << RHITS_BITS); i++) {
        if (!t->rhits[i].pieces)
            continue;
        triples[3 * k] = t->rhits[i].pc;
        triples[3 * k + 1] = t->rhits[i].kind;
        triples[3 * k + 2] = t->rhits[i].pieces;
        if (++k == 128) {
            emit(CH_RHITS, t->index, k, triples, k * 3 * sizeof(uint64_t));
            k = 0;
        }
    }
    if (k)
        emit(CH_RHITS, t->index, k, triples, k * 3 * sizeof(uint64_t));
}

/* The recorded windows' CH_BURSTS chunk (called by the final flush; takes the patch lock,
 * or after a while goes on without it). */
static void bursts_emit(void) {
    if (!g_bursts)
        return;
    int spins = 1000; /* a crash in the patcher itself must not hang the flush */
    while (__atomic_exchange_n(&g_plock, 1, __ATOMIC_ACQUIRE) && --spins)
        rsys(SYS_sched_yield, 0, 0, 0, 0, 0);
    uint64_t now = now_ns();
    uint64_t armed = g_armed_ns + (g_armed ? now - g_armed_since_ns : 0);
    g_bursts_out[0] = armed;
    g_bursts_out[1] = now - g_run_start_ns;
    g_bursts_out[2] = g_windows + (g_armed ? 1 : 0);
    g_bursts_out[3] = g_switch_ns;
    g_bursts_out[4] = g_on_us << 32 | g_period_us;
    g_bursts_out[5] = g_warmup_us;
    emit(CH_BURSTS, 0, g_npsites, g_bursts_out,
         (BURSTS_HEAD + (size_t)g_npsites) * sizeof(uint64_t));
    punlock();
}

/* After fork: only the forking thread lives on (the patcher is not copied); every call
 * back in place (no other thread runs: plain stores do), and the child recorded in full. */
static uint64_t g_fork_mask;
static int g_fork_locked;
static void bursts_child(void) {
    g_plock = 0;
    if (g_bursts) {
        if (!g_armed && text_writable(1)) {
            uint8_t b[5];
            for (uint32_t i = 0; i < g_npsites; i++) {
                site_bytes(i, 1, b);
                poke(g_bursts_out[BURSTS_HEAD + i] - 5, 0, 5, b);
            }
            text_writable(0);
        }
        g_armed = 1;
        g_bursts = 0;
        g_patch_ok = 0;
    }
    g_patcher_tid = 0; /* the runtime's thread is not copied */
    if (g_fork_locked) {
        g_fork_locked = 0;
        restore_mask(g_fork_mask);
    }
}
static void bursts_prepare(void) {
    if (g_bursts) {
        uint64_t old = plock_blocked();
        g_fork_mask = old;
        g_fork_locked = 1;
    }
}
static void bursts_parent(void) {
    if (g_fork_locked) {
        g_fork_locked = 0;
        punlock_restore(g_fork_mask);
    }
}

static int text_range_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!g_text_hi || lo < g_text_lo)
            g_text_lo = lo;
        if (hi > g_text_hi)
            g_text_hi = hi;
        if (g_nsegs < TEXT_SEGS) {
            g_seg_lo[g_nsegs] = lo & ~(uintptr_t)4095;
            g_seg_hi[g_nsegs] = (hi + 4095) & ~(uintptr_t)4095;
            g_seg_prot[g_nsegs] = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0) |
                                  (ph->p_flags & PF_W ? PROT_WRITE : 0);
        }
        g_nsegs++;
    }
    return 1; /* the first object is the program */
}

/* Records why bursts never started, once the output exists. */
static uint32_t g_bursts_unavailable;

static void bursts_setup(void) {
    real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    real_mprotect = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
    real_prctl = (int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long))dlsym(
        RTLD_NEXT, "prctl");
    const char *s = getenv("LINEUP_BURSTS");
    if (!s || !*s)
        return;
    uint64_t on = 0, period = 0, warmup = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        on = on * 10 + (uint64_t)(*s - '0');
    if (*s == '/')
        for (s++; *s >= '0' && *s <= '9'; s++)
            period = period * 10 + (uint64_t)(*s - '0');
    if (*s == '/')
        for (s++; *s >= '0' && *s <= '9'; s++)
            warmup = warmup * 10 + (uint64_t)(*s - '0');
    if (!on || period <= on || period > 0xffffffffu)
        return;
    if (!real_syscall || !real_mprotect || !real_prctl) {
        g_bursts_unavailable = NOTE_NOTHREAD;
        return;
    }
    if (rsys(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0, 0, 0)) {
        g_bursts_unavailable = NOTE_NOSYNC; /* no way to rewrite running code safely */
        return;
    }
    dl_iterate_phdr(text_range_cb, 0);
    if (!g_text_hi || g_nsegs > TEXT_SEGS)
        return;
    /* The code must be writable for a moment at each switch (a W^X policy may refuse). */
    if (!text_writable(1)) {
        text_writable(0);
        g_bursts_unavailable = NOTE_NOPATCH;
        return;
    }
    text_writable(0);
    /* The trampolines, within a rel32 jump of every site and back, and their data beside. */
    size_t tsize = (size_t)PSITE_CAP * TRAMP;
    size_t dsize = ((size_t)PSITE_CAP * sizeof(struct tdata) + 4095) & ~(size_t)4095;
    for (uintptr_t k = 1; k < 96 && !g_tramps; k++) {
        uintptr_t hint = (g_text_hi + (k << 24)) & ~(((uintptr_t)1 << 24) - 1);
        if (hint + tsize + dsize - g_text_lo >= ((uintptr_t)1 << 31))
            break;
        void *p = mmap((void *)hint, tsize + dsize, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == MAP_FAILED)
            continue;
        if ((uintptr_t)p != hint) {
            munmap(p, tsize + dsize);
            continue;
        }
        g_tramps = p;
    }
    if (!g_tramps)
        return;
    g_tdata = (struct tdata *)(g_tramps + tsize);
    uintptr_t tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    g_tls_tpoff = (int32_t)((intptr_t)&tls - (intptr_t)tp);
    for (uint32_t i = 0; i < PSITE_CAP; i++)
        tramp_write(i);
    if (rsys(SYS_mprotect, (long)g_tramps, (long)tsize, PROT_READ | PROT_EXEC, 0, 0) != 0)
        return;
    g_psites = map(((size_t)1 << PSITE_BITS) * sizeof(uintptr_t));
    g_psite_index = map(((size_t)1 << PSITE_BITS) * sizeof(uint32_t));
    g_pdisp = map(PSITE_CAP * sizeof(uint32_t));
    g_bursts_out = map((BURSTS_HEAD + (size_t)PSITE_CAP) * sizeof(uint64_t));
    if (!g_psites || !g_psite_index || !g_pdisp || !g_bursts_out)
        return;
    struct sigaction sa;
    zero(&sa, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, &g_prog_trap))
        return;
    if (g_prog_trap.sa_sigaction == on_trap) /* exec'd from a recorded program? */
        zero(&g_prog_trap, sizeof g_prog_trap);
    g_on_us = on;
    g_period_us = period;
    g_warmup_us = warmup;
    g_run_start_ns = g_armed_since_ns = now_ns();
    g_patch_ok = 1;
    g_bursts = 1;
    pthread_atfork(bursts_prepare, bursts_parent, bursts_child);
}

/* The runtime's thread, in every mode. Its stack and thread-pointer block: the block below
 * the thread pointer is large and zero, so that whatever glibc code it runs finds its TLS
 * reads harmless. */
static int thread_start(void) {
    size_t stack = 256u << 10, tlsb = 1u << 20;
    char *mem = map(stack + tlsb + 4096);
    if (!mem)
        return 0;
    uintptr_t *tcb = (uintptr_t *)(mem + stack + tlsb);
    tcb[0] = (uintptr_t)tcb; /* tcbhead_t: tcb, dtv, self, ..., stack guard at 0x28 */
    tcb[2] = (uintptr_t)tcb;
    __asm__("mov %%fs:0x28, %0" : "=r"(tcb[5]));
    uint64_t old = block_all(); /* the thread starts with every signal blocked */
    int tid = clone(runtime_thread, mem + stack,
                    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                        CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                        CLONE_CHILD_CLEARTID,
                    0, &g_patcher_tid, tcb, &g_patcher_tid);
    restore_mask(old);
    return tid > 0;
}

static void bursts_init(void) {
    bursts_setup();
    if (!thread_start() && g_bursts) {
        /* Nothing rewritten yet: every call is in place. */
        g_patch_ok = 0;
        g_bursts = 0;
        g_bursts_unavailable = NOTE_NOTHREAD;
    }
}

/* The program's signal masks and handlers, less SIGTRAP while sites may be rewritten.
 * (Struct copies go through copy(): a plain assignment may become a call of memcpy, which
 * the runtime intercepts and would record.) */
static const sigset_t *mask_without_trap(int how, const sigset_t *set, sigset_t *tmp) {
    if (!g_patch_ok || how == SIG_UNBLOCK || !set || !sigismember(set, SIGTRAP))
        return set;
    copy(tmp, set, sizeof *tmp);
    sigdelset(tmp, SIGTRAP);
    return tmp;
}

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
    static mask_fn real;
    if (!real)
        real = (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
    sigset_t tmp;
    return real(how, mask_without_trap(how, set, &tmp), old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    static mask_fn real;
    if (!real)
        real = (mask_fn)dlsym(RTLD_NEXT, "sigprocmask");
    sigset_t tmp;
    return real(how, mask_without_trap(how, set, &tmp), old);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    static int (*real)(int, const struct sigaction *, struct sigaction *);
    if (!real)
        real = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT,
                                                                                 "sigaction");
    if (!g_bursts)
        return real(sig, act, old);
    if (sig == SIGTRAP) {
        /* Ours stays installed; the program's runs behind it. */
        if (old)
            copy(old, &g_prog_trap, sizeof *old);
        if (act)
            copy(&g_prog_trap, act, sizeof g_prog_trap);
        return 0;
    }
    if (g_patch_ok && act && sigismember(&act->sa_mask, SIGTRAP)) {
        struct sigaction a;
        copy(&a, act, sizeof a);
        sigdelset(&a.sa_mask, SIGTRAP);
        return real(sig, &a, old);
    }
    return real(sig, act, old);
}

/* signal() and its variants reach the kernel through glibc's own sigaction, not through
 * the one above: the same dispositions, set here through ours. */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, int mask_self) {
    struct sigaction a, o;
    zero(&a, sizeof a);
    a.sa_handler = h;
    a.sa_flags = flags;
    sigemptyset(&a.sa_mask);
    if (mask_self && sig > 0 && sig < NSIG)
        sigaddset(&a.sa_mask, sig);
    if (sigaction(sig, &a, &o) < 0)
        return SIG_ERR;
    return o.sa_handler;
}
EXPORT sighandler_t signal(int sig, sighandler_t h) {
    /* BSD semantics, glibc's default: the signal blocked in its handler, calls restarted. */
    return set_handler(sig, h, SA_RESTART, 1);
}
EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART, 1); }
EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) {
    return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

static int touches_code(uintptr_t a, size_t n) {
    uintptr_t e = a + n;
    uintptr_t tlo = (uintptr_t)g_tramps, thi = tlo + (size_t)PSITE_CAP * TRAMP;
    return (a < (g_text_hi + 4095) && e > (g_text_lo & ~(uintptr_t)4095)) || (a < thi && e > tlo);
}

/* What the program asks of the kernel past the wrappers above, through syscall(3): a
 * SIGTRAP disposition or mask, a new protection of its code, a seccomp filter. Bursts stop
 * first (every call back in place), then the call is made as asked. */
static void before_syscall(long n, long a, long b) {
    if ((n == SYS_seccomp && (a == SECCOMP_SET_MODE_STRICT || a == SECCOMP_SET_MODE_FILTER)) ||
        (n == SYS_prctl && a == PR_SET_SECCOMP)) {
        bursts_stop(NOTE_SECCOMP);
        thread_stop();
        return;
    }
    if (!g_bursts || !g_patch_ok)
        return; /* below, the program's pointers are read only while rewriting needs it */
    if (n == SYS_rt_sigaction && a == SIGTRAP && b)
        bursts_stop(NOTE_TRAP);
    else if (n == SYS_rt_sigprocmask && b && a != SIG_UNBLOCK &&
             (*(const uint64_t *)b & (1ull << (SIGTRAP - 1))))
        bursts_stop(NOTE_MASK);
    else if ((n == SYS_mprotect || n == SYS_pkey_mprotect) && touches_code((uintptr_t)a, (size_t)b))
        bursts_stop(NOTE_TEXT);
}

EXPORT long syscall(long n, ...) {
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    before_syscall(n, a, b);
    if (n == SYS_seccomp && (a == SECCOMP_SET_MODE_STRICT || a == SECCOMP_SET_MODE_FILTER))
        seccomp_enter(a == SECCOMP_SET_MODE_STRICT ? SECCOMP_MODE_STRICT : SECCOMP_MODE_FILTER);
    else if (n == SYS_prctl && a == PR_SET_SECCOMP)
        seccomp_enter(b);
    if (!real_syscall)
        real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real_syscall(n, a, b, c, d, e, f);
}

EXPORT int mprotect(void *addr, size_t len, int prot) {
    if (g_bursts && touches_code((uintptr_t)addr, len))
        bursts_stop(NOTE_TEXT);
    if (!real_mprotect)
        real_mprotect = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
    return real_mprotect(addr, len, prot);
}

EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    unsigned long a = va_arg(ap, unsigned long), b = va_arg(ap, unsigned long);
    unsigned long c = va_arg(ap, unsigned long), d = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_SECCOMP) {
        bursts_stop(NOTE_SECCOMP);
        thread_stop();
        seccomp_enter((long)a);
    }
    if (!real_prctl)
        real_prctl = (int (*)(int, unsigned long, unsigned long, unsigned long,
                              unsigned long))dlsym(RTLD_NEXT, "prctl");
    return real_prctl(option, a, b, c, d);
}
#else
/* The kernel's signal set is one word on the 64-bit targets the runtime builds for; glibc's
 * syscall() is the kernel's here (the runtime wraps it on x86-64 only). */
static uint64_t block_all(void) {
    uint64_t all = ~(uint64_t)0, old = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, 8);
    return old;
}
static void restore_mask(uint64_t old) { syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, 0, 8); }
#define HOOK_SECTION
#define HOOK_ATOMIC_SECTION
static const uint32_t g_bursts_unavailable = 0;
static void psite_register(uintptr_t pc) { (void)pc; }
static void psite_refuse(uintptr_t pc) { (void)pc; }
static int range_counted(struct tstate *t, uintptr_t a, size_t n, uint32_t kind, uintptr_t pc) {
    (void)t, (void)a, (void)n, (void)kind, (void)pc;
    return 0;
}
static void hits_emit(struct tstate *t) { (void)t; }
static void bursts_emit(void) {}
static void bursts_init(void) {}
static int thread_start(void) { return 0; }
static void bursts_child(void) {}
static const int g_bursts = 0;
static const int g_armed = 1;
#endif

/* Writes everything of every thread still running, then the end (or crash) chunk. Other
 * threads are first disabled (their next access is skipped), so their buffers hold still. */
static void final_flush_spins(int crash_signal, int spins) {
    if (g_finished || !g_enabled || (uint32_t)getpid() != g_pid)
        return; /* a vfork child shares the parent's state: it is the parent's to write */
    struct tstate *self = tls;
    tls = &g_off;
    if (!try_lock(spins))
        return;
    if (g_finished) {
        unlock();
        return;
    }
    g_finished = 1;
    for (struct tstate *t = g_threads; t; t = t->next) {
        t->saved_lo = t->stk_lo;
        t->stk_lo = 0;
        t->stk_size = ~(uintptr_t)0;
        t->sites = g_no_sites;
    }
    /* Let a thread that is inside a hook finish it, and one writing its buffers (a full
     * table, or a periodic flush) finish that, a while at most. */
    for (int i = 0; i < 3; i++)
        sched_yield();
    for (struct tstate *t = g_threads; t; t = t->next)
        for (int i = 0; t != self && (t->slow & SLOW_BUSY) && i < 20000; i++)
            sched_yield();
    for (struct tstate *t = g_threads; t; t = t->next)
        if (!t->dead) {
            t->dead = 1;
            flush_thread(t, 1);
        }
    bursts_emit();
    if (crash_signal) {
        uint32_t s = (uint32_t)crash_signal;
        emit(CH_CRASH, 0, 1, &s, sizeof s);
    } else {
        struct rt_end e = {now_tsc(), now_ns(),     g_traced,    g_decim,     g_level,
                           g_summarized, g_agg_bytes, g_lost, g_estimated, g_max_period};
        emit(CH_END, 0, 1, &e, sizeof e);
    }
    g_flushed = 1;
    unlock();
    (void)self;
}
static void final_flush(int crash_signal) {
    final_flush_spins(crash_signal, crash_signal ? 1000 : 1 << 30);
}

/* ---------------------------------------------------------------------------------- */
/* Crashes, exit, fork                                                                  */

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
                                    SIGINT,  SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ};

/* Every crash signal is blocked while the handler runs (sa_mask): a second SIGTERM (sent to
 * the process group and forwarded by lineup too) waits instead of cutting the flush short.
 * Then the default disposition, unblock, and the program dies of its own signal. */
static void on_crash(int sig) {
    int saved = errno;
    final_flush(sig);
    /* The same signal sent twice (to the process group, and forwarded by lineup) can reach
     * a second thread while the first is still flushing: wait for it (a few seconds at
     * most) rather than end the process under it. */
    for (int i = 0; g_finished && !g_flushed && i < 200000; i++)
        sched_yield();
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, 0);
    errno = saved;
    raise(sig);
}

static void on_exit_flush(void) { final_flush(0); }

/* _exit (a forked child's way out, skipping atexit): the child's recording is written
 * first. It may be called from a signal handler that interrupted the runtime: the lock is
 * tried a while, never waited for. */
typedef void (*exit_fn)(int);
static void exit_flush(void) {
    int saved = errno;
    final_flush_spins(0, 1000);
    errno = saved;
}
EXPORT void _exit(int status) {
    exit_flush();
    static exit_fn real;
    if (!real)
        real = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}
EXPORT void _Exit(int status) { _exit(status); }

static int exe_bias_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(uint64_t *)data = info->dlpi_addr;
    return 1; /* the first object is the program */
}

static void header_fill(struct rt_header *h) {
    zero(h, sizeof *h);
    h->version = LINEUP_RT_VERSION;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    uint64_t bias = 0;
    dl_iterate_phdr(exe_bias_cb, &bias);
    h->exe_bias = bias;
    h->tsc_start = g_tsc_start;
    h->ns_start = g_ns_start;
    h->sample = g_sample;
    h->flags = (g_adaptive ? 1 : 0) | (g_bursts ? 2 : 0); /* bit 0: adaptive; 1: bursts */
    h->window_bits = g_window_bits;
    h->budget = g_budget;
    ssize_t n = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
    if (n < 0)
        h->exe[0] = 0;
}

static void write_header(void) {
    struct rt_header h;
    header_fill(&h);
    emit(CH_HEADER, 0, 1, &h, sizeof h);
}

static void note_emit(uint32_t code, uint32_t thread) {
    struct rt_note n = {code, thread, now_tsc()};
    emit(CH_NOTE, thread, 1, &n, sizeof n);
}

/* The program enters seccomp mode (prctl or seccomp through their wrappers; bursts have
 * already stopped). Strict mode allows read, write and exit only: the thread's recording
 * is written now, and its later accesses are not recorded (a note says so). A filter may
 * deny the runtime's open: a descriptor of the file is kept, on a high number, for chunks
 * that cannot open it; what still cannot be written is counted, and lineup says so. */
__attribute__((unused)) static void seccomp_enter(long mode) {
    struct tstate *t = tls;
    if (!g_enabled || g_finished || (uint32_t)getpid() != g_pid)
        return;
    if (mode == 1) {
        uint32_t index = ~0u;
        tls = &g_off;
        if (t && t != &g_off) {
            lock();
            if (!t->dead) {
                t->dead = 1;
                flush_thread(t, 1);
                index = t->index;
            }
            unlock();
        }
        note_emit(NOTE_STRICT, index);
        tls = &g_off; /* for good: its hooks return at once, and make no system call */
        return;
    }
    if (g_keep_fd < 0 && g_file_state == FILE_OPEN) {
        int fd = open_file(0);
        if (fd >= 0) {
            int high = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
            close(fd);
            g_keep_fd = high;
        }
    }
}

/* Names $LINEUP_OUT/rt.<pid>.bin (rt.<pid>.<k>.bin for a program exec'd by a recorded one,
 * which keeps the pid) and, unless `later`, creates it; g_dir stays empty when it cannot. */
static void open_output(int later) {
    const char *dir = getenv("LINEUP_OUT");
    g_file_state = FILE_NONE;
    if (!g_dir[0]) {
        if (!dir || !*dir || slen(dir) >= sizeof g_dir)
            return;
        copy(g_dir, dir, slen(dir) + 1);
    }
    for (uint32_t k = 0; k < 10; k++) {
        size_t n = 0;
        char digits[12];
        int d = 0;
        uint32_t v = (uint32_t)getpid();
        copy(g_name, "rt.", 3);
        n = 3;
        do
            digits[d++] = (char)('0' + v % 10), v /= 10;
        while (v);
        while (d)
            g_name[n++] = digits[--d];
        if (k) {
            g_name[n++] = '.';
            g_name[n++] = (char)('0' + k);
        }
        copy(g_name + n, ".bin", 5);
        if (later) {
            g_file_state = FILE_LATER;
            return;
        }
        int fd = open_file(1);
        if (fd >= 0) {
            close(fd);
            g_file_state = FILE_OPEN;
            return;
        }
        if (errno != EEXIST)
            break;
    }
    g_dir[0] = 0;
}

static void fork_child(void) {
    /* Only the forking thread lives on; what the parent counted is the parent's. */
    struct tstate *self = tls;
    bursts_child();
    g_lock = 0;
    if (!g_enabled || g_finished)
        return;
    g_traced = 0;
    g_agg_bytes = 0;
    g_summarized = 0;
    g_level = 0;
    g_lost = 0;
    g_estimated = g_max_period = 0;
    g_keep_fd = -1;
    g_tsc_start = now_tsc();
    g_ns_start = now_ns();
    g_pid = (uint32_t)getpid();
    open_output(1);
    if (!g_dir[0]) {
        g_enabled = 0;
        tls = &g_off;
        return;
    }
    struct tstate *keep = 0;
    for (struct tstate *t = g_threads; t; t = t->next)
        if (t == self)
            keep = t;
    /* Other threads' blocks stay mapped (their memory was copied), unused. */
    g_threads = 0;
    g_next_index = 0;
    if (keep) {
        zero(keep->agg, (size_t)(keep->agg_mask + 1) * sizeof(struct agg_entry));
        keep->agg_used = 0;
        zero(keep->sum, ((size_t)1 << SUM_BITS) * sizeof(struct sum_entry));
        keep->sum_used = 0;
        keep->sites = keep->site_table;
        zero(keep->site_table, ((size_t)1 << SITES_BITS) * sizeof(struct site));
        keep->estimated = keep->max_period = 0;
        zero(keep->rhits, sizeof keep->rhits);
        keep->rhits_used = 0;
        keep->tpos = keep->tbuf;
        keep->an = 0;
        keep->accesses = keep->dropped = 0;
        keep->tid = (uint32_t)syscall(SYS_gettid);
        keep->tsc_start = now_tsc();
        keep->index = g_next_index++;
        keep->tag = keep->index % OWNER_MASK + 1;
        keep->next = 0;
        keep->dead = 0;
        g_threads = keep;
    }
    thread_start(); /* the child's own: periodic flushes, and its end when last */
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    return v ? v : dflt;
}

static void global_init(void) {
    if (g_inited)
        return;
    g_inited = 1;
    g_tsc_start = now_tsc();
    g_ns_start = now_ns();
    g_pid = (uint32_t)getpid();
    open_output(0);
    if (!g_dir[0])
        return;
    g_sample = (uint32_t)env_u64("LINEUP_SAMPLE", 1);
    g_adaptive = g_sample == 1 && env_u64("LINEUP_ADAPTIVE", 0) != 0;
    g_budget = env_u64("LINEUP_TRACE_BUDGET", 1u << 16);
    g_flush_fixed_ns = env_u64("LINEUP_FLUSH_US", 0) * 1000;
    g_memory = env_u64("LINEUP_MEMORY", 512ull << 20);
    g_window_bits = (uint32_t)env_u64("LINEUP_WINDOW_BITS", 21);
    if (g_window_bits > 40)
        g_window_bits = 40;
    g_block_shift = (uint32_t)env_u64("LINEUP_BLOCK_SHIFT", 6);
    if (g_block_shift < 6 || g_block_shift > 12)
        g_block_shift = 6;
    g_lines = map(((size_t)1 << LINE_TABLE_BITS) * sizeof(uint32_t));
    if (!g_lines) {
        g_dir[0] = 0;
        return;
    }
    pthread_key_create(&g_key, thread_exit);
    pthread_atfork(0, 0, fork_child);
    atexit(on_exit_flush);
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(crash_signals[i], 0, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO)) {
            struct sigaction sa;
            zero(&sa, sizeof sa);
            sa.sa_handler = on_crash;
            /* No SA_RESETHAND: it resets the disposition for the whole process on the
             * first delivery, and a second SIGTERM reaching another thread would end the
             * process in the middle of the flush. on_crash restores the default itself. */
            sa.sa_flags = 0;
            sigemptyset(&sa.sa_mask);
            for (size_t j = 0; j < sizeof crash_signals / sizeof crash_signals[0]; j++)
                sigaddset(&sa.sa_mask, crash_signals[j]);
            sigaction(crash_signals[i], &sa, 0);
        }
    }
    bursts_init();
    write_header();
    if (g_bursts_unavailable)
        note_emit(g_bursts_unavailable, ~0u);
    g_enabled = 1;
}

__attribute__((constructor(101))) static void lineup_ctor(void) {
    struct tstate *prev = tls;
    tls = &g_off;
    global_init();
    tls = prev == &g_off ? 0 : prev;
}

__attribute__((destructor(101))) static void lineup_dtor(void) { final_flush(0); }

/* ---------------------------------------------------------------------------------- */
/* The per-access path                                                                  */

static __attribute__((noinline)) void agg_full(struct tstate *t) {
    t->slow |= SLOW_BUSY;
    flush_agg(t);
    t->slow &= ~SLOW_BUSY;
}

static __attribute__((noinline)) void trace_full(struct tstate *t) {
    t->slow |= SLOW_BUSY;
    flush_trace(t);
    t->slow &= ~SLOW_BUSY;
}

static __attribute__((noinline)) int sample_tick(struct tstate *t) {
    if (t->burst_left) {
        t->burst_left--;
        return 1;
    }
    if (t->skip_left) {
        t->skip_left--;
        return 0;
    }
    t->burst_left = BURST - 1;
    t->skip_left = (uint64_t)BURST * (g_sample - 1);
    return 1;
}

/* The full-resolution entry of (address, size, kind, pc), inserted when new. */
static struct agg_entry *agg_entry(struct tstate *t, uint64_t key, uintptr_t pc) {
    uint64_t h = (key ^ (pc * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    uint32_t i = (uint32_t)(h >> 40) & t->agg_mask;
    for (;;) {
        struct agg_entry *e = &t->agg[i];
        if (LIKELY(e->key == key && e->pc == pc))
            return e;
        if (!e->key) {
            if (UNLIKELY(t->agg_used * 4 >= t->agg_mask * 3)) {
                agg_full(t);
                i = (uint32_t)(h >> 40) & t->agg_mask;
                continue;
            }
            e->key = key;
            e->pc = pc;
            if (t->agg_used < AGG_FEW)
                t->few[t->agg_used] = i;
            t->agg_used++;
            return e;
        }
        i = (i + 1) & t->agg_mask;
    }
}

/* Memory budget, steps 1 and 2: a site is counted in place on lines not contended while
 * the addresses it counted there span at most this many bytes: 64 lines, as a thread's
 * counters, bins or slice of a shared array do, and a loop over an array does not. */
#define SITE_NARROW 4096

/* Widens the site's footprint on lines not contended by [a, a + size); is it narrow? */
static int site_narrow(struct site *s, uintptr_t a, uint32_t size) {
    if (!s->fhi) {
        s->flo = a;
        s->fhi = a + size;
    } else {
        if (a < s->flo)
            s->flo = a;
        if (a + size > s->fhi)
            s->fhi = a + size;
    }
    return s->fhi - s->flo <= SITE_NARROW;
}

/* The locks the thread holds (pthread mutexes and spinlocks taken through the wrappers
 * at the end of this file), innermost last, and a tag of the innermost one that the tally
 * keeps each place apart by (site_fill): lineup tells data handed from thread to thread
 * inside one lock's critical sections, whose accesses cannot overlap in time, from data
 * threads use at the same time (src/record/overlap.rs). 0x8000 | 15 bits of the lock's
 * address; 0: none. */
enum { LOCKS_KEPT = 8 };
static __thread uintptr_t held_locks[LOCKS_KEPT] __attribute__((tls_model("initial-exec")));
static __thread uint32_t held_depth __attribute__((tls_model("initial-exec")));
static __thread uint16_t lock_tag __attribute__((tls_model("initial-exec")));

static void lock_tag_update(void) {
    uint32_t n = held_depth < LOCKS_KEPT ? held_depth : LOCKS_KEPT;
    uint16_t tag = n ? (uint16_t)(0x8000 | ((held_locks[n - 1] >> 2) * 0x9E3779B97F4A7C15ull) >> 49)
                     : 0;
    if (tag == lock_tag)
        return;
    lock_tag = tag;
    /* The site entries filled under the old tag count into the old tag's places: filled
     * again at their next access. Only those filled since the last change can be valid. */
    struct tstate *t = tls;
    if (!t || t == &g_off || !t->filled_n || !t->site_table)
        return;
    if (t->filled_n > FILLED_LOG)
        sites_forget(t);
    else
        for (uint32_t i = 0; i < t->filled_n; i++)
            t->site_table[t->filled[i]].span = 0;
    t->filled_n = 0;
}

static void lock_taken(uintptr_t m) {
    if (held_depth < LOCKS_KEPT)
        held_locks[held_depth] = m;
    held_depth++;
    lock_tag_update();
}

static void lock_released(uintptr_t m) {
    if (!held_depth)
        return;
    /* Locks are usually released innermost first; otherwise take the one out where it is. */
    uint32_t n = held_depth < LOCKS_KEPT ? held_depth : LOCKS_KEPT;
    for (uint32_t i = n; i-- > 0;)
        if (held_locks[i] == m) {
            for (uint32_t j = i; j + 1 < n; j++)
                held_locks[j] = held_locks[j + 1];
            break;
        }
    held_depth--;
    lock_tag_update();
}

/* Points the site entry `s` at the counters of this access, after updating the line's
 * sharing-table entry: which thread owns the block, whether it was handed over, whether
 * a third touch made it shared, and whether anyone wrote it after that (each entry changes
 * at most six times, so the table does not become a contended line itself). */
static void site_fill(struct tstate *t, struct site *s, uintptr_t a, uint32_t info, uintptr_t pc) {
    /* The tally keeps places apart by the lock the thread holds (above the code address's
     * 48 bits, as in the trace): whether accesses were made inside one lock's critical
     * sections is then known for every access, traced or not. */
    uintptr_t tpc = pc | (uint64_t)lock_tag << 48;
    uint32_t kind = info >> 8;
    uint64_t key = (uint64_t)a | ((uint64_t)info << 48);
    uint64_t block = a >> t->shift;
    volatile uint32_t *slot = &t->lines[block & ((1u << LINE_TABLE_BITS) - 1)];
    uint32_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    uint32_t wbit = kind != K_LOAD ? F_WRITTEN : 0;
    uint32_t atag = ATAG(block), mine = t->tag | atag;
    for (;;) {
        uint32_t want;
        if (v == 0 || (v & ATAG_MASK) != atag) {
            /* First touch, or the entry is another block's: the block is this thread's (the
             * other block starts over at its next access). */
            want = mine | wbit;
        } else if ((v & (OWNER_MASK | ATAG_MASK | F_SHARED)) == mine) {
            /* This thread's (first, or handed over to it). */
            want = v | wbit;
        } else if (!(v & (F_SHARED | F_MOVED))) {
            /* A second thread: the block is handed over to it. Writes from before (main
             * filling in what a worker then works on) do not count: WRITTEN starts over. */
            want = mine | F_MOVED | wbit;
        } else if (!(v & F_SHARED)) {
            /* A third touch by a thread not the owner: from now on the block is shared.
             * WRITTEN starts over again: main reading the results a worker wrote, or a
             * table main filled in and the workers then only read, are not contended. */
            want = (v & (OWNER_MASK | ATAG_MASK)) | F_MOVED | F_SHARED | wbit;
        } else {
            want = v | wbit;
        }
        if (want == v ||
            __atomic_compare_exchange_n(slot, &v, want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            v = want;
            break;
        }
    }
    /* Contended: shared (three touches, two threads at least) and written since. For the
     * adaptive sampling's "hot", a block handed over and written is too: whether a third
     * touch comes depends on the threads' timing, and the sampling must not. */
    uint32_t contended = (v & F_SHARED) && (v & F_WRITTEN);
    uint32_t hot = (v & (F_SHARED | F_MOVED)) && (v & F_WRITTEN);
    uint32_t level = g_level;
    uint8_t range = 0;
    if (level >= 4 ||
        (level && ((v & (OWNER_MASK | ATAG_MASK | F_SHARED)) == mine ||
                   (kind == K_LOAD && (v & (F_SHARED | F_WRITTEN)) == F_SHARED)) &&
         (level >= 3 || !site_narrow(s, a, info & 0xff)))) {
        /* Past the budget's first threshold, a line only this thread has touched, or a load
         * from a line shared but not written since, is counted into its code site's summary
         * when the site spreads over more than SITE_NARROW bytes of such lines (from the
         * third step, whatever its spread; past the last, every line is): streaming over a
         * large array then costs a small table instead of one entry per address, and the
         * entry covers the whole line. A line that threads share and write is never
         * summarized before the last step: its places are the answer. A site that keeps to
         * a few places (a thread's slice of a shared array, its own counters or bins) is
         * counted in place before the third step, and the table's flush summarizes only
         * places counted too few times to be worth an entry (cold_below): whether a line
         * stays one thread's is not known while it is counted, only whether it has been so
         * far, and a second thread writing it later needs the first one's places. */
        /* The site's summary is keyed by the site alone. While it has counted one address
         * (a counter, a member through a fixed pointer), it covers that address only and
         * stays exact: lineup then treats it as a place of its own. From its second
         * address on, it covers every address whose line is in the same state. */
        struct sum_entry *e = sum_entry(t, key, tpc);
        s->count = &e->count;
        if ((e->key & ADDR_MASK) != a)
            e->key |= SUM_MANY;
        range = (e->key & SUM_MANY) != 0;
        if (!(e->key & SUM_MANY)) {
            s->lo = a;
            s->span = 1;
        } else if (a < t->stk_lo) {
            /* Every address on this side of the thread's own stack, which the fast path no
             * longer checks for. */
            s->lo = 0;
            s->span = t->stk_lo;
        } else {
            s->lo = t->stk_lo + t->stk_size;
            s->span = ~(uintptr_t)0 - s->lo;
        }
        s->traced = 0;
    } else {
        struct agg_entry *e = agg_entry(t, key, tpc);
        s->lo = a;
        s->span = 1;
        s->count = &e->count;
        s->traced = (uint8_t)contended;
    }
    s->v = v;
    s->hot |= (uint8_t)hot;
    s->hotline = (uint8_t)hot;
    s->more = (uint8_t)((s->traced ? MORE_TRACED : 0) | (s->burst ? MORE_BURST : 0) |
                        (range ? MORE_RANGE : 0));
}

/* Adaptive sampling: the burst is over; skip what its weight stood for, then decide the
 * next burst's weight from what this one met. */
static __attribute__((noinline)) void burst_end(struct tstate *t, struct site *s) {
    s->skip = (uint32_t)(s->weight - 1) * ABURST;
    t->estimated += s->skip * per_record(s->tag);
    if (s->skip)
        s->span = 0; /* the skipped accesses take the miss path, which only counts down */
    if (s->hot || s->hotline || s->traced)
        s->weight = 1;
    else if (s->weight < AMAX)
        s->weight = (uint16_t)(s->weight * 2);
    if (s->weight > t->max_period)
        t->max_period = s->weight;
    s->hot = 0;
    s->burst = ABURST;
}

/* An eligible access: into the ordered trace when its time window is traced. */
static __attribute__((noinline)) void trace_tick(struct tstate *t, uint64_t key, uintptr_t pc) {
    if (UNLIKELY(t->slow & SLOW_BUSY))
        return; /* a signal handler's access while the buffer is being written */
    uint64_t tsc = now_tsc();
    /* Between bursts' windows the hooks see only sites that could not be patched and the
     * sampled executions of patched ones: counted, not traced. The trace keeps to the
     * windows, where every site is traced. */
    if (((tsc >> g_window_bits) & g_decim) != 0 || !g_armed) {
        /* Known closed: look at the clock again only every 64 eligible accesses. */
        t->win_closed = 64;
        return;
    }
    if (UNLIKELY(t->tpos == t->tend))
        trace_full(t);
    struct trace_ev *ev = t->tpos++;
    ev->tsc = tsc;
    ev->key = key;
    ev->pc = pc;
}

/* An eligible access whose window may be open. */
static __attribute__((noinline)) void trace_more(struct tstate *t, uintptr_t a, uint32_t info,
                                                 uintptr_t pc) {
    if (t->win_closed && --t->win_closed)
        return;
    trace_tick(t, (uint64_t)a | ((uint64_t)info << 48), pc);
}

/* The last access of a burst. */
static __attribute__((noinline)) void burst_last(struct tstate *t, struct site *s, uintptr_t a,
                                                 uint32_t info, uintptr_t pc) {
    uint8_t traced = s->traced;
    s->burst = 0;
    burst_end(t, s); /* may move the entry to skipping */
    if (traced)
        trace_more(t, a, info, pc);
}

static inline __attribute__((always_inline)) void fast_enter(struct tstate *t) {
    t->in_fast++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline __attribute__((always_inline)) void fast_leave(struct tstate *t) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->in_fast--;
}

/* Counts an access the site entry covers. Everything but the increment is behind one flag;
 * what may call out does so last, as a tail call, so the hooks need no stack frame. `fast`:
 * called by the fast path (rec), which it leaves once the counters are incremented. */
static inline __attribute__((always_inline)) void count_at(struct tstate *t, struct site *s,
                                                           uintptr_t a, uint32_t info,
                                                           uintptr_t pc, int fast) {
    uint32_t w = s->weight;
    *s->count += w;
    uint8_t m = s->more;
    if (LIKELY(!m)) {
        if (fast)
            fast_leave(t);
        return;
    }
    if (m & MORE_RANGE) {
        /* A summary's entry (never traced): the addresses it covers, for lineup to name. */
        uint64_t end = a + (info & 0xff);
        if (a < s->count[2])
            s->count[2] = a;
        if (end > s->count[3])
            s->count[3] = end;
        if (!(m & MORE_BURST)) {
            if (fast)
                fast_leave(t);
            return;
        }
    }
    if (m & MORE_TRACED)
        s->count[1] += w; /* eligible: the entry's next word */
    if (fast)
        fast_leave(t);
    if (m & MORE_BURST) {
        if (UNLIKELY(s->burst <= 1)) {
            burst_last(t, s, a, info, pc);
            return;
        }
        s->burst--;
    }
    if (m & MORE_TRACED) {
        /* In a closed window (the common case of a long run): a decrement. */
        if (LIKELY(t->win_closed > 1)) {
            t->win_closed--;
            return;
        }
        trace_more(t, a, info, pc);
    }
}

/* Everything the site cache did not answer: a thread's first access, a new site or line, a
 * line whose sharing state changed, --sample N, a thread busy writing. */
/* An access while the thread writes its buffers, or one that would move the counters under
 * the fast path it interrupted (a signal handler's; rec_slow): kept for later, or dropped
 * (and counted as such) past PEND_CAP. The slot is taken atomically: a handler may
 * interrupt another. */
static void pend_push(struct tstate *t, uintptr_t a, uint32_t info, uintptr_t pc) {
    uint32_t i = __atomic_fetch_add(&t->pend_n, 1, __ATOMIC_ACQ_REL);
    if (i >= PEND_CAP) {
        t->dropped++;
        return;
    }
    t->pend[i].a = a;
    t->pend[i].pc = pc;
    __atomic_store_n(&t->pend[i].info, info, __ATOMIC_RELEASE);
}

/* The kept accesses, counted now, each through a site entry of its own (never the cache:
 * the final flush drains threads whose cache is the shared empty table). */
static __attribute__((noinline)) void pend_drain(struct tstate *t) {
    if (t->draining)
        return;
    t->draining = 1;
    uint32_t done = 0;
    for (int round = 0; round < 8; round++) {
        uint32_t n = __atomic_load_n(&t->pend_n, __ATOMIC_ACQUIRE);
        uint32_t upto = n < PEND_CAP ? n : PEND_CAP;
        for (; done < upto; done++) {
            /* A slot taken but not written (never, by construction: the thread is not
             * busy now, so no handler below us is in pend_push): skipped. */
            uint32_t info = __atomic_load_n(&t->pend[done].info, __ATOMIC_ACQUIRE);
            if (!info) {
                t->dropped++;
                continue;
            }
            struct site one = {.weight = 1};
            site_fill(t, &one, t->pend[done].a, info, t->pend[done].pc);
            count_at(t, &one, t->pend[done].a, info, t->pend[done].pc, 0);
            t->pend[done].info = 0;
        }
        if (__atomic_compare_exchange_n(&t->pend_n, &n, 0, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            break;
    }
    t->draining = 0;
}

/* What the thread has buffered, written now (the runtime's thread asked, by pointing the
 * thread's site cache at the empty table so that its next access comes here): a program
 * killed by SIGKILL or the OOM killer keeps what its threads had recorded until then. */
static __attribute__((noinline)) void periodic_flush(struct tstate *t) {
    if (t->slow & SLOW_BUSY)
        return; /* asked again at the next access */
    t->slow |= SLOW_BUSY;
    flush_agg(t);
    flush_sum(t);
    flush_trace(t);
    flush_allocs(t);
    hits_emit(t); /* cumulative: lineup keeps the last (largest) per site */
    /* Back to its own table, unless the final flush disabled the thread meanwhile. */
    struct site *want = g_flush_sites;
    __atomic_compare_exchange_n(&t->sites, &want, t->site_table, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
    t->slow &= ~SLOW_BUSY;
}

static void rec_slow_body(struct tstate *t, uintptr_t a, uint32_t info, uintptr_t pc);

/* Whether this slow path may clear or move the counters the site cache points at: a flush
 * the runtime's thread asked for, or a table that one more entry (or the margin a summary
 * adds) fills. */
static int may_move_counters(struct tstate *t) {
    return t->sites == g_flush_sites || t->agg_used * 4 + 8 >= t->agg_mask * 3 ||
           t->sum_used * 4 + 8 >= ((1u << SUM_BITS) - 1) * 3;
}

/* The slow path is not reentrant (it inserts into the thread's tables, writes buffers
 * out): an access made by a signal handler that interrupted it, or interrupted a write of
 * the buffers, is kept aside and counted when the interrupted path is done. So is one made
 * by a handler that interrupted the fast path (in_fast) where this path would clear or
 * move the counters: the interrupted path holds a pointer to its counter, and its increment
 * would land in a cleared entry, lost (seen as one access short in 1 of ~150 recordings of
 * a 20 kHz SIGALRM handler, at the periodic flush). The handler's other slow paths only
 * insert, and go on. A handler that jumps out (siglongjmp) of the path it interrupted
 * leaves in_fast set: once half of pend is taken, it is taken to be that and cleared. */
static __attribute__((noinline)) void rec_slow(struct tstate *t, uintptr_t a, uint32_t info,
                                               uintptr_t pc) {
    if (!t) {
        t = thread_init();
        if (a - t->stk_lo < t->stk_size)
            return;
    }
    if (UNLIKELY(t->in_fast) && t->pend_n >= PEND_CAP / 2)
        t->in_fast = 0; /* left set by a handler that jumped out of the path it interrupted */
    if (UNLIKELY(t->in_slow || (t->slow & SLOW_BUSY) || (t->in_fast && may_move_counters(t)))) {
        pend_push(t, a, info, pc);
        return;
    }
    t->in_slow = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    rec_slow_body(t, a, info, pc);
    if (UNLIKELY(t->pend_n) && !(t->slow & SLOW_BUSY) && !t->in_fast)
        pend_drain(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->in_slow = 0;
}

static __attribute__((noinline)) void rec_slow_body(struct tstate *t, uintptr_t a,
                                                    uint32_t info, uintptr_t pc) {
    if (UNLIKELY(t->sites == g_flush_sites)) {
        periodic_flush(t);
        if (t->sites == g_flush_sites) {
            pend_push(t, a, info, pc); /* asked while busy: kept for later */
            return;
        }
    }
    if (UNLIKELY(t->slow)) {
        if (!sample_tick(t))
            return;
        /* --sample N: counted through a site entry of its own, never cached. */
        struct site one = {.weight = 1};
        site_fill(t, &one, a, info, pc);
        count_at(t, &one, a, info, pc, 0);
        return;
    }
    if (UNLIKELY(t->level != g_level)) {
        /* The budget's level changed: lines not contended go to summaries from now on. */
        t->level = g_level;
        sites_forget(t);
    }
    uint64_t tag = pc ^ ((uint64_t)info << 48);
    struct site *s = &t->sites[SITE_OF(pc)];
    if (s->tag != tag) {
        if (g_bursts)
            psite_register(pc); /* a call bursts may patch out */
        /* A new site (or another one that maps to this entry): counted in full until its
         * bursts show it may back off. */
        uint64_t left = s->skip * per_record(s->tag);
        t->estimated -= t->estimated >= left ? left : t->estimated;
        s->tag = tag;
        s->span = 0; /* its counters were another site's */
        s->skip = 0;
        s->weight = 1;
        s->burst = g_adaptive ? ABURST : 0;
        s->hot = s->hotline = 0;
        s->more = 0;
        s->fhi = 0;
    } else if (s->skip) {
        s->skip--;
        return;
    }
    if (t->filled_n < FILLED_LOG)
        t->filled[t->filled_n] = (uint16_t)SITE_OF(pc);
    t->filled_n++;
    site_fill(t, s, a, info, pc);
    count_at(t, s, a, info, pc, 0);
}

/* A miss of the site cache: a site counting down its skip only does that. */
static __attribute__((noinline)) void rec_miss(struct tstate *t, uintptr_t a, uint32_t info,
                                               uintptr_t pc) {
    if (LIKELY(t != 0)) {
        if (a - t->stk_lo < t->stk_size)
            return; /* the thread's own stack, or everything (disabled) */
        struct site *s = &t->sites[SITE_OF(pc)];
        if (s->skip && s->tag == (pc ^ ((uint64_t)info << 48))) {
            s->skip--;
            return;
        }
    }
    rec_slow(t, a, info, pc);
}

/* Per access: the site cache, then the miss path, which skips the thread's own stack (a
 * disabled runtime's "stack" is the whole address space) before anything else. No site
 * entry covers the thread's stack, so the fast path need not look. Kept small so that the
 * hooks need no stack frame on the fast path. */
static inline __attribute__((always_inline)) void rec(uintptr_t a, uint32_t size, uint32_t kind,
                                                      uintptr_t pc) {
    struct tstate *t = tls;
    uint32_t info = size | kind << 8;
    /* Not for the disabled state, which every thread of a run not recorded shares: its
     * in_fast would be one line written by all of them (it takes the miss path, which skips
     * everything, as its site table never matches). */
    if (LIKELY(t != 0 && t != &g_off)) {
        fast_enter(t);
        /* The line's state only once the site matched: a miss needs no load of it. (Read
         * first, the fences kept the load on every path, g_off's too, which has no line
         * table: a crash in every plain run of a program built with lineup cc, before g_off
         * was kept off this path.) */
        struct site *s = &t->sites[SITE_OF(pc)];
        if (LIKELY(s->tag == (pc ^ ((uint64_t)info << 48)) && a - s->lo < s->span &&
                   t->lines[(a >> t->shift) & ((1u << LINE_TABLE_BITS) - 1)] == s->v)) {
            count_at(t, s, a, info, pc, 1);
            return;
        }
        fast_leave(t);
    }
    rec_miss(t, a, info, pc);
}

/* Ranges (memcpy, memset, __tsan_read_range): one access per cache line piece. */
static void rec_range(uintptr_t a, size_t n, uint32_t kind, uintptr_t pc) {
    struct tstate *t = tls;
    if (UNLIKELY(!t))
        t = thread_init();
    if (!n || a - t->stk_lo < t->stk_size)
        return;
    if (!g_armed && range_counted(t, a, n, kind, pc))
        return;
    while (n) {
        size_t piece = 64 - (a & 63);
        if (piece > n)
            piece = n;
        rec(a, (uint32_t)piece, kind, pc);
        a += piece;
        n -= piece;
    }
}

/* ---------------------------------------------------------------------------------- */
/* ThreadSanitizer's instrumentation interface                                          */

EXPORT void __tsan_init(void) {
    if (!g_inited) {
        struct tstate *prev = tls;
        tls = &g_off;
        global_init();
        tls = prev == &g_off ? 0 : prev;
    }
}

/* The hooks called directly with an address (HOOK: in section lineup_hooks, whose calls
 * bursts may patch out), and with a pc passed in (not patched). */
#define HOOK EXPORT HOOK_SECTION
#define ACCESS_HOOKS(N)                                                                    \
    HOOK void __tsan_read##N(void *a) { rec((uintptr_t)a, N, K_LOAD, RA()); }              \
    HOOK void __tsan_write##N(void *a) { rec((uintptr_t)a, N, K_STORE, RA()); }            \
    HOOK void __tsan_unaligned_read##N(void *a) { rec((uintptr_t)a, N, K_LOAD, RA()); }    \
    HOOK void __tsan_unaligned_write##N(void *a) { rec((uintptr_t)a, N, K_STORE, RA()); }  \
    HOOK void __tsan_volatile_read##N(void *a) { rec((uintptr_t)a, N, K_LOAD, RA()); }     \
    HOOK void __tsan_volatile_write##N(void *a) { rec((uintptr_t)a, N, K_STORE, RA()); }   \
    HOOK void __tsan_unaligned_volatile_read##N(void *a) {                                 \
        rec((uintptr_t)a, N, K_LOAD, RA());                                                \
    }                                                                                      \
    HOOK void __tsan_unaligned_volatile_write##N(void *a) {                                \
        rec((uintptr_t)a, N, K_STORE, RA());                                               \
    }                                                                                      \
    EXPORT void __tsan_read##N##_pc(void *a, void *pc) {                                   \
        rec((uintptr_t)a, N, K_LOAD, (uintptr_t)pc);                                       \
    }                                                                                      \
    EXPORT void __tsan_write##N##_pc(void *a, void *pc) {                                  \
        rec((uintptr_t)a, N, K_STORE, (uintptr_t)pc);                                      \
    }                                                                                      \
    HOOK void __tsan_read_write##N(void *a) { rec((uintptr_t)a, N, K_UPDATE, RA()); }      \
    HOOK void __tsan_unaligned_read_write##N(void *a) {                                    \
        rec((uintptr_t)a, N, K_UPDATE, RA());                                              \
    }

ACCESS_HOOKS(1)
ACCESS_HOOKS(2)
ACCESS_HOOKS(4)
ACCESS_HOOKS(8)
ACCESS_HOOKS(16)

/* gcc reports through __tsan_read_range/__tsan_write_range, with the size a constant of the
 * call site, every access its sized hooks do not take: an unaligned one (a memcpy of 8
 * bytes folded into a load: zstd's MEM_read64, its hash and match loops), an odd size, a
 * struct copy. Up to RANGE_ONE bytes it is one access of that size, as clang's
 * __tsan_unaligned_readN of the same source is (a straddling one included: the simulation
 * splits it by line), and the call is one bursts may patch out like the sized hooks': each
 * execution is one access, so the trampoline's count is exact. A larger range (a struct
 * copy) is one access per line piece, as memcpy's, and its call is never patched. */
#define RANGE_ONE 16
static inline __attribute__((always_inline)) void rec_range_call(uintptr_t a, size_t n,
                                                                 uint32_t kind, uintptr_t pc) {
    if (LIKELY(n - 1 < RANGE_ONE)) {
        rec(a, (uint32_t)n, kind, pc);
        return;
    }
    if (g_bursts)
        psite_refuse(pc);
    rec_range(a, n, kind, pc);
}
HOOK void __tsan_read_range(void *a, size_t n) { rec_range_call((uintptr_t)a, n, K_LOAD, RA()); }
HOOK void __tsan_write_range(void *a, size_t n) {
    rec_range_call((uintptr_t)a, n, K_STORE, RA());
}
EXPORT void __tsan_read_range_pc(void *a, size_t n, void *pc) {
    rec_range((uintptr_t)a, n, K_LOAD, (uintptr_t)pc);
}
EXPORT void __tsan_write_range_pc(void *a, size_t n, void *pc) {
    rec_range((uintptr_t)a, n, K_STORE, (uintptr_t)pc);
}

/* C++: the vtable pointer of an object being constructed or destroyed, and its reads. */
EXPORT void __tsan_vptr_update(void **p, void *v) {
    if (*p != v)
        rec((uintptr_t)p, sizeof(void *), K_STORE, RA());
}
EXPORT void __tsan_vptr_read(void **p) { rec((uintptr_t)p, sizeof(void *), K_LOAD, RA()); }

EXPORT void __tsan_func_entry(void *pc) { (void)pc; }
EXPORT void __tsan_func_exit(void) {}
EXPORT void __tsan_ignore_thread_begin(void) {}
EXPORT void __tsan_ignore_thread_end(void) {}
EXPORT void __tsan_acquire(void *a) { (void)a; }
EXPORT void __tsan_release(void *a) { (void)a; }
EXPORT void __tsan_mutex_create(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_destroy(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_pre_lock(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_post_lock(void *a, unsigned f, int r) { (void)a, (void)f, (void)r; }
EXPORT int __tsan_mutex_pre_unlock(void *a, unsigned f) { (void)a, (void)f; return 0; }
EXPORT void __tsan_mutex_post_unlock(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_pre_signal(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_post_signal(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_pre_divert(void *a, unsigned f) { (void)a, (void)f; }
EXPORT void __tsan_mutex_post_divert(void *a, unsigned f) { (void)a, (void)f; }

/* Atomics: served as seq_cst, which is always correct, except stores: a seq_cst store is an
 * xchg on x86, a relaxed or release store a plain mov, and recording must not turn one into
 * the other. (ThreadSanitizer's memory orders: relaxed 0 ... seq_cst 5.) */
#define SEQ __ATOMIC_SEQ_CST
#define MO_SEQ_CST 5
#define ATOMIC_FNS(N, T, NAME, ATTR, REC)                                                                 \
    ATTR T NAME(N, load)(const volatile T *a, int mo) {                        \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_LOAD, RA());                                        \
        return __atomic_load_n(a, SEQ);                                                    \
    }                                                                                      \
    ATTR void NAME(N, store)(volatile T *a, T v, int mo) {                     \
        REC((uintptr_t)a, sizeof(T), K_STORE, RA());                                       \
        if (mo == MO_SEQ_CST)                                                              \
            __atomic_store_n(a, v, SEQ);                                                   \
        else /* a plain store, as the program's own relaxed or release store */            \
            __atomic_store_n(a, v, __ATOMIC_RELEASE);                                      \
    }                                                                                      \
    ATTR T NAME(N, exchange)(volatile T *a, T v, int mo) {                     \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_exchange_n(a, v, SEQ);                                             \
    }                                                                                      \
    ATTR T NAME(N, fetch_add)(volatile T *a, T v, int mo) {                    \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_add(a, v, SEQ);                                              \
    }                                                                                      \
    ATTR T NAME(N, fetch_sub)(volatile T *a, T v, int mo) {                    \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_sub(a, v, SEQ);                                              \
    }                                                                                      \
    ATTR T NAME(N, fetch_and)(volatile T *a, T v, int mo) {                    \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_and(a, v, SEQ);                                              \
    }                                                                                      \
    ATTR T NAME(N, fetch_or)(volatile T *a, T v, int mo) {                     \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_or(a, v, SEQ);                                               \
    }                                                                                      \
    ATTR T NAME(N, fetch_xor)(volatile T *a, T v, int mo) {                    \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_xor(a, v, SEQ);                                              \
    }                                                                                      \
    ATTR T NAME(N, fetch_nand)(volatile T *a, T v, int mo) {                   \
        (void)mo;                                                                          \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_fetch_nand(a, v, SEQ);                                             \
    }                                                                                      \
    ATTR int NAME(N, compare_exchange_strong)(volatile T *a, T *c, T v, int mo, \
                                                           int fmo) {                      \
        (void)mo, (void)fmo;                                                               \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_compare_exchange_n(a, c, v, 0, SEQ, SEQ);                          \
    }                                                                                      \
    ATTR int NAME(N, compare_exchange_weak)(volatile T *a, T *c, T v, int mo,  \
                                                         int fmo) {                        \
        (void)mo, (void)fmo;                                                               \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        return __atomic_compare_exchange_n(a, c, v, 1, SEQ, SEQ);                          \
    }                                                                                      \
    ATTR T NAME(N, compare_exchange_val)(volatile T *a, T c, T v, int mo,      \
                                                      int fmo) {                           \
        (void)mo, (void)fmo;                                                               \
        REC((uintptr_t)a, sizeof(T), K_RMW, RA());                                         \
        __atomic_compare_exchange_n(a, &c, v, 0, SEQ, SEQ);                                \
        return c;                                                                          \
    }

/* The hooks, and for each a quiet twin that does the same atomic operation and records
 * nothing: between bursts' windows a patched atomic site's trampoline calls the twin. */
#define HOOK_NAME(N, op) __tsan_atomic##N##_##op
#define QUIET_NAME(N, op) lineup_quiet_atomic##N##_##op
#define NO_REC(a, size, kind, pc) ((void)0)
#define ATOMIC_HOOKS(N, T)                                                                 \
    ATOMIC_FNS(N, T, HOOK_NAME, EXPORT HOOK_ATOMIC_SECTION, rec)                           \
    ATOMIC_FNS(N, T, QUIET_NAME, static __attribute__((used, noinline)), NO_REC)
ATOMIC_HOOKS(8, uint8_t)
ATOMIC_HOOKS(16, uint16_t)
ATOMIC_HOOKS(32, uint32_t)
ATOMIC_HOOKS(64, uint64_t)

#define TWIN(N, op) {(const void *)HOOK_NAME(N, op), (const void *)QUIET_NAME(N, op)},
#define TWINS(N)                                                                           \
    TWIN(N, load) TWIN(N, store) TWIN(N, exchange) TWIN(N, fetch_add) TWIN(N, fetch_sub)   \
    TWIN(N, fetch_and) TWIN(N, fetch_or) TWIN(N, fetch_xor) TWIN(N, fetch_nand)            \
    TWIN(N, compare_exchange_strong) TWIN(N, compare_exchange_weak)                        \
    TWIN(N, compare_exchange_val)
static const void *const g_atomic_twins[][2] = {TWINS(8) TWINS(16) TWINS(32) TWINS(64)};

static __attribute__((unused)) uintptr_t quiet_twin(uintptr_t hook) {
    for (size_t i = 0; i < sizeof g_atomic_twins / sizeof g_atomic_twins[0]; i++)
        if ((uintptr_t)g_atomic_twins[i][0] == hook)
            return (uintptr_t)g_atomic_twins[i][1];
    return 0;
}

#if defined(__x86_64__) && defined(__SIZEOF_INT128__)
/* 16-byte atomics with cmpxchg16b (compiled with -mcx16), without libatomic. */
typedef unsigned __int128 u128;
static u128 cas128(volatile u128 *a, u128 c, u128 v) {
    return __sync_val_compare_and_swap(a, c, v);
}
static u128 load128(volatile u128 *a) { return cas128(a, 0, 0); }
#define RMW128(name, expr)                                                                 \
    EXPORT u128 __tsan_atomic128_##name(volatile u128 *a, u128 v, int mo) {                \
        (void)mo;                                                                          \
        rec((uintptr_t)a, 16, K_RMW, RA());                                                \
        u128 old = load128(a), seen;                                                       \
        while ((seen = cas128(a, old, (expr))) != old)                                     \
            old = seen;                                                                    \
        return old;                                                                        \
    }
RMW128(exchange, v)
RMW128(fetch_add, old + v)
RMW128(fetch_sub, old - v)
RMW128(fetch_and, old & v)
RMW128(fetch_or, old | v)
RMW128(fetch_xor, old ^ v)
RMW128(fetch_nand, ~(old & v))
EXPORT u128 __tsan_atomic128_load(const volatile u128 *a, int mo) {
    (void)mo;
    rec((uintptr_t)a, 16, K_LOAD, RA());
    return load128((volatile u128 *)a);
}
EXPORT void __tsan_atomic128_store(volatile u128 *a, u128 v, int mo) {
    (void)mo;
    rec((uintptr_t)a, 16, K_STORE, RA());
    u128 old = load128(a), seen;
    while ((seen = cas128(a, old, v)) != old)
        old = seen;
}
EXPORT int __tsan_atomic128_compare_exchange_strong(volatile u128 *a, u128 *c, u128 v, int mo,
                                                    int fmo) {
    (void)mo, (void)fmo;
    rec((uintptr_t)a, 16, K_RMW, RA());
    u128 seen = cas128(a, *c, v);
    if (seen == *c)
        return 1;
    *c = seen;
    return 0;
}
EXPORT int __tsan_atomic128_compare_exchange_weak(volatile u128 *a, u128 *c, u128 v, int mo,
                                                  int fmo) {
    (void)mo, (void)fmo;
    rec((uintptr_t)a, 16, K_RMW, RA());
    u128 seen = cas128(a, *c, v);
    if (seen == *c)
        return 1;
    *c = seen;
    return 0;
}
EXPORT u128 __tsan_atomic128_compare_exchange_val(volatile u128 *a, u128 c, u128 v, int mo,
                                                  int fmo) {
    (void)mo, (void)fmo;
    rec((uintptr_t)a, 16, K_RMW, RA());
    return cas128(a, c, v);
}
#endif

EXPORT void __tsan_atomic_thread_fence(int mo) {
    (void)mo;
    __atomic_thread_fence(SEQ);
}
EXPORT void __tsan_atomic_signal_fence(int mo) {
    (void)mo;
    __atomic_signal_fence(SEQ);
}

/* ---------------------------------------------------------------------------------- */
/* memset, memcpy, memmove: the instrumentation turns them into plain calls            */

EXPORT void *memcpy(void *d, const void *s, size_t n) {
    uintptr_t pc = RA();
    rec_range((uintptr_t)s, n, K_LOAD, pc);
    rec_range((uintptr_t)d, n, K_STORE, pc);
    return real_memcpy_chk(d, s, n, (size_t)-1);
}
EXPORT void *memmove(void *d, const void *s, size_t n) {
    uintptr_t pc = RA();
    rec_range((uintptr_t)s, n, K_LOAD, pc);
    rec_range((uintptr_t)d, n, K_STORE, pc);
    return real_memmove_chk(d, s, n, (size_t)-1);
}
EXPORT void *memset(void *d, int c, size_t n) {
    rec_range((uintptr_t)d, n, K_STORE, RA());
    return real_memset_chk(d, c, n, (size_t)-1);
}

/* ---------------------------------------------------------------------------------- */
/* Heap: every allocation and free, with its size and call site                        */

static void note_alloc(uint32_t kind, void *p, size_t size, size_t align, uintptr_t pc) {
    struct tstate *t = tls;
    if (!g_enabled || g_finished || !p)
        return;
    if (!t)
        t = thread_init();
    if (t == &g_off || (t->slow & SLOW_BUSY) || t->dead)
        return;
    t->slow |= SLOW_BUSY;
    if (t->an == ALLOC_CAP)
        flush_allocs(t);
    struct alloc_ev *e = &t->abuf[t->an++];
    e->tsc = now_tsc();
    e->addr = (uint64_t)(uintptr_t)p;
    e->size = size;
    e->pc = pc;
    e->kind = kind;
    e->align = (uint32_t)align;
    t->slow &= ~SLOW_BUSY;
}

EXPORT void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    note_alloc(AL_MALLOC, p, n, 0, RA());
    return p;
}
EXPORT void free(void *p) {
    if (p)
        note_alloc(AL_FREE, p, 0, 0, RA());
    __libc_free(p);
}
EXPORT void *calloc(size_t n, size_t m) {
    void *p = __libc_calloc(n, m);
    note_alloc(AL_MALLOC, p, n * m, 0, RA());
    return p;
}
EXPORT void *realloc(void *old, size_t n) {
    uintptr_t pc = RA();
    void *p = __libc_realloc(old, n);
    if (p || !n) {
        if (old)
            note_alloc(AL_FREE, old, 0, 0, pc);
        note_alloc(AL_MALLOC, p, n, 0, pc);
    }
    return p;
}
EXPORT void *memalign(size_t align, size_t n) {
    void *p = __libc_memalign(align, n);
    note_alloc(AL_MALLOC, p, n, align, RA());
    return p;
}
EXPORT void *aligned_alloc(size_t align, size_t n) {
    void *p = __libc_memalign(align, n);
    note_alloc(AL_MALLOC, p, n, align, RA());
    return p;
}
EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    note_alloc(AL_MALLOC, p, n, align, RA());
    *out = p;
    return 0;
}
EXPORT void *valloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = __libc_memalign(page, n);
    note_alloc(AL_MALLOC, p, n, page, RA());
    return p;
}
EXPORT void *pvalloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    n = (n + page - 1) & ~(page - 1);
    void *p = __libc_memalign(page, n);
    note_alloc(AL_MALLOC, p, n, page, RA());
    return p;
}

/* ---------------------------------------------------------------------------------- */
/* Locks: pthread's lock word is written inside libc, which is not instrumented        */

typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*spin_fn)(pthread_spinlock_t *);
static mutex_fn real_mutex_lock, real_mutex_trylock, real_mutex_unlock;
static spin_fn real_spin_lock, real_spin_trylock, real_spin_unlock;

static void resolve_locks(void) {
    real_mutex_lock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real_mutex_trylock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    real_mutex_unlock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    real_spin_lock = (spin_fn)dlsym(RTLD_NEXT, "pthread_spin_lock");
    real_spin_trylock = (spin_fn)dlsym(RTLD_NEXT, "pthread_spin_trylock");
    real_spin_unlock = (spin_fn)dlsym(RTLD_NEXT, "pthread_spin_unlock");
}

/* The lock word (an int at offset 0) is updated atomically by lock and unlock. */
#define LOCK_HOOK(name, T, real, then)                                                     \
    EXPORT int name(T *m) {                                                                \
        rec((uintptr_t)m, 4, K_RMW, RA());                                                 \
        if (UNLIKELY(!real))                                                               \
            resolve_locks();                                                               \
        int r = real(m);                                                                   \
        if (r == 0)                                                                        \
            then((uintptr_t)m);                                                            \
        return r;                                                                          \
    }
LOCK_HOOK(pthread_mutex_lock, pthread_mutex_t, real_mutex_lock, lock_taken)
LOCK_HOOK(pthread_mutex_trylock, pthread_mutex_t, real_mutex_trylock, lock_taken)
LOCK_HOOK(pthread_mutex_unlock, pthread_mutex_t, real_mutex_unlock, lock_released)
LOCK_HOOK(pthread_spin_lock, pthread_spinlock_t, real_spin_lock, lock_taken)
LOCK_HOOK(pthread_spin_trylock, pthread_spinlock_t, real_spin_trylock, lock_taken)
LOCK_HOOK(pthread_spin_unlock, pthread_spinlock_t, real_spin_unlock, lock_released)

/* C++ operator new, so that the call site is the user's `new`, not libstdc++'s. On
 * failure the library's own operator (found with dlsym) throws std::bad_alloc. */
typedef void *(*new_fn)(size_t);
static void *new_failed(const char *sym, size_t n) {
    new_fn next = (new_fn)dlsym(RTLD_NEXT, sym);
    return next ? next(n) : 0;
}
EXPORT void *_Znwm(size_t n) {
    void *p = __libc_malloc(n ? n : 1);
    if (!p)
        return new_failed("_Znwm", n);
    note_alloc(AL_MALLOC, p, n, 0, RA());
    return p;
}
EXPORT void *_Znam(size_t n) {
    void *p = __libc_malloc(n ? n : 1);
    if (!p)
        return new_failed("_Znam", n);
    note_alloc(AL_MALLOC, p, n, 0, RA());
    return p;
}
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag) {
    (void)tag;
    void *p = __libc_malloc(n ? n : 1);
    note_alloc(AL_MALLOC, p, n, 0, RA());
    return p;
}
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag) {
    (void)tag;
    void *p = __libc_malloc(n ? n : 1);
    note_alloc(AL_MALLOC, p, n, 0, RA());
    return p;
}
