/* SPDX-License-Identifier: Apache-2.0 */
/*
 * change.c - when a group's bandwidth changed (see analysis.h).
 *
 * First the series: every group's records of the op sample binned on the
 * ALIGNED timeline (clock offsets of milliseconds would otherwise smear one op
 * over several bins, each holding a different mix of nodes), one time axis
 * for the whole job, up to 256 bins of a round width (1, 2 or 5 x 10^k ns, at
 * least 1 ms). A bin's value is its mean busbw.
 *
 * Then binary segmentation on the medians of a group's bins: the rule is
 * simple enough to state in one sentence in the docs and to check by hand,
 * which matters more here than the best detector. Each change keeps its
 * evidence (bins and ops on each side, bins on their side of the midpoint).
 *
 * Noise makes changes too: the best split of a flat noisy series always has
 * two medians that differ, and a job of many groups offers many series to find
 * one in (clean jobs of many groups had 7 CHANGE lines in 5 jobs, some "high"
 * on 5-6 ops). So a change needs MIN_SIDE bins on each side (each bin a stretch
 * of time of its own: one op's records on several ranks share its time and are
 * one piece of evidence, not several), and its two sides must differ by a
 * Mann-Whitney test whose p-value, times the tests the search made (groups
 * searched x the candidate splits of the segment), stays below ALPHA: a bound
 * on the chance of any false change in the whole job (Bonferroni).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "../common/xalloc.h"

#define MIN_SIDE 5   /* bins on each side of a change */
#define MIN_BINS 10  /* bins a group needs to be searched: 2 x MIN_SIDE */
#define ALPHA 0.05   /* the chance of a false change in a job, at most (see the top) */
#define DEPTH 3
#define AGREE 0.8

struct pt {
  uint64_t t;
  double v;
  uint32_t n; /* ops in the bin */
};

static void add_change(struct rpt_job *j, int g, uint64_t t, double before, double after, double pv, double tests) {
  j->changes = realloc(j->changes, (size_t)(j->nchanges + 1) * sizeof *j->changes);
  if (!j->changes) xalloc_die();
  j->changes[j->nchanges++] = (struct rpt_change){.group = g, .t_ns = t, .before_gbs = before, .after_gbs = after,
                                                  .p_value = pv, .tests = tests};
}

struct rankv { /* a bin's value and its side, for the Mann-Whitney test */
  double v;
  int right;
};

static int cmp_rankv(const void *x, const void *y) {
  const struct rankv *a = x, *b = y;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->right - b->right;
}

/* Two-sided p-value of the Mann-Whitney test between the bins p[lo, at) and p[at, hi) (the
 * normal approximation with the tie correction: each side has MIN_SIDE bins or more). */
static double mann_whitney_p(const struct pt *p, int lo, int at, int hi) {
  int n = hi - lo;
  struct rankv *r = malloc((size_t)n * sizeof *r);
  if (!r) xalloc_die();
  for (int i = lo; i < hi; i++) r[i - lo] = (struct rankv){.v = p[i].v, .right = i >= at};
  qsort(r, (size_t)n, sizeof *r, cmp_rankv);
  double rsum = 0, ties = 0; /* the left side's rank sum; sum of t^3 - t over tied runs */
  for (int i = 0; i < n;) {
    int e = i;
    while (e < n && r[e].v == r[i].v) e++;
    double rank = (i + 1 + e) / 2.0, t = e - i; /* ranks i + 1 .. e, averaged */
    for (int k = i; k < e; k++)
      if (!r[k].right) rsum += rank;
    ties += t * t * t - t;
    i = e;
  }
  free(r);
  double n1 = at - lo, n2 = hi - at, nn = n;
  double u = rsum - n1 * (n1 + 1) / 2, mu = n1 * n2 / 2;
  double var = n1 * n2 / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
  if (!(var > 0)) return 1;
  double z = (fabs(u - mu) - 0.5) / sqrt(var); /* with the continuity correction */
  return z <= 0 ? 1 : erfc(z / sqrt(2));
}

