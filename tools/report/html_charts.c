/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_charts.c - the HTML page's charts (html_charts.h), drawn with html_svg.h.
 *
 * Owns: each chart's geometry (sizes in pixels, margins, cell sizes), its marks and its
 * tooltips. The sizes are the page's: a chart of a communicator is 560 x 300, two side by
 * side; a heat map stays about 450 px wide, two side by side in the page's 1,232 px; a
 * small multiple of bandwidth over time is 340 x 190, a grid of them.
 *
 * Does not own: the selection, order or bounds of what is drawn, nor the page's text around
 * the charts (out_html.c). Tooltips are data-tip attributes; the page's script shows them.
 */
#include "html_charts.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "html_svg.h"
#include "out.h"

void html_legend(FILE *f, const struct html_size_pt *pts, const struct html_run *r, int nr) {
  fputs("<div class=\"legend\">", f);
  for (int i = 0; i < nr; i++) {
    const struct html_size_pt *p = &pts[r[i].i0];
    fprintf(f, "<span><i style=\"background:%s\"></i>", html_colour(i));
    html_text(f, p->op);
    if (p->p2p) fputs(" <span class=\"mut\">(P2P)</span>", f);
    fputs("</span>", f);
  }
  fputs("</div>\n", f);
}

/* ---------------------------------------------------------------- against message size */

/* The x scale of the points' sizes (a size of 0 taken as 1 byte). */
static void sizes_scale(const struct html_size_pt *pts, int n, struct html_scale *x, const struct html_frame *fr) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < n; i++) {
    uint64_t b = pts[i].bytes ? pts[i].bytes : 1;
    lo = b < lo ? b : lo;
    hi = b > hi ? b : hi;
  }
  /* a margin of a third of an octave each side keeps the end points off the frame */
  x->lo = (double)lo / 1.26;
  x->hi = (double)hi * 1.26;
  x->log = true;
  x->p0 = fr->l;
  x->p1 = fr->w - fr->r;
}

/* Runs with the same values (a Send and its Recv measure one transfer) would draw one line
 * over the other: every run after the first is dashed, longer dashes for later runs, and its
 * points are rings around the earlier ones' dots, so each shows through. */
static void run_dash(FILE *f, int k) {
  if (k > 0) fprintf(f, " stroke-dasharray=\"%d %d\"", 4 + 3 * k, 4);
}

/* One run's p10-p90 band (p90 left to right, then p10 back) and its p50 line. */
static void busbw_band(FILE *f, const struct html_size_pt *pts, const struct html_run *r, int k, const char *col,
                       const struct html_scale *x, const struct html_scale *y) {
  fprintf(f, "<polygon class=\"band\" fill=\"%s\" points=\"", col);
  for (int i = r->i0; i < r->i1; i++)
    if (pts[i].q.nb) fprintf(f, "%.1f,%.1f ", html_px(x, (double)pts[i].bytes), html_px(y, pts[i].q.b90));
  for (int i = r->i1 - 1; i >= r->i0; i--)
    if (pts[i].q.nb) fprintf(f, "%.1f,%.1f ", html_px(x, (double)pts[i].bytes), html_px(y, pts[i].q.b10));
  fputs("\"/>\n", f);
  fprintf(f, "<polyline class=\"line\" stroke=\"%s\"", col);
  run_dash(f, k);
  fputs(" points=\"", f);
  for (int i = r->i0; i < r->i1; i++)
    if (pts[i].q.nb) fprintf(f, "%.1f,%.1f ", html_px(x, (double)pts[i].bytes), html_px(y, pts[i].q.b50));
  fputs("\"/>\n", f);
}

/* One run's p50 points, with their tooltips; a lone point gets its band as a whisker. */
static void busbw_points(FILE *f, const struct html_size_pt *pts, const struct html_run *r, int k, int npts,
                         const char *col, const struct html_scale *x, const struct html_scale *y) {
  char a[32], b[32], d[32], sz[32];
  for (int i = r->i0; i < r->i1; i++) {
    const struct html_gq *q = &pts[i].q;
    if (!q->nb) continue;
    double px = html_px(x, (double)pts[i].bytes);
    if (npts == 1) /* a lone size: its band as a whisker */
      fprintf(f, "<line stroke=\"%s\" stroke-width=\"2\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col,
              px, html_px(y, q->b10), px, html_px(y, q->b90));
    if (k == 0)
      fprintf(f, "<circle class=\"pt\" fill=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" data-tip=\"", col, px,
              html_px(y, q->b50));
    else /* a ring, wider for later runs (run_dash) */
      fprintf(f, "<circle class=\"pt ring\" style=\"stroke:%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" data-tip=\"",
              col, px, html_px(y, q->b50), 3.5 + 2.5 * (k < 4 ? k : 4));
    html_text(f, pts[i].op);
    fprintf(f, " %s: busbw p50 %s GB/s (p10 %s, p90 %s), %" PRIu64 " records\"/>\n",
            rpt_human_bytes(pts[i].bytes, sz, sizeof sz), html_num(q->b50, a, sizeof a),
            html_num(q->b10, b, sizeof b), html_num(q->b90, d, sizeof d), q->nb);
  }
}

