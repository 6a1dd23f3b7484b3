/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - trace mode (NCCL_INSPECTOR_TRACE_DIR): besides its records, the
 * plugin writes every callback NCCL makes, in the format inspector-replay
 * reads, to <dir>/<hostname>-pid<pid>.trace.jsonl. Replaying that file gives
 * the records the live run wrote: how a user sends us what NCCL did.
 *
 * A diagnostic mode with a small cost: a callback copies the event into its
 * thread's buffer (some tens of ns), the trace thread merges the buffers,
 * formats and writes the lines (capture.c says why). NCCL is given a wrapper per
 * event (its id, and the tracker's handle); the adapters unwrap them before the
 * tracker sees them.
 */
#ifndef INS_TRACE_H
#define INS_TRACE_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "nccl/profiler_abi.h"

extern atomic_int g_ins_trace_on;

static inline int ins_tracing(void) {
  return atomic_load_explicit(&g_ins_trace_on, memory_order_relaxed);
}

/* Process init: open the trace file; tracing is on if it opened. */
void ins_trace_open(const char *dir, const char *hostname);
/* A communicator context: returns its ctx number for the trace. */
int ins_trace_init(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                   int mask, int abi_version);
void ins_trace_finalize(int ctx);
/* A start, in two steps so that its line takes its place before the tracker sees the
 * event: _begin takes a cell (NULL: the ring is full, the line is lost and counted);
 * then, with the tracker's handle, ins_trace_start logs it and returns the wrapper NCCL
 * gets. */
void *ins_trace_start_begin(uint64_t type);
void *ins_trace_start(void *cell, int ctx, uint64_t type, void *parent, int rank,
                      const void *u, void *pgroup, void *inner);
/* The tracker's handle behind what NCCL passes back (a wrapper, or NULL). */
void *ins_trace_unwrap(void *h);
/* Log a stop / state record; return the tracker's handle. */
void *ins_trace_stop(void *h);
void *ins_trace_record(void *h, int state, const union prof_state_args *args);
/* Process exit or unload: stop the trace thread, write what is left. */
void ins_trace_flush(void);
/* Unload (or exit) with no communicator left, after ins_trace_flush: no callback can
 * come and NCCL names no event again, so every buffer, segment and wrapper, the init
 * lines, the write buffer and the file go (NCCL unloads the plugin with its last
 * communicator and loads it again at the next: nothing accumulates). Trace mode is off
 * after it. */
void ins_trace_release(void);

/* fork() (abi/lifecycle.c's handlers): the prepare takes trace mode's memory lock
 * (until `until` at most), the parent releases it; the child forgets the parent's
 * unwritten lines without reading them (the same few stores however many there are) and
 * traces its own callbacks to its own file from its first communicator on (fork_restart,
 * with the process's trace directory and host name). */
void ins_trace_fork_prepare(const struct timespec *until);
void ins_trace_fork_parent(void);
void ins_trace_fork_child(void);
void ins_trace_fork_restart(const char *dir, const char *hostname);

#endif
