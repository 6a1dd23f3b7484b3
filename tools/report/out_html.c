/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out_html.c - the report as one self-contained HTML page (--html FILE).
 *
 * Owns: the page: which sections, in which order, and what each shows from the finished
 * job (job.h), which it reads only; every figure on it is one the text and JSON outputs
 * print too. The charts are html_charts.c's, the drawing kit (escaping, figures, axes,
 * colours) html_svg.c's, the CSS and the tooltip script html_style.c's; all inline, so that
 * the page opens anywhere (no network, no script library, no font to fetch). Without the
 * script the page is complete, only the tooltips are missing.
 *
 * Sections: the input (files, records, exclusions, drops, sampling, clock
 * alignment) and the communicators; the findings (stuck ops, stragglers, slow
 * links and nodes, bandwidth changes); per communicator, bus bandwidth against message
 * size per operation (p50 line, p10-p90 band), time per size (p50/p95/p99, log
 * scale) and two per-rank heat maps (median lateness, busbw ratio); bandwidth
 * over time as small multiples.
 *
 * Bounds: a job can have thousands of communicators and groups, so the page
 * draws the MAX_COMM_SECTIONS communicators with the most records (the others
 * are in the table), at most MAX_SERIES charts of bandwidth over time, and heat
 * maps of MAX_HEAT_CELLS ranks in all. A heat-map cell is the page's costly
 * item (about 150 bytes with its tooltip, two maps a rank): one 1,024-rank
 * communicator with 24 groups makes a page of about 500 KB; the bounds keep
 * the worst page near 6 MB whatever the size of the logs.
 *
 * Strings from the logs (communicator names, hostnames, which may hold
 * anything) go through html_text() (html_svg.h): HTML-escaped, and any byte
 * sequence that is not UTF-8 written as U+FFFD, so no log can inject markup or
 * break the page.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_charts.h"
#include "html_page.h"
#include "html_style.h"
#include "html_svg.h"
#include "out.h"

#define MAX_COMM_SECTIONS 32
#define MAX_SERIES 24
#define MAX_HEAT_CELLS 16384 /* ranks, over all the maps of the page */
#define MAX_RUNS 32          /* lines on a communicator's charts: (p2p, op) runs */

/* The page's model (struct page) is html_page.h's; the findings are html_findings.c's. */

/* ---------------------------------------------------------------- communicators' names */

/* The communicator's display name: "name (0x1a2b)", escaped. */
void page_put_comm(FILE *f, const struct rpt_job *j, int c) {
  if (c < 0 || c >= j->ncomms) {
    fputs("?", f);
    return;
  }
  html_text(f, j->comms[c].name);
  fprintf(f, " <span class=\"mut\">(0x%" PRIx64 ")</span>", j->comms[c].id);
}

/* ---------------------------------------------------------------- the input */

static void kv(FILE *f, const char *k) { fprintf(f, "<tr><th>%s</th><td>", k); }

/* The counts at a glance. */
static void input_tiles(struct page *pg, uint64_t excl, uint64_t dropped) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  fprintf(f, "<div><b>%" PRIu64 "</b>records</div>", j->records);
  fprintf(f, "<div><b>%ld</b>files</div>", j->files);
  fprintf(f, "<div><b>%d</b>communicators</div>", j->ncomms);
  fprintf(f, "<div><b>%d</b>processes</div>", j->nclocks);
  fprintf(f, "<div%s><b>%" PRIu64 "</b>excluded</div>", excl ? " class=\"warn\"" : "", excl);
  fprintf(f, "<div%s><b>%" PRIu64 "</b>dropped</div>", dropped ? " class=\"bad\"" : "", dropped);
  int stuck = 0;
  for (int i = 0; i < j->nhangs; i++) stuck += !j->hangs[i].resolved;
  fprintf(f, "<div%s><b>%d</b>stuck ops</div>", stuck ? " class=\"bad\"" : "", stuck);
  fprintf(f, "<div%s><b>%d</b>stragglers</div>", j->nstragglers + j->nmissing ? " class=\"bad\"" : "",
          j->nstragglers + j->nmissing);
  fprintf(f, "<div%s><b>%d</b>slow links</div>", j->nlinks ? " class=\"bad\"" : "", j->nlinks);
}

