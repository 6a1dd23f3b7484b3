/*
 * ring.h - bounded lock-free ring of fixed-size cells: many producers (the
 * threads on which ops complete), one consumer (whoever holds the comm's
 * drain lock: the dump thread or finalize).
 *
 * Dmitry Vyukov's bounded queue: each cell carries a sequence number that
 * says whether it is free for position p (seq == p) or holds the record of
 * position p (seq == p + 1). A producer reserves a position with one CAS,
 * fills the cell in place, then publishes it; nothing is copied twice and
 * no lock is taken. Full means "drop and count", never wait.
 */
#ifndef INS_RING_H
#define INS_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ins_ring {
  _Alignas(64) _Atomic uint64_t tail; /* next position to reserve (producers) */
  _Alignas(64) _Atomic uint64_t head; /* next position to consume (written by the consumer only) */
  uint64_t mask;                      /* capacity - 1 (capacity is a power of two) */
  size_t stride;                      /* bytes per cell, header included */
  unsigned char *cells;
};

/* Allocate a ring of `capacity` (power of two) cells of `payload` bytes each. */
int ins_ring_init(struct ins_ring *r, uint32_t capacity, size_t payload);
void ins_ring_free(struct ins_ring *r);

/* Producer: reserve a cell; NULL when the ring is full. Fill it, then commit. */
void *ins_ring_reserve(struct ins_ring *r, uint64_t *pos);
void ins_ring_commit(struct ins_ring *r, void *payload, uint64_t pos);

/* Consumer: the oldest published payload or NULL; release it after use. */
void *ins_ring_peek(struct ins_ring *r);
void ins_ring_release(struct ins_ring *r, void *payload);

/* Approximate number of reserved cells (for the "wake the dump thread early" test). */
static inline uint64_t ins_ring_used_approx(struct ins_ring *r) {
  return atomic_load_explicit(&r->tail, memory_order_relaxed) -
         atomic_load_explicit(&r->head, memory_order_relaxed);
}

#endif
