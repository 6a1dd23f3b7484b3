/*
 * wake.h - how a producer wakes the dump thread without a lock or a system
 * call in the common case.
 *
 * The dump thread announces that it is about to sleep (`waiting`), checks
 * the rings once more, then sleeps on a futex word. A producer that just
 * published a record wakes it only if it is waiting and the policy says so
 * (interval 0: a ring a sixteenth full, the thread also waking every
 * millisecond by itself; interval N > 0: a ring a quarter full, which
 * leaves three quarters of the ring for the time the dump thread takes to
 * wake up and drain; -1: a ring half full), or once the rings of the whole
 * process hold half of their memory cap (core/seg.h; the producer that takes
 * a segment then wakes it: ring.c, install). The
 * seq_cst fences on both sides make the "publish, then check waiting" and
 * "set waiting, then check rings" pair race-free (no lost wake-up).
 */
#ifndef INS_WAKE_H
#define INS_WAKE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/ring.h"

struct ins_wake {
  _Atomic uint32_t seq;     /* futex word: bumped by every wake */
  _Atomic uint32_t waiting; /* the dump thread is (about to be) asleep */
  uint8_t full_shift;       /* wake when cap >> full_shift cells are used (at least one) */
};

extern struct ins_wake g_ins_wake;

void ins_wake_signal(struct ins_wake *w);

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

/* Dump thread: announce sleep; returns the seq to wait on. Then check every
 * ring with ins_wake_wanted and sleep only if none wants it: a ring that
 * filled before `waiting` was set had no producer to wake the thread (a full
 * ring drops, and a drop does not wake). */
uint32_t ins_wake_prepare(struct ins_wake *w);
/* Dump thread: sleep until signalled or timeout_us passes (< 0: no timeout). */
void ins_wake_wait(struct ins_wake *w, uint32_t seq, long long timeout_us);
/* Dump thread: awake again. */
void ins_wake_done(struct ins_wake *w);

#endif
