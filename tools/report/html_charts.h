/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_charts.h - the HTML page's charts, as inline SVG figures: a communicator's bus
 * bandwidth and time against message size, its per-rank heat maps, and one group's
 * bandwidth over time.
 *
 * Owns: what each chart draws from the figures it is handed, its size, scales, marks and
 * tooltips, built from the drawing kit (html_svg.h). A chart takes plain arrays and
 * structs: the points of one communicator, the ranks of one map, one series; the few
 * model types it reads (a rank's figures, a series, a change: job.h) are the ones it
 * draws, not the job.
 *
 * Does not own: which communicators, groups or ranks are drawn, in which order, or the
 * page's bounds (out_html.c); the figures themselves (the analyses, job.h), which a chart
 * prints and never computes, beyond a pixel.
 */
#ifndef RPT_HTML_CHARTS_H
#define RPT_HTML_CHARTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"

/* Quantiles of one group, computed once (a sketch's quantile sorts it). */
struct html_gq {
  double t10, t50, t95, t99; /* ns */
  double b10, b50, b90;      /* GB/s */
  uint64_t nt, nb;           /* records with a time, with a bandwidth */
};

/* One (op, size) of a communicator: a point of its charts. */
struct html_size_pt {
  const char *op; /* its name (unescaped) */
  bool p2p;
  uint64_t bytes;
  struct html_gq q;
};

/* A run of points of one op: one line on the charts, points [i0, i1), by size. */
struct html_run {
  int i0, i1;
};

/* The colour key of the runs: op names, "(P2P)" for P2P. */
void html_legend(FILE *f, const struct html_size_pt *pts, const struct html_run *r, int nr);

/* A communicator's points [0, n) in runs r[0, nr) (nr >= 1): bus bandwidth against size (p10-p90
 * band, p50 line and points), and time against size (box p50-p95, whisker p10-p99, log scale).
 * Each is one <figure>, its "no data" line when no point has the figure. */
void html_chart_busbw(FILE *f, const struct html_size_pt *pts, int n, const struct html_run *r, int nr);
void html_chart_time(FILE *f, const struct html_size_pt *pts, int n, const struct html_run *r, int nr);

/* One rank of a heat map. */
struct html_heat_rank {
  const struct rpt_rank_stat *stat; /* its figures; NULL: no op matched */
  const char *host;                 /* NULL: unknown */
  long long pid;                    /* shown with the host; < 0: unknown */
  bool strag;                       /* named a straggler: outlined */
};

/* The ranks of one communicator's maps. */
struct html_heat_grid {
  int nranks, nnodes;
  bool hosts_known; /* the communicator knows its ranks' hosts: rows may be labelled by node */
  int key;          /* makes the maps' SVG ids unique on the page (the communicator's index) */
  const struct html_heat_rank *rank; /* [nranks] */
};

/* What one map shows. */
struct html_heat {
  const char *id, *title, *unit;                 /* the caller's constants, written as they are */
  double (*value)(const struct rpt_rank_stat *); /* NAN: no value */
  double scale;                                  /* the colour's full scale (|value|) */
  int sign;                                      /* +1: higher is worse (red); -1: lower is worse */
  bool late;                                     /* lateness (else busbw ratio, drawn as log2) */
};

/* One <figure>: a cell per rank, rows by node when the layout allows, a colour legend. */
void html_heat_map(FILE *f, const struct html_heat_grid *g, const struct html_heat *h);

/* One <figure>: a slow link's group node by node (struct rpt_link_matrix): a cell per direction,
 * from the row's host to the column's, coloured by its busbw over the median link (log2), those
 * below slow_ratio outlined, with the ratio written in when the cells are large enough. */
void html_link_matrix(FILE *f, const struct rpt_link_matrix *m, const char *comm_name, double slow_ratio);

/* Bins of s with records. */
int html_nonempty_bins(const struct rpt_series *s);

/* One group's bandwidth over time. */
struct html_series_chart {
  const char *comm_name, *op; /* unescaped; the name shown cut to 28 characters */
  uint64_t bytes, records;
  int group;                          /* its index: the changes of this group are marked */
  const struct rpt_series *s;         /* nbins > 0, count and sum_mbs set */
  const struct rpt_change *changes;   /* the job's, [nchanges] */
  int nchanges;
};

/* One <figure>: mean busbw per bin (a line through the bins with records, points when few),
 * the group's changes as dashed lines. */
void html_chart_series(FILE *f, const struct html_series_chart *c);

#endif /* RPT_HTML_CHARTS_H */
