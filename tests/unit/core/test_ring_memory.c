/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring_memory.c - what a communicator context holds, by the plugin's own
 * accounting (core/comm.h ins_comm_memory, core/seg.h), not by timing or RSS:
 *  - idle (created, no op): at most 64 KiB, verbose or not: no ring segment, no op;
 *  - its op pool grows with the ops in flight at once, in doubling chunks;
 *  - its rings grow with the records waiting in them (a segment per 128 records);
 *  - drained (and trimmed, as a drain ends), they hold no segment: the segments are
 *    back in the process's pool, and the next communicator takes them from there;
 *  - past the process's cap (ins_seg_setup), records are dropped and counted, the
 *    first ones kept in order, and recording resumes once the rings are drained;
 *  - a ring with two producers and a consumer as fast as they are, trimming it
 *    whenever it finds it empty, so that trims race with producers;
 *  - with the dump thread on (interval 0) and ops completing on two threads (the
 *    application's host stop, the proxy's kernel stop: both produce into the ring),
 *    a ring of 256 records wraps ~80 times, taking and giving back segments as it
 *    goes: every record written once, none dropped, every segment back at the end.
 *    Label threads: run under ThreadSanitizer by make test-tsan.
 * The last part is flow-controlled (the application thread waits while 128 records
 * wait or 16 ops are in flight), so nothing is dropped whatever the machine's speed.
 * Temporary files live in a directory removed at the end.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/op.h"
#include "core/ring.h"
#include "core/seg.h"
#include "sink/dump.h"

#define KIB 1024u

static struct ins_config g_cfg; /* ins_dump_start keeps a pointer to it */
static char g_tmp[] = "/tmp/inspector-unit-ringmem-XXXXXX";
static char g_dump[sizeof g_tmp + 16];

static struct ins_config cfg_default(bool verbose) {
  struct ins_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.enable = cfg.enable_p2p = cfg.require_kernel_timing = true;
  cfg.min_size_bytes = 8192;
  cfg.coll_ring_size = cfg.p2p_ring_size = INS_DEFAULT_RING;
  cfg.ring_memory_max_mb = INS_SEG_DEFAULT_MAX_MB;
  cfg.interval_us = -1;
  cfg.verbose = verbose;
  return cfg;
}

static uint64_t g_gpu_ns = 1000000;

/* One collective through the tracker as NCCL reports it, in a group of its own:
 * start, host stop, one kernel channel (one op after the other on the GPU). */
static void *start_op(struct ins_comm *c, uint64_t sn) {
  ins_op_group_start(c);
  return ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, sn, -1, 1, "RING",
                      "SIMPLE");
}
static void kernel(struct ins_comm *c, void *op, uint64_t t) {
  void *k = ins_op_kernel_start(c, op, 0, t);
  ins_op_kernel_record_stop(k, t + 1000);
  ins_op_event_stop(k);
}
static void complete_op(struct ins_comm *c, uint64_t sn) {
  void *op = start_op(c, sn);
  CHECK(op != NULL);
  ins_op_event_stop(op);
  g_gpu_ns += 10000;
  kernel(c, op, g_gpu_ns);
}

/* Take every record out of the collective ring, then trim it, as a drain does
 * (sink/dump.c); their sn must be first, first + 1, ... Returns how many. */
static uint64_t drain_in_order(struct ins_comm *c, uint64_t first) {
  uint64_t n = 0, bad = 0;
  for (struct ins_record *r; (r = ins_ring_peek(&c->ring[INS_KIND_COLL]));) {
    bad += r->sn != first + n;
    n++;
    ins_ring_release(&c->ring[INS_KIND_COLL], r);
  }
  ins_ring_trim(&c->ring[INS_KIND_COLL]);
  CHECK_EQ_U(bad, 0);
  return n;
}

static size_t table_bytes(struct ins_comm *c) {
  return (size_t)(c->ring[0].slot_mask + 1 + c->ring[1].slot_mask + 1) * sizeof(uintptr_t);
}

static uint64_t seg_in_use(void) {
  struct ins_seg_stats st;
  ins_seg_stats(&st);
  return st.in_use;
}

