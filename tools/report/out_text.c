/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out_text.c - the terminal report (the default output; see out.h).
 *
 * Findings first, in plain words (which op is stuck and who holds it up, who
 * is late, which link is slow, what changed), each with its evidence and
 * confidence on its line, then what the rules would say on too little evidence
 * ("not enough data"), then the tables per communicator. A line that is not a
 * finding never says HANG, STRAGGLER, SLOW or CHANGE, so scripts can grep for
 * those words.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/utf8.h"
#include "out.h"

void rpt_put_json_string(FILE *f, const char *s) {
  /* log strings are short (names <= 127 bytes, hosts <= 63): 6 bytes each at most escaped */
  char buf[4096];
  ins_utf8_escape(buf, sizeof buf, s, ins_utf8_json_escape, 0);
  fprintf(f, "\"%s\"", buf);
}

const char *rpt_human_bytes(uint64_t b, char *out, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024 && i < 4) v /= 1024, i++;
  snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
  return out;
}

static uint64_t dropped_total(const struct rpt_job *j) {
  uint64_t d = 0;
  for (int c = 0; c < j->ncomms; c++) d += j->comms[c].dropped[0] + j->comms[c].dropped[1];
  return d;
}

static void clock_lines(FILE *f, const struct rpt_job *j);

static void header(struct rpt_job *j, FILE *f) {
  uint64_t excl = 0;
  for (int e = 0; e < RPT_NEXCL; e++) excl += j->excluded[e];
  fprintf(f, "Inspector report: %ld file%s, %" PRIu64 " records (%" PRIu64 " collective, %" PRIu64 " P2P), %" PRIu64
             " dropped%s\n",
          j->files, j->files == 1 ? "" : "s", j->records, j->records_kind[0], j->records_kind[1], dropped_total(j),
          j->rejected || j->not_records ? " -- some lines were left out" : "");
  if (j->rejected || j->not_records)
    fprintf(f, "  %ld lines rejected, %ld lines not Inspector records (stderr names the first ones)\n", j->rejected,
            j->not_records);
  if (j->bounds)
    fprintf(f, "  %ld bound lines (ops the plugin left out as unverified, bracketed by the ops before and "
               "after them on the stream): counted here, in no figure below\n", j->bounds);
  if (excl)
    fprintf(f, "  %" PRIu64 " records excluded from every figure below: %" PRIu64 " timed from only some of their channels (the others' GPU timestamps were stale), %" PRIu64
               " not timed on the GPU (timing source not kernel_gpu), %" PRIu64 " above the %.0f GB/s busbw ceiling\n",
            excl, j->excluded[RPT_EXCL_STALE], j->excluded[RPT_EXCL_TIMING], j->excluded[RPT_EXCL_CEILING],
            j->opt.max_busbw_gbs);
  if (j->sampling[0])
    fprintf(f, "  sampled timing: %s; timed share %.1f%% to %.1f%% per process; figures cover timed ops only\n",
            j->sampling, 100 * j->covered_lo, 100 * j->covered_hi);
  if (j->sample_shift)
    fprintf(f, "  cross-rank analyses use 1 collective in %u (memory bound, --memory)\n", 1u << j->sample_shift);
  if (!j->have_starts) {
    fprintf(f, "  no GPU start times in these logs (*_start_ts_ns: NVIDIA's and RCCL's Inspectors write none): "
               "late ranks and the timeline are not available\n");
    return;
  }
  int aligned = 0, hosts = 0;
  for (int c = 0; c < j->nclocks; c++) {
    aligned += j->clocks[c].aligned;
    hosts += c == 0 || j->clocks[c].host != j->clocks[c - 1].host;
  }
  if (aligned >= 2) {
    fprintf(f, "  clocks: %d processes on %d host%s aligned from %" PRIu64 " collectives%s: offsets %+.3f to %+.3f ms, "
               "drift %+.2f to %+.2f ppm",
            aligned, hosts, hosts == 1 ? "" : "s", j->align_ops,
            j->ncomponents > 1 ? " (in separate sets that share no op: offsets are relative within each)" : "",
            j->offset_min_ns / 1e6, j->offset_max_ns / 1e6, j->drift_min_ppm, j->drift_max_ppm);
    if (j->clocks_line + j->clocks_windows)
      fprintf(f, " (%d with a rate, %d of them piecewise)", j->clocks_line + j->clocks_windows, j->clocks_windows);
    fprintf(f, ", residual p50 %.2f us, p95 %.2f us\n", j->resid_p50_ns / 1e3, j->resid_p95_ns / 1e3);
    clock_lines(f, j);
  }
  if (j->late_threshold_raised)
    fprintf(f, "  lateness threshold %.1f us: --late-us %.1f us raised to 3 x the residual p95, since lateness finer "
               "than the alignment cannot be told from clock error\n",
            j->late_threshold_ns / 1e3, j->opt.late_ns / 1e3);
  else
    fprintf(f, "  lateness threshold %.1f us (--late-us)\n", j->late_threshold_ns / 1e3);
}

