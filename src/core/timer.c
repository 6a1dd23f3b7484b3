/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timer.c - deciding the GPU timer's unit (see timer.h).
 */
#include "core/timer.h"

#include <assert.h>
#include <math.h>

void ins_timer_init(struct ins_timer *t, uint32_t rate_khz) {
  *t = (struct ins_timer){.rate_khz = rate_khz};
  /* Nothing to tell apart: no HIP (NCCL, pTimers are ns), or a 1 GHz wall clock. */
  if (!rate_khz || rate_khz == 1000000) t->unit = INS_TIMER_NS;
}

void ins_timer_observe(struct ins_timer *t, uint64_t ptimer_end, uint64_t host_ns) {
  if (t->unit != INS_TIMER_PENDING || !host_ns || !ptimer_end) return;
  if (!t->ops || host_ns < t->first_host)
    t->first_ptimer = ptimer_end, t->first_host = host_ns;
  if (!t->ops || host_ns > t->last_host)
    t->last_ptimer = ptimer_end, t->last_host = host_ns;
  t->ops++;
}

enum ins_timer_unit ins_timer_snap(double ratio, uint32_t rate_khz) {
  assert(rate_khz > 0);
  double ticks = (double)rate_khz / 1e6; /* ticks per ns */
  return fabs(log(ratio)) <= fabs(log(ratio / ticks)) ? INS_TIMER_NS : INS_TIMER_TICKS;
}

bool ins_timer_decide(struct ins_timer *t, bool force) {
  if (t->unit != INS_TIMER_PENDING) return true;
  uint64_t span = t->ops > 1 ? t->last_host - t->first_host : 0;
  bool moved = t->last_ptimer > t->first_ptimer;
  if (span >= INS_TIMER_SPAN_NS && moved) {
    t->measured = true;
  } else if (!force) {
    return false;
  } else {
    /* Finalized (or out of room) before 2 ms of ops: what there is, if anything. */
    t->measured = span > 0 && moved;
  }
  t->span_ns = span;
  if (t->measured) {
    t->ratio = (double)(t->last_ptimer - t->first_ptimer) / (double)span;
    t->unit = ins_timer_snap(t->ratio, t->rate_khz);
  } else {
    t->unit = INS_TIMER_TICKS; /* no evidence: what RCCL is known to send (timer.h) */
  }
  return true;
}

uint64_t ins_timer_to_ns(const struct ins_timer *t, uint64_t v) {
  if (t->unit != INS_TIMER_TICKS) return v;
  /* v ticks of rate_khz kHz = v * 1e6 / rate_khz ns; 128 bits: v may be a whole uptime */
  return (uint64_t)((unsigned __int128)v * 1000000u / t->rate_khz);
}
