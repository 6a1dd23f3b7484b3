/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acc.c - per-thread accumulation (see acc.h); the merge of the threads' is acc_merge.c.
 *
 * Tables are open-addressing hash indexes over plain arrays: the array keeps
 * insertion order, the index maps a key's hash to array positions. Local
 * indexes (a thread's communicators, clocks) are renumbered at the merge;
 * interned ids (operation names, hostnames) are already global.
 *
 * The index probes linearly from the hash's low bits, so every part of a key
 * must go through mix() before those bits are taken: a part XORed in after
 * the last mix moves keys that share the other parts to neighbouring slots
 * only, and they pile up into one run that every later lookup walks. The
 * point-to-point pairs did that with (rank, peer): all-pairs traffic put the
 * ranks^2 pairs of one (communicator, op, size) into `ranks` slots, and one
 * thread read 512 ranks' logs (536 MB) in 194 s instead of 6 s, 1,024 ranks'
 * (2.1 GB) not in 10 minutes instead of 23 s. Each index counts the slots it
 * examines (rpt_acc_probes), so a test can hold the tables to O(1) probes per key.
 *
 * Which records count (rpt_acc_line): every record is counted in its group;
 * one with stale channels, a time not measured on the GPU (timing source not
 * kernel_gpu), or a bus bandwidth above the configured physical ceiling is
 * then left out of every statistic and every cross-rank analysis, and counted
 * under the first of those reasons it has.
 *
 * Logs that contradict each other (two jobs' logs mixed, a rank restarted elsewhere, edited
 * logs) are settled by the data, never by which line a thread read first or which thread
 * the merge met first, so the report is the same whatever the threads and the file order:
 * a communicator logged under several names takes the smallest (strcmp), a rank logged on
 * several (host, pid) the smallest (host name by strcmp, then pid). Each thread keeps its
 * smallest, the merge the smallest of all. A line is compared with what is held only where
 * it differs from it (the name by one strcmp, the place by interned id and pid first); each
 * line's ops keep the clock of the process that wrote it.
 */
#include "acc.h"
#include "../common/xalloc.h"
#include "acc_state.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANK_TABLE_MAX 65536 /* communicators larger than this keep no per-rank host table */
#define BAD_PER_UNIT 10

#define GROW(arr, n, cap)                                        \
  do {                                                           \
    if ((n) == (cap)) {                                          \
      (cap) = (cap) ? 2 * (cap) : 16;                            \
      (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));    \
    }                                                            \
  } while (0)


/* ---- a hash index: hash -> position in an array ------------------------- */


static void hindex_grow(struct hindex *x) {
  size_t cap = x->cap ? 2 * x->cap : 64;
  uint64_t *h = xcalloc(cap, sizeof *h);
  int32_t *pos = xmalloc(cap * sizeof *pos);
  for (size_t i = 0; i < x->cap; i++) {
    if (!x->h[i]) continue;
    size_t k = x->h[i] & (cap - 1);
    while (h[k]) k = (k + 1) & (cap - 1);
    h[k] = x->h[i];
    pos[k] = x->pos[i];
  }
  free(x->h);
  free(x->pos);
  x->h = h;
  x->pos = pos;
  x->cap = cap;
}

/* Walks the positions whose hash is h: *it starts at -1; returns -1 when done. */
static int32_t hindex_next(struct hindex *x, uint64_t h, long *it) {
  if (!x->cap) return -1;
  size_t k = *it < 0 ? (h & (x->cap - 1)) : (((size_t)*it + 1) & (x->cap - 1));
  for (; x->probes++, x->h[k]; k = (k + 1) & (x->cap - 1))
    if (x->h[k] == h) {
      *it = (long)k;
      return x->pos[k];
    }
  return -1;
}

static void hindex_put(struct hindex *x, uint64_t h, int32_t pos) {
  if (2 * (x->n + 1) > x->cap) hindex_grow(x);
  size_t k = h & (x->cap - 1);
  for (; x->probes++, x->h[k]; k = (k + 1) & (x->cap - 1)) {}
  x->h[k] = h;
  x->pos[k] = pos;
  x->n++;
}

