/*
 * trace.c - trace mode: one line per NCCL callback (see trace.h).
 *
 * A callback copies what its line needs (the descriptor's union: NCCL's strings are
 * constants, kept by pointer) into its own thread's buffer, a single-producer queue, and
 * timestamps it; the trace thread merges the threads' buffers by time, formats the lines
 * and writes them. A callback touches no cache line another thread writes (the ids and
 * wrappers are per thread too), and takes a lock or allocates only when its thread needs
 * a new wrapper chunk (every 4096 starts) or segment (every 16384 cells, only while the
 * buffer grows: a steady job reuses its segments). The first
 * version took a process-wide mutex and formatted each line in the callback; the second
 * shared one ring between threads: both slowed NCCL's proxy thread enough, at 192
 * callbacks per 4 MiB AllReduce on 64 channels, that it fell 64 works behind the GPU and
 * NCCL handed most ops another op's timestamps (docs/VALIDATION.md).
 *
 * Order: each thread's lines keep its order; between threads, the time each event was
 * taken (CLOCK_MONOTONIC). The thread writes only events older than MERGE_LAG_NS, so
 * that an event timed just before another thread's, but committed after it, still
 * comes first; a thread held longer than that between its clock read and its commit
 * writes its line out of order (its t is then raised to the line before: replay reads t
 * as the host clock).
 *
 * Bursts: NCCL's proxy threads make several million callbacks a second while a GPU runs
 * small ops back to back, more than one thread can format. A thread's buffer is a chain
 * of segments that grows while the trace thread is behind (the segments it has written
 * come back to the same thread, so a steady job reuses them), up to TRACE_MAX_BYTES for
 * the process. Only past that does a callback wait for the trace thread (a trace with
 * holes does not replay): trace mode holds the job then, and only then; after
 * FULL_WAIT_NS it loses the line instead, counted and reported at exit. A fixed ring of
 * 64 K callbacks a thread made NCCL's proxy wait in 1 MiB AllReduce bursts, fall 64
 * works behind the GPU, and hand its ops other ops' timestamps (docs/VALIDATION.md).
 *
 * A trace file that cannot be made or written, and lines lost, are notices (core/log.h):
 * the user asked for a trace and must hear, whatever NCCL_DEBUG says, that there is none.
 *
 * Handles: NCCL is given a wrapper per event (its id in the trace, and the tracker's
 * handle), kept while any communicator lives, since NCCL may name any event as a parent
 * later. Wrappers come from chunks owned by the calling thread.
 *
 * Unload: NCCL unloads the plugin with its last communicator and loads it again at the
 * next. With no communicator left no callback can come and no wrapper is named again, so
 * everything goes then (ins_trace_release): buffers, segments, wrapper chunks (all
 * listed as they are made: keep), the init lines, the write buffer, the file; the thread
 * is joined before. A thread's pointer to its buffer is thread-local, and glibc sets it
 * anew in every live thread at the next load.
 *
 * fork(): the child forgets the parent's unwritten callbacks in a few stores, without
 * reading them, however many there are (up to TRACE_MAX_BYTES), and abandons their
 * memory to its own unload ("fork()", below, says why not free it).
 */
#include "abi/trace.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "abi/tracefmt.h"
#include "io/files.h"

#define TAG_WRAPPER 0xA3
#define TRACE_BUF (1u << 20)     /* the trace thread's write buffer */
#define SEG_CELLS 16384          /* 64-byte cells in one segment of a thread's buffer (1 MiB) */
#define TRACE_MAX_BYTES (1ull << 30) /* every thread's segments together, at most */
#define FULL_NAP_NS 20000        /* a thread that finds none left waits in naps of this */
#define FULL_WAIT_NS 1000000000ull /* and at most this long, then loses the line */
#define WRAP_CHUNK 4096          /* wrappers a thread takes at a time */
#define IDLE_SLEEP_NS 200000     /* the trace thread's nap when nothing is old enough */
#define MERGE_LAG_NS 2000000ull  /* events younger than this wait for the next pass */
#define FINALIZE_WAIT_NS 2000000000ull /* a finalize waits this long for its lines */

struct wrapper {
  uint8_t tag;
  uint64_t id;
  void *inner;
};

/* The part of the descriptor's union that tracefmt reads, for any event type. */
union trace_u {
  struct prof_coll_v4 coll;
  struct prof_p2p_v4 p2p;
  struct prof_kernel_ch kernel_ch;
  struct prof_group_api group_api;
  struct prof_coll_api coll_api;
  struct prof_p2p_api p2p_api;
  struct prof_proxy_op proxy_op;
  struct prof_proxy_step proxy_step;
  struct prof_ce_coll ce_coll;
  struct prof_ce_sync ce_sync;
  struct prof_ce_batch ce_batch;
};

enum { EV_INIT, EV_START, EV_STOP, EV_RECORD, EV_FINALIZE, EV_SKIP };