/* What was read, and what was left out of the statistics. */
static void input_counts(struct page *pg, uint64_t excl, uint64_t dropped, uint64_t written) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32];
  kv(f, "files");
  fprintf(f, "%ld read (%s), %" PRIu64 " lines</td></tr>\n", j->files, rpt_human_bytes(j->bytes_read, a, sizeof a),
          j->lines);
  kv(f, "records");
  fprintf(f, "%" PRIu64 ": %" PRIu64 " collective, %" PRIu64 " P2P</td></tr>\n", j->records, j->records_kind[0],
          j->records_kind[1]);
  kv(f, "excluded");
  if (!excl) fputs("none", f);
  for (int e = 0, first = 1; e < RPT_NEXCL; e++)
    if (j->excluded[e]) {
      fprintf(f, "%s%" PRIu64 " %s", first ? "" : ", ", j->excluded[e], rpt_excl_name((enum rpt_excl)e));
      first = 0;
    }
  fputs(" <span class=\"mut\">(counted, left out of the statistics)</span></td></tr>\n", f);
  kv(f, "lines not used");
  fprintf(f, "%ld rejected, %ld not records</td></tr>\n", j->rejected, j->not_records);
  kv(f, "dropped");
  fprintf(f, "%" PRIu64 " <span class=\"mut\">(by the plugin: full rings; %" PRIu64 " written)</span></td></tr>\n",
          dropped, written);
  kv(f, "without start time");
  fprintf(f, "%" PRIu64 "</td></tr>\n", j->no_start);
}

/* How the records were timed, and how many the cross-rank analyses kept; closes the table. */
static void input_timing(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32];
  uint64_t timing[RPT_NTIMING] = {0};
  for (int g = 0; g < j->ngroups; g++)
    for (int t = 0; t < RPT_NTIMING; t++) timing[t] += j->groups[g].timing[t];
  kv(f, "timing sources");
  for (int t = 0, first = 1; t < RPT_NTIMING; t++)
    if (timing[t]) {
      fprintf(f, "%s%" PRIu64 " %s", first ? "" : ", ", timing[t], rpt_timing_name((enum rpt_timing)t));
      first = 0;
    }
  fputs("</td></tr>\n", f);
  kv(f, "sampled timing");
  if (!j->sampling[0]) fputs("no (every op timed)", f);
  else {
    html_text(f, j->sampling);
    if (j->covered_hi >= 0)
      fprintf(f, "; timed share %s to %s", html_pct(j->covered_lo, a, sizeof a), html_pct(j->covered_hi, b, sizeof b));
  }
  fputs("</td></tr>\n", f);
  kv(f, "op sample");
  fprintf(f, "%zu records", j->nops);
  if (j->sample_shift)
    fprintf(f, " <span class=\"warn\">(1 op in %llu kept for the cross-rank analysis)</span>",
            1ULL << (j->sample_shift < 63 ? j->sample_shift : 63));
  fputs("</td></tr></table>\n", f);
}

