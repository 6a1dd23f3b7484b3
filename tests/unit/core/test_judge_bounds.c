/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_judge_bounds.c - the bounds of the ops the judge leaves out (core/judge.h,
 * "Bounds"), on records built by hand: an unverified op X between right neighbours P
 * and N gets [P's end, N's start]; the neighbours are taken from other groups; several
 * ops share one bracket; no N, or no group, gives none; a bound waits for its N; API
 * calls that made no op count in the bracket; bounds change no other record.
 *
 * The timeline: op i, right, runs [1000 (i + 1), 1000 (i + 1) + 500) on channel 0, read
 * in time (clear alone). A "lost" op was handed the timestamps of the op 69 after it (as
 * NCCL does to ops 64 works behind) and completed with 100 ops issued after it: every op
 * that could vouch for it starts before that end or 70 works on, so it is unverified.
 */
#include <string.h>

#include "check.h"
#include "core/judge.h"
#include "core/names.h"

#include "judge_out.h"

static uint64_t start_of(uint32_t i) { return 1000ull * (i + 1); }
static uint64_t end_of(uint32_t i) { return start_of(i) + 500; }

/* Op idx of the timeline; group: its group's number and first op (0, 0: its own). */
static struct ins_record op(uint32_t idx, bool lost, uint32_t group, uint32_t gfirst) {
  struct ins_record r;
  memset(&r, 0, sizeof r);
  r.kind = INS_KIND_COLL;
  r.timing = INS_TIMING_KERNEL_GPU;
  r.func = INS_FUNC_ALLREDUCE;
  r.op_idx = idx;
  r.sn = idx;
  r.group = group ? group : idx + 1000;
  r.group_before = (uint8_t)(group ? idx - gfirst : 0);
  r.issued_after = lost ? 100 : 5;
  r.lag = (uint16_t)(r.group_before + r.issued_after);
  r.chan_mask = 0x1;
  r.peer = -1;
  r.start_ns = lost ? start_of(idx + 69) : start_of(idx);
  r.exec_ns = 500;
  return r;
}

static bool in(uint32_t i, const uint32_t *set, int n) {
  for (int k = 0; k < n; k++)
    if (set[k] == i) return true;
  return false;
}

/* Ops [0, n) of the timeline, `lost` of them lost, ops [g0, g1) one group (g1 0: none),
 * then the last drain. */
static void timeline(struct ins_judge *j, uint32_t n, const uint32_t *lost, int nlost, uint32_t g0,
                     uint32_t g1) {
  g_nout = 0;
  for (uint32_t i = 0; i < n; i++) {
    bool grouped = g1 && i >= g0 && i < g1;
    struct ins_record r = op(i, in(i, lost, nlost), grouped ? 5000 : 0, g0);
    ins_judge_take(j, &r, collect, NULL);
  }
  ins_judge_settle(j, true, collect, NULL);
}

static const struct ins_record *bound_for(uint64_t sn) {
  for (int i = 0; i < g_nout; i++)
    if (g_out[i].sn == sn && g_out[i].timing == INS_TIMING_BOUND) return &g_out[i];
  return NULL;
}

static int count_timing(int timing) {
  int n = 0;
  for (int i = 0; i < g_nout; i++) n += g_out[i].timing == timing;
  return n;
}

static void test_one_op(void) {
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  /* op 5 lost: it ran after op 4 ended and before op 6 started, the only op between.
   * Ops 0-4 came before the judge needed its window: op 4 is its first entry. */
  uint32_t lost[] = {5};
  timeline(&j, 200, lost, 1, 0, 0);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 1);
  const struct ins_record *b = bound_for(5);
  CHECK(b != NULL);
  if (b) {
    CHECK_EQ_U(b->start_ns, end_of(4));
    CHECK_EQ_U(b->exec_ns, start_of(6) - end_of(4));
    CHECK_EQ_U(b->bound_ops, 1);
    CHECK_EQ_U(b->func, INS_FUNC_ALLREDUCE);
  }
  /* the exact records: every other op, op 5 not among them */
  CHECK_EQ_U(count_timing(INS_TIMING_KERNEL_GPU), 199);
  CHECK_EQ_U(count_timing(INS_TIMING_BOUND), 1);
  ins_judge_free(&j);

  /* bounds off: none, and the same exact records */
  ins_judge_init(&j, false, false);
  timeline(&j, 200, lost, 1, 0, 0);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 0);
  CHECK_EQ_U(count_timing(INS_TIMING_BOUND), 0);
  CHECK_EQ_U(count_timing(INS_TIMING_KERNEL_GPU), 199);
  ins_judge_free(&j);
}

