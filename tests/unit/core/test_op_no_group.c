/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_op_no_group.c - a host that sends no Group events (nor API events): Coll and KernelCh
 * events only, through the plugin's v5 table (one_op.h), as older RCCL builds, other
 * frameworks' hosts and test drivers do. Without a group, the plugin takes an op to share
 * its kernel launch with the ops issued since the latest that completed (core/op.c,
 * group_unknown), and says once per process, through NCCL's logger, that the Group events
 * are missing. Each case runs in a process of its own (fork_util.h).
 *   one_at_a_time  300 AllReduces on one communicator, each completed before the next is
 *                  issued (the proxy thread keeping up), and 20 on a second: every op
 *                  written, with its own timestamps, none unverified; one warning
 *   burst          5 bursts of 40 AllReduces on channel 0, each burst issued before any of
 *                  its ops completes, then completed in order: all written (at most 40 ops
 *                  were issued from an op's possible launch to its completion: no 64th
 *                  later work), though 200 ran on the one channel
 */
#include "fork_util.h"
#include "log_lines.h"

#define GPU_T0 1000000ull /* the first op's start, ns */
#define GPU_STEP 20000ull /* between two ops' starts */
#define GPU_LEN 12000ull  /* each op's time on the GPU */

/* The record of sn: GPU-timed, with the timestamps op sn was given (n channels). */
static void check_record(const char *log, uint64_t sn, uint64_t start, int n) {
  char line[16384];
  if (!record_of(log, sn, line, sizeof line)) {
    fprintf(stderr, "no record of sn %llu\n", (unsigned long long)sn);
    CHECK(0);
    return;
  }
  CHECK(has(line, "\"coll_timing_source\":\"kernel_gpu\""));
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), start);
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), GPU_LEN);
  CHECK_EQ_U(field(line, "coll_nchannels"), (uint64_t)n);
  CHECK_EQ_U(field(line, "coll_stale_channels"), 0);
}

/* The warning about the missing Group events: how many of the process's warnings it was. */
static int group_warnings(void) {
  return atomic_load(&fu_warns) == 1 && strstr(fu_last_warn, "without Group events") ? 1
                                                                                        : -atomic_load(&fu_warns);
}

static int case_one_at_a_time(const char *dir) {
  void *a = fu_init(0x9a0), *b = fu_init(0x9a1);
  /* more than 64: on the host that sent no Group event, op 65 on was unverified */
  for (uint64_t sn = 0; sn < 300; sn++) {
    uint64_t t = GPU_T0 + GPU_STEP * sn;
    CHECK(oo_allreduce(a, sn, (struct oo_span[]){{t, t + GPU_LEN}}, 1));
  }
  for (uint64_t sn = 0; sn < 20; sn++) {
    uint64_t t = GPU_T0 + GPU_STEP * sn;
    CHECK(oo_allreduce(b, sn, (struct oo_span[]){{t, t + GPU_LEN}}, 1));
  }
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(log != NULL);
  for (uint64_t sn = 0; log && sn < 300; sn++) check_record(log, sn, GPU_T0 + GPU_STEP * sn, 1);
  CHECK(last_stats(log, line, sizeof line)); /* the last finalized: communicator a */
  CHECK(has(line, "\"id\":\"0x9a0\""));
  CHECK_EQ_U(field(line, "coll_records_total"), 300);
  CHECK_EQ_U(field(line, "coll_untimed_total"), 0);
  CHECK(has(line, "\"unverified\":0,"));
  CHECK_EQ_U(fu_records(dir, getpid(), 0x9a1), 20);
  /* one warning, for both communicators, and it names the missing events */
  CHECK_EQ_U(group_warnings(), 1);
  free(log);
  return g_fail;
}

/* NCCL's order for a launch of n ops: every op's start, then their host stops, then each
 * op's kernel channel (channel 0), in issue order. */
static void burst(void *ctx, uint64_t sn0, int n) {
  void *op[64];
  struct prof_descr_v5 d;
  for (int i = 0; i < n; i++) {
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_COLL;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 262144;
    d.coll.seqNumber = sn0 + (uint64_t)i;
    d.coll.nChannels = 1;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    op[i] = NULL;
    CHECK(ncclProfiler_v5.startEvent(ctx, &op[i], &d) == 0 && op[i]);
  }
  for (int i = 0; i < n; i++) ncclProfiler_v5.stopEvent(op[i]);
  for (int i = 0; i < n; i++) {
    uint64_t t = GPU_T0 + GPU_STEP * (sn0 + (uint64_t)i);
    void *h = NULL;
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_KERNEL_CH;
    d.parentObj = op[i];
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = t;
    CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0 && h);
    union prof_state_args args;
    memset(&args, 0, sizeof args);
    args.kernelCh.pTimer = t + GPU_LEN;
    ncclProfiler_v5.recordEventState(h, PROF_STATE_KERNEL_CH_STOP, &args);
    ncclProfiler_v5.stopEvent(h);
  }
}

static int case_burst(const char *dir) {
  void *a = fu_init(0x9b0);
  for (uint64_t g = 0; g < 5; g++) burst(a, 40 * g, 40);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(log != NULL);
  for (uint64_t sn = 0; log && sn < 200; sn++) check_record(log, sn, GPU_T0 + GPU_STEP * sn, 1);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_records_total"), 200);
  CHECK(has(line, "\"unverified\":0,"));
  CHECK_EQ_U(group_warnings(), 1);
  free(log);
  return g_fail;
}

int main(void) {
  (void)fu_op, (void)fu_child_ok, (void)fu_log_files; /* fork_util.h's helpers not needed here */
  fu_case("one_at_a_time", case_one_at_a_time);
  fu_case("burst", case_burst);
  return check_report("no_group");
}
