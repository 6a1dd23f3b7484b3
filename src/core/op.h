/*
 * op.h - one in-flight operation (a Coll or P2p event) and its kernel
 * channels: what NCCL's handles point at.
 *
 * The handle we return for a Coll/P2p is a struct ins_op; the handle for a
 * KernelCh is the struct ins_chan of that channel inside its op, so a
 * kernel callback finds its op by address arithmetic, with no lookup. Both
 * start with a tag byte so stopEvent/recordEventState can tell them apart.
 *
 * Completion: `pending` counts what must still happen: the host stop of the
 * op plus one stop per expected kernel channel (nChannels from the
 * descriptor). Whichever thread brings it to zero publishes the record and
 * returns the op to its pool; until then NCCL may still name it as a parent.
 *
 * Overtaken ops: on real GPUs NCCL 2.28.9 now and then never delivers one
 * kernel event of an op (docs/VALIDATION.md). A communicator's ops run in
 * order on the GPU, so once an op issued INS_OVERTAKE_WINDOW ops later has
 * completed, an op still waiting is finished: it is recorded from the
 * channels it has (nchannels says how many), or counted as lost, and its
 * slot is freed. Without this, each lost event would pin an op until teardown.
 */
#ifndef INS_OP_H
#define INS_OP_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/record.h"

enum { INS_TAG_FREE = 0, INS_TAG_OP = 0xA1, INS_TAG_KERNEL = 0xA2 };

struct ins_comm;

struct ins_chan {
  uint8_t tag; /* INS_TAG_KERNEL */
  uint8_t id;  /* channel id == index in op->ch */
  uint16_t unused;
  uint32_t start_sn;
  uint64_t start_ptimer, stop_ptimer; /* GPU timer, ns; 0 = not given */
  uint64_t host_start_ns, host_stop_ns; /* read only for fallbacks / verbose */
  uint64_t host_record_ns;
  uint32_t record_sn, stop_sn;
};

struct ins_op {
  uint8_t tag;       /* INS_TAG_OP */
  uint8_t kind;      /* enum ins_kind */
  uint8_t func;      /* enum ins_func */
  uint8_t expected;  /* kernel channels expected; 0 = unknown (count them as they come) */
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
  _Atomic uint8_t token_returned; /* unknown channel count: first kernel stop seen */
  _Atomic uint8_t host_stopped;
  _Atomic uint64_t issue; /* per-communicator issue order, for reclaiming overtaken ops */
  struct ins_chan ch[INS_MAX_CHANNELS];
};

/* Event entry points, called by the ABI adapters. All are safe with NULLs. */
void *ins_op_start(struct ins_comm *comm, enum ins_kind kind, const char *func,
                   const char *datatype, uint64_t count, uint64_t seq, int peer,
                   uint8_t nchannels, const char *algo, const char *proto);
void *ins_kernel_start(struct ins_comm *comm, void *parent, uint8_t channel, uint64_t ptimer);
void ins_kernel_record_stop(void *handle, uint64_t ptimer);
void ins_event_stop(void *handle);

#define INS_OVERTAKE_WINDOW 64

/* Finalize: settle every op still in flight: host-timed ones become records
 * when CPU timing is kept; the rest are counted in *incomplete and freed. */
void ins_ops_settle_inflight(struct ins_comm *comm, uint64_t *incomplete);

#endif