/* One callback: a cache line, the line a callback writes (three lines a callback made
 * NCCL's proxy thread slower than the GPU: docs/VALIDATION.md). A start whose line needs
 * the descriptor's union has it in the cells after (`ncells` in all); a kernel-channel
 * start, most of them, keeps its channel in `state` and its pTimer in `ptimer`; an init
 * its line's text, NUL-terminated (the name is not NCCL's constant). A cell owns no
 * memory: a backlog can be dropped without reading it (fork, below). */
struct trace_ev {
  uint64_t t;                       /* CLOCK_MONOTONIC ns */
  uint64_t id, parent_id, pgroup_id;
  uint64_t ptimer;                  /* a kernel channel's start or stop */
  uint32_t type;                    /* a start's PROF_EV_* */
  int32_t ctx, rank, state;
  uint8_t what;                     /* EV_* */
  uint8_t has_ptimer;
  uint16_t ncells;                  /* this cell and the union's; EV_SKIP: to the segment's end */
};
_Static_assert(sizeof(struct trace_ev) == 64, "one cache line");

/* A run of one thread's events. */
struct seg {
  _Alignas(64) struct trace_ev ev[SEG_CELLS];
  _Atomic(struct seg *) next;       /* the producer sets it before any cell beyond is committed */
  struct seg *free_next;            /* in the thread's free list */
};

/* One thread's events: it writes cells and `head` (cells committed so far), the trace
 * thread reads them, in the same order, through its own cursor. Invariants: a
 * segment's `next` is set before any cell beyond it is committed, so the reader, having
 * seen `head` pass a segment's end, finds `next` set; the reader hands a segment back
 * (to `free`) only after reading past it, and the writer had moved past it before. */
struct tbuf {
  /* the writer's */
  struct seg *wseg;                 /* the segment being filled */
  unsigned widx;                    /* its next cell */
  _Alignas(64) _Atomic uint64_t head;
  /* written segments back to the writer: the trace thread pushes, the writer pops (one
   * pusher and one popper: no ABA) */
  _Alignas(64) _Atomic(struct seg *) free;
  /* the reader's (the trace thread's) */
  _Alignas(64) struct seg *rseg;
  unsigned ridx;
  uint64_t tail;                    /* cells read */
  uint64_t ids;                     /* this thread's events so far (its ids' low bits) */
  uint32_t idx;                     /* this thread's number (its ids' high bits) */
  long tid;
  struct wrapper *chunk;            /* wrappers */
  unsigned chunk_used;
  struct tbuf *next;                /* every thread's, for the trace thread */
};

atomic_int g_ins_trace_on;
static atomic_int g_next_ctx;
static _Atomic(struct tbuf *) g_bufs;
static _Atomic uint32_t g_nbufs;
static _Atomic uint64_t g_nsegs;      /* segments made, every thread's */
static _Atomic uint64_t g_lines_lost; /* a buffer full, or the file failed */
/* initial-exec: read at a fixed offset from the thread pointer, not through
 * __tls_get_addr (a call on every traced callback, 15 of its ~230 instructions); the
 * 8 bytes fit in the static TLS glibc keeps spare for libraries loaded by dlopen. */
static __thread __attribute__((tls_model("initial-exec"))) struct tbuf *t_buf;
/* Trace mode's memory lock: the callbacks take it to list what they allocate (below,
 * keep), the trace thread to change g_inits; the fork's prepare takes it, so that the
 * child finds both whole. */
static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t g_thread;
static atomic_bool g_thread_running;
static atomic_bool g_stop;

/* The file and the trace thread's buffer: our own write(), not stdio, so that a failed
 * write is seen and the file cut back to its last whole line (a trace with a torn last
 * line does not load). After a failure nothing more is written; lines are counted. Owned
 * by the trace thread (after it stops: by the exiting thread). */
static int g_fd = -1;
static char *g_buf;
static size_t g_len;
static off_t g_off;
static bool g_failed;
static char g_path[PATH_MAX + 320];
static struct ins_files_dir g_dir; /* as first made: to make the file again if it is deleted */
static char g_stem[300];
static atomic_int g_warned, g_warned_gone;
/* The init lines of the contexts not yet finalized, so that a file made again after the
 * first was deleted starts with them (the replay needs a context's init before its
 * events). `written`: in a file already (the rest are in the buffer being written). */
struct init_line {
  int ctx;
  bool written, finalized; /* finalized: forgotten once its finalize line is written */
  char *line;
};
static struct init_line *g_inits;    /* changed under g_mem_lock */
static size_t g_ninits, g_inits_cap;
static uint64_t g_last_t; /* lines' t never go back */
/* The finalize events written to the file so far (a finalize waits for its own), and
 * those formatted (the trace thread's): published by flush_buf, once in the file. */
static _Atomic uint64_t g_finalized;
static uint64_t g_finalized_formatted;

/* Everything the callbacks' side allocates (each thread's buffer, its segments, its
 * wrapper chunks), listed for the unload to free (ins_trace_release): blocks of
 * pointers, newest first. A block, not one array grown by realloc: a forked child goes
 * on adding to the block it inherited (one page of it made its own), never copying the
 * parent's list. */
#define KEPT_PER_BLOCK 510
struct kept {
  struct kept *prev;
  size_t n;
  void *p[KEPT_PER_BLOCK];
};
static struct kept *g_kept; /* under g_mem_lock */

