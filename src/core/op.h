/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op.h - one in-flight operation (a Coll or P2p event) and its kernel
 * channels: what NCCL's handles point at, and the per-callback fast paths.
 *
 * The handle we return for a Coll/P2p is a struct ins_op; the handle for a
 * KernelCh is the struct ins_chan of that channel inside its op, so a
 * kernel callback finds its op by address arithmetic, with no lookup. Both
 * start with a 4-byte tag so stopEvent/recordEventState can tell them apart,
 * and both are 64-byte aligned: a handle is read only once its address and
 * then its tag say it is one (core/op_types.h, "Handles").
 * A channel is one cache line: channels of one op driven from different
 * threads never share a line, and finding the op is a shift.
 *
 * Completion: `pending` counts what must still happen: the host stop of the
 * op plus one stop per expected kernel channel (nChannels from the
 * descriptor). Whichever thread brings it to zero publishes the record and
 * returns the op to its pool; until then NCCL may still name it as a parent.
 *
 * Untrusted channel counts: an nChannels of 0 or above 64 is not a count
 * (RCCL was seen to send uninitialised memory: 224), and RCCL starts some
 * channels well after others have stopped, so "every channel started so far
 * has stopped" does not make an op whole. Such an op (expected 0) counts its
 * channels as they start, plus a token that is given back only when a later
 * op of its communicator completes (ops run in order on the GPU: no channel
 * of it can start after that; op.c release_untrusted), or at teardown.
 *
 * Overtaken ops: on real GPUs NCCL 2.28.9 now and then never delivers one
 * kernel event of an op (docs/VALIDATION.md). A communicator's ops run in
 * order on the GPU, so once an op issued INS_OVERTAKE_WINDOW ops later has
 * completed, an op still waiting is finished: it is recorded from the
 * channels it has (nchannels says how many), or counted as lost. Its struct
 * is not reused yet: when NCCL's proxy thread is far behind, it delivers a
 * communicator's channels out of step, and the "missing" events of such an
 * op come after all; reused, the op would take them as its own (wrong times,
 * seen replaying tests/data/gpu-truth). So it stays a zombie, counting its
 * events down, and is freed when the last comes, or at teardown (the events
 * NCCL really lost pin one op each until then).
 *
 * Fast paths: the three kernel-channel callbacks (start, kernel-stop record,
 * stop) are three quarters of all callbacks, so their common case (GPU timer
 * given, verbose trace off) is inline here and compiles into the exported
 * callbacks: a few loads and stores, one atomic, no call, no clock. Anything
 * else (a missing timer, verbose traces, odd events, completing an op) is a
 * call into op.c.
 *
 * Handles the plugin never gave (the ABI misused: NCCL never does it) cost the
 * fast paths one instruction pair where they cost any: the alignment test. The
 * kernel start's took the place of its test of the context, which it never
 * reads (a NULL context with a parent of ours is the parent's); the stop's
 * took the place of the sampler's two token compares (abi/adapter.c); the
 * kernel-stop record's is its one added test (+2 instructions on a third of the
 * fast callbacks; docs/BENCHMARKS.md has the figures). Refusals are counted
 * out of line (ins_op_refused_handles) and never cost a handle of ours.
 *
 * The structs themselves (struct ins_op, struct ins_chan, the tags) are in
 * core/op_types.h, which the op pool (core/pool.h) reads without this file.
 */
#ifndef INS_OP_H
#define INS_OP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/op_types.h"
#include "core/record.h"

struct ins_comm;

/* Event entry points, called by the ABI adapters. All are safe with NULLs. */
/* An application group starts (a Group event), or an API call (CollApi, P2pApi: ABI v5+)
 * is made on the communicator: the issue order core/judge.h needs. `func` of an API
 * call: NCCL's name; coll: a collective (counted, to find those NCCL never reports). */
void ins_op_group_start(struct ins_comm *comm);
void ins_op_api_call(struct ins_comm *comm, int coll, const char *func);
/* Finalize: the last application group is over (its unreported collectives, comm.h). */
void ins_op_close_group(struct ins_comm *comm);
void *ins_op_start(struct ins_comm *comm, enum ins_kind kind, const char *func,
                   const char *datatype, uint64_t count, uint64_t seq, int peer,
                   uint8_t nchannels, const char *algo, const char *proto);
/* A copy-engine collective (ABI v6 CeColl: NCCL 2.29+ moves the data with the GPU's copy
 * engines, no kernel): a collective no kernel event will ever come for. It takes its place
 * in the issue order, completes at its stop, and is host-timed (collective_cpu) or, when
 * GPU timing is required, counted as untimed no_gpu_timer. */
void *ins_op_start_copy_engine(struct ins_comm *comm, const char *func, const char *datatype,
                               uint64_t count, uint64_t seq);
static inline void *ins_op_kernel_start(struct ins_comm *comm, void *parent, uint8_t channel,
                                     uint64_t ptimer);
/* 0 always, returned so that the adapter's recordEventState ends in a tail call of the
 * rare paths (no stack frame on the common one: -3 instructions, make bench's callgrind). */
static inline int ins_op_kernel_record_stop(void *handle, uint64_t ptimer);
static inline void ins_op_event_stop(void *handle);

#define INS_OVERTAKE_WINDOW 1024

/* NCCL's MAX_PROFILER_EVENTS_PER_CHANNEL (2.27 to 2.30): the kernel's timestamp slots per
 * channel. The proxy hands an op the timestamps of the work this many later when it is
 * that far behind (op.c, "Whose timestamps?"). */
