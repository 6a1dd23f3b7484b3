/* SPDX-License-Identifier: Apache-2.0 */
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
 *
 * Judged over time, not over the whole job alone: a rank late in a third of the
 * steps, or only from some moment on, has a median lateness of zero. Each
 * communicator's time is cut into windows (about 8 ops of a rank each); a
 * rank's onset is the window boundary that best splits its ops into an on-time
 * part (late in less than --late-share) and a later part that is late more
 * often (a change point of its late share, kept only when the split is clear:
 * ONSET_LLR); it is a straggler when,
 * from the onset on, it is late in at least --late-share of its ops and
 * clearly more often than the other ranks over the same windows, in at least
 * RPT_MIN_LATE_OPS ops (else "not enough data"). An always-late rank has its onset
 * at the start and the same figures as before.
 *
 * P2P: a Send and the Recv it met end together (the transfer ends both), so
 * within a (communicator, sender, receiver, size) the two are matched by their
 * aligned ends, within the lateness threshold; the later start of the two is
 * the one the other waited for. A rank that posts its Send/Recv late is judged
 * on those transfers as above and named as the rank (links.c then leaves its
 * transfers out, which its peers' waits would make read as slow links).
 *
 * Last, a rank with no log that the others wait for: late_missing.c.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "../common/xalloc.h"

struct sample { /* one rank in one op */
  int comm, rank, op;
  double t; /* the op's time: its median aligned start (relative to job.clock_ref_ns) */
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

/*
 * The middle of n >= 2 values: the order statistics k - 1, k and k + 1 (k = (n - 1) / 2),
 * all that the median of the n and of any n - 1 of them needs. Found by one selection and
 * one pass (O(n)) instead of a sort (O(n log n): with qsort's compare calls, 7% of the
 * report's time on 512 ranks of collectives).
 */
struct middle {
  size_t n, k;
  double v[3]; /* the values at k - 1 (when k >= 1), k, k + 1 */
};

static struct middle middle_of(double *v, size_t n) {
  assert(n >= 2);
  struct middle m = {.n = n, .k = (n - 1) / 2};
  m.v[2] = rpt_select(v, n, m.k + 1); /* v[0..k] are now the k + 1 smallest */
  double top = -INFINITY, second = -INFINITY;
  for (size_t i = 0; i <= m.k; i++) {
    if (v[i] > top) {
      second = top;
      top = v[i];
    } else if (v[i] > second) {
      second = v[i];
    }
  }
  m.v[1] = top;
  m.v[0] = second;
  return m;
}

/* Sorted v's element i, for i in k - 1 .. k + 1. */
static double mid_at(const struct middle *m, size_t i) { return m->v[i + 1 - m->k]; }

/* The median of the n values without one equal to x (x is one of them): in the sorted
 * values, x's first position is below or at position i exactly when x <= sorted[i]. */
static double median_without(const struct middle *m, double x) {
  size_t k = m->k;
  double a = mid_at(m, x <= mid_at(m, k) ? k + 1 : k);
  if ((m->n - 1) % 2) return a;
  double b = mid_at(m, x <= mid_at(m, k - 1) ? k : k - 1); /* n odd, so k >= 1 */
  return (a + b) / 2;
}

/* The median of all n. */
static double median_all(const struct middle *m) {
  return m->n % 2 ? mid_at(m, m->k) : (mid_at(m, m->k) + mid_at(m, m->k + 1)) / 2;
}

/* ---- judged over time ------------------------------------------------------ */

#define WIN_OPS 8      /* a window holds about this many ops of each rank */
#define MAX_WINDOWS 64
#define ONSET_LLR 12.0 /* log-likelihood gain (nats) a split needs to be an onset: chance
                        * splits of a rank late at one steady share stay below it (a
                        * rank late in 30% of the iterations, at random: up to about 8) */

/* A communicator's windows, and every rank's ops and late ops in each. */
struct grid {
  double t0, width; /* relative to job.clock_ref_ns */
  int nw;
  uint64_t n[MAX_WINDOWS], k[MAX_WINDOWS];
};

static int win_of(const struct grid *g, double t) {
  if (g->nw <= 1 || !(g->width > 0)) return 0;
  double w = floor((t - g->t0) / g->width);
  return w < 0 ? 0 : w >= g->nw ? g->nw - 1 : (int)w;
}

/* The windows of one communicator's samples s[lo, hi) (bucketed by rank). */
static void grid_build(struct grid *g, const struct sample *s, size_t lo, size_t hi, double thr) {
  double t0 = INFINITY, t1 = -INFINITY;
  size_t ranks = 0;
  for (size_t i = lo; i < hi; i++) {
    if (s[i].t < t0) t0 = s[i].t;
    if (s[i].t > t1) t1 = s[i].t;
    ranks += i == lo || s[i].rank != s[i - 1].rank;
  }
  size_t per = ranks ? (hi - lo) / ranks : 0;
  int nw = per / WIN_OPS > MAX_WINDOWS ? MAX_WINDOWS : (int)(per / WIN_OPS);
  if (nw < 1 || !(t1 > t0)) nw = 1;
  g->t0 = t0;
  g->nw = nw;
  g->width = nw > 1 ? (t1 - t0) / nw : 0;
  memset(g->n, 0, sizeof g->n);
  memset(g->k, 0, sizeof g->k);
  for (size_t i = lo; i < hi; i++) {
    int w = win_of(g, s[i].t);
    g->n[w]++;
    g->k[w] += s[i].late >= thr;
  }
}

/* Log-likelihood of k late of n at their own share (Bernoulli). */
static double loglik(uint64_t k, uint64_t n) {
  double r = 0;
  if (k) r += (double)k * log((double)k / (double)n);
  if (n - k) r += (double)(n - k) * log((double)(n - k) / (double)n);
  return r;
}

/* One rank's samples s[lo, hi) judged over its communicator's windows g; v: hi - lo doubles. */
static void judge(const struct rpt_job *j, const struct grid *g, const struct sample *s, size_t lo, size_t hi,
                  double thr, double *v, struct rpt_late_judge *out) {
  uint64_t n[MAX_WINDOWS] = {0}, k[MAX_WINDOWS] = {0}, N = hi - lo, K = 0;
  for (size_t i = lo; i < hi; i++) {
    int w = win_of(g, s[i].t);
    bool late = s[i].late >= thr;
    n[w]++;
    k[w] += late;
    K += late;
  }
  /* the onset: the boundary after which it is late more often, where that split gains most,
   * and before which it was not late by the rule (else it was late from the start) */
  int onset = 0;
  double best = ONSET_LLR, all = loglik(K, N);
  uint64_t nb = 0, kb = 0;
  for (int c = 1; c < g->nw; c++) {
    nb += n[c - 1];
    kb += k[c - 1];
    uint64_t na = N - nb, ka = K - kb;
    if (!nb || !na || ka * nb <= kb * na || (double)kb >= j->opt.late_share * (double)nb) continue;
    double gain = loglik(kb, nb) + loglik(ka, na) - all;
    if (gain > best) best = gain, onset = c;
  }
  uint64_t sn = 0, sk = 0, on = 0, ok = 0;
  for (int w = onset; w < g->nw; w++) sn += n[w], sk += k[w], on += g->n[w], ok += g->k[w];
  on -= sn; /* the other ranks, over the same windows */
  ok -= sk;
  size_t nl = 0;
  for (size_t i = lo; i < hi; i++)
    if (s[i].late >= thr && win_of(g, s[i].t) >= onset) v[nl++] = s[i].late;
  memset(out, 0, sizeof *out);
  out->since_ops = sn;
  out->since_late = sk;
  out->share = sn ? (double)sk / (double)sn : 0;
  out->share_lo = rpt_share_lo(sk, sn);
  out->others_share = on ? (double)ok / (double)on : 0;
  out->late_med_ns = rpt_median(v, nl);
  out->windows = g->nw;
  out->onset_window = onset;
  out->window_ns = (uint64_t)llround(g->width);
  out->onset_ns = (uint64_t)((int64_t)j->clock_ref_ns + llround(g->t0 + onset * g->width));
  bool late = sk > 0 && out->share >= j->opt.late_share && out->share_lo > out->others_share;
  out->verdict = !late ? RPT_LATE_NO : sk < RPT_MIN_LATE_OPS ? RPT_LATE_TOO_FEW : RPT_LATE_NAMED;
  out->conf = out->share_lo >= j->opt.late_share ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
}

/* ---- P2P: transfers matched, judged per rank ---------------------------------- */

struct xfer { /* one Send or Recv record, keyed by its transfer's sender and receiver */
  int comm, snd, rcv, clock, op;
  uint64_t bytes;
  double start, end; /* aligned, relative to job.clock_ref_ns */
};

static int cmp_xfer(const void *a, const void *b) {
  const struct xfer *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->snd != y->snd) return x->snd < y->snd ? -1 : 1;
  if (x->rcv != y->rcv) return x->rcv < y->rcv ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_key(const struct xfer *x, const struct xfer *y) {
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->snd != y->snd) return x->snd < y->snd ? -1 : 1;
  if (x->rcv != y->rcv) return x->rcv < y->rcv ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* Two clocks' times compare: the same clock, or two aligned in one set. */
static bool comparable(const struct rpt_job *j, int a, int b) {
  return a == b || (j->clocks[a].aligned && j->clocks[b].aligned && j->clocks[a].component == j->clocks[b].component);
}

static void push_sample(struct sample **s, size_t *n, size_t *cap, struct sample x) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 1024;
    *s = realloc(*s, *cap * sizeof **s);
    if (!*s) xalloc_die();
  }
  x.seq = *n;
  (*s)[(*n)++] = x;
}

