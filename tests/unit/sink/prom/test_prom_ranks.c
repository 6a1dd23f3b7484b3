/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_prom_ranks.c - NCCL_INSPECTOR_PROM_DUMP_RANKS (src/sink/prom/prom.c, prom_file.c):
 * each communicator context's counters of its collectives and of its P2P by (peer,
 * operation, size), as the alert rules read them (prometheus/inspector-rules.yml), driven
 * through the sink's interface as the dump thread drives it:
 *  - off (the default): no such family in the file;
 *  - on: the exact samples, whose values are computed here from the records fed: stale
 *    records (left out of the other samples) left out too; seconds exact to the ns;
 *  - a context with more (peer, operation, size) than INS_PROM_PEERS_MAX: that many series,
 *    the rest counted in nccl_p2p_peer_overflow_total;
 *  - counters are cumulative across windows (a second window adds to the first).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/names.h"
#include "sink/prom/prom.h"
#include "sink/prom/prom_file.h"
#include "sink/sink.h"

static char g_text[1 << 20];

static const char *slurp(const char *dir, int rank) {
  char path[512];
  snprintf(path, sizeof path, "%s/nccl_inspector_metrics_nodev-host-pid%ld-gpu%d.prom", dir,
           (long)getpid(), rank);
  FILE *f = fopen(path, "r");
  g_text[0] = 0;
  if (!f) return g_text;
  size_t n = fread(g_text, 1, sizeof g_text - 1, f);
  g_text[n] = 0;
  fclose(f);
  return g_text;
}

static int count_lines(const char *text, const char *prefix, const char *needle) {
  int n = 0;
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (!strncmp(l, prefix, strlen(prefix))) {
      const char *e = strchr(l, '\n');
      size_t len = e ? (size_t)(e - l) : strlen(l);
      char line[2048];
      snprintf(line, sizeof line, "%.*s", (int)len, l);
      n += strstr(line, needle) != NULL;
    }
  return n;
}

static struct ins_record rec(int kind, enum ins_func func, int peer, uint64_t bytes, uint64_t ns) {
  struct ins_record r = {.kind = (uint8_t)kind, .func = (uint8_t)func, .func_name = ins_func_name[func],
                         .peer = peer, .bytes = bytes, .exec_ns = ns, .algo = "RING", .proto = "SIMPLE"};
  return r;
}

static const struct ins_sink *S = &ins_prom_sink;

static void feed(struct ins_comm *c, void *st, struct ins_record r) {
  CHECK(S->record(NULL, c, st, &r) == 0);
}

#define DEV "version=\"v4.0\",cluster=\"c1\",slurm_job_id=\"99\",node=\"host\",gpu=\"GPU1\""
#define CTX DEV ",comm_name=\"w\",comm_id=\"0xab\",rank=\"1\""

static void setup(struct ins_config *cfg, char *dir, bool ranks) {
  setenv("NCCL_INSPECTOR_CLUSTER", "c1", 1);
  setenv("SLURM_JOB_ID", "99", 1);
  ins_config_load(cfg);
  CHECK(mkdtemp(dir) != NULL);
  snprintf(cfg->dump_dir, sizeof cfg->dump_dir, "%s", dir);
  snprintf(cfg->hostname, sizeof cfg->hostname, "host");
  cfg->prom_dump = true;
  cfg->prom_dump_ranks = ranks;
  cfg->hang_ns = 0; /* the counters alone name the context */
  S->start(cfg);
}

/* Off: nothing of the per-rank families. */
static void test_off(void) {
  static struct ins_config cfg;
  char dir[] = "/tmp/inspector-promranks-unit-XXXXXX";
  setup(&cfg, dir, false);
  struct ins_comm *c = ins_comm_create(&cfg, 0xab, "w", 1, 4, 1);
  void *st = NULL;
  CHECK(S->attach(c, &st) == 0);
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 1000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 1 << 20, 1000));
  S->end_window();
  const char *t = slurp(dir, 1);
  CHECK(strstr(t, "nccl_bus_bandwidth_gbs{") != NULL); /* the file was written */
  CHECK(strstr(t, "nccl_rank_") == NULL);
  CHECK(strstr(t, "nccl_p2p_peer_") == NULL);
  S->detach(c, st);
  ins_comm_destroy(c);
  CHECK(rmdir(dir) == 0); /* the last context's detach removed the file */
}

