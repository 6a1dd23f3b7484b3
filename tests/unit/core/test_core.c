/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_core.c - unit tests of the plugin's building blocks, linked against
 * its objects: formatters, name tables, config parsing, the ring, the pool,
 * and the tracker's completion rules (orderings NCCL can produce, RCCL's
 * untrustworthy nChannels, bad channel ids, NULL and stale handles).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/sampler.h"
#include "core/names.h"
#include "core/op.h"
#include "core/ring.h"
#include "core/wake.h"
#include "io/buf.h"
#include "sink/json/writer.h"

static void test_buf(void) {
  struct ins_buf b = {0};
  char want[64];
  uint64_t u[] = {0, 1, 9, 10, 12345678901234567890ull, UINT64_MAX};
  for (size_t i = 0; i < sizeof u / sizeof *u; i++) {
    b.len = 0;
    ins_buf_reserve(&b, 64);
    ins_buf_u64(&b, u[i]);
    b.data[b.len] = 0;
    snprintf(want, sizeof want, "%llu", (unsigned long long)u[i]);
    CHECK_STR(b.data, want);
    b.len = 0;
    ins_buf_hex(&b, u[i]);
    b.data[b.len] = 0;
    snprintf(want, sizeof want, "%llx", (unsigned long long)u[i]);
    CHECK_STR(b.data, want);
  }
  /* %.6f agreement over a spread of magnitudes */
  srand(7);
  int f6_bad = 0;
  for (int i = 0; i < 20000; i++) {
    double v = (double)rand() / RAND_MAX * pow(10, rand() % 9 - 3);
    b.len = 0;
    ins_buf_f6(&b, v);
    b.data[b.len] = 0;
    snprintf(want, sizeof want, "%.6f", v);
    if (strcmp(b.data, want) && fabs(atof(b.data) - v) > 1e-6) f6_bad++;
  }
  CHECK_EQ_U(f6_bad, 0);
  b.len = 0;
  ins_buf_f6(&b, NAN);
  b.data[b.len] = 0;
  CHECK_STR(b.data, "0.000000");
  b.len = 0;
  ins_buf_jstr(&b, "a\"b\\c\nd");
  b.data[b.len] = 0;
  CHECK_STR(b.data, "\"a\\\"b\\\\c\\u000ad\"");
  b.len = 0;
  ins_buf_jstr(&b, NULL);
  b.data[b.len] = 0;
  CHECK_STR(b.data, "\"unknown\"");
  ins_buf_free(&b);
}

static void test_names(void) {
  CHECK_EQ_U(ins_datatype_size("ncclFloat32"), 4);
  CHECK_EQ_U(ins_datatype_size("ncclBfloat16"), 2);
  CHECK_EQ_U(ins_datatype_size("ncclFloat8e4m3"), 1);
  CHECK_EQ_U(ins_datatype_size("ncclUint64"), 8);
  CHECK_EQ_U(ins_datatype_size("ncclMystery"), 0);
  CHECK_EQ_U(ins_datatype_size(NULL), 0);
  /* the cache is keyed by pointer: equal text at another address still resolves */
  char copy[32];
  strcpy(copy, "ncclInt64");
  CHECK_EQ_U(ins_datatype_size(copy), 8);
  strcpy(copy, "ncclInt8"); /* same address, new text: a real NCCL never does this */
  CHECK(ins_datatype_size(copy) == 8 || ins_datatype_size(copy) == 1);
  CHECK_EQ_U(ins_func_id("AllReduce"), INS_FUNC_ALLREDUCE);
  CHECK_EQ_U(ins_func_id("Send"), INS_FUNC_SEND);
  CHECK_EQ_U(ins_func_id(NULL), INS_FUNC_OTHER);
  CHECK(fabs(ins_busbw_factor(INS_FUNC_ALLREDUCE, 8) - 1.75) < 1e-12);
  CHECK(fabs(ins_busbw_factor(INS_FUNC_ALLGATHER, 4) - 0.75) < 1e-12);
  CHECK(fabs(ins_busbw_factor(INS_FUNC_SEND, 4) - 1.0) < 1e-12);
  CHECK_EQ_U(ins_bw_bytes(INS_FUNC_REDUCESCATTER, 100, 8), 800);
  CHECK_EQ_U(ins_bw_bytes(INS_FUNC_ALLREDUCE, 100, 8), 100);
}

