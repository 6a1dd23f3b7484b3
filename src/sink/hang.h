/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hang.h - hang detection: which ops of a communicator context have been in flight longer
 * than NCCL_INSPECTOR_HANG_SECONDS, which of them completed after all, and which contexts
 * have gone idle, decided on the dump thread (sink/dump.c runs a check of every context at
 * least every min(threshold / 4, 1 s), whatever the dump interval). What it finds goes to
 * the sinks through sink.h (struct ins_sink_hang, ins_sink_inflight); this file knows no
 * output. Part of the dump layer: it reads the ops in flight through core/inflight.h, never
 * an op itself, and the callbacks do nothing for it (no clock, no store they did not do).
 *
 * Time in flight, measured by the dump thread. A check notes how many ops the context has
 * issued so far (`issued`, with the check's time): an op issued as number i was first seen
 * in flight at the first check that noted more than i issued; its time in flight is the
 * time since that check, short by at most one check period. The checks' notes are kept
 * only as far back as the oldest op in flight needs: a few while ops flow. Were they to
 * outgrow INS_HANG_NOTES (ops issued at every check behind an op that stays in flight),
 * every other note is dropped, the oldest kept: an op behind the oldest is then taken to
 * have been seen later than it was (never earlier), its time short by about a twelfth of
 * the oldest's at most. So a time in flight is never overstated.
 *
 * Stuck. Every op in flight whose time passed the threshold is stuck (the oldest first,
 * normally the only one), unless the GPU is shown to be past it:
 *  - every channel of its kernel that started has stopped (at least one started): the GPU
 *    ran it; what it waits for is an event NCCL lost, or (an untrusted channel count:
 *    core/op.h) the token a later op's completion returns;
 *  - an op of a later application group, with kernel channels, completed (its record was
 *    taken): a context's kernels run in order on the GPU, so that one ran after it (an op
 *    that lost an event is finished by the tracker once INS_OVERTAKE_WINDOW later ops
 *    completed; until then, this).
 * Ops the tracker finished as overtaken (zombies, core/op.h) have left their slots: never
 * candidates, for the same reason. An op with no channel started is stuck too: its kernel
 * never started (queued behind something else, on the GPU or in NCCL).
 * A stuck op is said at once, again every threshold while it stays stuck (`repeat`), and
 * once resolved when it completes or is shown done after all. At most INS_HANG_SAID
 * stuck ops of a context are followed at once (the oldest first); a line counts the
 * context's ops in flight.
 *
 * Idle. A context that has issued ops, has none in flight, and has issued none since a
 * check first saw it so, for the threshold, is said idle (again every threshold while it
 * stays so): a live process's word that it has nothing pending, which tells a rank that
 * never issued an op from one whose process died (inspector-report).
 *
 * Before it says anything of a context, a check drains it (the caller's drain): its last
 * completed op is then the newest there is, and the evidence above fresh.
 */
#ifndef INS_HANG_H
#define INS_HANG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/record.h"
#include "sink/sink.h"

struct ins_comm;

#define INS_HANG_NOTES 24 /* checks' notes kept per context (see above) */
#define INS_HANG_SAID 8   /* stuck ops followed per context at once */

/* The period of the checks for a threshold (ns): a quarter of it, at most 1 s. */
static inline uint64_t ins_hang_period_ns(uint64_t threshold_ns) {
  uint64_t q = threshold_ns / 4;
  return q < 1000000000ull ? q : 1000000000ull;
}

/* A context's hang state: made at its first op (an idle context costs a pointer). */
struct ins_hang_comm;

/* What a check asks of its caller (the dump layer, c's drain lock held). */
struct ins_hang_io {
  void *arg;
  void (*drain)(void *arg); /* drain c now (its records to the sinks) */
  int (*say)(void *arg, const struct ins_sink_hang *h);
  void (*gauge)(void *arg, const struct ins_sink_inflight *f);
};

/* A record taken from c's rings (end_ns: its end in ns, 0 unknown): the newest completed op,
 * if it is. false: no memory for the state (it was said once). */
bool ins_hang_note(struct ins_hang_comm **h, const struct ins_record *r, uint64_t end_ns);
/* One check of c at now_ns (the hang clock: ins_hang_now), wall_us its wall-clock time,
 * against threshold_ns (> 0). */
void ins_hang_check(struct ins_hang_comm **h, const struct ins_comm *c, uint64_t now_ns,
                    uint64_t wall_us, uint64_t threshold_ns, const struct ins_hang_io *io);
void ins_hang_free(struct ins_hang_comm *h);

/* The checks' clock: CLOCK_MONOTONIC ns, or the test's (below). */
uint64_t ins_hang_now(void);
/* Tests only (tests/unit/sink/test_hang.c): when set, the checks' clock (not the dump thread's
 * schedule, which stays real). Set before the first init. */
extern uint64_t (*ins_hang_test_clock)(void);

#endif
