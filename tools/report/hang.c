/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hang.c - who holds up a stuck op, and whether they still live (see analysis.h, rpt_hangs).
 *
 * Owns: turning the hang lines' rows and the ranks' logs (job.h: struct rpt_hang_row, struct
 * rpt_rank_log, both folded by the merge) into one struct rpt_hang per stuck op, its ranks
 * each in one state. It reads nothing else of the job and is not the place of any rule about
 * a line (parse.c) or of how the outputs word it (out_*.c).
 *
 * A stuck op is a (communicator, function, sequence number) that some rank wrote a hang line
 * for. Collectives: every rank of the communicator takes part, so each is classified:
 *   waiting    its hang line says its kernel started (channels started, none stopped);
 *   queued     its hang line says its kernel never started;
 *   completed  a record of the op (its function's highest sequence number reached it), or a
 *              hang_resolved line: it is not stuck in this op (or no longer);
 *   missing    it has a log on this communicator and none of the above: it never issued the
 *              op, as far as its log shows;
 *   unknown    no line of it on this communicator at all: it cannot be judged, and is named.
 * P2P: sequence numbers count each rank's own P2P ops, so only the ranks with a hang line for
 * the op and the peers that the waiting ones' lines name take part; a peer with no such line is missing,
 * unless its own hang line is for the matching op towards that rank (both sides stuck: it is
 * waiting or queued too, on its own op, which is kept in rpt_hang_rank.own).
 *
 * "Now" is the newest line of the job (job.last_line_us): the logs say nothing of later. A
 * missing rank is alive when its process wrote a line after the hang began (the earliest
 * first sighting of the op in any of its hang lines): a live process writes comm_idle lines,
 * or hang lines of its own; a dead or frozen one writes nothing. Its last op's age is exact
 * when a comm_idle line gave it (idle_s when written, plus the time since), a lower bound when
 * a record did (the op ended before the line was written), unknown when only a hang line's
 * last_completed did (it ended before that line by as long as its other op was stuck).
 *
 * A stuck op every one of whose hang ranks completed is resolved. Output order is the rows'
 * (communicator, kind, name, sequence number): fixed by the data.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "../common/xalloc.h"

static bool same_op(const struct rpt_hang_row *a, const struct rpt_hang_row *b) {
  return a->comm == b->comm && a->p2p == b->p2p && a->op == b->op && a->sn == b->sn;
}

/* The log of (comm, rank), or NULL: job.rank_logs is sorted by both. */
static const struct rpt_rank_log *find_log(const struct rpt_job *j, int comm, int rank) {
  int lo = 0, hi = j->nrank_logs - 1;
  while (lo <= hi) {
    int m = lo + (hi - lo) / 2;
    const struct rpt_rank_log *g = &j->rank_logs[m];
    if (g->comm == comm && g->rank == rank) return g;
    if (g->comm < comm || (g->comm == comm && g->rank < rank)) lo = m + 1;
    else hi = m - 1;
  }
  return NULL;
}

/* The first log of comm (or where it would be). */
static int first_log(const struct rpt_job *j, int comm) {
  int lo = 0, hi = j->nrank_logs;
  while (lo < hi) {
    int m = lo + (hi - lo) / 2;
    if (j->rank_logs[m].comm < comm) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/* Its process's newest line (job.clocks, sorted by host id then pid), 0 when it has none. */
static uint64_t process_last_us(const struct rpt_job *j, int host, long long pid) {
  int lo = 0, hi = j->nclocks - 1;
  while (lo <= hi) {
    int m = lo + (hi - lo) / 2;
    const struct rpt_clock *k = &j->clocks[m];
    if (k->host == host && k->pid == pid) return k->last_us;
    if (k->host < host || (k->host == host && k->pid < pid)) lo = m + 1;
    else hi = m - 1;
  }
  return 0;
}

/* Whether the log says function (op, p2p) completed up to sn. */
static bool done_upto(const struct rpt_rank_log *g, int op, int p2p, uint64_t sn) {
  if (!g) return false;
  for (int i = 0; i < g->ndone; i++)
    if (g->done[i].op == op && g->done[i].p2p == p2p) return g->done[i].sn >= sn;
  return false;
}

static bool row_done(const struct rpt_job *j, const struct rpt_hang_row *w) {
  return w->resolved || done_upto(find_log(j, w->comm, w->rank), w->op, w->p2p, w->sn);
}

static enum rpt_hang_state row_state(const struct rpt_job *j, const struct rpt_hang_row *w) {
  if (row_done(j, w)) return RPT_HS_COMPLETED;
  return w->kernel_started ? RPT_HS_WAITING : RPT_HS_QUEUED;
}

/* The rows of one rank, still stuck, in (communicator, rank) order: for a missing rank's own
 * stuck op and a P2P peer's matching one. */
struct by_rank {
  const struct rpt_job *j;
  int *ix; /* indices into job.hang_rows of rows not done */
  int n;
};

static const struct rpt_job *g_sort_job; /* qsort's comparison reads the rows through it */

static int cmp_row_rank(const void *x, const void *y) {
  const struct rpt_hang_row *a = &g_sort_job->hang_rows[*(const int *)x], *b = &g_sort_job->hang_rows[*(const int *)y];
  if (a->comm != b->comm) return a->comm - b->comm;
  if (a->rank != b->rank) return a->rank - b->rank;
  return *(const int *)x - *(const int *)y; /* then the rows' own order */
}

static void by_rank_build(const struct rpt_job *j, struct by_rank *br) {
  br->j = j;
  br->ix = xmalloc((size_t)(j->nhang_rows ? j->nhang_rows : 1) * sizeof *br->ix);
  br->n = 0;
  for (int i = 0; i < j->nhang_rows; i++)
    if (!row_done(j, &j->hang_rows[i])) br->ix[br->n++] = i;
  g_sort_job = j;
  qsort(br->ix, (size_t)br->n, sizeof *br->ix, cmp_row_rank);
  g_sort_job = NULL;
}

/* The first of (comm, rank)'s rows still stuck, and their count in *n. */
static const int *rows_of_rank(const struct by_rank *br, int comm, int rank, int *n) {
  int lo = 0, hi = br->n;
  while (lo < hi) {
    int m = lo + (hi - lo) / 2;
    const struct rpt_hang_row *w = &br->j->hang_rows[br->ix[m]];
    if (w->comm < comm || (w->comm == comm && w->rank < rank)) lo = m + 1;
    else hi = m;
  }
  int e = lo;
  while (e < br->n && br->j->hang_rows[br->ix[e]].comm == comm && br->j->hang_rows[br->ix[e]].rank == rank) e++;
  *n = e - lo;
  return br->ix + lo;
}

/* A missing rank's own stuck op on this communicator, other than the one judged: the first. */
static const struct rpt_hang_row *stuck_elsewhere(const struct by_rank *br, const struct rpt_hang_row *key, int rank) {
  int n;
  const int *ix = rows_of_rank(br, key->comm, rank, &n);
  for (int i = 0; i < n; i++) {
    const struct rpt_hang_row *w = &br->j->hang_rows[ix[i]];
    if (!same_op(w, key)) return w;
  }
  return NULL;
}

/* The row of `rank` among rows [a, b) (one op's, one per rank, in rank order), or NULL. */
static const struct rpt_hang_row *row_of(const struct rpt_hang_row *rows, int a, int b, int rank) {
  while (a < b) {
    int m = a + (b - a) / 2;
    if (rows[m].rank == rank) return &rows[m];
    if (rows[m].rank < rank) a = m + 1;
    else b = m;
  }
  return NULL;
}

/* A P2P peer's own stuck op that matches one of the op's rows: towards a rank of rows
 * [a, b) whose line names the peer, of another function (a Send for a Recv). */
static const struct rpt_hang_row *matching_side(const struct by_rank *br, const struct rpt_hang_row *rows, int a,
                                                int b, int peer) {
  int n;
  const int *ix = rows_of_rank(br, rows[a].comm, peer, &n);
  for (int i = 0; i < n; i++) {
    const struct rpt_hang_row *w = &br->j->hang_rows[ix[i]];
    if (!w->p2p || w->op == rows[a].op || w->peer < 0) continue;
    const struct rpt_hang_row *x = row_of(rows, a, b, w->peer);
    if (x && x->peer == peer) return w;
  }
  return NULL;
}

/* What its log says of a rank with a log: where, its last op and its age, its last line. */
static void rank_facts(const struct rpt_job *j, const struct rpt_rank_log *g, uint64_t began_us,
                       struct rpt_hang_rank *r) {
  double now = (double)j->last_line_us;
  r->host = g->host;
  r->pid = g->pid;
  r->last = g->last;
  r->last_op_age_s = NAN;
  const struct rpt_last_op *t = &g->last; /* what dates it: itself, or an older report of the same op */
  if (t->idle_s < -1 && g->last_timed.op == t->op && g->last_timed.p2p == t->p2p && g->last_timed.sn == t->sn) {
    t = &g->last_timed;
    if (!r->last.end_ns) r->last.end_ns = t->end_ns;
  }
  if (t->op >= 0 && t->idle_s >= -1 && t->line_us && j->last_line_us >= t->line_us) {
    r->last_op_age_exact = t->idle_s >= 0;
    r->last_op_age_s = (now - (double)t->line_us) / 1e6 + (r->last_op_age_exact ? t->idle_s : 0);
  }
  uint64_t last = g->last_us, proc = g->host >= 0 ? process_last_us(j, g->host, g->pid) : 0;
  if (proc > last) last = proc;
  r->last_line_age_s = last && j->last_line_us >= last ? (now - (double)last) / 1e6 : NAN;
  r->alive = last && began_us ? last > began_us : -1;
}

/* The ranks of a collective: every rank of the communicator, each with a log listed (in
 * rank order), those without one as ranges. */
static void coll_ranks(const struct rpt_job *j, const struct by_rank *br, const struct rpt_hang_row *rows, int a,
                       int b, struct rpt_hang *h) {
  int c = rows[a].comm, n = j->comms[c].nranks, l0 = first_log(j, c), l1 = l0;
  while (l1 < j->nrank_logs && j->rank_logs[l1].comm == c) l1++;
  h->ranks = xcalloc((size_t)(l1 > l0 ? l1 - l0 : 1), sizeof *h->ranks);
  h->unknown = xcalloc((size_t)(l1 - l0 + 1), sizeof *h->unknown);
  int next = 0, w = a; /* the first rank not yet accounted for; the row walked */
  for (int l = l0; l < l1; l++) {
    const struct rpt_rank_log *g = &j->rank_logs[l];
    if (g->rank > next) {
      h->unknown[h->nunknown].lo = next;
      h->unknown[h->nunknown++].hi = g->rank - 1;
      h->count[RPT_HS_UNKNOWN] += g->rank - next;
    }
    next = g->rank + 1;
    while (w < b && rows[w].rank < g->rank) w++;
    struct rpt_hang_rank *r = &h->ranks[h->nranks++];
    *r = (struct rpt_hang_rank){.rank = g->rank};
    if (w < b && rows[w].rank == g->rank) {
      r->row = &rows[w];
      r->state = row_state(j, r->row);
    } else {
      r->state = done_upto(g, rows[a].op, 0, rows[a].sn) ? RPT_HS_COMPLETED : RPT_HS_MISSING;
      if (r->state == RPT_HS_MISSING) r->stuck_in = stuck_elsewhere(br, &rows[a], g->rank);
    }
    h->count[r->state]++;
  }
  if (next < n) {
    h->unknown[h->nunknown].lo = next;
    h->unknown[h->nunknown++].hi = n - 1;
    h->count[RPT_HS_UNKNOWN] += n - next;
  }
}

static int cmp_int(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

/* The ranks of a P2P op: those with a hang line for it, and the peers named by the lines of
 * those waiting in it (a queued rank's kernel never started: it waits on its own stream, not on
 * its peer, whose side may well have completed). */
static void p2p_ranks(const struct rpt_job *j, const struct by_rank *br, const struct rpt_hang_row *rows, int a,
                      int b, struct rpt_hang *h) {
  int c = rows[a].comm, nr = 0;
  int *rk = xmalloc((size_t)(2 * (b - a)) * sizeof *rk);
  for (int w = a; w < b; w++) {
    rk[nr++] = rows[w].rank;
    if (rows[w].peer >= 0 && row_state(j, &rows[w]) == RPT_HS_WAITING) rk[nr++] = rows[w].peer;
  }
  qsort(rk, (size_t)nr, sizeof *rk, cmp_int);
  h->ranks = xcalloc((size_t)nr, sizeof *h->ranks);
  h->unknown = xcalloc((size_t)nr, sizeof *h->unknown);
  for (int i = 0, w = a; i < nr; i++) {
    if (i && rk[i] == rk[i - 1]) continue;
    const struct rpt_rank_log *g = find_log(j, c, rk[i]);
    if (!g) { /* a peer with no line on this communicator: ranks in order, so ranges grow at the end */
      if (h->nunknown && h->unknown[h->nunknown - 1].hi == rk[i] - 1) h->unknown[h->nunknown - 1].hi = rk[i];
      else h->unknown[h->nunknown].lo = h->unknown[h->nunknown].hi = rk[i], h->nunknown++;
      h->count[RPT_HS_UNKNOWN]++;
      continue;
    }
    while (w < b && rows[w].rank < rk[i]) w++;
    struct rpt_hang_rank *r = &h->ranks[h->nranks++];
    *r = (struct rpt_hang_rank){.rank = rk[i]};
    if (w < b && rows[w].rank == rk[i]) {
      r->row = &rows[w];
      r->state = row_state(j, r->row);
    } else if ((r->own = matching_side(br, rows, a, b, rk[i]))) {
      r->state = r->own->kernel_started ? RPT_HS_WAITING : RPT_HS_QUEUED;
    } else {
      r->state = RPT_HS_MISSING;
      r->stuck_in = stuck_elsewhere(br, &rows[a], rk[i]);
    }
    h->count[r->state]++;
  }
  free(rk);
}

/* One stuck op from its rows [a, b) (one rank each, in rank order). */
static void build(const struct rpt_job *j, const struct by_rank *br, int a, int b, struct rpt_hang *h) {
  const struct rpt_hang_row *rows = j->hang_rows;
  *h = (struct rpt_hang){.comm = rows[a].comm, .op = rows[a].op, .p2p = rows[a].p2p, .sn = rows[a].sn,
                         .bytes = -1, .stuck_s = 0, .resolved = true};
  for (int w = a; w < b; w++) /* resolved when no rank is stuck in it still */
    if (!row_done(j, &rows[w])) h->resolved = false;
  for (int w = a; w < b; w++) {
    const struct rpt_hang_row *x = &rows[w];
    if (x->bytes > h->bytes) h->bytes = x->bytes;
    if (x->in_flight_s > h->stuck_s) h->stuck_s = x->in_flight_s;
    if (h->resolved && x->resolved_s > h->stuck_s) h->stuck_s = x->resolved_s;
    if (!x->lines || (!h->resolved && row_done(j, x))) continue; /* began: of the ranks stuck */
    uint64_t began = x->first_seen_us;
    if (!began && x->line_us && x->in_flight_s >= 0 && (double)x->line_us > x->in_flight_s * 1e6)
      began = x->line_us - (uint64_t)llround(x->in_flight_s * 1e6);
    if (began && (!h->began_us || began < h->began_us)) h->began_us = began;
  }
  if (rows[a].p2p) p2p_ranks(j, br, rows, a, b, h);
  else coll_ranks(j, br, rows, a, b, h);
  for (int i = 0; i < h->nranks; i++) {
    const struct rpt_rank_log *g = find_log(j, h->comm, h->ranks[i].rank);
    if (g) rank_facts(j, g, h->began_us, &h->ranks[i]);
  }
}

void rpt_hangs(struct rpt_job *j) {
  if (!j->nhang_rows) return;
  struct by_rank br;
  by_rank_build(j, &br);
  int cap = 0;
  size_t listed = 0;
  for (int a = 0, b; a < j->nhang_rows; a = b) {
    for (b = a + 1; b < j->nhang_rows && same_op(&j->hang_rows[a], &j->hang_rows[b]);) b++;
    if (listed >= RPT_HANG_LIST_MAX) {
      j->nhangs_unlisted++;
      continue;
    }
    if (j->nhangs == cap) {
      cap = cap ? 2 * cap : 16;
      j->hangs = xrealloc(j->hangs, (size_t)cap * sizeof *j->hangs);
    }
    build(j, &br, a, b, &j->hangs[j->nhangs]);
    listed += (size_t)j->hangs[j->nhangs++].nranks;
  }
  free(br.ix);
}
