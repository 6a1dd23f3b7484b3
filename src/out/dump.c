/*
 * dump.c - the dump thread and ring draining (see dump.h).
 */
#include "out/dump.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/sampler.h"
#include "core/wake.h"
#include "out/files.h"
#include "out/json.h"
#include "out/prom.h"
#include "out/writer.h"
#include "out/wqueue.h"

#define FLUSH_BYTES (256 * 1024)
#define INTERVAL0_US 1000 /* interval 0: the longest a completed record waits to be written */
#define STASH_BYTES (2048 * 1024) /* the dump thread's stash: 18,000 records */

/*
 * The stash: a drain moves records out of a ring (a copy of about 100 bytes
 * each) before formatting them (about half a microsecond each), and moves
 * whatever else has been published before each record it formats. A burst
 * of completions (a producer catching up after the VM or the scheduler held
 * it for a few milliseconds: 1,000 records in 200 us) is then absorbed at
 * copying speed instead of filling the ring while the text is being made.
 * A FIFO of fixed-size slots, owned by whoever drains (never shared);
 * emptied before the drain of a context returns. Finalize and exit drain
 * contexts whose producers are done: one slot (`one`) is enough there, and
 * it is what the dump thread falls back to without memory.
 * Size: at 500,000 records/s into tmpfs in a 2-core VM the dump thread's
 * backlog reached 4,071 records in a run without drops, against the 4,681
 * that 512 KiB held; 2 MiB (37 ms at that rate) leaves room, for a fixed
 * 2 MiB per process (docs/BENCHMARKS.md).
 */
struct stash {
  unsigned char *slot;
  size_t slot_size;          /* a record, and its verbose channel trace */
  uint32_t cap, head, count;
  _Alignas(16) unsigned char one[sizeof(struct ins_record) +
                                 INS_MAX_CHANNELS * sizeof(struct ins_trace_ch)];
};

/* Whoever drains: the dump thread (its batches queued for the writer thread),
 * or a finalizing or exiting thread (writing directly). */
struct drainer {
  struct ins_buf buf;
  uint64_t batch_records; /* records in buf */
  bool queued;            /* buf goes to the writer thread (out/wqueue.h) */
  struct stash stash;
};

static const struct ins_config *g_cfg;
static pthread_t g_thread;
static bool g_thread_running;
static atomic_bool g_stop;
static atomic_int g_warned_drop, g_warned_channel;
static struct drainer g_thread_drainer; /* owned by the dump thread */

static int metadata(char *meta, int cap) {
  return ins_json_metadata(meta, cap, g_cfg->hostname, (long)getpid(), ins_wall_ns() / 1000);
}

/* Write d's batch: queued for the writer thread, or directly after what is queued. */
static void flush(struct drainer *d) {
  if (d->queued) {
    ins_wqueue_push(&d->buf, d->batch_records);
  } else {
    ins_wqueue_sync();
    ins_writer_append_records(d->buf.data, d->buf.len, d->batch_records);
    d->buf.len = 0;
  }
  d->batch_records = 0;
}

/* A stash of about `bytes` (0: the one built-in slot). */
static void stash_init(struct stash *st, size_t bytes) {
  st->slot_size = (sizeof(struct ins_record) +
                   (g_cfg->verbose ? INS_MAX_CHANNELS * sizeof(struct ins_trace_ch) : 0) + 15) &
                  ~(size_t)15;
  st->head = st->count = 0;
  st->cap = (uint32_t)(bytes / st->slot_size);
  st->slot = st->cap > 1 ? malloc(st->cap * st->slot_size) : NULL;
  if (!st->slot) st->slot = st->one, st->cap = 1;
}

static void stash_free(struct stash *st) {
  if (st->slot != st->one) free(st->slot);
  st->slot = NULL;
}

/* Move every published record of ring into the stash, while it has room. */
static void stash_take(struct stash *st, struct ins_ring *ring) {
  struct ins_record *r;
  while (st->count < st->cap && (r = ins_ring_peek(ring))) {
    size_t n = sizeof *r + (size_t)r->nchannels * sizeof(struct ins_trace_ch) * g_cfg->verbose;
    memcpy(st->slot + (size_t)((st->head + st->count) % st->cap) * st->slot_size, r, n);
    st->count++;
    ins_ring_release(ring, r);
  }
}

