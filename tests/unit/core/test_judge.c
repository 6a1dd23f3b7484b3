/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_judge.c - can a record's timestamps be a later op's? (core/judge.h), each rule
 * on records built by hand: the count of API calls alone, the count per channel, the
 * ops it has no record of, Send/Recv pairs, API calls that made no op, holding back in
 * order, the last drain, the hold bound, the unverified ones marked on request, a lag
 * below the span, a group of 256+ ops through the tracker (core/op.c), and a backlog that
 * lasts thousands of ops (a host that never waits for the GPU).
 * The expected verdicts are worked from the rule as judge.h states it.
 */
#include <string.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/judge.h"
#include "core/names.h"
#include "core/op.h"
#include "core/ring.h"

#include "judge_out.h"

/* A GPU-timed collective record: op_idx, its group's first op, ops issued at completion,
 * API calls from its group's start to its completion, channels. */
static struct ins_record rec(uint32_t idx, uint32_t gfirst, uint32_t issued, uint32_t lag,
                             uint64_t mask) {
  struct ins_record r;
  memset(&r, 0, sizeof r);
  r.kind = INS_KIND_COLL;
  r.timing = INS_TIMING_KERNEL_GPU;
  r.func = INS_FUNC_ALLREDUCE;
  r.op_idx = idx;
  r.sn = idx;
  r.group = idx + 1000; /* one op per group unless a test says otherwise */
  r.group_before = (uint8_t)(idx - gfirst);
  r.issued_after = (uint16_t)(issued - idx);
  r.lag = (uint16_t)lag;
  r.chan_mask = mask;
  r.peer = -1;
  return r;
}

static void take(struct ins_judge *j, struct ins_record r) { ins_judge_take(j, &r, collect, NULL); }

/* Ops [from, to) each in its own group on `mask`, completed with `ahead` ops issued after. */
static void run(struct ins_judge *j, uint32_t from, uint32_t to, uint32_t ahead, uint64_t mask) {
  for (uint32_t i = from; i < to; i++) take(j, rec(i, i, i + 1 + ahead, 1 + ahead, mask));
}

static int found(uint64_t sn) {
  for (int i = 0; i < g_nout; i++)
    if (g_out[i].sn == sn) return 1;
  return 0;
}

static void test_alone(void) {
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  g_nout = 0;
  /* 64 API calls from its group's start to its completion: no 64th later work on any
   * channel can have been issued: out at once */
  take(&j, rec(0, 0, 64, 64, 0xff));
  CHECK_EQ_U(g_nout, 1);
  struct ins_record r = rec(1, 1, 65, 64, 0xff);
  CHECK(ins_judge_clear_alone(&r));
  r = rec(1, 1, 66, 65, 0xff); /* 65: it needs the others */
  CHECK(!ins_judge_clear_alone(&r));
  r = rec(1, 1, 60, 70, 0xff); /* 70 API calls for 59 ops: the others made no op */
  CHECK(!ins_judge_clear_alone(&r));
  /* host-timed records are not judged */
  r = rec(2, 2, 500, 500, 0xff);
  r.timing = INS_TIMING_KERNEL_CPU;
  take(&j, r);
  CHECK_EQ_U(g_nout, 2);
  ins_judge_free(&j);
}

static void test_per_channel(void) {
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  g_nout = 0;
  /* op 0 on channels 0-7 completed with 100 ops issued after it (lag 101), and those ops are
   * all on channels 8-15: at most one work on each of its channels (its own): right */
  take(&j, rec(0, 0, 101, 101, 0xff));
  CHECK_EQ_U(g_nout, 0); /* held: the others' records may be in the other ring */
  run(&j, 1, 101, 0, 0xff00);
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(found(0));
  CHECK_EQ_U(j.cleared_late[INS_KIND_COLL], 1);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 0);
  /* the order kept: op 0 first */
  CHECK_EQ_U(g_out[0].sn, 0);
  ins_judge_free(&j);

  /* the same with 64 of those ops on channel 3: 65 works there, its own included */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 101, 101, 0xff));
  run(&j, 1, 65, 0, 0x8);
  run(&j, 65, 101, 0, 0xff00);
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(!found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  /* 63 of them: 64 works, still right */
  ins_judge_free(&j);
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 101, 101, 0xff));
  run(&j, 1, 64, 0, 0x8);
  run(&j, 64, 101, 0, 0xff00);
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(found(0));
  ins_judge_free(&j);
}

