/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outdir.h - reading back what the plugin wrote, to prove a run lost
 * nothing: record lines, their bytes, and the drop counters of the plugin's
 * own dump_stats lines.
 */
#ifndef BP_OUTDIR_H
#define BP_OUTDIR_H

#include <stdint.h>

struct bp_outdir {
  uint64_t records;      /* coll_perf and p2p_perf lines */
  uint64_t record_bytes; /* their bytes, newline included */
  uint64_t reported;     /* the largest records_total of dump_stats (coll + p2p) */
  uint64_t dropped;      /* the largest dropped_total of dump_stats (coll + p2p) */
  uint64_t files;
};

/* Scans every regular file of dir (one communicator per run, see rate.c). 0 or -1. */
int bp_outdir_scan(const char *dir, struct bp_outdir *o);

/* Removes dir's files and dir itself. */
void bp_outdir_remove(const char *dir);

#endif