static void test_config(void) {
  bool bv;
  long long v;
  CHECK(ins_parse_bool("1", &bv) == 0 && bv);
  CHECK(ins_parse_bool("off", &bv) == 0 && !bv);
  CHECK(ins_parse_bool("maybe", &bv) == -1);
  CHECK(ins_parse_ll("42", 0, 100, &v) == 0 && v == 42);
  CHECK(ins_parse_ll(" -1 ", -1, 100, &v) == 0 && v == -1);
  CHECK(ins_parse_ll("-5x", -1, 100, &v) == -1);
  CHECK(ins_parse_ll("101", 0, 100, &v) == -1);
  CHECK(ins_parse_ll("", 0, 100, &v) == -1);
  CHECK(ins_parse_ll("99999999999999999999999", 0, 100, &v) == -1);

  struct ins_config cfg;
  unsetenv("NCCL_INSPECTOR_DUMP_DIR");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JOBID");
  unsetenv("PBS_JOBID");
  setenv("LSB_JOBID", "77", 1);
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "abc", 1);
  setenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE", "1000", 1);
  setenv("NCCL_INSPECTOR_DUMP_P2P_RING_SIZE", "1", 1);
  ins_config_load(&cfg);
  CHECK_EQ_U(cfg.min_size_bytes, 8192);
  CHECK_EQ_U(cfg.coll_ring_size, 1024); /* 1000 rounded up */
  CHECK_EQ_U(cfg.p2p_ring_size, INS_DEFAULT_RING); /* 1 is out of range: default */
  CHECK(cfg.interval_us == -1);
  CHECK(cfg.enable_p2p && cfg.require_kernel_timing && cfg.dump_thread_enable && !cfg.enable);
  CHECK_STR(cfg.dump_dir, "nccl-inspector-77");
  setenv("SLURM_JOB_ID", "12", 1);
  ins_config_load(&cfg);
  CHECK_STR(cfg.dump_dir, "nccl-inspector-12");
  unsetenv("SLURM_JOB_ID");
  unsetenv("LSB_JOBID");
  ins_config_load(&cfg);
  CHECK_STR(cfg.dump_dir, "nccl-inspector-unknown-jobid");
  unsetenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES");
  unsetenv("NCCL_INSPECTOR_DUMP_COLL_RING_SIZE");
  unsetenv("NCCL_INSPECTOR_DUMP_P2P_RING_SIZE");

  /* The dump interval each output needs when none is given: Prometheus every 30 s (the
   * node exporter's polling), OTLP every second (exports carry what was drained); an
   * explicit -1 is kept for Prometheus. JSON alone: teardown only. Outputs: JSON unless
   * Prometheus; JSON_DUMP=0 alone would write nothing: JSON kept. */
  CHECK(cfg.json_dump && !cfg.prom_dump && !cfg.otlp_export);
  setenv("NCCL_INSPECTOR_PROM_DUMP", "1", 1);
  ins_config_load(&cfg);
  CHECK(cfg.interval_us == 30000000LL && !cfg.json_dump);
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "-1", 1);
  ins_config_load(&cfg);
  CHECK(cfg.interval_us == -1);
  unsetenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS");
  unsetenv("NCCL_INSPECTOR_PROM_DUMP");
  setenv("NCCL_INSPECTOR_OTEL_EXPORT", "1", 1); /* the vendors' name */
  ins_config_load(&cfg);
  CHECK(cfg.otlp_export && cfg.json_dump && cfg.interval_us == 1000000LL);
  setenv("NCCL_INSPECTOR_JSON_DUMP", "0", 1);
  ins_config_load(&cfg);
  CHECK(cfg.otlp_export && !cfg.json_dump);
  unsetenv("NCCL_INSPECTOR_OTEL_EXPORT");
  ins_config_load(&cfg);
  CHECK(!cfg.otlp_export && cfg.json_dump && cfg.interval_us == -1);
  unsetenv("NCCL_INSPECTOR_JSON_DUMP");

  /* Sampled timing: off by default; one of the pair takes the other's default. */
  CHECK(cfg.sample_mode == INS_SAMPLE_ALL);
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "60000", 1);
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_TIME && cfg.sample_window_ms == 1000 && cfg.sample_period_ms == 60000);
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "500", 1);
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_TIME && cfg.sample_window_ms == 50);
  unsetenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS");
  setenv("NCCL_INSPECTOR_SAMPLE_WINDOW_MS", "2000", 1);
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_TIME && cfg.sample_window_ms == 2000 && cfg.sample_period_ms == 30000);
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "2000", 1); /* window not shorter: no sampling */
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_ALL);
  setenv("NCCL_INSPECTOR_SAMPLE_GROUPS", "10", 1); /* time windows win over the group count */
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "20000", 1);
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_TIME);
  unsetenv("NCCL_INSPECTOR_SAMPLE_WINDOW_MS");
  unsetenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS");
  setenv("NCCL_INSPECTOR_SAMPLE_GROUPS_BURST", "100", 1);
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_GROUPS && cfg.sample_every == 10 && cfg.sample_burst == 100);
  setenv("NCCL_INSPECTOR_SAMPLE_GROUPS", "1", 1); /* every group: no sampling */
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_ALL);
  setenv("NCCL_INSPECTOR_SAMPLE_GROUPS", "-3", 1); /* malformed: the default, 1 */
  ins_config_load(&cfg);
  CHECK(cfg.sample_mode == INS_SAMPLE_ALL);
  unsetenv("NCCL_INSPECTOR_SAMPLE_GROUPS");
  unsetenv("NCCL_INSPECTOR_SAMPLE_GROUPS_BURST");

  /* The bounds of the ops left out (core/judge.h): apart by default; mix, off, and the
   * booleans; anything else apart (with a notice naming it) */
  CHECK(cfg.bounds == INS_BOUNDS_APART);
  static const struct { const char *v; int want; } bounds[] = {
      {"mix", INS_BOUNDS_MIX}, {" MIX ", INS_BOUNDS_MIX}, {"off", INS_BOUNDS_OFF}, {"0", INS_BOUNDS_OFF},
      {"apart", INS_BOUNDS_APART}, {"1", INS_BOUNDS_APART}, {"mixed", INS_BOUNDS_APART}, {"2", INS_BOUNDS_APART}};
  for (size_t i = 0; i < sizeof bounds / sizeof *bounds; i++) {
    setenv("NCCL_INSPECTOR_BOUNDS", bounds[i].v, 1);
    ins_config_load(&cfg);
    CHECK_EQ_U(cfg.bounds, bounds[i].want);
  }
  unsetenv("NCCL_INSPECTOR_BOUNDS");
}

static void test_ring(void) {
  struct ins_ring r;
  CHECK(ins_ring_init(&r, 4, sizeof(uint64_t)) == 0);
  uint64_t pos;
  for (uint64_t i = 0; i < 4; i++) {
    uint64_t *p = ins_ring_reserve(&r, &pos);
    CHECK(p != NULL);
    *p = i;
    ins_ring_commit(&r, p, pos);
  }
  CHECK(ins_ring_reserve(&r, &pos) == NULL); /* full */
  CHECK_EQ_U(ins_ring_used_approx(&r), 4);
  for (uint64_t round = 0; round < 10; round++) { /* wrap around many times */
    uint64_t *p = ins_ring_peek(&r);
    CHECK(p && *p == round);
    ins_ring_release(&r, p);
    p = ins_ring_reserve(&r, &pos);
    CHECK(p != NULL);
    *p = round + 4;
    ins_ring_commit(&r, p, pos);
  }
  int n = 0;
  for (uint64_t *p; (p = ins_ring_peek(&r)); n++) ins_ring_release(&r, p);
  CHECK_EQ_U(n, 4);
  CHECK(ins_ring_peek(&r) == NULL);
  /* reserved but not committed: invisible to the consumer */
  uint64_t *p = ins_ring_reserve(&r, &pos);
  CHECK(ins_ring_peek(&r) == NULL);
  ins_ring_commit(&r, p, pos);
  CHECK(ins_ring_peek(&r) == p);
  ins_ring_free(&r);
}

