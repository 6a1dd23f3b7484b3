/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dump_stats.c - the dump_stats line of one communicator over several
 * dumps (src/sink/dump.c drain, src/sink/json/json.c): each *_since_last_dump is
 * what this dump added, not the running total; a dump with nothing new
 * writes no stats line.
 *
 * Deterministic: no dump thread. The test fills the communicator's rings
 * (8 cells) past capacity by completing ops through the tracker, so that
 * exactly n - 8 records of a round of n are dropped, then drains the rings
 * the way the dump thread does (ins_dump_comm_drain, called once per round on a
 * communicator that lives on) and, for the last round, the way process exit
 * does (ins_dump_shutdown). The expected counts are stated from the rounds
 * alone (8 kept of n, n - 8 dropped), then read back from the log file.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/op.h"
#include "sink/dump.h"

#define RING 8
#define MAX_STATS 16

/* Ops completed per round ({collectives, P2P}); 0/0 is a dump with nothing new. */
static const int g_rounds[][2] = {{11, 9}, {8, 12}, {0, 0}, {13, 3}, {2, 0}};
#define NROUNDS (int)(sizeof g_rounds / sizeof *g_rounds)

static struct ins_config g_cfg; /* ins_dump_start keeps a pointer to it */
static char g_tmp[] = "/tmp/inspector-unit-stats-XXXXXX";
static char g_dump[sizeof g_tmp + 16];

/* One op through the tracker as NCCL reports it: start, stop, one kernel channel. */
static void complete_op(struct ins_comm *c, int kind, uint64_t sn) {
  void *op = kind == INS_KIND_COLL
                 ? ins_op_start(c, INS_KIND_COLL, "AllReduce", "ncclFloat32", 1 << 20, sn, -1, 1,
                                "RING", "SIMPLE")
                 : ins_op_start(c, INS_KIND_P2P, "Send", "ncclFloat32", 1 << 20, sn, 1, 1, NULL,
                                NULL);
  CHECK(op != NULL);
  ins_op_event_stop(op);
  /* one op after the other on the GPU, as NCCL's are (core/judge.h) */
  static uint64_t gpu_ns = 1000000;
  gpu_ns += 10000;
  void *k = ins_op_kernel_start(c, op, kind == INS_KIND_COLL ? 0 : 16, gpu_ns);
  ins_op_kernel_record_stop(k, gpu_ns + 1000);
  ins_op_event_stop(k);
}

struct stats_line {
  uint64_t v[2][4]; /* [coll, p2p][records_total, records_since, dropped_total, dropped_since] */
};

static int field(const char *line, const char *name, uint64_t *out) {
  char key[96];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *p = strstr(line, key);
  if (!p) return -1;
  *out = strtoull(p + strlen(key), NULL, 10);
  return 0;
}

/* The stats lines and the number of record lines of every *.log in g_dump. */
static int read_log(struct stats_line *st, int *nrecords, const char *id_hex) {
  static const char *const kind[2] = {"coll", "p2p"};
  static const char *const name[4] = {"records_total", "records_since_last_dump", "dropped_total",
                                      "dropped_since_last_dump"};
  int n = 0, logs = 0;
  *nrecords = 0;
  DIR *d = opendir(g_dump);
  CHECK(d != NULL);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".log")) continue;
    logs++;
    char path[sizeof g_dump + 300], line[8192];
    snprintf(path, sizeof path, "%s/%s", g_dump, e->d_name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f)) {
      if (strstr(line, "\"coll_perf\"") || strstr(line, "\"p2p_perf\"")) (*nrecords)++;
      if (!strstr(line, "\"dump_stats\"")) continue;
      CHECK(strstr(line, id_hex) != NULL); /* our communicator's */
      if (n == MAX_STATS) continue;
      for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) {
          char full[64];
          snprintf(full, sizeof full, "%s_%s", kind[k], name[i]);
          int rc = field(line, full, &st[n].v[k][i]);
          if (rc) fprintf(stderr, "stats line without \"%s\": %s", full, line);
          CHECK(rc == 0);
        }
      n++;
    }
    if (f) fclose(f);
  }
  closedir(d);
  CHECK_EQ_U(logs, 1);
  return n;
}

