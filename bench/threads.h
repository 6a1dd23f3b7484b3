/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads.h - concurrent drivers: a recorded trace on its recorded threads,
 * and independent communicators on one thread each (the scaling test).
 *
 * Owns: splitting a program's event calls by recorded thread, with the few
 * cross-thread waits that keep it causal (a call that names an event waits
 * for that event's start on its thread), and timing the concurrent phase.
 * Inits run before the threads start and finalizes after they end, both
 * outside the clock (they are also barriers in NCCL: no event of a
 * communicator precedes its init or follows its finalize).
 */
#ifndef BP_THREADS_H
#define BP_THREADS_H

#include "exec.h"

/* Runs g's event calls on g->nthread threads, `reps` times (init to finalize each). */
void bp_exec_threads(const struct bp_plugin *p, const struct bp_prog *g, int reps,
                     struct bp_stats *s);

/*
 * nthreads threads, each driving its own communicator's program (progs[i],
 * bodies without their init/finalize timed) `iters` times, started together,
 * each pinned to its own CPU when the process may use that many.
 * Returns the wall time of the concurrent phase in ns; calls are added to *s.
 */
uint64_t bp_exec_parallel(const struct bp_plugin *p, struct bp_prog *progs, int nthreads, int iters,
                          struct bp_stats *s);

#endif