/* The clock alignment's rows, when the logs have GPU start times. */
static void clocks_aligned(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32];
  int aligned = 0;
  for (int c = 0; c < j->nclocks; c++) aligned += j->clocks[c].aligned;
  kv(f, "processes");
  fprintf(f, "%d, %d aligned through shared ops</td></tr>\n", j->nclocks, aligned);
  if (j->ncomponents > 1) {
    /* processes that share no op with each other cannot be put on one time base */
    kv(f, "clock sets");
    fprintf(f, "%d <span class=\"warn\">groups of processes that share no operation with each "
               "other: clocks are aligned within each group, not between groups</span></td></tr>\n",
            j->ncomponents);
  }
  kv(f, "residual");
  fprintf(f, "p50 %s us, p95 %s us</td></tr>\n", html_num(j->resid_p50_ns / 1e3, a, sizeof a),
          html_num(j->resid_p95_ns / 1e3, b, sizeof b));
  kv(f, "offsets");
  double unit = fabs(j->offset_min_ns) >= 1e6 || fabs(j->offset_max_ns) >= 1e6 ? 1e6 : 1e3;
  fprintf(f, "%s to %s %s <span class=\"mut\">(GPU clocks against the median clock)</span></td></tr>\n",
          html_num(j->offset_min_ns / unit, a, sizeof a), html_num(j->offset_max_ns / unit, b, sizeof b),
          unit == 1e6 ? "ms" : "us");
  kv(f, "drift");
  fprintf(f, "%s to %s ppm <span class=\"mut\">(rates against the median clock; %d clocks with a rate, %d of them "
             "piecewise)</span></td></tr>\n",
          html_num(j->drift_min_ppm, a, sizeof a), html_num(j->drift_max_ppm, b, sizeof b),
          j->clocks_line + j->clocks_windows, j->clocks_windows);
  kv(f, "lateness threshold");
  fprintf(f, "%s us", html_num(j->late_threshold_ns / 1e3, a, sizeof a));
  if (j->late_threshold_raised)
    fprintf(f, " <span class=\"warn\">(--late-us %s us raised to 3 x the residual p95: the clocks align no "
               "finer)</span>", html_num(j->opt.late_ns / 1e3, b, sizeof b));
  fputs("</td></tr>\n", f);
  kv(f, "ops used");
  fprintf(f, "%" PRIu64 "</td></tr>\n", j->align_ops);
}

static void section_input(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  uint64_t written = 0, dropped = 0, excl = 0;
  for (int c = 0; c < j->ncomms; c++) {
    written += j->comms[c].written[0] + j->comms[c].written[1];
    dropped += j->comms[c].dropped[0] + j->comms[c].dropped[1];
  }
  for (int e = 0; e < RPT_NEXCL; e++) excl += j->excluded[e];
  fputs("<section id=\"input\"><h2>Input</h2>\n<div class=\"tiles\">", f);
  input_tiles(pg, excl, dropped);
  fputs("</div>\n<div class=\"cols\"><table class=\"kv\">", f);
  input_counts(pg, excl, dropped, written);
  input_timing(pg);
  fputs("<table class=\"kv\"><tr><th colspan=\"2\" class=\"sub\">Clock alignment</th></tr>\n", f);
  if (!j->have_starts) {
    kv(f, "GPU start times");
    fputs("absent: no alignment, no lateness</td></tr>\n", f);
  } else {
    clocks_aligned(pg);
  }
  fputs("</table></div></section>\n", f);
}

/* ---------------------------------------------------------------- the communicators */

static void section_comms(struct page *pg, const int *order) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32];
  fputs("<section id=\"comms\"><h2>Communicators</h2>\n<table class=\"grid\"><thead><tr><th>id</th><th>name</th>"
        "<th class=\"n\">ranks</th><th class=\"n\">seen</th><th class=\"n\">nodes</th><th>kind</th>"
        "<th class=\"n\">records</th><th class=\"n\">dropped</th><th>timed share</th></tr></thead><tbody>\n",
        f);
  for (int k = 0; k < j->ncomms; k++) {
    int c = order[k];
    const struct rpt_comm *cm = &j->comms[c];
    fprintf(f, "<tr><td>");
    if (k < MAX_COMM_SECTIONS) fprintf(f, "<a href=\"#comm-%d\">0x%" PRIx64 "</a>", c, cm->id);
    else fprintf(f, "0x%" PRIx64, cm->id);
    fputs("</td><td>", f);
    html_text(f, cm->name);
    fprintf(f, "</td><td class=\"n\">%d</td>", cm->nranks);
    if (cm->ranks_seen < cm->nranks) /* the expected count beside it: a rank wrote no log */
      fprintf(f, "<td class=\"n warn\">%d of %d</td>", cm->ranks_seen, cm->nranks);
    else
      fprintf(f, "<td class=\"n\">%d</td>", cm->ranks_seen);
    fprintf(f, "<td class=\"n\">%d</td><td>%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
               "</td><td>",
            cm->nnodes, rpt_kind_name(cm->kind), pg->comm_records[c], cm->dropped[0] + cm->dropped[1]);
    if (cm->covered_hi >= 0)
      fprintf(f, "%s to %s", html_pct(cm->covered_lo, a, sizeof a), html_pct(cm->covered_hi, b, sizeof b));
    else fputs("all", f);
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (j->ncomms > MAX_COMM_SECTIONS)
    fprintf(f, "<p class=\"mut\">Charts below for the %d communicators with the most records.</p>\n",
            MAX_COMM_SECTIONS);
  fputs("</section>\n", f);
}

