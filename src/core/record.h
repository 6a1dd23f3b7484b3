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
  INS_TIMING_COLLECTIVE_CPU = 2 /* no kernel event: host start to stop */
};

/* Per-channel callback trace, kept only with NCCL_INSPECTOR_DUMP_VERBOSE=1. */
struct ins_trace_ch {
  uint32_t channel, start_sn, record_sn, stop_sn;
  uint64_t start_us, record_us, stop_us;
};

/* The verbose trace of an op: follows its record in verbose rings only, so that
 * the records of the usual, non-verbose rings stay small (ring cells of 112 bytes). */
struct ins_record_trace {
  uint32_t op_start_sn, op_stop_sn;
  uint64_t op_start_us, op_stop_us;
  struct ins_trace_ch ch[INS_MAX_CHANNELS]; /* nchannels of them are set */
};

struct ins_record {
  uint8_t kind;      /* enum ins_kind */
  uint8_t timing;    /* enum ins_timing */
  uint8_t func;      /* enum ins_func */
  uint8_t nchannels; /* kernel channels that reported */
  uint8_t stale_channels; /* of those, left out of the time: stale timestamps (op.c) */
  int32_t peer;      /* P2P peer rank; -1 for collectives */
  uint64_t sn;       /* coll: NCCL seqNumber; p2p: our per-comm counter */
  uint64_t count;
  uint64_t bytes;    /* count x datatype size */
  /* Timed on the GPU (timing KERNEL_GPU): in the GPU timer's unit as NCCL/RCCL gave it
   * (ns; under RCCL possibly ticks, converted by the dump thread: core/timer.h). Timed on
   * the host: host ns. */
  uint64_t start_ns; /* earliest kernel start */
  uint64_t exec_ns;
  /* CLOCK_MONOTONIC ns when the op completed, while the GPU timer's unit is being
   * measured (core/timer.h); else 0. */
  uint64_t host_done_ns;
  const char *func_name, *datatype, *algo, *proto; /* NCCL's constants; may be NULL */
  struct ins_record_trace trace[]; /* verbose rings: one; else none */
};

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
