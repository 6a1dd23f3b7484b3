/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.c - sampled kernel timing (see sampler.h).
 *
 * The mask words are written without a lock: group ends arrive on the
 * application's threads, inside NCCL's group calls, and must stay cheap.
 * Every writer goes through publish(): it writes the mask the state asks for
 * (wanted_mask), then checks that the state did not change meanwhile, and
 * writes again if it did, so that two writers racing (two threads ending
 * groups, an init and a window flip, a graph capture and anything) leave the
 * words as the latest state asks.
 *
 * The words belong to the host. NCCL gives every init the same one, but the
 * ABI does not promise it, and a host that gives each communicator its own
 * may free a word once that communicator's finalize has returned. So the
 * table keeps each distinct word with the live communicators given it
 * (`users`), and the finalize of the last one detaches it: the slot is
 * emptied, and detach returns only when no writer can still be writing it.
 * Two kinds of writers:
 *  - under g_tlock: the time thread (its window flips), attach; detach holds
 *    g_tlock too, so none of these is mid-write while it runs;
 *  - lock-free, on the application's threads: group ends (group-count mode)
 *    and a graph capture. Each writes inside a "writer section" (two atomic
 *    counts, epoch-indexed: words_enter, words_leave). Detach empties the slot,
 *    then flips the epoch and waits for the old epoch's count to reach 0. A
 *    writer counted in the new epoch, or in the old one after detach saw it at
 *    0, loaded the slot after it was emptied (all of it seq_cst: the count's
 *    increment comes before the slot's load in every writer), so it cannot
 *    hold the word; the wait is bounded by the writers that were inside when
 *    the epoch flipped (a few stores each), however many come after.
 *  Group starts (NCCL's reads of the word, ins_sampler_group_start) are not
 *  touched; a group end in group-count mode pays two uncontended atomic adds.
 *
 * Time windows: the thread's decision is ins_sample_window_at(), a pure
 * function of the wall-clock time, and the thread reads that time and sleeps
 * through g_clock, which a unit test replaces to run the thread on a fake
 * clock (tests/unit/core/test_sampler.c); group ends never touch either.
 */
#include "core/sampler.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "nccl/profiler_abi.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"

#define MAX_WORDS 8 /* distinct words live at once: NCCL hands every init the same one */

_Alignas(64) char ins_sampler_group_token[3];
bool ins_sampler_counting;
bool ins_sampler_active;

static int g_mode;
static int g_on_mask, g_off_mask;
static long long g_window_ms, g_period_ms, g_every, g_burst;

/* The words being written (slots 0 .. g_nslots - 1; an empty slot is NULL and is reused),
 * each with its live communicators (users, under g_tlock). */
static struct {
  int *_Atomic word;
  int users;
} g_slots[MAX_WORDS];
static atomic_int g_nslots; /* slots ever used: only grows, up to MAX_WORDS */
static atomic_int g_state_mask; /* the mask wanted now */

/* The lock-free writers in their sections, by epoch (see the header comment). */
static atomic_uint g_epoch;
static atomic_uint g_writers[2];

/* Group-count mode. */
static _Atomic uint64_t g_groups;   /* groups ended */
static atomic_bool g_graph_off;     /* a CUDA graph capture stopped sampling */
static _Atomic uint64_t g_graph_off_at = UINT64_MAX; /* groups ended by then */
static atomic_int g_frozen_mask;    /* the mask from then on */
static atomic_bool g_saw_api;       /* GroupApi events arrive: count those, not Group */

/* The sampler's lock: the time thread and its accounting; the slots' users, and who may
 * empty a slot (attach, detach). */
static pthread_mutex_t g_tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_tcond = PTHREAD_COND_INITIALIZER;
static pthread_t g_thread;
static bool g_thread_running, g_stop;
static uint64_t g_t0_ns, g_on_ns, g_on_since_ns; /* g_on_since_ns: 0 while off */

static int realtime_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
  /* CLOCK_REALTIME, the condition variable's default: the windows are wall-clock ones. */
  return pthread_cond_timedwait(cond, mutex, &ts);
}

static const struct ins_sampler_clock g_realtime = {ins_wall_ns, realtime_wait};
static const struct ins_sampler_clock *g_clock = &g_realtime; /* a test's fake, else g_realtime */

void ins_sampler_set_clock(const struct ins_sampler_clock *clock) {
  g_clock = clock ? clock : &g_realtime;
}

static unsigned words_enter(void) {
  unsigned e = atomic_load(&g_epoch) & 1;
  atomic_fetch_add(&g_writers[e], 1); /* before any slot is read (seq_cst) */
  return e;
}

static void words_leave(unsigned e) { atomic_fetch_sub(&g_writers[e], 1); }

/* Detach, g_tlock held, a slot just emptied: wait until no writer that may have read it
 * before is still inside its section. */
static void words_quiesce(void) {
  unsigned e = atomic_fetch_xor(&g_epoch, 1) & 1; /* writers from now on count in the other */
  while (atomic_load(&g_writers[e]) != 0) sched_yield();
}

static void write_words_raw(int mask) {
  unsigned e = words_enter();
  int n = atomic_load(&g_nslots);
  for (int i = 0; i < n; i++) {
    int *w = atomic_load(&g_slots[i].word);
    if (w) __atomic_store_n(w, mask, __ATOMIC_RELAXED); /* NCCL reads it atomically */
  }
  words_leave(e);
}

/* Group k (from 0) is timed when its run of B is the first of every N runs. */
static inline bool group_timed(uint64_t k) {
  return (k / (uint64_t)g_burst) % (uint64_t)g_every == 0;
}

/* The mask the state asks for now: frozen by a graph capture, else by the group
 * count, else the time window's. */
static int wanted_mask(void) {
  if (atomic_load(&g_graph_off)) return atomic_load(&g_frozen_mask);
  if (g_mode == INS_SAMPLE_GROUPS)
    return group_timed(atomic_load_explicit(&g_groups, memory_order_relaxed)) ? g_on_mask : g_off_mask;
  return atomic_load_explicit(&g_state_mask, memory_order_relaxed);
}

/* Writes the wanted mask to every known word (or to `one`), until it stays put. */
static void publish(int *one) {
  int m;
  do {
    m = wanted_mask();
    if (one)
      __atomic_store_n(one, m, __ATOMIC_RELAXED);
    else
      write_words_raw(m);
  } while (wanted_mask() != m);
}

/* ---- time windows -------------------------------------------------------- */

bool ins_sample_window_at(uint64_t now_ns, uint64_t window_ns, uint64_t period_ns,
                          uint64_t *next_ns) {
  assert(window_ns < period_ns); /* config.c: a window not shorter than the period is no sampling */
  uint64_t start = now_ns - now_ns % period_ns; /* this period's start: a multiple since the epoch */
  bool on = now_ns - start < window_ns;
  *next_ns = start + (on ? window_ns : period_ns);
  return on;
}

/* Sets the state for wall-clock time now; returns when it next changes (g_tlock held). */
static uint64_t time_tick(void) {
  uint64_t period = (uint64_t)g_period_ms * 1000000ull, window = (uint64_t)g_window_ms * 1000000ull;
  uint64_t now = g_clock->now(), next;
  bool on = ins_sample_window_at(now, window, period, &next);
  /* Frozen by a graph capture: the same mask from now on. The thread still wakes at the window
   * boundaries: a deadline derived from a frozen "on" outside a window would lie in the past,
   * and the thread would spin until the next window. */
  if (atomic_load(&g_graph_off)) on = (atomic_load(&g_frozen_mask) & PROF_EV_KERNEL_CH) != 0;
  if (on && !g_on_since_ns) g_on_since_ns = now;
  if (!on && g_on_since_ns) g_on_ns += now - g_on_since_ns, g_on_since_ns = 0;
  atomic_store_explicit(&g_state_mask, on ? g_on_mask : g_off_mask, memory_order_relaxed);
  publish(NULL);
  return next;
}

static void *time_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_tlock);
  while (!g_stop) {
    uint64_t next = time_tick();
    while (!g_stop && g_clock->wait(&g_tcond, &g_tlock, next) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&g_tlock);
  return NULL;
}

