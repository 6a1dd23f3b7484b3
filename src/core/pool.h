/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.h - per-communicator pool of struct ins_op.
 *
 * Ops are taken on the application thread and returned on the proxy
 * thread, so the free list is a lock-free stack of indices whose head
 * carries a generation tag (no ABA). Memory comes in chunks that live until
 * the communicator is destroyed: a stale index always points at valid
 * memory. Chunks double: the first holds INS_POOL_FIRST ops, chunk k
 * INS_POOL_FIRST << k, so a pool holds at most twice the ops that were ever in
 * flight at once, and a dozen chunk addresses find any of 65,528 ops. Nothing
 * is allocated until the communicator's first op; growing (all ops in flight)
 * takes a per-pool mutex, once per chunk, never per event. An op is first
 * touched when it is first handed out (`fresh`), so a chunk's pages become
 * resident as ops are used, not when it is allocated.
 *
 * Finalize (ins_pool_retire): NCCL never names an op after its communicator's
 * finalize, but a host that did (a late kernel stop, core/comm.h "Finalized
 * contexts") must find memory that is still there and says "free". So chunks
 * are mappings of their own, never freed at finalize: after the tracker's
 * teardown every op in them is free and cannot complete (core/op.h); the
 * retired pool hands out nothing, and its large chunks' pages go back to the
 * system (they then read as zeros, and zero is INS_TAG_FREE). The next
 * communicator made in the same context takes them as its pool's spare chunks
 * (ins_pool_renew: chunk k is mapped once, grown into again); ins_pool_destroy
 * unmaps them.
 */
#ifndef INS_POOL_H
#define INS_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/op_types.h" /* the ops it holds; never the tracker (op.h), which takes them from it */

#define INS_POOL_FIRST 8        /* ops in the first chunk (33 KiB); a power of two */
#define INS_POOL_MAX_CHUNKS 13  /* INS_POOL_FIRST * (2^13 - 1) = 65,528 ops in flight at most */

struct ins_pool {
  _Atomic uint64_t head;  /* (generation << 32) | (index + 1); low half 0 = empty */
  _Atomic uint32_t fresh; /* ops handed out at least once: the indices below it */
  _Atomic uint32_t total; /* ops in the chunks allocated (published after `base`) */
  pthread_mutex_t grow_lock;
  uint32_t nchunks;       /* under grow_lock */
  bool retired;           /* under grow_lock: finalized, grows no more */
  /* Chunk k's address less the bytes of the ops before it (its first index is
   * INS_POOL_FIRST * (2^k - 1)): op idx of chunk k is at base[k] + idx * sizeof op. */
  uintptr_t base[INS_POOL_MAX_CHUNKS];
  /* The chunks as mapped, what destroy unmaps: chunk k is in use for k < nchunks, and
   * a spare (a retired pool's, grown into again: ins_pool_renew) from there on, if not
   * NULL. */
  void *chunk[INS_POOL_MAX_CHUNKS];
};

void ins_pool_init(struct ins_pool *p);
/* Finalize, after the tracker's teardown: the chunks stay mapped (small ones resident,
 * large ones handed back), and the pool hands out no op from now on. Nothing may use the
 * pool meanwhile but late calls, which find free ops. */
void ins_pool_retire(struct ins_pool *p);
/* A retired pool made empty again for a new communicator, its chunks kept as spares. */
void ins_pool_renew(struct ins_pool *p);
/* Unmap every chunk, spares too. */
void ins_pool_destroy(struct ins_pool *p);
/* A free op (contents undefined but for tag and pool_idx), or NULL when the pool cannot grow. */
struct ins_op *ins_pool_get(struct ins_pool *p);
void ins_pool_put(struct ins_pool *p, struct ins_op *op);
/* Bytes of the chunks allocated. */
size_t ins_pool_bytes(struct ins_pool *p);
/* Ops handed out at least once: ins_pool_at(0 .. n-1) are initialised, for walking them at finalize. */
static inline uint32_t ins_pool_used(struct ins_pool *p) {
  return atomic_load_explicit(&p->fresh, memory_order_acquire);
}
/* The op with this index: chunk k holds the indices i with
 * INS_POOL_FIRST << k <= i + INS_POOL_FIRST < INS_POOL_FIRST << (k + 1). */
static inline struct ins_op *ins_pool_at(struct ins_pool *p, uint32_t idx) {
  uint32_t k = (uint32_t)(31 - __builtin_clz(idx + INS_POOL_FIRST)) - (uint32_t)__builtin_ctz(INS_POOL_FIRST);
  return (struct ins_op *)(p->base[k] + (uintptr_t)idx * sizeof(struct ins_op));
}

#endif