void html_chart_busbw(FILE *f, const struct html_size_pt *pts, int n, const struct html_run *r, int nr) {
  struct html_frame fr = {560, 300, 56, 16, 14, 40};
  double ymax = 0;
  for (int i = 0; i < n; i++)
    if (pts[i].q.nb && pts[i].q.b90 > ymax) ymax = pts[i].q.b90;
  fputs("<figure><figcaption>Bus bandwidth by message size <span class=\"mut\">p50 line, p10&ndash;p90 "
        "band</span></figcaption>\n",
        f);
  if (!(ymax > 0)) {
    fputs("<p class=\"empty\">No kept record with a bandwidth.</p></figure>\n", f);
    return;
  }
  struct html_scale x, y = {0, 0, false, fr.h - fr.b, fr.t};
  sizes_scale(pts, n, &x, &fr);
  double step = html_nice_step(ymax * 1.05 / 5);
  y.hi = step * ceil(ymax * 1.05 / step);
  html_svg_open(f, &fr, "Bus bandwidth (GB/s) against message size");
  html_axis_y(f, &fr, &y, "busbw (GB/s)");
  html_axis_bytes(f, &fr, &x);
  for (int k = 0; k < nr; k++) {
    const char *col = html_colour(k);
    int npts = 0;
    for (int i = r[k].i0; i < r[k].i1; i++) npts += pts[i].q.nb > 0;
    if (npts > 1) busbw_band(f, pts, &r[k], k, col, &x, &y);
    busbw_points(f, pts, &r[k], k, npts, col, &x, &y);
  }
  fputs("</svg></figure>\n", f);
}

/* The time axis: decades around the points' p10 (p50 where p10 is 0) to p99, in us; false
 * when no point has a time. */
static bool time_scale(const struct html_size_pt *pts, int n, struct html_scale *y, const struct html_frame *fr) {
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < n; i++) {
    const struct html_gq *q = &pts[i].q;
    if (!q->nt) continue;
    double l = (q->t10 > 0 ? q->t10 : q->t50) / 1e3, h = q->t99 / 1e3;
    if (l > 0 && l < lo) lo = l;
    if (h > hi) hi = h;
  }
  if (!(hi > 0) || !isfinite(lo)) return false;
  *y = (struct html_scale){pow(10, floor(log10(lo))), pow(10, ceil(log10(hi))), true, fr->h - fr->b, fr->t};
  if (y->hi <= y->lo) y->hi = y->lo * 10;
  return true;
}

/* The width of a box: the boxes of the ops side by side at one size, as wide as the closest
 * sizes allow, 3 to 14 px. */
static double box_width(const struct html_size_pt *pts, int n, int nr, const struct html_scale *x,
                        const struct html_frame *fr) {
  double gap = fr->w;
  for (int i = 0; i + 1 < n; i++)
    for (int k = i + 1; k < n; k++) {
      double dx = fabs(html_px(x, (double)pts[k].bytes) - html_px(x, (double)pts[i].bytes));
      if (dx > 0.5 && dx < gap) gap = dx;
    }
  double bw = gap * 0.8 / nr;
  return bw > 14 ? 14 : bw < 3 ? 3 : bw;
}