/* Created, no op: its struct and two slot tables; no segment, no op. */
static void test_idle_communicator_holds_at_most_64k(void) {
  for (int verbose = 0; verbose < 2; verbose++) {
    struct ins_config cfg = cfg_default(verbose);
    struct ins_comm *c = ins_comm_create(&cfg, 0x1d1e, "idle", 1, 2, 0);
    CHECK(c != NULL);
    if (!c) return;
    size_t m = ins_comm_memory(c);
    if (m > 64 * KIB) fprintf(stderr, "idle context (verbose %d): %zu bytes\n", verbose, m);
    CHECK(m <= 64 * KIB);
    CHECK_EQ_U(m, sizeof *c + table_bytes(c)); /* nothing else yet */
    CHECK_EQ_U(ins_pool_bytes(&c->pool), 0);
    /* what the rings would hold full, for contrast: 1 MiB (32 MiB verbose: 4 records a segment) */
    CHECK(table_bytes(c) * INS_SEG_BYTES / (2 * sizeof(uintptr_t)) >= 1024 * KIB);
    ins_comm_destroy(c);
  }
}

/* Ops in flight at once decide the pool: 8 ops, then chunks of 16, 32, 64... */
static void test_op_pool_grows_with_ops_in_flight(void) {
  struct ins_config cfg = cfg_default(false);
  struct ins_comm *c = ins_comm_create(&cfg, 0x9001, "pool", 1, 2, 0);
  CHECK(c != NULL);
  if (!c) return;
  complete_op(c, 0);
  CHECK_EQ_U(ins_pool_bytes(&c->pool), 8 * sizeof(struct ins_op)); /* the first chunk */
  void *op[100];
  for (int i = 0; i < 100; i++) op[i] = start_op(c, 1 + (uint64_t)i);
  for (int i = 0; i < 100; i++) CHECK(op[i] != NULL);
  /* 100 in flight: 8 + 16 + 32 + 64 = 120 ops */
  CHECK_EQ_U(ins_pool_bytes(&c->pool), 120 * sizeof(struct ins_op));
  for (int i = 0; i < 100; i++) {
    ins_op_event_stop(op[i]);
    g_gpu_ns += 10000;
    kernel(c, op[i], g_gpu_ns);
  }
  CHECK_EQ_U(drain_in_order(c, 0), 101);
  ins_comm_destroy(c);
}

/* The rings follow the records waiting in them, and give the segments back to the
 * process's pool once drained; the next communicator takes them from there. */
static void test_rings_grow_with_backlog_and_give_back(void) {
  struct ins_config cfg = cfg_default(false);
  struct ins_comm *c = ins_comm_create(&cfg, 0xb5e1, "busy", 1, 2, 0);
  CHECK(c != NULL);
  if (!c) return;
  uint64_t base = seg_in_use();
  size_t idle = ins_comm_memory(c);
  for (uint64_t i = 0; i < 1000; i++) complete_op(c, i);
  /* 1000 records of 128 bytes: 8 segments of 128 records */
  CHECK_EQ_U(seg_in_use() - base, 8);
  CHECK_EQ_U(ins_ring_bytes(&c->ring[INS_KIND_COLL]),
             (c->ring[0].slot_mask + 1) * sizeof(uintptr_t) + 8 * INS_SEG_BYTES);
  size_t busy = ins_comm_memory(c);
  if (busy > 256 * KIB) fprintf(stderr, "1000 records waiting: %zu bytes\n", busy);
  CHECK(busy <= 256 * KIB);
  CHECK_EQ_U(busy - idle, 8 * INS_SEG_BYTES + ins_pool_bytes(&c->pool));
  CHECK_EQ_U(atomic_load(&c->dropped[INS_KIND_COLL]), 0);

  struct ins_seg_stats before, after;
  ins_seg_stats(&before);
  CHECK_EQ_U(drain_in_order(c, 0), 1000);
  ins_seg_stats(&after);
  /* every segment back in the pool, the last one (partly used) too */
  CHECK_EQ_U(after.in_use, base);
  CHECK_EQ_U(after.warm + after.cold, before.warm + before.cold + 8);
  CHECK_EQ_U(ins_comm_memory(c), idle + ins_pool_bytes(&c->pool));
  /* and it records again, from the pool */
  complete_op(c, 1000);
  CHECK_EQ_U(seg_in_use() - base, 1);
  CHECK_EQ_U(drain_in_order(c, 1000), 1);
  CHECK_EQ_U(seg_in_use(), base);

  /* another communicator's backlog reuses them: the pool hands out no new memory */
  struct ins_comm *d = ins_comm_create(&cfg, 0xb5e2, "next", 1, 2, 0);
  CHECK(d != NULL);
  if (d) {
    ins_seg_stats(&before);
    for (uint64_t i = 0; i < 1000; i++) complete_op(d, i);
    ins_seg_stats(&after);
    CHECK_EQ_U(before.warm + before.cold - (after.warm + after.cold), 8);
    CHECK_EQ_U(drain_in_order(d, 0), 1000);
    ins_comm_destroy(d);
  }
  ins_comm_destroy(c);
}