static void hindex_free(struct hindex *x) {
  free(x->h);
  free(x->pos);
  memset(x, 0, sizeof *x);
}

static uint64_t nz(uint64_t h) { return h ? h : 1; }

/* The op sample's share, shared by all threads: keep an op when its hash's low
 * `g_shift` bits are zero. Only grows. */
static _Atomic unsigned g_shift;
/* Rows of hang lines kept, all threads together: at most RPT_HANG_ROWS_MAX (job.h). */
static _Atomic long g_hang_rows;

struct rpt_acc *rpt_acc_new(const struct rpt_options *opt, int nthreads) {
  struct rpt_acc *a = xcalloc(1, sizeof *a);
  a->opt = opt;
  a->ops_budget = opt->op_memory / sizeof(struct rpt_opent) / (size_t)(nthreads > 0 ? nthreads : 1);
  if (a->ops_budget < 1024) a->ops_budget = 1024;
  /* group_ops numbers records with 32 bits */
  size_t most = (size_t)INT32_MAX / (size_t)(nthreads > 0 ? nthreads : 1);
  if (a->ops_budget > most) a->ops_budget = most;
  a->covered_lo = 2;
  a->covered_hi = -1;
  a->last_comm = -1;
  a->last_ctx = -1;
  a->bad_unit = -1;
  return a;
}

static int intern_cached(struct rpt_acc *a, const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = s; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  h = nz(h);
  struct scache_ent *e = &a->scache[h % SCACHE];
  if (e->h == h && !strcmp(e->s, s)) return e->id;
  int id = rpt_intern(s);
  if (strlen(s) < sizeof e->s) {
    e->h = h;
    snprintf(e->s, sizeof e->s, "%s", s);
    e->id = id;
  }
  return id;
}

struct rpt_rank_info *rpt_acc_new_rank_table(int nranks) {
  if (nranks > RANK_TABLE_MAX) return NULL;
  struct rpt_rank_info *t = xmalloc((size_t)nranks * sizeof *t);
  for (int r = 0; r < nranks; r++) t[r] = (struct rpt_rank_info){.host = -1, .clock = -1, .pid = -1};
  return t;
}

/*
 * One line of communicator c: its n_ranks should be the same on every line, but
 * logs of two jobs mixed (or a hand-edited one) can give one id two sizes. A rank is
 * only checked against its own line's n_ranks (parse.c), so the communicator takes
 * the largest n_ranks any of its lines gave: every rank of every line then lies
 * inside it, and every table sized by it holds them all. The lines that gave fewer
 * are counted (lines - lines_at_max) for the warning the merge leads to.
 */
static void note_nranks(struct lcomm *c, const struct rpt_header *hd) {
  c->lines++;
  if (hd->nnodes > c->nnodes) c->nnodes = hd->nnodes;
  if (hd->nranks == c->nranks) {
    c->lines_at_max++;
    return;
  }
  if (hd->nranks < c->nranks) {
    if (hd->nranks < c->nranks_lo) c->nranks_lo = hd->nranks;
    return;
  }
  /* larger: the rank table grows, what it knew kept */
  struct rpt_rank_info *t = rpt_acc_new_rank_table(hd->nranks);
  if (t && c->rank) memcpy(t, c->rank, (size_t)c->nranks * sizeof *t);
  free(c->rank);
  c->rank = t;
  c->nranks = hd->nranks;
  c->lines_at_max = 1;
}

