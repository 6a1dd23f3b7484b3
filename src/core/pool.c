/*
 * pool.c - the tagged lock-free free list of ops (see pool.h).
 */
#include "core/pool.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* the head's low half is an op's index + 1 (0: empty), the high half a generation */
_Static_assert((uint64_t)INS_POOL_MAX_CHUNKS * INS_POOL_CHUNK < UINT32_MAX, "an index fits in 32 bits");

void ins_pool_init(struct ins_pool *p) {
  memset(p, 0, sizeof *p);
  atomic_init(&p->head, 0);
  atomic_init(&p->nchunks, 0);
  pthread_mutex_init(&p->grow_lock, NULL);
}

void ins_pool_destroy(struct ins_pool *p) {
  uint32_t n = atomic_load(&p->nchunks);
  for (uint32_t i = 0; i < n; i++) free(p->chunks[i]);
  pthread_mutex_destroy(&p->grow_lock);
}

void ins_pool_put(struct ins_pool *p, struct ins_op *op) {
  /* an op of this pool: its index names its slot, and the free list links by index */
  assert(op->pool_idx < atomic_load(&p->nchunks) * INS_POOL_CHUNK &&
         ins_pool_at(p, op->pool_idx) == op);
  op->tag = INS_TAG_FREE;
  uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
  uint64_t nh;
  do {
    atomic_store_explicit(&op->pool_next, (uint32_t)h, memory_order_relaxed);
    nh = (((h >> 32) + 1) << 32) | (uint64_t)(op->pool_idx + 1);
  } while (!atomic_compare_exchange_weak_explicit(&p->head, &h, nh, memory_order_release,
                                                  memory_order_relaxed));
}

/* Add one chunk of ops to the free list. Returns 0 on success. */
static int grow(struct ins_pool *p) {
  int rc = -1;
  pthread_mutex_lock(&p->grow_lock);
  if ((uint32_t)atomic_load_explicit(&p->head, memory_order_acquire) != 0) {
    rc = 0; /* someone else grew it (or ops were returned) meanwhile */
  } else {
    uint32_t n = atomic_load_explicit(&p->nchunks, memory_order_relaxed);
    /* ops are cache-line aligned (struct ins_chan): not calloc's 16 bytes */
    struct ins_op *chunk =
        n < INS_POOL_MAX_CHUNKS ? aligned_alloc(_Alignof(struct ins_op), INS_POOL_CHUNK * sizeof *chunk)
                                : NULL;
    if (chunk) {
      memset(chunk, 0, INS_POOL_CHUNK * sizeof *chunk);
      p->chunks[n] = chunk;
      atomic_store_explicit(&p->nchunks, n + 1, memory_order_release);
      for (uint32_t i = INS_POOL_CHUNK; i-- > 0;) {
        chunk[i].pool_idx = n * INS_POOL_CHUNK + i;
        ins_pool_put(p, &chunk[i]);
      }
      rc = 0;
    }
  }
  pthread_mutex_unlock(&p->grow_lock);
  return rc;
}

int ins_pool_prefill(struct ins_pool *p) { return grow(p); }

struct ins_op *ins_pool_get(struct ins_pool *p) {
  for (;;) {
    uint64_t h = atomic_load_explicit(&p->head, memory_order_acquire);
    while ((uint32_t)h != 0) {
      struct ins_op *op = ins_pool_at(p, (uint32_t)h - 1);
      uint64_t nh = (((h >> 32) + 1) << 32) |
                    atomic_load_explicit(&op->pool_next, memory_order_relaxed);
      if (atomic_compare_exchange_weak_explicit(&p->head, &h, nh, memory_order_acquire,
                                                memory_order_acquire)) {
        assert(op->tag == INS_TAG_FREE); /* put marks an op free before it is on the list */
        return op;
      }
    }
    if (grow(p) != 0) return NULL;
  }
}
