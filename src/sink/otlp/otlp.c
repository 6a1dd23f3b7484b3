/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.c - the OTLP sink's state, its snapshots and the sink calls (see otlp.h).
 *
 * Series are kept in a chained hash table keyed by their attribute signature
 * and never freed before shutdown: cumulative metrics must keep counting after
 * a communicator is destroyed (its totals stay true), and the number of series
 * is bounded by the job's distinct (communicator, rank, op, algorithm, size
 * bucket) sets, not by its length. Shutdown (after the last export) frees all
 * of it, so that a plugin NCCL unloads and loads again leaks nothing; a
 * communicator still attached then is a no-op for this sink from there on
 * (nothing could be exported any more).
 *
 * Exports are turns of a round-robin over the series, in order of their
 * creation: a turn holds every series once, encoded under the lock into bodies
 * of at most INS_OTLP_MAX_BODY bytes (the per-GPU counters go with its first):
 * each body takes as many series as the last body's bytes per series say fit,
 * fewer when it comes out too large. The exporter asks for a queueful of bodies
 * at a time (ins_otlp_collect_fn: a turn of thousands of communicators is tens
 * of bodies, and with a slow collector it may last many intervals), and the
 * cursor below remembers where the turn in progress goes on; series created
 * meanwhile come at its end. A new turn begins where the last one stopped
 * making bodies and wraps round: after a whole turn that is the first series
 * (or those created since, never sent yet); at stop, mid-way through one, the
 * last turn begins there, so the series delivered longest ago go first. Each
 * body has its own time, read under the lock with the values it holds: a point
 * says when its values were taken, however long the turn (its first body may be
 * minutes older). The lock is let go between bodies, so the draining threads
 * wait at most one body's encoding (milliseconds for the largest), and NCCL's
 * threads never take this lock. Each body says which series it holds; the
 * exporter hands that back for each body the collector took
 * (ins_otlp_delivered), so that at exit the sink can say which series never
 * reached the collector and which reached it only before exit.
 *
 * fork(): the exporter takes the lock outside the dump layer's gate, so the fork's
 * prepare takes it too (sink.h fork_prepare). A forked child has no exporter (its
 * thread is the parent's and is gone; the series are the parent's): the sink is inert
 * there, and the communicators the child creates are not exported (one warning), only
 * written to its JSON log and Prometheus files.
 */
#include "sink/otlp/otlp.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/names.h"
#include "sink/device.h"
#include "sink/otlp/otlp_body.h"
#include "sink/otlp/otlp_config.h"
#include "sink/otlp/otlp_export.h"
#include "sink/otlp/otlp_hist.h"
#include "sink/otlp/otlp_model.h"
#include "sink/otlp/otlp_state.h"
#include "sink/vocab.h"

/* The OTLP spec names no body limit for HTTP; collectors' defaults start at 4 MiB
 * (gRPC's message limit, which the Collector applies to its HTTP receiver too). */
#define INS_OTLP_MAX_BODY (4u << 20)
#define QUEUE_MAX 16            /* bodies made at a time (otlp_export.c): 64 MiB at most */
#define STOP_DEADLINE_MS 3000   /* the last export at exit: at most this long */
#define NBUCKETS 4096
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ins_otlp_series *g_table[NBUCKETS];
static struct ins_otlp_series **g_list; /* every series, in creation order: stable snapshots */
static size_t g_nseries, g_cap;
static struct ins_otlp_device *g_devs;
static struct ins_otlp_comm *g_comms; /* attached, hang detection on (ins_otlp_comm) */
static size_t g_ncomms;
static bool g_hang;                /* NCCL_INSPECTOR_HANG_SECONDS > 0: the gauges exist */
static int g_bounds;               /* NCCL_INSPECTOR_BOUNDS: enum ins_bounds */
static struct ins_otlp_config g_cfg;
static struct ins_otlp_kv g_resource[INS_OTLP_MAX_ATTRS + 8];
static int g_nresource;
static char g_host[256], g_job[512], g_cluster[512];
/* Published after the exporter thread is running, read by that thread's collect: atomic
 * (that first collect may come before the store). */
static _Atomic(struct ins_otlp_exporter *) g_exporter;
static uint64_t g_start_ns;
static atomic_int g_warned_mem, g_warned_encode, g_warned_fork, g_warned_peers;
/* This process is a child forked after the sink started (fork_child): nothing is
 * exported; g_fork_clean: the lock was taken at the fork, so the state is whole. */
