/* SPDX-License-Identifier: Apache-2.0 */
/*
 * links.c - slow links and slow nodes from point-to-point bandwidth (see analysis.h).
 *
 * Input: job.pairs, the busbw sketch of every (communicator, op, size, rank,
 * peer). A pair maps to a link: its two hosts when they differ (traffic
 * across nodes), else its two ranks (traffic within a node). Links are only
 * compared with links of the same class on the same communicator, op and size:
 * NVLink and network bandwidths differ by an order of magnitude and must not be
 * judged against each other.
 *
 * Each direction is a link of its own, from the sender to the receiver (a Send's
 * rank to its peer, a Recv's peer to its rank): a link slow one way only (one
 * direction of a cable or a NIC's queue) has as many fast transfers the other
 * way, and with both folded into one median, all-pairs traffic hid it (the median
 * of the pairs fell between the two ways). Once judged, the two directions of a
 * link that is slow both ways are told as one (rpt_link.one_way false).
 *
 * The transfers of every named straggler's process are skipped, in every
 * communicator (job-wide): its peers' kernels wait for it, which reads as low
 * bandwidth on every link it has, and a process late in its collectives is as
 * late to its pipeline Send/Recv on another communicator.
 *
 * Evidence: per link, its (rank, peer) pairs in the groups it was compared in,
 * and how many of them have their median below the slow line. A link below the
 * line in a group where it has fewer than RPT_MIN_LINK_SAMPLES transfers is not
 * judged slow there; if it is slow nowhere else it is "not enough data"
 * (job.few_links).
 */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "../common/xalloc.h"

struct lk { /* one pair's contribution to a link in one group */
  int a, b, host; /* host -1: a, b are hosts */
  double p50;
  uint64_t n;
  int first, npairs; /* folded: its pairs' medians, pv[first, first + npairs) */
};

static int cmp_lk(const void *x, const void *y) {
  const struct lk *p = x, *q = y;
  if (p->host != q->host) return p->host - q->host;
  if (p->a != q->a) return p->a - q->a;
  return p->b - q->b;
}

/*
 * Links and tallies are found by key through a hash index: a search of the list per
 * lookup was quadratic in links, and a job of many communicators has a few links per
 * communicator (10,000 communicators with P2P took seconds, 300,000 hours). The key
 * of a link within a node holds its communicator (ranks are per communicator); a
 * cross-node link is one whatever the communicator (comm -1 in the key).
 */
struct lkey {
  int a, b, host, comm;
};

static struct lkey key_of(int a, int b, int host, int comm) {
  return (struct lkey){a, b, host, host < 0 ? -1 : comm};
}

/* Keys in the order they were added (position i: the list's element i), indexed by hash. */
struct ktable {
  struct lkey *key;
  uint64_t *hash;
  size_t n, cap;
  int32_t *slot; /* positions, -1 empty */
  size_t nslots;
};

static uint64_t key_hash(struct lkey k) {
  uint64_t x = ((uint64_t)(uint32_t)k.a << 32 | (uint32_t)k.b) ^
               ((uint64_t)(uint32_t)k.host * 0x100000001b3ULL) ^ ((uint64_t)(uint32_t)k.comm * 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL; /* splitmix64's finaliser */
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static bool key_eq(struct lkey x, struct lkey y) {
  return x.a == y.a && x.b == y.b && x.host == y.host && x.comm == y.comm;
}

/* The key's position, or -1. */
static int kt_find(const struct ktable *t, struct lkey k) {
  if (!t->nslots) return -1;
  for (size_t i = key_hash(k) & (t->nslots - 1); t->slot[i] >= 0; i = (i + 1) & (t->nslots - 1))
    if (key_eq(t->key[t->slot[i]], k)) return t->slot[i];
  return -1;
}

static void kt_place(struct ktable *t, int pos) {
  size_t i = t->hash[pos] & (t->nslots - 1);
  while (t->slot[i] >= 0) i = (i + 1) & (t->nslots - 1);
  t->slot[i] = pos;
}

/* Adds a key not there yet; returns its position (the next one). */
static int kt_add(struct ktable *t, struct lkey k) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->key = realloc(t->key, t->cap * sizeof *t->key);
    t->hash = realloc(t->hash, t->cap * sizeof *t->hash);
    if (!t->key || !t->hash) xalloc_die();
  }
  if (2 * (t->n + 1) > t->nslots) { /* at most half full */
    free(t->slot);
    t->nslots = t->nslots ? 2 * t->nslots : 128;
    t->slot = malloc(t->nslots * sizeof *t->slot);
    if (!t->slot) xalloc_die();
    for (size_t i = 0; i < t->nslots; i++) t->slot[i] = -1;
    for (size_t p = 0; p < t->n; p++) kt_place(t, (int)p);
  }
  t->key[t->n] = k;
  t->hash[t->n] = key_hash(k);
  kt_place(t, (int)t->n);
  return (int)t->n++;
}

