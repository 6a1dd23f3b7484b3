/*
 * dump.c - the dump thread and the drains that move records from the
 * communicators' rings to the sinks (see dump.h).
 *
 * Owns: which sinks are on (sinks.c decides), the dump thread and its
 * interval, each drainer's batch and stash, the per-communicator consumer
 * state (the GPU timer's unit and the records held back until it is known:
 * core/timer.h), the records/dropped accounting reported to the sinks, and what
 * a fork() does to all of these (the fork handlers, below). It never asks which
 * format a sink writes, nor where its output goes (sink.h): a sink that writes
 * on a thread of its own (the JSON log's writer, OTLP's exporter) owns it.
 * A pass holds no lock that an init or a finalize takes while it drains or
 * formats: it works on a snapshot of the registry, one communicator at a
 * time under that communicator's drain_lock ("A pass", below).
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
#include <time.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/judge.h"
#include "core/log.h"
#include "core/sampler.h"
#include "core/timer.h"
#include "core/wake.h"
#include "io/files.h"
#include "sink/device.h"
#include "sink/hang.h"
#include "sink/sink.h"
#include "sink/stash.h"

#define INTERVAL0_US 1000 /* interval 0: the longest a completed record waits to be written */
#define STASH_BYTES (2048 * 1024) /* the dump thread's stash: 18,000 records */
#define HOLD_MAX_BYTES (8u << 20) /* records held back for the GPU timer; then it is decided */

/* Whoever drains: the dump thread, or a finalizing or exiting thread (its batches
 * direct: sink.h). */
struct drainer {
  struct ins_sink_batch batch[INS_MAX_SINKS]; /* sink i's view of this drainer */
  struct ins_stash stash;
};

/* Per communicator, owned by whoever holds its drain_lock (c->ext_drain). */
struct drain_comm {
  struct ins_judge judge; /* records whose timestamps may be a later op's (core/judge.h) */
  struct ins_timer timer; /* the GPU timer's unit (core/timer.h) */
  unsigned char *held;    /* GPU-timed records held back until it is known */
  size_t held_n, held_cap, held_slot;
  uint64_t partial[2];    /* records written without some of their channels */
  /* what the sinks were last told (report_counts) */
  uint64_t told_untimed[2][INS_UNTIMED_REASONS], told_unreported[INS_FUNC_COUNT], told_partial[2];
  uint64_t told_bounded[2], told_clock_steps;
  struct ins_hang_comm *hang; /* hang detection's (sink/hang.h): made at the first op */
  /* An inherited context finalized in a forked child (forget): its sinks' states, kept */
  void *left_sink[INS_COMM_EXT_SINKS];
  struct drain_comm *left_next;
};

static const struct ins_config *g_cfg;
static const struct ins_sink *const *g_sinks;
static int g_nsinks;
static pthread_t g_thread;
static bool g_thread_running;
static atomic_bool g_stop;
static atomic_int g_warned_drop, g_warned_channel, g_warned_groups, g_warned_step;
atomic_int ins_sink_dir_said; /* sink.h */
static atomic_int g_said_unit[3]; /* the GPU timer's unit logged once per process, per unit */
static struct drainer g_thread_drainer; /* owned by the dump thread */

/*
 * fork(). A child forked from the job (a data loader, a helper that may create
 * communicators of its own) has one thread: the plugin's threads are gone, and a lock
 * one of them held at the fork stays held in the child forever (a child creating a
 * communicator hung on the registry lock, 4 forks in 150). So, around every fork
 * (pthread_atfork):
 *  - prepare waits until no plugin thread is inside the plugin's locked work: first the
 *    gate, which every drain, attach and window end holds for reading (dump passes,
 *    finalizes, inits, exit: the sinks' locks are taken only inside it), then the
 *    registry lock (inits, finalizes and the registry's walks take it briefly, inside
 *    the gate or outside it, never while waiting for another lock), then each
 *    sink's own lock that a thread of its own takes outside the gate (sink.h
 *    fork_prepare: the JSON log's writer queue with no batch in writing, as the writer
 *    thread then holds the log file's lock; OTLP's exporter). The order the work itself
 *    takes them: no deadlock.
 *  - the parent releases them. The child releases them too (the gate it makes anew),
 *    marks every context it inherited foreign (its records are the parent's: the child writing them at
 *    finalize put 2,440 duplicates in 60 children's files), and starts its own dump and
 *    sinks' threads (sink.h dump_starting) at its first communicator of its own, whose
 *    records go to its own file (<host>-pid<childpid>.log: json/writer.c).
 * The gate is writer-preferring: a busy dump thread would otherwise keep a fork out
 * indefinitely. The wait is bounded (INS_FORK_WAIT_MS): a write stuck on a hung file system
 * must not stop the job's fork. Past the bound the child cannot know which locks the
 * plugin's threads held (a sink's among them), so it records nothing: its communicators
 * are foreign from their init, with one warning, and those it inherited are treated as
 * foreign without the registry's say (core/comm.h: it is left inert there).
 */
