/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inflight.h - a communicator's ops in flight, read from another thread without stopping
 * them: what the dump thread's hang checks (sink/hang.h) know of an op that has not
 * completed. Reading only; the tracker (op.c) never calls it.
 *
 * Where they are: the tracker keeps each op it tracks in its communicator's slot
 * inflight[issue % INS_INFLIGHT_SLOTS] (core/comm.h) from its start until it completes,
 * numbered by `issue` in the order they were issued (comm->issue_seq). An op leaves its
 * slot earlier in two cases, and is then not in flight for these reads: it was overtaken
 * (core/op.h: an op issued INS_OVERTAKE_WINDOW later completed, so the GPU has run past
 * it, and it waits only for events NCCL lost), or more than INS_INFLIGHT_SLOTS ops were
 * issued after it while it stayed (a newer op took its slot).
 *
 * Safety: the reader owns nothing. The op may complete and be reused for another op while
 * it is read; its memory stays mapped (an op pool's chunks live as long as their context,
 * which a reader holds through a registry walk: core/pool.h, core/comm.h). So a read is a
 * copy, kept only if the op was in its slot as the same issue both before and after the
 * copy (seqlock-style: core/op_types.h, "Published fields"), and it reads only the op's
 * atomics and published fields.
 */
#ifndef INS_INFLIGHT_H
#define INS_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

struct ins_comm;

/* One op in flight, as read (a copy). */
struct ins_inflight_op {
  uint64_t issue;         /* its number in the communicator's issue order */
  uint8_t kind;           /* enum ins_kind */
  int32_t peer;           /* P2P: the peer rank; -1 for a collective */
  uint64_t sn, count, bytes;
  const char *func_name, *datatype; /* NCCL's constants; may be NULL */
  uint32_t op_idx, group; /* its place among the communicator's ops and groups (core/op_types.h) */
  /* Its kernel channels: started, and of those stopped (from its completion count, read
   * without stopping it: never more than were stopped, at most one fewer while a channel
   * starts or the host stop is being counted). */
  int channels_started, channels_stopped;
};

/* Ops the communicator has issued (tracked ones): the issue number of the next. */
uint64_t ins_inflight_issued(const struct ins_comm *c);
/* Whether the op issued as `issue` is in its slot, still in flight. */
bool ins_inflight_present(const struct ins_comm *c, uint64_t issue);
/* Copy the op issued as `issue` into *out, if it is in flight (and was so throughout the
 * copy); false if not. */
bool ins_inflight_read(const struct ins_comm *c, uint64_t issue, struct ins_inflight_op *out);

#endif
