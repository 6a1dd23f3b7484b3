/* SPDX-License-Identifier: Apache-2.0 */
/*
 * input.h - finding the logs and reading them on every core.
 *
 * Owns: which files are logs, how they are cut into units of work, the
 * reading threads, the progress line, and the FILE:LINE messages for lines
 * that are not records. A directory is read whole, subdirectories included
 * down to 64 levels (links to directories are not followed; deeper directories
 * are counted in a warning), regular files only (a named pipe or socket there
 * is skipped with a warning: it could block the report); a file named on the
 * command line is read whatever its name, and a named pipe or /dev/fd/N (a
 * shell's <(...)) named there is read to its end as a stream. Plain files
 * larger than a chunk are split into chunks read in parallel (a line belongs
 * to the chunk it starts in); a gzip-compressed file or a stream is one unit,
 * since neither can be entered in the middle. A log reached twice (the same
 * file by two paths, or a copy of it: a copied folder, a .log beside its
 * .log.gz) is read once; the others are named in one warning and counted.
 */
#ifndef RPT_INPUT_H
#define RPT_INPUT_H

#include "job.h"

/* Adds a file (or stream), or every *.log / *.jsonl (plain or .gz) under a directory.
 * 0, or -1 after saying on stderr why nothing was added for this path. */
int rpt_input_add(const char *path);

/* Reads every added file with opt->threads threads into j (counts, comms, groups,
 * clocks, op sample). Prints progress for inputs that take more than a second. */
void rpt_input_read(struct rpt_job *j);

struct rpt_acc;
/* One unit of a plain file mapped at base (size bytes): the lines that start in [lo, hi)
 * into acc as unit `unit` (the last may run past hi; nothing past hi is read to find the
 * first). How many. rpt_input_read's, named for tests/unit/report/test_report_input_big.c. */
uint64_t rpt_input_feed_mapped(struct rpt_acc *acc, int unit, const char *base, uint64_t size, uint64_t lo,
                               uint64_t hi);

#endif /* RPT_INPUT_H */