static pthread_rwlock_t g_gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static _Thread_local struct {
  bool gate, registry;
  unsigned sinks; /* bit i: g_sinks[i]'s fork_prepare took its lock */
} t_fork; /* what this thread's fork prepare took (two threads may fork at once) */
static atomic_int g_fork_waiting; /* forks waiting for the gate: passes end early */
static bool g_fork_off;         /* a child forked past the bound: records nothing */
static atomic_bool g_restart;   /* a child whose parent ran the dump thread: start ours */
static struct drain_comm *_Atomic g_left; /* forget() */
static atomic_int g_warned_fork;
void (*ins_dump_test_hook)(enum ins_dump_hook_at at, const struct ins_comm *c);

/* A communicator's drain is over: each sink's output of it goes out (a direct drainer's
 * before this returns: when a finalize returns, every record of its communicator is
 * written; the dump thread's queued before it lets go of the communicator: dump_pass). */
static void flush(struct drainer *d, struct ins_comm *c) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->flush) g_sinks[i]->flush(&d->batch[i], c, c->ext_sink[i]);
}

/* `direct`: a finalizing or exiting thread (sink.h). */
static void drainer_init(struct drainer *d, size_t stash_bytes, bool direct) {
  memset(d, 0, sizeof *d);
  for (int i = 0; i < INS_MAX_SINKS; i++) d->batch[i].direct = direct;
  ins_stash_init(&d->stash, stash_bytes, g_cfg->verbose);
}

static void drainer_free(struct drainer *d) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->batch_free) g_sinks[i]->batch_free(&d->batch[i]);
  ins_stash_free(&d->stash);
}

/* A pass begins: the sinks prepare what is the same for all its records. */
static void begin_pass(struct drainer *d) {
  uint64_t wall_us = ins_wall_ns() / 1000;
  for (int i = 0; i < g_nsinks; i++) {
    d->batch[i].wall_us = wall_us;
    if (g_sinks[i]->begin_pass) g_sinks[i]->begin_pass(&d->batch[i]);
  }
}

/* GPU-timed: its times in the GPU timer's unit, until emit converts them. */
static bool gpu_timed(const struct ins_record *r) {
  return r->timing == INS_TIMING_KERNEL_GPU || r->timing == INS_TIMING_UNVERIFIED ||
         r->timing == INS_TIMING_BOUND;
}

/* One record, in ns (core/timer.h), to every sink; dropped if one could not keep it. An
 * unverified op (NCCL_INSPECTOR_DUMP_UNVERIFIED=1) goes too, and a bound (core/judge.h,
 * "Bounds"), and the sinks that write only records skip them: the op is counted as
 * untimed (and bounded), not as written or dropped. */
static void emit(struct ins_comm *c, struct drainer *d, struct ins_record *r) {
  struct drain_comm *dc = c->ext_drain;
  bool gpu = gpu_timed(r);
  if (gpu) { /* host-timed records are host ns already */
    r->start_ns = ins_timer_to_ns(&dc->timer, r->start_ns);
    r->exec_ns = ins_timer_to_ns(&dc->timer, r->exec_ns);
  }
  int rc = 0;
  for (int i = 0; i < g_nsinks; i++) rc |= g_sinks[i]->record(&d->batch[i], c, c->ext_sink[i], r);
  if (r->timing == INS_TIMING_UNVERIFIED || r->timing == INS_TIMING_BOUND) {
    /* counted by the judge */
  } else if (rc != 0) {
    atomic_fetch_add(&c->dropped[r->kind], 1); /* out of memory for the text or series */
  } else {
    c->stats[r->kind].written++;
    if (r->stale_channels) dc->partial[r->kind]++;
  }
}

/* ---- holding records back until the GPU timer's unit is known (core/timer.h) ---- */

/* Keep a copy of r; false if there is no room (HOLD_MAX_BYTES) or memory. */
static bool hold(struct ins_comm *c, const struct ins_record *r, size_t slot) {
  struct drain_comm *dc = c->ext_drain;
  if (dc->held_n == dc->held_cap) {
    size_t cap = dc->held_cap ? 2 * dc->held_cap : 256;
    if (cap * slot > HOLD_MAX_BYTES) return false;
    unsigned char *p = realloc(dc->held, cap * slot);
    if (!p) return false;
    dc->held = p, dc->held_cap = cap, dc->held_slot = slot;
  }
  assert(slot == dc->held_slot); /* every drainer's stash slot has the same size */
  memcpy(dc->held + dc->held_n++ * slot, r, ins_record_size(r, c->verbose));
  return true;
}

/* The unit is known: stop measuring, say so, write what was held back, in order. */
static void release_held(struct ins_comm *c, struct drainer *d) {
  struct drain_comm *dc = c->ext_drain;
  const struct ins_timer *t = &dc->timer;
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
  for (size_t i = 0; i < dc->held_n; i++)
    emit(c, d, (struct ins_record *)(dc->held + i * dc->held_slot));
  free(dc->held);
  dc->held = NULL;
  dc->held_n = dc->held_cap = 0;
}

/* A record the judge let through: to the sinks, or held while the unit is unknown. */
struct judged_to {
  struct ins_comm *c;
  struct drainer *d;
};

