/* SPDX-License-Identifier: Apache-2.0 */
/*
 * drain.c - one communicator's drain (see drain.h): its records from the rings through the
 * judge and the GPU timer's unit to the sinks, and its counts told.
 */
#include "sink/drain.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/sampler.h"
#include "sink/dump.h"

#define HOLD_MAX_BYTES (8u << 20) /* records held back for the GPU timer; then it is decided */

static const struct ins_config *g_cfg;
static const struct ins_sink *const *g_sinks;
static int g_nsinks;
static atomic_int g_warned_drop, g_warned_channel, g_warned_groups, g_warned_step;
static atomic_int g_said_unit[3]; /* the GPU timer's unit logged once per process, per unit */

void ins_drain_setup(const struct ins_config *cfg, const struct ins_sink *const *sinks, int nsinks) {
  g_cfg = cfg, g_sinks = sinks, g_nsinks = nsinks;
}

/* A communicator's drain is over: each sink's output of it goes out (a direct drainer's
 * before this returns: when a finalize returns, every record of its communicator is
 * written; the dump thread's queued before it lets go of the communicator: dump_pass). */
void ins_drain_flush(struct ins_drainer *d, struct ins_comm *c) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->flush) g_sinks[i]->flush(&d->batch[i], c, c->ext_sink[i]);
}

/* `direct`: a finalizing or exiting thread (sink.h). */
void ins_drainer_init(struct ins_drainer *d, size_t stash_bytes, bool direct) {
  memset(d, 0, sizeof *d);
  for (int i = 0; i < INS_MAX_SINKS; i++) d->batch[i].direct = direct;
  ins_stash_init(&d->stash, stash_bytes, g_cfg->verbose);
}

void ins_drainer_free(struct ins_drainer *d) {
  for (int i = 0; i < g_nsinks; i++)
    if (g_sinks[i]->batch_free) g_sinks[i]->batch_free(&d->batch[i]);
  ins_stash_free(&d->stash);
}

/* A pass begins: the sinks prepare what is the same for all its records. */
void ins_drain_begin_pass(struct ins_drainer *d) {
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
static void emit(struct ins_comm *c, struct ins_drainer *d, struct ins_record *r) {
  struct ins_drain_comm *dc = c->ext_drain;
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
  struct ins_drain_comm *dc = c->ext_drain;
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
static void release_held(struct ins_comm *c, struct ins_drainer *d) {
  struct ins_drain_comm *dc = c->ext_drain;
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
  struct ins_drainer *d;
};

static void judged(void *arg, struct ins_record *r) {
  struct judged_to *to = arg;
  struct ins_comm *c = to->c;
  struct ins_drainer *d = to->d;
  struct ins_drain_comm *dc = c->ext_drain;
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
static void take(struct ins_comm *c, struct ins_drainer *d, struct ins_record *r) {
  struct ins_drain_comm *dc = c->ext_drain;
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
static uint64_t untimed_now(const struct ins_comm *c, const struct ins_drain_comm *dc, int kind,
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
void ins_drain_dropped_final(const struct ins_comm *c) {
  unsigned long long coll = atomic_load(&c->dropped[0]), p2p = atomic_load(&c->dropped[1]);
  if (!coll && !p2p) return;
  atomic_fetch_add(&g_dropped_final, coll + p2p);
  ins_info("communicator 0x%llx rank %d dropped %llu collective and %llu P2P records in all",
           (unsigned long long)c->id, c->rank, coll, p2p);
}

/* What the context wrote, dropped and could not time, to the sinks when something changed. */
static void report_counts(struct ins_comm *c, struct ins_drainer *d) {
  struct ins_drain_comm *dc = c->ext_drain;
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
void ins_drain(struct ins_comm *c, struct ins_drainer *d, bool final) {
  struct ins_drain_comm *dc = c->ext_drain;
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
      if (budget && (final || !atomic_load_explicit(&ins_dump_fork_waiting, memory_order_relaxed)))
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

/* At teardown, in the log: what left no record, and why (the outputs count it too). */
void ins_drain_say_untimed(const struct ins_comm *c, const struct ins_drain_comm *dc) {
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

unsigned long long ins_drain_dropped_finalized(void) { return atomic_load(&g_dropped_final); }
