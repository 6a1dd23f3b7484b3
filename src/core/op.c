/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op.c - the tracker: event callbacks in, completed records out.
 *
 * This is the hot path (its per-channel common case is inline in op.h).
 * Rules kept here: no lock, no malloc (ops come from the communicator's
 * preallocated pool), no I/O, no clock read unless the GPU timer is missing
 * or a verbose trace was asked for, atomics only where the application
 * thread and the proxy thread meet (pending, chan_mask), no formatting (the
 * dump thread does that).
 */
#include "core/op.h"
#include "core/op_fields.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/names.h"
#include "core/sampler.h"
#include "core/clock_step.h"
#include "core/wake.h"

static inline uint32_t next_sn(struct ins_comm *c) {
  return atomic_fetch_add_explicit(&c->event_sn, 1, memory_order_relaxed) + 1;
}

/* A published field of an op (op_types.h): a relaxed atomic store, the same instruction as a
 * plain one. */
#define PUB(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* No application group has begun on the communicator: its host sends no Group events and
 * no API events (a test driver, another framework's host). An op then shares its kernel
 * launch at most with the ops issued since the latest one that completed: NCCL starts the
 * events of a launch's ops before the launch, and an op completes only after its launch,
 * so no op issued at or before one that completed can be in a later op's launch. Its
 * group (for core/judge.h) begins there; its group number stays 0, which the judge reads
 * as "its launch is not known" (comm.h, done_idx). Out of line: never the common case. */
static __attribute__((noinline, cold)) uint8_t group_unknown(struct ins_comm *c) {
  uint32_t done = LOAD(c->done_idx);
  if ((int32_t)(done - (uint32_t)LOAD(c->group_first_op)) > 0) STORE(c->group_first_op, done);
  return INS_OP_NOGROUP; /* its completion is noted (note_done) */
}

/* An op tracked from its start, in its in-flight slot (op_start's second half). quiet: it is
 * below NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES, watched for hang detection only (op_types.h,
 * INS_OP_QUIET). Both flags are constants: each combination is its own inlined copy, so
 * that they cost the common path nothing. */
static inline __attribute__((always_inline)) void *
track(struct ins_comm *c, enum ins_kind kind, enum ins_func fid, const char *func,
      const char *datatype, uint64_t count, uint64_t bytes, uint64_t seq, int peer,
      uint64_t op_idx, uint8_t nchannels, const char *algo, const char *proto, bool no_kernel,
      bool quiet) {
  struct ins_op *op = ins_pool_get(&c->pool);
  if (!op) {
    /* a quiet op would have written nothing: no record lost */
    if (!quiet) atomic_fetch_add_explicit(&c->dropped[kind], 1, memory_order_relaxed);
    return NULL;
  }
  /* The op's published fields (op_types.h): the dump thread may be reading this struct as
   * the op it was before its completion (core/inflight.c). No instruction on x86. */
  atomic_thread_fence(memory_order_release);
  PUB(op->kind, (uint8_t)kind);
  op->func = (uint8_t)fid;
  PUB(op->op_idx, (uint32_t)op_idx);
  uint32_t group = LOAD(c->group_seq);
  uint8_t flags = quiet ? (uint8_t)(c->verbose | INS_OP_QUIET) : c->verbose;
  if (__builtin_expect(!group, 0)) flags |= group_unknown(c);
  PUB(op->group, group);
  op->group_first = LOAD(c->group_first_op);
  op->api_base = LOAD(c->group_api_base);
  op->api_at = LOAD(c->api_seen) ? (uint16_t)(INS_API_AT_VALID | (LOAD(c->api_seq) & INS_API_AT_MASK)) : 0;
  op->floor = atomic_load_explicit(&c->gpu_floor, memory_order_relaxed);
  /* nChannels is only a promise if it is a plausible channel count (RCCL
   * has been seen sending garbage): otherwise count channels as they come. */
  PUB(op->expected, nchannels <= INS_MAX_CHANNELS ? nchannels : 0);
  op->verbose = flags;
  op->host_clock = c->keep_cpu_timing || c->verbose;
  PUB(op->peer, kind == INS_KIND_P2P ? peer : -1);
  op->comm = c;
  PUB(op->sn, seq);
  PUB(op->count, count);
  PUB(op->bytes, bytes);
  PUB(op->func_name, func);
  PUB(op->datatype, datatype);
  op->algo = kind == INS_KIND_COLL ? algo : NULL;
  op->proto = kind == INS_KIND_COLL ? proto : NULL;
  atomic_store_explicit(&op->chan_mask, 0, memory_order_relaxed);
  /* no kernel: no token either (release_untrusted must not settle it), before it is
   * published in its in-flight slot */
  atomic_store_explicit(&op->token_returned, no_kernel, memory_order_relaxed);
  atomic_store_explicit(&op->host_stopped, 0, memory_order_relaxed);
  atomic_store_explicit(&op->zombie, 0, memory_order_relaxed);
  uint64_t issue = atomic_fetch_add_explicit(&c->issue_seq, 1, memory_order_relaxed);
  atomic_store_explicit(&op->issue, issue, memory_order_relaxed);
  /* host stop + expected kernel stops; untrusted count: host stop + a token (op.h); no
   * kernel: the host stop alone */
  atomic_store_explicit(&op->pending, no_kernel ? 1 : 1 + (op->expected ? op->expected : 1),
                        memory_order_relaxed);
  op->host_start_ns = op->host_clock ? ins_wall_ns() : 0;
  op->host_stop_ns = 0;
  op->start_sn = c->verbose ? next_sn(c) : 0;
  op->stop_sn = 0;
  op->tag = INS_TAG_OP;
  atomic_store_explicit(&c->inflight[issue & (INS_INFLIGHT_SLOTS - 1)], op, memory_order_release);
  return op;
}

/* ins_op_start, and with no_kernel ins_op_start_copy_engine: inlined into each, so that
 * the flag costs the common path nothing. */
static inline __attribute__((always_inline)) void *
op_start(struct ins_comm *c, enum ins_kind kind, const char *func, const char *datatype,
         uint64_t count, uint64_t seq, int peer, uint8_t nchannels, const char *algo,
         const char *proto, bool no_kernel) {
  if (!c) return NULL;
  /* Every Coll and P2p takes its place in the issue order, kept or not: filtered ops
   * run on the GPU too, and judge.h counts them. */
  uint64_t op_idx = LOAD(c->ops_seq);
  STORE(c->ops_seq, op_idx + 1);
  STORE(c->in_api_calls, false);
  enum ins_func fid = ins_func_id(func);
  if (kind == INS_KIND_COLL) {
    c->group_reports[fid]++;
    c->group_funcs |= 1u << fid;
  }
  if (kind == INS_KIND_P2P) {
    STORE(c->api_seq, LOAD(c->api_seq) + 1); /* its API call's work (comm.h, api_seq) */
    /* p2p_sn counts every P2p of the context, so filtered ones leave gaps. */
    seq = atomic_fetch_add_explicit(&c->p2p_seq, 1, memory_order_relaxed);
    if (!c->track_p2p || peer == c->rank) return NULL; /* a self-send has no kernel events */
  }
  uint64_t bytes = count * ins_datatype_size(datatype);
  if (__builtin_expect(bytes < c->min_bytes, 0)) {
    /* no record: watched for hang detection (quiet), or, with it off, not tracked at all */
    if (bytes < c->untracked_below) return NULL;
    return track(c, kind, fid, func, datatype, count, bytes, seq, peer, op_idx, nchannels, algo,
                 proto, no_kernel, true);
  }
  return track(c, kind, fid, func, datatype, count, bytes, seq, peer, op_idx, nchannels, algo, proto,
               no_kernel, false);
}

void *ins_op_start(struct ins_comm *c, enum ins_kind kind, const char *func,
                   const char *datatype, uint64_t count, uint64_t seq, int peer,
                   uint8_t nchannels, const char *algo, const char *proto) {
  return op_start(c, kind, func, datatype, count, seq, peer, nchannels, algo, proto, false);
}

void *ins_op_start_copy_engine(struct ins_comm *c, const char *func, const char *datatype,
                               uint64_t count, uint64_t seq) {
  /* coll_algo "CE" says how it ran (NCCL gives no algorithm or protocol for it) */
  return op_start(c, INS_KIND_COLL, func, datatype, count, seq, -1, 0, "CE", NULL, true);
}

/* inflight[] is indexed by issue & (slots - 1), and an op overtaken INS_OVERTAKE_WINDOW
 * issues later must still be in its slot */
_Static_assert((INS_INFLIGHT_SLOTS & (INS_INFLIGHT_SLOTS - 1)) == 0, "a power of two");
_Static_assert(INS_INFLIGHT_SLOTS > INS_OVERTAKE_WINDOW, "room for the overtake window");

static void reclaim_overtaken(struct ins_comm *c, uint64_t issue);
static void release_untrusted(struct ins_comm *c, uint64_t issue);

/*
 * Whose timestamps? NCCL's kernel writes each channel's start and stop pTimers into
 * INS_NCCL_PROFILER_SLOTS slots (work counter mod 64) and its proxy thread hands an op
 * the slot's content once the slot's counter has reached the op's: when the proxy is 64
 * or more works behind the GPU, the slot already holds a later op's timestamps; when
 * NCCL's host and device counters disagree (a Broadcast on the AllGatherV path, 2.28's
 * self-sends), an earlier op's. Nothing in the event says which. Two facts do:
 *
 * - Later: the GPU cannot have started the 64th work after this op's on a channel
 *   before the application issued it. So if, when the op completed (after NCCL read
 *   every one of its slots), fewer than 64 ops had been issued from its group's start
 *   on, its timestamps are no later op's. That is the fast test here (`certain`);
 *   core/judge.h refines it with the channels the later ops used, on the dump thread,
 *   and holds back or leaves out what stays uncertain.
 * - Earlier: no channel of the op can start on the GPU before a timestamp NCCL had
 *   already delivered when the op was issued (op->floor: every stop of a completed op,
 *   every kernel start of an op not tracked), nor, in issue order, before the latest
 *   kept stop of the last op whose timestamps are certain (a communicator's kernels run
 *   one after another), unless that op is of the same group (a group's ops share kernel
 *   launches: their channels' works run in the order NCCL schedules them, not the order
 *   they were issued). A channel that fails a test has an earlier op's timestamps: it is
 *   left out of the time (the record's stale_channels), and an op with no channel left
 *   is counted as handed over (c->untimed), not recorded. (A per-channel version of the
 *   order test, kept beside it for a while, left out no channel the two tests above did
 *   not, on any recording here, and cost a store per channel per op.)
 * - Unless the clock went back: then every op starts below the floor for as long as the
 *   step. How far below proves nothing (a stale slot may be minutes old); more distinct
 *   starts below one floor on one channel than NCCL's slots can hold do
 *   (core/clock_step.h). The floor then moves to the new time (clock_stepped), and timing
 *   goes on.
 *
 * These replace two shape tests that guessed from the channels alone: "the group of
 * channels before a long idle gap is stale" kept the later group, which under the
 * overwrite is the wrong one, and "the largest group of channels is the op's" cut kernels
 * whose blocks ran in two waves (two ranks on one GPU, compute beside NCCL) to a part.
 */

_Static_assert(INS_CLOCK_STEP_CHANNELS == INS_MAX_CHANNELS, "clock_step.h counts every channel id");
_Static_assert(INS_CLOCK_STEP_SLOTS == INS_NCCL_PROFILER_SLOTS, "clock_step.h counts NCCL's slots");

/* The GPU clock went back, proven (core/clock_step.h): the floor is new_floor, a timestamp of
 * the new time, and the last certain op is forgotten (its end is of the old time: every op would
 * start before it). An op issued before this keeps its floor of the old time; earlier_channels_slow
 * judges it against this one. Counted, for the dump thread to say. */
static __attribute__((noinline, cold)) void clock_stepped(struct ins_comm *c, uint64_t new_floor) {
  atomic_store_explicit(&c->gpu_floor, new_floor, memory_order_relaxed);
  atomic_store_explicit(&c->last_idx, 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->clock_steps, 1, memory_order_relaxed);
}

/* The end of the last certain op, if it was issued before op's group (end first: last_idx);
 * else 0. */
static inline uint64_t last_certain_end(struct ins_comm *c, const struct ins_op *op) {
  uint64_t last_end = atomic_load_explicit(&c->last_end, memory_order_acquire);
  uint64_t last_idx = atomic_load_explicit(&c->last_idx, memory_order_relaxed);
  if (!last_idx || (int32_t)((uint32_t)(last_idx - 1) - (uint32_t)op->group_first) >= 0) last_end = 0;
  return last_end;
}

/* An op that ran wholly below its floor (its latest stop is below it), as every op does after
 * the clock went back (and as an op handed over whole does): its starts, for the proof. */
static __attribute__((noinline, cold)) void watch_below(struct ins_comm *c, const struct ins_op *op,
                                                        uint64_t mask) {
  uint8_t ch[INS_MAX_CHANNELS];
  uint64_t start[INS_MAX_CHANNELS];
  int n = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    const struct ins_chan *k = &op->ch[__builtin_ctzll(m)];
    if (!k->start_ptimer || k->stop_ptimer < k->start_ptimer) continue; /* not GPU-timed */
    ch[n] = k->id;
    start[n++] = k->start_ptimer;
  }
  uint64_t new_floor = ins_clock_step_observe(&c->step, op->floor, ch, start, n);
  if (new_floor) clock_stepped(c, new_floor);
}

