/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule.c - computing the --threads waits (see schedule.h).
 */
#include "schedule.h"
#include "../common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-line scratch: the furthest position wanted on each other thread. */
struct want {
  int64_t *pos;       /* per thread, -1 = no wait */
  uint32_t *touched;  /* threads with a wait */
  uint32_t ntouched;
  uint32_t self;
};

static void want_add(struct want *w, uint32_t thread, int64_t pos) {
  if (thread == w->self || pos < 0) return; /* same thread: program order suffices */
  if (w->pos[thread] < 0) w->touched[w->ntouched++] = thread;
  if (pos > w->pos[thread]) w->pos[thread] = pos;
}

static void want_flush(struct rp_trace *t, struct want *w, struct rp_event *e) {
  if (t->ndep + w->ntouched > t->depcap) {
    while (t->ndep + w->ntouched > t->depcap) t->depcap = t->depcap ? t->depcap * 2 : 4096;
    t->dep = realloc(t->dep, t->depcap * sizeof *t->dep);
    if (!t->dep) {
      fprintf(stderr, "inspector-replay: out of memory\n");
      exit(1);
    }
  }
  e->dep_off = (uint32_t)t->ndep;
  e->dep_n = w->ntouched;
  for (uint32_t k = 0; k < w->ntouched; k++) {
    uint32_t th = w->touched[k];
    t->dep[t->ndep++] = (struct rp_dep){.thread = th, .pos = (uint32_t)w->pos[th]};
    w->pos[th] = -1;
  }
  w->ntouched = 0;
}

bool rp_schedule_free;

void rp_schedule_build(struct rp_trace *t) {
  rp_trace_free_schedule(t);
  uint32_t nth = t->nthread;
  t->tlines = xcalloc(nth, sizeof *t->tlines);
  t->tnlines = xcalloc(nth, sizeof *t->tnlines);
  for (size_t i = 0; i < t->nev; i++) t->tnlines[t->ev[i].thread]++;
  for (uint32_t th = 0; th < nth; th++) t->tlines[th] = xcalloc(t->tnlines[th], sizeof **t->tlines);

  uint32_t *pos = xcalloc(t->nev, sizeof *pos);   /* line -> position in its thread */
  uint32_t *seen = xcalloc(nth, sizeof *seen);    /* lines of each thread so far */
  /* last position of a line of ctx c on thread th, -1 if none: [c * nth + th] */
  int64_t *last = xcalloc((size_t)t->nctx * nth, sizeof *last);
  for (size_t k = 0; k < (size_t)t->nctx * nth; k++) last[k] = -1;
  struct want w = {.pos = xcalloc(nth, sizeof *w.pos), .touched = xcalloc(nth, sizeof *w.touched)};
  for (uint32_t th = 0; th < nth; th++) w.pos[th] = -1;
  int64_t last_init = -1;

  for (size_t i = 0; i < t->nev; i++) {
    struct rp_event *e = &t->ev[i];
    uint32_t th = e->thread;
    pos[i] = seen[th];
    t->tlines[th][seen[th]] = (uint32_t)i;
    w.self = th;

    if (last_init >= 0) want_add(&w, t->ev[last_init].thread, pos[last_init]);
    switch (e->cb) {
    case RP_CB_INIT:
      for (uint32_t o = 0; o < nth; o++) want_add(&w, o, (int64_t)seen[o] - 1);
      last_init = (int64_t)i;
      break;
    case RP_CB_START:
      if (e->parent) want_add(&w, t->ev[t->slot[e->parent].line].thread, pos[t->slot[e->parent].line]);
      /* fallthrough to the per-communicator order, below the switch */
      if (e->group) want_add(&w, t->ev[t->slot[e->group].line].thread, pos[t->slot[e->group].line]);
      break;
    case RP_CB_STOP:
    case RP_CB_RECORD:
      if (e->slot) want_add(&w, t->ev[t->slot[e->slot].line].thread, pos[t->slot[e->slot].line]);
      break;
    case RP_CB_FINALIZE:
      if (e->ctx != RP_NO_CTX)
        for (uint32_t o = 0; o < nth; o++) want_add(&w, o, last[(size_t)e->ctx * nth + o]);
      break;
    default:
      break;
    }
    /* A communicator's lines keep their recorded order across threads (not with
     * --threads-free): what the plugin decides from the order of an op's issue and of
     * other ops' completions (core/judge.h) is then what it decided when recorded. */
    if (!rp_schedule_free && e->ctx != RP_NO_CTX && e->cb != RP_CB_INIT && e->cb != RP_CB_FINALIZE)
      for (uint32_t o = 0; o < nth; o++) want_add(&w, o, last[(size_t)e->ctx * nth + o]);
    want_flush(t, &w, e);
    if (e->ctx != RP_NO_CTX) last[(size_t)e->ctx * nth + th] = seen[th];
    seen[th]++;
  }
  free(pos);
  free(seen);
  free(last);
  free(w.pos);
  free(w.touched);
}
