/*
 * ring.c - the bounded MPSC ring (see ring.h for the algorithm).
 */
#include "core/ring.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct cell_hdr { _Atomic uint64_t seq; uint64_t pad; };
#define HDR sizeof(struct cell_hdr)

static inline struct cell_hdr *cell_at(struct ins_ring *r, uint64_t pos) {
  return (struct cell_hdr *)(r->cells + (pos & r->mask) * r->stride);
}

int ins_ring_init(struct ins_ring *r, uint32_t capacity, size_t payload) {
  /* positions map to cells by `& mask`: a power of two (core/config.c rounds up) */
  assert(capacity >= 2 && (capacity & (capacity - 1)) == 0);
  memset(r, 0, sizeof *r);
  r->mask = capacity - 1;
  r->stride = (HDR + payload + 15) & ~(size_t)15;
  r->cells = aligned_alloc(64, ((r->stride * capacity) + 63) & ~(size_t)63);
  if (!r->cells) return -1;
  for (uint64_t i = 0; i < capacity; i++) atomic_init(&cell_at(r, i)->seq, i);
  atomic_init(&r->tail, 0);
  atomic_init(&r->head, 0);
  return 0;
}

void ins_ring_free(struct ins_ring *r) {
  free(r->cells);
  r->cells = NULL;
}

void *ins_ring_reserve(struct ins_ring *r, uint64_t *pos_out) {
  uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
  for (;;) {
    struct cell_hdr *c = cell_at(r, pos);
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t diff = (int64_t)(seq - pos);
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        *pos_out = pos;
        return (unsigned char *)c + HDR;
      }
    } else if (diff < 0) {
      return NULL; /* the cell still holds an unconsumed record: full */
    } else {
      pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    }
  }
}

void ins_ring_commit(struct ins_ring *r, void *payload, uint64_t pos) {
  (void)r;
  struct cell_hdr *c = (struct cell_hdr *)((unsigned char *)payload - HDR);
  /* the cell reserved for pos, not committed yet */
  assert(c == cell_at(r, pos) && atomic_load_explicit(&c->seq, memory_order_relaxed) == pos);
  atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
}

void *ins_ring_peek(struct ins_ring *r) {
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  struct cell_hdr *c = cell_at(r, head);
  if (atomic_load_explicit(&c->seq, memory_order_acquire) != head + 1) return NULL;
  return (unsigned char *)c + HDR;
}

void ins_ring_release(struct ins_ring *r, void *payload) {
  struct cell_hdr *c = (struct cell_hdr *)((unsigned char *)payload - HDR);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  /* one consumer, in order: the payload is the one peek gave */
  assert(c == cell_at(r, head) && atomic_load_explicit(&c->seq, memory_order_relaxed) == head + 1);
  atomic_store_explicit(&c->seq, head + r->mask + 1, memory_order_release);
  atomic_store_explicit(&r->head, head + 1, memory_order_relaxed);
}
