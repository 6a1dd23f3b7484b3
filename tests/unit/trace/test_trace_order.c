/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_trace_order.c - trace mode's lines keep time order (src/trace/): an event
 * timed before lines that are already in the file (its thread was held between taking
 * its time and handing it over) is written with the latest time written, never earlier,
 * whatever kind of line it is. The replay reads a trace in file order.
 *   B records 2 ops; C is created and finalized (a finalize returns once its line is
 *   written: B's lines are in the file); then a collective of B whose start this thread
 *   times 1 s in the past (this program's clock_gettime, below) is recorded, and B
 *   finalized. Every line's "t" is at least the one before it, and the collective's
 *   start is there.
 */
#include <dlfcn.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's fork helpers */
#include "fork_util.h"

static char g_dir[] = "/tmp/inspector-traceorder-XXXXXX";

/* The plugin objects are linked into this program: their clock_gettime calls land here.
 * A thread with t_behind set reads CLOCK_MONOTONIC 1 s behind. */
static __thread int t_behind;
static int (*g_real_clock)(clockid_t, struct timespec *);

int clock_gettime(clockid_t id, struct timespec *ts) {
  int rc = g_real_clock(id, ts);
  if (rc == 0 && id == CLOCK_MONOTONIC && t_behind && ts->tv_sec > 1) ts->tv_sec -= 1;
  return rc;
}

/* The trace file's path (the one *.trace.jsonl in the directory); false if none. */
static bool trace_path(char *path, size_t cap) {
  bool found = false;
  DIR *d = opendir(g_dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l > 12 && !strcmp(e->d_name + l - 12, ".trace.jsonl")) {
      snprintf(path, cap, "%s/%s", g_dir, e->d_name);
      found = true;
    }
  }
  if (d) closedir(d);
  return found;
}

/* A collective of ctx on one channel, its start timed by this thread's clock as it is. */
static void collective(void *ctx, uint64_t t0) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_COLL;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 262144;
  d.coll.seqNumber = 77;
  d.coll.nChannels = 1;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *op = NULL, *ch = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &op, &d) == 0 && op);
  t_behind = 0;
  if (!op) return;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_KERNEL_CH;
  d.parentObj = op;
  d.kernelCh.pTimer = t0;
  if (ncclProfiler_v5.startEvent(ctx, &ch, &d) == 0 && ch) {
    union prof_state_args args;
    memset(&args, 0, sizeof args);
    args.kernelCh.pTimer = t0 + 12000;
    ncclProfiler_v5.recordEventState(ch, PROF_STATE_KERNEL_CH_STOP, &args);
    ncclProfiler_v5.stopEvent(ch);
  }
  ncclProfiler_v5.stopEvent(op);
}

int main(void) {
  g_real_clock = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  if (!g_real_clock || !mkdtemp(g_dir)) return 1;
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", g_dir, 1);
  setenv("NCCL_INSPECTOR_TRACE_DIR", g_dir, 1);
  void *keep = fu_init(0x1ee);
  void *b = fu_init(0xb0b);
  for (int i = 0; i < 2 && b; i++) fu_op(b);
  void *c = fu_init(0xc0c);
  if (c) CHECK(ncclProfiler_v5.finalize(c) == 0);
  t_behind = 1; /* until the collective's start is taken */
  if (b) collective(b, atomic_fetch_add(&fu_gpu_ns, 20000));
  t_behind = 0;
  if (b) CHECK(ncclProfiler_v5.finalize(b) == 0);
  if (keep) CHECK(ncclProfiler_v5.finalize(keep) == 0);

  char path[4096] = "", line[16384];
  CHECK(trace_path(path, sizeof path));
  FILE *f = fopen(path, "r");
  long lines = 0, back = 0, starts = 0;
  unsigned long long last = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "{\"t\":");
    unsigned long long t = p == line ? strtoull(p + 5, NULL, 10) : 0;
    CHECK(p == line);
    if (lines++ && t < last) {
      if (!back++) fprintf(stderr, "line %ld goes back in time: %llu after %llu\n%s", lines, t, last, line);
    }
    if (t > last) last = t;
    starts += strstr(line, "\"cb\":\"start\"") && strstr(line, "\"seq\":77") ;
  }
  if (f) fclose(f);
  CHECK(lines > 10);
  CHECK_EQ_U(back, 0);
  CHECK_EQ_U(starts, 1);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  CHECK(system(cmd) == 0);
  return check_report("trace_order");
}
