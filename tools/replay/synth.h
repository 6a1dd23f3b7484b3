/*
 * synth.h - the synthetic traffic generator (--synthetic).
 *
 * Owns: a deterministic model of an NCCL job (ranks, communicators,
 * collectives and a point-to-point ring over a range of sizes, with a GPU
 * timing model and one optionally late rank) that yields
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

enum syn_func { SYN_ALLREDUCE, SYN_ALLGATHER, SYN_REDUCESCATTER, SYN_BROADCAST, SYN_REDUCE, SYN_SEND, SYN_RECV, SYN_NFUNC };

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
  const char *comm_name;
  uint64_t seed;
  uint64_t base_ns; /* CLOCK_REALTIME at the start: pTimers are near wall clock */
};

/* Defaults of docs/CONTRACTS.md section 1. */
void syn_defaults(struct syn_params *p);

/* Parses a --colls list ("AllReduce,Broadcast"); -1 and *bad = the bad name's start. */
int syn_parse_colls(const char *list, struct syn_params *p, const char **bad);

/* Writes the truth file: one JSON line per op per rank. 0 or -1 (I/O error). */
int syn_write_truth(const struct syn_params *p, FILE *f);

/*
 * Generates the callback stream of rank `only_rank` (-1: all ranks in one
 * process) and hands it to sink in chunks of whole ops (inits first,
 * finalizes last), so that a long run needs little memory and the plugin
 * sees callbacks from the start. Each chunk is reused after sink returns;
 * its contexts and threads stay the same throughout the stream.
 */
typedef void (*syn_sink)(void *arg, struct rp_trace *chunk);
void syn_stream(const struct syn_params *p, int only_rank, syn_sink sink, void *arg);

#endif /* RP_SYNTH_H */
