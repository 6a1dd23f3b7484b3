/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_findings.c - the report page's findings (see out_html.c, html_page.h): stuck ops,
 * stragglers and missing ranks, slow links and nodes, bandwidth changes, each a table of
 * what the text and JSON outputs print too, its evidence beside it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_charts.h"
#include "html_page.h"
#include "html_svg.h"
#include "out.h"

static int cmp_comm_name(const void *a, const void *b, void *arg) {
  const struct rpt_job *j = arg;
  return strcmp(j->comms[*(const int *)a].name, j->comms[*(const int *)b].name);
}

/* Does another communicator of the job have c's name ("unknown" often does)? Computed
 * once per page: the communicators sorted by name, neighbours compared. */
static bool name_shared(struct page *pg, int c) {
  const struct rpt_job *j = pg->j;
  if (!pg->names_compared) {
    pg->name_shared = calloc((size_t)j->ncomms + 1, sizeof *pg->name_shared);
    int *ix = malloc(((size_t)j->ncomms + 1) * sizeof *ix);
    if (pg->name_shared && ix) {
      for (int i = 0; i < j->ncomms; i++) ix[i] = i;
      qsort_r(ix, (size_t)j->ncomms, sizeof *ix, cmp_comm_name, (void *)j);
      for (int i = 1; i < j->ncomms; i++)
        if (!strcmp(j->comms[ix[i]].name, j->comms[ix[i - 1]].name))
          pg->name_shared[ix[i]] = pg->name_shared[ix[i - 1]] = true;
    }
    free(ix);
    pg->names_compared = true;
  }
  return pg->name_shared && pg->name_shared[c];
}

/* The name alone, its id in a tooltip: for tables, where the full form repeats on every row;
 * with its id shown when another communicator has the same name. */
static void put_comm_short(struct page *pg, int c) {
  FILE *f = pg->f;
  const struct rpt_job *j = pg->j;
  if (c < 0 || c >= j->ncomms) {
    fputs("?", f);
    return;
  }
  fprintf(f, "<span data-tip=\"0x%" PRIx64 "\">", j->comms[c].id);
  html_text(f, j->comms[c].name);
  if (name_shared(pg, c)) fprintf(f, " <span class=\"mut\">(0x%" PRIx64 ")</span>", j->comms[c].id);
  fputs("</span>", f);
}

static void put_host(FILE *f, int host) {
  if (host < 0) fputs("?", f);
  else html_text(f, rpt_str(host));
}

/* ---------------------------------------------------------------- the findings */

/* A finding's evidence cell: "k of n units", then its confidence ("not enough data": below the
 * minimum). */
static void put_evidence(FILE *f, uint64_t k, uint64_t n, const char *units, const char *conf) {
  fprintf(f, "<td class=\"n ev\">%" PRIu64 " of %" PRIu64 " %s</td><td>%s</td>", k, n, units, conf);
}

