/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_trace_deleted.c - trace mode's file deleted while the job runs (src/trace/writer.c,
 * reopen): the trace goes on in a new file at the same path, made by the same rules,
 * which starts with the init lines of the communicators still live (the replay needs a
 * context's init before its events), with one warning. Synchronised by finalizes, which
 * return once their own line is written (every older line is written by then):
 *   B is created and records 2 ops; C is created and finalized (B's lines are in the
 *   file now); the file is deleted; B records 2 more ops and is finalized.
 * (A communicator `keep` stays live throughout.) The new file holds B's and keep's init
 * lines once each (not C's: finalized), the starts of B's last 2 ops
 * (group, collective, kernel channel: 3 each), B's finalize; one warning names it.
 */
#include <sys/stat.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's fork helpers */
#include "fork_util.h"

static char g_dir[] = "/tmp/inspector-tracedel-XXXXXX";

/* The trace file's path (the one *.trace.jsonl in the directory); false if none. */
static bool trace_path(char *path, size_t cap) {
  bool found = false;
  DIR *d = opendir(g_dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l > 12 && !strcmp(e->d_name + l - 12, ".trace.jsonl")) {
      snprintf(path, cap, "%s/%s", g_dir, e->d_name);
      found = true;
    }
  }
  if (d) closedir(d);
  return found;
}

/* Lines of the file containing a and (if not NULL) b. */
static long lines_with(const char *path, const char *a, const char *b) {
  char line[16384];
  long n = 0;
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, a) && (!b || strstr(line, b))) n++;
  if (f) fclose(f);
  return n;
}

int main(void) {
  if (!mkdtemp(g_dir)) return 1;
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", g_dir, 1);
  setenv("NCCL_INSPECTOR_TRACE_DIR", g_dir, 1);
  void *keep = fu_init(0x1ee); /* live to the end: NCCL's logger stays (warnings counted) */
  void *b = fu_init(0xb0b);
  for (int i = 0; i < 2 && b; i++) fu_op(b);
  void *c = fu_init(0xc0c);
  if (c) CHECK(ncclProfiler_v5.finalize(c) == 0);
  char path[4096] = "", again[4096] = "";
  CHECK(trace_path(path, sizeof path));
  CHECK_EQ_U(lines_with(path, "\"cb\":\"init\"", "\"comm\":\"0xb0b\""), 1);
  struct stat st0, st;
  CHECK(stat(path, &st0) == 0);
  CHECK(unlink(path) == 0);
  int warns = atomic_load(&fu_warns);
  for (int i = 0; i < 2 && b; i++) fu_op(b);
  if (b) CHECK(ncclProfiler_v5.finalize(b) == 0);

  CHECK(trace_path(again, sizeof again));
  CHECK(!strcmp(path, again)); /* the same name: it was free again */
  CHECK_EQ_U(lines_with(again, "\"cb\":\"init\"", NULL), 2); /* B's and keep's */
  CHECK_EQ_U(lines_with(again, "\"cb\":\"init\"", "\"comm\":\"0xb0b\""), 1);
  CHECK_EQ_U(lines_with(again, "\"cb\":\"start\"", NULL), 3 * 2);
  CHECK_EQ_U(lines_with(again, "\"cb\":\"finalize\"", NULL), 1);
  CHECK(stat(again, &st) == 0 && (st.st_mode & 0777) == (st0.st_mode & 0777));
  CHECK(st.st_ino != st0.st_ino || st.st_dev != st0.st_dev || st.st_ctime >= st0.st_ctime);
  CHECK_EQ_U(atomic_load(&fu_warns) - warns, 1);
  CHECK(strstr(fu_last_warn, "trace file was deleted") != NULL);
  if (keep) CHECK(ncclProfiler_v5.finalize(keep) == 0);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  CHECK(system(cmd) == 0);
  return check_report("trace_deleted");
}
