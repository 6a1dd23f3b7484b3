/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec.c - the timed loop (see exec.h).
 *
 * The loop is the same for every plugin, so its own cost (a switch, a
 * handle load, a patch of parentObj) is part of the do-nothing plugin's
 * figure too: the difference between two plugins is theirs alone.
 */
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tools/replay/log.h"
#include "../tools/replay/plugin.h"

uint64_t bp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The replay driver's loader, plus what the benchmark needs: all three tables. */
int bp_plugin_open(const char *path, struct bp_plugin *p) {
  memset(p, 0, sizeof *p);
  struct rp_plugin rp;
  if (rp_plugin_open(path, &rp) != 0) return -1;
  if (!rp.v4 || !rp.v5 || !rp.v6) {
    fprintf(stderr, "inspector-bench: %s lacks one of ncclProfiler_v4, _v5, _v6\n", path);
    return -1;
  }
  *p = (struct bp_plugin){.path = path, .name = rp.v5->name, .dl = rp.dl,
                          .v4 = rp.v4, .v5 = rp.v5, .v6 = rp.v6};
  return 0;
}


void bp_run_alloc(const struct bp_prog *g, struct bp_run *r) {
  r->ctx = bp_xcalloc(g->nctx, sizeof *r->ctx);
  r->h = bp_xcalloc(g->nslot, sizeof *r->h);
}

void bp_run_free(struct bp_run *r) {
  free(r->ctx);
  free(r->h);
  r->ctx = r->h = NULL;
}

static int g_mask; /* NCCL's activation mask: the plugins write it, nobody reads it here */

static void do_init(const struct bp_plugin *p, int ver, const struct bp_ctx *c, void **context) {
  *context = NULL;
  if (ver == 4)
    p->v4->init(context, &g_mask, c->name, c->comm_id, c->nnodes, c->nranks, c->rank, rp_logger);
  else if (ver == 5)
    p->v5->init(context, c->comm_id, &g_mask, c->name, c->nnodes, c->nranks, c->rank, rp_logger);
  else
    p->v6->init(context, c->comm_id, &g_mask, c->name, c->nnodes, c->nranks, c->rank, rp_logger);
}

static void do_finalize(const struct bp_plugin *p, int ver, void *context) {
  if (!context) return;
  if (ver == 4) p->v4->finalize(context);
  else if (ver == 5) p->v5->finalize(context);
  else p->v6->finalize(context);
}

void bp_open(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r) {
  for (size_t i = 0; i < g->ncall; i++)
    if (g->call[i].op == BP_INIT) do_init(p, g->ver, &g->ctx[g->call[i].ctx], &r->ctx[g->call[i].ctx]);
}

void bp_close(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r) {
  for (size_t i = 0; i < g->ncall; i++)
    if (g->call[i].op == BP_FINALIZE) {
      do_finalize(p, g->ver, r->ctx[g->call[i].ctx]);
      r->ctx[g->call[i].ctx] = NULL;
    }
}

/* One version's loop; ver is a constant in each instantiation below. */
static inline __attribute__((always_inline)) void
exec_loop(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r, bool lifecycle,
          struct bp_stats *s, int ver) {
  prof_result_t (*stop)(void *) = p->v5->stopEvent;
  prof_result_t (*record)(void *, int, union prof_state_args *) = p->v5->recordEventState;
  /* The tables differ only in the descriptor's type: call through the version's own. */
  const struct prof_table_v4 *t4 = p->v4;
  const struct prof_table_v5 *t5 = p->v5;
  const struct prof_table_v6 *t6 = p->v6;
  if (ver == 4) stop = t4->stopEvent, record = t4->recordEventState;
  if (ver == 6) stop = t6->stopEvent, record = t6->recordEventState;
  void **h = r->h;
  uint64_t calls = 0, ns = 0, t0 = bp_now_ns();
  for (size_t i = 0; i < g->ncall; i++) {
    const struct bp_call *c = &g->call[i];
    switch (c->op) {
    case BP_START: {
      union bp_descr *d = &g->descr[c->descr];
      d->v5.parentObj = h[c->parent]; /* at the same offset in v4, v5 and v6 */
      if (c->off_group) memcpy((char *)d + c->off_group, &h[c->group], sizeof(void *));
      void *ctx = r->ctx[c->ctx];
      h[c->slot] = NULL;
      if (ver == 4) t4->startEvent(ctx, &h[c->slot], &d->v4);
      else if (ver == 5) t5->startEvent(ctx, &h[c->slot], &d->v5);
      else t6->startEvent(ctx, &h[c->slot], &d->v6);
      calls++;
      break;
    }
    case BP_STOP:
      if (h[c->slot]) {
        stop(h[c->slot]);
        calls++;
      }
      break;
    case BP_RECORD:
      if (h[c->slot]) {
        union prof_state_args a = c->args;
        record(h[c->slot], c->state, c->has_args ? &a : NULL);
        calls++;
      }
      break;
    default: /* init, finalize: once per communicator, not timed */
      if (!lifecycle) break;
      ns += bp_now_ns() - t0;
      if (c->op == BP_INIT) do_init(p, ver, &g->ctx[c->ctx], &r->ctx[c->ctx]);
      else do_finalize(p, ver, r->ctx[c->ctx]), r->ctx[c->ctx] = NULL;
      t0 = bp_now_ns();
      break;
    }
  }
  ns += bp_now_ns() - t0;
  s->calls += calls;
  s->ns += ns;
}

void bp_exec(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r, bool lifecycle,
             struct bp_stats *s) {
  if (g->ver == 4) exec_loop(p, g, r, lifecycle, s, 4);
  else if (g->ver == 5) exec_loop(p, g, r, lifecycle, s, 5);
  else exec_loop(p, g, r, lifecycle, s, 6);
}

int bp_exec_one(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r,
                const struct bp_call *c) {
  void **h = r->h;
  switch (c->op) {
  case BP_START: {
    union bp_descr *d = &g->descr[c->descr];
    d->v5.parentObj = h[c->parent];
    if (c->off_group) memcpy((char *)d + c->off_group, &h[c->group], sizeof(void *));
    void *ctx = r->ctx[c->ctx];
    h[c->slot] = NULL;
    if (g->ver == 4) p->v4->startEvent(ctx, &h[c->slot], &d->v4);
    else if (g->ver == 5) p->v5->startEvent(ctx, &h[c->slot], &d->v5);
    else p->v6->startEvent(ctx, &h[c->slot], &d->v6);
    return 1;
  }
  case BP_STOP:
    if (!h[c->slot]) return 0;
    p->v5->stopEvent(h[c->slot]);
    return 1;
  case BP_RECORD: {
    if (!h[c->slot]) return 0;
    union prof_state_args a = c->args;
    p->v5->recordEventState(h[c->slot], c->state, c->has_args ? &a : NULL);
    return 1;
  }
  default:
    return 0;
  }
}
