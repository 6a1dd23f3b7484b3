/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ring.c - the segmented MPSC ring (see ring.h for the algorithm and why it is
 * safe; core/seg.h for where segments come from).
 *
 * Cost on the producer's path against the fixed ring this replaced (one cell
 * array allocated, and every page touched, at init): the room test reads
 * `limit`, on the producers' own line, instead of the cell's sequence word,
 * and the cell's address takes one more load (the slot); once per segment
 * (128 records) a producer takes one from the pool. Measured with make bench's
 * callgrind, docs/BENCHMARKS.md.
 */
#include "core/ring.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/seg.h"
#include "core/wake.h"

/* seq: pos + 1 once the record of position pos is in the cell; anything else (what an
 * earlier user of the segment left) is not a record, since no ring of the process ever
 * uses that position again (positions are unique in the process: the spans, below). */
struct cell_hdr { _Atomic uint64_t seq; uint64_t pad; };
#define HDR sizeof(struct cell_hdr)

/*
 * Spans. Each ring's positions lie in a span of its own: 2^32 positions (span s is
 * [s << 32, (s + 1) << 32)), from a process-wide count, so that positions are unique in
 * the process and a segment a ring reuses, or takes over from another, needs no clearing:
 * its old sequence words are other positions. So the consumer never writes a cell (it only
 * reads them), and a segment is handed on as it is.
 *
 * A span is not enough for a ring's life (positions skipped by trims included, 2^32 is 12
 * hours at 100,000 records a second): a ring that has used half of its span takes a new
 * one at a trim that finds it empty (ins_ring_trim: tail, then head, jump to the new
 * span's start; a producer that sees tail moved and head not yet looks again). Producers
 * never reserve past the span's end (`end`): a ring never empty at a trim for 2^31
 * positions drops records there, counted as when it is full, until the consumer has
 * drained it and moved it.
 *
 * The count never wraps. Spans run from 1 to 2^32 - 2: the last is left out, so that no
 * sequence word (position + 1) or room test (head + cap) passes 2^64. When every span is
 * handed out (4 billion rings made or moved: 2 billion communicators, two rings each) a new
 * ring is refused (ins_ring_init: -2; its communicator is not tracked, said) and a ring
 * stays in its span. The bases were once 2^40 apart from
 * a count that wrapped after 2^24 rings, onto the bases of rings still live, and a ring
 * that passed 2^40 positions ran into the next ring's: a stale cell then read as a record.
 */
#define RING_SPAN_SHIFT 32
static unsigned g_span_shift = RING_SPAN_SHIFT; /* only tests change it (ins_ring_test_spans) */
static _Atomic uint64_t g_next_span = 1;

/* A new span's first position, or 0 when every span is handed out. */
static uint64_t take_span(void) {
  uint64_t last = (UINT64_MAX >> g_span_shift) - 1;
  uint64_t s = atomic_load_explicit(&g_next_span, memory_order_relaxed);
  do {
    if (s > last) return 0;
  } while (!atomic_compare_exchange_weak_explicit(&g_next_span, &s, s + 1, memory_order_relaxed,
                                                  memory_order_relaxed));
  return s << g_span_shift;
}

#ifdef INS_TEST_HOOKS
/* Tests only (CMake defines INS_TEST_HOOKS where the tests are built; a package has no
 * such function: tests/test_package.py): spans of 2^shift positions from now on (0: as
 * they are), and the next span handed out is `next`, so that a test reaches the last
 * spans, or moves a ring many times, quickly (tests/unit/core/test_ring_spans.c declares it). */
void ins_ring_test_spans(unsigned shift, uint64_t next);
void ins_ring_test_spans(unsigned shift, uint64_t next) {
  if (shift) g_span_shift = shift;
  atomic_store(&g_next_span, next);
}
#endif

static inline _Atomic uintptr_t *slot_of(struct ins_ring *r, uint64_t pos) {
  return &r->slot[(pos >> r->seg_shift) & r->slot_mask];
}