/* Remove the log and the directories the test made. */
static void cleanup(void) {
  DIR *d = opendir(g_dump);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char path[sizeof g_dump + 300];
      snprintf(path, sizeof path, "%s/%s", g_dump, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(g_dump);
  rmdir(g_tmp);
}

/* Drops spread over several dumps of one communicator: each line's
 * since_last_dump counts are this round's, and the totals add them up. */
static void test_since_last_dump_counts_each_dump(void) {
  g_cfg.enable = g_cfg.enable_p2p = g_cfg.require_kernel_timing = true;
  g_cfg.dump_thread_enable = false; /* only the drains below move records */
  g_cfg.json_dump = true;           /* the JSON sink: what this test reads */
  g_cfg.interval_us = -1;
  g_cfg.min_size_bytes = 8192;
  g_cfg.coll_ring_size = g_cfg.p2p_ring_size = RING;
  snprintf(g_cfg.dump_dir, sizeof g_cfg.dump_dir, "%s", g_dump);
  snprintf(g_cfg.hostname, sizeof g_cfg.hostname, "unit");
  ins_dump_start(&g_cfg);

  struct ins_comm *c = ins_comm_create(&g_cfg, 0x5ea11ce, "stats", 1, 2, 0);
  CHECK(c != NULL);
  if (!c) return;
  CHECK(ins_dump_attach(c) == 0); /* what a communicator's init does (abi/lifecycle.c) */
  ins_registry_add(c);
  uint64_t sn[2] = {0, 0};
  for (int r = 0; r < NROUNDS; r++) {
    for (int kind = 0; kind < 2; kind++)
      for (int i = 0; i < g_rounds[r][kind]; i++) complete_op(c, kind, sn[kind]++);
    if (r < NROUNDS - 1)
      ins_dump_comm_drain(c); /* a drain of this communicator; it lives on */
    else
      ins_dump_shutdown(); /* process exit: drains every registered communicator */
  }
  ins_registry_remove(c);
  ins_dump_comm_final(c); /* a finalize after exit: nothing left to write; detaches it */
  ins_comm_destroy(c);

  /* The expectation, from the rounds alone: a ring keeps RING of n, drops the rest. */
  struct stats_line want[NROUNDS];
  int nwant = 0, with_drops = 0, records = 0;
  uint64_t tot[2][2] = {{0, 0}, {0, 0}}; /* [kind][kept, dropped] */
  for (int r = 0; r < NROUNDS; r++) {
    uint64_t kept[2], dropped[2];
    for (int kind = 0; kind < 2; kind++) {
      int n = g_rounds[r][kind];
      kept[kind] = (uint64_t)(n < RING ? n : RING);
      dropped[kind] = (uint64_t)(n > RING ? n - RING : 0);
      tot[kind][0] += kept[kind];
      tot[kind][1] += dropped[kind];
      records += (int)kept[kind];
    }
    if (!kept[0] && !kept[1] && !dropped[0] && !dropped[1]) continue; /* no line */
    with_drops += dropped[0] > 0;
    for (int kind = 0; kind < 2; kind++) {
      uint64_t *v = want[nwant].v[kind];
      v[0] = tot[kind][0], v[1] = kept[kind], v[2] = tot[kind][1], v[3] = dropped[kind];
    }
    nwant++;
  }
  /* The scenario must be able to tell a running total from a difference. */
  if (with_drops < 2) fprintf(stderr, "scenario broken: fewer than 2 dumps with drops\n");
  CHECK(with_drops >= 2);

  struct stats_line got[MAX_STATS];
  int nrecords;
  int n = read_log(got, &nrecords, "\"id\":\"0x5ea11ce\"");
  CHECK_EQ_U(n, nwant);
  CHECK_EQ_U(nrecords, records);
  int got_with_drops = 0;
  for (int i = 0; i < n && i < nwant; i++) {
    got_with_drops += got[i].v[0][3] > 0;
    for (int kind = 0; kind < 2; kind++) {
      const uint64_t *g = got[i].v[kind], *w = want[i].v[kind];
      const uint64_t *prev = i ? got[i - 1].v[kind] : NULL;
      for (int f = 0; f < 4; f++)
        if (g[f] != w[f])
          fprintf(stderr, "stats line %d, %s field %d: %" PRIu64 ", expected %" PRIu64 "\n", i,
                  kind ? "p2p" : "coll", f, g[f], w[f]);
      CHECK_EQ_U(g[0], w[0]); /* records_total */
      CHECK_EQ_U(g[1], w[1]); /* records_since_last_dump */
      CHECK_EQ_U(g[2], w[2]); /* dropped_total */
      CHECK_EQ_U(g[3], w[3]); /* dropped_since_last_dump */
      /* and in the line's own terms: since = this total - the previous line's total */
      CHECK_EQ_U(g[1], g[0] - (prev ? prev[0] : 0));
      CHECK_EQ_U(g[3], g[2] - (prev ? prev[2] : 0));
    }
  }
  CHECK(got_with_drops >= 2);
}

int main(void) {
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(g_dump, sizeof g_dump, "%s/dump", g_tmp);
  test_since_last_dump_counts_each_dump();
  cleanup();
  return check_report("test_dump_stats");
}
