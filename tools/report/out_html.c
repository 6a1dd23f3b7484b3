/*
 * out_html.c - the report as one self-contained HTML page (--html FILE).
 *
 * Owns: the page's layout and its charts, drawn here as inline SVG, so that the
 * page opens anywhere (no network, no script library, no font to fetch). It
 * reads the finished job only; every figure on it is one the text and JSON
 * outputs print too. The one script (hover tooltips) is a dozen lines at the
 * end of the page: without it the page is complete, only the tooltips are
 * missing.
 *
 * Sections: the input (files, records, exclusions, drops, sampling, clock
 * alignment) and the communicators; the findings (stragglers, slow links and
 * nodes, bandwidth changes); per communicator, bus bandwidth against message
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
 * anything) go through put_text(): HTML-escaped, and any byte sequence that is
 * not UTF-8 written as U+FFFD, so no log can inject markup or break the page.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "out.h"

#define MAX_COMM_SECTIONS 32
#define MAX_SERIES 24
#define MAX_HEAT_CELLS 16384 /* ranks, over all the maps of the page */

/* ---------------------------------------------------------------- text */

/*
 * s as HTML text or attribute value (the five specials escaped), at most `max`
 * characters (then "…"; max < 0: all). Control characters and invalid UTF-8
 * become U+FFFD.
 */
static void put_text_n(FILE *f, const char *s, int max) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  for (int chars = 0; *p; chars++) {
    if (max >= 0 && chars == max) {
      fputs("\xE2\x80\xA6", f);
      return;
    }
    size_t left = strlen((const char *)p);
    size_t n = ins_utf8_char_len(p, left); /* src/core/utf8.h: the plugin's rule */
    if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
      fputs(INS_UTF8_REPLACEMENT, f);
      p += n ? 1 : ins_utf8_invalid_len(p, left);
      continue;
    }
    switch (*p) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fwrite(p, 1, n, f);
    }
    p += n;
  }
}

static void put_text(FILE *f, const char *s) { put_text_n(f, s, -1); }

/* A figure with about three significant digits: 0.123, 12.3, 1234. */
static const char *num(double v, char *out, size_t n) {
  double a = fabs(v);
  if (!isfinite(v)) snprintf(out, n, "-");
  else if (a >= 100 || a == 0) snprintf(out, n, "%.0f", v);
  else if (a >= 10) snprintf(out, n, "%.1f", v);
  else if (a >= 1) snprintf(out, n, "%.2f", v);
  else snprintf(out, n, "%.3f", v);
  return out;
}

/* An axis tick: 0.5, 20, 1k, 10k, 1M. */
static const char *tick_label(double v, char *out, size_t n) {
  if (v >= 1e6) snprintf(out, n, "%gM", v / 1e6);
  else if (v >= 1e4) snprintf(out, n, "%gk", v / 1e3);
  else snprintf(out, n, "%g", v);
  return out;
}

static const char *pct(double share, char *out, size_t n) {
  snprintf(out, n, "%.1f%%", 100.0 * share);
  return out;
}

/* The communicator's display name: "name (0x1a2b)", escaped. */
static void put_comm(FILE *f, const struct rpt_job *j, int c) {
  if (c < 0 || c >= j->ncomms) {
    fputs("?", f);
    return;
  }
  put_text(f, j->comms[c].name);
  fprintf(f, " <span class=\"mut\">(0x%" PRIx64 ")</span>", j->comms[c].id);
}

/* Does another communicator of the job have c's name ("unknown" often does)? Computed
 * once per job: the communicators sorted by name, neighbours compared. */
static const struct rpt_job *g_named_job;
static bool *g_name_shared;

static int cmp_comm_name(const void *a, const void *b, void *arg) {
  const struct rpt_job *j = arg;
  return strcmp(j->comms[*(const int *)a].name, j->comms[*(const int *)b].name);
}

static bool name_shared(const struct rpt_job *j, int c) {
  if (g_named_job != j) {
    free(g_name_shared);
    g_name_shared = calloc((size_t)j->ncomms + 1, sizeof *g_name_shared);
    int *ix = malloc(((size_t)j->ncomms + 1) * sizeof *ix);
    if (g_name_shared && ix) {
      for (int i = 0; i < j->ncomms; i++) ix[i] = i;
      qsort_r(ix, (size_t)j->ncomms, sizeof *ix, cmp_comm_name, (void *)j);
      for (int i = 1; i < j->ncomms; i++)
        if (!strcmp(j->comms[ix[i]].name, j->comms[ix[i - 1]].name))
          g_name_shared[ix[i]] = g_name_shared[ix[i - 1]] = true;
    }
    free(ix);
    g_named_job = j;
  }
  return g_name_shared && g_name_shared[c];
}

/* The name alone, its id in a tooltip: for tables, where the full form repeats on every row;
 * with its id shown when another communicator has the same name. */
static void put_comm_short(FILE *f, const struct rpt_job *j, int c) {
  if (c < 0 || c >= j->ncomms) {
    fputs("?", f);
    return;
  }
  fprintf(f, "<span data-tip=\"0x%" PRIx64 "\">", j->comms[c].id);
  put_text(f, j->comms[c].name);
  if (name_shared(j, c)) fprintf(f, " <span class=\"mut\">(0x%" PRIx64 ")</span>", j->comms[c].id);
  fputs("</span>", f);
}

/* ---------------------------------------------------------------- colours */

static const char *const k_palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                        "#b07aa1", "#edc948", "#ff9da7", "#9c755f", "#7f7f7f"};
#define NPALETTE ((int)(sizeof k_palette / sizeof k_palette[0]))

/* Diverging blue - white - red (ColorBrewer RdBu) for t in [-1, 1]; t > 0 is the bad side. */
static void diverging(double t, char *out, size_t n) {
  static const double stop[5][3] = {
      {33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {244, 165, 130}, {178, 24, 43}};
  if (!isfinite(t)) t = 0;
  t = t < -1 ? -1 : t > 1 ? 1 : t;
  double x = (t + 1) * 2; /* 0..4 */
  int i = x >= 4 ? 3 : (int)x;
  double u = x - i, c[3];
  for (int k = 0; k < 3; k++) c[k] = stop[i][k] + u * (stop[i + 1][k] - stop[i][k]);
  snprintf(out, n, "#%02x%02x%02x", (int)lround(c[0]), (int)lround(c[1]), (int)lround(c[2]));
}

/* ---------------------------------------------------------------- axes */

struct scale {
  double lo, hi; /* data range; log scales need lo > 0 */
  bool log;
  double p0, p1; /* pixels */
};

static double sc(const struct scale *s, double v) {
  double t;
  if (s->log) {
    if (v < s->lo) v = s->lo;
    t = (log(v) - log(s->lo)) / (log(s->hi) - log(s->lo));
  } else {
    t = (v - s->lo) / (s->hi - s->lo);
  }
  if (!isfinite(t)) t = 0;
  return s->p0 + t * (s->p1 - s->p0);
}

/* 1, 2 or 5 x 10^k, the first at or above v. */
static double nice_step(double v) {
  if (!(v > 0)) return 1;
  double p = pow(10, floor(log10(v)));
  return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

struct frame {
  int w, h;          /* the SVG */
  int l, r, t, b;    /* margins: the plot is [l, w - r] x [t, h - b] */
};

static void svg_open(FILE *f, const struct frame *fr, const char *title) {
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>", fr->w,
          fr->h, fr->w, fr->h);
  put_text(f, title);
  fputs("</title>\n", f);
}

/* The x axis of message sizes: log2, a tick per power of two (every 2nd, 4th... when crowded). */
static void axis_bytes(FILE *f, const struct frame *fr, const struct scale *x) {
  int k0 = (int)ceil(log2(x->lo) - 1e-9), k1 = (int)floor(log2(x->hi) + 1e-9);
  int step = 1;
  while ((k1 - k0) / step > 8) step *= 2;
  int yb = fr->h - fr->b;
  for (int k = k0; k <= k1; k++) {
    if (k < 0 || k > 62 || (k - k0) % step) continue;
    double px = sc(x, ldexp(1, k));
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    fprintf(f, "<line class=\"tk\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", px, yb, px, yb + 4);
    /* a power of two is a whole number of its unit: "64 KiB", shorter than rpt_human_bytes' "64.0 KiB" */
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d %s</text>\n", px, yb + 16, 1 << (k % 10),
            unit[k / 10]);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">message size (log2)</text>\n",
          fr->l + (fr->w - fr->l - fr->r) / 2, fr->h - 6);
}