/* Per matched transfer, a sample for each end: the sender's lateness against the receiver,
 * and the opposite. Returns the samples (bucketed by comm, rank), *ns their number. */
static struct sample *p2p_samples(const struct rpt_job *j, double thr, size_t *ns) {
  int nstr = rpt_nstrings();
  signed char *kind = calloc((size_t)nstr + 1, 1); /* 1 Send, 2 Recv */
  if (!kind) xalloc_die();
  for (int i = 0; i < nstr; i++) kind[i] = !strcmp(rpt_str(i), "Send") ? 1 : !strcmp(rpt_str(i), "Recv") ? 2 : 0;
  size_t nsend = 0, nrecv = 0;
  struct xfer *snd = NULL, *rcv = NULL;
  size_t csend = 0, crecv = 0;
  for (size_t i = 0; i < j->nops; i++) {
    const struct rpt_opent *o = &j->ops[i];
    if (!o->p2p || o->clock < 0 || o->peer < 0 || o->op >= nstr || !kind[o->op]) continue;
    const struct rpt_comm *c = &j->comms[o->comm];
    if (o->rank < 0 || o->rank >= c->nranks || o->peer >= c->nranks || o->peer == o->rank) continue;
    bool send = kind[o->op] == 1;
    struct xfer x = {.comm = (int)o->comm, .snd = send ? o->rank : o->peer, .rcv = send ? o->peer : o->rank,
                     .clock = o->clock, .op = o->op, .bytes = o->bytes,
                     .start = rpt_aligned_rel_ns(j, o->clock, o->start_ns),
                     .end = rpt_aligned_rel_ns(j, o->clock, o->start_ns + o->exec_ns)};
    struct xfer **v = send ? &snd : &rcv;
    size_t *n = send ? &nsend : &nrecv, *cap = send ? &csend : &crecv;
    if (*n == *cap) {
      *cap = *cap ? 2 * *cap : 256;
      *v = realloc(*v, *cap * sizeof **v);
      if (!*v) xalloc_die();
    }
    (*v)[(*n)++] = x;
  }
  free(kind);
  if (nsend) qsort(snd, nsend, sizeof *snd, cmp_xfer);
  if (nrecv) qsort(rcv, nrecv, sizeof *rcv, cmp_xfer);
  struct sample *s = NULL;
  size_t n = 0, cap = 0;
  for (size_t a = 0, b = 0; a < nsend && b < nrecv;) {
    int c = cmp_key(&snd[a], &rcv[b]);
    if (c) {
      if (c < 0) a++;
      else b++;
      continue;
    }
    size_t a1 = a, b1 = b;
    while (a1 < nsend && !cmp_key(&snd[a1], &snd[a])) a1++;
    while (b1 < nrecv && !cmp_key(&rcv[b1], &rcv[b])) b1++;
    /* in end order, each Send with the Recv that ended with it (within the threshold) */
    for (size_t x = a, y = b; x < a1 && y < b1;) {
      double d = snd[x].end - rcv[y].end;
      if (fabs(d) > thr) {
        if (d < 0) x++;
        else y++;
        continue;
      }
      if (comparable(j, snd[x].clock, rcv[y].clock)) {
        double late = snd[x].start - rcv[y].start, t = late > 0 ? snd[x].start : rcv[y].start;
        push_sample(&s, &n, &cap, (struct sample){.comm = snd[x].comm, .rank = snd[x].snd, .op = snd[x].op,
                                                  .t = t, .late = late});
        push_sample(&s, &n, &cap, (struct sample){.comm = rcv[y].comm, .rank = rcv[y].rcv, .op = rcv[y].op,
                                                  .t = t, .late = -late});
      }
      x++;
      y++;
    }
    a = a1;
    b = b1;
  }
  free(snd);
  free(rcv);
  if (n) qsort(s, n, sizeof *s, cmp_sample);
  *ns = n;
  return s;
}

