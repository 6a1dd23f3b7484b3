/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_prom.c - unit tests of the Prometheus output (src/sink/prom/prom.c): the
 * message_size buckets, label escaping, the fallback device ordinal, and
 * the aggregation of one window into a file (mean time, geometric-mean
 * bandwidth, counters, mode 0644, removal with the device's last context),
 * and records timed from a subset of their channels (stale_channels) left
 * out of the aggregates and counted instead; 200 series on one GPU in a window.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "sink/device.h"
#include "core/names.h"
#include "sink/prom/prom.h"
#include "sink/vocab.h"

static const char *bucket(uint64_t b) {
  static char s[64];
  ins_vocab_size_bucket(b, s, sizeof s);
  return s;
}

static void test_bucket(void) {
  CHECK_STR(bucket(0), "0-1B");
  CHECK_STR(bucket(100), "100-101B");
  CHECK_STR(bucket(1023), "1023-1024B");
  CHECK_STR(bucket(1024), "1-2KB");
  CHECK_STR(bucket(8192), "8-9KB");
  CHECK_STR(bucket(1048575), "1023-1024KB");
  CHECK_STR(bucket(512ull << 20), "512-513MB");
  CHECK_STR(bucket((4ull << 30) + (512ull << 20)), "4-5GB");
  CHECK_STR(bucket(1ull << 40), "1-2TB");
  CHECK_STR(bucket(UINT64_MAX), "15-16EB");
}

static void test_escape(void) {
  char out[64];
  CHECK_EQ_U(ins_prom_escape(out, sizeof out, "a\"b\\c\nd"), 10);
  CHECK_STR(out, "a\\\"b\\\\c\\nd");
  CHECK_EQ_U(ins_prom_escape(out, sizeof out, "plain \t\r ok"), 11);
  CHECK_STR(out, "plain \t\r ok");
  /* No escape is ever cut in half by the capacity. */
  CHECK_EQ_U(ins_prom_escape(out, 3, "a\"b"), 1);
  CHECK_STR(out, "a");
  CHECK_EQ_U(ins_prom_escape(out, 4, "a\"b"), 3);
  CHECK_STR(out, "a\\\"");
  ins_prom_escape(out, sizeof out, NULL);
  CHECK_STR(out, "");
}

static void test_ordinal(void) {
  CHECK_EQ_U(ins_device_fallback_ordinal(5, 16, 2), 5);
  CHECK_EQ_U(ins_device_fallback_ordinal(13, 16, 2), 5);
  CHECK_EQ_U(ins_device_fallback_ordinal(3, 5, 2), 3); /* uneven: the rank itself */
  CHECK_EQ_U(ins_device_fallback_ordinal(1, 2, 0), 1);
  struct ins_device_id d;
  ins_device_identify(&d, "node/1 x", 1, 2, 1);
  char want[160];
  snprintf(want, sizeof want, "nodev-node_1_x-pid%ld-gpu1", (long)getpid());
  CHECK_STR(d.uuid, want);
  CHECK_EQ_U(d.ordinal, 1);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static struct ins_record rec(int kind, enum ins_func func, const char *name, uint64_t bytes,
                             uint64_t ns) {
  struct ins_record r = {.kind = (uint8_t)kind, .func = (uint8_t)func, .func_name = name,
                         .bytes = bytes, .exec_ns = ns, .algo = "RING", .proto = "SIMPLE"};
  return r;
}

static void test_window(void) {
  static struct ins_config cfg;
  setenv("NCCL_INSPECTOR_CLUSTER", "c1", 1); /* read with the configuration */
  ins_config_load(&cfg);
  char dir[] = "/tmp/inspector-prom-unit-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snprintf(cfg.dump_dir, sizeof cfg.dump_dir, "%s", dir);
  snprintf(cfg.hostname, sizeof cfg.hostname, "host");
  cfg.prom_dump = cfg.prom_dump_stats = true;
  ins_prom_configure(&cfg);

  /* Two contexts of rank 0 of 2: the same (fallback) device. */
  struct ins_comm *a = ins_comm_create(&cfg, 1, "x\"y\nnccl_fake 1", 1, 2, 0);
  struct ins_comm *b = ins_comm_create(&cfg, 2, "b", 1, 2, 0);
  struct ins_prom_dev *da = ins_prom_attach(a), *db = ins_prom_attach(b);
  CHECK(da && da == db);

  struct ins_record r1 = rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 10000);
  struct ins_record r2 = rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 40000);
  struct ins_record r3 = rec(INS_KIND_P2P, INS_FUNC_SEND, "Send", 8192, 0); /* no bandwidth */
  CHECK(ins_prom_add(da, a, &r1) == 0 && ins_prom_add(da, a, &r2) == 0 &&
        ins_prom_add(da, a, &r3) == 0);
  struct ins_sink_counts k = {.dropped_since = {3, 0}};
  k.untimed_since[INS_KIND_COLL][INS_UNTIMED_UNVERIFIED] = 5;
  k.untimed_since[INS_KIND_P2P][INS_UNTIMED_HANDED_OVER] = 2;
  k.unreported_since[INS_FUNC_BROADCAST] = 4;
  ins_prom_count(da, &k);
  ins_prom_write_all();

  char path[512];
  snprintf(path, sizeof path, "%s/nccl_inspector_metrics_nodev-host-pid%ld-gpu0.prom", dir,
           (long)getpid());
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
  char *text = slurp(path);
  CHECK(text != NULL);
  if (!text) return;
  const char *base = "{version=\"v4.0\",cluster=\"c1\",slurm_job_id=\"unknown\",node=\"host\","
                     "gpu=\"GPU0\",comm_name=\"x\\\"y\\nnccl_fake 1\",n_nodes=\"1\",nranks=\"2\",";
  char want[1024];
  /* AllReduce on 2 ranks: busbw = algbw = bytes / ns; geomean of 104.8576 and 26.2144. */
  snprintf(want, sizeof want, "nccl_bus_bandwidth_gbs%scollective=\"AllReduce\","
           "message_size=\"1-2MB\",algo_proto=\"RING_SIMPLE\"} 52.428800\n", base);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "nccl_collective_exec_time_microseconds%scollective=\"AllReduce\","
           "message_size=\"1-2MB\",algo_proto=\"RING_SIMPLE\"} 25.000000\n", base);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "nccl_p2p_bus_bandwidth_gbs%sp2p_operation=\"Send\","
           "message_size=\"8-9KB\"} 0.000000\n", base);
  CHECK(strstr(text, want) != NULL);
  CHECK(strstr(text, "# TYPE nccl_p2p_exec_time_microseconds gauge\n") != NULL);
  CHECK(strstr(text, "# TYPE nccl_collectives_total counter\nnccl_collectives_total{version=\"v4.0\","
                     "cluster=\"c1\",slurm_job_id=\"unknown\",node=\"host\",gpu=\"GPU0\"} 2\n") != NULL);
  CHECK(strstr(text, "nccl_collectives_dropped_total{version=\"v4.0\",cluster=\"c1\","
                     "slurm_job_id=\"unknown\",node=\"host\",gpu=\"GPU0\"} 3\n") != NULL);
  /* No raw newline inside a sample: every line is a comment or starts with a metric name. */
  int bad = 0;
  for (char *l = text; *l; l = strchr(l, '\n') + 1) {
    bad += !(l[0] == '#' || !strncmp(l, "nccl_", 5));
    if (!strchr(l, '\n')) break;
  }
  CHECK_EQ_U(bad, 0);
  CHECK(strstr(text, "\nnccl_fake") == NULL);

  /* A new window: the samples go, the counters stay; the file goes with the last context. */
  ins_prom_detach(da);
  text = slurp(path);
  CHECK(text && !strstr(text, "AllReduce") && strstr(text, "nccl_p2p_total{"));
  ins_prom_detach(db);
  CHECK(access(path, F_OK) != 0);
  ins_comm_destroy(a);
  ins_comm_destroy(b);
  rmdir(dir);
}

