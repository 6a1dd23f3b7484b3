/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c - the replay engine (see replay.h).
 *
 * Delivery rules (docs/CONTRACTS.md section 1), per start line:
 *  - its ctx must have been initialised with init returning 0 (NCCL drops a
 *    communicator's profiling when init fails), and the driven ABI must
 *    have its type;
 *  - Group, GroupApi, CollApi, P2pApi are always delivered;
 *  - a kernel or proxy event (KernelCh, ProxyOp, ProxyStep, NetPlugin) needs
 *    its parent delivered and its bit in the parent's tag: the mask NCCL
 *    tagged the op with at its group start (kernel events come from NCCL's
 *    progress thread, which never starts a group itself);
 *  - any other type needs its bit in the mask read at the last group start on
 *    its thread (GroupApi start, or Group start when the driven ABI or the
 *    trace has no API events); a thread that has seen no group start reads
 *    the live mask, as NCCL's proxy thread does for ProxyCtrl.
 * Stop and record go only to events whose start was delivered and got a
 * non-NULL handle (NCCL never calls them with NULL). Finalize goes only to
 * contexts whose init succeeded and set a non-NULL context.
 */
#include "replay.h"

#include "log.h"
#include "vclock.h"
#include "../common/xalloc.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/*
 * The mask NCCL keeps for the whole process. The plugin gets a plain int*
 * (that is the ABI) and may write it with a plain store; the replay reads it
 * atomically, like NCCL. _Atomic int has int's layout on every target we
 * build for, which the assertion checks.
 */
static _Atomic int g_mask;
static_assert(sizeof(_Atomic int) == sizeof(int) && alignof(_Atomic int) == alignof(int),
              "the activation mask is handed out as int*");

int *rp_activation_mask(void) { return (int *)&g_mask; }

static long long g_pace_ns; /* set once from the command line, before any replay */
void rp_set_pace_us(double us) { g_pace_ns = (long long)(us * 1000.0); }
static bool g_no_finalize; /* set once from the command line */
void rp_set_no_finalize(bool skip) { g_no_finalize = skip; }

static void pace(void) {
  struct timespec ts = {g_pace_ns / 1000000000LL, g_pace_ns % 1000000000LL};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static bool g_pace_recorded; /* set once from the command line */
void rp_set_pace_recorded(bool on) { g_pace_recorded = on; }

static uint64_t now_ns(void) { return rp_real_mono_ns(); } /* never the recorded clock */

/*
 * --pace-recorded: sleep until CLOCK_MONOTONIC reaches `when` (ns). An absolute
 * deadline, so the sleeps' overshoots do not add up over a trace; a line
 * already due costs one vDSO clock read and no system call. The threads that
 * pace ask for a 1 us timer slack (pace_slack) instead of Linux's default
 * 50 us, so that host progress between two lines is the recorded one to a few
 * us: what a plugin comparing host and GPU clocks measures.
 */
static void pace_until(uint64_t when) {
  if (now_ns() >= when) return;
  struct timespec ts = {(time_t)(when / 1000000000ULL), (long)(when % 1000000000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static void pace_slack(void) {
  if (g_pace_recorded) prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); /* best effort */
}

static FILE *g_mask_log; /* --mask-log, or NULL */

int rp_set_mask_log(const char *path) {
  g_mask_log = fopen(path, "w");
  return g_mask_log ? 0 : -1;
}

int rp_close_mask_log(void) {
  if (!g_mask_log) return 0;
  int bad = ferror(g_mask_log);
  bad |= fclose(g_mask_log);
  g_mask_log = NULL;
  return bad ? -1 : 0;
}

/* One line per judged Coll/P2p start; stdio locks the stream per call, so
 * lines of concurrent replay threads do not interleave. */
static long long realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* rt: when the mask it was judged with was read (the group start). */
static void log_mask(const struct rp_trace *t, const struct rp_event *e, uint32_t tag, bool deliver,
                     long long rt) {
  fprintf(g_mask_log, "%zu %u %d %lld %s\n", (size_t)(e - t->ev), tag, deliver ? 1 : 0, rt, t->path);
}

static int mask_now(void) { return atomic_load_explicit(&g_mask, memory_order_relaxed); }

#define ALWAYS_TYPES (RP_EV_GROUP | RP_EV_GROUP_API | RP_EV_COLL_API | RP_EV_P2P_API)
#define CHILD_TYPES (RP_EV_KERNEL_CH | RP_EV_PROXY_OP | RP_EV_PROXY_STEP | RP_EV_NET_PLUGIN)

struct ctx_rt {
  void *context;
  bool live; /* init returned 0 */
};

/* Per recorded thread; cache-line aligned so progress counters do not share lines. */
struct thr {
  alignas(64) _Atomic uint32_t progress; /* lines of this thread processed (--threads) */
  int snap;                              /* mask read at this thread's last group start */
  bool has_snap;
  long long snap_rt;                     /* --mask-log: CLOCK_REALTIME of that read */
  uint32_t index;
  struct rp_engine *run;
  struct rp_counts c;
  pthread_t pt;
};

struct rp_engine {
  const struct rp_trace *t; /* the chunk being replayed */
  const struct rp_abi *abi;
  bool threads;
  uint32_t snap_type; /* the start that re-reads the mask: GroupApi or Group */
  void **handle;      /* per slot of the chunk; [0] stays NULL */
  uint32_t *tag;      /* per slot: the mask its start was judged with */
  uint8_t *delivered; /* per slot */
  uint32_t slotcap;
  struct ctx_rt *ctx; /* per ctx; outlives chunks */
  uint32_t ctxcap;
  struct thr *thr;    /* per recorded thread; outlives chunks */
  uint32_t thrcap;
  uint64_t elapsed_ns;
  uint64_t run_start_ns; /* CLOCK_MONOTONIC at the start of this run (--pace-recorded) */
};

static void do_start(struct rp_engine *r, struct thr *th, const struct rp_event *e) {
  const struct rp_abi *abi = r->abi;
  if (e->ctx == RP_NO_CTX || !r->ctx[e->ctx].live || !rp_abi_has_type(abi->ver, e->type)) {
    th->c.skipped++;
    return;
  }
  uint32_t type = e->type;
  if (type == r->snap_type) {
    th->snap = mask_now();
    th->has_snap = true;
    if (g_mask_log) th->snap_rt = realtime_ns();
  }
  uint32_t tag;
  bool deliver;
  if (type & ALWAYS_TYPES) {
    tag = (uint32_t)(th->has_snap ? th->snap : mask_now());
    deliver = true;
  } else if ((type & CHILD_TYPES) && e->parent) {
    tag = r->tag[e->parent];
    deliver = r->delivered[e->parent] && (tag & type);
  } else {
    tag = (uint32_t)(th->has_snap ? th->snap : mask_now());
    deliver = (tag & type) != 0;
  }
  r->tag[e->slot] = tag;
  if (g_mask_log && (type == RP_EV_COLL || type == RP_EV_P2P))
    log_mask(r->t, e, tag, deliver, th->has_snap ? th->snap_rt : realtime_ns());
  if (!deliver) {
    th->c.skipped++;
    return;
  }
  void *h = NULL;
  abi->start(abi, r->ctx[e->ctx].context, &h, e, r->handle);
  r->handle[e->slot] = h;
  r->delivered[e->slot] = 1;
  th->c.start++;
}

static void do_record(struct rp_engine *r, struct thr *th, const struct rp_event *e) {
  void *h = r->handle[e->slot];
  if (!h) { /* slot 0, not delivered, or the plugin returned NULL */
    th->c.skipped++;
    return;
  }
  union prof_state_args args;
  memset(&args, 0, sizeof args);
  union prof_state_args *ap = &args;
  int state = e->u.rec.state;
  if (state == PROF_STATE_KERNEL_CH_STOP)
    args.kernelCh.pTimer = e->u.rec.value;
  else if (state == PROF_STATE_GROUP_START_API_STOP || state == PROF_STATE_GROUP_END_API_START)
    ap = NULL; /* NCCL passes no arguments with the group API states */
  else if (e->type == RP_EV_PROXY_STEP)
    args.proxyStep.transSize = (size_t)e->u.rec.value;
  r->abi->record(h, state, ap);
  th->c.record++;
}

static void process_line(struct rp_engine *r, struct thr *th, const struct rp_event *e) {
  const struct rp_trace *t = r->t;
  if (g_pace_recorded) pace_until(r->run_start_ns + (uint64_t)e->t_us * 1000u);
  if (rp_vclock_enabled()) rp_vclock_set_line(e->t_us);
  switch (e->cb) {
  case RP_CB_INIT: {
    struct ctx_rt *c = &r->ctx[e->ctx];
    void *context = NULL;
    rp_log_comm_opening();
    prof_result_t rc = r->abi->init(r->abi, &t->ctx[e->ctx], &context, rp_activation_mask());
    if (rc != PROF_SUCCESS || !context) rp_log_comm_closed(); /* NCCL would not finalize it */
    c->context = rc == PROF_SUCCESS ? context : NULL;
    c->live = rc == PROF_SUCCESS;
    th->c.init++;
    if (rc != PROF_SUCCESS) th->c.init_failed++;
    break;
  }
  case RP_CB_START:
    if (g_pace_ns && (e->type == RP_EV_COLL || e->type == RP_EV_P2P)) pace();
    do_start(r, th, e);
    break;
  case RP_CB_STOP:
    if (r->handle[e->slot]) {
      r->abi->stop(r->handle[e->slot]);
      th->c.stop++;
    } else {
      th->c.skipped++;
    }
    break;
  case RP_CB_RECORD:
    do_record(r, th, e);
    break;
  case RP_CB_FINALIZE:
    if (!g_no_finalize && e->ctx != RP_NO_CTX && r->ctx[e->ctx].live && r->ctx[e->ctx].context) {
      r->abi->finalize(r->ctx[e->ctx].context);
      rp_log_comm_closed();
      th->c.finalize++;
    } else {
      th->c.skipped++;
    }
    break;
  default: /* RP_CB_DEAD */
    th->c.skipped++;
    break;
  }
  th->c.lines++;
}

/* Blocks until thread d->thread has processed its line d->pos. */
static void wait_dep(struct thr *thrs, const struct rp_dep *d) {
  _Atomic uint32_t *p = &thrs[d->thread].progress;
  unsigned spins = 0;
  while (atomic_load_explicit(p, memory_order_acquire) <= d->pos) {
    if (++spins > 64) sched_yield(); /* short spin, then give the core away */
  }
}

static void *thread_main(void *arg) {
  struct thr *th = arg;
  struct rp_engine *r = th->run;
  const struct rp_trace *t = r->t;
  const uint32_t *lines = t->tlines[th->index];
  uint32_t n = t->tnlines[th->index];
  pace_slack();
  for (uint32_t k = 0; k < n; k++) {
    const struct rp_event *e = &t->ev[lines[k]];
    for (uint32_t d = 0; d < e->dep_n; d++) wait_dep(r->thr, &t->dep[e->dep_off + d]);
    process_line(r, th, e);
    atomic_store_explicit(&th->progress, k + 1, memory_order_release);
  }
  return NULL;
}

static void *xrealloc0(void *p, size_t old_n, size_t new_n, size_t sz) {
  unsigned char *q = xreallocarray(p, new_n, sz);
  memset(q + old_n * sz, 0, (new_n - old_n) * sz);
  return q;
}

struct rp_engine *rp_engine_new(const struct rp_abi *abi, bool threads) {
  struct rp_engine *r = xrealloc0(NULL, 0, 1, sizeof *r);
  r->abi = abi;
  r->threads = threads;
  return r;
}

/* Sizes the per-slot, per-ctx and per-thread arrays for chunk t (outside the timed part). */
static void fit(struct rp_engine *r, const struct rp_trace *t) {
  if (t->nslot > r->slotcap) {
    r->handle = xrealloc0(r->handle, r->slotcap, t->nslot, sizeof *r->handle);
    r->tag = xrealloc0(r->tag, r->slotcap, t->nslot, sizeof *r->tag);
    r->delivered = xrealloc0(r->delivered, r->slotcap, t->nslot, sizeof *r->delivered);
    r->slotcap = t->nslot;
  }
  memset(r->handle, 0, t->nslot * sizeof *r->handle);
  memset(r->tag, 0, t->nslot * sizeof *r->tag);
  memset(r->delivered, 0, t->nslot * sizeof *r->delivered);
  if (t->nctx > r->ctxcap) {
    r->ctx = xrealloc0(r->ctx, r->ctxcap, t->nctx, sizeof *r->ctx);
    r->ctxcap = t->nctx;
  }
  if (t->nthread > r->thrcap) {
    /* aligned storage cannot be realloc'ed: copy the per-thread state over */
    struct thr *n = aligned_alloc(alignof(struct thr), t->nthread * sizeof *n);
    if (!n) {
      fprintf(stderr, "inspector-replay: out of memory\n");
      exit(1);
    }
    memset(n, 0, t->nthread * sizeof *n);
    for (uint32_t i = 0; i < t->nthread; i++) {
      if (i < r->thrcap) {
        n[i].snap = r->thr[i].snap;
        n[i].has_snap = r->thr[i].has_snap;
        n[i].c = r->thr[i].c;
      }
      n[i].index = i;
      n[i].run = r;
    }
    free(r->thr);
    r->thr = n;
    r->thrcap = t->nthread;
  }
  for (uint32_t i = 0; i < r->thrcap; i++) atomic_store_explicit(&r->thr[i].progress, 0, memory_order_relaxed);
  r->t = t;
  r->snap_type = (r->abi->ver >= 5 && t->has_group_api) ? RP_EV_GROUP_API : RP_EV_GROUP;
}

void rp_engine_run(struct rp_engine *r, const struct rp_trace *t) {
  fit(r, t);
  uint64_t t0 = now_ns();
  r->run_start_ns = t0;
  if (!r->threads) {
    pace_slack();
    for (size_t i = 0; i < t->nev; i++) {
      const struct rp_event *e = &t->ev[i];
      process_line(r, &r->thr[e->thread], e);
    }
  } else {
    for (uint32_t i = 0; i < t->nthread; i++) {
      if (pthread_create(&r->thr[i].pt, NULL, thread_main, &r->thr[i]) != 0) {
        /* the others may wait on it forever: a fatal error rather than a hang */
        fprintf(stderr, "inspector-replay: %s: cannot create replay thread\n", t->path);
        exit(1);
      }
    }
    for (uint32_t i = 0; i < t->nthread; i++) pthread_join(r->thr[i].pt, NULL);
  }
  r->elapsed_ns += now_ns() - t0;
  r->t = NULL;
}

bool rp_engine_threads(const struct rp_engine *r) { return r->threads; }

void rp_engine_restart(struct rp_engine *r) {
  if (r->ctx) memset(r->ctx, 0, r->ctxcap * sizeof *r->ctx); /* NULL before the first chunk */
  for (uint32_t i = 0; i < r->thrcap; i++) {
    r->thr[i].snap = 0;
    r->thr[i].has_snap = false;
  }
}

void rp_engine_free(struct rp_engine *r, struct rp_counts *counts, uint64_t *elapsed_ns) {
  for (uint32_t i = 0; i < r->thrcap; i++) {
    const struct rp_counts *c = &r->thr[i].c;
    counts->lines += c->lines;
    counts->init += c->init;
    counts->init_failed += c->init_failed;
    counts->start += c->start;
    counts->stop += c->stop;
    counts->record += c->record;
    counts->finalize += c->finalize;
    counts->skipped += c->skipped;
  }
  *elapsed_ns += r->elapsed_ns;
  free(r->handle);
  free(r->tag);
  free(r->delivered);
  free(r->ctx);
  free(r->thr);
  free(r);
}

void rp_replay(const struct rp_trace *t, const struct rp_abi *abi, bool threads, int repeat,
               struct rp_counts *c, uint64_t *elapsed_ns) {
  struct rp_engine *r = rp_engine_new(abi, threads);
  for (int rep = 0; rep < repeat; rep++) {
    rp_engine_restart(r);
    rp_engine_run(r, t);
  }
  rp_engine_free(r, c, elapsed_ns);
}
