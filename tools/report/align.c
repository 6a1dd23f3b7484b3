/* SPDX-License-Identifier: Apache-2.0 */
/*
 * align.c - clock offsets, and how they drift, from the ends of collectives
 * (see analysis.h).
 *
 * Works on the op sample (job.ops), where one collective's records on every
 * rank are adjacent: an "instance". Only collectives count; P2P ends are not
 * simultaneous.
 *
 * A clock's offset is a function of time, not one number: GPU timers follow
 * their host's clock, and NTP-disciplined hosts run tens of ppm apart between
 * corrections (50 ppm is 3 ms over a minute, far more than the lateness we
 * look for). So each round fits, per clock, the simplest model that explains
 * (its end - the op's common end) against its own time:
 *  - a constant (the median, as before drift was modelled);
 *  - a line, offset and rate: Theil-Sen (the median of the pairwise slopes)
 *    through the medians of up to 16 windows of its ops, equal in count;
 *  - a line per window (piecewise): one rate, the median slope between
 *    neighbouring windows' medians, and each window its own offset: a clock
 *    stepped by NTP, or a rate that changed during the job.
 * A richer model is taken only when it halves the median absolute residual of
 * the simpler one and gains 0.1 us, so that noise is not fitted as drift (a
 * short job, whose clocks cannot drift measurably, keeps constant offsets).
 *
 * Why medians: a few ops end apart (a rank preempted between channels, a
 * stale timestamp that slipped through) and must not pull an offset; window
 * medians and Theil-Sen ignore them as long as most ends agree. Rounds: on
 * consistent data the first lands within the noise and the next few remove
 * the bias of the first common ends (taken on unaligned clocks, where the
 * median clock changes as clocks drift past each other) and of clocks that
 * join several communicators; they stop when no offset moves by 1 ns. Lines
 * only, first: a line per window could take the first common ends' kinks for
 * every clock's own, and keep them (offsets are only defined up to a common
 * function of time; zeroing the median clock's offset and rate fixes a line,
 * not a curve). Then two rounds that allow windows, against settled ends.
 *
 * Cost (512 processes x 600 ops, 300,000 ends, 2 cores): 0.2 s, against 0.15 s
 * for constant offsets from each clock's first 256 ops.
 *
 * Times are doubles relative to job.clock_ref_ns (the earliest end used):
 * a raw timestamp near 1.8e18 ns as a double is only good to 256 ns.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "../common/xalloc.h"

#define ROUNDS 8         /* at most, with a constant or a line per clock */
#define WINDOW_ROUNDS 2  /* then at most, with a line per window too */
#define SETTLED_NS 1.0   /* rounds stop when no clock's offset moved more */
/* Ops per clock the rounds use, spread evenly over its whole time (a rate needs the
 * job's ends, not its first seconds): 16 windows of 16. The rounds then cost
 * PER_CLOCK x ranks per clock set, not the whole sample (on a 200 MB job the whole
 * sample made them a tenth of the report's time); the residual is measured on all.
 * 512 (windows of 32) made the alignment of 512 processes x 600 ops 0.35 s, not 0.2,
 * for no gain on the synthetic jobs' drift (tests/test_report_drift.py). */
#define PER_CLOCK 256
#define MIN_PER_WINDOW 16 /* fewer ops than 2 windows of these: a constant offset */
#define MIN_GAIN_NS 100.0 /* a richer model must gain this much median residual too */

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

