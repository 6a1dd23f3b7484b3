/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fork.c - a child forked from a job that has the plugin running (its dump
 * thread, its writer thread, sampling off) and then calls exit() must exit at once:
 * the plugin's exit handler must not join threads the child does not have, nor take
 * locks the parent held at the fork, nor write the records it inherited from the
 * parent's rings (they are the parent's to write: they would appear twice).
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl/profiler_abi.h"
#include "asan_fork.h"
#include "check.h"
#include "one_op.h"

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

int main(void) {
  char dir[] = "/tmp/inspector-fork-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_ENABLE", "0", 1); /* the record stays in its ring */
  void *ctx = NULL;
  int mask = 0;
  CHECK(ncclProfiler_v5.init(&ctx, 0x1234, &mask, "fork", 1, 2, 0, logger) == 0 && ctx);

  /* One AllReduce of 1 MiB on one channel, complete before the fork. */
  CHECK(oo_allreduce(ctx, 0, (struct oo_span[]){{1000000, 1012000}}, 1));

  af_settle_threads();
  pid_t pid = fork();
  if (pid == 0) exit(0); /* runs the plugin's exit handler in the child */
  int status = -1, waited_ms = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 && waited_ms < 10000) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    waited_ms += 10;
  }
  if (waited_ms >= 10000) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  CHECK(waited_ms < 10000); /* the child did not hang in exit */
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  /* Only the parent's file, with the record once. */
  int files = 0, child_files = 0;
  char want[64];
  snprintf(want, sizeof want, "-pid%ld.log", (long)pid);
  DIR *dd = opendir(dir);
  for (struct dirent *e; dd && (e = readdir(dd));) {
    if (e->d_name[0] == '.') continue;
    files++;
    if (strstr(e->d_name, want)) child_files++;
  }
  if (dd) closedir(dd);
  CHECK(files == 1);
  CHECK(child_files == 0);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "grep -c coll_perf %s/*-pid%ld.log | grep -qx 1", dir, (long)getpid());
  CHECK(system(cmd) == 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail != 0;
}
