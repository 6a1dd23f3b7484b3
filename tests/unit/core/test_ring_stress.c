/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring_stress.c - the record rings under load, with the dump thread on (interval 0:
 * it drains continuously) and rings of 16 cells that wrap many times: the publish
 * protocol between the threads on which ops complete (producers) and the dump thread
 * (the consumer). Driven through the plugin's v5 ABI only, so that it holds whatever the
 * rings look like inside (src/core/ring.c; the memory work may change them). Built with
 * ThreadSanitizer (`make test-tsan`, label threads) it is what catches a relaxed publish
 * or release of a cell, which compiles to the same code as the right order on x86.
 *
 * Each communicator has an application thread (Group, Coll start, the op's host stop)
 * and a proxy thread (the kernel channel's start, its stop record, its stop), as NCCL
 * drives them: an op completes on whichever thread comes last, so both publish into the
 * communicator's ring, and ops (from the op pool) are freed on one thread and reused on
 * the other. The application thread stays at most LEAD ops ahead of the proxy (as NCCL's
 * host stays near its GPU), so every record's timestamps are certain (core/judge.h).
 *   wraps   batches of 8 ops, each batch waited for in the log (bounded): no drop, every
 *           record written, 10 times what a ring holds went through it
 *   stress  ops as fast as they come: every op written, dropped (a full ring) or counted
 *           untimed, exactly once; records are whole (their size, times, sequence numbers)
 */
#include <pthread.h>

#include "fork_util.h"

#define COMMS 2
#define LEAD 24          /* ops the application thread may be ahead of the proxy */
#define WRAP_BATCH 8
#define WRAP_BATCHES 20  /* 160 records through a 16-cell ring */
#define STRESS_OPS 4000
#define EXEC_NS 12000

struct comm_run {
  void *ctx;
  uint64_t id;
  int nops;
  uint64_t gpu0;                /* this communicator's GPU time base */
  void **ops;                   /* op handles, handed to the proxy */
  _Atomic int issued;           /* ops the application thread started (published in ops[]) */
  _Atomic int done;             /* ops the proxy thread finished the channel of */
  _Atomic int allowed;          /* the application thread may start ops below this */
  _Atomic int fail;
};

/* A short nap while waiting for another thread; false once FU_CHILD_MS have passed since
 * *since (0: now), when the other thread or the test must be stuck. */
static bool nap(uint64_t *since) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  if (!*since) *since = now;
  if (now - *since > FU_CHILD_MS * 1000000ull) return false;
  ts.tv_sec = 0, ts.tv_nsec = 1000;
  nanosleep(&ts, NULL);
  return true;
}

static void *app_thread(void *arg) {
  struct comm_run *r = arg;
  struct prof_descr_v5 d;
  for (int i = 0; i < r->nops; i++) {
    for (uint64_t since = 0; i >= atomic_load(&r->allowed) || i - atomic_load(&r->done) >= LEAD;) {
      if (!nap(&since)) {
        atomic_store(&r->fail, 1);
        return NULL;
      }
    }
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_GROUP; /* each op in a group of its own */
    void *group = NULL;
    ncclProfiler_v5.startEvent(r->ctx, &group, &d);
    if (group) ncclProfiler_v5.stopEvent(group);
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_COLL;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 262144 + (uint64_t)i; /* the op's size says which op it is */
    d.coll.seqNumber = (uint64_t)i;
    d.coll.nChannels = 1;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void *op = NULL;
    if (ncclProfiler_v5.startEvent(r->ctx, &op, &d) != 0 || !op) {
      atomic_store(&r->fail, 2);
      return NULL;
    }
    r->ops[i] = op;
    atomic_store_explicit(&r->issued, i + 1, memory_order_release);
    ncclProfiler_v5.stopEvent(op); /* the host stop; the proxy may not have started it */
  }
  return NULL;
}

static void *proxy_thread(void *arg) {
  struct comm_run *r = arg;
  struct prof_descr_v5 d;
  for (int i = 0; i < r->nops; i++) {
    for (uint64_t since = 0; atomic_load_explicit(&r->issued, memory_order_acquire) <= i;)
      if (atomic_load(&r->fail) || !nap(&since)) return NULL;
    uint64_t t0 = r->gpu0 + (uint64_t)i * 20000;
    memset(&d, 0, sizeof d);
    d.type = PROF_EV_KERNEL_CH;
    d.parentObj = r->ops[i];
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = t0;
    void *ch = NULL;
    if (ncclProfiler_v5.startEvent(r->ctx, &ch, &d) == 0 && ch) {
      union prof_state_args args;
      memset(&args, 0, sizeof args);
      args.kernelCh.pTimer = t0 + EXEC_NS;
      ncclProfiler_v5.recordEventState(ch, PROF_STATE_KERNEL_CH_STOP, &args);
      ncclProfiler_v5.stopEvent(ch); /* the op may complete here, or at its host stop */
    } else {
      atomic_store(&r->fail, 3);
    }
    atomic_store(&r->done, i + 1);
  }
  return NULL;
}

/* What the log says of one communicator. */
struct seen {
  long records, bad;      /* record lines; ones whose fields are not an op's */
  long dup;               /* sequence numbers seen twice */
  long dropped, untimed;  /* the last dump_stats line's totals (-1: none) */
};

static uint64_t num_after(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

static void read_log(const char *dir, uint64_t id, int nops, struct seen *s) {
  char suffix[48], idpat[48], path[4096], line[16384];
  snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
  snprintf(idpat, sizeof idpat, "\"id\":\"0x%llx\"", (unsigned long long)id);
  unsigned char *got = calloc((size_t)nops, 1);
  memset(s, 0, sizeof *s);
  s->dropped = s->untimed = -1;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && got && (e = readdir(d));) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
      if (!strstr(line, idpat)) continue;
      if (strstr(line, "\"dump_stats\":{")) {
        s->dropped = (long)num_after(line, "\"coll_dropped_total\":");
        s->untimed = (long)num_after(line, "\"coll_untimed_total\":");
        continue;
      }
      if (!strstr(line, "\"coll_perf\":{")) continue;
      s->records++;
      uint64_t sn = num_after(line, "\"coll_sn\":"), count = num_after(line, "\"coll_count\":");
      if (sn >= (uint64_t)nops || count != 262144 + sn ||
          num_after(line, "\"coll_exec_time_ns\":") != EXEC_NS ||
          num_after(line, "\"coll_msg_size_bytes\":") != 4 * count) {
        s->bad++;
        continue;
      }
      s->dup += got[sn]++ > 0;
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  free(got);
}

static void start(struct comm_run *r, int i, int nops, pthread_t th[2]) {
  r->id = 0x5100 + (uint64_t)i;
  r->ctx = fu_init(r->id);
  r->nops = nops;
  r->gpu0 = 1000000000ull * (uint64_t)(i + 1);
  r->ops = calloc((size_t)nops, sizeof *r->ops);
  CHECK(r->ops != NULL);
  CHECK(pthread_create(&th[0], NULL, app_thread, r) == 0);
  CHECK(pthread_create(&th[1], NULL, proxy_thread, r) == 0);
}

static void finish(struct comm_run *r, pthread_t th[2]) {
  pthread_join(th[0], NULL);
  pthread_join(th[1], NULL);
  CHECK_EQ_U(atomic_load(&r->fail), 0);
  CHECK(ncclProfiler_v5.finalize(r->ctx) == 0);
  free(r->ops);
}

static void ring_env(void) {
  setenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "16", 1);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "0", 1);
}