static bool keep(void *p) {
  pthread_mutex_lock(&g_mem_lock);
  if (!g_kept || g_kept->n == KEPT_PER_BLOCK) {
    struct kept *k = malloc(sizeof *k);
    if (!k) {
      pthread_mutex_unlock(&g_mem_lock);
      return false;
    }
    k->prev = g_kept, k->n = 0;
    g_kept = k;
  }
  g_kept->p[g_kept->n++] = p;
  pthread_mutex_unlock(&g_mem_lock);
  return true;
}

/* A new segment, within TRACE_MAX_BYTES (NULL: none). */
static struct seg *seg_new(void) {
  if ((atomic_fetch_add(&g_nsegs, 1) + 1) * sizeof(struct seg) > TRACE_MAX_BYTES) {
    atomic_fetch_sub(&g_nsegs, 1);
    return NULL;
  }
  struct seg *sg = aligned_alloc(64, sizeof *sg);
  if (!sg || !keep(sg)) {
    free(sg);
    atomic_fetch_sub(&g_nsegs, 1);
    return NULL;
  }
  atomic_init(&sg->next, NULL);
  return sg;
}

/* A segment the trace thread has written, back to its thread (NULL: none yet). */
static struct seg *seg_reuse(struct tbuf *b) {
  struct seg *h = atomic_load_explicit(&b->free, memory_order_acquire);
  while (h && !atomic_compare_exchange_weak_explicit(&b->free, &h, h->free_next,
                                                      memory_order_acquire, memory_order_acquire))
    ;
  if (h) atomic_store_explicit(&h->next, NULL, memory_order_relaxed);
  return h;
}

/* The calling thread's buffer, made at its first event (NULL without memory). */
static struct tbuf *my_buf(void) {
  struct tbuf *b = t_buf;
  if (__builtin_expect(b != NULL, 1)) return b;
  b = calloc(1, sizeof *b);
  struct seg *sg = b ? seg_new() : NULL;
  if (!sg || !keep(b)) {
    free(b);
    return NULL;
  }
  b->wseg = b->rseg = sg;
  b->tid = (long)syscall(SYS_gettid);
  b->idx = atomic_fetch_add(&g_nbufs, 1) + 1;
  struct tbuf *h = atomic_load(&g_bufs);
  do b->next = h;
  while (!atomic_compare_exchange_weak(&g_bufs, &h, b));
  t_buf = b;
  return b;
}

static struct wrapper *wrapper_new(struct tbuf *b) {
  if (!b->chunk || b->chunk_used == WRAP_CHUNK) {
    struct wrapper *c = malloc(WRAP_CHUNK * sizeof *c);
    if (!c || !keep(c)) {
      free(c);
      return NULL;
    }
    b->chunk = c, b->chunk_used = 0;
  }
  return &b->chunk[b->chunk_used++];
}

/* Whether h is a wrapper: aligned as one (a sampler's group token, or a handle the host
 * made up, need not be) and tagged. */
static bool is_wrapper(void *h) {
  return h && ((uintptr_t)h & (_Alignof(struct wrapper) - 1)) == 0 &&
         ((struct wrapper *)h)->tag == TAG_WRAPPER;
}

static uint64_t id_of(void *h) { return is_wrapper(h) ? ((struct wrapper *)h)->id : 0; }

void *ins_trace_unwrap(void *h) {
  /* else one of the tracker's handles (no memory for a wrapper) */
  return is_wrapper(h) ? ((struct wrapper *)h)->inner : h;
}

/* ---- the callbacks' side: take cells of the thread's buffer, fill them, commit ---- */

static void commit(struct tbuf *b, unsigned n) {
  b->widx += n;
  atomic_store_explicit(&b->head, atomic_load_explicit(&b->head, memory_order_relaxed) + n,
                        memory_order_release);
}

/* The segment is full (or has fewer than n cells left): close it with a skip and move to
 * the next one, the trace thread's written one or else a new one; with TRACE_MAX_BYTES in
 * use, wait for the trace thread (a trace with holes does not replay), as long as it runs,
 * and at most FULL_WAIT_NS. Out of line: the common path of take_cells stays short (its
 * registers spilled for this path cost 12 instructions a callback). False: the line is
 * lost (counted). */
static __attribute__((noinline, cold)) bool next_segment(struct tbuf *b) {
  if (b->widx < SEG_CELLS) { /* the rest of this segment: a skip */
    struct trace_ev *skip = &b->wseg->ev[b->widx];
    skip->what = EV_SKIP;
    skip->ncells = (uint16_t)(SEG_CELLS - b->widx);
    commit(b, skip->ncells);
  }
  struct seg *sg = seg_reuse(b);
  if (!sg) sg = seg_new();
  for (uint64_t t0 = 0; !sg; sg = seg_reuse(b)) {
    uint64_t now = ins_mono_ns();
    if (!t0) t0 = now;
    if (!g_thread_running || atomic_load(&g_stop) || now - t0 > FULL_WAIT_NS) {
      atomic_fetch_add_explicit(&g_lines_lost, 1, memory_order_relaxed);
      return false;
    }
    struct timespec ts = {0, FULL_NAP_NS};
    nanosleep(&ts, NULL);
  }
  /* before any cell of sg is committed (the release of commit() publishes it) */
  atomic_store_explicit(&b->wseg->next, sg, memory_order_relaxed);
  b->wseg = sg;
  b->widx = 0;
  return true;
}