static void judged(void *arg, struct ins_record *r) {
  struct judged_to *to = arg;
  struct ins_comm *c = to->c;
  struct drainer *d = to->d;
  struct drain_comm *dc = c->ext_drain;
  /* only GPU-timed records wait: the others are in host ns whatever the GPU timer's unit
   * (an unverified op waits, but its timestamps measure nothing; a bound's are other ops') */
  if (dc->timer.unit == INS_TIMER_PENDING &&
      (r->timing == INS_TIMING_UNVERIFIED || r->timing == INS_TIMING_BOUND)) {
    if (hold(c, r, d->stash.slot_size)) return;
  }
  if (dc->timer.unit == INS_TIMER_PENDING && r->timing == INS_TIMING_KERNEL_GPU) {
    ins_timer_observe(&dc->timer, r->start_ns + r->exec_ns, r->host_done_ns);
    if (!ins_timer_decide(&dc->timer, false) && hold(c, r, d->stash.slot_size)) return;
    ins_timer_decide(&dc->timer, true); /* no room left to hold: what there is */
    release_held(c, d);
  }
  emit(c, d, r);
}

/* A record taken out of a ring: first, with hang detection on, its op as the context's
 * newest completed (sink/hang.h), in ns; then to the judge (core/judge.h). */
static void take(struct ins_comm *c, struct drainer *d, struct ins_record *r) {
  struct drain_comm *dc = c->ext_drain;
  if (g_cfg->hang_ns && r->timing != INS_TIMING_SHADOW) { /* a shadow is the judge's only */
    uint64_t end = r->start_ns ? r->start_ns + r->exec_ns : 0;
    if (end && r->timing == INS_TIMING_KERNEL_GPU) end = ins_timer_to_ns(&dc->timer, end);
    ins_hang_note(&dc->hang, r, end);
  }
  struct judged_to to = {c, d};
  ins_judge_take(&dc->judge, r, judged, &to);
}

/* ---- draining ---------------------------------------------------------------- */

/* The ops of kind that left no record, by reason: the tracker's and the judge's (dc:
 * c's drain state). */
static uint64_t untimed_now(const struct ins_comm *c, const struct drain_comm *dc, int kind,
                            int reason) {
  uint64_t n = atomic_load(&c->untimed[kind][reason]);
  return reason == INS_UNTIMED_UNVERIFIED ? n + dc->judge.unverified[kind] : n;
}

/* Records dropped, said once per process when it first happens, with its likely cause
 * (the dump thread's state decides which); each communicator's total at its finalize
 * and the process's at exit (dropped_said), so the first count is not the last word.
 * The first and the process's total are notices (core/log.h): records lost. */
static atomic_ullong g_dropped_final; /* the finalized communicators' drops */

static void say_dropping(const struct ins_comm *c, const struct ins_sink_counts *k) {
  if (g_cfg->dump_thread_enable)
    ins_notice(&g_warned_drop, NULL,
               "communicator 0x%llx rank %d is dropping records (%llu collective and %llu P2P so "
               "far): its ring filled before the dump thread emptied it (a busy CPU, or bursts "
               "of ops larger than the ring), or too many ops were in flight. Counts are in "
               "dump_stats; totals at finalize and exit. Raise NCCL_INSPECTOR_DUMP_COLL_RING_SIZE "
               "/ NCCL_INSPECTOR_DUMP_P2P_RING_SIZE, or shorten "
               "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS",
               (unsigned long long)c->id, c->rank, (unsigned long long)k->dropped_total[0],
               (unsigned long long)k->dropped_total[1]);
  else
    ins_notice(&g_warned_drop, NULL,
               "communicator 0x%llx rank %d is dropping records (%llu collective and %llu P2P so "
               "far): the dump thread is off (NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0), so records "
               "wait in the ring until the finalize, and it filled. Counts are in dump_stats; "
               "totals at finalize and exit. Enable the dump thread, or raise "
               "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE / NCCL_INSPECTOR_DUMP_P2P_RING_SIZE",
               (unsigned long long)c->id, c->rank, (unsigned long long)k->dropped_total[0],
               (unsigned long long)k->dropped_total[1]);
}

/* A communicator's drops at its finalize (or at exit): its total, logged; the process's
 * total kept for exit. */
static void dropped_final(const struct ins_comm *c) {
  unsigned long long coll = atomic_load(&c->dropped[0]), p2p = atomic_load(&c->dropped[1]);
  if (!coll && !p2p) return;
  atomic_fetch_add(&g_dropped_final, coll + p2p);
  ins_info("communicator 0x%llx rank %d dropped %llu collective and %llu P2P records in all",
           (unsigned long long)c->id, c->rank, coll, p2p);
}

