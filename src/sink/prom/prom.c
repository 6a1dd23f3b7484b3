/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.c - the Prometheus sink (see prom.h): the devices (one per GPU that
 * has had a context), each with its series of the current window
 * (prom_table.h), its counters and its file (prom_file.h); the labels are
 * prom_labels.h's. It runs on init, finalize, exit or the dump thread, never
 * in an event callback.
 *
 * Locks. g_lock guards the devices' windows and counters, and is held only for an
 * update or a swap, never while a file is formatted or written; an init (attach)
 * takes it only for a GPU it has not seen (the device list only grows, and is
 * read without it), so that it never waits for the dump thread, which takes it
 * for every record, nor for a window's end, whose files grow with the job's
 * series. A device's file is written from a window
 * swapped out under g_lock, under that device's file_lock (file_lock before
 * g_lock), so that its writes go out in window order: a finalize's detach, which
 * writes its device's file, waits at most for a write of that one file.
 */
#include "sink/prom/prom.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/names.h"
#include "sink/device.h"
#include "sink/prom/prom_file.h"
#include "sink/prom/prom_labels.h"
#include "sink/prom/prom_table.h"
#include "sink/sink.h"
#include "sink/vocab.h"

struct ins_prom_dev {
  struct ins_device_id id;
  atomic_int ncomms;       /* live contexts on this device */
  char *labels;            /* version=...,gpu="GPUn" */
  struct ins_prom_table table; /* the window's series (g_lock) */
  pthread_mutex_t file_lock;   /* its file's writer: one at a time, in window order */
  struct ins_prom_table ended; /* the window being written (file_lock; memory kept) */
  /* [enum ins_kind] records since the start: aggregated (counted as they are, so that a
   * file's counters and samples always cover the same records), dropped (the dump layer's
   * counts), excluded (timed from a subset of their channels: ins_prom_add) */
  uint64_t kept[2], dropped[2], excluded[2];
  uint64_t untimed[2][INS_UNTIMED_REASONS]; /* ops left without a record (dump layer) */
  uint64_t bounded[2];                      /* of those, bounded (dump layer) */
  uint64_t unreported[INS_FUNC_COUNT];      /* collectives NCCL never reported (dump layer) */
  bool named;              /* the file's path was logged */
  struct prom_comm *comms; /* its contexts' gauges, with hang detection on (g_lock) */
  struct ins_prom_dev *next;
};

/* The sink's state of a communicator context: its device, and with hang detection on
 * (sink/hang.h) its gauges, with NCCL_INSPECTOR_PROM_DUMP_RANKS its counters, on the
 * device's list (g_lock; its file's writers read the list under its file_lock too, which a
 * detach takes before it takes a context off). */
