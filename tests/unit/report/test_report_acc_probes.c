/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_acc_probes.c - inspector-report's per-thread tables (tools/report/acc.c) find
 * every key in a few probes, whatever the traffic's shape: the report reads linearly.
 *
 * The rule is stated without timing anything: each table counts the slots it examines
 * (rpt_acc_probes), and for every shape below the count per line stays under a small
 * constant. Each shape puts many keys into one table that differ in one part of the key
 * only, which is what a hash that mixes that part in too late (or not at all) piles into
 * one run of slots: the point-to-point pairs keyed their slot by the peer alone, so N ranks
 * sending to one peer took about N^2 probes (4,099 per line at N = 4,096: each new pair's
 * lookup and insert walk the whole run). The merge must then still hold every key once.
 *
 * Shapes: N ranks to one peer; all pairs of 64 ranks; one rank to N peers; N message sizes
 * (groups); N communicators; N processes (clocks); N ranks' dump_stats lines; 2,048 hosts in
 * 16 communicators, whose names go through the interned strings (intern.c, shared by the
 * threads): a scan of every string there took about as many steps per line as there were
 * hosts (rpt_intern_probes counts its probes; at most a few per line here).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acc.h"
#include "check.h"

#define N 4096
/* Probes a line may cost: a few per table it touches (a hit ~1.5, a miss and its insert ~4
 * at the index's highest load, 1/2; a line touches up to 5 tables); measured 4.5 to 12. A
 * table gone quadratic costs about N per line. */
#define PER_LINE 32
/* Interned-string probes a line may cost: most lines find their strings in acc.c's cache. */
#define INTERN_PER_LINE 4

static struct rpt_options g_opt = {.max_busbw_gbs = 900, .op_memory = 64 << 20, .threads = 1};

static void p2p(struct rpt_acc *a, uint64_t comm, int rank, int nranks, int peer, uint64_t bytes, const char *host,
                long pid) {
  char l[1024];
  int n = snprintf(l, sizeof l,
                   "{\"header\":{\"id\":\"0x%llx\",\"comm_name\":\"t\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":1},"
                   "\"metadata\":{\"hostname\":\"%s\",\"pid\":%ld},"
                   "\"p2p_perf\":{\"p2p\":\"Send\",\"p2p_sn\":0,\"p2p_peer\":%d,\"p2p_msg_size_bytes\":%llu,"
                   "\"p2p_exec_time_ns\":1000,\"p2p_timing_source\":\"kernel_gpu\",\"p2p_busbw_gbs\":10.5}}",
                   (unsigned long long)comm, rank, nranks, host, pid, peer, (unsigned long long)bytes);
  rpt_acc_line(a, l, (size_t)n, 0, 1);
}

static void stats(struct rpt_acc *a, int rank, int nranks) {
  char l[1024];
  int n = snprintf(l, sizeof l,
                   "{\"header\":{\"id\":\"0x5\",\"comm_name\":\"t\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":1},"
                   "\"metadata\":{\"hostname\":\"h\",\"pid\":1},"
                   "\"dump_stats\":{\"coll_records_total\":7,\"coll_dropped_total\":0,"
                   "\"p2p_records_total\":3,\"p2p_dropped_total\":0}}",
                   rank, nranks);
  rpt_acc_line(a, l, (size_t)n, 0, 1);
}

/* Probes per line of what `feed` gave the table; the merged job's counts for the caller. */
struct shape {
  const char *name;
  void (*feed)(struct rpt_acc *a);
  int lines;
  int pairs, groups, comms, clocks; /* what the merge must hold */
};

