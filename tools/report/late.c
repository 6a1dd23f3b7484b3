/*
 * late.c - late ranks on the aligned clocks (see analysis.h).
 *
 * A late rank is the one the others wait for: its kernel starts last, and,
 * because every rank's kernel ends together, its kernel time is the SHORTEST.
 * So a report that ranks by kernel time blames the waiting ranks; this one
 * ranks by aligned start, and shows the kernel times beside it as evidence.
 *
 * Lateness of rank r in one op = its aligned start less the median aligned
 * start of the op's other ranks (for two ranks: the other rank's start), so
 * one straggler does not move its own yardstick.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct sample { /* one rank in one op */
  int comm, rank, op;
  double late, exec, others_exec, bw_ratio;
  bool last;
  size_t seq; /* its position as made: a sort keeps each rank's samples in this order */
};

static int cmp_sample(const void *a, const void *b) {
  const struct sample *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static bool same_instance(const struct rpt_opent *a, const struct rpt_opent *b) {
  return a->comm == b->comm && a->p2p == b->p2p && a->op == b->op && a->sn == b->sn;
}

/* The first position of x in sorted v[0..n) (x is there). */
static size_t lower_bound(const double *v, size_t n, double x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (v[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/* Median of sorted v[0..n) without element `skip`. */
static double median_without(const double *v, size_t n, size_t skip) {
  size_t m = n - 1, k = m / 2;
  double a = v[k >= skip ? k + 1 : k];
  if (m % 2) return a;
  size_t k0 = k - 1;
  double b = v[k0 >= skip ? k0 + 1 : k0];
  return (a + b) / 2;
}

void rpt_late(struct rpt_job *j) {
  if (!j->have_starts) return;
  double thr = j->opt.late_ns;
  if (3 * j->resid_p95_ns > thr) thr = 3 * j->resid_p95_ns;
  size_t cap = 1024, ns = 0;
  struct sample *s = malloc(cap * sizeof *s);
  size_t tcap = 64;
  double *st = malloc(tcap * sizeof *st), *ex = malloc(tcap * sizeof *ex), *bw = malloc(tcap * sizeof *bw);
  double *tmp = malloc(tcap * sizeof *tmp), *sorted_ex = malloc(tcap * sizeof *sorted_ex);
  double *bw_sorted = malloc(tcap * sizeof *bw_sorted);
  if (!s || !st || !ex || !bw || !tmp || !sorted_ex || !bw_sorted) exit(1);
  for (size_t i = 0; i < j->nops;) {
    size_t e = i + 1;
    while (e < j->nops && same_instance(&j->ops[i], &j->ops[e])) e++;
    size_t n = e - i;
    bool ok = !j->ops[i].p2p && n >= 2;
    for (size_t k = i; k < e && ok; k++) ok = j->ops[k].clock >= 0;
    if (!ok) {
      i = e;
      continue;
    }
    if (n > tcap) {
      tcap = n;
      st = realloc(st, tcap * sizeof *st);
      ex = realloc(ex, tcap * sizeof *ex);
      bw = realloc(bw, tcap * sizeof *bw);
      tmp = realloc(tmp, tcap * sizeof *tmp);
      sorted_ex = realloc(sorted_ex, tcap * sizeof *sorted_ex);
      bw_sorted = realloc(bw_sorted, tcap * sizeof *bw_sorted);
      if (!st || !ex || !bw || !tmp || !sorted_ex || !bw_sorted) exit(1);
    }
    double maxs = -INFINITY;
    for (size_t k = 0; k < n; k++) {
      const struct rpt_opent *o = &j->ops[i + k];
      st[k] = (double)o->start_ns - (double)j->clocks[o->clock].offset_ns;
      ex[k] = (double)o->exec_ns;
      bw[k] = o->busbw;
      if (st[k] > maxs) maxs = st[k];
    }
    double *sorted_st = tmp;
    memcpy(sorted_st, st, n * sizeof *st);
    qsort(sorted_st, n, sizeof *st, cmp_dbl);
    memcpy(sorted_ex, ex, n * sizeof *ex);
    qsort(sorted_ex, n, sizeof *ex, cmp_dbl);
    memcpy(bw_sorted, bw, n * sizeof *bw);
    double bw_med = rpt_median(bw_sorted, n);
    for (size_t k = 0; k < n; k++) {
      const struct rpt_opent *o = &j->ops[i + k];
      /* position of this rank's value in the sorted arrays (first equal one) */
      size_t ps = lower_bound(sorted_st, n, st[k]), pe = lower_bound(sorted_ex, n, ex[k]);
      if (ns == cap) {
        cap *= 2;
        s = realloc(s, cap * sizeof *s);
        if (!s) exit(1);
      }
      s[ns++] = (struct sample){.comm = (int)o->comm, .rank = o->rank, .op = o->op,
                                .late = st[k] - median_without(sorted_st, n, ps), .exec = ex[k],
                                .others_exec = median_without(sorted_ex, n, pe),
                                .bw_ratio = bw_med > 0 ? bw[k] / bw_med : 0, .last = st[k] == maxs,
                                .seq = ns};
    }
    i = e;
  }
  free(sorted_ex);
  free(bw_sorted);
  free(st);
  free(ex);
  free(bw);
  free(tmp);
  /* per (comm, rank): bucket the samples (a counting pass, not a sort of every sample).
   * A communicator's buckets run to the largest rank its samples have, not to its
   * n_ranks: a log's n_ranks may claim 16 M ranks, many communicators' sum would not
   * fit an int, and a table sized from them alone would trust them to bound the ranks.
   * Ranks far sparser than the samples (a few high ranks in many communicators) are
   * sorted instead, into the same order: buckets would cost more than the samples. */
  size_t *base = calloc((size_t)j->ncomms + 1, sizeof *base);
  if (!base) exit(1);
  for (size_t i = 0; i < ns; i++) {
    assert(s[i].comm >= 0 && s[i].comm < j->ncomms && s[i].rank >= 0 && s[i].rank < j->comms[s[i].comm].nranks);
    if ((size_t)s[i].rank + 1 > base[s[i].comm + 1]) base[s[i].comm + 1] = (size_t)s[i].rank + 1;
  }
  for (int c = 0; c < j->ncomms; c++) base[c + 1] += base[c];
  size_t nb = base[j->ncomms];
  if (nb > 4 * ns + 4096) {
    qsort(s, ns, sizeof *s, cmp_sample);
  } else {
    size_t *at = calloc(nb + 1, sizeof *at);
    struct sample *b = malloc((ns ? ns : 1) * sizeof *b);
    if (!at || !b) exit(1);
    for (size_t i = 0; i < ns; i++) at[base[s[i].comm] + (size_t)s[i].rank + 1]++;
    for (size_t q = 0; q < nb; q++) at[q + 1] += at[q];
    for (size_t i = 0; i < ns; i++) b[at[base[s[i].comm] + (size_t)s[i].rank]++] = s[i];
    free(s);
    free(at);
    s = b;
  }
  j->rstats = NULL;
  j->nrstats = 0;
  int rcap = 0;
  double *v = malloc((ns ? ns : 1) * sizeof *v);
  /* per-op tallies of one rank: [op] = instances, late instances; only touched ops are reset */
  int nstr = rpt_nstrings();
  uint64_t *op_n = calloc((size_t)nstr, sizeof *op_n), *op_late = calloc((size_t)nstr, sizeof *op_late);
  if (!v || !op_n || !op_late) exit(1);
  for (size_t i = 0; i < ns;) {
    size_t e = i;
    while (e < ns && s[e].comm == s[i].comm && s[e].rank == s[i].rank) e++;
    if (j->nrstats == rcap) {
      rcap = rcap ? 2 * rcap : 64;
      j->rstats = realloc(j->rstats, (size_t)rcap * sizeof *j->rstats);
      if (!j->rstats) exit(1);
    }
    struct rpt_rank_stat *r = &j->rstats[j->nrstats++];
    memset(r, 0, sizeof *r);
    r->comm = s[i].comm;
    r->rank = s[i].rank;
    r->ops = e - i;
    double sum = 0;
    for (size_t k = i; k < e; k++) {
      bool late = s[k].late >= thr;
      r->late_ops += late;
      r->last_ops += s[k].last;
      sum += s[k].late;
      v[k - i] = s[k].late;
      op_n[s[k].op]++;
      op_late[s[k].op] += late;
    }
    r->mean_late_ns = sum / (double)(e - i);
    r->med_late_ns = rpt_median(v, e - i);
    for (size_t k = i; k < e; k++) v[k - i] = s[k].exec;
    r->med_exec_ns = rpt_median(v, e - i);
    for (size_t k = i; k < e; k++) v[k - i] = s[k].others_exec;
    r->others_med_exec_ns = rpt_median(v, e - i);
    for (size_t k = i; k < e; k++) v[k - i] = s[k].bw_ratio;
    r->busbw_ratio = rpt_median(v, e - i);
    /* the op it is most often late in (ties: the lower name id, whatever the order read) */
    r->top_op = -1;
    uint64_t best = 0;
    for (size_t k = i; k < e; k++) {
      int op = s[k].op;
      if (op_late[op] > best || (op_late[op] == best && best && op < r->top_op)) {
        best = op_late[op];
        r->top_op = op;
        r->top_op_share = (double)op_late[op] / (double)op_n[op];
      }
    }
    for (size_t k = i; k < e; k++) op_n[s[k].op] = op_late[s[k].op] = 0;
    i = e;
  }
  free(op_n);
  free(op_late);
  free(base);
  free(v);
  free(s);
  /* stragglers, in rstats' order (comm, rank: rpt_is_straggler searches them so) */
  j->stragglers = calloc((size_t)(j->nrstats ? j->nrstats : 1), sizeof *j->stragglers);
  if (!j->stragglers) exit(1);
  j->nstragglers = 0;
  for (int i = 0; i < j->nrstats; i++) {
    const struct rpt_rank_stat *r = &j->rstats[i];
    double share = (double)r->late_ops / (double)r->ops;
    if (share < j->opt.late_share || r->med_late_ns < thr) continue;
    const struct rpt_comm *c = &j->comms[r->comm];
    struct rpt_straggler *g = &j->stragglers[j->nstragglers++];
    g->comm = r->comm;
    g->rank = r->rank;
    g->host = c->rank && r->rank < c->nranks ? c->rank[r->rank].host : -1;
    g->pid = c->rank && r->rank < c->nranks ? c->rank[r->rank].pid : -1;
    g->stat = r;
  }
}