static bool g_forked, g_fork_clean;
void (*ins_otlp_test_hook)(const atomic_int *drains_waiting);
/* Draining threads waiting for g_lock: between two bodies of an export the exporter lets
 * them in first (collect), so a drain waits at most one body's encoding. */
static atomic_int g_drains_waiting;
#define HANDOFF_NS 50000000ull /* the exporter yields to a waiting drain this long at most */

static void drain_lock(void) {
  atomic_fetch_add_explicit(&g_drains_waiting, 1, memory_order_relaxed);
  pthread_mutex_lock(&g_lock);
  atomic_fetch_sub_explicit(&g_drains_waiting, 1, memory_order_relaxed);
}
/* The sink is started and not yet shut down; g_gen counts starts, so that a communicator
 * attached before a shutdown never touches what the shutdown freed. */
static bool g_live;
static unsigned g_gen;
/* The turn in progress (collect's cursor): the series it began with, the next one, whether
 * it has wrapped round (past the last series to the first, for a turn begun mid-way),
 * whether the counters were sent. `next` stays where the turn ended: the next turn begins
 * there. Exporter thread, under g_lock. */
struct export_cursor {
  bool open, counters_sent, wrapped;
  size_t from, next;
};
static struct export_cursor g_exp;
static uint64_t g_made; /* bodies made so far: each body's number (ins_otlp_held.made) */
static size_t g_per_series; /* bytes per series in the last body: how many fit the next */
/* INS_OTLP_MAX_BODY. In builds made for the tests only (INS_TEST_HOOKS: CMake sets it where
 * BUILD_TESTING is on), INSPECTOR_OTLP_MAX_BODY_BYTES lowers it so that they can see a
 * snapshot split without tens of thousands of series (tests/test_otlp.py, otlp.split). A
 * packaged plugin neither reads nor contains that name (tests/test_package.py,
 * package.no_test_hooks): a job's environment cannot change what it sends. */
static size_t g_max_body = INS_OTLP_MAX_BODY;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ---- configuration and resource ----------------------------------------- */

static void resource_add(const char *key, const char *s, int64_t i, bool is_int) {
  if (g_nresource == (int)(sizeof g_resource / sizeof *g_resource)) return;
  g_resource[g_nresource++] = (struct ins_otlp_kv){.key = key, .type = is_int ? INS_OTLP_INT : INS_OTLP_STR,
                                                   .s = s, .i = i};
}

static void otlp_start(const struct ins_config *cfg) {
  pthread_mutex_lock(&g_lock);
  g_live = true;
  g_gen++;
  g_exp = (struct export_cursor){0};
  g_per_series = 0;
  g_hang = cfg->hang_ns != 0;
  g_bounds = cfg->bounds;
  ins_otlp_config_load(&g_cfg);
  snprintf(g_host, sizeof g_host, "%s", cfg->hostname);
  snprintf(g_job, sizeof g_job, "%s", cfg->job_id);
  snprintf(g_cluster, sizeof g_cluster, "%s", cfg->cluster);
  g_nresource = 0;
  resource_add("service.name", g_cfg.service_name, 0, false);
  resource_add("host.name", g_host, 0, false);
  resource_add("process.pid", NULL, (int64_t)getpid(), true);
  resource_add("job.id", g_job, 0, false);
  resource_add("cluster.name", g_cluster, 0, false);
  for (int i = 0; i < g_cfg.nattrs; i++)
    if (strcmp(g_cfg.attrs[i].key, "service.name")) /* OTEL_SERVICE_NAME's rule: set above */
      resource_add(g_cfg.attrs[i].key, g_cfg.attrs[i].value, 0, false);
  g_start_ns = now_ns();
  g_max_body = INS_OTLP_MAX_BODY;
#ifdef INS_TEST_HOOKS
  const char *mb = getenv("INSPECTOR_OTLP_MAX_BODY_BYTES");
  if (mb && atoll(mb) > 0) g_max_body = (size_t)atoll(mb);
#endif
  pthread_mutex_unlock(&g_lock);
  /* outside the lock: the exporter's first collect takes it */
  struct ins_otlp_exporter *e = ins_otlp_exporter_start(&g_cfg.ep, g_cfg.interval_ms, QUEUE_MAX,
                                                        ins_otlp_collect, ins_otlp_delivered, NULL);
  atomic_store(&g_exporter, e);
  /* the URL redacted: its userinfo, path, query and even its host may carry credentials */
  char shown[INS_OTLP_URL_SHOWN];
  if (e)
    ins_info("exporting OTLP metrics to %s every %u ms (%s%s)",
             ins_otlp_url_redact(g_cfg.ep.url, shown, sizeof shown), g_cfg.interval_ms,
             g_cfg.ep.json ? "http/json" : "http/protobuf", g_cfg.ep.gzip ? ", gzip" : "");
}

