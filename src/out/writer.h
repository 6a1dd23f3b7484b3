/*
 * writer.h - the process's JSON log file, <dir>/<hostname>-pid<pid>.log.
 *
 * Created on first use (directory with parents, 0755; file 0644), appended
 * with one write() per batch of whole lines, so that a killed process
 * leaves a file in which every line parses. Shared by the dump thread and
 * finalizing threads; a mutex serialises them (never taken by callbacks).
 */
#ifndef INS_WRITER_H
#define INS_WRITER_H

#include <stddef.h>

void ins_writer_configure(const char *dir, const char *hostname);
/* Append whole lines; returns 0, or -1 after warning (once) on failure. */
int ins_writer_append(const char *data, size_t len);
/* Create the directory now (used by tests and to report problems early). */
int ins_mkdir_p(const char *dir);

#endif