/* n cells in a row (an event never straddles two segments), timed now. */
static inline struct trace_ev *take_cells(struct tbuf *b, unsigned n) {
  if (__builtin_expect(!b, 0)) {
    atomic_fetch_add_explicit(&g_lines_lost, 1, memory_order_relaxed);
    return NULL;
  }
  if (__builtin_expect(b->widx + n > SEG_CELLS, 0) && !next_segment(b)) return NULL;
  struct trace_ev *e = &b->wseg->ev[b->widx];
  /* a later callback's line, from wherever it is (the trace thread read it last) */
  if (b->widx + 2 < SEG_CELLS) __builtin_prefetch(e + 2, 1);
  e->t = ins_mono_ns();
  e->ncells = (uint16_t)n;
  e->has_ptimer = 0;
  return e;
}

static struct trace_ev *take_cell(struct tbuf *b) {
  return take_cells(b, 1);
}

/* How many bytes of the union tracefmt reads for an event type (a v4 descriptor's union
 * is shorter than a v6 one's: read no more than the type has). */
static size_t union_size(uint64_t type) {
  switch (type) {
    case PROF_EV_COLL: return sizeof(struct prof_coll_v4);
    case PROF_EV_P2P: return sizeof(struct prof_p2p_v4);
    case PROF_EV_KERNEL_CH: return sizeof(struct prof_kernel_ch);
    case PROF_EV_GROUP_API: return sizeof(struct prof_group_api);
    case PROF_EV_COLL_API: return sizeof(struct prof_coll_api);
    case PROF_EV_P2P_API: return sizeof(struct prof_p2p_api);
    case PROF_EV_PROXY_OP: return sizeof(struct prof_proxy_op);
    case PROF_EV_PROXY_STEP: return sizeof(struct prof_proxy_step);
    case PROF_EV_CE_COLL: return sizeof(struct prof_ce_coll);
    case PROF_EV_CE_SYNC: return sizeof(struct prof_ce_sync);
    case PROF_EV_CE_BATCH: return sizeof(struct prof_ce_batch);
    default: return 0;
  }
}

/* Cells a start of this type takes. */
static unsigned start_cells(uint64_t type) {
  size_t n = type == PROF_EV_KERNEL_CH ? 0 : union_size(type);
  return 1 + (unsigned)((n + sizeof(struct trace_ev) - 1) / sizeof(struct trace_ev));
}

void *ins_trace_start_begin(uint64_t type) {
  return take_cells(my_buf(), start_cells(type));
}

void *ins_trace_start(void *cell, int ctx, uint64_t type, void *parent, int rank,
                      const void *u, void *pgroup, void *inner) {
  struct tbuf *b = t_buf; /* made by start_begin, on this thread */
  struct wrapper *w = b ? wrapper_new(b) : NULL;
  uint64_t id = b ? (uint64_t)b->idx << 32 | ++b->ids : 0;
  if (w) *w = (struct wrapper){TAG_WRAPPER, id, inner};
  struct trace_ev *e = cell;
  if (e) {
    e->what = EV_START;
    e->ctx = ctx, e->id = id, e->type = (uint32_t)type, e->rank = rank;
    e->parent_id = id_of(parent), e->pgroup_id = id_of(pgroup);
    if (type == PROF_EV_KERNEL_CH) {
      const struct prof_kernel_ch *k = u;
      e->state = k ? k->channelId : 0;
      e->ptimer = k ? k->pTimer : 0;
    } else {
      size_t n = union_size(type);
      assert(e->ncells == start_cells(type));
      if (n && u) memcpy(e + 1, u, n);
      else if (n) memset(e + 1, 0, n);
    }
    commit(b, e->ncells);
  }
  return w ? (void *)w : inner;
}

void *ins_trace_stop(void *h) {
  struct tbuf *b = my_buf();
  struct trace_ev *e = take_cell(b);
  if (e) {
    e->what = EV_STOP;
    e->id = id_of(h);
    commit(b, 1);
  }
  return ins_trace_unwrap(h);
}

void *ins_trace_record(void *h, int state, const union prof_state_args *args) {
  struct tbuf *b = my_buf();
  struct trace_ev *e = take_cell(b);
  if (e) {
    e->what = EV_RECORD;
    e->id = id_of(h), e->state = state;
    e->has_ptimer = state == PROF_STATE_KERNEL_CH_STOP && args;
    e->ptimer = e->has_ptimer ? args->kernelCh.pTimer : 0;
    commit(b, 1);
  }
  return ins_trace_unwrap(h);
}

/* ---- the trace thread: format, write ------------------------------------------------ */

static uint64_t count_lines(const char *p, size_t n) {
  uint64_t k = 0;
  for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++) k++;
  return k;
}

/* write() all of p, n bytes, at the file's end: what was written (short on an error,
 * *err set). */