/* A late rank's row of the straggler table (named, or too few ops). */
static void straggler_row(struct page *pg, const struct rpt_straggler *s) {
  FILE *f = pg->f;
  char a[32], b[32], d[32], e[32], sz[32];
  const struct rpt_rank_stat *st = s->stat;
  struct rpt_late_judge tmp;
  const struct rpt_late_judge *g = rpt_straggler_judge(s, &tmp);
  fputs("<tr><td>", f);
  put_comm_short(pg, s->comm);
  fprintf(f, "</td><td class=\"n\">%d</td><td>", s->rank);
  put_host(f, s->host); /* host and pid in one cell: the table fits 1,400 px (test_report_shapes) */
  if (s->pid >= 0) fprintf(f, " <span class=\"mut\">pid %lld</span></td>", s->pid);
  else fputs(" <span class=\"mut\">pid ?</span></td>", f);
  fprintf(f, "<td>%s, ", s->p2p ? "Send/Recv" : "collectives");
  if (g->onset_window)
    fprintf(f, "from window %d of %d</td>", g->onset_window + 1, g->windows);
  else
    fputs("from the start</td>", f);
  fprintf(f, "<td class=\"n\">%s</td>", html_pct(g->share, a, sizeof a));
  if (!s->p2p && st && st->ops) {
    fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s vs %s</td><td>",
            html_pct((double)st->last_ops / (double)st->ops, b, sizeof b), html_num(g->late_med_ns / 1e3, d, sizeof d),
            html_num(st->med_exec_ns / 1e3, e, sizeof e), html_num(st->others_med_exec_ns / 1e3, sz, sizeof sz));
    if (st->top_op >= 0) {
      html_text(f, rpt_str(st->top_op));
      fprintf(f, " <span class=\"mut\">(late in %s)</span>", html_pct(st->top_op_share, a, sizeof a));
    }
    fputs("</td>", f);
  } else {
    fprintf(f, "<td class=\"n\">-</td><td class=\"n\">%s</td><td class=\"n\">-</td><td>-</td>",
            html_num(g->late_med_ns / 1e3, d, sizeof d));
  }
  put_evidence(f, g->since_late, g->since_ops, s->p2p ? "transfers late" : "ops late",
               g->verdict == RPT_LATE_NAMED ? rpt_conf_name(g->conf) : "not enough data");
  fputs("</tr>\n", f);
}

/* A table of late ranks: the named ones, or those late on too few ops. */
static void straggler_table(struct page *pg, const struct rpt_straggler *s, int n) {
  FILE *f = pg->f;
  /* headers at most 150 px ("wrap"; every grid header may wrap): on one line the table was 1,460 px wide */
  fputs("<table class=\"grid wrap\"><thead><tr><th>communicator</th><th class=\"n\">rank</th><th>process</th>"
        "<th>late in</th><th class=\"n\">late share since</th><th class=\"n\">last share</th>"
        "<th class=\"n\">median lateness when late (us)</th><th class=\"n\">exec p50 (us) vs others</th>"
        "<th>top op</th><th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
        f);
  for (int i = 0; i < n; i++) straggler_row(pg, &s[i]);
  fputs("</tbody></table>\n", f);
}

/* Ranks with no log that the others wait for (job.h, struct rpt_missing). */
static void missing_table(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32], d[32];
  fputs("<p>Likely stragglers with <b>no log</b>: the others wait for them in their kernels.</p>\n"
        "<table class=\"grid wrap\"><thead><tr><th>communicator</th><th class=\"n\">rank</th><th>measured on</th>"
        "<th class=\"n\">late (us, median)</th><th class=\"n\">wait of the last to start (us) vs whole "
        "communicators</th><th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
        f);
  for (int i = 0; i < j->nmissing; i++) {
    const struct rpt_missing *m = &j->missing[i];
    fputs("<tr><td>", f);
    put_comm_short(pg, m->comm);
    fprintf(f, "</td><td class=\"n\">%d <span class=\"mut\">(no log)</span></td><td>", m->rank);
    put_comm_short(pg, m->via);
    fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%s vs %s</td>", html_num(m->late_med_ns / 1e3, a, sizeof a),
            html_num(m->wait_med_ns / 1e3, b, sizeof b), html_num(m->ref_ns / 1e3, d, sizeof d));
    put_evidence(f, m->waited_ops, m->ops, "ops waited", rpt_conf_name(m->conf));
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void findings_stragglers(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32];
  fputs("<h3 id=\"stragglers\">Stragglers</h3>\n", f);
  if (j->nmissing) missing_table(pg);
  if (!j->nstragglers && j->nmissing) {
    fputs("<p class=\"mut\">No rank with a log is late.</p>\n", f);
  } else if (!j->nstragglers) {
    fprintf(f, "<p class=\"ok\">None: no rank started %s us or more after the others in %s of its ops since it "
               "became late.</p>\n",
            html_num((j->have_starts ? j->late_threshold_ns : j->opt.late_ns) / 1e3, a, sizeof a),
            html_pct(j->opt.late_share, b, sizeof b));
  } else {
    straggler_table(pg, j->stragglers, j->nstragglers);
  }
  if (j->nfew_stragglers) {
    fprintf(f, "<p class=\"mut\">Not enough data (late by the rule in fewer than %d ops, not named):</p>\n",
            RPT_MIN_LATE_OPS);
    straggler_table(pg, j->few_stragglers, j->nfew_stragglers);
  }
}

