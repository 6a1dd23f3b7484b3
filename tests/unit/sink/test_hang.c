/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hang.c - hang detection (src/sink/hang.c and its sinks), driven through the plugin's
 * v5 table as NCCL would drive it, one behaviour per ctest:
 *
 *   inspector-unit-hang --case CASE      (unit_hang.<case>; every case without --case)
 *
 * Each case runs in a process of its own (fork_util.h: the plugin reads its configuration
 * once per process) with NCCL_INSPECTOR_HANG_SECONDS=0.5 and the dump interval -1 (records
 * at teardown only): a line before the finalize can only be a check's. The checks' clock is
 * the test's (ins_hang_test_clock), moved by hand: every time in a line is exact, and
 * nothing is timed. The dump thread's schedule stays real (a check every 0.125 s): the test
 * waits, boundedly, for checks to have ended (the dump layer's hook) and for lines that
 * must come, and judges what was written, reading the log while the process runs.
 *
 *   env            NCCL_INSPECTOR_HANG_SECONDS read: 300 s unset or empty, 0 off, decimals;
 *                  below 0.1 s raised to it, above a week lowered to it, anything malformed
 *                  (a sign, an exponent, hex, nan, a unit...) the default: each with one
 *                  warning naming the variable, its value and the value used
 *   stuck_coll     an AllReduce whose 4 channels started and none stopped, in flight 0.6 s:
 *                  one hang line with its coll/sn/size/count/datatype, in_flight_s 0.6,
 *                  first_seen_us, channels, ops_in_flight 1, repeat 0, the AllGather
 *                  completed before it as last_completed (end_ts_ns its GPU end); no
 *                  second line before another 0.5 s (0.3 s later: none), then repeat 1 at
 *                  1.1 s; its channels stopped: one hang_resolved line (in_flight_s 1.1), and
 *                  its record at the finalize
 *   queued         an op with channels started and one behind it whose kernel never
 *                  started: a line each, kernel_started true and false, ops_in_flight 2,
 *                  last_completed null (nothing completed)
 *   p2p            a Recv whose channel started and never stopped: p2p, p2p_sn, p2p_peer and
 *                  the p2p_ size keys; resolved with its peer
 *   second_comm    two communicators, the hang on the second: its line only; the first,
 *                  idle, says comm_idle
 *   idle           an idle communicator says comm_idle (idle_s, its last completed op) after
 *                  0.5 s and again at most every 0.5 s; a busy one (an op completed before
 *                  every check) never
 *   quiet          nothing stuck: 12 ops each in flight 0.3 s of the test's clock (3.6 s in
 *                  all): no hang, hang_resolved or comm_idle line, the log holds records and
 *                  dump_stats only
 *   gpu_past       ops the GPU is past are not stuck: every started channel stopped (a lost
 *                  start; an untrusted channel count waiting for its token), or an op of a
 *                  later group completed (a lost stop); the one op queued behind them is
 *                  (one line, ops_in_flight 3)
 *   off            NCCL_INSPECTOR_HANG_SECONDS=0: no check runs, no line, however long
 *   prom_gauges    Prometheus: nccl_inflight_oldest_seconds and nccl_last_completed_sn with
 *                  their labels while stuck (the file rewritten though nothing completes)
 *                  and after the resolution (0, the new sn); promtool check metrics, when
 *                  installed, finds nothing but the seed's microseconds lint
 *   otlp_gauges    OTLP: nccl.inflight.oldest (s) and nccl.last_completed_sn with the sink's
 *                  attributes, in an export's first body, while stuck and after
 *   at_once        with a dump interval of an hour (no pass before it), the line is in the
 *                  file when the check that found the op stuck ends, read on the dump thread
 *                  before it goes on (not left to the writer thread), after the record of
 *                  the op completed before it (the check drained the communicator first)
 *   in_group       the stuck op in an application group of three whose two others complete:
 *                  still stuck (one line, ops_in_flight 1), last_completed the group's last
 *   prom_quiet     Prometheus, nothing in flight for 2 s of the checks' clock: no check writes
 *                  a file (the window, 30 s, has not ended)
 *   off_gauges     NCCL_INSPECTOR_HANG_SECONDS=0: the .prom file (and, with OTLP built, the
 *                  export) has the records' series and neither gauge
 *   reuse          threshold 0.1 s: 40 rounds of 8 ops past it, completed and their memory
 *                  reused by the next round's while the checks read them (every 4th round
 *                  after a check said them): every hang line names its own op's sn, count,
 *                  size and datatype (no copy torn by a reuse is kept), and each is resolved
 *   small_coll     a 4-byte AllReduce (a barrier), below NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES,
 *                  its 2 channels started and none stopped for 0.6 s: its hang line (coll_sn
 *                  7, size 4, count 1), then hang_resolved; no record of it, and another
 *                  left in flight at the finalize: neither is counted (dropped, untimed,
 *                  incomplete: 0), the one record is the AllGather before them
 *   small_off      NCCL_INSPECTOR_HANG_SECONDS=0: an op below the minimum size gets no handle
 *                  (not tracked at all), one of the minimum size does, and its record
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/redact.h"
#include "fork_util.h"
#include "sink/dump.h"
#include "sink/hang.h"
#if INSPECTOR_OTLP
#include "closed_port.h"
#include "io/buf.h"
#include "sink/otlp/otlp.h"
#endif

#define WAIT_MS 20000 /* the most anything that must come is waited for: only a failure gets there */

/* ---- the checks' clock, and the checks ---- */

static _Atomic uint64_t g_clock = 1000ull * 1000000000ull;
static uint64_t test_clock(void) { return atomic_load(&g_clock); }
static void advance_ms(int ms) { atomic_fetch_add(&g_clock, (uint64_t)ms * 1000000ull); }

static int count_lines(const char *dir, const char *key);

/* g_seen_dir set: at the end of each check, on the dump thread before it goes on, the hang
 * lines its log holds then (g_seen_lines). */