/* Move one context's records into d's buffer (caller holds c->drain_lock). */
static void drain(struct ins_comm *c, struct drainer *d, const char *meta, int mlen) {
  struct ins_buf *b = &d->buf;
  struct stash *st = &d->stash;
  struct ins_dump_counts k = {0};
  bool news = false;
  for (int kind = 0; kind < 2; kind++) {
    struct ins_ring *ring = &c->ring[kind];
    for (;;) {
      stash_take(st, ring);
      if (!st->count) break;
      const struct ins_record *r = (const void *)(st->slot + (size_t)st->head * st->slot_size);
      int rc = g_cfg->prom_dump ? ins_prom_add(c, r)
                                : ins_json_record(b, c, meta, mlen, r, c->verbose);
      if (rc != 0)
        atomic_fetch_add(&c->dropped[kind], 1); /* out of memory for the text or series */
      else
        c->stats[kind].written++, d->batch_records++;
      st->head = (st->head + 1) % st->cap;
      st->count--;
      if (b->len >= FLUSH_BYTES) flush(d);
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
static void dump_pass(struct drainer *d) {
  char meta[1024];
  int mlen = metadata(meta, sizeof meta);
  ins_registry_lock();
  for (struct ins_comm *c = ins_registry_first(); c; c = c->next) {
    pthread_mutex_lock(&c->drain_lock);
    drain(c, d, meta, mlen);
    pthread_mutex_unlock(&c->drain_lock);
  }
  /* Write before letting go of the registry: a finalize waiting to remove a
   * context would otherwise write that context's later lines first. */
  flush(d);
  ins_registry_unlock();
}

/* After ins_wake_prepare: a ring that wants the thread awake (see wake.h). */
static bool any_wake_wanted(void) {
  bool yes = false;
  ins_registry_lock();
  for (struct ins_comm *c = ins_registry_first(); c && !yes; c = c->next)
    yes = ins_wake_wanted(&c->ring[0]) || ins_wake_wanted(&c->ring[1]);
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
    long long wait = interval > 0 ? interval : interval == 0 ? INTERVAL0_US : -1;
    if (prom && interval > 0) { /* a filling ring wakes us early: keep the windows regular */
      uint64_t now = ins_mono_ns();
      wait = now < window_end ? (long long)((window_end - now + 999) / 1000) : 0;
    }
    /* Interval 0 sleeps at most INTERVAL0_US; otherwise until the interval has
     * passed or a ring fills (-1: only a ring filling, or exit). */
    if (!atomic_load(&g_stop) && !any_wake_wanted() && wait != 0)
      ins_wake_wait(&g_ins_wake, seq, wait);
    ins_wake_done(&g_ins_wake);
    dump_pass(&g_thread_drainer);
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
  /* Now, not at the first write: with the default interval that is teardown, hours
   * later. The writers check again then (the directory may change meanwhile). */
  if (ins_dir_writable(cfg->dump_dir) != 0)
    ins_warn("NCCL_INSPECTOR_DUMP_DIR: cannot write to '%s': %s; records will be counted as "
             "lost unless it becomes writable (set NCCL_INSPECTOR_DUMP_DIR to a writable "
             "directory)", cfg->dump_dir, strerror(errno));
  if (cfg->prom_dump) ins_prom_configure(cfg);
  /* Interval 0 (continuous): the thread wakes every INTERVAL0_US by itself, and a
   * producer wakes it only when a ring is a sixteenth full, so that a callback
   * makes a system call (the futex wake) once per many records, not per record. */
  g_ins_wake.full_shift = cfg->interval_us == 0 ? 4 : cfg->interval_us > 0 ? 2 : 1;
  if (!cfg->dump_thread_enable) {
    ins_info("dump thread disabled: records are written at communicator teardown and exit");
    return;
  }
  stash_init(&g_thread_drainer.stash, STASH_BYTES);
  /* JSON batches go to a writer thread; Prometheus files are written by the dump thread */
  g_thread_drainer.queued = !cfg->prom_dump && ins_wqueue_start();
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
  struct drainer d = {0};
  stash_init(&d.stash, 0);
  char meta[1024];
  int mlen = metadata(meta, sizeof meta);
  pthread_mutex_lock(&c->drain_lock);
  drain(c, &d, meta, mlen);
  pthread_mutex_unlock(&c->drain_lock);
  flush(&d);
  ins_buf_free(&d.buf);
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
  ins_wqueue_stop(); /* what the dump thread queued is written first */
  struct drainer d = {0};
  stash_init(&d.stash, 0);
  dump_pass(&d);
  ins_buf_free(&d.buf);
  ins_buf_free(&g_thread_drainer.buf);
  stash_free(&g_thread_drainer.stash);
  if (g_cfg->prom_dump) ins_prom_shutdown();
  unsigned long long lost = ins_writer_unwritten();
  if (lost)
    ins_warn("%llu records could not be written to %s (see the earlier warning)", lost,
             g_cfg->dump_dir);
}