double rpt_select(double *v, size_t n, size_t k) {
  assert(k < n);
  return select_k(v, n, k);
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

/* An op's end, relative to the reference time. */
static double end_x(const struct rpt_job *j, const struct rpt_opent *e) {
  return (double)(int64_t)(e->start_ns + e->exec_ns - j->clock_ref_ns);
}

struct tinst { /* an instance and its time, to spread the rounds' ops over the job */
  double t;
  size_t q;
};

static int cmp_tinst(const void *a, const void *b) {
  const struct tinst *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->q < y->q ? -1 : x->q > y->q;
}

struct slot { /* one end of a clock in a selected instance */
  double x;   /* its end - clock_ref_ns */
  size_t k;   /* its entry in job.ops */
  size_t qi;  /* its instance, an index into the selection */
};

static int cmp_slot(const void *a, const void *b) {
  const struct slot *x = a, *y = b;
  if (x->x != y->x) return x->x < y->x ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* Sorts a clock's slots by time. They come nearly sorted (in the instances' time order, a
 * time of another clock at most milliseconds off): an insertion sort, unless it has moved
 * 8 slots per slot, when the rest goes to qsort. */
static void sort_slots(struct slot *v, size_t n) {
  size_t moves = 0;
  for (size_t i = 1; i < n; i++) {
    struct slot t = v[i];
    size_t k = i;
    for (; k > 0 && cmp_slot(&v[k - 1], &t) > 0; k--) v[k] = v[k - 1];
    v[k] = t;
    moves += i - k;
    if (moves > 8 * n) {
      qsort(v, n, sizeof *v, cmp_slot);
      return;
    }
  }
}

/* How well a model fits a clock's samples: the p90 of |y - model(x)|, not the median, so that
 * a step a tenth of the job or more from either end counts (a line through the larger part
 * fits the median perfectly), while a few ends apart (a preempted rank) do not. tmp holds m
 * doubles. */
static double resid_score(const struct rpt_clock *k, const double *x, const double *y, size_t m, double *tmp) {
  for (size_t i = 0; i < m; i++) tmp[i] = fabs(y[i] - rpt_clock_offset(k, x[i]));
  size_t i90 = (size_t)(0.9 * (double)m);
  return select_k(tmp, m, i90 < m ? i90 : m - 1);
}

/* Whether a model with residual score r is worth taking over one with `best`. */
static bool better(double r, double best) { return r < best / 2 && best - r > MIN_GAIN_NS; }

/* The sample in [p, q) where a step from level A to level B is: the split with the fewest
 * samples nearer the other side's level (the first such). */
static size_t step_at(const struct rpt_clock *c, const double *x, const double *y, size_t p, size_t q, double A,
                      double B) {
  long cost = 0, best = 0;
  size_t at = p;
  for (size_t i = p; i < q; i++) { /* split at p: every sample on B's side */
    double r = y[i] - c->rate * x[i];
    cost += fabs(r - A) < fabs(r - B);
  }
  best = cost;
  for (size_t i = p; i < q; i++) { /* sample i moves to A's side */
    double r = y[i] - c->rate * x[i];
    cost += fabs(r - B) < fabs(r - A) ? 1 : fabs(r - A) < fabs(r - B) ? -1 : 0;
    if (cost < best) best = cost, at = i + 1;
  }
  return at;
}

/*
 * Steps where they are, not at window edges: neighbouring windows whose offsets agree (within
 * 4 x the windows' median residual, and 1 us) are one segment; a window alone between two
 * segments, its offset between theirs, holds the step between them; where two segments meet,
 * the step is put at the sample that best separates their levels (step_at), searched over the
 * windows on either side. Each segment's offset is then the median over its own samples. A
 * clock whose windows all agree keeps one segment: a line. tmp holds m doubles.
 */
static void place_steps(struct rpt_clock *c, const double *x, const double *y, size_t m, const size_t *lo, size_t nb,
                        double *tmp) {
  for (size_t i = 0; i < m; i++) tmp[i] = fabs(y[i] - rpt_clock_offset(c, x[i]));
  double tol = 4 * rpt_median(tmp, m) + 1000.0;
  /* runs of windows [first, last] at one level */
  size_t first[RPT_CLOCK_SEGS], last[RPT_CLOCK_SEGS], nr = 0;
  for (size_t b = 0; b < nb; b++) {
    if (nr && fabs(c->seg_a[b] - c->seg_a[b - 1]) <= tol) {
      last[nr - 1] = b;
      continue;
    }
    first[nr] = last[nr] = b;
    nr++;
  }
  /* a lone window whose level lies between its neighbours' holds their step: drop it */
  size_t keep = 0;
  for (size_t r = 0; r < nr; r++) {
    if (r > 0 && r + 1 < nr && first[r] == last[r]) {
      double a = c->seg_a[last[r - 1]], b = c->seg_a[first[r + 1]], v = c->seg_a[first[r]];
      if ((v - a) * (b - v) > 0) continue;
    }
    first[keep] = first[r];
    last[keep++] = last[r];
  }
  nr = keep;
  size_t at[RPT_CLOCK_SEGS + 1];
  at[0] = 0;
  at[nr] = m;
  for (size_t r = 1; r < nr; r++) {
    size_t p = lo[last[r - 1]], q = lo[first[r] + 1];
    at[r] = step_at(c, x, y, p, q, c->seg_a[last[r - 1]], c->seg_a[first[r]]);
    if (at[r] <= at[r - 1]) at[r] = at[r - 1] + 1; /* every segment keeps a sample */
  }
  c->nseg = (int)nr;
  for (size_t r = 0; r < nr; r++) {
    size_t n = at[r + 1] - at[r];
    for (size_t i = 0; i < n; i++) tmp[i] = y[at[r] + i] - c->rate * x[at[r] + i];
    c->seg_a[r] = rpt_median(tmp, n);
    c->seg_x[r] = r ? (x[at[r] - 1] + x[at[r]]) / 2 : 0;
  }
}

/*
 * Fits clock k's offset y against its time x (m samples, x increasing): a constant, a
 * line, or a line per window, each kept only if it halves the median residual of the
 * one before (see the top of the file). tmp holds m doubles.
 */
static void fit_clock(struct rpt_clock *k, const double *x, const double *y, size_t m, double *tmp, bool windows) {
  memcpy(tmp, y, m * sizeof *y);
  k->model = RPT_CLOCK_CONSTANT;
  k->rate = 0;
  k->seg_x[0] = 0;
  k->seg_a[0] = rpt_median(tmp, m);
  k->nseg = 1;
  size_t nb = m / MIN_PER_WINDOW;
  if (nb > RPT_CLOCK_SEGS) nb = RPT_CLOCK_SEGS;
  if (nb < 2 || x[m - 1] <= x[0]) return;
  double best = resid_score(k, x, y, m, tmp);
  /* window medians, of x (sorted: its middle) and of y; a linear y's is on its line */
  double bx[RPT_CLOCK_SEGS], by[RPT_CLOCK_SEGS];
  size_t lo[RPT_CLOCK_SEGS + 1];
  for (size_t b = 0; b <= nb; b++) lo[b] = b * m / nb;
  for (size_t b = 0; b < nb; b++) {
    size_t n = lo[b + 1] - lo[b];
    bx[b] = (x[lo[b] + (n - 1) / 2] + x[lo[b] + n / 2]) / 2;
    memcpy(tmp, y + lo[b], n * sizeof *y);
    by[b] = rpt_median(tmp, n);
  }
  /* a line: Theil-Sen through the window medians */
  double sl[RPT_CLOCK_SEGS * (RPT_CLOCK_SEGS - 1) / 2];
  size_t ns = 0;
  for (size_t a = 0; a < nb; a++)
    for (size_t b = a + 1; b < nb; b++)
      if (bx[b] > bx[a]) sl[ns++] = (by[b] - by[a]) / (bx[b] - bx[a]);
  if (!ns) return;
  struct rpt_clock c = *k;
  c.model = RPT_CLOCK_LINE;
  c.rate = rpt_median(sl, ns);
  for (size_t b = 0; b < nb; b++) tmp[b] = by[b] - c.rate * bx[b];
  c.seg_a[0] = rpt_median(tmp, nb);
  double r = resid_score(&c, x, y, m, tmp);
  if (better(r, best)) {
    *k = c;
    best = r;
  }
  /* a line per window, one rate: the median slope between neighbouring windows (a step
   * spoils one of them, where it would tilt a line through all); each window its own
   * intercept, the median of its y - rate x; a segment starts half-way between windows */
  if (!windows) return;
  ns = 0;
  for (size_t b = 0; b + 1 < nb; b++)
    if (bx[b + 1] > bx[b]) sl[ns++] = (by[b + 1] - by[b]) / (bx[b + 1] - bx[b]);
  if (!ns) return;
  c.model = RPT_CLOCK_WINDOWS;
  c.rate = rpt_median(sl, ns);
  c.nseg = (int)nb;
  for (size_t b = 0; b < nb; b++) {
    size_t n = lo[b + 1] - lo[b];
    for (size_t i = 0; i < n; i++) tmp[i] = y[lo[b] + i] - c.rate * x[lo[b] + i];
    c.seg_a[b] = rpt_median(tmp, n);
    c.seg_x[b] = b ? (x[lo[b] - 1] + x[lo[b]]) / 2 : 0;
  }
  place_steps(&c, x, y, m, lo, nb, tmp);
  if (better(resid_score(&c, x, y, m, tmp), best)) *k = c;
}

/*
 * rpt_align's working state. The steps below fill it in order, each reading what the
 * ones before left: the instances, every clock's ends in them, the subset the rounds fit
 * on and each clock's ends in that subset. One struct, freed once, so that no step owns
 * memory another needs.
 */
struct align {
  struct rpt_job *j;
  int nc;             /* clocks */
  size_t ninst, nent; /* instances, and their ends in all */
  size_t *beg, *end;  /* instance q: job.ops[beg[q], end[q]) */
  int *parent;        /* union-find over clocks: joined when they share an instance */
  uint8_t *span;      /* instance q's hosts: 1, 2, or 3 for three or more */
  uint8_t *level;     /* clock c is fitted on the instances of this span or more (fitted_end) */
  size_t *cnt;        /* clock c's ends in every instance: res[cnt[c], cnt[c + 1]) */
  double *res;        /* per end: |its aligned end - its instance's common end| */
  double *tmp;        /* scratch, nent doubles: every median below is taken in it */
  size_t nsel, nslots; /* selected instances, and their fitted ends */
  size_t *sel;        /* the instances the rounds fit on, in time order */
  size_t *sbase;      /* clock c's ends in those: slots[sbase[c], sbase[c + 1]), by its time */
  struct slot *slots;
  double *sx, *sy;    /* per slot: its end on its own clock; that - its common end */
  double *common;     /* per selected instance: its common end in this round */
};

/* Only what ends at once on every rank can say how clocks differ: a collective seen on two
 * or more ranks, each on a known clock (P2P ends are not simultaneous). Clocks joined by
 * one are comparable; the reference time, the earliest end of any, keeps the doubles the
 * rounds work in good to the nanosecond. */
static void find_instances(struct align *a) {
  struct rpt_job *j = a->j;
  size_t cap = 64;
  a->beg = malloc(cap * sizeof *a->beg);
  a->end = malloc(cap * sizeof *a->end);
  a->span = malloc(cap * sizeof *a->span);
  a->parent = malloc((size_t)a->nc * sizeof *a->parent);
  if (!a->beg || !a->end || !a->span || !a->parent) xalloc_die();
  for (int c = 0; c < a->nc; c++) a->parent[c] = c;
  uint64_t ref = UINT64_MAX;
  for (size_t i = 0; i < j->nops;) {
    size_t e = i + 1;
    while (e < j->nops && same_instance(&j->ops[i], &j->ops[e])) e++;
    bool ok = !j->ops[i].p2p && e - i >= 2;
    for (size_t k = i; k < e && ok; k++) ok = j->ops[k].clock >= 0;
    if (ok) {
      if (a->ninst == cap) {
        cap *= 2;
        a->beg = realloc(a->beg, cap * sizeof *a->beg);
        a->end = realloc(a->end, cap * sizeof *a->end);
        a->span = realloc(a->span, cap * sizeof *a->span);
        if (!a->beg || !a->end || !a->span) xalloc_die();
      }
      int h0 = j->clocks[j->ops[i].clock].host, h1 = h0;
      uint8_t span = 1;
      for (size_t k = i + 1; k < e && span < 3; k++) {
        int h = j->clocks[j->ops[k].clock].host;
        if (h == h0 || h == h1) continue;
        if (h1 == h0) h1 = h;
        span++;
      }
      a->span[a->ninst] = span;
      a->beg[a->ninst] = i;
      a->end[a->ninst++] = e;
      a->nent += e - i;
      for (size_t k = i; k < e; k++) {
        int x = find(a->parent, j->ops[i].clock), y = find(a->parent, j->ops[k].clock);
        if (x != y) a->parent[x] = y;
        if (j->ops[k].start_ns + j->ops[k].exec_ns < ref) ref = j->ops[k].start_ns + j->ops[k].exec_ns;
      }
    }
    i = e;
  }
  j->align_ops = a->ninst;
  j->clock_ref_ns = a->ninst ? ref : 0;
}

/* Clocks that never share an instance, directly or through others, have no offset between
 * them: each such set (a component) gets its own zero. Numbered in clock order, so that the
 * numbers do not depend on the order the instances came in. Every clock is reset here: one
 * in no instance keeps these values (offset 0, not aligned). */
static void number_components(struct align *a) {
  struct rpt_job *j = a->j;
  int *comp_of_root = malloc((size_t)a->nc * sizeof *comp_of_root);
  if (!comp_of_root) xalloc_die();
  for (int c = 0; c < a->nc; c++) comp_of_root[c] = -1;
  j->ncomponents = 0;
  for (int c = 0; c < a->nc; c++) {
    int r = find(a->parent, c);
    if (comp_of_root[r] < 0) comp_of_root[r] = j->ncomponents++;
    struct rpt_clock *k = &j->clocks[c];
    k->component = comp_of_root[r];
    k->offset_ns = 0;
    k->drift_ppm = 0;
    k->model = RPT_CLOCK_CONSTANT;
    k->nseg = 0;
    k->rate = 0;
    k->aligned = false;
    k->ops = 0;
  }
  free(comp_of_root);
}

/* Every clock's ends get a slice of one flat residual array (the residual is measured on
 * all of them, not only on those the rounds fit), so that its p95 is a selection within its
 * slice. A clock with none is not aligned: its offset stays 0 and it counts in no range. */
static void count_ends(struct align *a) {
  struct rpt_job *j = a->j;
  a->cnt = calloc((size_t)a->nc + 1, sizeof *a->cnt);
  a->res = malloc((a->nent ? a->nent : 1) * sizeof *a->res);
  a->tmp = malloc((a->nent ? a->nent : 1) * sizeof *a->tmp);
  if (!a->cnt || !a->res || !a->tmp) xalloc_die();
  for (size_t q = 0; q < a->ninst; q++)
    for (size_t k = a->beg[q]; k < a->end[q]; k++) a->cnt[j->ops[k].clock + 1]++;
  for (int c = 0; c < a->nc; c++) {
    j->clocks[c].ops = a->cnt[c + 1];
    j->clocks[c].aligned = a->cnt[c + 1] > 0;
    a->cnt[c + 1] += a->cnt[c]; /* now cnt[c] is clock c's first slot */
  }
  size_t *n3 = calloc((size_t)a->nc + 1, sizeof *n3), *n2 = calloc((size_t)a->nc + 1, sizeof *n2);
  a->level = malloc(((size_t)a->nc + 1) * sizeof *a->level);
  if (!n3 || !n2 || !a->level) xalloc_die();
  for (size_t q = 0; q < a->ninst; q++)
    for (size_t k = a->beg[q]; k < a->end[q]; k++) {
      n3[j->ops[k].clock] += a->span[q] >= 3;
      n2[j->ops[k].clock] += a->span[q] >= 2;
    }
  for (int c = 0; c < a->nc; c++) a->level[c] = n3[c] >= 2 * MIN_PER_WINDOW ? 3 : n2[c] ? 2 : 1;
  free(n3);
  free(n2);
}

/*
 * Whether the end ops[k] of instance q is fitted on: a clock is fitted on the instances that
 * span the most hosts it has enough of (three or more, else two, else one). An instance whose
 * ends are all on one host says nothing of that host's clock against the others': its
 * processes share the host's error, their common end moves with it, and it hands the fit
 * back the offset it has (a tensor-parallel communicator is a whole node, and runs more ops
 * than the others: its ends would hold every clock of the node where the first round put
 * it). An instance of two hosts (a pipeline pair) says it at half strength: its common end
 * lies half-way between the two, so each round moves a clock half of its error there, and
 * mixed with the ends of wider instances, that move a full step, its samples split in two
 * crowds whose median drifts rather than settles (and hides a rate).
 */
static bool fitted_end(const struct align *a, size_t q, size_t k) {
  return a->span[q] >= a->level[a->j->ops[k].clock];
}

/* The rounds use a subset spread over time: instances in time order (a raw end: clocks
 * milliseconds apart only reorder neighbours), each taken when one of its clocks is due,
 * every (its ops / PER_CLOCK)-th of that clock's. A rate needs the job's whole span, and
 * the rounds then cost PER_CLOCK x ranks per clock set, whatever the job's length. */
static void select_instances(struct align *a) {
  struct rpt_job *j = a->j;
  struct tinst *order = malloc((a->ninst ? a->ninst : 1) * sizeof *order);
  a->sel = malloc((a->ninst ? a->ninst : 1) * sizeof *a->sel);
  double *pos = calloc((size_t)a->nc, sizeof *pos), *due = calloc((size_t)a->nc, sizeof *due);
  size_t *fit = calloc((size_t)a->nc, sizeof *fit); /* per clock: its fitted ends */
  if (!order || !a->sel || !pos || !due || !fit) xalloc_die();
  for (size_t q = 0; q < a->ninst; q++) {
    order[q] = (struct tinst){.t = end_x(j, &j->ops[a->beg[q]]), .q = q};
    for (size_t k = a->beg[q]; k < a->end[q]; k++) fit[j->ops[k].clock] += fitted_end(a, q, k);
  }
  qsort(order, a->ninst, sizeof *order, cmp_tinst);
  for (size_t oi = 0; oi < a->ninst; oi++) {
    size_t q = order[oi].q;
    bool want = false;
    for (size_t k = a->beg[q]; k < a->end[q] && !want; k++)
      want = fitted_end(a, q, k) && pos[j->ops[k].clock] >= due[j->ops[k].clock];
    for (size_t k = a->beg[q]; k < a->end[q]; k++) {
      if (!fitted_end(a, q, k)) continue;
      int c = j->ops[k].clock;
      pos[c] += 1;
      /* one instance serves every clock in it that was due: each moves on to its next due
       * point, on a fixed grid, so that its picks stay evenly spread over its time */
      if (want && pos[c] > due[c]) {
        double stride = (double)fit[c] / PER_CLOCK;
        due[c] += stride > 1 ? stride : 1;
      }
    }
    if (!want) continue;
    a->sel[a->nsel++] = q;
    for (size_t k = a->beg[q]; k < a->end[q]; k++) a->nslots += fitted_end(a, q, k);
  }
  free(order);
  free(pos);
  free(due);
  free(fit);
}

/* A clock's model is fitted against its own time, its samples sorted by it: each clock's
 * ends in the selection get a contiguous run of slots, sorted once here, since the rounds
 * only change the common ends (sy), never which end is where (sx). */
static void gather_slots(struct align *a) {
  struct rpt_job *j = a->j;
  int nc = a->nc;
  size_t *sfill = calloc((size_t)nc, sizeof *sfill);
  a->sbase = calloc((size_t)nc + 1, sizeof *a->sbase);
  a->slots = malloc((a->nslots ? a->nslots : 1) * sizeof *a->slots);
  a->common = malloc((a->nsel ? a->nsel : 1) * sizeof *a->common);
  a->sx = malloc((a->nslots ? a->nslots : 1) * sizeof *a->sx);
  a->sy = malloc((a->nslots ? a->nslots : 1) * sizeof *a->sy);
  if (!a->sbase || !sfill || !a->slots || !a->common || !a->sx || !a->sy) xalloc_die();
  for (size_t qi = 0; qi < a->nsel; qi++) {
    for (size_t k = a->beg[a->sel[qi]]; k < a->end[a->sel[qi]]; k++)
      if (fitted_end(a, a->sel[qi], k)) a->sbase[j->ops[k].clock + 1]++;
  }
  for (int c = 0; c < nc; c++) a->sbase[c + 1] += a->sbase[c];
  for (size_t qi = 0; qi < a->nsel; qi++)
    for (size_t k = a->beg[a->sel[qi]]; k < a->end[a->sel[qi]]; k++) {
      if (!fitted_end(a, a->sel[qi], k)) continue;
      int c = j->ops[k].clock;
      a->slots[a->sbase[c] + sfill[c]++] = (struct slot){.x = end_x(j, &j->ops[k]), .k = k, .qi = qi};
    }
  for (int c = 0; c < nc; c++) {
    sort_slots(a->slots + a->sbase[c], a->sbase[c + 1] - a->sbase[c]);
    for (size_t i = a->sbase[c]; i < a->sbase[c + 1]; i++) a->sx[i] = a->slots[i].x;
  }
  free(sfill);
}

/* Instance q's common end on the clocks as aligned now: the median of its ends, so that a
 * rank that ended apart (preempted, a stale timestamp) does not move it. Uses tmp. */
static double common_end(const struct align *a, size_t q) {
  const struct rpt_job *j = a->j;
  double *tmp = a->tmp;
  size_t n = 0;
  for (size_t k = a->beg[q]; k < a->end[q]; k++) {
    const struct rpt_opent *e = &j->ops[k];
    double x = end_x(j, e);
    tmp[n++] = x - rpt_clock_offset(&j->clocks[e->clock], x);
  }
  return rpt_median(tmp, n);
}

/* One round: each clock's offset from the common ends of the last round's alignment. */
static void fit_round(struct align *a, bool windows) {
  for (size_t qi = 0; qi < a->nsel; qi++) a->common[qi] = common_end(a, a->sel[qi]);
  for (int c = 0; c < a->nc; c++) {
    size_t m = a->sbase[c + 1] - a->sbase[c];
    if (!m) continue;
    for (size_t i = a->sbase[c]; i < a->sbase[c + 1]; i++) a->sy[i] = a->slots[i].x - a->common[a->slots[i].qi];
    fit_clock(&a->j->clocks[c], a->sx + a->sbase[c], a->sy + a->sbase[c], m, a->tmp, windows);
  }
}

/* Offsets are only defined up to a common function of time: fixing one per component (zero
 * is its median clock's offset at the reference time and its rate) makes each round's fit
 * one answer, comparable with the last, so that the rounds can settle. */
static void zero_components(struct align *a) {
  struct rpt_job *j = a->j;
  double *tmp = a->tmp;
  for (int comp = 0; comp < j->ncomponents; comp++) {
    size_t n = 0;
    for (int c = 0; c < a->nc; c++)
      if (j->clocks[c].component == comp && j->clocks[c].nseg) tmp[n++] = rpt_clock_offset(&j->clocks[c], 0);
    double z0 = rpt_median(tmp, n);
    n = 0;
    for (int c = 0; c < a->nc; c++)
      if (j->clocks[c].component == comp && j->clocks[c].nseg) tmp[n++] = j->clocks[c].rate;
    double z1 = rpt_median(tmp, n);
    for (int c = 0; c < a->nc; c++) {
      struct rpt_clock *k = &j->clocks[c];
      if (k->component != comp || !k->nseg) continue;
      k->rate -= z1;
      for (int i = 0; i < k->nseg; i++) k->seg_a[i] -= z0;
    }
  }
}

/* How far the round moved any clock, judged at both ends of its span (a rate that changes
 * shows there, not in the offset at one time). was: per clock, at its first and last end,
 * NAN before the first round, which counts as moved. */
static double moved_since(const struct align *a, double *was) {
  double moved = 0;
  for (int c = 0; c < a->nc; c++) {
    if (a->sbase[c + 1] == a->sbase[c]) continue;
    const struct rpt_clock *k = &a->j->clocks[c];
    double x = rpt_clock_offset(k, a->sx[a->sbase[c]]), y = rpt_clock_offset(k, a->sx[a->sbase[c + 1] - 1]);
    double d = fmax(fabs(x - was[2 * c]), fabs(y - was[2 * c + 1]));
    if (!(d <= moved)) moved = d; /* NAN (the first round) too */
    was[2 * c] = x;
    was[2 * c + 1] = y;
  }
  return moved;
}

/* Lines first, until they settle: the first common ends are taken on unaligned clocks, and
 * a line per window would take their kinks (the median clock changing) for every clock's
 * own; against settled common ends, a window only fits what one clock does alone. */
static void run_rounds(struct align *a) {
  double *was = malloc(2 * ((size_t)a->nc ? (size_t)a->nc : 1) * sizeof *was);
  if (!was) xalloc_die();
  for (size_t i = 0; i < 2 * (size_t)a->nc; i++) was[i] = NAN;
  int line_rounds = 0, window_rounds = 0;
  while (a->nsel) {
    bool windows = line_rounds == ROUNDS;
    fit_round(a, windows);
    zero_components(a);
    double moved = moved_since(a, was);
    if (!windows) {
      line_rounds = moved < SETTLED_NS ? ROUNDS : line_rounds + 1;
    } else if (++window_rounds == WINDOW_ROUNDS || moved < SETTLED_NS) {
      break;
    }
  }
  free(was);
}

/* The residuals of the final offsets, on every instance, not only the rounds' subset: the
 * lateness threshold rests on them (late.c), so they must cover the ends the rounds never
 * saw. Each end's goes to its clock's slice of res. Returns how many (nent). */
static size_t measure_residuals(struct align *a) {
  struct rpt_job *j = a->j;
  size_t n = 0;
  size_t *fill = calloc((size_t)a->nc, sizeof *fill);
  if (!fill) xalloc_die();
  for (size_t q = 0; q < a->ninst; q++) {
    double t = common_end(a, q);
    for (size_t k = a->beg[q]; k < a->end[q]; k++) {
      const struct rpt_opent *e = &j->ops[k];
      double x = end_x(j, e);
      a->res[a->cnt[e->clock] + fill[e->clock]++] = fabs(x - rpt_clock_offset(&j->clocks[e->clock], x) - t);
      n++;
    }
  }
  free(fill);
  return n;
}

/* What the outputs show: each clock's offset at the reference time, its drift and residual
 * p95, and the job's ranges over the aligned clocks (an unaligned clock's 0 would widen
 * them); the job's residual over all n ends. */
static void summarize(struct align *a, size_t n) {
  struct rpt_job *j = a->j;
  j->offset_min_ns = j->offset_max_ns = 0;
  j->drift_min_ppm = j->drift_max_ppm = 0;
  j->clocks_line = j->clocks_windows = 0;
  for (int c = 0; c < a->nc; c++) {
    struct rpt_clock *k = &j->clocks[c];
    k->offset_ns = (int64_t)llround(rpt_clock_offset(k, 0));
    k->drift_ppm = k->rate * 1e6;
    size_t m = a->cnt[c + 1] - a->cnt[c];
    if (m) { /* a selection, not a sort: the same value, in O(m) */
      size_t i95 = (size_t)(0.95 * (double)m);
      k->resid_p95_ns = select_k(a->res + a->cnt[c], m, i95 < m ? i95 : m - 1);
    }
    if (!k->aligned) continue;
    j->clocks_line += k->model == RPT_CLOCK_LINE;
    j->clocks_windows += k->model == RPT_CLOCK_WINDOWS;
    if ((double)k->offset_ns < j->offset_min_ns) j->offset_min_ns = (double)k->offset_ns;
    if ((double)k->offset_ns > j->offset_max_ns) j->offset_max_ns = (double)k->offset_ns;
    if (k->drift_ppm < j->drift_min_ppm) j->drift_min_ppm = k->drift_ppm;
    if (k->drift_ppm > j->drift_max_ppm) j->drift_max_ppm = k->drift_ppm;
  }
  memcpy(a->tmp, a->res, n * sizeof *a->res);
  if (n) {
    size_t i95 = (size_t)(0.95 * (double)n);
    j->resid_p95_ns = select_k(a->tmp, n, i95 < n ? i95 : n - 1);
    j->resid_p50_ns = select_k(a->tmp, n, n / 2);
  }
}

static void free_align(struct align *a) {
  free(a->beg);
  free(a->end);
  free(a->parent);
  free(a->cnt);
  free(a->res);
  free(a->tmp);
  free(a->sel);
  free(a->sbase);
  free(a->slots);
  free(a->sx);
  free(a->sy);
  free(a->common);
  free(a->span);
  free(a->level);
}

void rpt_align(struct rpt_job *j) {
  if (!j->nops || !j->nclocks) return;
  j->have_starts = true;
  struct align a = {.j = j, .nc = j->nclocks};
  find_instances(&a);
  number_components(&a);
  count_ends(&a);
  select_instances(&a);
  gather_slots(&a);
  run_rounds(&a);
  summarize(&a, measure_residuals(&a));
  free_align(&a);
}