/* ---- group count --------------------------------------------------------- */


/* A GroupApi start precedes its group's Group events: from the first one on,
 * GroupApi stops count groups and Group stops do not (nccl-tests driving two
 * GPUs from one thread has two Group events per application group). */
void ins_sampler_saw_group_api(void) {
  if (!atomic_load_explicit(&g_saw_api, memory_order_relaxed))
    atomic_store_explicit(&g_saw_api, true, memory_order_relaxed);
}

void ins_sampler_group_stop(const void *handle) {
  bool api = handle == &ins_sampler_group_token[2];
  if (!api && atomic_load_explicit(&g_saw_api, memory_order_relaxed))
    return; /* the GroupApi stop that follows counts this group */
  atomic_fetch_add_explicit(&g_groups, 1, memory_order_relaxed); /* the next group's number */
  publish(NULL);
}

/*
 * Freeze the mask at the value NCCL just read for the captured group, so that every
 * captured op is launched under the mask it was captured with (see sampler.h).
 */
void ins_sampler_graph_captured(void) {
  static atomic_bool claimed;
  bool was = false;
  if (!atomic_compare_exchange_strong(&claimed, &was, true)) return;
  /* what NCCL read: the first word in the table (inside a section: its host may be
   * finalizing its communicator), else the state's */
  unsigned e = words_enter();
  int n = atomic_load(&g_nslots), now = atomic_load(&g_state_mask);
  for (int i = 0; i < n; i++) {
    int *w = atomic_load(&g_slots[i].word);
    if (w) {
      now = __atomic_load_n(w, __ATOMIC_RELAXED);
      break;
    }
  }
  words_leave(e);
  bool on = (now & PROF_EV_KERNEL_CH) != 0;
  atomic_store(&g_frozen_mask, on ? g_on_mask : g_off_mask);
  atomic_store(&g_graph_off_at, atomic_load(&g_groups));
  atomic_store(&g_graph_off, true); /* from here on wanted_mask() is the frozen mask */
  publish(NULL);
  if (on)
    ins_warn("a CUDA graph is being captured: sampled timing (NCCL_INSPECTOR_SAMPLE_*) stops and "
             "every op is timed from now on (NCCL tags captured ops at capture; a mask that "
             "changes between capture and launch stalls its proxy thread)");
  else
    ins_warn("a CUDA graph is being captured while sampling had timing off: NCCL_INSPECTOR_SAMPLE_* "
             "stops and no op is timed from now on (NCCL tags captured ops at capture; a mask that "
             "changes between capture and launch stalls its proxy thread). Time every op "
             "(no NCCL_INSPECTOR_SAMPLE_*) in jobs that capture CUDA graphs");
}