static void test_shared_bracket(void) {
  /* ops 5-7 lost: each is bounded by op 4's end and op 8's start, 3 ops in the bracket;
   * with the unverified handed on too, each is written twice: marked, and bounded */
  struct ins_judge j;
  ins_judge_init(&j, false, true);
  ins_judge_set_bounds(&j, true);
  uint32_t lost[] = {5, 6, 7};
  timeline(&j, 200, lost, 3, 0, 0);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 3);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 3);
  CHECK_EQ_U(count_timing(INS_TIMING_UNVERIFIED), 3);
  for (uint32_t i = 5; i <= 7; i++) {
    const struct ins_record *b = bound_for(i);
    CHECK(b != NULL);
    if (!b) continue;
    CHECK_EQ_U(b->start_ns, end_of(4));
    CHECK_EQ_U(b->exec_ns, start_of(8) - end_of(4));
    CHECK_EQ_U(b->bound_ops, 3);
  }
  ins_judge_free(&j);
}

static void test_groups(void) {
  /* ops 4-6 one group (one launch: they ran side by side), op 5 lost: op 4 and op 6 ran
   * beside it, not before or after; its neighbours are op 3 and op 7 */
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  uint32_t lost[] = {5};
  timeline(&j, 200, lost, 1, 4, 7);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  const struct ins_record *b = bound_for(5);
  CHECK(b != NULL);
  if (b) {
    CHECK_EQ_U(b->start_ns, end_of(3));
    CHECK_EQ_U(b->exec_ns, start_of(7) - end_of(3));
    CHECK_EQ_U(b->bound_ops, 3); /* ops 4, 5, 6 */
  }
  ins_judge_free(&j);

  /* no group ever begun (group 0): which ops shared its launch is not known: no bound */
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  g_nout = 0;
  for (uint32_t i = 0; i < 200; i++) {
    struct ins_record r = op(i, i == 5, 0, 0);
    r.group = 0;
    ins_judge_take(&j, &r, collect, NULL);
  }
  ins_judge_settle(&j, true, collect, NULL);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 0);
  ins_judge_free(&j);
}

static void test_no_next(void) {
  /* op 10 lost and the last op that came (the 100 issued after it never did): no right op
   * after it: no bound, only unverified */
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  uint32_t lost[] = {10};
  timeline(&j, 11, lost, 1, 0, 0);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 0);
  CHECK_EQ_U(count_timing(INS_TIMING_BOUND), 0);
  CHECK_EQ_U(j.pend_n, 0); /* nothing kept after the last drain */
  ins_judge_free(&j);

  /* no right op before it (the first op lost): none either */
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  uint32_t first[] = {0};
  timeline(&j, 200, first, 1, 0, 0);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK_EQ_U(j.bounded[INS_KIND_COLL], 0);
  ins_judge_free(&j);
}

static void test_waits_for_next(void) {
  /* op 5 lost, decided unverified once the ops after it on its channel are known; its N
   * (op 6) held back behind it: the bound goes out once op 6 is decided, not before, and
   * never before the drain that decides it */
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  g_nout = 0;
  for (uint32_t i = 0; i < 6; i++) {
    struct ins_record r = op(i, i == 5, 0, 0);
    ins_judge_take(&j, &r, collect, NULL);
  }
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(count_timing(INS_TIMING_BOUND), 0); /* op 5 undecided */
  for (uint32_t i = 6; i < 200; i++) {
    struct ins_record r = op(i, false, 0, 0);
    ins_judge_take(&j, &r, collect, NULL);
  }
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK_EQ_U(count_timing(INS_TIMING_BOUND), 1);
  const struct ins_record *b = bound_for(5);
  CHECK(b && b->start_ns == end_of(4) && b->exec_ns == start_of(6) - end_of(4));
  ins_judge_free(&j);
}

static void test_unreported_calls(void) {
  /* API events: op 4 at call 10, a Broadcast NCCL never reported (call 11), op 5 lost
   * (call 12), op 6 (call 13): two ops ran between op 4 and op 6 */
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_bounds(&j, true);
  g_nout = 0;
  for (uint32_t i = 0; i < 200; i++) {
    struct ins_record r = op(i, i == 5, 0, 0);
    r.api_at = (uint16_t)(INS_API_AT_VALID | (i < 5 ? 6 + i : 7 + i));
    ins_judge_take(&j, &r, collect, NULL);
  }
  ins_judge_settle(&j, true, collect, NULL);
  const struct ins_record *b = bound_for(5);
  CHECK(b != NULL);
  if (b) CHECK_EQ_U(b->bound_ops, 2);
  ins_judge_free(&j);
}

int main(void) {
  test_one_op();
  test_shared_bracket();
  test_groups();
  test_no_next();
  test_waits_for_next();
  test_unreported_calls();
  return check_report("test_judge_bounds");
}