/*
 * What a slot holds: a segment (its address: even, segments are aligned) or, when it holds
 * none, the mark of the segment it may take next: EMPTY(n), n the number of the segment
 * of positions (position >> seg_shift) that will use the slot next. A producer installs
 * a segment only into the mark of its own position's segment (one CAS), so one whose
 * position is stale (the consumer has given that segment back, or skipped it at a trim:
 * the mark has moved on) installs nothing; with a plain 0 it installed one that no
 * position would use until the ring came round to the slot again, held by a drained ring.
 * A mark is the number, shifted, with its low bit set (it wraps past 2^63 segments, which
 * no ring reaches: spans end at 2^64 positions).
 */
#define EMPTY(n) (((uintptr_t)(n) << 1) | 1)
static inline bool is_seg(uintptr_t v) { return (v & 1) == 0; }

/* The mark of slot k for a ring whose next segments start at number `first`: the first
 * number from there that uses slot k. */
static inline uintptr_t mark_from(const struct ins_ring *r, uint64_t first, uint32_t k) {
  return EMPTY(first + ((k - first) & r->slot_mask));
}

static inline struct cell_hdr *cell_in(struct ins_ring *r, uintptr_t seg, uint64_t pos) {
  return (struct cell_hdr *)(seg + (pos & r->cell_mask) * r->stride);
}

int ins_ring_init(struct ins_ring *r, uint32_t capacity, size_t payload) {
  /* positions map to cells and slots by masks: a power of two (core/config.c rounds up) */
  assert(capacity >= 2 && (capacity & (capacity - 1)) == 0);
  /* a full ring fits in half a span: it moves to a new one with room to spare */
  assert((uint64_t)capacity <= (1ull << g_span_shift) / 2);
  memset(r, 0, sizeof *r);
  size_t stride = (HDR + payload + 15) & ~(size_t)15;
  if (stride > INS_SEG_BYTES) return -1;
  uint32_t per = 1; /* cells per segment: as many as fit, a power of two, at most the ring */
  while ((size_t)per * 2 * stride <= INS_SEG_BYTES && per < capacity) per *= 2;
  /* twice the slots a full ring spans (ring.h: a producer never finds an older segment) */
  uint32_t nslots = 2 * (capacity / per);
  uint64_t base = take_span();
  if (!base) return -2;
  r->slot = malloc(nslots * sizeof *r->slot);
  if (!r->slot) return -1;
  r->cap = capacity;
  r->stride = (uint32_t)stride;
  r->cell_mask = per - 1;
  r->seg_shift = (uint32_t)__builtin_ctz(per);
  r->slot_mask = nslots - 1;
  for (uint32_t k = 0; k < nslots; k++) atomic_init(&r->slot[k], mark_from(r, base >> r->seg_shift, k));
  atomic_init(&r->tail, base);
  atomic_init(&r->limit, base + capacity);
  atomic_init(&r->end, base + (1ull << g_span_shift));
  atomic_init(&r->head, base);
  return 0;
}

void ins_ring_free(struct ins_ring *r) {
  if (!r->slot) return;
  /* records still in them are dropped: their positions are this ring's, never seen again */
  for (uint32_t k = 0; k <= r->slot_mask; k++) {
    uintptr_t seg = atomic_load_explicit(&r->slot[k], memory_order_acquire);
    if (is_seg(seg)) ins_seg_put((void *)seg, r->stride);
  }
  free(r->slot);
  r->slot = NULL;
}

size_t ins_ring_bytes(struct ins_ring *r) {
  if (!r->slot) return 0;
  size_t n = (size_t)(r->slot_mask + 1) * sizeof *r->slot;
  for (uint32_t k = 0; k <= r->slot_mask; k++)
    if (is_seg(atomic_load_explicit(&r->slot[k], memory_order_relaxed))) n += INS_SEG_BYTES;
  return n;
}

/* The slot holds `mark`, that of the segment of the producer's position: take a
 * segment from the pool and install it, unless another producer did first. The slot's
 * segment; or 0 when none is to be had; or 1 (odd, not a segment) when the slot's mark
 * has moved on (the position is stale: the caller reads tail again). */
static uintptr_t install(struct ins_ring *r, _Atomic uintptr_t *slot, uintptr_t mark) {
  void *seg = ins_seg_get(r->stride);
  if (!seg) return 0;
  assert(is_seg((uintptr_t)seg));
  uintptr_t had = mark;
  if (!atomic_compare_exchange_strong_explicit(slot, &had, (uintptr_t)seg, memory_order_acq_rel,
                                               memory_order_acquire)) {
    ins_seg_unget(seg);
    return is_seg(had) ? had : 1;
  }
  /* the process's rings hold half the cap: the dump thread drains them before records drop */
  if (ins_seg_pressed()) {
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&g_ins_wake.waiting, memory_order_relaxed)) ins_wake_signal(&g_ins_wake);
  }
  return (uintptr_t)seg;
}