/* Per clock, where the alignment is least sure: the piecewise clocks (their steps: where, and
 * by how much), and the worst residuals, each clock once; at most CLOCK_LINES lines, in clock
 * order, the rest counted (--json has every clock). */
#define CLOCK_LINES 8
static void clock_lines(FILE *f, const struct rpt_job *j) {
  double worst[3] = {-1, -1, -1}; /* the three largest residual p95s */
  for (int c = 0; c < j->nclocks; c++) {
    double r = j->clocks[c].aligned ? j->clocks[c].resid_p95_ns : -1;
    for (int i = 0; i < 3; i++)
      if (r > worst[i]) {
        for (int k = 2; k > i; k--) worst[k] = worst[k - 1];
        worst[i] = r;
        break;
      }
  }
  int shown = 0, more = 0;
  for (int c = 0; c < j->nclocks; c++) {
    const struct rpt_clock *k = &j->clocks[c];
    if (!k->aligned || (k->model != RPT_CLOCK_WINDOWS && !(k->resid_p95_ns >= worst[2] && worst[2] > 0))) continue;
    if (shown == CLOCK_LINES) {
      more++;
      continue;
    }
    shown++;
    fprintf(f, "    clock %s pid %lld: %s, drift %+.2f ppm, residual p95 %.2f us", rpt_str(k->host), k->pid,
            rpt_clock_model_name(k->model), k->drift_ppm, k->resid_p95_ns / 1e3);
    for (int i = 1; i < k->nseg && k->model == RPT_CLOCK_WINDOWS; i++)
      /* where, on the aligned time: its own time less the mean of the offsets on either side
       * (the boundary lies between its last end before and first after, which the step
       * moved apart, or together) */
      fprintf(f, "%s step %+.3f ms at +%.3f s", i == 1 ? ";" : ",", (k->seg_a[i] - k->seg_a[i - 1]) / 1e6,
              (k->seg_x[i] - (k->seg_a[i] + k->seg_a[i - 1]) / 2 - k->rate * k->seg_x[i]) / 1e9);
    fputc('\n', f);
  }
  if (more) fprintf(f, "    (%d more clocks piecewise or with a residual as large: --json has every clock)\n", more);
}

static void comm_label(const struct rpt_job *j, int comm, char *out, size_t n) {
  snprintf(out, n, "\"%s\" (0x%" PRIx64 ")", j->comms[comm].name, j->comms[comm].id);
}

/* " since +S s (HH:MM:SS UTC)": an aligned GPU time against the job's first, and as a wall
 * clock when it reads as one (GPU timers mostly count ns since the epoch). */
static void put_since(FILE *f, uint64_t t, uint64_t t0) {
  fprintf(f, " since +%.3f s", t >= t0 && t0 != UINT64_MAX ? (double)(t - t0) / 1e9 : 0.0);
  if (t > 1000000000ull * 1000000000ull && t < 4102444800ull * 1000000000ull) { /* 2001 to 2100 */
    time_t sec = (time_t)(t / 1000000000ull);
    struct tm tm;
    char hms[16];
    if (gmtime_r(&sec, &tm) && strftime(hms, sizeof hms, "%H:%M:%S", &tm)) fprintf(f, " (%s UTC)", hms);
  }
}

/* A late rank's evidence and confidence (or, too few, what is missing), ending its line. */
static void put_late_evidence(struct rpt_job *j, FILE *f, const struct rpt_late_judge *g, const char *what) {
  if (g->verdict == RPT_LATE_TOO_FEW) {
    fprintf(f, "; evidence: %" PRIu64 " %s judged, the other ranks late in %.1f%%: naming a straggler takes at "
               "least %d late %s\n",
            g->since_ops, what, 100 * g->others_share, RPT_MIN_LATE_OPS, what);
    return;
  }
  fprintf(f, "; evidence: late in %" PRIu64 " of %" PRIu64 " %s", g->since_late, g->since_ops, what);
  if (g->onset_window) fprintf(f, " since its onset (window %d of %d, %.3f s each)", g->onset_window + 1, g->windows,
                               (double)g->window_ns / 1e9);
  fprintf(f, ", the other ranks in %.1f%%", 100 * g->others_share);
    fprintf(f, "; confidence %s (late in at least %.0f%% of them, 95%% bound, against --late-share %.0f%%)\n",
            rpt_conf_name(g->conf), 100 * g->share_lo, 100 * j->opt.late_share);
}

