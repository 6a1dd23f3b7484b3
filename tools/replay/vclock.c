/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vclock.c - the recorded clock (see vclock.h).
 */
#include "vclock.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

#define ORIGIN_NS 1000000000ull /* a recorded clock never reads 0 (0 means "not read") */

static bool g_on;
static _Thread_local uint64_t tls_line_ns; /* 0: this thread delivers no line */
static _Atomic uint64_t g_latest_ns;
static _Atomic(clock_gettime_fn) g_real;

static int real_clock_gettime(clockid_t id, struct timespec *ts) {
  clock_gettime_fn f = atomic_load_explicit(&g_real, memory_order_acquire);
  if (!f) {
    f = (clock_gettime_fn)(void (*)(void))dlsym(RTLD_NEXT, "clock_gettime");
    if (f) atomic_store_explicit(&g_real, f, memory_order_release);
  }
  return f ? f(id, ts) : (int)syscall(SYS_clock_gettime, id, ts);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  if (g_on && id == CLOCK_MONOTONIC) {
    uint64_t ns = tls_line_ns ? tls_line_ns : atomic_load_explicit(&g_latest_ns, memory_order_relaxed);
    if (ns) {
      ts->tv_sec = (time_t)(ns / 1000000000ull);
      ts->tv_nsec = (long)(ns % 1000000000ull);
      return 0;
    }
  }
  return real_clock_gettime(id, ts);
}

void rp_vclock_enable(bool on) { g_on = on; }
bool rp_vclock_enabled(void) { return g_on; }

void rp_vclock_set_line(uint32_t t_us) {
  uint64_t ns = ORIGIN_NS + (uint64_t)t_us * 1000u;
  tls_line_ns = ns;
  /* the latest line of any thread, never going back (threads replay out of step) */
  uint64_t cur = atomic_load_explicit(&g_latest_ns, memory_order_relaxed);
  while (cur < ns && !atomic_compare_exchange_weak_explicit(&g_latest_ns, &cur, ns,
                                                            memory_order_relaxed, memory_order_relaxed)) {
  }
}

uint64_t rp_real_mono_ns(void) {
  struct timespec ts;
  real_clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