static char *_Atomic g_seen_dir;
static atomic_int g_seen_lines;

/* The log's writes (json/writer.c: pwrite), seen here first (this executable's pwrite is the
 * one its objects call). With g_slow_others set, a hang line that a thread other than the
 * dump thread writes is written 0.3 s late: a line left to the writer thread would not be
 * in the file when the check that said it ends (g_seen_lines); one the dump thread writes,
 * or waits for, is. */
static atomic_bool g_slow_others;
static atomic_long g_dump_tid;
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (atomic_load(&g_slow_others) && (long)syscall(SYS_gettid) != atomic_load(&g_dump_tid) &&
      memmem(buf, n, "\"hang\":{", 8))
    fu_sleep_ms(300);
  return syscall(SYS_pwrite64, fd, buf, n, off);
}

static atomic_int g_checks, g_passes;
static void hook(enum ins_dump_hook_at at, const struct ins_comm *c) {
  (void)c;
  if (at == INS_DUMP_HOOK_HANG || at == INS_DUMP_HOOK_PASS) atomic_store(&g_dump_tid, (long)syscall(SYS_gettid));
  if (at == INS_DUMP_HOOK_HANG) {
    char *dir = atomic_load(&g_seen_dir);
    if (dir) atomic_store(&g_seen_lines, count_lines(dir, "\"hang\":{"));
    atomic_fetch_add(&g_checks, 1);
  }
  if (at == INS_DUMP_HOOK_PASS) atomic_fetch_add(&g_passes, 1);
}

/* Wait until n more checks (or passes) have ended; n >= 2 makes one that began after the call. */
static void wait_count(atomic_int *count, int n) {
  int want = atomic_load(count) + n;
  for (int ms = 0; atomic_load(count) < want; ms += 5) {
    if (ms > WAIT_MS) {
      CHECK(!"the dump thread ran its checks");
      return;
    }
    fu_sleep_ms(5);
  }
}
static void checks(int n) { wait_count(&g_checks, n); }

/* The case's configuration, then the hooks: before the first init. */
static void setup(const char *hang_seconds) {
  setenv("NCCL_INSPECTOR_HANG_SECONDS", hang_seconds, 1);
  ins_hang_test_clock = test_clock;
  ins_dump_test_hook = hook;
}

/* ---- NCCL's side, through the v5 table ---- */

static void *ctx_new(uint64_t id, const char *name) {
  void *ctx = NULL;
  CHECK(ncclProfiler_v5.init(&ctx, id, &fu_mask, name, 1, 2, 0, fu_logger) == 0 && ctx);
  return ctx;
}

/* A collective of count floats; the handle the plugin gave (NULL: not tracked). */
static void *coll_start_n(void *ctx, const char *func, uint64_t sn, int nch, uint64_t count) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_COLL;
  d.coll.func = func;
  d.coll.datatype = "ncclFloat32";
  d.coll.count = count;
  d.coll.seqNumber = sn;
  d.coll.nChannels = (uint8_t)nch;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *op = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &op, &d) == 0);
  return op;
}

static void *coll_start(void *ctx, const char *func, uint64_t sn, int nch) {
  void *op = coll_start_n(ctx, func, sn, nch, 262144);
  CHECK(op != NULL);
  return op;
}

static void *recv_start(void *ctx, int peer) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_P2P;
  d.p2p.func = "Recv";
  d.p2p.datatype = "ncclFloat32";
  d.p2p.count = 262144;
  d.p2p.peer = peer;
  d.p2p.nChannels = 1;
  void *op = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &op, &d) == 0 && op);
  return op;
}

static void *chan_start(void *ctx, void *op, int ch, uint64_t ptimer) {
  struct prof_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = PROF_EV_KERNEL_CH;
  d.parentObj = op;
  d.kernelCh.channelId = (uint8_t)ch;
  d.kernelCh.pTimer = ptimer;
  void *h = NULL;
  CHECK(ncclProfiler_v5.startEvent(ctx, &h, &d) == 0 && h);
  return h;
}

static void chan_stop(void *h, uint64_t ptimer) {
  union prof_state_args a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = ptimer;
  ncclProfiler_v5.recordEventState(h, PROF_STATE_KERNEL_CH_STOP, &a);
  ncclProfiler_v5.stopEvent(h);
}

/* A collective in a group of its own, its one channel from t to t + 12 us, completed. */
static void coll_done(void *ctx, const char *func, uint64_t sn, uint64_t t) {
  oo_group(ctx);
  void *op = coll_start(ctx, func, sn, 1);
  chan_stop(chan_start(ctx, op, 0, t), t + 12000);
  ncclProfiler_v5.stopEvent(op);
}

/* ---- reading the log while the process runs ---- */

#define MAX_LINES 512

/* This process's log's lines holding key, copied into out (at most MAX_LINES); how many. */
static int log_lines(const char *dir, const char *key, char **out) {
  char suffix[48], path[4096];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0)
      if (strstr(line, key) && n < MAX_LINES) out[n++] = strdup(line);
    free(line);
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static void free_lines(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
}

static int count_lines(const char *dir, const char *key) {
  char *l[MAX_LINES];
  int n = log_lines(dir, key, l);
  free_lines(l, n);
  return n;
}

/* Wait until the log has n lines holding key (bounded); how many it has. */
static int wait_lines(const char *dir, const char *key, int n) {
  int got = 0;
  for (int ms = 0; (got = count_lines(dir, key)) < n && ms < WAIT_MS; ms += 10) fu_sleep_ms(10);
  if (got < n) fprintf(stderr, "waited %d ms for %d lines with %s: %d\n", WAIT_MS, n, key, got);
  return got;
}

static const char *HANG = "\"hang\":{", *RESOLVED = "\"hang_resolved\":{", *IDLE = "\"comm_idle\":{";

