/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rate.c - completed records per second through the dump thread, and what
 * that costs the dump thread.
 *
 * One synthetic communicator completes `rate` operations a second (in
 * batches, one every 100 us; 0: as fast as it can) for `seconds`, with the
 * plugin configured by the caller's environment (interval, ring sizes, dump
 * directory). The plugin's threads are those that appear at the first init
 * (the dump thread and its writer thread); their CPU time over the run, added
 * up, comes from /proc. After finalize, every record
 * must be in the dump directory and the plugin's dump_stats must report no
 * drop: the run fails otherwise.
 *
 * A producer that wakes late (the machine held it) runs the batches it
 * missed back to back: a burst at callback speed (1,000 records in about
 * 150 us) that the rings and the dump thread must absorb. The longest such
 * lag is reported (max_producer_lag_us): 2 ms of lag is a full default ring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../tools/replay/trace.h"
#include "modes.h"
#include "outdir.h"
#include "synth.h"
#include "sysinfo.h"

#define MAX_TIDS 256
#define TICKS_PER_S 10000

/* The threads in now[] that were not in before[]: the plugin's. */
static int new_threads(const pid_t *before, int nb, pid_t *out, int cap) {
  pid_t now[MAX_TIDS];
  int n = bp_threads(now, MAX_TIDS), k = 0;
  for (int i = 0; i < n && k < cap; i++) {
    int seen = 0;
    for (int j = 0; j < nb && !seen; j++) seen = now[i] == before[j];
    if (!seen) out[k++] = now[i];
  }
  return k;
}

static uint64_t threads_cpu_ns(const pid_t *tids, int n) {
  uint64_t t = 0;
  for (int i = 0; i < n; i++) t += bp_thread_cpu_ns(tids[i]);
  return t;
}

static void sleep_until(uint64_t t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

int bp_mode_rate(struct bp_opts *o) {
  const struct bp_plugin *p = &o->plugin[0];
  int batch = o->rate > 0 ? (int)(o->rate / TICKS_PER_S) : 100; /* ops per tick */
  if (batch < 1) batch = 1;
  struct rp_trace t;
  bp_synth_trace(&t, 0x7a7e0001, batch, o->channels);
  struct bp_prog g;
  bp_compile(&t, 5, &g);
  rp_trace_free(&t);

  pid_t before[MAX_TIDS];
  int nb = bp_threads(before, MAX_TIDS);
  struct bp_run r;
  bp_run_alloc(&g, &r);
  bp_open(p, &g, &r);
  pid_t tids[8];
  int ntids = new_threads(before, nb, tids, 8);

  struct bp_stats s = {0};
  uint64_t batches = 0, max_lag = 0; /* how late a batch started: a late producer catches up in a burst */
  uint64_t cpu0 = threads_cpu_ns(tids, ntids);
  uint64_t t0 = bp_now_ns(), end = t0 + (uint64_t)(o->seconds * 1e9), tick = t0;
  for (;;) {
    uint64_t now = bp_now_ns();
    if (now >= end) break;
    if (o->rate > 0) {
      if (now < tick) sleep_until(tick);
      else if (now - tick > max_lag) max_lag = now - tick;
      tick += 1000000000 / TICKS_PER_S;
    }
    bp_exec(p, &g, &r, false, &s);
    bp_prog_advance(&g);
    batches++;
  }
  uint64_t wall = bp_now_ns() - t0;
  uint64_t cpu = threads_cpu_ns(tids, ntids) - cpu0;
  bp_close(p, &g, &r);
  bp_run_free(&r);

  uint64_t expected = batches * (uint64_t)batch;
  struct bp_outdir out;
  int bad = bp_outdir_scan(o->dir, &out) != 0;
  bad |= out.records != expected || out.dropped != 0 || out.reported != expected;
  const char *tag = o->label[0];
  printf("rate.%s.target_per_s %ld\n", tag, o->rate);
  printf("rate.%s.records_expected %llu\n", tag, (unsigned long long)expected);
  printf("rate.%s.records_written %llu\n", tag, (unsigned long long)out.records);
  printf("rate.%s.records_reported %llu\n", tag, (unsigned long long)out.reported);
  printf("rate.%s.dropped %llu\n", tag, (unsigned long long)out.dropped);
  printf("rate.%s.records_per_s %.0f\n", tag, (double)out.records / ((double)wall / 1e9));
  printf("rate.%s.bytes_per_record %.1f\n", tag,
         out.records ? (double)out.record_bytes / (double)out.records : 0.0);
  printf("rate.%s.dump_thread_cpu_pct %.2f\n", tag,
         ntids ? 100.0 * (double)cpu / (double)wall : -1.0);
  printf("rate.%s.producer_ns_per_call %.2f\n", tag, s.calls ? (double)s.ns / (double)s.calls : 0);
  printf("rate.%s.max_producer_lag_us %.0f\n", tag, (double)max_lag / 1e3);
  printf("rate.%s.ok %d\n", tag, !bad);
  if (bad)
    fprintf(stderr, "inspector-bench: rate: %llu records expected, %llu written, %llu reported, %llu dropped\n",
            (unsigned long long)expected, (unsigned long long)out.records,
            (unsigned long long)out.reported, (unsigned long long)out.dropped);
  bp_prog_free(&g);
  return bad;
}