static void test_absent_and_unseen(void) {
  struct ins_judge j;
  /* ops with no record (filtered, dropped) may have used any channel: 70 of them between
   * op 0 and its completion make 71 works on each of its channels */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 71, 71, 0x1));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(g_nout, 0); /* waits for them */
  run(&j, 71 + INS_JUDGE_SETTLE, 72 + INS_JUDGE_SETTLE, 0, 0x2); /* an op well past the span */
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(!found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  ins_judge_free(&j);

  /* API calls that made no op (a Broadcast NCCL never reported): 80 calls, 20 ops on
   * other channels: 60 unseen works may be on its channel, 61 with its own: right; 
   * 100 calls: 81: unverified */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 20, 80, 0x1));
  run(&j, 1, 20, 0, 0x2);
  take(&j, rec(20, 20, 40, 100, 0x1));
  run(&j, 21, 40, 0, 0x2);
  ins_judge_settle(&j, true, collect, NULL);
  CHECK(found(0));
  CHECK(!found(20));
  ins_judge_free(&j);
}

/* op 0 on channel 16; then 40 groups of a Send to `send_peer` and a Recv from `recv_peer`
 * on channel 16, in a communicator of `nranks` (0: not set) as rank 0: is op 0 right? */
static bool p2p_pairs_right(int nranks, int32_t send_peer, int32_t recv_peer) {
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  if (nranks) ins_judge_set_comm(&j, 0, nranks);
  g_nout = 0;
  take(&j, rec(0, 0, 81, 81, 1ull << 16));
  for (uint32_t g = 0; g < 40; g++) {
    struct ins_record s = rec(1 + 2 * g, 1 + 2 * g, 2 + 2 * g, 1, 1ull << 16);
    struct ins_record r = rec(2 + 2 * g, 1 + 2 * g, 3 + 2 * g, 2, 1ull << 16);
    s.kind = r.kind = INS_KIND_P2P;
    s.group = r.group = 5000 + g;
    s.peer = send_peer;
    r.peer = recv_peer;
    take(&j, s);
    take(&j, r);
  }
  ins_judge_settle(&j, true, collect, NULL);
  bool right = found(0);
  ins_judge_free(&j);
  return right;
}

static void test_p2p_pairs(void) {
  /* One work a group where NCCL runs the pair in one round (41 works: right), two where it
   * may not (81: unverified). 2 ranks: the other rank's Send and Recv share round 1. */
  CHECK(p2p_pairs_right(2, 1, 1));
  CHECK(!p2p_pairs_right(2, 1, 0)); /* another peer: two works */
  /* 4 ranks: Send(1) is in round 1 with Recv(3), Recv(1) in round 3 with Send(3): two works
   * a group, though one peer (NCCL's p2pSchedule) */
  CHECK(!p2p_pairs_right(4, 1, 1));
  CHECK(p2p_pairs_right(4, 0, 0)); /* to itself: round 0, one work */
  CHECK(!p2p_pairs_right(0, 1, 1)); /* the size not known: counted as two, the safe side */
}

static void test_order_final_and_marks(void) {
  struct ins_judge j;
  ins_judge_init(&j, false, true); /* the unverified handed on, marked */
  g_nout = 0;
  /* a held record, then records that need nothing: they wait behind it, in order */
  take(&j, rec(0, 0, 200, 200, 0x1));
  take(&j, rec(1, 1, 2, 1, 0x1));
  take(&j, rec(2, 2, 3, 1, 0x1));
  CHECK_EQ_U(g_nout, 0);
  ins_judge_settle(&j, true, collect, NULL); /* the last drain: what is known decides */
  CHECK_EQ_U(g_nout, 3);
  CHECK_EQ_U(g_out[0].sn, 0);
  CHECK_EQ_U(g_out[0].timing, INS_TIMING_UNVERIFIED); /* 198 ops unknown: any channel */
  CHECK_EQ_U(g_out[1].sn, 1);
  CHECK_EQ_U(g_out[1].timing, INS_TIMING_KERNEL_GPU);
  CHECK_EQ_U(g_out[2].sn, 2);
  ins_judge_free(&j);

  /* a span longer than the window: unverified at once, with no window allocated */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 60000, 60000, 0x1));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  ins_judge_free(&j);
}