/* The integer after key in s (its first occurrence), or -1. */
static long long num(const char *s, const char *key) {
  const char *p = s ? strstr(s, key) : NULL;
  return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* The line among l[0..n) that holds want, or NULL. */
static const char *line_with(char **l, int n, const char *want) {
  for (int i = 0; i < n; i++)
    if (strstr(l[i], want)) return l[i];
  return NULL;
}

/* Whether s (NULL: no line) holds sub. */
static bool has(const char *s, const char *sub) { return s && strstr(s, sub); }
#define HAS(s, sub) CHECK(has((s), (sub)))

/* ---- the cases ---- */

static int case_stuck_coll(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0xc011, "hangtest");
  coll_done(ctx, "AllGather", 6, 1000000);
  oo_group(ctx);
  void *op = coll_start(ctx, "AllReduce", 7, 4), *ch[4];
  for (int i = 0; i < 4; i++) ch[i] = chan_start(ctx, op, i, 2000000 + (uint64_t)i);
  ncclProfiler_v5.stopEvent(op); /* NCCL's host stop: the kernel is what it waits for */
  checks(2);
  CHECK(count_lines(dir, HANG) == 0); /* first seen now: in flight 0 s */
  advance_ms(600);
  CHECK(wait_lines(dir, HANG, 1) == 1);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  const char *h = n ? l[0] : NULL;
  HAS(h, "\"header\":{\"id\":\"0xc011\",\"comm_name\":\"hangtest\",\"rank\":0,\"n_ranks\":2");
  HAS(h, "\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"coll_msg_size_bytes\":1048576,"
         "\"coll_count\":262144,\"coll_datatype\":\"ncclFloat32\",\"in_flight_s\":0.600000,");
  HAS(h, "\"kernel_started\":true,\"channels_started\":4,\"channels_stopped\":0,"
         "\"ops_in_flight\":1,\"repeat\":0,");
  HAS(h, "\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":6,\"end_ts_ns\":1012000}}}");
  /* first seen 0.6 s of the checks' clock before the line: the wall clock said so too */
  CHECK(num(h, "\"dump_timestamp_us\":") - num(h, "\"first_seen_us\":") == 600000);
  free_lines(l, n);
  checks(3); /* the same clock: nothing new to say */
  CHECK(count_lines(dir, HANG) == 1);
  advance_ms(300); /* 0.3 s since the line: not yet */
  checks(2);
  CHECK(count_lines(dir, HANG) == 1);
  advance_ms(200); /* 0.5 s since the line */
  CHECK(wait_lines(dir, HANG, 2) == 2);
  n = log_lines(dir, HANG, l);
  HAS(line_with(l, n, "\"repeat\":1"), "\"coll_sn\":7,");
  HAS(line_with(l, n, "\"repeat\":1"), "\"in_flight_s\":1.100000,");
  free_lines(l, n);
  for (int i = 0; i < 4; i++) chan_stop(ch[i], 2100000);
  CHECK(wait_lines(dir, RESOLVED, 1) == 1);
  n = log_lines(dir, RESOLVED, l);
  HAS(n ? l[0] : NULL, "\"hang_resolved\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":1.100000}}");
  free_lines(l, n);
  checks(2);
  CHECK(count_lines(dir, HANG) == 2 && count_lines(dir, RESOLVED) == 1);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  CHECK(fu_records(dir, getpid(), 0xc011) == 2); /* the AllGather and, completed, the AllReduce */
  return g_fail;
}

static int case_queued(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0x9e, "queued");
  oo_group(ctx);
  void *a = coll_start(ctx, "AllReduce", 3, 2);
  chan_start(ctx, a, 0, 1000);
  chan_start(ctx, a, 1, 1001);
  ncclProfiler_v5.stopEvent(a);
  oo_group(ctx);
  void *b = coll_start(ctx, "AllReduce", 4, 2); /* behind a: its kernel never starts */
  ncclProfiler_v5.stopEvent(b);
  checks(2);
  advance_ms(600);
  CHECK(wait_lines(dir, HANG, 2) == 2);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  const char *la = line_with(l, n, "\"coll_sn\":3,"), *lb = line_with(l, n, "\"coll_sn\":4,");
  HAS(la, "\"kernel_started\":true,\"channels_started\":2,\"channels_stopped\":0,\"ops_in_flight\":2,");
  HAS(lb, "\"kernel_started\":false,\"channels_started\":0,\"channels_stopped\":0,\"ops_in_flight\":2,");
  HAS(la, "\"last_completed\":null}}");
  HAS(lb, "\"last_completed\":null}}");
  free_lines(l, n);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  CHECK(count_lines(dir, HANG) == 2);
  return g_fail;
}

static int case_p2p(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0x929, "p2p");
  oo_group(ctx);
  void *op = recv_start(ctx, 1);
  void *ch = chan_start(ctx, op, 0, 5000);
  ncclProfiler_v5.stopEvent(op);
  checks(2);
  advance_ms(700);
  CHECK(wait_lines(dir, HANG, 1) == 1);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  HAS(n ? l[0] : NULL, "\"hang\":{\"p2p\":\"Recv\",\"p2p_sn\":0,\"p2p_peer\":1,\"p2p_msg_size_bytes\":1048576,"
                       "\"p2p_count\":262144,\"p2p_datatype\":\"ncclFloat32\",\"in_flight_s\":0.700000,");
  HAS(n ? l[0] : NULL, "\"kernel_started\":true,\"channels_started\":1,\"channels_stopped\":0,");
  free_lines(l, n);
  chan_stop(ch, 9000);
  CHECK(wait_lines(dir, RESOLVED, 1) == 1);
  n = log_lines(dir, RESOLVED, l);
  HAS(n ? l[0] : NULL, "\"hang_resolved\":{\"p2p\":\"Recv\",\"p2p_sn\":0,\"p2p_peer\":1,\"in_flight_s\":0.700000}}");
  free_lines(l, n);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

