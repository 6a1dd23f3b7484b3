/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_file.c - writing one device's .prom file (see prom_file.h). No descriptor
 * is kept between windows: a file or dump directory deleted while the job runs
 * is made again (io/files.h) at the next window's write, and a window that
 * cannot be written is said once.
 */
#include "sink/prom/prom_file.h"

#include "core/names.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/record.h"
#include "core/sampler.h"
#include "io/files.h"
#include "sink/sink.h"

/* One warning per process for every write problem: a notice (core/log.h), whose stderr line
 * is the one the dump layer's check or the JSON log may have written already (sink.h). */
static atomic_int g_warned;

void ins_prom_file_path(char *out, size_t cap, const char *dir, const char *uuid) {
  snprintf(out, cap, "%s/nccl_inspector_metrics_%s.prom", dir, uuid);
}

static void family(FILE *f, const struct ins_prom_file *d, const char *name, const char *help,
                   int kind, bool bw) {
  fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
  for (size_t i = 0; i < d->table->ns; i++) {
    const struct ins_prom_series *s = &d->table->s[i];
    if (s->kind != kind || !s->n) continue;
    double v = bw ? (s->nbw ? exp(s->sum_log_bw / (double)s->nbw) : 0.0) : s->sum_us / (double)s->n;
    fprintf(f, "%s{%s,%s} %.6f\n", name, d->labels, s->labels, v);
  }
}

/* The bounds' families (core/judge.h, "Bounds"): written only when the window has some, so
 * that a file without them is as before. */
static void bound_families(FILE *f, const struct ins_prom_file *d) {
  static const char *const name[2] = {"nccl_collective_bound_time_microseconds",
                                      "nccl_p2p_bound_time_microseconds"};
  for (int kind = 0; kind < 2; kind++) {
    bool any = false;
    for (size_t i = 0; i < d->table->ns && !any; i++)
      any = d->table->s[i].kind == INS_PROM_BOUND + kind && d->table->s[i].n;
    if (!any) continue;
    family(f, d, name[kind], kind == 0 ?
           "Collectives whose timestamps could not be verified: the time between the operations "
           "before and after them on the stream, which they ran within (an upper bound), in "
           "microseconds: mean over the dump window." :
           "Point-to-point operations whose timestamps could not be verified: the time between "
           "the operations before and after them on the stream, which they ran within (an upper "
           "bound), in microseconds: mean over the dump window.", INS_PROM_BOUND + kind, false);
  }
}

/* A counter of the device; `extra` labels after the device's (",reason=\"...\"" or ""). */
static void counter(FILE *f, const struct ins_prom_file *d, const char *name, const char *help,
                    const char *extra, uint64_t v) {
  fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s{%s%s} %llu\n", name, help, name, name, d->labels,
          extra, (unsigned long long)v);
}

/* Ops NCCL reported that left no record, by kind and reason (every reason, zeros too),
 * and collectives it never reported, by function (those seen). */
static void untimed_counters(FILE *f, const struct ins_prom_file *d) {
  static const char *const name[2] = {"nccl_collectives_untimed_total", "nccl_p2p_untimed_total"};
  static const char *const what[2] = {"Collectives", "Point-to-point operations"};
  for (int k = 0; k < 2; k++) {
    fprintf(f, "# HELP %s %s NCCL reported on this GPU that left no record, by reason "
            "(unverified: their timestamps may be a later op's; handed_over: every channel had an "
            "earlier op's; no_gpu_timer; lost_events; incomplete: in flight at teardown).\n# TYPE %s counter\n", name[k], what[k],
            name[k]);
    for (int r = 0; r < INS_UNTIMED_REASONS; r++)
      fprintf(f, "%s{%s,reason=\"%s\"} %llu\n", name[k], d->labels, ins_untimed_name[r],
              (unsigned long long)d->untimed[k][r]);
  }
  bool any = false;
  for (int fn = 0; fn < INS_FUNC_COUNT; fn++) any |= d->unreported[fn] != 0;
  if (!any) return;
  static const char *const un = "nccl_collectives_unreported_total";
  fprintf(f, "# HELP %s Collectives called on this GPU that NCCL never reported, so never timed "
          "(NCCL 2.28+: a Broadcast on its AllGatherV path).\n# TYPE %s counter\n", un, un);
  for (int fn = 0; fn < INS_FUNC_COUNT; fn++)
    if (d->unreported[fn])
      fprintf(f, "%s{%s,coll=\"%s\"} %llu\n", un, d->labels, ins_func_name[fn],
              (unsigned long long)d->unreported[fn]);
}

/* The share of the job that was timed, with the sampling configuration as labels. */
static void sampling_gauge(FILE *f, const struct ins_prom_file *d) {
  struct ins_sample_stats s;
  ins_sampler_stats(&s);
  static const char *const name = "nccl_sampled_ratio";
  fprintf(f, "# HELP %s Share of the job whose ops were timed: of wall time (time windows) or of "
          "groups (group count); 1 when every op is timed. Means and bandwidths cover timed ops only.\n"
          "# TYPE %s gauge\n%s{%s,sampling_mode=", name, name, name, d->labels);
  if (s.mode == INS_SAMPLE_TIME)
    fprintf(f, "\"time\",sampling_window_ms=\"%lld\",sampling_period_ms=\"%lld\"", s.window_ms,
            s.period_ms);
  else if (s.mode == INS_SAMPLE_GROUPS)
    fprintf(f, "\"groups\",sampling_every=\"%lld\",sampling_burst=\"%lld\"", s.every, s.burst);
  else
    fprintf(f, "\"all\"");
  fprintf(f, "} %.6f\n", s.covered);
}