static void test_settle_bound(void) {
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  g_nout = 0;
  /* a record waiting for an op that never comes (op 1: filtered, or lost): it waits until
   * an op INS_JUDGE_SETTLE past op 1 has come, then op 1 counts on every channel */
  take(&j, rec(0, 0, 300, 300, 0x1));
  for (uint32_t i = 2; i < 1 + INS_JUDGE_SETTLE; i++) take(&j, rec(i, i, i + 1, 1, 0x2));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(g_nout, 0); /* everything waits behind op 0, in order */
  for (uint32_t i = 1 + INS_JUDGE_SETTLE; i < 300; i++) take(&j, rec(i, i, i + 1, 1, 0x2));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 0);
  /* 298 records on channel 1 and op 1 on any channel: 2 works on channel 0: right */
  CHECK(found(0));
  CHECK_EQ_U(g_nout, 299);
  CHECK_EQ_U(g_out[0].sn, 0);
  ins_judge_free(&j);
}

/* A record with its GPU interval [start, start + 500). */
static struct ins_record timed(uint32_t idx, uint32_t issued, uint32_t lag, uint64_t mask,
                               uint64_t start) {
  struct ins_record r = rec(idx, idx, issued, lag, mask);
  r.start_ns = start;
  r.exec_ns = 500;
  return r;
}