static int case_second_comm(const char *dir) {
  setup("0.5");
  void *a = ctx_new(0xa1, "first"), *b = ctx_new(0xb2, "second");
  coll_done(a, "AllReduce", 1, 1000000);
  coll_done(b, "AllReduce", 1, 1000000);
  oo_group(b);
  void *op = coll_start(b, "AllReduce", 2, 1);
  chan_start(b, op, 0, 2000000);
  ncclProfiler_v5.stopEvent(op);
  checks(2);
  advance_ms(600);
  CHECK(wait_lines(dir, HANG, 1) == 1);
  CHECK(wait_lines(dir, IDLE, 1) == 1); /* the first: idle since the same check */
  checks(3);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  CHECK(n == 1);
  HAS(n ? l[0] : NULL, "\"id\":\"0xb2\"");
  HAS(n ? l[0] : NULL, "\"coll_sn\":2,");
  HAS(n ? l[0] : NULL, "\"last_completed\":{\"coll\":\"AllReduce\",\"coll_sn\":1,\"end_ts_ns\":1012000}");
  free_lines(l, n);
  n = log_lines(dir, IDLE, l);
  CHECK(n == 1);
  HAS(n ? l[0] : NULL, "\"id\":\"0xa1\"");
  free_lines(l, n);
  CHECK(ncclProfiler_v5.finalize(a) == 0 && ncclProfiler_v5.finalize(b) == 0);
  return g_fail;
}

static int case_idle(const char *dir) {
  setup("0.5");
  void *a = ctx_new(0x1d1e, "idle"), *b = ctx_new(0xb05, "busy");
  coll_done(a, "AllReduce", 1, 1000000);
  checks(2); /* a: idle from here (the checks' time T) */
  for (int i = 0; i < 6; i++) { /* b completes an op before each check; T + 0.2 ... T + 1.2 */
    coll_done(b, "AllReduce", (uint64_t)i, 2000000 + 100000 * (uint64_t)i);
    advance_ms(200);
    checks(2);
  }
  char *l[MAX_LINES];
  int n = log_lines(dir, IDLE, l);
  CHECK(n == 2); /* at T + 0.6 (0.5 s idle), and at T + 1.2 (0.5 s after it) */
  const char *i1 = line_with(l, n, "\"idle_s\":0.600000"), *i2 = line_with(l, n, "\"idle_s\":1.200000");
  HAS(i1, "\"id\":\"0x1d1e\"");
  HAS(i2, "\"id\":\"0x1d1e\"");
  HAS(i1, "\"comm_idle\":{\"idle_s\":0.600000,\"last_completed\":{\"coll\":\"AllReduce\",\"coll_sn\":1,"
          "\"end_ts_ns\":1012000}}}");
  CHECK(!line_with(l, n, "\"id\":\"0xb05\""));
  free_lines(l, n);
  CHECK(count_lines(dir, HANG) == 0);
  CHECK(ncclProfiler_v5.finalize(a) == 0 && ncclProfiler_v5.finalize(b) == 0);
  return g_fail;
}

static int case_quiet(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0x91e7, "quiet");
  for (int i = 0; i < 12; i++) {
    oo_group(ctx);
    void *op = coll_start(ctx, "AllReduce", (uint64_t)i, 1);
    void *ch = chan_start(ctx, op, 0, 1000000 + 100000 * (uint64_t)i);
    ncclProfiler_v5.stopEvent(op);
    checks(2); /* seen in flight */
    advance_ms(300);
    chan_stop(ch, 1000000 + 100000 * (uint64_t)i + 50000);
  }
  checks(2);
  CHECK(count_lines(dir, HANG) == 0 && count_lines(dir, RESOLVED) == 0 && count_lines(dir, IDLE) == 0);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  /* every line a record or dump_stats: nothing else was said */
  int all = count_lines(dir, "{\"header\":");
  CHECK(all == count_lines(dir, "\"coll_perf\":{") + count_lines(dir, "\"dump_stats\":{"));
  CHECK(fu_records(dir, getpid(), 0x91e7) == 12);
  return g_fail;
}

static int case_gpu_past(const char *dir) {
  setup("0.5");
  void *x = ctx_new(0x9a, "lost"), *y = ctx_new(0x9b, "overtaken");
  /* x: A lost a channel's start (1 of 2 came, and stopped); B's channel count is not one
   * (224: RCCL's garbage), its channel stopped, its token never returned; E queued behind */
  oo_group(x);
  void *a = coll_start(x, "AllReduce", 1, 2);
  chan_stop(chan_start(x, a, 0, 1000), 2000);
  ncclProfiler_v5.stopEvent(a);
  oo_group(x);
  void *b = coll_start(x, "AllReduce", 2, 224);
  chan_stop(chan_start(x, b, 0, 3000), 4000);
  ncclProfiler_v5.stopEvent(b);
  oo_group(x);
  void *e = coll_start(x, "AllReduce", 3, 2);
  ncclProfiler_v5.stopEvent(e);
  /* y: C lost a channel's stop; D, of a later group, completed */
  oo_group(y);
  void *c = coll_start(y, "AllReduce", 1, 2);
  chan_start(y, c, 0, 1000);
  chan_stop(chan_start(y, c, 1, 1001), 2000);
  ncclProfiler_v5.stopEvent(c);
  coll_done(y, "AllReduce", 2, 3000);
  checks(2);
  advance_ms(600);
  CHECK(wait_lines(dir, HANG, 1) == 1);
  checks(3);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  CHECK(n == 1);
  HAS(n ? l[0] : NULL, "\"id\":\"0x9a\"");
  HAS(n ? l[0] : NULL, "\"coll_sn\":3,");
  HAS(n ? l[0] : NULL, "\"kernel_started\":false,\"channels_started\":0,\"channels_stopped\":0,\"ops_in_flight\":3,");
  free_lines(l, n);
  CHECK(ncclProfiler_v5.finalize(x) == 0 && ncclProfiler_v5.finalize(y) == 0);
  return g_fail;
}

