/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hang.c - hang detection's checks, per communicator context (see hang.h). On the dump
 * thread (or the thread draining the context), with the context's drain lock held: the
 * state below is the lock holder's.
 */
#include "sink/hang.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/comm.h"
#include "core/inflight.h"
#include "core/log.h"

uint64_t (*ins_hang_test_clock)(void);

uint64_t ins_hang_now(void) { return ins_hang_test_clock ? ins_hang_test_clock() : ins_mono_ns(); }

/* A check's note: `issued` ops had been issued at time t. */
struct note {
  uint64_t issued, t;
};

/* A stuck op said: its issue, when first seen, when last said, and what its resolution's
 * line names. */
struct said {
  uint64_t issue, first_seen, last_line;
  uint32_t repeat;
  int32_t peer;
  uint8_t kind;
  const char *func;
  uint64_t sn;
};

struct ins_hang_comm {
  /* notes[0 .. nnotes-1]: `issued` and t increasing; the first with issued > i tells when op
   * i was first seen. noted: `issued` of the last note taken (0: none). */
  struct note notes[INS_HANG_NOTES];
  int nnotes;
  uint64_t noted;
  /* No op issued before it is in flight, as far as the slots say (core/inflight.h). */
  uint64_t scan_from;
  struct said said[INS_HANG_SAID];
  int nsaid;
  /* The newest op completed (its record taken): by op_idx, and the newest application group
   * of an op with kernel channels completed. */
  bool last_known, kgroup_known;
  uint32_t last_idx, kgroup;
  struct ins_sink_last last;
  /* Idle: since when nothing was in flight with `idle_issued` issued (0: not idle), and
   * when that was last said (0: not yet). */
  uint64_t idle_since, idle_issued, idle_said;
};

static atomic_int g_warned_mem;

static struct ins_hang_comm *state(struct ins_hang_comm **h) {
  if (!*h && !(*h = calloc(1, sizeof **h)))
    ins_warn_once(&g_warned_mem, "out of memory for hang detection: some communicators are not "
                  "checked for ops in flight (NCCL_INSPECTOR_HANG_SECONDS)");
  return *h;
}

void ins_hang_free(struct ins_hang_comm *h) { free(h); }

bool ins_hang_note(struct ins_hang_comm **hp, const struct ins_record *r, uint64_t end_ns) {
  struct ins_hang_comm *h = state(hp);
  if (!h) return false;
  /* op_idx counts mod 2^32: newer is a positive difference */
  if (!h->last_known || (int32_t)(r->op_idx - h->last_idx) > 0) {
    h->last_known = true;
    h->last_idx = r->op_idx;
    h->last = (struct ins_sink_last){r->kind, r->func_name, r->sn, end_ns};
  }
  if (r->nchannels && r->timing != INS_TIMING_COLLECTIVE_CPU &&
      (!h->kgroup_known || (int32_t)(r->group - h->kgroup) > 0)) {
    h->kgroup_known = true;
    h->kgroup = r->group;
  }
  return true;
}

/* ---- the notes --------------------------------------------------------------- */

/* A note of this check, if ops were issued since the last. Full: every other note goes,
 * the first and the last kept (hang.h: times only ever understated). */
static void take_note(struct ins_hang_comm *h, uint64_t issued, uint64_t now) {
  if (issued == h->noted) return;
  h->noted = issued;
  if (h->nnotes == INS_HANG_NOTES) {
    int j = 1;
    for (int k = 2; k < INS_HANG_NOTES - 1; k += 2) h->notes[j++] = h->notes[k];
    h->notes[j++] = h->notes[INS_HANG_NOTES - 1];
    h->nnotes = j;
  }
  h->notes[h->nnotes++] = (struct note){issued, now};
}

/* Notes no op in flight needs any more: those that noted no more issued than the oldest. */
static void drop_notes(struct ins_hang_comm *h) {
  int k = 0;
  while (k < h->nnotes && h->notes[k].issued <= h->scan_from) k++;
  if (!k) return;
  memmove(h->notes, h->notes + k, (size_t)(h->nnotes - k) * sizeof *h->notes);
  h->nnotes -= k;
}

