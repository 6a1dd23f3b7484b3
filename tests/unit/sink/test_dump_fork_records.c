/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dump_fork_records.c - whose records a forked child writes (src/sink/dump.c, "fork()").
 * The parent has two communicators whose records are not written yet when it forks
 * (dump thread on, writing at teardown or when a ring is half full: 16 cells here, 5
 * records each). Each of three children:
 *  - finalizes both inherited communicators: their records are the parent's, so the
 *    child writes none of them (counted in its file) and does not crash;
 *  - creates a communicator of its own and records 12 ops: its dump thread (started
 *    for it: the parent's did not survive the fork) writes at least 8 of them (a half
 *    full ring wakes it) before the finalize, into the child's own file
 *    <host>-pid<childpid>.log; after the finalize the file holds exactly those 12.
 * Then the parent records 3 more ops and finalizes: its file holds each of its records
 * once (8 and 5), and none of the children's.
 */
#include "fork_util.h"

#define KIDS 3
#define KID_OPS 12

static uint64_t kid_comm(int i) { return 0xc0ULL + (uint64_t)i; }

/* Poll (bounded) until the file of this process holds n records of communicator id. */
static long records_soon(const char *dir, uint64_t id, long n) {
  long got = 0;
  for (int ms = 0; ms < FU_CHILD_MS && (got = fu_records(dir, getpid(), id)) < n; ms += 10)
    fu_sleep_ms(10);
  return got;
}

static void kid(const char *dir, int i, void *a, void *b) {
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(fu_records(dir, getpid(), 0), 0);
  void *c = fu_init(kid_comm(i));
  for (int k = 0; k < KID_OPS && c; k++) fu_op(c);
  /* before its finalize: written by the child's own dump thread, woken when the ring is
   * half full (8 records; those after the pass that took them wait for the finalize) */
  CHECK(records_soon(dir, kid_comm(i), 8) >= 8);
  if (c) CHECK(ncclProfiler_v5.finalize(c) == 0);
  CHECK_EQ_U(fu_records(dir, getpid(), kid_comm(i)), KID_OPS);
  CHECK_EQ_U(fu_records(dir, getpid(), 0), KID_OPS);
  fflush(NULL);
  exit(g_fail ? 1 : 0);
}

static int case_inherited(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "16", 1);
  void *a = fu_init(0xa), *b = fu_init(0xb);
  for (int k = 0; k < 5; k++) fu_op(a), fu_op(b);
  CHECK_EQ_U(fu_records(dir, getpid(), 0), 0); /* nothing written before the forks */
  pid_t kids[KIDS];
  for (int i = 0; i < KIDS; i++) {
    af_settle_threads();
    fflush(NULL);
    kids[i] = fork();
    if (kids[i] == 0) kid(dir, i, a, b);
  }
  for (int i = 0; i < KIDS; i++) CHECK(fu_child_ok(kids[i]));
  for (int k = 0; k < 3; k++) fu_op(a);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(fu_records(dir, getpid(), 0xa), 8);
  CHECK_EQ_U(fu_records(dir, getpid(), 0xb), 5);
  CHECK_EQ_U(fu_records(dir, getpid(), 0), 13);
  for (int i = 0; i < KIDS; i++) {
    CHECK_EQ_U(fu_records(dir, kids[i], 0xa) + fu_records(dir, kids[i], 0xb), 0);
    CHECK_EQ_U(fu_records(dir, kids[i], kid_comm(i)), KID_OPS);
  }
  CHECK_EQ_U(fu_log_files(dir), 1 + KIDS);
  return g_fail;
}

int main(void) {
  fu_case("inherited", case_inherited);
  return check_report("fork_records");
}