/* ---- lifetime ------------------------------------------------------------ */

static void start_thread(void) {
  if (pthread_create(&g_thread, NULL, time_thread, NULL) != 0) {
    ins_warn("cannot start the sampling thread: every op is timed (NCCL_INSPECTOR_SAMPLE_* ignored)");
    g_mode = INS_SAMPLE_ALL;
    ins_sampler_active = false;
    atomic_store(&g_state_mask, g_on_mask);
    return;
  }
  g_thread_running = true;
}

void ins_sampler_start(const struct ins_config *cfg, int full_mask, int abi_version) {
  g_mode = cfg->sample_mode;
  g_window_ms = cfg->sample_window_ms;
  g_period_ms = cfg->sample_period_ms;
  g_every = cfg->sample_every;
  g_burst = cfg->sample_burst > 0 ? cfg->sample_burst : 1;
  g_on_mask = full_mask;
  g_off_mask = 0;
  if (g_mode != INS_SAMPLE_ALL) {
    /* Group events, asked for in both states: group-count mode counts their ends,
     * and a GroupApi start says when a CUDA graph capture begins (both modes).
     * They are host events: NCCL adds no kernel work for them (measured: the
     * "first group only" configuration in docs/VALIDATION.md). */
    int groups = PROF_EV_GROUP | (abi_version >= 5 ? PROF_EV_GROUP_API : 0);
    g_on_mask |= groups;
    g_off_mask = groups;
  }
  if (g_mode == INS_SAMPLE_GROUPS) ins_sampler_counting = true;
  ins_sampler_active = g_mode != INS_SAMPLE_ALL;
  atomic_store(&g_state_mask, g_on_mask); /* group count: the first group is timed */
  if (g_mode != INS_SAMPLE_TIME) return;
  /* The state of this instant, before any init can hand out the mask. */
  pthread_mutex_lock(&g_tlock);
  g_t0_ns = g_clock->now();
  time_tick();
  pthread_mutex_unlock(&g_tlock);
  start_thread();
}

/* fork(): the time thread takes g_tlock, and a dump pass in the child would wait for it
 * (ins_sampler_stats), so the fork's prepare takes it too. The child has no time thread:
 * it starts one with its first communicator (ins_sampler_fork_restart), so that its
 * windows go on turning. */
static _Thread_local bool t_fork_locked;
static atomic_bool g_fork_restart;

void ins_sampler_fork_prepare(const struct timespec *until) {
  /* taken whether or not the thread runs: attach and detach take it too */
  t_fork_locked = pthread_mutex_timedlock(&g_tlock, until) == 0;
}

