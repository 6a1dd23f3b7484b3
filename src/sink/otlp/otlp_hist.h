/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_hist.h - a base-2 exponential histogram, as OTLP's
 * ExponentialHistogramDataPoint describes one, for positive values.
 *
 * Why exponential rather than explicit buckets: one histogram covers 1 us
 * and 1 s, or 0.1 and 900 GB/s, with a relative error bounded by its scale
 * and no bucket bounds to choose per operation and size; a backend merges
 * histograms of many ranks and jobs exactly (same base, or one downscaled),
 * which is what computing p50/p99 across ranks needs.
 *
 * Bucket index i holds the values in (base^i, base^(i+1)], base = 2^(2^-scale).
 * The histogram starts at scale 20 and, when a value does not fit in
 * INS_OTLP_HIST_MAX buckets, halves its resolution (scale - 1, every two
 * buckets merged) until it does: the scheme of OpenTelemetry's SDKs
 * ("maxSize" 160). Not thread-safe: the OTLP sink holds its lock.
 */
#ifndef INS_OTLP_HIST_H
#define INS_OTLP_HIST_H

#include <stdint.h>

#define INS_OTLP_HIST_MAX 160
#define INS_OTLP_HIST_START_SCALE 20

struct ins_otlp_hist {
  int32_t scale;
  int32_t offset;   /* index of counts[0], valid when n > 0 */
  uint32_t n;       /* buckets in use: counts[0..n) */
  uint64_t count, zero_count;
  double sum, min, max;
  uint64_t counts[INS_OTLP_HIST_MAX];
};

void ins_otlp_hist_init(struct ins_otlp_hist *h);
/* Adds v (v <= 0 or not finite: counted as zero; never happens for times and bandwidths). */
void ins_otlp_hist_add(struct ins_otlp_hist *h, double v);
/* The bucket index of v > 0 at `scale` (exposed for tests). */
int32_t ins_otlp_hist_index(double v, int32_t scale);

#endif
