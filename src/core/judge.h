/* SPDX-License-Identifier: Apache-2.0 */
/*
 * judge.h - the dump thread's half of "whose timestamps?" (core/op.c): for each
 * GPU-timed record, can its channels hold the timestamps of a later op?
 *
 * NCCL's kernel keeps INS_NCCL_PROFILER_SLOTS (64) timestamp slots per channel, and its
 * proxy thread hands an op whatever its slot holds once the slot's work counter has
 * reached the op's: the timestamps of the 64th work after the op on that channel (or
 * the 128th...), if that work has started. It cannot have started before the application
 * issued it. So an op whose every channel saw fewer than 64 works issued after its own
 * (counted from the start of its application group to its completion) has its own
 * timestamps, or an earlier op's, which core/op.c leaves out as the op completes.
 *
 *  - op.c's fast test counts the API calls that can make work (ABI v4: every op) of the
 *    communicator: a collective's call, a P2P call through its P2p event (comm.h,
 *    api_seq: NCCL drops an in-place send to self with no event and no work). When at
 *    most 64 were made, and 64 ops issued, the record is right, and goes on at once. It
 *    is the common case: the host is rarely 64 ops ahead of the GPU.
 *  - Otherwise the judge counts, for each of the record's channels, the ops issued in
 *    that span that used the channel (their records' chan_mask, or the shadows of the
 *    ops below the minimum size that completed in the backlog: op.c publish_shadow),
 *    plus every op it has neither of (filtered, dropped, or never reported by NCCL: a
 *    Broadcast on the AllGatherV path) as if it used every channel, plus the collective
 *    calls that made no op. A Send and a Recv of one group with one peer share a work
 *    (NCCL counts the pair once), so they count once. At most 64 works on a channel:
 *    its own.
 *  - Group 0: the host never began a group (no Group event, no API event: op.c
 *    group_unknown), so which ops shared a kernel launch is not known: an op's group
 *    runs from the op after the latest that had completed when it started, no Send and
 *    Recv are taken for one work, and a voucher's group runs to its completion.
 *  - Or a later op vouches for the channel: an op Z of a later group, itself right on
 *    every channel, that used the channel and started after the record's whole interval,
 *    with at most 64 works on the channel from the record's group to the end of Z's: a
 *    work 64 after the record's would come after Z's there, so start after Z did, after
 *    the record ended; it cannot be what the record holds. (A shadow never vouches: its
 *    op's timestamps are not judged.) Deep in a backlog (the proxy
 *    thread hundreds of works behind) this is what proves ops right: each by the next
 *    one NCCL gave right, back from those the proxy read in time (judge.c).
 *  A record with a channel shown neither way is left out and counted as `unverified`.
 *
 * Holding back: a record that op.c could not clear waits until the records it counts or
 * could be vouched for by have come (an op missing when one INS_JUDGE_SETTLE past it has
 * come never will: it counts on every channel), or until the communicator's last drain;
 * at most INS_JUDGE_HOLD_MAX records are held (then the oldest is decided with what is
 * known). The ops remembered are the latest INS_JUDGE_WINDOW, more while held records
 * need theirs: a host that never waits for the GPU (a training loop that never reads a
 * loss) keeps every op in a backlog, each proven only by the next, back from the first op
 * the proxy read in time, perhaps thousands of ops later; the window doubles (up to
 * INS_JUDGE_WINDOW_MAX) rather than forget the spans of records still held. A span
 * longer than that is unverified at once.
 * Records leave in the order they came, so a record behind a held one waits with it.
 * Memory: the window (48 bytes an op) is allocated at the first record (or shadow) that
 * needs it; held records take their ring cell's size and a byte. Shadows are remembered
 * in the window only: never held, emitted or counted.
 *
 * Bounds (ins_judge_set_bounds): an unverified op X still ran where the stream put it. A
 * communicator's kernels run one after another in issue order, and the ops of one
 * application group share a launch; so X ran after the end of P, the last op issued before
 * X's group that is right (GPU-timed, every channel its own: its interval is true), and
 * before the start of N, the first such op issued after X's group. Once both are decided
 * (and every op between has come, or never will), X goes out once more, as a bound: timing
 * INS_TIMING_BOUND, start P's end, exec N's start minus that, and in bound_ops the ops
 * that share the bracket (itself included): the ops issued between P and N, and the
 * collective calls there that made no op (a Broadcast NCCL does not report: through the
 * API calls, where API events come; an over-count at the brackets' ends, never an
 * under-count of the calls between). No bound where no group was begun (group 0: which ops
 * shared X's launch is not known), where no right P is remembered, or where no right N
 * comes before the last drain (X stays only unverified); a bound is never a record:
 * counted in `bounded`, its op still in `unverified`.
 *
 * Owned by whoever holds the communicator's drain lock (sink/dump.c). No thread, no
 * lock, no I/O; deterministic: tests drive it directly (tests/unit/core/test_judge.c,
 * test_judge_bounds.c).
 */
