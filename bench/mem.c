/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem.c - resident memory per communicator, through the plugin's exported
 * ncclProfiler_v5 table (synthetic traffic, bench/synth.h):
 *  - idle: RSS before and after creating `comms` communicators, then after
 *    one operation on each (the first op is when anything allocated lazily
 *    shows); the time and the page faults of an init and of a finalize, with
 *    one op and with none;
 *  - busy: BUSY_COMMS communicators completing BUSY_OPS operations each,
 *    their records still unwritten (the default interval writes at teardown,
 *    or when a ring is half full: BUSY_OPS is less); then after the dump
 *    thread wrote them (a last communicator fills half a ring, which wakes it
 *    for a pass over every communicator; the records are counted in the dump
 *    directory, NCCL_INSPECTOR_DUMP_DIR); then what as many new busy
 *    communicators add once the first ones' records are written. (Measured while
 *    the idle ones live: memory they freed would hide what the busy ones take.)
 * RSS is read after malloc_trim (memory freed is not memory held), and includes
 * what the process keeps for every communicator alike (the dump thread's stash and
 * the writer's buffers, filled by writing 100,000 records at once; the pool of
 * free ring segments kept resident): the per-communicator figures are the
 * process's growth divided by the communicators.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../tools/replay/trace.h"
#include "modes.h"
#include "outdir.h"
#include "synth.h"
#include "sysinfo.h"

#define BUSY_COMMS 100 /* at most: no more than --comms (quick runs 16) */
#define BUSY_OPS 1000
#define TRIGGER_OPS 2100 /* past half of a default ring (4096): wakes the dump thread */
#define WRITE_WAIT_S 60

static const char *g_label;

static uint64_t minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_minflt;
}

/* Resident memory, the allocator's free pages handed back first: what is held, not what
 * was freed (the writer's buffers after a large write, for one). */
static uint64_t rss(void) {
  malloc_trim(0);
  return bp_rss_bytes();
}

static double kib_per(uint64_t a, uint64_t b, int n) {
  return ((double)b - (double)a) / n / 1024;
}

/* Records written in the dump directory, waiting until there are `want` (at most
 * WRITE_WAIT_S); the count, or -1 without a dump directory. */
static long long wait_written(uint64_t want) {
  const char *dir = getenv("NCCL_INSPECTOR_DUMP_DIR");
  if (!dir || !*dir || !strcmp(g_label, "null")) return -1; /* the do-nothing plugin writes none */
  struct bp_outdir out = {0};
  for (int i = 0; i < WRITE_WAIT_S * 10; i++) {
    if (bp_outdir_scan(dir, &out) == 0 && out.records >= want) break;
    nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  }
  return (long long)out.records;
}

static long long written_now(void) { return wait_written(0); }

/* The busy communicators: contexts of one compiled program each, run once. */
struct busy {
  struct bp_prog g;
  struct bp_run r[BUSY_COMMS];
  int n;
};

static void busy_open_run(const struct bp_plugin *p, struct busy *b) {
  struct bp_stats s = {0};
  for (int i = 0; i < b->n; i++) bp_open(p, &b->g, &b->r[i]);
  for (int i = 0; i < b->n; i++) bp_exec(p, &b->g, &b->r[i], false, &s);
}

static void busy_close(const struct bp_plugin *p, struct busy *b) {
  for (int i = 0; i < b->n; i++) {
    bp_close(p, &b->g, &b->r[i]);
    bp_run_free(&b->r[i]);
  }
}

