/* SPDX-License-Identifier: Apache-2.0 */
/*
 * one_op.h - one collective driven through the plugin's v5 table, as NCCL would report it:
 * an AllReduce of 1 MiB (262144 x ncclFloat32, RING, SIMPLE) on n kernel channels, each
 * with its GPU start and stop timestamps, completed; optionally in a group of its own
 * before it. Shared by the unit tests that drive the plugin (fork_util.h's fu_op,
 * test_fork.c, test_prom_totals.c, test_op_timestamps.c; test_trace_reload.c through the
 * table of a plugin it loaded), so that what "one op" is stays written once. It asserts
 * nothing itself: it says whether every event was started, and each test checks what it
 * means to.
 */
#ifndef INS_ONE_OP_H
#define INS_ONE_OP_H

#include <stdint.h>
#include <string.h>

#include "nccl/profiler_abi.h"

/* The table driven: the plugin's objects linked in; a test that loads the plugin with
 * dlopen defines OO_TABLE as the table it found, before including this. */
#ifndef OO_TABLE
extern struct prof_table_v5 ncclProfiler_v5;
#define OO_TABLE ncclProfiler_v5
#endif

/* A channel's GPU timestamps (ns); 0 is a channel that gave no GPU timer. */
struct oo_span {
  uint64_t start, stop;
};

/* A group started and stopped: the collective after it is then alone in its group, and its
 * record is right however many came before (core/judge.h). */
static inline void oo_group(void *ctx) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_GROUP;
  void *group = NULL;
  OO_TABLE.startEvent(ctx, &group, &d);
  if (group) OO_TABLE.stopEvent(group);
}

/* The AllReduce numbered sn on the n channels ch, completed. 1 when the collective and
 * every channel were started; a collective that was not has no channels. */
/* The descriptor of such an AllReduce (1 MiB of floats, RING SIMPLE) on n channels. */
static inline struct prof_descr_v5 oo_allreduce_descr(uint64_t sn, int n) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_COLL;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 262144;
  d.coll.seqNumber = sn;
  d.coll.nChannels = (uint8_t)n;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  return d;
}

/* Such an AllReduce started on n channels, none run yet: its handle, or NULL. For a test
 * that holds ops in flight, or runs their channels out of order (oo_channels, then
 * OO_TABLE.stopEvent). */
static inline void *oo_allreduce_start(void *ctx, uint64_t sn, int n) {
  struct prof_descr_v5 d = oo_allreduce_descr(sn, n);
  void *op = NULL;
  if (OO_TABLE.startEvent(ctx, &op, &d) != 0) return NULL;
  return op;
}

/* op's kernel channels first .. first+n-1 run over the spans ch (start, then stop): 1 when
 * every channel was started. */
static inline int oo_channels(void *ctx, void *op, int first, const struct oo_span *ch, int n) {
  int started = 1;
  for (int c = 0; c < n; c++) {
    struct prof_descr_v5 d;
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_KERNEL_CH;
    d.parentObj = op;
    d.kernelCh.channelId = (uint8_t)(first + c);
    d.kernelCh.pTimer = ch[c].start;
    void *h = NULL;
    if (OO_TABLE.startEvent(ctx, &h, &d) != 0 || !h) {
      started = 0;
      continue;
    }
    union prof_state_args args;
    memset(&args, 0, sizeof args);
    args.kernelCh.pTimer = ch[c].stop;
    OO_TABLE.recordEventState(h, PROF_STATE_KERNEL_CH_STOP, &args);
    OO_TABLE.stopEvent(h);
  }
  return started;
}

static inline int oo_allreduce(void *ctx, uint64_t sn, const struct oo_span *ch, int n) {
  void *op = oo_allreduce_start(ctx, sn, n);
  if (!op) return 0;
  int started = oo_channels(ctx, op, 0, ch, n);
  OO_TABLE.stopEvent(op);
  return started;
}

#endif
