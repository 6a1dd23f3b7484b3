/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stash.h - the drainer's FIFO of records taken out of the rings ahead of
 * formatting.
 *
 * A drain moves records out of a ring (a copy of about 100 bytes each)
 * before handing them to the sinks (about half a microsecond each for JSON),
 * and moves whatever else has been published before each record it hands
 * on. A burst of completions (a producer catching up after the VM or the
 * scheduler held it for a few milliseconds: 1,000 records in 200 us) is then
 * absorbed at copying speed instead of filling the ring while the text is
 * being made. Fixed-size slots, owned by whoever drains (never shared),
 * emptied before the drain of a context returns. Finalize and exit drain
 * contexts whose producers are done: one slot (`one`) is enough there, and it
 * is what the dump thread falls back to without memory.
 * Size: at 500,000 records/s into tmpfs in a 2-core VM the dump thread's
 * backlog reached 4,071 records in a run without drops, against the 4,681
 * that 512 KiB held; 2 MiB (37 ms at that rate) leaves room, for a fixed
 * 2 MiB per process (docs/BENCHMARKS.md).
 */
#ifndef INS_STASH_H
#define INS_STASH_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"
#include "core/ring.h"

struct ins_stash {
  unsigned char *slot;
  size_t slot_size;          /* a record, and its verbose channel trace in verbose mode */
  uint32_t cap, head, count;
  _Alignas(16) unsigned char one[INS_RECORD_MAX(1)];
};

/* A stash of about `bytes` (0: the one built-in slot) for records of verbose rings or not. */
void ins_stash_init(struct ins_stash *st, size_t bytes, int verbose);
void ins_stash_free(struct ins_stash *st);
/* Move the published records of ring into the stash, while it has room, `max` of them at
 * most; how many it moved. */
uint32_t ins_stash_take(struct ins_stash *st, struct ins_ring *ring, int verbose, uint64_t max);

/* The oldest record, or NULL when empty; ins_stash_pop drops it. */
static inline struct ins_record *ins_stash_head(struct ins_stash *st) {
  return st->count ? (struct ins_record *)(st->slot + (size_t)st->head * st->slot_size) : NULL;
}
static inline void ins_stash_pop(struct ins_stash *st) {
  st->head = (st->head + 1) % st->cap;
  st->count--;
}

#endif