/* Two producers, one consumer: every value arrives exactly once. */
#define MPSC_N 100000
static struct ins_ring g_mpsc;
static void *producer(void *arg) {
  uint64_t base = (uint64_t)(uintptr_t)arg, pos;
  for (uint64_t i = 0; i < MPSC_N; i++) {
    uint64_t *p;
    while (!(p = ins_ring_reserve(&g_mpsc, &pos))) sched_yield();
    *p = base + i;
    ins_ring_commit(&g_mpsc, p, pos);
  }
  return NULL;
}

static void test_ring_mpsc(void) {
  CHECK(ins_ring_init(&g_mpsc, 64, sizeof(uint64_t)) == 0);
  pthread_t t[2];
  pthread_create(&t[0], NULL, producer, (void *)(uintptr_t)0);
  pthread_create(&t[1], NULL, producer, (void *)(uintptr_t)(1ull << 32));
  uint64_t next[2] = {0, 0}, got = 0, order_bad = 0;
  while (got < 2 * MPSC_N) {
    uint64_t *p = ins_ring_peek(&g_mpsc);
    if (!p) { sched_yield(); continue; }
    int who = (int)(*p >> 32);
    if ((*p & 0xffffffff) != next[who]) order_bad++;
    next[who] = (*p & 0xffffffff) + 1;
    ins_ring_release(&g_mpsc, p);
    got++;
  }
  pthread_join(t[0], NULL);
  pthread_join(t[1], NULL);
  CHECK_EQ_U(order_bad, 0);
  CHECK_EQ_U(next[0], MPSC_N);
  CHECK_EQ_U(next[1], MPSC_N);
  ins_ring_free(&g_mpsc);
}

static struct ins_config test_cfg(void) {
  struct ins_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.enable = cfg.enable_p2p = cfg.require_kernel_timing = true;
  cfg.min_size_bytes = 8192;
  cfg.coll_ring_size = cfg.p2p_ring_size = 8;
  cfg.interval_us = -1;
  return cfg;
}

static struct ins_record *pop(struct ins_comm *c, int kind, struct ins_record *out) {
  struct ins_record *r = ins_ring_peek(&c->ring[kind]);
  if (!r) return NULL;
  *out = *r;
  ins_ring_release(&c->ring[kind], r);
  return out;
}

