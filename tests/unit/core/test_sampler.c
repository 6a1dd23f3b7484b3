/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sampler.c - time-window sampling (src/core/sampler.c) on a fake
 * clock: windows are the first W ms of every P ms counted from the Unix
 * epoch, so their boundaries are multiples of P since the epoch, whenever
 * the process started (README, "Sampled timing").
 *
 * Two levels: the pure decision (ins_sample_window_at) at hand-computed
 * instants, and the real sampling thread run through chosen instants by a
 * fake clock (ins_sampler_set_clock) that starts 2.345678901 s into a 30 s
 * period: the mask word it writes and the wake-ups it asks for must follow
 * the epoch's boundaries, not ones counted from the start. Nothing waits on
 * real time: the fake clock jumps to each deadline the thread asks for.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "nccl/profiler_abi.h"
#include "check.h"
#include "core/config.h"
#include "core/sampler.h"

#define S 1000000000ull /* ns per second */
#define MS 1000000ull

static bool on_at(uint64_t now, uint64_t w, uint64_t p, uint64_t *next) {
  return ins_sample_window_at(now, w, p, next);
}

/* The decision, at instants whose answers are worked out by hand. */
static void test_window_boundaries_are_epoch_multiples(void) {
  uint64_t next;
  /* 1,700,000,010 s is a multiple of 30 s: 1,700,000,012.345678901 is 2.35 s in, past a 1 s window */
  CHECK(!on_at(1700000012345678901ull, 1 * S, 30 * S, &next));
  CHECK_EQ_U(next, 1700000040ull * S);
  CHECK(on_at(1700000040ull * S, 1 * S, 30 * S, &next)); /* a window opens on the boundary */
  CHECK_EQ_U(next, 1700000041ull * S);
  CHECK(on_at(1700000041ull * S - 1, 1 * S, 30 * S, &next)); /* its last ns */
  CHECK_EQ_U(next, 1700000041ull * S);
  CHECK(!on_at(1700000041ull * S, 1 * S, 30 * S, &next)); /* closes after exactly W */
  CHECK_EQ_U(next, 1700000070ull * S);
  CHECK(on_at(0, 1 * S, 30 * S, &next)); /* the epoch itself opens a window */
  CHECK_EQ_U(next, 1 * S);
  /* 2 ms of every 20 ms: 1,764,480,000.120 s is a multiple of 20 ms; 3.456789 ms in: off */
  CHECK(!on_at(1764480000123456789ull, 2 * MS, 20 * MS, &next));
  CHECK_EQ_U(next, 1764480000140000000ull);
  CHECK(on_at(1764480000121999999ull, 2 * MS, 20 * MS, &next));
  CHECK_EQ_U(next, 1764480000122000000ull);
  /* 7 s does not divide a minute: 1,700,000,001 s = 7 x 242,857,143 */
  CHECK(on_at(1700000001ull * S + 1500 * MS - 1, 1500 * MS, 7 * S, &next));
  CHECK_EQ_U(next, 1700000001ull * S + 1500 * MS);
  CHECK(!on_at(1700000003ull * S, 1500 * MS, 7 * S, &next));
  CHECK_EQ_U(next, 1700000008ull * S);
}

/* ---- the sampling thread on a fake clock ---- */

#define T0 1700000012345678901ull /* the fake start: 2.345678901 s into a 30 s period */
#define NSTEPS 6

static pthread_mutex_t g_fk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_fk_cv = PTHREAD_COND_INITIALIZER;
static _Atomic uint64_t g_now = T0;
static int g_budget;       /* waits that may time out (the test raises it) */
static bool g_release;     /* past the budget: park until ins_sampler_shutdown */
static int g_calls, g_gated, g_parked;
static uint64_t g_call_now[NSTEPS], g_call_deadline[NSTEPS];
static int g_call_word[NSTEPS];
static int g_word;         /* NCCL's activation-mask word */

static uint64_t fake_now(void) { return atomic_load(&g_now); }

/* Called by the thread with the sampler's lock held, after each decision: note the
 * instant, the deadline asked for and the word as the decision left it, then move
 * the clock to the deadline. Waits for the test's budget in between, with the
 * sampler's lock released, as a condition wait releases it (an init's attach takes it). */