#define INS_NCCL_PROFILER_SLOTS 64

/* The fast test of "whose timestamps?" (op.c, core/judge.h): at most 64 API calls that can
 * make work (lag: core/comm.h, api_seq; ABI v4: ops) and ops (span) from an op's group's
 * start to its completion, so no 64th later work existed: its timestamps are no later op's. */
static inline int ins_op_certain(uint32_t lag, uint32_t span) {
  return (lag > span ? lag : span) <= INS_NCCL_PROFILER_SLOTS;
}

/* Finalize: finish every op still in flight: host-timed ones become records
 * when CPU timing is kept; the rest are counted in *incomplete and freed.
 * Then no op of the pool can complete again, whatever late events come (the
 * communicator's memory is kept for them: core/comm.h, "Finalized contexts"):
 * an op back in its pool has pending <= 0 (a completion left 0, a reclaimed
 * op's last late event too), and a settle completes only from 1 up, so late
 * stops can only take it lower; the ops put back here get pending 0 and the
 * tags of their started channels free (op_teardown.c). */
void ins_op_finish_all_at_teardown(struct ins_comm *comm, uint64_t *incomplete);

/* ---- the slow paths (op.c) ------------------------------------------------ */

/* A stopEvent or recordEventState refused its handle: counted when it is no handle the
 * plugin gives (misaligned, or a tag that is none of its own), for one warning at a
 * finalize (abi/lifecycle.c). */
int ins_op_refuse(const void *handle); /* 0 */
uint64_t ins_op_refused_handles(void);

/* Kernel start that is not the common case: odd parent, channel id, duplicate, verbose, no timer. */
void *ins_op_kernel_start_slow(struct ins_comm *comm, void *parent, uint8_t channel, uint64_t ptimer);
int ins_op_kernel_record_stop_slow(struct ins_chan *ch, uint64_t ptimer); /* 0 */
void ins_op_kernel_stop_slow(struct ins_chan *ch);
void ins_op_stop(struct ins_op *op);
/* The last thing the op waited for has happened: record it, free it. */
void ins_op_complete(struct ins_op *op);

/* ---- the fast paths ------------------------------------------------------- */

static inline struct ins_op *ins_op_of_chan(struct ins_chan *ch) {
  return (struct ins_op *)((char *)(ch - ch->id) - offsetof(struct ins_op, ch));
}

/* One of the things the op waits for has happened (n of them). */
static inline void ins_op_settle(struct ins_op *op, int n) {
  if (atomic_fetch_sub_explicit(&op->pending, n, memory_order_acq_rel) == n) ins_op_complete(op);
}

/* A kernel channel of op stopped. */
static inline void ins_op_channel_stopped(struct ins_op *op) { ins_op_settle(op, 1); }

static inline void *ins_op_kernel_start(struct ins_comm *comm, void *parent, uint8_t channel,
                                     uint64_t ptimer) {
  struct ins_op *op = parent;
  uint64_t bit = 1ull << (channel & (INS_MAX_CHANNELS - 1));
  /* the address, then the tag: only then is the parent known to be an op. The context
   * is not looked at here (the slow path refuses a NULL one) */
  if (__builtin_expect(!op || ins_handle_odd(op) || ins_tag_at(parent) != INS_TAG_OP ||
                           channel >= INS_MAX_CHANNELS ||
                           !ptimer || op->verbose ||
                           (atomic_load_explicit(&op->chan_mask, memory_order_relaxed) & bit),
                       0))
    return ins_op_kernel_start_slow(comm, parent, channel, ptimer);
  struct ins_chan *ch = &op->ch[channel];
  ch->id = channel;
  ch->verbose = 0;
  ch->start_ptimer = ptimer;
  ch->stop_ptimer = 0;
  ch->host_start_ns = ch->host_stop_ns = 0;
  ch->tag = INS_TAG_KERNEL;
  atomic_fetch_or_explicit(&op->chan_mask, bit, memory_order_relaxed);
  if (!op->expected) atomic_fetch_add_explicit(&op->pending, 1, memory_order_relaxed);
  return ch;
}

static inline int ins_op_kernel_record_stop(void *handle, uint64_t ptimer) {
  struct ins_chan *ch = handle;
  if (__builtin_expect(!ch || ins_handle_odd(ch) || ch->tag != INS_TAG_KERNEL, 0))
    return ins_op_refuse(handle);
  if (__builtin_expect(!ptimer || ch->verbose, 0)) return ins_op_kernel_record_stop_slow(ch, ptimer);
  ch->stop_ptimer = ptimer;
  return 0;
}

/* handle: 64-byte aligned (the adapter sends the others elsewhere: abi/adapter.c). */
static inline void ins_op_event_stop(void *handle) {
  if (!handle) return;
  uint32_t tag = ins_tag_at(handle);
  if (tag == INS_TAG_KERNEL) {
    struct ins_chan *ch = handle;
    if (__builtin_expect(ch->verbose || !ch->stop_ptimer, 0)) {
      ins_op_kernel_stop_slow(ch);
      return;
    }
    ch->tag = INS_TAG_FREE; /* a second stop of this handle is ignored */
    ins_op_channel_stopped(ins_op_of_chan(ch));
  } else if (tag == INS_TAG_OP) {
    ins_op_stop(handle);
  } else if (tag != INS_TAG_FREE) {
    ins_op_refuse(handle);
  }
}

#endif