static int case_off(const char *dir) {
  setup("0");
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "100000", 1); /* passes to wait for */
  void *ctx = ctx_new(0x0ff, "off");
  oo_group(ctx);
  void *op = coll_start(ctx, "AllReduce", 1, 1);
  chan_start(ctx, op, 0, 1000);
  wait_count(&g_passes, 3);
  advance_ms(10000);
  wait_count(&g_passes, 3);
  CHECK(atomic_load(&g_checks) == 0);
  CHECK(count_lines(dir, HANG) == 0 && count_lines(dir, IDLE) == 0);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

/* The integer after key in the last dump_stats line of communicator `id` (hex), or -1. */
static long long stat_of(const char *dir, const char *id, const char *key) {
  char *l[MAX_LINES];
  int n = log_lines(dir, "\"dump_stats\":{", l);
  long long v = -1;
  for (int i = 0; i < n; i++)
    if (strstr(l[i], id)) v = num(l[i], key);
  free_lines(l, n);
  return v;
}

static int case_small_coll(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0x5a11, "small");
  coll_done(ctx, "AllGather", 6, 1000000);
  /* torch.distributed.barrier(): one float, 4 bytes, below DUMP_MIN_SIZE_BYTES (8192) */
  oo_group(ctx);
  void *op = coll_start_n(ctx, "AllReduce", 7, 2, 1), *ch[2] = {NULL, NULL};
  CHECK(op != NULL); /* tracked: hang detection watches it */
  for (int i = 0; op && i < 2; i++) ch[i] = chan_start(ctx, op, i, 2000000 + (uint64_t)i);
  if (op) ncclProfiler_v5.stopEvent(op);
  checks(2);
  CHECK(count_lines(dir, HANG) == 0); /* first seen now */
  advance_ms(600);
  CHECK(wait_lines(dir, HANG, 1) == 1);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  const char *h = n ? l[0] : NULL;
  HAS(h, "\"header\":{\"id\":\"0x5a11\",\"comm_name\":\"small\",\"rank\":0,");
  HAS(h, "\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"coll_msg_size_bytes\":4,"
         "\"coll_count\":1,\"coll_datatype\":\"ncclFloat32\",\"in_flight_s\":0.600000,");
  HAS(h, "\"kernel_started\":true,\"channels_started\":2,\"channels_stopped\":0,"
         "\"ops_in_flight\":1,\"repeat\":0,");
  HAS(h, "\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":6,\"end_ts_ns\":1012000}}}");
  free_lines(l, n);
  for (int i = 0; i < 2; i++)
    if (ch[i]) chan_stop(ch[i], 2100000);
  CHECK(wait_lines(dir, RESOLVED, 1) == 1);
  n = log_lines(dir, RESOLVED, l);
  HAS(n ? l[0] : NULL, "\"hang_resolved\":{\"coll\":\"AllReduce\",\"coll_sn\":7,\"in_flight_s\":0.600000}}");
  free_lines(l, n);
  /* a second small op, still in flight at the finalize: it would never have been written */
  oo_group(ctx);
  void *left = coll_start_n(ctx, "AllReduce", 8, 1, 2);
  CHECK(left != NULL);
  if (left) chan_start(ctx, left, 0, 3000000);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  /* no record of either small op, and no count of a record lost */
  CHECK(fu_records(dir, getpid(), 0x5a11) == 1); /* the AllGather */
  CHECK(stat_of(dir, "0x5a11", "\"coll_records_total\":") == 1);
  CHECK(stat_of(dir, "0x5a11", "\"coll_dropped_total\":") == 0);
  CHECK(stat_of(dir, "0x5a11", "\"coll_untimed_total\":") == 0);
  CHECK(stat_of(dir, "0x5a11", "\"incomplete\":") == 0);
  CHECK(count_lines(dir, HANG) == 1 && count_lines(dir, RESOLVED) == 1);
  return g_fail;
}

static int case_small_off(const char *dir) {
  setup("0");
  void *ctx = ctx_new(0x5a0f, "smalloff");
  oo_group(ctx);
  /* hang detection off: below the minimum size, not tracked (no handle: the cheapest path) */
  CHECK(coll_start_n(ctx, "AllReduce", 1, 1, 1) == NULL);
  CHECK(coll_start_n(ctx, "AllReduce", 2, 1, 2047) == NULL); /* 8188 bytes */
  void *big = coll_start_n(ctx, "AllReduce", 3, 1, 2048);    /* 8192: tracked, recorded */
  CHECK(big != NULL);
  if (big) {
    chan_stop(chan_start(ctx, big, 0, 1000), 2000);
    ncclProfiler_v5.stopEvent(big);
  }
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  CHECK(fu_records(dir, getpid(), 0x5a0f) == 1);
  CHECK(atomic_load(&g_checks) == 0);
  return g_fail;
}

static int case_at_once(const char *dir) {
  setup("0.5");
  /* a window of an hour: no pass writes anything in this case; only a check can */
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "3600000000", 1);
  atomic_store(&g_seen_dir, (char *)dir);
  atomic_store(&g_slow_others, true);
  void *ctx = ctx_new(0xa70, "atonce");
  coll_done(ctx, "AllGather", 6, 1000000);
  oo_group(ctx);
  void *op = coll_start(ctx, "AllReduce", 7, 2);
  chan_start(ctx, op, 0, 2000000);
  chan_start(ctx, op, 1, 2000001);
  ncclProfiler_v5.stopEvent(op);
  checks(2);
  CHECK(count_lines(dir, "{\"header\":") == 0); /* nothing to say: nothing drained */
  advance_ms(600);
  checks(2); /* a check that began after the clock moved has ended: its line is in the file */
  CHECK(atomic_load(&g_seen_lines) == 1); /* it was there before the dump thread went on */
  char *l[MAX_LINES];
  int n = log_lines(dir, "{\"header\":", l), rec = -1, hang = -1;
  for (int i = 0; i < n; i++) {
    if (strstr(l[i], "\"coll_perf\":{") && strstr(l[i], "\"coll\":\"AllGather\"") && rec < 0) rec = i;
    if (strstr(l[i], HANG) && hang < 0) hang = i;
  }
  CHECK(hang >= 0);
  CHECK(rec >= 0 && rec < hang); /* the context drained first: its record, then the line */
  HAS(hang >= 0 ? l[hang] : NULL, "\"coll_sn\":7,");
  HAS(hang >= 0 ? l[hang] : NULL, "\"last_completed\":{\"coll\":\"AllGather\",\"coll_sn\":6,");
  free_lines(l, n);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