static void test_on(void) {
  static struct ins_config cfg;
  char dir[] = "/tmp/inspector-promranks-unit-XXXXXX";
  setup(&cfg, dir, true);
  struct ins_comm *c = ins_comm_create(&cfg, 0xab, "w", 1, 4, 1);
  struct ins_comm *o = ins_comm_create(&cfg, 0xcd, "many", 1, 400, 1); /* same GPU1 (1 % 400) */
  void *st = NULL, *so = NULL;
  CHECK(S->attach(c, &st) == 0 && S->attach(o, &so) == 0);

  /* collectives: 1000 + 2000 + 4000 ns; a stale one (timed from some of its channels) left out */
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 1000));
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLGATHER, -1, 4096, 2000));
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 64 << 20, 4000));
  struct ins_record stale = rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 999999);
  stale.stale_channels = 1;
  feed(c, st, stale);
  /* P2P: Send to 2 of 1 MiB twice, of 2 MiB once; Recv from 0 of 8 KiB */
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 1 << 20, 10000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, (1 << 20) + 5, 30000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 2 << 20, 1500000001));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_RECV, 0, 8192, 500));
  /* the other context: 300 peers, one Send each, 1 KiB */
  for (int p = 0; p < 300; p++) feed(o, so, rec(INS_KIND_P2P, INS_FUNC_SEND, p, 1024, 100));
  S->end_window();

  const char *t = slurp(dir, 1);
  CHECK(strstr(t, "# TYPE nccl_rank_collectives_total counter\n") != NULL);
  CHECK(strstr(t, "\nnccl_rank_collectives_total{" CTX "} 3\n") != NULL);
  CHECK(strstr(t, "\nnccl_rank_collective_seconds_total{" CTX "} 0.000007000\n") != NULL);
  /* the context without collectives has its zeros (its node, for the rules' joins) */
  CHECK(strstr(t, "\nnccl_rank_collectives_total{" DEV ",comm_name=\"many\",comm_id=\"0xcd\",rank=\"1\"} 0\n") != NULL);
#define SEND2(size) CTX ",peer=\"2\",p2p_operation=\"Send\",message_size=\"" size "\"}"
  CHECK(strstr(t, "\nnccl_p2p_peer_operations_total{" SEND2("1-2MB") " 2\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_bytes_total{" SEND2("1-2MB") " 2097157\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_seconds_total{" SEND2("1-2MB") " 0.000040000\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_operations_total{" SEND2("2-3MB") " 1\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_seconds_total{" SEND2("2-3MB") " 1.500000001\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_bytes_total{" CTX ",peer=\"0\",p2p_operation=\"Recv\",message_size=\"8-9KB\"} 8192\n") != NULL);
  CHECK_EQ_U(count_lines(t, "nccl_p2p_peer_operations_total{", "comm_id=\"0xab\""), 3);
  /* the bound: INS_PROM_PEERS_MAX series, the rest overflow */
  CHECK_EQ_U(count_lines(t, "nccl_p2p_peer_operations_total{", "comm_id=\"0xcd\""), INS_PROM_PEERS_MAX);
  CHECK_EQ_U(count_lines(t, "nccl_p2p_peer_bytes_total{", "comm_id=\"0xcd\""), INS_PROM_PEERS_MAX);
  CHECK(strstr(t, "\nnccl_p2p_peer_overflow_total{" DEV ",comm_name=\"many\",comm_id=\"0xcd\",rank=\"1\"} 44\n") != NULL);
  CHECK_EQ_U(count_lines(t, "nccl_p2p_peer_overflow_total{", "comm_id"), 1);
  CHECK(strstr(t, "nccl_inflight_oldest_seconds") == NULL); /* hang detection off */

  /* a second window adds to the first */
  feed(c, st, rec(INS_KIND_COLL, INS_FUNC_ALLREDUCE, -1, 1 << 20, 3000));
  feed(c, st, rec(INS_KIND_P2P, INS_FUNC_SEND, 2, 1 << 20, 1000000000));
  S->end_window();
  t = slurp(dir, 1);
  CHECK(strstr(t, "\nnccl_rank_collectives_total{" CTX "} 4\n") != NULL);
  CHECK(strstr(t, "\nnccl_rank_collective_seconds_total{" CTX "} 0.000010000\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_operations_total{" SEND2("1-2MB") " 3\n") != NULL);
  CHECK(strstr(t, "\nnccl_p2p_peer_seconds_total{" SEND2("1-2MB") " 1.000040000\n") != NULL);

  if (system("command -v promtool >/dev/null 2>&1") == 0) { /* exposition format, by Prometheus */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/*.prom | promtool check metrics 2>&1 | grep -v "
             "'_microseconds use base unit' | grep -q .", dir);
    CHECK(system(cmd) != 0); /* no finding */
  }
  S->detach(o, so);
  S->detach(c, st);
  ins_comm_destroy(o);
  ins_comm_destroy(c);
  CHECK(rmdir(dir) == 0);
}

int main(void) {
  test_off();
  test_on();
  return check_report("test_prom_ranks");
}
