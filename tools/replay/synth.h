/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.h - the synthetic traffic generator (--synthetic).
 *
 * Owns: a deterministic model of an NCCL job (ranks on nodes, communicators,
 * collectives and a point-to-point exchange over a range of sizes, with a GPU
 * timing model and planted faults: a late rank (always, in some iterations or
 * from some op on; in its collectives, its P2P or both, its peers waiting for
 * it with --p2p-wait), per-node GPU clock offsets
 * and rates (drift), a slow link between two nodes, a slowdown from some point on, a job that
 * hangs: one rank never issues an op the others wait for) that yields
 *  - the callback stream NCCL would produce for one rank or for all ranks
 *    (as in-memory trace chunks, replayed by the same engine as recorded
 *    traces; generation happens between chunks, outside the timed replay),
 *  - the "truth" file: what a correct plugin must report per op and rank
 *    (docs/CONTRACTS.md section 3).
 * Everything but the absolute time base is a pure function of the
 * parameters and --seed, so the per-rank children of --procs agree with each
 * other and with the truth file the parent wrote.
 */
#ifndef RP_SYNTH_H
#define RP_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

#define SYN_MAX_COLLS 8
#define SYN_MAX_SLOW 8 /* --slow-link links */

enum syn_func { SYN_ALLREDUCE, SYN_ALLGATHER, SYN_REDUCESCATTER, SYN_BROADCAST, SYN_REDUCE, SYN_SEND, SYN_RECV, SYN_NFUNC };

/* --p2p-pattern: whom rank r Sends to (and Recvs from, the mirror image). */
enum syn_p2p_pattern {
  SYN_P2P_RING, /* r+1 (from r-1) */
  SYN_P2P_NODES, /* the same local index on the next node: r + ranks/nodes (from r - ranks/nodes) */
  SYN_P2P_ALL    /* r + k (from r - k), k = 1 + (the exchange's number on its communicator) mod (ranks - 1):
                    any ranks - 1 exchanges in a row of one communicator cover every pair */
};

/* --late-in: which ops the late rank is late in. */
enum syn_late_in { SYN_LATE_ALL, SYN_LATE_COLL, SYN_LATE_P2P };

/* --hang-kind: what the stuck op is. */
enum syn_hang_kind {
  SYN_HANG_COLL, /* a collective: every rank that issued it waits inside its kernel */
  SYN_HANG_P2P   /* an exchange: the Recv whose peer's Send never comes waits */
};

/*
 * --hang-rank: a job that stops making progress (docs/CONTRACTS.md section 1, "A stuck op").
 * The stuck op X is the first op of `kind` (on communicator `comm` when >= 0) whose running
 * index is `op` or later (-1: the middle op, total / 2), as syn_hang_resolve finds it. Rank
 * `rank` never issues X, nor anything after it: it is "missing". Every other rank issues X,
 * and nothing after it: a collective's channels all start and none stops (the rank "waits
 * inside NCCL"); in an exchange only a Recv from the missing (or the queued) rank waits so,
 * every other task of X completes. Rank `queued` issues X but none of its channels start
 * ("queued" behind something). With `group` > 1, X is the last of `group` ops (by running
 * index) issued in one application group (one GroupApi): the others complete, on every rank.
 * Ops before the group complete as without a hang.
 */
struct syn_hang {
  int rank;                /* --hang-rank: -1, no hang */
  int queued;              /* --hang-queued-rank: -1, none */
  enum syn_hang_kind kind; /* --hang-kind (coll) */
  int comm;                /* --hang-comm: -1, any communicator */
  int64_t op;              /* --hang-op: -1, the middle op */
  int group;               /* --hang-group (1) */
  /* syn_hang_resolve's answer; until then (and without a hang) resolved is false */
  bool resolved;
  uint64_t index;          /* X's running index */
  uint64_t first;          /* its group's first op: index - (group - 1) */
};

/* --order: which loop is outermost. */
enum syn_order {
  SYN_ORDER_SIZES, /* per collective, per size, all iterations back to back */
  SYN_ORDER_ITERS  /* per iteration, every collective and size (a training loop) */
};

