/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork_util.h - what the fork tests (test_fork_locks.c, test_dump_fork_records.c) share:
 * cases run in processes of their own (the plugin reads its configuration once per
 * process), a collective completed through the v5 ABI (one_op.h), waiting for a child with a
 * deadline (a hang is killed and reported, never left to CI's timeout), counting a
 * communicator's records in a process's log file, and the plugin's warnings.
 */
#ifndef INS_FORK_UTIL_H
#define INS_FORK_UTIL_H

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl/profiler_abi.h"
#include "asan_fork.h"
#include "cases.h"
#include "check.h"
#include "one_op.h"

/* A child forked from a multi-threaded process starts threads (the plugin's own, when it
 * creates a communicator): ThreadSanitizer would end it by default. Only TSan reads this. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "die_after_fork=0"; }

static void fu_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The plugin's WARN messages in this process, and the last one. */
static atomic_int fu_warns;
static char fu_last_warn[1024];

static void fu_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != PROF_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fu_last_warn, sizeof fu_last_warn, fmt, ap);
  va_end(ap);
  atomic_fetch_add(&fu_warns, 1);
}

static int fu_mask; /* NCCL's activation-mask word: one per process, kept (the sampler writes it) */

static void *fu_init(uint64_t id) {
  void *ctx = NULL;
  CHECK(ncclProfiler_v5.init(&ctx, id, &fu_mask, "forked", 1, 2, 0, fu_logger) == 0 && ctx);
  return ctx;
}

/* One AllReduce of 1 MiB on one channel, complete (one_op.h), each later than the last on
 * the GPU (an op with an earlier op's timestamps is not recorded: core/op.c). */
static _Atomic uint64_t fu_gpu_ns = 1000000;

static void fu_op(void *ctx) {
  uint64_t t0 = atomic_fetch_add(&fu_gpu_ns, 20000);
  /* in a group of its own: its record is right however many came before (core/judge.h) */
  oo_group(ctx);
  oo_allreduce(ctx, 0, (struct oo_span[]){{t0, t0 + 12000}}, 1);
}

/* Wait for pid until ms have passed; then kill it. Its status, or -1 if it had to be killed. */
static int fu_wait(pid_t pid, int ms) {
  int status = 0;
  for (int waited = 0; waited < ms; waited += 10) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -2;
    fu_sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

/* A child's deadline: generous (sanitizers, a loaded machine); a deadlock never ends. */
#define FU_CHILD_MS 20000

/* Did the child exit 0 by itself, in time? */
static int fu_child_ok(pid_t pid) {
  int st = fu_wait(pid, FU_CHILD_MS);
  if (st == -1) fprintf(stderr, "child %ld hung: killed after %d ms\n", (long)pid, FU_CHILD_MS);
  return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Lines of <dir>/<anything>-pid<pid>.log that are records of communicator id (0: any). */
static long fu_records(const char *dir, long pid, uint64_t id) {
  char suffix[48], idpat[48], path[4096], line[16384];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", pid);
  snprintf(idpat, sizeof idpat, "\"id\":\"0x%llx\"", (unsigned long long)id);
  long n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, "\"coll_perf\":{") && (!id || strstr(line, idpat))) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* Log files in dir (names ending in .log). */
static int fu_log_files(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    n += l > 4 && !strcmp(e->d_name + l - 4, ".log");
  }
  if (d) closedir(d);
  return n;
}

/* Run fn in a process of its own (its own plugin, configured by the environment it sets),
 * with a deadline; counts the case as one check. */
static void fu_case(const char *name, int (*fn)(const char *dir)) {
  const char *only = getenv("FU_CASE"); /* one case by name, when debugging */
  if (only && *only && strcmp(only, name)) return;
  char dir[] = "/tmp/inspector-fork-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  fflush(NULL);
  pid_t pid = getenv("FU_INPROC") ? 0 : fork(); /* FU_INPROC: in this process (a debugger) */
  if (pid == 0) {
    setpgid(0, 0); /* its children with it: none outlives the case */
    g_fail = 0;    /* an earlier case's failure is not this one's */
    setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
    setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
    int failed = fn(dir);
    fflush(NULL);
    exit(failed ? 1 : 0);
  }
  setpgid(pid, pid); /* (either may run first) */
  int st = fu_wait(pid, 4 * FU_CHILD_MS);
  kill(-pid, SIGKILL); /* what a hung case left: its children, hung too */
  int ok = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!ok && st >= 0) fprintf(stderr, "case status: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  printf("%s: %s\n", name, ok ? "ok" : st == -1 ? "HUNG (killed)" : "FAILED");
  CHECK(ok);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* A case of a fork test: its name and what runs in its process (fu_case). */
struct fu_named_case {
  const char *name;
  int (*fn)(const char *dir);
  const char *labels; /* its ctest labels beyond the binary's (cases.h list_case), or NULL */
};

/* main() of a fork test: every case, or the one `--case NAME` names, each in its process;
 * `--list` names them (cases.h). */
static inline int fu_main(int argc, char **argv, const struct fu_named_case *cases, size_t n, const char *suite) {
  if (argc == 2 && !strcmp(argv[1], "--list")) {
    for (size_t i = 0; i < n; i++) list_case(cases[i].name, cases[i].labels);
    return 0;
  }
  const char *only = argc == 3 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
  int ran = 0;
  for (size_t i = 0; i < n; i++)
    if (!only || !strcmp(only, cases[i].name)) {
      fu_case(cases[i].name, cases[i].fn);
      ran++;
    }
  if (!ran) {
    fprintf(stderr, "no case %s\n", only ? only : "");
    return 2;
  }
  return check_report(suite);
}

#endif