/* earlier_channels, when a channel may start at or below the op's floor or before last_end. */
static __attribute__((noinline)) uint64_t earlier_channels_slow(struct ins_comm *c,
                                                                const struct ins_op *op,
                                                                uint64_t mask, uint64_t gpu_hi) {
  uint64_t last_end = last_certain_end(c, op);
  /* The floor only rises, but for a step back proven since the op was issued (clock_stepped):
   * the floor is then lower than the op's, and the new one holds for it. Such an op's starts
   * say nothing for the next proof (they were read before the new floor was delivered). */
  uint64_t floor = op->floor, now = atomic_load_explicit(&c->gpu_floor, memory_order_relaxed);
  bool stepped = now < floor;
  if (stepped) floor = now;
  uint64_t bad = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    const struct ins_chan *ch = &op->ch[__builtin_ctzll(m)];
    if (!ch->start_ptimer || ch->stop_ptimer < ch->start_ptimer) continue; /* not GPU-timed */
    if (ch->start_ptimer <= floor || ch->start_ptimer < last_end) bad |= m & -m;
  }
  /* stale slots, or the clock gone back: ops wholly below the floor tell, in time (an op that
   * ended above it ran in the old time) */
  if (__builtin_expect(gpu_hi < floor && !stepped, 0)) watch_below(c, op, mask);
  return bad;
}

