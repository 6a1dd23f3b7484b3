/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.h - the process's JSON log file, <dir>/<hostname>-pid<pid>.log.
 *
 * Created on first use, never opened if it exists (io/files.h: a file left
 * by an earlier process with our pid, or a link planted at the name, makes
 * us use a random name beside it); directory with parents 0755, file 0644.
 * Batches of whole lines are written so that a process killed mid-write
 * (SIGKILL, OOM killer) leaves a file in which every line parses:
 *  - Linux stops a killed writer only between pages of the file: a short
 *    write of a regular file always ends on a 4 KiB page boundary;
 *  - so no line is allowed to straddle a page boundary: the line before a
 *    boundary is padded with spaces (before its newline; JSON allows them),
 *    and a batch whose first line would straddle first pads the last line
 *    already on disk by rewriting its newline in place (one page, atomic).
 * The cost is about 7% of file size in padding. Lines longer than a page
 * (verbose records with many channels) start on a page boundary but can
 * still be torn. Shared by the dump thread and finalizing threads; a mutex
 * serialises them (never taken by event callbacks). A write that fails part
 * way (a full disk) is cut back to its last whole line, so the file never
 * ends in a partial line and later batches start on a line of their own.
 */
#ifndef INS_WRITER_H
#define INS_WRITER_H

#include <stddef.h>
#include <stdint.h>

void ins_writer_configure(const char *dir, const char *hostname);
/* Append whole lines, `records` of them records (the rest dump_stats lines); returns how
 * many of those records did not reach the file (0 on success), after warning once. On a
 * failed write (full disk...) the file is cut back to its last whole line and the count
 * is exact: the record lines past that point. */
uint64_t ins_writer_append(const char *data, size_t len, uint64_t records);
/* The same, adding the records lost to the count ins_writer_unwritten() reports. */
void ins_writer_append_records(const char *data, size_t len, uint64_t records);
/* Records of batches that could not be written, so far. */
uint64_t ins_writer_unwritten(void);
/* Library unload or the end of exit, after the last write: the file closed, the layout
 * buffer freed (a plugin NCCL loads and unloads again must not keep either). A later
 * append writes nothing and counts its records as unwritten. */
void ins_writer_close(void);
/* Lay out lines so that none straddles a page boundary when written at
 * file offset `off`: a pure function, exposed for unit tests. Writes into
 * out (capacity cap) and returns the output length; *pad_prev receives the
 * number of spaces the caller must insert before the newline that ends at
 * `off` (0 if none). Returns (size_t)-1 if out is too small. */
size_t ins_writer_layout(const char *in, size_t len, size_t off, char *out, size_t cap,
                         size_t *pad_prev);

#define INS_WRITER_PAGE 4096

#endif
