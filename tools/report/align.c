/*
 * align.c - clock offsets from the ends of collectives (see analysis.h).
 *
 * Works on the op sample (job.ops), where one collective's records on every
 * rank are adjacent: an "instance". Only collectives count; P2P ends are not
 * simultaneous.
 *
 * Why medians: a few ops end apart (a rank preempted between channels, a
 * stale timestamp that slipped through) and must not pull an offset; the
 * median ignores them as long as most ends agree. Eight rounds are plenty: on
 * consistent data the first round already lands within the noise, and later
 * rounds only remove the bias of clocks that join several communicators.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define ROUNDS 8
#define PER_CLOCK 256

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Hoare's selection: v[k] becomes the k-th smallest, smaller ones before it. */
static double select_k(double *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = v[lo + (hi - lo) / 2];
    size_t i = lo, j = hi;
    for (;;) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i >= j) break;
      double t = v[i];
      v[i] = v[j];
      v[j] = t;
      i++;
      j--;
    }
    /* now v[lo..j] <= pivot <= v[j+1..hi] */
    if (k <= j) hi = j;
    else lo = j + 1;
  }
  return v[k];
}

double rpt_median(double *v, size_t n) {
  if (!n) return 0;
  /* O(n) where a sort would be O(n log n): the alignment takes medians of every
   * process's ends, eight rounds over, and that was most of its time */
  double hi = select_k(v, n, n / 2);
  if (n % 2) return hi;
  double lo = v[0]; /* the largest of the lower half */
  for (size_t i = 1; i < n / 2; i++)
    if (v[i] > lo) lo = v[i];
  return (lo + hi) / 2;
}