/* One point's box p50-p95, whisker p10-p99 with a cap, its tooltip on the whole. */
static void time_box(FILE *f, const struct html_size_pt *p, double px, double bw, const char *col,
                     const struct html_scale *y) {
  char a[32], b[32], d[32], e[32], sz[32];
  const struct html_gq *q = &p->q;
  double y10 = html_px(y, q->t10 / 1e3), y50 = html_px(y, q->t50 / 1e3), y95 = html_px(y, q->t95 / 1e3),
         y99 = html_px(y, q->t99 / 1e3);
  fprintf(f, "<g data-tip=\"");
  html_text(f, p->op);
  fprintf(f, " %s: time p50 %s us, p95 %s us, p99 %s us (p10 %s us), %" PRIu64 " records\">",
          rpt_human_bytes(p->bytes, sz, sizeof sz), html_num(q->t50 / 1e3, a, sizeof a),
          html_num(q->t95 / 1e3, b, sizeof b), html_num(q->t99 / 1e3, d, sizeof d),
          html_num(q->t10 / 1e3, e, sizeof e), q->nt);
  fprintf(f, "<line stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col, px, y10, px, y99);
  fprintf(f, "<line stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col, px - bw / 4, y99,
          px + bw / 4, y99);
  fprintf(f, "<rect fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
             "height=\"%.1f\"/>",
          col, col, px - bw / 2, y95, bw, y50 - y95 > 1 ? y50 - y95 : 1);
  fprintf(f, "<line stroke=\"%s\" stroke-width=\"2\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n", col,
          px - bw / 2, y50, px + bw / 2, y50);
}

void html_chart_time(FILE *f, const struct html_size_pt *pts, int n, const struct html_run *r, int nr) {
  struct html_frame fr = {560, 300, 56, 16, 14, 40};
  struct html_scale x, y;
  fputs("<figure><figcaption>Time by message size <span class=\"mut\">box p50&ndash;p95, whisker "
        "p10&ndash;p99</span></figcaption>\n",
        f);
  if (!time_scale(pts, n, &y, &fr)) {
    fputs("<p class=\"empty\">No kept record with a time.</p></figure>\n", f);
    return;
  }
  sizes_scale(pts, n, &x, &fr);
  double bw = box_width(pts, n, nr, &x, &fr);
  html_svg_open(f, &fr, "Time per operation (us, log scale) against message size");
  html_axis_y(f, &fr, &y, "time (us, log scale)");
  html_axis_bytes(f, &fr, &x);
  for (int k = 0; k < nr; k++)
    for (int i = r[k].i0; i < r[k].i1; i++)
      if (pts[i].q.nt)
        time_box(f, &pts[i], html_px(&x, (double)pts[i].bytes) + (k - (nr - 1) / 2.0) * bw, bw, html_colour(k), &y);
  fputs("</svg></figure>\n", f);
}

/* ---------------------------------------------------------------- heat maps */

/*
 * Cells of a communicator's ranks: a row per node when ranks are spread evenly
 * over nodes (several nodes a row when nodes are small), else a near-square
 * grid; cells shrink with the rank count so that a map stays about 450 px.
 */
static int heat_cols(const struct html_heat_grid *g) {
  int n = g->nranks, target = (int)ceil(sqrt((double)n));
  if (g->nnodes >= 1 && n % g->nnodes == 0) {
    int rpn = n / g->nnodes;
    int cols = rpn >= target ? rpn : rpn * ((target + rpn - 1) / rpn);
    if (cols <= (16 > 2 * target ? 16 : 2 * target)) return cols;
  }
  if (n <= 16) return n;
  return (target + 3) / 4 * 4;
}

/* Where a map's parts go, in pixels. */
struct heat_layout {
  int cols, rows, cell;
  bool node_rows; /* a row is a node: labelled with its host */
  bool numbered;  /* cells large enough to hold their rank */
  int lw, top;    /* row labels' width, column labels' height */
  int gw, gh;     /* the grid */
};

static struct heat_layout heat_layout(const struct html_heat_grid *g) {
  struct heat_layout L;
  int n = g->nranks;
  L.cols = heat_cols(g);
  L.rows = (n + L.cols - 1) / L.cols;
  L.cell = 448 / L.cols; /* two maps side by side fit the page's 1,232 px */
  L.cell = L.cell > 36 ? 36 : L.cell < 4 ? 4 : L.cell;
  if (L.rows * L.cell > 640) L.cell = 640 / L.rows > 3 ? 640 / L.rows : 3;
  L.node_rows = g->nnodes >= 1 && n % g->nnodes == 0 && L.cols == n / g->nnodes && g->hosts_known;
  L.lw = L.node_rows ? 152 : 84; /* "node-003 r24-r31": the row's ranks, not a sum to make */
  L.numbered = L.cell >= 22;     /* each cell's rank written in it */
  L.top = L.cell >= 14 ? 16 : 4;
  L.gw = L.cols * L.cell;
  L.gh = L.rows * L.cell;
  return L;
}

static void heat_legend(FILE *f, const struct html_heat *h, int key, int x, int y, int w) {
  char col[16], lb[32];
  fprintf(f, "<defs><linearGradient id=\"%s%d\">", h->id, key);
  for (int s = 0; s <= 8; s++) {
    html_diverging(h->sign * (s / 4.0 - 1), col, sizeof col);
    fprintf(f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", s * 100 / 8, col);
  }
  fprintf(f, "</linearGradient></defs><rect class=\"lg\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"10\" "
             "fill=\"url(#%s%d)\"/>\n",
          x, y, w, h->id, key);
  for (int s = 0; s <= 2; s++) {
    double v = (s - 1) * h->scale;
    if (!h->late) snprintf(lb, sizeof lb, "%s%.2f", s == 1 ? "" : "x", pow(2, v));
    else html_num(v, lb, sizeof lb);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>", x + s * w / 2, y + 22,
            s == 0 ? "start" : s == 1 ? "middle" : "end", lb);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + w / 2, y + 36, h->unit);
}

/* Row labels (every row when there is room, else every k-th; a node's host when rows are
 * nodes), each with the row's first and last rank (the reader reads a rank, never adds one);
 * column labels (+k) when cells are large enough to label but not to hold their rank. */
static void heat_labels(FILE *f, const struct html_heat_grid *g, const struct heat_layout *L) {
  int every = L->cell >= 12 ? 1 : (12 + L->cell - 1) / L->cell;
  for (int r = 0; r < L->rows; r += every) {
    int rank = r * L->cols, last = rank + L->cols - 1 < g->nranks - 1 ? rank + L->cols - 1 : g->nranks - 1;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", L->lw - 4, L->top + r * L->cell + L->cell / 2.0 + 3.5);
    if (L->node_rows && g->rank[rank].host) {
      html_text_n(f, g->rank[rank].host, 14);
      fputs(" ", f);
    }
    if (last > rank) fprintf(f, "r%d\xE2\x80\x93r%d</text>\n", rank, last); /* an en dash */
    else fprintf(f, "r%d</text>\n", rank);
  }
  if (L->cell >= 14 && !L->numbered)
    for (int k = 0; k < L->cols; k += L->cell >= 20 ? 1 : 2)
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">+%d</text>", L->lw + k * L->cell + L->cell / 2.0,
              L->top - 4, k);
}

