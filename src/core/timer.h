/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timer.h - the unit of a communicator's GPU timer (the kernel-channel
 * pTimers), measured rather than assumed.
 *
 * NCCL's pTimers are ns (the GPU's global timer). RCCL 2.28.3 hands over
 * wall_clock64() ticks instead: a 100 MHz counter on MI300X, so read as ns
 * every time is 10x too short and every bandwidth 10x too high. A version
 * number or a flag would not settle it (a later RCCL may convert to ns
 * itself, and a plugin that always scaled would then be 10x wrong the other
 * way), so the evidence decides:
 *  - the rate: what HIP reports for the context's device
 *    (hipDeviceAttributeWallClockRate, kHz; core/device.h), asked only when
 *    the HIP runtime is already in the process. Without HIP (NCCL) there is
 *    nothing to decide: pTimers are ns, and nothing here runs;
 *  - the unit: over the communicator's first ops, how far the pTimers moved
 *    against how far the host clock moved (CLOCK_MONOTONIC read as each op
 *    completes, only while measuring). About 1 means ns, about rate/1e9
 *    means ticks; the ratio snaps to the nearer of the two in log scale, so
 *    a host clock read late by up to a factor of sqrt(1e9/rate) (3.2 at
 *    100 MHz) changes nothing.
 * The measure needs INS_TIMER_SPAN_NS of host time between the first and
 * the latest op (a completion callback arrives tens of microseconds after
 * the kernel ended, at worst: 1-2% of that span). A communicator finalized
 * sooner is decided on what it had; with no span at all, ticks at HIP's rate
 * are assumed (what RCCL is known to do) and the records say so.
 *
 * The dump thread owns this state (it holds back a context's records until
 * the unit is known, then converts them: sink/dump.c); the callbacks only read
 * the context's timer_probe flag (core/comm.h) to know whether to read the
 * host clock.
 */
#ifndef INS_TIMER_H
#define INS_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#define INS_TIMER_SPAN_NS 2000000ull /* 2 ms of host time between first and latest op */

enum ins_timer_unit { INS_TIMER_PENDING = 0, INS_TIMER_NS, INS_TIMER_TICKS };

struct ins_timer {
  uint32_t rate_khz;        /* HIP's wall-clock rate; 0: no HIP (ns, nothing to measure) */
  enum ins_timer_unit unit; /* PENDING until decided */
  bool measured;            /* decided from a span of ops (else assumed) */
  double ratio;             /* pTimer progress / host progress, when measured */
  uint64_t span_ns;         /* host time the measure covered */
  uint32_t ops;             /* ops it covered */
  /* the evidence: the ops that completed first and last on the host */
  uint64_t first_ptimer, first_host, last_ptimer, last_host;
};

/* rate_khz 0 (no HIP): decided at once, ns. A rate of 1 GHz: ns too (both agree). */
void ins_timer_init(struct ins_timer *t, uint32_t rate_khz);
/* One GPU-timed op: pTimer at its end (raw), host ns at its completion (0: not read). */
void ins_timer_observe(struct ins_timer *t, uint64_t ptimer_end, uint64_t host_ns);
/* Decide if the evidence suffices, or whatever it is when `force` (finalize, exit, a
 * full holding buffer). Returns true once decided. */
bool ins_timer_decide(struct ins_timer *t, bool force);
/* The unit nearer to `ratio` in log scale: ns (1) or ticks (rate_khz / 1e6). */
enum ins_timer_unit ins_timer_snap(double ratio, uint32_t rate_khz);
/* A GPU timer value (or difference) in ns, once decided. */
uint64_t ins_timer_to_ns(const struct ins_timer *t, uint64_t v);

#endif