/* The last change's evidence: the bins of each side, those on their side of the midpoint,
 * their ops; its confidence against the rule's own agreement (AGREE). */
static void change_evidence(struct rpt_job *j, const struct pt *p, int lo, int at, int hi, int agree_l, int agree_r) {
  struct rpt_change *c = &j->changes[j->nchanges - 1];
  c->bins_before = at - lo;
  c->bins_after = hi - at;
  c->agree_before = agree_l;
  c->agree_after = agree_r;
  for (int i = lo; i < hi; i++) *(i < at ? &c->ops_before : &c->ops_after) += p[i].n;
  c->agree_lo = rpt_share_lo((uint64_t)(agree_l + agree_r), (uint64_t)(hi - lo));
  c->conf = c->agree_lo >= AGREE ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
}

static double med_of(const struct pt *p, int lo, int hi, double *tmp) {
  for (int i = lo; i < hi; i++) tmp[i - lo] = p[i].v;
  return rpt_median(tmp, (size_t)(hi - lo));
}

static void split(struct rpt_job *j, int g, int searched, const struct pt *p, int lo, int hi, int depth,
                  double *tmp) {
  if (depth == 0 || hi - lo < 2 * MIN_SIDE) return;
  int best = -1, cands = 0;
  double best_cost = INFINITY, bl = 0, br = 0;
  /* the split that leaves the least absolute deviation (of log busbw) from each
   * side's median: where the series is best told as two flat pieces. At most 64
   * candidates per segment: a change is located to 1/64 of the segment. */
  int step = (hi - lo) / 64 > 1 ? (hi - lo) / 64 : 1;
  for (int k = lo + MIN_SIDE; k <= hi - MIN_SIDE; k += step) {
    cands++;
    double l = med_of(p, lo, k, tmp), r = med_of(p, k, hi, tmp);
    if (l <= 0 || r <= 0) continue;
    double cost = 0;
    for (int i = lo; i < hi; i++) cost += p[i].v > 0 ? fabs(log(p[i].v / (i < k ? l : r))) : 0;
    if (cost < best_cost) best_cost = cost, best = k, bl = l, br = r;
  }
  double best_score = best >= 0 ? fabs(log(br / bl)) : 0;
  if (best < 0 || exp(best_score) < j->opt.change_ratio) return;
  /* the two sides must separate, not merely differ in their medians */
  double mid = sqrt(bl * br);
  int agree_l = 0, agree_r = 0;
  for (int i = lo; i < best; i++) agree_l += (p[i].v < mid) == (bl < mid);
  for (int i = best; i < hi; i++) agree_r += (p[i].v < mid) == (br < mid);
  if (agree_l < AGREE * (best - lo) || agree_r < AGREE * (hi - best)) return;
  /* and noise must not explain them, over every test the search made (see the top) */
  double pv = mann_whitney_p(p, lo, best, hi), tests = (double)searched * cands;
  if (pv * tests > ALPHA) return;
  split(j, g, searched, p, lo, best, depth - 1, tmp);
  add_change(j, g, p[best].t, bl, br, pv, tests);
  change_evidence(j, p, lo, best, hi, agree_l, agree_r);
  split(j, g, searched, p, best, hi, depth - 1, tmp);
}

#define MAX_BINS 256
#define MIN_WIDTH 1000000ull /* 1 ms */

static uint64_t mixh(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t group_hash(int comm, int p2p, int op, uint64_t bytes) {
  return mixh(mixh(((uint64_t)comm << 34) ^ ((uint64_t)op << 1) ^ (uint64_t)p2p) ^ bytes);
}

/* The smallest 1, 2 or 5 x 10^k >= x. */
static uint64_t round_width(uint64_t x) {
  for (uint64_t p = 1;; p *= 10)
    for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)
      if (m * p >= x) return m * p;
}

static int64_t aligned_start(const struct rpt_job *j, const struct rpt_opent *e) {
  return rpt_aligned_ns(j, e->clock, e->start_ns);
}