/* What the context wrote, dropped and could not time, to the sinks when something changed. */
static void report_counts(struct ins_comm *c, struct drainer *d) {
  struct drain_comm *dc = c->ext_drain;
  struct ins_sample_stats smp;
  struct ins_sink_counts k = {.sampling = &smp, .timer = &dc->timer};
  bool news = false;
  for (int kind = 0; kind < 2; kind++) {
    struct ins_comm_stats *s = &c->stats[kind];
    k.total[kind] = s->written;
    k.since[kind] = s->written - s->reported_written;
    k.dropped_total[kind] = atomic_load(&c->dropped[kind]);
    k.dropped_since[kind] = k.dropped_total[kind] - s->reported_dropped;
    k.partial_total[kind] = dc->partial[kind];
    news |= k.since[kind] || k.dropped_since[kind] || dc->partial[kind] != dc->told_partial[kind];
    k.bounded_total[kind] = dc->judge.bounded[kind];
    k.bounded_since[kind] = k.bounded_total[kind] - dc->told_bounded[kind];
    news |= k.bounded_since[kind] != 0;
    for (int why = 0; why < INS_UNTIMED_REASONS; why++) {
      k.untimed_total[kind][why] = untimed_now(c, dc, kind, why);
      k.untimed_since[kind][why] = k.untimed_total[kind][why] - dc->told_untimed[kind][why];
      news |= k.untimed_since[kind][why] != 0;
    }
  }
  for (int f = 0; f < INS_FUNC_COUNT; f++) {
    k.unreported_total[f] = atomic_load(&c->unreported[f]);
    k.unreported_since[f] = k.unreported_total[f] - dc->told_unreported[f];
    news |= k.unreported_since[f] != 0;
  }
  k.clock_steps = atomic_load_explicit(&c->clock_steps, memory_order_relaxed);
  news |= k.clock_steps != dc->told_clock_steps;
  if (news) {
    ins_sampler_stats(&smp);
    int rc = 0;
    for (int i = 0; i < g_nsinks; i++) rc |= g_sinks[i]->counts(&d->batch[i], c, c->ext_sink[i], &k);
    if (rc == 0) { /* else the same news goes out with the next drain */
      for (int kind = 0; kind < 2; kind++) {
        c->stats[kind].reported_written = k.total[kind];
        c->stats[kind].reported_dropped = k.dropped_total[kind];
        dc->told_partial[kind] = k.partial_total[kind];
        dc->told_bounded[kind] = k.bounded_total[kind];
        memcpy(dc->told_untimed[kind], k.untimed_total[kind], sizeof dc->told_untimed[kind]);
      }
      memcpy(dc->told_unreported, k.unreported_total, sizeof dc->told_unreported);
      dc->told_clock_steps = k.clock_steps;
    }
  }
  if (k.dropped_since[0] || k.dropped_since[1]) say_dropping(c, &k);
  if (k.clock_steps)
    ins_warn_once(&g_warned_step,
                  "communicator 0x%llx rank %d: the GPU clock went back (a step of the clock it "
                  "follows, NTP's); the ops that started before it was proven are counted "
                  "handed_over, and timing goes on from the new time (clock_steps in dump_stats)",
                  (unsigned long long)c->id, c->rank);
  if (atomic_load_explicit(&c->bad_channel, memory_order_relaxed))
    ins_warn_once(&g_warned_channel,
                  "kernel events with channel ids of 64 or more were ignored (communicator 0x%llx)",
                  (unsigned long long)c->id);
  /* ops, but no application group ever begun: the host sends no Group (nor API) events
   * (core/op.c group_unknown) */
  if (!atomic_load_explicit(&c->group_seq, memory_order_relaxed) &&
      atomic_load_explicit(&c->ops_seq, memory_order_relaxed))
    ins_warn_once(&g_warned_groups,
                  "communicator 0x%llx: the host reports operations without Group events; each op "
                  "is taken to share its kernel launch with every op issued since the last one "
                  "completed, so fewer ops can be proven right while many are in flight",
                  (unsigned long long)c->id);
}

/* Move one context's records to the sinks (caller holds c->drain_lock). `final`: the
 * context's last drain (finalize, exit): nothing may stay held back. */
static void drain(struct ins_comm *c, struct drainer *d, bool final) {
  struct drain_comm *dc = c->ext_drain;
  struct ins_record *r;
  for (int kind = 0; kind < 2; kind++) {
    struct ins_ring *ring = &c->ring[kind];
    /* At most what the ring held as this drain began (its positions reserved by then): a
     * producer that keeps up would otherwise keep the drain, and the pass, going for as
     * long as it runs, and whoever waits for this context's drain_lock (its finalize)
     * with it. What comes meanwhile is the next pass's. The last drain's producers are
     * done: all of it. */
    uint64_t budget = final ? UINT64_MAX : ins_ring_used_approx(ring);
    for (;;) {
      /* A fork waits for this pass (g_gate): what is in the stash is finished, the ring's
       * rest waits for the next pass, so that the pass ends at once. (The last drain
       * always ends.) */
      if (budget && (final || !atomic_load_explicit(&g_fork_waiting, memory_order_relaxed)))
        budget -= ins_stash_take(&d->stash, ring, g_cfg->verbose, budget);
      if (!(r = ins_stash_head(&d->stash))) break;
      take(c, d, r);
      ins_stash_pop(&d->stash);
      if (ins_dump_test_hook) ins_dump_test_hook(INS_DUMP_HOOK_DRAIN, c);
    }
    ins_ring_trim(ring); /* drained: its last segment back to the pool (core/ring.h) */
  }
  struct judged_to to = {c, d};
  ins_judge_settle(&dc->judge, final, judged, &to);
  /* (no GPU-timed record at all: nothing to decide, nothing held) */
  if (dc->timer.unit == INS_TIMER_PENDING && dc->held_n && ins_timer_decide(&dc->timer, final))
    release_held(c, d);
  report_counts(c, d);
}

