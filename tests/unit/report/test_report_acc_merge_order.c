/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_acc_merge_order.c - inspector-report's merge (tools/report/acc.c) leaves the op
 * sample (job.ops) in one order fixed by the records' content, whatever order the lines were
 * read in and however they were shared among the reading threads.
 *
 * Every analysis walks job.ops and sums doubles along the way; a sum of doubles depends on the
 * order of its terms, so the report is byte-identical for any --threads and file order only if
 * job.ops is. The lines of a small job (two collective communicators of 4 and 2 ranks on three
 * processes, two ops, P2P Send/Recv, one rank's record repeated with another time) are fed in
 * rank order to one reader, reversed to one, and dealt at random to three readers in four
 * shuffles; each merge's job.ops must hold the same records in the same order, and that order
 * must be (communicator id, collective before P2P, op name, sequence number, rank), checked
 * here field by field from the names and ids, not from acc.c's own comparison.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acc.h"
#include "check.h"

static struct rpt_options g_opt = {.max_busbw_gbs = 900, .op_memory = 64 << 20, .threads = 1};

#define MAXL 512
static char g_lines[MAXL][768];
static int g_nlines;

static void coll(uint64_t comm, int rank, int nranks, const char *op, int sn, const char *host, int pid,
                 unsigned long long start, unsigned long long exec) {
  snprintf(g_lines[g_nlines++], sizeof g_lines[0],
           "{\"header\":{\"id\":\"0x%llx\",\"comm_name\":\"c\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":2},"
           "\"metadata\":{\"hostname\":\"%s\",\"pid\":%d},"
           "\"coll_perf\":{\"coll\":\"%s\",\"coll_sn\":%d,\"coll_msg_size_bytes\":1048576,"
           "\"coll_exec_time_ns\":%llu,\"coll_start_ts_ns\":%llu,\"coll_timing_source\":\"kernel_gpu\","
           "\"coll_busbw_gbs\":%.3f}}",
           (unsigned long long)comm, rank, nranks, host, pid, op, sn, exec, start, 1048576.0 / (double)exec);
}

static void p2p(uint64_t comm, int rank, const char *op, int sn, int peer, const char *host, int pid,
                unsigned long long start) {
  snprintf(g_lines[g_nlines++], sizeof g_lines[0],
           "{\"header\":{\"id\":\"0x%llx\",\"comm_name\":\"p\",\"rank\":%d,\"n_ranks\":2,\"nnodes\":2},"
           "\"metadata\":{\"hostname\":\"%s\",\"pid\":%d},"
           "\"p2p_perf\":{\"p2p\":\"%s\",\"p2p_sn\":%d,\"p2p_peer\":%d,\"p2p_msg_size_bytes\":65536,"
           "\"p2p_exec_time_ns\":5000,\"p2p_start_ts_ns\":%llu,\"p2p_timing_source\":\"kernel_gpu\","
           "\"p2p_busbw_gbs\":13.1}}",
           (unsigned long long)comm, rank, host, pid, op, sn, peer, start);
}

static const char *const HOST[] = {"node-b", "node-a", "node-c"};

/* The job's lines, rank by rank (each rank's in its own order, as its log has them). */
static void make_lines(void) {
  g_nlines = 0;
  for (int r = 0; r < 4; r++) /* comm 0x20: 4 ranks, two per host, AllReduce and AllGather */
    for (int sn = 0; sn < 12; sn++) {
      unsigned long long t = 1000000000ull + (unsigned long long)sn * 100000 + (unsigned long long)r * 37;
      coll(0x20, r, 4, sn % 3 ? "AllReduce" : "AllGather", sn, HOST[r / 2], 100 + r, t, 20000 + (unsigned)r * 11);
    }
  for (int r = 0; r < 2; r++) /* comm 0x10: 2 ranks on hosts b and c */
    for (int sn = 0; sn < 10; sn++)
      coll(0x10, r, 2, "AllReduce", sn, HOST[r ? 2 : 0], r ? 200 : 100, 2000000000ull + (unsigned long long)sn * 90000 + (unsigned long long)r * 5,
           30000);
  for (int sn = 0; sn < 8; sn++) { /* P2P on 0x30: rank 0 sends, rank 1 receives */
    p2p(0x30, 0, "Send", sn, 1, HOST[0], 100, 3000000000ull + (unsigned long long)sn * 50000);
    p2p(0x30, 1, "Recv", sn, 0, HOST[2], 200, 3000000000ull + (unsigned long long)sn * 50000 + 700);
  }
  /* rank 1 of 0x10 logged twice for sn 3 (a restarted process's log beside the first) */
  coll(0x10, 1, 2, "AllReduce", 3, HOST[2], 200, 2000000000ull + 3 * 90000 + 99, 31000);
}

static uint64_t g_rnd = 88172645463325252ull;
static uint64_t next_rnd(void) { /* xorshift64: the shuffles are the same on every run */
  g_rnd ^= g_rnd << 13;
  g_rnd ^= g_rnd >> 7;
  g_rnd ^= g_rnd << 17;
  return g_rnd;
}

