/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_peers.c - the OTLP sink's per-rank and per-peer values (src/sink/otlp/otlp.c),
 * what the alert rules compare across ranks (prometheus/inspector-rules.yml: the Prometheus
 * sink's nccl_rank_* and nccl_p2p_peer_* counters are these, in OTLP's shape). The sink is
 * driven through its own table as the dump thread drives it, with communicators made by hand,
 * and an export taken as its exporter takes it (http/json bodies, read here by searching for
 * each data point's whole attribute list, as the encoder writes it):
 *  - per_peer  a P2P data point per (communicator, rank, operation, size and peer: nccl.peer,
 *              the peer's rank): nccl.operations, nccl.bytes and nccl.exec_time's count and
 *              sum, exact, computed here from the records fed; collectives carry no nccl.peer
 *              and their exec_time count and sum per rank are the late-rank signal (a stale
 *              record, timed from some of its channels, left out as the Prometheus sink does);
 *              values are cumulative: a second batch adds to the first;
 *  - bound     a context with 100 peers: its first 64 have a data point each, the other 36
 *              go to nccl.peer "other", so the operations still add up to 100.
 * Nothing is sent anywhere but a port on 127.0.0.1 that nothing listens on (closed_port.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "closed_port.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/names.h"
#include "core/record.h"
#include "io/buf.h"
#include "sink/otlp/otlp.h"

static const struct ins_sink *S = &ins_otlp_sink;

static void sink_start(void) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
  setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "50", 1);
  setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000", 1); /* the exporter waits: we collect */
  static struct ins_config cfg;
  memset(&cfg, 0, sizeof cfg);
  snprintf(cfg.hostname, sizeof cfg.hostname, "host");
  snprintf(cfg.job_id, sizeof cfg.job_id, "99");
  snprintf(cfg.cluster, sizeof cfg.cluster, "c1");
  S->start(&cfg);
}

/* A whole export (a fresh turn, every body), as one text. */
static char *export_text(void) {
  char *all = calloc(1, 1);
  size_t len = 0;
  bool more = true, fresh = true;
  while (more && all) {
    struct ins_otlp_body bodies[4];
    memset(bodies, 0, sizeof bodies);
    int n = ins_otlp_collect(NULL, bodies, 4, fresh, &more);
    fresh = false;
    for (int i = 0; i < n && all; i++) {
      char *grown = realloc(all, len + bodies[i].data.len + 2);
      if (!grown) free(all);
      all = grown;
      if (!all) break;
      memcpy(all + len, bodies[i].data.data, bodies[i].data.len);
      len += bodies[i].data.len;
      all[len++] = '\n';
      all[len] = '\0';
    }
    for (int i = 0; i < 4; i++) ins_buf_free(&bodies[i].data);
    if (n <= 0) break;
  }
  return all;
}

static int count(const char *t, const char *needle) {
  int n = 0;
  for (const char *p = t; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* The data point of metric `metric` whose attribute list is exactly `attrs` (the JSON of
 * the list, as the encoder writes it): its text up to the next point or metric, in out;
 * false if there is none, or more than one. */
static bool point(const char *t, const char *metric, const char *attrs, char *out, size_t cap) {
  char head[128], want[4096];
  snprintf(head, sizeof head, "{\"name\":\"%s\",", metric);
  snprintf(want, sizeof want, "{\"attributes\":[%s],", attrs);
  int found = 0;
  for (const char *m = t; (m = strstr(m, head)); m += strlen(head)) {
    const char *end = strstr(m + strlen(head), "{\"name\":\"");
    for (const char *p = m; (p = strstr(p, want)) && (!end || p < end); p += strlen(want)) {
      const char *q = strstr(p + strlen(want), "{\"attributes\":");
      if (!q || (end && end < q)) q = end ? end : p + strlen(p);
      snprintf(out, cap, "%.*s", (int)(q - p), p);
      found++;
    }
  }
  return found == 1;
}

/* An integer field ("asInt", "count": JSON strings) or a double ("sum") of a point; -1: none. */
static long long int_of(const char *pt, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":\"", key);
  const char *p = strstr(pt, k);
  return p ? atoll(p + strlen(k)) : -1;
}
static double sum_of(const char *pt) {
  const char *p = strstr(pt, "\"sum\":");
  return p ? strtod(p + 6, NULL) : -1;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

#define KV(k, v) "{\"key\":\"" k "\",\"value\":{\"stringValue\":\"" v "\"}}"
/* communicator 0xab "w", rank 1 of 4 on 2 nodes, on the GPU the sink names for it */
#define CTX_AB KV("nccl.comm.id", "0xab") "," KV("nccl.comm.name", "w") "," KV("nccl.comm.ranks", "4") "," \
  KV("nccl.comm.nodes", "2") "," KV("nccl.rank", "1")
static char g_gpu[256]; /* the gpu.uuid attribute, as the sink writes it (set by main) */

static void p2p_attrs(char *out, size_t cap, const char *ctx, const char *op, const char *size, const char *peer) {
  snprintf(out, cap, "%s," KV("nccl.operation", "%s") "," KV("nccl.operation.kind", "p2p") ","
           KV("nccl.message_size", "%s") ",%s," KV("nccl.peer", "%s"), ctx, op, size, g_gpu, peer);
}

/* Operations, bytes, exec_time count and sum of one P2P data point set. */
static void check_p2p(const char *t, const char *ctx, const char *op, const char *size, const char *peer,
                      long long n, long long bytes, double seconds) {
  char attrs[4096], pt[8192];
  p2p_attrs(attrs, sizeof attrs, ctx, op, size, peer);
  bool ok = point(t, "nccl.operations", attrs, pt, sizeof pt);
  CHECK(ok);
  if (ok) CHECK_EQ_U(int_of(pt, "asInt"), n);
  ok = point(t, "nccl.bytes", attrs, pt, sizeof pt);
  CHECK(ok);
  if (ok) CHECK_EQ_U(int_of(pt, "asInt"), bytes);
  ok = point(t, "nccl.exec_time", attrs, pt, sizeof pt);
  CHECK(ok);
  if (ok) {
    CHECK_EQ_U(int_of(pt, "count"), n);
    CHECK(near(sum_of(pt), seconds));
  }
  if (!ok) fprintf(stderr, "  no single point for %s %s %s peer %s\n", op, size, ctx, peer);
}

static struct ins_record rec(int kind, enum ins_func func, int peer, uint64_t bytes, uint64_t ns) {
  struct ins_record r = {.kind = (uint8_t)kind, .func = (uint8_t)func, .func_name = ins_func_name[func],
                         .peer = peer, .bytes = bytes, .exec_ns = ns, .algo = "RING", .proto = "SIMPLE",
                         .timing = INS_TIMING_KERNEL_GPU};
  return r;
}

static void feed(struct ins_comm *c, void *st, struct ins_record r) { CHECK(S->record(NULL, c, st, &r) == 0); }

static struct ins_comm *comm(uint64_t id, const char *name, int rank, int nranks, int nnodes) {
  struct ins_comm *c = calloc(1, sizeof *c);
  c->id = id, c->rank = rank, c->nranks = nranks, c->nnodes = nnodes;
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

static void test_per_peer(void) {
  struct ins_comm *c = comm(0xab, "w", 1, 4, 2);
  void *st = NULL;
  CHECK(S->attach(c, &st) == 0);
  /* collectives: AllReduce 1 MiB 1000 + 3000 ns, AllGather 4 KiB 2000 ns; a stale one left out */
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 1000));
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 3000));
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLGATHER, -1, 4096, 2000));
  struct ins_record stale = rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 999999);
  stale.stale_channels = 1;
  feed(c, st, stale);
  /* P2P: Send to 2 of 1 MiB twice (10 us, 30 us), of 2 MiB once (1.500000001 s); Send to 3
   * of 1 MiB (20 us): the same size, its own peer; Recv from 0 of 8 KiB (500 ns) */
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 1 << 20, 10000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, (1 << 20) + 5, 30000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 2 << 20, 1500000001));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 3, 1 << 20, 20000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_RECV, 0, 8192, 500));
  char *t = export_text();
  CHECK(t != NULL);
  if (!t) return;
  check_p2p(t, CTX_AB, "Send", "1-2MB", "2", 2, 2097157, 40e-6);
  check_p2p(t, CTX_AB, "Send", "2-3MB", "2", 1, 2 << 20, 1.500000001);
  check_p2p(t, CTX_AB, "Send", "1-2MB", "3", 1, 1 << 20, 20e-6);
  check_p2p(t, CTX_AB, "Recv", "8-9KB", "0", 1, 8192, 500e-9);
  /* 4 P2P series, each in the 4 metrics (every record has a time): nccl.peer 16 times */
  CHECK_EQ_U(count(t, "\"key\":\"nccl.peer\""), 16);
  /* the collectives: no peer; the rank's count and seconds from exec_time */
  char attrs[4096], pt[8192];
  snprintf(attrs, sizeof attrs, CTX_AB "," KV("nccl.operation", "AllReduce") "," KV("nccl.operation.kind", "collective")
           "," KV("nccl.algo_proto", "RING_SIMPLE") "," KV("nccl.message_size", "1-2MB") ",%s", g_gpu);
  CHECK(point(t, "nccl.exec_time", attrs, pt, sizeof pt));
  CHECK_EQ_U(int_of(pt, "count"), 2);
  CHECK(near(sum_of(pt), 4000e-9));
  CHECK(point(t, "nccl.operations", attrs, pt, sizeof pt));
  CHECK_EQ_U(int_of(pt, "asInt"), 2);
  snprintf(attrs, sizeof attrs, CTX_AB "," KV("nccl.operation", "AllGather") "," KV("nccl.operation.kind", "collective")
           "," KV("nccl.algo_proto", "RING_SIMPLE") "," KV("nccl.message_size", "4-5KB") ",%s", g_gpu);
  CHECK(point(t, "nccl.exec_time", attrs, pt, sizeof pt));
  CHECK_EQ_U(int_of(pt, "count"), 1);
  CHECK(near(sum_of(pt), 2000e-9));
  free(t);

  /* a second batch adds to the first */
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 1 << 20, 1000000000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_RECV, 0, 8192, 1500));
  t = export_text();
  CHECK(t != NULL);
  if (!t) return;
  check_p2p(t, CTX_AB, "Send", "1-2MB", "2", 3, 2097157 + (1 << 20), 1.00004);
  check_p2p(t, CTX_AB, "Recv", "8-9KB", "0", 2, 16384, 2000e-9);
  check_p2p(t, CTX_AB, "Send", "1-2MB", "3", 1, 1 << 20, 20e-6);
  free(t);
  S->detach(c, st);
  free(c);
}