/* The y axis with grid lines: linear from 0, or log with ticks at 1-2-5 or decades. */
static void axis_y(FILE *f, const struct frame *fr, const struct scale *y, const char *label) {
  char lb[32];
  int xr = fr->w - fr->r;
  if (y->log) {
    int d0 = (int)floor(log10(y->lo) + 1e-9), d1 = (int)ceil(log10(y->hi) - 1e-9);
    static const double mant[3] = {1, 2, 5};
    int nm = d1 - d0 <= 2 ? 3 : 1;
    for (int d = d0; d <= d1; d++)
      for (int m = 0; m < nm; m++) {
        double v = mant[m] * pow(10, d);
        if (v < y->lo * (1 - 1e-9) || v > y->hi * (1 + 1e-9)) continue;
        double py = sc(y, v);
        fprintf(f, "<line class=\"gr\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", fr->l, py, xr, py);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", fr->l - 5, py + 3.5,
                tick_label(v, lb, sizeof lb));
      }
  } else {
    double step = nice_step((y->hi - y->lo) / 5);
    for (double v = y->lo; v <= y->hi * (1 + 1e-9); v += step) {
      double py = sc(y, v);
      fprintf(f, "<line class=\"gr\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", fr->l, py, xr, py);
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", fr->l - 5, py + 3.5,
              tick_label(fabs(v) < step * 1e-6 ? 0 : v, lb, sizeof lb));
    }
  }
  int cy = fr->t + (fr->h - fr->t - fr->b) / 2;
  fprintf(f, "<text class=\"al\" transform=\"translate(12 %d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
          cy, label);
  fprintf(f, "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", fr->l, fr->h - fr->b, xr, fr->h - fr->b);
  fprintf(f, "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", fr->l, fr->t, fr->l, fr->h - fr->b);
}

/* ---------------------------------------------------------------- the page's model */

/* Quantiles of one group, computed once (a sketch's quantile sorts it). */
struct gq {
  double t10, t50, t95, t99;  /* ns */
  double b10, b50, b90;       /* GB/s */
  uint64_t nt, nb;
};

struct page {
  struct rpt_job *j;
  FILE *f;
  struct gq *q;          /* [ngroups] */
  int *comm_g0, *comm_g1; /* groups of comm c: [comm_g0[c], comm_g1[c]) (sorted by comm) */
  uint64_t *comm_records;
  int heat_cells;        /* ranks drawn on heat maps so far */
};

/* A run of groups of one (p2p, op) within a communicator: one line on its charts. */
struct run {
  int g0, g1;
};

/* The runs of comm c's groups, at most `max`; returns how many. */
static int comm_runs(const struct page *pg, int c, struct run *out, int max) {
  int n = 0;
  const struct rpt_group *g = pg->j->groups;
  for (int i = pg->comm_g0[c]; i < pg->comm_g1[c] && n < max; n++) {
    int k = i;
    while (k < pg->comm_g1[c] && g[k].p2p == g[i].p2p && g[k].op == g[i].op) k++;
    out[n].g0 = i;
    out[n].g1 = k;
    i = k;
  }
  return n;
}

#define MAX_RUNS 32

static void put_legend(FILE *f, const struct rpt_job *j, const struct run *r, int nr) {
  fputs("<div class=\"legend\">", f);
  for (int i = 0; i < nr; i++) {
    const struct rpt_group *g = &j->groups[r[i].g0];
    fprintf(f, "<span><i style=\"background:%s\"></i>", k_palette[i % NPALETTE]);
    put_text(f, rpt_str(g->op));
    if (g->p2p) fputs(" <span class=\"mut\">(P2P)</span>", f);
    fputs("</span>", f);
  }
  fputs("</div>\n", f);
}

/* ---------------------------------------------------------------- charts per communicator */

static void sizes_scale(const struct page *pg, int c, struct scale *x, const struct frame *fr) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = pg->comm_g0[c]; i < pg->comm_g1[c]; i++) {
    uint64_t b = pg->j->groups[i].bytes ? pg->j->groups[i].bytes : 1;
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

/* Bus bandwidth against size: per op, the p10-p90 band, the p50 line and its points. */
static void chart_busbw(struct page *pg, int c, const struct run *r, int nr) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  struct frame fr = {560, 300, 56, 16, 14, 40};
  double ymax = 0;
  for (int i = pg->comm_g0[c]; i < pg->comm_g1[c]; i++)
    if (pg->q[i].nb && pg->q[i].b90 > ymax) ymax = pg->q[i].b90;
  fputs("<figure><figcaption>Bus bandwidth by message size <span class=\"mut\">p50 line, p10&ndash;p90 "
        "band</span></figcaption>\n",
        f);
  if (!(ymax > 0)) {
    fputs("<p class=\"empty\">No kept record with a bandwidth.</p></figure>\n", f);
    return;
  }
  struct scale x, y = {0, 0, false, fr.h - fr.b, fr.t};
  sizes_scale(pg, c, &x, &fr);
  double step = nice_step(ymax * 1.05 / 5);
  y.hi = step * ceil(ymax * 1.05 / step);
  svg_open(f, &fr, "Bus bandwidth (GB/s) against message size");
  axis_y(f, &fr, &y, "busbw (GB/s)");
  axis_bytes(f, &fr, &x);
  char a[32], b[32], d[32], sz[32];
  for (int k = 0; k < nr; k++) {
    const char *col = k_palette[k % NPALETTE];
    /* band: p90 left to right, then p10 back */
    int npts = 0;
    for (int i = r[k].g0; i < r[k].g1; i++) npts += pg->q[i].nb > 0;
    if (npts > 1) {
      fprintf(f, "<polygon class=\"band\" fill=\"%s\" points=\"", col);
      for (int i = r[k].g0; i < r[k].g1; i++)
        if (pg->q[i].nb) fprintf(f, "%.1f,%.1f ", sc(&x, (double)j->groups[i].bytes), sc(&y, pg->q[i].b90));
      for (int i = r[k].g1 - 1; i >= r[k].g0; i--)
        if (pg->q[i].nb) fprintf(f, "%.1f,%.1f ", sc(&x, (double)j->groups[i].bytes), sc(&y, pg->q[i].b10));
      fputs("\"/>\n", f);
      fprintf(f, "<polyline class=\"line\" stroke=\"%s\" points=\"", col);
      for (int i = r[k].g0; i < r[k].g1; i++)
        if (pg->q[i].nb) fprintf(f, "%.1f,%.1f ", sc(&x, (double)j->groups[i].bytes), sc(&y, pg->q[i].b50));
      fputs("\"/>\n", f);
    }
    for (int i = r[k].g0; i < r[k].g1; i++) {
      const struct gq *q = &pg->q[i];
      if (!q->nb) continue;
      double px = sc(&x, (double)j->groups[i].bytes);
      if (npts == 1) /* a lone size: its band as a whisker */
        fprintf(f, "<line stroke=\"%s\" stroke-width=\"2\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col,
                px, sc(&y, q->b10), px, sc(&y, q->b90));
      fprintf(f, "<circle class=\"pt\" fill=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" data-tip=\"", col, px,
              sc(&y, q->b50));
      put_text(f, rpt_str(j->groups[i].op));
      fprintf(f, " %s: busbw p50 %s GB/s (p10 %s, p90 %s), %" PRIu64 " records\"/>\n",
              rpt_human_bytes(j->groups[i].bytes, sz, sizeof sz), num(q->b50, a, sizeof a),
              num(q->b10, b, sizeof b), num(q->b90, d, sizeof d), q->nb);
    }
  }
  fputs("</svg></figure>\n", f);
}