/* Past the process's cap, records are dropped and counted like a full ring's: the
 * first ones kept, in order; drained, the rings take segments again. */
static void test_process_cap_drops_and_counts(void) {
  struct ins_config cfg = cfg_default(false);
  struct ins_comm *c = ins_comm_create(&cfg, 0xca9, "capped", 1, 2, 0);
  CHECK(c != NULL);
  if (!c) return;
  CHECK_EQ_U(seg_in_use(), 0);
  CHECK(ins_seg_setup(4 * INS_SEG_BYTES) == 0); /* 4 segments for the whole process */
  struct ins_seg_stats st0, st1;
  ins_seg_stats(&st0);
  CHECK_EQ_U(st0.cap, 4);
  for (uint64_t i = 0; i < 1000; i++) complete_op(c, i);
  ins_seg_stats(&st1);
  CHECK_EQ_U(st1.in_use, 4);
  CHECK_EQ_U(atomic_load(&c->dropped[INS_KIND_COLL]), 1000 - 4 * 128);
  CHECK_EQ_U(st1.refused - st0.refused, 1000 - 4 * 128); /* one refusal per record dropped */
  uint64_t total;
  CHECK(ins_seg_take_refusals(&total)); /* for the consumer's one warning */
  CHECK(!ins_seg_take_refusals(&total));
  CHECK_EQ_U(drain_in_order(c, 0), 4 * 128);
  CHECK_EQ_U(seg_in_use(), 0);
  for (uint64_t i = 0; i < 100; i++) complete_op(c, 2000 + i);
  CHECK_EQ_U(atomic_load(&c->dropped[INS_KIND_COLL]), 1000 - 4 * 128); /* no new drop */
  CHECK_EQ_U(drain_in_order(c, 2000), 100);
  ins_comm_destroy(c);
  CHECK(ins_seg_setup((size_t)INS_SEG_DEFAULT_MAX_MB << 20) == 0);
}

/* ---- concurrently -------------------------------------------------------------- */

/* The ring alone: two producers, a consumer that drains as fast as it can and trims the
 * ring whenever it finds nothing (so that trims race with producers as often as they
 * can), cells of a record's size (128 per segment, 8 segments a full ring): every value
 * once, each producer's in order, and every segment back at the end. */
#define MPSC_N 200000
static struct ins_ring g_ring;
static void *ring_producer(void *arg) {
  uint64_t base = (uint64_t)(uintptr_t)arg, pos;
  for (uint64_t i = 0; i < MPSC_N; i++) {
    uint64_t *p;
    while (!(p = ins_ring_reserve(&g_ring, &pos))) sched_yield(); /* full: wait, in a test */
    *p = base + i;
    ins_ring_commit(&g_ring, p, pos);
  }
  return NULL;
}

static void test_ring_segments_two_producers(void) {
  uint64_t base = seg_in_use();
  CHECK(ins_ring_init(&g_ring, 1024, sizeof(struct ins_record)) == 0);
  CHECK_EQ_U(g_ring.cell_mask + 1, 128);
  pthread_t t[2];
  pthread_create(&t[0], NULL, ring_producer, (void *)(uintptr_t)0);
  pthread_create(&t[1], NULL, ring_producer, (void *)(uintptr_t)(1ull << 32));
  uint64_t next[2] = {0, 0}, got = 0, order_bad = 0;
  while (got < 2 * MPSC_N) {
    uint64_t *p = ins_ring_peek(&g_ring);
    if (!p) {
      ins_ring_trim(&g_ring);
      continue;
    }
    int who = (int)(*p >> 32);
    order_bad += (*p & 0xffffffff) != next[who];
    next[who] = (*p & 0xffffffff) + 1;
    ins_ring_release(&g_ring, p);
    got++;
  }
  pthread_join(t[0], NULL);
  pthread_join(t[1], NULL);
  CHECK_EQ_U(order_bad, 0);
  CHECK_EQ_U(next[0], MPSC_N);
  CHECK_EQ_U(next[1], MPSC_N);
  CHECK(ins_ring_peek(&g_ring) == NULL);
  ins_ring_trim(&g_ring); /* empty: its last segment goes back */
  CHECK_EQ_U(ins_ring_bytes(&g_ring), (g_ring.slot_mask + 1) * sizeof(uintptr_t));
  ins_ring_free(&g_ring);
  CHECK_EQ_U(seg_in_use(), base);
}

/* With the dump thread. */

