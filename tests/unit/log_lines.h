/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log_lines.h - reading a unit test's own JSON log back (the tests that drive the plugin
 * through its ABI table and judge what it wrote: test_op_timestamps.c, test_op_no_group.c):
 * this process's log, a collective's record line by coll_sn, a number field, the last
 * dump_stats line. Small logs only: the whole file is read into memory.
 */
#ifndef INS_LOG_LINES_H
#define INS_LOG_LINES_H

/* memmem: _GNU_SOURCE, which tests.cmake defines for every unit test */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The log of this process: every line, concatenated (small here). */
static char *read_log(const char *dir) {
  char suffix[48], path[4096];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
  char *all = calloc(1, 1);
  size_t len = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && all && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    char buf[65536];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) {
      char *p = realloc(all, len + n + 1);
      if (!p) break;
      all = p;
      memcpy(all + len, buf, n);
      len += n;
      all[len] = '\0';
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return all;
}

/* The record line of collective sn (copied into line), or 0 when there is none. */
static int record_of(const char *log, uint64_t sn, char *line, size_t cap) {
  char key[64];
  snprintf(key, sizeof key, "\"coll_sn\":%llu,", (unsigned long long)sn);
  for (const char *p = log; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (l < cap) {
      memcpy(line, p, l);
      line[l] = '\0';
      if (strstr(line, "\"coll_perf\":{") && strstr(line, key)) return 1;
    }
    p = nl ? nl + 1 : NULL;
  }
  return 0;
}

/* A number field of a line ("key":N); UINT64_MAX if it is not there. */
static uint64_t field(const char *line, const char *key) {
  char k[96];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  return p ? strtoull(p + strlen(k), NULL, 10) : UINT64_MAX;
}

static int has(const char *line, const char *text) { return strstr(line, text) != NULL; }

/* The last dump_stats line of the log (copied into line); 0 when there is none. */
static int last_stats(const char *log, char *line, size_t cap) {
  int found = 0;
  for (const char *p = log; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (l < cap && memmem(p, l, "\"dump_stats\":{", 14)) {
      memcpy(line, p, l);
      line[l] = '\0';
      found = 1;
    }
    p = nl ? nl + 1 : NULL;
  }
  return found;
}

#endif