static int comm_slot(struct rpt_acc *a, const struct rpt_header *hd) {
  int p = a->last_comm;
  if (p < 0 || a->comms[p].id != hd->comm) {
    uint64_t h = nz(mix(hd->comm));
    long it = -1;
    do p = hindex_next(&a->comm_ix, h, &it);
    while (p >= 0 && a->comms[p].id != hd->comm);
    if (p < 0) {
      GROW(a->comms, a->ncomms, a->ccomms);
      struct lcomm *c = &a->comms[a->ncomms];
      memset(c, 0, sizeof *c);
      c->id = hd->comm;
      c->nranks = c->nranks_lo = hd->nranks;
      c->nnodes = hd->nnodes;
      snprintf(c->name, sizeof c->name, "%s", hd->name);
      c->rank = rpt_acc_new_rank_table(hd->nranks);
      hindex_put(&a->comm_ix, h, a->ncomms);
      p = a->ncomms++;
    }
    a->last_comm = p;
  }
  struct lcomm *c = &a->comms[p];
  /* one strcmp: equal (the usual case) or larger, nothing to do (see the top) */
  if (strcmp(hd->name, c->name) < 0) snprintf(c->name, sizeof c->name, "%s", hd->name);
  note_nranks(c, hd);
  return p;
}

static int clock_slot(struct rpt_acc *a, int host, long long pid) {
  uint64_t h = nz(mix((uint64_t)host * 0x100000001b3ULL ^ (uint64_t)pid));
  long it = -1;
  int32_t p;
  while ((p = hindex_next(&a->clock_ix, h, &it)) >= 0)
    if (a->clocks[p].host == host && a->clocks[p].pid == pid) return p;
  GROW(a->clocks, a->nclocks, a->cclocks);
  a->clocks[a->nclocks] = (struct lclock){.host = host, .pid = pid};
  hindex_put(&a->clock_ix, h, a->nclocks);
  return a->nclocks++;
}

/* (host, pid) comes before the place (held_host, held_pid): host names by strcmp, then pids.
 * While the logs are read, ids are in the order threads met the names (not yet renumbered):
 * names are compared, the held one looked up (a lock, only where a rank's logs disagree). */
static bool place_before(int host, const char *name, long long pid, int held_host, long long held_pid) {
  if (host != held_host) return strcmp(name, rpt_str(held_host)) < 0;
  return pid < held_pid;
}

/* Where the rank of this line runs: its host and process. The rank keeps the smallest
 * (host, pid) its lines gave (see the top); the line's own clock is returned, for its ops,
 * and its interned host in *host (-1: the line names none). */
static int note_rank(struct rpt_acc *a, int comm, const struct rpt_header *hd, int *host_out) {
  struct lcomm *c = &a->comms[comm];
  if (!hd->host[0]) return *host_out = -1;
  int host = *host_out = intern_cached(a, hd->host);
  if (c->rank && hd->rank < c->nranks) {
    struct rpt_rank_info *ri = &c->rank[hd->rank];
    if (ri->host == host && ri->pid == hd->pid) return ri->clock;
    int clock = clock_slot(a, host, hd->pid);
    if (ri->host < 0 || place_before(host, hd->host, hd->pid, ri->host, ri->pid))
      *ri = (struct rpt_rank_info){.host = host, .clock = clock, .pid = hd->pid};
    return clock;
  }
  return clock_slot(a, host, hd->pid);
}

/* The (communicator, rank) of a line: the previous line's (lines come in runs), else looked up. */
static struct lctx *ctx_slot(struct rpt_acc *a, int comm, int rank) {
  if (a->last_ctx >= 0 && a->ctx[a->last_ctx].comm == comm && a->ctx[a->last_ctx].rank == rank)
    return &a->ctx[a->last_ctx];
  uint64_t h = nz(mix(((uint64_t)comm << 32) ^ (uint64_t)(uint32_t)rank));
  long it = -1;
  int32_t p;
  while ((p = hindex_next(&a->ctx_ix, h, &it)) >= 0)
    if (a->ctx[p].comm == comm && a->ctx[p].rank == rank) return &a->ctx[a->last_ctx = p];
  GROW(a->ctx, a->nctx, a->cctx);
  struct lctx *x = &a->ctx[a->nctx];
  memset(x, 0, sizeof *x);
  x->comm = comm;
  x->rank = rank;
  x->covered_lo = 2;
  x->covered_hi = -1;
  x->log = (struct rpt_rank_log){.host = -1, .pid = -1, .last = {.op = -1, .idle_s = -1},
                                 .last_timed = {.op = -1, .idle_s = -1}};
  hindex_put(&a->ctx_ix, h, a->nctx);
  a->last_ctx = a->nctx;
  return &a->ctx[a->nctx++];
}