/* One rank's cell and its tooltip (short: a 1,024-rank map has 1,024 of these). */
static void heat_cell(FILE *f, const struct html_heat *h, const struct html_heat_rank *hr, int rank,
                      const struct heat_layout *L) {
  char col[16], a[32], b[32], d[32], e[32];
  const struct rpt_rank_stat *s = hr->stat;
  double v = s ? h->value(s) : NAN;
  int x = L->lw + (rank % L->cols) * L->cell, y = L->top + (rank / L->cols) * L->cell;
  /* A straggler's busbw is high only because the others wait for it (its kernels start
   * last and end with theirs): not drawn as fast, in the neutral grey, outlined. */
  if (hr->strag && !h->late) snprintf(col, sizeof col, "#c8ced6");
  else if (isfinite(v)) html_diverging(h->sign * v / h->scale, col, sizeof col);
  else snprintf(col, sizeof col, "#e4e7eb");
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s data-tip=\"rank %d", x, y, L->cell,
          L->cell, col, hr->strag ? " class=\"strag\"" : "", rank);
  if (hr->host) {
    fputs(" \xC2\xB7 ", f);
    html_text(f, hr->host);
    if (hr->pid >= 0) fprintf(f, " pid %lld", hr->pid);
  }
  if (!s || !s->ops) fputs(": no op matched", f);
  else if (h->late)
    fprintf(f, ": %s us late (median), late in %s of %" PRIu64 " ops, last in %s",
            html_num(s->med_late_ns / 1e3, a, sizeof a), html_pct((double)s->late_ops / (double)s->ops, b, sizeof b),
            s->ops, html_pct((double)s->last_ops / (double)s->ops, d, sizeof d));
  else fprintf(f, ": busbw x%s the op median", s->busbw_ratio > 0 ? html_num(s->busbw_ratio, e, sizeof e) : "-");
  fputs(!hr->strag ? "\"/>" : h->late ? " (straggler)\"/>"
                            : " (straggler: its kernels are short because the others wait for it, not fast)\"/>", f);
  if (L->numbered)
    fprintf(f, "<text class=\"rk\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>", x + L->cell / 2.0,
            y + L->cell / 2.0 + 3.5, rank);
}

