/* SPDX-License-Identifier: Apache-2.0 */
/*
 * modes.h - the benchmark's measurements, one function each. Every mode
 * prints its figures as "key value" lines on stdout (bench/run.sh turns
 * them into the table) and returns 0, or 1 when a check failed (records
 * lost, or fewer records than the traffic must produce).
 */
#ifndef BP_MODES_H
#define BP_MODES_H

#include <stdbool.h>

#include "exec.h"
#include "prog.h"

struct bp_opts {
  struct bp_plugin plugin[2]; /* [0] Inspector, [1] the do-nothing plugin (may be unloaded) */
  const char *label[2];
  int nplugins;
  struct bp_prog *fixture; /* compiled fixtures */
  const char **fixture_path;
  int nfixtures;
  int runs;        /* repeated runs; figures are medians */
  int reps;        /* fixture mix: passes per run */
  int synth_ops;   /* synthetic: ops per program */
  int synth_iters; /* synthetic: program passes per run */
  int channels;    /* synthetic: kernel channels per op */
  const char *callgrind; /* "mix" or "synth": one pass of that, instrumented */
  long rate;       /* rate: records per second (0: as fast as possible) */
  double seconds;  /* rate: how long */
  const char *dir; /* rate: the plugin's dump directory (also read back) */
  int comms;       /* mem: communicators to create */
  int busy;        /* churn: busy communicators (each at `rate`, for `seconds`) */
};

double bp_median(double *v, int n);

int bp_mode_calls(struct bp_opts *o);   /* serial: fixture mix and synthetic, ns per callback */
int bp_mode_threads(struct bp_opts *o); /* fixtures on their recorded threads, concurrently */
int bp_mode_scale(struct bp_opts *o);   /* 1 vs 2 threads on 1 vs 2 communicators */
int bp_mode_rate(struct bp_opts *o);    /* records per second through the dump thread */
int bp_mode_mem(struct bp_opts *o);     /* resident memory per communicator */
int bp_mode_churn(struct bp_opts *o);   /* init and finalize while other communicators are busy */

#endif
