/* SPDX-License-Identifier: Apache-2.0 */
/*
 * judge.c - can a record's timestamps be a later op's? (see judge.h)
 */
#include "core/judge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

/* Where a remembered op's record stands. */
enum op_state {
  OP_WAITING = 0, /* held, not yet decided */
  OP_RIGHT,       /* GPU-timed, every channel its own: it can vouch for earlier ops */
  OP_OTHER        /* decided: unverified, host-timed, or with channels left out */
};

_Static_assert((INS_JUDGE_WINDOW & (INS_JUDGE_WINDOW - 1)) == 0, "a power of two");
_Static_assert((INS_JUDGE_WINDOW_MAX & (INS_JUDGE_WINDOW_MAX - 1)) == 0, "a power of two");
_Static_assert(INS_JUDGE_WINDOW_MAX >= INS_JUDGE_WINDOW, "the window only grows");
_Static_assert((INS_JUDGE_HOLD_MAX & (INS_JUDGE_HOLD_MAX - 1)) == 0, "hold() doubles its buffer up to it");
_Static_assert(INS_JUDGE_WINDOW > INS_NCCL_PROFILER_SLOTS + INS_JUDGE_SETTLE, "room for a span");

void ins_judge_init(struct ins_judge *j, bool verbose, bool emit_unverified) {
  memset(j, 0, sizeof *j);
  j->window = INS_JUDGE_WINDOW;
  j->verbose = verbose;
  j->emit_unverified = emit_unverified;
  j->slot = (INS_RECORD_MAX(verbose) + 15) & ~(size_t)15;
}

void ins_judge_set_bounds(struct ins_judge *j, bool on) { j->bounds = on; }

void ins_judge_set_comm(struct ins_judge *j, int rank, int nranks) {
  j->rank = rank;
  j->nranks = nranks > 0 ? nranks : 0;
}

void ins_judge_free(struct ins_judge *j) {
  free(j->recent);
  free(j->held);
  free(j->held_state);
  free(j->pend);
  j->recent = NULL;
  j->window = INS_JUDGE_WINDOW;
  j->held = NULL;
  j->held_state = NULL;
  j->pend = NULL;
  j->held_n = j->held_cap = 0;
  j->pend_n = j->pend_cap = 0;
}

static uint32_t span_of(const struct ins_record *r) {
  return (uint32_t)r->group_before + r->issued_after;
}

bool ins_judge_clear_alone(const struct ins_record *r) {
  return ins_op_certain(r->lag, span_of(r));
}

/* The first op of the record's span, and one past its last. */
static uint32_t span_lo(const struct ins_record *r) { return r->op_idx - r->group_before; }
static uint32_t span_hi(const struct ins_record *r) { return r->op_idx + r->issued_after; }

