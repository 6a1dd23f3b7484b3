/* SPDX-License-Identifier: Apache-2.0 */
/*
 * drain.h - one communicator's drain (the dump layer's, with dump.c): its records taken
 * out of its rings, through the judge (core/judge.h) and the GPU timer's unit
 * (core/timer.h), to every active sink, and what the sinks and the log are told of its
 * counts. The caller holds the communicator's drain_lock and the dump layer's gate
 * (dump.c says who drains, when, and under which locks).
 */
#ifndef INS_SINK_DRAIN_H
#define INS_SINK_DRAIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/config.h"
#include "core/judge.h"
#include "core/timer.h"
#include "sink/hang.h"
#include "sink/sink.h"
#include "sink/stash.h"

/* Whoever drains: the dump thread, or a finalizing or exiting thread (its batches
 * direct: sink.h). */
struct ins_drainer {
  struct ins_sink_batch batch[INS_MAX_SINKS]; /* sink i's view of this drainer */
  struct ins_stash stash;
};

/* Per communicator, owned by whoever holds its drain_lock (c->ext_drain). */
struct ins_drain_comm {
  struct ins_judge judge; /* records whose timestamps may be a later op's (core/judge.h) */
  struct ins_timer timer; /* the GPU timer's unit (core/timer.h) */
  unsigned char *held;    /* GPU-timed records held back until it is known */
  size_t held_n, held_cap, held_slot;
  uint64_t partial[2];    /* records written without some of their channels */
  /* what the sinks were last told (report_counts) */
  uint64_t told_untimed[2][INS_UNTIMED_REASONS], told_unreported[INS_FUNC_COUNT], told_partial[2];
  uint64_t told_bounded[2], told_clock_steps;
  struct ins_hang_comm *hang; /* hang detection's (sink/hang.h): made at the first op */
  /* An inherited context finalized in a forked child (forget): its sinks' states, kept */
  void *left_sink[INS_COMM_EXT_SINKS];
  struct ins_drain_comm *left_next;
};

/* The configuration and the active sinks, given once by ins_dump_start. */
void ins_drain_setup(const struct ins_config *cfg, const struct ins_sink *const *sinks, int nsinks);
/* Forks waiting for the dump layer's gate (dump.c): a drain that is not a last one ends
 * its pass early, leaving the ring's rest for the next. */
extern atomic_int ins_dump_fork_waiting;

/* `direct`: a finalizing or exiting thread (sink.h). */
void ins_drainer_init(struct ins_drainer *d, size_t stash_bytes, bool direct);
void ins_drainer_free(struct ins_drainer *d);
/* A pass begins: the sinks prepare what is the same for all its records. */
void ins_drain_begin_pass(struct ins_drainer *d);
/* Move one context's records to the sinks. `final`: the context's last drain (finalize,
 * exit): nothing may stay held back. */
void ins_drain(struct ins_comm *c, struct ins_drainer *d, bool final);
/* c's drain is over: each sink's output of it goes out (sink.h flush). */
void ins_drain_flush(struct ins_drainer *d, struct ins_comm *c);
/* At c's finalize: what left no record and why, and its drops, in the log. */
void ins_drain_say_untimed(const struct ins_comm *c, const struct ins_drain_comm *dc);
void ins_drain_dropped_final(const struct ins_comm *c);
/* The finalized communicators' drops so far (the process's total at exit adds the live ones'). */
unsigned long long ins_drain_dropped_finalized(void);

#endif
