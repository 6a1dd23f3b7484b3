/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prog.c - compiling a trace into a callback program (see prog.h).
 *
 * The recording plugin's handles and contexts are small integers in
 * disguise: slot * 16 and (ctx + 1) * 16, never dereferenced, so a
 * descriptor's parentObj and parentGroup decode back to the slots whose real
 * handles the runner patches in.
 */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/replay/abi.h"
#include "../tools/replay/replay.h"

#define ASKED (PROF_EV_COLL | PROF_EV_P2P | PROF_EV_KERNEL_CH)

static struct bp_prog *g_rec; /* the program being recorded (compilation is single-threaded) */
static size_t g_callcap, g_descrcap, g_linecap;
static uint32_t g_ctxcap;
static uint32_t *g_start_line; /* per call: the trace line of a start (others: found afterwards) */
static const struct rp_trace *g_trace;
static uint32_t g_line; /* the start line being delivered */
static prof_result_t (*g_inner_start)(const struct rp_abi *, void *, void **, const struct rp_event *,
                                      void *const *);

void *bp_xcalloc(size_t n, size_t sz) {
  void *q = calloc(n ? n : 1, sz);
  if (!q) {
    fprintf(stderr, "inspector-bench: out of memory\n");
    exit(1);
  }
  return q;
}

static void *xgrow(void *p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return p;
  size_t n = *cap ? *cap : 1024;
  while (n < need) n *= 2;
  void *q = realloc(p, n * sz);
  if (!q) {
    fprintf(stderr, "inspector-bench: out of memory\n");
    exit(1);
  }
  *cap = n;
  return q;
}

static struct bp_call *new_call(enum bp_op op) {
  g_rec->call = xgrow(g_rec->call, &g_callcap, g_rec->ncall + 1, sizeof *g_rec->call);
  g_start_line = xgrow(g_start_line, &g_linecap, g_rec->ncall + 1, sizeof *g_start_line);
  g_start_line[g_rec->ncall] = g_line;
  struct bp_call *c = &g_rec->call[g_rec->ncall++];
  memset(c, 0, sizeof *c);
  c->op = (uint8_t)op;
  return c;
}

static uint32_t slot_of(const void *h) { return (uint32_t)((uintptr_t)h / 16); }
static uint32_t ctx_of(const void *c) { return (uint32_t)((uintptr_t)c / 16) - 1; }

static prof_result_t rec_init(void **context, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank) {
  size_t cap = g_ctxcap;
  g_rec->ctx = xgrow(g_rec->ctx, &cap, g_rec->nctx + 1, sizeof *g_rec->ctx);
  g_ctxcap = (uint32_t)cap;
  uint32_t i = g_rec->nctx++;
  g_rec->ctx[i] = (struct bp_ctx){id, name, nnodes, nranks, rank};
  new_call(BP_INIT)->ctx = i;
  *mask = ASKED;
  *context = (void *)(uintptr_t)((i + 1) * 16);
  return PROF_SUCCESS;
}

static prof_result_t rec_init_v4(void **context, int *mask, const char *name, uint64_t hash,
                                 int nnodes, int nranks, int rank, prof_logger_t log) {
  (void)log;
  return rec_init(context, hash, mask, name, nnodes, nranks, rank);
}

static prof_result_t rec_init_v5(void **context, uint64_t id, int *mask, const char *name,
                                 int nnodes, int nranks, int rank, prof_logger_t log) {
  (void)log;
  return rec_init(context, id, mask, name, nnodes, nranks, rank);
}

