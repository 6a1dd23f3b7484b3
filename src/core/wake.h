/* SPDX-License-Identifier: Apache-2.0 */
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
 *
 * The policy's test on a ring (ins_wake_wanted, ins_wake_after_push) is
 * inline in core/ring.h, which includes this file: rings wake the dump
 * thread, and this mechanism knows nothing of rings (includes point one way).
 */
#ifndef INS_WAKE_H
#define INS_WAKE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ins_wake {
  _Atomic uint32_t seq;     /* futex word: bumped by every wake */
  _Atomic uint32_t waiting; /* the dump thread is (about to be) asleep */
  uint8_t full_shift;       /* wake when cap >> full_shift cells are used (at least one) */
};

extern struct ins_wake g_ins_wake;

void ins_wake_signal(struct ins_wake *w);

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