/* ---- what a rank's log says, for the hangs (hang.c) ---------------------- */

/* Every line: when it was written (its process's and this communicator's newest line), and
 * where (the smallest place, as for the ranks). */
static void note_log(struct rpt_acc *a, struct lctx *x, int clock, int host, const struct rpt_header *hd) {
  struct rpt_rank_log *g = &x->log;
  if (hd->dump_us > g->last_us) g->last_us = hd->dump_us;
  if (clock >= 0 && hd->dump_us > a->clocks[clock].last_us) a->clocks[clock].last_us = hd->dump_us;
  if (host >= 0 && (host != g->host || hd->pid != g->pid) &&
      (g->host < 0 || place_before(host, hd->host, hd->pid, g->host, g->pid))) {
    g->host = host;
    g->pid = hd->pid;
  }
}

/*
 * Whether op x is newer than op y, on one rank of one communicator: what the newer line says
 * (ops complete in order and each line reports what had completed when it was written), then
 * in one line (a dump's records) the later end, the higher sequence number; the rest only
 * makes the order total, so that no thread or file order decides (names by strcmp: ids are
 * not in name order while the logs are read).
 */
bool rpt_acc_last_op_newer(const struct rpt_last_op *x, const struct rpt_last_op *y) {
  if (y->op < 0) return x->op >= 0;
  if (x->op < 0) return false;
  if (x->line_us != y->line_us) return x->line_us > y->line_us;
  if (x->end_ns != y->end_ns) return x->end_ns > y->end_ns;
  if (x->sn != y->sn) return x->sn > y->sn;
  if (x->p2p != y->p2p) return x->p2p > y->p2p;
  if (x->op != y->op) return strcmp(rpt_str(x->op), rpt_str(y->op)) > 0;
  return x->idle_s > y->idle_s;
}

/* Function op of kind p2p completed up to sn on this rank (a record, a last_completed, a
 * hang_resolved): the highest sn per function, for the functions NCCL has (a dozen). */
void rpt_acc_note_done(struct rpt_rank_log *g, int op, int p2p, uint64_t sn) {
  for (int i = 0; i < g->ndone; i++)
    if (g->done[i].op == op && g->done[i].p2p == p2p) {
      if (sn > g->done[i].sn) g->done[i].sn = sn;
      return;
    }
  if (g->ndone == RPT_DONE_MAX) {
    g->done_full = true;
    return;
  }
  if (g->ndone == 0 || (g->ndone >= 4 && !(g->ndone & (g->ndone - 1)))) /* 4, 8, 16, ... */
    g->done = xrealloc(g->done, (size_t)(g->ndone ? 2 * g->ndone : 4) * sizeof *g->done);
  g->done[g->ndone++] = (struct rpt_done){.op = op, .p2p = p2p, .sn = sn};
}

/* An op the line says completed: the rank's newest one if it is newer than the one held. */
static void note_completed(struct rpt_rank_log *g, const struct rpt_last_op *op) {
  rpt_acc_note_done(g, op->op, op->p2p, op->sn);
  if (rpt_acc_last_op_newer(op, &g->last)) g->last = *op;
  if (op->idle_s >= -1 && rpt_acc_last_op_newer(op, &g->last_timed)) g->last_timed = *op;
}

/* Whether state line x (of one rank's lines about one stuck op) is newer than y's: by dump
 * time, repeat, then the rest (a total order: no thread or file order decides). */
