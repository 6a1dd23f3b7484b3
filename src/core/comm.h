/* SPDX-License-Identifier: Apache-2.0 */
/*
 * comm.h - one communicator context (what init returns as *context) and
 * the process-wide registry of live contexts that the dump thread walks.
 *
 * A context is per rank of a communicator: a process driving two GPUs of
 * one communicator has two. Event callbacks touch only their own context
 * (its pool, rings and atomic counters) and, lock-free, the process's pool of
 * ring segments (core/seg.h); the registry lock is taken by
 * init, finalize and the dump thread, never by an event callback, and never
 * held for longer than a few stores, or a copy of the registry's array of
 * pointers (a walk's snapshot, below): no one waits behind a drain (but
 * without memory for the copy, when a walk holds it throughout: comm.c).
 * A forked child inherits the parent's contexts as foreign (comm.foreign).
 */
#ifndef INS_COMM_H
#define INS_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/names.h"
#include "core/pool.h"
#include "core/record.h"
#include "core/ring.h"
#include "core/clock_step.h"

#define INS_INFLIGHT_SLOTS 2048 /* a power of two, above INS_OVERTAKE_WINDOW */
#define INS_COMM_EXT_SINKS 4    /* per-communicator state slots of the sinks (sink/sink.h) */

struct ins_comm_stats { /* owned by whoever holds drain_lock */
  uint64_t written, reported_written, reported_dropped;
};

struct ins_comm {
  uint64_t id;
  int rank, nranks, nnodes;
  char name[128];          /* valid UTF-8 (core/utf8.h); "unknown" when NCCL gave none */
  bool verbose, track_p2p, keep_cpu_timing;
  uint64_t min_bytes;       /* NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES: smaller ops write no record */
  /* Smaller ops are not tracked at all: min_bytes with hang detection off (or no dump thread
   * to run it); 0 with it on: smaller ops are then tracked quiet, in flight for its checks
   * and writing nothing (core/op_types.h, INS_OP_QUIET) */
  uint64_t untracked_below;

  struct ins_pool pool;
  struct ins_ring ring[2];          /* [INS_KIND_COLL], [INS_KIND_P2P] */
  _Atomic uint64_t dropped[2];      /* ring full, no segment (the process's cap), or pool exhausted */
  /* Ops NCCL reported that left no record, by kind and reason (record.h), as the tracker
   * decided; the judge's (unverified) are counted on the dump side (sink/dump.c). */
  _Atomic uint64_t untimed[2][INS_UNTIMED_REASONS];
  _Atomic uint64_t p2p_seq;         /* our p2p_sn counter */
  _Atomic uint32_t event_sn;        /* verbose callback counter */
  _Atomic int bad_channel;          /* a kernel channel id >= 64 was seen */
  _Atomic uint64_t refused_parent;  /* kernel starts refused: their parent was not an op in flight */
  _Atomic uint64_t refused_dup;     /* ... or a channel their op already had */
  _Atomic uint64_t issue_seq;       /* ops issued (tracked ones, quiet ones included) */

