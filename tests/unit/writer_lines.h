/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer_lines.h - records of a known tag for the JSON log's writer tests
 * (test_writer_deleted.c, test_writer_renamed.c): append "<tag> <i>" lines through
 * sink/json/writer.h, and read back which tags a file holds, in order.
 */
#ifndef INS_TEST_WRITER_LINES_H
#define INS_TEST_WRITER_LINES_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sink/json/writer.h"

/* Append lines "<tag> <i>" as records, i < n; returns how many were not written. */
static inline uint64_t append(const char *tag, int n) {
  char buf[4096];
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "{\"coll_perf\":{\"tag\":\"%s %d\"}}\n", tag, i);
  uint64_t before = ins_writer_unwritten();
  ins_writer_append_records(buf, len, (uint64_t)n);
  return ins_writer_unwritten() - before;
}

/* The tags of the file's records, joined with '|' ("" if there is no file). */
static inline const char *tags(const char *path) {
  static char out[4096];
  char line[8192];
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f)) {
    char *t = strstr(line, "\"tag\":\"");
    if (!t) continue;
    t += 7;
    char *e = strchr(t, '"');
    if (!e) continue;
    size_t o = strlen(out);
    snprintf(out + o, sizeof out - o, "%s%.*s", o ? "|" : "", (int)(e - t), t);
  }
  if (f) fclose(f);
  return out;
}

#endif