/* ---------------------------------------------------------------- a communicator's charts */

/* The runs of comm c's groups, each a (p2p, op): at most `max`, as indices into its points
 * (pg->pts + comm_g0[c]); returns how many. */
static int comm_runs(const struct page *pg, int c, struct html_run *out, int max) {
  int n = 0, g0 = pg->comm_g0[c];
  const struct rpt_group *g = pg->j->groups;
  for (int i = g0; i < pg->comm_g1[c] && n < max; n++) {
    int k = i;
    while (k < pg->comm_g1[c] && g[k].p2p == g[i].p2p && g[k].op == g[i].op) k++;
    out[n].i0 = i - g0;
    out[n].i1 = k - g0;
    i = k;
  }
  return n;
}

static double late_us(const struct rpt_rank_stat *s) { return s->ops ? s->med_late_ns / 1e3 : NAN; }
static double bw_log2(const struct rpt_rank_stat *s) {
  return s->busbw_ratio > 0 ? log2(s->busbw_ratio) : NAN;
}

/* Comm c's ranks for its maps: each one's figures (NULL: none), host, pid, straggler or not;
 * the largest |value| of each map in *late_max, *bw_max. Returns the ranks with figures. */
static int heat_ranks(struct page *pg, int c, struct html_heat_rank *hr, double *late_max, double *bw_max) {
  struct rpt_job *j = pg->j;
  const struct rpt_comm *cm = &j->comms[c];
  int nstat = 0;
  for (int i = 0; i < j->nrstats; i++) {
    const struct rpt_rank_stat *s = &j->rstats[i];
    if (s->comm != c || s->rank < 0 || s->rank >= cm->nranks) continue;
    hr[s->rank].stat = s;
    nstat++;
    if (s->ops && fabs(s->med_late_ns / 1e3) > *late_max) *late_max = fabs(s->med_late_ns / 1e3);
    if (s->busbw_ratio > 0 && fabs(log2(s->busbw_ratio)) > *bw_max) *bw_max = fabs(log2(s->busbw_ratio));
  }
  for (int r = 0; r < cm->nranks; r++) {
    hr[r].host = cm->rank && cm->rank[r].host >= 0 ? rpt_str(cm->rank[r].host) : NULL;
    hr[r].pid = cm->rank ? cm->rank[r].pid : -1;
    hr[r].strag = rpt_is_straggler(j, c, r);
  }
  return nstat;
}