/*
 * A pass, and who waits for whom. A communicator's init or finalize never waits for the
 * draining or formatting of other communicators (an init in the middle of training, as
 * PyTorch makes its subgroups lazily, would stall the job: when a pass held the registry
 * lock throughout, two busy communicators held another thread's init 30 s). So a pass:
 *  - walks a snapshot of the live contexts (comm.h: the registry lock only for the copy
 *    of its array); a context finalized meanwhile is not retired until the walk ends;
 *  - drains each under its own drain_lock, at most what its rings held when the pass
 *    reached it (drain): however busy its producers, the pass ends;
 *  - writes before letting go of the context: its lines are handed on (flush: queued
 *    for the writer thread, one context's to a batch) before its drain_lock is released.
 *    A finalize that takes the lock next would otherwise write that context's later lines
 *    first, or return before its earlier ones are written. As it is, the finalize's own
 *    lines are written next, after that context's lines still queued (sink.h,
 *    json/wqueue.h): when it returns, every record the context completed is in the file,
 *    in order, and it waited at most for this one bounded drain of its own context (and
 *    the one batch in writing);
 *  - passes by a context whose last drain is done (ins_dump_comm_final sets ext_drain to
 *    NULL under the drain_lock): its sinks' states are being freed.
 * An init only adds to the registry (O(1)); a finalize removes (O(1)) and, last, retires
 * the context, which a walk still holding it finishes retiring at its end (core/comm.h).
 */
static void dump_pass(struct drainer *d, bool final) {
  begin_pass(d);
  if (ins_dump_test_hook) ins_dump_test_hook(INS_DUMP_HOOK_PASS, NULL);
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  for (size_t i = 0; i < n; i++) {
    struct ins_comm *c = live[i];
    if (c->foreign) continue; /* the parent's (a forked child) */
    pthread_mutex_lock(&c->drain_lock);
    if (c->ext_drain) {
      drain(c, d, final);
      flush(d, c); /* before letting go of the context (above) */
    }
    pthread_mutex_unlock(&c->drain_lock);
  }
  ins_registry_walk_end();
}

/* ---- hang detection (sink/hang.h) ---------------------------------------------- */

/* One context's check, from the dump thread's pass of checks. */
struct hang_to {
  struct ins_comm *c;
  struct drainer *d;
  bool drained;
};

static void hang_drain(void *arg) {
  struct hang_to *to = arg;
  drain(to->c, to->d, false);
  to->drained = true;
}

static int hang_say(void *arg, const struct ins_sink_hang *h) {
  struct hang_to *to = arg;
  int rc = 0;
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->hang) rc |= g_sinks[i]->hang(&to->d->batch[i], to->c, to->c->ext_sink[i], h);
  return rc;
}

static void hang_gauge(void *arg, const struct ins_sink_inflight *f) {
  struct hang_to *to = arg;
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->inflight) g_sinks[i]->inflight(to->c, to->c->ext_sink[i], f);
}

/* A check of every context (c's drain lock held for c's, as a pass holds it), then the
 * sinks told it is over. A context the check drained has its lines handed on (flush) before
 * its lock is let go, as a pass does. */
static void hang_pass(struct drainer *d) {
  uint64_t now = ins_hang_now(), wall_us = ins_wall_ns() / 1000;
  begin_pass(d);
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  for (size_t i = 0; i < n; i++) {
    struct ins_comm *c = live[i];
    if (c->foreign) continue;
    pthread_mutex_lock(&c->drain_lock);
    if (c->ext_drain) {
      struct hang_to to = {c, d, false};
      struct ins_hang_io io = {&to, hang_drain, hang_say, hang_gauge};
      ins_hang_check(&((struct drain_comm *)c->ext_drain)->hang, c, now, wall_us, g_cfg->hang_ns, &io);
      if (to.drained) flush(d, c);
    }
    pthread_mutex_unlock(&c->drain_lock);
  }
  ins_registry_walk_end();
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->hang_checked) g_sinks[i]->hang_checked(now);
  if (ins_dump_test_hook) ins_dump_test_hook(INS_DUMP_HOOK_HANG, NULL);
}

/* After ins_wake_prepare: a ring that wants the thread awake (see wake.h). A walk too:
 * O(communicators) on the dump thread, the registry lock held only for the snapshot. */
static bool any_wake_wanted(void) {
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  bool yes = false;
  for (size_t i = 0; i < n && !yes; i++) {
    struct ins_comm *c = live[i];
    yes = !c->foreign && (ins_wake_wanted(&c->ring[0]) || ins_wake_wanted(&c->ring[1]));
  }
  ins_registry_walk_end();
  return yes;
}

static void end_window(void) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->end_window) g_sinks[i]->end_window();
}

/* Microseconds from now until t (ns), rounded up; 0 if t has come. */
static long long us_until(uint64_t now, uint64_t t) {
  return now < t ? (long long)((t - now + 999) / 1000) : 0;
}

/*
 * The interval N > 0 is a window: a filling ring wakes the thread early for a pass,
 * but windows stay regular, every N us (a sink that aggregates, Prometheus, writes
 * its files at each window's end). Interval 0: a pass at most INTERVAL0_US after a
 * record completes. -1: only a filling ring wakes it, or exit.
 * Hang detection on (sink/hang.h): a check of every context every period, whatever the
 * interval; a wait cut short for a check alone is no pass (it drains nothing: with -1,
 * records are still written at teardown, unless a check finds something to say).
 */