static void test_tracker(void) {
  struct ins_config cfg = test_cfg();
  struct ins_comm *c = ins_comm_create(&cfg, 0xabcdef, "", 1, 4, 1);
  CHECK(c != NULL);
  CHECK_STR(c->name, "unknown");
  struct ins_record r;

  /* 1. NCCL's order: start, stop (enqueued), then kernels; two channels. */
  void *op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 4096, 7, -1, 2, "RING", "LL");
  CHECK(op != NULL);
  ins_op_event_stop(op);
  void *k0 = ins_op_kernel_start(c, op, 0, 1000);
  void *k1 = ins_op_kernel_start(c, op, 1, 1100);
  ins_op_kernel_record_stop(k1, 5000);
  ins_op_event_stop(k1);
  CHECK(ins_ring_peek(&c->ring[0]) == NULL); /* channel 0 still running */
  ins_op_kernel_record_stop(k0, 4000);
  ins_op_event_stop(k0);
  CHECK(pop(c, 0, &r) != NULL);
  CHECK_EQ_U(r.sn, 7);
  CHECK_EQ_U(r.bytes, 16384);
  CHECK_EQ_U(r.start_ns, 1000);
  CHECK_EQ_U(r.exec_ns, 4000);
  CHECK_EQ_U(r.nchannels, 2);
  CHECK_EQ_U(r.timing, INS_TIMING_KERNEL_GPU);

  /* 2. kernels finish before the host stop (possible: different threads) */
  op = ins_op_start(c, INS_KIND_COLL, "AllGather", "ncclInt8", 65536, 8, -1, 1, "RING", "SIMPLE");
  k0 = ins_op_kernel_start(c, op, 0, 6010);
  ins_op_kernel_record_stop(k0, 6030);
  ins_op_event_stop(k0);
  CHECK(ins_ring_peek(&c->ring[0]) == NULL);
  ins_op_event_stop(op);
  CHECK(pop(c, 0, &r) && r.exec_ns == 20 && r.sn == 8);

  /* 3. filters: small message, self P2P, P2P channels from 16 */
  CHECK(ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 16, 9, -1, 1, "RING", "LL") == NULL);
  CHECK(ins_op_start(c, INS_KIND_P2P, "Send", "ncclFloat32", 1 << 20, 0, 1, 1, NULL, NULL) == NULL);
  op = ins_op_start(c, INS_KIND_P2P, "Recv", "ncclFloat32", 1 << 20, 0, 2, 1, NULL, NULL);
  CHECK(op != NULL);
  ins_op_event_stop(op);
  k0 = ins_op_kernel_start(c, op, 16, 7100);
  ins_op_kernel_record_stop(k0, 7600);
  ins_op_event_stop(k0);
  CHECK(pop(c, 1, &r) != NULL);
  CHECK_EQ_U(r.sn, 1); /* the self-send was P2P number 0 */
  CHECK_EQ_U(r.peer, 2);
  CHECK_EQ_U(r.exec_ns, 500);

  /* 4. missing stop pTimer: kernel_cpu, not kept by default, counted */
  op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 10, -1, 1, "RING", "LL");
  ins_op_event_stop(op);
  k0 = ins_op_kernel_start(c, op, 0, 8100);
  ins_op_kernel_record_stop(k0, 0);
  ins_op_event_stop(k0);
  CHECK(ins_ring_peek(&c->ring[0]) == NULL);
  CHECK_EQ_U(atomic_load(&c->untimed[INS_KIND_COLL][INS_UNTIMED_NO_GPU_TIMER]), 1);

  /* 5. untrustworthy nChannels (224, as RCCL was seen sending): channels count as they
   * come, and the op is whole only once a later op has completed: a channel may start
   * after the others stopped (as RCCL was reported to do) */
  op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 11, -1, 224, "RING", "LL");
  ins_op_event_stop(op);
  k0 = ins_op_kernel_start(c, op, 0, 9100);
  k1 = ins_op_kernel_start(c, op, 1, 9120);
  ins_op_kernel_record_stop(k0, 9200);
  ins_op_event_stop(k0);
  ins_op_kernel_record_stop(k1, 9300);
  ins_op_event_stop(k1);
  CHECK(ins_ring_peek(&c->ring[0]) == NULL); /* every channel so far stopped: not whole yet */
  void *k2 = ins_op_kernel_start(c, op, 2, 9350);
  ins_op_kernel_record_stop(k2, 9400);
  ins_op_event_stop(k2);
  CHECK(ins_ring_peek(&c->ring[0]) == NULL);
  void *later = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 12, -1, 1, "RING", "LL");
  ins_op_event_stop(later);
  k0 = ins_op_kernel_start(c, later, 0, 9500);
  ins_op_kernel_record_stop(k0, 9600);
  ins_op_event_stop(k0);
  CHECK(pop(c, 0, &r) && r.sn == 12 && r.exec_ns == 100 && r.nchannels == 1);
  CHECK(pop(c, 0, &r) && r.sn == 11 && r.exec_ns == 300 && r.nchannels == 3);

  /* 6. bad channel id, NULL parent, unknown handle, NULL everything */
  op = ins_op_start(c, INS_KIND_COLL, NULL, "ncclFloat32", 1 << 20, 12, -1, 1, NULL, NULL);
  CHECK(ins_op_kernel_start(c, op, 64, 100) == NULL);
  CHECK(atomic_load(&c->bad_channel) == 1);
  CHECK(ins_op_kernel_start(c, NULL, 0, 100) == NULL);
  int not_ours = 0x55;
  CHECK(ins_op_kernel_start(c, &not_ours, 0, 100) == NULL);
  ins_op_event_stop(&not_ours);
  ins_op_event_stop(NULL);
  ins_op_kernel_record_stop(NULL, 5);
  CHECK(ins_op_start(NULL, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 1, -1, 1, NULL, NULL) == NULL);
  CHECK(ins_op_start(c, INS_KIND_COLL, "AllReduce", NULL, 1 << 20, 1, -1, 1, NULL, NULL) == NULL); /* size 0 */

  /* 7. finalize with an op in flight: counted, freed */
  uint64_t incomplete = 0;
  ins_op_finish_all_at_teardown(c, &incomplete);
  CHECK_EQ_U(incomplete, 1);

  /* 8. ring full: drops are counted, never block */
  for (int i = 0; i < 10; i++) {
    op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 100 + i, -1, 1, "RING", "LL");
    ins_op_event_stop(op);
    k0 = ins_op_kernel_start(c, op, 0, 20000 + 10 * (uint64_t)i);
    ins_op_kernel_record_stop(k0, 20001 + 10 * (uint64_t)i);
    ins_op_event_stop(k0);
  }
  CHECK_EQ_U(atomic_load(&c->dropped[0]), 2);
  int n = 0;
  while (pop(c, 0, &r)) CHECK_EQ_U(r.sn, 100 + n++);
  CHECK_EQ_U(n, 8);

  /* 9. many ops in flight: the pool grows past one chunk */
  void *ops[100];
  for (int i = 0; i < 100; i++)
    ops[i] = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, i, -1, 1, "RING", "LL");
  int distinct = 1;
  for (int i = 1; i < 100; i++) distinct &= ops[i] != ops[i - 1] && ops[i] != NULL;
  CHECK(distinct);
  incomplete = 0;
  ins_op_finish_all_at_teardown(c, &incomplete);
  CHECK_EQ_U(incomplete, 100);
  ins_comm_destroy(c);

  /* 10. CPU timing kept on request: collective_cpu at teardown */
  cfg.require_kernel_timing = false;
  c = ins_comm_create(&cfg, 1, "x", 1, 2, 0);
  op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 5, -1, 1, "RING", "LL");
  ins_op_event_stop(op);
  incomplete = 0;
  ins_op_finish_all_at_teardown(c, &incomplete);
  CHECK_EQ_U(incomplete, 0);
  CHECK(pop(c, 0, &r) && r.timing == INS_TIMING_COLLECTIVE_CPU && r.sn == 5);
  ins_comm_destroy(c);
}

/* Kill-safe layout: no line straddles a 4 KiB page of the file; text preserved. */
static void test_layout(void) {
  srand(11);
  int straddle = 0, text_bad = 0, pad_bad = 0;
  static char in[64 * 1024], out[128 * 1024], strip[128 * 1024];
  for (int iter = 0; iter < 300; iter++) {
    size_t len = 0;
    int lines = 1 + rand() % 60;
    for (int l = 0; l < lines; l++) {
      int n = 20 + rand() % (l == 7 ? 9000 : 900); /* now and then longer than a page */
      for (int i = 0; i < n; i++) in[len++] = (char)('a' + rand() % 26);
      in[len++] = '\n';
    }
    size_t off = (size_t)(rand() % 3) * 4096 + (size_t)(rand() % 4096), pad_prev;
    size_t n = ins_writer_layout(in, len, off, out, sizeof out, &pad_prev);
    CHECK(n != (size_t)-1);
    if (n == (size_t)-1) continue;
    size_t pos = off + pad_prev; /* the caller pads the previous line first */
    if (pad_prev && (off % 4096) + pad_prev != 4096) pad_bad++;
    if (pad_prev) n = ins_writer_layout(in, len, pos, out, sizeof out, &pad_prev);
    if (pad_prev) pad_bad++;
    size_t start = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
      if (out[i] != '\n') continue;
      size_t a = pos + start, b = pos + i; /* line occupies [a, b] */
      if (a / 4096 != b / 4096 && i - start + 1 <= 4096) straddle++;
      size_t e = i;
      while (e > start && out[e - 1] == ' ') e--;
      memcpy(strip + s, out + start, e - start);
      s += e - start;
      strip[s++] = '\n';
      start = i + 1;
    }
    if (s != len || memcmp(strip, in, len)) text_bad++;
  }
  CHECK_EQ_U(straddle, 0);
  CHECK_EQ_U(text_bad, 0);
  CHECK_EQ_U(pad_bad, 0);
}