/* j->p2p_stats: every rank's matched transfers, judged over time as its collectives are. */
static void p2p_judge(struct rpt_job *j, double thr) {
  size_t ns = 0;
  struct sample *s = p2p_samples(j, thr, &ns);
  j->p2p_stats = NULL;
  j->np2p_stats = 0;
  int cap = 0;
  double *v = malloc((ns ? ns : 1) * sizeof *v);
  if (!v) xalloc_die();
  struct grid g;
  int gcomm = -1;
  for (size_t i = 0; i < ns;) {
    if (s[i].comm != gcomm) {
      size_t ce = i;
      while (ce < ns && s[ce].comm == s[i].comm) ce++;
      grid_build(&g, s, i, ce, thr);
      gcomm = s[i].comm;
    }
    size_t e = i;
    while (e < ns && s[e].comm == s[i].comm && s[e].rank == s[i].rank) e++;
    if (j->np2p_stats == cap) {
      cap = cap ? 2 * cap : 64;
      j->p2p_stats = realloc(j->p2p_stats, (size_t)cap * sizeof *j->p2p_stats);
      if (!j->p2p_stats) xalloc_die();
    }
    struct rpt_p2p_stat *r = &j->p2p_stats[j->np2p_stats++];
    memset(r, 0, sizeof *r);
    r->comm = s[i].comm;
    r->rank = s[i].rank;
    r->ops = e - i;
    for (size_t k = i; k < e; k++) {
      r->late_ops += s[k].late >= thr;
      v[k - i] = s[k].late;
    }
    r->med_late_ns = rpt_median(v, e - i);
    judge(j, &g, s, i, e, thr, v, &r->judge);
    i = e;
  }
  free(v);
  free(s);
}

