/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.c - the synthetic communicator (see synth.h).
 */
#include "synth.h"

#include "../tools/replay/intern.h"
#include "../tools/replay/trace.h"

static uint32_t line(struct rp_trace *t, uint8_t cb, uint32_t type, uint32_t slot) {
  struct rp_event *e = rp_trace_append(t);
  e->cb = cb;
  e->type = type;
  e->ctx = 0;
  e->slot = slot;
  return (uint32_t)(t->nev - 1);
}

static uint32_t start(struct rp_trace *t, uint32_t type, uint32_t parent, uint32_t group) {
  uint32_t slot = rp_trace_new_slot(t, type, 0);
  uint32_t i = line(t, RP_CB_START, type, slot); /* before t->ev: line() may move it */
  struct rp_event *e = &t->ev[i];
  e->parent = parent;
  e->group = group;
  return slot;
}

void bp_synth_trace(struct rp_trace *t, uint64_t comm_id, int nops, int nchannels) {
  rp_trace_init(t, "synthetic");
  rp_trace_thread(t, 1);
  struct rp_ctx_info info = {comm_id, rp_intern("bench"), 1, 2, 0, 5, 0};
  rp_trace_add_ctx(t, &info);
  line(t, RP_CB_INIT, 0, 0);
  const char *func = rp_intern("AllReduce"), *dtype = rp_intern("ncclFloat32");
  const char *algo = rp_intern("RING"), *proto = rp_intern("SIMPLE");
  uint64_t ptimer = 1000000000ull, count = 2048;
  for (int op = 0; op < nops; op++) {
    uint32_t group = start(t, RP_EV_GROUP, 0, 0);
    uint32_t coll = start(t, RP_EV_COLL, 0, group);
    struct rp_event *e = &t->ev[t->nev - 1];
    e->u.coll.seq = (uint64_t)op;
    e->u.coll.count = count;
    e->u.coll.func = func;
    e->u.coll.dtype = dtype;
    e->u.coll.algo = algo;
    e->u.coll.proto = proto;
    e->u.coll.nch = (uint8_t)nchannels;
    e->u.coll.nwarps = 16;
    line(t, RP_CB_STOP, RP_EV_GROUP, group);
    line(t, RP_CB_STOP, RP_EV_COLL, coll);
    for (int ch = 0; ch < nchannels; ch++) {
      uint32_t k = start(t, RP_EV_KERNEL_CH, coll, 0);
      t->ev[t->nev - 1].u.kch.ch = (uint8_t)ch;
      t->ev[t->nev - 1].u.kch.ptimer = ptimer + 100 * (uint64_t)ch;
      uint32_t r = line(t, RP_CB_RECORD, RP_EV_KERNEL_CH, k);
      t->ev[r].u.rec.state = 22; /* KernelChStop */
      t->ev[r].u.rec.value = ptimer + 5000 + 100 * (uint64_t)ch;
      line(t, RP_CB_STOP, RP_EV_KERNEL_CH, k);
    }
    ptimer += 10000;
    count = count >= (2u << 20) ? 2048 : count * 4;
  }
  line(t, RP_CB_FINALIZE, 0, 0);
  rp_trace_finish(t);
}
