/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_clock_step.c - a GPU clock that goes back (src/core/clock_step.h), first through the
 * plugin's v5 ABI and its JSON log (each case in a process of its own: fork_util.h), then the
 * proof itself (core/clock_step.c), driven directly.
 *   backward_step        a step of -1 s after 10 ops: the 66 ops that start below the floor
 *                        before the step is proven are handed_over; the step is counted once
 *                        (dump_stats clock_steps 1, one warning); every op after them is
 *                        written with its own, post-step time
 *   forward_step         a step of +1 s: every op written with its time, no step counted
 *   stale_slots          an idle channel's slot 10 minutes old, handed out as 65 distinct old
 *                        values (64 slots and one value in flight, the most stale slots can
 *                        hold) and as one of them 100 times more: all handed_over, never a step
 *   in_flight_at_proof   an op issued before the step was proven, completing after, with its
 *                        post-step time: judged against the new floor, written
 *   watch.*              the proof: the 66th distinct start below one floor on one channel and
 *                        not the 65th; a value handed out again counts once; channels apart;
 *                        an op of a lower floor counts nothing; a higher floor starts anew; a
 *                        busy watch counts nothing; two threads handing out the same 65 old
 *                        values at once never prove one (TSan: label threads)
 */
#include <pthread.h>

#include "fork_util.h"
#include "log_lines.h"

#include "core/clock_step.h"

#define T0 5000000000ull     /* the GPU clock at the first op: 5 s */
#define GAP 20000ull         /* from one op's start to the next's */
#define STEP 1000000000ull   /* 1 s */
#define PROOF (INS_CLOCK_STEP_PROOF + 1) /* starts below the floor that prove a step: 66 */

/* An AllReduce in a group of its own (certain: core/judge.h) on 2 channels, starting at t:
 * channel 0 from t to t + 8 us, channel 1 from t + 1 us to t + 9 us. */
static void op_at(void *ctx, uint64_t sn, uint64_t t) {
  oo_group(ctx);
  CHECK(oo_allreduce(ctx, sn, (struct oo_span[]){{t, t + 8000}, {t + 1000, t + 9000}}, 2));
}

/* The same on channel `ch` alone, from t to t + 8 us. */
static void op_on(void *ctx, uint64_t sn, int ch, uint64_t t) {
  oo_group(ctx);
  void *op = oo_allreduce_start(ctx, sn, 1);
  CHECK(op != NULL);
  if (!op) return;
  CHECK(oo_channels(ctx, op, ch, &(struct oo_span){t, t + 8000}, 1));
  ncclProfiler_v5.stopEvent(op);
}

/* Record sn written, from t to t + 9 us. */
static void written_at(const char *log, uint64_t sn, uint64_t t) {
  char line[16384];
  CHECK(record_of(log, sn, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), t);
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 9000);
  CHECK_EQ_U(field(line, "coll_stale_channels"), 0);
}

static int case_backward_step(const char *dir) {
  void *c = fu_init(0xc5);
  uint64_t sn = 1;
  for (int i = 0; i < 10; i++, sn++) op_at(c, sn, T0 + (sn - 1) * GAP);
  /* the clock goes back 1 s: the next op starts 1 s - GAP before the last one did */
  uint64_t base = T0 + 10 * GAP - STEP; /* sn 11's start */
  for (int i = 0; i < PROOF + 14; i++, sn++) op_at(c, sn, base + (sn - 11) * GAP);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  for (uint64_t k = 1; k <= 10; k++) written_at(log, k, T0 + (k - 1) * GAP);
  /* below the floor until proven: no record */
  for (uint64_t k = 11; k < 11 + PROOF; k++) CHECK(!record_of(log, k, line, sizeof line));
  /* then timed again, in the new time */
  for (uint64_t k = 11 + PROOF; k < sn; k++) written_at(log, k, base + (k - 11) * GAP);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_records_total"), 10 + 14);
  CHECK_EQ_U(field(line, "handed_over"), PROOF);
  CHECK_EQ_U(field(line, "clock_steps"), 1);
  CHECK_EQ_U(atomic_load(&fu_warns), 1);
  CHECK(strstr(fu_last_warn, "GPU clock went back") != NULL);
  free(log);
  return g_fail;
}