/* ---- state ----------------------------------------------------------------- */

static struct ins_otlp_device *device_get(const char *uuid) {
  for (struct ins_otlp_device *d = g_devs; d; d = d->next)
    if (!strcmp(d->uuid, uuid)) return d;
  struct ins_otlp_device *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
  d->start_ns = now_ns();
  d->next = g_devs;
  g_devs = d;
  return d;
}

static int otlp_attach(struct ins_comm *c, void **state) {
  struct ins_device_id id;
  ins_device_identify(&id, g_host, c->rank, c->nranks, c->nnodes);
  struct ins_otlp_comm *s = calloc(1, sizeof *s);
  if (!s) return -1;
  snprintf(s->id, sizeof s->id, "0x%" PRIx64, c->id);
  snprintf(s->name, sizeof s->name, "%s", c->name);
  snprintf(s->ranks, sizeof s->ranks, "%d", c->nranks);
  snprintf(s->nodes, sizeof s->nodes, "%d", c->nnodes);
  snprintf(s->rank, sizeof s->rank, "%d", c->rank);
  if (g_forked)
    ins_warn_once(&g_warned_fork, "OTLP: this process was forked from the job after the exporter "
                  "started: the communicators it creates are not exported over OTLP (the exporter "
                  "is the parent's), only written to its own log");
  drain_lock();
  s->gen = g_gen;
  bool live = g_live; /* after shutdown: a state that records nothing (nothing is exported) */
  if (live) s->dev = device_get(id.uuid);
  if (s->dev && g_hang) { /* its gauges, in the exports from now on */
    s->listed = true;
    s->next = g_comms;
    if (g_comms) g_comms->prev = s;
    g_comms = s;
    g_ncomms++;
  }
  pthread_mutex_unlock(&g_lock);
  if (live && !s->dev) {
    free(s);
    return -1;
  }
  *state = s;
  return 0;
}

/* s may use the sink's state (g_lock held): attached since the sink's last start, which
 * has not been shut down. */
static bool state_live(const struct ins_otlp_comm *s) { return g_live && s->gen == g_gen && s->dev; }

/* The nccl.peer value of a P2P record of s into buf: its peer's rank, if that is one of the
 * first INS_OTLP_PEERS_MAX peers of the context (noted here), else "other" (g_lock held). */
static const char *peer_value(struct ins_otlp_comm *s, const struct ins_record *r, char *buf, size_t cap) {
  int i = 0;
  while (i < s->npeers && s->peers[i] != r->peer) i++;
  if (i == INS_OTLP_PEERS_MAX) {
    ins_warn_once(&g_warned_peers, "OTLP: a communicator context exchanged P2P with more than %d "
                  "peers: the P2P with the others are exported with nccl.peer=\"other\"", INS_OTLP_PEERS_MAX);
    return "other";
  }
  if (i == s->npeers) s->peers[s->npeers++] = r->peer;
  snprintf(buf, cap, "%d", (int)r->peer);
  return buf;
}

/* The series of a record's attribute set, created on first use (g_lock held); peer: the
 * nccl.peer value of a P2P record (peer_value); bound: the bounds' series of that set. */