struct prom_comm {
  struct ins_prom_dev *dev;
  char *labels;          /* comm_name, comm_id, rank (NULL: no gauges, no counters) */
  uint64_t ops;          /* in flight at the last check */
  double oldest_s;       /* the oldest one's age then */
  uint64_t last_sn[INS_FUNC_COUNT]; /* its newest completed op's sn, by function ... */
  uint32_t have;                     /* ... where bit f is set */
  /* NCCL_INSPECTOR_PROM_DUMP_RANKS: the records aggregated (g_lock), of its collectives
   * and of its P2P by (peer, function, size): at most INS_PROM_PEERS_MAX of those */
  uint64_t coll_n, coll_ns;
  struct ins_prom_peer *peers;
  size_t npeers, cap_peers;
  uint64_t peer_overflow;
  struct prom_comm *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_host[256];
static struct ins_files_dir g_dir; /* the dump directory, as first made (io/files.h) */
static bool g_stats;
static bool g_ranks;                   /* NCCL_INSPECTOR_PROM_DUMP_RANKS */
static int g_bounds;                   /* NCCL_INSPECTOR_BOUNDS: enum ins_bounds */
static char *g_proc_labels;            /* version, cluster, slurm_job_id, node */
/* Devices are only ever added (at the head, under g_lock) and never freed: an attach finds
 * its GPU's without the lock (a new GPU's takes it). */
static struct ins_prom_dev *_Atomic g_devs;
static atomic_int g_warned_mem;
static atomic_int g_warned_peers; /* a context past INS_PROM_PEERS_MAX: once per process */
/* Hang detection (sink/hang.h): its threshold (0: off, no gauges). A file written since the
 * last check (g_wrote: any writer; g_last_write: the check's time that saw it, on the dump
 * thread), so that a check rewrites the files only when none was written for a threshold. */
static uint64_t g_hang_ns;
static atomic_bool g_wrote;
static uint64_t g_last_write;

void ins_prom_configure(const struct ins_config *cfg) {
  char buf[2048];
  ins_prom_process_labels(buf, sizeof buf, cfg);
  pthread_mutex_lock(&g_lock);
  ins_files_dir_set(&g_dir, cfg->dump_dir);
  /* made now: what its path is at the start is what a making again is held to */
  int fd = ins_files_dir_open(&g_dir, true);
  if (fd >= 0) close(fd);
  snprintf(g_host, sizeof g_host, "%s", cfg->hostname);
  g_stats = cfg->prom_dump_stats;
  g_ranks = cfg->prom_dump_ranks;
  g_bounds = cfg->bounds;
  g_hang_ns = cfg->hang_ns;
  free(g_proc_labels);
  g_proc_labels = strdup(buf);
  pthread_mutex_unlock(&g_lock);
}

static struct ins_prom_dev *find_dev(const char *uuid) {
  struct ins_prom_dev *d = atomic_load_explicit(&g_devs, memory_order_acquire);
  while (d && strcmp(d->id.uuid, uuid)) d = d->next;
  return d;
}

struct ins_prom_dev *ins_prom_attach(const struct ins_comm *c) {
  struct ins_device_id id;
  ins_device_identify(&id, g_host, c->rank, c->nranks, c->nnodes);
  /* An init never waits for the dump thread here: a device seen before is found without
   * the lock, which the dump thread takes for every record it folds in. */
  struct ins_prom_dev *d = find_dev(id.uuid);
  if (!d) {
    pthread_mutex_lock(&g_lock);
    if (!(d = find_dev(id.uuid)) && (d = calloc(1, sizeof *d))) {
      char gpu[32];
      snprintf(gpu, sizeof gpu, "GPU%d", id.ordinal);
      size_t len = (g_proc_labels ? strlen(g_proc_labels) : 0) + 64;
      d->labels = malloc(len);
      if (!d->labels) {
        free(d);
        d = NULL;
      } else {
        size_t o = (size_t)snprintf(d->labels, len, "%s", g_proc_labels ? g_proc_labels : "");
        ins_prom_label(d->labels, len, &o, "gpu", gpu, 32);
        d->id = id;
        pthread_mutex_init(&d->file_lock, NULL);
        d->next = atomic_load_explicit(&g_devs, memory_order_relaxed);
        atomic_store_explicit(&g_devs, d, memory_order_release);
      }
    }
    pthread_mutex_unlock(&g_lock);
  }
  if (d) atomic_fetch_add(&d->ncomms, 1);
  if (!d)
    ins_warn("out of memory: the records of communicator 0x%llx rank %d are counted as dropped",
             (unsigned long long)c->id, c->rank);
  return d;
}

/* A record whose time comes from a subset of its channels (stale_channels > 0: op.c left
 * out channels that carried an older op's timestamps) is counted, not aggregated: that time
 * can be off by any factor (all_to_all of 512 MiB on 2 x H200 came out at 843 GB/s busbw),
 * and one such op would move a window's mean time and geometric-mean bandwidth (a JSON
 * record says so itself, *_stale_channels; a sample cannot say which ops it rests on). */
/* A record's op as its context's newest completed, by function (g_lock held). */
static void note_sn(struct prom_comm *pc, const struct ins_record *r) {
  if (!pc || !pc->labels || r->func >= INS_FUNC_COUNT) return;
  if (!(pc->have & 1u << r->func) || r->sn > pc->last_sn[r->func]) pc->last_sn[r->func] = r->sn;
  pc->have |= 1u << r->func;
}

/* An aggregated record into pc's per-rank counters (g_lock held). A P2P record whose
 * (peer, function, size) would be entry INS_PROM_PEERS_MAX + 1, or finds no memory, is
 * counted as overflow: the per-peer series of a rank stay bounded whoever it talks to. */
static void count_rank(struct prom_comm *pc, const struct ins_record *r, const char *size) {
  if (!pc || !pc->labels || !g_ranks) return;
  if (r->kind == INS_KIND_COLL) {
    pc->coll_n++;
    pc->coll_ns += r->exec_ns;
    return;
  }
  struct ins_prom_peer *p = NULL;
  for (size_t i = 0; i < pc->npeers && !p; i++)
    if (pc->peers[i].peer == r->peer && pc->peers[i].func == r->func && !strcmp(pc->peers[i].size, size))
      p = &pc->peers[i];
  if (!p && pc->npeers == pc->cap_peers && pc->cap_peers < INS_PROM_PEERS_MAX) {
    size_t cap = pc->cap_peers ? 2 * pc->cap_peers : 4;
    if (cap > INS_PROM_PEERS_MAX) cap = INS_PROM_PEERS_MAX;
    struct ins_prom_peer *np = realloc(pc->peers, cap * sizeof *np);
    if (np) pc->peers = np, pc->cap_peers = cap;
  }
  if (!p && pc->npeers < pc->cap_peers) {
    p = &pc->peers[pc->npeers++];
    memset(p, 0, sizeof *p);
    p->peer = r->peer;
    p->func = r->func;
    snprintf(p->size, sizeof p->size, "%s", size);
  }
  if (!p) {
    pc->peer_overflow++;
    ins_warn_once(&g_warned_peers, "more than %d (peer, operation, size) P2P series on the "
                  "context %s: the records of the others are counted in "
                  "nccl_p2p_peer_overflow_total", INS_PROM_PEERS_MAX, pc->labels);
    return;
  }
  p->n++;
  p->bytes += r->bytes;
  p->ns += r->exec_ns;
}

/* ins_prom_add, and the op's sequence number for the gauges of pc (if any). */
static int add(struct ins_prom_dev *d, struct prom_comm *pc, const struct ins_comm *c,
               const struct ins_record *r) {
  if (!d) return -1;
  assert(r->kind == INS_KIND_COLL || r->kind == INS_KIND_P2P);
  if (r->stale_channels) {
    pthread_mutex_lock(&g_lock);
    d->excluded[r->kind]++;
    note_sn(pc, r);
    pthread_mutex_unlock(&g_lock);
    return 0; /* not dropped: left out on purpose */
  }
  char labels[1536];
  ins_prom_record_labels(labels, sizeof labels, c, r);
  double bw = 0;
  if (r->exec_ns)
    bw = (double)ins_bw_bytes(r->func, r->bytes, c->nranks) / (double)r->exec_ns *
         ins_busbw_factor(r->func, c->nranks);
  pthread_mutex_lock(&g_lock);
  int rc = ins_prom_table_add(&d->table, r->kind, labels, (double)r->exec_ns / 1000.0, bw);
  if (rc == 0) {
    d->kept[r->kind]++;
    if (g_ranks) {
      char size[24];
      ins_vocab_size_bucket(r->bytes, size, sizeof size);
      count_rank(pc, r, size);
    }
  }
  note_sn(pc, r);
  pthread_mutex_unlock(&g_lock);
  if (rc != 0)
    ins_warn_once(&g_warned_mem, "out of memory for Prometheus series: records are counted as dropped");
  return rc;
}

/* A bound (core/judge.h, "Bounds"): into its own series (INS_PROM_BOUND + kind: the bound
 * families), or with NCCL_INSPECTOR_BOUNDS=mix among the records, as the user asked. */
static int add_bound(struct prom_comm *pc, const struct ins_comm *c, const struct ins_record *r) {
  if (g_bounds == INS_BOUNDS_MIX) return add(pc->dev, pc, c, r);
  if (!pc->dev) return -1;
  char labels[1536];
  ins_prom_record_labels(labels, sizeof labels, c, r);
  pthread_mutex_lock(&g_lock);
  /* no bandwidth: a bracket's would be a floor only */
  int rc = ins_prom_table_add(&pc->dev->table, INS_PROM_BOUND + r->kind, labels,
                              (double)r->exec_ns / 1000.0, 0);
  note_sn(pc, r);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

int ins_prom_add(struct ins_prom_dev *d, const struct ins_comm *c, const struct ins_record *r) {
  return add(d, NULL, c, r);
}

void ins_prom_count(struct ins_prom_dev *d, const struct ins_sink_counts *k) {
  if (!d) return;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < 2; i++) {
    d->dropped[i] += k->dropped_since[i];
    for (int r = 0; r < INS_UNTIMED_REASONS; r++) d->untimed[i][r] += k->untimed_since[i][r];
    d->bounded[i] += k->bounded_since[i];
  }
  for (int f = 0; f < INS_FUNC_COUNT; f++) d->unreported[f] += k->unreported_since[f];
  pthread_mutex_unlock(&g_lock);
}

/* The counters a file shows, copied with its window (so that they cover the same records),
 * and its contexts' gauges (hang detection on; labels owned by the contexts, which stay
 * while the file's writer holds its file_lock). */
struct dev_counts {
  uint64_t kept[2], dropped[2], excluded[2];
  uint64_t untimed[2][INS_UNTIMED_REASONS];
  uint64_t bounded[2];
  uint64_t unreported[INS_FUNC_COUNT];
  struct ins_prom_gauge *gauges; /* malloc'd; NULL: none, or no memory (the families empty) */
  size_t ngauges;
  struct ins_prom_peer *peers;   /* malloc'd: the gauges' peers, copied (NULL: none) */
};

/* d's contexts' gauges into k (g_lock held). */
static void copy_gauges(struct ins_prom_dev *d, struct dev_counts *k) {
  size_t n = 0, np = 0;
  k->gauges = NULL;
  k->ngauges = 0;
  k->peers = NULL;
  for (struct prom_comm *pc = d->comms; pc; pc = pc->next) n++, np += pc->npeers;
  if (!n || !(k->gauges = malloc(n * sizeof *k->gauges))) return;
  /* the peers are copied: the dump thread grows a context's array while the file is written */
  if (np && !(k->peers = malloc(np * sizeof *k->peers))) np = 0;
  size_t at = 0;
  for (struct prom_comm *pc = d->comms; pc; pc = pc->next) {
    struct ins_prom_gauge *g = &k->gauges[k->ngauges++];
    g->labels = pc->labels;
    g->oldest_s = pc->oldest_s;
    memcpy(g->last_sn, pc->last_sn, sizeof g->last_sn);
    g->have = pc->have;
    g->coll_n = pc->coll_n;
    g->coll_ns = pc->coll_ns;
    g->peers = NULL;
    g->npeers = 0;
    g->peer_overflow = pc->peer_overflow;
    if (np && pc->npeers) {
      memcpy(k->peers + at, pc->peers, pc->npeers * sizeof *k->peers);
      g->peers = k->peers + at;
      g->npeers = pc->npeers;
      at += pc->npeers;
    }
  }
}

/* End d's window (g_lock and d->file_lock held): its series go to d->ended, the counters
 * to *k, and a new window starts (with the memory of the one last written). */
static void end_window_locked(struct ins_prom_dev *d, struct dev_counts *k) {
  struct ins_prom_table t = d->table;
  d->table = d->ended;
  d->ended = t;
  memcpy(k->kept, d->kept, sizeof k->kept);
  memcpy(k->dropped, d->dropped, sizeof k->dropped);
  memcpy(k->excluded, d->excluded, sizeof k->excluded);
  memcpy(k->untimed, d->untimed, sizeof k->untimed);
  memcpy(k->bounded, d->bounded, sizeof k->bounded);
  memcpy(k->unreported, d->unreported, sizeof k->unreported);
  copy_gauges(d, k);
}

/* Write d's file from the window just ended (d->file_lock held, g_lock not). */
static void write_ended(struct ins_prom_dev *d, const struct dev_counts *k) {
  char path[PATH_MAX + 256];
  struct ins_prom_file f = {.uuid = d->id.uuid, .labels = d->labels, .table = &d->ended,
                            .kept = k->kept, .dropped = k->dropped, .excluded = k->excluded,
                            .untimed = k->untimed, .bounded = k->bounded, .unreported = k->unreported,
                            .stats = g_stats, .hang = g_hang_ns != 0, .ranks = g_ranks,
                            .gauges = k->gauges, .ngauges = k->ngauges};
  if (ins_prom_file_write(&g_dir, &f, path, sizeof path) == 0 && !d->named) {
    d->named = true; /* under file_lock: only writers read it */
    ins_info("writing Prometheus metrics to %s", path);
  }
  free(k->gauges);
  free(k->peers);
  ins_prom_table_reset(&d->ended);
  atomic_store(&g_wrote, true);
}

void ins_prom_write_all(void) {
  for (struct ins_prom_dev *d = atomic_load_explicit(&g_devs, memory_order_acquire); d; d = d->next) {
    struct dev_counts k;
    pthread_mutex_lock(&d->file_lock);
    pthread_mutex_lock(&g_lock);
    bool live = atomic_load(&d->ncomms) > 0;
    if (live) end_window_locked(d, &k);
    pthread_mutex_unlock(&g_lock);
    if (live) write_ended(d, &k);
    pthread_mutex_unlock(&d->file_lock);
  }
}

/* A context's last drain is over: pc (if any) off its device's list, then the device's file
 * written, or removed if the context was its last. */
static void detach(struct ins_prom_dev *d, struct prom_comm *pc) {
  if (!d) return;
  struct dev_counts k;
  pthread_mutex_lock(&d->file_lock);
  pthread_mutex_lock(&g_lock);
  for (struct prom_comm **p = &d->comms; pc && *p; p = &(*p)->next)
    if (*p == pc) {
      *p = pc->next;
      break;
    }
  bool last = atomic_fetch_sub(&d->ncomms, 1) == 1;
  if (last)
    ins_prom_table_reset(&d->table);
  else
    end_window_locked(d, &k);
  pthread_mutex_unlock(&g_lock);
  if (last) {
    char path[PATH_MAX + 256];
    if (ins_prom_file_remove(&g_dir, d->id.uuid, path, sizeof path) == 0)
      ins_info("removed %s (last communicator on its GPU destroyed)", path);
  } else {
    write_ended(d, &k);
  }
  pthread_mutex_unlock(&d->file_lock);
}

void ins_prom_detach(struct ins_prom_dev *d) { detach(d, NULL); }

void ins_prom_shutdown(void) {
  /* The devices themselves are kept (a few hundred bytes each): a context finalized
   * after exit has begun still finds its device. */
  ins_prom_write_all();
}

/* ---- the sink (sink/sink.h) ------------------------------------------------ */

static int prom_attach(struct ins_comm *c, void **state) {
  struct prom_comm *pc = calloc(1, sizeof *pc);
  char labels[1024];
  if (pc && (g_hang_ns || g_ranks)) {
    ins_prom_comm_labels(labels, sizeof labels, c);
    if (!(pc->labels = strdup(labels))) {
      free(pc);
      pc = NULL;
    }
  }
  if (!pc) return -1;
  /* no memory for a device: the records are counted as dropped (ins_prom_add fails) */
  pc->dev = ins_prom_attach(c);
  if (pc->dev && pc->labels) {
    pthread_mutex_lock(&g_lock);
    pc->next = pc->dev->comms;
    pc->dev->comms = pc;
    pthread_mutex_unlock(&g_lock);
  }
  *state = pc;
  return 0;
}

static int prom_record(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_record *r) {
  (void)b;
  struct prom_comm *pc = state;
  if (r->timing == INS_TIMING_UNVERIFIED) { /* not a record (core/judge.h), but completed */
    if (pc->labels) {
      pthread_mutex_lock(&g_lock);
      note_sn(pc, r);
      pthread_mutex_unlock(&g_lock);
    }
    return 0;
  }
  if (r->timing == INS_TIMING_BOUND) return add_bound(pc, c, r);
  return add(pc->dev, pc, c, r);
}

/* The drops feed the device's counters (the records kept were counted as they were
 * aggregated); the sampled share is read when a file is written. */
static int prom_counts(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_sink_counts *k) {
  (void)b, (void)c;
  ins_prom_count(((struct prom_comm *)state)->dev, k);
  return 0;
}

static void prom_detach(struct ins_comm *c, void *state) {
  (void)c;
  struct prom_comm *pc = state;
  detach(pc->dev, pc); /* write its device's file, or remove it */
  free(pc->peers);
  free(pc->labels);
  free(pc);
}

/* A check's word on a context's ops in flight (sink/hang.h): its gauge. */
static void prom_inflight(const struct ins_comm *c, void *state, const struct ins_sink_inflight *f) {
  (void)c;
  struct prom_comm *pc = state;
  if (!pc->labels) return;
  pthread_mutex_lock(&g_lock);
  pc->ops = f->ops;
  pc->oldest_s = f->oldest_s;
  pthread_mutex_unlock(&g_lock);
}

/* A check is over: while any context has ops in flight, and once more after the last
 * completed, the files are rewritten when none was written for a threshold (a window's end
 * writes them too), so that they show the gauges of a job that completes nothing, and
 * then that it is moving again. With a threshold under the window (or the interval -1),
 * that ends the window early: a write always ends it (prom.h). Dump thread only. */
static void prom_hang_checked(uint64_t now) {
  static bool checked; /* the first check counts as a write: the window began then */
  static bool busy_written; /* the last write showed ops in flight */
  if (atomic_exchange(&g_wrote, false) || !checked) g_last_write = now;
  checked = true;
  bool busy = false;
  pthread_mutex_lock(&g_lock);
  for (struct ins_prom_dev *d = atomic_load(&g_devs); d && !busy; d = d->next)
    for (struct prom_comm *pc = d->comms; pc && !busy; pc = pc->next) busy = pc->ops > 0;
  pthread_mutex_unlock(&g_lock);
  if ((!busy && !busy_written) || now - g_last_write < g_hang_ns) return;
  ins_prom_write_all();
  atomic_store(&g_wrote, false);
  g_last_write = now;
  busy_written = busy;
}

const struct ins_sink ins_prom_sink = {
    .name = "prometheus",
    .start = ins_prom_configure,
    .attach = prom_attach,
    .begin_pass = NULL,
    .record = prom_record,
    .counts = prom_counts,
    .end_window = ins_prom_write_all,
    .detach = prom_detach,
    .shutdown = ins_prom_shutdown,
    .inflight = prom_inflight,
    .hang_checked = prom_hang_checked,
};
