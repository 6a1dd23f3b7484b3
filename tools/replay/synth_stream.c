/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth_stream.c - the synthetic traffic as a callback stream (syn_stream, synth.h): every op
 * of the walk (synth_walk.h) turned into the callbacks NCCL would make, in the order synth.c's
 * top describes, handed to the sink in chunks.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/profiler_abi.h"
#include "intern.h"
#include "synth.h"
#include "synth_walk.h"

/* Lines per chunk handed to the sink: large enough to amortise thread start-up under --threads. */
#define SYN_CHUNK_LINES 65536

struct builder {
  struct rp_trace *t;
  syn_sink sink;
  void *sink_arg;
  int r0, r1;          /* ranks driven by this process: [r0, r1) */
  uint32_t app;        /* the application thread */
  uint32_t *kthread;   /* progress thread per (comm, rank): [comm * nr + r - r0] */
  uint32_t *api, *api2, *op, *op2; /* per op of the group and rank: API and task slots (2: the Recv),
                                      [g * nr + r - r0] */
  struct syn_op *grp;  /* the stuck op's group, as its ops come (--hang-group) */
  int ngrp;
  const char *func[SYN_NFUNC], *dtype, *algo, *ll, *simple;
};

static uint32_t ctx_of(const struct builder *b, int comm, int rank) {
  return (uint32_t)(comm * (b->r1 - b->r0) + (rank - b->r0));
}

static uint32_t ev_start(struct builder *b, uint32_t thread, uint32_t type, uint32_t ctx, uint32_t parent,
                         int rank, struct rp_event **out) {
  struct rp_event *e = rp_trace_append_start(b->t, thread, type, ctx, parent, rank);
  if (out) *out = e; /* valid until the next append */
  return e->slot;
}

static void ev_end(struct builder *b, uint32_t thread, uint32_t slot, int cb, int state, uint64_t value) {
  struct rp_event *e = rp_trace_append(b->t);
  e->cb = (uint8_t)cb;
  e->thread = (uint16_t)thread;
  e->slot = slot;
  e->type = b->t->slot[slot].type;
  e->ctx = b->t->slot[slot].ctx;
  e->u.rec.state = state;
  e->u.rec.value = value;
}

static void ev_stop(struct builder *b, uint32_t thread, uint32_t slot) { ev_end(b, thread, slot, RP_CB_STOP, 0, 0); }

/* The application thread's part of ops[0..n), issued in one application group (ncclGroupStart/End
   around them): one GroupApi around every rank's API calls, then per rank and op the kernel
   launch, its Group and the task events. A rank issues only the ops it issues at all (issues). */
