/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_report_parse.c - how fast inspector-report reads log lines: rpt_parse_line (the
 * scanner, jansson when it is unsure) against rpt_parse_line_reference (jansson alone).
 *
 * Not a test (nothing to pass): a measurement, built with the unit tests. It reads one plain
 * text file into memory, then parses every line of it once per run, RUNS runs per path, on
 * one thread, and prints each path's median in MB of input per second, with the share of
 * lines the scanner read itself. Make an input of 100 MB or more (a few runs' worth of
 * cache-cold lines) from the fixtures, e.g.
 *   for i in $(seq 400); do find tests/data -name '*.log.gz' -exec zcat {} +; done >build/lines.log
 *   build/bin/inspector-unit-bench_report_parse build/lines.log
 * and measure a Release build.
 *
 * Usage: inspector-unit-bench_report_parse FILE [RUNS] (RUNS: 5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fields.h"
#include "parse.h"

typedef enum rpt_kind (*parse_fn)(const char *, size_t, struct rpt_line *);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass over every line; returns the seconds it took. */
static double pass(const char *text, size_t n, parse_fn parse) {
  struct rpt_line l;
  double t0 = now();
  for (size_t pos = 0; pos < n;) {
    const char *nl = memchr(text + pos, '\n', n - pos);
    size_t end = nl ? (size_t)(nl - text) + 1 : n;
    parse(text + pos, end - pos, &l);
    pos = end;
  }
  return now() - t0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s FILE [RUNS]\n", argv[0]);
    return 2;
  }
  int runs = argc == 3 ? atoi(argv[2]) : 5;
  if (runs < 1) {
    fprintf(stderr, "%s: RUNS must be at least 1\n", argv[0]);
    return 2;
  }
  FILE *fp = fopen(argv[1], "rb");
  if (!fp) {
    fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 1;
  }
  fseek(fp, 0, SEEK_END);
  size_t n = (size_t)ftell(fp);
  rewind(fp);
  char *text = malloc(n ? n : 1);
  if (!text || fread(text, 1, n, fp) != n) {
    fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 1;
  }
  fclose(fp);

  size_t lines = 0, scanned = 0;
  struct rpt_fields f;
  for (size_t pos = 0; pos < n; lines++) {
    const char *nl = memchr(text + pos, '\n', n - pos);
    size_t end = nl ? (size_t)(nl - text) + 1 : n;
    scanned += rpt_scan(text + pos, end - pos, &f);
    pos = end;
  }
  /* the two paths take turns, so that a noisy neighbour slows both alike */
  double *ref = malloc(2 * (size_t)runs * sizeof *ref);
  if (!ref) abort();
  double *fast = ref + runs;
  for (int r = 0; r < runs; r++) {
    ref[r] = (double)n / 1e6 / pass(text, n, rpt_parse_line_reference);
    fast[r] = (double)n / 1e6 / pass(text, n, rpt_parse_line);
  }
  double ref_mbs = median(ref, runs), fast_mbs = median(fast, runs);
  free(ref);
  printf("%s: %.1f MB, %zu lines (%.0f bytes each), %.2f%% read by the scanner\n", argv[1],
         (double)n / 1e6, lines, lines ? (double)n / (double)lines : 0.0,
         lines ? 100.0 * (double)scanned / (double)lines : 0.0);
  printf("median of %d runs, one thread: reference (jansson) %.1f MB/s, fast %.1f MB/s "
         "(x%.1f; %.0f ns a line)\n",
         runs, ref_mbs, fast_mbs, fast_mbs / ref_mbs,
         lines ? (double)n / 1e6 / fast_mbs / (double)lines * 1e9 : 0.0);
  free(text);
  return 0;
}
