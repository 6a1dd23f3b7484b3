/*
 * links.c - slow links and slow nodes from point-to-point bandwidth (see analysis.h).
 *
 * Input: job.pairs, the busbw sketch of every (communicator, op, size, rank,
 * peer). A pair maps to a link: its two hosts when they differ (traffic
 * across nodes, both directions one link), else its two ranks (traffic
 * within a node). Links are only compared with links of the same class on
 * the same communicator, op and size: NVLink and network bandwidths differ by
 * an order of magnitude and must not be judged against each other.
 *
 * Ops of a named straggler are skipped: its peers' Recv kernels wait for it,
 * which reads as low bandwidth on every link it has.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct lk { /* one pair's contribution to a link in one group */
  int a, b, host; /* host -1: a, b are hosts */
  double p50;
  uint64_t n;
};

static int cmp_lk(const void *x, const void *y) {
  const struct lk *p = x, *q = y;
  if (p->host != q->host) return p->host - q->host;
  if (p->a != q->a) return p->a - q->a;
  return p->b - q->b;
}

static bool is_straggler(const struct rpt_job *j, int comm, int rank) {
  for (int i = 0; i < j->nstragglers; i++)
    if (j->stragglers[i].comm == comm && j->stragglers[i].rank == rank) return true;
  return false;
}

/* A slow link being collected: its key and its findings. */
static struct rpt_link *link_get(struct rpt_job *j, int *cap, const struct lk *k, int comm) {
  for (int i = 0; i < j->nlinks; i++) {
    struct rpt_link *l = &j->links[i];
    if (l->a == k->a && l->b == k->b && l->host == k->host && (k->host < 0 || l->comm == comm)) return l;
  }
  if (j->nlinks == *cap) {
    *cap = *cap ? 2 * *cap : 16;
    j->links = realloc(j->links, (size_t)*cap * sizeof *j->links);
    if (!j->links) exit(1);
  }
  struct rpt_link *l = &j->links[j->nlinks++];
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
};

