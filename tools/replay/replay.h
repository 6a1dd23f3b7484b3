/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.h - the replay engine: drives a plugin through an in-memory trace.
 *
 * Owns: NCCL's delivery rules (which callbacks a plugin gets, given its
 * activation mask, the driven ABI version, and what it returned before), the
 * handle bookkeeping (every handle kept by event for the whole replay, as
 * NCCL passes a stopped op's handle as parent of later kernel events), and
 * the serial and --threads drivers. Only the replay itself is timed.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "abi.h"
#include "trace.h"

struct rp_counts {
  uint64_t lines;       /* lines replayed (all repetitions) */
  uint64_t init;        /* init calls */
  uint64_t init_failed; /* of which returned non-zero */
  uint64_t start, stop, record, finalize;
  uint64_t skipped;     /* lines that led to no callback */
};

/* The process-wide activation mask every init gets (starts at 0). */
int *rp_activation_mask(void);

/* --mask-log: from now on, one line per Coll/P2p start (event index in its
   trace, the mask it was judged with, delivered 0/1, CLOCK_REALTIME ns, trace
   path). Returns -1 if the file cannot be opened. */
int rp_set_mask_log(const char *path);
/* Closes it (no-op without one); -1 if writing it failed. */
int rp_close_mask_log(void);

/* --pace-us: wait this long before each Coll/P2p start (0: as fast as possible). */
void rp_set_pace_us(double us);
/* --pace-recorded: deliver each line at its recorded host time: once the time
 * since the replay (each repetition) began has reached the line's t_us. With
 * threads each replay thread waits for its own lines. */
void rp_set_pace_recorded(bool on);
/* --no-finalize: finalize lines are skipped, as by a host that exits without
 * destroying its communicators (a Python process often does). */
void rp_set_no_finalize(bool skip);

/*
 * A replay in progress: the contexts the plugin created, the handles it
 * returned, each recorded thread's mask snapshot, the counts and the time
 * spent in the replay itself.
 */
struct rp_engine;

struct rp_engine *rp_engine_new(const struct rp_abi *abi, bool threads);

/*
 * Replays every line of t (serially, or with threads = true one thread per
 * recorded thread, which needs rp_schedule_build(t)). Contexts created by
 * earlier calls stay valid, so a long stream may be fed in chunks (the
 * synthetic generator does), provided no line names an event of an earlier
 * chunk: event handles are kept for one call. Exits the process if a
 * thread cannot be created.
 */
void rp_engine_run(struct rp_engine *e, const struct rp_trace *t);

/* Whether e runs one thread per recorded thread. */
bool rp_engine_threads(const struct rp_engine *e);

/* Forgets contexts and snapshots: the next line starts afresh (--repeat). */
void rp_engine_restart(struct rp_engine *e);

/* Adds the counts and the replay time to *c and *elapsed_ns, and frees e. */
void rp_engine_free(struct rp_engine *e, struct rp_counts *c, uint64_t *elapsed_ns);

/* Whole-trace convenience: restart + run, `repeat` times. */
void rp_replay(const struct rp_trace *t, const struct rp_abi *abi, bool threads, int repeat,
               struct rp_counts *c, uint64_t *elapsed_ns);

#endif /* RP_REPLAY_H */