/* Time per size: per op and size, a box p50-p95 with a whisker to p99 (and p10), log scale. */
static void chart_time(struct page *pg, int c, const struct run *r, int nr) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  struct frame fr = {560, 300, 56, 16, 14, 40};
  double lo = INFINITY, hi = 0;
  for (int i = pg->comm_g0[c]; i < pg->comm_g1[c]; i++) {
    const struct gq *q = &pg->q[i];
    if (!q->nt) continue;
    double l = (q->t10 > 0 ? q->t10 : q->t50) / 1e3, h = q->t99 / 1e3;
    if (l > 0 && l < lo) lo = l;
    if (h > hi) hi = h;
  }
  fputs("<figure><figcaption>Time by message size <span class=\"mut\">box p50&ndash;p95, whisker "
        "p10&ndash;p99</span></figcaption>\n",
        f);
  if (!(hi > 0) || !isfinite(lo)) {
    fputs("<p class=\"empty\">No kept record with a time.</p></figure>\n", f);
    return;
  }
  struct scale x, y = {pow(10, floor(log10(lo))), pow(10, ceil(log10(hi))), true, fr.h - fr.b, fr.t};
  if (y.hi <= y.lo) y.hi = y.lo * 10;
  sizes_scale(pg, c, &x, &fr);
  /* boxes of the ops side by side at one size: as wide as the closest sizes allow */
  double gap = fr.w;
  for (int i = pg->comm_g0[c]; i + 1 < pg->comm_g1[c]; i++)
    for (int k = i + 1; k < pg->comm_g1[c]; k++) {
      double dx = fabs(sc(&x, (double)j->groups[k].bytes) - sc(&x, (double)j->groups[i].bytes));
      if (dx > 0.5 && dx < gap) gap = dx;
    }
  double bw = gap * 0.8 / nr;
  bw = bw > 14 ? 14 : bw < 3 ? 3 : bw;
  svg_open(f, &fr, "Time per operation (us, log scale) against message size");
  axis_y(f, &fr, &y, "time (us, log scale)");
  axis_bytes(f, &fr, &x);
  char a[32], b[32], d[32], e[32], sz[32];
  for (int k = 0; k < nr; k++) {
    const char *col = k_palette[k % NPALETTE];
    for (int i = r[k].g0; i < r[k].g1; i++) {
      const struct gq *q = &pg->q[i];
      if (!q->nt) continue;
      double px = sc(&x, (double)j->groups[i].bytes) + (k - (nr - 1) / 2.0) * bw;
      double y10 = sc(&y, q->t10 / 1e3), y50 = sc(&y, q->t50 / 1e3), y95 = sc(&y, q->t95 / 1e3),
             y99 = sc(&y, q->t99 / 1e3);
      fprintf(f, "<g data-tip=\"");
      put_text(f, rpt_str(j->groups[i].op));
      fprintf(f, " %s: time p50 %s us, p95 %s us, p99 %s us (p10 %s us), %" PRIu64 " records\">",
              rpt_human_bytes(j->groups[i].bytes, sz, sizeof sz), num(q->t50 / 1e3, a, sizeof a),
              num(q->t95 / 1e3, b, sizeof b), num(q->t99 / 1e3, d, sizeof d), num(q->t10 / 1e3, e, sizeof e),
              q->nt);
      fprintf(f, "<line stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col, px, y10, px, y99);
      fprintf(f, "<line stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", col, px - bw / 4, y99,
              px + bw / 4, y99);
      fprintf(f, "<rect fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                 "height=\"%.1f\"/>",
              col, col, px - bw / 2, y95, bw, y50 - y95 > 1 ? y50 - y95 : 1);
      fprintf(f, "<line stroke=\"%s\" stroke-width=\"2\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
              col, px - bw / 2, y50, px + bw / 2, y50);
    }
  }
  fputs("</svg></figure>\n", f);
}

/* ---------------------------------------------------------------- heat maps */

/*
 * Cells of a communicator's ranks: a row per node when ranks are spread evenly
 * over nodes (several nodes a row when nodes are small), else a near-square
 * grid; cells shrink with the rank count so that a map stays about 450 px.
 */
static int heat_cols(const struct rpt_comm *c) {
  int n = c->nranks, target = (int)ceil(sqrt((double)n));
  if (c->nnodes >= 1 && n % c->nnodes == 0) {
    int rpn = n / c->nnodes;
    int cols = rpn >= target ? rpn : rpn * ((target + rpn - 1) / rpn);
    if (cols <= (16 > 2 * target ? 16 : 2 * target)) return cols;
  }
  if (n <= 16) return n;
  return (target + 3) / 4 * 4;
}

struct heat {
  const char *id, *title, *unit;
  double (*value)(const struct rpt_rank_stat *); /* NAN: no value */
  double scale;    /* the colour's full scale (|value|) */
  int sign;        /* +1: higher is worse (red); -1: lower is worse */
  bool late;       /* lateness (else busbw ratio, drawn as log2) */
};

static double late_us(const struct rpt_rank_stat *s) { return s->ops ? s->med_late_ns / 1e3 : NAN; }
static double bw_log2(const struct rpt_rank_stat *s) {
  return s->busbw_ratio > 0 ? log2(s->busbw_ratio) : NAN;
}

