/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outdir.c - reading the plugin's JSON lines back (see outdir.h).
 */
#include "outdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t field(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void max_into(uint64_t *m, uint64_t v) {
  if (v > *m) *m = v;
}

static void scan_file(const char *path, struct bp_outdir *o, uint64_t k[4]) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  o->files++;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (strstr(line, "\"coll_perf\"") || strstr(line, "\"p2p_perf\"")) {
      o->records++;
      o->record_bytes += (uint64_t)n;
    } else if (strstr(line, "\"dump_stats\"")) {
      max_into(&k[0], field(line, "\"coll_records_total\":"));
      max_into(&k[1], field(line, "\"p2p_records_total\":"));
      max_into(&k[2], field(line, "\"coll_dropped_total\":"));
      max_into(&k[3], field(line, "\"p2p_dropped_total\":"));
    }
  }
  free(line);
  fclose(f);
}

int bp_outdir_scan(const char *dir, struct bp_outdir *o) {
  memset(o, 0, sizeof *o);
  DIR *d = opendir(dir);
  if (!d) return -1;
  uint64_t k[4] = {0};
  char path[4096];
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    scan_file(path, o, k);
  }
  closedir(d);
  o->reported = k[0] + k[1];
  o->dropped = k[2] + k[3];
  return 0;
}

void bp_outdir_remove(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[4096];
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}
