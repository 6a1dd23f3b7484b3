/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_limits.c - rules held at their bounds exactly, where an off-by-one hides (the
 * survivors of tools/dev/mutate.py's < for <= mutants): each bound the contract allows,
 * and one past it.
 *   timer_span      the GPU timer's unit is measured from INS_TIMER_SPAN_NS (2 ms) of host
 *                   time between the first and the latest op, exactly; 1 ns less is not
 *                   enough yet (core/timer.h)
 *   env_max         an integer variable at the largest value it allows is taken, with no
 *                   warning: NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=LLONG_MAX filters every op,
 *                   DUMP_THREAD_INTERVAL_MICROSECONDS=86400000000 (a day) is an interval
 *   env_past_max    the interval one past its largest value: one warning, which names it
 *   prom_interval   Prometheus mode at its minimum interval, 30 s exactly: no warning
 *   prom_below      1 us below it: one warning, naming the variable
 * The variables are read once per process: each case of them runs in one of its own
 * (fork_util.h), through the plugin's v5 ABI.
 */
#include "core/timer.h"
#include "fork_util.h"

static void test_timer_span(void) {
  const uint32_t rate_khz = 100000; /* RCCL's 100 MHz wall clock: 100 ticks a microsecond */
  struct ins_timer t;
  ins_timer_init(&t, rate_khz);
  ins_timer_observe(&t, 5000, 1000000);
  ins_timer_observe(&t, 5000 + 199999, 1000000 + INS_TIMER_SPAN_NS - 1);
  CHECK(!ins_timer_decide(&t, false)); /* 1 ns short of the span: keep measuring */
  ins_timer_init(&t, rate_khz);
  ins_timer_observe(&t, 5000, 1000000);
  ins_timer_observe(&t, 5000 + 200000, 1000000 + INS_TIMER_SPAN_NS);
  CHECK(ins_timer_decide(&t, false)); /* the span exactly: decided, measured */
  CHECK(t.measured);
  CHECK_EQ_U(t.unit, INS_TIMER_TICKS);
  CHECK_EQ_U(t.span_ns, INS_TIMER_SPAN_NS);
  CHECK_EQ_U(ins_timer_to_ns(&t, 200000), 2000000);
}

static int case_env_max(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "9223372036854775807", 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "86400000000", 1);
  void *c = fu_init(0xb1);
  CHECK_EQ_U(atomic_load(&fu_warns), 0);
  if (atomic_load(&fu_warns)) fprintf(stderr, "warning: %s\n", fu_last_warn);
  fu_op(c);
  fu_op(c);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  CHECK_EQ_U(fu_records(dir, getpid(), 0), 0); /* 1 MiB < LLONG_MAX bytes: filtered */
  return g_fail;
}

static int case_env_past_max(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "86400000001", 1);
  void *c = fu_init(0xb2);
  CHECK_EQ_U(atomic_load(&fu_warns), 1);
  CHECK(strstr(fu_last_warn, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS") != NULL);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  return g_fail;
}

static int case_prom_interval(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "30000000", 1);
  void *c = fu_init(0xb3);
  CHECK_EQ_U(atomic_load(&fu_warns), 0);
  if (atomic_load(&fu_warns)) fprintf(stderr, "warning: %s\n", fu_last_warn);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  return g_fail;
}

static int case_prom_below(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "29999999", 1);
  void *c = fu_init(0xb4);
  CHECK_EQ_U(atomic_load(&fu_warns), 1);
  CHECK(strstr(fu_last_warn, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=29999999") != NULL);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  return g_fail;
}

int main(void) {
  (void)fu_child_ok, (void)fu_log_files; /* fork_util.h's helpers not needed here */
  test_timer_span();
  fu_case("env_max", case_env_max);
  fu_case("env_past_max", case_env_past_max);
  fu_case("prom_interval", case_prom_interval);
  fu_case("prom_below", case_prom_below);
  return check_report("bounds");
}