/* A start: keep the descriptor with its parent handles cleared, and which slots they were. */
static struct bp_call *rec_start(void *context, void **handle, const void *d, size_t size,
                                 void **parent_obj, void **parent_group) {
  struct bp_call *c = new_call(BP_START);
  c->ctx = ctx_of(context);
  c->slot = g_rec->nslot++;
  c->parent = slot_of(*parent_obj);
  if (parent_group) {
    c->group = slot_of(*parent_group);
    c->off_group = (uint16_t)((char *)parent_group - (char *)d);
  }
  g_rec->descr = xgrow(g_rec->descr, &g_descrcap, g_rec->ndescr + 1, sizeof *g_rec->descr);
  c->descr = (uint32_t)g_rec->ndescr++;
  union bp_descr *copy = &g_rec->descr[c->descr];
  memset(copy, 0, sizeof *copy);
  memcpy(copy, d, size);
  /* cleared here, patched with the real handles when run */
  memset((char *)copy + ((char *)parent_obj - (char *)d), 0, sizeof(void *));
  if (parent_group) memset((char *)copy + c->off_group, 0, sizeof(void *));
  *handle = (void *)(uintptr_t)(c->slot * 16);
  return c;
}

static prof_result_t rec_start_v4(void *context, void **handle, struct prof_descr_v4 *d) {
  rec_start(context, handle, d, sizeof *d, &d->parentObj, NULL);
  return PROF_SUCCESS;
}

static prof_result_t rec_start_v5(void *context, void **handle, struct prof_descr_v5 *d) {
  rec_start(context, handle, d, sizeof *d, &d->parentObj, PROF_PARENT_GROUP_SLOT(d));
  return PROF_SUCCESS;
}

static prof_result_t rec_start_v6(void *context, void **handle, struct prof_descr_v6 *d) {
  rec_start(context, handle, d, sizeof *d, &d->parentObj, PROF_PARENT_GROUP_SLOT(d));
  return PROF_SUCCESS;
}

static prof_result_t rec_stop(void *handle) {
  new_call(BP_STOP)->slot = slot_of(handle);
  return PROF_SUCCESS;
}

static prof_result_t rec_record(void *handle, int state, union prof_state_args *args) {
  struct bp_call *c = new_call(BP_RECORD);
  c->slot = slot_of(handle);
  c->state = state;
  if (args) {
    c->has_args = 1;
    c->args = *args;
  }
  return PROF_SUCCESS;
}

static prof_result_t rec_finalize(void *context) {
  new_call(BP_FINALIZE)->ctx = ctx_of(context);
  return PROF_SUCCESS;
}

static const struct prof_table_v4 k_rec_v4 = {"bench-recorder", rec_init_v4, rec_start_v4,
                                              rec_stop, rec_record, rec_finalize};
static const struct prof_table_v5 k_rec_v5 = {"bench-recorder", rec_init_v5, rec_start_v5,
                                              rec_stop, rec_record, rec_finalize};
static const struct prof_table_v6 k_rec_v6 = {"bench-recorder", rec_init_v5, rec_start_v6,
                                              rec_stop, rec_record, rec_finalize};

/* The engine's start, noting which line it delivers. */
static prof_result_t wrap_start(const struct rp_abi *a, void *context, void **handle,
                                const struct rp_event *e, void *const *h) {
  g_line = (uint32_t)(e - g_trace->ev);
  return g_inner_start(a, context, handle, e, h);
}

/*
 * Which recorded thread made each call. Calls come in line order, one line
 * at most each; a start knows its line. A stop or record is the next stop or
 * record line naming the same event (every stop and record of a delivered
 * event is delivered: the recorder never returns NULL), init and finalize
 * the next line of their kind.
 */
static void assign_threads(const struct rp_trace *t, struct bp_prog *g) {
  g->thread = bp_xcalloc(g->ncall, sizeof *g->thread);
  uint32_t *trace_slot = bp_xcalloc(g->nslot, sizeof *trace_slot);
  g->nthread = t->nthread;
  size_t li = 0;
  for (size_t k = 0; k < g->ncall; k++) {
    const struct bp_call *c = &g->call[k];
    size_t line = li;
    if (c->op == BP_START) {
      line = g_start_line[k];
      trace_slot[c->slot] = t->ev[line].slot;
    } else {
      uint8_t cb = c->op == BP_STOP ? RP_CB_STOP : c->op == BP_RECORD ? RP_CB_RECORD
                   : c->op == BP_INIT ? RP_CB_INIT : RP_CB_FINALIZE;
      int named = c->op == BP_STOP || c->op == BP_RECORD;
      while (line < t->nev &&
             (t->ev[line].cb != cb || (named && t->ev[line].slot != trace_slot[c->slot])))
        line++;
      if (line == t->nev) {
        fprintf(stderr, "inspector-bench: %s: call %zu has no line\n", t->path, k);
        exit(1);
      }
    }
    g->thread[k] = t->ev[line].thread;
    li = line + 1;
  }
  free(trace_slot);
}