/* One late rank: a STRAGGLER, or "not enough data" (too few ops for the rule's word). */
static void put_late(struct rpt_job *j, FILE *f, const struct rpt_straggler *s, uint64_t t0) {
  char cl[192];
  struct rpt_late_judge tmp;
  const struct rpt_late_judge *g = rpt_straggler_judge(s, &tmp);
  bool named = g->verdict == RPT_LATE_NAMED;
  comm_label(j, s->comm, cl, sizeof cl);
  if (!named) fprintf(f, "  not enough data: rank %d on %s (pid %lld) of %s", s->rank,
                      s->host >= 0 ? rpt_str(s->host) : "?", s->pid, cl);
  else fprintf(f, "  STRAGGLER%s: rank %d on %s (pid %lld) of %s", s->p2p ? " (P2P)" : "", s->rank,
               s->host >= 0 ? rpt_str(s->host) : "?", s->pid, cl);
  if (s->p2p) {
    fprintf(f, " %s its Send/Recv late: a median %.1f us after the peer it transfers with, in %.0f%% of its %" PRIu64
               " transfers",
            named ? "posts" : "posted", g->late_med_ns / 1e3, 100 * g->share, g->since_ops);
    if (g->onset_window) put_since(f, g->onset_ns, t0);
    if (named) fprintf(f, "; its peers' kernels wait for it, which reads as slow links: those are left out");
    put_late_evidence(j, f, g, "transfers");
    return;
  }
  const struct rpt_rank_stat *r = s->stat;
  if (!named) { /* the figures, no claim */
    fprintf(f, " started late in %" PRIu64 " of its %" PRIu64 " collectives", g->since_late, g->since_ops);
    if (g->onset_window) put_since(f, g->onset_ns, t0);
    fprintf(f, " (%.0f%%, a median %.1f us after the others when late)", 100 * g->share, g->late_med_ns / 1e3);
  } else if (!g->onset_window && r->med_late_ns >= j->late_threshold_ns) { /* late throughout: as always */
    fprintf(f, " starts a median %.1f us after the others (mean %.1f us) in %.0f%% of its %" PRIu64 " collectives",
            r->med_late_ns / 1e3, r->mean_late_ns / 1e3, 100.0 * (double)r->late_ops / (double)r->ops, r->ops);
    if (r->top_op >= 0) fprintf(f, " (%s: %.0f%%)", rpt_str(r->top_op), 100 * r->top_op_share);
    fprintf(f, "; the others wait for it: its kernels are the shortest, median %.1f us against %.1f us",
            r->med_exec_ns / 1e3, r->others_med_exec_ns / 1e3);
  } else { /* late in some steps, or from some moment on */
    fprintf(f, " is late");
    if (g->onset_window) put_since(f, g->onset_ns, t0);
    else fprintf(f, " from the start");
    fprintf(f, " in %.0f%% of its %" PRIu64 " collectives%s, a median %.1f us after the others when late",
            100 * g->share, g->since_ops, g->onset_window ? " since" : "", g->late_med_ns / 1e3);
    if (r->top_op >= 0) fprintf(f, " (%s: %.0f%%)", rpt_str(r->top_op), 100 * r->top_op_share);
  }
  put_late_evidence(j, f, g, "collectives");
}

/* A rank with no log that the others wait for (job.h, struct rpt_missing). */
static void put_no_log(const struct rpt_job *j, FILE *f, const struct rpt_missing *m) {
  char cl[192], vl[192];
  const struct rpt_comm *c = &j->comms[m->comm];
  comm_label(j, m->comm, cl, sizeof cl);
  comm_label(j, m->via, vl, sizeof vl);
  int nm = c->nranks - c->ranks_seen;
  fprintf(f, "  LIKELY STRAGGLER (no log): rank %d on %s wrote no log%s, and the others wait for it: ", m->rank, cl,
          nm > 1 ? " (one of the ranks without one)" : "");
  if (m->via == m->comm)
    fprintf(f, "even the last of them to start waits %.1f us in its kernel against %.1f us in whole communicators "
               "of this shape, %.1f us more (median)",
            m->wait_med_ns / 1000, m->ref_ns / 1000, m->late_med_ns / 1000);
  else
    fprintf(f, "it is the job's one missing process, found about %.1f us late on %s (median; here the last of "
               "the others to start waits %.1f us in its kernel)",
            m->late_med_ns / 1000, vl, m->wait_med_ns / 1000);
  fprintf(f, "; evidence: the others waited %.1f us or more beyond that in %" PRIu64 " of %" PRIu64
             " collectives; confidence %s (at least %.0f%% of them, 95%% bound)\n",
          j->late_threshold_ns / 1000, m->waited_ops, m->ops, rpt_conf_name(m->conf), 100 * m->share_lo);
}