/* ---- collectives: a sample per rank and op instance, judged per rank ------------- */

/* The threshold lateness is judged against: --late-us, raised to 3 x the clock alignment's
 * residual p95 when that is larger (below it, lateness is the alignment's noise). */
static double late_threshold(struct rpt_job *j) {
  double thr = j->opt.late_ns;
  if (3 * j->resid_p95_ns > thr) thr = 3 * j->resid_p95_ns;
  j->late_threshold_ns = thr; /* printed by every output, with why when raised */
  j->late_threshold_raised = thr > j->opt.late_ns;
  return thr;
}

/* One op instance's values per rank, grown to the largest instance seen: aligned starts,
 * kernel times, busbw, and the copies that selection reorders. */
struct inst_scratch {
  size_t cap;
  double *st, *ex, *bw, *tmp, *ex_tmp, *bw_sorted;
};

static void scratch_fit(struct inst_scratch *x, size_t n) {
  if (n <= x->cap) return;
  x->cap = n > 64 ? n : 64; /* most instances have a few ranks: one allocation serves them */
  x->st = realloc(x->st, x->cap * sizeof *x->st);
  x->ex = realloc(x->ex, x->cap * sizeof *x->ex);
  x->bw = realloc(x->bw, x->cap * sizeof *x->bw);
  x->tmp = realloc(x->tmp, x->cap * sizeof *x->tmp);
  x->ex_tmp = realloc(x->ex_tmp, x->cap * sizeof *x->ex_tmp);
  x->bw_sorted = realloc(x->bw_sorted, x->cap * sizeof *x->bw_sorted);
  if (!x->st || !x->ex || !x->bw || !x->tmp || !x->ex_tmp || !x->bw_sorted) xalloc_die();
}