static void kt_free(struct ktable *t) {
  free(t->key);
  free(t->hash);
  free(t->slot);
}

/* A slow link being collected into links[0, *n) (keys in kt): its key and its findings. */
static struct rpt_link *link_get(struct rpt_link **links, int *n, int *cap, struct ktable *kt, const struct lk *k,
                                 int comm) {
  struct lkey key = key_of(k->a, k->b, k->host, comm);
  int p = kt_find(kt, key);
  if (p >= 0) return &(*links)[p];
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 16;
    *links = realloc(*links, (size_t)*cap * sizeof **links);
    if (!*links) xalloc_die();
  }
  kt_add(kt, key);
  struct rpt_link *l = &(*links)[(*n)++];
  memset(l, 0, sizeof *l);
  l->a = k->a;
  l->b = k->b;
  l->host = k->host;
  l->comm = comm;
  l->worst_ratio = 1;
  return l;
}

/* Per candidate link: groups it was compared in, groups it was slow in. */
struct tally {
  int a, b, host, comm;
  int compared, slow;
  int class_groups_with_slow; /* groups of its class in which any link was slow */
  int pairs, pairs_below;     /* its pairs over the groups compared, those below the slow line */
};

/* A finding below the slow line, kept until every group is seen: whether its link is slow
 * persistently (the rule in persistent_links) is known only from all of its groups. */
struct pend {
  struct lk k;
  int comm;
  bool few; /* below the line on fewer than RPT_MIN_LINK_SAMPLES transfers: not judged slow */
  struct rpt_link_finding f;
};

/* What the pass over the groups leaves for the steps after it. */
struct links_work {
  bool *late;          /* [clock]: a named straggler's process (late_processes) */
  int recv_op;         /* the interned "Recv" (its pairs run from the peer to the rank), -1 none */
  struct tally *t;     /* every link compared somewhere, in the order first compared */
  size_t nt, tcap;
  struct ktable tkeys; /* t's keys */
  struct ktable lkeys; /* j->links' keys: the same positions */
  struct pend *pend;
  size_t npend, cpend;
  struct rpt_link_matrix *mx; /* candidates: groups with a slow cross-node link (link_matrix) */
  int nmx;
};
#define MATRIX_CANDIDATES 64 /* groups whose matrix is kept until the slow links are known */

/* Whether (comm, rank) belongs to a named straggler's process (late[clock]), or is one. */
static bool late_rank(const struct rpt_job *j, const bool *late, int comm, int rank) {
  const struct rpt_comm *c = &j->comms[comm];
  int k = c->rank && rank < c->nranks ? c->rank[rank].clock : -1;
  return (k >= 0 && late[k]) || rpt_is_straggler(j, comm, rank);
}

/* [clock]: the process of a named straggler, whichever communicator named it (a process
 * late in one communicator is as late in the others: see the top). */
static bool *late_processes(const struct rpt_job *j) {
  bool *late = calloc((size_t)j->nclocks + 1, sizeof *late);
  if (!late) xalloc_die();
  for (int s = 0; s < j->nstragglers; s++) {
    const struct rpt_comm *c = &j->comms[j->stragglers[s].comm];
    int r = j->stragglers[s].rank;
    if (c->rank && r < c->nranks && c->rank[r].clock >= 0) late[c->rank[r].clock] = true;
  }
  return late;
}

/* The end of the group starting at pairs[i]: the pairs of one (communicator, op, size),
 * adjacent in job.pairs. Links are compared only within a group: bandwidth depends on the
 * op and the size as much as on the link. */