static void heat_legend(FILE *f, const struct heat *h, int c, int x, int y, int w) {
  char col[16], lb[32];
  fprintf(f, "<defs><linearGradient id=\"%s%d\">", h->id, c);
  for (int s = 0; s <= 8; s++) {
    diverging(h->sign * (s / 4.0 - 1), col, sizeof col);
    fprintf(f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", s * 100 / 8, col);
  }
  fprintf(f, "</linearGradient></defs><rect class=\"lg\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"10\" "
             "fill=\"url(#%s%d)\"/>\n",
          x, y, w, h->id, c);
  for (int s = 0; s <= 2; s++) {
    double v = (s - 1) * h->scale;
    if (!h->late) snprintf(lb, sizeof lb, "%s%.2f", s == 1 ? "" : "x", pow(2, v));
    else num(v, lb, sizeof lb);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>", x + s * w / 2, y + 22,
            s == 0 ? "start" : s == 1 ? "middle" : "end", lb);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + w / 2, y + 36, h->unit);
}

static void heat_map(struct page *pg, int c, const struct rpt_rank_stat **by_rank, const struct heat *h) {
  FILE *f = pg->f;
  const struct rpt_job *j = pg->j;
  const struct rpt_comm *cm = &j->comms[c];
  int n = cm->nranks, cols = heat_cols(cm), rows = (n + cols - 1) / cols;
  int cell = 448 / cols; /* two maps side by side fit the page's 1,232 px */
  cell = cell > 36 ? 36 : cell < 4 ? 4 : cell;
  if (rows * cell > 640) cell = 640 / rows > 3 ? 640 / rows : 3;
  /* a row is a node: labelled with its host */
  bool node_rows = cm->nnodes >= 1 && n % cm->nnodes == 0 && cols == n / cm->nnodes && cm->rank;
  int lw = node_rows ? 112 : 48, top = cell >= 14 ? 16 : 4; /* row labels, column labels */
  int gw = cols * cell, gh = rows * cell;
  int w = lw + (gw > 180 ? gw : 180) + 8, hgt = top + gh + 52;
  fprintf(f, "<figure><figcaption>%s</figcaption>\n", h->title);
  fprintf(f, "<svg class=\"chart heat%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">"
             "<title>%s</title>\n",
          cell >= 10 ? " big" : "", w, hgt, w, hgt, h->title);
  /* row labels: every row when there is room, else every k-th */
  int every = cell >= 12 ? 1 : (12 + cell - 1) / cell;
  for (int r = 0; r < rows; r += every) {
    int rank = r * cols;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", lw - 4, top + r * cell + cell / 2.0 + 3.5);
    if (node_rows && cm->rank && cm->rank[rank].host >= 0) {
      put_text_n(f, rpt_str(cm->rank[rank].host), 14);
      fputs(" ", f);
    }
    fprintf(f, "r%d</text>\n", rank);
  }
  if (cell >= 14)
    for (int k = 0; k < cols; k += cell >= 20 ? 1 : 2)
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">+%d</text>", lw + k * cell + cell / 2.0, top - 4, k);
  char col[16], a[32], b[32], d[32], e[32];
  for (int rank = 0; rank < n; rank++) {
    const struct rpt_rank_stat *s = by_rank[rank];
    double v = s ? h->value(s) : NAN;
    int x = lw + (rank % cols) * cell, y = top + (rank / cols) * cell;
    bool strag = rpt_is_straggler(j, c, rank);
    /* A straggler's busbw is high only because the others wait for it (its kernels start
     * last and end with theirs): not drawn as fast, in the neutral grey, outlined. */
    if (strag && !h->late) snprintf(col, sizeof col, "#c8ced6");
    else if (isfinite(v)) diverging(h->sign * v / h->scale, col, sizeof col);
    else snprintf(col, sizeof col, "#e4e7eb");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s data-tip=\"rank %d", x, y, cell,
            cell, col, strag ? " class=\"strag\"" : "", rank);
    if (cm->rank && cm->rank[rank].host >= 0) {
      fputs(" \xC2\xB7 ", f);
      put_text(f, rpt_str(cm->rank[rank].host));
      if (cm->rank[rank].pid >= 0) fprintf(f, " pid %lld", cm->rank[rank].pid);
    }
    /* short: a 1,024-rank map has 1,024 of these */
    if (!s || !s->ops) fputs(": no op matched", f);
    else if (h->late)
      fprintf(f, ": %s us late (median), late in %s of %" PRIu64 " ops, last in %s",
              num(s->med_late_ns / 1e3, a, sizeof a), pct((double)s->late_ops / (double)s->ops, b, sizeof b), s->ops,
              pct((double)s->last_ops / (double)s->ops, d, sizeof d));
    else fprintf(f, ": busbw x%s the op median", s->busbw_ratio > 0 ? num(s->busbw_ratio, e, sizeof e) : "-");
    fputs(!strag ? "\"/>" : h->late ? " (straggler)\"/>"
                            : " (straggler: its kernels are short because the others wait for it, not fast)\"/>", f);
    if (rank % cols == cols - 1) putc('\n', f);
  }
  heat_legend(f, h, c, lw, top + gh + 8, 180);
  fputs("</svg></figure>\n", f);
}

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
  const struct rpt_rank_stat **by_rank = calloc((size_t)cm->nranks, sizeof *by_rank);
  if (!by_rank) return;
  double late_max = 0, bw_max = 0;
  int nstat = 0;
  for (int i = 0; i < j->nrstats; i++) {
    const struct rpt_rank_stat *s = &j->rstats[i];
    if (s->comm != c || s->rank < 0 || s->rank >= cm->nranks) continue;
    by_rank[s->rank] = s;
    nstat++;
    if (s->ops && fabs(s->med_late_ns / 1e3) > late_max) late_max = fabs(s->med_late_ns / 1e3);
    if (s->busbw_ratio > 0 && fabs(log2(s->busbw_ratio)) > bw_max) bw_max = fabs(log2(s->busbw_ratio));
  }
  if (!nstat) {
    fputs("<p class=\"empty\">No collective matched across ranks: no per-rank maps.</p>\n", f);
    free(by_rank);
    return;
  }
  /* Full scale: the largest value, but at least the lateness threshold (launch skew below it
   * stays pale) and 1.25x for the ratio. */
  double floor_late = j->opt.late_ns / 1e3 > 1 ? j->opt.late_ns / 1e3 : 1;
  struct heat late = {"hl", "Median lateness per rank", "us after the other ranks' median start", late_us,
                      late_max > floor_late ? late_max : floor_late, 1, true};
  struct heat bw = {"hb", "Bus bandwidth per rank", "x the op's median busbw across ranks", bw_log2,
                    bw_max > log2(1.25) ? bw_max : log2(1.25), -1, false};
  pg->heat_cells += cm->nranks;
  fputs("<div class=\"charts\">\n", f);
  if (j->have_starts) heat_map(pg, c, by_rank, &late);
  else fputs("<p class=\"empty\">No GPU start times in the logs: no lateness.</p>\n", f);
  heat_map(pg, c, by_rank, &bw);
  fputs("</div>\n", f);
  free(by_rank);
}

/* ---------------------------------------------------------------- sections */

static void kv(FILE *f, const char *k) { fprintf(f, "<tr><th>%s</th><td>", k); }