static int case_wraps(const char *dir) {
  ring_env();
  static struct comm_run r[COMMS];
  pthread_t th[COMMS][2];
  for (int i = 0; i < COMMS; i++) start(&r[i], i, WRAP_BATCH * WRAP_BATCHES, th[i]);
  for (int b = 1; b <= WRAP_BATCHES; b++) {
    for (int i = 0; i < COMMS; i++) atomic_store(&r[i].allowed, b * WRAP_BATCH);
    /* the dump thread (woken every ms) writes each batch before the next is made */
    for (int i = 0; i < COMMS; i++) {
      long got = 0;
      for (int ms = 0; ms < FU_CHILD_MS && (got = fu_records(dir, getpid(), r[i].id)) < b * WRAP_BATCH; ms += 2)
        fu_sleep_ms(2);
      CHECK_EQ_U(got, b * WRAP_BATCH);
    }
  }
  for (int i = 0; i < COMMS; i++) finish(&r[i], th[i]);
  for (int i = 0; i < COMMS; i++) {
    struct seen s;
    read_log(dir, r[i].id, r[i].nops, &s);
    CHECK_EQ_U(s.records, WRAP_BATCH * WRAP_BATCHES);
    CHECK_EQ_U(s.bad, 0);
    CHECK_EQ_U(s.dup, 0);
    CHECK_EQ_U(s.dropped, 0);
    CHECK_EQ_U(s.untimed, 0);
  }
  return g_fail;
}

static int case_stress(const char *dir) {
  ring_env();
  static struct comm_run r[COMMS];
  pthread_t th[COMMS][2];
  for (int i = 0; i < COMMS; i++) {
    atomic_store(&r[i].allowed, STRESS_OPS);
    start(&r[i], i, STRESS_OPS, th[i]);
  }
  for (int i = 0; i < COMMS; i++) finish(&r[i], th[i]);
  for (int i = 0; i < COMMS; i++) {
    struct seen s;
    read_log(dir, r[i].id, STRESS_OPS, &s);
    printf("communicator %d: %ld records, %ld dropped, %ld untimed\n", i, s.records, s.dropped, s.untimed);
    CHECK_EQ_U(s.bad, 0);
    CHECK_EQ_U(s.dup, 0);
    CHECK(s.dropped >= 0 && s.untimed >= 0);
    CHECK_EQ_U(s.records + s.dropped + s.untimed, STRESS_OPS);
  }
  return g_fail;
}

int main(void) {
  (void)fu_op, (void)fu_child_ok, (void)fu_log_files; /* fork_util.h's helpers not needed here */
  fu_case("wraps", case_wraps);
  fu_case("stress", case_stress);
  return check_report("ring_stress");
}