static int group_end(const struct rpt_job *j, int i) {
  int e = i;
  while (e < j->npairs && j->pairs[e].comm == j->pairs[i].comm && j->pairs[e].op == j->pairs[i].op &&
         j->pairs[e].bytes == j->pairs[i].bytes)
    e++;
  return e;
}

/* The group pairs[i, e) as one entry per pair in ls, sorted by link; returns how many.
 * Left out: pairs with no transfer or outside the communicator, and a straggler's process
 * at either end (its peers wait for it: that reads as a slow link). */
static int group_pairs(struct rpt_job *j, const bool *late, int recv_op, int i, int e, struct lk *ls) {
  int comm = j->pairs[i].comm, nl = 0;
  const struct rpt_comm *c = &j->comms[comm];
  for (int p = i; p < e; p++) {
    struct rpt_pair *pr = &j->pairs[p];
    if (!c->rank || pr->rank >= c->nranks || pr->peer >= c->nranks || pr->busbw.n == 0) continue;
    if (late_rank(j, late, comm, pr->rank) || late_rank(j, late, comm, pr->peer)) continue;
    int ha = c->rank[pr->rank].host, hb = c->rank[pr->peer].host;
    if (ha < 0 || hb < 0) continue;
    struct lk k = {.p50 = rpt_qs_quantile(&pr->busbw, 0.5), .n = pr->busbw.n};
    /* a, b: from the sender to the receiver (see the top) */
    bool recv = recv_op >= 0 && pr->op == recv_op;
    if (ha != hb) { /* across nodes: the hosts' link */
      k.host = -1;
      k.a = recv ? hb : ha;
      k.b = recv ? ha : hb;
    } else {
      k.host = ha;
      k.a = recv ? pr->peer : pr->rank;
      k.b = recv ? pr->rank : pr->peer;
    }
    ls[nl++] = k;
  }
  qsort(ls, (size_t)nl, sizeof *ls, cmp_lk);
  return nl;
}

/* Folds the pairs of one link (adjacent in ls) into one entry, in place: the median of their
 * medians (one busy pair does not make its link slow), samples summed. pv keeps every pair's
 * median, a link's at pv[first, first + npairs), for the evidence; v: nl doubles of scratch.
 * Returns the number of links. */
static int fold_links(struct lk *ls, int nl, double *v, double *pv) {
  int nk = 0;
  for (int p = 0; p < nl; p++) pv[p] = ls[p].p50;
  for (int p = 0; p < nl;) {
    int q = p;
    uint64_t n = 0;
    while (q < nl && !cmp_lk(&ls[p], &ls[q])) v[q - p] = ls[q].p50, n += ls[q].n, q++;
    struct lk k = ls[p];
    k.p50 = rpt_median(v, (size_t)(q - p));
    k.n = n;
    k.first = p;
    k.npairs = q - p;
    ls[nk++] = k;
    p = q;
  }
  return nk;
}

/* The tally of link k on communicator comm, added when it is first compared. */
static struct tally *tally_get(struct links_work *w, const struct lk *k, int comm) {
  struct lkey key = key_of(k->a, k->b, k->host, comm);
  int q = kt_find(&w->tkeys, key);
  if (q < 0) {
    if (w->nt == w->tcap) {
      w->tcap = w->tcap ? 2 * w->tcap : 64;
      w->t = realloc(w->t, w->tcap * sizeof *w->t);
      if (!w->t) xalloc_die();
    }
    q = kt_add(&w->tkeys, key);
    assert((size_t)q == w->nt);
    w->t[w->nt++] = (struct tally){.a = k->a, .b = k->b, .host = k->host, .comm = comm};
  }
  return &w->t[q];
}

static void pend_add(struct links_work *w, struct pend p) {
  if (w->npend == w->cpend) {
    w->cpend = w->cpend ? 2 * w->cpend : 16;
    w->pend = realloc(w->pend, w->cpend * sizeof *w->pend);
    if (!w->pend) xalloc_die();
  }
  w->pend[w->npend++] = p;
}

static int cmp_int(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  return a < b ? -1 : a > b;
}

/* Group g's cross-node links (ls[0, nk), folded, one per direction) as a matrix of hosts, each
 * direction's median over the class median med: a candidate for the page (see job.h), kept
 * for the first MATRIX_CANDIDATES groups with a slow link of RPT_LINK_MATRIX_HOSTS hosts at most. */