/* A link's evidence and confidence, ending its line. */
static void put_link_evidence(FILE *f, const struct rpt_link *l, bool few) {
  fprintf(f, "; evidence: %" PRIu64 " transfers, %d of its %d rank pairs (over %d op sizes) below the slow line",
          l->samples, l->pairs_below, l->pairs, l->groups);
  if (few)
    fprintf(f, ": a slow link needs at least %d transfers in an op size\n", RPT_MIN_LINK_SAMPLES);
  else
    fprintf(f, "; confidence %s (at least %.0f%% of its pairs, 95%% bound)\n", rpt_conf_name(l->conf),
            100 * l->agree_lo);
}

static void put_link(struct rpt_job *j, FILE *f, const struct rpt_link *l, bool few) {
  const char *word = few ? "not enough data (link)" : "SLOW LINK";
  char cl[192], sz[32];
  const struct rpt_link_finding *w = &l->find[0];
  for (int k = 1; k < l->nfind; k++)
    if (l->find[k].busbw_p50 / l->find[k].class_p50 < w->busbw_p50 / w->class_p50) w = &l->find[k];
  if (l->host < 0)
    fprintf(f, "  %s: %s %s %s%s:", word, rpt_str(l->a), l->one_way ? "->" : "<->", rpt_str(l->b),
            l->one_way ? " (one way: not found slow the other way)" : "");
  else
    fprintf(f, "  %s: ranks %d %s %d on %s (%s)%s:", word, l->a, l->one_way ? "->" : "<->", l->b, rpt_str(l->host),
            (comm_label(j, l->comm, cl, sizeof cl), cl), l->one_way ? " (one way: not found slow the other way)" : "");
  fprintf(f, " %s %s at %.2f GB/s against %.2f GB/s on the median of %d links (x%.2f)", rpt_str(w->op),
          rpt_human_bytes(w->bytes, sz, sizeof sz), w->busbw_p50, w->class_p50, w->class_links,
          w->busbw_p50 / w->class_p50);
  if (l->nfind > 1) fprintf(f, "; slow in %d op sizes", l->nfind);
  put_link_evidence(f, l, few);
}

/* ---- hangs ---- */

#define HANG_SHOWN 8 /* ranks (or processes) named per state on a HANG line; --json has them all */

static const char *plural(int n, const char *one, const char *many) { return n == 1 ? one : many; }

/* " #7 (1.0 MiB)": the op's number and size. */
static void put_hang_op(FILE *f, const struct rpt_hang *h) {
  char sz[32];
  fprintf(f, "%s #%" PRIu64, rpt_str(h->op), h->sn);
  if (h->bytes >= 0) fprintf(f, " (%s)", rpt_human_bytes((uint64_t)h->bytes, sz, sizeof sz));
}

/* "host pid P" of a rank, "?" parts unknown. */
static void put_place(FILE *f, const struct rpt_hang_rank *r) {
  fprintf(f, "%s pid ", r->host >= 0 ? rpt_str(r->host) : "?");
  if (r->pid >= 0) fprintf(f, "%lld", r->pid);
  else fputc('?', f);
}

/* The listed ranks in state st as ranges ("0-3, 8"); with by_host, only those on host. */
static void put_ranges(FILE *f, const struct rpt_hang *h, enum rpt_hang_state st, bool by_host, int host) {
  int lo = -1, hi = -1, n = 0;
  for (int i = 0; i <= h->nranks; i++) {
    const struct rpt_hang_rank *r = i < h->nranks ? &h->ranks[i] : NULL;
    if (r && (r->state != st || (by_host && r->host != host))) continue;
    if (r && lo >= 0 && r->rank == hi + 1) {
      hi = r->rank;
      continue;
    }
    if (lo >= 0) {
      fprintf(f, "%s%d", n++ ? ", " : "", lo);
      if (hi > lo) fprintf(f, "-%d", hi);
    }
    if (r) lo = hi = r->rank;
  }
}