static int case_in_group(const char *dir) {
  setup("0.5");
  void *ctx = ctx_new(0x6709, "grouped");
  coll_done(ctx, "AllGather", 4, 1000000);
  oo_group(ctx); /* one application group of three: the second never ends */
  void *a = coll_start(ctx, "AllReduce", 5, 1), *b = coll_start(ctx, "AllReduce", 6, 2),
       *c = coll_start(ctx, "Broadcast", 7, 1);
  void *ca = chan_start(ctx, a, 0, 2000000), *cc = chan_start(ctx, c, 0, 2000010);
  chan_start(ctx, b, 0, 2000001);
  chan_start(ctx, b, 1, 2000002);
  chan_stop(ca, 2100000);
  chan_stop(cc, 2200000);
  for (void **o = (void *[]){a, b, c, NULL}; *o; o++) ncclProfiler_v5.stopEvent(*o);
  checks(2);
  advance_ms(600);
  checks(2);
  checks(2);
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l);
  CHECK(n == 1); /* the group's ops that ended are no evidence that the GPU is past it */
  const char *h = n ? l[0] : NULL;
  HAS(h, "\"hang\":{\"coll\":\"AllReduce\",\"coll_sn\":6,");
  HAS(h, "\"kernel_started\":true,\"channels_started\":2,\"channels_stopped\":0,\"ops_in_flight\":1,");
  /* the newest completed in issue order: the Broadcast, issued after it in its group */
  HAS(h, "\"last_completed\":{\"coll\":\"Broadcast\",\"coll_sn\":7,\"end_ts_ns\":2200000}}}");
  free_lines(l, n);
  CHECK(count_lines(dir, RESOLVED) == 0);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

static int case_reuse(const char *dir) {
  setup("0.1"); /* a check every 25 ms */
  void *ctx = ctx_new(0x4e05, "reuse");
  /* rounds of 8 ops in flight past the threshold, completed (and their memory reused by
   * the next round's) while the checks read them: every 4th round after a check has said
   * them, the others at any time, a check maybe reading them then */
  enum { ROUNDS = 40, OPS = 8 };
  for (int round = 0; round < ROUNDS; round++) {
    void *op[OPS], *ch[OPS];
    oo_group(ctx);
    for (int j = 0; j < OPS; j++) {
      uint64_t sn = (uint64_t)(round * OPS + j);
      struct prof_descr_v5 d;
      memset(&d, 0, sizeof d);
      d.type = PROF_EV_COLL;
      d.coll.func = "AllReduce";
      d.coll.datatype = "ncclFloat32";
      d.coll.count = 1000000 + sn; /* so that a line's count tells whose it is */
      d.coll.seqNumber = sn;
      d.coll.nChannels = 1;
      op[j] = NULL;
      CHECK(ncclProfiler_v5.startEvent(ctx, &op[j], &d) == 0 && op[j]);
      ch[j] = chan_start(ctx, op[j], 0, 1000000 * (uint64_t)(round + 1) + (uint64_t)j);
      ncclProfiler_v5.stopEvent(op[j]);
    }
    checks(2);
    advance_ms(150);
    if (round % 4 == 0) checks(2);
    else fu_sleep_ms(round % 4 * 10);
    for (int j = 0; j < OPS; j++) chan_stop(ch[j], 1000000 * (uint64_t)(round + 1) + 500000);
  }
  checks(2);
  checks(2);
  /* every hang line its op's own: a copy read while the op was reused is never kept */
  char *l[MAX_LINES];
  int n = log_lines(dir, HANG, l), bad = 0, lines = n;
  CHECK(n >= ROUNDS / 4 * OPS && n <= ROUNDS * OPS);
  for (int i = 0; i < lines; i++) {
    long long sn = num(l[i], "\"coll_sn\":"), count = num(l[i], "\"coll_count\":");
    long long bytes = num(l[i], "\"coll_msg_size_bytes\":");
    if (sn < 0 || count != 1000000 + sn || bytes != 4 * count || !strstr(l[i], "\"coll_datatype\":\"ncclFloat32\"")) {
      if (!bad++) fprintf(stderr, "a line not its op's: %s", l[i]);
    }
  }
  CHECK(bad == 0);
  int firsts = 0; /* each op said first (repeat 0) once: no line named an op by another's fields */
  static bool said[ROUNDS * OPS];
  for (int i = 0; i < lines; i++) {
    long long sn = num(l[i], "\"coll_sn\":");
    if (sn < 0 || sn >= ROUNDS * OPS || !strstr(l[i], "\"repeat\":0,")) continue;
    CHECK(!said[sn]);
    said[sn] = true;
    firsts++;
  }
  free_lines(l, lines);
  /* each said stuck, then resolved (all completed) */
  CHECK(count_lines(dir, RESOLVED) == firsts);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

/* ---- the gauges ---- */

/* The .prom file of dir (one), read whole; NULL if none. */
static char *prom_text(const char *dir) {
  char path[4096];
  char *text = NULL;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 5, ".prom") || e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    size_t cap = 0;
    if (f && getdelim(&text, &cap, '\0', f) < 0) {
      free(text);
      text = NULL;
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return text;
}

/* Wait until read(arg), a fresh malloc'd text each call, holds want (bounded): the .prom
 * file, or an OTLP body. */
static bool wait_text(char *(*read)(const char *arg), const char *arg, const char *what,
                      const char *want) {
  for (int ms = 0; ms < WAIT_MS; ms += 10) {
    char *t = read(arg);
    bool ok = t && strstr(t, want);
    free(t);
    if (ok) return true;
    fu_sleep_ms(10);
  }
  fprintf(stderr, "no %s holds: %s\n", what, want);
  return false;
}

static bool wait_prom(const char *dir, const char *want) {
  return wait_text(prom_text, dir, ".prom file", want);
}

/* promtool check metrics on the file, when installed: no finding but the seed's lint of its
 * _microseconds names. */
static void promtool(const char *dir) {
  if (system("command -v promtool >/dev/null 2>&1") != 0) return;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "cat %s/*.prom | promtool check metrics 2>&1 | grep -v "
           "'_exec_time_microseconds use base unit \"seconds\" instead of \"microseconds\"' | grep -q .",
           dir);
  CHECK(system(cmd) != 0); /* grep found nothing else */
}