/* A link's (op, size) groups, folded: its cell of the link table. */
static void link_groups(FILE *f, const struct rpt_link *l) {
  char a[32], b[32], sz[32];
  fprintf(f, "<details><summary>%d (op, size) group%s</summary><table class=\"grid\"><tr><th>op</th>"
             "<th class=\"n\">size</th><th class=\"n\">busbw p50</th><th class=\"n\">class p50</th>"
             "<th class=\"n\">samples</th><th class=\"n\">links compared</th></tr>",
          l->nfind, l->nfind == 1 ? "" : "s");
  for (int k = 0; k < l->nfind; k++) {
    const struct rpt_link_finding *x = &l->find[k];
    fputs("<tr><td>", f);
    html_text(f, rpt_str(x->op));
    fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
               "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%d</td></tr>",
            rpt_human_bytes(x->bytes, sz, sizeof sz), html_num(x->busbw_p50, a, sizeof a),
            html_num(x->class_p50, b, sizeof b), x->samples, x->class_links);
  }
  fputs("</table></details></td>", f);
}

/* A link's row: its worst (op, size) in view; `few`: on too few transfers to be named. */
static void link_row(struct page *pg, const struct rpt_link *l, bool few) {
  FILE *f = pg->f;
  char a[32], b[32], d[32], sz[32];
  const struct rpt_link_finding *w = NULL;
  for (int k = 0; k < l->nfind; k++)
    if (l->find[k].class_p50 > 0 &&
        (!w || l->find[k].busbw_p50 / l->find[k].class_p50 < w->busbw_p50 / w->class_p50))
      w = &l->find[k];
  fputs("<tr><td>", f);
  if (l->host < 0) {
    fputs("<span class=\"nw\">", f); /* a host name is not broken at its hyphen */
    put_host(f, l->a);
    fputs(l->one_way ? "</span> &rarr; <span class=\"nw\">" : "</span> &harr; <span class=\"nw\">", f);
    put_host(f, l->b);
    fputs("</span>", f);
  } else {
    fprintf(f, "rank %d %s rank %d on ", l->a, l->one_way ? "&rarr;" : "&harr;", l->b);
    put_host(f, l->host);
  }
  fputs("</td><td>", f);
  put_comm_short(pg, w ? w->comm : l->comm);
  fputs("</td><td>", f);
  if (w) {
    html_text(f, rpt_str(w->op));
    fprintf(f, " %s</td><td class=\"n\">%s vs %s</td>", rpt_human_bytes(w->bytes, sz, sizeof sz),
            html_num(w->busbw_p50, a, sizeof a), html_num(w->class_p50, b, sizeof b));
  } else {
    fputs("-</td><td class=\"n\">-</td>", f);
  }
  fprintf(f, "<td class=\"n\">%s</td><td>", html_num(l->worst_ratio, d, sizeof d));
  link_groups(f, l);
  put_evidence(f, (uint64_t)l->pairs_below, (uint64_t)l->pairs, "rank pairs below",
               few ? "not enough data" : rpt_conf_name(l->conf));
  fputs("</tr>\n", f);
}