static int case_forward_step(const char *dir) {
  void *c = fu_init(0xc6);
  uint64_t sn = 1;
  for (int i = 0; i < 10; i++, sn++) op_at(c, sn, T0 + (sn - 1) * GAP);
  for (int i = 0; i < 80; i++, sn++) op_at(c, sn, T0 + STEP + (sn - 1) * GAP);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  for (uint64_t k = 1; k < sn; k++) written_at(log, k, T0 + (k > 10 ? STEP : 0) + (k - 1) * GAP);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_records_total"), 90);
  CHECK_EQ_U(field(line, "handed_over"), 0);
  CHECK_EQ_U(field(line, "clock_steps"), UINT64_MAX); /* not there */
  CHECK_EQ_U(atomic_load(&fu_warns), 0);
  free(log);
  return g_fail;
}

static int case_stale_slots(const char *dir) {
  void *c = fu_init(0xc7);
  uint64_t sn = 1;
  op_at(c, sn++, T0); /* both channels: channel 0's last work for a while */
  /* 10 minutes of ops on channel 1 alone: the floor is 10 minutes past channel 0's slot */
  uint64_t now = T0 + 600 * STEP;
  for (int i = 0; i < 4; i++, now += GAP) op_on(c, sn++, 1, now);
  /* channel 0 hands out old timestamps: 65 distinct values (every one its slots and one
   * value in flight can hold), then one of them 100 times over */
  for (int i = 0; i < INS_CLOCK_STEP_PROOF; i++) op_on(c, sn++, 0, T0 + (uint64_t)i * GAP);
  for (int i = 0; i < 100; i++) op_on(c, sn++, 0, T0 + (uint64_t)(INS_CLOCK_STEP_PROOF - 1) * GAP);
  uint64_t stale_end = sn;
  op_at(c, sn++, now); /* and a right op on both */
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  for (uint64_t k = 6; k < stale_end; k++) CHECK(!record_of(log, k, line, sizeof line));
  written_at(log, stale_end, now);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_records_total"), 6);
  CHECK_EQ_U(field(line, "handed_over"), INS_CLOCK_STEP_PROOF + 100);
  CHECK_EQ_U(field(line, "clock_steps"), UINT64_MAX);
  CHECK_EQ_U(atomic_load(&fu_warns), 0);
  free(log);
  return g_fail;
}

/* An AllReduce on 2 channels, started (in a group of its own) but not yet run. */
static void *op_begin(void *ctx, uint64_t sn) {
  oo_group(ctx);
  void *op = oo_allreduce_start(ctx, sn, 2);
  CHECK(op != NULL);
  return op;
}

/* Its channels, as op_at's from t, and its stop. */
static void op_run(void *ctx, void *op, uint64_t t) {
  if (!op) return;
  CHECK(oo_channels(ctx, op, 0, (struct oo_span[]){{t, t + 8000}, {t + 1000, t + 9000}}, 2));
  ncclProfiler_v5.stopEvent(op);
}

static int case_in_flight_at_proof(const char *dir) {
  void *c = fu_init(0xc8);
  uint64_t sn = 1;
  for (int i = 0; i < 10; i++, sn++) op_at(c, sn, T0 + (sn - 1) * GAP);
  uint64_t base = T0 + 10 * GAP - STEP;
  for (int i = 0; i < PROOF - 1; i++, sn++) op_at(c, sn, base + (sn - 11) * GAP);
  /* the op that proves the step, and one issued before its proof, both in flight */
  uint64_t prover = sn++, late = sn++;
  void *p = op_begin(c, prover), *l = op_begin(c, late);
  op_run(c, p, base + (prover - 11) * GAP);
  op_run(c, l, base + (late - 11) * GAP); /* completes after the proof */
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(!record_of(log, prover, line, sizeof line));
  written_at(log, late, base + (late - 11) * GAP);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "handed_over"), PROOF);
  CHECK_EQ_U(field(line, "clock_steps"), 1);
  free(log);
  return g_fail;
}

/* ---- the proof, driven directly (core/clock_step.c) ------------------------------------------ */

#define F 9000000ull /* a floor */

/* One op of floor f with one channel ch below it, starting at t: the new floor, or 0. */
static uint64_t one(struct ins_clock_step *w, uint64_t f, uint8_t ch, uint64_t t) {
  return ins_clock_step_observe(w, f, &ch, &t, 1);
}