static bool hang_state_newer(const struct rpt_hang_row *x, const struct rpt_hang_row *y) {
  if (x->line_us != y->line_us) return x->line_us > y->line_us;
  if (x->repeat != y->repeat) return x->repeat > y->repeat;
  if (x->kernel_started != y->kernel_started) return x->kernel_started;
  if (x->channels_started != y->channels_started) return x->channels_started > y->channels_started;
  if (x->channels_stopped != y->channels_stopped) return x->channels_stopped > y->channels_stopped;
  return x->ops_in_flight > y->ops_in_flight;
}

/* Folds row y (the same rank and op) into x: each field by its own rule, in any order. */
void rpt_acc_hang_row_fold(struct rpt_hang_row *x, const struct rpt_hang_row *y) {
  if (y->lines && (!x->lines || hang_state_newer(y, x))) {
    x->line_us = y->line_us;
    x->repeat = y->repeat;
    x->kernel_started = y->kernel_started;
    x->channels_started = y->channels_started;
    x->channels_stopped = y->channels_stopped;
    x->ops_in_flight = y->ops_in_flight;
  }
  x->lines += y->lines;
  if (y->in_flight_s > x->in_flight_s) x->in_flight_s = y->in_flight_s;
  if (y->first_seen_us && (!x->first_seen_us || y->first_seen_us < x->first_seen_us))
    x->first_seen_us = y->first_seen_us;
  if (y->peer > x->peer) x->peer = y->peer;
  if (y->bytes > x->bytes) x->bytes = y->bytes;
  x->resolved |= y->resolved;
  if (y->resolved_s > x->resolved_s) x->resolved_s = y->resolved_s;
}

/* The row of (communicator, rank, op, sn); NULL when RPT_HANG_ROWS_MAX rows are kept. */
static struct rpt_hang_row *hang_row(struct rpt_acc *a, int comm, int rank, int op, int p2p, uint64_t sn) {
  uint64_t h =
      nz(mix(mix(((uint64_t)comm << 32) ^ (uint64_t)(uint32_t)rank) ^ ((uint64_t)op << 1 | (uint64_t)p2p)) ^ sn);
  long it = -1;
  int32_t p;
  while ((p = hindex_next(&a->hrow_ix, h, &it)) >= 0) {
    struct rpt_hang_row *w = &a->hrows[p];
    if (w->comm == comm && w->rank == rank && w->op == op && w->p2p == p2p && w->sn == sn) return w;
  }
  if (atomic_fetch_add_explicit(&g_hang_rows, 1, memory_order_relaxed) >= RPT_HANG_ROWS_MAX) return NULL;
  GROW(a->hrows, a->nhrows, a->chrows);
  struct rpt_hang_row *w = &a->hrows[a->nhrows];
  *w = (struct rpt_hang_row){.comm = comm, .rank = rank, .op = op, .p2p = p2p, .sn = sn, .peer = -1, .bytes = -1,
                             .in_flight_s = -1, .repeat = -1, .channels_started = -1, .channels_stopped = -1,
                             .ops_in_flight = -1, .resolved_s = -1};
  hindex_put(&a->hrow_ix, h, a->nhrows++);
  return w;
}