/* Reads lines in `order` into nreaders readers (line i to reader i % nreaders, or to one at
 * random), merges them into j; the caller frees j. */
static void read_lines(const int *order, int nreaders, bool deal_at_random, struct rpt_job *j) {
  struct rpt_acc *accs[4];
  for (int t = 0; t < nreaders; t++) accs[t] = rpt_acc_new(&g_opt, nreaders);
  for (int i = 0; i < g_nlines; i++) {
    const char *l = g_lines[order[i]];
    int t = deal_at_random ? (int)(next_rnd() % (uint64_t)nreaders) : i % nreaders;
    rpt_acc_line(accs[t], l, strlen(l), t, (uint64_t)i + 1);
  }
  memset(j, 0, sizeof *j);
  j->opt = g_opt;
  rpt_acc_merge(accs, nreaders, j);
}

static bool same_rec(const struct rpt_opent *a, const struct rpt_opent *b) {
  return a->sn == b->sn && a->start_ns == b->start_ns && a->exec_ns == b->exec_ns && a->bytes == b->bytes &&
         a->comm == b->comm && a->rank == b->rank && a->peer == b->peer && a->clock == b->clock && a->op == b->op &&
         a->p2p == b->p2p && a->busbw == b->busbw;
}

/* Whether x comes before or with y by (comm id, p2p, op name, sn, rank). */
static bool in_order(const struct rpt_job *j, const struct rpt_opent *x, const struct rpt_opent *y) {
  if (j->comms[x->comm].id != j->comms[y->comm].id) return j->comms[x->comm].id < j->comms[y->comm].id;
  if (x->p2p != y->p2p) return x->p2p < y->p2p;
  int s = strcmp(rpt_str(x->op), rpt_str(y->op));
  if (s) return s < 0;
  if (x->sn != y->sn) return x->sn < y->sn;
  return x->rank <= y->rank;
}

int main(void) {
  make_lines();
  int order[MAXL];
  for (int i = 0; i < g_nlines; i++) order[i] = i;
  struct rpt_job ref;
  read_lines(order, 1, false, &ref);
  /* every record with a start time is in the sample: 48 + 20 + 16 + 1 */
  CHECK_EQ_U(ref.nops, 85);
  for (size_t i = 0; i + 1 < ref.nops; i++) {
    bool ok = in_order(&ref, &ref.ops[i], &ref.ops[i + 1]);
    if (!ok)
      fprintf(stderr, "job.ops[%zu] (comm 0x%llx %s sn %llu rank %d) before [%zu] (comm 0x%llx %s sn %llu rank %d)\n",
              i, (unsigned long long)ref.comms[ref.ops[i].comm].id, rpt_str(ref.ops[i].op),
              (unsigned long long)ref.ops[i].sn, ref.ops[i].rank, i + 1,
              (unsigned long long)ref.comms[ref.ops[i + 1].comm].id, rpt_str(ref.ops[i + 1].op),
              (unsigned long long)ref.ops[i + 1].sn, ref.ops[i + 1].rank);
    CHECK(ok);
  }
  /* the repeated rank: its two records by start time (every field decides, not read order) */
  for (size_t i = 0; i + 1 < ref.nops; i++)
    if (ref.ops[i].rank == ref.ops[i + 1].rank && ref.ops[i].sn == ref.ops[i + 1].sn &&
        ref.ops[i].comm == ref.ops[i + 1].comm && ref.ops[i].op == ref.ops[i + 1].op)
      CHECK(ref.ops[i].start_ns < ref.ops[i + 1].start_ns);

  struct {
    const char *what;
    int readers;
    int shuffle; /* 0 in order, 1 reversed, 2 shuffled */
  } runs[] = {{"reversed, 1 reader", 1, 1},      {"shuffled, 1 reader", 1, 2},  {"shuffled, 3 readers", 3, 2},
              {"reversed, 2 readers", 2, 1},     {"shuffled, 2 readers", 2, 2}, {"shuffled, 3 readers again", 3, 2}};
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
    for (int i = 0; i < g_nlines; i++) order[i] = runs[r].shuffle == 1 ? g_nlines - 1 - i : i;
    if (runs[r].shuffle == 2)
      for (int i = g_nlines - 1; i > 0; i--) {
        int k = (int)(next_rnd() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[k];
        order[k] = t;
      }
    struct rpt_job j;
    read_lines(order, runs[r].readers, runs[r].shuffle == 2, &j);
    CHECK_EQ_U(j.nops, ref.nops);
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < j.nops && i < ref.nops; i++)
      if (!same_rec(&j.ops[i], &ref.ops[i]) && !differ++) first = i;
    if (differ)
      fprintf(stderr, "%s: %zu of %zu records in another place than in rank order, the first at %zu\n", runs[r].what,
              differ, j.nops, first);
    CHECK_EQ_U(differ, 0);
    rpt_job_free(&j);
  }
  rpt_job_free(&ref);
  rpt_intern_free();
  return check_report("report_merge_order");
}