/* A waiting rank's host and process, and its index in the hang's ranks; then per host: its
 * first rank's index, its one pid (or -1), its number of processes. */
struct wait_at {
  int host;
  long long pid;
  int i, procs;
};

static int cmp_wait_place(const void *x, const void *y) {
  const struct wait_at *a = x, *b = y;
  if (a->host != b->host) return a->host < b->host ? -1 : 1;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  return a->i - b->i;
}

static int cmp_wait_i(const void *x, const void *y) { return ((const struct wait_at *)x)->i - ((const struct wait_at *)y)->i; }

/* The waiting ranks of a collective by host, hosts in the order of their first rank: "node-001
 * pid 123 ranks 0-3; node-002 ranks 4-7 (4 processes); ...", the first HANG_SHOWN hosts. */
static void put_waiting_by_host(FILE *f, const struct rpt_hang *h) {
  struct wait_at *w = malloc((size_t)(h->nranks ? h->nranks : 1) * sizeof *w);
  if (!w) return;
  int n = 0, hosts = 0;
  for (int i = 0; i < h->nranks; i++)
    if (h->ranks[i].state == RPT_HS_WAITING) w[n++] = (struct wait_at){h->ranks[i].host, h->ranks[i].pid, i, 1};
  qsort(w, (size_t)n, sizeof *w, cmp_wait_place);
  for (int i = 0, k; i < n; i = k) { /* a host's run: its processes, its first rank */
    struct wait_at x = w[i];
    for (k = i + 1; k < n && w[k].host == x.host; k++) {
      if (w[k].pid != w[k - 1].pid) x.procs++;
      if (w[k].i < x.i) x.i = w[k].i;
    }
    if (x.procs > 1) x.pid = -1;
    w[hosts++] = x;
  }
  qsort(w, (size_t)hosts, sizeof *w, cmp_wait_i);
  int shown = hosts < HANG_SHOWN ? hosts : HANG_SHOWN;
  for (int i = 0; i < shown; i++) {
    int nr = 0;
    for (int k = w[i].i; k < h->nranks && nr < 2; k++)
      nr += h->ranks[k].state == RPT_HS_WAITING && h->ranks[k].host == w[i].host;
    fprintf(f, "%s%s", i ? "; " : "", w[i].host >= 0 ? rpt_str(w[i].host) : "?");
    if (w[i].procs == 1 && w[i].pid >= 0) fprintf(f, " pid %lld", w[i].pid);
    fputs(nr == 1 ? " rank " : " ranks ", f);
    put_ranges(f, h, RPT_HS_WAITING, true, w[i].host);
    if (w[i].procs > 1) fprintf(f, " (%d processes)", w[i].procs);
  }
  if (hosts > shown) fprintf(f, "; and %d more host%s", hosts - shown, hosts - shown == 1 ? "" : "s");
  free(w);
}

/* "rank 5 on node-002 pid 456" */
static void put_rank_at(FILE *f, const struct rpt_hang_rank *r) {
  fprintf(f, "rank %d on ", r->rank);
  put_place(f, r);
}

/* What a missing rank's log says: its last op, whether its process still writes. */
static void put_missing(FILE *f, const struct rpt_hang_rank *r) {
  put_rank_at(f, r);
  fputs(": ", f);
  if (r->last.op < 0) {
    fputs("no op of it completed on this communicator in its log", f);
  } else {
    fprintf(f, "its last op %s #%" PRIu64 " ended", rpt_str(r->last.op), r->last.sn);
    if (isnan(r->last_op_age_s)) fputs(" (when is unknown)", f);
    else fprintf(f, " %s%.1f s ago", r->last_op_age_exact ? "" : "at least ", r->last_op_age_s);
  }
  if (r->stuck_in)
    fprintf(f, "; it is stuck in %s #%" PRIu64 " itself", rpt_str(r->stuck_in->op), r->stuck_in->sn);
  if (r->alive == 1) fprintf(f, "; its log is live, last line %.1f s ago", r->last_line_age_s);
  else if (r->alive == 0)
    fprintf(f, "; its log stops %.1f s ago, before the hang began: its process died or froze", r->last_line_age_s);
  else fputs("; its log gives no time to tell whether its process lives", f);
}