static int mode_mem_busy(struct bp_opts *o) {
  const struct bp_plugin *p = &o->plugin[0];
  const char *l = o->label[0];
  struct busy *b = calloc(2, sizeof *b);
  struct bp_prog trig;
  struct bp_run trig_r;
  if (!b) return 1;
  int n = o->comms < BUSY_COMMS ? o->comms : BUSY_COMMS;
  for (int k = 0; k < 2; k++) {
    struct rp_trace t;
    bp_synth_trace(&t, 0x3e4000000ull + (uint64_t)k, BUSY_OPS, o->channels);
    bp_compile(&t, 5, &b[k].g);
    rp_trace_free(&t);
    b[k].n = n;
    for (int i = 0; i < n; i++) bp_run_alloc(&b[k].g, &b[k].r[i]);
  }
  struct rp_trace t;
  bp_synth_trace(&t, 0x3e5000000ull, TRIGGER_OPS, o->channels);
  bp_compile(&t, 5, &trig);
  rp_trace_free(&t);
  bp_run_alloc(&trig, &trig_r);

  long long before = written_now();
  uint64_t rss0 = rss();
  busy_open_run(p, &b[0]);
  uint64_t rss_backlog = rss();
  struct bp_stats s = {0};
  bp_open(p, &trig, &trig_r);
  bp_exec(p, &trig, &trig_r, false, &s);
  /* every busy record, and at least the half ring of the trigger that woke the thread */
  long long want = (long long)n * BUSY_OPS + TRIGGER_OPS / 2;
  long long written = wait_written((uint64_t)(before + want));
  written = written < 0 ? -1 : written - before;
  uint64_t rss_written = rss();
  busy_open_run(p, &b[1]);
  uint64_t rss_second = rss();

  printf("mem.%s.busy_comms %d\n", l, n);
  printf("mem.%s.busy_ops %d\n", l, BUSY_OPS);
  printf("mem.%s.kib_per_busy_comm_unwritten %.1f\n", l, kib_per(rss0, rss_backlog, n));
  printf("mem.%s.busy_records_written %lld\n", l, written);
  printf("mem.%s.kib_per_busy_comm_written %.1f\n", l, kib_per(rss0, rss_written, n));
  printf("mem.%s.kib_per_busy_comm_second_set %.1f\n", l, kib_per(rss_written, rss_second, n));
  busy_close(p, &b[0]);
  busy_close(p, &b[1]);
  bp_close(p, &trig, &trig_r);
  bp_run_free(&trig_r);
  bp_prog_free(&trig);
  bp_prog_free(&b[0].g);
  bp_prog_free(&b[1].g);
  free(b);
  /* the pass that wrote them must have come (the do-nothing plugin writes nothing: -1) */
  return written >= 0 && written < want;
}

int bp_mode_mem(struct bp_opts *o) {
  const struct bp_plugin *p = &o->plugin[0];
  const char *l = o->label[0];
  int n = o->comms;
  g_label = l;
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
  uint64_t rss0 = rss();
  uint64_t f0 = minflt(), t0 = bp_now_ns();
  for (int i = 1; i < n; i++) bp_open(p, &g[i], &r[i]);
  uint64_t t1 = bp_now_ns(), f1 = minflt();
  uint64_t rss1 = rss();
  for (int i = 1; i < n; i++) bp_exec(p, &g[i], &r[i], false, &s);
  uint64_t rss2 = rss();
  /* while these live, so that the busy ones' memory is new to the process too */
  int rc = mode_mem_busy(o);
  uint64_t f2 = minflt(), t2 = bp_now_ns();
  for (int i = 1; i < n; i++) bp_close(p, &g[i], &r[i]);
  uint64_t t3 = bp_now_ns(), f3 = minflt();
  /* idle ones: created and finalized with no op at all */
  uint64_t f4 = minflt(), t4 = bp_now_ns();
  for (int i = 1; i < n; i++) bp_open(p, &g[i], &r[i]);
  uint64_t t5 = bp_now_ns(), f5 = minflt();
  for (int i = 1; i < n; i++) bp_close(p, &g[i], &r[i]);
  uint64_t t6 = bp_now_ns(), f6 = minflt();

  printf("mem.%s.comms %d\n", l, n);
  printf("mem.%s.kib_per_comm_at_init %.1f\n", l, kib_per(rss0, rss1, n - 1));
  printf("mem.%s.kib_per_comm_after_traffic %.1f\n", l, kib_per(rss0, rss2, n - 1));
  printf("mem.%s.us_per_init %.2f\n", l, (double)(t1 - t0) / 1e3 / (n - 1));
  printf("mem.%s.faults_per_init %.1f\n", l, (double)(f1 - f0) / (n - 1));
  printf("mem.%s.us_per_finalize_after_one_op %.2f\n", l, (double)(t3 - t2) / 1e3 / (n - 1));
  printf("mem.%s.faults_per_finalize_after_one_op %.1f\n", l, (double)(f3 - f2) / (n - 1));
  printf("mem.%s.us_per_idle_init %.2f\n", l, (double)(t5 - t4) / 1e3 / (n - 1));
  printf("mem.%s.faults_per_idle_init %.1f\n", l, (double)(f5 - f4) / (n - 1));
  printf("mem.%s.us_per_idle_finalize %.2f\n", l, (double)(t6 - t5) / 1e3 / (n - 1));
  printf("mem.%s.faults_per_idle_finalize %.1f\n", l, (double)(f6 - f5) / (n - 1));
  for (int i = 1; i < n; i++) bp_run_free(&r[i]);
  bp_close(p, &g[0], &r[0]);
  bp_run_free(&r[0]);
  for (int i = 0; i < n; i++) bp_prog_free(&g[i]);
  free(g);
  free(r);
  return rc;
}