static void test_vouched(void) {
  struct ins_judge j;
  /* A backlog: 200 ops on channels 0-7, one a group, each run 1000 ns after the one
   * before; the host was 150 ops ahead when ops 0-129 completed (none clear alone), the
   * proxy caught up from op 130 on (10 issued after each: clear alone). Op 129 is vouched
   * for by op 130 (one work between: its own), op 128 by op 129, and so on back: all right.
   * Op 60 was handed op 124's timestamps (64 works later): ops 61-124 ran before its
   * "end", op 125 after it but 65 works on from op 60: op 60 is unverified, the rest
   * right (op 59 is vouched for by op 61). */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  for (uint32_t i = 0; i < 200; i++) {
    uint32_t ahead = i < 130 ? 150 : 10;
    uint64_t start = 1000000 + 1000ull * (i == 60 ? 124 : i);
    take(&j, timed(i, i + 1 + ahead, 1 + ahead, 0xff, start));
  }
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  CHECK(!found(60));
  CHECK(found(59) && found(61) && found(0));
  CHECK_EQ_U(g_nout, 199);
  for (int i = 1; i < g_nout; i++) CHECK(g_out[i].sn > g_out[i - 1].sn); /* in order */
  ins_judge_free(&j);

  /* The voucher too far: op 0 right, then 64 ops on its channel that cannot vouch
   * (channels left out), then op 65 right and after it: 65 works on channel 0 from op 0
   * to op 65: a work 64 after op 0's could be before op 65's, so op 65 vouches for
   * nothing; op 0 unverified. With 63 such ops (op 64 vouching): right. */
  for (uint32_t n = 63; n <= 64; n++) {
    ins_judge_init(&j, false, false);
    g_nout = 0;
    take(&j, timed(0, 150, 150, 0x1, 1000));
    for (uint32_t i = 1; i <= n; i++) {
      struct ins_record r = timed(i, 150, 150 - i, 0x1, 1000 + 1000 * i);
      r.stale_channels = 1;
      take(&j, r);
    }
    for (uint32_t i = n + 1; i < 150; i++) take(&j, timed(i, i + 5, 5, 0x1, 1000 + 1000 * i));
    ins_judge_settle(&j, false, collect, NULL);
    CHECK_EQ_U(found(0), n == 63);
    ins_judge_free(&j);
  }

  /* Waiting for a voucher: op 0 held; op 1 (its voucher) held too until op 2 comes and
   * vouches for it; then both go out, in order. */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, timed(0, 100, 100, 0x1, 1000));
  take(&j, timed(1, 100, 100, 0x1, 2000));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(g_nout, 0);
  take(&j, timed(2, 3, 1, 0x1, 3000));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(g_nout, 3);
  CHECK_EQ_U(g_out[0].sn, 0);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 0);
  ins_judge_free(&j);

  /* A voucher on other channels vouches for nothing: op 0 on channel 0, op 1 on channel 1
   * after it; the rest on channel 1 (op 0 is then right by the count) or on channel 0
   * without a record that can vouch (70 of them: unverified). */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, timed(0, 100, 100, 0x1, 1000));
  take(&j, timed(1, 3, 2, 0x2, 2000));
  for (uint32_t i = 2; i < 72; i++) {
    struct ins_record r = timed(i, i + 1, 1, 0x1, 1000 + 1000 * i);
    r.timing = INS_TIMING_KERNEL_CPU;
    take(&j, r);
  }
  for (uint32_t i = 72; i < 100 + INS_JUDGE_SETTLE; i++) take(&j, timed(i, i + 1, 1, 0x2, 1000 + 1000 * i));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(!found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  ins_judge_free(&j);

  /* The voucher's group: op 0 on channel 0; op 70 right after it, in a group with op 71
   * (issued after it, its work possibly before op 70's): 63 ops between on channel 0
   * that cannot vouch, plus op 71: 64 besides op 0's: op 70 cannot vouch; op 72 comes
   * 72 works on: unverified. Without op 71 in the group, op 70 vouches. */
  for (int grouped = 0; grouped <= 1; grouped++) {
    ins_judge_init(&j, false, false);
    g_nout = 0;
    take(&j, timed(0, 200, 200, 0x1, 1000));
    for (uint32_t i = 1; i < 64; i++) {
      struct ins_record r = timed(i, 200, 200, 0x1, 1000 + 1000 * i);
      r.stale_channels = 1;
      take(&j, r);
    }
    for (uint32_t i = 64; i < 70; i++) take(&j, timed(i, 200, 200, 0x2, 1000 + 1000 * i));
    struct ins_record z = timed(70, 72, 2, 0x1, 71000), q = timed(71, 72, 2, 0x1, 71000);
    z.group = q.group = 7000;
    if (grouped) z.group_before = 0, q.group_before = 1;
    else q.group = 7001;
    take(&j, z);
    take(&j, q);
    for (uint32_t i = 72; i < 200 + INS_JUDGE_SETTLE; i++) take(&j, timed(i, i + 1, 1, 0x2, 1000 + 1000 * i));
    ins_judge_settle(&j, false, collect, NULL);
    CHECK_EQ_U(found(0), !grouped);
    ins_judge_free(&j);
  }
  /* API calls that made no op after the voucher: op 0 (API call 1) on channel 0, op 1
   * (API call 2) right after it, read in time (clear alone), then 100 API calls NCCL never
   * reported, then ops on channel 1; op 0 completed after all that. Its lag counts the
   * 100 as possible works on its channel, but between op 0's group and op 1's there was
   * one API call: op 1 vouches. Without API events (ABI v4) nothing places the 100:
   * unverified. */
  for (int api = 0; api <= 1; api++) {
    ins_judge_init(&j, false, false);
    g_nout = 0;
    struct ins_record x = timed(0, 30, 130, 0x1, 1000), z = timed(1, 2, 1, 0x1, 2000);
    if (api) x.api_at = INS_API_AT_VALID | 1, z.api_at = INS_API_AT_VALID | 2;
    take(&j, x);
    take(&j, z);
    for (uint32_t i = 2; i < 30 + INS_JUDGE_SETTLE; i++) {
      struct ins_record r = timed(i, i + 1, 1, 0x2, 1000 + 1000 * i);
      if (api) r.api_at = (uint16_t)(INS_API_AT_VALID | (101 + i));
      take(&j, r);
    }
    ins_judge_settle(&j, false, collect, NULL);
    CHECK_EQ_U(found(0), api);
    CHECK(found(1));
    ins_judge_free(&j);
  }
}

/* A quiet op's shadow (core/op.c publish_shadow): its place and channels only. */
static struct ins_record shadow(uint32_t idx, uint64_t mask) {
  struct ins_record r = rec(idx, idx, idx + 1, 1, mask);
  r.timing = INS_TIMING_SHADOW;
  return r;
}

