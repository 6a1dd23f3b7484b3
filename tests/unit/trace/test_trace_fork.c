/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_trace_fork.c - fork() from a process in trace mode whose trace thread is far
 * behind (src/trace/trace.c, "fork()"): the child's fork handler does the same work
 * whatever the parent's backlog of unwritten callbacks, and touches none of it; the
 * child then traces its own communicator to its own file, which replays, with none of
 * the parent's lines.
 *
 * The backlog: this program's write() (it takes precedence over libc's for the plugin
 * objects linked in) holds the trace thread inside its first write to the trace file,
 * so that every later callback stays in the callbacks' buffers. Then
 *   1. a child is forked with almost no backlog, and
 *   2. another after BACKLOG_PAIRS proxy-op starts and stops (ignored by the tracker: no
 *      records), at least BACKLOG_MIB MiB of cells (64 bytes a callback at least).
 * Each child reads its minor page faults (getrusage) first thing after fork() returns:
 * those of the fork's child handlers, the same code in both children. A handler that
 * walks the backlog writes into each segment it passes (1 MiB each: a page made the
 * child's own, one fault; reading costs no fault, the child has the parent's page
 * tables), so the second child's count exceeds the first's by BACKLOG_MIB at least (by
 * 49 before this was fixed, in every build); a handler whose work does not depend on
 * the backlog, by nothing. The check allows a quarter of BACKLOG_MIB: judged by what
 * the code did, not by time. The first child then exits at once (as a child that only
 * execs); the second creates communicator 0xc0ffee, records CHILD_OPS ops, finalizes it
 * and exits.
 * The second child's trace: exactly its init, 7 lines per op (group start and stop,
 * collective, kernel channel start, record and stop, collective stop), its finalize;
 * nothing of the parent's (ctx 1, proxy ops). With inspector-replay and the plugin
 * given (argv[1], argv[2]), the file is replayed: exit 0 and CHILD_OPS records.
 * This process then leaves with _exit (its held backlog is never written).
 */
#include <dlfcn.h>
#include <sys/resource.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's other helpers */
#include "fork_util.h"

#define BACKLOG_MIB 32
#define BACKLOG_PAIRS ((BACKLOG_MIB << 20) / (2 * 64)) /* two callbacks, a cell each at least */
#define CHILD_OPS 4
#define CHILD_COMM 0xc0ffeeULL

static const char *g_replay, *g_plugin;

/* ---- the seam: the trace thread held in a write ----------------------------------- */

static atomic_int g_hold_write, g_in_write;

static bool is_trace_fd(int fd) {
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 12) return false;
  target[n] = 0;
  return !strcmp(target + n - 12, ".trace.jsonl");
}

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  if (atomic_load(&g_hold_write) && is_trace_fd(fd) && atomic_exchange(&g_hold_write, 0)) {
    atomic_store(&g_in_write, 1);
    for (;;) fu_sleep_ms(1000); /* until this process _exits */
  }
  return real(fd, buf, n);
}

/* ---- traffic ------------------------------------------------------------------------ */

/* A proxy op started and stopped: two trace lines, no record. */
static void proxy_pair(void *ctx) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_PROXY_OP;
  void *h = NULL;
  ncclProfiler_v5.startEvent(ctx, &h, &d);
  ncclProfiler_v5.stopEvent(h);
}

/* ---- the children ------------------------------------------------------------------- */

static long minor_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

/* Fork; the child sends its minor faults down a pipe first thing, then either _exits or
 * records its own communicator. The child's pid; *faults: its count (-1: none came). */
static pid_t fork_child(bool record, long *faults) {
  int p[2];
  *faults = -1;
  if (pipe(p) != 0) return -1;
  af_settle_threads(); /* ASan only: no thread in malloc at the fork (asan_fork.h) */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    long f = minor_faults();
    ssize_t w = write(p[1], &f, sizeof f);
    close(p[0]), close(p[1]);
    if (w != (ssize_t)sizeof f || !record) _exit(w == (ssize_t)sizeof f ? 0 : 1);
    void *c = fu_init(CHILD_COMM);
    for (int i = 0; i < CHILD_OPS && c; i++) fu_op(c);
    if (c) CHECK(ncclProfiler_v5.finalize(c) == 0);
    fflush(NULL);
    exit(c && !g_fail ? 0 : 1);
  }
  close(p[1]);
  if (pid > 0 && read(p[0], faults, sizeof *faults) != (ssize_t)sizeof *faults) *faults = -1;
  close(p[0]);
  return pid;
}