void rpt_links(struct rpt_job *j) {
  int lcap = 0;
  j->links = NULL;
  j->nlinks = 0;
  size_t tcap = 64, nt = 0;
  struct tally *t = malloc(tcap * sizeof *t);
  /* pending findings, kept until the persistence rule is applied */
  struct pend {
    struct lk k;
    int comm;
    struct rpt_link_finding f;
  } *pend = NULL;
  size_t npend = 0, cpend = 0;
  if (!t) exit(1);
  for (int i = 0; i < j->npairs;) {
    int e = i;
    while (e < j->npairs && j->pairs[e].comm == j->pairs[i].comm && j->pairs[e].op == j->pairs[i].op &&
           j->pairs[e].bytes == j->pairs[i].bytes)
      e++;
    int comm = j->pairs[i].comm;
    const struct rpt_comm *c = &j->comms[comm];
    struct lk *ls = malloc((size_t)(e - i) * sizeof *ls);
    if (!ls) exit(1);
    int nl = 0;
    for (int p = i; p < e; p++) {
      struct rpt_pair *pr = &j->pairs[p];
      if (!c->rank || pr->rank >= c->nranks || pr->peer >= c->nranks || pr->busbw.n == 0) continue;
      if (is_straggler(j, comm, pr->rank) || is_straggler(j, comm, pr->peer)) continue;
      int ha = c->rank[pr->rank].host, hb = c->rank[pr->peer].host;
      if (ha < 0 || hb < 0) continue;
      struct lk k = {.p50 = rpt_qs_quantile(&pr->busbw, 0.5), .n = pr->busbw.n};
      if (ha != hb) {
        k.host = -1;
        k.a = ha < hb ? ha : hb;
        k.b = ha < hb ? hb : ha;
      } else {
        k.host = ha;
        k.a = pr->rank < pr->peer ? pr->rank : pr->peer;
        k.b = pr->rank < pr->peer ? pr->peer : pr->rank;
      }
      ls[nl++] = k;
    }
    qsort(ls, (size_t)nl, sizeof *ls, cmp_lk);
    /* fold the pairs of one link: the median of their medians, samples summed */
    int nk = 0;
    double *v = malloc((size_t)(nl ? nl : 1) * sizeof *v);
    if (!v) exit(1);
    for (int p = 0; p < nl;) {
      int q = p;
      uint64_t n = 0;
      while (q < nl && !cmp_lk(&ls[p], &ls[q])) v[q - p] = ls[q].p50, n += ls[q].n, q++;
      struct lk k = ls[p];
      k.p50 = rpt_median(v, (size_t)(q - p));
      k.n = n;
      ls[nk++] = k;
      p = q;
    }
    /* each class: across nodes (host -1), or within one node (any host >= 0) */
    for (int cls = 0; cls < 2; cls++) {
      int nc = 0;
      for (int p = 0; p < nk; p++)
        if ((ls[p].host < 0) == (cls == 0)) v[nc++] = ls[p].p50;
      if (nc < 3) continue; /* no majority to compare with */
      double med = rpt_median(v, (size_t)nc);
      bool any = false;
      size_t first_tally = nt;
      for (int p = 0; p < nk; p++) {
        if ((ls[p].host < 0) != (cls == 0)) continue;
        struct tally *tl = NULL;
        for (size_t q = 0; q < nt && !tl; q++)
          if (t[q].a == ls[p].a && t[q].b == ls[p].b && t[q].host == ls[p].host &&
              (ls[p].host < 0 || t[q].comm == comm))
            tl = &t[q];
        if (!tl) {
          if (nt == tcap) {
            tcap *= 2;
            t = realloc(t, tcap * sizeof *t);
            if (!t) exit(1);
          }
          tl = &t[nt++];
          *tl = (struct tally){.a = ls[p].a, .b = ls[p].b, .host = ls[p].host, .comm = comm};
        }
        tl->compared++;
        bool slow = ls[p].n >= 3 && ls[p].p50 < j->opt.slow_link_ratio * med;
        if (!slow) continue;
        any = true;
        tl->slow++;
        if (npend == cpend) {
          cpend = cpend ? 2 * cpend : 16;
          pend = realloc(pend, cpend * sizeof *pend);
          if (!pend) exit(1);
        }
        pend[npend++] = (struct pend){.k = ls[p], .comm = comm,
                                      .f = {.comm = comm, .op = j->pairs[i].op, .bytes = j->pairs[i].bytes,
                                            .busbw_p50 = ls[p].p50, .class_p50 = med, .samples = ls[p].n,
                                            .class_links = nc}};
      }
      (void)first_tally;
      if (any) /* every link of this class in this group had a chance to be slow here */
        for (int p = 0; p < nk; p++) {
          if ((ls[p].host < 0) != (cls == 0)) continue;
          for (size_t q = 0; q < nt; q++)
            if (t[q].a == ls[p].a && t[q].b == ls[p].b && t[q].host == ls[p].host &&
                (ls[p].host < 0 || t[q].comm == comm))
              t[q].class_groups_with_slow++;
        }
    }
    free(v);
    free(ls);
    i = e;
  }
  /* persistent: slow in at least half of the groups where its class had a slow link */
  for (size_t p = 0; p < npend; p++) {
    const struct tally *tl = NULL;
    for (size_t q = 0; q < nt && !tl; q++)
      if (t[q].a == pend[p].k.a && t[q].b == pend[p].k.b && t[q].host == pend[p].k.host &&
          (pend[p].k.host < 0 || t[q].comm == pend[p].comm))
        tl = &t[q];
    if (!tl || 2 * tl->slow < tl->class_groups_with_slow) continue;
    struct rpt_link *l = link_get(j, &lcap, &pend[p].k, pend[p].comm);
    l->find = realloc(l->find, (size_t)(l->nfind + 1) * sizeof *l->find);
    if (!l->find) exit(1);
    l->find[l->nfind++] = pend[p].f;
    double ratio = pend[p].f.busbw_p50 / pend[p].f.class_p50;
    if (ratio < l->worst_ratio) l->worst_ratio = ratio;
  }
  /* slow nodes: hosts with two or more cross-node links, all of them slow */
  j->slow_nodes = NULL;
  j->nslow_nodes = 0;
  for (size_t q = 0; q < nt; q++) {
    if (t[q].host >= 0) continue;
    for (int side = 0; side < 2; side++) {
      int h = side ? t[q].b : t[q].a;
      bool done = false;
      for (int s = 0; s < j->nslow_nodes && !done; s++) done = j->slow_nodes[s].host == h;
      if (done) continue;
      int links = 0, slow = 0;
      double worst = 1;
      for (size_t r = 0; r < nt; r++) {
        if (t[r].host >= 0 || (t[r].a != h && t[r].b != h)) continue;
        links++;
        for (int l = 0; l < j->nlinks; l++)
          if (j->links[l].host < 0 && j->links[l].a == t[r].a && j->links[l].b == t[r].b) {
            slow++;
            if (j->links[l].worst_ratio < worst) worst = j->links[l].worst_ratio;
          }
      }
      if (links >= 2 && slow == links) {
        j->slow_nodes = realloc(j->slow_nodes, (size_t)(j->nslow_nodes + 1) * sizeof *j->slow_nodes);
        if (!j->slow_nodes) exit(1);
        j->slow_nodes[j->nslow_nodes++] = (struct rpt_slow_node){.host = h, .links = links, .worst_ratio = worst};
      }
    }
  }
  /* a slow node's links are explained by it: drop them from the link list */
  int k = 0;
  for (int l = 0; l < j->nlinks; l++) {
    bool by_node = false;
    for (int s = 0; s < j->nslow_nodes && !by_node; s++)
      by_node = j->links[l].host < 0 &&
                (j->links[l].a == j->slow_nodes[s].host || j->links[l].b == j->slow_nodes[s].host);
    if (by_node) free(j->links[l].find);
    else j->links[k++] = j->links[l];
  }
  j->nlinks = k;
  /* hosts in name order: "node-002 <-> node-003" whichever was read first */
  for (int l = 0; l < j->nlinks; l++)
    if (j->links[l].host < 0 && strcmp(rpt_str(j->links[l].a), rpt_str(j->links[l].b)) > 0) {
      int x = j->links[l].a;
      j->links[l].a = j->links[l].b;
      j->links[l].b = x;
    }
  free(t);
  free(pend);
}
