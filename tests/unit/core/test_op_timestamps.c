/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_op_timestamps.c - an op's time from its channels' GPU timestamps (src/core/op.c,
 * channel_span and "Whose timestamps?"), driven through the plugin's v5 ABI and read back
 * from its JSON log, so that the rules are stated here from the contract, not from the
 * tracker's internals. Each case runs in a process of its own (fork_util.h).
 *   equal_start_stop   a channel whose start and stop timestamps are equal gave both GPU
 *                      timers: an op made of such channels is GPU-timed (kernel_gpu), of
 *                      exec 0, or of the span of its other channels; not counted as
 *                      no_gpu_timer
 *   long_channel       an op's time runs from its earliest channel start to its LATEST
 *                      channel stop, wherever the longest channel is among its channels;
 *                      that latest stop, not the last channel's, is what a later op's
 *                      channels must start after: a channel of the next group that starts
 *                      before it has an earlier op's timestamps and is left out (stale)
 *   start_at_floor     a channel that starts exactly at a stop already delivered (the
 *                      floor) is an earlier op's too: left out
 */
#include "fork_util.h"
#include "log_lines.h"

/* One AllReduce of 1 MiB in a group of its own (its record is then right at once:
 * core/judge.h), on n channels with the given timestamps, completed (one_op.h). */
static void op_on(void *ctx, uint64_t sn, const struct oo_span *ch, int n) {
  oo_group(ctx);
  CHECK(oo_allreduce(ctx, sn, ch, n));
}

static int case_equal_start_stop(const char *dir) {
  void *c = fu_init(0xe1);
  /* sn 1: one channel, start == stop: exec 0, still the GPU's */
  op_on(c, 1, (struct oo_span[]){{1000000, 1000000}}, 1);
  /* sn 2: such a channel beside a longer one: the op's span is the other channel's */
  op_on(c, 2, (struct oo_span[]){{2005000, 2005000}, {2004000, 2009000}}, 2);
  /* sn 3: every channel so */
  op_on(c, 3, (struct oo_span[]){{3000000, 3000000}, {3000000, 3000000}}, 2);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(record_of(log, 1, line, sizeof line));
  CHECK(has(line, "\"coll_timing_source\":\"kernel_gpu\""));
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 0);
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), 1000000);
  CHECK(record_of(log, 2, line, sizeof line));
  CHECK(has(line, "\"coll_timing_source\":\"kernel_gpu\""));
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 5000);
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), 2004000);
  CHECK_EQ_U(field(line, "coll_nchannels"), 2);
  CHECK(record_of(log, 3, line, sizeof line));
  CHECK(has(line, "\"coll_timing_source\":\"kernel_gpu\""));
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 0);
  CHECK_EQ_U(field(line, "coll_nchannels"), 2);
  CHECK(last_stats(log, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_records_total"), 3);
  CHECK(has(line, "\"no_gpu_timer\":0,"));
  CHECK_EQ_U(field(line, "coll_untimed_total"), 0);
  free(log);
  return g_fail;
}

static int case_long_channel(const char *dir) {
  void *c = fu_init(0xe2);
  /* sn 1: the longest channel starts first and stops last, and is neither the first
   * nor the last channel: 1 ms .. 50 ms; the others end by 5 ms */
  op_on(c, 1, (struct oo_span[]){{2000000, 3000000}, {1000000, 50000000}, {4000000, 5000000}}, 3);
  /* sn 2, the next group: channel 0 starts at 20 ms, before sn 1's latest stop (though
   * after its last channel's): an earlier op's timestamps, left out; channel 1 is its own */
  op_on(c, 2, (struct oo_span[]){{20000000, 60000000}, {70000000, 80000000}}, 2);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(record_of(log, 1, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), 1000000);
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 49000000);
  CHECK_EQ_U(field(line, "coll_stale_channels"), 0);
  CHECK_EQ_U(field(line, "coll_nchannels"), 3);
  CHECK(record_of(log, 2, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_stale_channels"), 1);
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), 70000000);
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 10000000);
  free(log);
  return g_fail;
}

static int case_start_at_floor(const char *dir) {
  void *c = fu_init(0xe3);
  op_on(c, 1, (struct oo_span[]){{1000000, 2000000}}, 1);
  /* channel 0 starts at exactly sn 1's stop, a timestamp delivered before sn 2 began */
  op_on(c, 2, (struct oo_span[]){{2000000, 2500000}, {3000000, 3500000}}, 2);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  char *log = read_log(dir), line[16384];
  CHECK(record_of(log, 2, line, sizeof line));
  CHECK_EQ_U(field(line, "coll_stale_channels"), 1);
  CHECK_EQ_U(field(line, "coll_start_ts_ns"), 3000000);
  CHECK_EQ_U(field(line, "coll_exec_time_ns"), 500000);
  free(log);
  return g_fail;
}

int main(void) {
  (void)fu_op, (void)fu_records, (void)fu_child_ok, (void)fu_log_files; /* fork_util.h's helpers not needed here */
  fu_case("equal_start_stop", case_equal_start_stop);
  fu_case("long_channel", case_long_channel);
  fu_case("start_at_floor", case_start_at_floor);
  return check_report("op_timestamps");
}
