/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - inspector-replay: drives an NCCL/RCCL profiler plugin through
 * recorded traces or synthetic traffic, with no GPU (docs/CONTRACTS.md
 * sections 1 and 3).
 *
 * Owns: the two modes' top-level flow: load the plugin, pick the ABI
 * version, load or generate the trace, replay it (in this process or in
 * --procs children), print one summary line per trace, map failures to the
 * exit status (0 ok, 1 runtime error, 2 usage error from cli.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hostname.h"
#include "log.h"
#include "plugin.h"
#include "procs.h"
#include "replay.h"
#include "schedule.h"
#include "stuck.h"
#include "synth.h"
#include "trace_load.h"

struct job {
  const struct rp_cli *o;
  const char *plugin_path;
  struct rp_plugin plugin;
  bool plugin_open;
};

static int open_plugin(struct job *j) {
  if (j->plugin_open) return 0;
  if (rp_plugin_open(j->plugin_path, &j->plugin)) return -1;
  j->plugin_open = true;
  return 0;
}

static void summary(const struct job *j, const char *label, const struct rp_abi *abi, const struct rp_counts *c,
                    uint64_t ns) {
  if (j->o->quiet) return;
  char failed[48] = "";
  if (c->init_failed) snprintf(failed, sizeof failed, " (%" PRIu64 " failed)", c->init_failed);
  uint64_t calls = c->init + c->start + c->stop + c->record + c->finalize;
  fprintf(stderr,
          "inspector-replay: %s: ncclProfiler_v%d \"%s\"%s, %" PRIu64 " lines x%d, init %" PRIu64 "%s, start %" PRIu64
          ", stop %" PRIu64 ", record %" PRIu64 ", finalize %" PRIu64 ", skipped %" PRIu64
          ", replay %.3f ms (%.1f ns/callback)\n",
          label, abi->ver, abi->plugin_name ? abi->plugin_name : "", j->o->threads ? " threads" : "",
          c->lines / (uint64_t)j->o->repeat, j->o->repeat, c->init, failed, c->start, c->stop, c->record, c->finalize, c->skipped, (double)ns / 1e6,
          calls ? (double)ns / (double)calls : 0.0);
}

/* Replays an in-memory trace through the chosen ABI: 0 or 1. */
static int replay_trace(struct job *j, struct rp_trace *t, int ver) {
  struct rp_abi abi;
  if (rp_plugin_bind(&j->plugin, ver, &abi)) return 1;
  if (j->o->threads) rp_schedule_build(t);
  struct rp_counts c = {0};
  uint64_t ns = 0;
  rp_replay(t, &abi, j->o->threads, j->o->repeat, &c, &ns);
  summary(j, t->path, &abi, &c, ns);
  return 0;
}

static int run_trace_file(struct job *j, const char *path) {
  if (open_plugin(j)) return 1;
  struct rp_trace t;
  if (rp_trace_load(path, &t)) return 1;
  int ver = j->o->abi;
  if (ver == RP_ABI_TRACE) {
    ver = t.ver;
    if (ver < 4 || ver > 6) {
      fprintf(stderr, "inspector-replay: %s: --abi trace: no init line with ver 4, 5 or 6\n", path);
      rp_trace_free(&t);
      return 1;
    }
  } else if (ver == RP_ABI_NEWEST) {
    ver = rp_plugin_newest(&j->plugin);
  }
  if ((j->o->pace_recorded || j->o->recorded_clock) && t.t_saturated) {
    fprintf(stderr, "inspector-replay: %s: %s: the trace spans more than %u s\n", path,
            j->o->pace_recorded ? "--pace-recorded" : "--recorded-clock",
            (unsigned)(UINT32_MAX / 1000000u));
    rp_trace_free(&t);
    return 1;
  }
  int rc = replay_trace(j, &t, ver);
  rp_trace_free(&t);
  return rc;
}

static int trace_child(void *arg, int i) {
  struct job *j = arg;
  return run_trace_file(j, j->o->traces[i]);
}

static int run_traces(struct job *j) {
  if (j->o->procs) return rp_run_procs(j->o->ntraces, j->o->max_procs, trace_child, j);
  for (int i = 0; i < j->o->ntraces; i++)
    if (run_trace_file(j, j->o->traces[i])) return 1;
  return 0;
}

/* One process's part of the synthetic stream: the engine it is replayed by, and its ranks. */
struct feed {
  struct rp_engine *eng;
  const struct rp_cli *o;
  int r0, r1;
  bool failed; /* a ready file could not be written */
};

/* Replays one chunk of the synthetic stream. */
static void feed_chunk(void *arg, struct rp_trace *chunk) {
  struct feed *f = arg;
  if (rp_engine_threads(f->eng)) rp_schedule_build(chunk);
  rp_engine_run(f->eng, chunk);
}

/* The stuck point (--hang-rank, or a quiet job's hold): every line before the finalizes
   delivered; the ready files, then the hold. */
static void feed_stuck(void *arg) {
  struct feed *f = arg;
  if (rp_stuck_hold(f->o->hang_ready_dir, f->r0, f->r1, f->o->hang_hold_s)) f->failed = true;
}

/* Drives rank `rank` (-1: all ranks) of the synthetic job. */
static int run_synthetic_ranks(struct job *j, int rank) {
  if (open_plugin(j)) return 1;
  int ver = j->o->abi == RP_ABI_NEWEST ? rp_plugin_newest(&j->plugin) : j->o->abi;
  struct rp_abi abi;
  if (rp_plugin_bind(&j->plugin, ver, &abi)) return 1;
  struct feed f = {.eng = rp_engine_new(&abi, j->o->threads), .o = j->o,
                   .r0 = rank >= 0 ? rank : 0, .r1 = rank >= 0 ? rank + 1 : j->o->syn.ranks};
  for (int rep = 0; rep < j->o->repeat; rep++) {
    rp_engine_restart(f.eng);
    syn_stream(&j->o->syn, rank, feed_chunk, j->o->hold ? feed_stuck : NULL, &f);
  }
  struct rp_counts c = {0};
  uint64_t ns = 0;
  rp_engine_free(f.eng, &c, &ns);
  char label[64];
  if (rank >= 0) snprintf(label, sizeof label, "synthetic rank %d", rank);
  else snprintf(label, sizeof label, "synthetic");
  summary(j, label, &abi, &c, ns);
  return f.failed ? 1 : 0;
}

/* A --procs child: rank `rank` alone, as a process of its node (hostname.h) when nodes have names. */
static int synth_child(void *arg, int rank) {
  struct job *j = arg;
  const struct syn_params *p = &j->o->syn;
  if (p->node_hosts) { /* before the plugin is loaded: it reads the host name once */
    char name[32];
    syn_node_name(p, syn_node_of(p, rank), name, sizeof name);
    rp_hostname_set(name);
  }
  return run_synthetic_ranks(j, rank);
}

static int write_truth(const char *path, const struct syn_params *p) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  int bad = syn_write_truth(p, f);
  if (fclose(f) || bad) {
    fprintf(stderr, "inspector-replay: cannot write %s\n", path);
    return 1;
  }
  return 0;
}

