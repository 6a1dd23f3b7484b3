/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_exit_held.c - a process that exits without finalizing its communicator while
 * records are held back (src/sink/dump.c: the exit's last drain; lifecycle.c exit_flush):
 * every record it completed is in its log after exit. Each case in a process of its own
 * (the plugin reads its configuration once per process), through the v5 ABI:
 *  - judge: 70 AllReduces issued, each in a group of its own, before any completes; ops 0
 *    and 2-60 complete, op 1 and 61-69 never do. Op 0 (70 ops issued from its start to its
 *    completion) needs its span's records (core/judge.h), and op 1's may yet come while no
 *    op 64 past it has: op 0 is held, and every record behind it, until the last drain.
 *    There op 1 counts on every channel and op 2 vouches for op 0: 60 records, all right.
 *  - timer: under a HIP runtime (tests/plugins/fake_hip.c, loaded before the init as RCCL
 *    loads it), the GPU timer's unit is measured over 2 ms of ops (core/timer.h); one op
 *    is no span: its record waits for the unit until exit, which decides it.
 * The parent counts the records in the child's log once it has exited.
 */
#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's helpers */
#include <dlfcn.h>

#include "fork_util.h"

#define OPS 70

static const char *g_fakehip; /* argv[1] */

/* An AllReduce started (in a group of its own), not completed. */
static void *start_op(void *ctx, uint64_t sn) {
  oo_group(ctx);
  void *op = oo_allreduce_start(ctx, sn, 1);
  CHECK(op != NULL);
  return op;
}

/* Its channel 0 run on the GPU over [t, t + 12000), and its host stop: complete. */
static void finish_op(void *ctx, void *op, uint64_t t) {
  if (!op) return;
  CHECK(oo_channels(ctx, op, 0, &(struct oo_span){t, t + 12000}, 1));
  ncclProfiler_v5.stopEvent(op);
}

static void child_judge(void) {
  void *ctx = fu_init(0x40);
  void *op[OPS];
  for (int i = 0; i < OPS; i++) op[i] = start_op(ctx, (uint64_t)i);
  for (int i = 0; i <= 60; i++)
    if (i != 1) finish_op(ctx, op[i], 1000000 + 20000ull * (uint64_t)i);
}

static void child_timer(void) {
  CHECK(dlopen(g_fakehip, RTLD_NOW | RTLD_GLOBAL) != NULL); /* before the init, as under RCCL */
  void *ctx = fu_init(0x41);
  fu_op(ctx);
}

/* The case in a child that exits without a finalize; the records of comm in its log. */
static void exit_case(const char *name, void (*child)(void), uint64_t comm, long want) {
  char dir[] = "/tmp/inspector-exit-held-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    g_fail = 0;
    setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
    setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
    child();
    fflush(NULL);
    exit(g_fail ? 1 : 0); /* no finalize: the exit's flush writes what was held */
  }
  CHECK(pid > 0 && fu_child_ok(pid));
  long got = fu_records(dir, pid, comm);
  printf("%s: %ld records of %ld\n", name, got, want);
  CHECK_EQ_U(got, want);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

int main(int argc, char **argv) {
  g_fakehip = argc > 1 ? argv[1] : NULL;
  exit_case("judge", child_judge, 0x40, 60);
  CHECK(g_fakehip != NULL);
  if (g_fakehip) exit_case("timer", child_timer, 0x41, 1);
  return check_report("exit_held");
}
