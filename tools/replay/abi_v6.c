/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_v6.c - driving ncclProfiler_v6 (NCCL 2.29+).
 *
 * v6 is v5 plus the copy-engine events: CeColl (4096), CeSync (8192) and
 * CeBatch (16384), which carry no kernel events and no GPU timestamps.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "log.h"

static prof_result_t init_v6(const struct rp_abi *a, const struct rp_ctx_info *c, void **context, int *mask) {
  const struct prof_table_v6 *t = a->table;
  return t->init(context, c->comm_id, mask, c->name, c->nnodes, c->nranks, c->rank, rp_logger);
}

static prof_result_t start_v6(const struct rp_abi *a, void *context, void **handle, const struct rp_event *e,
                              void *const *h) {
  const struct prof_table_v6 *t = a->table;
  struct prof_descr_v6 d;
  memset(&d, 0, sizeof d);
  /* v6 lays out the header and every v5 member exactly as v5 does (the union
   * only grows): build the v5 part once, then add the copy-engine events. */
  struct prof_descr_v5 d5;
  rp_fill_descr_v5(a, &d5, e, h);
  _Static_assert(offsetof(struct prof_descr_v6, coll) == offsetof(struct prof_descr_v5, coll),
                 "v6 keeps v5's layout");
  memcpy(&d, &d5, sizeof d5);
  switch (e->type) {
  case RP_EV_CE_COLL:
    d.ceColl.seqNumber = e->u.ce.seq;
    d.ceColl.func = e->u.ce.func;
    d.ceColl.count = e->u.ce.count;
    d.ceColl.root = e->u.ce.root;
    d.ceColl.datatype = e->u.ce.dtype;
    d.ceColl.syncStrategy = e->u.ce.sync;
    d.ceColl.ceSeqNum = e->u.ce.ceseq;
    break;
  case RP_EV_CE_SYNC:
    d.ceCollSync.isComplete = e->u.cesync.complete;
    d.ceCollSync.nRanks = e->u.cesync.nranks;
    break;
  case RP_EV_CE_BATCH:
    d.ceCollBatch.numOps = e->u.cebatch.nops;
    d.ceCollBatch.totalBytes = e->u.cebatch.bytes;
    break;
  default:
    break;
  }
  return t->startEvent(context, handle, &d);
}

void rp_abi_bind_v6(struct rp_abi *a, const struct prof_table_v6 *t) {
  memset(a, 0, sizeof *a);
  a->ver = 6;
  a->plugin_name = t->name;
  a->table = t;
  a->pid = getpid();
  a->init = init_v6;
  a->start = start_v6;
  a->stop = t->stopEvent;
  a->record = t->recordEventState;
  a->finalize = t->finalize;
}