static void scratch_free(struct inst_scratch *x) {
  free(x->ex_tmp);
  free(x->bw_sorted);
  free(x->st);
  free(x->ex);
  free(x->bw);
  free(x->tmp);
}

/* A rank's lateness in one collective, within what the kernel times allow: the others wait
 * for it inside their kernels, which end with its own, so it cannot be later than the others'
 * kernels last (their median: ones that waited it out), nor earlier than its own lasts. A
 * lateness beyond that is the clocks' error (a step the alignment did not follow), not the
 * rank's: a node whose clock jumped by 1 s is not 1 s late in ops of 570 us kernels. */
static double bounded_late(double late, double exec, double others_exec) {
  if (late > others_exec) return others_exec;
  if (late < -exec) return -exec;
  return late;
}

/* A sample per rank of the op instance ops[i, e): its start against the median of the
 * others' (so that a late rank does not move its own yardstick), and its kernel time beside
 * the others' median as evidence: the others wait for a late rank inside their kernels, so
 * its own kernel is the shortest. */
static void instance_samples(const struct rpt_job *j, size_t i, size_t e, struct inst_scratch *x,
                             struct sample **s, size_t *ns, size_t *cap) {
  size_t n = e - i;
  scratch_fit(x, n);
  double maxs = -INFINITY;
  for (size_t k = 0; k < n; k++) {
    const struct rpt_opent *o = &j->ops[i + k];
    x->st[k] = rpt_aligned_rel_ns(j, o->clock, o->start_ns);
    x->ex[k] = (double)o->exec_ns;
    x->bw[k] = o->busbw;
    if (x->st[k] > maxs) maxs = x->st[k];
  }
  memcpy(x->tmp, x->st, n * sizeof *x->st);
  struct middle mst = middle_of(x->tmp, n);
  double t_op = median_all(&mst);
  memcpy(x->ex_tmp, x->ex, n * sizeof *x->ex);
  struct middle mex = middle_of(x->ex_tmp, n);
  memcpy(x->bw_sorted, x->bw, n * sizeof *x->bw);
  double bw_med = rpt_median(x->bw_sorted, n);
  for (size_t k = 0; k < n; k++) {
    const struct rpt_opent *o = &j->ops[i + k];
    double others_exec = median_without(&mex, x->ex[k]);
    push_sample(s, ns, cap, (struct sample){.comm = (int)o->comm, .rank = o->rank, .op = o->op, .t = t_op,
                                            .late = bounded_late(x->st[k] - median_without(&mst, x->st[k]),
                                                                 x->ex[k], others_exec),
                                            .exec = x->ex[k], .others_exec = others_exec,
                                            .bw_ratio = bw_med > 0 ? x->bw[k] / bw_med : 0,
                                            .last = x->st[k] == maxs});
  }
}

/* The samples of every collective instance with two or more ranks, each on a known clock
 * (a start on no known clock cannot be aligned with the others'), in the order of job.ops;
 * *ns their number. */
static struct sample *coll_samples(const struct rpt_job *j, size_t *ns) {
  struct sample *s = NULL;
  size_t cap = 0;
  struct inst_scratch x = {0};
  *ns = 0;
  for (size_t i = 0; i < j->nops;) {
    size_t e = i + 1;
    while (e < j->nops && rpt_same_instance(&j->ops[i], &j->ops[e])) e++;
    bool ok = !j->ops[i].p2p && e - i >= 2;
    for (size_t k = i; k < e && ok; k++) ok = j->ops[k].clock >= 0;
    if (ok) instance_samples(j, i, e, &x, &s, ns, &cap);
    i = e;
  }
  scratch_free(&x);
  return s;
}