static void to_one_peer(struct rpt_acc *a) {
  for (int r = 1; r <= N; r++) p2p(a, 0x1, r, N + 1, 0, 65536, "h", 1);
}
static void all_pairs(struct rpt_acc *a) {
  for (int r = 0; r < 64; r++)
    for (int p = 0; p < 64; p++)
      if (p != r) p2p(a, 0x2, r, 64, p, 65536, "h", 1);
}
static void to_every_peer(struct rpt_acc *a) {
  for (int p = 1; p <= N; p++) p2p(a, 0x3, 0, N + 1, p, 65536, "h", 1);
}
static void many_sizes(struct rpt_acc *a) {
  for (int s = 1; s <= N; s++) p2p(a, 0x4, 0, 2, 1, (uint64_t)s << 12, "h", 1);
}
static void many_comms(struct rpt_acc *a) {
  for (int c = 1; c <= N; c++) p2p(a, (uint64_t)c << 32, 0, 2, 1, 65536, "h", 1);
}
static void many_processes(struct rpt_acc *a) {
  /* one host, N pids: the clock's key differs in the pid alone; ranks beyond the per-rank
   * table (communicators larger than 65,536 ranks keep none) look their clock up every line */
  for (int r = 0; r < N; r++) p2p(a, 0x6, r, 1 << 20, (r + 1) % N, 65536, "h", 1000 + r);
}
static void many_stats(struct rpt_acc *a) {
  for (int r = 0; r < N; r++) stats(a, r, N);
}
static void many_hosts(struct rpt_acc *a) {
  char host[32];
  for (int c = 1; c <= 16; c++)
    for (int r = 0; r < 2048; r++) {
      snprintf(host, sizeof host, "node-%04d", r);
      p2p(a, 0x700 + (uint64_t)c, r, 2048, (r + 1) % 2048, 65536, host, 1000 + r);
    }
}

static void run(const struct shape *s) {
  struct rpt_acc *a = rpt_acc_new(&g_opt, 1);
  uint64_t interned = rpt_intern_probes();
  s->feed(a);
  uint64_t probes = rpt_acc_probes(a);
  interned = rpt_intern_probes() - interned;
  printf("%-16s %5d lines: %8llu probes, %.2f per line; interned strings: %.2f per line\n", s->name, s->lines,
         (unsigned long long)probes, (double)probes / s->lines, (double)interned / s->lines);
  if (probes > (uint64_t)PER_LINE * (uint64_t)s->lines)
    fprintf(stderr, "%s: %llu probes for %d lines (at most %d per line)\n", s->name, (unsigned long long)probes,
            s->lines, PER_LINE);
  CHECK(probes <= (uint64_t)PER_LINE * (uint64_t)s->lines);
  if (interned > (uint64_t)INTERN_PER_LINE * (uint64_t)s->lines)
    fprintf(stderr, "%s: %llu interned-string probes for %d lines (at most %d per line)\n", s->name,
            (unsigned long long)interned, s->lines, INTERN_PER_LINE);
  CHECK(interned <= (uint64_t)INTERN_PER_LINE * (uint64_t)s->lines);
  struct rpt_job j;
  memset(&j, 0, sizeof j);
  j.opt = g_opt;
  rpt_acc_merge(&a, 1, &j);
  CHECK_EQ_U(j.npairs, s->pairs);
  CHECK_EQ_U(j.ngroups, s->groups);
  CHECK_EQ_U(j.ncomms, s->comms);
  CHECK_EQ_U(j.nclocks, s->clocks);
  rpt_job_free(&j);
}

int main(void) {
  const struct shape shapes[] = {
      {"to_one_peer", to_one_peer, N, N, 1, 1, 1},
      {"all_pairs", all_pairs, 64 * 63, 64 * 63, 1, 1, 1},
      {"to_every_peer", to_every_peer, N, N, 1, 1, 1},
      {"many_sizes", many_sizes, N, N, N, 1, 1},
      {"many_comms", many_comms, N, N, N, N, 1},
      {"many_processes", many_processes, N, N, 1, 1, N},
      {"many_stats", many_stats, N, 0, 0, 1, 1},
      {"many_hosts", many_hosts, 16 * 2048, 16 * 2048, 16, 16, 2048},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) run(&shapes[i]);
  rpt_intern_free();
  return check_report("report_acc_probes");
}
