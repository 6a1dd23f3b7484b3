/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth_walk.h - what the synthetic traffic's two outputs share (synth.c's truth file and
 * synth_stream.c's callback stream): the walk over every op, each op's timing, who talks to
 * whom, and what becomes of each task of a stuck op. synth.c owns them; nothing else of the
 * replay sees this (synth.h).
 */
#ifndef RP_SYNTH_WALK_H
#define RP_SYNTH_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "synth.h"

#define SYN_P2P_CHANNEL 16     /* the channel a P2P task runs on */
#define SYN_DTYPE "ncclFloat32" /* every op's datatype */

extern const char *const syn_func_names[SYN_NFUNC];

/* ---- the op walk shared by the truth writer and the stream builder ------ */

struct syn_op {
  uint64_t index; /* running op number: the key of its random choices */
  int comm;
  enum syn_func func; /* a collective, or SYN_SEND for one ring exchange (a Send and a Recv per rank) */
  uint64_t count, bytes;
  uint64_t sn; /* coll: its seqNumber; ring exchange: the p2p sn of the Send (the Recv's is sn + 1) */
  double slower; /* --degrade: the bytes/bw part x this (1 before the change) */
  uint64_t t0;
  uint64_t t_stop; /* coll: when every channel stops; P2P: the latest end of any task */
  int iter;        /* its iteration (--iters), for --late-fraction */
  bool late;       /* the late rank is late in it (--late-in, --late-fraction, --late-from) */
};

typedef void (*syn_visit)(void *arg, const struct syn_params *p, const struct syn_op *op);

/* What becomes of rank r's task k of op: k 0 is a collective, or an exchange's Send; 1 its Recv. */
enum task_fate {
  TASK_RUNS,   /* issued; its channels start and stop */
  TASK_WAITS,  /* issued; its channels start and never stop: it waits inside NCCL */
  TASK_QUEUED, /* issued; no channel of it ever starts */
  TASK_NONE    /* never issued: the missing rank's */
};


/* Every op in order, each handed to fn with its timing set. */
void syn_walk(const struct syn_params *p, syn_visit fn, void *arg);
int syn_ncomms(const struct syn_params *p); /* --comms, and --p2p-comm's own */
uint64_t syn_comm_id(const struct syn_params *p, int comm);
/* Whom rank r sends to and receives from in a P2P op. */
int syn_send_peer(const struct syn_params *p, const struct syn_op *op, int r);
int syn_recv_peer(const struct syn_params *p, const struct syn_op *op, int r);
/* End (unshifted) of rank r's task k of a P2P op: 0 its Send, 1 its Recv. */
uint64_t syn_p2p_end(const struct syn_params *p, const struct syn_op *op, int r, int k);
/* Start pTimer of the ci-th channel of `rank` in op. */
uint64_t syn_chan_start(const struct syn_params *p, const struct syn_op *op, int rank, int ci);
enum task_fate syn_task_fate(const struct syn_params *p, const struct syn_op *op, int r, int k);
/* Whether rank r issues op at all (the missing rank issues nothing from the stuck op on). */
bool syn_issues(const struct syn_params *p, const struct syn_op *op, int r);

#endif
