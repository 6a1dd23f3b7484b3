/* SPDX-License-Identifier: Apache-2.0 */
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/record.h"

/*
 * Handles. The first 4 bytes of an op and of a channel are its tag: what the handle is,
 * or INS_TAG_FREE (0) for an op back in its pool, a stopped channel, and every op and
 * channel of a finalized communicator (core/pool.h; pages handed back read as zeros). A
 * tag is a kind byte under 24 bits of a fixed pattern: comparing 4 bytes costs what
 * comparing one did (one instruction), and memory the plugin never gave passes for one of
 * the two handles 1 time in 2^31, where one byte let 1 in 128 through. Ops and channels
 * are 64-byte aligned, so a handle that is not is refused by its address
 * (ins_handle_odd) before a byte of it is read as a struct. Neither proves a pointer is
 * ours: one into unmapped memory, or memory made to look like a handle, is the caller's
 * contract (docs/reference.md).
 */
#define INS_TAG_PATTERN 0x51a7e500u
enum {
  INS_TAG_FREE = 0,
  INS_TAG_OP = INS_TAG_PATTERN | 0xA1,
  INS_TAG_KERNEL = INS_TAG_PATTERN | 0xA2,
};
#define INS_HANDLE_ALIGN 64

/* Whether h cannot be one of the tracker's handles, by its address alone. */
static inline bool ins_handle_odd(const void *h) {
  return ((uintptr_t)h & (INS_HANDLE_ALIGN - 1)) != 0;
}

/* The tag at p, read whatever p's alignment (a parent NCCL names, before it is known to
 * be an op): one 4-byte load. */
static inline uint32_t ins_tag_at(const void *p) {
  uint32_t t;
  memcpy(&t, p, sizeof t);
  return t;
}

struct ins_comm;

struct ins_chan {
  _Alignas(INS_HANDLE_ALIGN) uint32_t tag; /* INS_TAG_KERNEL */
  uint8_t id;               /* channel id == index in op->ch */
  uint8_t verbose;          /* the comm's verbose trace: host times and sequence numbers too */
  uint16_t unused;
  uint64_t start_ptimer, stop_ptimer; /* GPU timer, ns; 0 = not given */
  uint64_t host_start_ns, host_stop_ns; /* read only for fallbacks / verbose */
  uint64_t host_record_ns;
  uint32_t start_sn, record_sn, stop_sn;
};
_Static_assert(sizeof(struct ins_chan) == 64, "a channel is one cache line");
/* ins_op_event_stop tells a channel from an op by the first 4 bytes of the handle */
_Static_assert(offsetof(struct ins_chan, tag) == 0, "a channel's tag is its first 4 bytes");
_Static_assert(sizeof(((struct ins_chan *)0)->tag) == 4, "a tag is 4 bytes (ins_tag_at)");
/* ins_op_kernel_start masks the channel id into range before its range check */
_Static_assert((INS_MAX_CHANNELS & (INS_MAX_CHANNELS - 1)) == 0, "a power of two");

/*
 * Published fields. The dump thread reads an op it does not own, through its communicator's
 * in-flight slots (core/inflight.h, hang detection), while the op may complete and be
 * reused. It reads only the atomics and the fields marked "published" below, with relaxed
 * atomic loads, and keeps what it read only if the op was still that op after (its slot and
 * `issue` read again, seqlock-style). op_start (op.c) writes the published fields with
 * relaxed atomic stores (the same instruction as a plain store) after a release fence (no
 * instruction on x86), so that a reader that saw a new value also sees the op gone from
 * its slot. Everyone else reads them plainly: they are written once per use, before the op
 * is handed out.
 */
/* In an op's `verbose`: the op is below NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES, tracked only so
 * that hang detection sees it in flight (core/op.c, track): it writes no record and counts in
 * no counter. Beside the verbose bit, so that the kernel start's fast path, which sends a
 * verbose op's starts to the slow path, sends a quiet op's there with no added test (op.c:
 * its starts raise the GPU floor as an untracked op's do). */
#define INS_OP_QUIET 2
/* In an op's `verbose` too: no application group had begun on its communicator when it
 * started (a host that sends no Group events: core/op.c group_unknown), so its completion
 * is noted for the ops issued after it. Beside the other two, so that the completion's one
 * test of the rare cases covers it at no cost to the common one; its kernel starts take the
 * slow path, which times them as the fast one would (such a host is rare). */
#define INS_OP_NOGROUP 4

struct ins_op {
  uint32_t tag;      /* INS_TAG_OP */
  uint8_t kind;      /* enum ins_kind (published) */
  uint8_t func;      /* enum ins_func */
  uint8_t expected;  /* kernel channels expected; 0 = unknown (count them as they come) (published) */
  uint8_t verbose;   /* the comm's verbose trace (its bit 0), and INS_OP_QUIET */
  uint8_t host_clock; /* read the host clock at op start/stop (verbose or CPU timing kept) */
  int32_t peer;      /* (published) */
  _Atomic int pending;
  _Atomic uint32_t pool_next; /* free-list link (index + 1), see pool.c */
  uint32_t pool_idx;
  struct ins_comm *comm;
  uint64_t sn, count, bytes;                       /* (published) */
  const char *func_name, *datatype, *algo, *proto; /* func_name, datatype: (published) */
  uint64_t host_start_ns, host_stop_ns;
  uint32_t start_sn, stop_sn;
  _Atomic uint64_t chan_mask; /* bit c set: channel c started */
  _Atomic uint8_t token_returned; /* untrusted channel count: a later op completed */
  _Atomic uint8_t host_stopped;
  _Atomic uint8_t zombie; /* recorded as overtaken, still waiting for its late events */
  _Atomic uint64_t issue; /* per-communicator issue order, for reclaiming overtaken ops */
  /* Where the op stands in its communicator's issue order (core/judge.h): */
  uint32_t op_idx;        /* comm->ops_seq when it started (published) */
  uint32_t group;         /* comm->group_seq then (published) */
  uint64_t group_first;   /* comm->ops_seq when its group began */
  uint64_t api_base;      /* comm->api_seq when its group's API calls began */
  uint16_t api_at;        /* record.h's api_at */
  uint64_t floor;         /* comm->gpu_floor when it started: no channel of it can start sooner */
  struct ins_chan ch[INS_MAX_CHANNELS];
};
_Static_assert(offsetof(struct ins_op, tag) == 0, "an op's tag is its first 4 bytes");
_Static_assert(sizeof(((struct ins_op *)0)->tag) == 4, "a tag is 4 bytes (ins_tag_at)");
/* handles are aligned (ins_handle_odd), and the op's header is three cache lines */
_Static_assert(_Alignof(struct ins_op) == INS_HANDLE_ALIGN &&
                   _Alignof(struct ins_chan) == INS_HANDLE_ALIGN,
               "ops and channels are 64-byte aligned");
_Static_assert(offsetof(struct ins_op, ch) == 192, "an op is 192 bytes and its channels");
_Static_assert(sizeof(((struct ins_op *)0)->chan_mask) * 8 >= INS_MAX_CHANNELS, "a bit per channel");

#endif