static struct ins_otlp_series *series_get(const struct ins_otlp_comm *s, const struct ins_record *r,
                                          const char *peer, bool bound) {
  char ap[160], size[48];
  const char *kind = r->kind == INS_KIND_COLL ? "collective" : "p2p";
  snprintf(ap, sizeof ap, "%s_%s", r->algo ? r->algo : "unknown", r->proto ? r->proto : "unknown");
  ins_vocab_size_bucket(r->bytes, size, sizeof size);
  const char *op = r->func_name ? r->func_name : "unknown";
  const char *keys[INS_OTLP_SERIES_ATTRS] = {"nccl.comm.id", "nccl.comm.name", "nccl.comm.ranks",
                                             "nccl.comm.nodes", "nccl.rank", "nccl.operation",
                                             "nccl.operation.kind", "nccl.algo_proto", "nccl.message_size",
                                             "gpu.uuid", "nccl.peer"};
  const char *vals[INS_OTLP_SERIES_ATTRS] = {s->id, s->name, s->ranks, s->nodes, s->rank, op, kind,
                                    r->kind == INS_KIND_COLL ? ap : "", size, s->dev->uuid,
                                    r->kind == INS_KIND_COLL ? "" : peer};
  char sig[1024];
  size_t o = bound ? (size_t)snprintf(sig, sizeof sig, "bound\x1f") : 0;
  for (int i = 0; i < INS_OTLP_SERIES_ATTRS && o < sizeof sig; i++)
    o += (size_t)snprintf(sig + o, sizeof sig - o, "%s\x1f", vals[i]);
  uint64_t h = fnv(sig, 1469598103934665603ull);
  for (struct ins_otlp_series *x = g_table[h % NBUCKETS]; x; x = x->next)
    if (x->hash == h && !strcmp(x->sig, sig)) return x;
  if (g_nseries == g_cap) {
    size_t cap = g_cap ? 2 * g_cap : 256;
    struct ins_otlp_series **nl = realloc(g_list, cap * sizeof *nl);
    if (!nl) return NULL;
    g_list = nl;
    g_cap = cap;
  }
  struct ins_otlp_series *x = calloc(1, sizeof *x);
  if (!x || !(x->sig = strdup(sig))) {
    free(x);
    return NULL;
  }
  for (int i = 0; i < INS_OTLP_SERIES_ATTRS; i++) {
    if (i == 7 && r->kind != INS_KIND_COLL) continue; /* P2P has no algorithm */
    if (i == 10 && r->kind == INS_KIND_COLL) continue; /* a collective has no peer */
    char *v = strdup(vals[i]);
    if (!v) {
      for (int k = 0; k < x->nattrs; k++) free(x->strs[k]);
      free(x->sig);
      free(x);
      return NULL;
    }
    x->strs[x->nattrs] = v;
    x->attrs[x->nattrs++] = (struct ins_otlp_kv){.key = keys[i], .type = INS_OTLP_STR, .s = v};
  }
  x->hash = h;
  x->bound = bound;
  x->start_ns = now_ns();
  ins_otlp_hist_init(&x->time_s);
  ins_otlp_hist_init(&x->busbw);
  x->next = g_table[h % NBUCKETS];
  g_table[h % NBUCKETS] = x;
  g_list[g_nseries++] = x;
  return x;
}

/* A record's op as its context's newest completed, by function (g_lock held). */
static void note_sn(struct ins_otlp_comm *s, const struct ins_record *r) {
  if (!s->listed || r->func >= INS_FUNC_COUNT) return;
  if (!(s->have & 1u << r->func) || r->sn > s->last_sn[r->func]) s->last_sn[r->func] = r->sn;
  s->have |= 1u << r->func;
}