static size_t write_all(const char *p, size_t n, int *err) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(g_fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  return done;
}

/* The file was deleted (or its directory) while the job ran: make it again (same rules:
 * io/files.h) and start it with the init lines of the live contexts. 0, or -1 (the
 * trace then ends, as on a failed write). */
static int reopen(void) {
  bool renamed = false;
  close(g_fd);
  g_fd = ins_files_create(&g_dir, g_stem, ".trace.jsonl", g_path, sizeof g_path, &renamed);
  g_off = 0;
  if (g_fd < 0) return -1;
  if (!ins_warn_once(&g_warned_gone, "trace mode: the trace file was deleted while the job ran: "
                     "the trace goes on in %s (starting with the live communicators' init lines)",
                     g_path))
    ins_info("trace mode: the trace file was deleted again: the trace goes on in %s", g_path);
  for (size_t i = 0; i < g_ninits; i++) {
    if (!g_inits[i].written) continue; /* in the buffer rewritten next */
    size_t n = strlen(g_inits[i].line);
    int err = 0;
    char nl = '\n';
    if (write_all(g_inits[i].line, n, &err) != n || write_all(&nl, 1, &err) != 1) return -1;
    g_off += (off_t)n + 1;
  }
  return 0;
}

/* Write the buffer out. */
static void flush_buf(void) {
  int err = 0;
  size_t done = g_failed ? 0 : write_all(g_buf, g_len, &err);
  /* Deleted before or while this was written: it reached no one. Again, to a new file. */
  bool lost_file = false;
  if (!g_failed && done == g_len && g_len && ins_files_gone(g_fd, g_path)) {
    if (reopen() == 0) done = write_all(g_buf, g_len, &err);
    else err = errno, done = 0, lost_file = g_fd < 0;
  }
  if (!g_failed && done < g_len) {
    const char *nl = done ? memrchr(g_buf, '\n', done) : NULL;
    done = nl ? (size_t)(nl - g_buf) + 1 : 0;
    if (g_fd >= 0) (void)!ftruncate(g_fd, g_off + (off_t)done); /* no torn last line */
    g_failed = true;
  }
  g_off += (off_t)done;
  if (done < g_len) {
    atomic_fetch_add(&g_lines_lost, count_lines(g_buf + done, g_len - done));
    char why[INS_FILES_WHY_MAX];
    if (lost_file) /* the directory could not be made again, or is refused (io/files.h) */
      ins_notice(&g_warned, NULL, "trace mode: the trace file %s was deleted while the job ran "
                 "and cannot be made again: %s; the trace ends there and later callbacks are not "
                 "written (counted)", g_path, ins_files_why(&g_dir, err, why, sizeof why));
    else if (err)
      ins_notice(&g_warned, NULL, "trace mode: writing %s failed: %s; the trace ends there and "
                 "later callbacks are not written", g_path, strerror(err));
  }
  g_len = 0;
  if (g_ninits) {
    pthread_mutex_lock(&g_mem_lock);
    for (size_t i = 0; i < g_ninits;) {
      if (g_inits[i].finalized) { /* its finalize line too is in the file */
        free(g_inits[i].line);
        g_inits[i] = g_inits[--g_ninits];
        continue;
      }
      g_inits[i++].written = true;
    }
    pthread_mutex_unlock(&g_mem_lock);
  }
  atomic_store_explicit(&g_finalized, g_finalized_formatted, memory_order_release);
}

/* One line into the buffer: prefix, body, closing brace. */
static void put_line(uint64_t t, long tid, const char *body) {
  if (g_failed) {
    atomic_fetch_add(&g_lines_lost, 1);
    return;
  }
  if (t < g_last_t) t = g_last_t;
  g_last_t = t;
  char pre[64];
  int np = ins_tracefmt_prefix_at(pre, sizeof pre, t, tid);
  if (np < 0 || (size_t)np >= sizeof pre) np = 0;
  size_t nb = strlen(body), need = (size_t)np + nb + 2;
  if (g_len + need > TRACE_BUF) flush_buf();
  if (g_failed || need > TRACE_BUF) {
    atomic_fetch_add(&g_lines_lost, 1);
    return;
  }
  memcpy(g_buf + g_len, pre, (size_t)np);
  memcpy(g_buf + g_len + np, body, nb);
  memcpy(g_buf + g_len + np + nb, "}\n", 2);
  g_len += need;
}

/* ---- the common lines, formatted by hand: snprintf made the trace thread the
 * bottleneck (630 ns a line: 1.6 M lines/s, against bursts of several million
 * callbacks a second from NCCL's proxy threads); these take about a tenth of that ---- */

static char *put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10));
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

#define PUT_LIT(p, s) (memcpy((p), "" s "", sizeof(s) - 1), (p) + sizeof(s) - 1)

/* stop, record and kernel-channel start lines (the others go through tracefmt), exactly
 * as tracefmt writes them: false for any other event */