/* The channels of op (of mask) whose GPU timestamps are an earlier op's; gpu_lo, gpu_hi: their
 * earliest start (when none starts that early, no channel needs a look) and latest stop. The
 * slow half out of line, last_end loaded again there: fewer values live across the call, and the
 * common path costs what it did before the clock-step proof (make bench's callgrind: 0 on the
 * fixture mix, -0.07 on the synthetic traffic; passing last_end cost +0.47 on the latter). */
static inline uint64_t earlier_channels(struct ins_comm *c, const struct ins_op *op, uint64_t mask,
                                        uint64_t gpu_lo, uint64_t gpu_hi) {
  if (__builtin_expect(gpu_lo > op->floor && gpu_lo >= last_certain_end(c, op), 1)) return 0;
  return earlier_channels_slow(c, op, mask, gpu_hi);
}

/* Where the op stands in the issue order as it completes: what judge.h needs, and
 * whether that alone makes its timestamps certain to be no later op's. */
struct op_place {
  uint32_t group_before; /* ops of its group issued before it */
  uint32_t issued_after; /* it and the ops issued after it, so far */
  uint32_t lag;          /* API calls that can make work (ABI v4: ops) from its group's start on */
  int certain;
};

static inline __attribute__((always_inline)) struct op_place place_now(struct ins_comm *c,
                                                                       const struct ins_op *op) {
  struct op_place p;
  uint32_t ops_now = (uint32_t)atomic_load_explicit(&c->ops_seq, memory_order_relaxed);
  p.group_before = op->op_idx - (uint32_t)op->group_first;
  p.issued_after = ops_now - op->op_idx;
  p.lag = atomic_load_explicit(&c->api_seen, memory_order_relaxed)
              ? (uint32_t)(atomic_load_explicit(&c->api_seq, memory_order_relaxed) - op->api_base)
              : p.group_before + p.issued_after;
  p.certain = ins_op_certain(p.lag, p.group_before + p.issued_after);
  return p;
}

