/*
 * dump.c - the dump thread and ring draining (see dump.h).
 */
#include "out/dump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/sampler.h"
#include "core/wake.h"
#include "out/json.h"
#include "out/prom.h"
#include "out/writer.h"

#define FLUSH_BYTES (256 * 1024)

static const struct ins_config *g_cfg;
static pthread_t g_thread;
static bool g_thread_running;
static atomic_bool g_stop;
static atomic_int g_warned_drop, g_warned_channel, g_warned_write;
static struct ins_buf g_thread_buf; /* owned by the dump thread */
static atomic_ullong g_unwritten;   /* records formatted but not written (I/O failure) */
static _Thread_local uint64_t t_batch_records; /* records in the caller's buffer */

static int metadata(char *meta, int cap) {
  return ins_json_metadata(meta, cap, g_cfg->hostname, (long)getpid(), ins_wall_ns() / 1000);
}

static void flush(struct ins_buf *b) {
  if (b->len && ins_writer_append(b->data, b->len) != 0) {
    atomic_fetch_add(&g_unwritten, t_batch_records);
    ins_warn_once(&g_warned_write, "records could not be written; their number is reported at exit");
  }
  b->len = 0;
  t_batch_records = 0;
}

/* Move one context's records into b (caller holds c->drain_lock). */
static void drain(struct ins_comm *c, struct ins_buf *b, const char *meta, int mlen) {
  struct ins_dump_counts k = {0};
  bool news = false;
  for (int kind = 0; kind < 2; kind++) {
    struct ins_ring *ring = &c->ring[kind];
    struct ins_record *r;
    while ((r = ins_ring_peek(ring))) {
      int rc = g_cfg->prom_dump ? ins_prom_add(c, r)
                                : ins_json_record(b, c, meta, mlen, r, c->verbose);
      if (rc != 0)
        atomic_fetch_add(&c->dropped[kind], 1); /* out of memory for the text or series */
      else
        c->stats[kind].written++, t_batch_records++;
      ins_ring_release(ring, r);
      if (b->len >= FLUSH_BYTES) flush(b);
    }
    struct ins_comm_stats *s = &c->stats[kind];
    k.total[kind] = s->written;
    k.since[kind] = s->written - s->reported_written;
    k.dropped_total[kind] = atomic_load(&c->dropped[kind]);
    k.dropped_since[kind] = k.dropped_total[kind] - s->reported_dropped;
    news |= k.since[kind] || k.dropped_since[kind];
  }
  /* Prometheus mode: the counts feed the per-device counters instead of a stats line. */
  if (news && g_cfg->prom_dump) ins_prom_count(c, k.since, k.dropped_since);
  struct ins_sample_stats smp;
  if (news && !g_cfg->prom_dump) ins_sampler_stats(&smp);
  if (news && (g_cfg->prom_dump || ins_json_stats(b, c, meta, mlen, &k, &smp) == 0)) {
    for (int kind = 0; kind < 2; kind++) {
      c->stats[kind].reported_written = k.total[kind];
      c->stats[kind].reported_dropped = k.dropped_total[kind];
    }
  }
  if (k.dropped_since[0] || k.dropped_since[1])
    ins_warn_once(&g_warned_drop,
                  "communicator 0x%llx rank %d dropped %llu collective and %llu P2P records "
                  "(ring full or too many ops in flight); counts are in dump_stats. Raise "
                  "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE / NCCL_INSPECTOR_DUMP_P2P_RING_SIZE or "
                  "enable the dump thread",
                  (unsigned long long)c->id, c->rank, (unsigned long long)k.dropped_since[0],
                  (unsigned long long)k.dropped_since[1]);
  if (atomic_load_explicit(&c->bad_channel, memory_order_relaxed))
    ins_warn_once(&g_warned_channel,
                  "kernel events with channel ids of 64 or more were ignored (communicator 0x%llx)",
                  (unsigned long long)c->id);
}

/* One pass over every live context. */
static void dump_pass(struct ins_buf *b) {
  char meta[512];
  int mlen = metadata(meta, sizeof meta);
  ins_registry_lock();
  for (struct ins_comm *c = ins_registry_first(); c; c = c->next) {
    pthread_mutex_lock(&c->drain_lock);
    drain(c, b, meta, mlen);
    pthread_mutex_unlock(&c->drain_lock);
  }
  /* Write before letting go of the registry: a finalize waiting to remove a
   * context would otherwise write that context's later lines first. */
  flush(b);
  ins_registry_unlock();
}