  /* The issue order, for judging whose timestamps NCCL handed an op (core/judge.h).
   * Written by the application thread that uses the communicator (NCCL allows one at a
   * time), read by whichever thread completes an op. */
  _Atomic uint64_t ops_seq;         /* Coll and P2p events, tracked or not */
  /* API calls that can make work (ABI v5+): CollApi events, and P2pApi events through
   * their P2p events, counted as those start. NCCL 2.28-2.30 starts a P2p event for
   * every P2P call but an in-place send to self, which it drops with no work at all
   * (enqueue.cc, scheduleP2pTasksToPlan), while a collective call may run with no Coll
   * event (unreported, below); so the P2P calls that made no P2p event are no works to
   * count (core/judge.h). */
  _Atomic uint64_t api_seq;
  /* ops_seq (its low 32 bits) when the current application group began; with no group
   * ever begun, the op after the latest completed (done_idx, op.c group_unknown) */
  _Atomic uint64_t group_first_op;
  _Atomic uint64_t group_api_base;  /* api_seq when its API calls began */
  _Atomic uint32_t group_seq;       /* application groups begun */
  _Atomic bool in_api_calls;        /* the last event was an API call: the next op starts no group */
  _Atomic bool api_seen;            /* API events arrive (ABI v5+) */
  /* The op_idx + 1 of the latest op completed (mod 2^32), kept only while no application
   * group has begun (op.c group_unknown), by whichever thread completes an op: a plain
   * store, so that a race can only leave it lower (an older op's), never higher. */
  _Atomic uint32_t done_idx;
  /* The latest GPU stop timestamp of an op completed so far: a later op cannot start
   * before it on the GPU (op.c, "older timestamps"). */
  _Atomic uint64_t gpu_floor;
  /* The last op of all whose timestamps are certain: its op_idx + 1 (0: none yet) and the
   * latest stop of its kept channels. Writers raise `last_idx` first (CAS), then store
   * `last_end`; a reader loads last_end, then last_idx: the pair it sees has an end no
   * later than that op's (op.c). */
  _Atomic uint64_t last_idx, last_end;
  /* A step back of the GPU clock (core/clock_step.h): the watch that proves one, by whichever
   * thread completes an op that ran below its floor, and the steps proven (each lowered
   * the floor to the new time and forgot the last certain op: op.c clock_stepped), for the
   * dump thread to report. */
  struct ins_clock_step step;
  _Atomic uint64_t clock_steps;
  /* Collectives the application called (CollApi events) that NCCL never reported (no
   * Coll event): NCCL 2.28+ sends none for a Broadcast on its AllGatherV path. By enum
   * ins_func: each application group's calls and reports are counted while it is open,
   * and what its reports fell short by is added to `unreported` when the next group
   * begins (or at finalize), so that the count only grows. Sampling off only (an
   * unsampled group gets no Coll events by design). Application thread; unreported is
   * read by the dump thread. */
  uint32_t group_calls[INS_FUNC_COUNT], group_reports[INS_FUNC_COUNT];
  uint32_t group_funcs; /* bit f: group_calls[f] or group_reports[f] may be non-zero */
  _Atomic uint64_t unreported[INS_FUNC_COUNT];
  _Atomic uint64_t overtaken_recorded; /* ops finished by a newer op (op.h): recorded partial */
  struct ins_op *_Atomic inflight[INS_INFLIGHT_SLOTS]; /* by issue % slots */

  pthread_mutex_t drain_lock;       /* the ring consumer: dump thread or finalize */
  struct ins_comm_stats stats[2];
  /* The GPU timer's unit is being measured (core/timer.h): the callbacks read the
   * host clock as each op completes. Set at init, cleared by the ring consumer. */
  _Atomic int timer_probe;

  /* State the layers around core keep per communicator: opaque here, core never
   * reads it (data flows one way: abi/ -> core/ -> sink/). */
  void *ext_trace;                  /* trace/trace.c: the context's number in the trace */
  void *ext_drain;                  /* sink/dump.c: the consumer's state (timer, held records) */
  void *ext_sink[INS_COMM_EXT_SINKS]; /* sink/sink.h: each active sink's, by its place */
  int *ext_mask;                    /* abi/lifecycle.c: NCCL's activation-mask word, as the
                                       sampler keeps it (core/sampler.h), detached at finalize */

  /* Finalized: a tombstone waiting in the process's queue of retired contexts (below). */
  _Atomic bool retired;
  struct ins_comm *retired_next;

  /* A context this process inherited through fork(): its records, written or not, are
   * the parent's (the parent writes them). Set in the child by ins_registry_fork_child
   * (and on a child's own contexts when the fork left it unable to record: sink/dump.c);
   * nothing drains or writes such a context, and its finalize writes nothing. */
  bool foreign;

  /* The registry's (comm.c), under its lock: the context's place in the array of live
   * contexts, the order it was added in, the walk whose snapshot held it when it was
   * removed (0: none), and its link while it waits for that walk to end. */
  size_t reg_idx;
  uint64_t reg_seq, reg_walk;
  struct ins_comm *reg_dead_next;
};

struct ins_config;

/* Create a context; NULL on allocation failure (after a warning). */
struct ins_comm *ins_comm_create(const struct ins_config *cfg, uint64_t id, const char *name,
                                 int nnodes, int nranks, int rank);
/* Free a context made by hand, never registered (tests, measurements): the plugin's own
 * contexts are retired (below), never freed but at unload. */
void ins_comm_destroy(struct ins_comm *c);
/* Bytes the context holds now: its struct, its op pool's chunks, its rings' slot tables
 * and segments (not its sinks' state: sink/). For tests and measurements. */
size_t ins_comm_memory(struct ins_comm *c);

