/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - the in-memory trace: what the replay engine drives.
 *
 * Owns: the parsed, dense form of one recorded (or generated) process's
 * callback stream. The loader (trace_load.c) and the synthetic generator
 * (synth.c) both produce it through the small builder API below, and the
 * replay engine (replay.c) only reads it, so that parsing and generation
 * cost stay outside the timed replay loop.
 *
 * Numbering: the trace's sparse ids become dense indices at build time.
 *  - an event "slot" is one start line (the handle the plugin returns for it
 *    is kept in slot-indexed arrays for the whole replay); slot 0 means none;
 *  - a "ctx" is one init line (one communicator context); RP_NO_CTX means
 *    the line names no initialised context;
 *  - a "thread" is one recorded tid.
 */
#ifndef RP_TRACE_H
#define RP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rp_cb {
  RP_CB_INIT,
  RP_CB_START,
  RP_CB_STOP,
  RP_CB_RECORD,
  RP_CB_FINALIZE,
  RP_CB_DEAD /* a line NCCL could not have produced (after its ctx's finalize): never replayed */
};

#define RP_NO_CTX UINT32_MAX

/* One communicator context, as its init line gave it. */
struct rp_ctx_info {
  uint64_t comm_id;
  const char *name; /* interned; may be NULL */
  int nnodes, nranks, rank;
  int ver;  /* ABI version it was recorded through */
  int mask; /* what the recording plugin asked for (informational) */
};

/* Static facts about an event slot (one start line). */
struct rp_slot_info {
  uint32_t type;
  uint32_t line; /* index of its start line */
  uint32_t ctx;
};

/* Per-type fields of a start line (and the arguments of a record line). */
union rp_payload {
  struct { uint64_t seq, count; const char *func, *dtype, *algo, *proto; int root; uint8_t nch, nwarps; } coll;
  struct { uint64_t count; const char *func, *dtype; int peer; uint8_t nch; } p2p;
  struct { uint64_t ptimer; uint8_t ch; } kch;
  struct { int depth; bool graph; } gapi;
  struct { uint64_t count; const char *func, *dtype; int root; bool graph; } api; /* CollApi and P2pApi */
  struct { int pid, peer, nsteps, chunk, send; uint8_t ch; } pop;
  struct { int step; } pstep;
  struct { uint64_t seq, count; const char *func, *dtype, *sync; int root; uint32_t ceseq; } ce;
  struct { int nranks; bool complete; } cesync;
  struct { uint64_t bytes; int nops; } cebatch;
  struct { uint64_t value; int state; } rec; /* value: pTimer (state 22) or transSize (ProxyStep) */
};

/* One callback line. */
struct rp_event {
  uint8_t cb;      /* enum rp_cb */
  uint16_t thread; /* recorded thread index */
  uint32_t type;   /* start: event type bit; stop/record: the type of the slot */
  uint32_t ctx;    /* init/finalize/start: its ctx; stop/record: its start's ctx */
  uint32_t slot;   /* start: its own slot; stop/record: the slot it names (0: unknown) */
  uint32_t parent; /* start: parent slot (for Coll/P2p: the API parent, never the group) */
  uint32_t group;  /* start of Coll/P2p: the Group slot (NCCL's parentGroup) */
  int32_t rank;    /* the descriptor's rank field */
  uint32_t dep_off; /* --threads: this line's waits are dep[dep_off .. dep_off+dep_n) */
  uint32_t dep_n;
  uint32_t t_us;   /* recorded host time, us after the trace's first "t" (--pace-recorded);
                      sits in what was padding: the line stays 96 bytes (100k-line fixtures) */
  union rp_payload u;
};
/* One line per callback is the trace's memory: growing it grows every fixture's replay. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct rp_event) == 96, "struct rp_event grew");

/* A --threads wait: "until thread `thread` has processed its line `pos`". */
struct rp_dep {
  uint32_t thread;
  uint32_t pos;
};

struct rp_trace {
  char *path; /* for messages */
  struct rp_event *ev;
  size_t nev, evcap;
  struct rp_ctx_info *ctx;
  uint32_t nctx, ctxcap;
  struct rp_slot_info *slot; /* slot[0] is the "none" slot */
  uint32_t nslot, slotcap;
  uint64_t *tid; /* recorded tid of each thread index */
  uint32_t nthread, threadcap;
  int ver;            /* ABI version of the first init line, 0 if none */
  uint64_t t0_ns;     /* "t" of the first line that has one: the origin of every t_us */
  bool t_saturated;   /* some line's t_us was clamped (a trace spanning > 71 minutes) */
  bool has_group_api; /* any GroupApi line: the mask is then read at GroupApi starts */

  /* --threads schedule (rp_schedule_build); NULL until built */
  uint32_t **tlines; /* per thread: its line indices in order */
  uint32_t *tnlines;
  struct rp_dep *dep;
  size_t ndep, depcap;
};

void rp_trace_init(struct rp_trace *t, const char *path);
void rp_trace_free(struct rp_trace *t);

/* Builder API: append lines. All return the new line's index. */
uint32_t rp_trace_thread(struct rp_trace *t, uint64_t tid);           /* tid -> thread index */
uint32_t rp_trace_add_ctx(struct rp_trace *t, const struct rp_ctx_info *c);
uint32_t rp_trace_new_slot(struct rp_trace *t, uint32_t type, uint32_t ctx); /* at the next line */
struct rp_event *rp_trace_append(struct rp_trace *t);                /* zeroed line */
/* A start line with its new slot (e->slot) and what every start has; the caller sets
 * the rest (payload, group). Valid until the next append. */
struct rp_event *rp_trace_append_start(struct rp_trace *t, uint32_t thread, uint32_t type,
                                       uint32_t ctx, uint32_t parent, int32_t rank);

/*
 * Drops every line and event slot but keeps contexts and threads: the
 * synthetic generator refills the same trace chunk by chunk.
 */
void rp_trace_clear_lines(struct rp_trace *t);

/* Drops the --threads schedule (tlines, tnlines; dep storage is reused). */
void rp_trace_free_schedule(struct rp_trace *t);

/*
 * Called once after the last line of a loaded trace: normalises Coll/P2p parents (a v4
 * trace's Coll names its Group as parent; NCCL v5+ names the API event and
 * passes the group separately) and marks lines after their ctx's finalize
 * dead.
 */
void rp_trace_finish(struct rp_trace *t);

/* Event-type bits (same values as the ABI's). */
#define RP_EV_GROUP 1u
#define RP_EV_COLL 2u
#define RP_EV_P2P 4u
#define RP_EV_PROXY_OP 8u
#define RP_EV_PROXY_STEP 16u
#define RP_EV_PROXY_CTRL 32u
#define RP_EV_KERNEL_CH 64u
#define RP_EV_NET_PLUGIN 128u
#define RP_EV_GROUP_API 256u
#define RP_EV_COLL_API 512u
#define RP_EV_P2P_API 1024u
#define RP_EV_KERNEL_LAUNCH 2048u
#define RP_EV_CE_COLL 4096u
#define RP_EV_CE_SYNC 8192u
#define RP_EV_CE_BATCH 16384u

#endif /* RP_TRACE_H */
