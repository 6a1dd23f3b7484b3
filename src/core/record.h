/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.h - one completed operation, as it travels from the tracker to the
 * dump thread through a communicator's ring. Plain data, fixed size; the
 * dump thread turns it into text.
 */
#ifndef INS_RECORD_H
#define INS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define INS_MAX_CHANNELS 64 /* channel ids 0..63; NCCL's MAXCHANNELS */
/* an op's channels are the bits of one uint64_t (core/op.h chan_mask), and a record's
 * nchannels is a uint8_t */
_Static_assert(INS_MAX_CHANNELS <= 64, "channel sets are 64-bit masks");

enum ins_kind { INS_KIND_COLL = 0, INS_KIND_P2P = 1 };

enum ins_timing {
  INS_TIMING_KERNEL_GPU = 0,    /* every channel gave start and stop pTimers */
  INS_TIMING_KERNEL_CPU = 1,    /* kernel events, but without usable pTimers */
  INS_TIMING_COLLECTIVE_CPU = 2,/* no kernel event: host start to stop */
  /* GPU-timed, but its timestamps may be a later op's (core/judge.h): no record; written,
   * marked so, only with NCCL_INSPECTOR_DUMP_UNVERIFIED=1, and only by the JSON sink */
  INS_TIMING_UNVERIFIED = 3,
  /* Not a record: an op below NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES that completed in a backlog,
   * its place and channels only (core/op.c publish_shadow), for the judge to count the
   * works it added (core/judge.h); no sink ever sees one */
  INS_TIMING_SHADOW = 4,
  /* Not a record: an unverified op's bracket between its right neighbours on the stream
   * (core/judge.h, "Bounds"): start_ns the end of the op before, exec_ns to the start of the
   * op after, bound_ops the ops in it; kept out of every exact-time figure */
  INS_TIMING_BOUND = 5
};

/* Per-channel callback trace, kept only with NCCL_INSPECTOR_DUMP_VERBOSE=1. */
struct ins_trace_ch {
  uint32_t channel, start_sn, record_sn, stop_sn;
  uint64_t start_us, record_us, stop_us;
};

/* The verbose trace of an op: follows its record in verbose rings only, so that
 * the records of the usual, non-verbose rings stay small (ring cells of 128 bytes). */
struct ins_record_trace {
  uint32_t op_start_sn, op_stop_sn;
  uint64_t op_start_us, op_stop_us;
  struct ins_trace_ch ch[INS_MAX_CHANNELS]; /* nchannels of them are set */
};

/* Why an op NCCL reported left no record (counted per communicator and kind). */
enum ins_untimed {
  INS_UNTIMED_UNVERIFIED = 0, /* its timestamps may be a later op's (core/judge.h) */
  INS_UNTIMED_HANDED_OVER,    /* every channel had an earlier op's timestamps (core/op.c) */
  INS_UNTIMED_NO_GPU_TIMER,   /* no usable GPU timestamps (and CPU timing not kept) */
  INS_UNTIMED_LOST_EVENTS,    /* NCCL never delivered its kernel events (op.h: overtaken) */
  INS_UNTIMED_INCOMPLETE,     /* still waiting for events at its communicator's teardown */
  INS_UNTIMED_REASONS
};
/* Their names in every output: "unverified", "handed_over", "no_gpu_timer", "lost_events",
 * "incomplete". */
extern const char *const ins_untimed_name[INS_UNTIMED_REASONS];

struct ins_record {
  uint8_t kind;      /* enum ins_kind */
  uint8_t timing;    /* enum ins_timing */
  uint8_t func;      /* enum ins_func */
  uint8_t nchannels; /* kernel channels that reported */
  uint8_t stale_channels; /* of those, left out of the time: another op's timestamps (op.c) */
  /* What core/judge.h needs to tell whether NCCL could have handed the op's channels a
   * later op's timestamps (op.c fills them as the op completes; all saturate): */
  uint8_t group_before;  /* ops of its application group issued before it */
  uint16_t issued_after; /* it and the ops issued after it, when it completed */
  int32_t peer;      /* P2P peer rank; -1 for collectives */
  uint32_t op_idx;   /* its place among the communicator's Coll and P2p events (mod 2^32) */
  uint64_t sn;       /* coll: NCCL seqNumber; p2p: our per-comm counter */
  uint64_t count;
  uint64_t bytes;    /* count x datatype size */
  /* Timed on the GPU (timing KERNEL_GPU): in the GPU timer's unit as NCCL/RCCL gave it
   * (ns; under RCCL possibly ticks, converted by the dump thread: core/timer.h). Timed on
   * the host: host ns. */
  uint64_t start_ns; /* earliest kernel start */
  uint64_t exec_ns;
  union {
    /* CLOCK_MONOTONIC ns when the op completed, while the GPU timer's unit is being
     * measured (core/timer.h); else 0. */
    uint64_t host_done_ns;
    /* timing BOUND: the ops that ran in its bracket, itself included (core/judge.h) */
    uint64_t bound_ops;
  };
  uint64_t chan_mask; /* the channels that reported (bit c: channel c); all for an overtaken op */
  uint32_t group;     /* its application group's number (ops of one group share it) */
  /* API calls that can make work (core/comm.h, api_seq; ABI v4: ops) from its group's
   * start to its completion */
  uint16_t lag;
  /* INS_API_AT_VALID | the communicator's API calls that can make work when the op
   * started, mod 2^15: its group's collective calls, and its P2P calls up to its own;
   * 0 without API events (ABI v4) */
  uint16_t api_at;
  const char *func_name, *datatype, *algo, *proto; /* NCCL's constants; may be NULL */
  struct ins_record_trace trace[]; /* verbose rings: one; else none */
};

#define INS_API_AT_VALID 0x8000u
#define INS_API_AT_MASK 0x7fffu

_Static_assert(sizeof(struct ins_record) == 112, "ring cells of 128 bytes (ring.c: 16-byte header)");

/* Bytes of a record as it sits in a ring or a stash: with its verbose trace up to its last channel. */
static inline size_t ins_record_size(const struct ins_record *r, int verbose) {
  return sizeof *r + (verbose ? offsetof(struct ins_record_trace, ch) +
                                    (size_t)r->nchannels * sizeof(struct ins_trace_ch)
                              : 0);
}
/* The most a record of a ring takes. */
#define INS_RECORD_MAX(verbose) \
  (sizeof(struct ins_record) + ((verbose) ? sizeof(struct ins_record_trace) : 0))

#endif