static void test_shadows(void) {
  struct ins_judge j;
  /* op 0 on channel 0 completed 100 ops later; ops 1-99 are quiet (no record), in a
   * backlog: without their shadows each may have used channel 0 (100 works: unverified);
   * with them, on channel 1: one work on channel 0, its own: right. A shadow is never
   * handed on, held or counted. */
  for (int shadows = 0; shadows <= 1; shadows++) {
    ins_judge_init(&j, false, true);
    g_nout = 0;
    take(&j, rec(0, 0, 100, 100, 0x1));
    for (uint32_t i = 1; i < 100; i++)
      if (shadows) take(&j, shadow(i, 0x2));
    take(&j, rec(100, 100, 101, 1, 0x2));
    ins_judge_settle(&j, true, collect, NULL);
    CHECK_EQ_U(g_nout, 2);
    CHECK_EQ_U(g_out[0].sn, 0);
    CHECK_EQ_U(g_out[0].timing, shadows ? INS_TIMING_KERNEL_GPU : INS_TIMING_UNVERIFIED);
    CHECK_EQ_U(g_out[1].sn, 100);
    CHECK_EQ_U(j.unverified[INS_KIND_COLL], !shadows);
    CHECK_EQ_U(j.cleared_late[INS_KIND_COLL], shadows);
    ins_judge_free(&j);
  }

  /* Shadows say nothing of the records still to come: op 0 on channel 0, op 1's record not
   * yet come, ops 2-64 on channel 0 (64 works with op 0's), shadows of ops 65-200 on
   * channel 1. Op 1 is waited for (were it never to come it would count on channel 0: 65
   * works); it comes, on channel 1: op 0 right. */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, rec(0, 0, 201, 201, 0x1));
  for (uint32_t i = 2; i < 65; i++) take(&j, rec(i, i, i + 1, 1, 0x1));
  for (uint32_t i = 65; i < 201; i++) take(&j, shadow(i, 0x2));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK_EQ_U(g_nout, 0);
  take(&j, rec(1, 1, 2, 1, 0x2));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 0);
  ins_judge_free(&j);

  /* A shadow vouches for nothing: op 0 on channel 0; op 1 a shadow after its interval;
   * then 70 ops on channel 0 that cannot vouch (channels left out): unverified. */
  ins_judge_init(&j, false, false);
  g_nout = 0;
  take(&j, timed(0, 100, 100, 0x1, 1000));
  struct ins_record sh = shadow(1, 0x1);
  sh.start_ns = 5000, sh.exec_ns = 500;
  take(&j, sh);
  for (uint32_t i = 2; i < 72; i++) {
    struct ins_record r = timed(i, i + 1, 1, 0x1, 1000 + 1000 * i);
    r.stale_channels = 1;
    take(&j, r);
  }
  for (uint32_t i = 72; i < 100 + INS_JUDGE_SETTLE; i++) take(&j, timed(i, i + 1, 1, 0x2, 1000 + 1000 * i));
  ins_judge_settle(&j, false, collect, NULL);
  CHECK(!found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  ins_judge_free(&j);
}