static void section_input(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32];
  uint64_t written = 0, dropped = 0, excl = 0;
  for (int c = 0; c < j->ncomms; c++) {
    written += j->comms[c].written[0] + j->comms[c].written[1];
    dropped += j->comms[c].dropped[0] + j->comms[c].dropped[1];
  }
  for (int e = 0; e < RPT_NEXCL; e++) excl += j->excluded[e];
  fputs("<section id=\"input\"><h2>Input</h2>\n<div class=\"tiles\">", f);
  fprintf(f, "<div><b>%" PRIu64 "</b>records</div>", j->records);
  fprintf(f, "<div><b>%ld</b>files</div>", j->files);
  fprintf(f, "<div><b>%d</b>communicators</div>", j->ncomms);
  fprintf(f, "<div><b>%d</b>processes</div>", j->nclocks);
  fprintf(f, "<div%s><b>%" PRIu64 "</b>excluded</div>", excl ? " class=\"warn\"" : "", excl);
  fprintf(f, "<div%s><b>%" PRIu64 "</b>dropped</div>", dropped ? " class=\"bad\"" : "", dropped);
  fprintf(f, "<div%s><b>%d</b>stragglers</div>", j->nstragglers ? " class=\"bad\"" : "", j->nstragglers);
  fprintf(f, "<div%s><b>%d</b>slow links</div>", j->nlinks ? " class=\"bad\"" : "", j->nlinks);
  fputs("</div>\n<div class=\"cols\"><table class=\"kv\">", f);
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
    put_text(f, j->sampling);
    if (j->covered_hi >= 0)
      fprintf(f, "; timed share %s to %s", pct(j->covered_lo, a, sizeof a), pct(j->covered_hi, b, sizeof b));
  }
  fputs("</td></tr>\n", f);
  kv(f, "op sample");
  fprintf(f, "%zu records", j->nops);
  if (j->sample_shift)
    fprintf(f, " <span class=\"warn\">(1 op in %llu kept for the cross-rank analysis)</span>",
            1ULL << (j->sample_shift < 63 ? j->sample_shift : 63));
  fputs("</td></tr></table>\n", f);

  fputs("<table class=\"kv\"><tr><th colspan=\"2\" class=\"sub\">Clock alignment</th></tr>\n", f);
  if (!j->have_starts) {
    kv(f, "GPU start times");
    fputs("absent: no alignment, no lateness</td></tr>\n", f);
  } else {
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
    fprintf(f, "p50 %s us, p95 %s us</td></tr>\n", num(j->resid_p50_ns / 1e3, a, sizeof a),
            num(j->resid_p95_ns / 1e3, b, sizeof b));
    kv(f, "offsets");
    double unit = fabs(j->offset_min_ns) >= 1e6 || fabs(j->offset_max_ns) >= 1e6 ? 1e6 : 1e3;
    fprintf(f, "%s to %s %s <span class=\"mut\">(GPU clocks against the median clock)</span></td></tr>\n",
            num(j->offset_min_ns / unit, a, sizeof a), num(j->offset_max_ns / unit, b, sizeof b),
            unit == 1e6 ? "ms" : "us");
    kv(f, "drift");
    fprintf(f, "%s to %s ppm <span class=\"mut\">(rates against the median clock; %d clocks with a rate, %d of them "
               "piecewise)</span></td></tr>\n",
            num(j->drift_min_ppm, a, sizeof a), num(j->drift_max_ppm, b, sizeof b),
            j->clocks_line + j->clocks_windows, j->clocks_windows);
    kv(f, "lateness threshold");
    fprintf(f, "%s us", num(j->late_threshold_ns / 1e3, a, sizeof a));
    if (j->late_threshold_raised)
      fprintf(f, " <span class=\"warn\">(--late-us %s us raised to 3 x the residual p95: the clocks align no "
                 "finer)</span>", num(j->opt.late_ns / 1e3, b, sizeof b));
    fputs("</td></tr>\n", f);
    kv(f, "ops used");
    fprintf(f, "%" PRIu64 "</td></tr>\n", j->align_ops);
  }
  fputs("</table></div></section>\n", f);
}

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
    put_text(f, cm->name);
    fprintf(f, "</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td>%s</td>"
               "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td>",
            cm->nranks, cm->ranks_seen, cm->nnodes, rpt_kind_name(cm->kind), pg->comm_records[c],
            cm->dropped[0] + cm->dropped[1]);
    if (cm->covered_hi >= 0) fprintf(f, "%s to %s", pct(cm->covered_lo, a, sizeof a), pct(cm->covered_hi, b, sizeof b));
    else fputs("all", f);
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (j->ncomms > MAX_COMM_SECTIONS)
    fprintf(f, "<p class=\"mut\">Charts below for the %d communicators with the most records.</p>\n",
            MAX_COMM_SECTIONS);
  fputs("</section>\n", f);
}

static void put_host(FILE *f, int host) {
  if (host < 0) fputs("?", f);
  else put_text(f, rpt_str(host));
}

/* A finding's evidence cell: "k of n units", then its confidence ("not enough data": below the
 * minimum). */
static void put_evidence(FILE *f, uint64_t k, uint64_t n, const char *units, const char *conf) {
  fprintf(f, "<td class=\"n\">%" PRIu64 " of %" PRIu64 " %s</td><td>%s</td>", k, n, units, conf);
}

/* A late rank's row of the straggler table (named, or too few ops). */
static void straggler_row(struct page *pg, const struct rpt_straggler *s) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32], d[32], e[32], sz[32];
  const struct rpt_rank_stat *st = s->stat;
  struct rpt_late_judge tmp;
  const struct rpt_late_judge *g = rpt_straggler_judge(s, &tmp);
  fputs("<tr><td>", f);
  put_comm_short(f, j, s->comm);
  fprintf(f, "</td><td class=\"n\">%d</td><td>", s->rank);
  put_host(f, s->host);
  if (s->pid >= 0) fprintf(f, "</td><td class=\"n\">%lld</td>", s->pid);
  else fputs("</td><td class=\"n\">?</td>", f);
  fprintf(f, "<td>%s</td>", s->p2p ? "Send/Recv" : "collectives");
  if (g->onset_window)
    fprintf(f, "<td class=\"n\">window %d of %d</td>", g->onset_window + 1, g->windows);
  else
    fputs("<td class=\"n\">start</td>", f);
  fprintf(f, "<td class=\"n\">%s</td>", pct(g->share, a, sizeof a));
  if (!s->p2p && st && st->ops) {
    fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s vs %s</td><td>",
            pct((double)st->last_ops / (double)st->ops, b, sizeof b), num(g->late_med_ns / 1e3, d, sizeof d),
            num(st->med_exec_ns / 1e3, e, sizeof e), num(st->others_med_exec_ns / 1e3, sz, sizeof sz));
    if (st->top_op >= 0) {
      put_text(f, rpt_str(st->top_op));
      fprintf(f, " <span class=\"mut\">(late in %s)</span>", pct(st->top_op_share, a, sizeof a));
    }
    fputs("</td>", f);
  } else {
    fprintf(f, "<td class=\"n\">-</td><td class=\"n\">%s</td><td class=\"n\">-</td><td>-</td>",
            num(g->late_med_ns / 1e3, d, sizeof d));
  }
  put_evidence(f, g->since_late, g->since_ops, s->p2p ? "transfers late" : "ops late",
               g->verdict == RPT_LATE_NAMED ? rpt_conf_name(g->conf) : "not enough data");
  fputs("</tr>\n", f);
}