#ifndef INS_JUDGE_H
#define INS_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

#define INS_JUDGE_WINDOW 4096   /* ops remembered at first: a power of two */
#define INS_JUDGE_WINDOW_MAX 32768 /* ... and at most, while held records need theirs */
#define INS_JUDGE_SETTLE 64     /* ops past a span before its missing ops count as never recorded */
#define INS_JUDGE_HOLD_MAX 16384 /* records held back at most: a power of two */

/* What the judge remembers of an op: enough to count its works per channel, to vouch for
 * the ops before it, and to bound the unverified around it. Plain data, judge.c's. */
struct ins_judge_op {
  uint64_t mask;  /* channels it used */
  uint64_t start, end; /* its GPU interval (when `state` is RIGHT) */
  uint32_t idx;   /* its op_idx (the slot is idx % window: tells a stale slot) */
  uint32_t group;
  int32_t peer;
  uint16_t issued_after; /* the record's: its group's ops were all issued by then */
  uint16_t api_at;       /* the record's (record.h) */
  uint8_t kind;
  uint8_t seen;   /* a record of it arrived */
  uint8_t state;  /* judge.c enum op_state */
};

struct ins_judge {
  struct ins_judge_op *recent; /* by op_idx % window; NULL until needed */
  uint32_t window;             /* ops remembered: INS_JUDGE_WINDOW, doubled while needed */
  uint32_t newest;             /* the latest op_idx seen (valid when `seen_any`) */
  bool seen_any;
  unsigned char *held;         /* FIFO of records waiting, `slot` bytes each */
  unsigned char *held_state;   /* beside each: its verdict, once reached (judge.c) */
  size_t slot, held_head, held_n, held_cap;
  bool verbose;                /* records carry their verbose trace (record.h) */
  bool emit_unverified;        /* hand the unverified on too, marked (judge.h) */
  bool bounds;                 /* bound the unverified too (ins_judge_set_bounds) */
  /* before the window is allocated, the latest right op decided ([1]) and the latest of an
   * earlier group ([0]): its first entries, so that the first unverified op has its P */
  struct ins_judge_op last_right[2];
  unsigned char *pend;         /* FIFO of unverified records awaiting their bound, `slot` bytes */
  size_t pend_head, pend_n, pend_cap;
  int32_t rank, nranks;        /* the communicator's (ins_judge_set_comm); nranks 0: unknown */
  uint64_t unverified[2];      /* records left out, by enum ins_kind */
  uint64_t cleared_late[2];    /* records cleared by the per-channel count */
  uint64_t bounded[2];         /* of the unverified, those given a bound */
};

/* Where decided records go, in arrival order: the right ones, and (with `unverified` set
 * in ins_judge_init) the unverified ones too, their timing INS_TIMING_UNVERIFIED; with
 * bounds on, the bounds as they are found, timing INS_TIMING_BOUND. */
typedef void (*ins_judge_emit_fn)(void *arg, struct ins_record *r);

/* For records of verbose rings or not; emit_unverified: see ins_judge_emit_fn. */
void ins_judge_init(struct ins_judge *j, bool verbose, bool emit_unverified);
void ins_judge_free(struct ins_judge *j);

/* The communicator's rank and size: which Send and Recv of a group NCCL runs as one work
 * (judge.c, works_of). Not set: none are taken to share one, the safe side. */
void ins_judge_set_comm(struct ins_judge *j, int rank, int nranks);

/* Hand on a bound for each unverified op that has right neighbours (judge.h, "Bounds"):
 * a copy of its record, timing INS_TIMING_BOUND, after the decided records of a settle. */
void ins_judge_set_bounds(struct ins_judge *j, bool on);

/* A record out of a ring: emitted now if it needs no other record and none is held,
 * else held back (copied) until the next settle. */
void ins_judge_take(struct ins_judge *j, struct ins_record *r, ins_judge_emit_fn emit, void *arg);

/* After a drain of both rings: emit what can be decided; `final` (the communicator's last drain):
 * decide everything with what is known. */
void ins_judge_settle(struct ins_judge *j, bool final, ins_judge_emit_fn emit, void *arg);

/* The fast test alone (op.c's): true when the record needs no other record. */
bool ins_judge_clear_alone(const struct ins_record *r);

#endif