void bp_compile(const struct rp_trace *t, int ver, struct bp_prog *g) {
  memset(g, 0, sizeof *g);
  g->ver = ver;
  g->nslot = 1;
  g_rec = g;
  g_callcap = g_descrcap = 0;
  g_ctxcap = 0;
  g_trace = t;
  struct rp_abi abi;
  if (ver == 4) rp_abi_bind_v4(&abi, &k_rec_v4);
  else if (ver == 5) rp_abi_bind_v5(&abi, &k_rec_v5);
  else rp_abi_bind_v6(&abi, &k_rec_v6);
  g_inner_start = abi.start;
  abi.start = wrap_start;
  *rp_activation_mask() = 0; /* as in a fresh process */
  struct rp_counts counts = {0};
  uint64_t ns = 0;
  rp_replay(t, &abi, false, 1, &counts, &ns);
  assign_threads(t, g);
  free(g_start_line);
  g_start_line = NULL;
  g_linecap = 0;
  g_rec = NULL;
}

void bp_prog_free(struct bp_prog *g) {
  free(g->call);
  free(g->descr);
  free(g->ctx);
  free(g->thread);
  memset(g, 0, sizeof *g);
}

uint64_t bp_prog_events(const struct bp_prog *g) {
  uint64_t n = 0;
  for (size_t i = 0; i < g->ncall; i++)
    n += g->call[i].op == BP_START || g->call[i].op == BP_STOP || g->call[i].op == BP_RECORD;
  return n;
}

/* The kernel pTimer of a start call's descriptor, if it is a KernelCh (else NULL). */
static uint64_t *kernel_ptimer(const struct bp_prog *g, const struct bp_call *c) {
  union bp_descr *d = &g->descr[c->descr];
  if (g->ver == 4) return d->v4.type == PROF_EV_KERNEL_CH ? &d->v4.kernelCh.pTimer : NULL;
  if (g->ver == 5) return d->v5.type == PROF_EV_KERNEL_CH ? &d->v5.kernelCh.pTimer : NULL;
  return d->v6.type == PROF_EV_KERNEL_CH ? &d->v6.kernelCh.pTimer : NULL;
}

void bp_prog_advance(const struct bp_prog *cg) {
  struct bp_prog *g = (struct bp_prog *)cg; /* its descriptors are the program's data */
  if (!g->ptimer_span) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < g->ncall; i++) {
      const struct bp_call *c = &g->call[i];
      uint64_t *p = c->op == BP_START ? kernel_ptimer(g, c) : NULL;
      uint64_t v = p ? *p : c->op == BP_RECORD && c->state == PROF_STATE_KERNEL_CH_STOP && c->has_args
                           ? c->args.kernelCh.pTimer : 0;
      if (!v) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    g->ptimer_span = hi >= lo ? hi - lo + 1000 : 1000;
  }
  for (size_t i = 0; i < g->ncall; i++) {
    struct bp_call *c = &g->call[i];
    uint64_t *p = c->op == BP_START ? kernel_ptimer(g, c) : NULL;
    if (p && *p) *p += g->ptimer_span;
    if (c->op == BP_RECORD && c->state == PROF_STATE_KERNEL_CH_STOP && c->has_args && c->args.kernelCh.pTimer)
      c->args.kernelCh.pTimer += g->ptimer_span;
  }
}