static int run_synthetic(struct job *j, struct syn_params *p) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  p->base_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
  static char real_host[256];
  rp_real_hostname(real_host, sizeof real_host);
  p->host = real_host;
  p->node_hosts = j->o->procs && p->nodes > 1;
  if (j->o->procs) syn_plan(p); /* every child walks the whole job: compute the op times once */
  int rc = 1;
  if (j->o->truth && write_truth(j->o->truth, p)) goto out;
  if (j->o->hang_ready_dir && rp_stuck_check_dir(j->o->hang_ready_dir)) goto out;
  /* a held job's processes are all alive at once, unless --max-procs said otherwise (cli.c) */
  int max_procs = j->o->hold && !j->o->max_procs ? p->ranks : j->o->max_procs;
  if (j->o->procs) rc = rp_run_procs(p->ranks, max_procs, synth_child, j);
  else rc = run_synthetic_ranks(j, -1);
out:
  syn_plan_free(p);
  return rc;
}

int main(int argc, char **argv) {
  struct rp_cli o;
  rp_cli_parse(argc, argv, &o);
  rp_log_set_quiet(o.quiet);
  rp_log_read_env();
  rp_log_set_logger_dies(o.logger_dies);
  rp_set_pace_recorded(o.pace_recorded);
  if (o.synthetic && o.hold) rp_stuck_prepare(); /* before any thread: stuck.h */
  int rc = 1;
  char *path = NULL;
  for (int i = 0; i < o.npreload; i++) /* before the plugin, so before any --procs fork */
    if (rp_preload(o.preload[i])) goto out;
  if (o.mask_log && rp_set_mask_log(o.mask_log) != 0) {
    perror(o.mask_log);
    goto out;
  }
  path = o.plugin ? strdup(o.plugin) : rp_plugin_default_path();
  if (!path) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    goto out;
  }
  struct job j = {.o = &o, .plugin_path = path};
  rc = o.synthetic ? run_synthetic(&j, &o.syn) : run_traces(&j);
  if (rp_close_mask_log() != 0) {
    fprintf(stderr, "inspector-replay: cannot write %s\n", o.mask_log);
    rc = 1;
  }
out:
  free(path);
  rp_cli_free(&o);
  return rc;
}
