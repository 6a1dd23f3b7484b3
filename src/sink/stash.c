/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stash.c - the drainer's record FIFO (see stash.h).
 */
#include "sink/stash.h"

#include <stdlib.h>
#include <string.h>

void ins_stash_init(struct ins_stash *st, size_t bytes, int verbose) {
  st->slot_size = (INS_RECORD_MAX(verbose) + 15) & ~(size_t)15;
  st->head = st->count = 0;
  st->cap = (uint32_t)(bytes / st->slot_size);
  st->slot = st->cap > 1 ? malloc(st->cap * st->slot_size) : NULL;
  if (!st->slot) st->slot = st->one, st->cap = 1;
}

void ins_stash_free(struct ins_stash *st) {
  if (st->slot != st->one) free(st->slot);
  st->slot = NULL;
}

uint32_t ins_stash_take(struct ins_stash *st, struct ins_ring *ring, int verbose, uint64_t max) {
  struct ins_record *r;
  uint32_t n = 0;
  while (n < max && st->count < st->cap && (r = ins_ring_peek(ring))) {
    memcpy(st->slot + (size_t)((st->head + st->count) % st->cap) * st->slot_size, r,
           ins_record_size(r, verbose));
    st->count++;
    n++;
    ins_ring_release(ring, r);
  }
  return n;
}
