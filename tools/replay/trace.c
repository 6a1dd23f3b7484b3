/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - building and finishing the in-memory trace (see trace.h).
 */
#include "trace.h"
#include "../common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rp_trace_init(struct rp_trace *t, const char *path) {
  memset(t, 0, sizeof *t);
  size_t len = strlen(path) + 1;
  t->path = xreallocarray(NULL, len, 1);
  memcpy(t->path, path, len);
  /* slot 0: "no event"; its handle stays NULL, so a missing parent is NULL */
  t->slotcap = 1024;
  t->slot = xreallocarray(NULL, t->slotcap, sizeof *t->slot);
  memset(&t->slot[0], 0, sizeof t->slot[0]);
  t->slot[0].ctx = RP_NO_CTX;
  t->nslot = 1;
}

void rp_trace_free(struct rp_trace *t) {
  free(t->path);
  free(t->ev);
  free(t->ctx);
  free(t->slot);
  rp_trace_free_schedule(t);
  free(t->tid);
  free(t->dep);
  memset(t, 0, sizeof *t);
}

uint32_t rp_trace_thread(struct rp_trace *t, uint64_t tid) {
  /* Few threads per trace (a handful in real ones): a linear scan is fine at load. */
  for (uint32_t i = 0; i < t->nthread; i++)
    if (t->tid[i] == tid) return i;
  if (t->nthread == UINT16_MAX) {
    fprintf(stderr, "inspector-replay: %s: too many threads\n", t->path);
    exit(1);
  }
  if (t->nthread == t->threadcap) {
    t->threadcap = t->threadcap ? t->threadcap * 2 : 16;
    t->tid = xreallocarray(t->tid, t->threadcap, sizeof *t->tid);
  }
  t->tid[t->nthread] = tid;
  return t->nthread++;
}

uint32_t rp_trace_add_ctx(struct rp_trace *t, const struct rp_ctx_info *c) {
  if (t->nctx == t->ctxcap) {
    t->ctxcap = t->ctxcap ? t->ctxcap * 2 : 8;
    t->ctx = xreallocarray(t->ctx, t->ctxcap, sizeof *t->ctx);
  }
  t->ctx[t->nctx] = *c;
  if (!t->ver) t->ver = c->ver;
  return t->nctx++;
}

uint32_t rp_trace_new_slot(struct rp_trace *t, uint32_t type, uint32_t ctx) {
  if (t->nslot == t->slotcap) {
    t->slotcap *= 2;
    t->slot = xreallocarray(t->slot, t->slotcap, sizeof *t->slot);
  }
  t->slot[t->nslot].type = type;
  t->slot[t->nslot].line = (uint32_t)t->nev;
  t->slot[t->nslot].ctx = ctx;
  if (type == RP_EV_GROUP_API) t->has_group_api = true;
  return t->nslot++;
}

struct rp_event *rp_trace_append(struct rp_trace *t) {
  if (t->nev >= UINT32_MAX - 1) {
    fprintf(stderr, "inspector-replay: %s: too many lines\n", t->path);
    exit(1);
  }
  if (t->nev == t->evcap) {
    t->evcap = t->evcap ? t->evcap * 2 : 4096;
    t->ev = xreallocarray(t->ev, t->evcap, sizeof *t->ev);
  }
  struct rp_event *e = &t->ev[t->nev++];
  memset(e, 0, sizeof *e);
  e->ctx = RP_NO_CTX;
  return e;
}

struct rp_event *rp_trace_append_start(struct rp_trace *t, uint32_t thread, uint32_t type,
                                       uint32_t ctx, uint32_t parent, int32_t rank) {
  uint32_t slot = rp_trace_new_slot(t, type, ctx);
  struct rp_event *e = rp_trace_append(t);
  e->cb = RP_CB_START;
  e->thread = (uint16_t)thread;
  e->type = type;
  e->ctx = ctx;
  e->slot = slot;
  e->parent = parent;
  e->rank = rank;
  return e;
}

void rp_trace_free_schedule(struct rp_trace *t) {
  if (t->tlines)
    for (uint32_t i = 0; i < t->nthread; i++) free(t->tlines[i]);
  free(t->tlines);
  free(t->tnlines);
  t->tlines = NULL;
  t->tnlines = NULL;
  t->ndep = 0;
}

void rp_trace_clear_lines(struct rp_trace *t) {
  t->nev = 0;
  t->nslot = 1;
  rp_trace_free_schedule(t);
}

void rp_trace_finish(struct rp_trace *t) {
  /* finalize line index of each ctx, UINT32_MAX while none seen */
  uint32_t *fin = xreallocarray(NULL, t->nctx ? t->nctx : 1, sizeof *fin);
  for (uint32_t c = 0; c < t->nctx; c++) fin[c] = UINT32_MAX;

  for (size_t i = 0; i < t->nev; i++) {
    struct rp_event *e = &t->ev[i];
    if (e->cb == RP_CB_START && (e->type == RP_EV_COLL || e->type == RP_EV_P2P) && e->parent &&
        t->slot[e->parent].type == RP_EV_GROUP) {
      if (!e->group) e->group = e->parent;
      e->parent = 0;
    }
    if (e->ctx == RP_NO_CTX) continue;
    if (fin[e->ctx] != UINT32_MAX) {
      e->cb = RP_CB_DEAD; /* its communicator is gone: NCCL cannot call about it */
    } else if (e->cb == RP_CB_FINALIZE) {
      fin[e->ctx] = (uint32_t)i;
    }
  }
  free(fin);
}