/* When a producer wakes the sleeping dump thread: a ring half full (interval
 * -1) or a quarter full (interval > 0), or at every record when the fraction
 * is below one record; never when it is not waiting. */
static int pushes_until_wake(struct ins_ring *r, int shift) {
  uint64_t pos;
  g_ins_wake.full_shift = (uint8_t)shift;
  atomic_store(&g_ins_wake.waiting, 1);
  uint32_t s0 = atomic_load(&g_ins_wake.seq);
  int woke_at = 0;
  for (int i = 1; i <= 8 && !woke_at; i++) {
    void *p = ins_ring_reserve(r, &pos);
    ins_ring_commit(r, p, pos);
    ins_wake_after_push(r);
    if (atomic_load(&g_ins_wake.seq) != s0) woke_at = i;
  }
  return woke_at;
}

static void test_wake_policy(void) {
  struct ins_ring r;
  CHECK(ins_ring_init(&r, 8, sizeof(uint64_t)) == 0);
  uint64_t pos;
  CHECK_EQ_U(pushes_until_wake(&r, 2), 2); /* a quarter of 8 */
  for (void *q; (q = ins_ring_peek(&r));) ins_ring_release(&r, q);
  CHECK_EQ_U(pushes_until_wake(&r, 1), 4); /* half of 8 */
  CHECK_EQ_U(atomic_load(&g_ins_wake.waiting), 0);
  uint32_t s0 = atomic_load(&g_ins_wake.seq);
  void *p = ins_ring_reserve(&r, &pos);
  ins_ring_commit(&r, p, pos);
  ins_wake_after_push(&r); /* not waiting: nothing to do */
  CHECK_EQ_U(atomic_load(&g_ins_wake.seq), s0);
  for (void *q; (q = ins_ring_peek(&r));) ins_ring_release(&r, q);
  g_ins_wake.full_shift = 8; /* 8 >> 8 = 0 cells: every record */
  atomic_store(&g_ins_wake.waiting, 1);
  p = ins_ring_reserve(&r, &pos);
  ins_ring_commit(&r, p, pos);
  ins_wake_after_push(&r);
  CHECK_EQ_U(atomic_load(&g_ins_wake.seq), s0 + 1);
  g_ins_wake.full_shift = 1;
  ins_ring_free(&r);
}

/* An op that never gets one of its kernel events is finished once an op issued
 * INS_OVERTAKE_WINDOW later completes (what NCCL 2.28.9 was seen doing on H200s). */
static void run_op(struct ins_comm *c, uint64_t sn, int nch, int nstarted, uint64_t t0) {
  void *op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, sn, -1,
                          (uint8_t)nch, "RING", "SIMPLE");
  ins_op_event_stop(op);
  for (int ch = 0; ch < nstarted; ch++) {
    void *k = ins_op_kernel_start(c, op, (uint8_t)ch, t0 + (uint64_t)ch);
    ins_op_kernel_record_stop(k, t0 + 1000 + (uint64_t)ch);
    ins_op_event_stop(k);
  }
}

static void test_overtaken(void) {
  struct ins_config cfg = test_cfg();
  cfg.coll_ring_size = 256;
  struct ins_comm *c = ins_comm_create(&cfg, 7, "x", 1, 2, 0);
  run_op(c, 0, 8, 7, 5000); /* one channel never comes: stuck */
  run_op(c, 1, 1, 0, 0);    /* no channel at all: stuck */
  struct ins_record r;
  CHECK(ins_ring_peek(&c->ring[0]) == NULL);
  for (int i = 0; i < INS_OVERTAKE_WINDOW - 2; i++) run_op(c, 2 + (uint64_t)i, 1, 1, 100000);
  /* op 0 is overtaken only by the op issued INS_OVERTAKE_WINDOW after it */
  CHECK_EQ_U(atomic_load(&c->overtaken_recorded), 0);
  run_op(c, 100, 1, 1, 200000);
  CHECK_EQ_U(atomic_load(&c->overtaken_recorded), 1);
  run_op(c, 101, 1, 1, 200000);
  CHECK_EQ_U(atomic_load(&c->untimed[INS_KIND_COLL][INS_UNTIMED_LOST_EVENTS]), 1);
  int found = 0;
  while (pop(c, 0, &r))
    if (r.sn == 0) {
      found = 1;
      CHECK_EQ_U(r.nchannels, 7);
      CHECK_EQ_U(r.start_ns, 5000);
      CHECK_EQ_U(r.exec_ns, 1006);
      CHECK_EQ_U(r.timing, INS_TIMING_KERNEL_GPU);
    } else {
      CHECK(r.sn != 1);
    }
  CHECK(found);
  uint64_t incomplete = 0;
  ins_op_finish_all_at_teardown(c, &incomplete);
  CHECK_EQ_U(incomplete, 0); /* nothing left pinned */
  ins_comm_destroy(c);

  /* With CPU timing kept, an overtaken op without kernel events is collective_cpu. */
  cfg.require_kernel_timing = false;
  c = ins_comm_create(&cfg, 8, "y", 1, 2, 0);
  run_op(c, 0, 1, 0, 0);
  for (int i = 0; i < INS_OVERTAKE_WINDOW; i++) run_op(c, 1 + (uint64_t)i, 1, 1, 100000);
  CHECK_EQ_U(atomic_load(&c->overtaken_recorded), 1);
  found = 0;
  while (pop(c, 0, &r)) found += r.sn == 0 && r.timing == INS_TIMING_COLLECTIVE_CPU;
  CHECK_EQ_U(found, 1);
  ins_comm_destroy(c);
}

/* One op: its channels' GPU intervals given as {channel, start, stop}; returns the record
 * it left in the ring (1), or 0 when none. Issued and completed before the next op. */
struct iv { uint8_t ch; uint64_t start, stop; };
static int one_op(struct ins_comm *c, uint64_t sn, const struct iv *v, int n, struct ins_record *r) {
  ins_op_group_start(c); /* NCCL's Group event: each op its own group */
  void *op = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, sn, -1,
                          (uint8_t)n, "RING", "SIMPLE");
  ins_op_event_stop(op);
  for (int i = 0; i < n; i++) {
    void *k = ins_op_kernel_start(c, op, v[i].ch, v[i].start);
    ins_op_kernel_record_stop(k, v[i].stop);
    ins_op_event_stop(k);
  }
  return pop(c, 0, r) != NULL;
}