static void test_bound(void) {
  struct ins_comm *c = comm(0xcd, "many", 1, 400, 50);
  void *st = NULL;
  CHECK(S->attach(c, &st) == 0);
  for (int p = 0; p < 100; p++) feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, p, 1024, 100));
  char *t = export_text();
  CHECK(t != NULL);
  if (!t) return;
#define CTX_CD KV("nccl.comm.id", "0xcd") "," KV("nccl.comm.name", "many") "," KV("nccl.comm.ranks", "400") "," \
  KV("nccl.comm.nodes", "50") "," KV("nccl.rank", "1")
  char peer[16], attrs[4096], pt[8192];
  int named = 0;
  for (int p = 0; p < 100; p++) {
    snprintf(peer, sizeof peer, "%d", p);
    p2p_attrs(attrs, sizeof attrs, CTX_CD, "Send", "1-2KB", peer);
    bool has = point(t, "nccl.operations", attrs, pt, sizeof pt);
    named += has;
    CHECK(has == (p < 64)); /* the first 64 peers seen, in order */
    if (has) CHECK_EQ_U(int_of(pt, "asInt"), 1);
  }
  CHECK_EQ_U(named, 64);
  check_p2p(t, CTX_CD, "Send", "1-2KB", "other", 36, 36 * 1024, 3600e-9);
  free(t);
  S->detach(c, st);
  free(c);
}

int main(void) {
  sink_start();
  /* the gpu.uuid the sink gives a communicator of this process: read from a first export */
  struct ins_comm *c = comm(0x77, "probe", 1, 4, 2);
  void *st = NULL;
  CHECK(S->attach(c, &st) == 0);
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 4096, 1000));
  char *t = export_text();
  const char *g = t ? strstr(t, "{\"key\":\"gpu.uuid\"") : NULL;
  const char *e = g ? strstr(g, "}}") : NULL;
  CHECK(e != NULL);
  if (e) snprintf(g_gpu, sizeof g_gpu, "%.*s", (int)(e + 2 - g), g);
  free(t);
  S->detach(c, st);
  free(c);
  test_per_peer();
  test_bound();
  S->shutdown();
  return check_report("test_otlp_peers");
}
