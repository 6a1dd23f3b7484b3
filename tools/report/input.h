/*
 * input.h - finding the logs and reading them on every core.
 *
 * Owns: which files are logs, how they are cut into units of work, the
 * reading threads, the progress line, and the FILE:LINE messages for lines
 * that are not records. A directory is read whole, subdirectories included
 * (links to directories are not followed); a file named on the command line
 * is read whatever its name. Plain files larger than a chunk are split into
 * chunks read in parallel (a line belongs to the chunk it starts in); a
 * gzip-compressed file is one unit, since a gzip stream cannot be entered in
 * the middle.
 */
#ifndef RPT_INPUT_H
#define RPT_INPUT_H

#include "job.h"

/* Adds a file, or every *.log / *.jsonl (plain or .gz) under a directory. 0, or -1
 * after saying on stderr why nothing was added for this path. */
int rpt_input_add(const char *path);

/* Reads every added file with opt->threads threads into j (counts, comms, groups,
 * clocks, op sample). Prints progress for inputs that take more than a second. */
void rpt_input_read(struct rpt_job *j);

#endif /* RPT_INPUT_H */
