/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_sink.c - the OTLP sink's own rules: the exponential histogram's
 * buckets (sink/otlp/otlp_hist.h) and the SDK environment variables
 * (sink/otlp/otlp_config.h).
 *
 * Expected bucket indexes are written from the OTLP data model's definition
 * (bucket i holds (base^i, base^(i+1)], base = 2^(2^-scale)), checked against
 * pow() with a margin, never against the code's own arithmetic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sink/otlp/otlp_config.h"
#include "sink/otlp/otlp_hist.h"

/* Is v in bucket i at scale s, by the definition? (a relative margin for pow's rounding) */
static int in_bucket(double v, int32_t i, int32_t s) {
  /* base^i = 2^(i / 2^s): exp2 of an exactly representable exponent (pow(base, i) would
   * carry base's rounding error i times over) */
  double lo = exp2(ldexp((double)i, -s)), hi = exp2(ldexp((double)i + 1, -s));
  return v > lo * (1 - 1e-12) && v <= hi * (1 + 1e-12);
}

static void test_index(void) {
  /* exact powers of two close their bucket (upper bounds inclusive) */
  CHECK(ins_otlp_hist_index(1.0, 0) == -1);
  CHECK_EQ_U(ins_otlp_hist_index(2.0, 0), 0);
  CHECK_EQ_U(ins_otlp_hist_index(4.0, 0), 1);
  CHECK_EQ_U(ins_otlp_hist_index(3.0, 0), 1);       /* (2, 4] */
  CHECK_EQ_U(ins_otlp_hist_index(2.0, 3), 7);       /* (2^(7/8), 2^(8/8)] */
  CHECK(ins_otlp_hist_index(0.5, -1) == -1); /* base 4: (1/4, 1] */
  CHECK(ins_otlp_hist_index(1e-6, -2) == -5); /* base 16: (16^-5, 16^-4] */
  srand(7);
  int bad = 0;
  for (int k = 0; k < 20000; k++) {
    double v = exp((rand() / (double)RAND_MAX) * 60 - 30);
    int32_t s = rand() % 25 - 4; /* -4 .. 20 */
    if (!in_bucket(v, ins_otlp_hist_index(v, s), s)) bad++;
  }
  CHECK_EQ_U(bad, 0);
}

/* Many values over six decades: fits 160 buckets, counts conserved, each value in its bucket. */
static void test_downscale(void) {
  struct ins_otlp_hist h;
  ins_otlp_hist_init(&h);
  double v[5000];
  double sum = 0;
  for (int k = 0; k < 5000; k++) {
    v[k] = 1e-6 * pow(10, 6.0 * k / 4999); /* 1 us .. 1 s */
    ins_otlp_hist_add(&h, v[k]);
    sum += v[k];
  }
  CHECK(h.n <= INS_OTLP_HIST_MAX);
  CHECK(h.scale < INS_OTLP_HIST_START_SCALE);
  CHECK_EQ_U(h.count, 5000);
  CHECK_EQ_U(h.zero_count, 0);
  uint64_t total = 0;
  for (uint32_t i = 0; i < h.n; i++) total += h.counts[i];
  CHECK_EQ_U(total, 5000);
  CHECK(fabs(h.sum - sum) < 1e-9 * sum);
  CHECK(h.min == v[0] && h.max == v[4999]);
  int bad = 0;
  for (int k = 0; k < 5000; k++) {
    int32_t i = ins_otlp_hist_index(v[k], h.scale);
    if (i < h.offset || i >= h.offset + (int32_t)h.n || !in_bucket(v[k], i, h.scale)) bad++;
  }
  CHECK_EQ_U(bad, 0);
  /* the scale is the largest at which 1e-6 .. 1 fits 160 buckets: log2(1e6) = 19.9 octaves,
   * 8 buckets per octave at scale 3 (160 buckets: 20 octaves), not at 4 */
  CHECK_EQ_U(h.scale, 3);
  /* a value at one bucket only: stays at scale 20 */
  ins_otlp_hist_init(&h);
  for (int k = 0; k < 10; k++) ins_otlp_hist_add(&h, 42.0);
  CHECK_EQ_U(h.scale, 20);
  CHECK_EQ_U(h.n, 1);
  CHECK_EQ_U(h.counts[0], 10);
  /* zero and negative values: the zero bucket */
  ins_otlp_hist_add(&h, 0.0);
  CHECK_EQ_U(h.zero_count, 1);
  CHECK_EQ_U(h.count, 11);
}

