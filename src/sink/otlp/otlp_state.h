/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_state.h - what the OTLP sink keeps (otlp.c owns it, under its lock): the series,
 * each a data-point attribute set with its cumulative counts and histograms; the per-GPU
 * counters; the communicators attached. Read by otlp_body.c, which lays a body's metrics
 * out of it; nothing else of the sink's sees it.
 */
#ifndef INS_OTLP_STATE_H
#define INS_OTLP_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/names.h"
#include "core/record.h"
#include "sink/otlp/otlp_hist.h"
#include "sink/otlp/otlp_model.h"

#define INS_OTLP_SERIES_ATTRS 11
/* A context's P2P series name their peer (nccl.peer, what the slow-link alert compares), for
 * its first INS_OTLP_PEERS_MAX distinct peers; the P2P with any further peer go to nccl.peer
 * "other", so that the totals stay whole and the series bounded: an all-to-all of 1,024 ranks
 * would make 1,023 peers, times operations and sizes, each series two histograms of 160
 * buckets. */
#define INS_OTLP_PEERS_MAX 64

struct ins_otlp_series {
  struct ins_otlp_series *next;
  uint64_t hash;
  char *sig; /* the attribute values joined: the series' identity */
  struct ins_otlp_kv attrs[INS_OTLP_SERIES_ATTRS];
  int nattrs;
  char *strs[INS_OTLP_SERIES_ATTRS]; /* owned string values */
  uint64_t start_ns;
  uint64_t ops, bytes;
  struct ins_otlp_hist time_s, busbw;
  /* the bounds of ops the judge left out (core/judge.h, "Bounds"): exported apart, as
   * nccl.bound_operations and nccl.bound_time, their busbw empty */
  bool bound;
  /* The latest body holding this series that the collector took (the exporter said so:
   * ins_otlp_delivered), as otlp.c's g_made numbered it; 0: none. Exporter thread, under the
   * sink's lock. */
  uint64_t delivered;
};

/* Per GPU: records dropped and excluded, [enum ins_kind]; ops left untimed, by kind and
 * reason; collectives NCCL never reported, by function. */
struct ins_otlp_device {
  struct ins_otlp_device *next;
  char uuid[160];
  uint64_t start_ns;
  uint64_t dropped[2], excluded[2];
  uint64_t untimed[2][INS_UNTIMED_REASONS];
  uint64_t unreported[INS_FUNC_COUNT];
};

/* A communicator's fixed attributes, made once at attach; with hang detection on
 * (sink/hang.h), its gauges too, and its place on the list of the contexts attached
 * (g_comms: under g_lock, for the exports). */
struct ins_otlp_comm {
  struct ins_otlp_device *dev;
  unsigned gen; /* the sink's start it was attached under (g_gen) */
  char id[24], name[128], ranks[16], nodes[16], rank[16];
  bool listed;       /* on g_comms */
  double oldest_s;   /* the age of its oldest op in flight at the last check (0: none) */
  uint64_t last_sn[INS_FUNC_COUNT]; /* its newest completed op's sn, by function ... */
  uint32_t have;                     /* ... where bit f is set */
  int32_t peers[INS_OTLP_PEERS_MAX]; /* the peers its P2P series name, in order seen (g_lock) */
  int npeers;
  struct ins_otlp_comm *prev, *next;
};

#endif
