/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_timer.c - the GPU timer's unit, decided from evidence (core/timer.h):
 * the snap between ns and ticks, when a span of ops suffices, what a short
 * communicator gets, and the conversion. Expected values are worked by hand.
 */
#include <string.h>

#include "check.h"
#include "core/timer.h"

#define MS 1000000ull

static void test_snap(void) {
  /* 100 MHz: candidates 1 (ns) and 0.1 (ticks); the boundary is their geometric mean 0.316 */
  CHECK(ins_timer_snap(1.0, 100000) == INS_TIMER_NS);
  CHECK(ins_timer_snap(0.1, 100000) == INS_TIMER_TICKS);
  CHECK(ins_timer_snap(0.5, 100000) == INS_TIMER_NS);    /* host read 2x late: still ns */
  CHECK(ins_timer_snap(0.05, 100000) == INS_TIMER_TICKS); /* 2x early: still ticks */
  CHECK(ins_timer_snap(0.2, 100000) == INS_TIMER_TICKS);
  CHECK(ins_timer_snap(0.33, 100000) == INS_TIMER_NS);
  CHECK(ins_timer_snap(0.30, 100000) == INS_TIMER_TICKS);
  /* 25 MHz: ticks are 0.025 per ns */
  CHECK(ins_timer_snap(0.026, 25000) == INS_TIMER_TICKS);
  CHECK(ins_timer_snap(0.9, 25000) == INS_TIMER_NS);
}

static void test_decide(void) {
  struct ins_timer t;
  ins_timer_init(&t, 0); /* no HIP: ns, nothing to measure */
  CHECK(t.unit == INS_TIMER_NS);
  ins_timer_init(&t, 1000000); /* a 1 GHz clock: both readings agree */
  CHECK(t.unit == INS_TIMER_NS);

  /* ticks of 100 MHz: pTimer moves 0.1 per host ns. 1 ms is not enough... */
  ins_timer_init(&t, 100000);
  CHECK(t.unit == INS_TIMER_PENDING);
  uint64_t p0 = 5000000000ull, h0 = 77 * MS;
  ins_timer_observe(&t, p0, h0);
  ins_timer_observe(&t, p0 + 100000, h0 + 1 * MS);
  CHECK(!ins_timer_decide(&t, false));
  /* ...3 ms is; an op completing out of order (earlier host time) moves the first point */
  ins_timer_observe(&t, p0 + 300000, h0 + 3 * MS);
  ins_timer_observe(&t, p0 - 10000, h0 - MS / 10);
  CHECK(ins_timer_decide(&t, false));
  CHECK(t.unit == INS_TIMER_TICKS && t.measured);
  CHECK(t.ops == 4);
  CHECK_EQ_U(t.span_ns, 3 * MS + MS / 10);
  CHECK(t.ratio > 0.0999 && t.ratio < 0.1001);
  CHECK_EQ_U(ins_timer_to_ns(&t, 123), 1230);
  /* a whole uptime in ticks does not overflow */
  CHECK_EQ_U(ins_timer_to_ns(&t, 1000000000000000000ull), 10000000000000000000ull);

  /* ns pTimers under HIP (a future RCCL that converts): ratio 1 */
  ins_timer_init(&t, 100000);
  ins_timer_observe(&t, 9 * MS, 1 * MS);
  ins_timer_observe(&t, 14 * MS, 6 * MS);
  CHECK(ins_timer_decide(&t, false));
  CHECK(t.unit == INS_TIMER_NS && t.measured);
  CHECK_EQ_U(ins_timer_to_ns(&t, 123), 123);

  /* finalized after 0.5 ms of ops: decided on that, when forced */
  ins_timer_init(&t, 25000);
  ins_timer_observe(&t, 1000, 10 * MS);
  ins_timer_observe(&t, 1000 + 12500, 10 * MS + MS / 2); /* 0.025 per ns: ticks */
  CHECK(!ins_timer_decide(&t, false));
  CHECK(ins_timer_decide(&t, true));
  CHECK(t.unit == INS_TIMER_TICKS && t.measured);
  CHECK_EQ_U(ins_timer_to_ns(&t, 25), 1000);

  /* one op, or none with a host time: nothing to measure; ticks assumed */
  ins_timer_init(&t, 100000);
  ins_timer_observe(&t, 1000, 5 * MS);
  ins_timer_observe(&t, 2000, 0); /* host clock not read: ignored */
  CHECK(ins_timer_decide(&t, true));
  CHECK(t.unit == INS_TIMER_TICKS && !t.measured);
  CHECK(t.ops == 1);
}

int main(void) {
  test_snap();
  test_decide();
  return check_report("timer");
}
