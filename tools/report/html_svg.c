/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_svg.c - the HTML page's drawing kit (html_svg.h): escaping, figures, colours,
 * scales and axes.
 *
 * Owns: the bytes of the page's smallest pieces, shared by every chart and section, so that
 * one rule escapes every string and one axis looks the same on every chart. It knows
 * nothing of the job model (job.h): the charts (html_charts.c) and the page (out_html.c)
 * decide what is drawn.
 *
 * Escaping walks the string with src/core/utf8.h, the rule the plugin writes its logs by:
 * what the plugin would have written as U+FFFD is shown as U+FFFD here too.
 */
#include "html_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

/* ---------------------------------------------------------------- text */

void html_text_n(FILE *f, const char *s, int max) {
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

void html_text(FILE *f, const char *s) { html_text_n(f, s, -1); }

/* ---------------------------------------------------------------- figures */

const char *html_num(double v, char *out, size_t n) {
  double a = fabs(v);
  if (!isfinite(v)) snprintf(out, n, "-");
  else if (a >= 100 || a == 0) snprintf(out, n, "%.0f", v);
  else if (a >= 10) snprintf(out, n, "%.1f", v);
  else if (a >= 1) snprintf(out, n, "%.2f", v);
  else snprintf(out, n, "%.3f", v);
  return out;
}

const char *html_tick_label(double v, char *out, size_t n) {
  if (v >= 1e6) snprintf(out, n, "%gM", v / 1e6);
  else if (v >= 1e4) snprintf(out, n, "%gk", v / 1e3);
  else snprintf(out, n, "%g", v);
  return out;
}

const char *html_pct(double share, char *out, size_t n) {
  snprintf(out, n, "%.1f%%", 100.0 * share);
  return out;
}

/* ---------------------------------------------------------------- colours */

static const char *const k_palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                        "#b07aa1", "#edc948", "#ff9da7", "#9c755f", "#7f7f7f"};
#define NPALETTE ((int)(sizeof k_palette / sizeof k_palette[0]))

const char *html_colour(int k) { return k_palette[k % NPALETTE]; }

void html_diverging(double t, char *out, size_t n) {
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

/* ---------------------------------------------------------------- scales and axes */

double html_px(const struct html_scale *s, double v) {
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

double html_nice_step(double v) {
  if (!(v > 0)) return 1;
  double p = pow(10, floor(log10(v)));
  return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

void html_svg_open(FILE *f, const struct html_frame *fr, const char *title) {
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>", fr->w,
          fr->h, fr->w, fr->h);
  html_text(f, title);
  fputs("</title>\n", f);
}

void html_axis_bytes(FILE *f, const struct html_frame *fr, const struct html_scale *x) {
  int k0 = (int)ceil(log2(x->lo) - 1e-9), k1 = (int)floor(log2(x->hi) + 1e-9);
  int step = 1;
  while ((k1 - k0) / step > 8) step *= 2;
  int yb = fr->h - fr->b;
  for (int k = k0; k <= k1; k++) {
    if (k < 0 || k > 62 || (k - k0) % step) continue;
    double px = html_px(x, ldexp(1, k));
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    fprintf(f, "<line class=\"tk\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", px, yb, px, yb + 4);
    /* a power of two is a whole number of its unit: "64 KiB", shorter than rpt_human_bytes' "64.0 KiB" */
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d %s</text>\n", px, yb + 16, 1 << (k % 10),
            unit[k / 10]);
  }
  fprintf(f, "<text class=\"al\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">message size (log2)</text>\n",
          fr->l + (fr->w - fr->l - fr->r) / 2, fr->h - 6);
}

/* A grid line across the plot at py, and its tick label left of the axis. */
static void grid_tick(FILE *f, const struct html_frame *fr, double py, double v) {
  char lb[32];
  fprintf(f, "<line class=\"gr\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", fr->l, py, fr->w - fr->r, py);
  fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", fr->l - 5, py + 3.5,
          html_tick_label(v, lb, sizeof lb));
}

void html_axis_y(FILE *f, const struct html_frame *fr, const struct html_scale *y, const char *label) {
  int xr = fr->w - fr->r;
  if (y->log) {
    int d0 = (int)floor(log10(y->lo) + 1e-9), d1 = (int)ceil(log10(y->hi) - 1e-9);
    static const double mant[3] = {1, 2, 5};
    int nm = d1 - d0 <= 2 ? 3 : 1;
    for (int d = d0; d <= d1; d++)
      for (int m = 0; m < nm; m++) {
        double v = mant[m] * pow(10, d);
        if (v < y->lo * (1 - 1e-9) || v > y->hi * (1 + 1e-9)) continue;
        grid_tick(f, fr, html_px(y, v), v);
      }
  } else {
    double step = html_nice_step((y->hi - y->lo) / 5);
    for (double v = y->lo; v <= y->hi * (1 + 1e-9); v += step)
      grid_tick(f, fr, html_px(y, v), fabs(v) < step * 1e-6 ? 0 : v);
  }
  int cy = fr->t + (fr->h - fr->t - fr->b) / 2;
  fprintf(f, "<text class=\"al\" transform=\"translate(12 %d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
          cy, label);
  fprintf(f, "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", fr->l, fr->h - fr->b, xr, fr->h - fr->b);
  fprintf(f, "<line class=\"ax\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", fr->l, fr->t, fr->l, fr->h - fr->b);
}
