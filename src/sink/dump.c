/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dump.c - the dump thread and the drains that move records from the
 * communicators' rings to the sinks (see dump.h).
 *
 * Owns: which sinks are on (sinks.c decides), the dump thread and its
 * interval, who drains which communicator when (passes, hang checks, finalize,
 * exit), the per-communicator consumer state's life (made at attach, freed at
 * the last drain), and what a fork() does to all of these (the fork handlers,
 * below). A drain itself (the records through the judge and the GPU timer's
 * unit to the sinks, the counts they are told) is drain.c's. It never asks which
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
#include "sink/drain.h"
#include "sink/hang.h"
#include "sink/sink.h"
#include "sink/stash.h"

#define INTERVAL0_US 1000 /* interval 0: the longest a completed record waits to be written */
#define STASH_BYTES (2048 * 1024) /* the dump thread's stash: 18,000 records */

static const struct ins_config *g_cfg;
static const struct ins_sink *const *g_sinks;
static int g_nsinks;
static pthread_t g_thread;
static bool g_thread_running;
static atomic_bool g_stop;
atomic_int ins_sink_dir_said; /* sink.h */
static struct ins_drainer g_thread_drainer; /* owned by the dump thread */

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
atomic_int ins_dump_fork_waiting; /* forks waiting for the gate: passes end early (drain.h) */
static bool g_fork_off;         /* a child forked past the bound: records nothing */
static atomic_bool g_restart;   /* a child whose parent ran the dump thread: start ours */
static struct ins_drain_comm *_Atomic g_left; /* forget() */
static atomic_int g_warned_fork;
void (*ins_dump_test_hook)(enum ins_dump_hook_at at, const struct ins_comm *c);

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
static void dump_pass(struct ins_drainer *d, bool final) {
  ins_drain_begin_pass(d);
  if (ins_dump_test_hook) ins_dump_test_hook(INS_DUMP_HOOK_PASS, NULL);
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  for (size_t i = 0; i < n; i++) {
    struct ins_comm *c = live[i];
    if (c->foreign) continue; /* the parent's (a forked child) */
    pthread_mutex_lock(&c->drain_lock);
    if (c->ext_drain) {
      ins_drain(c, d, final);
      ins_drain_flush(d, c); /* before letting go of the context (above) */
    }
    pthread_mutex_unlock(&c->drain_lock);
  }
  ins_registry_walk_end();
}

/* ---- hang detection (sink/hang.h) ---------------------------------------------- */

/* One context's check, from the dump thread's pass of checks. */
struct hang_to {
  struct ins_comm *c;
  struct ins_drainer *d;
  bool drained;
};

static void hang_drain(void *arg) {
  struct hang_to *to = arg;
  ins_drain(to->c, to->d, false);
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
static void hang_pass(struct ins_drainer *d) {
  uint64_t now = ins_hang_now(), wall_us = ins_wall_ns() / 1000;
  ins_drain_begin_pass(d);
  struct ins_comm *const *live;
  size_t n = ins_registry_walk_begin(&live);
  for (size_t i = 0; i < n; i++) {
    struct ins_comm *c = live[i];
    if (c->foreign) continue;
    pthread_mutex_lock(&c->drain_lock);
    if (c->ext_drain) {
      struct hang_to to = {c, d, false};
      struct ins_hang_io io = {&to, hang_drain, hang_say, hang_gauge};
      ins_hang_check(&((struct ins_drain_comm *)c->ext_drain)->hang, c, now, wall_us, g_cfg->hang_ns, &io);
      if (to.drained) ins_drain_flush(d, c);
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
  ins_drain_setup(cfg, g_sinks, g_nsinks);
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
  ins_drainer_init(&g_thread_drainer, STASH_BYTES, false);
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
  struct ins_drain_comm *dc = calloc(1, sizeof *dc);
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
  struct ins_drainer d;
  ins_drainer_init(&d, 0, true);
  ins_drain_begin_pass(&d);
  pthread_mutex_lock(&c->drain_lock);
  if (c->ext_drain) {
    ins_drain(c, &d, false);
    ins_drain_flush(&d, c); /* before letting go of the context, as a pass does */
  }
  pthread_mutex_unlock(&c->drain_lock);
  ins_drainer_free(&d);
  pthread_rwlock_unlock(&g_gate);
}

/* An inherited context finalized in a forked child: nothing of it is written, and its
 * sinks are not told (a sink's detach may write the parent's files: the Prometheus
 * sink rewrites or removes its GPU's). Its state and the sinks' stay allocated, and
 * reachable, for the child's life: a few hundred bytes each. */
static void forget(struct ins_comm *c) {
  struct ins_drain_comm *dc = c->ext_drain;
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
  struct ins_drainer d;
  ins_drainer_init(&d, 0, true);
  ins_drain_begin_pass(&d);
  /* Waits only for a drain of this context in progress (bounded: drain), which hands its
   * lines on before letting go (dump_pass). */
  pthread_mutex_lock(&c->drain_lock);
  ins_drain(c, &d, true);
  struct ins_drain_comm *dc = c->ext_drain;
  c->ext_drain = NULL; /* its last drain: a pass still holding c passes it by */
  pthread_mutex_unlock(&c->drain_lock);
  ins_drain_flush(&d, c); /* direct: after the lines of c the dump thread queued */
  ins_drainer_free(&d);
  ins_drain_say_untimed(c, dc);
  ins_drain_dropped_final(c);
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
  struct ins_drainer d;
  ins_drainer_init(&d, 0, true);
  dump_pass(&d, true);
  ins_drainer_free(&d);
  ins_drainer_free(&g_thread_drainer);
  for (int i = 0; i < g_nsinks; i++) g_sinks[i]->shutdown();
  pthread_rwlock_unlock(&g_gate);
  unsigned long long dropped = ins_drain_dropped_finalized();
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
  atomic_fetch_add(&ins_dump_fork_waiting, 1);
  int rc = pthread_rwlock_timedwrlock(&g_gate, until);
  atomic_fetch_sub(&ins_dump_fork_waiting, 1);
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