static void watch_proof_boundary(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  /* 65 distinct starts below F on channel 3: stale slots could hold them all */
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F, 3, 1000 + i), 0);
  /* the 66th cannot be one: a step, the new floor the largest start counted */
  CHECK_EQ_U(one(&w, F, 3, 5000), 5000);
  /* and the watch begins anew */
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F, 3, 6000 + i), 0);
  CHECK_EQ_U(one(&w, F, 3, 7000), 7000);
}

static void watch_repeats(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF - 1; i++) CHECK_EQ_U(one(&w, F, 0, 1000 + i), 0);
  /* one value handed out 500 times, and values below those counted: distinct ones only */
  for (int i = 0; i < 500; i++) CHECK_EQ_U(one(&w, F, 0, 1000 + INS_CLOCK_STEP_PROOF - 1), 0);
  for (int i = 0; i < 500; i++) CHECK_EQ_U(one(&w, F, 0, 10 + (uint64_t)i), 0);
  CHECK_EQ_U(one(&w, F, 0, 2000), 2000); /* the 66th distinct */
}

static void watch_channels_apart(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  /* 60 distinct on each of 2 channels in one op each time: each channel's own slots */
  for (uint64_t i = 0; i < 60; i++) {
    uint8_t ch[2] = {0, 63};
    uint64_t t[2] = {1000 + i, 5000 + i};
    CHECK_EQ_U(ins_clock_step_observe(&w, F, ch, t, 2), 0);
  }
  for (uint64_t i = 0; i < 5; i++) CHECK_EQ_U(one(&w, F, 0, 2000 + i), 0); /* channel 0: 65 */
  CHECK_EQ_U(one(&w, F, 0, 3000), 5059); /* its 66th: the proof; the floor: channel 63's largest */
}

static void watch_floors(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F, 1, 1000 + i), 0);
  /* an op issued at a lower floor: its events may have been read before F came */
  for (uint64_t i = 0; i < 10; i++) CHECK_EQ_U(one(&w, F - 1, 1, 3000 + i), 0);
  CHECK_EQ_U(one(&w, F, 1, 4000), 4000);
  /* a higher floor starts anew: the count of the lower one says nothing of it */
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F, 1, 1000 + i), 0);
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F + 1, 1, 5000 + i), 0);
  CHECK_EQ_U(one(&w, F + 1, 1, 9000), 9000);
}

static void watch_busy(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  for (uint64_t i = 0; i < INS_CLOCK_STEP_PROOF; i++) CHECK_EQ_U(one(&w, F, 2, 1000 + i), 0);
  /* another completion holds it: this one counts nothing */
  CHECK(!atomic_flag_test_and_set(&w.busy));
  CHECK_EQ_U(one(&w, F, 2, 2000), 0);
  atomic_flag_clear(&w.busy);
  CHECK_EQ_U(one(&w, F, 2, 2000), 2000);
}

/* Two completions at once (the application's thread and NCCL's proxy thread), each handing
 * out the same 65 old values over and over: counted by one at a time, never a proof. */
struct stale_feed {
  struct ins_clock_step *w;
  int proofs;
};

static void *feed_stale(void *arg) {
  struct stale_feed *f = arg;
  for (uint64_t i = 0; i < 20000; i++)
    f->proofs += one(f->w, F, 5, 1000 + (i * 7) % INS_CLOCK_STEP_PROOF) != 0;
  return NULL;
}

static void watch_threads(void) {
  struct ins_clock_step w;
  ins_clock_step_init(&w);
  struct stale_feed a = {&w, 0}, b = {&w, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, feed_stale, &a) == 0);
  feed_stale(&b);
  pthread_join(t, NULL);
  CHECK_EQ_U(a.proofs + b.proofs, 0);
}

int main(void) {
  /* fork_util.h's and log_lines.h's helpers not needed here */
  (void)fu_op, (void)fu_records, (void)fu_child_ok, (void)fu_log_files, (void)has;
  fu_case("backward_step", case_backward_step);
  fu_case("forward_step", case_forward_step);
  fu_case("stale_slots", case_stale_slots);
  fu_case("in_flight_at_proof", case_in_flight_at_proof);
  watch_proof_boundary();
  watch_repeats();
  watch_channels_apart();
  watch_floors();
  watch_busy();
  watch_threads();
  return check_report("clock_step");
}
