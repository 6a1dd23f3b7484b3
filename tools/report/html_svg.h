/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_svg.h - the HTML page's drawing kit: text, figures, colours, scales and axes,
 * written as HTML and inline SVG straight to a FILE.
 *
 * Owns: how a string from the logs becomes safe HTML (html_text: escaped, control
 * characters and invalid UTF-8 as U+FFFD, by the plugin's own UTF-8 rule, so that no log
 * can inject markup or break the page); how a figure, a tick and a share are printed; the
 * palette of the lines and the diverging colour map of the heat maps; the scales (linear,
 * log) and the axes every chart shares.
 *
 * Does not own: anything of the job model (job.h). It draws numbers and strings; which
 * ones, and what they mean, is html_charts.c's (the charts) and out_html.c's (the page).
 */
#ifndef RPT_HTML_SVG_H
#define RPT_HTML_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* s as HTML text or attribute value (the five specials escaped), at most `max` characters
 * (then "…"; max < 0: all). Control characters and invalid UTF-8 become U+FFFD. NULL: "". */
void html_text_n(FILE *f, const char *s, int max);
void html_text(FILE *f, const char *s);

/* Figures into the caller's buffer, which is returned (for one printf of several). */
const char *html_num(double v, char *out, size_t n);        /* ~3 significant digits: 0.123, 12.3, 1234 */
const char *html_tick_label(double v, char *out, size_t n); /* an axis tick: 0.5, 20, 1k, 10k, 1M */
const char *html_pct(double share, char *out, size_t n);    /* 0.125 -> "12.5%" */

/* The k-th line's colour (k >= 0; the palette repeats after ten). */
const char *html_colour(int k);

/* Diverging blue - white - red (ColorBrewer RdBu) for t in [-1, 1] as "#rrggbb"; t > 0 is the
 * bad side; outside [-1, 1] clipped, NaN white. */
void html_diverging(double t, char *out, size_t n);

struct html_scale {
  double lo, hi; /* data range; log scales need lo > 0 */
  bool log;
  double p0, p1; /* pixels */
};

/* v's pixel on s (below lo on a log scale: lo's). */
double html_px(const struct html_scale *s, double v);

/* 1, 2 or 5 x 10^k, the first at or above v (1 when v is not positive). */
double html_nice_step(double v);

struct html_frame {
  int w, h;       /* the SVG */
  int l, r, t, b; /* margins: the plot is [l, w - r] x [t, h - b] */
};

/* Opens a chart's <svg> with its title (escaped); the caller closes it. */
void html_svg_open(FILE *f, const struct html_frame *fr, const char *title);

/* The x axis of message sizes: log2, a tick per power of two (every 2nd, 4th... when crowded). */
void html_axis_bytes(FILE *f, const struct html_frame *fr, const struct html_scale *x);

/* The y axis with grid lines: linear from lo, or log with ticks at 1-2-5 or decades. `label` is
 * written as it is (markup allowed: the callers' own constants). */
void html_axis_y(FILE *f, const struct html_frame *fr, const struct html_scale *y, const char *label);

#endif /* RPT_HTML_SVG_H */