static void section_findings(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  char a[32], b[32], d[32], sz[32];
  fputs("<section id=\"findings\"><h2>Findings</h2>\n<h3 id=\"stragglers\">Stragglers</h3>\n", f);
  if (!j->nstragglers) {
    fprintf(f, "<p class=\"ok\">None: no rank started %s us or more after the others in %s of its ops since it "
               "became late.</p>\n",
            num((j->have_starts ? j->late_threshold_ns : j->opt.late_ns) / 1e3, a, sizeof a),
            pct(j->opt.late_share, b, sizeof b));
  } else {
    fputs("<table class=\"grid\"><thead><tr><th>communicator</th><th class=\"n\">rank</th><th>host</th>"
          "<th class=\"n\">pid</th><th>late in</th><th class=\"n\">since</th><th class=\"n\">late share since</th>"
          "<th class=\"n\">last share</th><th class=\"n\">median lateness when late (us)</th>"
          "<th class=\"n\">exec p50 (us) vs others</th><th>top op</th><th class=\"n\">evidence</th>"
          "<th>confidence</th></tr></thead><tbody>\n",
          f);
    for (int i = 0; i < j->nstragglers; i++) straggler_row(pg, &j->stragglers[i]);
    fputs("</tbody></table>\n", f);
  }
  if (j->nfew_stragglers) {
    fprintf(f, "<p class=\"mut\">Not enough data (late by the rule in fewer than %d ops, not named):</p>\n"
               "<table class=\"grid\"><thead><tr><th>communicator</th><th class=\"n\">rank</th><th>host</th>"
               "<th class=\"n\">pid</th><th>late in</th><th class=\"n\">since</th><th class=\"n\">late share "
               "since</th><th class=\"n\">last share</th><th class=\"n\">median lateness when late (us)</th>"
               "<th class=\"n\">exec p50 (us) vs others</th><th>top op</th><th class=\"n\">evidence</th>"
               "<th>confidence</th></tr></thead><tbody>\n",
            RPT_MIN_LATE_OPS);
    for (int i = 0; i < j->nfew_stragglers; i++) straggler_row(pg, &j->few_stragglers[i]);
    fputs("</tbody></table>\n", f);
  }

  fputs("<h3 id=\"links\">Slow links</h3>\n", f);
  if (!j->nlinks) {
    fprintf(f, "<p class=\"ok\">None below %s x the median link of their class.</p>\n",
            num(j->opt.slow_link_ratio, a, sizeof a));
  }
  if (j->nlinks || j->nfew_links) { /* those on too few transfers too, as "not enough data" */
    /* a row per link, its worst (op, size) in view; every (op, size) folded below it */
    fputs("<table class=\"grid\"><thead><tr><th>link</th><th>communicator</th><th>worst</th>"
          "<th class=\"n\">busbw p50 vs its class (GB/s)</th><th class=\"n\">ratio</th><th>slow in</th>"
          "<th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
          f);
    for (int i = 0; i < j->nlinks + j->nfew_links; i++) {
      const struct rpt_link *l = i < j->nlinks ? &j->links[i] : &j->few_links[i - j->nlinks];
      const struct rpt_link_finding *w = NULL;
      for (int k = 0; k < l->nfind; k++)
        if (l->find[k].class_p50 > 0 &&
            (!w || l->find[k].busbw_p50 / l->find[k].class_p50 < w->busbw_p50 / w->class_p50))
          w = &l->find[k];
      fputs("<tr><td>", f);
      if (l->host < 0) {
        put_host(f, l->a);
        fputs(" &harr; ", f);
        put_host(f, l->b);
      } else {
        fprintf(f, "rank %d &harr; rank %d on ", l->a, l->b);
        put_host(f, l->host);
      }
      fputs("</td><td>", f);
      put_comm_short(f, j, w ? w->comm : l->comm);
      fputs("</td><td>", f);
      if (w) {
        put_text(f, rpt_str(w->op));
        fprintf(f, " %s</td><td class=\"n\">%s vs %s</td>", rpt_human_bytes(w->bytes, sz, sizeof sz),
                num(w->busbw_p50, a, sizeof a), num(w->class_p50, b, sizeof b));
      } else {
        fputs("-</td><td class=\"n\">-</td>", f);
      }
      fprintf(f, "<td class=\"n\">%s</td><td>", num(l->worst_ratio, d, sizeof d));
      fprintf(f, "<details><summary>%d (op, size) group%s</summary><table class=\"grid\"><tr><th>op</th>"
                 "<th class=\"n\">size</th><th class=\"n\">busbw p50</th><th class=\"n\">class p50</th>"
                 "<th class=\"n\">samples</th><th class=\"n\">links compared</th></tr>",
              l->nfind, l->nfind == 1 ? "" : "s");
      for (int k = 0; k < l->nfind; k++) {
        const struct rpt_link_finding *x = &l->find[k];
        fputs("<tr><td>", f);
        put_text(f, rpt_str(x->op));
        fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                   "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%d</td></tr>",
                rpt_human_bytes(x->bytes, sz, sizeof sz), num(x->busbw_p50, a, sizeof a),
                num(x->class_p50, b, sizeof b), x->samples, x->class_links);
      }
      fputs("</table></details></td>", f);
      put_evidence(f, (uint64_t)l->pairs_below, (uint64_t)l->pairs, "rank pairs below",
                   i >= j->nlinks ? "not enough data" : rpt_conf_name(l->conf));
      fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
  }

  fputs("<h3 id=\"nodes\">Slow nodes</h3>\n", f);
  if (!j->nslow_nodes) {
    fputs("<p class=\"ok\">None: no node all of whose links are slow.</p>\n", f);
  } else {
    fputs("<table class=\"grid\"><thead><tr><th>host</th><th class=\"n\">slow links</th><th class=\"n\">worst "
          "ratio</th><th class=\"n\">evidence</th><th>confidence</th></tr></thead><tbody>\n",
          f);
    for (int i = 0; i < j->nslow_nodes; i++) {
      fputs("<tr><td>", f);
      put_host(f, j->slow_nodes[i].host);
      fprintf(f, "</td><td class=\"n\">%d</td><td class=\"n\">%s</td>", j->slow_nodes[i].links,
              num(j->slow_nodes[i].worst_ratio, a, sizeof a));
      put_evidence(f, (uint64_t)j->slow_nodes[i].pairs_below, (uint64_t)j->slow_nodes[i].pairs, "rank pairs below",
                   rpt_conf_name(j->slow_nodes[i].conf));
      fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
  }

  fputs("<h3 id=\"changes\">Bandwidth changes</h3>\n", f);
  if (!j->nchanges) {
    fprintf(f, "<p class=\"ok\">None by %s x or more within a group.</p>\n", num(j->opt.change_ratio, a, sizeof a));
  } else {
    /* the first few in view, the others folded: the small multiples below show them too */
    const int shown = 6;
    for (int i = 0; i < j->nchanges; i++) {
      if (i == 0 || i == shown) {
        if (i == shown)
          fprintf(f, "</tbody></table>\n<details><summary>%d more</summary>", j->nchanges - shown);
        fputs("<table class=\"grid\"><thead><tr><th>communicator</th><th>op</th><th class=\"n\">size</th>"
              "<th class=\"n\">at (s since the group's first bin)</th><th class=\"n\">before (GB/s)</th>"
              "<th class=\"n\">after (GB/s)</th><th class=\"n\">ratio</th><th class=\"n\">evidence</th>"
              "<th>confidence</th></tr></thead><tbody>\n",
              f);
      }
      const struct rpt_change *ch = &j->changes[i];
      if (ch->group < 0 || ch->group >= j->ngroups) continue;
      const struct rpt_group *g = &j->groups[ch->group];
      fputs("<tr><td>", f);
      put_comm_short(f, j, g->comm);
      fputs("</td><td>", f);
      put_text(f, rpt_str(g->op));
      fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%.3f</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                 "<td class=\"n\">%s</td>",
              rpt_human_bytes(g->bytes, sz, sizeof sz),
              ch->t_ns > g->series.t0_ns ? (double)(ch->t_ns - g->series.t0_ns) / 1e9 : 0.0,
              num(ch->before_gbs, a, sizeof a), num(ch->after_gbs, b, sizeof b),
              num(ch->before_gbs > 0 ? ch->after_gbs / ch->before_gbs : NAN, d, sizeof d));
      put_evidence(f, (uint64_t)(ch->agree_before + ch->agree_after), (uint64_t)(ch->bins_before + ch->bins_after),
                   "time bins on their side", rpt_conf_name(ch->conf));
      fputs("</tr>\n", f);
    }
    fputs(j->nchanges > shown ? "</tbody></table></details>\n" : "</tbody></table>\n", f);
  }
  fputs("</section>\n", f);
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
    const struct gq *q = &pg->q[i];
    uint64_t ex = 0;
    for (int k = 0; k < RPT_NEXCL; k++) ex += g->excluded[k];
    fputs("<tr><td>", f);
    put_text(f, rpt_str(g->op));
    fprintf(f, "</td><td class=\"n\">%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
               "</td><td class=\"n\">%s / %s / %s</td><td class=\"n\">%s / %s / %s</td></tr>\n",
            rpt_human_bytes(g->bytes, sz, sizeof sz), g->records, ex, num(q->t50 / 1e3, a, sizeof a),
            num(q->t95 / 1e3, b, sizeof b), num(q->t99 / 1e3, d, sizeof d), num(q->b10, e, sizeof e),
            num(q->b50, g1, sizeof g1), num(q->b90, g2, sizeof g2));
  }
  fputs("</tbody></table></details>\n", f);
}