void ins_sampler_fork_parent(void) {
  if (t_fork_locked) pthread_mutex_unlock(&g_tlock);
}

void ins_sampler_fork_child(void) {
  /* made anew: held by us, or by the time thread, which is gone (its state is a few
   * counters, whole enough either way) */
  pthread_mutex_init(&g_tlock, NULL);
  pthread_cond_init(&g_tcond, NULL);
  /* no writer of the parent's is inside a section here: they are threads we do not have */
  atomic_store(&g_writers[0], 0);
  atomic_store(&g_writers[1], 0);
  if (g_thread_running) {
    g_thread_running = false;
    atomic_store(&g_fork_restart, true);
  }
}

void ins_sampler_fork_restart(void) {
  if (atomic_exchange(&g_fork_restart, false)) start_thread();
}

int *ins_sampler_attach(int *mask_word) {
  if (!mask_word) return NULL;
  if (g_mode == INS_SAMPLE_ALL) { /* the mask, once: nothing writes it again */
    publish(mask_word);
    return NULL;
  }
  pthread_mutex_lock(&g_tlock);
  int n = atomic_load(&g_nslots), slot = -1, empty = -1;
  for (int i = 0; i < n && slot < 0; i++) {
    int *w = atomic_load(&g_slots[i].word);
    if (w == mask_word) slot = i;
    else if (!w && empty < 0) empty = i;
  }
  if (slot < 0 && (empty >= 0 || n < MAX_WORDS)) {
    slot = empty >= 0 ? empty : n;
    g_slots[slot].users = 0;
    atomic_store(&g_slots[slot].word, mask_word); /* before the count that makes writers read it */
    if (slot == n) atomic_store(&g_nslots, n + 1);
  }
  if (slot >= 0) {
    g_slots[slot].users++;
    publish(mask_word);
  } else { /* every slot holds another live word */
    __atomic_store_n(mask_word, g_on_mask, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&g_tlock);
  if (slot < 0)
    ins_warn("more than %d distinct activation-mask words: this communicator is timed in full",
             MAX_WORDS);
  return slot >= 0 ? mask_word : NULL;
}

void ins_sampler_detach(int *kept) {
  if (!kept) return;
  pthread_mutex_lock(&g_tlock);
  int n = atomic_load(&g_nslots);
  for (int i = 0; i < n; i++) {
    if (atomic_load(&g_slots[i].word) != kept) continue;
    assert(g_slots[i].users > 0); /* attach counted every communicator it returned the word to */
    if (--g_slots[i].users == 0) {
      atomic_store(&g_slots[i].word, NULL);
      words_quiesce();
    }
    break;
  }
  pthread_mutex_unlock(&g_tlock);
}

void ins_sampler_stats(struct ins_sample_stats *s) {
  s->mode = g_mode;
  s->window_ms = g_window_ms;
  s->period_ms = g_period_ms;
  s->every = g_every;
  s->burst = g_burst;
  s->groups = s->groups_timed = 0;
  s->covered = 1.0;
  s->graph_capture = atomic_load(&g_graph_off);
  if (g_mode == INS_SAMPLE_GROUPS) {
    uint64_t n = atomic_load(&g_groups), off = atomic_load(&g_graph_off_at);
    uint64_t upto = n < off ? n : off; /* after a graph capture every group is timed */
    s->groups = n;
    uint64_t cycle = (uint64_t)g_every * (uint64_t)g_burst, rem = upto % cycle;
    s->groups_timed = upto / cycle * (uint64_t)g_burst + (rem < (uint64_t)g_burst ? rem : (uint64_t)g_burst);
    if (atomic_load(&g_frozen_mask) & PROF_EV_KERNEL_CH) s->groups_timed += n - upto;
    s->covered = n ? (double)s->groups_timed / (double)n : 1.0;
  } else if (g_mode == INS_SAMPLE_TIME) {
    pthread_mutex_lock(&g_tlock);
    uint64_t now = g_clock->now();
    uint64_t on = g_on_ns + (g_on_since_ns ? now - g_on_since_ns : 0);
    s->covered = now > g_t0_ns ? (double)on / (double)(now - g_t0_ns) : 1.0;
    pthread_mutex_unlock(&g_tlock);
  }
}

void ins_sampler_shutdown(void) {
  if (!g_thread_running) return;
  pthread_mutex_lock(&g_tlock);
  g_stop = true;
  pthread_cond_signal(&g_tcond);
  pthread_mutex_unlock(&g_tlock);
  pthread_join(g_thread, NULL);
  g_thread_running = false;
}