static void *dump_thread(void *arg) {
  (void)arg;
  long long interval = g_cfg->interval_us;
  uint64_t window_end = ins_mono_ns() + (uint64_t)(interval > 0 ? interval : 0) * 1000;
  uint64_t hang_period = g_cfg->hang_ns ? ins_hang_period_ns(g_cfg->hang_ns) : 0;
  uint64_t hang_next = ins_mono_ns() + hang_period;
  while (!atomic_load(&g_stop)) {
    uint32_t seq = ins_wake_prepare(&g_ins_wake);
    uint64_t now = ins_mono_ns();
    long long wait = interval == 0 ? INTERVAL0_US : interval > 0 ? us_until(now, window_end) : -1;
    bool check_only = false; /* the wait ends for a check, not a pass */
    if (hang_period) {
      long long hw = us_until(now, hang_next);
      if (wait < 0 || hw < wait) wait = hw, check_only = true;
    }
    bool wanted = false;
    if (!atomic_load(&g_stop) && !(wanted = any_wake_wanted()) && wait != 0)
      ins_wake_wait(&g_ins_wake, seq, wait);
    ins_wake_done(&g_ins_wake);
    /* woken by a producer (or exit): a pass, whatever the wait was for */
    bool signalled = atomic_load(&g_ins_wake.seq) != seq;
    pthread_rwlock_rdlock(&g_gate);
    now = ins_mono_ns();
    bool window = interval > 0 && now >= window_end;
    if (!check_only || wanted || signalled || window || atomic_load(&g_stop))
      dump_pass(&g_thread_drainer, false);
    if (hang_period && ins_mono_ns() >= hang_next) {
      hang_pass(&g_thread_drainer);
      hang_next = ins_mono_ns() + hang_period;
    }
    if (window) { /* after the checks: a window's files show their gauges */
      end_window();
      window_end = ins_mono_ns() + (uint64_t)interval * 1000;
    }
    pthread_rwlock_unlock(&g_gate);
  }
  return NULL;
}

/* The dump thread, and the sinks' threads that take its batches (at process init, and
 * in a forked child at its first communicator). */
static void start_thread(void) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->dump_starting) g_sinks[i]->dump_starting();
  if (pthread_create(&g_thread, NULL, dump_thread, NULL) != 0) {
    ins_warn("cannot start the dump thread: records are written at teardown only");
    return;
  }
  g_thread_running = true;
}

void ins_dump_start(const struct ins_config *cfg) {
  g_cfg = cfg;
  g_sinks = ins_sinks_active(cfg, &g_nsinks);
  for (int i = 0; i < g_nsinks; i++) g_sinks[i]->start(cfg);
  /* Now, not at the first write: with the default interval that is teardown, hours
   * later. The writers check again then (the directory may change meanwhile). */
  static struct ins_files_dir dir; /* init only: the sinks keep their own (io/files.h) */
  ins_files_dir_set(&dir, cfg->dump_dir);
  char why[INS_FILES_WHY_MAX];
  if (ins_files_dir_writable(&dir) != 0)
    ins_notice(NULL, &ins_sink_dir_said, "NCCL_INSPECTOR_DUMP_DIR: cannot write to '%s': %s; "
               "records will be counted as lost unless it becomes writable (set "
               "NCCL_INSPECTOR_DUMP_DIR to a writable directory)", cfg->dump_dir,
               ins_files_why(&dir, errno, why, sizeof why));
  /* Interval 0 (continuous): the thread wakes every INTERVAL0_US by itself, and a
   * producer wakes it only when a ring is a sixteenth full, so that a callback
   * makes a system call (the futex wake) once per many records, not per record. */
  g_ins_wake.full_shift = cfg->interval_us == 0 ? 4 : cfg->interval_us > 0 ? 2 : 1;
  if (!cfg->dump_thread_enable) {
    ins_info("dump thread disabled: records are written at communicator teardown and exit%s",
             cfg->hang_ns ? "; no hang detection (it runs on the dump thread)" : "");
    return;
  }
  drainer_init(&g_thread_drainer, STASH_BYTES, false);
  start_thread();
  if (!g_thread_running) return;
  if (cfg->interval_us < 0)
    ins_info("dump thread started: writing at communicator teardown (and whenever a ring is half full)");
  else
    ins_info("dump thread started: interval %lld us", cfg->interval_us);
  if (cfg->hang_ns)
    ins_info("hang detection: an op in flight for over %.3f s is written to the log at once, "
             "checked every %.3f s (NCCL_INSPECTOR_HANG_SECONDS)", (double)cfg->hang_ns / 1e9,
             (double)ins_hang_period_ns(cfg->hang_ns) / 1e9);
}