static void build_series(struct rpt_job *j) {
  if (!j->nops) return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < j->nops; i++) {
    int64_t t = aligned_start(j, &j->ops[i]);
    if (t < lo) lo = t;
    if (t > hi) hi = t;
  }
  uint64_t span = (uint64_t)(hi - lo) + 1;
  uint64_t w = round_width((span + MAX_BINS - 1) / MAX_BINS);
  if (w < MIN_WIDTH) w = MIN_WIDTH;
  int64_t t0 = lo - (int64_t)((uint64_t)lo % w);
  int nbins = (int)((uint64_t)(hi - t0) / w) + 1;
  /* groups by key: an index built here (groups are few next to records) */
  size_t cap = 64;
  while (cap < 2 * (size_t)j->ngroups) cap *= 2;
  int *slot = malloc(cap * sizeof *slot);
  if (!slot) xalloc_die();
  for (size_t k = 0; k < cap; k++) slot[k] = -1;
  for (int g = 0; g < j->ngroups; g++) {
    const struct rpt_group *x = &j->groups[g];
    size_t k = group_hash(x->comm, x->p2p, x->op, x->bytes) & (cap - 1);
    while (slot[k] >= 0) k = (k + 1) & (cap - 1);
    slot[k] = g;
  }
  for (size_t i = 0; i < j->nops; i++) {
    const struct rpt_opent *e = &j->ops[i];
    size_t k = group_hash((int)e->comm, e->p2p, e->op, e->bytes) & (cap - 1);
    int g = -1;
    for (; slot[k] >= 0; k = (k + 1) & (cap - 1)) {
      const struct rpt_group *x = &j->groups[slot[k]];
      if (x->comm == (int)e->comm && x->p2p == e->p2p && x->op == e->op && x->bytes == e->bytes) {
        g = slot[k];
        break;
      }
    }
    if (g < 0) continue; /* NEVER: every sampled op's group exists */
    struct rpt_series *s = &j->groups[g].series;
    if (!s->nbins) {
      s->t0_ns = (uint64_t)t0;
      s->width_ns = w;
      s->nbins = nbins;
      s->count = calloc((size_t)nbins, sizeof *s->count);
      s->sum_mbs = calloc((size_t)nbins, sizeof *s->sum_mbs);
      if (!s->count || !s->sum_mbs) xalloc_die();
    }
    int b = (int)((uint64_t)(aligned_start(j, e) - t0) / w);
    s->count[b]++;
    s->sum_mbs[b] += (uint64_t)(e->busbw * 1000.0f + 0.5f);
  }
  free(slot);
}

void rpt_changes(struct rpt_job *j) {
  j->changes = NULL;
  j->nchanges = 0;
  build_series(j);
  int searched = 0; /* groups with enough bins to be searched: each is a test (see the top) */
  for (int g = 0; g < j->ngroups; g++) {
    const struct rpt_series *s = &j->groups[g].series;
    int n = 0;
    for (int i = 0; i < s->nbins; i++) n += s->count[i] > 0;
    searched += n >= MIN_BINS;
  }
  for (int g = 0; g < j->ngroups; g++) {
    const struct rpt_series *s = &j->groups[g].series;
    int n = 0;
    for (int i = 0; i < s->nbins; i++) n += s->count[i] > 0;
    if (n < MIN_BINS) continue;
    struct pt *p = malloc((size_t)n * sizeof *p);
    double *tmp = malloc((size_t)n * sizeof *tmp);
    if (!p || !tmp) xalloc_die();
    n = 0;
    for (int i = 0; i < s->nbins; i++)
      if (s->count[i])
        p[n++] = (struct pt){.t = s->t0_ns + (uint64_t)i * s->width_ns,
                             .v = (double)s->sum_mbs[i] / 1000.0 / s->count[i], .n = s->count[i]};
    split(j, g, searched, p, 0, n, DEPTH, tmp);
    free(p);
    free(tmp);
  }
}
