/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fork_locks.c - a process forked while the plugin's threads hold its locks: the
 * child must not inherit a held lock (src/sink/dump.c, "fork()"). Each case forks at a
 * point made certain, not likely, through two seams: the plugin's test hook (the dump
 * thread stops inside a pass, holding the fork's gate; the fork's prepare says it
 * is about to wait) and this program's pwrite() (it takes precedence over libc's for the
 * plugin objects linked in: the writer thread stops inside a write, holding the log
 * file's lock, as on a slow file system). What was stopped is let go when the plugin's
 * prepare is about to wait, or else only after fork() has returned: without handlers the
 * child is made while the lock is held. A child that hangs is killed at a deadline.
 *   dump_pass       fork while the dump thread is in a pass: the child creates a
 *                   communicator, records 4 ops, finalizes: its own file holds the 4
 *   write           fork while the writer thread is in a write: the same
 *   write_hangs     fork while a write never ends (a hung file system): fork returns
 *                   after the plugin's bound, and the child, which cannot know what the
 *                   plugin's threads held, records nothing, says so once, and exits
 *   busy            20 forks while the dump thread drains a producer's records (the
 *                   review's reproduction): no child hangs, every record once
 *   otlp_collect    fork while the OTLP exporter encodes an export (its sink's lock held,
 *                   through the sink's test hook), let go when the prepare waits: the
 *                   child records its 4 ops, warns once that its communicators are not
 *                   exported over OTLP
 *   otlp_stuck      the same, the exporter let go only after fork() returns: the fork
 *                   returns after the plugin's bound, and the child records nothing (a
 *                   sink's lock may be held), says so once, and exits
 *   sampler_tick    fork while the time-window sampler's thread decides a window (its lock
 *                   held, inside this program's clock, let go after fork() returns): the
 *                   fork returns after the bound, the child makes the lock anew and
 *                   records its 4 ops (its finalize reads the sampler's coverage, under
 *                   that lock)
 *   trace_child     trace mode: the child traces its own communicator to its own
 *                   <host>-pid<child>.trace.jsonl (init, 4 ops' starts, finalize), and
 *                   none of the parent's lines; the parent's trace has none of the child's
 *   exit_unfinalized the child exits without finalizing its communicator: its exit writes
 *                   the 4 records, as any process's exit does
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/clock.h"
#include "core/sampler.h"
#include "fork_util.h"
#include "sink/dump.h"
#if !defined(INSPECTOR_OTLP) || INSPECTOR_OTLP
#include "sink/otlp/otlp.h"
#endif
#include "ok_collector.h"

/* ---- the seams ---------------------------------------------------------------- */

static atomic_int g_hold_pass;   /* the next dump pass stops (once) */
static atomic_int g_in_pass;     /* ... and has stopped */
static atomic_int g_hold_write;  /* the next write stops (once) */
static atomic_int g_in_write;    /* ... and has stopped */
static atomic_int g_release;     /* what stopped may go on */
static atomic_int g_release_at_prepare; /* the fork's prepare releases it */

static void wait_release(void) {
  while (!atomic_load(&g_release)) fu_sleep_ms(1);
}

static void hook(enum ins_dump_hook_at at, const struct ins_comm *c) {
  (void)c;
  if (at == INS_DUMP_HOOK_FORK_PREPARE) {
    if (atomic_load(&g_release_at_prepare)) atomic_store(&g_release, 1);
  } else if (at == INS_DUMP_HOOK_PASS && atomic_exchange(&g_hold_pass, 0)) {
    atomic_store(&g_in_pass, 1);
    wait_release();
  }
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  if (atomic_exchange(&g_hold_write, 0)) {
    atomic_store(&g_in_write, 1);
    wait_release();
  }
  return real(fd, buf, n, off);
}

/* Wait (bounded) until flag is set; false if it never was. */
static bool reached(atomic_int *flag) {
  for (int i = 0; i < FU_CHILD_MS && !atomic_load(flag); i++) fu_sleep_ms(1);
  return atomic_load(flag) != 0;
}

/* ---- a child of the job ----------------------------------------------------------- */

#define CHILD_OPS 4
#define CHILD_COMM 0xc0ffeeULL

static const char *g_child_warning; /* the one warning a recording child gives, if any */

/* Create a communicator, record CHILD_OPS ops, finalize it, exit: 0 if the checks held. */
static void child_job(bool expect_recorded) {
  int warns = atomic_load(&fu_warns);
  void *ctx = fu_init(CHILD_COMM);
  for (int i = 0; i < CHILD_OPS && ctx; i++) fu_op(ctx);
  if (ctx) CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  if (expect_recorded && g_child_warning) {
    CHECK_EQ_U(atomic_load(&fu_warns) - warns, 1);
    CHECK(strstr(fu_last_warn, g_child_warning) != NULL);
  } else if (!expect_recorded) {
    CHECK_EQ_U(atomic_load(&fu_warns) - warns, 1);
    CHECK(strstr(fu_last_warn, "communicators are not recorded") != NULL);
  } else if (atomic_load(&fu_warns) != warns) {
    CHECK(!"a warning in the child");
    fprintf(stderr, "child %ld: %s\n", (long)getpid(), fu_last_warn);
  }
  fflush(NULL);
  exit(g_fail ? 1 : 0);
}

/* Fork now; let what stopped go once fork() has returned (if the prepare did not). */
static pid_t fork_job_child(bool expect_recorded) {
  af_settle_threads();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child_job(expect_recorded);
  atomic_store(&g_release, 1);
  return pid;
}

static void setup(void) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1); /* a pass every ms */
  ins_dump_test_hook = hook;
}

