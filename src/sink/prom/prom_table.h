/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_table.h - one device's series of the current window: an
 * open-addressing hash table keyed by (kind, label string), each series
 * holding what its file's samples need (sum of times, sum of log bandwidths,
 * counts). Not thread-safe: the Prometheus sink's lock is held (prom.c).
 */
#ifndef INS_PROM_TABLE_H
#define INS_PROM_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* A series' kind: enum ins_kind, or INS_PROM_BOUND + it for the bounds of the ops the judge
 * left out (core/judge.h, "Bounds"), kept apart from the records' */
#define INS_PROM_BOUND 2

struct ins_prom_series {
  uint64_t hash;
  int kind;          /* enum ins_kind, or INS_PROM_BOUND + it */
  char *labels;      /* comm_name=...: the labels after gpu */
  double sum_us;     /* execution times, us */
  double sum_log_bw; /* log of bus bandwidths (GB/s) > 0 */
  uint64_t n, nbw;   /* ops; ops with a bandwidth > 0 */
};

struct ins_prom_table {
  struct ins_prom_series *s; /* ns of cap, in insertion order */
  size_t ns, cap;
  uint32_t *idx;             /* index + 1 into s; 0 = empty; idx_cap a power of two */
  size_t idx_cap;
};

/* Fold one op into the series of (kind, labels): -1 out of memory. A bandwidth of 0
 * (no measurable time, or no bytes) counts in the mean time but not in the bandwidth's
 * geometric mean, which a zero would make undefined. */
int ins_prom_table_add(struct ins_prom_table *t, int kind, const char *labels, double exec_us,
                       double busbw);
/* A new window: every series goes (the memory is kept). */
void ins_prom_table_reset(struct ins_prom_table *t);

#endif
