/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acc.h - one reading thread's accumulation of log lines, and the merge of
 * every thread's into the job model (job.h).
 *
 * Owns: what a line contributes. Each reading thread has its own rpt_acc, so
 * the per-line path takes no lock (strings are interned through a per-thread
 * cache); memory grows with the number of distinct groups, ranks and links,
 * not with the number of lines, except for the op sample the cross-rank
 * analyses need, which is bounded by --memory: when it is full, every thread
 * keeps only the ops whose (communicator, operation, sequence number) hash
 * falls in a smaller share, so the ops kept are the same on every rank and
 * still match across ranks (see rpt_acc_keep_op).
 */
#ifndef RPT_ACC_H
#define RPT_ACC_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct rpt_acc;

/* A rejected or unrecognised line: where, and why (kept for the first few per unit). */
struct rpt_bad_line {
  int unit;
  uint64_t lineno; /* within the unit */
  char why[208]; /* "rejected: " + rpt_line.why */
};

struct rpt_acc *rpt_acc_new(const struct rpt_options *opt, int nthreads);
/* One line of input unit `unit` (its line number counted from 1 within the unit). */
void rpt_acc_line(struct rpt_acc *a, const char *line, size_t len, int unit, uint64_t lineno);
/* A line of len bytes (RPT_LINE_MAX or more) that the reader did not keep: rejected. */
void rpt_acc_long_line(struct rpt_acc *a, uint64_t len, int unit, uint64_t lineno);
/* Lines rejected or not records, in this thread (the first few are kept with their reason). */
const struct rpt_bad_line *rpt_acc_bad_lines(const struct rpt_acc *a, int *n);
uint64_t rpt_acc_records(const struct rpt_acc *a);
/* Slots examined in this thread's hash indexes (communicators, stats, groups, pairs,
 * clocks) so far: a few per line, whatever the keys, or a table has gone quadratic. */
uint64_t rpt_acc_probes(const struct rpt_acc *a);

/* Moves every thread's accumulation into j (comms, groups, clocks, ops and counts)
 * and frees the accs. j->opt is set by the caller. */
void rpt_acc_merge(struct rpt_acc **accs, int n, struct rpt_job *j);

#endif /* RPT_ACC_H */