static struct ins_record stale(struct ins_record r, uint8_t nstale) {
  r.stale_channels = nstale;
  return r;
}

/* Records with stale channels stay out of every sample (a label set that has only such
 * records has none) and are counted per kind in nccl_*_excluded_total{reason="stale_channels"};
 * the *_total counters count the aggregated records only. */
static void test_stale_excluded(void) {
  static struct ins_config cfg;
  ins_config_load(&cfg);
  char dir[] = "/tmp/inspector-prom-stale-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snprintf(cfg.dump_dir, sizeof cfg.dump_dir, "%s", dir);
  snprintf(cfg.hostname, sizeof cfg.hostname, "host");
  cfg.prom_dump = cfg.prom_dump_stats = true;
  ins_prom_configure(&cfg);
  /* rank 1 of 2: a device of its own (GPU1), not test_window's */
  struct ins_comm *c = ins_comm_create(&cfg, 3, "s", 1, 2, 1);
  struct ins_prom_dev *d = ins_prom_attach(c);
  CHECK(d != NULL);

  struct ins_record in[] = {
      /* aggregated: AllReduce 1 MiB in 20 and 80 us; Send 8 KiB in 4.096 us */
      rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 20000),
      rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 80000),
      rec(INS_KIND_P2P, INS_FUNC_SEND, "Send", 8192, 4096),
      /* excluded: absurdly short times from a subset of channels, in the same label sets,
       * and an AllGather label set that has no other record */
      stale(rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 1000), 4),
      stale(rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce", 1 << 20, 500), 1),
      stale(rec(INS_KIND_COLL, INS_FUNC_ALLGATHER, "AllGather", 1 << 20, 700), 12),
      stale(rec(INS_KIND_P2P, INS_FUNC_SEND, "Send", 8192, 8), 2),
  };
  for (size_t i = 0; i < sizeof in / sizeof *in; i++) CHECK(ins_prom_add(d, c, &in[i]) == 0);
  ins_prom_write_all();

  char path[512];
  snprintf(path, sizeof path, "%s/nccl_inspector_metrics_nodev-host-pid%ld-gpu1.prom", dir,
           (long)getpid());
  char *text = slurp(path);
  CHECK(text != NULL);
  if (text) {
    const char *dev = "{version=\"v4.0\",cluster=\"c1\",slurm_job_id=\"unknown\",node=\"host\","
                      "gpu=\"GPU1\"";
    char base[256], want[1024];
    snprintf(base, sizeof base, "%s,comm_name=\"s\",n_nodes=\"1\",nranks=\"2\",", dev);
    /* AllReduce on 2 ranks: busbw = bytes / ns: 52.4288 and 13.1072, geomean 26.2144;
     * mean time (20 + 80) / 2. Send: 8192 / 4096 = 2 GB/s, 4.096 us. */
    snprintf(want, sizeof want, "nccl_bus_bandwidth_gbs%scollective=\"AllReduce\","
             "message_size=\"1-2MB\",algo_proto=\"RING_SIMPLE\"} 26.214400\n", base);
    CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, "nccl_collective_exec_time_microseconds%scollective=\"AllReduce\","
             "message_size=\"1-2MB\",algo_proto=\"RING_SIMPLE\"} 50.000000\n", base);
    CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, "nccl_p2p_bus_bandwidth_gbs%sp2p_operation=\"Send\","
             "message_size=\"8-9KB\"} 2.000000\n", base);
    CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, "nccl_p2p_exec_time_microseconds%sp2p_operation=\"Send\","
             "message_size=\"8-9KB\"} 4.096000\n", base);
    CHECK(strstr(text, want) != NULL);
    CHECK(strstr(text, "AllGather") == NULL);
    static const struct { const char *name, *extra; unsigned long long v; } counters[] = {
        {"nccl_collectives_total", "", 2},
        {"nccl_collectives_dropped_total", "", 0},
        {"nccl_collectives_excluded_total", ",reason=\"stale_channels\"", 3},
        {"nccl_p2p_total", "", 1},
        {"nccl_p2p_dropped_total", "", 0},
        {"nccl_p2p_excluded_total", ",reason=\"stale_channels\"", 1},
    };
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++) {
      snprintf(want, sizeof want, "# TYPE %s counter\n%s%s%s} %llu\n", counters[i].name,
               counters[i].name, dev, counters[i].extra, counters[i].v);
      if (!strstr(text, want)) fprintf(stderr, "not in %s:\n%s", path, want);
      CHECK(strstr(text, want) != NULL);
    }
  }
  ins_prom_detach(d); /* the device's last context: the file goes */
  CHECK(access(path, F_OK) != 0);
  ins_comm_destroy(c);
  rmdir(dir);
}