static void test_no_group(void) {
  /* Group 0: the host began no group (core/op.c group_unknown), so which ops shared a
   * launch is not known: a Send and a Recv with one peer are not taken for one work. 40
   * such pairs on op 0's channel: 81 works, unverified (with groups: 41, right,
   * test_p2p_pairs). */
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_comm(&j, 0, 2); /* where a group's pair would be one work */
  g_nout = 0;
  take(&j, rec(0, 0, 81, 81, 1ull << 16));
  for (uint32_t g = 0; g < 40; g++) {
    struct ins_record s = rec(1 + 2 * g, 1 + 2 * g, 2 + 2 * g, 1, 1ull << 16);
    struct ins_record r = rec(2 + 2 * g, 1 + 2 * g, 3 + 2 * g, 2, 1ull << 16);
    s.kind = r.kind = INS_KIND_P2P;
    s.group = r.group = 0;
    s.peer = r.peer = 1;
    take(&j, s);
    take(&j, r);
  }
  ins_judge_settle(&j, true, collect, NULL);
  CHECK(!found(0));
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 1);
  ins_judge_free(&j);

  /* ... and a voucher's launch runs to its completion: op 0 on channel 0; ops 1-10 on
   * channel 0 that cannot vouch (channels left out); op 11 right (60 ops issued from it to
   * its completion), after op 0's interval; ops 12-70, on channel 0 too, were issued before
   * op 11 completed: any of them may have shared its launch and run before it there, 70
   * works besides op 0's: op 11 vouches for nothing, op 0 unverified. With groups known
   * (each op its own), 11 works: op 11 vouches. */
  for (int known = 0; known <= 1; known++) {
    ins_judge_init(&j, false, false);
    g_nout = 0;
    for (uint32_t i = 0; i < 200 + INS_JUDGE_SETTLE; i++) {
      struct ins_record r = i == 0    ? timed(0, 200, 200, 0x1, 1000)
                            : i == 11 ? timed(11, 71, 60, 0x1, 20000)
                                      : timed(i, i < 71 ? 71 : i + 1, i < 71 ? 71 - i : 1,
                                              i < 71 ? 0x1 : 0x2, 20000 + 1000 * i);
      if (i && i < 71 && i != 11) r.stale_channels = 1;
      if (!known) r.group = 0;
      take(&j, r);
    }
    ins_judge_settle(&j, false, collect, NULL);
    CHECK(found(11));
    CHECK_EQ_U(found(0), known);
    ins_judge_free(&j);
  }
}

static void test_voucher_p2p_calls(void) {
  /* The API calls between a record and its voucher count the voucher's group's P2P calls
   * only up to the voucher (comm.h, api_seq: a P2P call counts as its P2p event starts):
   * op 0 on channel 0 (API call 1; 200 calls by its completion, most unreported); op 1 right
   * after it (call 2), first of a group of 64 Send/Recv to as many peers, the 63 after it on
   * channel 0 too (calls 3-65): they may run before op 1 on channel 0, 64 works besides op
   * 0's: op 1 vouches for nothing, op 0 unverified. With op 1 alone in its group (the 63 in
   * groups of their own, after it), op 1 vouches. */
  for (int grouped = 0; grouped <= 1; grouped++) {
    struct ins_judge j;
    ins_judge_init(&j, false, false);
    g_nout = 0;
    struct ins_record x = timed(0, 70, 200, 0x1, 1000);
    x.api_at = INS_API_AT_VALID | 1;
    take(&j, x);
    for (uint32_t i = 1; i < 65; i++) {
      struct ins_record r = timed(i, 65, 64, 0x1, 1000 + 1000 * i);
      r.kind = INS_KIND_P2P;
      r.peer = (int32_t)i;
      r.api_at = (uint16_t)(INS_API_AT_VALID | (1 + i));
      r.group = grouped ? 7000 : 7000 + i;
      r.group_before = grouped ? (uint8_t)(i - 1) : 0;
      if (i > 1) r.stale_channels = 1; /* none of them vouches */
      take(&j, r);
    }
    for (uint32_t i = 65; i < 70 + INS_JUDGE_SETTLE; i++) {
      struct ins_record r = timed(i, i + 1, 1, 0x2, 1000 + 1000 * i);
      r.api_at = (uint16_t)(INS_API_AT_VALID | (1 + i));
      take(&j, r);
    }
    ins_judge_settle(&j, false, collect, NULL);
    CHECK_EQ_U(found(0), !grouped);
    CHECK(found(1));
    ins_judge_free(&j);
  }
}


/* Issue 40, item 1: a record whose span (its group's ops before it plus the ops issued
 * after it) is over 64 while its lag (API calls that can make work) is smaller: the calls
 * that made no op are none, never a negative count. Op 10 of a group that began at op 0
 * (span 10 + 60 = 70, lag 30), on channel 0; ops 0-9 of its group on channel 0 too (11
 * works there, its own included). Alone on its channel after that (ops 11-69 on channel
 * 1): right by the count. With ops 12-69 on channel 0 (69 works; none can vouch: channels
 * left out), only a voucher clears it: op 11, right (clear alone), on channel 0 after op 10's whole interval, 11 works on
 * from op 0 besides its own: right. Without the voucher (op 11 on channel 1): 69 works,
 * unverified. */
