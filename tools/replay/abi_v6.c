/*
 * abi_v6.c - driving ncclProfiler_v6 (NCCL 2.29+).
 *
 * v6 is v5 plus the copy-engine events: CeColl (4096), CeSync (8192) and
 * CeBatch (16384), which carry no kernel events and no GPU timestamps.
 */
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