/* Everything but the common case: the room test failed on `limit` (read head
 * itself), the slot has no segment, or another producer won the CAS. */
static __attribute__((noinline)) void *reserve_slow(struct ins_ring *r, uint64_t *pos_out) {
  uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
  for (int moving = 0;;) {
    if (pos >= atomic_load_explicit(&r->limit, memory_order_acquire)) {
      uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
      /* after head: the end of the span head is in (ins_ring_trim stores it before head) */
      uint64_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
      uint64_t lim = h + r->cap < end ? h + r->cap : end;
      atomic_store_explicit(&r->limit, lim, memory_order_release);
      if (pos >= lim) {
        /* full, or at the span's end; or (tail more than a ring past head) the consumer
         * has moved tail to a new span and not yet head: a moment, look again */
        if (pos - h <= r->cap || ++moving > 8) return NULL;
        pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        continue;
      }
    }
    _Atomic uintptr_t *slot = slot_of(r, pos);
    uintptr_t seg = atomic_load_explicit(slot, memory_order_acquire);
    if (!is_seg(seg)) {
      /* a mark: pos's own (install), or a later one (pos is stale: tail has moved on) */
      if (seg == EMPTY(pos >> r->seg_shift) && !(seg = install(r, slot, seg))) return NULL;
      if (!is_seg(seg)) {
        uint64_t now = atomic_load_explicit(&r->tail, memory_order_relaxed);
        /* a stale position means tail has moved: never a mark not its own at tail itself */
        assert(now != pos);
        if (now == pos) return NULL;
        pos = now;
        continue;
      }
    }
    if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *pos_out = pos;
      return (unsigned char *)cell_in(r, seg, pos) + HDR;
    }
  }
}

void *ins_ring_reserve(struct ins_ring *r, uint64_t *pos_out) {
  uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
  if (__builtin_expect(pos < atomic_load_explicit(&r->limit, memory_order_acquire), 1)) {
    uintptr_t seg = atomic_load_explicit(slot_of(r, pos), memory_order_acquire);
    if (__builtin_expect(is_seg(seg), 1) &&
        __builtin_expect(atomic_compare_exchange_strong_explicit(&r->tail, &pos, pos + 1,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed), 1)) {
      *pos_out = pos;
      return (unsigned char *)cell_in(r, seg, pos) + HDR;
    }
  }
  return reserve_slow(r, pos_out);
}

void ins_ring_commit(struct ins_ring *r, void *payload, uint64_t pos) {
  (void)r;
  struct cell_hdr *c = (struct cell_hdr *)((unsigned char *)payload - HDR);
  /* the cell reserved for pos, not committed yet */
  assert(c == cell_in(r, atomic_load_explicit(slot_of(r, pos), memory_order_relaxed), pos) &&
         atomic_load_explicit(&c->seq, memory_order_relaxed) != pos + 1);
  atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
}

/* The consumer is done with the segment of position h (every record in it taken, or
 * the rest skipped): out of its slot, which is marked for the segment that uses it next,
 * and back to the pool. Before head moves past it (ring.h). */
static void give_back(struct ins_ring *r, uint64_t h, uintptr_t seg) {
  atomic_store_explicit(slot_of(r, h), EMPTY((h >> r->seg_shift) + r->slot_mask + 1),
                        memory_order_release);
  ins_seg_put((void *)seg, r->stride);
}

/* A move to the span starting at `to`: every slot marked for the new span's segments,
 * and any segment still in one given back (the head's, and one a producer whose position
 * was stale installed before the mark changed: its CAS on tail fails, so it never writes
 * there). Producers do not reach the new span's slots before head is there (reserve_slow:
 * `limit` and head say full until then). */
static void remark_for_move(struct ins_ring *r, uint64_t to) {
  for (uint32_t k = 0; k <= r->slot_mask; k++) {
    uintptr_t had = atomic_exchange_explicit(&r->slot[k], mark_from(r, to >> r->seg_shift, k),
                                             memory_order_acq_rel);
    if (is_seg(had)) ins_seg_put((void *)had, r->stride);
  }
}