/* A hang, hang_resolved or comm_idle line. */
static void note_hang(struct rpt_acc *a, int comm, struct lctx *x, const struct rpt_line *l) {
  const struct rpt_hang_line *h = &l->hang;
  a->hang_lines[l->kind == RPT_HANG ? 0 : l->kind == RPT_HANG_RESOLVED ? 1 : 2]++;
  if (h->last.present) {
    struct rpt_last_op last = {.op = intern_cached(a, h->last.op), .p2p = h->last.p2p, .sn = h->last.sn,
                               .end_ns = h->last.end_ns, .line_us = l->hdr.dump_us,
                               .idle_s = l->kind == RPT_IDLE ? h->idle_s : -2};
    note_completed(&x->log, &last);
  }
  if (l->kind == RPT_IDLE) return;
  int op = intern_cached(a, h->op.op);
  struct rpt_hang_row *w = hang_row(a, comm, l->hdr.rank, op, h->op.p2p, h->op.sn);
  if (!w) {
    a->hang_rows_dropped++;
    return;
  }
  struct rpt_hang_row y = {.peer = h->peer, .bytes = h->bytes, .in_flight_s = -1, .repeat = -1,
                           .channels_started = -1, .channels_stopped = -1, .ops_in_flight = -1,
                           .resolved_s = -1};
  if (l->kind == RPT_HANG_RESOLVED) {
    rpt_acc_note_done(&x->log, op, h->op.p2p, h->op.sn);
    y.resolved = true;
    y.resolved_s = h->in_flight_s;
  } else {
    y.lines = 1;
    y.in_flight_s = h->in_flight_s;
    y.first_seen_us = h->first_seen_us;
    y.line_us = l->hdr.dump_us;
    y.repeat = h->repeat;
    y.kernel_started = h->kernel_started;
    y.channels_started = h->channels_started;
    y.channels_stopped = h->channels_stopped;
    y.ops_in_flight = h->ops_in_flight;
  }
  rpt_acc_hang_row_fold(w, &y);
}

static void note_stats(struct rpt_acc *a, struct lctx *x, const struct rpt_line *l) {
  for (int i = 0; i < 2; i++) {
    if (l->stats.written[i] > x->written[i]) x->written[i] = l->stats.written[i];
    if (l->stats.dropped[i] > x->dropped[i]) x->dropped[i] = l->stats.dropped[i];
  }
  const struct rpt_sampling *s = &l->stats.sampling;
  if (!s->present) return;
  if (!a->sampling[0]) {
    if (s->time_mode)
      snprintf(a->sampling, sizeof a->sampling, "%llu ms of every %llu ms", (unsigned long long)s->a,
               (unsigned long long)s->b);
    else
      snprintf(a->sampling, sizeof a->sampling, "runs of %llu group(s), one run in %llu",
               (unsigned long long)s->a, (unsigned long long)s->b);
  }
  if (s->covered < x->covered_lo) x->covered_lo = s->covered;
  if (s->covered > x->covered_hi) x->covered_hi = s->covered;
  if (s->covered < a->covered_lo) a->covered_lo = s->covered;
  if (s->covered > a->covered_hi) a->covered_hi = s->covered;
}

static struct rpt_group *group_slot(struct rpt_acc *a, int comm, const struct rpt_record *r, int op) {
  uint64_t h = nz(mix(mix(((uint64_t)comm << 34) ^ ((uint64_t)op << 1) ^ (uint64_t)r->p2p) ^ r->bytes));
  long it = -1;
  int32_t p;
  while ((p = hindex_next(&a->group_ix, h, &it)) >= 0) {
    struct rpt_group *g = &a->groups[p];
    if (g->comm == comm && g->op == op && g->p2p == r->p2p && g->bytes == r->bytes) return g;
  }
  GROW(a->groups, a->ngroups, a->cgroups);
  struct rpt_group *g = &a->groups[a->ngroups];
  memset(g, 0, sizeof *g);
  g->comm = comm;
  g->op = op;
  g->p2p = r->p2p;
  g->bytes = r->bytes;
  hindex_put(&a->group_ix, h, a->ngroups++);
  return g;
}

/* Every part of the key mixed in before the index takes the low bits (see the top). */
static struct rpt_pair *pair_slot(struct rpt_acc *a, int comm, int op, const struct rpt_record *r) {
  uint64_t h = nz(mix(mix(mix(((uint64_t)comm << 32) ^ (uint64_t)op) ^ r->bytes) ^
                      (((uint64_t)(uint32_t)r->rank << 32) | (uint32_t)r->peer)));
  long it = -1;
  int32_t p;
  while ((p = hindex_next(&a->pair_ix, h, &it)) >= 0) {
    struct rpt_pair *x = &a->pairs[p];
    if (x->comm == comm && x->op == op && x->bytes == r->bytes && x->rank == r->rank && x->peer == r->peer)
      return x;
  }
  GROW(a->pairs, a->npairs, a->cpairs);
  struct rpt_pair *x = &a->pairs[a->npairs];
  memset(x, 0, sizeof *x);
  x->comm = comm;
  x->op = op;
  x->bytes = r->bytes;
  x->rank = r->rank;
  x->peer = r->peer;
  hindex_put(&a->pair_ix, h, a->npairs++);
  return x;
}