/* Comm c's two per-rank maps, within the page's bound on cells. */
static void heat_maps(struct page *pg, int c) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  const struct rpt_comm *cm = &j->comms[c];
  if (cm->nranks < 2) return;
  if (pg->heat_cells + cm->nranks > MAX_HEAT_CELLS) {
    fprintf(f, "<p class=\"empty\">No per-rank maps: the page draws %d ranks at most, in all (the text and JSON "
               "outputs have every rank).</p>\n",
            MAX_HEAT_CELLS);
    return;
  }
  struct html_heat_rank *hr = calloc((size_t)cm->nranks, sizeof *hr);
  if (!hr) return;
  double late_max = 0, bw_max = 0;
  if (!heat_ranks(pg, c, hr, &late_max, &bw_max)) {
    fputs("<p class=\"empty\">No collective matched across ranks: no per-rank maps.</p>\n", f);
    free(hr);
    return;
  }
  struct html_heat_grid grid = {cm->nranks, cm->nnodes, cm->rank != NULL, c, hr};
  /* Full scale: the largest value, but at least the lateness threshold (launch skew below it
   * stays pale) and 1.25x for the ratio. */
  double floor_late = j->opt.late_ns / 1e3 > 1 ? j->opt.late_ns / 1e3 : 1;
  struct html_heat late = {"hl", "Median lateness per rank", "us after the other ranks' median start", late_us,
                           late_max > floor_late ? late_max : floor_late, 1, true};
  struct html_heat bw = {"hb", "Bus bandwidth per rank", "x the op's median busbw across ranks", bw_log2,
                         bw_max > log2(1.25) ? bw_max : log2(1.25), -1, false};
  pg->heat_cells += cm->nranks;
  fputs("<div class=\"charts\">\n", f);
  if (j->have_starts) html_heat_map(f, &grid, &late);
  else fputs("<p class=\"empty\">No GPU start times in the logs: no lateness.</p>\n", f);
  html_heat_map(f, &grid, &bw);
  fputs("</div>\n", f);
  free(hr);
}

/* A communicator's groups as a table, folded: the figures behind its charts. */
static void group_table(struct page *pg, int c) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32], d[32], e[32], g1[32], g2[32], sz[32];
  fprintf(f, "<details><summary>Figures (%d groups)</summary><table class=\"grid\"><thead><tr><th>op</th>"
             "<th class=\"n\">size</th><th class=\"n\">records</th><th class=\"n\">excluded</th>"
             "<th class=\"n\">time p50 / p95 / p99 (us)</th><th class=\"n\">busbw p10 / p50 / p90 (GB/s)</th>"
             "</tr></thead><tbody>\n",
          pg->comm_g1[c] - pg->comm_g0[c]);
  for (int i = pg->comm_g0[c]; i < pg->comm_g1[c]; i++) {
    const struct rpt_group *g = &j->groups[i];
    const struct html_gq *q = &pg->pts[i].q;
    uint64_t ex = 0;
    for (int k = 0; k < RPT_NEXCL; k++) ex += g->excluded[k];
    fputs("<tr><td>", f);
    html_text(f, rpt_str(g->op));
    fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
               "</td><td class=\"n\">%s / %s / %s</td><td class=\"n\">%s / %s / %s</td></tr>\n",
            rpt_human_bytes(g->bytes, sz, sizeof sz), g->records, ex, html_num(q->t50 / 1e3, a, sizeof a),
            html_num(q->t95 / 1e3, b, sizeof b), html_num(q->t99 / 1e3, d, sizeof d), html_num(q->b10, e, sizeof e),
            html_num(q->b50, g1, sizeof g1), html_num(q->b90, g2, sizeof g2));
  }
  fputs("</tbody></table></details>\n", f);
}

static void section_comm(struct page *pg, int c) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  const struct rpt_comm *cm = &j->comms[c];
  fprintf(f, "<section class=\"comm\" id=\"comm-%d\"><h2>", c);
  page_put_comm(f, j, c);
  fprintf(f, "</h2>\n<p class=\"mut\">%d ranks on %d node%s, %s; %" PRIu64 " records", cm->nranks, cm->nnodes,
          cm->nnodes == 1 ? "" : "s", rpt_kind_name(cm->kind), pg->comm_records[c]);
  if (cm->ranks_seen < cm->nranks) {
    fprintf(f, "; %d of the %d ranks seen", cm->ranks_seen, cm->nranks);
    if (cm->rank && cm->nranks - cm->ranks_seen <= 8) {
      fputs(" (no log from rank", f);
      for (int r = 0, k = 0; r < cm->nranks; r++)
        if (cm->rank[r].host < 0) fprintf(f, "%s %d", k++ ? "," : "", r);
      fputc(')', f);
    }
  }
  fputs("</p>\n", f);
  struct html_run r[MAX_RUNS];
  int nr = comm_runs(pg, c, r, MAX_RUNS);
  if (nr) {
    const struct html_size_pt *pts = pg->pts + pg->comm_g0[c];
    int n = pg->comm_g1[c] - pg->comm_g0[c];
    html_legend(f, pts, r, nr);
    fputs("<div class=\"charts\">\n", f);
    html_chart_busbw(f, pts, n, r, nr);
    html_chart_time(f, pts, n, r, nr);
    fputs("</div>\n", f);
  }
  heat_maps(pg, c);
  if (nr) group_table(pg, c);
  fputs("</section>\n", f);
}

