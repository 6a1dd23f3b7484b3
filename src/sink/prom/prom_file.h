/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_file.h - one device's <dump_dir>/nccl_inspector_metrics_<uuid>.prom:
 * its samples from the window's series (mean execution time, geometric-mean
 * bus bandwidth), and with NCCL_INSPECTOR_PROM_DUMP_STATS the counters
 * (records aggregated, dropped, excluded) and the sampled share; with hang detection on,
 * each communicator context's gauges of its ops in flight and its last completed op; with
 * NCCL_INSPECTOR_PROM_DUMP_RANKS, each context's counters of its collectives and of its
 * P2P per peer (what the alert rules compare across ranks: prometheus/inspector-rules.yml).
 * Written to a new file with a random name in the same
 * directory (io/files.h) and renamed over the .prom file: the node
 * exporter never reads half a file, and a link planted at either name is
 * never written through. Mode 0644.
 */
#ifndef INS_PROM_FILE_H
#define INS_PROM_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/names.h"
#include "core/record.h"
#include "io/files.h"
#include "sink/prom/prom_table.h"

/* One context's P2P records to or from one peer, of one function and message size, since
 * its start (NCCL_INSPECTOR_PROM_DUMP_RANKS). */
struct ins_prom_peer {
  int32_t peer;        /* the peer's rank */
  uint8_t func;        /* enum ins_func: Send or Recv */
  char size[24];       /* the message_size bucket (sink/vocab.h) */
  uint64_t n, bytes, ns; /* records, their bytes, their execution time */
};

/* The most (peer, function, size) entries a context counts: a job whose every rank talks to
 * every other would otherwise make ranks^2 series; records beyond are counted as overflow. */
#define INS_PROM_PEERS_MAX 256

/* One communicator context's gauges: hang detection's (NCCL_INSPECTOR_HANG_SECONDS > 0) and
 * its per-rank counters (NCCL_INSPECTOR_PROM_DUMP_RANKS). */
struct ins_prom_gauge {
  const char *labels;   /* comm_name="...",comm_id="0x...",rank="N" */
  double oldest_s;      /* the age of its oldest op in flight (0: none) */
  uint64_t last_sn[INS_FUNC_COUNT]; /* by enum ins_func: its newest completed op's sn ... */
  uint32_t have;        /* ... where bit f is set */
  uint64_t coll_n, coll_ns;           /* collective records aggregated, their time */
  const struct ins_prom_peer *peers;  /* npeers of them */
  size_t npeers;
  uint64_t peer_overflow;             /* P2P records left out of peers (the cap) */
};

/* What one device's file is made of. */
struct ins_prom_file {
  const char *uuid;                /* names the file */
  const char *labels;              /* the device's fixed labels: version=...,gpu="GPUn" */
  const struct ins_prom_table *table;
  /* [enum ins_kind] records of the device since the start: aggregated, dropped, and
   * excluded from the series (timed from a subset of their channels: stale_channels) */
  const uint64_t *kept, *dropped, *excluded;
  const uint64_t (*untimed)[INS_UNTIMED_REASONS]; /* [kind][reason] ops left without a record */
  const uint64_t *bounded;         /* [kind] of the unverified, those bounded (NULL: none) */
  const uint64_t *unreported;      /* [enum ins_func] collectives NCCL never reported */
  bool stats;                      /* NCCL_INSPECTOR_PROM_DUMP_STATS: counters and sampled share */
  bool hang;                       /* hang detection on: the gauges below (none: families empty) */
  bool ranks;                      /* NCCL_INSPECTOR_PROM_DUMP_RANKS: the gauges' counters */
  const struct ins_prom_gauge *gauges;
  size_t ngauges;
};

void ins_prom_file_path(char *out, size_t cap, const char *dir, const char *uuid);
/* Replace the device's file in dir, made if needed (io/files.h; path: the file's). 0, or -1
 * after a warning (once). */
int ins_prom_file_write(struct ins_files_dir *dir, const struct ins_prom_file *d, char *path,
                        size_t cap);
/* Remove the device's file from dir, if dir is there as it was first made (path: the
 * file's). 0, or -1 with errno. */
int ins_prom_file_remove(struct ins_files_dir *dir, const char *uuid, char *path, size_t cap);

#endif
