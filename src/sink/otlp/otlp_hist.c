/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_hist.c - the exponential histogram (see otlp_hist.h).
 *
 * Indexing follows the OTLP data model's reference ("Exponential Buckets",
 * metrics data model): for scale <= 0 the index comes from the float's
 * exponent alone, exact; for scale > 0 from log2, with exact powers of two
 * (whose log is exact) put in the bucket they close, as the model requires
 * (upper bounds inclusive). Rescaling only ever lowers the scale, so every
 * value stays in the bucket that holds it at the final scale.
 */
#include "sink/otlp/otlp_hist.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* floor(x / 2^k) for any sign (>> of a negative int is implementation-defined in C). */
static int32_t shift_floor(int32_t x, int k) {
  if (k <= 0) return x;
  if (k >= 31) return x < 0 ? -1 : 0;
  return x >= 0 ? x >> k : -(int32_t)(((uint32_t)(-(int64_t)x) + (1u << k) - 1) >> k);
}

int32_t ins_otlp_hist_index(double v, int32_t scale) {
  int e;
  double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
  bool pow2 = m == 0.5;
  if (scale <= 0) {
    int32_t k = pow2 ? e - 2 : e - 1; /* floor(log2 v), less one for an exact power */
    return shift_floor(k, -scale);
  }
  if (pow2) return (int32_t)(((int64_t)(e - 1) << scale) - 1);
  double idx = ceil(log2(v) * ldexp(1.0, scale)) - 1;
  return (int32_t)idx;
}

void ins_otlp_hist_init(struct ins_otlp_hist *h) {
  memset(h, 0, sizeof *h);
  h->scale = INS_OTLP_HIST_START_SCALE;
}

/* Lowers the scale by `by`: bucket i becomes i >> by, counts of merged buckets added. */
static void downscale(struct ins_otlp_hist *h, int by) {
  if (by <= 0) return;
  h->scale -= by;
  if (!h->n) return;
  int32_t first = shift_floor(h->offset, by);
  uint64_t merged[INS_OTLP_HIST_MAX] = {0};
  uint32_t n = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    uint32_t k = (uint32_t)(shift_floor(h->offset + (int32_t)i, by) - first);
    assert(k < INS_OTLP_HIST_MAX);
    merged[k] += h->counts[i];
    if (k + 1 > n) n = k + 1;
  }
  memcpy(h->counts, merged, sizeof merged);
  h->offset = first;
  h->n = n;
}

void ins_otlp_hist_add(struct ins_otlp_hist *h, double v) {
  if (!(v > 0) || !isfinite(v)) {
    h->zero_count++;
    h->count++;
    if (h->count == 1 || 0 < h->min) h->min = 0;
    if (h->count == 1 || 0 > h->max) h->max = 0;
    return;
  }
  if (h->count == h->zero_count) h->min = h->max = v; /* the first positive value */
  if (v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  h->count++;
  h->sum += v;
  int32_t i = ins_otlp_hist_index(v, h->scale);
  if (h->n == 0) {
    h->offset = i;
    h->n = 1;
    h->counts[0] = 1;
    return;
  }
  /* the smallest scale reduction that makes [lo, hi] fit */
  int64_t lo = i < h->offset ? i : h->offset;
  int64_t hi = i > h->offset + (int32_t)h->n - 1 ? i : h->offset + (int32_t)h->n - 1;
  int by = 0;
  while (shift_floor((int32_t)hi, by) - shift_floor((int32_t)lo, by) + 1 > INS_OTLP_HIST_MAX) by++;
  if (by) {
    downscale(h, by);
    i = shift_floor(i, by); /* the bucket that holds it now (not a new log2: rounding) */
  }
  if (i < h->offset) { /* grow at the front */
    uint32_t d = (uint32_t)(h->offset - i);
    memmove(h->counts + d, h->counts, h->n * sizeof *h->counts);
    memset(h->counts, 0, d * sizeof *h->counts);
    h->offset = i;
    h->n += d;
  } else if ((uint32_t)(i - h->offset) >= h->n) {
    h->n = (uint32_t)(i - h->offset) + 1;
  }
  assert(h->n <= INS_OTLP_HIST_MAX);
  h->counts[i - h->offset]++;
}
