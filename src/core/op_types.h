/*
 * op_types.h - the memory NCCL's Coll/P2p and KernelCh handles point at: struct
 * ins_op (one in-flight operation) and the struct ins_chan of each of its kernel
 * channels, with the tag byte that tells them apart. Layout only, no behaviour:
 * what the fields mean, the completion count (`pending`), untrusted channel
 * counts and overtaken ops are the tracker's rules, written in core/op.h.
 *
 * Apart from op.h so that includes point one way: the per-communicator pool
 * (core/pool.h) holds ops and needs their size, tag and free-list fields, and
 * the tracker (op.h, op.c) takes ops from that pool through the communicator
 * (core/comm.h). Both read this file; the pool never sees the tracker.
 */
#ifndef INS_OP_TYPES_H
#define INS_OP_TYPES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

enum { INS_TAG_FREE = 0, INS_TAG_OP = 0xA1, INS_TAG_KERNEL = 0xA2 };

struct ins_comm;

struct ins_chan {
  _Alignas(64) uint8_t tag; /* INS_TAG_KERNEL */
  uint8_t id;               /* channel id == index in op->ch */
  uint8_t verbose;          /* the comm's verbose trace: host times and sequence numbers too */
  uint8_t unused;
  uint32_t start_sn;
  uint64_t start_ptimer, stop_ptimer; /* GPU timer, ns; 0 = not given */
  uint64_t host_start_ns, host_stop_ns; /* read only for fallbacks / verbose */
  uint64_t host_record_ns;
  uint32_t record_sn, stop_sn;
};
_Static_assert(sizeof(struct ins_chan) == 64, "a channel is one cache line");
/* ins_op_event_stop tells a channel from an op by the first byte of the handle */
_Static_assert(offsetof(struct ins_chan, tag) == 0, "a channel's tag is its first byte");
/* ins_op_kernel_start masks the channel id into range before its range check */
_Static_assert((INS_MAX_CHANNELS & (INS_MAX_CHANNELS - 1)) == 0, "a power of two");

struct ins_op {
  uint8_t tag;       /* INS_TAG_OP */
  uint8_t kind;      /* enum ins_kind */
  uint8_t func;      /* enum ins_func */
  uint8_t expected;  /* kernel channels expected; 0 = unknown (count them as they come) */
  uint8_t verbose;   /* the comm's verbose trace */
  uint8_t host_clock; /* read the host clock at op start/stop (verbose or CPU timing kept) */
  int32_t peer;
  _Atomic int pending;
  _Atomic uint32_t pool_next; /* free-list link (index + 1), see pool.c */
  uint32_t pool_idx;
  struct ins_comm *comm;
  uint64_t sn, count, bytes;
  const char *func_name, *datatype, *algo, *proto;
  uint64_t host_start_ns, host_stop_ns;
  uint32_t start_sn, stop_sn;
  _Atomic uint64_t chan_mask; /* bit c set: channel c started */
  _Atomic uint8_t token_returned; /* untrusted channel count: a later op completed */
  _Atomic uint8_t host_stopped;
  _Atomic uint8_t zombie; /* recorded as overtaken, still waiting for its late events */
  _Atomic uint64_t issue; /* per-communicator issue order, for reclaiming overtaken ops */
  /* Where the op stands in its communicator's issue order (core/judge.h): */
  uint32_t op_idx;        /* comm->ops_seq when it started */
  uint32_t group;         /* comm->group_seq then */
  uint64_t group_first;   /* comm->ops_seq when its group began */
  uint64_t api_base;      /* comm->api_seq when its group's API calls began */
  uint16_t api_at;        /* record.h's api_at */
  uint64_t floor;         /* comm->gpu_floor when it started: no channel of it can start sooner */
  struct ins_chan ch[INS_MAX_CHANNELS];
};
_Static_assert(offsetof(struct ins_op, tag) == 0, "an op's tag is its first byte");
_Static_assert(sizeof(((struct ins_op *)0)->chan_mask) * 8 >= INS_MAX_CHANNELS, "a bit per channel");

#endif
