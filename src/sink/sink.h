/*
 * sink.h - the one interface between the dump layer and the output formats.
 *
 * A sink turns completed records into one kind of output: JSON lines
 * (json.c), Prometheus textfiles (prom.c), OTLP metrics (otlp.c). The dump layer (dump.c) drains
 * the communicators' rings and drives every active sink through the calls
 * below, in this order: start once; per communicator attach (at its init),
 * then for each drain begin_pass, record per record and counts when the
 * communicator wrote or dropped anything since its last counts; end_window
 * when the dump interval has passed; detach after the communicator's last
 * drain; shutdown at exit after the last drain. The dump layer never asks
 * which format a sink writes: what differs is in the sink's functions (and
 * whether it writes lines, `writes_lines`, which the dump layer then queues
 * for the writer thread).
 *
 * Threads: start and attach run on the init thread; begin_pass, record and
 * counts on whichever thread drains (the dump thread, a finalizing thread or
 * the exiting one), with the communicator's drain lock held, each with its
 * own batch; end_window on the dump thread; detach on the finalizing thread
 * after the last drain; shutdown at exit. Never in an event callback.
 *
 * Adding a sink: a new file defining a `const struct ins_sink` (as otlp.c does),
 * and one line in sinks.c's table saying when it is on. docs/ARCHITECTURE.md.
 */
#ifndef INS_SINK_H
#define INS_SINK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/comm.h"
#include "core/names.h"
#include "core/record.h"
#include "sink/buf.h"

struct ins_comm;
struct ins_config;
struct ins_sample_stats;
struct ins_timer;

#define INS_MAX_SINKS INS_COMM_EXT_SINKS /* slots in struct ins_comm (core/comm.h) */

/* What one drain of one thread produces: the text of line sinks, on its way to the log
 * file through the writer (sink/writer.h). Owned by the draining thread. */
struct ins_sink_batch {
  struct ins_buf buf;
  uint64_t records;  /* record lines in buf (the rest are stats lines): exact loss counts */
  uint64_t wall_us;  /* when this pass began (wall clock) */
  char meta[1024];   /* text a line sink prepares once per pass (JSON: the "metadata" object) */
  int meta_len;
};

/* A communicator's counts after a drain, and what was true of its records. */
struct ins_sink_counts {
  uint64_t total[2], since[2], dropped_total[2], dropped_since[2]; /* [enum ins_kind] */
  /* ops NCCL reported that left no record, by kind and reason (core/record.h) */
  uint64_t untimed_total[2][INS_UNTIMED_REASONS], untimed_since[2][INS_UNTIMED_REASONS];
  uint64_t partial_total[2]; /* records timed without some of their channels (stale_channels) */
  /* collectives the application called that NCCL never reported (core/comm.h), by enum
   * ins_func: totals and since the last counts */
  uint64_t unreported_total[INS_FUNC_COUNT], unreported_since[INS_FUNC_COUNT];
  const struct ins_sample_stats *sampling; /* the process's sampled timing */
  const struct ins_timer *timer;           /* the GPU timer's unit (core/timer.h) */
};

struct ins_sink {
  const char *name;
  bool writes_lines; /* appends to the batch's text (queued for the writer thread) */
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
  /* Process exit, after the last drain. */
  void (*shutdown)(void);
  /* fork() (NULL: nothing to do; sink/dump.c, "fork()"): a sink whose own thread takes a
   * lock outside the dump layer's gate (OTLP's exporter) takes that lock before the fork,
   * waiting until `until` at most: 0 taken, -1 not (the child must then not use the
   * sink). After the fork it is released in the parent; in the child the sink is left
   * inert (its thread is gone), told whether it had been taken. */
  int (*fork_prepare)(const struct timespec *until);
  void (*fork_parent)(void);
  void (*fork_child)(bool taken);
};

/* The sinks the configuration turns on (sinks.c); *n of them. */
const struct ins_sink *const *ins_sinks_active(const struct ins_config *cfg, int *n);

#endif