/* Each rank in state st, one by one (P2P ranks, queued and missing ranks), up to HANG_SHOWN. */
static void put_each(FILE *f, const struct rpt_hang *h, enum rpt_hang_state st) {
  int shown = 0;
  for (int i = 0; i < h->nranks; i++) {
    const struct rpt_hang_rank *r = &h->ranks[i];
    if (r->state != st) continue;
    if (shown == HANG_SHOWN) {
      fprintf(f, "; and %d more", h->count[st] - shown);
      return;
    }
    fputs(shown++ ? "; " : "", f);
    if (st == RPT_HS_MISSING) {
      put_missing(f, r);
      continue;
    }
    put_rank_at(f, r);
    const struct rpt_hang_row *w = r->row ? r->row : r->own;
    if (r->own)
      fprintf(f, ", in its own %s #%" PRIu64 " towards rank %d", rpt_str(w->op), w->sn, w->peer);
    else if (w && w->peer >= 0)
      fprintf(f, ", peer %d", w->peer);
    if (w && w->in_flight_s >= 0) fprintf(f, ", in flight %.1f s", w->in_flight_s);
  }
}

/* The unknown ranks' ranges: "12-15, 20". */
static void put_unknown(FILE *f, const struct rpt_hang *h) {
  for (int i = 0; i < h->nunknown; i++) {
    fprintf(f, "%s%d", i ? ", " : "", h->unknown[i].lo);
    if (h->unknown[i].hi > h->unknown[i].lo) fprintf(f, "-%d", h->unknown[i].hi);
  }
}

/* The other side of a P2P function, for the words ("Send" for a Recv). */
static const char *matching(const char *op) {
  return !strcmp(op, "Recv") ? "the matching Send" : !strcmp(op, "Send") ? "the matching Recv" : "its side";
}

static void put_hang(struct rpt_job *j, FILE *f, const struct rpt_hang *h) {
  char cl[192];
  comm_label(j, h->comm, cl, sizeof cl);
  const int *n = h->count;
  if (h->resolved) {
    fputs("  HANG (resolved): ", f);
    put_hang_op(f, h);
    fprintf(f, " of %s was stuck for up to %.1f s on %d rank%s, then completed\n", cl, h->stuck_s,
            n[RPT_HS_COMPLETED], plural(n[RPT_HS_COMPLETED], "", "s"));
    return;
  }
  fputs("  HANG: ", f);
  put_hang_op(f, h);
  fprintf(f, " of %s has been stuck for %.1f s: %d rank%s wait%s inside its kernel", cl, h->stuck_s,
          n[RPT_HS_WAITING], plural(n[RPT_HS_WAITING], "", "s"), plural(n[RPT_HS_WAITING], "s", ""));
  if (n[RPT_HS_WAITING]) {
    fputs(" (", f);
    if (h->p2p) put_each(f, h, RPT_HS_WAITING);
    else put_waiting_by_host(f, h);
    fputc(')', f);
  }
  fprintf(f, "; %d rank%s issued it but %s kernel never started", n[RPT_HS_QUEUED],
          plural(n[RPT_HS_QUEUED], "", "s"), plural(n[RPT_HS_QUEUED], "its", "their"));
  if (n[RPT_HS_QUEUED]) {
    fputs(" (", f);
    put_each(f, h, RPT_HS_QUEUED);
    fputc(')', f);
  }
  if (h->p2p)
    fprintf(f, "; %d peer%s never issued %s", n[RPT_HS_MISSING], plural(n[RPT_HS_MISSING], "", "s"),
            matching(rpt_str(h->op)));
  else
    fprintf(f, "; %d rank%s never issued it", n[RPT_HS_MISSING], plural(n[RPT_HS_MISSING], "", "s"));
  if (n[RPT_HS_MISSING]) {
    fputs(" (", f);
    put_each(f, h, RPT_HS_MISSING);
    fputc(')', f);
  }
  if (n[RPT_HS_COMPLETED])
    fprintf(f, "; %d rank%s completed it", n[RPT_HS_COMPLETED], plural(n[RPT_HS_COMPLETED], "", "s"));
  fprintf(f, "; %d rank%s unknown", n[RPT_HS_UNKNOWN], plural(n[RPT_HS_UNKNOWN], "", "s"));
  if (n[RPT_HS_UNKNOWN]) {
    fputs(" (no line on this communicator: rank", f);
    fputs(n[RPT_HS_UNKNOWN] == 1 ? " " : "s ", f);
    put_unknown(f, h);
    fputc(')', f);
  }
  fputc('\n', f);
}