/* ---------------------------------------------------------------- bandwidth over time */

static bool group_changed(const struct rpt_job *j, int g) {
  for (int i = 0; i < j->nchanges; i++)
    if (j->changes[i].group == g) return true;
  return false;
}

/* qsort has no context argument: the comparators read the page being written (one thread). */
static const struct page *g_pg;

/* Groups with a change first, then by records (most first), then in job order. */
static int cmp_series(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  const struct rpt_job *j = g_pg->j;
  bool ca = group_changed(j, a), cb = group_changed(j, b);
  if (ca != cb) return ca ? -1 : 1;
  if (j->groups[a].records != j->groups[b].records) return j->groups[a].records > j->groups[b].records ? -1 : 1;
  return a < b ? -1 : a > b;
}

static void chart_series(struct page *pg, int gi) {
  struct rpt_job *j = pg->j;
  const struct rpt_group *g = &j->groups[gi];
  struct html_series_chart sc = {
      .comm_name = g->comm >= 0 && g->comm < j->ncomms ? j->comms[g->comm].name : "?",
      .op = rpt_str(g->op),
      .bytes = g->bytes,
      .records = g->records,
      .group = gi,
      .s = &g->series,
      .changes = j->changes,
      .nchanges = j->nchanges,
  };
  html_chart_series(pg->f, &sc);
}

static void section_series(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  int *sel = malloc((size_t)(j->ngroups ? j->ngroups : 1) * sizeof *sel), n = 0;
  if (!sel) return;
  for (int g = 0; g < j->ngroups; g++) {
    const struct rpt_series *s = &j->groups[g].series;
    if (s->nbins >= 3 && s->count && s->sum_mbs && s->width_ns && html_nonempty_bins(s) >= 2) sel[n++] = g;
  }
  fputs("<section id=\"time\"><h2>Bandwidth over time</h2>\n", f);
  if (!n) {
    fputs("<p class=\"empty\">No group has records over several time bins.</p>\n", f);
  } else {
    g_pg = pg;
    qsort(sel, (size_t)n, sizeof *sel, cmp_series);
    g_pg = NULL;
    int shown = n < MAX_SERIES ? n : MAX_SERIES;
    fprintf(f, "<p class=\"mut\">Mean busbw per time bin; dashed red lines mark the changes. %d of %d groups with a "
               "series%s.</p>\n<div class=\"sm\">\n",
            shown, n, n > shown ? " (those with a change, then the most records)" : "");
    for (int k = 0; k < shown; k++) chart_series(pg, sel[k]);
    fputs("</div>\n", f);
  }
  fputs("</section>\n", f);
  free(sel);
}

/* ---------------------------------------------------------------- the page */

/* Communicators by records, most first (ties: job order). */
static int cmp_comm(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  uint64_t ra = g_pg->comm_records[a], rb = g_pg->comm_records[b];
  if (ra != rb) return ra > rb ? -1 : 1;
  return a < b ? -1 : a > b;
}

/* A group as a point of its communicator's charts: op, size, quantiles. */
static void group_point(struct rpt_group *gr, struct html_size_pt *p) {
  struct html_gq *q = &p->q;
  p->op = rpt_str(gr->op);
  p->p2p = gr->p2p;
  p->bytes = gr->bytes;
  q->nt = gr->time_ns.n;
  q->nb = gr->busbw.n;
  q->t10 = rpt_qs_quantile(&gr->time_ns, 0.10);
  q->t50 = rpt_qs_quantile(&gr->time_ns, 0.50);
  q->t95 = rpt_qs_quantile(&gr->time_ns, 0.95);
  q->t99 = rpt_qs_quantile(&gr->time_ns, 0.99);
  q->b10 = rpt_qs_quantile(&gr->busbw, 0.10);
  q->b50 = rpt_qs_quantile(&gr->busbw, 0.50);
  q->b90 = rpt_qs_quantile(&gr->busbw, 0.90);
}