/* When op `issue` was first seen in flight: the first note from *k on with more issued
 * (*k moves to it: asked for ops in issue order, the search goes on where it was). Every op
 * in flight has one: a note is taken before this is asked, with every op issued so far. */
static uint64_t first_seen(const struct ins_hang_comm *h, uint64_t issue, int *k) {
  while (*k < h->nnotes - 1 && h->notes[*k].issued <= issue) ++*k;
  return h->nnotes ? h->notes[*k].t : 0;
}

static uint64_t age(uint64_t now, uint64_t t) { return now > t ? now - t : 0; }

/* ---- the ops in flight --------------------------------------------------------- */

/* Moves scan_from past the ops no longer in flight; returns how many are. At most
 * INS_INFLIGHT_SLOTS slots are looked at: an op issued that many before the last cannot be
 * found (its slot is a newer op's). */
static uint64_t scan(struct ins_hang_comm *h, const struct ins_comm *c, uint64_t issued) {
  if (issued - h->scan_from > INS_INFLIGHT_SLOTS) h->scan_from = issued - INS_INFLIGHT_SLOTS;
  while (h->scan_from < issued && !ins_inflight_present(c, h->scan_from)) h->scan_from++;
  uint64_t n = 0;
  for (uint64_t i = h->scan_from; i < issued; i++) n += ins_inflight_present(c, i);
  return n;
}

/* Whether the GPU is shown to be past the op (hang.h, "Stuck"). */
static bool gpu_past(const struct ins_hang_comm *h, const struct ins_inflight_op *op) {
  if (op->channels_started > 0 && op->channels_stopped == op->channels_started) return true;
  return h->kgroup_known && (int32_t)(h->kgroup - op->group) > 0;
}

/* op, read now, as still stuck: in flight and the GPU not past it. */
static bool still_stuck(const struct ins_hang_comm *h, const struct ins_comm *c, uint64_t issue,
                        struct ins_inflight_op *op) {
  return ins_inflight_read(c, issue, op) && !gpu_past(h, op);
}

static struct ins_sink_op sink_op(const struct ins_inflight_op *op) {
  return (struct ins_sink_op){op->kind, op->func_name, op->datatype, op->sn, op->peer, op->bytes,
                              op->count};
}

/* ---- the check ------------------------------------------------------------------ */

struct check {
  struct ins_hang_comm *h;
  const struct ins_comm *c;
  uint64_t now, wall_us, threshold, in_flight;
  const struct ins_hang_io *io;
};

static double secs(uint64_t ns) { return (double)ns / 1e9; }

static void say_stuck(struct check *k, struct said *s, const struct ins_inflight_op *op) {
  struct ins_hang_comm *h = k->h;
  uint64_t a = age(k->now, s->first_seen);
  struct ins_sink_hang l = {
      .what = INS_HANG_STUCK, .wall_us = k->wall_us, .op = sink_op(op), .in_flight_s = secs(a),
      .first_seen_us = k->wall_us > a / 1000 ? k->wall_us - a / 1000 : 0,
      .channels_started = op->channels_started, .channels_stopped = op->channels_stopped,
      .ops_in_flight = k->in_flight, .repeat = s->repeat, .last = h->last_known ? &h->last : NULL};
  k->io->say(k->io->arg, &l);
  s->last_line = k->now;
}

/* The ops said stuck: each still stuck is said again when a threshold has passed since its
 * last line; the others are resolved (said so, and forgotten). */
static void follow_said(struct check *k) {
  struct ins_hang_comm *h = k->h;
  int kept = 0;
  for (int i = 0; i < h->nsaid; i++) {
    struct said *s = &h->said[i];
    struct ins_inflight_op op;
    if (still_stuck(h, k->c, s->issue, &op)) {
      if (age(k->now, s->last_line) >= k->threshold) {
        s->repeat++;
        say_stuck(k, s, &op);
      }
      h->said[kept++] = *s;
      continue;
    }
    struct ins_sink_hang l = {.what = INS_HANG_RESOLVED, .wall_us = k->wall_us,
                              .op = {.kind = s->kind, .func = s->func, .sn = s->sn, .peer = s->peer},
                              .in_flight_s = secs(age(k->now, s->first_seen))};
    k->io->say(k->io->arg, &l);
  }
  h->nsaid = kept;
}

