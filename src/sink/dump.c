/*
 * dump.c - the dump thread and ring draining (see dump.h).
 */
#include "sink/dump.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/sampler.h"
#include "core/timer.h"
#include "core/wake.h"
#include "sink/files.h"
#include "sink/json.h"
#include "sink/prom.h"
#include "sink/writer.h"
#include "sink/wqueue.h"

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
  _Alignas(16) unsigned char one[INS_RECORD_MAX(1)];
};

/* Whoever drains: the dump thread (its batches queued for the writer thread),
 * or a finalizing or exiting thread (writing directly). */
struct drainer {
  struct ins_buf buf;
  uint64_t batch_records; /* records in buf */
  bool queued;            /* buf goes to the writer thread (sink/wqueue.h) */
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
  st->slot_size = (INS_RECORD_MAX(g_cfg->verbose) + 15) & ~(size_t)15;
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
    size_t n = ins_record_size(r, g_cfg->verbose);
    memcpy(st->slot + (size_t)((st->head + st->count) % st->cap) * st->slot_size, r, n);
    st->count++;
    ins_ring_release(ring, r);
  }
}

/* One record into d's buffer (or the Prometheus window), in ns (core/timer.h). */
static void emit(struct ins_comm *c, struct drainer *d, struct ins_record *r, const char *meta,
                 int mlen) {
  if (r->timing == INS_TIMING_KERNEL_GPU) { /* host-timed records are host ns already */
    r->start_ns = ins_timer_to_ns(&c->timer, r->start_ns);
    r->exec_ns = ins_timer_to_ns(&c->timer, r->exec_ns);
  }
  int rc = g_cfg->prom_dump ? ins_prom_add(c, r) : ins_json_record(&d->buf, c, meta, mlen, r, c->verbose);
  if (rc != 0)
    atomic_fetch_add(&c->dropped[r->kind], 1); /* out of memory for the text or series */
  else
    c->stats[r->kind].written++, d->batch_records++;
  if (d->buf.len >= FLUSH_BYTES) flush(d);
}

/* ---- holding records back until the GPU timer's unit is known (core/timer.h) ---- */

#define HOLD_MAX_BYTES (8u << 20) /* then the unit is decided on what there is */

static atomic_int g_said_unit[3]; /* the decision logged once per process, per unit */

/* Keep a copy of r; false if there is no room (HOLD_MAX_BYTES) or memory. */
static bool hold(struct ins_comm *c, const struct ins_record *r, size_t slot) {
  if (c->held_n == c->held_cap) {
    size_t cap = c->held_cap ? 2 * c->held_cap : 256;
    if (cap * slot > HOLD_MAX_BYTES) return false;
    unsigned char *p = realloc(c->held, cap * slot);
    if (!p) return false;
    c->held = p, c->held_cap = cap, c->held_slot = slot;
  }
  assert(slot == c->held_slot); /* every drainer's stash slot has the same size */
  memcpy(c->held + c->held_n++ * slot, r, ins_record_size(r, c->verbose));
  return true;
}

/* The unit is known: stop measuring, say so, write what was held back, in order. */
static void release_held(struct ins_comm *c, struct drainer *d, const char *meta, int mlen) {
  const struct ins_timer *t = &c->timer;
  atomic_store_explicit(&c->timer_probe, 0, memory_order_relaxed);
  if (t->rate_khz && !atomic_exchange(&g_said_unit[t->unit], 1)) {
    char how[160];
    if (t->measured)
      snprintf(how, sizeof how, "pTimers advanced %.6f x host time over %u ops (%.1f ms)",
               t->ratio, t->ops, (double)t->span_ns / 1e6);
    else
      snprintf(how, sizeof how, "too few ops to measure (%u over %.3f ms): assumed", t->ops,
               (double)t->span_ns / 1e6);
    ins_info("GPU timer of communicator 0x%llx rank %d: %s; HIP reports a %u kHz wall clock: "
             "reading pTimers as %s", (unsigned long long)c->id, c->rank, how, t->rate_khz,
             t->unit == INS_TIMER_TICKS ? "ticks of that clock (scaled to ns)" : "ns");
  }
  for (size_t i = 0; i < c->held_n; i++)
    emit(c, d, (struct ins_record *)(c->held + i * c->held_slot), meta, mlen);
  free(c->held);
  c->held = NULL;
  c->held_n = c->held_cap = 0;
}

/* A record taken out of a ring: written, or held while the unit is unknown. */
static void take(struct ins_comm *c, struct drainer *d, struct ins_record *r, const char *meta,
                 int mlen) {
  /* only GPU-timed records wait: the others are in host ns whatever the GPU timer's unit */
  if (c->timer.unit == INS_TIMER_PENDING && r->timing == INS_TIMING_KERNEL_GPU) {
    ins_timer_observe(&c->timer, r->start_ns + r->exec_ns, r->host_done_ns);
    if (!ins_timer_decide(&c->timer, false) && hold(c, r, d->stash.slot_size)) return;
    ins_timer_decide(&c->timer, true); /* no room left to hold: what there is */
    release_held(c, d, meta, mlen);
  }
  emit(c, d, r, meta, mlen);
}

/* Move one context's records into d's buffer (caller holds c->drain_lock). `final`:
 * the context's last drain (finalize, exit): nothing may stay held back. */
static void drain(struct ins_comm *c, struct drainer *d, const char *meta, int mlen, bool final) {
  struct stash *st = &d->stash;
  struct ins_dump_counts k = {0};
  bool news = false;
  for (int kind = 0; kind < 2; kind++) {
    struct ins_ring *ring = &c->ring[kind];
    for (;;) {
      stash_take(st, ring);
      if (!st->count) break;
      take(c, d, (void *)(st->slot + (size_t)st->head * st->slot_size), meta, mlen);
      st->head = (st->head + 1) % st->cap;
      st->count--;
    }
  }
  /* (no GPU-timed record at all: nothing to decide, nothing held) */
  if (c->timer.unit == INS_TIMER_PENDING && c->held_n && ins_timer_decide(&c->timer, final))
    release_held(c, d, meta, mlen);
  for (int kind = 0; kind < 2; kind++) {
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
  if (news && (g_cfg->prom_dump || ins_json_stats(&d->buf, c, meta, mlen, &k, &smp) == 0)) {
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
static void dump_pass(struct drainer *d, bool final) {
  char meta[1024];
  int mlen = metadata(meta, sizeof meta);
  ins_registry_lock();
  for (struct ins_comm *c = ins_registry_first(); c; c = c->next) {
    pthread_mutex_lock(&c->drain_lock);
    drain(c, d, meta, mlen, final);
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
    dump_pass(&g_thread_drainer, false);
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
  drain(c, &d, meta, mlen, true);
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
  dump_pass(&d, true);
  ins_buf_free(&d.buf);
  ins_buf_free(&g_thread_drainer.buf);
  stash_free(&g_thread_drainer.stash);
  if (g_cfg->prom_dump) ins_prom_shutdown();
  unsigned long long lost = ins_writer_unwritten();
  if (lost)
    ins_warn("%llu records could not be written to %s (see the earlier warning)", lost,
             g_cfg->dump_dir);
}
