/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock_step.c - proving that the GPU clock went back (see clock_step.h).
 */
#include "core/clock_step.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

_Static_assert(INS_CLOCK_STEP_PROOF < UINT8_MAX, "a count fits its byte");
_Static_assert((INS_CLOCK_STEP_CHANNELS & (INS_CLOCK_STEP_CHANNELS - 1)) == 0, "a power of two");

void ins_clock_step_init(struct ins_clock_step *w) {
  atomic_flag_clear(&w->busy);
  w->ref = 0;
  memset(w->top, 0, sizeof w->top);
  memset(w->n, 0, sizeof w->n);
}

/* A new episode, against floor r (0: none). */
static void restart(struct ins_clock_step *w, uint64_t r) {
  w->ref = r;
  memset(w->n, 0, sizeof w->n);
}

uint64_t ins_clock_step_observe(struct ins_clock_step *w, uint64_t floor, const uint8_t *ch,
                                const uint64_t *start, int n) {
  if (!floor || n <= 0) return 0;
  if (atomic_flag_test_and_set_explicit(&w->busy, memory_order_acquire))
    return 0; /* another completion counts: this one counts nothing (clock_step.h) */
  uint64_t new_floor = 0;
  bool proven = false;
  if (floor > w->ref) restart(w, floor);
  if (floor == w->ref) { /* a lower floor: its events may have been read before R came */
    for (int i = 0; i < n; i++) {
      unsigned c = ch[i] & (INS_CLOCK_STEP_CHANNELS - 1);
      assert(start[i] < floor);
      /* distinct values: only a start above every one counted on its channel counts */
      if (w->n[c] && start[i] <= w->top[c]) continue;
      w->top[c] = start[i];
      if (++w->n[c] > INS_CLOCK_STEP_PROOF) proven = true;
    }
    if (proven) {
      /* the new floor: the largest start counted, on any channel (each was delivered, and
       * each is below R: in the new time) */
      for (int c = 0; c < INS_CLOCK_STEP_CHANNELS; c++)
        if (w->n[c] && w->top[c] > new_floor) new_floor = w->top[c];
      restart(w, 0);
    }
  }
  atomic_flag_clear_explicit(&w->busy, memory_order_release);
  return new_floor;
}
