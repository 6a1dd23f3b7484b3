/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h - what trace mode's own files share (src/trace/ only: the adapters and the
 * lifecycle see trace.h). Three parts, one way:
 *
 *   capture.c  the callbacks' side: each thread's buffer of events (cells), the wrappers NCCL
 *              is given, the memory listed for the unload; and the reader's cursor over the
 *              buffers, which the trace thread moves
 *   writer.c   the trace thread's side: an event formatted into a line, the write buffer,
 *              the file (made again if deleted), the live contexts' init lines
 *   trace.c    the trace thread (merges the buffers by time into the writer), and the
 *              process's events: open, a context's init and finalize, flush, unload, fork
 *
 * capture.c and writer.c know nothing of each other but the event cell below; trace.c
 * wires them.
 */
#ifndef INS_TRACE_INTERNAL_H
#define INS_TRACE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nccl/profiler_abi.h"

#define INS_TRACE_MAX_BYTES (1ull << 30) /* every thread's segments together, at most */

/* The part of the descriptor's union that tracefmt reads, for any event type. */
union trace_u {
  struct prof_coll_v4 coll;
  struct prof_p2p_v4 p2p;
  struct prof_kernel_ch kernel_ch;
  struct prof_group_api group_api;
  struct prof_coll_api coll_api;
  struct prof_p2p_api p2p_api;
  struct prof_proxy_op proxy_op;
  struct prof_proxy_step proxy_step;
  struct prof_ce_coll ce_coll;
  struct prof_ce_sync ce_sync;
  struct prof_ce_batch ce_batch;
};

enum { EV_INIT, EV_START, EV_STOP, EV_RECORD, EV_FINALIZE, EV_SKIP };

/* One callback: a cache line, the line a callback writes (three lines a callback made
 * NCCL's proxy thread slower than the GPU: docs/VALIDATION.md). A start whose line needs
 * the descriptor's union has it in the cells after (`ncells` in all); a kernel-channel
 * start, most of them, keeps its channel in `state` and its pTimer in `ptimer`; an init
 * its line's text, NUL-terminated (the name is not NCCL's constant). A cell owns no
 * memory: a backlog can be dropped without reading it (fork, trace.c). */
struct trace_ev {
  uint64_t t;                       /* CLOCK_MONOTONIC ns */
  uint64_t id, parent_id, pgroup_id;
  uint64_t ptimer;                  /* a kernel channel's start or stop */
  uint32_t type;                    /* a start's PROF_EV_* */
  int32_t ctx, rank, state;
  uint8_t what;                     /* EV_* */
  uint8_t has_ptimer;
  uint16_t ncells;                  /* this cell and the union's; EV_SKIP: to the segment's end */
};
_Static_assert(sizeof(struct trace_ev) == 64, "one cache line");

/* ---- shared state (defined in trace.c) ---- */

/* Hidden: addressed directly, not through the GOT (a callback's lost-line count is one
 * locked add, as when it was a static of one file). */
#define TRACE_SHARED extern __attribute__((visibility("hidden")))

/* Trace mode's memory lock: the callbacks take it to list what they allocate (capture.c),
 * the trace thread to change the init lines (writer.c); the fork's prepare takes it, so
 * that the child finds both whole. */
TRACE_SHARED pthread_mutex_t ins_trace_mem_lock;
TRACE_SHARED _Atomic uint64_t ins_trace_lines_lost; /* a buffer full, or the file failed */
TRACE_SHARED atomic_bool ins_trace_thread_running;
TRACE_SHARED atomic_bool ins_trace_stopping;        /* the trace thread is asked to end */

/* ---- capture.c: the callbacks' side (the callbacks themselves are in trace.h) ---- */

/* n cells in a row of the calling thread's buffer, timed now, ncells set (NULL: the line
 * is lost, counted); filled, then committed in one go. */
struct trace_ev *ins_trace_take(unsigned n);
void ins_trace_commit(struct trace_ev *e);

/* The reader's side (the trace thread's, or the exiting thread's once it is joined). */
struct trace_tbuf;
/* The oldest event not yet written, among every thread's, if it is older than `before`
 * (NULL: none); *b is its buffer, *tid its thread's id. */
const struct trace_ev *ins_trace_oldest(uint64_t before, struct trace_tbuf **b, long *tid);
/* Past that event (the one ins_trace_oldest returned for b). */
void ins_trace_consumed(struct trace_tbuf *b, const struct trace_ev *e);

/* Unload: frees every buffer, segment and wrapper chunk (no callback can come). fork()'s
 * child: forgets the parent's buffers without reading them; `whole`: the prepare held the
 * memory lock, so the list of what was allocated is whole and kept (trace.c, "fork()"). */
void ins_trace_capture_release(void);
void ins_trace_capture_fork_child(bool whole);

/* ---- writer.c: the trace thread's side ---- */

/* The file <dir>/<stem>.trace.jsonl and the write buffer: 0, or -1 with a notice (trace
 * mode stays off). */
int ins_trace_writer_open(const char *dir, const char *stem);
bool ins_trace_writer_has_file(void);
const char *ins_trace_writer_path(void);
void ins_trace_writer_close(void);
/* One event's line into the write buffer, tid the thread that made it. */
void ins_trace_write_ev(const struct trace_ev *e, long tid);
/* The write buffer to the file. */
void ins_trace_writer_flush(void);
/* Finalize lines in the file so far (a finalize waits for its own to be counted). */
uint64_t ins_trace_writer_finalized(void);
/* Unload: the init lines, the buffer and the file go. */
void ins_trace_writer_release(void);
/* fork()'s child: the parent's file and formatted lines forgotten (`whole`: as above; the
 * init lines kept until fork_restart), and at its first communicator the parent's init
 * lines freed. */
void ins_trace_writer_fork_child(bool whole);
void ins_trace_writer_forget_inits(void);

#endif
