/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c - the tagged lock-free free list of ops, in doubling chunks (see pool.h).
 */
#include "core/pool.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* the head's low half is an op's index + 1 (0: empty), the high half a generation */
_Static_assert((uint64_t)INS_POOL_FIRST * ((1ull << INS_POOL_MAX_CHUNKS) - 1) < UINT32_MAX,
               "an index fits in 32 bits");
_Static_assert((INS_POOL_FIRST & (INS_POOL_FIRST - 1)) == 0, "ins_pool_at: a power of two");
_Static_assert(INS_TAG_FREE == 0, "a chunk handed back reads as zeros: free (ins_pool_retire)");

/* The first index of chunk k. */
static inline uint32_t chunk_first(uint32_t k) { return INS_POOL_FIRST * ((1u << k) - 1); }

void ins_pool_init(struct ins_pool *p) {
  memset(p, 0, sizeof *p);
  atomic_init(&p->head, 0);
  atomic_init(&p->fresh, 0);
  atomic_init(&p->total, 0);
  pthread_mutex_init(&p->grow_lock, NULL);
}

/* Chunk k's mapping: its ops, to whole pages. */
static size_t chunk_bytes(uint32_t k) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t n = (size_t)(INS_POOL_FIRST << k) * sizeof(struct ins_op);
  return (n + page - 1) / page * page;
}

void ins_pool_destroy(struct ins_pool *p) {
  for (uint32_t k = 0; k < INS_POOL_MAX_CHUNKS; k++)
    if (p->chunk[k]) munmap(p->chunk[k], chunk_bytes(k));
  pthread_mutex_destroy(&p->grow_lock);
}

/*
 * What a retire leaves: every op of the pool free and unable to complete (the tracker's
 * teardown saw to it: core/op.h, ins_op_finish_all_at_teardown), so a late call finds a
 * tag that says free, or settles an op that never completes. Chunks of up to
 * INS_POOL_WARM_BYTES stay as they are, resident, so that the next communicator's ops in
 * them are warm (as they were when chunks came from malloc, whose free lists keep small
 * blocks: clearing one op touched its untouched second page, and that one page fault
 * cost a finalize 25 us on a 2-core VM); a larger chunk is handed back to the system
 * (MADV_DONTNEED: a private anonymous mapping then reads as zeros, every tag free), as
 * free() unmapped a large block.
 */
#define INS_POOL_WARM_BYTES (1u << 20) /* chunks 0 to 4: 248 ops */

void ins_pool_retire(struct ins_pool *p) {
  pthread_mutex_lock(&p->grow_lock);
  p->retired = true; /* grow refuses: a late get finds no op (below) */
  pthread_mutex_unlock(&p->grow_lock);
  uint32_t used = atomic_load(&p->fresh);
  atomic_store(&p->head, 0);
  atomic_store(&p->fresh, atomic_load(&p->total)); /* none left to hand out */
  for (uint32_t k = 0; k < p->nchunks && used > chunk_first(k); k++)
    if (chunk_bytes(k) > INS_POOL_WARM_BYTES) madvise(p->chunk[k], chunk_bytes(k), MADV_DONTNEED);
}

void ins_pool_renew(struct ins_pool *p) {
  void *spare[INS_POOL_MAX_CHUNKS];
  memcpy(spare, p->chunk, sizeof spare);
  pthread_mutex_destroy(&p->grow_lock);
  ins_pool_init(p);
  memcpy(p->chunk, spare, sizeof spare);
}

size_t ins_pool_bytes(struct ins_pool *p) {
  return (size_t)atomic_load_explicit(&p->total, memory_order_relaxed) * sizeof(struct ins_op);
}

void ins_pool_put(struct ins_pool *p, struct ins_op *op) {
  /* an op of this pool: its index names its slot, and the free list links by index */
  assert(op->pool_idx < atomic_load(&p->fresh) && ins_pool_at(p, op->pool_idx) == op);
  op->tag = INS_TAG_FREE;
  uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
  uint64_t nh;
  do {
    atomic_store_explicit(&op->pool_next, (uint32_t)h, memory_order_relaxed);
    nh = (((h >> 32) + 1) << 32) | (uint64_t)(op->pool_idx + 1);
  } while (!atomic_compare_exchange_weak_explicit(&p->head, &h, nh, memory_order_release,
                                                  memory_order_relaxed));
}