struct syn_params {
  int ranks, nodes, comms, iters;
  int ncolls;
  enum syn_func colls[SYN_MAX_COLLS];
  bool p2p;
  uint64_t min_bytes, max_bytes;
  double factor;
  double bw_gbs, lat_us;
  int channels;
  int late_rank; /* -1: none */
  double late_us;
  double late_jitter_us;   /* late rank: + U[0, F] us per op; on-time ranks: + U[0, F/10] us (0: none) */
  double late_fraction;    /* --late-fraction: late in a seeded share F of the iterations (1: all) */
  double late_from;        /* --late-from: late only in ops from running index ceil(F x total ops) on (0) */
  enum syn_late_in late_in;/* --late-in: late in every op, its collectives only, or its P2P only */
  bool p2p_wait;           /* --p2p-wait: a P2P task waits for its peer (ends at the later arrival + transfer) */
  bool p2p_comm;           /* --p2p-comm: the exchange runs on a communicator of its own (index comms) */
  double clock_offset_ms;  /* node n's pTimers are shifted by U[-F, F] ms (0: none) */
  double clock_drift_ppm;  /* node n's GPU clock runs U[-F, F] ppm fast from base_ns on (0: none; syn_gpu_ns) */
  double op_gap_ms;        /* --op-gap-ms: host time between ops, beyond the 3-5 us (0) */
  enum syn_p2p_pattern p2p_pattern;
  int nslow;               /* --slow-link A:B given this many times (repeatable) */
  int slow_a[SYN_MAX_SLOW], slow_b[SYN_MAX_SLOW]; /* node indexes */
  double slow_factor;      /* the bytes/bw part of a transfer over that link, x this */
  double degrade_at;       /* ops with running index >= AT x total ops ... */
  double degrade_factor;   /* ... transfer this much slower (1: no change) */
  enum syn_order order;
  struct syn_hang hang;    /* --hang-*: the stuck op (rank -1: none) */
  const char *comm_name;
  uint64_t seed;
  uint64_t base_ns; /* CLOCK_REALTIME at the start: pTimers are near wall clock */
  /* Host names, for the truth file (set by main.c): with node_hosts, each rank's process runs as
     its node's syn_node_name (--procs with --nodes > 1, hostname.h); otherwise as `host`. */
  bool node_hosts;
  const char *host;
  /* syn_plan's table: each op's end time by running index, or NULL (computed op by op). */
  uint64_t *plan;
};

/* Defaults of docs/CONTRACTS.md section 1. */
void syn_defaults(struct syn_params *p);

/* Parses a --colls list ("AllReduce,Broadcast"); -1 and *bad = the bad name's start. */
int syn_parse_colls(const char *list, struct syn_params *p, const char **bad);

/*
 * Nodes hold contiguous blocks of ranks: rank r is on node floor(r x nodes / ranks), which is
 * r / (ranks / nodes) when nodes divide ranks; otherwise block sizes differ by at most one
 * (the larger ones not necessarily first). Needs 1 <= nodes <= ranks.
 */
int syn_node_of(const struct syn_params *p, int rank);

/* "node-NNN": the index zero-padded to 3 digits, or to as many as the largest index needs. */
void syn_node_name(const struct syn_params *p, int node, char *buf, size_t cap);

/* Node n's GPU clock offset in ns: a pure function of --seed and n, uniform in [-F, F] ms. */
int64_t syn_clock_offset_ns(const struct syn_params *p, int node);

/* Node n's GPU clock rate error in ppm: a pure function of --seed and n, uniform in [-F, F]. */
double syn_clock_drift_ppm(const struct syn_params *p, int node);

/*
 * What node n's GPU clock reads at true time t (t >= base_ns):
 * base_ns + (t - base_ns) x (1 + drift_ppm x 1e-6) + offset, rounded to whole ns. The rate
 * applies from the run's time base (its first op's t0), not from the epoch: the clocks agree
 * but for the offset when the run starts and drift apart as it goes.
 */
uint64_t syn_gpu_ns(const struct syn_params *p, int node, uint64_t t);

/*
 * Computes every op's end time once, in O(ops x ranks), into p->plan, so that a walk (each
 * --procs child inherits the table through fork) costs O(ops) for its rank instead. Call
 * after base_ns is set and before any walk. Skipped (p->plan stays NULL, walks compute as
 * they go) above 4M ops or without memory. syn_plan_free releases it.
 */
void syn_plan(struct syn_params *p);
void syn_plan_free(struct syn_params *p);

/*
 * Finds the stuck op of p->hang (see struct syn_hang) and sets its resolved fields. Nothing to
 * do without a hang (rank -1). -1 when there is no such op, with why (a usage error, naming the
 * option) in why[cap]; else 0. Call once the options are final, before any walk.
 */
int syn_hang_resolve(struct syn_params *p, char *why, size_t cap);

/* Writes the truth file: one JSON line per op per rank (per completed op and rank with a hang,
   then the hang's own line). 0 or -1 (I/O error). */
int syn_write_truth(const struct syn_params *p, FILE *f);

/*
 * Generates the callback stream of rank `only_rank` (-1: all ranks in one
 * process) and hands it to sink in chunks of whole ops (inits first,
 * finalizes last), so that a long run needs little memory and the plugin
 * sees callbacks from the start. Each chunk is reused after sink returns;
 * its contexts and threads stay the same throughout the stream.
 * With a stuck callback (not NULL: a hang, or a quiet job held at its end),
 * the finalizes come in a chunk of their own, and stuck is called once
 * between: every line before it has been handed to sink, and the stuck ops'
 * channels (if any) will never stop.
 */
typedef void (*syn_sink)(void *arg, struct rp_trace *chunk);
typedef void (*syn_stuck)(void *arg);
void syn_stream(const struct syn_params *p, int only_rank, syn_sink sink, syn_stuck stuck, void *arg);

#endif /* RP_SYNTH_H */
