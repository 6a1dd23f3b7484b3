/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_v5.c - driving ncclProfiler_v5 (NCCL 2.28).
 *
 * v5 adds the API events (GroupApi, CollApi, P2pApi, KernelLaunch), a
 * 64-bit type, the init order (ctx, commId, mask, name, nNodes, nranks,
 * rank, log), and a Coll/P2p parentGroup beside parentObj (the API event).
 */
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "log.h"

static prof_result_t init_v5(const struct rp_abi *a, const struct rp_ctx_info *c, void **context, int *mask) {
  const struct prof_table_v5 *t = a->table;
  return t->init(context, c->comm_id, mask, c->name, c->nnodes, c->nranks, c->rank, rp_logger);
}

void rp_fill_descr_v5(const struct rp_abi *a, struct prof_descr_v5 *dp, const struct rp_event *e,
                      void *const *h) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = e->type;
  d.parentObj = h[e->parent];
  d.rank = e->rank;
  switch (e->type) {
  case RP_EV_COLL:
    d.coll.seqNumber = e->u.coll.seq;
    d.coll.func = e->u.coll.func;
    d.coll.count = e->u.coll.count;
    d.coll.root = e->u.coll.root;
    d.coll.datatype = e->u.coll.dtype;
    d.coll.nChannels = e->u.coll.nch;
    d.coll.nWarps = e->u.coll.nwarps;
    d.coll.algo = e->u.coll.algo;
    d.coll.proto = e->u.coll.proto;
    d.coll.parentGroup = h[e->group];
    break;
  case RP_EV_P2P:
    d.p2p.func = e->u.p2p.func;
    d.p2p.datatype = e->u.p2p.dtype;
    d.p2p.count = e->u.p2p.count;
    d.p2p.peer = e->u.p2p.peer;
    d.p2p.nChannels = e->u.p2p.nch;
    d.p2p.parentGroup = h[e->group];
    break;
  case RP_EV_KERNEL_CH:
    d.kernelCh.channelId = e->u.kch.ch;
    d.kernelCh.pTimer = e->u.kch.ptimer;
    break;
  case RP_EV_GROUP_API:
    d.groupApi.graphCaptured = e->u.gapi.graph;
    d.groupApi.groupDepth = e->u.gapi.depth;
    break;
  case RP_EV_COLL_API:
    d.collApi.func = e->u.api.func;
    d.collApi.count = e->u.api.count;
    d.collApi.datatype = e->u.api.dtype;
    d.collApi.root = e->u.api.root;
    d.collApi.graphCaptured = e->u.api.graph;
    break;
  case RP_EV_P2P_API:
    d.p2pApi.func = e->u.api.func;
    d.p2pApi.count = e->u.api.count;
    d.p2pApi.datatype = e->u.api.dtype;
    d.p2pApi.graphCaptured = e->u.api.graph;
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
  *dp = d;
}

static prof_result_t start_v5(const struct rp_abi *a, void *context, void **handle, const struct rp_event *e,
                              void *const *h) {
  const struct prof_table_v5 *t = a->table;
  struct prof_descr_v5 d;
  rp_fill_descr_v5(a, &d, e, h);
  return t->startEvent(context, handle, &d);
}

void rp_abi_bind_v5(struct rp_abi *a, const struct prof_table_v5 *t) {
  memset(a, 0, sizeof *a);
  a->ver = 5;
  a->plugin_name = t->name;
  a->table = t;
  a->pid = getpid();
  a->init = init_v5;
  a->start = start_v5;
  a->stop = t->stopEvent;
  a->record = t->recordEventState;
  a->finalize = t->finalize;
}