static int fake_wait(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline) {
  pthread_mutex_lock(&g_fk);
  g_gated = 1;
  pthread_cond_broadcast(&g_fk_cv);
  pthread_mutex_unlock(mutex);
  while (g_calls >= g_budget && !g_release) pthread_cond_wait(&g_fk_cv, &g_fk);
  g_gated = 0;
  if (g_calls >= g_budget || g_calls >= NSTEPS) {
    pthread_mutex_unlock(&g_fk);
    pthread_mutex_lock(mutex); /* held from before "parked" shows until the wait: no lost signal */
    pthread_mutex_lock(&g_fk);
    g_parked = 1;
    pthread_cond_broadcast(&g_fk_cv);
    pthread_mutex_unlock(&g_fk);
    return pthread_cond_wait(cond, mutex); /* 0 when shutdown signals */
  }
  int i = g_calls++;
  g_call_now[i] = fake_now();
  g_call_deadline[i] = deadline;
  g_call_word[i] = __atomic_load_n(&g_word, __ATOMIC_RELAXED);
  atomic_store(&g_now, deadline);
  pthread_mutex_unlock(&g_fk);
  pthread_mutex_lock(mutex);
  return ETIMEDOUT;
}

static const struct ins_sampler_clock g_fake = {fake_now, fake_wait};

/* Let the thread make `n` more timed-out waits; return when it is blocked again. */
static void run_steps(int n) {
  pthread_mutex_lock(&g_fk);
  int target = g_calls + n;
  g_budget = target;
  pthread_cond_broadcast(&g_fk_cv);
  while (g_calls < target || !g_gated) pthread_cond_wait(&g_fk_cv, &g_fk);
  pthread_mutex_unlock(&g_fk);
}

static bool timed(int mask) { return (mask & PROF_EV_KERNEL_CH) != 0; }

/* The thread started T0, 2.35 s into a period: its first window opens at the next
 * multiple of 30 s (40 s past 1,700,000,000), not 0 or 30 s after T0. */
static void test_thread_follows_epoch_windows_not_process_start(void) {
  struct ins_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.sample_mode = INS_SAMPLE_TIME;
  cfg.sample_window_ms = 1000;
  cfg.sample_period_ms = 30000;
  ins_sampler_set_clock(&g_fake);
  ins_sampler_start(&cfg, PROF_EV_COLL | PROF_EV_P2P | PROF_EV_KERNEL_CH, 5);
  ins_sampler_attach(&g_word);
  CHECK(!timed(__atomic_load_n(&g_word, __ATOMIC_RELAXED))); /* T0 is outside a window */

  /* At T0, 40, 41 s: each decision, and the wake-up it asks for. */
  run_steps(3);
  static const uint64_t want_now[] = {T0, 1700000040ull * S, 1700000041ull * S, 1700000070ull * S,
                                      1700000071ull * S, 1700000100ull * S};
  static const uint64_t want_deadline[] = {1700000040ull * S, 1700000041ull * S, 1700000070ull * S,
                                           1700000071ull * S, 1700000100ull * S,
                                           1700000101ull * S};
  static const bool want_on[] = {false, true, false, true, true, true};

  /* Blocked after deciding at 70 s (a window): a CUDA graph capture now freezes "on".
   * The thread must still ask to wake at the window boundaries, never in the past. */
  CHECK(timed(__atomic_load_n(&g_word, __ATOMIC_RELAXED)));
  ins_sampler_graph_captured();
  run_steps(3);
  for (int i = 0; i < NSTEPS; i++) {
    if (g_call_now[i] != want_now[i] || g_call_deadline[i] != want_deadline[i] ||
        timed(g_call_word[i]) != want_on[i])
      fprintf(stderr, "decision %d: at %llu timed %d, next wake %llu; expected at %llu timed %d, "
                      "next %llu\n", i, (unsigned long long)g_call_now[i], timed(g_call_word[i]),
              (unsigned long long)g_call_deadline[i], (unsigned long long)want_now[i], want_on[i],
              (unsigned long long)want_deadline[i]);
    CHECK_EQ_U(g_call_now[i], want_now[i]);
    CHECK_EQ_U(g_call_deadline[i], want_deadline[i]);
    CHECK(timed(g_call_word[i]) == want_on[i]);
    CHECK(g_call_deadline[i] > g_call_now[i]);
  }

  /* Parked at 101 s: timed 40-41 s, then from 70 s on (frozen). */
  pthread_mutex_lock(&g_fk);
  g_release = true;
  pthread_cond_broadcast(&g_fk_cv);
  while (!g_parked) pthread_cond_wait(&g_fk_cv, &g_fk);
  pthread_mutex_unlock(&g_fk);
  struct ins_sample_stats st;
  ins_sampler_stats(&st);
  double want = (double)(1 * S + 31 * S) / (double)(1700000101ull * S - T0);
  if (fabs(st.covered - want) > 1e-9) fprintf(stderr, "covered %.12f, expected %.12f\n", st.covered, want);
  CHECK(fabs(st.covered - want) <= 1e-9);
  CHECK(st.graph_capture);
  ins_sampler_shutdown();
  ins_sampler_set_clock(NULL);
}

int main(void) {
  test_window_boundaries_are_epoch_multiples();
  test_thread_follows_epoch_windows_not_process_start();
  return check_report("test_sampler");
}