static void section_comm(struct page *pg, int c) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  const struct rpt_comm *cm = &j->comms[c];
  fprintf(f, "<section class=\"comm\" id=\"comm-%d\"><h2>", c);
  put_comm(f, j, c);
  fprintf(f, "</h2>\n<p class=\"mut\">%d ranks on %d node%s, %s; %" PRIu64 " records</p>\n", cm->nranks, cm->nnodes,
          cm->nnodes == 1 ? "" : "s", rpt_kind_name(cm->kind), pg->comm_records[c]);
  struct run r[MAX_RUNS];
  int nr = comm_runs(pg, c, r, MAX_RUNS);
  if (nr) {
    put_legend(f, j, r, nr);
    fputs("<div class=\"charts\">\n", f);
    chart_busbw(pg, c, r, nr);
    chart_time(pg, c, r, nr);
    fputs("</div>\n", f);
  }
  heat_maps(pg, c);
  if (nr) group_table(pg, c);
  fputs("</section>\n", f);
}

/* ---------------------------------------------------------------- bandwidth over time */

static int nonempty_bins(const struct rpt_series *s) {
  int n = 0;
  for (int i = 0; i < s->nbins; i++) n += s->count[i] > 0;
  return n;
}

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
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  const struct rpt_group *g = &j->groups[gi];
  const struct rpt_series *s = &g->series;
  struct frame fr = {340, 190, 48, 12, 10, 36};
  double ymax = 0;
  for (int i = 0; i < s->nbins; i++)
    if (s->count[i] && (double)s->sum_mbs[i] / s->count[i] / 1e3 > ymax)
      ymax = (double)s->sum_mbs[i] / s->count[i] / 1e3;
  char sz[32], a[32], b[32], d[32];
  fputs("<figure><figcaption>", f);
  put_text_n(f, g->comm >= 0 && g->comm < j->ncomms ? j->comms[g->comm].name : "?", 28);
  fputs(" &middot; ", f);
  put_text(f, rpt_str(g->op));
  fprintf(f, " %s <span class=\"mut\">%" PRIu64 " records</span></figcaption>\n",
          rpt_human_bytes(g->bytes, sz, sizeof sz), g->records);
  double span_s = (double)s->width_ns * s->nbins / 1e9;
  struct scale x = {0, span_s > 0 ? span_s : 1, false, fr.l, fr.w - fr.r};
  double step = nice_step((ymax > 0 ? ymax : 1) * 1.1 / 4);
  struct scale y = {0, step * ceil((ymax > 0 ? ymax : 1) * 1.1 / step), false, fr.h - fr.b, fr.t};
  svg_open(f, &fr, "Bus bandwidth (GB/s) over time (s)");
  axis_y(f, &fr, &y, "busbw (GB/s)");
  /* x ticks: seconds since the group's first bin */
  double xs = nice_step(x.hi / 4);
  for (double v = 0; v <= x.hi * (1 + 1e-9); v += xs) {
    double px = sc(&x, v);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>", px, fr.h - fr.b + 14, v);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">seconds since the first bin</text>\n",
          fr.l + (fr.w - fr.l - fr.r) / 2, fr.h - 4);
  /* The line joins the bins that have records: an empty bin means no op ran then, not a
   * bandwidth of zero. Points too, unless there are so many that they would hide the line. */
  double bw_s = (double)s->width_ns / 1e9;
  fprintf(f, "<polyline class=\"line\" stroke=\"%s\" points=\"", k_palette[0]);
  for (int i = 0; i < s->nbins; i++)
    if (s->count[i])
      fprintf(f, "%.1f,%.1f ", sc(&x, (i + 0.5) * bw_s), sc(&y, (double)s->sum_mbs[i] / s->count[i] / 1e3));
  fputs("\"/>\n", f);
  if (nonempty_bins(s) <= 60)
    for (int i = 0; i < s->nbins; i++)
      if (s->count[i]) {
        double v = (double)s->sum_mbs[i] / s->count[i] / 1e3;
        fprintf(f, "<circle fill=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" data-tip=\"%.3f s: %s GB/s (%u records)\"/>",
                k_palette[0], sc(&x, (i + 0.5) * bw_s), sc(&y, v), (i + 0.5) * bw_s, num(v, a, sizeof a), s->count[i]);
      }
  for (int i = 0; i < j->nchanges; i++) {
    const struct rpt_change *ch = &j->changes[i];
    if (ch->group != gi || ch->t_ns < s->t0_ns) continue;
    double t = (double)(ch->t_ns - s->t0_ns) / 1e9, px = sc(&x, t);
    fprintf(f, "<line class=\"chg\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
               "data-tip=\"change at %.3f s: %s -> %s GB/s\"/>",
            px, fr.t, px, fr.h - fr.b, t, num(ch->before_gbs, b, sizeof b), num(ch->after_gbs, d, sizeof d));
    fprintf(f, "<text class=\"chgl\" x=\"%.1f\" y=\"%d\">%s&rarr;%s</text>\n", px + 3, fr.t + 10, b, d);
  }
  fputs("</svg></figure>\n", f);
}

