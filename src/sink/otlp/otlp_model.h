/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_model.h - one OTLP metrics export as plain data: what the OTLP sink
 * (otlp.c) snapshots from its state and the encoders (otlp_pb.h) turn into a
 * request body. Nothing here allocates or knows about the network; every
 * pointer is owned by whoever built the request, for the duration of the
 * encode call.
 *
 * It mirrors the few OTLP messages we send (opentelemetry-proto v1.11.0,
 * metrics.proto): one ResourceMetrics (the process) with one ScopeMetrics
 * (this plugin) holding Metrics, each a cumulative Sum of int points, a
 * cumulative ExponentialHistogram (base-2, positive values only: times and
 * bandwidths are never negative), or a Gauge of int or double points (hang
 * detection's: sink/hang.h).
 */
#ifndef INS_OTLP_MODEL_H
#define INS_OTLP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

enum ins_otlp_val { INS_OTLP_STR, INS_OTLP_INT };

/* An attribute (KeyValue with a string or int AnyValue). */
struct ins_otlp_kv {
  const char *key;
  enum ins_otlp_val type;
  const char *s; /* INS_OTLP_STR: valid UTF-8 (the sink cleans names first) */
  int64_t i;     /* INS_OTLP_INT */
};

/* ExponentialHistogramDataPoint's figures: bucket i of `counts` counts the values in
 * (base^(offset+i), base^(offset+i+1)], base = 2^(2^-scale). */
struct ins_otlp_expo {
  int32_t scale;
  uint64_t count, zero_count;
  double sum, min, max;
  int32_t offset;
  uint32_t nbuckets;
  const uint64_t *counts;
};

struct ins_otlp_point {
  const struct ins_otlp_kv *attrs;
  int nattrs;
  uint64_t start_ns, time_ns;        /* start_time_unix_nano (0: unset), time_unix_nano */
  int64_t value;                     /* a Sum's or a Gauge's point: as_int */
  const struct ins_otlp_expo *hist;  /* an ExponentialHistogram's point */
  bool is_double;                    /* a Gauge's point: as_double, not as_int */
  double dvalue;
};

enum ins_otlp_kind { INS_OTLP_SUM, INS_OTLP_EXPO_HIST, INS_OTLP_GAUGE };

struct ins_otlp_metric {
  const char *name, *description, *unit;
  enum ins_otlp_kind kind;
  bool monotonic; /* Sum.is_monotonic (every Sum we send is cumulative) */
  const struct ins_otlp_point *points;
  int npoints;
};

/* ExportMetricsServiceRequest with one ResourceMetrics and one ScopeMetrics. */
struct ins_otlp_request {
  const struct ins_otlp_kv *resource;
  int nresource;
  const char *scope_name, *scope_version;
  const struct ins_otlp_metric *metrics;
  int nmetrics;
};

#endif