static void link_matrix(struct links_work *w, const struct rpt_pair *g, const struct lk *ls, int nk, double med) {
  if (w->nmx == MATRIX_CANDIDATES || !(med > 0)) return;
  int *hs = malloc(2 * (size_t)nk * sizeof *hs), nh = 0;
  if (!hs) xalloc_die();
  for (int p = 0; p < nk; p++)
    if (ls[p].host < 0) hs[nh++] = ls[p].a, hs[nh++] = ls[p].b;
  qsort(hs, (size_t)nh, sizeof *hs, cmp_int); /* interned ids: name order */
  int n = 0;
  for (int i = 0; i < nh; i++)
    if (!n || hs[n - 1] != hs[i]) hs[n++] = hs[i];
  if (n < 2 || n > RPT_LINK_MATRIX_HOSTS) {
    free(hs);
    return;
  }
  struct rpt_link_matrix m = {.comm = g->comm, .op = g->op, .bytes = g->bytes, .nhosts = n, .host = hs,
                              .ratio = malloc((size_t)n * (size_t)n * sizeof *m.ratio), .class_p50 = med};
  if (!m.ratio) xalloc_die();
  for (int i = 0; i < n * n; i++) m.ratio[i] = NAN;
  for (int p = 0; p < nk; p++) {
    if (ls[p].host >= 0) continue;
    int *fa = bsearch(&ls[p].a, hs, (size_t)n, sizeof *hs, cmp_int), *fb = bsearch(&ls[p].b, hs, (size_t)n, sizeof *hs, cmp_int);
    m.ratio[(fa - hs) * n + (fb - hs)] = ls[p].p50 / med;
  }
  w->mx = realloc(w->mx, (size_t)(w->nmx + 1) * sizeof *w->mx);
  if (!w->mx) xalloc_die();
  w->mx[w->nmx++] = m;
}

/* j->link_matrices: the candidates of the groups where a reported slow link (or a slow node's)
 * was found, the first RPT_LINK_MATRIX_MAX of them; the others freed. */
static void keep_matrices(struct rpt_job *j, struct links_work *w) {
  j->link_matrices = NULL;
  j->nlink_matrices = 0;
  for (int i = 0; i < w->nmx; i++) {
    struct rpt_link_matrix *m = &w->mx[i];
    bool used = false;
    for (int l = 0; l < j->nlinks && !used; l++)
      for (int k = 0; k < j->links[l].nfind && !used; k++)
        used = j->links[l].host < 0 && j->links[l].find[k].comm == m->comm && j->links[l].find[k].op == m->op &&
               j->links[l].find[k].bytes == m->bytes;
    used |= j->nslow_nodes > 0;
    if (used && j->nlink_matrices < RPT_LINK_MATRIX_MAX) {
      if (!j->nlink_matrices) {
        j->link_matrices = calloc(RPT_LINK_MATRIX_MAX, sizeof *j->link_matrices);
        if (!j->link_matrices) xalloc_die();
      }
      j->link_matrices[j->nlink_matrices++] = *m;
    } else {
      free(m->host);
      free(m->ratio);
    }
  }
  free(w->mx);
}

/* One class of a group's links, ls[0, nk) folded (cross: across nodes, else within one):
 * each against the class's median. Tallies every link compared and keeps every one below
 * the slow line as a pending finding. g: the group's first pair; v: nk doubles of scratch. */
static void judge_class(const struct rpt_job *j, struct links_work *w, const struct rpt_pair *g, bool cross,
                        const struct lk *ls, int nk, const double *pv, double *v) {
  int comm = g->comm, nc = 0;
  for (int p = 0; p < nk; p++)
    if ((ls[p].host < 0) == cross) v[nc++] = ls[p].p50;
  if (nc < 3) return; /* no majority to compare with */
  double med = rpt_median(v, (size_t)nc);
  bool any = false;
  for (int p = 0; p < nk; p++) {
    if ((ls[p].host < 0) != cross) continue;
    struct tally *tl = tally_get(w, &ls[p], comm);
    tl->compared++;
    tl->pairs += ls[p].npairs;
    for (int x = ls[p].first; x < ls[p].first + ls[p].npairs; x++)
      tl->pairs_below += pv[x] < j->opt.slow_link_ratio * med;
    if (!(ls[p].p50 < j->opt.slow_link_ratio * med)) continue;
    bool few = ls[p].n < RPT_MIN_LINK_SAMPLES;
    if (!few) {
      any = true;
      tl->slow++;
    }
    pend_add(w, (struct pend){.k = ls[p], .comm = comm, .few = few,
                              .f = {.comm = comm, .op = g->op, .bytes = g->bytes, .busbw_p50 = ls[p].p50,
                                    .class_p50 = med, .samples = ls[p].n, .class_links = nc}});
  }
  if (any && cross) link_matrix(w, g, ls, nk, med);
  if (any) /* every link of this class in this group had a chance to be slow here */
    for (int p = 0; p < nk; p++) {
      if ((ls[p].host < 0) != cross) continue;
      w->t[kt_find(&w->tkeys, key_of(ls[p].a, ls[p].b, ls[p].host, comm))].class_groups_with_slow++;
    }
}

