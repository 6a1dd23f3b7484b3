/*
 * mem.c - resident memory per communicator: RSS before and after creating
 * `comms` communicators, then after one operation on each (the first op
 * is when anything allocated lazily would show).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../tools/replay/trace.h"
#include "modes.h"
#include "synth.h"
#include "sysinfo.h"

int bp_mode_mem(struct bp_opts *o) {
  const struct bp_plugin *p = &o->plugin[0];
  int n = o->comms;
  struct bp_prog *g = calloc((size_t)n, sizeof *g);
  struct bp_run *r = calloc((size_t)n, sizeof *r);
  if (!g || !r) return 1;
  for (int i = 0; i < n; i++) {
    struct rp_trace t;
    bp_synth_trace(&t, 0x3e3000000ull + (uint64_t)i, 1, o->channels);
    bp_compile(&t, 5, &g[i]);
    rp_trace_free(&t);
    bp_run_alloc(&g[i], &r[i]);
  }
  /* The first communicator starts the plugin's process-wide state (dump thread, buffers):
   * not per communicator, so it is warmed up before the first reading. */
  struct bp_stats s = {0};
  bp_open(p, &g[0], &r[0]);
  bp_exec(p, &g[0], &r[0], false, &s);
  uint64_t rss0 = bp_rss_bytes();
  for (int i = 1; i < n; i++) bp_open(p, &g[i], &r[i]);
  uint64_t rss1 = bp_rss_bytes();
  for (int i = 1; i < n; i++) bp_exec(p, &g[i], &r[i], false, &s);
  uint64_t rss2 = bp_rss_bytes();
  for (int i = 0; i < n; i++) {
    bp_close(p, &g[i], &r[i]);
    bp_run_free(&r[i]);
    bp_prog_free(&g[i]);
  }
  free(g);
  free(r);
  printf("mem.%s.comms %d\n", o->label[0], n);
  printf("mem.%s.kib_per_comm_at_init %.1f\n", o->label[0], (double)(rss1 - rss0) / (n - 1) / 1024);
  printf("mem.%s.kib_per_comm_after_traffic %.1f\n", o->label[0],
         (double)(rss2 - rss0) / (n - 1) / 1024);
  return 0;
}