/* Whose timestamps (core/op.c): a channel with an earlier op's leaves the op's time; with
 * none of its own left, the op is handed over and counted. */
static void test_whose_timestamps(void) {
  struct ins_config cfg = test_cfg();
  struct ins_comm *c = ins_comm_create(&cfg, 9, "w", 1, 2, 0);
  struct ins_record r;
  const uint64_t T = 1000000000;
  /* op 0: channels 0 and 1, [T, T+10000] */
  struct iv a[] = {{0, T, T + 10000}, {1, T + 100, T + 9900}};
  CHECK(one_op(c, 0, a, 2, &r) && r.start_ns == T && r.exec_ns == 10000 && r.stale_channels == 0);
  /* the floor: op 1's channel 1 starts before op 0's stop, which was delivered before op 1
   * was issued: it is op 0's timestamps again. Channel 0 is op 1's own. */
  struct iv b[] = {{0, T + 20000, T + 30000}, {1, T + 100, T + 9900}};
  CHECK(one_op(c, 1, b, 2, &r) && r.start_ns == T + 20000 && r.exec_ns == 10000 &&
        r.stale_channels == 1 && r.nchannels == 2);
  /* every channel below the floor: no record, counted as handed over */
  struct iv d[] = {{0, T + 25000, T + 29000}, {1, T + 26000, T + 29500}};
  CHECK(!one_op(c, 2, d, 2, &r));
  CHECK_EQ_U(atomic_load(&c->untimed[INS_KIND_COLL][INS_UNTIMED_HANDED_OVER]), 1);
  /* one kernel whose blocks ran in two waves (channels 5-6 waited 60 us for
   * multiprocessors: a busy GPU): all its own */
  struct iv e[] = {{2, T + 40000, T + 50000}, {3, T + 40100, T + 50100}, {4, T + 40200, T + 49000},
                   {5, T + 110000, T + 120000}, {6, T + 110100, T + 119000}};
  CHECK(one_op(c, 3, e, 5, &r) && r.start_ns == T + 40000 && r.exec_ns == 80000 &&
        r.stale_channels == 0);
  /* the order, across channels: ops 4 and 5 issued together (two groups), op 4 then
   * completes; op 5's channel 7 (which op 4 did not use) starts before op 4 stopped: an
   * earlier op's timestamps, since a communicator's kernels run one after another. The
   * floor cannot tell (op 5 was issued before op 4's timestamps came). */
  ins_op_group_start(c);
  void *p4 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 4, -1, 2, NULL, NULL);
  ins_op_group_start(c);
  void *p5 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 5, -1, 3, NULL, NULL);
  ins_op_event_stop(p4);
  ins_op_event_stop(p5);
  const struct iv op4[] = {{0, T + 150000, T + 160000}, {1, T + 150100, T + 160100}};
  const struct iv op5[] = {{0, T + 170000, T + 180000}, {1, T + 170100, T + 180100}, {7, T + 155000, T + 158000}};
  for (int i = 0; i < 2; i++) {
    void *k = ins_op_kernel_start(c, p4, op4[i].ch, op4[i].start);
    ins_op_kernel_record_stop(k, op4[i].stop);
    ins_op_event_stop(k);
  }
  CHECK(pop(c, 0, &r) && r.sn == 4 && r.stale_channels == 0);
  for (int i = 0; i < 3; i++) {
    void *k = ins_op_kernel_start(c, p5, op5[i].ch, op5[i].start);
    ins_op_kernel_record_stop(k, op5[i].stop);
    ins_op_event_stop(k);
  }
  CHECK(pop(c, 0, &r) && r.sn == 5 && r.start_ns == T + 170000 && r.exec_ns == 10100 &&
        r.stale_channels == 1);
  /* blocks that start as others finish are one kernel */
  struct iv f[] = {{0, T + 200000, T + 210000}, {1, T + 211000, T + 220000}};
  CHECK(one_op(c, 6, f, 2, &r) && r.exec_ns == 20000 && r.stale_channels == 0);
  /* the record says where the op stands in the issue order (judge.h): op 6 is the seventh
   * op, no API events (ABI v4: its Group event began its group), one op issued from its
   * group's start to its completion */
  CHECK_EQ_U(r.op_idx, 6);
  CHECK_EQ_U(r.issued_after, 1);
  CHECK_EQ_U(r.lag, 1);
  CHECK_EQ_U(r.chan_mask, 0x3);
  ins_comm_destroy(c);

  /* API calls (ABI v5+): a group of three collectives, one of which NCCL never reports (a
   * Broadcast on its AllGatherV path): the group's ops count the group's three API calls,
   * and the unreported one is counted when the next group begins */
  c = ins_comm_create(&cfg, 10, "v", 1, 2, 0);
  ins_op_api_call(c, 1, "AllReduce");
  ins_op_api_call(c, 1, "Broadcast");
  ins_op_api_call(c, 1, "AllReduce");
  ins_op_group_start(c);
  /* a group's ops are all issued (at ncclGroupEnd) before any of them runs */
  void *o1 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 0, -1, 1, NULL, NULL);
  void *o2 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 1, -1, 1, NULL, NULL);
  ins_op_event_stop(o1);
  ins_op_event_stop(o2);
  void *k1 = ins_op_kernel_start(c, o1, 0, T), *k2 = ins_op_kernel_start(c, o2, 1, T + 100);
  ins_op_kernel_record_stop(k1, T + 1000);
  ins_op_kernel_record_stop(k2, T + 1100);
  ins_op_event_stop(k1);
  ins_op_event_stop(k2);
  CHECK(pop(c, 0, &r) && r.sn == 0);
  CHECK_EQ_U(r.group_before, 0);
  CHECK_EQ_U(r.issued_after, 2);
  CHECK_EQ_U(r.lag, 3);
  CHECK(pop(c, 0, &r) && r.sn == 1);
  CHECK_EQ_U(r.group_before, 1);
  CHECK_EQ_U(r.issued_after, 1);
  CHECK_EQ_U(r.lag, 3);
  CHECK_EQ_U(atomic_load(&c->unreported[INS_FUNC_BROADCAST]), 0); /* the group may go on */
  ins_op_api_call(c, 1, "AllReduce");
  CHECK_EQ_U(atomic_load(&c->unreported[INS_FUNC_BROADCAST]), 1);
  CHECK_EQ_U(atomic_load(&c->unreported[INS_FUNC_ALLREDUCE]), 0);
  ins_comm_destroy(c);
}