/* The group pairs[i, e): its links, each class compared apart (NVLink and the network
 * differ by an order of magnitude). Across nodes first: the tallies' order is the order
 * slow nodes are named in. */
static void judge_group(struct rpt_job *j, struct links_work *w, int i, int e) {
  struct lk *ls = malloc((size_t)(e - i) * sizeof *ls);
  if (!ls) xalloc_die();
  int nl = group_pairs(j, w->late, w->recv_op, i, e, ls);
  double *v = malloc((size_t)(nl ? nl : 1) * sizeof *v), *pv = malloc((size_t)(nl ? nl : 1) * sizeof *pv);
  if (!v || !pv) xalloc_die();
  int nk = fold_links(ls, nl, v, pv);
  judge_class(j, w, &j->pairs[i], true, ls, nk, pv, v);
  judge_class(j, w, &j->pairs[i], false, ls, nk, pv, v);
  free(v);
  free(pv);
  free(ls);
}

/* A pending finding into its link l, with the link's evidence from its tally. */
static void add_finding(struct rpt_link *l, const struct pend *pd, const struct tally *tl) {
  l->find = realloc(l->find, (size_t)(l->nfind + 1) * sizeof *l->find);
  if (!l->find) xalloc_die();
  l->find[l->nfind++] = pd->f;
  double ratio = pd->f.busbw_p50 / pd->f.class_p50;
  if (ratio < l->worst_ratio) l->worst_ratio = ratio;
  l->samples += pd->f.samples;
  l->groups = tl->compared;
  l->pairs = tl->pairs;
  l->pairs_below = tl->pairs_below;
}

/* j->links: the links slow in at least half of the groups where their class had a slow
 * link (one slow group among many is noise); j->few_links: those below the line only on
 * too few transfers, and not judged on enough elsewhere ("not enough data"). */
static void persistent_links(struct rpt_job *j, struct links_work *w) {
  j->links = j->few_links = NULL;
  j->nlinks = j->nfew_links = 0;
  int lcap = 0, fcap = 0;
  struct ktable fkeys = {0}; /* j->few_links' keys */
  const struct tally *t = w->t;
  for (int few = 0; few < 2; few++) { /* the slow links first: the few-transfer pass asks for them */
    for (size_t p = 0; p < w->npend; p++) {
      const struct pend *pd = &w->pend[p];
      struct lkey key = key_of(pd->k.a, pd->k.b, pd->k.host, pd->comm);
      int q = kt_find(&w->tkeys, key);
      if (q < 0 || pd->few != few) continue;
      if (!few && 2 * t[q].slow < t[q].class_groups_with_slow) continue;
      if (few && (t[q].slow || kt_find(&w->lkeys, key) >= 0)) continue; /* judged (slow or not) on enough elsewhere */
      struct rpt_link *l = few ? link_get(&j->few_links, &j->nfew_links, &fcap, &fkeys, &pd->k, pd->comm)
                               : link_get(&j->links, &j->nlinks, &lcap, &w->lkeys, &pd->k, pd->comm);
      add_finding(l, pd, &t[q]);
    }
  }
  for (int l = 0; l < j->nlinks + j->nfew_links; l++) {
    struct rpt_link *x = l < j->nlinks ? &j->links[l] : &j->few_links[l - j->nlinks];
    x->agree_lo = rpt_share_lo((uint64_t)x->pairs_below, (uint64_t)x->pairs);
    x->conf = x->agree_lo >= 0.5 ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
  }
  kt_free(&fkeys);
}