static bool any_pending(void) {
  bool yes = false;
  ins_registry_lock();
  for (struct ins_comm *c = ins_registry_first(); c && !yes; c = c->next)
    yes = ins_ring_used_approx(&c->ring[0]) || ins_ring_used_approx(&c->ring[1]);
  ins_registry_unlock();
  return yes;
}

static void *dump_thread(void *arg) {
  (void)arg;
  long long interval = g_cfg->interval_us;
  bool prom = g_cfg->prom_dump;
  uint64_t window_end = ins_mono_ns() + (uint64_t)(interval > 0 ? interval : 0) * 1000;
  while (!atomic_load(&g_stop)) {
    uint32_t seq = ins_wake_prepare(&g_ins_wake);
    long long wait = interval > 0 ? interval : -1;
    if (prom && interval > 0) { /* a filling ring wakes us early: keep the windows regular */
      uint64_t now = ins_mono_ns();
      wait = now < window_end ? (long long)((window_end - now + 999) / 1000) : 0;
    }
    /* Interval 0 sleeps until a record arrives; -1 until a ring fills (or exit). */
    if (!atomic_load(&g_stop) && !(interval == 0 && any_pending()) && wait != 0)
      ins_wake_wait(&g_ins_wake, seq, wait);
    ins_wake_done(&g_ins_wake);
    dump_pass(&g_thread_buf);
    /* Prometheus: a pass only folds records into the window; the files are written
     * when the interval has passed (with -1, only at teardown and exit). */
    if (prom && interval > 0 && ins_mono_ns() >= window_end) {
      ins_prom_write_all();
      window_end = ins_mono_ns() + (uint64_t)interval * 1000;
    }
  }
  return NULL;
}

void ins_dump_start(const struct ins_config *cfg) {
  g_cfg = cfg;
  ins_writer_configure(cfg->dump_dir, cfg->hostname);
  if (cfg->prom_dump) ins_prom_configure(cfg);
  g_ins_wake.on_every_record = cfg->interval_us == 0;
  g_ins_wake.full_shift = cfg->interval_us > 0 ? 2 : 1; /* a quarter / half of a ring */
  if (!cfg->dump_thread_enable) {
    ins_info("dump thread disabled: records are written at communicator teardown and exit");
    return;
  }
  if (pthread_create(&g_thread, NULL, dump_thread, NULL) != 0) {
    ins_warn("cannot start the dump thread: records are written at teardown only");
    return;
  }
  g_thread_running = true;
  if (cfg->interval_us < 0)
    ins_info("dump thread started: writing at communicator teardown (and whenever a ring is half full)");
  else
    ins_info("dump thread started: interval %lld us", cfg->interval_us);
}

void ins_dump_comm_final(struct ins_comm *c) {
  if (!g_cfg) return;
  struct ins_buf b = {0};
  char meta[512];
  int mlen = metadata(meta, sizeof meta);
  pthread_mutex_lock(&c->drain_lock);
  drain(c, &b, meta, mlen);
  pthread_mutex_unlock(&c->drain_lock);
  flush(&b);
  ins_buf_free(&b);
  if (g_cfg->prom_dump) ins_prom_detach(c); /* write its device's file, or remove it */
}

void ins_dump_shutdown(void) {
  if (!g_cfg) return;
  if (g_thread_running) {
    atomic_store(&g_stop, true);
    atomic_store(&g_ins_wake.waiting, 1);
    ins_wake_signal(&g_ins_wake);
    pthread_join(g_thread, NULL);
    g_thread_running = false;
  }
  struct ins_buf b = {0};
  dump_pass(&b);
  ins_buf_free(&b);
  ins_buf_free(&g_thread_buf);
  if (g_cfg->prom_dump) ins_prom_shutdown();
  unsigned long long lost = atomic_load(&g_unwritten);
  if (lost)
    ins_warn("%llu records could not be written to %s (see the earlier warning)", lost,
             g_cfg->dump_dir);
}