void html_heat_map(FILE *f, const struct html_heat_grid *g, const struct html_heat *h) {
  struct heat_layout L = heat_layout(g);
  int w = L.lw + (L.gw > 180 ? L.gw : 180) + 8, hgt = L.top + L.gh + 52;
  fprintf(f, "<figure><figcaption>%s</figcaption>\n", h->title);
  fprintf(f, "<svg class=\"chart heat%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">"
             "<title>%s</title>\n",
          L.cell >= 10 ? " big" : "", w, hgt, w, hgt, h->title);
  heat_labels(f, g, &L);
  for (int rank = 0; rank < g->nranks; rank++) {
    heat_cell(f, h, &g->rank[rank], rank, &L);
    if (rank % L.cols == L.cols - 1) putc('\n', f);
  }
  heat_legend(f, h, g->key, L.lw, L.top + L.gh + 8, 180);
  fputs("</svg></figure>\n", f);
}

/* ---------------------------------------------------------------- a slow link, node by node */

void html_link_matrix(FILE *f, const struct rpt_link_matrix *m, const char *comm_name, double slow_ratio) {
  int n = m->nhosts, cell = 448 / n;
  cell = cell > 44 ? 44 : cell < 6 ? 6 : cell;
  int lw = 112, top = 92, w = lw + n * cell + 8, h = top + n * cell + 44;
  char sz[32], a[32], col[16];
  fputs("<figure><figcaption>", f);
  html_text_n(f, comm_name, 28);
  fprintf(f, " &middot; %s %s, node by node</figcaption>\n", rpt_str(m->op), rpt_human_bytes(m->bytes, sz, sizeof sz));
  fprintf(f, "<svg class=\"chart heat big\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">"
             "<title>busbw node by node</title>\n",
          w, h, w, h);
  for (int r = 0; r < n; r++) { /* rows: from; columns: to, their names turned up */
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", lw - 4, top + r * cell + cell / 2.0 + 3.5);
    html_text_n(f, rpt_str(m->host[r]), 16);
    fputs("</text>", f);
    double cx = lw + r * cell + cell / 2.0 + 3;
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" transform=\"rotate(-60 %.1f %d)\">", cx, top - 4, cx, top - 4);
    html_text_n(f, rpt_str(m->host[r]), 16);
    fputs("</text>\n", f);
  }
  for (int r = 0; r < n; r++)
    for (int c = 0; c < n; c++) {
      double v = m->ratio[r * n + c];
      int x = lw + c * cell, y = top + r * cell;
      bool slow = isfinite(v) && v < slow_ratio;
      if (isfinite(v) && v > 0) html_diverging(-log2(v) / 2, col, sizeof col); /* x0.25: the full red */
      else snprintf(col, sizeof col, "#e4e7eb");
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s data-tip=\"", x, y, cell, cell, col,
              slow ? " class=\"strag\"" : "");
      html_text(f, rpt_str(m->host[r]));
      fputs(" &rarr; ", f);
      html_text(f, rpt_str(m->host[c]));
      if (isfinite(v)) fprintf(f, ": x%s the median link%s\"/>", html_num(v, a, sizeof a), slow ? " (slow)" : "");
      else fputs(": no transfers\"/>", f);
      if (isfinite(v) && cell >= 30)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" style=\"font-size:10px\">%.2f</text>",
                x + cell / 2.0, y + cell / 2.0 + 3.5, v);
    }
  /* two lines from the left edge: one would run past a small matrix's frame */
  fprintf(f, "\n<text class=\"al\" x=\"8\" y=\"%d\">busbw from the row's node to the column's,</text>"
             "<text class=\"al\" x=\"8\" y=\"%d\">x the median link (%s GB/s); outlined: below x%s</text>\n",
          top + n * cell + 20, top + n * cell + 34, html_num(m->class_p50, sz, sizeof sz),
          html_num(slow_ratio, a, sizeof a));
  fputs("</svg></figure>\n", f);
}

/* ---------------------------------------------------------------- bandwidth over time */

int html_nonempty_bins(const struct rpt_series *s) {
  int n = 0;
  for (int i = 0; i < s->nbins; i++) n += s->count[i] > 0;
  return n;
}

