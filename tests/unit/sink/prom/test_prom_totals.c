/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_prom_totals.c - a GPU's Prometheus counters are totals since the start: every
 * report of a communicator on that GPU adds to them (src/sink/prom/prom.c). Three
 * communicators of one process, all rank 0 of 2 ranks on one node, share one GPU (the
 * fallback identity, sink/device.c) and so one .prom file. With the dump thread off and
 * rings of 2 cells, a communicator's records beyond 2 are dropped; its finalize reports
 * the drops, and writes the file while another communicator is still on the GPU.
 *   dropped_total   A (5 ops: 3 dropped), then B (6 ops: 4 dropped): the file says 3,
 *                   then 7 dropped, and 2, then 4 aggregated
 *   untimed_total   an op whose kernel gave no GPU timer is counted untimed (no_gpu_timer)
 *                   in each of A and B: 1, then 2
 * Driven through the v5 ABI (fork_util.h: each case in a process of its own).
 */
#include "fork_util.h"

/* An AllReduce whose kernel channel gave no GPU timer (pTimer 0): with kernel timing
 * required (the default) it leaves no record and is counted no_gpu_timer. */
static void op_without_timer(void *ctx) { oo_allreduce(ctx, 0, (struct oo_span[]){{0, 0}}, 1); }

/* The value of sample `name` (with `label` among its labels, when given) in the one
 * .prom file of dir; -1 without that file or sample. */
static long long sample(const char *dir, const char *name, const char *label) {
  char path[4096], line[8192];
  long long v = -1;
  int files = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 5, ".prom")) continue;
    files++;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    size_t nl = strlen(name);
    while (f && fgets(line, sizeof line, f)) {
      if (strncmp(line, name, nl) || line[nl] != '{' || (label && !strstr(line, label))) continue;
      const char *sp = strrchr(line, ' ');
      if (sp) v = strtoll(sp + 1, NULL, 10);
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return files == 1 ? v : -1;
}

static void prom_env(void) {
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  setenv("NCCL_INSPECTOR_PROM_DUMP_STATS", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_ENABLE", "0", 1);
  setenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "2", 1);
}

static int case_dropped_total(const char *dir) {
  prom_env();
  void *a = fu_init(0xd1), *b = fu_init(0xd2), *c = fu_init(0xd3);
  for (int k = 0; k < 5; k++) fu_op(a);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  CHECK_EQ_U(sample(dir, "nccl_collectives_dropped_total", NULL), 3);
  CHECK_EQ_U(sample(dir, "nccl_collectives_total", NULL), 2);
  CHECK_EQ_U(sample(dir, "nccl_p2p_dropped_total", NULL), 0);
  for (int k = 0; k < 6; k++) fu_op(b);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(sample(dir, "nccl_collectives_dropped_total", NULL), 7);
  CHECK_EQ_U(sample(dir, "nccl_collectives_total", NULL), 4);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  return g_fail;
}

static int case_untimed_total(const char *dir) {
  prom_env();
  void *a = fu_init(0xd4), *b = fu_init(0xd5), *c = fu_init(0xd6);
  fu_op(a);
  op_without_timer(a);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  CHECK_EQ_U(sample(dir, "nccl_collectives_untimed_total", "reason=\"no_gpu_timer\""), 1);
  fu_op(b);
  op_without_timer(b);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(sample(dir, "nccl_collectives_untimed_total", "reason=\"no_gpu_timer\""), 2);
  CHECK_EQ_U(sample(dir, "nccl_collectives_untimed_total", "reason=\"handed_over\""), 0);
  CHECK_EQ_U(sample(dir, "nccl_collectives_total", NULL), 2);
  CHECK(ncclProfiler_v5.finalize(c) == 0);
  return g_fail;
}

int main(void) {
  (void)fu_records, (void)fu_child_ok, (void)fu_log_files; /* fork_util.h's helpers not needed here */
  fu_case("dropped_total", case_dropped_total);
  fu_case("untimed_total", case_untimed_total);
  return check_report("prom_totals");
}