static void emit_host(struct builder *b, const struct syn_params *p, const struct syn_op *ops, int n) {
  struct rp_event *e;
  uint32_t app = b->app;
  size_t nr = (size_t)(b->r1 - b->r0);
  int lead = -1; /* the GroupApi's rank: the first that issues anything of the group */
  for (int r = b->r0; r < b->r1 && lead < 0; r++)
    for (int g = 0; g < n && lead < 0; g++)
      if (syn_issues(p, &ops[g], r)) lead = r;
  if (lead < 0) return; /* the missing rank alone in its process, the stuck op alone in its group */
  uint32_t gapi = ev_start(b, app, RP_EV_GROUP_API, ctx_of(b, ops[0].comm, lead), 0, lead, &e);
  e->u.gapi.depth = 1;
  ev_end(b, app, gapi, RP_CB_RECORD, PROF_STATE_GROUP_START_API_STOP, 0);
  for (int r = b->r0; r < b->r1; r++) {
    for (int g = 0; g < n; g++) {
      const struct syn_op *op = &ops[g];
      size_t i = (size_t)g * nr + (size_t)(r - b->r0);
      if (!syn_issues(p, op, r)) continue;
      uint32_t ctx = ctx_of(b, op->comm, r);
      if (op->func != SYN_SEND) {
        b->api[i] = ev_start(b, app, RP_EV_COLL_API, ctx, gapi, r, &e);
        e->u.api.func = b->func[op->func];
        e->u.api.count = op->count;
        e->u.api.dtype = b->dtype;
        ev_stop(b, app, b->api[i]);
        continue;
      }
      for (int k = 0; k < 2; k++) {
        uint32_t s = ev_start(b, app, RP_EV_P2P_API, ctx, gapi, r, &e);
        e->u.api.func = b->func[k ? SYN_RECV : SYN_SEND];
        e->u.api.count = op->count;
        e->u.api.dtype = b->dtype;
        ev_stop(b, app, s);
        (k ? b->api2 : b->api)[i] = s;
      }
    }
  }
  ev_end(b, app, gapi, RP_CB_RECORD, PROF_STATE_GROUP_END_API_START, 0);
  for (int r = b->r0; r < b->r1; r++) {
    for (int g = 0; g < n; g++) {
      const struct syn_op *op = &ops[g];
      size_t i = (size_t)g * nr + (size_t)(r - b->r0);
      if (!syn_issues(p, op, r)) continue;
      uint32_t ctx = ctx_of(b, op->comm, r);
      uint32_t kl = ev_start(b, app, RP_EV_KERNEL_LAUNCH, ctx, gapi, r, NULL);
      ev_stop(b, app, kl);
      uint32_t grp = ev_start(b, app, RP_EV_GROUP, ctx, 0, 0, NULL);
      if (op->func != SYN_SEND) {
        b->op[i] = ev_start(b, app, RP_EV_COLL, ctx, b->api[i], r, &e);
        e->group = grp;
        e->u.coll.seq = op->sn;
        e->u.coll.func = b->func[op->func];
        e->u.coll.count = op->count;
        e->u.coll.dtype = b->dtype;
        e->u.coll.nch = (uint8_t)p->channels;
        e->u.coll.nwarps = op->bytes < 65536 ? 8 : 16;
        e->u.coll.algo = b->algo;
        e->u.coll.proto = op->bytes < 65536 ? b->ll : b->simple;
        ev_stop(b, app, b->op[i]);
      } else {
        for (int k = 0; k < 2; k++) {
          uint32_t s = ev_start(b, app, RP_EV_P2P, ctx, (k ? b->api2 : b->api)[i], r, &e);
          e->group = grp;
          e->u.p2p.func = b->func[k ? SYN_RECV : SYN_SEND];
          e->u.p2p.count = op->count;
          e->u.p2p.dtype = b->dtype;
          e->u.p2p.peer = k ? syn_recv_peer(p, op, r) : syn_send_peer(p, op, r);
          e->u.p2p.nch = 1;
          (k ? b->op2 : b->op)[i] = s;
        }
        ev_stop(b, app, b->op[i]);
        ev_stop(b, app, b->op2[i]);
      }
      ev_stop(b, app, grp);
    }
  }
  ev_stop(b, app, gapi);
}

/* The kernel events of ops[0..n), on each rank's progress thread; KernelCh descriptors carry
   rank 0 as NCCL's do. A waiting task's channels start and never stop; a queued one's never start. */
static void emit_kernels(struct builder *b, const struct syn_params *p, const struct syn_op *ops, int n) {
  struct rp_event *e;
  size_t nr = (size_t)(b->r1 - b->r0);
  for (int r = b->r0; r < b->r1; r++) {
    for (int g = 0; g < n; g++) {
      const struct syn_op *op = &ops[g];
      size_t i = (size_t)g * nr + (size_t)(r - b->r0);
      if (!syn_issues(p, op, r)) continue;
      bool ring = op->func == SYN_SEND;
      uint32_t ctx = ctx_of(b, op->comm, r);
      uint32_t kt = b->kthread[(size_t)op->comm * nr + (size_t)(r - b->r0)];
      int ntask = ring ? 2 : 1, nch = ring ? 1 : p->channels;
      int node = syn_node_of(p, r);
      for (int k = 0; k < ntask; k++) {
        enum task_fate fate = syn_task_fate(p, op, r, k);
        if (fate == TASK_QUEUED) continue;
        uint64_t end = ring ? syn_p2p_end(p, op, r, k) : op->t_stop;
        for (int ci = 0; ci < nch; ci++) {
          uint32_t s = ev_start(b, kt, RP_EV_KERNEL_CH, ctx, (k ? b->op2 : b->op)[i], 0, &e);
          e->u.kch.ch = (uint8_t)(ring ? SYN_P2P_CHANNEL : ci);
          e->u.kch.ptimer = syn_gpu_ns(p, node, syn_chan_start(p, op, r, ci));
          if (fate == TASK_WAITS) continue;
          ev_end(b, kt, s, RP_CB_RECORD, PROF_STATE_KERNEL_CH_STOP, syn_gpu_ns(p, node, end));
          ev_stop(b, kt, s);
        }
      }
    }
  }
}