static bool fast_line(const struct trace_ev *e, long tid, uint64_t t) {
  if (!(e->what == EV_STOP || e->what == EV_RECORD ||
        (e->what == EV_START && e->type == PROF_EV_KERNEL_CH)))
    return false;
  if (g_len + 256 > TRACE_BUF) flush_buf();
  if (g_failed) {
    atomic_fetch_add(&g_lines_lost, 1);
    return true;
  }
  char *p = g_buf + g_len;
  p = PUT_LIT(p, "{\"t\":");
  p = put_u64(p, t);
  p = PUT_LIT(p, ",\"tid\":");
  p = put_i64(p, tid);
  if (e->what == EV_STOP) {
    p = PUT_LIT(p, ",\"cb\":\"stop\",\"id\":");
    p = put_u64(p, e->id);
  } else if (e->what == EV_RECORD) {
    p = PUT_LIT(p, ",\"cb\":\"record\",\"id\":");
    p = put_u64(p, e->id);
    p = PUT_LIT(p, ",\"state\":");
    p = put_i64(p, e->state);
    if (e->has_ptimer) {
      p = PUT_LIT(p, ",\"ptimer\":");
      p = put_u64(p, e->ptimer);
    }
  } else {
    p = PUT_LIT(p, ",\"cb\":\"start\",\"ctx\":");
    p = put_i64(p, e->ctx);
    p = PUT_LIT(p, ",\"id\":");
    p = put_u64(p, e->id);
    p = PUT_LIT(p, ",\"type\":64,\"parent\":");
    p = put_u64(p, e->parent_id);
    p = PUT_LIT(p, ",\"rank\":");
    p = put_i64(p, e->rank);
    p = PUT_LIT(p, ",\"ch\":");
    p = put_u64(p, (uint64_t)(uint32_t)e->state);
    p = PUT_LIT(p, ",\"ptimer\":");
    p = put_u64(p, e->ptimer);
  }
  p = PUT_LIT(p, "}\n");
  g_len = (size_t)(p - g_buf);
  return true;
}

/* A context's init line, as written (prefix included), kept until its finalize. Without
 * memory the line is not kept: a file made again lacks it. */
static void remember_init(int ctx, long tid, const char *body) {
  char pre[64];
  int np = ins_tracefmt_prefix_at(pre, sizeof pre, g_last_t, tid);
  char *line = NULL;
  if (np > 0 && (size_t)np < sizeof pre && (line = malloc((size_t)np + strlen(body) + 2)))
    sprintf(line, "%s%s}", pre, body);
  if (!line) return;
  pthread_mutex_lock(&g_mem_lock);
  if (g_ninits == g_inits_cap) {
    size_t cap = g_inits_cap ? 2 * g_inits_cap : 16;
    struct init_line *q = realloc(g_inits, cap * sizeof *q);
    if (!q) {
      pthread_mutex_unlock(&g_mem_lock);
      free(line);
      return;
    }
    g_inits = q, g_inits_cap = cap;
  }
  g_inits[g_ninits++] = (struct init_line){ctx, false, false, line};
  pthread_mutex_unlock(&g_mem_lock);
}

static void forget_init(int ctx) {
  for (size_t i = 0; i < g_ninits; i++)
    if (g_inits[i].ctx == ctx) g_inits[i].finalized = true;
}

static void format_ev(const struct trace_ev *e, long tid) {
  uint64_t t = e->t < g_last_t ? g_last_t : e->t;
  g_last_t = t;
  if (fast_line(e, tid, t)) return; /* every stop, record and kernel-channel start */
  char body[2048];
  switch (e->what) {
    case EV_INIT: /* its text in the cells after e */
      put_line(e->t, tid, (const char *)(e + 1));
      remember_init(e->ctx, tid, (const char *)(e + 1));
      return;
    case EV_START:
      /* the union in the cells after e (a kernel-channel start never comes here) */
      if (ins_tracefmt_start(body, sizeof body, e->ctx, e->id, e->type, e->parent_id, e->rank,
                             (const union trace_u *)(e + 1), e->pgroup_id) < 0)
        body[0] = 0;
      break;
    case EV_FINALIZE:
      snprintf(body, sizeof body, "\"cb\":\"finalize\",\"ctx\":%d", e->ctx);
      forget_init(e->ctx);
      break;
    default:
      return;
  }
  put_line(e->t, tid, body);
  if (e->what == EV_FINALIZE) g_finalized_formatted++;
}

/* Past a thread's next event (the trace thread's). */
static void advance(struct tbuf *b, unsigned n) {
  b->ridx += n, b->tail += n;
}

/* A thread's next event to write (NULL: none yet). The trace thread's. */
static const struct trace_ev *peek(struct tbuf *b) {
  for (;;) {
    if (b->tail == atomic_load_explicit(&b->head, memory_order_acquire)) return NULL;
    if (b->ridx == SEG_CELLS) { /* read to its end: on to the next, this one back */
      struct seg *done = b->rseg;
      b->rseg = atomic_load_explicit(&done->next, memory_order_relaxed);
      assert(b->rseg != NULL); /* set before a cell beyond was committed */
      b->ridx = 0;
      done->free_next = atomic_load_explicit(&b->free, memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(&b->free, &done->free_next, done,
                                                    memory_order_release, memory_order_relaxed))
        ;
    }
    const struct trace_ev *e = &b->rseg->ev[b->ridx];
    if (e->what != EV_SKIP) return e;
    advance(b, e->ncells);
  }
}