static void section_series(struct page *pg) {
  FILE *f = pg->f;
  struct rpt_job *j = pg->j;
  int *sel = malloc((size_t)(j->ngroups ? j->ngroups : 1) * sizeof *sel), n = 0;
  if (!sel) return;
  for (int g = 0; g < j->ngroups; g++) {
    const struct rpt_series *s = &j->groups[g].series;
    if (s->nbins >= 3 && s->count && s->sum_mbs && s->width_ns && nonempty_bins(s) >= 2) sel[n++] = g;
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

static const char k_style[] =
    ":root{--fg:#1f2328;--mut:#656d76;--bd:#d0d7de;--soft:#f6f8fa}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;"
    "color:var(--fg);background:#fff}"
    "header.top{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--bd);padding:10px 24px;"
    "display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}"
    "header.top h1{font-size:18px;margin:0}header.top nav a{margin-right:14px}"
    "main{max-width:1280px;margin:0 auto;padding:8px 24px 48px}"
    "h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--bd)}"
    "h3{font-size:14px;margin:18px 0 6px}"
    "a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}"
    ".mut{color:var(--mut);font-weight:400}.warn{color:#9a6700}.bad{color:#cf222e}.ok{color:#1a7f37}"
    ".empty{color:var(--mut);font-style:italic}"
    ".tiles{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0 14px}"
    ".tiles div{background:var(--soft);border:1px solid var(--bd);border-radius:6px;padding:8px 14px;"
    "min-width:110px;color:var(--mut);font-size:12px}"
    ".tiles b{display:block;font-size:22px;color:var(--fg);font-variant-numeric:tabular-nums}"
    ".tiles .warn b{color:#9a6700}.tiles .bad b{color:#cf222e}"
    ".cols{display:flex;flex-wrap:wrap;gap:32px;align-items:flex-start}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{padding:3px 10px;text-align:left;vertical-align:top}"
    "table.kv th{color:var(--mut);font-weight:500;white-space:nowrap}table.kv th.sub{color:var(--fg);font-weight:600}"
    "table.grid{margin:4px 0 8px}table.grid th{border-bottom:2px solid var(--bd);font-weight:600;white-space:nowrap}"
    "table.grid td{border-bottom:1px solid #eaeef2}table.grid tr:hover td{background:var(--soft)}"
    "th.n,td.n{text-align:right}"
    ".charts{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}"
    "figure{margin:0 0 12px;border:1px solid var(--bd);border-radius:6px;padding:8px 10px;background:#fff}"
    "figcaption{font-weight:600;font-size:13px;margin-bottom:4px}"
    ".sm{display:grid;grid-template-columns:repeat(auto-fill,minmax(362px,1fr));gap:12px}"
    ".legend{display:flex;flex-wrap:wrap;gap:14px;margin:4px 0 8px;font-size:13px}"
    ".legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}"
    "svg.chart{display:block;overflow:visible}"
    "svg text{font-size:11px;fill:#57606a}svg text.al{fill:#24292f;font-size:11.5px}"
    "svg .gr{stroke:#eaeef2}svg .ax{stroke:#8c959f}svg .tk{stroke:#8c959f}"
    "svg .band{fill-opacity:.16;stroke:none}svg .line{fill:none;stroke-width:2}"
    "svg .pt{stroke:#fff;stroke-width:1}svg.heat rect{stroke:#fff;stroke-width:.5}svg.big rect{stroke-width:1}"
    "svg.heat rect.lg{stroke:#c8ced6;stroke-width:1}"
    "svg rect.strag{stroke:#111;stroke-width:1.5}"
    "svg .chg{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:4 3}svg .chgl{fill:#cf222e;font-size:10px}"
    "[data-tip]:hover{opacity:.8}"
    "details summary{cursor:pointer;color:var(--mut);margin:4px 0}"
    "#tip{position:fixed;pointer-events:none;background:#24292f;color:#fff;padding:5px 8px;border-radius:4px;"
    "font-size:12px;max-width:460px;display:none;z-index:20}"
    "footer{color:var(--mut);font-size:12px;margin-top:32px}";

/* Hover tooltips from data-tip; the last statement marks the page as rendered (the tests read it). */
static const char k_script[] =
    "(function(){var t=document.getElementById('tip');"
    "document.addEventListener('mousemove',function(e){"
    "var el=e.target&&e.target.closest?e.target.closest('[data-tip]'):null;"
    "if(!el){t.style.display='none';return;}"
    "t.textContent=el.getAttribute('data-tip');t.style.display='block';"
    "var x=e.clientX+14,y=e.clientY+14;"
    "if(x+t.offsetWidth>innerWidth-4)x=e.clientX-t.offsetWidth-10;"
    "if(y+t.offsetHeight>innerHeight-4)y=e.clientY-t.offsetHeight-10;"
    "t.style.left=x+'px';t.style.top=y+'px';});"
    "document.body.dataset.ok='1';})();";

/* Communicators by records, most first (ties: job order). */
static int cmp_comm(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  uint64_t ra = g_pg->comm_records[a], rb = g_pg->comm_records[b];
  if (ra != rb) return ra > rb ? -1 : 1;
  return a < b ? -1 : a > b;
}

static int page_model(struct page *pg) {
  struct rpt_job *j = pg->j;
  size_t nc = (size_t)(j->ncomms ? j->ncomms : 1), ng = (size_t)(j->ngroups ? j->ngroups : 1);
  pg->q = calloc(ng, sizeof *pg->q);
  pg->comm_g0 = calloc(nc, sizeof *pg->comm_g0);
  pg->comm_g1 = calloc(nc, sizeof *pg->comm_g1);
  pg->comm_records = calloc(nc, sizeof *pg->comm_records);
  if (!pg->q || !pg->comm_g0 || !pg->comm_g1 || !pg->comm_records) return -1;
  for (int g = 0; g < j->ngroups; g++) {
    struct rpt_group *gr = &j->groups[g];
    struct gq *q = &pg->q[g];
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

  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
             "<title>Inspector report</title>\n<style>%s</style></head>\n<body>\n",
          k_style);
  fputs("<header class=\"top\"><h1>Inspector report</h1><nav><a href=\"#input\">Input</a>"
        "<a href=\"#comms\">Communicators</a><a href=\"#findings\">Findings</a>",
        f);
  if (j->ncomms) fprintf(f, "<a href=\"#comm-%d\">Charts</a>", order[0]);
  fputs("<a href=\"#time\">Over time</a></nav></header>\n<main>\n", f);
  section_input(&pg);
  section_comms(&pg, order);
  section_findings(&pg);
  for (int k = 0; k < j->ncomms && k < MAX_COMM_SECTIONS; k++) section_comm(&pg, order[k]);
  section_series(&pg);
  fputs("<footer>Written by inspector-report. Times are GPU kernel times; busbw in GB/s (10<sup>9</sup> bytes/s); "
        "sizes in binary units.</footer>\n</main>\n<div id=\"tip\"></div>\n<script>",
        f);
  fputs(k_script, f);
  fputs("</script>\n</body></html>\n", f);
  rc = 0;
fail:
  free(order);
  free(pg.q);
  free(pg.comm_g0);
  free(pg.comm_g1);
  free(pg.comm_records);
  free(g_name_shared);
  g_name_shared = NULL, g_named_job = NULL;
  return rpt_out_close(&o, rc);
}
