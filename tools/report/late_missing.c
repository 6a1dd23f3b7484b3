/* SPDX-License-Identifier: Apache-2.0 */
/*
 * late_missing.c - a rank with no log that the others wait for (job.h, struct rpt_missing;
 * the last step of rpt_late, analysis.h): j->missing from the excess waits of communicators
 * with a few ranks missing against whole ones of the same shape, then their verdicts, then
 * the world-like communicators named on the measure of another when the job misses one
 * process alone.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "analysis.h"
#include "../common/xalloc.h"

/* One collective instance for rpt_late_missing: its communicator's shape, its op and size, and
 * the kernel time of the last of its ranks to start (the shortest: it waited the least). */
struct winst {
  int nranks, nnodes, op, comm;
  uint64_t bytes;
  bool whole;     /* every rank of its communicator is in it */
  double wait;    /* that shortest kernel time, ns */
  double ref;     /* the median wait of whole instances of its shape, op and size; NAN none */
  double excess;  /* wait - ref */
  double noise;   /* the share of those whole instances that waited the threshold beyond ref */
};

static int cmp_winst_shape(const void *x, const void *y) {
  const struct winst *a = x, *b = y;
  if (a->nranks != b->nranks) return a->nranks < b->nranks ? -1 : 1;
  if (a->nnodes != b->nnodes) return a->nnodes < b->nnodes ? -1 : 1;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  return a->wait < b->wait ? -1 : a->wait > b->wait;
}

static int cmp_winst_comm(const void *x, const void *y) {
  const struct winst *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  return cmp_winst_shape(x, y);
}

/* Ranks of comm c with no line, or -1: not a communicator looked at (no rank table, none
 * missing, too many missing, fewer than two seen). */
static int missing_ranks(const struct rpt_comm *c) {
  int m = c->nranks - c->ranks_seen;
  if (!c->rank || c->ranks_seen < 2 || m < 1 || m > RPT_MISSING_MAX) return -1;
  return m;
}