static bool is_said(const struct ins_hang_comm *h, uint64_t issue) {
  for (int i = 0; i < h->nsaid; i++)
    if (h->said[i].issue == issue) return true;
  return false;
}

/* The ops in flight past the threshold, oldest first (the first issued: first_seen grows
 * with the issue): each stuck one not said yet is said now, while there is room to follow
 * it (the others at a later check, as room frees). Returns the age of the oldest stuck one,
 * or, with none, of the oldest op in flight under the threshold (0: none): what the gauge
 * shows (an op the GPU is past is no news). */
static uint64_t find_stuck(struct check *k, uint64_t issued) {
  struct ins_hang_comm *h = k->h;
  uint64_t oldest = 0;
  int at = 0;
  for (uint64_t i = h->scan_from; i < issued; i++) {
    if (!ins_inflight_present(k->c, i)) continue;
    uint64_t seen = first_seen(h, i, &at), a = age(k->now, seen);
    if (a < k->threshold) return oldest ? oldest : a;
    struct ins_inflight_op op;
    if (!still_stuck(h, k->c, i, &op)) continue;
    if (!oldest) oldest = a;
    if (!is_said(h, i) && h->nsaid < INS_HANG_SAID) {
      struct said *s = &h->said[h->nsaid++];
      *s = (struct said){.issue = i, .first_seen = seen, .peer = op.peer, .kind = op.kind,
                         .func = op.func_name, .sn = op.sn};
      say_stuck(k, s, &op);
    }
  }
  return oldest;
}

/* Idle (hang.h): nothing in flight and nothing issued since idle_since, for the threshold. */
static bool idle_due(struct ins_hang_comm *h, uint64_t issued, uint64_t in_flight, uint64_t now,
                     uint64_t threshold) {
  if (in_flight || !issued) {
    h->idle_since = 0;
    return false;
  }
  if (!h->idle_since || h->idle_issued != issued) {
    h->idle_since = now;
    h->idle_issued = issued;
    h->idle_said = 0;
  }
  return age(now, h->idle_since) >= threshold && (!h->idle_said || age(now, h->idle_said) >= threshold);
}

void ins_hang_check(struct ins_hang_comm **hp, const struct ins_comm *c, uint64_t now,
                    uint64_t wall_us, uint64_t threshold, const struct ins_hang_io *io) {
  uint64_t issued = ins_inflight_issued(c);
  struct ins_hang_comm *h = issued ? state(hp) : *hp;
  if (!h) { /* nothing issued yet (or no memory): nothing in flight to tell */
    io->gauge(io->arg, &(struct ins_sink_inflight){0, 0});
    return;
  }
  take_note(h, issued, now);
  uint64_t in_flight = scan(h, c, issued);
  drop_notes(h);
  int at = 0;
  uint64_t oldest = in_flight ? age(now, first_seen(h, h->scan_from, &at)) : 0;
  bool idle = idle_due(h, issued, in_flight, now, threshold);
  if (!idle && !h->nsaid && oldest < threshold) { /* nothing to say: the common case */
    io->gauge(io->arg, &(struct ins_sink_inflight){in_flight, secs(oldest)});
    return;
  }
  io->drain(io->arg); /* the newest completed op, and the evidence, fresh (hang.h) */
  struct check k = {h, c, now, wall_us, threshold, in_flight, io};
  follow_said(&k);
  if (in_flight) oldest = find_stuck(&k, issued);
  io->gauge(io->arg, &(struct ins_sink_inflight){in_flight, secs(oldest)});
  if (idle) {
    struct ins_sink_hang l = {.what = INS_HANG_IDLE, .wall_us = wall_us,
                              .idle_s = secs(age(now, h->idle_since)),
                              .last = h->last_known ? &h->last : NULL};
    io->say(io->arg, &l);
    h->idle_said = now;
  }
}
