/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prog.h - a callback program: the exact sequence of plugin calls that NCCL
 * would make for a trace, flattened into memory before anything is timed.
 *
 * Owns: compiling an in-memory trace (tools/replay's struct rp_trace, from a
 * recorded fixture or from bench/synth.c) into an array of calls with
 * ready-made descriptors. The compiler runs tools/replay's engine once
 * against a recording plugin (so NCCL's delivery rules are the replay's own,
 * not a second copy of them) that asks for what Inspector asks for
 * (Coll | P2p | KernelCh) and copies every descriptor it is given. Running a
 * program (bench/exec.c) then costs a loop, a patch of the parent handles and
 * the plugin's own calls: no parsing, no allocation, no delivery logic.
 */
#ifndef BP_PROG_H
#define BP_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/profiler_abi.h"

enum bp_op { BP_INIT, BP_START, BP_STOP, BP_RECORD, BP_FINALIZE };

union bp_descr {
  struct prof_descr_v4 v4;
  struct prof_descr_v5 v5;
  struct prof_descr_v6 v6;
};

/* One plugin call. Slots number the program's start calls from 1 (0: none). */
struct bp_call {
  uint8_t op;        /* enum bp_op */
  uint8_t has_args;  /* record: NCCL passed arguments */
  uint16_t off_group; /* start: offset of parentGroup in the descriptor, 0: none */
  int32_t state;     /* record */
  uint32_t ctx;      /* init, start, finalize */
  uint32_t slot;     /* start: its own; stop, record: the event named */
  uint32_t parent;   /* start: slot whose handle goes into parentObj */
  uint32_t group;    /* start: slot whose handle goes into parentGroup */
  uint32_t descr;    /* start: index into descr[] */
  union prof_state_args args; /* record */
};

/* The arguments of one init call. */
struct bp_ctx {
  uint64_t comm_id;
  const char *name;
  int nnodes, nranks, rank;
};

struct bp_prog {
  int ver; /* ABI version the program drives */
  struct bp_call *call;
  size_t ncall;
  union bp_descr *descr;
  size_t ndescr;
  struct bp_ctx *ctx;
  uint32_t nctx;
  uint32_t nslot; /* slots used, plus one */
  uint16_t *thread; /* per call: the recorded thread that made it */
  uint32_t nthread;
  uint64_t ptimer_span; /* bp_prog_advance: the kernel pTimers' span, once measured */
};

struct rp_trace;

/* calloc that exits on out of memory (n = 0 allocates one element). */
void *bp_xcalloc(size_t n, size_t sz);

/* Compile t for ABI version ver (4, 5 or 6). Exits on out of memory. */
void bp_compile(const struct rp_trace *t, int ver, struct bp_prog *g);
/* Move every kernel pTimer of g past the last one: run again on the same communicator, the
 * program is then later GPU work, as NCCL's next ops would be (the plugin judges timestamps
 * that go back in time as an earlier op's: core/judge.h). Not timed; call between runs. */
void bp_prog_advance(const struct bp_prog *g);
void bp_prog_free(struct bp_prog *g);

/* Event callbacks (start, stop, record) in g. */
uint64_t bp_prog_events(const struct bp_prog *g);

#endif