/* HANG lines first: a stuck job is the finding that matters most while it lasts. */
static void hang_findings(struct rpt_job *j, FILE *f) {
  if (!j->nhangs) return;
  for (int i = 0; i < j->nhangs; i++)
    if (!j->hangs[i].resolved) put_hang(j, f, &j->hangs[i]);
  for (int i = 0; i < j->nhangs; i++)
    if (j->hangs[i].resolved) put_hang(j, f, &j->hangs[i]);
  fputs("  (hangs: \"ago\" counts back from the newest line of these logs", f);
  time_t sec = (time_t)(j->last_line_us / 1000000u);
  struct tm tm;
  char when[32];
  if (j->last_line_us && gmtime_r(&sec, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm))
    fprintf(f, ", %s UTC", when);
  fputs(")\n", f);
}

static void findings(struct rpt_job *j, FILE *f) {
  char cl[192], sz[32];
  int said = 0;
  hang_findings(j, f);
  uint64_t t0 = UINT64_MAX;
  for (int g = 0; g < j->ngroups; g++)
    if (j->groups[g].series.nbins && j->groups[g].series.t0_ns < t0) t0 = j->groups[g].series.t0_ns;
  for (int i = 0; i < j->nstragglers; i++, said++) put_late(j, f, &j->stragglers[i], t0);
  for (int i = 0; i < j->nmissing; i++, said++) put_no_log(j, f, &j->missing[i]);
  for (int i = 0; i < j->nslow_nodes; i++, said++) {
    const struct rpt_slow_node *n = &j->slow_nodes[i];
    fprintf(f, "  SLOW NODE: %s: all %d of its links run slow (down to x%.2f of the other links' busbw); evidence: "
               "%" PRIu64 " transfers, %d of its links' %d rank pairs below the slow line; confidence %s (at least "
               "%.0f%% of them, 95%% bound)\n",
            rpt_str(n->host), n->links, n->worst_ratio, n->samples, n->pairs_below, n->pairs, rpt_conf_name(n->conf),
            100 * n->agree_lo);
  }
  for (int i = 0; i < j->nlinks; i++, said++) put_link(j, f, &j->links[i], false);
  for (int i = 0; i < j->nchanges; i++, said++) {
    const struct rpt_change *c = &j->changes[i];
    const struct rpt_group *g = &j->groups[c->group];
    comm_label(j, g->comm, cl, sizeof cl);
    fprintf(f, "  CHANGE: %s %s on %s: busbw %s from %.2f to %.2f GB/s at +%.3f s; evidence: %d time bins "
               "(%" PRIu64 " ops) before, %d (%" PRIu64 " ops) after, %d of them on their side, p %.2g over %.0f "
               "tests; confidence %s (at least %.0f%% on their side, 95%% bound)\n",
            rpt_str(g->op), rpt_human_bytes(g->bytes, sz, sizeof sz), cl,
            c->after_gbs < c->before_gbs ? "fell" : "rose", c->before_gbs, c->after_gbs,
            (double)(c->t_ns - t0) / 1e9, c->bins_before, c->ops_before, c->bins_after, c->ops_after,
            c->agree_before + c->agree_after, c->p_value, c->tests, rpt_conf_name(c->conf), 100 * c->agree_lo);
  }
  if (!said) {
    bool judged = false;
    for (int i = 0; i < j->nrstats && !judged; i++) judged = j->rstats[i].ops > 0;
    fprintf(f, "  no straggler, slow link or change found%s\n",
            judged ? "" : " (late ranks not judged: no collective was seen on two or more ranks)");
  }
  /* what the rules would name on more evidence: said, never as a finding */
  for (int i = 0; i < j->nfew_stragglers; i++) put_late(j, f, &j->few_stragglers[i], t0);
  for (int i = 0; i < j->nfew_links; i++) put_link(j, f, &j->few_links[i], true);
}

/* What one communicator's table shows, found for every communicator in one pass over
 * each list (a search of the lists per communicator made the report quadratic in
 * communicators: 40,000 took seconds, 300,000 minutes). */
struct comm_view {
  int g0, g1;   /* its groups: [g0, g1) of job.groups (sorted by communicator, job.h) */
  int worst;    /* its rank stat with the largest median lateness, -1 none */
  bool named;   /* a straggler of it was named */
};

