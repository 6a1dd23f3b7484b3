/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec.h - running a callback program on a plugin: the timed loop.
 *
 * Owns: loading a plugin library (dlopen, the ncclProfiler_v4/_v5/_v6
 * tables) and executing a compiled program through the table of the
 * program's ABI version, exactly as NCCL calls it: descriptors with the
 * real parent handles patched in, stop and record only for events that got
 * a non-NULL handle. Only the stretches of event callbacks are timed; init
 * and finalize (once per communicator) run outside the clock.
 */
#ifndef BP_EXEC_H
#define BP_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "prog.h"

struct bp_plugin {
  const char *path;
  const char *name; /* the table's name */
  void *dl;
  const struct prof_table_v4 *v4;
  const struct prof_table_v5 *v5;
  const struct prof_table_v6 *v6;
};

/* 0, or -1 after printing why. */
int bp_plugin_open(const char *path, struct bp_plugin *p);

struct bp_stats {
  uint64_t calls; /* event callbacks made (start, stop, record) */
  uint64_t ns;    /* time spent in the timed stretches */
};

/*
 * A program's run state: one context per ctx, one handle per slot. ctx[] is
 * filled by the program's own init calls, or by bp_open beforehand.
 */
struct bp_run {
  void **ctx;
  void **h;
};

void bp_run_alloc(const struct bp_prog *g, struct bp_run *r);
void bp_run_free(struct bp_run *r);

/* Runs the program's init calls / finalize calls only (untimed). */
void bp_open(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r);
void bp_close(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r);

/*
 * Runs g once. lifecycle: execute its init and finalize calls too (outside
 * the clock); otherwise skip them (the contexts come from bp_open). Adds to *s.
 */
void bp_exec(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r, bool lifecycle,
             struct bp_stats *s);

/* One event call of g (start, stop or record; init and finalize are ignored): 1 if the
 * plugin was called. For drivers that interleave calls themselves (threads.c). */
int bp_exec_one(const struct bp_plugin *p, const struct bp_prog *g, struct bp_run *r,
                const struct bp_call *c);

uint64_t bp_now_ns(void);

#endif