/* The oldest event not yet written, among every thread's, if it is older than `before`:
 * its buffer (NULL: none). */
static struct tbuf *oldest(uint64_t before) {
  struct tbuf *best = NULL;
  uint64_t best_t = before;
  for (struct tbuf *b = atomic_load(&g_bufs); b; b = b->next) {
    const struct trace_ev *e = peek(b);
    if (e && e->t < best_t) {
      best = b;
      best_t = e->t;
    }
  }
  return best;
}

/* Write every event older than `before`, merged in time order; true if there was one. */
static bool drain(uint64_t before) {
  bool any = false;
  struct tbuf *b;
  while ((b = oldest(before))) {
    const struct trace_ev *e = peek(b);
    format_ev(e, b->tid);
    advance(b, e->ncells);
    any = true;
  }
  return any;
}

static void *trace_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    uint64_t now = ins_mono_ns();
    if (drain(now > MERGE_LAG_NS ? now - MERGE_LAG_NS : 0)) continue;
    flush_buf(); /* nothing old enough: what is formatted goes to the file */
    struct timespec ts = {0, IDLE_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

void ins_trace_open(const char *dir, const char *hostname) {
  free(g_buf); /* a forked child's second open: the parent's, not written here */
  g_buf = NULL;
  char stem[300];
  snprintf(stem, sizeof stem, "%s-pid%ld", hostname, (long)getpid());
  ins_files_dir_set(&g_dir, dir); /* a forked child's: the parent's, as it was first made */
  snprintf(g_stem, sizeof g_stem, "%s", stem);
  bool renamed = false;
  g_buf = malloc(TRACE_BUF);
  if (g_buf)
    g_fd = ins_files_create(&g_dir, stem, ".trace.jsonl", g_path, sizeof g_path, &renamed);
  else
    errno = ENOMEM;
  if (g_fd < 0) {
    char why[INS_FILES_WHY_MAX];
    ins_notice(NULL, NULL, "NCCL_INSPECTOR_TRACE_DIR: cannot create a trace file in '%s': %s; trace "
               "mode off", dir, ins_files_why(&g_dir, errno, why, sizeof why));
    free(g_buf);
    g_buf = NULL;
    return;
  }
  if (renamed)
    ins_warn("'%s/%s.trace.jsonl' already exists (an earlier process with this pid, or a link "
             "planted there): it is left alone, and the trace goes to %s", dir, stem, g_path);
  if (pthread_create(&g_thread, NULL, trace_thread, NULL) != 0) {
    ins_notice(NULL, NULL, "trace mode: cannot start the trace thread; trace mode off");
    close(g_fd);
    g_fd = -1;
    return;
  }
  g_thread_running = true;
  ins_info("trace mode: writing every callback to %s (by a thread of its own; a callback "
           "costs some tens of ns more)", g_path);
  atomic_store(&g_ins_trace_on, 1);
}

int ins_trace_init(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                   int mask, int abi_version) {
  int ctx = atomic_fetch_add(&g_next_ctx, 1) + 1;
  char clean[256]; /* as a JSON string's content (any bytes NCCL gave) */
  ins_tracefmt_str(clean, sizeof clean, name);
  char body[640];
  snprintf(body, sizeof body, "\"cb\":\"init\",\"ver\":%d,\"ctx\":%d,\"comm\":\"0x%" PRIx64
           "\",\"name\":\"%s\",\"nnodes\":%d,\"nranks\":%d,\"rank\":%d,\"mask\":%d",
           abi_version, ctx, comm_id, clean, nnodes, nranks, rank, mask);
  size_t n = strlen(body) + 1;
  struct tbuf *b = my_buf();
  struct trace_ev *e = take_cells(b, 1 + (unsigned)((n + sizeof *e - 1) / sizeof *e));
  if (e) {
    e->what = EV_INIT;
    e->ctx = ctx;
    memcpy(e + 1, body, n);
    commit(b, e->ncells);
  }
  return ctx;
}

void ins_trace_finalize(int ctx) {
  struct tbuf *b = my_buf();
  struct trace_ev *e = take_cell(b);
  if (!e) return;
  e->what = EV_FINALIZE;
  e->ctx = ctx;
  uint64_t before = atomic_load_explicit(&g_finalized, memory_order_acquire);
  commit(b, 1);
  if (!atomic_load(&g_thread_running)) return; /* a forked child's inherited one: no thread */
  /* Its lines are in the file when the finalize returns (a process may end without
   * exiting normally after it): wait for the thread, a bounded time. Finalizes that
   * run at once may see each other's line written instead: as good. */
  uint64_t t0 = ins_mono_ns();
  while (atomic_load_explicit(&g_finalized, memory_order_acquire) == before &&
         ins_mono_ns() - t0 < FINALIZE_WAIT_NS) {
    struct timespec ts = {0, IDLE_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
}

void ins_trace_flush(void) {
  /* no file: trace mode never started, or its file could not be made again (the thread
   * runs on, counting the lines it cannot write: stopped here, and they are said) */
  if (g_fd < 0 && !g_thread_running) return;
  if (g_thread_running) {
    atomic_store(&g_stop, true);
    pthread_join(g_thread, NULL);
    g_thread_running = false;
  }
  drain(UINT64_MAX); /* everything left, whatever its age */
  flush_buf();
  uint64_t lost = atomic_load(&g_lines_lost);
  if (lost)
    ins_notice(NULL, NULL, "trace mode: %llu callback lines could not be written to %s (the threads "
               "were %llu MiB of callbacks ahead of the trace thread, or see the earlier warning): "
               "the trace is incomplete", (unsigned long long)lost, g_path, TRACE_MAX_BYTES >> 20);
}

/* ---- unload ------------------------------------------------------------------------ */

void ins_trace_release(void) {
  if (atomic_load(&g_thread_running)) return; /* not flushed (cannot be: see trace.h) */
  atomic_store(&g_ins_trace_on, 0);
  pthread_mutex_lock(&g_mem_lock);
  for (struct kept *k = g_kept, *prev; k; k = prev) {
    for (size_t i = 0; i < k->n; i++) free(k->p[i]);
    prev = k->prev;
    free(k);
  }
  g_kept = NULL;
  for (size_t i = 0; i < g_ninits; i++) free(g_inits[i].line);
  free(g_inits);
  g_inits = NULL, g_ninits = g_inits_cap = 0;
  pthread_mutex_unlock(&g_mem_lock);
  atomic_store(&g_bufs, NULL);
  atomic_store(&g_nsegs, 0);
  /* This thread's pointer to its freed buffer; every other thread's is set to NULL by the
   * next dlopen of this library, which initialises its static TLS block in every live
   * thread (glibc: _dl_init_static_tls), and is never read before (no communicator, no
   * callback). At exit the library stays mapped and no callback comes either. */
  t_buf = NULL;
  free(g_buf);
  g_buf = NULL, g_len = 0;
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
}

/* ---- fork() (abi/lifecycle.c's handlers) ------------------------------------------ */

/*
 * The callbacks take g_mem_lock (briefly, for memory), and the trace thread (to change
 * g_inits): the prepare takes it so that the child inherits neither held nor mid-change.
 * The child has no trace thread; what the parent's threads had not yet written is the
 * parent's, and is never written here.
 *
 * The child's handler does the same few stores whatever that backlog (up to
 * TRACE_MAX_BYTES): it forgets the parent's buffers (the list, and the forking thread's
 * own pointer) without reading them, so that a child that only execs costs nothing more
 * than the fork. Walking them, as the first version did to skip the cells, read the
 * whole backlog and wrote into every segment it passed: up to 1 GiB and a page a
 * segment made the child's own, for 15 s in the worst fork measured, where the fork
 * promises 1 s. The parent's memory is abandoned in the child, not freed, even lazily
 * at its first communicator: pages the child never touches cost it nothing (copy on
 * write), whereas freeing them touches each block's header, and NCCL may still name a
 * wrapper of an inherited communicator's event in the child (stop and record read it).
 * It all stays listed (g_kept: the child adds to the same list), so the child's unload
 * frees it with its own, and a leak checker finds it reachable. Only the parent's init
 * lines (a few, one per live communicator) are freed, at the child's first communicator
 * (ins_trace_fork_restart): a file of the child's made again starts with its own.
 * If the prepare could not take the lock, the list and the lines may be mid-change:
 * the child starts both afresh and leaves the parent's alone.
 */
static _Thread_local bool t_fork_locked;
static bool g_fork_restart;

void ins_trace_fork_prepare(const struct timespec *until) {
  t_fork_locked = pthread_mutex_timedlock(&g_mem_lock, until) == 0;
}

void ins_trace_fork_parent(void) {
  if (t_fork_locked) pthread_mutex_unlock(&g_mem_lock);
}

void ins_trace_fork_child(void) {
  pthread_mutex_init(&g_mem_lock, NULL);
  if (!t_fork_locked) {
    g_kept = NULL;
    g_inits = NULL, g_ninits = g_inits_cap = 0;
  }
  /* the parent's buffers: forgotten, not read (the other threads' pointers are not in
   * the child: only this one is) */
  t_buf = NULL;
  atomic_store(&g_bufs, NULL);
  atomic_store(&g_nsegs, 0);       /* the child's own count against TRACE_MAX_BYTES */
  atomic_store(&g_lines_lost, 0);  /* the parent's */
  atomic_store(&g_thread_running, false);
  if (g_fd >= 0) close(g_fd); /* the child's copy; the file stays the parent's */
  g_fd = -1;
  g_len = 0; /* formatted for the parent's file */
  g_off = 0;
  g_failed = false;
  g_fork_restart = ins_tracing();
}

void ins_trace_fork_restart(const char *dir, const char *hostname) {
  if (!g_fork_restart) return;
  g_fork_restart = false;
  for (size_t i = 0; i < g_ninits; i++) free(g_inits[i].line); /* the parent's contexts */
  g_ninits = 0;
  atomic_store(&g_stop, false);
  ins_trace_open(dir, hostname); /* <host>-pid<child>.trace.jsonl, and a thread */
}