static int find(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

static bool same_instance(const struct rpt_opent *a, const struct rpt_opent *b) {
  return a->comm == b->comm && a->p2p == b->p2p && a->op == b->op && a->sn == b->sn;
}

void rpt_align(struct rpt_job *j) {
  int nc = j->nclocks;
  if (!j->nops || !nc) return;
  j->have_starts = true;
  /* instances: [beg, end) runs of one collective on two or more ranks */
  size_t ninst = 0, cap = 64, nent = 0;
  size_t *beg = malloc(cap * sizeof *beg), *end = malloc(cap * sizeof *end);
  int *parent = malloc((size_t)nc * sizeof *parent);
  if (!beg || !end || !parent) exit(1);
  for (int c = 0; c < nc; c++) parent[c] = c;
  for (size_t i = 0; i < j->nops;) {
    size_t e = i + 1;
    while (e < j->nops && same_instance(&j->ops[i], &j->ops[e])) e++;
    bool ok = !j->ops[i].p2p && e - i >= 2;
    for (size_t k = i; k < e && ok; k++) ok = j->ops[k].clock >= 0;
    if (ok) {
      if (ninst == cap) {
        cap *= 2;
        beg = realloc(beg, cap * sizeof *beg);
        end = realloc(end, cap * sizeof *end);
        if (!beg || !end) exit(1);
      }
      beg[ninst] = i;
      end[ninst++] = e;
      nent += e - i;
      for (size_t k = i + 1; k < e; k++) {
        int a = find(parent, j->ops[i].clock), b = find(parent, j->ops[k].clock);
        if (a != b) parent[a] = b;
      }
    }
    i = e;
  }
  j->align_ops = ninst;
  /* components, numbered in clock order */
  int *comp_of_root = malloc((size_t)nc * sizeof *comp_of_root);
  if (!comp_of_root) exit(1);
  for (int c = 0; c < nc; c++) comp_of_root[c] = -1;
  j->ncomponents = 0;
  for (int c = 0; c < nc; c++) {
    int r = find(parent, c);
    if (comp_of_root[r] < 0) comp_of_root[r] = j->ncomponents++;
    j->clocks[c].component = comp_of_root[r];
    j->clocks[c].offset_ns = 0;
    j->clocks[c].aligned = false;
    j->clocks[c].ops = 0;
  }
  /* per-clock slices of one flat residual array */
  size_t *cnt = calloc((size_t)nc + 1, sizeof *cnt), *fill = calloc((size_t)nc, sizeof *fill);
  double *off = calloc((size_t)nc, sizeof *off), *res = malloc((nent ? nent : 1) * sizeof *res);
  double *tmp = malloc((nent ? nent : 1) * sizeof *tmp), *common = malloc((ninst ? ninst : 1) * sizeof *common);
  if (!cnt || !fill || !off || !res || !tmp || !common) exit(1);
  for (size_t q = 0; q < ninst; q++)
    for (size_t k = beg[q]; k < end[q]; k++) cnt[j->ops[k].clock + 1]++;
  for (int c = 0; c < nc; c++) {
    j->clocks[c].ops = cnt[c + 1];
    j->clocks[c].aligned = cnt[c + 1] > 0;
    cnt[c + 1] += cnt[c]; /* now cnt[c] is clock c's first slot */
  }
  /* The rounds use a subset: instances are taken in order while one of their clocks has
   * fewer than PER_CLOCK of them (so every clock keeps all its ops, up to that many). An
   * offset is a median; 256 ends fix it as well as 300,000, and the rounds then cost
   * 256 x ranks per clock set, not the whole sample (they were a tenth of the report's
   * time on a 200 MB job). The residual below is measured on every instance. */
  size_t nsel = 0;
  size_t *sel = malloc((ninst ? ninst : 1) * sizeof *sel), *have = calloc((size_t)nc, sizeof *have);
  if (!sel || !have) exit(1);
  for (size_t q = 0; q < ninst; q++) {
    bool want = false;
    for (size_t k = beg[q]; k < end[q] && !want; k++) want = have[j->ops[k].clock] < PER_CLOCK;
    if (!want) continue;
    sel[nsel++] = q;
    for (size_t k = beg[q]; k < end[q]; k++) have[j->ops[k].clock]++;
  }
  free(have);
  for (int round = 0; round < ROUNDS && nsel; round++) {
    memset(fill, 0, (size_t)nc * sizeof *fill);
    for (size_t qi = 0; qi < nsel; qi++) {
      size_t q = sel[qi];
      size_t n = 0;
      for (size_t k = beg[q]; k < end[q]; k++) {
        const struct rpt_opent *e = &j->ops[k];
        tmp[n++] = (double)(e->start_ns + e->exec_ns) - off[e->clock];
      }
      common[q] = rpt_median(tmp, n);
      for (size_t k = beg[q]; k < end[q]; k++) {
        const struct rpt_opent *e = &j->ops[k];
        res[cnt[e->clock] + fill[e->clock]++] = (double)(e->start_ns + e->exec_ns) - common[q];
      }
    }
    for (int c = 0; c < nc; c++) off[c] = rpt_median(res + cnt[c], fill[c]);
    /* zero is the median clock of each component */
    for (int comp = 0; comp < j->ncomponents; comp++) {
      size_t n = 0;
      for (int c = 0; c < nc; c++)
        if (j->clocks[c].component == comp && j->clocks[c].aligned) tmp[n++] = off[c];
      double z = rpt_median(tmp, n);
      for (int c = 0; c < nc; c++)
        if (j->clocks[c].component == comp) off[c] -= z;
    }
  }
  /* the residuals of the final offsets */
  size_t n = 0;
  memset(fill, 0, (size_t)nc * sizeof *fill);
  for (size_t q = 0; q < ninst; q++) {
    size_t m = 0;
    for (size_t k = beg[q]; k < end[q]; k++) {
      const struct rpt_opent *e = &j->ops[k];
      tmp[m++] = (double)(e->start_ns + e->exec_ns) - off[e->clock];
    }
    double t = rpt_median(tmp, m);
    for (size_t k = beg[q]; k < end[q]; k++) {
      const struct rpt_opent *e = &j->ops[k];
      double r = fabs((double)(e->start_ns + e->exec_ns) - off[e->clock] - t);
      res[cnt[e->clock] + fill[e->clock]++] = r;
      n++;
    }
  }
  j->offset_min_ns = j->offset_max_ns = 0;
  for (int c = 0; c < nc; c++) {
    struct rpt_clock *k = &j->clocks[c];
    k->offset_ns = (int64_t)llround(off[c]);
    size_t m = cnt[c + 1] - cnt[c];
    if (m) {
      qsort(res + cnt[c], m, sizeof *res, cmp_dbl);
      size_t i95 = (size_t)(0.95 * (double)m);
      k->resid_p95_ns = res[cnt[c] + (i95 < m ? i95 : m - 1)];
    }
    if (k->aligned && (double)k->offset_ns < j->offset_min_ns) j->offset_min_ns = (double)k->offset_ns;
    if (k->aligned && (double)k->offset_ns > j->offset_max_ns) j->offset_max_ns = (double)k->offset_ns;
  }
  memcpy(tmp, res, n * sizeof *res);
  qsort(tmp, n, sizeof *tmp, cmp_dbl);
  if (n) {
    j->resid_p50_ns = tmp[n / 2];
    size_t i95 = (size_t)(0.95 * (double)n);
    j->resid_p95_ns = tmp[i95 < n ? i95 : n - 1];
  }
  free(sel);
  free(beg);
  free(end);
  free(parent);
  free(comp_of_root);
  free(cnt);
  free(fill);
  free(off);
  free(res);
  free(tmp);
  free(common);
}
