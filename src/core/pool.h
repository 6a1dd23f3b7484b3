/*
 * pool.h - per-communicator pool of struct ins_op.
 *
 * Ops are taken on the application thread and returned on the proxy
 * thread, so the free list is a lock-free stack of indices whose head
 * carries a generation tag (no ABA). Memory comes in chunks that live until
 * the communicator is destroyed: a stale index always points at valid
 * memory. The first chunk is allocated with the communicator; growing
 * (more than INS_POOL_CHUNK ops in flight at once) takes a per-pool mutex,
 * once per chunk, never per event.
 */
#ifndef INS_POOL_H
#define INS_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/op.h"

#define INS_POOL_CHUNK 32
#define INS_POOL_MAX_CHUNKS 2048 /* 65536 ops in flight per communicator */

struct ins_pool {
  _Atomic uint64_t head; /* (generation << 32) | (index + 1); low half 0 = empty */
  _Atomic uint32_t nchunks;
  pthread_mutex_t grow_lock;
  struct ins_op *chunks[INS_POOL_MAX_CHUNKS];
};

void ins_pool_init(struct ins_pool *p);
void ins_pool_destroy(struct ins_pool *p);
/* Allocate the first chunk, so that a communicator's first INS_POOL_CHUNK ops in
 * flight cost no allocation in a callback. 0, or -1 when out of memory. */
int ins_pool_prefill(struct ins_pool *p);
/* A free op (contents undefined), or NULL when the pool cannot grow. */
struct ins_op *ins_pool_get(struct ins_pool *p);
void ins_pool_put(struct ins_pool *p, struct ins_op *op);
/* The op with this index, for walking all ops at finalize. */
static inline struct ins_op *ins_pool_at(struct ins_pool *p, uint32_t idx) {
  return &p->chunks[idx / INS_POOL_CHUNK][idx % INS_POOL_CHUNK];
}

#endif
