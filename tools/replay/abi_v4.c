/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_v4.c - driving ncclProfiler_v4 (NCCL 2.26, 2.27).
 *
 * v4 differences that matter: the descriptor's type is one byte; there are
 * no API or CE events; init takes (ctx, mask, name, commHash, nNodes,
 * nranks, rank, log); a Coll/P2p has no parentGroup field and names its
 * Group as parentObj.
 */
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "log.h"

static prof_result_t init_v4(const struct rp_abi *a, const struct rp_ctx_info *c, void **context, int *mask) {
  const struct prof_table_v4 *t = a->table;
  return t->init(context, mask, c->name, c->comm_id, c->nnodes, c->nranks, c->rank, rp_logger);
}

static prof_result_t start_v4(const struct rp_abi *a, void *context, void **handle, const struct rp_event *e,
                              void *const *h) {
  const struct prof_table_v4 *t = a->table;
  struct prof_descr_v4 d;
  memset(&d, 0, sizeof d);
  d.type = (uint8_t)e->type;
  d.parentObj = h[e->parent];
  d.rank = e->rank;
  switch (e->type) {
  case RP_EV_COLL:
    d.parentObj = h[e->group ? e->group : e->parent];
    d.coll.seqNumber = e->u.coll.seq;
    d.coll.func = e->u.coll.func;
    d.coll.count = e->u.coll.count;
    d.coll.root = e->u.coll.root;
    d.coll.datatype = e->u.coll.dtype;
    d.coll.nChannels = e->u.coll.nch;
    d.coll.nWarps = e->u.coll.nwarps;
    d.coll.algo = e->u.coll.algo;
    d.coll.proto = e->u.coll.proto;
    break;
  case RP_EV_P2P:
    d.parentObj = h[e->group ? e->group : e->parent];
    d.p2p.func = e->u.p2p.func;
    d.p2p.datatype = e->u.p2p.dtype;
    d.p2p.count = e->u.p2p.count;
    d.p2p.peer = e->u.p2p.peer;
    d.p2p.nChannels = e->u.p2p.nch;
    break;
  case RP_EV_KERNEL_CH:
    d.kernelCh.channelId = e->u.kch.ch;
    d.kernelCh.pTimer = e->u.kch.ptimer;
    break;
  case RP_EV_PROXY_OP:
    d.proxyOp.pid = a->pid;
    d.proxyOp.channelId = e->u.pop.ch;
    d.proxyOp.peer = e->u.pop.peer;
    d.proxyOp.nSteps = e->u.pop.nsteps;
    d.proxyOp.chunkSize = e->u.pop.chunk;
    d.proxyOp.isSend = e->u.pop.send;
    break;
  case RP_EV_PROXY_STEP:
    d.proxyStep.step = e->u.pstep.step;
    break;
  default:
    break;
  }
  return t->startEvent(context, handle, &d);
}

void rp_abi_bind_v4(struct rp_abi *a, const struct prof_table_v4 *t) {
  memset(a, 0, sizeof *a);
  a->ver = 4;
  a->plugin_name = t->name;
  a->table = t;
  a->pid = getpid();
  a->init = init_v4;
  a->start = start_v4;
  a->stop = t->stopEvent;
  a->record = t->recordEventState;
  a->finalize = t->finalize;
}