/* The samples s[0, ns) bucketed per (comm, rank), each rank's in the order made; returns
 * them (s is freed or reused). A counting pass, not a sort of every sample. A
 * communicator's buckets run to the largest rank its samples have, not to its n_ranks: a
 * log's n_ranks may claim 16 M ranks, many communicators' sum would not fit an int, and a
 * table sized from them alone would trust them to bound the ranks. Ranks far sparser than
 * the samples (a few high ranks in many communicators) are sorted instead, into the same
 * order: buckets would cost more than the samples. */
static struct sample *by_rank(const struct rpt_job *j, struct sample *s, size_t ns) {
  size_t *base = calloc((size_t)j->ncomms + 1, sizeof *base);
  if (!base) xalloc_die();
  for (size_t i = 0; i < ns; i++) {
    assert(s[i].comm >= 0 && s[i].comm < j->ncomms && s[i].rank >= 0 && s[i].rank < j->comms[s[i].comm].nranks);
    if ((size_t)s[i].rank + 1 > base[s[i].comm + 1]) base[s[i].comm + 1] = (size_t)s[i].rank + 1;
  }
  for (int c = 0; c < j->ncomms; c++) base[c + 1] += base[c];
  size_t nb = base[j->ncomms];
  if (nb > 4 * ns + 4096) {
    qsort(s, ns, sizeof *s, cmp_sample);
    free(base);
    return s;
  }
  size_t *at = calloc(nb + 1, sizeof *at);
  struct sample *b = malloc((ns ? ns : 1) * sizeof *b);
  if (!at || !b) xalloc_die();
  for (size_t i = 0; i < ns; i++) at[base[s[i].comm] + (size_t)s[i].rank + 1]++;
  for (size_t q = 0; q < nb; q++) at[q + 1] += at[q];
  for (size_t i = 0; i < ns; i++) b[at[base[s[i].comm] + (size_t)s[i].rank]++] = s[i];
  free(s);
  free(at);
  free(base);
  return b;
}

/* The op rank r is most often late in, from its samples s[i, e) (ties: the lower name id,
 * whatever the order read). op_n, op_late: per op, zero on entry and on return (only the
 * ops touched are reset: a rank has few of the job's names). */
static void top_op(struct rpt_rank_stat *r, const struct sample *s, size_t i, size_t e, double thr, uint64_t *op_n,
                   uint64_t *op_late) {
  for (size_t k = i; k < e; k++) {
    op_n[s[k].op]++;
    op_late[s[k].op] += s[k].late >= thr;
  }
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
}

/* Rank r's figures from its samples s[i, e): how often late, by how much (mean and median),
 * its kernel times against the others', its busbw against the op's median. v: e - i
 * doubles of scratch. */
static void rank_figures(struct rpt_rank_stat *r, const struct sample *s, size_t i, size_t e, double thr, double *v) {
  double sum = 0;
  for (size_t k = i; k < e; k++) {
    r->late_ops += s[k].late >= thr;
    r->last_ops += s[k].last;
    sum += s[k].late;
    v[k - i] = s[k].late;
  }
  r->mean_late_ns = sum / (double)(e - i);
  r->med_late_ns = rpt_median(v, e - i);
  for (size_t k = i; k < e; k++) v[k - i] = s[k].exec;
  r->med_exec_ns = rpt_median(v, e - i);
  for (size_t k = i; k < e; k++) v[k - i] = s[k].others_exec;
  r->others_med_exec_ns = rpt_median(v, e - i);
  for (size_t k = i; k < e; k++) v[k - i] = s[k].bw_ratio;
  r->busbw_ratio = rpt_median(v, e - i);
}

/* j->rstats: every rank with collective samples (s: by_rank's order), its figures and its
 * verdict over its communicator's windows. */