static void test_url_decode(void) {
  char out[64];
  CHECK(ins_otlp_url_decode("a%2Cb%3Dc", 9, out, sizeof out) == 0);
  CHECK_STR(out, "a,b=c");
  CHECK(ins_otlp_url_decode("Bearer%20x", 10, out, sizeof out) == 0);
  CHECK_STR(out, "Bearer x");
  CHECK(ins_otlp_url_decode("bad%2", 5, out, sizeof out) == -1);
  CHECK(ins_otlp_url_decode("bad%zz", 6, out, sizeof out) == -1);
  CHECK(ins_otlp_url_decode("0123456789", 10, out, 5) == -1);
}

static void set(const char *k, const char *v) {
  if (v) setenv(k, v, 1);
  else unsetenv(k);
}

static void clear_env(void) {
  const char *vars[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                        "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
                        "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                        "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
                        "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
                        "OTEL_METRIC_EXPORT_INTERVAL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

static void test_config(void) {
  struct ins_otlp_config c;
  clear_env();
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://localhost:4318/v1/metrics");
  CHECK(!c.ep.json && !c.ep.gzip && !c.ep.headers);
  CHECK_EQ_U(c.ep.timeout_ms, 10000);
  CHECK_EQ_U(c.interval_ms, 10000);
  CHECK_STR(c.service_name, "nccl-inspector");
  ins_otlp_config_free(&c);

  set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/prefix/");
  set("OTEL_EXPORTER_OTLP_HEADERS", " api-key = a%2Cb=c , x-tenant=t1,broken, =novalue");
  set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  set("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
  set("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2500");
  set("OTEL_EXPORTER_OTLP_TIMEOUT", "9999"); /* the metrics one wins */
  set("OTEL_METRIC_EXPORT_INTERVAL", "500");
  set("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod%20a");
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://collector:4318/prefix/v1/metrics");
  CHECK_STR(c.ep.headers, "api-key: a,b=c\r\nx-tenant: t1\r\n");
  CHECK(c.ep.json && c.ep.gzip);
  CHECK_EQ_U(c.ep.timeout_ms, 2500);
  CHECK_EQ_U(c.interval_ms, 500);
  CHECK_STR(c.service_name, "from-attrs");
  CHECK_EQ_U(c.nattrs, 2);
  CHECK_STR(c.attrs[1].key, "deployment.environment");
  CHECK_STR(c.attrs[1].value, "prod a");
  ins_otlp_config_free(&c);

  /* the full URL is used as given; malformed values fall back to the defaults */
  set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://otlp.example:443/custom/path");
  set("OTEL_SERVICE_NAME", "trainer");
  set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  set("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd");
  set("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "-3");
  set("OTEL_METRIC_EXPORT_INTERVAL", "soon");
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "https://otlp.example:443/custom/path");
  CHECK_STR(c.service_name, "trainer");
  CHECK(!c.ep.json && !c.ep.gzip);
  CHECK_EQ_U(c.ep.timeout_ms, 10000);
  CHECK_EQ_U(c.interval_ms, 10000);
  ins_otlp_config_free(&c);

  set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4318");
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://localhost:4318/v1/metrics");
  ins_otlp_config_free(&c);
  clear_env();
}

int main(void) {
  test_index();
  test_downscale();
  test_url_decode();
  test_config();
  return check_report("otlp_sink");
}
