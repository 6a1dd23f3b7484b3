/*
 * writer.h - the process's JSON log file, <dir>/<hostname>-pid<pid>.log.
 *
 * Created on first use (directory with parents, 0755; file 0644). Batches
 * of whole lines are written so that a process killed mid-write (SIGKILL,
 * OOM killer) leaves a file in which every line parses:
 *  - Linux stops a killed writer only between pages of the file: a short
 *    write of a regular file always ends on a 4 KiB page boundary;
 *  - so no line is allowed to straddle a page boundary: the line before a
 *    boundary is padded with spaces (before its newline; JSON allows them),
 *    and a batch whose first line would straddle first pads the last line
 *    already on disk by rewriting its newline in place (one page, atomic).
 * The cost is about 7% of file size in padding. Lines longer than a page
 * (verbose records with many channels) start on a page boundary but can
 * still be torn. Shared by the dump thread and finalizing threads; a mutex
 * serialises them (never taken by event callbacks).
 */
#ifndef INS_WRITER_H
#define INS_WRITER_H

#include <stddef.h>
#include <stdint.h>

void ins_writer_configure(const char *dir, const char *hostname);
/* Append whole lines; returns 0, or -1 after warning (once) on failure. */
int ins_writer_append(const char *data, size_t len);
/* The same for a batch holding `records` records: on failure they are counted
 * as unwritten (and warned about once). */
void ins_writer_append_records(const char *data, size_t len, uint64_t records);
/* Records of batches that could not be written, so far. */
uint64_t ins_writer_unwritten(void);
/* Lay out lines so that none straddles a page boundary when written at
 * file offset `off`: a pure function, exposed for unit tests. Writes into
 * out (capacity cap) and returns the output length; *pad_prev receives the
 * number of spaces the caller must insert before the newline that ends at
 * `off` (0 if none). Returns (size_t)-1 if out is too small. */
size_t ins_writer_layout(const char *in, size_t len, size_t off, char *out, size_t cap,
                         size_t *pad_prev);
/* Create a directory and its parents (0755). */
int ins_mkdir_p(const char *dir);

#define INS_WRITER_PAGE 4096

#endif
