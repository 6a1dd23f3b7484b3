/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sampler_detach.c - a host that gives each communicator its own activation-mask word
 * (the ABI allows it; NCCL gives all one) may free a word once that communicator's
 * finalize has returned: the time-window sampler (src/core/sampler.c) must stop writing it
 * then, and go on writing the words of the communicators still live.
 *
 * Driven through the plugin's v5 table, with time-window sampling (1 s of every 30 s) on
 * the sampler's injected clock (ins_sampler_set_clock, as test_sampler.c does): the clock
 * starts 2.345678901 s into a 30 s period and jumps to each boundary the time thread asks
 * for, one decision at a time, so the windows flip when the test says and nothing waits
 * on real time. Four communicators: A on word a, B1 and B2 sharing word b, C on word c.
 * After A's and B1's and C's finalize, a is kept allocated but overwritten with a
 * sentinel, and c is freed; three window flips later a still holds the sentinel (plain
 * build: the check fails if the sampler wrote it), nothing wrote c (ASan: a
 * heap-use-after-free in the time thread otherwise; TSan: a race with free), and b
 * followed every flip (B2 still uses it). After B2's finalize b is left alone too.
 * Group-count mode has no thread: the words are written at group ends, on the
 * application's threads, without a lock. The second case ends groups on B's thread
 * without pause while A is finalized and its word freed, then 200 more: nothing may write
 * a's word after A's finalize has returned (a sentinel; ASan; TSan), and b says what the
 * count of groups says (one group in 2 is timed: the next is timed iff the count is even).
 * Each case runs in a process of its own (fork_util.h): the plugin reads its settings once.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "fork_util.h"
#include "core/sampler.h"

#define S 1000000000ull
#define T0 1700000012345678901ull /* 2.345678901 s into the 30 s period from 1,700,000,010 s */
#define SENTINEL 0x5e5e5e5e

/* ---- the fake clock: the time thread's waits, one decision at a time ---- */

static pthread_mutex_t g_fk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_fk_cv = PTHREAD_COND_INITIALIZER;
static _Atomic uint64_t g_now = T0;
static int g_budget, g_steps; /* timed-out waits allowed, and made */
static int g_gated;           /* the thread waits for the budget (after its last decision) */
static int g_release;         /* the end: waits become real ones, until shutdown signals */

static uint64_t fake_now(void) { return atomic_load(&g_now); }

/* Called by the time thread with the sampler's lock held, after each decision. The lock
 * is released while the thread waits for the test, as a condition wait releases it, so
 * that a finalize (which takes it to detach its word) runs meanwhile. */
static int fake_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline) {
  pthread_mutex_lock(&g_fk);
  if (g_release) {
    pthread_mutex_unlock(&g_fk);
    return pthread_cond_wait(cond, mutex); /* 0: the thread looks at its stop flag */
  }
  pthread_mutex_unlock(mutex);
  g_gated = 1;
  pthread_cond_broadcast(&g_fk_cv);
  while (g_steps >= g_budget && !g_release) pthread_cond_wait(&g_fk_cv, &g_fk);
  g_gated = 0;
  int rc = 0;
  if (!g_release) {
    g_steps++;
    atomic_store(&g_now, deadline);
    rc = ETIMEDOUT;
  }
  pthread_mutex_unlock(&g_fk);
  pthread_mutex_lock(mutex);
  return rc;
}

static const struct ins_sampler_clock g_fake = {fake_now, fake_wait};

/* One more window boundary: returns once the thread has decided there and waits again. */
static void flip(void) {
  pthread_mutex_lock(&g_fk);
  int target = ++g_budget;
  pthread_cond_broadcast(&g_fk_cv);
  while (g_steps < target || !g_gated) pthread_cond_wait(&g_fk_cv, &g_fk);
  pthread_mutex_unlock(&g_fk);
}

/* The thread's first wait (after its decision at T0). */
static void wait_gated(void) {
  pthread_mutex_lock(&g_fk);
  while (!g_gated) pthread_cond_wait(&g_fk_cv, &g_fk);
  pthread_mutex_unlock(&g_fk);
}

static void release_thread(void) {
  pthread_mutex_lock(&g_fk);
  g_release = 1;
  pthread_cond_broadcast(&g_fk_cv);
  pthread_mutex_unlock(&g_fk);
}

static int word(const int *w) { return __atomic_load_n(w, __ATOMIC_RELAXED); }
static bool timed(int mask) { return (mask & PROF_EV_KERNEL_CH) != 0; }

static void *init_on(uint64_t id, int *w) {
  void *ctx = NULL;
  CHECK(ncclProfiler_v5.init(&ctx, id, w, "own-word", 1, 2, 0, fu_logger) == 0 && ctx);
  return ctx;
}

