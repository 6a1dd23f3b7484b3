/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysinfo.c - /proc readers (see sysinfo.h).
 */
#include "sysinfo.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

uint64_t bp_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, rss = 0;
  if (!f) return 0;
  if (fscanf(f, "%llu %llu", &size, &rss) != 2) rss = 0;
  fclose(f);
  return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t bp_thread_cpu_ns(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
  FILE *f = fopen(path, "r");
  unsigned long long ns = 0;
  if (!f) return 0;
  if (fscanf(f, "%llu", &ns) != 1) ns = 0;
  fclose(f);
  return ns;
}

int bp_threads(pid_t *tids, int max) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) && n < max;)
    if (e->d_name[0] != '.') tids[n++] = (pid_t)atoi(e->d_name);
  closedir(d);
  return n;
}
