/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_plugin.c - a recording plugin (ABI v5, NCCL 2.28): writes every callback NCCL makes
 * as one JSON line in the trace format of tests/data/README.md, to
 * $INSPECTOR_TRACE_DIR/trace-<pid>.jsonl. It asks for $INSPECTOR_TRACE_MASK (default 70:
 * Coll, P2p, KernelCh). A debugging and fixture-making tool: one mutex and one formatted line
 * per callback, so it slows the job, as the recorder that made the fixtures did. Its lines
 * are those of the plugin's own trace mode (src/trace/tracefmt.c); this standalone recorder
 * also works where the plugin is not wanted at all, and asks for any mask. The tests use it
 * to see what inspector-replay delivered (tests/test_hang_replay.py); the file is flushed at
 * each finalize and at exit.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl/profiler_abi.h"
#include "trace/tracefmt.h"

/* Handles and contexts are kept for the whole run (NCCL names stopped ops as parents, and calls
 * about a finalized context can come late), on one list from a global, so that a leak checker
 * (the ASan build's replay tests) sees them reachable, not lost; the process's exit frees them. */
struct kept { struct kept *next; };
struct handle { struct kept k; uint64_t id; };
struct context { struct kept k; int ctx; };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_out;
static atomic_ullong g_next_id = 2; /* ids 1.. are contexts in the fixtures; any unique id works */
static atomic_int g_next_ctx;
static struct kept *g_kept; /* under g_lock */

static void *kept_alloc(size_t size) {
  struct kept *k = calloc(1, size);
  if (!k) return NULL;
  pthread_mutex_lock(&g_lock);
  k->next = g_kept;
  g_kept = k;
  pthread_mutex_unlock(&g_lock);
  return k;
}

static const char *s(const char *p) { return p ? p : ""; }
static uint64_t hid(void *h) { return h ? ((struct handle *)h)->id : 0; }

#define EMIT(...)                                                                   \
  do {                                                                              \
    char pre_[64];                                                                  \
    ins_tracefmt_prefix(pre_, sizeof pre_);                                         \
    pthread_mutex_lock(&g_lock);                                                    \
    if (g_out) {                                                                    \
      fputs(pre_, g_out);                                                           \
      fprintf(g_out, __VA_ARGS__);                                                  \
      fputs("}\n", g_out);                                                          \
    }                                                                               \
    pthread_mutex_unlock(&g_lock);                                                  \
  } while (0)

static prof_result_t init(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                          int nranks, int rank, prof_logger_t logfn) {
  (void)logfn;
  pthread_mutex_lock(&g_lock);
  if (!g_out) {
    const char *dir = getenv("INSPECTOR_TRACE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/trace-%d.jsonl", dir ? dir : ".", (int)getpid());
    g_out = fopen(path, "w");
  }
  pthread_mutex_unlock(&g_lock);
  const char *m = getenv("INSPECTOR_TRACE_MASK");
  int want = m ? atoi(m) : 70;
  *mask = want;
  struct context *c = kept_alloc(sizeof *c);
  if (!c) return 1; /* NCCL then profiles nothing of this communicator */
  c->ctx = atomic_fetch_add(&g_next_ctx, 1) + 1;
  *context = c;
  EMIT("\"cb\":\"init\",\"ver\":5,\"ctx\":%d,\"comm\":\"0x%" PRIx64 "\",\"name\":\"%s\",\"nnodes\":%d,"
       "\"nranks\":%d,\"rank\":%d,\"mask\":%d", c->ctx, comm_id, s(name), nnodes, nranks, rank, want);
  return 0;
}

static prof_result_t start(void *context, void **eh, struct prof_descr_v5 *d) {
  struct context *c = context;
  struct handle *h = kept_alloc(sizeof *h);
  *eh = h;
  if (!h) return 0; /* no handle: NCCL calls nothing more about this event */
  h->id = atomic_fetch_add(&g_next_id, 1);
  void **pgroup_slot = PROF_PARENT_GROUP_SLOT(d);
  void *pgroup = pgroup_slot ? *pgroup_slot : NULL;
  char body[768];
  ins_tracefmt_start(body, sizeof body, c ? c->ctx : 0, h->id, d->type, hid(d->parentObj),
                     d->rank, &d->coll, hid(pgroup));
  EMIT("%s", body);
  return 0;
}

static prof_result_t stop(void *eh) {
  EMIT("\"cb\":\"stop\",\"id\":%" PRIu64, hid(eh));
  return 0;
}

static prof_result_t record(void *eh, int state, union prof_state_args *a) {
  if (state == PROF_STATE_KERNEL_CH_STOP && a)
    EMIT("\"cb\":\"record\",\"id\":%" PRIu64 ",\"state\":%d,\"ptimer\":%" PRIu64, hid(eh), state, a->kernelCh.pTimer);
  else
    EMIT("\"cb\":\"record\",\"id\":%" PRIu64 ",\"state\":%d", hid(eh), state);
  return 0;
}

static prof_result_t finalize(void *context) {
  struct context *c = context;
  EMIT("\"cb\":\"finalize\",\"ctx\":%d", c ? c->ctx : 0);
  pthread_mutex_lock(&g_lock);
  if (g_out) fflush(g_out);
  pthread_mutex_unlock(&g_lock);
  return 0;
}

__attribute__((visibility("default"))) struct prof_table_v5 ncclProfiler_v5 = {
  "trace", init, start, stop, record, finalize};