static int case_finalized_word_left_alone(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_SAMPLE_WINDOW_MS", "1000", 1);
  setenv("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", "30000", 1);
  ins_sampler_set_clock(&g_fake); /* before the first init starts the time thread */
  int *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
  CHECK(a && b && c);
  if (!a || !b || !c) return 1;
  *a = *b = *c = 0;
  void *ca = init_on(0xa1, a), *cb1 = init_on(0xb1, b), *cb2 = init_on(0xb2, b), *cc = init_on(0xc1, c);
  wait_gated();
  /* T0 is outside a window; every word says so, and nothing else (no KernelCh) */
  CHECK(!timed(word(a)) && !timed(word(b)) && !timed(word(c)));
  CHECK(word(a) != 0 && word(a) == word(b) && word(b) == word(c)); /* Group events asked for */
  flip(); /* 1,700,000,040 s: a window opens */
  CHECK(timed(word(a)) && timed(word(b)) && timed(word(c)));

  CHECK(ncclProfiler_v5.finalize(ca) == 0);
  __atomic_store_n(a, SENTINEL, __ATOMIC_RELAXED); /* the host reuses its word */
  CHECK(ncclProfiler_v5.finalize(cb1) == 0);       /* b: B2 still uses it */
  CHECK(ncclProfiler_v5.finalize(cc) == 0);
  free(c); /* the host frees its word */

  static const bool want[] = {false, true, false}; /* 41 s, 70 s, 71 s */
  for (int i = 0; i < 3; i++) {
    flip();
    CHECK(timed(word(b)) == want[i]);
    CHECK_EQ_U(word(a), SENTINEL);
  }
  CHECK(ncclProfiler_v5.finalize(cb2) == 0);
  __atomic_store_n(b, SENTINEL, __ATOMIC_RELAXED);
  flip(); /* 100 s: a window opens, and no word is left to say so */
  CHECK_EQ_U(word(a), SENTINEL);
  CHECK_EQ_U(word(b), SENTINEL);
  CHECK_EQ_U(fu_warns, 0);

  release_thread(); /* the exit's shutdown joins it */
  free(a);
  free(b);
  return g_fail;
}

/* ---- group-count mode: group ends on another thread, without a lock ---- */

static atomic_int g_ends;     /* groups ended by the thread */
static atomic_bool g_stop_groups;

static void *end_groups(void *ctx) {
  while (!atomic_load(&g_stop_groups)) {
    oo_group(ctx); /* a Group event started and stopped: one group end (no GroupApi here) */
    atomic_fetch_add(&g_ends, 1);
  }
  return NULL;
}

/* Wait until the thread has ended n more groups (progress, not time). */
static void groups_later(int n) {
  int from = atomic_load(&g_ends);
  while (atomic_load(&g_ends) - from < n) sched_yield();
}

static int case_group_count_word_left_alone(const char *dir) {
  (void)dir;
  setenv("NCCL_INSPECTOR_SAMPLE_GROUPS", "2", 1);
  int *a = malloc(sizeof *a), *b = malloc(sizeof *b), *a2 = malloc(sizeof *a2);
  CHECK(a && b && a2);
  if (!a || !b || !a2) return 1;
  *a = *b = *a2 = 0;
  void *ca = init_on(0xa1, a), *cb = init_on(0xb1, b);
  CHECK(timed(word(a)) && timed(word(b))); /* the first group is timed */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, end_groups, cb) == 0);
  groups_later(50);
  CHECK(ncclProfiler_v5.finalize(ca) == 0); /* while groups end */
  free(a);
  void *ca2 = init_on(0xa2, a2); /* a word that comes and goes while they do, kept to look at */
  groups_later(50);
  CHECK(ncclProfiler_v5.finalize(ca2) == 0);
  __atomic_store_n(a2, SENTINEL, __ATOMIC_RELAXED);
  groups_later(200);
  atomic_store(&g_stop_groups, true);
  pthread_join(t, NULL);
  CHECK_EQ_U(word(a2), SENTINEL);
  int ends = atomic_load(&g_ends);
  CHECK(timed(word(b)) == (ends % 2 == 0)); /* group `ends` (from 0) is next */
  CHECK(ncclProfiler_v5.finalize(cb) == 0);
  CHECK_EQ_U(fu_warns, 0);
  free(a2);
  free(b);
  return g_fail;
}

int main(void) {
  (void)fu_op, (void)fu_init, (void)fu_records, (void)fu_child_ok, (void)fu_log_files;
  fu_case("finalized_word_left_alone", case_finalized_word_left_alone);
  fu_case("group_count_word_left_alone", case_group_count_word_left_alone);
  return check_report("test_sampler_detach");
}
