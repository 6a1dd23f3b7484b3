/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - host clocks. The GPU timer makes these unnecessary on the
 * normal path; they are read only for fallbacks and verbose traces.
 */
#ifndef INS_CLOCK_H
#define INS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ins_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ins_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