/* Hang detection's gauges (sink/hang.h), every communicator context of the device's. */
static void hang_gauges(FILE *f, const struct ins_prom_file *d) {
  static const char *const age = "nccl_inflight_oldest_seconds", *const sn = "nccl_last_completed_sn";
  fprintf(f, "# HELP %s Age in seconds of the oldest operation in flight on this communicator and "
          "rank, as the plugin's hang checks measured it (0: none in flight; an operation the GPU "
          "is shown to be past is not counted).\n# TYPE %s gauge\n", age, age);
  for (size_t i = 0; i < d->ngauges; i++)
    fprintf(f, "%s{%s,%s} %.6f\n", age, d->labels, d->gauges[i].labels, d->gauges[i].oldest_s);
  fprintf(f, "# HELP %s Sequence number of the newest completed operation on this communicator and "
          "rank, by function (coll: a collective, or Send/Recv).\n# TYPE %s gauge\n", sn, sn);
  for (size_t i = 0; i < d->ngauges; i++)
    for (int fn = 0; fn < INS_FUNC_COUNT; fn++)
      if (d->gauges[i].have & 1u << fn)
        fprintf(f, "%s{%s,%s,coll=\"%s\"} %llu\n", sn, d->labels, d->gauges[i].labels,
                ins_func_name[fn], (unsigned long long)d->gauges[i].last_sn[fn]);
}

/* ns as seconds, exactly (no rounding through a double). */
static void seconds(FILE *f, uint64_t ns) {
  fprintf(f, "%llu.%09llu\n", (unsigned long long)(ns / 1000000000u),
          (unsigned long long)(ns % 1000000000u));
}

/* NCCL_INSPECTOR_PROM_DUMP_RANKS: every context's counters (zeros too: a rank's series names
 * its node for the rules' joins), its P2P per peer, function and size. */
static void rank_counters(FILE *f, const struct ins_prom_file *d) {
  static const char *const n = "nccl_rank_collectives_total", *const s = "nccl_rank_collective_seconds_total";
  fprintf(f, "# HELP %s Collective records aggregated on this communicator and rank.\n# TYPE %s counter\n",
          n, n);
  for (size_t i = 0; i < d->ngauges; i++)
    fprintf(f, "%s{%s,%s} %llu\n", n, d->labels, d->gauges[i].labels,
            (unsigned long long)d->gauges[i].coll_n);
  fprintf(f, "# HELP %s Execution time in seconds of those records: a late rank's is the shortest "
          "of its communicator (the others wait for it).\n# TYPE %s counter\n", s, s);
  for (size_t i = 0; i < d->ngauges; i++) {
    fprintf(f, "%s{%s,%s} ", s, d->labels, d->gauges[i].labels);
    seconds(f, d->gauges[i].coll_ns);
  }
  static const char *const fam[3] = {"nccl_p2p_peer_operations_total", "nccl_p2p_peer_bytes_total",
                                     "nccl_p2p_peer_seconds_total"};
  static const char *const help[3] = {"Point-to-point records aggregated on this rank, by peer rank.",
                                      "Bytes of those records.", "Execution time in seconds of those records."};
  for (int k = 0; k < 3; k++) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", fam[k], help[k], fam[k]);
    for (size_t i = 0; i < d->ngauges; i++)
      for (size_t j = 0; j < d->gauges[i].npeers; j++) {
        const struct ins_prom_peer *p = &d->gauges[i].peers[j];
        fprintf(f, "%s{%s,%s,peer=\"%d\",p2p_operation=\"%s\",message_size=\"%s\"} ", fam[k], d->labels,
                d->gauges[i].labels, p->peer, ins_func_name[p->func], p->size);
        if (k == 2)
          seconds(f, p->ns);
        else
          fprintf(f, "%llu\n", (unsigned long long)(k ? p->bytes : p->n));
      }
  }
  bool over = false;
  for (size_t i = 0; i < d->ngauges; i++) over |= d->gauges[i].peer_overflow != 0;
  if (!over) return;
  static const char *const o = "nccl_p2p_peer_overflow_total";
  fprintf(f, "# HELP %s Point-to-point records of this rank left out of the per-peer counters: "
          "more than %d (peer, operation, size) of them.\n# TYPE %s counter\n", o, INS_PROM_PEERS_MAX, o);
  for (size_t i = 0; i < d->ngauges; i++)
    if (d->gauges[i].peer_overflow)
      fprintf(f, "%s{%s,%s} %llu\n", o, d->labels, d->gauges[i].labels,
              (unsigned long long)d->gauges[i].peer_overflow);
}