static void findings_links(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32];
  fputs("<h3 id=\"links\">Slow links</h3>\n", f);
  if (!j->nlinks) {
    fprintf(f, "<p class=\"ok\">None below %s x the median link of their class.</p>\n",
            html_num(j->opt.slow_link_ratio, a, sizeof a));
  }
  if (j->nlinks || j->nfew_links) { /* those on too few transfers too, as "not enough data" */
    /* a row per link, its worst (op, size) in view; every (op, size) folded below it */
    fputs("<table class=\"grid\"><thead><tr><th>link</th><th>communicator</th><th>worst</th>"
          "<th class=\"n\">busbw p50 vs its class (GB/s)</th><th class=\"n\">ratio</th><th>slow in</th>"
          "<th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
          f);
    for (int i = 0; i < j->nlinks + j->nfew_links; i++)
      link_row(pg, i < j->nlinks ? &j->links[i] : &j->few_links[i - j->nlinks], i >= j->nlinks);
    fputs("</tbody></table>\n", f);
  }
  if (j->nlink_matrices) { /* where the slow links are, node by node */
    fputs("<div class=\"charts\">\n", f);
    for (int i = 0; i < j->nlink_matrices; i++)
      html_link_matrix(f, &j->link_matrices[i], j->comms[j->link_matrices[i].comm].name, j->opt.slow_link_ratio);
    fputs("</div>\n", f);
  }
}

static void findings_nodes(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32];
  fputs("<h3 id=\"nodes\">Slow nodes</h3>\n", f);
  if (!j->nslow_nodes) {
    fputs("<p class=\"ok\">None: no node all of whose links are slow.</p>\n", f);
    return;
  }
  fputs("<table class=\"grid\"><thead><tr><th>host</th><th class=\"n\">slow links</th><th class=\"n\">worst "
        "ratio</th><th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
        f);
  for (int i = 0; i < j->nslow_nodes; i++) {
    fputs("<tr><td>", f);
    put_host(f, j->slow_nodes[i].host);
    fprintf(f, "</td><td class=\"n\">%d</td><td class=\"n\">%s</td>", j->slow_nodes[i].links,
            html_num(j->slow_nodes[i].worst_ratio, a, sizeof a));
    put_evidence(f, (uint64_t)j->slow_nodes[i].pairs_below, (uint64_t)j->slow_nodes[i].pairs, "rank pairs below",
                 rpt_conf_name(j->slow_nodes[i].conf));
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

/* A change's row (its group valid). */
static void change_row(struct page *pg, const struct rpt_change *ch) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32], d[32], sz[32];
  const struct rpt_group *g = &j->groups[ch->group];
  fputs("<tr><td>", f);
  put_comm_short(pg, g->comm);
  fputs("</td><td>", f);
  html_text(f, rpt_str(g->op));
  fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%.3f</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
             "<td class=\"n\">%s</td>",
          rpt_human_bytes(g->bytes, sz, sizeof sz),
          ch->t_ns > g->series.t0_ns ? (double)(ch->t_ns - g->series.t0_ns) / 1e9 : 0.0,
          html_num(ch->before_gbs, a, sizeof a), html_num(ch->after_gbs, b, sizeof b),
          html_num(ch->before_gbs > 0 ? ch->after_gbs / ch->before_gbs : NAN, d, sizeof d));
  put_evidence(f, (uint64_t)(ch->agree_before + ch->agree_after), (uint64_t)(ch->bins_before + ch->bins_after),
               "time bins on their side", rpt_conf_name(ch->conf));
  fputs("</tr>\n", f);
}

static void findings_changes(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32];
  fputs("<h3 id=\"changes\">Bandwidth changes</h3>\n", f);
  if (!j->nchanges) {
    fprintf(f, "<p class=\"ok\">None by %s x or more within a group.</p>\n",
            html_num(j->opt.change_ratio, a, sizeof a));
    return;
  }
  /* the first few in view, the others folded: the small multiples below show them too */
  const int shown = 6;
  for (int i = 0; i < j->nchanges; i++) {
    if (i == 0 || i == shown) {
      if (i == shown) fprintf(f, "</tbody></table>\n<details><summary>%d more</summary>", j->nchanges - shown);
      fputs("<table class=\"grid\"><thead><tr><th>communicator</th><th>op</th><th class=\"n\">size</th>"
            "<th class=\"n\">at (s since the group's first bin)</th><th class=\"n\">before (GB/s)</th>"
            "<th class=\"n\">after (GB/s)</th><th class=\"n\">ratio</th><th class=\"n\">evidence</th>"
            "<th>confidence</th></tr></thead><tbody>\n",
            f);
    }
    const struct rpt_change *ch = &j->changes[i];
    if (ch->group >= 0 && ch->group < j->ngroups) change_row(pg, ch);
  }
  fputs(j->nchanges > shown ? "</tbody></table></details>\n" : "</tbody></table>\n", f);
}