/*
 * The ring holds the segment of head: if nothing is reserved past head (tail == head),
 * close the rest of that segment, moving tail to its end (a producer that reserved head
 * meanwhile wins, and the ring stays as it is), and give the segment back: a drained ring
 * holds none. Positions skipped this way are never used; head follows tail to the
 * segment's end. Once per drain, not whenever a peek finds nothing: a drain catches up
 * with a busy producer many times, and taking its segment each time made it start a new
 * one as often (2 to 5 ns more a callback at 500,000 records/s, measured: docs/BENCHMARKS.md).
 *
 * A ring past half its span moves to a new span the same way, segment or none: tail jumps
 * to the new span's start, then `end`, then head (the order reserve_slow relies on). The
 * span is taken once and kept (`spare`) until a trim finds the ring empty.
 */
void ins_ring_trim(struct ins_ring *r) {
  uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  uintptr_t seg = atomic_load_explicit(slot_of(r, h), memory_order_acquire);
  uint64_t end = atomic_load_explicit(&r->end, memory_order_relaxed);
  uint64_t span = 1ull << g_span_shift;
  if (end - h <= span / 2 && !r->spare) r->spare = take_span(); /* 0: none left, it stays */
  bool move = end - h <= span / 2 && r->spare;
  uint64_t t = h, to = move ? r->spare : (h | r->cell_mask) + 1;
  if ((!is_seg(seg) && !move) ||
      !atomic_compare_exchange_strong_explicit(&r->tail, &t, to, memory_order_relaxed, memory_order_relaxed))
    return;
  if (move) {
    remark_for_move(r, to);
    atomic_store_explicit(&r->end, to + span, memory_order_relaxed);
    r->spare = 0;
  } else {
    give_back(r, h, seg);
  }
  atomic_store_explicit(&r->head, to, memory_order_release);
}

/* Records were dropped because the process's rings held the cap (seg.h): said once, by
 * a consumer (a callback never logs). */
static void say_refusals(void) {
  static atomic_int warned;
  uint64_t n;
  if (!ins_seg_take_refusals(&n)) return;
  ins_warn_once(&warned, "the records waiting to be written reached NCCL_INSPECTOR_RING_MEMORY_MAX_MB: "
                "%llu dropped so far (counted in dump_stats); raise it, or write more often "
                "(NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS)", (unsigned long long)n);
}

void *ins_ring_peek(struct ins_ring *r) {
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uintptr_t seg = atomic_load_explicit(slot_of(r, head), memory_order_acquire);
  if (is_seg(seg)) {
    struct cell_hdr *c = cell_in(r, seg, head);
    if (atomic_load_explicit(&c->seq, memory_order_acquire) == head + 1)
      return (unsigned char *)c + HDR;
  }
  say_refusals();
  return NULL;
}

void ins_ring_release(struct ins_ring *r, void *payload) {
  struct cell_hdr *c = (struct cell_hdr *)((unsigned char *)payload - HDR);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uintptr_t seg = (uintptr_t)c - (head & r->cell_mask) * r->stride;
  /* one consumer, in order: the payload is the one peek gave */
  assert(seg == atomic_load_explicit(slot_of(r, head), memory_order_relaxed) &&
         atomic_load_explicit(&c->seq, memory_order_relaxed) == head + 1);
  if ((head & r->cell_mask) == r->cell_mask) give_back(r, head, seg);
  atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

#ifdef INS_TEST_HOOKS
/* Tests only: an empty ring, no producer running, placed at position p of its span (its
 * slots marked for p's segments, as if it had come there), to test its span's end. */
void ins_ring_test_place(struct ins_ring *r, uint64_t p);
void ins_ring_test_place(struct ins_ring *r, uint64_t p) {
  assert(atomic_load(&r->tail) == atomic_load(&r->head));
  for (uint32_t k = 0; k <= r->slot_mask; k++) {
    uintptr_t had = atomic_exchange(&r->slot[k], mark_from(r, p >> r->seg_shift, k));
    if (is_seg(had)) ins_seg_put((void *)had, r->stride);
  }
  atomic_store(&r->tail, p);
  atomic_store(&r->head, p);
  atomic_store(&r->limit, p); /* the next reserve reads head and the span's end */
}
#endif
