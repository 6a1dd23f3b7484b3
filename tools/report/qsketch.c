/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qsketch.c - exact values, then a log-scale histogram (see qsketch.h).
 *
 * Bucket of a value v > 0: octave e = floor(log2 v) and sub-bucket
 * s = floor((v / 2^e - 1) * RPT_QS_SUB), from frexp, so no log() per value. A
 * bucket's quantile is its geometric middle, within half a bucket (2^(1/128)
 * - 1 = 0.54%) of any value in it; min and max are kept exactly, so q = 0 and
 * q = 1 are exact in both modes.
 */
#include "qsketch.h"
#include "../common/xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bucket_of(double v, int *oct, int *sub) {
  int e;
  double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
  *oct = e - 1;
  int s = (int)((2 * m - 1) * RPT_QS_SUB);
  *sub = s < RPT_QS_SUB ? s : RPT_QS_SUB - 1;
}

/* Make octave `oct` part of the histogram's range. */
static void cover(struct rpt_qs *q, int oct) {
  if (q->noct == 0) {
    q->lo_oct = oct;
    q->noct = 1;
    q->bins = xrealloc(NULL, RPT_QS_SUB * sizeof *q->bins);
    memset(q->bins, 0, RPT_QS_SUB * sizeof *q->bins);
    return;
  }
  int lo = oct < q->lo_oct ? oct : q->lo_oct;
  int hi = oct >= q->lo_oct + q->noct ? oct + 1 : q->lo_oct + q->noct;
  if (lo == q->lo_oct && hi == q->lo_oct + q->noct) return;
  uint64_t *nb = xrealloc(NULL, (size_t)(hi - lo) * RPT_QS_SUB * sizeof *nb);
  memset(nb, 0, (size_t)(hi - lo) * RPT_QS_SUB * sizeof *nb);
  memcpy(nb + (size_t)(q->lo_oct - lo) * RPT_QS_SUB, q->bins, (size_t)q->noct * RPT_QS_SUB * sizeof *nb);
  free(q->bins);
  q->bins = nb;
  q->lo_oct = lo;
  q->noct = hi - lo;
}

static void hist_add(struct rpt_qs *q, double v, uint64_t count) {
  if (!(v > 0)) {
    q->zeros += count;
    return;
  }
  int oct, sub;
  bucket_of(v, &oct, &sub);
  cover(q, oct);
  q->bins[(size_t)(oct - q->lo_oct) * RPT_QS_SUB + (size_t)sub] += count;
}

/* Exact values -> histogram (n is unchanged). */
static void to_hist(struct rpt_qs *q) {
  double *v = q->v;
  uint64_t n = q->n;
  q->v = NULL;
  q->cap = 0;
  for (uint64_t i = 0; i < n; i++) hist_add(q, v[i], 1);
  free(v);
}

static bool is_hist(const struct rpt_qs *q) { return q->n > 0 && !q->v; }

void rpt_qs_add(struct rpt_qs *q, double v) {
  if (q->n == 0 || v < q->min) q->min = v;
  if (q->n == 0 || v > q->max) q->max = v;
  if (is_hist(q)) {
    hist_add(q, v, 1);
    q->n++;
    return;
  }
  if (q->n == q->cap) {
    if (q->cap == RPT_QS_EXACT) {
      to_hist(q);
      hist_add(q, v, 1);
      q->n++;
      return;
    }
    q->cap = q->cap ? 2 * q->cap : 8;
    q->v = xrealloc(q->v, q->cap * sizeof *q->v);
  }
  q->v[q->n++] = v;
}

void rpt_qs_merge(struct rpt_qs *into, struct rpt_qs *from) {
  if (from->n == 0) return;
  if (into->n == 0 || from->min < into->min) into->min = from->min;
  if (into->n == 0 || from->max > into->max) into->max = from->max;
  uint64_t n = into->n + from->n;
  if (!is_hist(into) && !is_hist(from) && n <= RPT_QS_EXACT) {
    if (n > into->cap) {
      into->cap = (uint32_t)n;
      into->v = xrealloc(into->v, n * sizeof *into->v);
    }
    memcpy(into->v + into->n, from->v, from->n * sizeof *from->v);
  } else {
    if (!is_hist(into)) to_hist(into);
    if (is_hist(from)) {
      into->zeros += from->zeros;
      for (int o = 0; o < from->noct; o++)
        for (int s = 0; s < RPT_QS_SUB; s++) {
          uint64_t c = from->bins[(size_t)o * RPT_QS_SUB + (size_t)s];
          if (!c) continue;
          int oct = from->lo_oct + o;
          cover(into, oct);
          into->bins[(size_t)(oct - into->lo_oct) * RPT_QS_SUB + (size_t)s] += c;
        }
    } else {
      for (uint64_t i = 0; i < from->n; i++) hist_add(into, from->v[i], 1);
    }
  }
  into->n = n;
  rpt_qs_free(from);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double rpt_qs_quantile(struct rpt_qs *q, double p) {
  if (q->n == 0) return 0;
  uint64_t k = (uint64_t)(p * (double)q->n);
  if (k >= q->n) k = q->n - 1;
  if (k == 0) return q->min;
  if (k == q->n - 1) return q->max;
  if (!is_hist(q)) {
    qsort(q->v, q->n, sizeof *q->v, cmp_dbl);
    return q->v[k];
  }
  uint64_t seen = q->zeros;
  if (k < seen) return 0;
  for (int o = 0; o < q->noct; o++)
    for (int s = 0; s < RPT_QS_SUB; s++) {
      seen += q->bins[(size_t)o * RPT_QS_SUB + (size_t)s];
      if (k < seen) {
        double lo = ldexp(1.0 + (double)s / RPT_QS_SUB, q->lo_oct + o);
        double hi = ldexp(1.0 + (double)(s + 1) / RPT_QS_SUB, q->lo_oct + o);
        double mid = sqrt(lo * hi);
        return mid < q->min ? q->min : mid > q->max ? q->max : mid;
      }
    }
  assert(0 && "histogram counts below n");
  return q->max;
}

void rpt_qs_free(struct rpt_qs *q) {
  free(q->v);
  free(q->bins);
  memset(q, 0, sizeof *q);
}