static void rank_stats(struct rpt_job *j, const struct sample *s, size_t ns, double thr) {
  j->rstats = NULL;
  j->nrstats = 0;
  int rcap = 0;
  double *v = malloc((ns ? ns : 1) * sizeof *v);
  int nstr = rpt_nstrings();
  uint64_t *op_n = calloc((size_t)nstr, sizeof *op_n), *op_late = calloc((size_t)nstr, sizeof *op_late);
  if (!v || !op_n || !op_late) xalloc_die();
  struct grid grid;
  int gcomm = -1;
  for (size_t i = 0; i < ns;) {
    if (s[i].comm != gcomm) { /* a communicator's first rank: its windows */
      size_t ce = i;
      while (ce < ns && s[ce].comm == s[i].comm) ce++;
      grid_build(&grid, s, i, ce, thr);
      gcomm = s[i].comm;
    }
    size_t e = i;
    while (e < ns && s[e].comm == s[i].comm && s[e].rank == s[i].rank) e++;
    if (j->nrstats == rcap) {
      rcap = rcap ? 2 * rcap : 64;
      j->rstats = realloc(j->rstats, (size_t)rcap * sizeof *j->rstats);
      if (!j->rstats) xalloc_die();
    }
    struct rpt_rank_stat *r = &j->rstats[j->nrstats++];
    memset(r, 0, sizeof *r);
    r->comm = s[i].comm;
    r->rank = s[i].rank;
    r->ops = e - i;
    rank_figures(r, s, i, e, thr, v);
    top_op(r, s, i, e, thr, op_n, op_late);
    judge(j, &grid, s, i, e, thr, v, &r->judge);
    i = e;
  }
  free(op_n);
  free(op_late);
  free(v);
}

/* j->stragglers and j->few_stragglers, in (comm, rank) order (rpt_is_straggler searches them
 * so), over both lists: named on its collectives, else on its P2P transfers; the same for
 * "not enough data". */
static void name_stragglers(struct rpt_job *j) {
  size_t most = (size_t)j->nrstats + (size_t)j->np2p_stats + 1;
  j->stragglers = calloc(most, sizeof *j->stragglers);
  j->few_stragglers = calloc(most, sizeof *j->few_stragglers);
  if (!j->stragglers || !j->few_stragglers) xalloc_die();
  j->nstragglers = j->nfew_stragglers = 0;
  for (int a = 0, b = 0; a < j->nrstats || b < j->np2p_stats;) {
    const struct rpt_rank_stat *r = a < j->nrstats ? &j->rstats[a] : NULL;
    const struct rpt_p2p_stat *q = b < j->np2p_stats ? &j->p2p_stats[b] : NULL;
    if (r && q && (r->comm != q->comm || r->rank != q->rank)) { /* the lower key alone */
      if (r->comm < q->comm || (r->comm == q->comm && r->rank < q->rank)) q = NULL;
      else r = NULL;
    }
    a += r != NULL;
    b += q != NULL;
    enum rpt_late_verdict vc = r ? r->judge.verdict : RPT_LATE_NO, vp = q ? q->judge.verdict : RPT_LATE_NO;
    int comm = r ? r->comm : q->comm, rank = r ? r->rank : q->rank;
    const struct rpt_comm *c = &j->comms[comm];
    struct rpt_straggler g = {.comm = comm, .rank = rank, .stat = r, .p2p_stat = q,
                              .host = c->rank && rank < c->nranks ? c->rank[rank].host : -1,
                              .pid = c->rank && rank < c->nranks ? c->rank[rank].pid : -1};
    if (vc == RPT_LATE_NAMED || vp == RPT_LATE_NAMED) {
      g.p2p = vc != RPT_LATE_NAMED;
      g.judge = g.p2p ? &q->judge : &r->judge;
      j->stragglers[j->nstragglers++] = g;
    } else if (vc == RPT_LATE_TOO_FEW || vp == RPT_LATE_TOO_FEW) {
      g.p2p = vc != RPT_LATE_TOO_FEW;
      g.judge = g.p2p ? &q->judge : &r->judge;
      j->few_stragglers[j->nfew_stragglers++] = g;
    }
  }
}

/* Lateness needs start times on aligned clocks; each rank is judged on its collectives and
 * on its P2P transfers apart, then named once. */
void rpt_late(struct rpt_job *j) {
  if (!j->have_starts) return;
  double thr = late_threshold(j);
  size_t ns = 0;
  struct sample *s = coll_samples(j, &ns);
  s = by_rank(j, s, ns);
  rank_stats(j, s, ns, thr);
  free(s);
  p2p_judge(j, thr);
  name_stragglers(j);
  rpt_late_missing(j, thr);
}