/* Per host (interned id, [0, n]): its cross-node links (each direction one), the other hosts
 * they reach, how many of the links are slow, their worst ratio, and whether it is named a
 * slow node already. */
struct hosts {
  int *links, *peers, *slow;
  double *worst;
  bool *node;
};

/* Every host's links, peers and slow links, in one pass over the tallies. A link used both
 * ways is one peer: two directions to one host are not two links of a node (a pipeline stage
 * that talks only to its neighbour has one, and a slow cable there is the link's, not a
 * node's). */
static void count_host_links(const struct rpt_job *j, const struct links_work *w, int nh, struct hosts *hs) {
  for (int h = 0; h <= nh; h++) hs->worst[h] = 1;
  for (size_t r = 0; r < w->nt; r++) {
    const struct tally *t = &w->t[r];
    if (t->host >= 0) continue;
    int l = kt_find(&w->lkeys, key_of(t->a, t->b, -1, -1));
    bool both_ways = kt_find(&w->tkeys, key_of(t->b, t->a, -1, -1)) >= 0;
    if (!both_ways || t->a < t->b) hs->peers[t->a]++, hs->peers[t->b]++; /* a pair once */
    for (int side = 0; side < 2; side++) {
      int h = side ? t->b : t->a;
      assert(h >= 0 && h < nh && t->a != t->b); /* a cross-node link: two hosts */
      hs->links[h]++;
      if (l < 0) continue;
      hs->slow[h]++;
      if (j->links[l].worst_ratio < hs->worst[h]) hs->worst[h] = j->links[l].worst_ratio;
    }
  }
}

/* Host h as a slow node, with its links' evidence (slow nodes are few: a pass over the
 * links each). */
static void name_slow_node(struct rpt_job *j, const struct hosts *hs, int h) {
  j->slow_nodes = realloc(j->slow_nodes, (size_t)(j->nslow_nodes + 1) * sizeof *j->slow_nodes);
  if (!j->slow_nodes) xalloc_die();
  struct rpt_slow_node *sn = &j->slow_nodes[j->nslow_nodes++];
  *sn = (struct rpt_slow_node){.host = h, .links = hs->links[h], .worst_ratio = hs->worst[h]};
  for (int l = 0; l < j->nlinks; l++)
    if (j->links[l].host < 0 && (j->links[l].a == h || j->links[l].b == h)) {
      sn->pairs += j->links[l].pairs;
      sn->pairs_below += j->links[l].pairs_below;
      sn->samples += j->links[l].samples;
    }
  sn->agree_lo = rpt_share_lo((uint64_t)sn->pairs_below, (uint64_t)sn->pairs);
  sn->conf = sn->agree_lo >= 0.5 ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
}

/* A slow node's links are explained by it: dropped from j->links. */
static void drop_node_links(struct rpt_job *j, const bool *node) {
  int k = 0;
  for (int l = 0; l < j->nlinks; l++) {
    bool by_node = j->links[l].host < 0 && (node[j->links[l].a] || node[j->links[l].b]);
    if (by_node) free(j->links[l].find);
    else j->links[k++] = j->links[l];
  }
  j->nlinks = k;
}

/* Slow nodes: hosts whose cross-node links reach two or more other hosts, all of them slow
 * (each direction), named in the order the hosts first appear in the tallies (the order of
 * the groups, whatever the hash). */
static void slow_nodes(struct rpt_job *j, const struct links_work *w) {
  j->slow_nodes = NULL;
  j->nslow_nodes = 0;
  int nh = rpt_nstrings();
  struct hosts hs = {.links = calloc((size_t)nh + 1, sizeof *hs.links), .peers = calloc((size_t)nh + 1, sizeof *hs.peers),
                     .slow = calloc((size_t)nh + 1, sizeof *hs.slow), .worst = malloc(((size_t)nh + 1) * sizeof *hs.worst),
                     .node = calloc((size_t)nh + 1, sizeof *hs.node)};
  if (!hs.links || !hs.peers || !hs.slow || !hs.worst || !hs.node) xalloc_die();
  count_host_links(j, w, nh, &hs);
  for (size_t q = 0; q < w->nt; q++) {
    const struct tally *t = &w->t[q];
    if (t->host >= 0) continue;
    for (int side = 0; side < 2; side++) {
      int h = side ? t->b : t->a;
      if (hs.node[h] || hs.peers[h] < 2 || hs.slow[h] != hs.links[h]) continue;
      hs.node[h] = true;
      name_slow_node(j, &hs, h);
    }
  }
  drop_node_links(j, hs.node);
  free(hs.links);
  free(hs.peers);
  free(hs.slow);
  free(hs.worst);
  free(hs.node);
}

