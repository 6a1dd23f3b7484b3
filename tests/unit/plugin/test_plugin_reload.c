/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_plugin_reload.c - a plugin loaded and unloaded again and again, as NCCL
 * does (it unloads the profiler with its last communicator and loads it again
 * at the next init), with the JSON log and OTLP export on. Each cycle replays
 * a recorded trace through the plugin (the replay driver's own engine,
 * tools/replay) and dlcloses it.
 *
 *   inspector-unit-plugin_reload PLUGIN TRACE [CYCLES]
 *
 * What a cycle must not leave behind, judged after the last:
 *  - the library itself: dlopen(RTLD_NOLOAD) finds it gone (else nothing of
 *    the rest would be tested);
 *  - file descriptors: as many open as before the first cycle (the log file
 *    closed at unload);
 *  - memory: resident memory after the last cycle within 16 KiB a cycle of
 *    what it was after the third (the first cycles fill the allocator's
 *    caches: thread stacks, arenas; free memory is trimmed before each look).
 *    A leak of the OTLP series or of the log writer's layout buffer is about
 *    50 KiB a cycle each with this trace; without one, 3 KiB at most were
 *    seen. In an ASan build, whose quarantine makes resident memory
 *    meaningless, LeakSanitizer checks at exit instead, exactly: memory that
 *    only an unloaded library pointed to is reported there;
 *  - exit handlers: each load registers one (src/abi/lifecycle.c, the last
 *    OTLP export); one left to run at exit would call into unmapped code, and
 *    this program would die at its exit instead of returning its status.
 * Temporary files live in a directory removed at the end.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "closed_port.h"
#include "log.h"
#include "plugin.h"
#include "replay.h"
#include "trace_load.h"

#define WARMUP 3
#define SLACK_PER_CYCLE (16 * 1024)
/* Under a sanitizer freed memory stays in its quarantine: resident memory says nothing
 * there (ASan's LeakSanitizer judges leaks instead, at exit). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_MEANINGFUL 0
#else
#define RSS_MEANINGFUL 1
#endif

static long open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  long n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* Resident memory with the allocator's free memory given back first (malloc_trim: the
 * threads of each cycle leave freed memory in their arenas, which is no leak). */
static long rss_bytes(void) {
  malloc_trim(0);
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
  fclose(f);
  return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

static int count_logs(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".log")) n++;
  closedir(d);
  return n;
}

/* One cycle: load, replay the trace once (init to finalize), unload. 0 or -1. */
static int cycle(const char *plugin, const struct rp_trace *t) {
  struct rp_plugin p;
  if (rp_plugin_open(plugin, &p) != 0) return -1;
  struct rp_abi abi;
  int ver = t->ver >= 4 && t->ver <= 6 ? t->ver : rp_plugin_newest(&p);
  if (rp_plugin_bind(&p, ver, &abi) != 0) {
    dlclose(p.dl);
    return -1;
  }
  struct rp_counts c = {0};
  uint64_t ns = 0;
  rp_replay(t, &abi, false, 1, &c, &ns);
  CHECK(c.init > 0 && c.finalize == c.init && c.record > 0);
  return dlclose(p.dl) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PLUGIN TRACE [CYCLES]\n", argv[0]);
    return 2;
  }
  const char *plugin = argv[1];
  int cycles = argc > 3 ? atoi(argv[3]) : 40;
  if (cycles <= WARMUP) cycles = WARMUP + 1;
  char dir[] = "/tmp/ins-reload-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char url[64];
  int port = closed_port();
  CHECK(port > 0);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_METRIC_EXPORT_INTERVAL", "50", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "50", 1); /* the last export: refused, no retry */
  rp_log_set_quiet(true);

  struct rp_trace t;
  if (rp_trace_load(argv[2], &t) != 0) {
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return 1;
  }
  long fds0 = open_fds(), rss_warm = 0;
  int failed_cycles = 0, still_loaded = 0;
  for (int i = 0; i < cycles; i++) {
    if (cycle(plugin, &t) != 0) failed_cycles++;
    void *h = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      still_loaded++;
      dlclose(h);
    }
    if (i + 1 == WARMUP) rss_warm = rss_bytes();
  }
  long rss_end = rss_bytes(), fds_end = open_fds();
  long grown = rss_end - rss_warm, per_cycle = grown / (cycles - WARMUP);
  printf("%d cycles: RSS %ld KiB after %d, %ld KiB after %d (%ld bytes a cycle); fds %ld -> %ld; "
         "%d log files\n", cycles, rss_warm / 1024, WARMUP, rss_end / 1024, cycles, per_cycle, fds0, fds_end,
         count_logs(dir));
  CHECK_EQ_U(failed_cycles, 0);
  CHECK_EQ_U(still_loaded, 0);
  CHECK_EQ_U(fds_end, fds0);
  CHECK(rss_warm > 0 && rss_end > 0);
  if (RSS_MEANINGFUL) CHECK(grown <= (long)SLACK_PER_CYCLE * (cycles - WARMUP));
  CHECK(count_logs(dir) >= 1); /* the records were written */

  rp_trace_free(&t);
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  return check_report("plugin_reload");
}