static int case_prom_gauges(const char *dir) {
  setup("0.5");
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1); /* windows of 30 s: only the checks write sooner */
  void *ctx = ctx_new(0x9001, "gauged");
  coll_done(ctx, "AllGather", 6, 1000000);
  oo_group(ctx);
  void *op = coll_start(ctx, "AllReduce", 7, 1);
  void *ch = chan_start(ctx, op, 0, 2000000);
  ncclProfiler_v5.stopEvent(op);
  checks(2);
  advance_ms(600);
  static const char labels[] = "comm_name=\"gauged\",comm_id=\"0x9001\",rank=\"0\"";
  char want[512];
  snprintf(want, sizeof want, "%s} 0.600000\n", labels);
  CHECK(wait_prom(dir, want));
  char *t = prom_text(dir);
  HAS(t, "# TYPE nccl_inflight_oldest_seconds gauge\nnccl_inflight_oldest_seconds{version=\"");
  HAS(t, "# TYPE nccl_last_completed_sn gauge\nnccl_last_completed_sn{version=\"");
  snprintf(want, sizeof want, "%s,coll=\"AllGather\"} 6\n", labels);
  HAS(t, want);
  free(t);
  promtool(dir);
  chan_stop(ch, 2100000); /* resolved: the gauge back to 0, the AllReduce the last */
  checks(2);
  advance_ms(500); /* the file is rewritten a threshold after it was last */
  snprintf(want, sizeof want, "%s} 0.000000\n", labels);
  CHECK(wait_prom(dir, want));
  snprintf(want, sizeof want, "%s,coll=\"AllReduce\"} 7\n", labels);
  CHECK(wait_prom(dir, want));
  promtool(dir);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

#if INSPECTOR_OTLP
/* The first body of a fresh export (http/json): the gauges go with the counters. */
static char *otlp_body(void) {
  struct ins_otlp_body bodies[4];
  memset(bodies, 0, sizeof bodies);
  bool more = false;
  int n = ins_otlp_collect(NULL, bodies, 4, true, &more);
  char *text = NULL;
  if (n > 0 && bodies[0].data.len) {
    text = malloc(bodies[0].data.len + 1);
    if (text) {
      memcpy(text, bodies[0].data.data, bodies[0].data.len);
      text[bodies[0].data.len] = '\0';
    }
  }
  for (int i = 0; i < n; i++) ins_buf_free(&bodies[i].data);
  /* the rest of the turn, so that the next call starts a fresh one */
  while (more && (n = ins_otlp_collect(NULL, bodies, 4, false, &more)) > 0)
    for (int i = 0; i < n; i++) ins_buf_free(&bodies[i].data);
  return text;
}

static char *otlp_body_text(const char *unused) {
  (void)unused;
  return otlp_body();
}

static bool wait_otlp(const char *want) {
  return wait_text(otlp_body_text, NULL, "OTLP body", want);
}

static int case_otlp_gauges(const char *dir) {
  (void)dir;
  setup("0.5");
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port()); /* the exporter waits: we collect */
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "50", 1);
  void *ctx = ctx_new(0x07e1, "gauged");
  coll_done(ctx, "AllGather", 6, 1000000);
  oo_group(ctx);
  void *op = coll_start(ctx, "AllReduce", 7, 1);
  void *ch = chan_start(ctx, op, 0, 2000000);
  ncclProfiler_v5.stopEvent(op);
  checks(2);
  advance_ms(600);
  static const char attrs[] =
      "\"attributes\":[{\"key\":\"nccl.comm.id\",\"value\":{\"stringValue\":\"0x7e1\"}},"
      "{\"key\":\"nccl.comm.name\",\"value\":{\"stringValue\":\"gauged\"}},"
      "{\"key\":\"nccl.rank\",\"value\":{\"stringValue\":\"0\"}},"
      "{\"key\":\"gpu.uuid\",\"value\":{\"stringValue\":\"";
  CHECK(wait_otlp("\"asDouble\":0.6}"));
  char *t = otlp_body();
  HAS(t, "{\"name\":\"nccl.inflight.oldest\",\"description\":");
  HAS(t, "\"unit\":\"s\",\"gauge\":{\"dataPoints\":[{");
  HAS(t, attrs);
  HAS(t, "{\"name\":\"nccl.last_completed_sn\",\"description\":");
  HAS(t, "{\"key\":\"nccl.operation\",\"value\":{\"stringValue\":\"AllGather\"}}],"
         "\"startTimeUnixNano\":\"0\",\"timeUnixNano\":");
  free(t);
  chan_stop(ch, 2100000);
  CHECK(wait_otlp("{\"key\":\"nccl.operation\",\"value\":{\"stringValue\":\"AllReduce\"}}]"));
  CHECK(wait_otlp("\"asDouble\":0}"));
  t = otlp_body();
  HAS(t, "\"asInt\":\"7\"}");
  free(t);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}
#endif