/* Issue 40, item 5: 200 distinct series on one GPU in one window (4 communicators, 25
 * sizes, 2 algorithms: a job's many communicators): every one is written, with its own
 * mean, in two windows running (the second reusing the first's memory). Series i has
 * records of (i + 1) and 3 (i + 1) us: its mean is 2 (i + 1) us, a value no other series
 * has. A table that cannot find room for a series never returns: the test times out. */
static char *read_all(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  if (buf) n = fread(buf, 1, cap - 1, f), buf[n] = 0;
  fclose(f);
  return buf;
}

static void test_many_series(void) {
  static struct ins_config cfg;
  ins_config_load(&cfg);
  char dir[] = "/tmp/inspector-prom-many-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snprintf(cfg.dump_dir, sizeof cfg.dump_dir, "%s", dir);
  snprintf(cfg.hostname, sizeof cfg.hostname, "many");
  cfg.prom_dump = cfg.prom_dump_stats = true;
  ins_prom_configure(&cfg);
  struct ins_comm *c[4];
  struct ins_prom_dev *d[4];
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "comm%d", k);
    c[k] = ins_comm_create(&cfg, 100 + (uint64_t)k, name, 1, 2, 0);
    d[k] = ins_prom_attach(c[k]);
    CHECK(d[k] != NULL && d[k] == d[0]); /* one GPU */
  }
  char path[512];
  snprintf(path, sizeof path, "%s/nccl_inspector_metrics_nodev-many-pid%ld-gpu0.prom", dir,
           (long)getpid());
  static const char *const algo[2] = {"RING", "TREE"};
  for (int window = 0; window < 2; window++) {
    int i = 0;
    for (int k = 0; k < 4; k++)
      for (int j = 0; j < 25; j++)
        for (int a = 0; a < 2; a++, i++) {
          uint64_t e = 1000ull * (uint64_t)(i + 1 + 200 * window);
          struct ins_record r = rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, "AllReduce",
                                    (uint64_t)(j + 1) << 20, e);
          r.algo = algo[a];
          CHECK(ins_prom_add(d[k], c[k], &r) == 0);
          r.exec_ns = 3 * e;
          CHECK(ins_prom_add(d[k], c[k], &r) == 0);
        }
    ins_prom_write_all();
    char *text = read_all(path);
    CHECK(text != NULL);
    if (!text) break;
    static const char fam[] = "nccl_collective_exec_time_microseconds{";
    int lines = 0;
    static unsigned char seen[400];
    memset(seen, 0, sizeof seen);
    for (char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
      if (strncmp(l, fam, sizeof fam - 1)) continue;
      lines++;
      const char *v = strstr(l, "} ");
      double us = v ? strtod(v + 2, NULL) : 0;
      int s = (int)(us / 2 + 0.5) - 1; /* its series, from its mean */
      CHECK(s >= 200 * window && s < 200 * (window + 1) && us == 2.0 * (s + 1));
      if (s >= 0 && s < 400) seen[s]++;
    }
    CHECK_EQ_U(lines, 200);
    for (int s = 200 * window; s < 200 * (window + 1); s++) CHECK_EQ_U(seen[s], 1);
    free(text);
  }
  for (int k = 0; k < 4; k++) {
    ins_prom_detach(d[k]);
    ins_comm_destroy(c[k]);
  }
  CHECK(access(path, F_OK) != 0);
  rmdir(dir);
}

int main(void) {
  test_bucket();
  test_escape();
  test_ordinal();
  test_window();
  test_stale_excluded();
  test_many_series();
  return check_report("unit_prom");
}