/* a is after b, in op_idx order (modulo 2^32: spans are far shorter) */
static bool after(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

static struct ins_judge_op *slot_of(const struct ins_judge *j, uint32_t idx) {
  return &j->recent[idx & (j->window - 1)];
}

static struct ins_judge_op *remembered(const struct ins_judge *j, uint32_t idx) {
  struct ins_judge_op *o = slot_of(j, idx);
  return o->seen && o->idx == idx ? o : NULL;
}

static struct ins_record *held_at(struct ins_judge *j, size_t k);

/* Twice the window, each op remembered in its new slot (two ops that met there would have
 * met in the old window too: idx equal mod 2w are equal mod w). Without memory it stays as
 * it was: the oldest ops are forgotten, their records then unverified (works_of counts an op
 * not remembered on every channel), the safe side. */
static bool grow_window(struct ins_judge *j) {
  uint32_t w = 2 * j->window;
  struct ins_judge_op *bigger = calloc(w, sizeof *bigger);
  if (!bigger) return false;
  for (uint32_t k = 0; k < j->window; k++) {
    if (!j->recent[k].seen) continue;
    struct ins_judge_op *to = &bigger[j->recent[k].idx & (w - 1)];
    assert(!to->seen);
    *to = j->recent[k];
  }
  free(j->recent);
  j->recent = bigger;
  j->window = w;
  return true;
}

static void note(struct ins_judge *j, const struct ins_record *r) {
  bool shadow = r->timing == INS_TIMING_SHADOW;
  /* a shadow says nothing of the records still to come (known()): they wait as before */
  if (!shadow && (!j->seen_any || after(r->op_idx, j->newest))) {
    j->newest = r->op_idx;
    j->seen_any = true;
  }
  if (!j->recent) return;
  /* the oldest held record's span, and the ops a settle past it, stay remembered */
  while (j->held_n && j->window < INS_JUDGE_WINDOW_MAX &&
         r->op_idx - span_lo(held_at(j, 0)) + INS_JUDGE_SETTLE >= j->window)
    if (!grow_window(j)) break;
  struct ins_judge_op *o = slot_of(j, r->op_idx);
  *o = (struct ins_judge_op){r->chan_mask, 0, 0, r->op_idx, r->group, r->peer, r->issued_after,
                             r->api_at, r->kind, 1, shadow ? OP_OTHER : OP_WAITING};
}

/* The window, at the first record that needs it. Its first entries are the latest right
 * ops decided before, of the last two groups (j->last_right): the P of the first unverified
 * op, of the last group or (the op in it) of the one before (judge.h, "Bounds"). false
 * without memory. */
static bool alloc_window(struct ins_judge *j) {
  if (j->recent) return true;
  j->recent = calloc(j->window, sizeof *j->recent);
  for (int k = 0; j->recent && k < 2; k++)
    if (j->last_right[k].seen) *slot_of(j, j->last_right[k].idx) = j->last_right[k];
  return j->recent != NULL;
}

/* A decided record's verdict, where the ops before it can read it. */
static void remember_verdict(struct ins_judge *j, const struct ins_record *r, bool right) {
  bool ok = right && r->timing == INS_TIMING_KERNEL_GPU && r->stale_channels == 0;
  if (!j->recent) { /* the latest right ops, for the window to start with (alloc_window) */
    struct ins_judge_op *last = j->last_right;
    if (ok && j->bounds && (!last[1].seen || after(r->op_idx, last[1].idx))) {
      if (last[1].group != r->group) last[0] = last[1];
      last[1] = (struct ins_judge_op){r->chan_mask, r->start_ns, r->start_ns + r->exec_ns,
                                      r->op_idx, r->group, r->peer, r->issued_after,
                                      r->api_at, r->kind, 1, OP_RIGHT};
    }
    return;
  }
  struct ins_judge_op *o = remembered(j, r->op_idx);
  if (!o) return;
  o->state = ok ? OP_RIGHT : OP_OTHER;
  o->start = r->start_ns, o->end = r->start_ns + r->exec_ns;
}

/* Do a Send to `peer` and a Recv from it, in one group, run as one work on a channel?
 * NCCL runs a group's P2P ops in rounds (init.cc's p2pSchedule, enqueue.cc's
 * scheduleP2pTasksToPlan): round d pairs the Send to one rank with the Recv from another,
 * rank + d and rank - d on one node, so Send(p) and Recv(p) share a work only where those
 * meet: p is the rank itself (round 0), or the only other rank of a 2-rank communicator.
 * Elsewhere (d = nranks/2 on one node; several nodes' schedules) they may too, but counting
 * them as two works there only counts more than ran, never fewer: the safe side. */
static bool p2p_pair_shares_work(const struct ins_judge *j, int32_t peer) {
  return peer == j->rank || (j->nranks == 2 && peer >= 0 && peer < 2);
}

/* The channels of op i that add a work to a channel: a Send and a Recv of one group
 * with one peer are one work where NCCL runs them in one round (p2p_pair_shares_work);
 * the ops of a group are consecutive in op_idx. No record: it may have used any channel.
 * Group 0: no group was ever begun (core/op.c group_unknown), the op's launch is not
 * known: no pair. */
static uint64_t works_of(const struct ins_judge *j, uint32_t i, uint32_t lo) {
  const struct ins_judge_op *o = remembered(j, i);
  if (!o) return ~0ull;
  uint64_t m = o->mask;
  if (o->kind == INS_KIND_P2P && o->group && j->nranks && p2p_pair_shares_work(j, o->peer))
    for (uint32_t k = i - 1; k != lo - 1; k--) {
      const struct ins_judge_op *p = remembered(j, k);
      if (!p || p->group != o->group) break;
      if (p->kind == INS_KIND_P2P && p->peer == o->peer) m &= ~p->mask;
    }
  return m;
}

/* Has op i's record come, or will it never (an op INS_JUDGE_SETTLE past it has)? */
static bool known(const struct ins_judge *j, uint32_t i, bool final) {
  return final || remembered(j, i) || !after(i + INS_JUDGE_SETTLE, j->newest);
}

enum verdict { V_WAIT, V_RIGHT, V_UNVERIFIED };

/* API calls from a's start to b's (both valid, b issued after a, fewer than 2^15 apart). */
static uint32_t api_between(uint16_t a, uint16_t b) {
  return (uint32_t)(b - a) & INS_API_AT_MASK;
}

/*
 * The record's verdict, from the ops of its span (judge.h). Per channel c of the record
 * (op X, interval [X.start, X.end], work w on c), the timestamps NCCL gave it on c are
 * those of work w, or of a work w + 64k issued before X completed. A channel is X's
 * own when either
 *  - fewer than 64 works besides X's were issued on c from its group's start to its
 *    completion (no w + 64 existed), or
 *  - an op Z issued after X, whose every channel is its own, ran on c after X's whole
 *    interval (X.end < Z.start), with fewer than 64 works besides X's on c from X's
 *    group's start to the end of Z's group: a work w + 64 would come after Z's on c,
 *    so it started after Z did, after X.end; it cannot be what X was given.
 * An op Z vouched for that way vouches in turn: deep in a backlog, each op that NCCL
 * gave its own timestamps is vouched for by the next such op, back from the ops the
 * proxy thread read in time.
 *
 * Counting is conservative: a group's ops in any order, ops with neither record nor shadow
 * on every channel, collective calls that made no op (a Broadcast NCCL does not report)
 * too. The works between X's group and Z's are at most those of the ops there, or (with
 * API events) at most the API calls there that can make work, every work coming from one,
 * plus the works of Z's group after Z (Z's api_at has its group's P2P calls only up to Z):
 * the smaller bound counts, so that unreported calls after Z do not count against it.
 */
static enum verdict judge_record(const struct ins_judge *j, const struct ins_record *r, bool final) {
  if (r->timing != INS_TIMING_KERNEL_GPU || ins_judge_clear_alone(r)) return V_RIGHT;
  if (!j->recent || span_of(r) > INS_JUDGE_WINDOW_MAX - INS_JUDGE_SETTLE) return V_UNVERIFIED;
  uint32_t lo = span_lo(r), hi = span_hi(r), span = span_of(r);
  uint64_t x_end = r->start_ns + r->exec_ns;
  bool x_api = (r->api_at & INS_API_AT_VALID) && r->lag < INS_API_AT_MASK;
  /* collective calls that made no op: NCCL may still have run work for them, on any
   * channel (a P2P call counts only through its op: comm.h, api_seq) */
  uint32_t base = r->lag > span ? r->lag - span : 0;
  /* per channel: works of X's group (X's own included), and of the ops after it */
  uint32_t g1[INS_MAX_CHANNELS] = {0}, rest[INS_MAX_CHANNELS] = {0};
  bool in_g1 = true;         /* still among X's group's ops */
  uint32_t api_lb = 0;       /* API calls from X to the latest known op after its group */
  uint64_t pending = r->chan_mask; /* channels not yet shown to be its own */
  for (uint32_t i = lo; i != hi && pending; i++) {
    if (!known(j, i, final)) return V_WAIT;
    const struct ins_judge_op *z = remembered(j, i);
    if (in_g1 && z && z->group != r->group && after(i, r->op_idx)) in_g1 = false;
    if (!in_g1 && z && x_api && (z->api_at & INS_API_AT_VALID))
      api_lb = api_between(r->api_at, z->api_at);
    if (z && after(i, r->op_idx) && (z->mask & pending)) {
      if (z->state == OP_WAITING && !final) return V_WAIT; /* it may yet vouch */
      if (z->state == OP_RIGHT && x_end < z->start) {
        /* the works of Z's group after Z count too (a group's works in any order; its
         * last ops may have been issued after X completed, but before Z completed: NCCL
         * starts the events of a group's ops before it launches the group) */
        uint32_t extra[INS_MAX_CHANNELS] = {0};
        for (uint32_t k = i + 1, z_hi = i + z->issued_after; k != z_hi; k++) {
          if (!known(j, k, final)) return V_WAIT;
          const struct ins_judge_op *q = remembered(j, k);
          if (q && q->group != z->group) break;
          for (uint64_t m = works_of(j, k, lo) & z->mask & pending; m; m &= m - 1)
            extra[__builtin_ctzll(m)]++;
        }
        for (uint64_t m = z->mask & pending; m; m &= m - 1) {
          int c = __builtin_ctzll(m);
          uint32_t after_g1 = base + rest[c] + extra[c];
          if (!in_g1 && x_api && (z->api_at & INS_API_AT_VALID)) {
            /* Z's api_at has its group's collective calls, but of its P2P calls only those
             * issued up to Z (comm.h, api_seq): the rest are in extra */
            uint32_t calls = api_between(r->api_at, z->api_at) + extra[c];
            if (calls < after_g1) after_g1 = calls;
          }
          if (g1[c] + after_g1 <= INS_NCCL_PROFILER_SLOTS) pending &= ~(1ull << c);
        }
      }
    }
    for (uint64_t m = works_of(j, i, lo) & r->chan_mask; m; m &= m - 1)
      (in_g1 ? g1 : rest)[__builtin_ctzll(m)]++;
    /* a channel that no op to come can vouch for: X's timestamps there may be a later op's */
    for (uint64_t m = pending; m; m &= m - 1) {
      int c = __builtin_ctzll(m);
      uint32_t after_g1 = base + rest[c];
      if (x_api && api_lb < after_g1) after_g1 = api_lb; /* 0 while in X's group */
      if (g1[c] + after_g1 > INS_NCCL_PROFILER_SLOTS) return V_UNVERIFIED;
    }
  }
  /* every channel: its own by one rule or the other */
  for (uint64_t m = pending; m; m &= m - 1) {
    int c = __builtin_ctzll(m);
    if (base + g1[c] + rest[c] > INS_NCCL_PROFILER_SLOTS) return V_UNVERIFIED;
  }
  return V_RIGHT;
}

/* ---- bounds (judge.h, "Bounds") ---------------------------------------------------- */

enum bound_step { B_WAIT, B_NONE, B_FOUND };

/* The unverified record k of the FIFO awaiting a bound. */
static struct ins_record *pend_at(struct ins_judge *j, size_t k) {
  return (struct ins_record *)(j->pend + ((j->pend_head + k) % j->pend_cap) * j->slot);
}

static void pend_pop(struct ins_judge *j) {
  j->pend_head = (j->pend_head + 1) % j->pend_cap;
  j->pend_n--;
}

/* A copy of an unverified record at the FIFO's end; without memory it gets no bound. At
 * most a window of them wait (its P must stay in the window): the oldest then gets none. */
static void pend_push(struct ins_judge *j, const struct ins_record *r) {
  if (j->pend_n == INS_JUDGE_WINDOW) pend_pop(j);
  if (j->pend_n == j->pend_cap) {
    size_t cap = j->pend_cap ? 2 * j->pend_cap : 64;
    unsigned char *p = malloc(cap * j->slot);
    if (!p) return;
    for (size_t k = 0; k < j->pend_n; k++) memcpy(p + k * j->slot, pend_at(j, k), j->slot);
    free(j->pend);
    j->pend = p, j->pend_cap = cap, j->pend_head = 0;
  }
  memcpy(pend_at(j, j->pend_n), r, ins_record_size(r, j->verbose));
  j->pend_n++;
}

/* Is op i a neighbour that bounds x: right, and of another group (a group's ops share a
 * launch, so they ran beside x, not before or after it)? B_WAIT while its verdict may yet
 * say right; at the last drain every record has one. */
static enum bound_step neighbour(const struct ins_judge *j, const struct ins_record *x,
                                 uint32_t i, bool final, const struct ins_judge_op **o) {
  if (!known(j, i, final)) return B_WAIT;
  *o = remembered(j, i);
  if (!*o || (*o)->group == x->group) return B_NONE;
  if ((*o)->state == OP_WAITING) return final ? B_NONE : B_WAIT;
  return (*o)->state == OP_RIGHT ? B_FOUND : B_NONE;
}

/* P: the last right op issued before x's group, still in the window. */
static enum bound_step bound_before(const struct ins_judge *j, const struct ins_record *x,
                                    bool final, const struct ins_judge_op **p) {
  for (uint32_t i = x->op_idx - 1; j->newest - i < j->window; i--) {
    enum bound_step s = neighbour(j, x, i, final, p);
    if (s != B_NONE) return s;
  }
  return B_NONE; /* out of the window: its slots may be later ops' */
}

/* N: the first right op issued after x's group; none yet: wait, or none at the last drain. */
static enum bound_step bound_after(const struct ins_judge *j, const struct ins_record *x,
                                   bool final, const struct ins_judge_op **n) {
  for (uint32_t i = x->op_idx + 1; !after(i, j->newest); i++) {
    enum bound_step s = neighbour(j, x, i, final, n);
    if (s != B_NONE) return s;
  }
  return final ? B_NONE : B_WAIT;
}

/* The ops that ran between p and n: those issued between them, and the collective calls
 * that made no op. With API events on both, the calls from p's start to n's, n's own
 * left out (api_at has a collective's call before its op starts, a P2P call as it starts,
 * so p's and n's own are in it once each, p's before the difference): the more of the two
 * counts. The calls of p's and n's groups besides theirs may count in one and not the
 * other; either way a bracket counts at least the ops and calls of the groups between. */
static uint32_t ops_between(const struct ins_judge_op *p, const struct ins_judge_op *n) {
  uint32_t ops = n->idx - p->idx - 1;
  if ((p->api_at & INS_API_AT_VALID) && (n->api_at & INS_API_AT_VALID)) {
    uint32_t calls = api_between(p->api_at, n->api_at);
    if (calls > 0 && calls - 1 > ops) ops = calls - 1;
  }
  return ops;
}

/* x as a bound, once its neighbours are known. B_NONE: it gets none (x is left as it was). */
static enum bound_step bound_of(const struct ins_judge *j, struct ins_record *x, bool final) {
  const struct ins_judge_op *p = NULL, *n = NULL;
  enum bound_step s = bound_before(j, x, final, &p);
  if (s == B_FOUND) s = bound_after(j, x, final, &n);
  if (s != B_FOUND) return s;
  /* the stream's order puts p's end before n's start; a pair that says otherwise proves
   * nothing (never seen: both are right) */
  if (n->start < p->end) return B_NONE;
  x->timing = INS_TIMING_BOUND;
  x->start_ns = p->end;
  x->exec_ns = n->start - p->end;
  x->bound_ops = ops_between(p, n);
  return B_FOUND;
}

/* Out, in the order they were decided, the bounds whose neighbours are known; the first
 * still waiting stops the rest (records come nearly in issue order: the rest's brackets
 * are mostly its), so that a settle judges at most one bracket in vain. */
static void bound_pending(struct ins_judge *j, bool final, ins_judge_emit_fn emit, void *arg) {
  while (j->pend_n) {
    struct ins_record *x = pend_at(j, 0);
    enum bound_step s = bound_of(j, x, final);
    if (s == B_WAIT) break;
    if (s == B_FOUND) {
      j->bounded[x->kind & 1]++;
      emit(arg, x);
    }
    pend_pop(j);
  }
}

/* Out to emit, or counted as unverified. */
static void decide(struct ins_judge *j, struct ins_record *r, enum verdict v,
                   ins_judge_emit_fn emit, void *arg) {
  assert(v != V_WAIT);
  remember_verdict(j, r, v == V_RIGHT);
  if (r->timing == INS_TIMING_KERNEL_GPU && !ins_judge_clear_alone(r)) {
    if (v == V_UNVERIFIED) {
      j->unverified[r->kind & 1]++;
      /* a bound for it later, when its launch is known to be its group's own */
      if (j->bounds && j->recent && r->group) pend_push(j, r);
      if (!j->emit_unverified) return;
      r->timing = INS_TIMING_UNVERIFIED;
    } else {
      j->cleared_late[r->kind & 1]++;
    }
  }
  emit(arg, r);
}

static struct ins_record *held_at(struct ins_judge *j, size_t k) {
  return (struct ins_record *)(j->held + ((j->held_head + k) % j->held_cap) * j->slot);
}

static unsigned char *state_at(struct ins_judge *j, size_t k) {
  return &j->held_state[(j->held_head + k) % j->held_cap];
}

/* Keep a copy at the FIFO's end; false without memory. */
static bool hold(struct ins_judge *j, const struct ins_record *r, size_t size) {
  assert(size <= j->slot);
  if (j->held_n == j->held_cap) {
    size_t cap = j->held_cap ? 2 * j->held_cap : 64;
    unsigned char *p = malloc(cap * j->slot), *st = malloc(cap);
    if (!p || !st) {
      free(p);
      free(st);
      return false;
    }
    for (size_t k = 0; k < j->held_n; k++) {
      memcpy(p + k * j->slot, held_at(j, k), j->slot);
      st[k] = *state_at(j, k);
    }
    free(j->held);
    free(j->held_state);
    j->held = p, j->held_state = st, j->held_cap = cap, j->held_head = 0;
  }
  memcpy(held_at(j, j->held_n), r, size);
  *state_at(j, j->held_n) = V_WAIT;
  j->held_n++;
  return true;
}

void ins_judge_settle(struct ins_judge *j, bool final, ins_judge_emit_fn emit, void *arg) {
  /* Newest first: an op is vouched for by ops after it, so theirs come first. A verdict
   * reached is remembered (remember_verdict) before the ops before it are judged. */
  for (size_t k = j->held_n; k-- > 0;) {
    unsigned char *st = state_at(j, k);
    if (*st != V_WAIT) continue;
    struct ins_record *r = held_at(j, k);
    *st = (unsigned char)judge_record(j, r, final);
    if (*st != V_WAIT) remember_verdict(j, r, *st == V_RIGHT);
  }
  /* Out in arrival order; held INS_JUDGE_HOLD_MAX, the oldest with what is known. */
  while (j->held_n) {
    struct ins_record *r = held_at(j, 0);
    unsigned char *st = state_at(j, 0);
    if (*st == V_WAIT && j->held_n >= INS_JUDGE_HOLD_MAX) *st = (unsigned char)judge_record(j, r, true);
    if (*st == V_WAIT) break;
    decide(j, r, (enum verdict)*st, emit, arg);
    j->held_head = (j->held_head + 1) % j->held_cap;
    j->held_n--;
  }
  bound_pending(j, final, emit, arg);
}

void ins_judge_take(struct ins_judge *j, struct ins_record *r, ins_judge_emit_fn emit, void *arg) {
  if (r->timing == INS_TIMING_SHADOW) {
    /* a quiet op's channels, published in a backlog: remembered, never emitted or held */
    alloc_window(j);
    note(j, r);
    return;
  }
  if (!j->recent && r->timing == INS_TIMING_KERNEL_GPU && !ins_judge_clear_alone(r)) {
    /* the first record that needs the others: remember ops from now on (without memory,
     * it and the like are unverified) */
    alloc_window(j);
  }
  note(j, r);
  /* Decided at once only when it needs no other record: the others of its span may be
   * in the other ring, drained after this one (the drain calls settle when both are). */
  if (!j->held_n && (r->timing != INS_TIMING_KERNEL_GPU || ins_judge_clear_alone(r))) {
    decide(j, r, V_RIGHT, emit, arg);
    return;
  }
  /* full: the oldest is decided with what is known (ins_judge_settle), to make room */
  if (j->held_n >= INS_JUDGE_HOLD_MAX) ins_judge_settle(j, false, emit, arg);
  if (!hold(j, r, ins_record_size(r, j->verbose)))
    decide(j, r, judge_record(j, r, true), emit, arg); /* no memory to wait: with what is known */
}