/* A communicator's shape, packed: ranks, then nodes. */
static uint64_t shape_of(const struct rpt_comm *c) { return (uint64_t)(uint32_t)c->nranks << 32 | (uint32_t)c->nnodes; }

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* The instances of communicators with a few ranks missing (only those with every seen rank
 * in them: a sampled-out record would read as a missing rank's wait), and of whole ones of
 * their shapes; none when no communicator misses a rank (no cost to a whole job's report). */
static struct winst *wait_instances(const struct rpt_job *j, size_t *nw) {
  struct winst *w = NULL;
  size_t n = 0, cap = 0;
  /* the shapes of the communicators with a few ranks missing, sorted, each once */
  uint64_t *shapes = malloc(((size_t)j->ncomms + 1) * sizeof *shapes);
  size_t nm = 0;
  if (!shapes) xalloc_die();
  for (int c = 0; c < j->ncomms; c++)
    if (missing_ranks(&j->comms[c]) > 0) shapes[nm++] = shape_of(&j->comms[c]);
  qsort(shapes, nm, sizeof *shapes, cmp_u64);
  size_t ns = 0;
  for (size_t k = 0; k < nm; k++)
    if (!ns || shapes[ns - 1] != shapes[k]) shapes[ns++] = shapes[k];
  for (size_t i = 0; ns && i < j->nops;) {
    size_t e = i + 1;
    while (e < j->nops && rpt_same_instance(&j->ops[i], &j->ops[e])) e++;
    const struct rpt_comm *c = &j->comms[j->ops[i].comm];
    uint64_t sh = shape_of(c);
    bool whole = c->rank && c->ranks_seen == c->nranks && e - i == (size_t)c->nranks &&
                 bsearch(&sh, shapes, ns, sizeof *shapes, cmp_u64);
    bool some = missing_ranks(c) > 0 && e - i == (size_t)c->ranks_seen;
    if (!j->ops[i].p2p && e - i >= 2 && (whole || some)) {
      double wait = INFINITY;
      for (size_t k = i; k < e; k++)
        if ((double)j->ops[k].exec_ns < wait) wait = (double)j->ops[k].exec_ns;
      if (n == cap) {
        cap = cap ? 2 * cap : 256;
        w = realloc(w, cap * sizeof *w);
        if (!w) xalloc_die();
      }
      w[n++] = (struct winst){.nranks = c->nranks, .nnodes = c->nnodes, .op = j->ops[i].op, .comm = (int)j->ops[i].comm,
                              .bytes = j->ops[i].bytes, .whole = whole, .wait = wait, .ref = NAN,
                              .excess = NAN, .noise = NAN};
    }
    i = e;
  }
  free(shapes);
  *nw = n;
  return w;
}

static void add_missing(struct rpt_job *j, int *cap, struct rpt_missing m) {
  if (j->nmissing == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    j->missing = realloc(j->missing, (size_t)*cap * sizeof *j->missing);
    if (!j->missing) xalloc_die();
  }
  j->missing[j->nmissing++] = m;
}

static int cmp_missing(const void *x, const void *y) {
  const struct rpt_missing *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Whether a rank of comm c is a named straggler: the others' waits are then its doing. */
static bool has_straggler(const struct rpt_job *j, int c) {
  for (int s = 0; s < j->nstragglers; s++)
    if (j->stragglers[s].comm == c) return true;
  return false;
}

/* A communicator that holds every process seen but one rank, the job's only missing one. */
static bool world_like(const struct rpt_job *j, const struct rpt_comm *c) {
  return missing_ranks(c) == 1 && c->ranks_seen == j->nclocks;
}

void rpt_late_missing(struct rpt_job *j, double thr) {
  /* The whole communicators' own waits beyond their median, at the threshold, are the noise a
   * missing rank's must stand out from (transfer times vary: with 30% of jitter a quarter of
   * the ops of a whole communicator wait 100 us beyond its median), as a straggler's late share
   * must stand out from the others' (judge). */
  j->missing = NULL;
  j->nmissing = 0;
  size_t nw = 0;
  struct winst *w = wait_instances(j, &nw);
  if (!nw) {
    free(w);
    return;
  }
  double *v = malloc(nw * sizeof *v);
  if (!v) xalloc_die();
  qsort(w, nw, sizeof *w, cmp_winst_shape);
  for (size_t i = 0; i < nw;) { /* a run of one shape, op and size */
    size_t e = i, nv = 0;
    while (e < nw && w[e].nranks == w[i].nranks && w[e].nnodes == w[i].nnodes && w[e].op == w[i].op &&
           w[e].bytes == w[i].bytes)
      e++;
    for (size_t k = i; k < e; k++)
      if (w[k].whole) v[nv++] = w[k].wait;
    if (nv >= 3) {
      size_t loud = 0; /* whole instances that waited the threshold beyond the median */
      double ref = rpt_median(v, nv);
      for (size_t k = i; k < e; k++) loud += w[k].whole && w[k].wait - ref >= thr;
      for (size_t k = i; k < e; k++)
        if (!w[k].whole) {
          w[k].ref = ref;
          w[k].excess = w[k].wait - ref;
          w[k].noise = (double)loud / (double)nv;
        }
    }
    i = e;
  }
  qsort(w, nw, sizeof *w, cmp_winst_comm);
  int cap = 0, measured = -1; /* the first communicator measured, for the world-like ones */
  bool one_missing = true;
  for (int c = 0; c < j->ncomms; c++)
    if (j->comms[c].rank && j->comms[c].ranks_seen && j->comms[c].ranks_seen < j->comms[c].nranks)
      one_missing &= j->comms[c].nranks - j->comms[c].ranks_seen == 1;
  struct rpt_missing m0 = {0};
  for (size_t i = 0; i < nw;) {
    size_t e = i, nx = 0, nwait = 0, k = 0;
    while (e < nw && w[e].comm == w[i].comm) e++;
    int c = w[i].comm;
    const struct rpt_comm *cm = &j->comms[c];
    double *x = v, noise = 0;
    for (size_t q = i; q < e; q++)
      if (!w[q].whole && !isnan(w[q].excess)) {
        x[nx++] = w[q].excess;
        k += w[q].excess >= thr;
        noise += w[q].noise;
      }
    noise = nx ? noise / (double)nx : 0;
    for (size_t q = i; q < e; q++) nwait += !w[q].whole;
    if (nwait && nx >= RPT_MIN_LATE_OPS && (double)k >= j->opt.late_share * (double)nx &&
        rpt_share_lo(k, nx) > noise && !has_straggler(j, c)) {
      struct rpt_missing m = {.comm = c, .via = c, .ops = nx, .waited_ops = k, .share = (double)k / (double)nx,
                              .share_lo = rpt_share_lo(k, nx), .late_med_ns = rpt_median(x, nx)};
      size_t nq = 0;
      for (size_t q = i; q < e; q++)
        if (!w[q].whole) x[nq++] = w[q].wait;
      m.wait_med_ns = rpt_median(x, nq);
      nq = 0;
      for (size_t q = i; q < e; q++)
        if (!w[q].whole && !isnan(w[q].ref)) x[nq++] = w[q].ref;
      m.ref_ns = rpt_median(x, nq);
      m.conf = m.share_lo >= j->opt.late_share ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
      for (int r = 0; r < cm->nranks; r++)
        if (cm->rank[r].host < 0) {
          m.rank = r;
          add_missing(j, &cap, m);
        }
      if (measured < 0 && missing_ranks(cm) == 1) {
        measured = c;
        m0 = m;
      }
    }
    i = e;
  }
  /* a world-like communicator, not measured itself: the one process missing is the same */
  if (one_missing && measured >= 0)
    for (size_t i = 0; i < nw;) {
      size_t e = i, nq = 0;
      while (e < nw && w[e].comm == w[i].comm) e++;
      int c = w[i].comm;
      const struct rpt_comm *cm = &j->comms[c];
      bool done = false;
      for (int q = 0; q < j->nmissing; q++) done |= j->missing[q].comm == c;
      if (!done && world_like(j, cm) && !has_straggler(j, c)) {
        for (size_t q = i; q < e; q++)
          if (!w[q].whole) v[nq++] = w[q].wait;
        struct rpt_missing m = m0;
        m.comm = c;
        m.wait_med_ns = nq ? rpt_median(v, nq) : 0;
        for (int r = 0; r < cm->nranks; r++)
          if (cm->rank[r].host < 0) m.rank = r;
        add_missing(j, &cap, m);
      }
      i = e;
    }
  if (j->nmissing > 1) qsort(j->missing, (size_t)j->nmissing, sizeof *j->missing, cmp_missing);
  free(v);
  free(w);
}