static int attach(struct ins_comm *c) {
  struct drain_comm *dc = calloc(1, sizeof *dc);
  if (!dc) return -1;
  /* Under RCCL the pTimers may be ticks: measure which (core/timer.h). On the init
   * thread, where the context's GPU is current. */
  ins_timer_init(&dc->timer, ins_device_timer_rate_khz());
  ins_judge_init(&dc->judge, c->verbose, g_cfg->dump_unverified);
  ins_judge_set_comm(&dc->judge, c->rank, c->nranks);
  ins_judge_set_bounds(&dc->judge, g_cfg->bounds != INS_BOUNDS_OFF);
  atomic_store(&c->timer_probe, dc->timer.unit == INS_TIMER_PENDING);
  c->ext_drain = dc;
  for (int i = 0; i < g_nsinks; i++) {
    if (g_sinks[i]->attach(c, &c->ext_sink[i]) == 0) continue;
    while (i-- > 0) g_sinks[i]->detach(c, c->ext_sink[i]);
    free(dc);
    c->ext_drain = NULL;
    return -1;
  }
  return 0;
}

int ins_dump_attach(struct ins_comm *c) {
  if (g_fork_off) {
    /* forked past the bound: a sink's lock may be held by a thread that is gone */
    c->foreign = true;
    ins_warn_once(&g_warned_fork, "this process was forked while the plugin's dump or writer "
                  "thread was busy for over %d ms (a slow or hung file system?): its "
                  "communicators are not recorded", INS_FORK_WAIT_MS);
    return 0;
  }
  pthread_rwlock_rdlock(&g_gate);
  if (atomic_exchange(&g_restart, false)) start_thread();
  int rc = attach(c);
  pthread_rwlock_unlock(&g_gate);
  return rc;
}

void ins_dump_comm_drain(struct ins_comm *c) {
  if (!g_cfg || c->foreign || g_fork_off) return;
  pthread_rwlock_rdlock(&g_gate);
  struct drainer d;
  drainer_init(&d, 0, true);
  begin_pass(&d);
  pthread_mutex_lock(&c->drain_lock);
  if (c->ext_drain) {
    drain(c, &d, false);
    flush(&d, c); /* before letting go of the context, as a pass does */
  }
  pthread_mutex_unlock(&c->drain_lock);
  drainer_free(&d);
  pthread_rwlock_unlock(&g_gate);
}

/* At teardown, in the log: what left no record, and why (the outputs count it too). */
static void say_untimed(const struct ins_comm *c, const struct drain_comm *dc) {
  char why[512];
  int n = 0;
  for (int kind = 0; kind < 2; kind++)
    for (int r = 0; r < INS_UNTIMED_REASONS; r++) {
      uint64_t v = untimed_now(c, dc, kind, r);
      if (v && n < (int)sizeof why - 80)
        n += snprintf(why + n, sizeof why - (size_t)n, "%s%llu %s %s", n ? ", " : "",
                      (unsigned long long)v, kind ? "P2P" : "collective", ins_untimed_name[r]);
    }
  uint64_t bounded = dc->judge.bounded[0] + dc->judge.bounded[1];
  if (n && bounded && n < (int)sizeof why - 80) /* of the unverified, those written as bounds */
    n += snprintf(why + n, sizeof why - (size_t)n, "; %llu of the unverified written as bounds",
                  (unsigned long long)bounded);
  uint64_t steps = atomic_load_explicit(&c->clock_steps, memory_order_relaxed);
  if (n && steps && n < (int)sizeof why - 80) /* what left the handed_over: docs/reference.md */
    n += snprintf(why + n, sizeof why - (size_t)n, "; steps back of the GPU clock: %llu",
                  (unsigned long long)steps);
  if (n)
    ins_info("communicator 0x%llx rank %d: ops left without a record: %s (unverified: NCCL's "
             "proxy thread may have been 64 works behind the GPU, so their timestamps may be a "
             "later op's; handed_over: every channel had an earlier op's; no_gpu_timer: no kernel "
             "timestamps, as copy-engine collectives never have: NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING=0 "
             "keeps them host-timed; bounds: the time between the verified ops around them; "
             "docs/reference.md)",
             (unsigned long long)c->id, c->rank, why);
  n = 0;
  for (int f = 0; f < INS_FUNC_COUNT; f++) {
    uint64_t v = atomic_load(&c->unreported[f]);
    if (v && n < (int)sizeof why - 80)
      n += snprintf(why + n, sizeof why - (size_t)n, "%s%llu %s", n ? ", " : "",
                    (unsigned long long)v, ins_func_name[f]);
  }
  if (n)
    ins_info("communicator 0x%llx rank %d: collectives NCCL never reported, so never timed: %s "
             "(NCCL 2.28+ reports no Broadcast it runs on its AllGatherV path; "
             "NCCL_ALLGATHERV_ENABLE=0 brings them back)",
             (unsigned long long)c->id, c->rank, why);
}

/* An inherited context finalized in a forked child: nothing of it is written, and its
 * sinks are not told (a sink's detach may write the parent's files: the Prometheus
 * sink rewrites or removes its GPU's). Its state and the sinks' stay allocated, and
 * reachable, for the child's life: a few hundred bytes each. */
static void forget(struct ins_comm *c) {
  struct drain_comm *dc = c->ext_drain;
  memcpy(dc->left_sink, c->ext_sink, sizeof dc->left_sink);
  dc->left_next = atomic_load(&g_left);
  while (!atomic_compare_exchange_weak(&g_left, &dc->left_next, dc)) {
  }
  c->ext_drain = NULL;
}

