/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acc_merge.c - every reading thread's accumulation (acc.c) merged into the job model (see
 * acc.h): communicators, clocks and contexts united, their numbers and the interned ids
 * renumbered, groups and pairs folded, the op sample put in an order fixed by its content.
 *
 * The job is the same whatever the threads and the file order: logs that contradict each
 * other are settled by the data (acc.c, at its top), and every sort and tie-break below
 * compares interned ids, which renumber_strings has put in name order first: an id
 * comparison is a name comparison, so the merged groups, pairs and clocks (and all that
 * the analyses derive from them) are in the same order whichever thread met a name first,
 * and no comparison takes the intern table's lock.
 */
#include "acc.h"
#include "../common/xalloc.h"
#include "acc_state.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_group(const void *x, const void *y) {
  const struct rpt_group *a = x, *b = y;
  if (a->comm != b->comm) return a->comm - b->comm;
  if (a->p2p != b->p2p) return a->p2p - b->p2p;
  if (a->op != b->op) return a->op - b->op; /* name order */
  return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

/* A pair's key, packed so that comparing the words in turn orders the pairs by
 * (communicator, op name, size, rank, peer) (every part is >= 0), and where the pair is. */
struct pair_key {
  uint64_t a, b, c; /* comm << 32 | op, bytes, rank << 32 | peer */
  uint32_t i;
};

static int cmp_pair_key(const void *x, const void *y) {
  const struct pair_key *a = x, *b = y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  return a->c < b->c ? -1 : a->c > b->c;
}

/*
 * The pairs sorted by their key, equal keys folded (one pair in several threads); *k of them,
 * in a new array (ps is freed). All-pairs traffic has millions: sorting their keys (32 bytes)
 * and moving each pair once after, rather than sorting the pairs (88 bytes each, moved at
 * every step of glibc's merge sort), took 15% off such a report's CPU time (512 ranks, one
 * thread: 2.61 s -> 2.22 s, medians of 5).
 */
static struct rpt_pair *sort_pairs(struct rpt_pair *ps, size_t np, size_t *k) {
  struct pair_key *keys = xmalloc(np * sizeof *keys);
  for (size_t i = 0; i < np; i++) {
    assert(ps[i].comm >= 0 && ps[i].op >= 0 && ps[i].rank >= 0 && ps[i].peer >= 0);
    keys[i] = (struct pair_key){.a = (uint64_t)ps[i].comm << 32 | (uint32_t)ps[i].op, .b = ps[i].bytes,
                                .c = (uint64_t)ps[i].rank << 32 | (uint32_t)ps[i].peer, .i = (uint32_t)i};
  }
  qsort(keys, np, sizeof *keys, cmp_pair_key);
  struct rpt_pair *out = xmalloc(np * sizeof *out);
  size_t n = 0;
  for (size_t i = 0; i < np; i++) {
    struct rpt_pair *p = &ps[keys[i].i];
    if (n && !cmp_pair_key(&keys[i - 1], &keys[i])) rpt_qs_merge(&out[n - 1].busbw, &p->busbw);
    else out[n++] = *p;
  }
  free(keys);
  free(ps);
  *k = n;
  return out;
}

