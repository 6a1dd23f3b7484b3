/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sink.h - the one interface between the dump layer and the output formats.
 *
 * A sink turns completed records into one kind of output: JSON lines
 * (json/json.c), Prometheus textfiles (prom/prom.c), OTLP metrics (otlp/otlp.c).
 * The dump layer (dump.c) drains the communicators' rings and drives every
 * active sink through the calls below, in this order: start once; per
 * communicator attach (at its init), then for each pass begin_pass, and for
 * each communicator it drains record per record, counts when the communicator
 * wrote or dropped anything since its last counts, and flush when that
 * communicator's drain is over; end_window when the dump interval has passed;
 * with hang detection on, at each check hang and inflight per communicator and
 * hang_checked after them (below);
 * detach after the communicator's last drain; shutdown at exit after the last
 * drain; release at unload. The dump layer never asks which
 * format a sink writes, nor where it goes: what differs is in the sink's
 * functions. A sink that writes on a thread of its own owns that thread: the
 * JSON log's writer thread starts and stops with the dump thread
 * (dump_starting, dump_stopped), OTLP's exporter with the sink (start,
 * shutdown); either takes its own lock around a fork (fork_prepare).
 *
 * Threads: start and attach run on the init thread; begin_pass, record, counts
 * and flush on whichever thread drains (the dump thread, a finalizing thread or
 * the exiting one), with the communicator's drain lock held (a finalize's flush
 * just after it, its drain being the last), each with its own batch; end_window
 * on the dump thread; detach on the finalizing thread after the last drain;
 * shutdown at exit. Never in an event callback. None of them may hold a lock
 * that attach or detach takes while it formats or writes (dump.c, "A pass": an
 * init or a finalize never waits for other communicators' output).
 *
 * Adding a sink: a new folder with a file defining a `const struct ins_sink`
 * (as otlp/otlp.c does), and one line in sinks.c's table saying when it is on.
 * A sink includes the dump layer's headers and sink/vocab.h, never another
 * sink's. docs/ARCHITECTURE.md.
 */
#ifndef INS_SINK_H
#define INS_SINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/comm.h"
#include "core/names.h"
#include "core/record.h"

struct ins_comm;
struct ins_config;
struct ins_sample_stats;
struct ins_timer;

#define INS_MAX_SINKS INS_COMM_EXT_SINKS /* slots in struct ins_comm (core/comm.h) */

/* One drainer's passes, as one sink sees them: the dump thread keeps one per sink for all its
 * passes, a finalizing or exiting thread one for its drain. Owned by the draining thread. */
struct ins_sink_batch {
  uint64_t wall_us; /* when this pass began (wall clock) */
  /* A finalizing or exiting thread drains: what the sink has of this batch must be out
   * when flush returns (when a finalize returns, every record of its communicator is
   * written). Else the dump thread drains, and the sink may hand it to a thread of its own. */
  bool direct;
  void *state; /* the sink's, for this drainer: NULL at first, freed in batch_free */
};

/* A communicator's counts after a drain, and what was true of its records. */
struct ins_sink_counts {
  uint64_t total[2], since[2], dropped_total[2], dropped_since[2]; /* [enum ins_kind] */
  /* ops NCCL reported that left no record, by kind and reason (core/record.h) */
  uint64_t untimed_total[2][INS_UNTIMED_REASONS], untimed_since[2][INS_UNTIMED_REASONS];
  uint64_t partial_total[2]; /* records timed without some of their channels (stale_channels) */
  /* of the unverified, those given a bound (core/judge.h, "Bounds"): totals and since the last */
  uint64_t bounded_total[2], bounded_since[2];
  /* collectives the application called that NCCL never reported (core/comm.h), by enum
   * ins_func: totals and since the last counts */
  uint64_t unreported_total[INS_FUNC_COUNT], unreported_since[INS_FUNC_COUNT];
  /* steps back of the GPU clock proven (core/clock_step.h): a total */
  uint64_t clock_steps;
  const struct ins_sample_stats *sampling; /* the process's sampled timing */
  const struct ins_timer *timer;           /* the GPU timer's unit (core/timer.h) */
};

/* ---- hang detection (NCCL_INSPECTOR_HANG_SECONDS > 0: sink/hang.h says how it decides) ---- */

/* An op as a hang line names it: its kind (enum ins_kind), NCCL's function name, sequence
 * number (coll: NCCL's seqNumber; p2p: the context's P2P counter), peer (P2P), size, count
 * and datatype. Names may be NULL. */
struct ins_sink_op {
  uint8_t kind;
  const char *func, *datatype;
  uint64_t sn;
  int32_t peer;
  uint64_t bytes, count;
};

/* The newest op of a context that completed, as far as the dump layer knows (the newest, in
 * issue order, of those whose records it took from the rings). end_ns: its end, the
 * record's (kernel GPU time in ns, or host ns for a host-timed op); 0 unknown. */
struct ins_sink_last {
  uint8_t kind;
  const char *func;
  uint64_t sn, end_ns;
};

enum ins_hang_what {
  INS_HANG_STUCK,    /* an op in flight past the threshold (again every threshold) */
  INS_HANG_RESOLVED, /* an op said stuck completed after all */
  INS_HANG_IDLE,     /* the context completed ops, has none in flight, and none for the threshold */
};

/* What a hang check found in one context: one line of the JSON log (docs/CONTRACTS.md
 * section 2). Times are the dump thread's: "in flight" since it first saw the op in flight. */
struct ins_sink_hang {
  enum ins_hang_what what;
  uint64_t wall_us;                 /* when it is said (the line's dump_timestamp_us) */
  struct ins_sink_op op;            /* STUCK, RESOLVED */
  double in_flight_s;               /* STUCK, RESOLVED */
  uint64_t first_seen_us;           /* STUCK: wall clock when it was first seen in flight */
  int channels_started, channels_stopped; /* STUCK: kernel started = channels_started > 0 */
  uint64_t ops_in_flight;           /* STUCK: the context's, this one included */
  uint32_t repeat;                  /* STUCK: 0 for its first line, then 1, 2, ... */
  double idle_s;                    /* IDLE: since the context last had an op in flight */
  const struct ins_sink_last *last; /* STUCK, IDLE: NULL when none is known */
};

/* A context's ops in flight at a check (every check, every context). */
struct ins_sink_inflight {
  uint64_t ops;      /* in flight now */
  double oldest_s;   /* how long the oldest has been (0: none) */
};

struct ins_sink {
  const char *name;
  /* Process init, before any attach. */
  void (*start)(const struct ins_config *cfg);
  /* A new communicator, on its init thread (its GPU is current): *state is the sink's
   * per-communicator state, kept in c->ext_sink[]. -1: it cannot be kept (out of memory). */
  int (*attach)(struct ins_comm *c, void **state);
  /* A drain begins (NULL: nothing to prepare). */
  void (*begin_pass)(struct ins_sink_batch *b);
  /* One record, in ns. -1 if it cannot be kept (then it is counted as dropped). */
  int (*record)(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                const struct ins_record *r);
  /* The communicator's counts (it wrote or dropped something since the last). -1: not
   * reported (out of memory): the same news is reported at the next drain. */
  int (*counts)(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
                const struct ins_sink_counts *k);
  /* The dump interval has passed (NULL: nothing to do). */
  void (*end_window)(void);
  /* After the communicator's last drain; frees its state. */
  void (*detach)(struct ins_comm *c, void *state);
  /* Communicator c's drain is over (NULL: nothing to do; state: the sink's state of c):
   * what the sink made of it goes out. The dump thread's may be handed to a thread of
   * the sink's, as long as a direct writer of c later (b->direct: its finalize, exit)
   * writes it first, before its own, when this returns: the drainer lets go of c after
   * this. A direct writer waits for no other communicator's output. A sink may flush a
   * large batch itself from record. */
  void (*flush)(struct ins_sink_batch *b, const struct ins_comm *c, void *state);
  /* The drainer is done with its batch (NULL: the sink keeps nothing per drainer). */
  void (*batch_free)(struct ins_sink_batch *b);
  /* The dump thread is about to start (at process init, and in a forked child at its
   * first communicator of its own), and is gone (at exit, before the last drain; called
   * whether it ran or not). NULL: nothing to do. Here a sink starts and stops the thread
   * that takes the dump thread's batches (the JSON log's writer); with that thread
   * stopped, or not started, every batch is written as a direct one. */
  void (*dump_starting)(void);
  void (*dump_stopped)(void);
  /* Process exit, after the last drain. */
  void (*shutdown)(void);
  /* Library unload or the end of exit, after shutdown (NULL: nothing to do): what the
   * sink kept for drains after shutdown (a communicator finalized after exit began)
   * released, so that a plugin NCCL loads and unloads again leaks nothing. */
  void (*release)(void);
  /* fork() (NULL: nothing to do; sink/dump.c, "fork()"): a sink whose own thread takes a
   * lock outside the dump layer's gate (the JSON log's writer, OTLP's exporter) takes that
   * lock before the fork, once that thread holds no other lock, waiting until `until` at
   * most: 0 taken, -1 not, holding nothing (the child must then not use the sink). After
   * the fork it is released in the parent (fork_parent, if taken); in the child
   * (fork_child, always) the sink's thread is gone: it is left inert, or ready to start
   * that thread again (dump_starting), told whether the lock had been taken. */
  int (*fork_prepare)(const struct timespec *until);
  void (*fork_parent)(void);
  void (*fork_child)(bool taken);
  /* Hang detection (NCCL_INSPECTOR_HANG_SECONDS > 0; each NULL: nothing to do), on the dump
   * thread at each check (sink/hang.h: at least every min(threshold / 4, 1 s)), whatever
   * the dump interval. hang and inflight with c's drain lock held, after c's drain if the
   * check drained it (a hang line is preceded by a drain of its context: its last completed
   * op is then the newest there is).
   *  - hang: what c says (a stuck op, one resolved, an idle context). Written at once: the
   *    sink's output of it is out when this returns (the JSON log's line written, with c's
   *    lines queued before it and those of this batch: write(2) done, no fsync), not at
   *    the next dump. -1: it could not be (out of memory).
   *  - inflight: c's ops in flight, for live gauges.
   *  - hang_checked: a check of every context is over (now_ns: its CLOCK_MONOTONIC time, or
   *    the test clock's: sink/hang.h); a sink whose files must show the gauges while ops are
   *    in flight rewrites them here when due. */
  int (*hang)(struct ins_sink_batch *b, const struct ins_comm *c, void *state,
              const struct ins_sink_hang *h);
  void (*inflight)(const struct ins_comm *c, void *state, const struct ins_sink_inflight *f);
  void (*hang_checked)(uint64_t now_ns);
};

/* The sinks the configuration turns on (sinks.c); *n of them. */
const struct ins_sink *const *ins_sinks_active(const struct ins_config *cfg, int *n);

/* The dump directory, or a file in it, cannot be made or written: the topic of the notices
 * that say so (core/log.h ins_notice), whoever meets it first (the dump layer's check at the
 * start, the JSON log, the Prometheus files): one line on stderr for the one problem, each
 * WARN as before. Defined in dump.c. */
extern atomic_int ins_sink_dir_said;

#endif