static void test_lag_below_span(void) {
  for (int c = 0; c < 3; c++) { /* 0: alone on its channel; 1: vouched for; 2: neither */
    struct ins_judge j;
    ins_judge_init(&j, false, true);
    g_nout = 0;
    for (uint32_t i = 0; i < 10; i++) {
      struct ins_record r = timed(i, 11, 11 - i, 0x1, 1000 + 1000 * i);
      r.group = 900, r.group_before = (uint8_t)i;
      take(&j, r);
    }
    struct ins_record x = timed(10, 70, 30, 0x1, 11000);
    x.group = 900, x.group_before = 10;
    CHECK(!ins_judge_clear_alone(&x)); /* span 70: it needs the others */
    take(&j, x);
    take(&j, timed(11, 12, 1, c == 1 ? 0x1 : 0x2, 20000)); /* after op 10's end (11500) */
    for (uint32_t i = 12; i < 70 + INS_JUDGE_SETTLE; i++) {
      struct ins_record r = timed(i, i + 1, 1, c == 0 || i >= 70 ? 0x2 : 0x1, 20000 + 1000 * i);
      r.stale_channels = i < 70; /* none of them vouches */
      take(&j, r);
    }
    ins_judge_settle(&j, false, collect, NULL);
    CHECK(g_nout > 10);
    CHECK_EQ_U(g_out[10].sn, 10);
    CHECK_EQ_U(g_out[10].timing, (c < 2 ? INS_TIMING_KERNEL_GPU : INS_TIMING_UNVERIFIED));
    CHECK_EQ_U(j.unverified[INS_KIND_COLL], (c == 2));
    CHECK_EQ_U(j.cleared_late[INS_KIND_COLL], (c < 2));
    ins_judge_free(&j);
  }
}


/* Issue 40, item 2: a group of more than 255 ops (an all-to-all over 150 peers: Send and
 * Recv to each, one ncclGroupStart/End), through the tracker (core/op.c) into the judge.
 * A record counts its group's ops before it in a byte (255 at most): the last ops' records
 * cannot say where their group began, yet their works from the group's start count. The
 * group's first n ops on channel 0, the rest on channel 1 but the last (op 299) on channel
 * 0: n + 1 works there in one launch, in any order: op 299's timestamps are its own for
 * n + 1 <= 64 (n = 63: right), maybe the 64th's after it for n = 64 (unverified). Neither
 * is clear alone (300 ops issued from its group's start), and the ops on channel 1 (236
 * works there) are unverified. With API events and without
 * (ABI v4: the count of ops stands for the calls). */
static void big_group_verdicts(int api, uint32_t n, struct ins_record *last) {
  struct ins_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.enable = cfg.enable_p2p = cfg.require_kernel_timing = true;
  cfg.coll_ring_size = cfg.p2p_ring_size = 8;
  cfg.interval_us = -1;
  struct ins_comm *c = ins_comm_create(&cfg, 40, "a2a", 1, 256, 0);
  CHECK(c != NULL);
  if (!c) return;
  struct ins_judge j;
  ins_judge_init(&j, false, false);
  ins_judge_set_comm(&j, 0, 256); /* rank 0 of 256: no Send and Recv share a work */
  g_nout = 0;
  if (api)
    for (int i = 0; i < 300; i++) ins_op_api_call(c, 0, NULL);
  ins_op_group_start(c);
  void *op[300];
  for (int i = 0; i < 300; i++)
    op[i] = ins_op_start(c, INS_KIND_P2P, i & 1 ? "Recv" : "Send", "ncclInt8", 1 << 20, 0,
                         1 + i / 2, 1, NULL, NULL);
  const uint64_t T = 1000000000;
  for (uint32_t i = 0; i < 300; i++) {
    CHECK(op[i] != NULL);
    if (!op[i]) continue;
    ins_op_event_stop(op[i]);
    void *k = ins_op_kernel_start(c, op[i], i < n || i == 299 ? 0 : 1, T + 2000 * i);
    ins_op_kernel_record_stop(k, T + 2000 * i + 1000);
    ins_op_event_stop(k);
    struct ins_record *r = ins_ring_peek(&c->ring[INS_KIND_P2P]);
    CHECK(r != NULL);
    if (!r) continue;
    CHECK_EQ_U(r->op_idx, i);
    CHECK(!ins_judge_clear_alone(r)); /* the whole group issued before any completed */
    if (i == 299) *last = *r;
    ins_judge_take(&j, r, collect, NULL);
    ins_ring_release(&c->ring[INS_KIND_P2P], r);
  }
  ins_judge_settle(&j, true, collect, NULL);
  ins_judge_free(&j);
  ins_comm_destroy(c);
}