/*
 * Finalized contexts. NCCL never names a communicator after its finalize, but a host that
 * did (a late startEvent, a second finalize, a kernel event its proxy thread delivers
 * late) would touch freed memory inside someone's job. So a finalized context is not
 * freed: ins_comm_retire frees what only a live communicator uses (its rings), keeps its
 * op chunks mapped (core/pool.h: every op free, none can complete; large chunks' pages
 * handed back to the system) and keeps the struct, marked retired, in a queue. A late
 * call then finds a pool that hands out nothing, tags that say free, or (finalize) the
 * mark, and returns success having recorded nothing. ins_comm_create takes the oldest
 * retired context before it allocates one (a late call, if any, comes soon after its
 * finalize; taking the oldest gives it the longest), and its op pool grows into the
 * chunks it kept; so the process holds at most as many contexts, live and retired, as it
 * ever had live at once (17 KiB each, and the op chunks they grew). Unload frees them
 * (with no context live). Once reused, a context is another communicator's: a call
 * naming the old one is then the caller's bug (it may count as the new one's), as is
 * any call racing with its communicator's finalize.
 */
/* Finalize, its last step (or an init that failed): c must be out of the registry and
 * drained. Marked retired and its pool emptied now; the rest (its rings, its drain_lock,
 * its place in the queue, where an init may take it and clear it) now too, or, if it was
 * removed from the registry while a walk held it (it was in the walk's snapshot), when
 * that walk ends (ins_registry_walk_end, on the walker's thread). So a finalize never
 * waits for a walk, and a walk never reads a context an init has made another's. */
void ins_comm_retire(struct ins_comm *c);
/* Whether c was finalized: a second finalize does nothing. */
static inline bool ins_comm_retired(struct ins_comm *c) {
  return atomic_load_explicit(&c->retired, memory_order_relaxed);
}
/* Retired contexts waiting to be reused (for tests). */
int ins_comm_retired_count(void);

/*
 * The registry (not used on the hot path): an array of the live contexts, each knowing
 * its place, so that adding one and removing one are O(1) (removal moves the last entry
 * into the hole; the array only grows, doubling, on the adding thread). Order is not
 * kept.
 *
 * Walks. The dump layer goes over every live context (a dump pass, the test for whether
 * a ring wants the dump thread awake) without holding the lock while it works: it copies
 * the array (a snapshot, under the lock: a memcpy of the pointers), works on its copy,
 * and ends the walk. A context removed meanwhile stays as it was until the walk ends
 * (ins_comm_retire defers the rest of its retiring): the walker may still read it, lock its drain_lock and
 * find its last drain done (sink/dump.c). One walk at a time (the dump thread's; at exit,
 * the exiting thread's once the dump thread is joined): asserted.
 */
/* 0, or -1 out of memory (after a warning: the context cannot be registered). */
int ins_registry_add(struct ins_comm *c);
void ins_registry_remove(struct ins_comm *c);
/* The live contexts now (*list, n of them), until ins_registry_walk_end. */
size_t ins_registry_walk_begin(struct ins_comm *const **list);
void ins_registry_walk_end(void);
void ins_registry_lock(void);
void ins_registry_unlock(void);
/* Unload or exit, no walk going on any more (the dump thread joined): the walks' copy
 * freed, and the array too if no context is registered (a later add makes it again). */
void ins_registry_release(void);
/* Entries the registry's adds and removes have stored or moved, since the process began:
 * at most one per add and one per remove, whatever the number of contexts (a test holds
 * it to that: tests/unit/core/test_comm_registry.c). */
uint64_t ins_registry_moves(void);

/* fork(): the atfork handlers (sink/dump.c) take the lock (ins_registry_lock) after the
 * dump layer's gate, so that no dump pass holds it, and release it in the parent. In the
 * child, this: a walk the parent's dump thread had begun is over (that thread does not
 * exist here; what it held is retired at the end of the child's first walk). If `locked`
 * (taken before the fork), every context is the parent's and is marked foreign (it stays
 * in the registry, skipped by its walkers, until the child finalizes it), and the lock
 * is released. Else the lock is made anew (its holder was a thread that does not exist
 * in the child) and the registry left inert: an add or a remove could have been half
 * done, so it is not read again; such a child records nothing, and treats every context
 * as foreign (sink/dump.c). */
void ins_registry_fork_child(bool locked);

#endif