#define CONC_OPS 20000
#define CONC_RING 256
static struct ins_comm *g_c;
static void *_Atomic g_handle[CONC_OPS];
static atomic_uint g_kernels_done;

/* The application's thread: starts ops and stops them on the host, no more than 16
 * ahead of the proxy and while at most 128 records wait (nothing is ever dropped). */
static void *app_thread(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < CONC_OPS; i++) {
    while (i - atomic_load(&g_kernels_done) > 16 ||
           ins_ring_used_approx(&g_c->ring[INS_KIND_COLL]) > CONC_RING / 2)
      sched_yield();
    void *op = start_op(g_c, i);
    atomic_store_explicit(&g_handle[i], op, memory_order_release);
    if (op) ins_op_event_stop(op);
  }
  return NULL;
}

/* NCCL's proxy thread: each op's kernel channel, in issue order. */
static void *proxy_thread(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < CONC_OPS; i++) {
    void *op;
    while (!(op = atomic_load_explicit(&g_handle[i], memory_order_acquire))) sched_yield();
    kernel(g_c, op, 1000000 + 10000 * (uint64_t)i);
    atomic_fetch_add(&g_kernels_done, 1);
  }
  return NULL;
}

static uint64_t count_records(void) {
  uint64_t n = 0;
  DIR *d = opendir(g_dump);
  CHECK(d != NULL);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[sizeof g_dump + 300], line[8192];
    snprintf(path, sizeof path, "%s/%s", g_dump, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "\"coll_perf\"") != NULL;
    if (f) fclose(f);
  }
  closedir(d);
  return n;
}

static void test_concurrent_with_the_dump_thread(void) {
  g_cfg = cfg_default(false);
  g_cfg.dump_thread_enable = true;
  g_cfg.json_dump = true;
  g_cfg.interval_us = 0; /* a pass every millisecond: the ring empties, shrinks, grows */
  g_cfg.coll_ring_size = CONC_RING;
  snprintf(g_cfg.dump_dir, sizeof g_cfg.dump_dir, "%s", g_dump);
  snprintf(g_cfg.hostname, sizeof g_cfg.hostname, "unit");
  ins_dump_start(&g_cfg);
  g_c = ins_comm_create(&g_cfg, 0xc0c0, "concurrent", 1, 2, 0);
  CHECK(g_c != NULL);
  if (!g_c) return;
  CHECK(ins_dump_attach(g_c) == 0);
  ins_registry_add(g_c);
  uint64_t base = seg_in_use();
  pthread_t app, proxy;
  pthread_create(&proxy, NULL, proxy_thread, NULL);
  pthread_create(&app, NULL, app_thread, NULL);
  pthread_join(app, NULL);
  pthread_join(proxy, NULL);

  /* finalize, as abi/lifecycle.c does */
  ins_registry_remove(g_c);
  uint64_t incomplete = 0;
  ins_op_finish_all_at_teardown(g_c, &incomplete);
  ins_op_close_group(g_c);
  ins_dump_comm_final(g_c);
  CHECK_EQ_U(incomplete, 0);
  CHECK_EQ_U(atomic_load(&g_c->dropped[INS_KIND_COLL]), 0);
  /* the last drain took every record: no segment left */
  CHECK_EQ_U(ins_ring_bytes(&g_c->ring[INS_KIND_COLL]),
             (g_c->ring[0].slot_mask + 1) * sizeof(uintptr_t));
  CHECK_EQ_U(seg_in_use(), base);
  /* freed once the dump thread is gone: a walk it began before the remove may still
   * hold the context (finalize retires it instead: core/comm.h) */
  ins_dump_shutdown();
  ins_comm_destroy(g_c);
  CHECK_EQ_U(count_records(), CONC_OPS);
}

static void cleanup(void) {
  DIR *d = opendir(g_dump);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[sizeof g_dump + 300];
      snprintf(path, sizeof path, "%s/%s", g_dump, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(g_dump);
  rmdir(g_tmp);
}

int main(void) {
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(g_dump, sizeof g_dump, "%s/dump", g_tmp);
  test_idle_communicator_holds_at_most_64k();
  test_op_pool_grows_with_ops_in_flight();
  test_rings_grow_with_backlog_and_give_back();
  test_process_cap_drops_and_counts();
  test_ring_segments_two_producers();
  test_concurrent_with_the_dump_thread();
  cleanup();
  ins_seg_release(); /* no context left: the mapping goes */
  struct ins_seg_stats st;
  ins_seg_stats(&st);
  CHECK_EQ_U(st.reserved, 0);
  return check_report("test_ring_memory");
}