/* The x axis: seconds since the group's first bin. */
static void series_axis_x(FILE *f, const struct html_frame *fr, const struct html_scale *x) {
  double xs = html_nice_step(x->hi / 4);
  for (double v = 0; v <= x->hi * (1 + 1e-9); v += xs) {
    double px = html_px(x, v);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>", px, fr->h - fr->b + 14, v);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">seconds since the first bin</text>\n",
          fr->l + (fr->w - fr->l - fr->r) / 2, fr->h - 4);
}

/* The line joins the bins that have records: an empty bin means no op ran then, not a
 * bandwidth of zero. Points too, unless there are so many that they would hide the line. */
static void series_line(FILE *f, const struct rpt_series *s, const struct html_scale *x, const struct html_scale *y) {
  char a[32];
  double bw_s = (double)s->width_ns / 1e9;
  fprintf(f, "<polyline class=\"line\" stroke=\"%s\" points=\"", html_colour(0));
  for (int i = 0; i < s->nbins; i++)
    if (s->count[i])
      fprintf(f, "%.1f,%.1f ", html_px(x, (i + 0.5) * bw_s), html_px(y, (double)s->sum_mbs[i] / s->count[i] / 1e3));
  fputs("\"/>\n", f);
  if (html_nonempty_bins(s) <= 60)
    for (int i = 0; i < s->nbins; i++)
      if (s->count[i]) {
        double v = (double)s->sum_mbs[i] / s->count[i] / 1e3;
        fprintf(f, "<circle fill=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" data-tip=\"%.3f s: %s GB/s (%u records)\"/>",
                html_colour(0), html_px(x, (i + 0.5) * bw_s), html_px(y, v), (i + 0.5) * bw_s,
                html_num(v, a, sizeof a), s->count[i]);
      }
}

/* The group's changes (those at or after its first bin), a dashed line and "before->after" each. */
static void series_changes(FILE *f, const struct html_series_chart *c, const struct html_frame *fr,
                           const struct html_scale *x) {
  char b[32], d[32];
  for (int i = 0; i < c->nchanges; i++) {
    const struct rpt_change *ch = &c->changes[i];
    if (ch->group != c->group || ch->t_ns < c->s->t0_ns) continue;
    double t = (double)(ch->t_ns - c->s->t0_ns) / 1e9, px = html_px(x, t);
    fprintf(f, "<line class=\"chg\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
               "data-tip=\"change at %.3f s: %s -> %s GB/s\"/>",
            px, fr->t, px, fr->h - fr->b, t, html_num(ch->before_gbs, b, sizeof b),
            html_num(ch->after_gbs, d, sizeof d));
    fprintf(f, "<text class=\"chgl\" x=\"%.1f\" y=\"%d\">%s&rarr;%s</text>\n", px + 3, fr->t + 10, b, d);
  }
}

void html_chart_series(FILE *f, const struct html_series_chart *c) {
  const struct rpt_series *s = c->s;
  struct html_frame fr = {340, 190, 48, 12, 10, 36};
  double ymax = 0;
  for (int i = 0; i < s->nbins; i++)
    if (s->count[i] && (double)s->sum_mbs[i] / s->count[i] / 1e3 > ymax)
      ymax = (double)s->sum_mbs[i] / s->count[i] / 1e3;
  char sz[32];
  fputs("<figure><figcaption>", f);
  html_text_n(f, c->comm_name, 28);
  fputs(" &middot; ", f);
  html_text(f, c->op);
  fprintf(f, " %s <span class=\"mut\">%" PRIu64 " records</span></figcaption>\n",
          rpt_human_bytes(c->bytes, sz, sizeof sz), c->records);
  double span_s = (double)s->width_ns * s->nbins / 1e9;
  struct html_scale x = {0, span_s > 0 ? span_s : 1, false, fr.l, fr.w - fr.r};
  double step = html_nice_step((ymax > 0 ? ymax : 1) * 1.1 / 4);
  struct html_scale y = {0, step * ceil((ymax > 0 ? ymax : 1) * 1.1 / step), false, fr.h - fr.b, fr.t};
  html_svg_open(f, &fr, "Bus bandwidth (GB/s) over time (s)");
  html_axis_y(f, &fr, &y, "busbw (GB/s)");
  series_axis_x(f, &fr, &x);
  series_line(f, s, &x, &y);
  series_changes(f, c, &fr, &x);
  fputs("</svg></figure>\n", f);
}