/* A P2P op on channel ch: started, stopped, its channel's GPU timestamps; 1 when its record
 * (or, for a quiet op, its shadow) is in the ring afterwards (into r). */
static void *p2p_start(struct ins_comm *c, const char *func, uint64_t count, int peer) {
  return ins_op_start(c, INS_KIND_P2P, func, "ncclInt8", count, 0, peer, 1, NULL, NULL);
}
static int p2p_finish(struct ins_comm *c, void *op, uint8_t ch, uint64_t t, struct ins_record *r) {
  ins_op_event_stop(op);
  void *k = ins_op_kernel_start(c, op, ch, t);
  ins_op_kernel_record_stop(k, t + 1000);
  ins_op_event_stop(k);
  return pop(c, INS_KIND_P2P, r) != NULL;
}

/* The issue order's counts (core/judge.h, comm.h): the API calls that can make work, a quiet
 * op's shadow in a backlog, and a host that begins no group. */
static void test_issue_counts(void) {
  struct ins_config cfg = test_cfg();
  struct ins_record r;
  const uint64_t T = 1000000000;

  /* An nccl-tests alltoall group on rank 0 of 2: Send and Recv to itself, in place (NCCL
   * drops the pair: no P2p event, no work), and to rank 1 (two P2p events). The ops count
   * two calls that can make work, theirs, not four: lag 2, and each op's api_at counts the
   * P2P ops up to its own. */
  struct ins_comm *c = ins_comm_create(&cfg, 12, "a2a", 1, 2, 0);
  for (int i = 0; i < 4; i++) ins_op_api_call(c, 0, NULL);
  ins_op_group_start(c); /* its Group event, at ncclGroupEnd */
  void *s = p2p_start(c, "Send", 1 << 20, 1), *v = p2p_start(c, "Recv", 1 << 20, 1);
  CHECK(p2p_finish(c, s, 16, T, &r));
  CHECK_EQ_U(r.lag, 2);
  CHECK_EQ_U(r.api_at, INS_API_AT_VALID | 1);
  CHECK(p2p_finish(c, v, 16, T + 10, &r));
  CHECK_EQ_U(r.lag, 2);
  CHECK_EQ_U(r.api_at, INS_API_AT_VALID | 2);
  /* a collective's call counts as it is made (NCCL may run it unreported) */
  ins_op_api_call(c, 1, "AllReduce");
  ins_op_group_start(c);
  void *o = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 0, -1, 1, NULL, NULL);
  ins_op_event_stop(o);
  void *k = ins_op_kernel_start(c, o, 0, T + 5000);
  ins_op_kernel_record_stop(k, T + 6000);
  ins_op_event_stop(k);
  CHECK(pop(c, INS_KIND_COLL, &r));
  CHECK_EQ_U(r.lag, 1);
  CHECK_EQ_U(r.api_at, INS_API_AT_VALID | 3);
  ins_comm_destroy(c);

  /* Quiet ops (below the minimum size, tracked for hang detection): one that completes in a
   * backlog (70 ops issued from its group's start) leaves a shadow, its channels for the
   * judge; one that completes while the host is not far ahead leaves nothing. */
  cfg.hang_ns = 1000000000ull;
  cfg.dump_thread_enable = true;
  c = ins_comm_create(&cfg, 13, "quiet", 1, 2, 0);
  CHECK_EQ_U(c->untracked_below, 0);
  ins_op_group_start(c);
  void *q = p2p_start(c, "Send", 1024, 1);
  CHECK(q != NULL);
  CHECK(!p2p_finish(c, q, 3, T, &r)); /* certain: no shadow */
  ins_op_group_start(c);
  q = p2p_start(c, "Send", 1024, 1);
  for (int i = 0; i < 69; i++) { /* untracked: filtered to itself */
    ins_op_group_start(c);
    CHECK(p2p_start(c, "Send", 1 << 20, 0) == NULL);
  }
  CHECK(p2p_finish(c, q, 3, T + 10000, &r));
  CHECK_EQ_U(r.timing, INS_TIMING_SHADOW);
  CHECK_EQ_U(r.kind, INS_KIND_P2P);
  CHECK_EQ_U(r.op_idx, 1);
  CHECK_EQ_U(r.chan_mask, 1ull << 3);
  CHECK_EQ_U(r.peer, 1);
  CHECK_EQ_U(r.issued_after, 70);
  CHECK_EQ_U(r.group_before, 0);
  CHECK_EQ_U(r.nchannels, 0);
  CHECK(!pop(c, INS_KIND_P2P, &r)); /* one shadow, no record, nothing counted */
  CHECK_EQ_U(atomic_load(&c->dropped[INS_KIND_P2P]), 0);
  /* a ring half full takes no shadow: records come first (ring of 8: 4 records waiting) */
  ins_op_group_start(c);
  q = p2p_start(c, "Send", 1024, 1);
  for (int i = 0; i < 4; i++) {
    ins_op_group_start(c);
    CHECK(p2p_finish(c, p2p_start(c, "Send", 1 << 20, 1), 5, T + 20000 + 2000 * i, &r));
  }
  CHECK_EQ_U(ins_ring_used_approx(&c->ring[INS_KIND_P2P]), 0); /* popped: push them back */
  for (int i = 0; i < 4; i++) {
    uint64_t pos;
    struct ins_record *w = ins_ring_reserve(&c->ring[INS_KIND_P2P], &pos);
    CHECK(w != NULL);
    *w = r;
    ins_ring_commit(&c->ring[INS_KIND_P2P], w, pos);
  }
  for (int i = 0; i < 66; i++) {
    ins_op_group_start(c);
    CHECK(p2p_start(c, "Send", 1 << 20, 0) == NULL);
  }
  ins_op_event_stop(q);
  k = ins_op_kernel_start(c, q, 3, T + 40000);
  ins_op_kernel_record_stop(k, T + 41000);
  ins_op_event_stop(k);
  for (int i = 0; i < 4; i++) CHECK(pop(c, INS_KIND_P2P, &r) && r.timing == INS_TIMING_KERNEL_GPU);
  CHECK(!pop(c, INS_KIND_P2P, &r));
  ins_comm_destroy(c);
  cfg = test_cfg();

  /* No group ever begun (no Group event, no API call): an op shares its launch at most
   * with the ops issued since the latest that completed. One at a time: each alone. */
  c = ins_comm_create(&cfg, 14, "nogroup", 1, 2, 0);
  for (uint32_t i = 0; i < 100; i++) {
    void *a = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, i, -1, 1, NULL, NULL);
    ins_op_event_stop(a);
    k = ins_op_kernel_start(c, a, 0, T + 10000 * i);
    ins_op_kernel_record_stop(k, T + 10000 * i + 5000);
    ins_op_event_stop(k);
    CHECK(pop(c, INS_KIND_COLL, &r) && r.sn == i);
    CHECK_EQ_U(r.group, 0);
    CHECK_EQ_U(r.group_before, 0);
    CHECK_EQ_U(r.issued_after, 1);
    CHECK_EQ_U(r.lag, 1);
  }
  /* three issued before any completes: one launch for all the plugin knows */
  void *b[3];
  for (int i = 0; i < 3; i++)
    b[i] = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 100 + i, -1, 1, NULL, NULL);
  for (int i = 0; i < 3; i++) {
    ins_op_event_stop(b[i]);
    k = ins_op_kernel_start(c, b[i], 0, T + 2000000 + 10000 * i);
    ins_op_kernel_record_stop(k, T + 2000000 + 10000 * i + 5000);
    ins_op_event_stop(k);
    CHECK(pop(c, INS_KIND_COLL, &r) && r.sn == 100u + i);
    CHECK_EQ_U(r.group_before, i);
    CHECK_EQ_U(r.issued_after, 3 - i);
  }
  /* a completion while ops wait: the group of an op issued after it begins after it */
  void *d0 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 103, -1, 1, NULL, NULL);
  void *d1 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 104, -1, 1, NULL, NULL);
  ins_op_event_stop(d0);
  k = ins_op_kernel_start(c, d0, 0, T + 3000000);
  ins_op_kernel_record_stop(k, T + 3005000);
  ins_op_event_stop(k);
  CHECK(pop(c, INS_KIND_COLL, &r) && r.sn == 103 && r.group_before == 0);
  void *d2 = ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, 105, -1, 1, NULL, NULL);
  for (int i = 0; i < 2; i++) {
    void *d = i ? d2 : d1;
    ins_op_event_stop(d);
    k = ins_op_kernel_start(c, d, 0, T + 3010000 + 10000 * i);
    ins_op_kernel_record_stop(k, T + 3015000 + 10000 * i);
    ins_op_event_stop(k);
  }
  /* op 104 was issued while op 103 was in flight: maybe one launch with it; op 105 after
   * op 103 completed: maybe one launch with op 104, not with op 103 */
  CHECK(pop(c, INS_KIND_COLL, &r) && r.sn == 104 && r.group_before == 1);
  CHECK(pop(c, INS_KIND_COLL, &r) && r.sn == 105 && r.group_before == 1);
  ins_comm_destroy(c);
}