/* ---- the op sample ------------------------------------------------------- */

static uint64_t op_hash(uint64_t comm_id, int p2p, const char *op, uint64_t sn, int rank) {
  uint64_t h = mix(comm_id ^ ((uint64_t)p2p << 63));
  for (const char *p = op; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  h = mix(h ^ sn);
  /* a P2P op has no sequence number shared across ranks: sample per record */
  return p2p ? mix(h ^ (uint64_t)(uint32_t)rank) : h;
}

static bool keep_hash(uint64_t h, unsigned shift) { return shift == 0 || (h & ((1ull << shift) - 1)) == 0; }

/* The op sample holds the ops whose hash passes the current share. */
void rpt_acc_thin(struct rpt_acc *a, unsigned shift) {
  size_t k = 0;
  for (size_t i = 0; i < a->nops; i++) {
    const struct rpt_opent *e = &a->ops[i];
    uint64_t h = op_hash(a->comms[e->comm].id, e->p2p, rpt_str(e->op), e->sn, e->rank);
    if (keep_hash(h, shift)) a->ops[k++] = *e;
  }
  a->nops = k;
  a->shift = shift;
}

static void add_op(struct rpt_acc *a, int comm, int clock, int op, const struct rpt_record *r) {
  unsigned shift = atomic_load_explicit(&g_shift, memory_order_relaxed);
  if (shift != a->shift) rpt_acc_thin(a, shift);
  if (!keep_hash(op_hash(r->comm, r->p2p, r->op, r->sn, r->rank), shift)) return;
  if (a->nops == a->ops_budget) {
    /* full: halve the share for everyone (unless another thread just did) */
    unsigned want = shift + 1;
    atomic_compare_exchange_strong(&g_shift, &shift, want);
    rpt_acc_thin(a, atomic_load(&g_shift));
    if (!keep_hash(op_hash(r->comm, r->p2p, r->op, r->sn, r->rank), a->shift) || a->nops == a->ops_budget)
      return;
  }
  GROW(a->ops, a->nops, a->cops);
  a->ops[a->nops++] = (struct rpt_opent){.sn = r->sn, .start_ns = r->start_ns, .exec_ns = r->exec_ns,
                                         .bytes = r->bytes, .comm = (uint32_t)comm, .rank = r->rank,
                                         .peer = r->peer, .clock = clock, .op = (uint16_t)op,
                                         .p2p = (uint8_t)r->p2p, .busbw = (float)r->busbw};
}

/* ---- one line ------------------------------------------------------------ */

static void note_bad(struct rpt_acc *a, int unit, uint64_t lineno, const struct rpt_line *l) {
  if (l->kind == RPT_REJECTED) a->rejected++;
  else a->not_records++;
  if (unit != a->bad_unit) a->bad_unit = unit, a->bad_in_unit = 0;
  if (a->bad_in_unit++ >= BAD_PER_UNIT) return;
  GROW(a->bad, a->nbad, a->cbad);
  struct rpt_bad_line *b = &a->bad[a->nbad++];
  b->unit = unit;
  b->lineno = lineno;
  snprintf(b->why, sizeof b->why, "%s%s", l->kind == RPT_REJECTED ? "rejected: " : "", l->why);
}

static int exclusion(const struct rpt_options *o, const struct rpt_record *r) {
  if (r->stale) return RPT_EXCL_STALE;
  if (r->timing != RPT_TIMING_KERNEL_GPU) return RPT_EXCL_TIMING;
  if (r->busbw > o->max_busbw_gbs) return RPT_EXCL_CEILING;
  return -1;
}

void rpt_acc_long_line(struct rpt_acc *a, uint64_t len, int unit, uint64_t lineno) {
  struct rpt_line l;
  a->lines++;
  rpt_parse_too_long(len, &l);
  note_bad(a, unit, lineno, &l);
}

void rpt_acc_line(struct rpt_acc *a, const char *line, size_t len, int unit, uint64_t lineno) {
  struct rpt_line l;
  a->lines++;
  switch (rpt_parse_line(line, len, &l)) {
  case RPT_BLANK:
    return;
  case RPT_NOT_RECORD:
  case RPT_REJECTED:
    note_bad(a, unit, lineno, &l);
    return;
  case RPT_BOUND: /* in no figure: counted only */
    a->bounds++;
    return;
  case RPT_STATS:
  case RPT_RECORD:
  case RPT_HANG:
  case RPT_HANG_RESOLVED:
  case RPT_IDLE:
    break;
  }
  int comm = comm_slot(a, &l.hdr), host;
  int clock = note_rank(a, comm, &l.hdr, &host);
  struct lctx *x = ctx_slot(a, comm, l.hdr.rank);
  note_log(a, x, clock, host, &l.hdr);
  if (l.kind == RPT_STATS) {
    note_stats(a, x, &l);
    return;
  }
  if (l.kind != RPT_RECORD) {
    note_hang(a, comm, x, &l);
    return;
  }
  const struct rpt_record *r = &l.rec;
  a->records++;
  a->records_kind[r->p2p ? 1 : 0]++;
  int op = intern_cached(a, r->op);
  const struct rpt_last_op done = {.op = op, .p2p = r->p2p, .sn = r->sn, .end_ns = r->start_ns ? r->start_ns + r->exec_ns : 0,
                                   .line_us = l.hdr.dump_us, .idle_s = -1};
  note_completed(&x->log, &done);
  struct rpt_group *g = group_slot(a, comm, r, op);
  g->records++;
  g->timing[r->timing < RPT_NTIMING ? r->timing : RPT_TIMING_OTHER]++;
  int ex = exclusion(a->opt, r);
  if (ex >= 0) {
    g->excluded[ex]++;
    a->excluded[ex]++;
    return;
  }
  rpt_qs_add(&g->time_ns, (double)r->exec_ns);
  rpt_qs_add(&g->busbw, r->busbw);
  if (r->p2p && r->peer >= 0) rpt_qs_add(&pair_slot(a, comm, op, r)->busbw, r->busbw);
  if (!r->start_ns) {
    a->no_start++;
    return;
  }
  add_op(a, comm, clock, op, r);
}

const struct rpt_bad_line *rpt_acc_bad_lines(const struct rpt_acc *a, int *n) {
  *n = a->nbad;
  return a->bad;
}

uint64_t rpt_acc_records(const struct rpt_acc *a) { return a->records; }

uint64_t rpt_acc_probes(const struct rpt_acc *a) {
  return a->comm_ix.probes + a->ctx_ix.probes + a->group_ix.probes + a->pair_ix.probes + a->clock_ix.probes +
         a->hrow_ix.probes;
}

unsigned rpt_acc_shift(void) { return atomic_load(&g_shift); }

void rpt_acc_free(struct rpt_acc *a) {
  for (int i = 0; i < a->ncomms; i++) free(a->comms[i].rank);
  free(a->comms);
  free(a->ctx);
  free(a->hrows);
  free(a->groups);
  free(a->pairs);
  free(a->clocks);
  free(a->ops);
  free(a->bad);
  hindex_free(&a->comm_ix);
  hindex_free(&a->ctx_ix);
  hindex_free(&a->hrow_ix);
  hindex_free(&a->group_ix);
  hindex_free(&a->pair_ix);
  hindex_free(&a->clock_ix);
  free(a);
}
