/* SPDX-License-Identifier: Apache-2.0 */
/*
 * calls.c - ns per callback, single-threaded and on the recorded threads,
 * for Inspector and the do-nothing plugin side by side (runs interleaved,
 * medians reported), and the one-pass run that callgrind counts.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../tools/replay/trace.h"
#include "modes.h"
#include "synth.h"
#include "threads.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bp_median(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run_mix(const struct bp_plugin *p, struct bp_opts *o, int reps, struct bp_stats *s) {
  for (int f = 0; f < o->nfixtures; f++) {
    struct bp_run r;
    bp_run_alloc(&o->fixture[f], &r);
    for (int i = 0; i < reps; i++) bp_exec(p, &o->fixture[f], &r, true, s);
    bp_run_free(&r);
  }
}

static void run_synth(const struct bp_plugin *p, struct bp_prog *g, int iters, struct bp_stats *s) {
  struct bp_run r;
  bp_run_alloc(g, &r);
  bp_open(p, g, &r);
  for (int i = 0; i < iters; i++) {
    bp_exec(p, g, &r, false, s);
    bp_prog_advance(g);
  }
  bp_close(p, g, &r);
  bp_run_free(&r);
}

static void synth_prog(struct bp_opts *o, uint64_t comm_id, struct bp_prog *g) {
  struct rp_trace t;
  bp_synth_trace(&t, comm_id, o->synth_ops, o->channels);
  bp_compile(&t, 5, g);
  rp_trace_free(&t);
}

int bp_mode_calls(struct bp_opts *o) {
  struct bp_prog synth;
  synth_prog(o, 0x5157bead, &synth);
  if (o->callgrind) { /* one pass of one plugin, counted by callgrind's --toggle-collect */
    struct bp_stats s = {0};
    CALLGRIND_START_INSTRUMENTATION;
    if (o->callgrind[0] == 'm') run_mix(&o->plugin[0], o, 1, &s);
    else run_synth(&o->plugin[0], &synth, 1, &s);
    CALLGRIND_STOP_INSTRUMENTATION;
    printf("callgrind.%s.%s.calls %llu\n", o->callgrind, o->label[0], (unsigned long long)s.calls);
    bp_prog_free(&synth);
    return 0;
  }
  double *mix[2], *syn[2];
  uint64_t mix_calls[2] = {0}, syn_calls[2] = {0};
  for (int k = 0; k < o->nplugins; k++) {
    mix[k] = calloc((size_t)o->runs, sizeof(double));
    syn[k] = calloc((size_t)o->runs, sizeof(double));
  }
  for (int run = 0; run < o->runs; run++) {
    for (int j = 0; j < o->nplugins; j++) {
      int k = (run + j) % o->nplugins; /* alternate who goes first */
      struct bp_stats s = {0};
      run_mix(&o->plugin[k], o, o->reps, &s);
      mix[k][run] = (double)s.ns / (double)s.calls;
      mix_calls[k] = s.calls / (uint64_t)o->reps;
      struct bp_stats t = {0};
      run_synth(&o->plugin[k], &synth, o->synth_iters, &t);
      syn[k][run] = (double)t.ns / (double)t.calls;
      syn_calls[k] = t.calls;
    }
  }
  for (int k = 0; k < o->nplugins; k++) {
    printf("mix.%s.calls_per_pass %llu\n", o->label[k], (unsigned long long)mix_calls[k]);
    printf("mix.%s.ns_per_call %.2f\n", o->label[k], bp_median(mix[k], o->runs));
    printf("synth.%s.calls_per_run %llu\n", o->label[k], (unsigned long long)syn_calls[k]);
    printf("synth.%s.ns_per_call %.2f\n", o->label[k], bp_median(syn[k], o->runs));
    free(mix[k]);
    free(syn[k]);
  }
  bp_prog_free(&synth);
  return 0;
}

int bp_mode_threads(struct bp_opts *o) {
  double *v[2];
  uint64_t calls[2] = {0};
  int nf = 0;
  for (int f = 0; f < o->nfixtures; f++) nf += o->fixture[f].nthread > 1;
  for (int k = 0; k < o->nplugins; k++) v[k] = calloc((size_t)o->runs, sizeof(double));
  for (int run = 0; run < o->runs; run++) {
    for (int j = 0; j < o->nplugins; j++) {
      int k = (run + j) % o->nplugins;
      struct bp_stats s = {0};
      for (int f = 0; f < o->nfixtures; f++)
        if (o->fixture[f].nthread > 1) bp_exec_threads(&o->plugin[k], &o->fixture[f], o->reps, &s);
      v[k][run] = s.calls ? (double)s.ns / (double)s.calls : 0;
      calls[k] = s.calls / (uint64_t)o->reps;
    }
  }
  printf("threads.fixtures %d\n", nf);
  for (int k = 0; k < o->nplugins; k++) {
    printf("threads.%s.calls_per_pass %llu\n", o->label[k], (unsigned long long)calls[k]);
    printf("threads.%s.ns_per_call %.2f\n", o->label[k], bp_median(v[k], o->runs));
    free(v[k]);
  }
  return 0;
}

int bp_mode_scale(struct bp_opts *o) {
  struct bp_prog g[2];
  synth_prog(o, 0x5ca1e001, &g[0]);
  synth_prog(o, 0x5ca1e002, &g[1]);
  for (int k = 0; k < o->nplugins; k++) {
    double *one = calloc((size_t)o->runs, sizeof(double));
    double *two = calloc((size_t)o->runs, sizeof(double));
    double *per1 = calloc((size_t)o->runs, sizeof(double));
    double *per2 = calloc((size_t)o->runs, sizeof(double));
    for (int run = 0; run < o->runs; run++) {
      struct bp_stats s1 = {0}, s2 = {0};
      uint64_t w1 = bp_exec_parallel(&o->plugin[k], g, 1, o->synth_iters, &s1);
      uint64_t w2 = bp_exec_parallel(&o->plugin[k], g, 2, o->synth_iters, &s2);
      one[run] = (double)s1.calls / ((double)w1 / 1e9);
      two[run] = (double)s2.calls / ((double)w2 / 1e9);
      per1[run] = (double)s1.ns / (double)s1.calls;
      per2[run] = (double)s2.ns / (double)s2.calls;
    }
    double *ratio = calloc((size_t)o->runs, sizeof(double));
    for (int run = 0; run < o->runs; run++) ratio[run] = two[run] / one[run];
    /* runs are paired (1 then 2 threads, back to back): the median of the pairs' ratios */
    printf("scale.%s.ratio %.2f\n", o->label[k], bp_median(ratio, o->runs));
    printf("scale.%s.one_thread_calls_per_s %.0f\n", o->label[k], bp_median(one, o->runs));
    printf("scale.%s.two_threads_calls_per_s %.0f\n", o->label[k], bp_median(two, o->runs));
    free(ratio);
    /* each thread's own ns per callback: contention shows here, scheduling does not */
    printf("scale.%s.one_thread_ns_per_call %.2f\n", o->label[k], bp_median(per1, o->runs));
    printf("scale.%s.two_threads_ns_per_call %.2f\n", o->label[k], bp_median(per2, o->runs));
    free(one);
    free(two);
    free(per1);
    free(per2);
  }
  bp_prog_free(&g[0]);
  bp_prog_free(&g[1]);
  return 0;
}