static int page_model(struct page *pg) {
  struct rpt_job *j = pg->j;
  size_t nc = (size_t)(j->ncomms ? j->ncomms : 1), ng = (size_t)(j->ngroups ? j->ngroups : 1);
  pg->pts = calloc(ng, sizeof *pg->pts);
  pg->comm_g0 = calloc(nc, sizeof *pg->comm_g0);
  pg->comm_g1 = calloc(nc, sizeof *pg->comm_g1);
  pg->comm_records = calloc(nc, sizeof *pg->comm_records);
  if (!pg->pts || !pg->comm_g0 || !pg->comm_g1 || !pg->comm_records) return -1;
  for (int g = 0; g < j->ngroups; g++) group_point(&j->groups[g], &pg->pts[g]);
  /* groups are sorted by communicator: each one's run */
  for (int g = 0; g < j->ngroups;) {
    int c = j->groups[g].comm, k = g;
    while (k < j->ngroups && j->groups[k].comm == c) {
      if (c >= 0 && c < j->ncomms) pg->comm_records[c] += j->groups[k].records;
      k++;
    }
    if (c >= 0 && c < j->ncomms) {
      assert(pg->comm_g1[c] == 0 && "groups sorted by communicator (job.h): one run each");
      pg->comm_g0[c] = g;
      pg->comm_g1[c] = k;
    }
    g = k;
  }
  return 0;
}

/* The head of the page, its style and navigation; `first`: the communicator charted first (-1:
 * none). */
static void page_head(FILE *f, int first) {
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
             "<title>Inspector report</title>\n<style>%s</style></head>\n<body>\n",
          html_style);
  fputs("<header class=\"top\"><h1>Inspector report</h1><nav><a href=\"#input\">Input</a>"
        "<a href=\"#comms\">Communicators</a><a href=\"#findings\">Findings</a>",
        f);
  if (first >= 0) fprintf(f, "<a href=\"#comm-%d\">Charts</a>", first);
  fputs("<a href=\"#time\">Over time</a></nav></header>\n<main>\n", f);
}

static void page_foot(FILE *f) {
  fputs("<footer>Written by inspector-report. Times are GPU kernel times; busbw in GB/s (10<sup>9</sup> bytes/s); "
        "sizes in binary units.</footer>\n</main>\n<div id=\"tip\"></div>\n<script>",
        f);
  fputs(html_script, f);
  fputs("</script>\n</body></html>\n", f);
}

int rpt_write_html(struct rpt_job *j, const char *path) {
  int rc = -1;
  struct page pg = {.j = j};
  int *order = NULL;
  struct rpt_outfile o; /* never through a link planted at path (out.h) */
  FILE *f = rpt_out_open(&o, path);
  if (!f) return -1;
  pg.f = f;
  order = malloc((size_t)(j->ncomms ? j->ncomms : 1) * sizeof *order);
  if (!order || page_model(&pg) < 0) {
    fprintf(stderr, "inspector-report: out of memory writing %s\n", path);
    goto fail;
  }
  for (int c = 0; c < j->ncomms; c++) order[c] = c;
  g_pg = &pg;
  qsort(order, (size_t)j->ncomms, sizeof *order, cmp_comm);
  g_pg = NULL;

  page_head(f, j->ncomms ? order[0] : -1);
  section_input(&pg);
  section_comms(&pg, order);
  page_findings(&pg);
  for (int k = 0; k < j->ncomms && k < MAX_COMM_SECTIONS; k++) section_comm(&pg, order[k]);
  section_series(&pg);
  page_foot(f);
  rc = 0;
fail:
  free(order);
  free(pg.pts);
  free(pg.comm_g0);
  free(pg.comm_g1);
  free(pg.comm_records);
  free(pg.name_shared);
  return rpt_out_close(&o, rc);
}