static void build_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  struct builder *b = arg;
  const struct syn_hang *h = &p->hang;
  if (h->resolved && op->index >= h->first) { /* the stuck op's group: issued together, with its last op */
    assert(b->ngrp < h->group);
    b->grp[b->ngrp++] = *op;
    if (op->index < h->index) return;
    emit_host(b, p, b->grp, b->ngrp);
    emit_kernels(b, p, b->grp, b->ngrp);
    b->ngrp = 0;
  } else {
    emit_host(b, p, op, 1);
    emit_kernels(b, p, op, 1);
  }
  if (b->t->nev >= SYN_CHUNK_LINES) { /* only between ops: no line names an earlier chunk's event */
    b->sink(b->sink_arg, b->t);
    rp_trace_clear_lines(b->t);
  }
}

void syn_stream(const struct syn_params *p, int only_rank, syn_sink sink, syn_stuck stuck, void *sink_arg) {
  char label[64];
  if (only_rank >= 0) snprintf(label, sizeof label, "synthetic rank %d", only_rank);
  else snprintf(label, sizeof label, "synthetic");
  struct rp_trace chunk;
  struct rp_trace *out = &chunk;
  rp_trace_init(out, label);
  struct builder b = {.t = out, .sink = sink, .sink_arg = sink_arg};
  b.r0 = only_rank >= 0 ? only_rank : 0;
  b.r1 = only_rank >= 0 ? only_rank + 1 : p->ranks;
  size_t nr = (size_t)(b.r1 - b.r0);
  size_t ng = p->hang.resolved ? (size_t)p->hang.group : 1; /* ops issued in one group, at most */
  b.kthread = calloc((size_t)syn_ncomms(p) * nr, sizeof *b.kthread);
  b.api = calloc(ng * nr, sizeof *b.api);
  b.api2 = calloc(ng * nr, sizeof *b.api2);
  b.op = calloc(ng * nr, sizeof *b.op);
  b.op2 = calloc(ng * nr, sizeof *b.op2);
  b.grp = calloc(ng, sizeof *b.grp);
  if (!b.kthread || !b.api || !b.api2 || !b.op || !b.op2 || !b.grp) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  for (int f = 0; f < SYN_NFUNC; f++) b.func[f] = rp_intern(syn_func_names[f]);
  b.dtype = rp_intern(SYN_DTYPE);
  b.algo = rp_intern("RING");
  b.ll = rp_intern("LL");
  b.simple = rp_intern("SIMPLE");
  /* thread ids: the application thread, then one progress thread per (comm, rank) */
  b.app = rp_trace_thread(out, 1);
  for (int comm = 0; comm < syn_ncomms(p); comm++)
    for (int r = b.r0; r < b.r1; r++)
      b.kthread[(size_t)comm * nr + (size_t)(r - b.r0)] =
          rp_trace_thread(out, 1000 + (uint64_t)comm * (uint64_t)p->ranks + (uint64_t)r);

  const char *name = rp_intern(p->comm_name);
  for (int comm = 0; comm < syn_ncomms(p); comm++) {
    for (int r = b.r0; r < b.r1; r++) {
      struct rp_ctx_info c = {.comm_id = syn_comm_id(p, comm), .name = name, .nnodes = p->nodes,
                              .nranks = p->ranks, .rank = r, .ver = 0, .mask = 0};
      uint32_t ci = rp_trace_add_ctx(out, &c);
      struct rp_event *e = rp_trace_append(out);
      e->cb = RP_CB_INIT;
      e->thread = (uint16_t)b.app;
      e->ctx = ci;
    }
  }
  syn_walk(p, build_visit, &b);
  assert(b.ngrp == 0);
  if (stuck) { /* the stuck point: everything issued, the finalizes to come */
    sink(sink_arg, out);
    rp_trace_clear_lines(out);
    stuck(sink_arg);
  }
  for (int comm = 0; comm < syn_ncomms(p); comm++) {
    for (int r = b.r0; r < b.r1; r++) {
      struct rp_event *e = rp_trace_append(out);
      e->cb = RP_CB_FINALIZE;
      e->thread = (uint16_t)b.app;
      e->ctx = ctx_of(&b, comm, r);
    }
  }
  /* The lines are built normalised (Coll/P2p name their API parent and their group apart) and
     nothing follows a finalize, so rp_trace_finish has nothing to do here. */
  sink(sink_arg, out);
  rp_trace_free(out);
  free(b.kthread);
  free(b.api);
  free(b.api2);
  free(b.op);
  free(b.op2);
  free(b.grp);
}