/* Lines of process pid's trace file in dir containing a (NULL: every line); -1: no file. */
static long trace_lines(const char *dir, long pid, const char *a) {
  char suffix[48], path[4096], line[16384];
  snprintf(suffix, sizeof suffix, "-pid%ld.trace.jsonl", pid);
  long n = -1;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (f) n = 0;
    while (f && fgets(line, sizeof line, f)) n += !a || strstr(line, a);
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* Replay the child's trace through the plugin (a library of its own, in a process of
 * its own): exit 0, and its CHILD_OPS records in a log of the replay's. */
static void check_replays(const char *dir, long child) {
  if (!g_replay || !g_plugin) return;
  char out[512], cmd[8192];
  snprintf(out, sizeof out, "%s/replayed", dir);
  snprintf(cmd, sizeof cmd, "env -u NCCL_INSPECTOR_TRACE_DIR NCCL_INSPECTOR_DUMP_DIR=%s '%s' --plugin '%s' "
           "--abi trace --quiet %s/*-pid%ld.trace.jsonl", out, g_replay, g_plugin, dir, child);
  CHECK(system(cmd) == 0);
  DIR *d = opendir(out);
  long pid = -1;
  for (struct dirent *e; d && (e = readdir(d));) {
    const char *p = strstr(e->d_name, "-pid");
    if (p && strstr(e->d_name, ".log")) pid = atol(p + 4);
  }
  if (d) closedir(d);
  CHECK_EQ_U(fu_records(out, pid, CHILD_COMM), CHILD_OPS);
}

static int case_backlog(const char *dir) {
  setenv("NCCL_INSPECTOR_TRACE_DIR", dir, 1);
  atomic_store(&g_hold_write, 1);
  void *ctx = fu_init(0x1234); /* its init line: the trace thread's first write, held */
  for (int i = 0; i < FU_CHILD_MS && !atomic_load(&g_in_write); i++) fu_sleep_ms(1);
  CHECK(atomic_load(&g_in_write));

  long small = -1, large = -1;
  pid_t first = fork_child(false, &small);
  CHECK(fu_child_ok(first));
  for (long i = 0; i < BACKLOG_PAIRS; i++) proxy_pair(ctx);
  pid_t second = fork_child(true, &large);
  CHECK(fu_child_ok(second));
  printf("minor faults in the child's fork handlers: %ld with no backlog, %ld with %d MiB\n",
         small, large, BACKLOG_MIB);
  CHECK(small >= 0 && large >= 0);
  CHECK(large - small < BACKLOG_MIB / 4);

  /* the child's own trace, and nothing of the parent's */
  CHECK_EQ_U(trace_lines(dir, second, "\"cb\":\"init\""), 1);
  CHECK_EQ_U(trace_lines(dir, second, "\"comm\":\"0xc0ffee\""), 1);
  CHECK_EQ_U(trace_lines(dir, second, "\"cb\":\"finalize\""), 1);
  CHECK_EQ_U(trace_lines(dir, second, "\"ctx\":1,"), 0);
  CHECK_EQ_U(trace_lines(dir, second, NULL), 2 + 7 * CHILD_OPS);
  CHECK_EQ_U(trace_lines(dir, first, NULL), (unsigned long long)-1); /* made no file */
  check_replays(dir, second);
  fflush(NULL);
  _exit(g_fail ? 1 : 0); /* the trace thread is held: nothing of the backlog is written */
}

int main(int argc, char **argv) {
  if (argc > 2) g_replay = argv[1], g_plugin = argv[2];
  fu_case("backlog", case_backlog);
  return check_report("trace_fork");
}
