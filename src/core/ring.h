/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ring.h - lock-free queue of fixed-size cells, bounded at `cap` records,
 * whose memory comes and goes with them: many producers (the threads on
 * which ops complete: the application's and NCCL's proxy thread), one
 * consumer (whoever holds the comm's drain lock: the dump thread or finalize).
 *
 * Positions 0, 1, 2... are reserved by producers with one CAS on `tail` and
 * consumed in order at `head`. Their cells live in segments (core/seg.h:
 * INS_SEG_BYTES each, from the process's pool): position p is cell
 * p % per_seg of the segment in slot[(p / per_seg) % nslots], a table of
 * 2 * cap / per_seg slots; a slot with no segment holds the mark of the
 * segment of positions that uses it next (ring.c). A producer that finds its
 * slot empty, marked for its position, takes a segment from the pool and
 * installs it (CAS from that mark: the loser gives its own back); the consumer gives a segment back once it has
 * consumed its last cell, or, at the end of a drain, finds the ring empty
 * (ins_ring_trim). So a ring holds what is waiting in it, rounded up to a
 * segment: nothing once drained.
 *
 * Why this is safe without a lock or a reference count:
 *  - Full is a count: a producer reserves p only while p < head + cap (it reads
 *    `limit`, the producers' copy of that, and head itself only when it says full).
 *    With twice as many slots as a full ring spans, the slot of p last held the
 *    segment of positions at least cap before p: consumed, and given back before
 *    head passed them (head is stored after, with release). So a producer sees
 *    its slot empty or holding the segment of p, never an older one.
 *  - A producer writes a cell only after its CAS on tail succeeded for p: then p
 *    was not yet reserved, so not consumed, so its segment was not given back.
 *    A producer whose p was stale loses the CAS and touches no segment; it
 *    installs none either, once the consumer has given p's segment back or
 *    skipped it (the slot's mark has moved on), so a drained ring holds none.
 *  - A cell holds the record of p once its `seq` is p + 1. Positions are unique in
 *    the process (each ring's in a span of 2^32 of its own, a new span when it has used
 *    half of one: ring.c), so what an earlier user of a segment left in it never reads
 *    as a record: no cell is ever cleared, and the consumer only reads cells.
 *  - A producer never reserves at or past `end`, its span's end; the consumer moves an
 *    empty ring to a new span at a trim (tail, then end, then head).
 * Full, or no segment to be had (the process's cap): "drop and count", never wait.
 * A producer wakes the consumer by the policy core/wake.h states (its test on a
 * ring is inline at the end of this file).
 */
#ifndef INS_RING_H
#define INS_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wake.h" /* the dump thread's wake-up: a producer wakes it (below, and ring.c) */

struct ins_ring {
  /* the producers' line: what they write (tail, limit) and read (the rest) */
  _Alignas(64) _Atomic uint64_t tail; /* next position to reserve */
  _Atomic uint64_t limit;             /* head + cap, head as a producer last read it: never
                                         ahead of the real limit (positions below it have room) */
  uint64_t cap;                       /* records at most (a power of two) */
  _Atomic uintptr_t *slot;            /* segment of each span of positions, or the mark
                                         of the next one (odd: ring.c) */
  uint32_t seg_shift;                 /* log2(per_seg) */
  uint32_t cell_mask;                 /* per_seg - 1: cells per segment, a power of two */
  uint32_t slot_mask;                 /* nslots - 1 */
  uint32_t stride;                    /* bytes per cell, header included */
  _Atomic uint64_t end;               /* the end of the ring's span: no position reserved at or
                                         past it (written by the consumer, read by producers
                                         only when `limit` says full) */
  _Alignas(64) _Atomic uint64_t head; /* next position to consume (written by the consumer only) */
  uint64_t spare;                     /* the consumer's: a span taken for the next move, 0 none */
};

/* A ring of at most `capacity` (power of two) cells of `payload` bytes each: a slot
 * table (16 bytes per segment of a full ring), no cells yet. 0, or -1 (no memory), or -2
 * (the process has made so many rings that no span of positions is left: ring.c). */
int ins_ring_init(struct ins_ring *r, uint32_t capacity, size_t payload);
/* Gives every segment back (records still in it are dropped) and frees the table. */
void ins_ring_free(struct ins_ring *r);

/* Producer: reserve a cell; NULL when the ring is full or no segment is to be had.
 * Fill it, then commit. */
void *ins_ring_reserve(struct ins_ring *r, uint64_t *pos);
void ins_ring_commit(struct ins_ring *r, void *payload, uint64_t pos);

/* Consumer: the oldest published payload or NULL; release it after use. */
void *ins_ring_peek(struct ins_ring *r);
void ins_ring_release(struct ins_ring *r, void *payload);
/* Consumer, at the end of each drain of the ring: if it is empty, it gives its last
 * segment back (a segment is given back as soon as its last record is released; this
 * is for the one records were still going into). */
void ins_ring_trim(struct ins_ring *r);

/* Approximate number of reserved cells (for the "wake the dump thread early" test). */
static inline uint64_t ins_ring_used_approx(struct ins_ring *r) {
  return atomic_load_explicit(&r->tail, memory_order_relaxed) -
         atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Bytes the ring holds now: its slot table and its segments (core/comm.h accounts). */
size_t ins_ring_bytes(struct ins_ring *r);

/* ---- waking the consumer: the policy core/wake.h states, on a ring ---- */

/* Whether ring r holds enough records to wake the dump thread (the policy). */
static inline bool ins_wake_wanted(struct ins_ring *r) {
  uint64_t used = ins_ring_used_approx(r);
  uint64_t threshold = r->cap >> g_ins_wake.full_shift;
  return used >= (threshold ? threshold : 1);
}

/* Producer side: after committing a record to ring r. */
static inline void ins_wake_after_push(struct ins_ring *r) {
  atomic_thread_fence(memory_order_seq_cst);
  if (!atomic_load_explicit(&g_ins_wake.waiting, memory_order_relaxed)) return;
  if (ins_wake_wanted(r)) ins_wake_signal(&g_ins_wake);
}

#endif