static int otlp_record(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_record *r) {
  (void)b;
  struct ins_otlp_comm *s = state;
  if (!s) return -1;
  if (r->timing == INS_TIMING_UNVERIFIED && !g_hang) return 0; /* not a record (core/judge.h) */
  drain_lock();
  if (!state_live(s)) { /* after shutdown: nothing more can be exported */
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  note_sn(s, r);
  if (r->timing == INS_TIMING_UNVERIFIED) { /* completed, but not a record */
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  if (r->stale_channels > 0) { /* a time from a subset of the channels: counted, not used */
    s->dev->excluded[r->kind == INS_KIND_COLL ? 0 : 1]++;
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  char peer[16];
  /* a bound in its own series, unless NCCL_INSPECTOR_BOUNDS=mix asked for it among the records */
  bool bound = r->timing == INS_TIMING_BOUND && g_bounds != INS_BOUNDS_MIX;
  struct ins_otlp_series *x =
      series_get(s, r, r->kind == INS_KIND_COLL ? "" : peer_value(s, r, peer, sizeof peer), bound);
  if (x) {
    x->ops++;
    x->bytes += r->bytes;
    ins_otlp_hist_add(&x->time_s, (double)r->exec_ns / 1e9);
    if (r->exec_ns && !bound) /* a bracket's bandwidth would be a floor only */
      ins_otlp_hist_add(&x->busbw, (double)ins_bw_bytes(r->func, r->bytes, c->nranks) / (double)r->exec_ns *
                                      ins_busbw_factor(r->func, c->nranks));
  }
  pthread_mutex_unlock(&g_lock);
  if (!x) ins_warn_once(&g_warned_mem, "out of memory for OTLP series: records are counted as dropped");
  return x ? 0 : -1;
}

static int otlp_counts(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                       const struct ins_sink_counts *k) {
  (void)b, (void)c;
  struct ins_otlp_comm *s = state;
  if (!s) return 0;
  drain_lock();
  if (!state_live(s)) {
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  for (int i = 0; i < 2; i++) {
    s->dev->dropped[i] += k->dropped_since[i];
    for (int r = 0; r < INS_UNTIMED_REASONS; r++) s->dev->untimed[i][r] += k->untimed_since[i][r];
  }
  for (int f = 0; f < INS_FUNC_COUNT; f++) s->dev->unreported[f] += k->unreported_since[f];
  pthread_mutex_unlock(&g_lock);
  return 0;
}

/* s off g_comms (g_lock held). */
static void unlist(struct ins_otlp_comm *s) {
  if (!s->listed) return;
  if (s->prev) s->prev->next = s->next;
  else g_comms = s->next;
  if (s->next) s->next->prev = s->prev;
  s->listed = false;
  g_ncomms--;
}

static void otlp_detach(struct ins_comm *c, void *state) {
  (void)c;
  struct ins_otlp_comm *s = state;
  if (s) {
    /* its gauges go (a shutdown emptied the list already; a forked child's is whole) */
    pthread_mutex_lock(&g_lock);
    unlist(s);
    pthread_mutex_unlock(&g_lock);
  }
  free(state); /* the series and device stay: their totals are still true */
}

/* A check's word on a context's ops in flight (sink/hang.h): its gauge. */
static void otlp_inflight(const struct ins_comm *c, void *state, const struct ins_sink_inflight *f) {
  (void)c;
  struct ins_otlp_comm *s = state;
  if (!s) return;
  drain_lock();
  if (state_live(s)) s->oldest_s = f->oldest_s;
  pthread_mutex_unlock(&g_lock);
}

/* ---- snapshots -------------------------------------------------------------- */

/* Encodes series [a, b) (and, with `counters`, the per-GPU and exporter counters, and hang
 * detection's gauges) into body (otlp_body.h). 0, or -1 out of memory. g_lock held. */
static int encode_range(struct ins_buf *body, size_t a, size_t b, bool counters, uint64_t now) {
  struct ins_otlp_body_in in = {.series = g_list + a, .nseries = b - a, .counters = counters,
                                .devs = g_devs, .comms = g_comms, .gauges = g_hang, .start_ns = g_start_ns,
                                .resource = g_resource, .nresource = g_nresource, .json = g_cfg.ep.json,
                                .now = now};
  if (counters) in.exports_dropped = ins_otlp_exporter_dropped(atomic_load(&g_exporter));
  return ins_otlp_body_encode(body, &in);
}

/* How many series from `a` (of `left`) the next body takes: as many as the last body's
 * bytes per series say fit in 7/8 of the limit (room for series larger than the mean);
 * a first guess of 256 before any body was made. */
static size_t chunk_for(size_t left) {
  size_t k = g_per_series ? (g_max_body - g_max_body / 8) / g_per_series : 256;
  if (k < 1) k = 1;
  return k < left ? k : left; /* 0 with no series left: the counters alone */
}

/* One body of the turn in progress, from series g_exp.next on (g_lock held), its points
 * timed `now`: as many series as fit under g_max_body, up to the last series (or, wrapped,
 * up to where the turn began); a single series that does not fit goes alone. Returns 0
 * with *body made, or -1 when even one series could not be encoded (out of memory): that
 * series is skipped, *body left empty. g_exp.next moves past what the body holds. */
static int encode_next(struct ins_buf *body, uint64_t now) {
  size_t a = g_exp.next, end = g_exp.wrapped ? g_exp.from : g_nseries;
  size_t left = end - a, k = chunk_for(left);
  bool counters = !g_exp.counters_sent;
  for (;;) {
    body->len = 0;
    int rc = encode_range(body, a, a + k, counters, now);
    if (rc == 0 && (body->len <= g_max_body || k <= 1)) break;
    if (rc != 0 && k <= 1) { /* out of memory for a single series */
      ins_buf_free(body);
      g_exp.next = a + (left ? 1 : 0);
      g_exp.counters_sent = true;
      return -1;
    }
    /* too large (or out of memory): fewer series, in proportion to the overshoot */
    size_t fit = rc == 0 ? (size_t)((double)k * (double)g_max_body / (double)body->len * 0.9) : k / 2;
    k = fit < 1 ? 1 : fit < k ? fit : k - 1;
  }
  if (k) g_per_series = body->len / k;
  g_exp.next = a + k;
  g_exp.counters_sent = true;
  return 0;
}

/* After a body (g_lock held): past the last series, a turn begun mid-way wraps round to
 * the first; back where it began (or past the last, for one begun at the first), it is
 * whole. Series created meanwhile are in it while it has not wrapped (they come at the
 * end), else in the next, which begins where this one ends. */
static void turn_advance(void) {
  if (!g_exp.wrapped && g_exp.next >= g_nseries) {
    if (g_exp.from == 0) {
      g_exp.open = false;
      return;
    }
    g_exp.wrapped = true;
    g_exp.next = 0;
  }
  if (g_exp.wrapped && g_exp.next >= g_exp.from) g_exp.open = false;
}

int ins_otlp_collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg;
  int n = 0;
  pthread_mutex_lock(&g_lock);
  if (fresh && g_live) { /* where the last turn stopped making bodies (see the top) */
    size_t from = g_exp.next < g_nseries ? g_exp.next : 0;
    g_exp = (struct export_cursor){.open = true, .from = from, .next = from};
  }
  size_t unmade = 0;
  while (g_exp.open && n < max) {
    if (ins_otlp_test_hook) ins_otlp_test_hook(&g_drains_waiting);
    size_t first = g_exp.next;
    /* the body's time read with the lock held, as its values are: nothing changes them
     * between the two */
    if (encode_next(&bodies[n].data, now_ns()) != 0) unmade++; /* left empty: counted as dropped */
    bodies[n].held = (struct ins_otlp_held){.made = ++g_made, .first = first, .end = g_exp.next};
    n++;
    turn_advance();
    if (g_exp.open && n < max) {
      /* Between bodies the dump thread takes the lock if it waits: with tens of thousands
       * of series it would otherwise wait for a whole queueful (16 bodies of 4 MiB) and its
       * rings fill (56k series at 200 ms dropped half a million records). The cursor is this
       * thread's alone; series created meanwhile are appended and go in this turn's later
       * bodies (or the next turn's, once this one has wrapped). */
      pthread_mutex_unlock(&g_lock);
      /* a drain waiting (the dump thread, a finalize): in first, for a bounded time */
      for (uint64_t t0 = 0; atomic_load_explicit(&g_drains_waiting, memory_order_relaxed) > 0;) {
        uint64_t t = now_ns();
        if (!t0) t0 = t;
        else if (t - t0 > HANDOFF_NS) break;
        sched_yield();
      }
      pthread_mutex_lock(&g_lock);
    }
  }
  *more = g_exp.open;
  pthread_mutex_unlock(&g_lock);
  if (unmade)
    ins_warn_once(&g_warned_encode, "out of memory encoding OTLP metrics: %zu series left out of an export "
                  "(counted in nccl.inspector.otlp.exports_dropped; later ones are not logged)", unmade);
  return n;
}

/* The exporter's word that a body reached the collector: its series have that body's
 * values there. Series are never removed before shutdown, which stops the exporter
 * first, so [first, end) still names the series the body held. */
void ins_otlp_delivered(void *arg, const struct ins_otlp_held *held) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  for (size_t i = held->first; g_live && i < held->end && i < g_nseries; i++)
    if (g_list[i]->delivered < held->made) g_list[i]->delivered = held->made;
  pthread_mutex_unlock(&g_lock);
}

/* Everything the sink holds, freed (g_lock held): after the last export. */
static void free_state(void) {
  for (size_t i = 0; i < g_nseries; i++) {
    struct ins_otlp_series *x = g_list[i];
    for (int k = 0; k < x->nattrs; k++) free(x->strs[k]);
    free(x->sig);
    free(x);
  }
  free(g_list);
  g_list = NULL;
  g_nseries = g_cap = 0;
  memset(g_table, 0, sizeof g_table);
  while (g_devs) {
    struct ins_otlp_device *d = g_devs;
    g_devs = d->next;
    free(d);
  }
  for (struct ins_otlp_comm *c = g_comms; c; c = c->next) c->listed = false; /* theirs to free */
  g_comms = NULL;
  g_ncomms = 0;
  ins_otlp_config_free(&g_cfg);
  g_exp = (struct export_cursor){0};
}

/* At exit, after the last export (g_lock held): what the collector lacks, by series. A
 * body made after `since` (g_made when shutdown began, after the last drain) holds the
 * series' final totals: a series such a body of which was delivered is there with them.
 * Of the others, some were delivered before only (the collector has their totals as of
 * then) and some never (it has nothing of them: a job shorter than an interval, a
 * collector away all along, bodies rejected). Each counted from what the exporter said was
 * delivered, not from what was sent (a body sent and rejected, or left queued at the
 * deadline, reached nothing). */
static void report_undelivered(uint32_t deadline, uint64_t since) {
  size_t never = 0, earlier = 0;
  for (size_t i = 0; i < g_nseries; i++) {
    uint64_t d = g_list[i]->delivered;
    if (!d) never++;
    else if (d <= since) earlier++;
  }
  if (never || earlier)
    ins_warn("OTLP: the last export at exit was not delivered whole (at most %u ms; the exporter says what "
             "it dropped): of the %zu series, %zu never reached the collector (it has none of their values) "
             "and %zu reached it only in earlier exports (it has their totals as of then)",
             deadline, g_nseries, never, earlier);
}

static void otlp_shutdown(void) {
  if (g_forked) { /* no exporter here; the state is only freed if it is whole */
    struct ins_otlp_exporter *e = atomic_exchange(&g_exporter, NULL);
    if (e) ins_otlp_exporter_stop(e, 0); /* the parent's: in a child it only closes its descriptor */
    pthread_mutex_lock(&g_lock);
    if (g_fork_clean) free_state();
    pthread_mutex_unlock(&g_lock);
    return;
  }
  /* the last export: what the final drains added (bounded: the job is exiting) */
  uint32_t deadline = g_cfg.ep.timeout_ms < STOP_DEADLINE_MS ? g_cfg.ep.timeout_ms : STOP_DEADLINE_MS;
  struct ins_otlp_exporter *e = atomic_exchange(&g_exporter, NULL);
  pthread_mutex_lock(&g_lock);
  uint64_t since = g_made; /* the bodies made from here on hold the final totals */
  pthread_mutex_unlock(&g_lock);
  if (e) ins_otlp_exporter_stop(e, deadline); /* its thread has ended: no collect from here on */
  pthread_mutex_lock(&g_lock);
  if (e) report_undelivered(deadline, since);
  g_live = false;
  free_state();
  pthread_mutex_unlock(&g_lock);
}

/* fork() (see the top): the exporter's lock, taken in the prepare, released after. */
static int otlp_fork_prepare(const struct timespec *until) {
  return pthread_mutex_timedlock(&g_lock, until) == 0 ? 0 : -1;
}

static void otlp_fork_parent(void) { pthread_mutex_unlock(&g_lock); }

static void otlp_fork_child(bool taken) {
  /* made anew: held by us (taken), or by the exporter thread, which is gone */
  pthread_mutex_init(&g_lock, NULL);
  g_forked = true;
  g_fork_clean = taken;
  g_live = false; /* every state, inherited or new, records nothing */
}

const struct ins_sink ins_otlp_sink = {
    .name = "otlp",
    .start = otlp_start,
    .attach = otlp_attach,
    .begin_pass = NULL,
    .record = otlp_record,
    .counts = otlp_counts,
    .end_window = NULL,
    .detach = otlp_detach,
    .shutdown = otlp_shutdown,
    .inflight = otlp_inflight,
    .fork_prepare = otlp_fork_prepare,
    .fork_parent = otlp_fork_parent,
    .fork_child = otlp_fork_child,
};