static int found_op(uint32_t idx) {
  for (int i = 0; i < g_nout; i++)
    if (g_out[i].op_idx == idx) return 1;
  return 0;
}

static void test_big_group(void) {
  for (int api = 0; api <= 1; api++)
    for (uint32_t n = 63; n <= 64; n++) {
      struct ins_record last;
      memset(&last, 0, sizeof last);
      big_group_verdicts(api, n, &last);
      CHECK_EQ_U(last.group_before, 255); /* saturated: it was 299 */
      CHECK_EQ_U(last.issued_after, 1);
      /* the ops on channel 1 are 236 works there: unverified; those on channel 0 right
       * only with 64 works there */
      CHECK_EQ_U(g_nout, (n == 63 ? 64 : 0));
      CHECK_EQ_U(found_op(299), (n == 63));
      CHECK_EQ_U(found_op(62), (n == 63));
    }
}

/* After `pre` ops in short backlogs (every 100th op read in time: the window in use, and
 * wrapped), a backlog of n ops that never drains until its end: each op completed with 150
 * issued after it (none clear alone), each run after the one before on channels 0-7; then
 * 10 ops the proxy read in time. Settled every 256 records, as drains would. Returns the
 * ops not clear alone. */
static uint32_t long_backlog(struct ins_judge *j, uint32_t pre, uint32_t n) {
  ins_judge_init(j, false, false);
  g_nout = 0;
  uint32_t late = 0;
  for (uint32_t i = 0; i < pre + n + 10; i++) {
    uint32_t ahead = i < pre ? (i % 100 == 99 ? 5 : 150) : i < pre + n ? 150 : 5;
    late += ahead == 150;
    take(j, timed(i, i + 1 + ahead, 1 + ahead, 0xff, 1000000 + 1000ull * i));
    if (i % 256 == 255) ins_judge_settle(j, false, collect, NULL);
  }
  ins_judge_settle(j, true, collect, NULL);
  return late;
}

static void test_long_backlog(void) {
  struct ins_judge j;
  /* Each op is vouched for by the next, back from op pre + n, the first the proxy read in
   * time; none is decided before it (the host never waited): ops thousands back are proven
   * by one that comes later, not forgotten: all right, in order, none unverified. */
  uint32_t pre = INS_JUDGE_WINDOW + 1000, n = 2 * INS_JUDGE_WINDOW;
  uint32_t late = long_backlog(&j, pre, n);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 0);
  CHECK_EQ_U(j.cleared_late[INS_KIND_COLL], late);
  CHECK_EQ_U(g_nout, pre + n + 10);
  int ordered = 1;
  for (int i = 0; i < g_nout; i++) ordered &= g_out[i].op_idx == (uint32_t)i;
  CHECK(ordered);
  ins_judge_free(&j);
  /* Longer than the judge holds: with INS_JUDGE_HOLD_MAX records held, the oldest is
   * decided with what is known before a new one is taken (its voucher still waiting:
   * unverified). Ops HOLD_MAX to n (n the first read in time: it is taken after the push)
   * push out ops 0-100; then op n proves the rest. */
  long_backlog(&j, 0, INS_JUDGE_HOLD_MAX + 100);
  CHECK_EQ_U(j.unverified[INS_KIND_COLL], 101);
  CHECK_EQ_U(g_nout, INS_JUDGE_HOLD_MAX + 9);
  CHECK(g_nout > 0 && g_out[0].op_idx == 101);
  ins_judge_free(&j);
}

int main(void) {
  test_alone();
  test_per_channel();
  test_absent_and_unseen();
  test_p2p_pairs();
  test_order_final_and_marks();
  test_settle_bound();
  test_vouched();
  test_shadows();
  test_no_group();
  test_voucher_p2p_calls();
  test_lag_below_span();
  test_big_group();
  test_long_backlog();
  return check_report("test_judge");
}