static void comm_table(struct rpt_job *j, FILE *f, int comm, const struct comm_view *v) {
  const struct rpt_comm *c = &j->comms[comm];
  char sz[32];
  fprintf(f, "\ncommunicator 0x%" PRIx64 " \"%s\": %d ranks on %d node%s (%s), ", c->id, c->name, c->nranks,
          c->nnodes, c->nnodes == 1 ? "" : "s", rpt_kind_name(c->kind));
  if (c->ranks_seen < c->nranks) {
    /* the expected count beside the seen one, and which ranks wrote nothing (a few) */
    fprintf(f, "%d of the %d ranks seen", c->ranks_seen, c->nranks);
    int nm = c->nranks - c->ranks_seen;
    if (c->rank && nm <= 8) {
      fprintf(f, " (no log from rank%s", nm == 1 ? "" : "s");
      for (int r = 0, k = 0; r < c->nranks; r++)
        if (c->rank[r].host < 0) fprintf(f, "%s %d", k++ ? "," : "", r);
      fputc(')', f);
    }
  } else {
    fprintf(f, "%d rank%s seen", c->ranks_seen, c->ranks_seen == 1 ? "" : "s");
  }
  if (c->dropped[0] + c->dropped[1])
    fprintf(f, ", %" PRIu64 " records dropped", c->dropped[0] + c->dropped[1]);
  fputc('\n', f);
  fprintf(f, "  %-14s %10s %8s %6s %10s %10s %10s %9s %9s %9s\n", "op", "size", "records", "excl", "time p50",
          "p95", "p99 us", "busbw p10", "p50", "p90 GB/s");
  for (int g = v->g0; g < v->g1; g++) {
    struct rpt_group *x = &j->groups[g];
    uint64_t excl = 0;
    for (int e = 0; e < RPT_NEXCL; e++) excl += x->excluded[e];
    fprintf(f, "  %-14s %10s %8" PRIu64 " %6" PRIu64, rpt_str(x->op), rpt_human_bytes(x->bytes, sz, sizeof sz),
            x->records, excl);
    if (x->time_ns.n)
      fprintf(f, " %10.3f %10.3f %10.3f %9.2f %9.2f %9.2f\n", rpt_qs_quantile(&x->time_ns, 0.5) / 1e3,
              rpt_qs_quantile(&x->time_ns, 0.95) / 1e3, rpt_qs_quantile(&x->time_ns, 0.99) / 1e3,
              rpt_qs_quantile(&x->busbw, 0.1), rpt_qs_quantile(&x->busbw, 0.5), rpt_qs_quantile(&x->busbw, 0.9));
    else
      fprintf(f, " %10s %10s %10s %9s %9s %9s\n", "-", "-", "-", "-", "-", "-");
  }
  /* the latest rank, when no straggler was named in this communicator */
  if (v->worst >= 0 && !v->named) {
    const struct rpt_rank_stat *worst = &j->rstats[v->worst];
    fprintf(f, "  latest rank (not a straggler): rank %d starts a median %.1f us after the others, late in %.0f%% of "
               "%" PRIu64 " collectives\n",
            worst->rank, worst->med_late_ns / 1e3, 100.0 * (double)worst->late_ops / (double)worst->ops, worst->ops);
  }
}

int rpt_write_text(struct rpt_job *j, FILE *f) {
  header(j, f);
  fprintf(f, "\nfindings:\n");
  findings(j, f);
  struct comm_view *v = calloc((size_t)(j->ncomms ? j->ncomms : 1), sizeof *v);
  if (!v) {
    fprintf(stderr, "inspector-report: out of memory\n");
    return -1;
  }
  for (int c = 0; c < j->ncomms; c++) v[c].worst = -1;
  for (int g = 0; g < j->ngroups;) {
    int c = j->groups[g].comm, k = g;
    while (k < j->ngroups && j->groups[k].comm == c) k++;
    assert(c >= 0 && c < j->ncomms && v[c].g1 == 0 && "groups sorted by communicator (job.h)");
    v[c].g0 = g;
    v[c].g1 = k;
    g = k;
  }
  for (int i = 0; i < j->nstragglers; i++) v[j->stragglers[i].comm].named = true;
  /* the first of the largest, as a scan of the list in its order would pick */
  for (int i = 0; i < j->nrstats; i++) {
    struct comm_view *x = &v[j->rstats[i].comm];
    if (x->worst < 0 || j->rstats[i].med_late_ns > j->rstats[x->worst].med_late_ns) x->worst = i;
  }
  for (int c = 0; c < j->ncomms; c++)
    if (v[c].g1 > v[c].g0) comm_table(j, f, c, &v[c]);
  free(v);
  return ferror(f) ? -1 : 0;
}
