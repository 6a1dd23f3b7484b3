/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inflight.c - reading a communicator's ops in flight from another thread (see
 * inflight.h). Never on the hot path: the dump thread's hang checks call it, a few times
 * per communicator and check.
 */
#include "core/inflight.h"

#include <stdatomic.h>

#include "core/comm.h"
#include "core/op_types.h"

/* A published field of an op (op_types.h): a relaxed atomic load. */
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static struct ins_op *_Atomic *slot_of(const struct ins_comm *c, uint64_t issue) {
  return (struct ins_op *_Atomic *)&c->inflight[issue & (INS_INFLIGHT_SLOTS - 1)];
}

/* The op in issue's slot, if it is that issue's (acquire: its start's stores are seen). */
static struct ins_op *op_at(const struct ins_comm *c, uint64_t issue) {
  struct ins_op *op = atomic_load_explicit(slot_of(c, issue), memory_order_acquire);
  if (!op || atomic_load_explicit(&op->issue, memory_order_relaxed) != issue) return NULL;
  return op;
}

uint64_t ins_inflight_issued(const struct ins_comm *c) {
  return atomic_load_explicit(&((struct ins_comm *)c)->issue_seq, memory_order_acquire);
}

bool ins_inflight_present(const struct ins_comm *c, uint64_t issue) { return op_at(c, issue) != NULL; }

/*
 * The channels stopped, from the op's completion count (core/op.h: pending counts the host
 * stop and one stop per expected channel; with an untrusted count, a token and one per
 * channel started instead). Read in an order that never counts a stop too many: `pending`
 * first with acquire, then the host stop (stored before its decrement: a decrement seen
 * means its flag is seen) and the token (exchanged before its decrement). A kernel start of
 * an untrusted count adds its bit before its increment: a start seen in the mask, not yet
 * in `pending`, would count one stop too many, so a mask that changed meanwhile counts one
 * fewer.
 */
static void channels(struct ins_op *op, uint8_t expected, struct ins_inflight_op *out) {
  uint64_t mask = atomic_load_explicit(&op->chan_mask, memory_order_relaxed);
  int pending = atomic_load_explicit(&op->pending, memory_order_acquire);
  int host = atomic_load_explicit(&op->host_stopped, memory_order_relaxed) ? 1 : 0;
  int token = atomic_load_explicit(&op->token_returned, memory_order_relaxed) ? 1 : 0;
  uint64_t mask2 = atomic_load_explicit(&op->chan_mask, memory_order_relaxed);
  int started = __builtin_popcountll(mask2);
  int stopped = expected ? 1 + expected - host - pending : 2 + started - host - token - pending;
  if (mask2 != mask) stopped--;
  out->channels_started = started;
  out->channels_stopped = stopped < 0 ? 0 : stopped > started ? started : stopped;
}

bool ins_inflight_read(const struct ins_comm *c, uint64_t issue, struct ins_inflight_op *out) {
  struct ins_op *op = op_at(c, issue);
  if (!op) return false;
  uint8_t expected = GET(op->expected);
  out->issue = issue;
  out->kind = GET(op->kind);
  out->peer = GET(op->peer);
  out->sn = GET(op->sn);
  out->count = GET(op->count);
  out->bytes = GET(op->bytes);
  out->func_name = GET(op->func_name);
  out->datatype = GET(op->datatype);
  out->op_idx = GET(op->op_idx);
  out->group = GET(op->group);
  channels(op, expected, out);
  /* Still that op? A value its reuse wrote, read above, makes the op's leaving its slot
   * seen here (op_types.h, "Published fields"). */
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(slot_of(c, issue), memory_order_acquire) == op &&
         atomic_load_explicit(&op->issue, memory_order_relaxed) == issue;
}
