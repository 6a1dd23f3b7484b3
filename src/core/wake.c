/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wake.c - futex-based wake-up of the dump thread (see wake.h).
 */
#include "core/wake.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ins_wake g_ins_wake = {.full_shift = 1}; /* ins_dump_start sets the policy */

void ins_wake_signal(struct ins_wake *w) {
  if (!atomic_exchange(&w->waiting, 0)) return; /* someone else woke it */
  atomic_fetch_add(&w->seq, 1);
  syscall(SYS_futex, &w->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

uint32_t ins_wake_prepare(struct ins_wake *w) {
  uint32_t s = atomic_load(&w->seq);
  atomic_store(&w->waiting, 1);
  atomic_thread_fence(memory_order_seq_cst);
  return s;
}

void ins_wake_wait(struct ins_wake *w, uint32_t seq, long long timeout_us) {
  struct timespec ts, *tsp = NULL;
  if (timeout_us >= 0) {
    ts.tv_sec = timeout_us / 1000000;
    ts.tv_nsec = (timeout_us % 1000000) * 1000;
    tsp = &ts;
  }
  syscall(SYS_futex, &w->seq, FUTEX_WAIT_PRIVATE, seq, tsp, NULL, 0);
}

void ins_wake_done(struct ins_wake *w) { atomic_store(&w->waiting, 0); }