static int case_prom_quiet(const char *dir) {
  setup("0.5");
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1); /* windows of 30 s: only the checks write sooner */
  void *ctx = ctx_new(0x9e1, "quietprom");
  coll_done(ctx, "AllGather", 6, 1000000);
  for (int i = 0; i < 8; i++) { /* 4 thresholds with nothing in flight */
    advance_ms(250);
    checks(2);
  }
  char *t = prom_text(dir);
  CHECK(!t); /* no check wrote a file: nothing was in flight */
  free(t);
  CHECK(ncclProfiler_v5.finalize(ctx) == 0);
  return g_fail;
}

/* NCCL_INSPECTOR_HANG_SECONDS=0: the files and the exports as before, without the gauges. */
static int case_off_gauges(const char *dir) {
  setup("0");
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
#if INSPECTOR_OTLP
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port()); /* the exporter waits: we collect */
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "50", 1);
#endif
  void *a = ctx_new(0x0f1, "done"), *b = ctx_new(0x0f2, "stuck");
  coll_done(a, "AllGather", 6, 1000000);
  oo_group(b);
  void *op = coll_start(b, "AllReduce", 7, 1);
  chan_start(b, op, 0, 2000000);
  ncclProfiler_v5.stopEvent(op);
  advance_ms(10000);
  CHECK(ncclProfiler_v5.finalize(a) == 0); /* a's record drained, the file written (b stays) */
  char *t = prom_text(dir);
  HAS(t, "collective=\"AllGather\"");
  CHECK(t && !strstr(t, "nccl_inflight_oldest_seconds") && !strstr(t, "nccl_last_completed_sn"));
  free(t);
#if INSPECTOR_OTLP
  t = otlp_body();
  HAS(t, "{\"key\":\"nccl.operation\",\"value\":{\"stringValue\":\"AllGather\"}}");
  CHECK(t && !strstr(t, "nccl.inflight.oldest") && !strstr(t, "nccl.last_completed_sn"));
  free(t);
#endif
  CHECK(atomic_load(&g_checks) == 0);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  return g_fail;
}

/* ---- the variable ---- */

/* NCCL_INSPECTOR_HANG_SECONDS=value read as the plugin reads it: the threshold it takes,
 * and the warnings it gives (one, naming the variable and the value, or none). */
static void env_is(const char *value, uint64_t want_ns, bool warned, const char *used) {
  struct ins_config cfg;
  if (value) setenv("NCCL_INSPECTOR_HANG_SECONDS", value, 1);
  else unsetenv("NCCL_INSPECTOR_HANG_SECONDS");
  int w0 = atomic_load(&fu_warns);
  ins_config_load(&cfg);
  int warns = atomic_load(&fu_warns) - w0;
  if (cfg.hang_ns != want_ns || warns != (warned ? 1 : 0))
    fprintf(stderr, "HANG_SECONDS=%s: %llu ns, %d warnings (%s)\n", value ? value : "(unset)",
            (unsigned long long)cfg.hang_ns, warns, warns ? fu_last_warn : "");
  CHECK_EQ_U(cfg.hang_ns, want_ns);
  CHECK_EQ_U(warns, warned ? 1 : 0);
  if (warned && warns == 1) { /* the value as core/redact.h shows a value (quoted, or withheld) */
    char named[128], shown[INS_REDACT_VALUE_SHOWN];
    snprintf(named, sizeof named, "NCCL_INSPECTOR_HANG_SECONDS=%s ",
             ins_redact_value(shown, sizeof shown, value, strlen(value)));
    HAS(fu_last_warn, named);
    HAS(fu_last_warn, used);
    if (!has(fu_last_warn, named) || !has(fu_last_warn, used)) fprintf(stderr, "warning: %s\n", fu_last_warn);
  }
}

static int case_env(const char *dir) {
  (void)dir;
  ins_log_set_logger(fu_logger);
  const uint64_t S = 1000000000ull, DEF = 300 * S, WEEK = 7 * 86400 * S;
  env_is(NULL, DEF, false, NULL);
  env_is("", DEF, false, NULL);
  env_is("300", DEF, false, NULL);
  env_is("0", 0, false, NULL); /* off */
  env_is(" 0.0 ", 0, false, NULL);
  env_is("0.5", S / 2, false, NULL);
  env_is(".5", S / 2, false, NULL);
  env_is("2.25", 2 * S + S / 4, false, NULL);
  env_is("0.1", S / 10, false, NULL); /* the least, exactly */
  env_is("1.0000000019", S + 1, false, NULL); /* past the 9th decimal: dropped */
  env_is("604800", WEEK, false, NULL); /* the most, exactly */
  env_is("0.09", S / 10, true, "using 0.1");
  env_is("0.000000001", S / 10, true, "using 0.1");
  env_is("604800.5", WEEK, true, "using 604800");
  env_is("99999999999999999999999", WEEK, true, "using 604800");
  static const char *const bad[] = {"abc", "-1", "-0.5", "+5", "1e3", "nan", "inf", "0x10", "5s",
                                    "1.2.3", ".", "1,5", "- 1", "1 2", "\t"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) env_is(bad[i], DEF, true, "using 300");
  return g_fail;
}

static const struct fu_named_case k_cases[] = {
    {"env", case_env},
    {"stuck_coll", case_stuck_coll}, {"queued", case_queued},     {"p2p", case_p2p},
    {"second_comm", case_second_comm}, {"idle", case_idle},       {"quiet", case_quiet},
    {"gpu_past", case_gpu_past},     {"off", case_off},           {"prom_gauges", case_prom_gauges},
    {"at_once", case_at_once},       {"in_group", case_in_group}, {"prom_quiet", case_prom_quiet},
    {"off_gauges", case_off_gauges}, {"reuse", case_reuse},
    {"small_coll", case_small_coll}, {"small_off", case_small_off},
#if INSPECTOR_OTLP
    {"otlp_gauges", case_otlp_gauges, "otlp"},
#endif
};

int main(int argc, char **argv) {
  (void)fu_child_ok, (void)fu_log_files, (void)fu_op, (void)fu_init; /* fork_util.h's, not needed */
  return fu_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "hang");
}