/* ---------------------------------------------------------------- hangs */

#define HANG_ROWS 1024 /* rows per stuck op's table (a state's rows, the waiting ones folded) */

static void put_hang_op(FILE *f, const struct rpt_hang *h) {
  char sz[32];
  html_text(f, rpt_str(h->op));
  fprintf(f, " #%" PRIu64, h->sn);
  if (h->bytes >= 0) fprintf(f, " (%s)", rpt_human_bytes((uint64_t)h->bytes, sz, sizeof sz));
}

/* A rank's row of a stuck op's table. */
static void hang_rank_row(FILE *f, const struct rpt_hang_rank *r) {
  char a[32];
  fprintf(f, "<tr><td class=\"n\">%d</td><td class=\"%s\">%s</td><td>", r->rank,
          r->state == RPT_HS_MISSING ? "bad" : r->state == RPT_HS_QUEUED ? "warn" : "mut",
          rpt_hang_state_name(r->state));
  put_host(f, r->host);
  if (r->pid >= 0) fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">", r->pid);
  else fputs("</td><td class=\"n\">?</td><td class=\"n\">", f);
  const struct rpt_hang_row *w = r->row && r->state != RPT_HS_COMPLETED ? r->row : r->own;
  if (w && w->in_flight_s >= 0) fputs(html_num(w->in_flight_s, a, sizeof a), f);
  else fputs("-", f);
  fputs("</td><td>", f);
  if (r->own) {
    fputs("its own ", f);
    html_text(f, rpt_str(r->own->op));
    fprintf(f, " #%" PRIu64 " towards rank %d; ", r->own->sn, r->own->peer);
  } else if (w && w->peer >= 0) {
    fprintf(f, "peer %d; ", w->peer);
  }
  if (r->stuck_in) {
    fputs("stuck in ", f);
    html_text(f, rpt_str(r->stuck_in->op));
    fprintf(f, " #%" PRIu64 "; ", r->stuck_in->sn);
  }
  if (r->last.op >= 0) {
    fputs("last op ", f);
    html_text(f, rpt_str(r->last.op));
    fprintf(f, " #%" PRIu64, r->last.sn);
    if (isfinite(r->last_op_age_s))
      fprintf(f, ", %s%s s ago", r->last_op_age_exact ? "" : "at least ", html_num(r->last_op_age_s, a, sizeof a));
  } else {
    fputs("no op completed in its log", f);
  }
  fputs("</td><td>", f);
  if (r->state == RPT_HS_MISSING && r->alive == 1) fputs("<span class=\"ok\">live</span>", f);
  else if (r->state == RPT_HS_MISSING && r->alive == 0) fputs("<span class=\"bad\">stopped before the hang: died or froze</span>", f);
  if (isfinite(r->last_line_age_s)) fprintf(f, " <span class=\"mut\">last line %s s ago</span>", html_num(r->last_line_age_s, a, sizeof a));
  fputs("</td></tr>\n", f);
}

static void hang_table_head(FILE *f) {
  fputs("<table class=\"grid\"><thead><tr><th class=\"n\">rank</th><th>state</th><th>host</th><th class=\"n\">pid</th>"
        "<th class=\"n\">in flight (s)</th><th>its ops</th><th>its log</th></tr></thead><tbody>\n",
        f);
}

