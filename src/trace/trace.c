/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - trace mode: one line per NCCL callback (see trace.h). The trace thread, and the
 * process's events: open, a context's init and finalize, flush, unload, fork(). The
 * callbacks' side is capture.c, the lines and the file writer.c (internal.h draws the
 * three).
 *
 * Order: each thread's lines keep its order; between threads, the time each event was
 * taken (CLOCK_MONOTONIC). The thread writes only events older than MERGE_LAG_NS, so
 * that an event timed just before another thread's, but committed after it, still
 * comes first; a thread held longer than that between its clock read and its commit
 * writes its line out of order (its t is then raised to the line before: replay reads t
 * as the host clock).
 *
 * Unload: NCCL unloads the plugin with its last communicator and loads it again at the
 * next. With no communicator left no callback can come and no wrapper is named again, so
 * everything goes then (ins_trace_release): buffers, segments, wrapper chunks, the init
 * lines, the write buffer, the file; the thread is joined before.
 *
 * fork(): the child forgets the parent's unwritten callbacks in a few stores, without
 * reading them, however many there are (up to INS_TRACE_MAX_BYTES), and abandons their
 * memory to its own unload ("fork()", below, says why not free it).
 */
#include "trace/trace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "trace/internal.h"
#include "trace/tracefmt.h"

#define IDLE_SLEEP_NS 200000     /* the trace thread's nap when nothing is old enough */
#define MERGE_LAG_NS 2000000ull  /* events younger than this wait for the next pass */
#define FINALIZE_WAIT_NS 2000000000ull /* a finalize waits this long for its lines */

atomic_int g_ins_trace_on;
pthread_mutex_t ins_trace_mem_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint64_t ins_trace_lines_lost;
atomic_bool ins_trace_thread_running;
atomic_bool ins_trace_stopping;
static atomic_int g_next_ctx;
static pthread_t g_thread;

/* Write every event older than `before`, merged in time order; true if there was one. */
static bool drain(uint64_t before) {
  bool any = false;
  struct trace_tbuf *b;
  long tid;
  const struct trace_ev *e;
  while ((e = ins_trace_oldest(before, &b, &tid))) {
    ins_trace_write_ev(e, tid);
    ins_trace_consumed(b, e);
    any = true;
  }
  return any;
}

