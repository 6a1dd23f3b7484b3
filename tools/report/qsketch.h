/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qsketch.h - quantiles of a stream of positive values in bounded memory.
 *
 * Owns: the distribution behind every p10..p99 the report prints. A sketch
 * keeps the values themselves up to RPT_QS_EXACT of them, so small groups
 * (every test, most jobs' rare sizes) get exact nearest-rank quantiles; past
 * that it folds them into a log-scale histogram of RPT_QS_SUB buckets per
 * power of two, whose quantiles are within 0.55% (half a bucket) of the
 * exact ones. Memory is then bounded by the range of the values (a few
 * octaves for one group), not by their number, which is what keeps the report's
 * memory bounded by the number of groups rather than by the size of the logs.
 *
 * Quantile rule (both modes): the value at rank floor(q * n), clipped to n - 1,
 * of the sorted values (the lower nearest rank, as the report always used).
 * Merging two sketches gives the sketch of the union, whatever the order.
 */
#ifndef RPT_QSKETCH_H
#define RPT_QSKETCH_H

#include <stdint.h>

#define RPT_QS_EXACT 4096
#define RPT_QS_SUB 64

struct rpt_qs {
  uint64_t n;
  double *v;        /* exact mode: n values, unsorted; NULL in histogram mode with n > 0 */
  uint32_t cap;
  int lo_oct, noct; /* histogram mode: octaves [lo_oct, lo_oct + noct) */
  uint64_t *bins;   /* noct * RPT_QS_SUB counts */
  uint64_t zeros;   /* histogram mode: values <= 0 */
  double min, max;
};

void rpt_qs_add(struct rpt_qs *q, double v);
void rpt_qs_merge(struct rpt_qs *into, struct rpt_qs *from); /* empties from */
/* The q-quantile (0 <= q <= 1); 0 for an empty sketch. Sorts the exact values in place. */
double rpt_qs_quantile(struct rpt_qs *q, double p);
void rpt_qs_free(struct rpt_qs *q);

#endif /* RPT_QSKETCH_H */
