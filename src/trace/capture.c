/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture.c - trace mode's callbacks' side (see trace.h, internal.h): each thread's buffer
 * of events, the wrappers NCCL is given, and the reader's cursor over the buffers.
 *
 * A callback copies what its line needs (the descriptor's union: NCCL's strings are
 * constants, kept by pointer) into its own thread's buffer, a single-producer queue, and
 * timestamps it; the trace thread (trace.c) reads the buffers in time order and hands the
 * events to the writer (writer.c). A callback touches no cache line another thread writes
 * (the ids and wrappers are per thread too), and takes a lock or allocates only when its
 * thread needs a new wrapper chunk (every 4096 starts) or segment (every 16384 cells, only
 * while the buffer grows: a steady job reuses its segments). The first version took a
 * process-wide mutex and formatted each line in the callback; the second shared one ring
 * between threads: both slowed NCCL's proxy thread enough, at 192 callbacks per 4 MiB
 * AllReduce on 64 channels, that it fell 64 works behind the GPU and NCCL handed most ops
 * another op's timestamps (docs/VALIDATION.md).
 *
 * Bursts: NCCL's proxy threads make several million callbacks a second while a GPU runs
 * small ops back to back, more than one thread can format. A thread's buffer is a chain
 * of segments that grows while the trace thread is behind (the segments it has written
 * come back to the same thread, so a steady job reuses them), up to INS_TRACE_MAX_BYTES
 * for the process. Only past that does a callback wait for the trace thread (a trace with
 * holes does not replay): trace mode holds the job then, and only then; after
 * FULL_WAIT_NS it loses the line instead, counted and reported at exit. A fixed ring of
 * 64 K callbacks a thread made NCCL's proxy wait in 1 MiB AllReduce bursts, fall 64
 * works behind the GPU, and hand its ops other ops' timestamps (docs/VALIDATION.md).
 *
 * Handles: NCCL is given a wrapper per event (its id in the trace, and the tracker's
 * handle), kept while any communicator lives, since NCCL may name any event as a parent
 * later. Wrappers come from chunks owned by the calling thread.
 *
 * Everything here is allocated by the callbacks' threads and listed as it is made
 * (keep), for the unload to free (ins_trace_capture_release). A thread's pointer to its
 * buffer is thread-local, and glibc sets it anew in every live thread at the next load.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "trace/internal.h"
#include "trace/trace.h"

#define TAG_WRAPPER 0xA3
#define SEG_CELLS 16384          /* 64-byte cells in one segment of a thread's buffer (1 MiB) */
#define FULL_NAP_NS 20000        /* a thread that finds none left waits in naps of this */
#define FULL_WAIT_NS 1000000000ull /* and at most this long, then loses the line */
#define WRAP_CHUNK 4096          /* wrappers a thread takes at a time */

struct wrapper {
  uint8_t tag;
  uint64_t id;
  void *inner;
};

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
struct trace_tbuf {
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
  struct trace_tbuf *next;          /* every thread's, for the trace thread */
};

static _Atomic(struct trace_tbuf *) g_bufs;
static _Atomic uint32_t g_nbufs;
static _Atomic uint64_t g_nsegs;      /* segments made, every thread's */
/* initial-exec: read at a fixed offset from the thread pointer, not through
 * __tls_get_addr (a call on every traced callback, 15 of its ~230 instructions); the
 * 8 bytes fit in the static TLS glibc keeps spare for libraries loaded by dlopen. */
static __thread __attribute__((tls_model("initial-exec"))) struct trace_tbuf *t_buf;

/* Everything the callbacks' side allocates (each thread's buffer, its segments, its
 * wrapper chunks), listed for the unload to free (ins_trace_capture_release): blocks of
 * pointers, newest first. A block, not one array grown by realloc: a forked child goes
 * on adding to the block it inherited (one page of it made its own), never copying the
 * parent's list. */
#define KEPT_PER_BLOCK 510
struct kept {
  struct kept *prev;
  size_t n;
  void *p[KEPT_PER_BLOCK];
};
static struct kept *g_kept; /* under ins_trace_mem_lock */

static bool keep(void *p) {
  pthread_mutex_lock(&ins_trace_mem_lock);
  if (!g_kept || g_kept->n == KEPT_PER_BLOCK) {
    struct kept *k = malloc(sizeof *k);
    if (!k) {
      pthread_mutex_unlock(&ins_trace_mem_lock);
      return false;
    }
    k->prev = g_kept, k->n = 0;
    g_kept = k;
  }
  g_kept->p[g_kept->n++] = p;
  pthread_mutex_unlock(&ins_trace_mem_lock);
  return true;
}

