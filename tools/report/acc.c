/*
 * acc.c - per-thread accumulation and the merge (see acc.h).
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

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* ---- a hash index: hash -> position in an array ------------------------- */

struct hindex {
  uint64_t *h;  /* 0: empty (hashes are forced non-zero) */
  int32_t *pos;
  size_t cap, n;
  uint64_t probes; /* slots examined by lookups and inserts (not by growth) */
};

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

/* ---- the per-thread state ------------------------------------------------ */

struct lcomm { /* a communicator as one thread saw it */
  uint64_t id;
  char name[128];               /* the smallest (strcmp) its lines gave */
  int nranks, nnodes;           /* the largest its lines gave */
  int nranks_lo;                /* the smallest n_ranks its lines gave */
  uint64_t lines, lines_at_max; /* its lines; those that gave n_ranks == nranks */
  struct rpt_rank_info *rank;   /* [nranks] or NULL */
};

struct lctx { /* one (communicator, rank): its dump_stats (the largest totals seen), its log's facts */
  int comm, rank;
  uint64_t written[2], dropped[2];
  double covered_lo, covered_hi;
  struct rpt_rank_log log; /* its comm and rank are set at the merge */
};

struct lclock {
  int host;
  long long pid;
  uint64_t last_us; /* its newest line's dump_timestamp_us */
};

struct scache_ent {
  uint64_t h;
  char s[64];
  int id;
};
#define SCACHE 512

struct rpt_acc {
  const struct rpt_options *opt;
  struct lcomm *comms;
  int ncomms, ccomms;
  struct hindex comm_ix;
  struct lctx *ctx;
  int nctx, cctx;
  struct hindex ctx_ix;
  int last_ctx; /* the (communicator, rank) of the previous line: lines come in runs */
  struct rpt_hang_row *hrows;
  int nhrows, chrows;
  struct hindex hrow_ix;
  uint64_t hang_lines[3], hang_rows_dropped;
  struct rpt_group *groups;
  int ngroups, cgroups;
  struct hindex group_ix;
  struct rpt_pair *pairs;
  int npairs, cpairs;
  struct hindex pair_ix;
  struct lclock *clocks;
  int nclocks, cclocks;
  struct hindex clock_ix;
  struct rpt_opent *ops;
  size_t nops, cops, ops_budget;
  unsigned shift;
  struct scache_ent scache[SCACHE];
  /* counts */
  uint64_t lines, records, records_kind[2], excluded[RPT_NEXCL], no_start;
  long rejected, not_records;
  long bounds; /* coll_bound, p2p_bound lines */
  struct rpt_bad_line *bad;
  int nbad, cbad, bad_unit, bad_in_unit;
  char sampling[128];
  double covered_lo, covered_hi;
  int last_comm; /* the communicator of the previous line: lines come in runs */
};

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

static struct rpt_rank_info *new_rank_table(int nranks) {
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
  struct rpt_rank_info *t = new_rank_table(hd->nranks);
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
      c->rank = new_rank_table(hd->nranks);
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
static bool last_op_newer(const struct rpt_last_op *x, const struct rpt_last_op *y) {
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
static void note_done(struct rpt_rank_log *g, int op, int p2p, uint64_t sn) {
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
  note_done(g, op->op, op->p2p, op->sn);
  if (last_op_newer(op, &g->last)) g->last = *op;
  if (op->idle_s >= -1 && last_op_newer(op, &g->last_timed)) g->last_timed = *op;
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
static void hang_row_fold(struct rpt_hang_row *x, const struct rpt_hang_row *y) {
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
  uint64_t h = nz(mix(mix(((uint64_t)comm << 32) ^ (uint64_t)(uint32_t)rank) ^ ((uint64_t)op << 1 | (uint64_t)p2p)) ^ sn);
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
    note_done(&x->log, op, h->op.p2p, h->op.sn);
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
  hang_row_fold(w, &y);
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
static void thin(struct rpt_acc *a, unsigned shift, const uint64_t *hashes) {
  (void)hashes;
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
  if (shift != a->shift) thin(a, shift, NULL);
  if (!keep_hash(op_hash(r->comm, r->p2p, r->op, r->sn, r->rank), shift)) return;
  if (a->nops == a->ops_budget) {
    /* full: halve the share for everyone (unless another thread just did) */
    unsigned want = shift + 1;
    atomic_compare_exchange_strong(&g_shift, &shift, want);
    thin(a, atomic_load(&g_shift), NULL);
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

/* ---- the merge ----------------------------------------------------------- */

/*
 * Every sort and tie-break below compares interned ids, which renumber_strings has put in
 * name order first: an id comparison is a name comparison, so the merged groups, pairs and
 * clocks (and all that the analyses derive from them) are in the same order whichever
 * thread met a name first, and no comparison takes the intern table's lock.
 */
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

static bool same_instance(const struct rpt_opent *a, const struct rpt_opent *b) {
  return a->comm == b->comm && a->p2p == b->p2p && a->op == b->op && a->sn == b->sn;
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
    while (slot[k] && !same_instance(&j->ops[first[slot[k] - 1]], e)) k = (k + 1) & (cap - 1);
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
  if (last_op_newer(&y->last, &x->last)) x->last = y->last;
  if (last_op_newer(&y->last_timed, &x->last_timed)) x->last_timed = y->last_timed;
  for (int k = 0; k < y->ndone; k++) note_done(x, y->done[k].op, y->done[k].p2p, y->done[k].sn);
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
    if (w && !cmp_hang_row(&j->hang_rows[w - 1], &j->hang_rows[i])) hang_row_fold(&j->hang_rows[w - 1], &j->hang_rows[i]);
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
    c->rank = new_rank_table(hi);
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

void rpt_acc_merge(struct rpt_acc **accs, int n, struct rpt_job *j) {
  /* The sample's final share applies to every thread. */
  unsigned shift = atomic_load(&g_shift);
  j->sample_shift = shift;
  renumber_strings(accs, n);
  merge_comms(accs, n, j);
  /* clocks: union by (host, pid), sorted by host name then pid (a sort, then equal
   * neighbours folded: one host name is one interned id, and ids are in name order) */
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
  /* per-thread renumbering tables */
  for (int t = 0; t < n; t++) {
    struct rpt_acc *a = accs[t];
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
    if (a->shift != shift) thin(a, shift, NULL);
    for (size_t i = 0; i < a->nops; i++) {
      a->ops[i].comm = (uint32_t)cmap[a->ops[i].comm];
      a->ops[i].clock = a->ops[i].clock >= 0 ? kmap[a->ops[i].clock] : -1;
    }
    free(cmap);
    free(kmap);
    /* counts */
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
  merge_ctx(accs, n, j);
  merge_hang_rows(accs, n, j);
  for (int c = 0; c < j->ncomms; c++)
    if (j->comms[c].rank)
      for (int r = 0; r < j->comms[c].nranks; r++) j->comms[c].ranks_seen += j->comms[c].rank[r].host >= 0;
  /* groups and pairs: concatenate, sort, fold equal keys */
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
  group_ops(j);
  for (int t = 0; t < n; t++) {
    struct rpt_acc *a = accs[t];
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
}
