/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg.h - the process's pool of ring segments: the memory behind every
 * communicator's rings (core/ring.h), shared by all of them, so that what the
 * rings hold follows the records waiting to be written, not each ring's
 * configured size.
 *
 * A segment is INS_SEG_BYTES of ring cells. A ring takes one when a producer
 * reaches a position no segment holds yet, and gives it back when its consumer
 * has taken every record out of it (or, drained, found the ring empty:
 * ins_ring_trim).
 * Segments are slices of one mapping, reserved once per process at the first
 * communicator for the process's cap (NCCL_INSPECTOR_RING_MEMORY_MAX_MB): pages
 * never touched cost nothing, and a segment is named by its index in it. Free
 * segments wait on two lock-free stacks (heads tagged with a generation: no
 * ABA; the links live beside the segments, not in them):
 *  - warm: resident, reused first, up to INS_SEG_KEEP_WARM of them (4 MiB), or
 *    what one communicator's two rings hold full if more (ins_seg_keep_warm: a
 *    burst that one of them can hold does not fault its pages in again);
 *  - cold: beyond that, the consumer that gives one back returns its pages to
 *    the system (madvise MADV_DONTNEED) first; reused last.
 * Taking one (a producer, in a callback) is an atomic add and a compare-and-swap
 * or two: no lock, no system call, no allocation (the pages of a segment never
 * used, or cold, fault in as the ring writes them: docs/BENCHMARKS.md measures
 * it). Past the cap, or without the
 * mapping (it could not be made), there is none: the ring's record is dropped
 * and counted, as when a ring is full.
 *
 * Invariant: no cell of a free segment reads as the record of a position a ring
 * will use: a cell holds a record when its sequence word is its position + 1, and
 * positions are unique in the process (ring.c); pages never touched, or handed
 * back, read 0. So a segment needs no preparation, unless it was last used for
 * cells of another size (a process whose rings differ: the unit tests), whose
 * bytes could put any value where a sequence word now lies: then ins_seg_get
 * clears it.
 */
#ifndef INS_SEG_H
#define INS_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INS_SEG_BYTES 16384u     /* 128 records of 128 bytes */
#define INS_SEG_KEEP_WARM 256u   /* free segments kept resident at least: 4 MiB */
#define INS_SEG_DEFAULT_MAX_MB 1024

/* At communicator init (not a callback): reserve the mapping if not yet done, for
 * cap_bytes (or as much as can be had, down to 16 MiB), and cap what is handed out
 * at cap_bytes (at most what was reserved). 0, or -1 when no mapping could be made
 * (then every ring's records are dropped and counted). Takes no lock: a forked
 * child must never wait for a thread it does not have. */
int ins_seg_setup(size_t cap_bytes);

/* A producer: a free segment for cells of `stride` bytes, or NULL (past the cap, or no
 * mapping). */
void *ins_seg_get(uint32_t stride);
/* A producer that took one and did not need it (another installed one first). */
void ins_seg_unget(void *seg);
/* A consumer: a segment of cells of `stride` bytes whose every record was taken. */
void ins_seg_put(void *seg, uint32_t stride);
/* Keep at least `segs` free segments resident (communicator init: its full rings). */
void ins_seg_keep_warm(uint64_t segs);
/* Whether half the cap is handed out: time to wake the dump thread. */
bool ins_seg_pressed(void);

struct ins_seg_stats {
  uint64_t cap;      /* segments that may be handed out at once */
  uint64_t in_use;   /* held by rings */
  uint64_t warm;     /* free, resident */
  uint64_t cold;     /* free, pages handed back */
  uint64_t refused;  /* gets refused: cap reached (records dropped for it) */
  uint64_t reserved; /* bytes of the mapping (0: none) */
};
void ins_seg_stats(struct ins_seg_stats *st);

/* Gets were refused since the last call (the cap was reached): for a warning
 * from the consumer's side, never from a callback. */
bool ins_seg_take_refusals(uint64_t *total);

/* Unload with no segment held: unmap, forget (core/comm.c). No effect otherwise. */
void ins_seg_release(void);

#endif