/* The parent's 3 records and the child's CHILD_OPS (or none), each in its own file. */
static void check_files(const char *dir, pid_t child, long child_records) {
  CHECK_EQ_U(fu_records(dir, getpid(), 0x1234), 3);
  CHECK_EQ_U(fu_records(dir, getpid(), CHILD_COMM), 0);
  CHECK_EQ_U(fu_records(dir, child, CHILD_COMM), child_records);
  CHECK_EQ_U(fu_records(dir, child, 0), child_records);
}

/* ---- the cases ------------------------------------------------------------------ */

static int case_dump_pass(const char *dir) {
  setup();
  void *ctx = fu_init(0x1234);
  atomic_store(&g_release_at_prepare, 1);
  atomic_store(&g_hold_pass, 1);
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(reached(&g_in_pass));
  pid_t child = fork_job_child(true);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  return g_fail;
}

static int case_write(const char *dir) {
  setup();
  void *ctx = fu_init(0x1234);
  atomic_store(&g_release_at_prepare, 1);
  atomic_store(&g_hold_write, 1);
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(reached(&g_in_write));
  pid_t child = fork_job_child(true);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  return g_fail;
}

static int case_write_hangs(const char *dir) {
  setup();
  void *ctx = fu_init(0x1234);
  atomic_store(&g_hold_write, 1); /* released only after fork() returns */
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(reached(&g_in_write));
  pid_t child = fork_job_child(false);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, 0);
  CHECK_EQ_U(fu_log_files(dir), 1);
  return g_fail;
}

static atomic_int g_stop, g_produced;

static void *producer(void *ctx) {
  while (!atomic_load(&g_stop)) {
    fu_op(ctx);
    /* paced (5 ops a ms at most): the dump thread keeps up even under ThreadSanitizer,
     * nothing is dropped */
    if (atomic_fetch_add(&g_produced, 1) % 5 == 4) fu_sleep_ms(1);
  }
  return NULL;
}

#define BUSY_FORKS 20

static int case_busy(const char *dir) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1);
  void *ctx = fu_init(0x1234);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, producer, ctx) == 0);
  pid_t kids[BUSY_FORKS];
  int ok = 0;
  for (int i = 0; i < BUSY_FORKS; i++) {
    int before = atomic_load(&g_produced);
    while (atomic_load(&g_produced) < before + 200) fu_sleep_ms(1); /* records to drain */
    fflush(NULL);
    kids[i] = fork();
    if (kids[i] == 0) child_job(true);
    ok += fu_child_ok(kids[i]);
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
  CHECK_EQ_U(ok, BUSY_FORKS);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  /* every record of the parent once, in its file */
  CHECK_EQ_U(fu_records(dir, getpid(), 0x1234), atomic_load(&g_produced));
  for (int i = 0; i < BUSY_FORKS; i++) CHECK_EQ_U(fu_records(dir, kids[i], 0), CHILD_OPS);
  return g_fail;
}

#if !defined(INSPECTOR_OTLP) || INSPECTOR_OTLP /* a build without OTLP (-DINSPECTOR_OTLP=OFF) has no exporter */
/* ---- the OTLP exporter's lock ---------------------------------------------------- */

static atomic_int g_hold_collect, g_in_collect;

static void otlp_hook(const atomic_int *drains_waiting) {
  (void)drains_waiting;
  if (atomic_exchange(&g_hold_collect, 0)) {
    atomic_store(&g_in_collect, 1);
    wait_release();
  }
}

static void otlp_setup(void) {
  setup();
  char url[64];
  /* a collector that takes every body at once: the exporter exports at every interval (one
   * that refused would make its first bodies and wait with them, making no more) */
  int port = ok_collector_start();
  CHECK(port > 0);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_METRIC_EXPORT_INTERVAL", "20", 1); /* exports often */
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "50", 1);
  ins_otlp_test_hook = otlp_hook;
}

static int case_otlp_collect(const char *dir) {
  otlp_setup();
  g_child_warning = "not exported over OTLP";
  void *ctx = fu_init(0x1234);
  atomic_store(&g_release_at_prepare, 1);
  atomic_store(&g_hold_collect, 1);
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(reached(&g_in_collect));
  pid_t child = fork_job_child(true);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  return g_fail;
}

static int case_otlp_stuck(const char *dir) {
  otlp_setup();
  void *ctx = fu_init(0x1234);
  atomic_store(&g_hold_collect, 1); /* released only after fork() returns */
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(reached(&g_in_collect));
  pid_t child = fork_job_child(false);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, 0);
  return g_fail;
}
#endif