static void *trace_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&ins_trace_stopping)) {
    uint64_t now = ins_mono_ns();
    if (drain(now > MERGE_LAG_NS ? now - MERGE_LAG_NS : 0)) continue;
    ins_trace_writer_flush(); /* nothing old enough: what is formatted goes to the file */
    struct timespec ts = {0, IDLE_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

void ins_trace_open(const char *dir, const char *hostname) {
  char stem[300];
  snprintf(stem, sizeof stem, "%s-pid%ld", hostname, (long)getpid());
  if (ins_trace_writer_open(dir, stem) != 0) return;
  if (pthread_create(&g_thread, NULL, trace_thread, NULL) != 0) {
    ins_notice(NULL, NULL, "trace mode: cannot start the trace thread; trace mode off");
    ins_trace_writer_close();
    return;
  }
  ins_trace_thread_running = true;
  ins_info("trace mode: writing every callback to %s (by a thread of its own; a callback "
           "costs some tens of ns more)", ins_trace_writer_path());
  atomic_store(&g_ins_trace_on, 1);
}

int ins_trace_init(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                   int mask, int abi_version) {
  int ctx = atomic_fetch_add(&g_next_ctx, 1) + 1;
  char clean[256]; /* as a JSON string's content (any bytes NCCL gave) */
  ins_tracefmt_str(clean, sizeof clean, name);
  char body[640];
  snprintf(body, sizeof body, "\"cb\":\"init\",\"ver\":%d,\"ctx\":%d,\"comm\":\"0x%" PRIx64
           "\",\"name\":\"%s\",\"nnodes\":%d,\"nranks\":%d,\"rank\":%d,\"mask\":%d",
           abi_version, ctx, comm_id, clean, nnodes, nranks, rank, mask);
  size_t n = strlen(body) + 1;
  struct trace_ev *e = ins_trace_take(1 + (unsigned)((n + sizeof *e - 1) / sizeof *e));
  if (e) {
    e->what = EV_INIT;
    e->ctx = ctx;
    memcpy(e + 1, body, n);
    ins_trace_commit(e);
  }
  return ctx;
}

void ins_trace_finalize(int ctx) {
  struct trace_ev *e = ins_trace_take(1);
  if (!e) return;
  e->what = EV_FINALIZE;
  e->ctx = ctx;
  uint64_t before = ins_trace_writer_finalized();
  ins_trace_commit(e);
  if (!atomic_load(&ins_trace_thread_running)) return; /* a forked child's inherited one: no thread */
  /* Its lines are in the file when the finalize returns (a process may end without
   * exiting normally after it): wait for the thread, a bounded time. Finalizes that
   * run at once may see each other's line written instead: as good. */
  uint64_t t0 = ins_mono_ns();
  while (ins_trace_writer_finalized() == before && ins_mono_ns() - t0 < FINALIZE_WAIT_NS) {
    struct timespec ts = {0, IDLE_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
}

void ins_trace_flush(void) {
  /* no file: trace mode never started, or its file could not be made again (the thread
   * runs on, counting the lines it cannot write: stopped here, and they are said) */
  if (!ins_trace_writer_has_file() && !ins_trace_thread_running) return;
  if (ins_trace_thread_running) {
    atomic_store(&ins_trace_stopping, true);
    pthread_join(g_thread, NULL);
    ins_trace_thread_running = false;
  }
  drain(UINT64_MAX); /* everything left, whatever its age */
  ins_trace_writer_flush();
  uint64_t lost = atomic_load(&ins_trace_lines_lost);
  if (lost)
    ins_notice(NULL, NULL, "trace mode: %llu callback lines could not be written to %s (the threads "
               "were %llu MiB of callbacks ahead of the trace thread, or see the earlier warning): "
               "the trace is incomplete", (unsigned long long)lost, ins_trace_writer_path(),
               INS_TRACE_MAX_BYTES >> 20);
}

/* ---- unload ------------------------------------------------------------------------ */

void ins_trace_release(void) {
  if (atomic_load(&ins_trace_thread_running)) return; /* not flushed (cannot be: see trace.h) */
  atomic_store(&g_ins_trace_on, 0);
  ins_trace_capture_release();
  ins_trace_writer_release();
}

/* ---- fork() (abi/lifecycle.c's handlers) ------------------------------------------ */

/*
 * The callbacks take ins_trace_mem_lock (briefly, for memory), and the trace thread (to
 * change the init lines): the prepare takes it so that the child inherits neither held nor
 * mid-change.
 * The child has no trace thread; what the parent's threads had not yet written is the
 * parent's, and is never written here.
 *
 * The child's handler does the same few stores whatever that backlog (up to
 * INS_TRACE_MAX_BYTES): it forgets the parent's buffers (the list, and the forking thread's
 * own pointer) without reading them, so that a child that only execs costs nothing more
 * than the fork. Walking them, as the first version did to skip the cells, read the
 * whole backlog and wrote into every segment it passed: up to 1 GiB and a page a
 * segment made the child's own, for 15 s in the worst fork measured, where the fork
 * promises 1 s. The parent's memory is abandoned in the child, not freed, even lazily
 * at its first communicator: pages the child never touches cost it nothing (copy on
 * write), whereas freeing them touches each block's header, and NCCL may still name a
 * wrapper of an inherited communicator's event in the child (stop and record read it).
 * It all stays listed (capture.c's list: the child adds to the same one), so the child's
 * unload frees it with its own, and a leak checker finds it reachable. Only the parent's init
 * lines (a few, one per live communicator) are freed, at the child's first communicator
 * (ins_trace_fork_restart): a file of the child's made again starts with its own.
 * If the prepare could not take the lock, the list and the lines may be mid-change:
 * the child starts both afresh and leaves the parent's alone.
 */
static _Thread_local bool t_fork_locked;
static bool g_fork_restart;

void ins_trace_fork_prepare(const struct timespec *until) {
  t_fork_locked = pthread_mutex_timedlock(&ins_trace_mem_lock, until) == 0;
}

void ins_trace_fork_parent(void) {
  if (t_fork_locked) pthread_mutex_unlock(&ins_trace_mem_lock);
}

void ins_trace_fork_child(void) {
  pthread_mutex_init(&ins_trace_mem_lock, NULL);
  ins_trace_capture_fork_child(t_fork_locked);
  ins_trace_writer_fork_child(t_fork_locked);
  atomic_store(&ins_trace_lines_lost, 0); /* the parent's */
  atomic_store(&ins_trace_thread_running, false);
  g_fork_restart = ins_tracing();
}

void ins_trace_fork_restart(const char *dir, const char *hostname) {
  if (!g_fork_restart) return;
  g_fork_restart = false;
  ins_trace_writer_forget_inits(); /* the parent's contexts */
  atomic_store(&ins_trace_stopping, false);
  ins_trace_open(dir, hostname); /* <host>-pid<child>.trace.jsonl, and a thread */
}
