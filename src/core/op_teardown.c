/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_teardown.c - the tracker at a communicator's teardown (ins_op_finish_all_at_teardown,
 * op.h): every op still in flight recorded (what its events allow) or counted, then put
 * back with nothing that a late event could reach. Off the hot path: a finalize's, once.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/log.h"
#include "core/op.h"

/* One op still in flight at teardown: recorded, or counted; back to its pool. */
static void finish_at_teardown(struct ins_comm *c, struct ins_op *op, uint64_t *incomplete) {
  /* recorded already (events NCCL never delivered), or quiet: it would never have been */
  if (atomic_load(&op->zombie) || (op->verbose & INS_OP_QUIET)) {
    ins_pool_put(&c->pool, op);
    return;
  }
  /* Stopped with no kernel event at all: host-timed (kept only on request). */
  if (atomic_load(&op->host_stopped) && !atomic_load(&op->chan_mask) && c->keep_cpu_timing) {
    ins_op_complete(op);
  } else if (!op->expected && atomic_load(&op->chan_mask) && !atomic_load(&op->token_returned) &&
             atomic_load(&op->pending) == 1) {
    /* untrusted channel count, stopped, every channel that came stopped: only the
     * token left, which a later op would have given back (op.h) */
    atomic_store(&op->token_returned, 1);
    ins_op_settle(op, 1);
  } else {
    atomic_fetch_add_explicit(&c->untimed[op->kind][INS_UNTIMED_INCOMPLETE], 1, memory_order_relaxed);
    if ((*incomplete)++ < 4) /* enough to tell which events never came */
      ins_info("in flight at teardown: %s %s sn %llu, %u channels expected, %d started, "
               "host stop %s, %d events outstanding",
               op->kind == INS_KIND_COLL ? "collective" : "P2P",
               op->func_name ? op->func_name : "?", (unsigned long long)op->sn, op->expected,
               __builtin_popcountll(atomic_load(&op->chan_mask)),
               atomic_load(&op->host_stopped) ? "seen" : "not seen", atomic_load(&op->pending));
    ins_pool_put(&c->pool, op);
  }
}

/* An op put back at teardown: no late event can complete it, or reach it through a
 * channel it started (op.h). Its lines were touched by its own events: no page fault. */
static void disarm(struct ins_op *op) {
  for (uint64_t m = atomic_load(&op->chan_mask); m; m &= m - 1)
    op->ch[__builtin_ctzll(m)].tag = INS_TAG_FREE;
  atomic_store(&op->pending, 0);
}

void ins_op_finish_all_at_teardown(struct ins_comm *c, uint64_t *incomplete) {
  uint32_t n = ins_pool_used(&c->pool); /* the ops ever handed out */
  for (uint32_t i = 0; i < n; i++) {
    struct ins_op *op = ins_pool_at(&c->pool, i);
    if (op->tag != INS_TAG_OP) continue;
    finish_at_teardown(c, op, incomplete);
    disarm(op);
  }
}