/* A new segment, within INS_TRACE_MAX_BYTES (NULL: none). */
static struct seg *seg_new(void) {
  if ((atomic_fetch_add(&g_nsegs, 1) + 1) * sizeof(struct seg) > INS_TRACE_MAX_BYTES) {
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
static struct seg *seg_reuse(struct trace_tbuf *b) {
  struct seg *h = atomic_load_explicit(&b->free, memory_order_acquire);
  while (h && !atomic_compare_exchange_weak_explicit(&b->free, &h, h->free_next,
                                                      memory_order_acquire, memory_order_acquire))
    ;
  if (h) atomic_store_explicit(&h->next, NULL, memory_order_relaxed);
  return h;
}

/* The calling thread's buffer, made at its first event (NULL without memory). */
static struct trace_tbuf *my_buf(void) {
  struct trace_tbuf *b = t_buf;
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
  struct trace_tbuf *h = atomic_load(&g_bufs);
  do b->next = h;
  while (!atomic_compare_exchange_weak(&g_bufs, &h, b));
  t_buf = b;
  return b;
}

static struct wrapper *wrapper_new(struct trace_tbuf *b) {
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

static void commit(struct trace_tbuf *b, unsigned n) {
  b->widx += n;
  atomic_store_explicit(&b->head, atomic_load_explicit(&b->head, memory_order_relaxed) + n,
                        memory_order_release);
}

/* The segment is full (or has fewer than n cells left): close it with a skip and move to
 * the next one, the trace thread's written one or else a new one; with INS_TRACE_MAX_BYTES in
 * use, wait for the trace thread (a trace with holes does not replay), as long as it runs,
 * and at most FULL_WAIT_NS. Out of line: the common path of take_cells stays short (its
 * registers spilled for this path cost 12 instructions a callback). False: the line is
 * lost (counted). */
static __attribute__((noinline, cold)) bool next_segment(struct trace_tbuf *b) {
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
    if (!ins_trace_thread_running || atomic_load(&ins_trace_stopping) || now - t0 > FULL_WAIT_NS) {
      atomic_fetch_add_explicit(&ins_trace_lines_lost, 1, memory_order_relaxed);
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
static inline struct trace_ev *take_cells(struct trace_tbuf *b, unsigned n) {
  if (__builtin_expect(!b, 0)) {
    atomic_fetch_add_explicit(&ins_trace_lines_lost, 1, memory_order_relaxed);
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

static struct trace_ev *take_cell(struct trace_tbuf *b) {
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
  struct trace_tbuf *b = t_buf; /* made by start_begin, on this thread */
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
  struct trace_tbuf *b = my_buf();
  struct trace_ev *e = take_cell(b);
  if (e) {
    e->what = EV_STOP;
    e->id = id_of(h);
    commit(b, 1);
  }
  return ins_trace_unwrap(h);
}

void *ins_trace_record(void *h, int state, const union prof_state_args *args) {
  struct trace_tbuf *b = my_buf();
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

/* ---- the process's events (trace.c): an init's text, a finalize ---- */

struct trace_ev *ins_trace_take(unsigned n) {
  return take_cells(my_buf(), n);
}

void ins_trace_commit(struct trace_ev *e) {
  commit(t_buf, e->ncells); /* took from this thread's buffer */
}

/* ---- the reader's side: the trace thread's (or, once it is joined, the exiting thread's) ---- */

/* Past a thread's next event. */
static void advance(struct trace_tbuf *b, unsigned n) {
  b->ridx += n, b->tail += n;
}

/* A thread's next event to write (NULL: none yet). */
static const struct trace_ev *peek(struct trace_tbuf *b) {
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

const struct trace_ev *ins_trace_oldest(uint64_t before, struct trace_tbuf **b, long *tid) {
  struct trace_tbuf *best = NULL;
  const struct trace_ev *best_e = NULL;
  uint64_t best_t = before;
  for (struct trace_tbuf *x = atomic_load(&g_bufs); x; x = x->next) {
    const struct trace_ev *e = peek(x);
    if (e && e->t < best_t) {
      best = x, best_e = e;
      best_t = e->t;
    }
  }
  if (best) *b = best, *tid = best->tid;
  return best_e;
}

void ins_trace_consumed(struct trace_tbuf *b, const struct trace_ev *e) {
  advance(b, e->ncells);
}

/* ---- unload, fork() (trace.c says when and why) ---- */

void ins_trace_capture_release(void) {
  pthread_mutex_lock(&ins_trace_mem_lock);
  for (struct kept *k = g_kept, *prev; k; k = prev) {
    for (size_t i = 0; i < k->n; i++) free(k->p[i]);
    prev = k->prev;
    free(k);
  }
  g_kept = NULL;
  pthread_mutex_unlock(&ins_trace_mem_lock);
  atomic_store(&g_bufs, NULL);
  atomic_store(&g_nsegs, 0);
  /* This thread's pointer to its freed buffer; every other thread's is set to NULL by the
   * next dlopen of this library, which initialises its static TLS block in every live
   * thread (glibc: _dl_init_static_tls), and is never read before (no communicator, no
   * callback). At exit the library stays mapped and no callback comes either. */
  t_buf = NULL;
}

void ins_trace_capture_fork_child(bool whole) {
  if (!whole) g_kept = NULL;
  /* the parent's buffers: forgotten, not read (the other threads' pointers are not in
   * the child: only this one is) */
  t_buf = NULL;
  atomic_store(&g_bufs, NULL);
  atomic_store(&g_nsegs, 0); /* the child's own count against INS_TRACE_MAX_BYTES */
}