/* Copy-engine collectives (ABI v6 CeColl): no kernel event ever comes. Each completes at
 * its own stop, without waiting for a later op; host-timed when CPU timing is kept, else
 * counted as no_gpu_timer; their API calls are reported (not "unreported"); and a later
 * op completing does not settle them a second time (no token: op.h). */
static void test_copy_engine(void) {
  struct ins_config cfg = test_cfg();
  struct ins_record r;
  for (int keep = 0; keep < 2; keep++) {
    cfg.require_kernel_timing = !keep;
    struct ins_comm *c = ins_comm_create(&cfg, 11, "ce", 1, 2, 0);
    ins_op_api_call(c, 1, "AllGather");
    ins_op_group_start(c);
    void *ce = ins_op_start_copy_engine(c, "AllGather", "ncclInt8", 1 << 20, 0);
    CHECK(ce != NULL);
    CHECK(!pop(c, 0, &r)); /* not before its stop */
    ins_op_event_stop(ce);
    if (keep) {
      CHECK(pop(c, 0, &r) && r.sn == 0 && r.timing == INS_TIMING_COLLECTIVE_CPU && r.nchannels == 0 &&
            r.bytes == 1 << 20 && r.algo && !strcmp(r.algo, "CE"));
    } else {
      CHECK(!pop(c, 0, &r));
      CHECK_EQ_U(atomic_load(&c->untimed[INS_KIND_COLL][INS_UNTIMED_NO_GPU_TIMER]), 1);
    }
    /* a kernel collective after it completes as usual and settles nothing of the CE op */
    struct iv a[] = {{0, 1000000, 1010000}};
    CHECK(one_op(c, 1, a, 1, &r) && r.sn == 1 && r.timing == INS_TIMING_KERNEL_GPU && r.exec_ns == 10000);
    CHECK(!pop(c, 0, &r));
    ins_op_api_call(c, 1, "AllReduce"); /* closes the groups: nothing unreported */
    CHECK_EQ_U(atomic_load(&c->unreported[INS_FUNC_ALLGATHER]), 0);
    CHECK_EQ_U(atomic_load(&c->untimed[INS_KIND_COLL][INS_UNTIMED_INCOMPLETE]), 0);
    ins_comm_destroy(c);
  }
}

int main(void) {
  test_issue_counts();
  test_copy_engine();
  test_whose_timestamps();
  test_overtaken();
  test_wake_policy();
  test_layout();
  test_buf();
  test_names();
  test_config();
  test_ring();
  test_ring_mpsc();
  test_tracker();
  return check_report("unit");
}