/* The two directions of a link slow both ways, told as one: the later folded into the earlier
 * (its findings, evidence and worst ratio), whose place in the list it keeps; every other link
 * is slow one way (from a to b). */
static void fold_directions(struct rpt_link *ls, int *n) {
  struct ktable kt = {0};
  for (int l = 0; l < *n; l++) kt_add(&kt, key_of(ls[l].a, ls[l].b, ls[l].host, ls[l].comm));
  bool *gone = calloc((size_t)*n + 1, sizeof *gone);
  if (!gone) xalloc_die();
  for (int l = 0; l < *n; l++) {
    if (gone[l]) continue;
    struct rpt_link *x = &ls[l];
    x->one_way = true;
    int r = kt_find(&kt, key_of(x->b, x->a, x->host, x->comm));
    if (r <= l) continue; /* none, or itself (a == b cannot be: two hosts, or two ranks) */
    struct rpt_link *y = &ls[r];
    x->find = realloc(x->find, (size_t)(x->nfind + y->nfind) * sizeof *x->find);
    if (!x->find) xalloc_die();
    memcpy(x->find + x->nfind, y->find, (size_t)y->nfind * sizeof *y->find);
    x->nfind += y->nfind;
    if (y->worst_ratio < x->worst_ratio) x->worst_ratio = y->worst_ratio;
    x->samples += y->samples;
    x->groups += y->groups;
    x->pairs += y->pairs;
    x->pairs_below += y->pairs_below;
    x->agree_lo = rpt_share_lo((uint64_t)x->pairs_below, (uint64_t)x->pairs);
    x->conf = x->agree_lo >= 0.5 ? RPT_CONF_HIGH : RPT_CONF_MEDIUM;
    x->one_way = false;
    if (x->host >= 0 && x->a > x->b) { /* ranks in order (hosts: hosts_in_name_order) */
      int t = x->a;
      x->a = x->b;
      x->b = t;
    }
    free(y->find);
    gone[r] = true;
  }
  int k = 0;
  for (int l = 0; l < *n; l++)
    if (!gone[l]) ls[k++] = ls[l];
  *n = k;
  free(gone);
  kt_free(&kt);
}

/* Hosts in name order: "node-002 <-> node-003" whichever was read first; a link slow one way
 * keeps its direction. */
static void hosts_in_name_order(struct rpt_job *j) {
  for (int w = 0; w < 2; w++) {
    struct rpt_link *ls = w ? j->few_links : j->links;
    for (int l = 0; l < (w ? j->nfew_links : j->nlinks); l++)
      if (!ls[l].one_way && ls[l].host < 0 && strcmp(rpt_str(ls[l].a), rpt_str(ls[l].b)) > 0) {
        int x = ls[l].a;
        ls[l].a = ls[l].b;
        ls[l].b = x;
      }
  }
}

/* Each group judged on its own, then the rules that need every group: persistence, then
 * slow nodes (which read the persistent links), then the names' order for the outputs. */
void rpt_links(struct rpt_job *j) {
  struct links_work w = {.late = late_processes(j), .recv_op = -1};
  for (int i = 0; i < rpt_nstrings(); i++) /* ids are in name order: a search would do, once */
    if (!strcmp(rpt_str(i), "Recv")) w.recv_op = i;
  for (int i = 0; i < j->npairs;) {
    int e = group_end(j, i);
    judge_group(j, &w, i, e);
    i = e;
  }
  persistent_links(j, &w);
  slow_nodes(j, &w);
  fold_directions(j->links, &j->nlinks);
  fold_directions(j->few_links, &j->nfew_links);
  keep_matrices(j, &w);
  hosts_in_name_order(j);
  free(w.late);
  free(w.t);
  free(w.pend);
  kt_free(&w.tkeys);
  kt_free(&w.lkeys);
}