/* Every timestamp delivered is a GPU time that has passed: the floor of later ops. */
static void raise_floor(struct ins_comm *c, uint64_t t) {
  uint64_t f = atomic_load_explicit(&c->gpu_floor, memory_order_relaxed);
  while (t > f && !atomic_compare_exchange_weak_explicit(&c->gpu_floor, &f, t, memory_order_relaxed,
                                                         memory_order_relaxed)) {
  }
}

/* If the op's timestamps are certain, the latest stop of its kept channels (end, 0 for
 * none) becomes the reference of the order test (earlier_channels) for the ops of later
 * groups. Its latest stop, whoever's it was, raises the floor: every timestamp delivered
 * is a GPU time that has passed. */
static void remember_certain(struct ins_comm *c, const struct ins_op *op, uint64_t end,
                              int certain, uint64_t latest) {
  if (certain && end) { /* the last certain op of all, unless a newer one is there already */
    uint64_t had = atomic_load_explicit(&c->last_idx, memory_order_relaxed);
    bool newer = true;
    while ((newer = !had || (int32_t)(op->op_idx - (uint32_t)(had - 1)) > 0) &&
           !atomic_compare_exchange_weak_explicit(&c->last_idx, &had, (uint64_t)op->op_idx + 1,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
    if (newer) atomic_store_explicit(&c->last_end, end, memory_order_release);
  }
  raise_floor(c, latest);
}

/*
 * Completing an op, in named steps. complete() runs once per op, not per callback, and
 * gcc inlines every step into it (channel_span is forced inline: called twice, gcc kept
 * it out of line, +1.7 instructions per callback on the fixture mix; make bench's
 * callgrind, docs/BENCHMARKS.md). Three shapes cost more and were undone, per callback: the
 * channel loop updating a struct rather than locals (gcc kept one more register move
 * per channel: +0.25), steps reloading op->comm after the ring's CAS rather than taking
 * the communicator (+0.11), and a zero-initialised timing overwritten (+0.05).
 */

/* An overtaken op (op.h) keeps only the channels that gave both timers (the others'
 * late events count its zombie down, no more). Counts it as recorded from those, or
 * lost with none (unless CPU timing is kept: then it is a collective_cpu record).
 * Returns the channels kept. */
static uint64_t keep_timed_channels(struct ins_comm *c, struct ins_op *op, uint64_t mask) {
  uint64_t timed = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    const struct ins_chan *ch = &op->ch[__builtin_ctzll(m)];
    if (ch->start_ptimer && ch->stop_ptimer >= ch->start_ptimer) timed |= m & -m;
  }
  if (timed || c->keep_cpu_timing)
    atomic_fetch_add_explicit(&c->overtaken_recorded, 1, memory_order_relaxed);
  else
    atomic_fetch_add_explicit(&c->untimed[op->kind][INS_UNTIMED_LOST_EVENTS], 1, memory_order_relaxed);
  return timed;
}

/* What an op's channels say about its time: one pass over them. */
struct op_span {
  int nch;                    /* channels */
  int all_gpu;                /* every one gave both GPU timers */
  uint64_t gpu_lo, gpu_hi;    /* earliest GPU start, latest GPU stop */
  uint64_t cpu_lo, cpu_hi;    /* host times of the channels without GPU timers */
};

static inline __attribute__((always_inline)) struct op_span channel_span(const struct ins_op *op,
                                                                        uint64_t mask) {
  uint64_t gpu_lo = UINT64_MAX, gpu_hi = 0, cpu_lo = UINT64_MAX, cpu_hi = 0;
  int nch = 0, all_gpu = 1;
  for (uint64_t m = mask; m; m &= m - 1) {
    const struct ins_chan *ch = &op->ch[__builtin_ctzll(m)];
    nch++;
    if (ch->start_ptimer && ch->stop_ptimer && ch->stop_ptimer >= ch->start_ptimer) {
      if (ch->start_ptimer < gpu_lo) gpu_lo = ch->start_ptimer;
      if (ch->stop_ptimer > gpu_hi) gpu_hi = ch->stop_ptimer;
    } else {
      all_gpu = 0;
      if (ch->host_start_ns < cpu_lo) cpu_lo = ch->host_start_ns;
      if (ch->host_stop_ns > cpu_hi) cpu_hi = ch->host_stop_ns;
    }
  }
  return (struct op_span){nch, all_gpu, gpu_lo, gpu_hi, cpu_lo, cpu_hi};
}

/* How the op is timed, and from which channels. */
struct op_timing {
  enum ins_timing source;
  uint64_t start, end;
  int stale; /* channels left out: an earlier op's timestamps (earlier_channels) */
};

/* The GPU timers when every channel gave both, else the host times of the kernel
 * events, else the op's own host start and stop (records/JSON field `timing`). GPU
 * timestamps that are an earlier op's are left out; with none left, end == 0. */
static struct op_timing choose_timing(struct ins_comm *c, const struct ins_op *op,
                                      uint64_t mask, const struct op_span *s, int certain) {
  if (!s->nch)
    return (struct op_timing){INS_TIMING_COLLECTIVE_CPU, op->host_start_ns, op->host_stop_ns, 0};
  if (!s->all_gpu) return (struct op_timing){INS_TIMING_KERNEL_CPU, s->cpu_lo, s->cpu_hi, 0};
  struct op_timing t = {INS_TIMING_KERNEL_GPU, s->gpu_lo, s->gpu_hi, 0};
  uint64_t bad = earlier_channels(c, op, mask, s->gpu_lo, s->gpu_hi);
  if (__builtin_expect(bad != 0, 0)) {
    struct op_span k = channel_span(op, mask & ~bad);
    t.stale = __builtin_popcountll(bad);
    t.start = k.nch ? k.gpu_lo : 0;
    t.end = k.nch ? k.gpu_hi : 0;
    if (!k.nch)
      atomic_fetch_add_explicit(&c->untimed[op->kind][INS_UNTIMED_HANDED_OVER], 1, memory_order_relaxed);
  }
  remember_certain(c, op, t.end, certain, s->gpu_hi);
  return t;
}

static inline uint16_t sat16(uint32_t v) { return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v; }

/* The record's fields from the op, its channels, its timing and its place. */
static void fill_record(struct ins_record *r, const struct ins_comm *c, const struct ins_op *op,
                        uint64_t mask, int nch, const struct op_timing *t,
                        const struct op_place *p, int partial) {
  r->kind = op->kind;
  r->timing = (uint8_t)t->source;
  r->func = op->func;
  r->nchannels = (uint8_t)nch;
  r->stale_channels = (uint8_t)t->stale;
  r->group_before = p->group_before > UINT8_MAX ? UINT8_MAX : (uint8_t)p->group_before;
  r->issued_after = sat16(p->issued_after);
  r->lag = sat16(p->lag);
  r->api_at = op->api_at;
  r->op_idx = op->op_idx;
  r->group = op->group;
  /* judge.h counts the ops on each channel: an overtaken op may have used channels that
   * never reported (nor were kept), so it counts on every channel */
  r->chan_mask = partial ? ~0ull : mask;
  r->peer = op->peer;
  r->sn = op->sn;
  r->count = op->count;
  r->bytes = op->bytes;
  r->start_ns = t->start;
  r->exec_ns = t->end > t->start ? t->end - t->start : 0;
  r->func_name = op->func_name;
  r->datatype = op->datatype;
  r->algo = op->algo;
  r->proto = op->proto;
  /* the GPU timer's unit is being measured: when the op completed, on the host */
  r->host_done_ns = atomic_load_explicit(&c->timer_probe, memory_order_relaxed) ? ins_mono_ns() : 0;
  if (!c->verbose) return;
  struct ins_record_trace *tr = r->trace;
  tr->op_start_sn = op->start_sn;
  tr->op_stop_sn = op->stop_sn;
  tr->op_start_us = op->host_start_ns / 1000;
  tr->op_stop_us = op->host_stop_ns / 1000;
  int i = 0;
  for (uint64_t m = mask; m; m &= m - 1, i++) {
    const struct ins_chan *ch = &op->ch[__builtin_ctzll(m)];
    tr->ch[i] = (struct ins_trace_ch){ch->id, ch->start_sn, ch->record_sn, ch->stop_sn,
                                      ch->host_start_ns / 1000, ch->host_record_ns / 1000,
                                      ch->host_stop_ns / 1000};
  }
}

/* Into the op's ring and wake the dump thread if it waits; a full ring drops the
 * record and counts it (a callback never waits for the dump thread). */
static void publish(struct ins_comm *c, const struct ins_op *op, uint64_t mask, int nch,
                    const struct op_timing *t, const struct op_place *p, int partial) {
  struct ins_ring *ring = &c->ring[op->kind];
  uint64_t pos;
  struct ins_record *r = ins_ring_reserve(ring, &pos);
  if (!r) {
    atomic_fetch_add_explicit(&c->dropped[op->kind], 1, memory_order_relaxed);
    return;
  }
  fill_record(r, c, op, mask, nch, t, p, partial);
  ins_ring_commit(ring, r, pos);
  ins_wake_after_push(ring);
}

/*
 * A quiet op's shadow (record.h, INS_TIMING_SHADOW): its place and channels, which the
 * judge counts as the works it added to them (core/judge.h) and never writes. Without it a
 * quiet op counts as a work on every channel, and a backlog of small ops between two sizes
 * worth recording leaves the larger ones unproven (an nccl-tests sweep). Published only
 * when the op completed uncertain, i.e. in a backlog: while the proxy thread keeps up, the
 * records around it need no count and it costs only its place. It never takes the second
 * half of a ring: records come first, and a shadow not published costs only a proof.
 */
static __attribute__((noinline)) void publish_shadow(struct ins_comm *c, const struct ins_op *op) {
  struct op_place p = place_now(c, op);
  if (p.certain) return;
  struct ins_ring *ring = &c->ring[op->kind];
  if (ins_ring_used_approx(ring) >= ring->cap / 2) return;
  uint64_t pos;
  struct ins_record *r = ins_ring_reserve(ring, &pos);
  if (!r) return;
  *r = (struct ins_record){
      .kind = op->kind,
      .timing = INS_TIMING_SHADOW,
      .group_before = p.group_before > UINT8_MAX ? UINT8_MAX : (uint8_t)p.group_before,
      .issued_after = sat16(p.issued_after),
      .peer = op->peer,
      .op_idx = op->op_idx,
      .chan_mask = atomic_load_explicit(&op->chan_mask, memory_order_relaxed),
      .group = op->group,
      .lag = sat16(p.lag),
      .api_at = op->api_at,
  };
  if (c->verbose) memset(r->trace, 0, offsetof(struct ins_record_trace, ch)); /* nchannels 0 */
  ins_ring_commit(ring, r, pos);
  ins_wake_after_push(ring);
}

/* An op completed that started while no application group had begun (group_unknown): its
 * launch has happened if a kernel channel of it reported (a copy-engine op's stop says
 * nothing of the kernels of its group). */
static __attribute__((noinline, cold)) void note_done(struct ins_comm *c, const struct ins_op *op) {
  if (!atomic_load_explicit(&op->chan_mask, memory_order_relaxed)) return;
  uint32_t next = op->op_idx + 1;
  if ((int32_t)(next - LOAD(c->done_idx)) > 0) STORE(c->done_idx, next);
}

/* An op completing vouches for the ops issued before it (a communicator's ops run in
 * order on the GPU): the one just before can start no more channels (its token, if its
 * count is untrusted), and the one INS_OVERTAKE_WINDOW before, if still waiting, has
 * lost its missing events. Only an op that completed on its own events reclaims: one
 * finished by a reclaim proves nothing about the ops before it. Forced inline: called twice
 * (a quiet op's completion too), gcc kept it out of line, +1 instruction per callback on the
 * synthetic mix (make bench's callgrind). */
static inline __attribute__((always_inline)) void vouch_for_earlier_ops(struct ins_comm *c, uint64_t issue,
                                                                     int partial) {
  if (issue > 0) release_untrusted(c, issue - 1);
  if (!partial && issue >= INS_OVERTAKE_WINDOW) reclaim_overtaken(c, issue - INS_OVERTAKE_WINDOW);
}

/* Turn a finished op into a record in its ring (or count why not), free it, and let
 * the ops its completion vouches for finish. `partial`: the op was overtaken (op.h):
 * use only the channels that gave both timers. */
static void complete(struct ins_op *op, int partial) {
  assert(op->tag == INS_TAG_OP); /* completed once: whoever brought pending to 0, or a reclaim */
  struct ins_comm *c = op->comm;
  if (__builtin_expect(atomic_load_explicit(&op->zombie, memory_order_acquire), 0)) {
    ins_pool_put(&c->pool, op); /* recorded when overtaken; its last late event came */
    return;
  }
  uint64_t issue = atomic_load_explicit(&op->issue, memory_order_relaxed);
  /* out of its in-flight slot, unless a reclaim took it out already or a newer op is there */
  struct ins_op *self = op;
  atomic_compare_exchange_strong(&c->inflight[issue & (INS_INFLIGHT_SLOTS - 1)], &self, NULL);
  if (__builtin_expect(op->verbose & (INS_OP_QUIET | INS_OP_NOGROUP), 0)) {
    if (op->verbose & INS_OP_NOGROUP) note_done(c, op);
    if (op->verbose & INS_OP_QUIET) {
      /* Watched only: no record, no count, and none of the judge's state (the floor, the
       * last certain op) from its timestamps, as if it had not been tracked; at most its
       * channels for the judge to count (publish_shadow). It still vouches for the ops
       * before it: it ran after them on the GPU. */
      if (!partial) {
        publish_shadow(c, op);
        ins_pool_put(&c->pool, op);
      }
      vouch_for_earlier_ops(c, issue, partial);
      return;
    }
  }
  uint64_t mask = atomic_load_explicit(&op->chan_mask, memory_order_relaxed);
  if (partial) mask = keep_timed_channels(c, op, mask);
  struct op_span span = channel_span(op, mask);
  struct op_place place = place_now(c, op);
  struct op_timing timing = choose_timing(c, op, mask, &span, place.certain);
  if (partial && !span.nch && !c->keep_cpu_timing) {
    /* lost (counted by keep_timed_channels) */
  } else if (timing.source != INS_TIMING_KERNEL_GPU && !c->keep_cpu_timing) {
    atomic_fetch_add_explicit(&c->untimed[op->kind][INS_UNTIMED_NO_GPU_TIMER], 1, memory_order_relaxed);
  } else if (timing.source == INS_TIMING_KERNEL_GPU && !timing.end) {
    /* every channel had an earlier op's timestamps (counted by choose_timing) */
  } else {
    publish(c, op, mask, span.nch, &timing, &place, partial);
  }
  if (!partial) ins_pool_put(&c->pool, op); /* a partial one lives on (reclaim_overtaken) */
  vouch_for_earlier_ops(c, issue, partial);
}

/* The op issued just before one that completed: if its channel count is untrusted,
 * no channel of it can start any more: give back its token (op.h). Its own
 * completion does the same for the op before it. The op is read without owning
 * it, as reclaim_overtaken reads; if it is completed and reused meanwhile (between
 * the issue check and the exchange: a few instructions against a whole completion
 * and a new start), the new op's token is taken early, and that op is finished
 * once its started channels stop, as it was before tokens waited. */
static void release_untrusted(struct ins_comm *c, uint64_t issue) {
  struct ins_op *op = atomic_load_explicit(&c->inflight[issue & (INS_INFLIGHT_SLOTS - 1)],
                                           memory_order_acquire);
  if (!op || op->expected || atomic_load_explicit(&op->issue, memory_order_relaxed) != issue ||
      atomic_exchange_explicit(&op->token_returned, 1, memory_order_relaxed))
    return;
  ins_op_settle(op, 1);
}

/* The op issued as number `issue`, if it is still waiting for events although
 * an op issued INS_OVERTAKE_WINDOW later has completed: finish it now. */
static void reclaim_overtaken(struct ins_comm *c, uint64_t issue) {
  struct ins_op *_Atomic *slot = &c->inflight[issue & (INS_INFLIGHT_SLOTS - 1)];
  struct ins_op *op = atomic_load_explicit(slot, memory_order_acquire);
  if (!op || atomic_load_explicit(&op->issue, memory_order_relaxed) != issue ||
      !atomic_load(&op->host_stopped))
    return;
  if (!atomic_compare_exchange_strong(slot, &op, NULL)) return; /* someone else has it */
  /* Own its completion: pending from >0 to 0; a racing normal completion wins instead. */
  int p = atomic_load(&op->pending);
  while (p > 0 && !atomic_compare_exchange_weak(&op->pending, &p, 0)) {
  }
  if (p <= 0) return;
  /* Record it now, and keep it as a zombie until the p events it waited for have come
   * (op.h): those that come meanwhile take pending below 0, and none completes it. */
  complete(op, 1);
  atomic_store_explicit(&op->zombie, 1, memory_order_release);
  if (atomic_fetch_add(&op->pending, p) + p <= 0) ins_pool_put(&c->pool, op);
}

void ins_op_complete(struct ins_op *op) { complete(op, 0); }

/* Handles refused that the plugin never gives; for one warning (abi/lifecycle.c). */
static _Atomic uint64_t g_refused_handles;

int ins_op_refuse(const void *h) {
  if (!h) return 0; /* an op not tracked: NCCL stops what it started, NULL */
  if (!ins_handle_odd(h)) {
    uint32_t t = ins_tag_at(h);
    /* one of ours, stopped or of a finalized communicator (free), or of another kind */
    if (t == INS_TAG_FREE || t == INS_TAG_OP || t == INS_TAG_KERNEL) return 0;
  }
  atomic_fetch_add_explicit(&g_refused_handles, 1, memory_order_relaxed);
  return 0;
}

uint64_t ins_op_refused_handles(void) {
  return atomic_load_explicit(&g_refused_handles, memory_order_relaxed);
}

void *ins_op_kernel_start_slow(struct ins_comm *c, void *parent, uint8_t channel, uint64_t ptimer) {
  struct ins_op *op = parent;
  if (!c) return NULL;
  if (!op) {
    /* An op of this communicator that is not tracked (below the size filter, P2P off, no
     * memory): its timestamp is still a GPU time that has passed, and the floor of the
     * ops issued from now on ("Whose timestamps?"): NCCL's older-timestamp slips were
     * seen right after small Send/Recv groups that the size filter drops. */
    raise_floor(c, ptimer);
    return NULL;
  }
  if (ins_handle_odd(parent) || ins_tag_at(parent) != INS_TAG_OP) {
    atomic_fetch_add_explicit(&c->refused_parent, 1, memory_order_relaxed);
    return NULL;
  }
  /* A quiet op (watched, never recorded: INS_OP_QUIET) raises the floor with its kernel
   * starts exactly as an op not tracked does (above), and no other way (complete()): the
   * records of the others are what they would be without it. */
  if (op->verbose & INS_OP_QUIET) raise_floor(c, ptimer);
  if (channel >= INS_MAX_CHANNELS) {
    atomic_store_explicit(&c->bad_channel, 1, memory_order_relaxed);
    return NULL;
  }
  uint64_t bit = 1ull << channel;
  if (atomic_load_explicit(&op->chan_mask, memory_order_relaxed) & bit) { /* duplicate */
    atomic_fetch_add_explicit(&c->refused_dup, 1, memory_order_relaxed);
    return NULL;
  }
  struct ins_chan *ch = &op->ch[channel];
  ch->id = channel;
  ch->verbose = c->verbose;
  ch->start_ptimer = ptimer;
  ch->stop_ptimer = 0;
  ch->host_start_ns = (!ptimer || c->verbose) ? ins_wall_ns() : 0;
  ch->host_stop_ns = ch->host_record_ns = 0;
  ch->start_sn = c->verbose ? next_sn(c) : 0;
  ch->record_sn = ch->stop_sn = 0;
  ch->tag = INS_TAG_KERNEL;
  atomic_fetch_or_explicit(&op->chan_mask, bit, memory_order_relaxed);
  if (!op->expected) atomic_fetch_add_explicit(&op->pending, 1, memory_order_relaxed);
  return ch;
}

int ins_op_kernel_record_stop_slow(struct ins_chan *ch, uint64_t ptimer) {
  struct ins_comm *c = ins_op_of_chan(ch)->comm;
  ch->stop_ptimer = ptimer;
  if (c->verbose || !ptimer) ch->host_record_ns = ins_wall_ns();
  if (c->verbose) ch->record_sn = next_sn(c);
  return 0;
}

void ins_op_kernel_stop_slow(struct ins_chan *ch) {
  struct ins_op *op = ins_op_of_chan(ch);
  struct ins_comm *c = op->comm;
  if (c->verbose || !ch->stop_ptimer) ch->host_stop_ns = ins_wall_ns();
  if (c->verbose) ch->stop_sn = next_sn(c);
  ch->tag = INS_TAG_FREE; /* a second stop of this handle is ignored */
  ins_op_channel_stopped(op);
}

void ins_op_stop(struct ins_op *op) {
  struct ins_comm *c = op->comm;
  if (op->host_clock) op->host_stop_ns = ins_wall_ns();
  if (c->verbose) op->stop_sn = next_sn(c);
  atomic_store_explicit(&op->host_stopped, 1, memory_order_release);
  ins_op_settle(op, 1);
}
