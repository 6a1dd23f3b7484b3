/*
 * judge.c - can a record's timestamps be a later op's? (see judge.h)
 */
#include "core/judge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

/* What the judge remembers of an op: enough to count its works per channel. */
struct ins_judge_op {
  uint64_t mask;  /* channels it used */
  uint32_t idx;   /* its op_idx (the slot is idx % window: tells a stale slot) */
  uint32_t group;
  int32_t peer;
  uint8_t kind;
  uint8_t seen;   /* a record of it arrived */
};

_Static_assert((INS_JUDGE_WINDOW & (INS_JUDGE_WINDOW - 1)) == 0, "a power of two");
_Static_assert(INS_JUDGE_WINDOW > INS_NCCL_PROFILER_SLOTS + INS_JUDGE_SETTLE, "room for a span");

void ins_judge_init(struct ins_judge *j, bool verbose, bool emit_unverified) {
  memset(j, 0, sizeof *j);
  j->verbose = verbose;
  j->emit_unverified = emit_unverified;
  j->slot = (INS_RECORD_MAX(verbose) + 15) & ~(size_t)15;
}

void ins_judge_free(struct ins_judge *j) {
  free(j->recent);
  free(j->held);
  j->recent = NULL;
  j->held = NULL;
  j->held_n = j->held_cap = 0;
}

static uint32_t span_of(const struct ins_record *r) {
  return (uint32_t)r->group_before + r->issued_after;
}

bool ins_judge_clear_alone(const struct ins_record *r) {
  uint32_t span = span_of(r);
  return (r->lag > span ? r->lag : span) <= INS_NCCL_PROFILER_SLOTS;
}

/* The first op of the record's span, and one past its last. */
static uint32_t span_lo(const struct ins_record *r) { return r->op_idx - r->group_before; }
static uint32_t span_hi(const struct ins_record *r) { return r->op_idx + r->issued_after; }

/* a is after b, in op_idx order (modulo 2^32: spans are far shorter) */
static bool after(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

static void note(struct ins_judge *j, const struct ins_record *r) {
  if (!j->seen_any || after(r->op_idx, j->newest)) j->newest = r->op_idx;
  j->seen_any = true;
  if (!j->recent) return;
  struct ins_judge_op *o = &j->recent[r->op_idx & (INS_JUDGE_WINDOW - 1)];
  *o = (struct ins_judge_op){r->chan_mask, r->op_idx, r->group, r->peer, r->kind, 1};
}

static const struct ins_judge_op *remembered(const struct ins_judge *j, uint32_t idx) {
  const struct ins_judge_op *o = &j->recent[idx & (INS_JUDGE_WINDOW - 1)];
  return o->seen && o->idx == idx ? o : NULL;
}

/* Can the record be decided now? Its span's records have all come, or an op well past
 * the span has (the rest will never come), or this is the last drain. */
static bool ready(const struct ins_judge *j, const struct ins_record *r, bool final) {
  if (final || ins_judge_clear_alone(r) || r->timing != INS_TIMING_KERNEL_GPU || !j->recent ||
      span_of(r) > INS_JUDGE_WINDOW - INS_JUDGE_SETTLE)
    return true;
  if (j->seen_any && !after(span_hi(r) + INS_JUDGE_SETTLE, j->newest)) return true;
  for (uint32_t i = span_lo(r); i != span_hi(r); i++)
    if (!remembered(j, i)) return false;
  return true;
}

/* Per channel of the record: the works its span put there, at most. True when no
 * channel had more than INS_NCCL_PROFILER_SLOTS. */
static bool clear_by_channel(const struct ins_judge *j, const struct ins_record *r) {
  uint32_t lo = span_lo(r), hi = span_hi(r), span = span_of(r);
  /* API calls that made no op: NCCL may still have run work for them, on any channel */
  uint32_t works[INS_MAX_CHANNELS];
  uint32_t base = r->lag > span ? r->lag - span : 0;
  for (int c = 0; c < INS_MAX_CHANNELS; c++) works[c] = base;
  for (uint32_t i = lo; i != hi; i++) {
    const struct ins_judge_op *o = remembered(j, i);
    uint64_t m = o ? o->mask : ~0ull; /* no record: it may have used any channel */
    if (o && o->kind == INS_KIND_P2P) {
      /* a Send and a Recv of one group with one peer are one work on a channel; the
       * ops of a group are consecutive in op_idx */
      for (uint32_t k = i - 1; k != lo - 1; k--) {
        const struct ins_judge_op *p = remembered(j, k);
        if (!p || p->group != o->group) break;
        if (p->kind == INS_KIND_P2P && p->peer == o->peer) m &= ~p->mask;
      }
    }
    for (m &= r->chan_mask; m; m &= m - 1) works[__builtin_ctzll(m)]++;
  }
  for (uint64_t m = r->chan_mask; m; m &= m - 1)
    if (works[__builtin_ctzll(m)] > INS_NCCL_PROFILER_SLOTS) return false;
  return true;
}

/* Decide one record: out to emit, or counted as unverified. */
static void decide(struct ins_judge *j, struct ins_record *r, ins_judge_emit_fn emit, void *arg) {
  if (r->timing == INS_TIMING_KERNEL_GPU && !ins_judge_clear_alone(r)) {
    if (!j->recent || span_of(r) > INS_JUDGE_WINDOW - INS_JUDGE_SETTLE || !clear_by_channel(j, r)) {
      j->unverified[r->kind & 1]++;
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

/* Keep a copy at the FIFO's end; false without memory. */
static bool hold(struct ins_judge *j, const struct ins_record *r, size_t size) {
  assert(size <= j->slot);
  if (j->held_n == j->held_cap) {
    size_t cap = j->held_cap ? 2 * j->held_cap : 64;
    unsigned char *p = malloc(cap * j->slot);
    if (!p) return false;
    for (size_t k = 0; k < j->held_n; k++) memcpy(p + k * j->slot, held_at(j, k), j->slot);
    free(j->held);
    j->held = p, j->held_cap = cap, j->held_head = 0;
  }
  memcpy(held_at(j, j->held_n), r, size);
  j->held_n++;
  return true;
}

void ins_judge_settle(struct ins_judge *j, bool final, ins_judge_emit_fn emit, void *arg) {
  while (j->held_n) {
    struct ins_record *r = held_at(j, 0);
    if (!ready(j, r, final || j->held_n > INS_JUDGE_HOLD_MAX)) break;
    decide(j, r, emit, arg);
    j->held_head = (j->held_head + 1) % j->held_cap;
    j->held_n--;
  }
}

void ins_judge_take(struct ins_judge *j, struct ins_record *r, ins_judge_emit_fn emit, void *arg) {
  if (!j->recent && r->timing == INS_TIMING_KERNEL_GPU && !ins_judge_clear_alone(r)) {
    /* the first record that needs the others: remember ops from now on (without memory,
     * it and the like are unverified) */
    j->recent = calloc(INS_JUDGE_WINDOW, sizeof *j->recent);
  }
  note(j, r);
  /* Decided at once only when it needs no other record: the others of its span may be
   * in the other ring, drained after this one (the drain calls settle when both are). */
  if (!j->held_n && (r->timing != INS_TIMING_KERNEL_GPU || ins_judge_clear_alone(r))) {
    decide(j, r, emit, arg);
    return;
  }
  if (!hold(j, r, ins_record_size(r, j->verbose))) {
    decide(j, r, emit, arg); /* no memory to wait: with what is known */
    return;
  }
  if (j->held_n > INS_JUDGE_HOLD_MAX) ins_judge_settle(j, false, emit, arg);
}