/* One stuck op: what it is, who holds it up; the ranks that are not waiting in view, the waiting ones folded. */
static void hang_block(struct page *pg, const struct rpt_hang *h) {
  FILE *f = pg->f;
  char a[32];
  const int *n = h->count;
  fprintf(f, "<p class=\"%s\"><b>%s</b> ", h->resolved ? "ok" : "bad", h->resolved ? "Resolved:" : "Stuck:");
  put_hang_op(f, h);
  fputs(" of ", f);
  page_put_comm(f, pg->j, h->comm);
  if (h->resolved) {
    fprintf(f, ", stuck for up to %s s on %d rank%s, then completed.</p>\n", html_num(h->stuck_s, a, sizeof a),
            n[RPT_HS_COMPLETED], n[RPT_HS_COMPLETED] == 1 ? "" : "s");
    return;
  }
  fprintf(f, ", stuck for %s s: %d waiting inside its kernel, %d queued (kernel never started), %d never issued "
             "it, %d completed, %d unknown (no log).</p>\n",
          html_num(h->stuck_s, a, sizeof a), n[RPT_HS_WAITING], n[RPT_HS_QUEUED], n[RPT_HS_MISSING],
          n[RPT_HS_COMPLETED], n[RPT_HS_UNKNOWN]);
  hang_table_head(f);
  int rows = 0;
  for (int i = 0; i < h->nranks; i++)
    if (h->ranks[i].state != RPT_HS_WAITING && h->ranks[i].state != RPT_HS_COMPLETED && rows++ < HANG_ROWS)
      hang_rank_row(f, &h->ranks[i]);
  if (rows > HANG_ROWS) fprintf(f, "<tr><td colspan=\"7\" class=\"mut\">and %d more</td></tr>\n", rows - HANG_ROWS);
  if (h->nunknown) {
    fputs("<tr><td class=\"n\">", f);
    for (int i = 0; i < h->nunknown && i < HANG_ROWS; i++) {
      fprintf(f, "%s%d", i ? ", " : "", h->unknown[i].lo);
      if (h->unknown[i].hi > h->unknown[i].lo) fprintf(f, "-%d", h->unknown[i].hi);
    }
    if (h->nunknown > HANG_ROWS) fputs(", ...", f);
    fputs("</td><td class=\"bad\">unknown</td><td colspan=\"5\" class=\"mut\">no line on this communicator: "
          "no log, or not copied</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (n[RPT_HS_WAITING] + n[RPT_HS_COMPLETED]) {
    fprintf(f, "<details><summary>%d waiting, %d completed</summary>", n[RPT_HS_WAITING], n[RPT_HS_COMPLETED]);
    hang_table_head(f);
    rows = 0;
    for (int i = 0; i < h->nranks; i++)
      if ((h->ranks[i].state == RPT_HS_WAITING || h->ranks[i].state == RPT_HS_COMPLETED) && rows++ < HANG_ROWS)
        hang_rank_row(f, &h->ranks[i]);
    if (rows > HANG_ROWS) fprintf(f, "<tr><td colspan=\"7\" class=\"mut\">and %d more</td></tr>\n", rows - HANG_ROWS);
    fputs("</tbody></table></details>\n", f);
  }
}

static void findings_hangs(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  fputs("<h3 id=\"hangs\">Hangs</h3>\n", f);
  if (!j->nhangs) {
    fputs("<p class=\"ok\">None: no op in flight past the plugin's hang threshold in these logs (no hang "
          "line).</p>\n", f);
    return;
  }
  for (int i = 0; i < j->nhangs; i++)
    if (!j->hangs[i].resolved) hang_block(pg, &j->hangs[i]);
  for (int i = 0; i < j->nhangs; i++)
    if (j->hangs[i].resolved) hang_block(pg, &j->hangs[i]);
  fputs("<p class=\"mut\">Ages count back from the newest line of these logs.</p>\n", f);
}

void page_findings(struct page *pg) {
  fputs("<section id=\"findings\"><h2>Findings</h2>\n", pg->f);
  findings_hangs(pg);
  findings_stragglers(pg);
  findings_links(pg);
  findings_nodes(pg);
  findings_changes(pg);
  fputs("</section>\n", pg->f);
}
