/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vclock.h - --recorded-clock: the host's CLOCK_MONOTONIC, as the plugin
 * reads it, is the recorded time of the line being replayed.
 *
 * Why: a plugin that compares host progress with GPU progress (the RCCL
 * timer's unit, src/core/timer.h) must see the host times of the recording.
 * Pacing the replay by them (--pace-recorded) gets close on an idle machine,
 * but a loaded or instrumented one (a sanitizer build under `make check -j`)
 * falls behind and the host times stretch: a test would then depend on the
 * machine's speed. With this clock it does not: every clock_gettime of
 * CLOCK_MONOTONIC in the process returns the `t` of the line the calling
 * thread is delivering (1 s + its offset from the trace's first line), or,
 * on a thread delivering none (the plugin's own threads), the latest line
 * delivered by any thread. Other clocks, and the replay's own timing, read
 * the real clocks.
 *
 * How: the replay defines clock_gettime itself and exports it
 * (-Wl,--export-dynamic-symbol), so that the plugin's calls, resolved in the
 * global scope where the executable comes first, land here; the real one is
 * found with dlsym(RTLD_NEXT). Off unless enabled: then a plain forward.
 */
#ifndef RP_VCLOCK_H
#define RP_VCLOCK_H

#include <stdbool.h>
#include <stdint.h>

void rp_vclock_enable(bool on); /* once, before any replay */
bool rp_vclock_enabled(void);
/* The calling thread is about to deliver a line recorded t_us after the trace's first. */
void rp_vclock_set_line(uint32_t t_us);
/* CLOCK_MONOTONIC of the machine, ns, whatever the mode (the replay's own timing). */
uint64_t rp_real_mono_ns(void);

#endif
