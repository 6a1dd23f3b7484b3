/* SPDX-License-Identifier: Apache-2.0 */
/*
 * churn.c - what a communicator's init and finalize cost a thread while other
 * communicators are busy: PyTorch creates subgroups lazily, in the middle of
 * training, so an init that waits for the dump thread stalls the job.
 *
 * `busy` synthetic communicators complete `rate` operations a second each (in
 * batches, one every 100 us, as rate.c; 0: as fast as they can), each on a
 * thread of its own, for `seconds`. Meanwhile another thread, again and again
 * (a cycle every CYCLE_GAP_MS), creates a fresh communicator, completes one
 * operation on it and finalizes it. Reported: how many cycles, the median and
 * the longest init and finalize (each call's wall time on that thread: what NCCL's
 * thread would wait), and the operations per second the busy communicators
 * completed. The outputs (JSON, Prometheus) are the caller's environment's.
 * The busy threads stop at the end by their own clock, so that an init stuck
 * behind them still returns, and counts.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../tools/replay/trace.h"
#include "modes.h"
#include "synth.h"

#define TICKS_PER_S 10000
#define CYCLE_GAP_MS 20 /* between a finalize and the next init */
#define WARMUP_MS 200   /* the busy communicators running before the first cycle */

struct busy {
  const struct bp_plugin *p;
  struct bp_prog g;
  struct bp_run r;
  long rate;
  int per;         /* ops per pass over the program */
  uint64_t end_ns; /* stop here */
  uint64_t ops;    /* completed */
  pthread_t t;
};

static void sleep_until(uint64_t t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

static void *busy_thread(void *arg) {
  struct busy *b = arg;
  struct bp_stats s = {0};
  uint64_t tick = bp_now_ns();
  while (bp_now_ns() < b->end_ns) {
    if (b->rate > 0) {
      if (bp_now_ns() < tick) sleep_until(tick);
      tick += 1000000000 / TICKS_PER_S;
    }
    bp_exec(b->p, &b->g, &b->r, false, &s);
    bp_prog_advance(&b->g);
    b->ops += (uint64_t)b->per;
  }
  return NULL;
}

int bp_mode_churn(struct bp_opts *o) {
  const struct bp_plugin *p = &o->plugin[0];
  const char *tag = o->label[0];
  int nbusy = o->busy;
  int batch = o->rate > 0 ? (int)(o->rate / TICKS_PER_S) : 100; /* ops per tick */
  if (batch < 1) batch = 1;
  struct busy *b = bp_xcalloc((size_t)nbusy, sizeof *b);
  uint64_t t0 = bp_now_ns(), end = t0 + (uint64_t)(o->seconds * 1e9);
  for (int i = 0; i < nbusy; i++) {
    struct rp_trace t;
    bp_synth_trace(&t, 0xb05e0000ull + (uint64_t)i, batch, o->channels);
    bp_compile(&t, 5, &b[i].g);
    rp_trace_free(&t);
    bp_run_alloc(&b[i].g, &b[i].r);
    bp_open(p, &b[i].g, &b[i].r);
    b[i].p = p;
    b[i].rate = o->rate;
    b[i].per = batch;
    b[i].end_ns = end;
  }
  for (int i = 0; i < nbusy; i++)
    if (pthread_create(&b[i].t, NULL, busy_thread, &b[i]) != 0) {
      fprintf(stderr, "inspector-bench: churn: cannot start a thread\n");
      return 1;
    }

  /* the fresh communicators: one op each, a new id every cycle */
  struct rp_trace t;
  bp_synth_trace(&t, 0xc4a40000ull, 1, o->channels);
  struct bp_prog g;
  bp_compile(&t, 5, &g);
  rp_trace_free(&t);
  struct bp_run r;
  bp_run_alloc(&g, &r);
  size_t cap = 1024, n = 0;
  double *init_us = bp_xcalloc(cap, sizeof *init_us), *fin_us = bp_xcalloc(cap, sizeof *fin_us);
  sleep_until(t0 + (uint64_t)WARMUP_MS * 1000000);
  while (bp_now_ns() < end) {
    struct bp_stats s = {0};
    g.ctx[0].comm_id = 0xc4a40000ull + n;
    uint64_t a = bp_now_ns();
    bp_open(p, &g, &r);
    uint64_t a1 = bp_now_ns();
    bp_exec(p, &g, &r, false, &s);
    uint64_t f = bp_now_ns();
    bp_close(p, &g, &r);
    uint64_t f1 = bp_now_ns();
    if (n == cap) {
      cap *= 2;
      init_us = realloc(init_us, cap * sizeof *init_us);
      fin_us = realloc(fin_us, cap * sizeof *fin_us);
      if (!init_us || !fin_us) return 1;
    }
    init_us[n] = (double)(a1 - a) / 1e3;
    fin_us[n] = (double)(f1 - f) / 1e3;
    n++;
    sleep_until(f1 + (uint64_t)CYCLE_GAP_MS * 1000000);
  }
  uint64_t ops = 0;
  for (int i = 0; i < nbusy; i++) {
    pthread_join(b[i].t, NULL);
    ops += b[i].ops;
  }
  uint64_t wall = bp_now_ns() - t0;
  for (int i = 0; i < nbusy; i++) {
    bp_close(p, &b[i].g, &b[i].r);
    bp_run_free(&b[i].r);
    bp_prog_free(&b[i].g);
  }
  bp_run_free(&r);
  bp_prog_free(&g);

  double init_med = bp_median(init_us, (int)n), fin_med = bp_median(fin_us, (int)n);
  printf("churn.%s.busy_comms %d\n", tag, nbusy);
  printf("churn.%s.target_per_s %ld\n", tag, o->rate);
  printf("churn.%s.busy_ops_per_s %.0f\n", tag, (double)ops / ((double)wall / 1e9));
  printf("churn.%s.cycles %zu\n", tag, n);
  printf("churn.%s.init_us_median %.1f\n", tag, init_med);
  printf("churn.%s.init_us_max %.1f\n", tag, n ? init_us[n - 1] : 0.0); /* sorted */
  printf("churn.%s.finalize_us_median %.1f\n", tag, fin_med);
  printf("churn.%s.finalize_us_max %.1f\n", tag, n ? fin_us[n - 1] : 0.0);
  free(init_us);
  free(fin_us);
  free(b);
  return n == 0; /* not one cycle: something held the first init past the run */
}