/* ---- the sampler's lock ------------------------------------------------------------ */

/* Always 0.5 s into a window of the first second of every 30 (every op is timed); the
 * thread decides every millisecond; the decision of our choosing stops inside now(). */
static atomic_int g_hold_tick, g_in_tick;

static uint64_t fake_now(void) {
  if (atomic_exchange(&g_hold_tick, 0)) {
    atomic_store(&g_in_tick, 1);
    wait_release();
  }
  return 1700000040500000000ull;
}

static int fake_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline_ns) {
  (void)deadline_ns;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 1000000;
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  return pthread_cond_timedwait(cond, mutex, &ts);
}

static const struct ins_sampler_clock g_fake_clock = {fake_now, fake_wait};

static int case_sampler_tick(const char *dir) {
  setup();
  setenv("NCCL_INSPECTOR_SAMPLE_WINDOW_MS", "1000", 1);
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "30000", 1);
  ins_sampler_set_clock(&g_fake_clock);
  void *ctx = fu_init(0x1234);
  /* no record yet: no dump pass asks the sampler (it would wait, and hold the fork) */
  atomic_store(&g_hold_tick, 1); /* released only after fork() returns */
  CHECK(reached(&g_in_tick));
  pid_t child = fork_job_child(true);
  CHECK(fu_child_ok(child));
  for (int i = 0; i < 3; i++) fu_op(ctx);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  return g_fail;
}

/* ---- trace mode, and a child's exit -------------------------------------------------- */

/* Lines of the trace file of process pid in dir that contain every one of the strings
 * (NULL-terminated); -1 if there is no such file. */
static long trace_lines(const char *dir, long pid, const char *a, const char *b) {
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
    while (f && fgets(line, sizeof line, f))
      if (strstr(line, a) && (!b || strstr(line, b))) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static int case_trace_child(const char *dir) {
  setenv("NCCL_INSPECTOR_TRACE_DIR", dir, 1);
  void *ctx = fu_init(0x1234);
  for (int i = 0; i < 3; i++) fu_op(ctx);
  /* the parent's trace thread done with what was traced (its 9 starts in the file): at
   * the fork it only naps, never inside malloc (asan_fork.h says why that matters) */
  for (int ms = 0; ms < FU_CHILD_MS && trace_lines(dir, getpid(), "\"cb\":\"start\"", NULL) < 9; ms++)
    fu_sleep_ms(1);
  pid_t child = fork_job_child(true);
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  /* the child's trace: its communicator's init and finalize, 3 starts per op (group,
   * collective, kernel channel), nothing of the parent's (whose ctx is 1) */
  CHECK_EQ_U(trace_lines(dir, child, "\"cb\":\"init\"", NULL), 1);
  CHECK_EQ_U(trace_lines(dir, child, "\"cb\":\"init\"", "\"comm\":\"0xc0ffee\""), 1);
  CHECK_EQ_U(trace_lines(dir, child, "\"cb\":\"start\"", NULL), 3 * CHILD_OPS);
  CHECK_EQ_U(trace_lines(dir, child, "\"cb\":\"finalize\"", NULL), 1);
  CHECK_EQ_U(trace_lines(dir, child, "\"ctx\":1,", NULL), 0);
  /* the parent's: its own, once (the child's init is not there) */
  CHECK_EQ_U(trace_lines(dir, getpid(), "\"cb\":\"init\"", NULL), 1);
  CHECK_EQ_U(trace_lines(dir, getpid(), "\"cb\":\"start\"", NULL), 3 * 3);
  CHECK_EQ_U(trace_lines(dir, getpid(), "\"cb\":\"finalize\"", NULL), 1);
  return g_fail;
}

static int case_exit_unfinalized(const char *dir) {
#if defined(__SANITIZE_THREAD__)
  (void)dir; /* not under ThreadSanitizer: see child_start in src/abi/lifecycle.c */
  return 0;
#endif
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "60000000", 1); /* no pass before exit */
  void *ctx = fu_init(0x1234);
  for (int i = 0; i < 3; i++) fu_op(ctx);
  af_settle_threads();
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    void *c = fu_init(CHILD_COMM);
    for (int i = 0; i < CHILD_OPS && c; i++) fu_op(c);
    exit(0); /* no finalize: the exit writes them */
  }
  CHECK(fu_child_ok(child));
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  check_files(dir, child, CHILD_OPS);
  return g_fail;
}

int main(void) {
#if !defined(INSPECTOR_OTLP) || INSPECTOR_OTLP
  fu_case("otlp_collect", case_otlp_collect);
  fu_case("otlp_stuck", case_otlp_stuck);
#endif
  fu_case("sampler_tick", case_sampler_tick);
  fu_case("trace_child", case_trace_child);
  fu_case("exit_unfinalized", case_exit_unfinalized);
  fu_case("dump_pass", case_dump_pass);
  fu_case("write", case_write);
  fu_case("write_hangs", case_write_hangs);
  fu_case("busy", case_busy);
  return check_report("fork_locks");
}