static int cmp_clock(const void *x, const void *y) {
  const struct rpt_clock *a = x, *b = y;
  if (a->host != b->host) return a->host - b->host; /* name order */
  return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* The interned ids put in name order (rpt_intern_sort), and every id the threads hold
 * renumbered with them: the hosts of rank tables and clocks, the ops of groups, pairs and
 * the op sample. Before anything is sorted or thinned (thin reads op names by id). */
static void renumber_strings(struct rpt_acc **accs, int n) {
  int *map = rpt_intern_sort();
  for (int t = 0; t < n; t++) {
    struct rpt_acc *a = accs[t];
    for (int i = 0; i < a->ncomms; i++)
      if (a->comms[i].rank)
        for (int r = 0; r < a->comms[i].nranks; r++)
          if (a->comms[i].rank[r].host >= 0) a->comms[i].rank[r].host = map[a->comms[i].rank[r].host];
    for (int i = 0; i < a->nclocks; i++) a->clocks[i].host = map[a->clocks[i].host];
    for (int i = 0; i < a->nctx; i++) {
      struct rpt_rank_log *g = &a->ctx[i].log;
      if (g->host >= 0) g->host = map[g->host];
      if (g->last.op >= 0) g->last.op = map[g->last.op];
      if (g->last_timed.op >= 0) g->last_timed.op = map[g->last_timed.op];
      for (int k = 0; k < g->ndone; k++) g->done[k].op = map[g->done[k].op];
    }
    for (int i = 0; i < a->nhrows; i++) a->hrows[i].op = map[a->hrows[i].op];
    for (int i = 0; i < a->ngroups; i++) a->groups[i].op = map[a->groups[i].op];
    for (int i = 0; i < a->npairs; i++) a->pairs[i].op = map[a->pairs[i].op];
    for (size_t i = 0; i < a->nops; i++) a->ops[i].op = (uint16_t)map[a->ops[i].op];
  }
  free(map);
}

/* Every field of a record, compared in turn (busbw by its bits: a NaN compares too): two
 * records that compare equal are the same record, so an order by this is fixed by content. */
static int cmp_opent(const struct rpt_opent *a, const struct rpt_opent *b) {
  uint32_t ab, bb;
  memcpy(&ab, &a->busbw, sizeof ab);
  memcpy(&bb, &b->busbw, sizeof bb);
#define CMP_FIELD(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
  CMP_FIELD(rank);
  CMP_FIELD(clock);
  CMP_FIELD(start_ns);
  CMP_FIELD(exec_ns);
  CMP_FIELD(peer);
  CMP_FIELD(bytes);
#undef CMP_FIELD
  return ab < bb ? -1 : ab > bb;
}

static int cmp_opent_q(const void *x, const void *y) { return cmp_opent(x, y); }

/* An instance's key, packed so that comparing the words orders the instances by
 * (communicator, P2P, op name, sequence number), and which instance it is. */
struct inst_key {
  uint64_t a, sn;
  uint32_t q;
};

static int cmp_inst_key(const void *x, const void *y) {
  const struct inst_key *a = x, *b = y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->sn < b->sn ? -1 : a->sn > b->sn;
}

/*
 * Puts j->ops in an order fixed by their content: each op's records (one per rank) adjacent,
 * the ops by (communicator, P2P, op name, sequence number), the records of one by rank (and
 * every other field after, for a rank logged twice). Every analysis walks j->ops and sums
 * doubles along the way (the clock fit's sums, the lateness means); a sum of doubles depends
 * on the order of its terms, and read order (which file a thread took first, how a file was cut
 * into chunks, which thread the merge met first) left its mark in the last bits, which the
 * alignment's rounds and the thresholds can carry into the printed figures. Sorted by content,
 * every later step is a function of the records alone: byte-identical output for any
 * --threads and file order, by construction and not by test alone (test_report_merge_order).
 *
 * In O(n) but for the sorts of small things: a hash table numbers the instances, their packed
 * keys are sorted (ranks times fewer than the records), a counting pass places the records,
 * and each instance's are put in rank order where one pass finds them out of it (a file per
 * rank read in order leaves them in it). A comparison sort of all the records did the same
 * and was a quarter of the report's time on a 275 MB job; this adds about 3% to a report of
 * 256 ranks' collectives (docs/BENCHMARKS.md).
 */
static void group_ops(struct rpt_job *j) {
  size_t n = j->nops, cap = 64;
  if (n < 2) return;
  while (cap < 2 * n) cap *= 2;
  uint32_t *slot = xmalloc(cap * sizeof *slot); /* instance id + 1, 0 empty */
  memset(slot, 0, cap * sizeof *slot);
  uint32_t *inst = xmalloc(n * sizeof *inst), *first = xmalloc(n * sizeof *first);
  size_t ninst = 0;
  for (size_t i = 0; i < n; i++) {
    const struct rpt_opent *e = &j->ops[i];
    uint64_t h = mix(mix(((uint64_t)e->comm << 20) ^ ((uint64_t)e->op << 1) ^ e->p2p) ^ e->sn);
    size_t k = h & (cap - 1);
    while (slot[k] && !rpt_same_instance(&j->ops[first[slot[k] - 1]], e)) k = (k + 1) & (cap - 1);
    if (!slot[k]) {
      first[ninst] = (uint32_t)i;
      slot[k] = (uint32_t)++ninst;
    }
    inst[i] = slot[k] - 1;
  }
  free(slot);
  /* the instances in key order: place[q] is instance q's */
  struct inst_key *keys = xmalloc(ninst * sizeof *keys);
  for (size_t q = 0; q < ninst; q++) {
    const struct rpt_opent *e = &j->ops[first[q]];
    keys[q] = (struct inst_key){.a = (uint64_t)e->comm << 32 | (uint64_t)e->p2p << 16 | e->op, .sn = e->sn,
                                .q = (uint32_t)q};
  }
  qsort(keys, ninst, sizeof *keys, cmp_inst_key);
  uint32_t *place = first; /* reused: instance -> its place in key order */
  for (size_t x = 0; x < ninst; x++) place[keys[x].q] = (uint32_t)x;
  free(keys);
  /* then placed by instance */
  uint32_t *at = xcalloc(ninst + 1, sizeof *at); /* where each instance's records start */
  for (size_t i = 0; i < n; i++) at[place[inst[i]] + 1]++;
  for (size_t q = 0; q < ninst; q++) at[q + 1] += at[q];
  struct rpt_opent *out = xmalloc(n * sizeof *out);
  for (size_t i = 0; i < n; i++) out[at[place[inst[i]]]++] = j->ops[i];
  /* and each instance's records by rank, then every other field (a rank logged twice): most
   * come in rank order already (a file per rank, read in order), which one pass confirms */
  for (size_t q = 0, b = 0; q < ninst; b = at[q++]) {
    size_t e = at[q];
    size_t k = b + 1;
    while (k < e && cmp_opent(&out[k - 1], &out[k]) <= 0) k++;
    if (k == e) continue;
    if (e - b <= 16) {
      for (; k < e; k++) { /* insertion: out[b..k) is in order */
        struct rpt_opent x = out[k];
        size_t m = k;
        for (; m > b && cmp_opent(&out[m - 1], &x) > 0; m--) out[m] = out[m - 1];
        out[m] = x;
      }
    } else {
      qsort(out + b, e - b, sizeof *out, cmp_opent_q);
    }
  }
  free(j->ops);
  j->ops = out;
  free(at);
  free(inst);
  free(first);
}

static int find_comm(const struct rpt_job *j, uint64_t id) {
  int lo = 0, hi = j->ncomms - 1;
  while (lo <= hi) {
    int m = (lo + hi) / 2;
    if (j->comms[m].id == id) return m;
    if (j->comms[m].id < id) lo = m + 1;
    else hi = m - 1;
  }
  return -1;
}

/* j->clocks is sorted by cmp_clock: a binary search. */
static int find_clock(const struct rpt_job *j, int host, long long pid) {
  const struct rpt_clock key = {.host = host, .pid = pid};
  int lo = 0, hi = j->nclocks - 1;
  while (lo <= hi) {
    int m = (lo + hi) / 2, c = cmp_clock(&key, &j->clocks[m]);
    if (!c) return m;
    if (c > 0) lo = m + 1;
    else hi = m - 1;
  }
  return -1;
}

static int cmp_ctx(const void *x, const void *y) {
  const struct lctx *a = x, *b = y;
  return a->comm != b->comm ? a->comm - b->comm : a->rank - b->rank;
}

/* Folds log y of one (communicator, rank) into x (another thread's): each fact by its own rule.
 * Ids are in name order here (renumber_strings): comparing them compares the names. */
static void fold_log(struct rpt_rank_log *x, struct rpt_rank_log *y) {
  if (y->last_us > x->last_us) x->last_us = y->last_us;
  if (y->host >= 0 && (x->host < 0 || y->host < x->host || (y->host == x->host && y->pid < x->pid))) {
    x->host = y->host;
    x->pid = y->pid;
  }
  if (rpt_acc_last_op_newer(&y->last, &x->last)) x->last = y->last;
  if (rpt_acc_last_op_newer(&y->last_timed, &x->last_timed)) x->last_timed = y->last_timed;
  for (int k = 0; k < y->ndone; k++) rpt_acc_note_done(x, y->done[k].op, y->done[k].p2p, y->done[k].sn);
  x->done_full |= y->done_full;
  free(y->done);
  y->done = NULL;
  y->ndone = 0;
}

/* dump_stats totals: one (communicator, rank) may be in several threads (one log
 * read in chunks, or two logs of one rank): its largest totals count, once. Its log's facts
 * are folded the same way into job.rank_logs, one per (communicator, rank). */
static void merge_ctx(struct rpt_acc **accs, int n, struct rpt_job *j) {
  size_t total = 0, k = 0;
  for (int t = 0; t < n; t++) total += (size_t)accs[t]->nctx;
  struct lctx *all = xmalloc((total ? total : 1) * sizeof *all);
  for (int t = 0; t < n; t++) {
    if (accs[t]->nctx) memcpy(all + k, accs[t]->ctx, (size_t)accs[t]->nctx * sizeof *all);
    k += (size_t)accs[t]->nctx;
  }
  qsort(all, total, sizeof *all, cmp_ctx);
  j->rank_logs = xmalloc((total ? total : 1) * sizeof *j->rank_logs);
  for (size_t i = 0; i < total;) {
    struct lctx m = all[i];
    size_t e = i + 1;
    for (; e < total && !cmp_ctx(&all[e], &m); e++) {
      for (int q = 0; q < 2; q++) {
        if (all[e].written[q] > m.written[q]) m.written[q] = all[e].written[q];
        if (all[e].dropped[q] > m.dropped[q]) m.dropped[q] = all[e].dropped[q];
      }
      if (all[e].covered_lo < m.covered_lo) m.covered_lo = all[e].covered_lo;
      if (all[e].covered_hi > m.covered_hi) m.covered_hi = all[e].covered_hi;
      fold_log(&m.log, &all[e].log);
    }
    struct rpt_comm *c = &j->comms[m.comm];
    for (int q = 0; q < 2; q++) {
      c->written[q] += m.written[q];
      c->dropped[q] += m.dropped[q];
    }
    if (m.covered_lo < c->covered_lo) c->covered_lo = m.covered_lo;
    if (m.covered_hi > c->covered_hi) c->covered_hi = m.covered_hi;
    m.log.comm = m.comm;
    m.log.rank = m.rank;
    if (m.log.last_us > j->last_line_us) j->last_line_us = m.log.last_us;
    j->rank_logs[j->nrank_logs++] = m.log;
    i = e;
  }
  free(all);
}

static int cmp_hang_row(const void *x, const void *y) {
  const struct rpt_hang_row *a = x, *b = y;
  if (a->comm != b->comm) return a->comm - b->comm;
  if (a->p2p != b->p2p) return a->p2p - b->p2p;
  if (a->op != b->op) return a->op - b->op; /* name order */
  if (a->sn != b->sn) return a->sn < b->sn ? -1 : 1;
  return a->rank - b->rank;
}

/* Hang rows: every thread's, sorted by (communicator, op, sn, rank), one rank's op folded. */
static void merge_hang_rows(struct rpt_acc **accs, int n, struct rpt_job *j) {
  size_t total = 0, k = 0;
  for (int t = 0; t < n; t++) total += (size_t)accs[t]->nhrows;
  j->hang_rows = xmalloc((total ? total : 1) * sizeof *j->hang_rows);
  for (int t = 0; t < n; t++) {
    if (accs[t]->nhrows) memcpy(j->hang_rows + k, accs[t]->hrows, (size_t)accs[t]->nhrows * sizeof *j->hang_rows);
    k += (size_t)accs[t]->nhrows;
  }
  qsort(j->hang_rows, total, sizeof *j->hang_rows, cmp_hang_row);
  size_t w = 0;
  for (size_t i = 0; i < total; i++) {
    if (w && !cmp_hang_row(&j->hang_rows[w - 1], &j->hang_rows[i]))
      rpt_acc_hang_row_fold(&j->hang_rows[w - 1], &j->hang_rows[i]);
    else j->hang_rows[w++] = j->hang_rows[i];
  }
  j->nhang_rows = (int)w;
}

static enum rpt_comm_kind comm_kind(int nranks, int nnodes) {
  if (nnodes <= 1) return RPT_KIND_NVLINK;
  return nnodes >= nranks ? RPT_KIND_NETWORK : RPT_KIND_MIXED;
}

struct comm_ref { /* one thread's communicator, for the union by id */
  uint64_t id;
  int t, i;
};

static int cmp_comm_ref(const void *x, const void *y) {
  const struct comm_ref *a = x, *b = y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return a->t != b->t ? a->t - b->t : a->i - b->i;
}

/*
 * Communicators: the union by id, sorted by id (a sort of every thread's, then each
 * run of one id folded; a search of the merged list per communicator made this
 * quadratic: 40,000 communicators took seconds, 300,000 minutes). The name is the
 * smallest of the threads' (each holds its smallest: see the top); n_ranks and nnodes the
 * largest any line gave (see note_nranks),
 * and the lines that gave fewer ranks are counted in j->nranks_mixed_*.
 */
static void merge_comms(struct rpt_acc **accs, int n, struct rpt_job *j) {
  size_t total = 0, k = 0;
  for (int t = 0; t < n; t++) total += (size_t)accs[t]->ncomms;
  struct comm_ref *refs = xmalloc(total * sizeof *refs);
  for (int t = 0; t < n; t++)
    for (int i = 0; i < accs[t]->ncomms; i++) refs[k++] = (struct comm_ref){accs[t]->comms[i].id, t, i};
  qsort(refs, total, sizeof *refs, cmp_comm_ref);
  j->comms = xcalloc(total, sizeof *j->comms);
  for (size_t i = 0; i < total;) {
    size_t e = i;
    const struct lcomm *first = &accs[refs[i].t]->comms[refs[i].i], *named = first;
    int hi = 0, lo = first->nranks_lo, nnodes = 0;
    uint64_t lines = 0, at_max = 0;
    for (; e < total && refs[e].id == refs[i].id; e++) {
      const struct lcomm *lc = &accs[refs[e].t]->comms[refs[e].i];
      if (strcmp(lc->name, named->name) < 0) named = lc;
      if (lc->nranks > hi) hi = lc->nranks;
      if (lc->nranks_lo < lo) lo = lc->nranks_lo;
      if (lc->nnodes > nnodes) nnodes = lc->nnodes;
    }
    for (size_t q = i; q < e; q++) {
      const struct lcomm *lc = &accs[refs[q].t]->comms[refs[q].i];
      lines += lc->lines;
      if (lc->nranks == hi) at_max += lc->lines_at_max;
    }
    struct rpt_comm *c = &j->comms[j->ncomms++];
    c->id = first->id;
    snprintf(c->name, sizeof c->name, "%s", named->name);
    c->nranks = hi;
    c->nnodes = nnodes;
    c->kind = comm_kind(hi, nnodes);
    c->covered_lo = 2;
    c->covered_hi = -1;
    c->rank = rpt_acc_new_rank_table(hi);
    if (lo < hi) {
      if (!j->nranks_mixed_comms) { /* the lowest id: the same whatever the threads */
        j->nranks_mixed_id = c->id;
        j->nranks_mixed_lo = lo;
        j->nranks_mixed_hi = hi;
      }
      j->nranks_mixed_comms++;
      j->nranks_mixed_lines += lines - at_max;
    }
    i = e;
  }
  free(refs);
}

/* Clocks: the union by (host, pid), sorted by host name then pid (a sort, then equal
 * neighbours folded: one host name is one interned id, and ids are in name order). */
static void merge_clocks(struct rpt_acc **accs, int n, struct rpt_job *j) {
  int kcap = 0;
  for (int t = 0; t < n; t++) kcap += accs[t]->nclocks;
  j->clocks = xcalloc((size_t)kcap, sizeof *j->clocks);
  for (int t = 0; t < n; t++)
    for (int i = 0; i < accs[t]->nclocks; i++)
      j->clocks[j->nclocks++] =
          (struct rpt_clock){.host = accs[t]->clocks[i].host, .pid = accs[t]->clocks[i].pid,
                             .last_us = accs[t]->clocks[i].last_us, .component = -1};
  qsort(j->clocks, (size_t)j->nclocks, sizeof *j->clocks, cmp_clock);
  int kn = 0;
  for (int i = 0; i < j->nclocks; i++) {
    if (!kn || cmp_clock(&j->clocks[kn - 1], &j->clocks[i])) j->clocks[kn++] = j->clocks[i];
    else if (j->clocks[i].last_us > j->clocks[kn - 1].last_us) j->clocks[kn - 1].last_us = j->clocks[i].last_us;
    if (j->clocks[i].last_us > j->last_line_us) j->last_line_us = j->clocks[i].last_us;
  }
  j->nclocks = kn;
}

/* Thread a's communicators and clocks renumbered to the merged ones (j's), everywhere it
 * names them; its ranks' places folded into the merged rank tables; its op sample thinned
 * to the final share. */
static void renumber_thread(struct rpt_acc *a, struct rpt_job *j, unsigned shift) {
  int *cmap = xmalloc((size_t)a->ncomms * sizeof *cmap);
  int *kmap = xmalloc((size_t)a->nclocks * sizeof *kmap);
  for (int i = 0; i < a->ncomms; i++) cmap[i] = find_comm(j, a->comms[i].id);
  for (int i = 0; i < a->nclocks; i++) kmap[i] = find_clock(j, a->clocks[i].host, a->clocks[i].pid);
  for (int i = 0; i < a->ncomms; i++) {
    struct rpt_comm *c = &j->comms[cmap[i]];
    const struct lcomm *lc = &a->comms[i];
    if (!lc->rank || !c->rank) continue;
    /* a rank several threads placed: the smallest (host, pid) of all; ids are in name
     * order now (renumber_strings), so comparing them compares the names */
    for (int r = 0; r < c->nranks && r < lc->nranks; r++) {
      const struct rpt_rank_info *l = &lc->rank[r];
      struct rpt_rank_info *m = &c->rank[r];
      if (l->host >= 0 && (m->host < 0 || l->host < m->host || (l->host == m->host && l->pid < m->pid))) {
        *m = *l;
        m->clock = kmap[l->clock];
      }
    }
  }
  for (int i = 0; i < a->nctx; i++) a->ctx[i].comm = cmap[a->ctx[i].comm];
  for (int i = 0; i < a->nhrows; i++) a->hrows[i].comm = cmap[a->hrows[i].comm];
  for (int i = 0; i < a->ngroups; i++) a->groups[i].comm = cmap[a->groups[i].comm];
  for (int i = 0; i < a->npairs; i++) a->pairs[i].comm = cmap[a->pairs[i].comm];
  if (a->shift != shift) rpt_acc_thin(a, shift);
  for (size_t i = 0; i < a->nops; i++) {
    a->ops[i].comm = (uint32_t)cmap[a->ops[i].comm];
    a->ops[i].clock = a->ops[i].clock >= 0 ? kmap[a->ops[i].clock] : -1;
  }
  free(cmap);
  free(kmap);
}

/* Thread a's counts (the t-th thread's) added to j's. */
static void add_counts(const struct rpt_acc *a, int t, struct rpt_job *j) {
  j->lines += a->lines;
  j->records += a->records;
  for (int k = 0; k < 2; k++) j->records_kind[k] += a->records_kind[k];
  for (int k = 0; k < RPT_NEXCL; k++) j->excluded[k] += a->excluded[k];
  j->no_start += a->no_start;
  j->rejected += a->rejected;
  j->not_records += a->not_records;
  j->bounds += a->bounds;
  for (int k = 0; k < 3; k++) j->hang_lines[k] += a->hang_lines[k];
  j->hang_rows_dropped += a->hang_rows_dropped;
  if (!j->sampling[0] && a->sampling[0]) snprintf(j->sampling, sizeof j->sampling, "%s", a->sampling);
  if (t == 0 || a->covered_lo < j->covered_lo) j->covered_lo = a->covered_lo;
  if (t == 0 || a->covered_hi > j->covered_hi) j->covered_hi = a->covered_hi;
}

/* Groups and pairs: every thread's concatenated, sorted, equal keys folded; the op
 * samples concatenated (group_ops puts them in order). */
static void merge_groups(struct rpt_acc **accs, int n, struct rpt_job *j) {
  size_t gcap = 0, pcap = 0, ocap = 0;
  for (int t = 0; t < n; t++) gcap += (size_t)accs[t]->ngroups, pcap += (size_t)accs[t]->npairs, ocap += accs[t]->nops;
  struct rpt_group *gs = xmalloc(gcap * sizeof *gs);
  struct rpt_pair *ps = xmalloc(pcap * sizeof *ps);
  j->ops = xmalloc(ocap * sizeof *j->ops);
  size_t ng = 0, np = 0;
  for (int t = 0; t < n; t++) { /* (memcpy may not be given NULL, even for 0 bytes) */
    if (accs[t]->ngroups) memcpy(gs + ng, accs[t]->groups, (size_t)accs[t]->ngroups * sizeof *gs);
    ng += (size_t)accs[t]->ngroups;
    if (accs[t]->npairs) memcpy(ps + np, accs[t]->pairs, (size_t)accs[t]->npairs * sizeof *ps);
    np += (size_t)accs[t]->npairs;
    if (accs[t]->nops) memcpy(j->ops + j->nops, accs[t]->ops, accs[t]->nops * sizeof *j->ops);
    j->nops += accs[t]->nops;
  }
  qsort(gs, ng, sizeof *gs, cmp_group);
  size_t k = 0;
  for (size_t i = 0; i < ng; i++) {
    if (k && !cmp_group(&gs[k - 1], &gs[i])) {
      struct rpt_group *d = &gs[k - 1], *s = &gs[i];
      d->records += s->records;
      for (int e = 0; e < RPT_NEXCL; e++) d->excluded[e] += s->excluded[e];
      for (int e = 0; e < RPT_NTIMING; e++) d->timing[e] += s->timing[e];
      rpt_qs_merge(&d->time_ns, &s->time_ns);
      rpt_qs_merge(&d->busbw, &s->busbw);
    } else {
      gs[k++] = gs[i];
    }
  }
  j->groups = gs;
  j->ngroups = (int)k;
  j->pairs = sort_pairs(ps, np, &k);
  j->npairs = (int)k;
}

void rpt_acc_merge(struct rpt_acc **accs, int n, struct rpt_job *j) {
  /* The sample's final share applies to every thread. */
  unsigned shift = rpt_acc_shift();
  j->sample_shift = shift;
  renumber_strings(accs, n);
  merge_comms(accs, n, j);
  merge_clocks(accs, n, j);
  for (int t = 0; t < n; t++) {
    renumber_thread(accs[t], j, shift);
    add_counts(accs[t], t, j);
  }
  merge_ctx(accs, n, j);
  merge_hang_rows(accs, n, j);
  for (int c = 0; c < j->ncomms; c++)
    if (j->comms[c].rank)
      for (int r = 0; r < j->comms[c].nranks; r++) j->comms[c].ranks_seen += j->comms[c].rank[r].host >= 0;
  merge_groups(accs, n, j);
  group_ops(j);
  for (int t = 0; t < n; t++) rpt_acc_free(accs[t]);
}