void ins_dump_comm_final(struct ins_comm *c) {
  if (!g_cfg || !c->ext_drain) return;
  if (c->foreign || g_fork_off) { /* the parent's (g_fork_off: the registry could not say) */
    forget(c);
    return;
  }
  pthread_rwlock_rdlock(&g_gate);
  struct drainer d;
  drainer_init(&d, 0, true);
  begin_pass(&d);
  /* Waits only for a drain of this context in progress (bounded: drain), which hands its
   * lines on before letting go (dump_pass). */
  pthread_mutex_lock(&c->drain_lock);
  drain(c, &d, true);
  struct drain_comm *dc = c->ext_drain;
  c->ext_drain = NULL; /* its last drain: a pass still holding c passes it by */
  pthread_mutex_unlock(&c->drain_lock);
  flush(&d, c); /* direct: after the lines of c the dump thread queued */
  drainer_free(&d);
  say_untimed(c, dc);
  dropped_final(c);
  for (int i = 0; i < g_nsinks; i++) g_sinks[i]->detach(c, c->ext_sink[i]);
  ins_judge_free(&dc->judge);
  ins_hang_free(dc->hang);
  free(dc->held);
  free(dc);
  pthread_rwlock_unlock(&g_gate);
}

void ins_dump_release(void) {
  if (g_fork_off) return; /* a child forked past the bound: their locks may be held */
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->release) g_sinks[i]->release();
  ins_device_release();
  ins_registry_release(); /* the dump thread, its walker, is joined */
}

void ins_dump_shutdown(void) {
  if (!g_cfg || g_fork_off) return; /* forked past the bound: it recorded nothing */
  if (g_thread_running) {
    atomic_store(&g_stop, true);
    atomic_store(&g_ins_wake.waiting, 1);
    ins_wake_signal(&g_ins_wake);
    pthread_join(g_thread, NULL);
    g_thread_running = false;
  }
  for (int i = 0; i < g_nsinks; i++) /* what the dump thread handed them is written first */
    if (g_sinks[i]->dump_stopped) g_sinks[i]->dump_stopped();
  /* after the joins: a thread joined while we held the gate could wait on it behind a fork */
  pthread_rwlock_rdlock(&g_gate);
  struct drainer d;
  drainer_init(&d, 0, true);
  dump_pass(&d, true);
  drainer_free(&d);
  drainer_free(&g_thread_drainer);
  for (int i = 0; i < g_nsinks; i++) g_sinks[i]->shutdown();
  pthread_rwlock_unlock(&g_gate);
  unsigned long long dropped = atomic_load(&g_dropped_final);
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  for (size_t i = 0; i < n; i++)
    if (!live[i]->foreign) dropped += atomic_load(&live[i]->dropped[0]) + atomic_load(&live[i]->dropped[1]);
  ins_registry_walk_end();
  if (dropped) /* records lost: a notice (core/log.h), at exit, once */
    ins_notice(NULL, NULL, "%llu records were dropped in all (the first warning said why; each "
               "communicator's count is in its dump_stats)", dropped);
}

/* ---- fork() (see above g_gate) ------------------------------------------------ */

void ins_dump_fork_prepare(const struct timespec *until) {
  t_fork.gate = t_fork.registry = false;
  t_fork.sinks = 0;
  if (ins_dump_test_hook) ins_dump_test_hook(INS_DUMP_HOOK_FORK_PREPARE, NULL);
  atomic_fetch_add(&g_fork_waiting, 1);
  int rc = pthread_rwlock_timedwrlock(&g_gate, until);
  atomic_fetch_sub(&g_fork_waiting, 1);
  if (rc != 0) return;
  t_fork.gate = true;
  ins_registry_lock(); /* held briefly (a few stores, a snapshot's copy), by anyone */
  t_fork.registry = true;
  /* last: a sink's own thread takes its lock alone, never the ones above */
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->fork_prepare && g_sinks[i]->fork_prepare(until) == 0) t_fork.sinks |= 1u << i;
}

void ins_dump_fork_parent(void) {
  for (int i = g_nsinks; i-- > 0;)
    if (t_fork.sinks & 1u << i) g_sinks[i]->fork_parent();
  if (t_fork.registry) ins_registry_unlock();
  if (t_fork.gate) pthread_rwlock_unlock(&g_gate);
}

void ins_dump_fork_child(void) {
  bool sinks_taken = true;
  for (int i = 0; i < g_nsinks; i++) {
    if (!g_sinks[i]->fork_prepare) continue;
    bool taken = (t_fork.sinks & 1u << i) != 0;
    g_sinks[i]->fork_child(taken);
    sinks_taken &= taken;
  }
  ins_registry_fork_child(t_fork.registry);
  /* Made anew, never unlocked: glibc knows its writer by thread id, which the child's
   * thread does not share with the parent's (an unlock here broke the lock); and past
   * the bound its holders are threads that are gone. */
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&g_gate, &a);
  pthread_rwlockattr_destroy(&a);
  if (!t_fork.gate || !sinks_taken) g_fork_off = true;
  if (g_thread_running) { /* gone with the fork */
    g_thread_running = false;
    atomic_store(&g_restart, true);
  }
}