int ins_prom_file_write(struct ins_files_dir *dir, const struct ins_prom_file *d, char *path,
                        size_t cap) {
  char tmp[NAME_MAX + 1], name[NAME_MAX + 1], prefix[256];
  ins_prom_file_path(path, cap, dir->path, d->uuid);
  snprintf(name, sizeof name, "nccl_inspector_metrics_%s.prom", d->uuid);
  /* A new file under a random name (io/files.h), renamed over the .prom file when
   * complete: the node exporter never reads half a file, and a link planted at either
   * name is never written through. Not *.prom: the textfile collector ignores it. Both
   * names in the directory's descriptor: a directory made again is held to its first
   * making, a link planted in its place (or a parent's) refused. */
  snprintf(prefix, sizeof prefix, ".nccl_inspector_metrics_%s.prom.tmp", d->uuid);
  FILE *f = NULL;
  int fd = -1, dfd = ins_files_dir_open(dir, true);
  if (dfd < 0) {
    char why[INS_FILES_WHY_MAX];
    ins_notice(&g_warned, &ins_sink_dir_said, "cannot create dump directory '%s': %s; Prometheus "
               "metrics are not written (set NCCL_INSPECTOR_DUMP_DIR to a writable directory)",
               dir->path, ins_files_why(dir, errno, why, sizeof why));
    return -1;
  }
  if ((fd = ins_files_create_temp(dfd, prefix, tmp, sizeof tmp)) < 0 || !(f = fdopen(fd, "w"))) {
    ins_notice(&g_warned, &ins_sink_dir_said, "cannot create a file in '%s': %s; Prometheus "
               "metrics are not written", dir->path, strerror(errno));
    if (fd >= 0) {
      close(fd);
      unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    return -1;
  }
  family(f, d, "nccl_bus_bandwidth_gbs",
         "Collective bus bandwidth in GB/s: geometric mean over the dump window.", INS_KIND_COLL, true);
  family(f, d, "nccl_collective_exec_time_microseconds",
         "Collective execution time in microseconds: mean over the dump window.", INS_KIND_COLL, false);
  family(f, d, "nccl_p2p_bus_bandwidth_gbs",
         "Point-to-point bus bandwidth in GB/s: geometric mean over the dump window.", INS_KIND_P2P, true);
  family(f, d, "nccl_p2p_exec_time_microseconds",
         "Point-to-point execution time in microseconds: mean over the dump window.", INS_KIND_P2P, false);
  bound_families(f, d);
  if (d->stats) {
    /* One reason so far; the label leaves room for others without a new metric. */
    static const char *const stale = ",reason=\"stale_channels\"";
    counter(f, d, "nccl_collectives_total", "Collective records aggregated on this GPU.", "",
            d->kept[0]);
    counter(f, d, "nccl_collectives_dropped_total", "Collective records dropped on this GPU.", "",
            d->dropped[0]);
    counter(f, d, "nccl_collectives_excluded_total",
            "Collective records left out of the samples on this GPU, by reason "
            "(stale_channels: timed from some of their channels only).",
            stale, d->excluded[0]);
    counter(f, d, "nccl_p2p_total", "Point-to-point records aggregated on this GPU.", "",
            d->kept[1]);
    counter(f, d, "nccl_p2p_dropped_total", "Point-to-point records dropped on this GPU.", "",
            d->dropped[1]);
    counter(f, d, "nccl_p2p_excluded_total",
            "Point-to-point records left out of the samples on this GPU, by reason "
            "(stale_channels: timed from some of their channels only).",
            stale, d->excluded[1]);
    untimed_counters(f, d);
    static const char *const bname[2] = {"nccl_collectives_bounded_total", "nccl_p2p_bounded_total"};
    for (int kind = 0; kind < 2; kind++)
      if (d->bounded && d->bounded[kind]) /* once there is one: files without bounds as before */
        counter(f, d, bname[kind], "Of the ops left untimed as unverified on this GPU, those "
                "written as bounds (the time between their neighbours on the stream).", "",
                d->bounded[kind]);
    sampling_gauge(f, d);
  }
  if (d->hang) hang_gauges(f, d);
  if (d->ranks) rank_counters(f, d);
  int bad = ferror(f), rc = 0;
  if (fclose(f) != 0 || bad || renameat(dfd, tmp, dfd, name) != 0) {
    ins_notice(&g_warned, &ins_sink_dir_said, "cannot write '%s': %s; Prometheus metrics are not "
               "written", path, strerror(errno));
    unlinkat(dfd, tmp, 0);
    rc = -1;
  }
  close(dfd);
  return rc;
}

int ins_prom_file_remove(struct ins_files_dir *dir, const char *uuid, char *path, size_t cap) {
  char name[NAME_MAX + 1];
  ins_prom_file_path(path, cap, dir->path, uuid);
  snprintf(name, sizeof name, "nccl_inspector_metrics_%s.prom", uuid);
  /* in the directory as it was first made, never through a link planted since */
  int dfd = ins_files_dir_open(dir, false);
  if (dfd < 0) return -1;
  int rc = unlinkat(dfd, name, 0);
  close(dfd);
  return rc;
}