/* Add a chunk, twice the ops of the last (the first: INS_POOL_FIRST). Returns 0 on
 * success, or when ops became available meanwhile. */
static __attribute__((noinline)) int grow(struct ins_pool *p) {
  int rc = -1;
  pthread_mutex_lock(&p->grow_lock);
  if ((uint32_t)atomic_load_explicit(&p->head, memory_order_acquire) != 0 ||
      atomic_load_explicit(&p->fresh, memory_order_relaxed) <
          atomic_load_explicit(&p->total, memory_order_relaxed)) {
    rc = 0; /* someone else grew it (or ops were returned) meanwhile */
  } else if (p->nchunks < INS_POOL_MAX_CHUNKS && !p->retired) {
    uint32_t k = p->nchunks, n = INS_POOL_FIRST << k;
    /* a spare (a retired pool's) or a new mapping: page-aligned, so ops are cache-line
     * aligned (struct ins_chan); not touched here: an op is set up when first handed out
     * (ins_pool_get), so that only the ops used are ever resident */
    struct ins_op *chunk = p->chunk[k];
    if (!chunk) {
      void *m = mmap(NULL, chunk_bytes(k), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
      chunk = m == MAP_FAILED ? NULL : m;
    }
    if (chunk) {
      p->chunk[k] = chunk;
      p->base[k] = (uintptr_t)chunk - (uintptr_t)chunk_first(k) * sizeof *chunk;
      p->nchunks = k + 1;
      atomic_store_explicit(&p->total, chunk_first(k) + n, memory_order_release);
      rc = 0;
    }
  }
  pthread_mutex_unlock(&p->grow_lock);
  return rc;
}

/* A free op off the list; when the list is empty, what `empty` gives (NULL: NULL). The one
 * pop, inlined into the common path with get_slow as `empty` (ins_pool_get: no stack frame,
 * an empty list a tail call) and into get_slow with none. */
typedef struct ins_op *pool_empty_fn(struct ins_pool *p);
static pool_empty_fn get_slow;
static inline __attribute__((always_inline)) struct ins_op *pop_or(struct ins_pool *p, pool_empty_fn *empty) {
  uint64_t h = atomic_load_explicit(&p->head, memory_order_acquire);
  while (__builtin_expect((uint32_t)h != 0, 1)) {
    struct ins_op *op = ins_pool_at(p, (uint32_t)h - 1);
    uint64_t nh = (((h >> 32) + 1) << 32) | atomic_load_explicit(&op->pool_next, memory_order_relaxed);
    if (atomic_compare_exchange_weak_explicit(&p->head, &h, nh, memory_order_acquire,
                                              memory_order_acquire)) {
      assert(op->tag == INS_TAG_FREE); /* put marks an op free before it is on the list */
      return op;
    }
  }
  return empty ? empty(p) : NULL;
}

/* The list is empty: an op never handed out yet, from the chunks or a new one. Out of
 * line, so that the common path (ins_pool_get) needs no stack frame. */
static __attribute__((noinline)) struct ins_op *get_slow(struct ins_pool *p) {
  for (;;) {
    struct ins_op *op = pop_or(p, NULL);
    if (op) return op;
    uint32_t i = atomic_load_explicit(&p->fresh, memory_order_relaxed);
    while (i < atomic_load_explicit(&p->total, memory_order_acquire)) {
      if (atomic_compare_exchange_weak_explicit(&p->fresh, &i, i + 1, memory_order_release,
                                                memory_order_relaxed)) {
        op = ins_pool_at(p, i);
        op->pool_idx = i;
        op->tag = INS_TAG_FREE;
        return op;
      }
    }
    if (grow(p) != 0) return NULL;
  }
}

struct ins_op *ins_pool_get(struct ins_pool *p) {
  return pop_or(p, get_slow);
}
