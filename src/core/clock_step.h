/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock_step.h - a GPU clock that went back (an NTP step of the clock the GPU timer follows),
 * proven from the timestamps NCCL hands out, never guessed from their size.
 *
 * The floor of a communicator (core/op.c, "Whose timestamps?") is the latest GPU timestamp
 * delivered so far: an op issued after it cannot start sooner, so a channel that starts at or
 * below it has an earlier op's timestamps and is left out. That holds while the clock only goes
 * forward. After a step back of D, every op for the next D of time starts below the floor and
 * would be counted `handed_over`. How far below says nothing: an idle channel's slot holds its
 * last work's timestamps however old they are (minutes, on a communicator used once a minute),
 * and NCCL hands out such a slot when its counters disagree. What a stale slot cannot do is
 * produce new values:
 *
 *   NCCL's kernel writes a channel's start timestamps into 64 slots (op.h,
 *   INS_NCCL_PROFILER_SLOTS), one writer per channel (its block), each value read from the
 *   clock just before it is written. Let R be a timestamp delivered before an op was issued
 *   (the op's floor). When the GPU wrote R, the slots of a channel c held at most 64 values,
 *   and at most one more value had been read from the clock and not yet written. Every value
 *   read from the clock after that is at least R, if the clock never goes back. So at most 65
 *   distinct values below R can ever be read from c's start slots from then on; the op's
 *   channel events are read after it was issued, after R was delivered.
 *
 * So when more than INS_CLOCK_STEP_PROOF (65) distinct starts below one floor R arrive on one
 * channel, from ops issued when the floor was R, the clock went back: a step, proven. Stale
 * slots (a finite set of old values, handed out once or a hundred times) never prove one. The
 * price: the ops on such a channel up to the proof, 66 at most, the proving one included, are
 * counted `handed_over` (and only for as long as the step: a step of 1 ms is over after 1 ms of
 * ops); then the floor is the largest of those starts (delivered, in the new time) and ops are
 * timed again.
 *
 * core/op.c shows the watch the ops that ran wholly below their floor (their latest stop below
 * it), as every op does after a step back; an op that ended above its floor ran in the old time.
 * The watch counts distinct values as a channel's running maximum below R: a start counts only
 * if it is above every start counted on its channel, so a value handed out twice counts once.
 * A new episode begins when an op issued at a higher floor has channels below it (the count of
 * a lower floor says nothing about the new one); ops issued at a lower floor than the episode's
 * are not counted (their events may have been read before R was delivered).
 *
 * Owned by whichever thread completes an op that ran below its floor: two may at once (the
 * application's and NCCL's proxy thread), so the watch is a try-lock, and a completion that finds
 * it taken counts nothing (fewer counted: a later proof, never a wrong one). No wait, no
 * allocation, no I/O. Pure: tests drive it directly (tests/unit/core/test_clock_step.c).
 */
#ifndef INS_CLOCK_STEP_H
#define INS_CLOCK_STEP_H

#include <stdatomic.h>
#include <stdint.h>

/* channel ids, as INS_MAX_CHANNELS (op_types.h), and NCCL's slots per channel, as
 * INS_NCCL_PROFILER_SLOTS (op.h): not included here, asserted equal in op.c */
#define INS_CLOCK_STEP_CHANNELS 64
#define INS_CLOCK_STEP_SLOTS 64
/* distinct values below a floor that a channel's slots can still hand out: its slots, and one
 * value read from the clock but not yet written */
#define INS_CLOCK_STEP_PROOF (INS_CLOCK_STEP_SLOTS + 1)

struct ins_clock_step {
  atomic_flag busy;                      /* the try-lock: the fields below are its holder's */
  uint64_t ref;                          /* the floor R counted against; 0: no episode */
  uint64_t top[INS_CLOCK_STEP_CHANNELS]; /* per channel: the largest start below R counted */
  uint8_t n[INS_CLOCK_STEP_CHANNELS];    /* per channel: distinct starts below R counted */
};

/* Empty: no episode. (A zeroed struct is one too: atomic_flag's clear state is all zero
 * bytes on the targets we build for; ins_clock_step_init says it without relying on that.) */
void ins_clock_step_init(struct ins_clock_step *w);

/* An op issued at floor `floor` (> 0) completed with n channels starting below it: channel
 * ids ch[i], starts start[i] (< floor). Returns 0, or, when they prove a step back, the new
 * floor (> 0): the largest start counted, a timestamp delivered in the new time. The watch then
 * begins anew. */
uint64_t ins_clock_step_observe(struct ins_clock_step *w, uint64_t floor, const uint8_t *ch,
                                const uint64_t *start, int n);

#endif
