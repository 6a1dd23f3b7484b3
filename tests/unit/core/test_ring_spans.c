/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring_spans.c - the rings' positions at their edges (src/core/ring.c, "Spans"): a cell
 * holds a record when its sequence word is its position + 1, and a segment is handed from
 * ring to ring without clearing, so no two rings may ever use the same position. Driven
 * straight to the edges: the next span set through the test hook (ins_ring_test_spans), a
 * ring's positions set near its span's end before any producer runs.
 *   wrap         a ring made where the old bases (2^40 apart) wrapped, after 2^24 rings,
 *                while the first ring is live and its old segment waits in the pool: the
 *                new ring's first cell, reserved and not committed, is no record
 *   span_end     a ring at the end of its span: reservations stop there (counted full)
 *                while it holds records; drained, a trim moves it to a new span, whose
 *                positions no other ring had, and records flow again. The old layout let it
 *                run into the next ring's positions and read that ring's stale cell
 *   last_span    the last span: its ring works to its end without wrapping 2^64, a ring
 *                after it is refused (-2), and a communicator then is not tracked, with
 *                one warning
 *   moves        spans of 1,024 positions: two producers and a consumer that trims after
 *                each drain, so the ring moves hundreds of times under load: every value
 *                arrives once, in order per producer (TSan: the order tail, end, head)
 * One case per process (the span count is the process's): inspector-unit-ring_spans
 * --list | --case NAME.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/ring.h"
#include "core/seg.h"

/* ring.c's test hook (inspector_core is built with INS_TEST_HOOKS where the tests are) */
void ins_ring_test_spans(unsigned shift, uint64_t next);
void ins_ring_test_place(struct ins_ring *r, uint64_t p);

/* Push one value (reserve, fill, commit); false when the ring says full. */
static bool push(struct ins_ring *r, uint64_t v) {
  uint64_t pos;
  uint64_t *p = ins_ring_reserve(r, &pos);
  if (!p) return false;
  *p = v;
  ins_ring_commit(r, p, pos);
  return true;
}

/* Take every value out; how many (their sum into *sum). */
static int drain(struct ins_ring *r, uint64_t *sum) {
  int n = 0;
  for (uint64_t *p; (p = ins_ring_peek(r)); n++) {
    if (sum) *sum += *p;
    ins_ring_release(r, p);
  }
  return n;
}

static uint64_t head_of(struct ins_ring *r) { return atomic_load(&r->head); }

/* A ring's positions moved to p (no producer has run: the test's own edge). */
static void place(struct ins_ring *r, uint64_t p) { ins_ring_test_place(r, p); }

#define CAP 4 /* 4 cells of 8 bytes: one segment of 4 cells (ring.c: at most the ring) */

static void case_wrap(void) {
  CHECK(ins_seg_setup(64u << 20) == 0);
  struct ins_ring a, c;
  CHECK(ins_ring_init(&a, CAP, sizeof(uint64_t)) == 0);
  for (int i = 0; i < CAP; i++) CHECK(push(&a, 100 + (uint64_t)i));
  CHECK_EQ_U(drain(&a, NULL), CAP); /* its segment back to the pool, its cells as they were */
  /* the old bases were k << 40, k counting rings: k + 2^24 gave ring k's base again */
  ins_ring_test_spans(0, (a.head >> 40) + (1ull << 24));
  CHECK(ins_ring_init(&c, CAP, sizeof(uint64_t)) == 0);
  uint64_t pos;
  uint64_t *p = ins_ring_reserve(&c, &pos); /* takes the segment a gave back */
  CHECK(p != NULL);
  if (!p) return;
  CHECK(ins_ring_peek(&c) == NULL); /* reserved, not committed: no record */
  *p = 7;
  ins_ring_commit(&c, p, pos);
  uint64_t *q = ins_ring_peek(&c);
  CHECK(q == p && q && *q == 7);
  if (q) ins_ring_release(&c, q);
  CHECK(ins_ring_peek(&c) == NULL);
  /* the two rings' positions are apart by more than either uses */
  uint64_t d = c.head > a.head ? c.head - a.head : a.head - c.head;
  CHECK(d >= (1ull << 32));
  ins_ring_free(&a);
  ins_ring_free(&c);
}

static void case_span_end(void) {
  CHECK(ins_seg_setup(64u << 20) == 0);
  struct ins_ring a, b;
  CHECK(ins_ring_init(&a, CAP, sizeof(uint64_t)) == 0);
  CHECK(ins_ring_init(&b, CAP, sizeof(uint64_t)) == 0);
  uint64_t end = head_of(&b); /* b's span follows a's: a's ends where b's starts */
  CHECK(end > head_of(&a));
  /* b's first cells, published and consumed: its segment waits in the pool */
  for (int i = 0; i < CAP; i++) CHECK(push(&b, 200 + (uint64_t)i));
  CHECK_EQ_U(drain(&b, NULL), CAP);

  place(&a, end - 2);
  uint64_t sum = 0;
  CHECK(push(&a, 1) && push(&a, 2)); /* the span's last two positions */
  CHECK(!push(&a, 3));               /* at the end: full, though the ring has room */
  ins_ring_trim(&a);                 /* not empty: it stays */
  CHECK(!push(&a, 3));
  CHECK_EQ_U(head_of(&a), end - 2);
  CHECK_EQ_U(drain(&a, &sum), 2);
  CHECK_EQ_U(sum, 3);
  CHECK(!push(&a, 3)); /* empty, not yet moved */
  ins_ring_trim(&a);   /* empty: to a new span */
  uint64_t moved = head_of(&a);
  CHECK(moved >= end + (1ull << 32)); /* past b's span (from end): no position of b's */
  uint64_t pos;
  uint64_t *p = ins_ring_reserve(&a, &pos);
  CHECK(p != NULL && pos == moved);
  if (!p) return;
  CHECK(ins_ring_peek(&a) == NULL); /* reserved, not committed: no record */
  *p = 9;
  ins_ring_commit(&a, p, pos);
  for (uint64_t v = 10; v < 10 + CAP - 1; v++) CHECK(push(&a, v));
  sum = 0;
  CHECK_EQ_U(drain(&a, &sum), CAP);
  CHECK_EQ_U(sum, 9 + 10 + 11 + 12);
  ins_ring_free(&a);
  ins_ring_free(&b);
}

static int g_warns;
static char g_warn[1024];
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != PROF_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_warn, sizeof g_warn, fmt, ap);
  va_end(ap);
  g_warns++;
}

static void case_last_span(void) {
  CHECK(ins_seg_setup(64u << 20) == 0);
  ins_log_set_logger(logger);
  /* spans of 2^32 from 1 to 2^32 - 2: the last ends 2^32 before 2^64 */
  ins_ring_test_spans(0, (1ull << 32) - 2);
  struct ins_ring d, e;
  CHECK(ins_ring_init(&d, CAP, sizeof(uint64_t)) == 0);
  CHECK_EQ_U(head_of(&d), 0ull - (2ull << 32));
  CHECK(ins_ring_init(&e, CAP, sizeof(uint64_t)) == -2); /* no span left: refused */
  uint64_t end = 0ull - (1ull << 32);
  place(&d, end - 3);
  uint64_t sum = 0;
  for (uint64_t v = 1; v <= 3; v++) CHECK(push(&d, v));
  CHECK(!push(&d, 4)); /* the end: no wrap past 2^64 */
  CHECK_EQ_U(drain(&d, &sum), 3);
  CHECK_EQ_U(sum, 6);
  ins_ring_trim(&d); /* no span to move to: it stays at its end, full */
  CHECK_EQ_U(head_of(&d), end);
  CHECK(!push(&d, 5));
  CHECK(ins_ring_peek(&d) == NULL);
  ins_ring_free(&d);
  /* a communicator now: not tracked, said once */
  static struct ins_config cfg;
  ins_config_load(&cfg);
  CHECK(ins_comm_create(&cfg, 0x1a57, "last", 1, 2, 0) == NULL);
  CHECK(ins_comm_create(&cfg, 0x1a58, "last", 1, 2, 0) == NULL);
  CHECK_EQ_U(g_warns, 1);
  CHECK(strstr(g_warn, "not tracked") && strstr(g_warn, "0x1a57"));
}

/* ---- moves under load ---- */

#define MOVE_SHIFT 10     /* spans of 1,024 positions */
#define MOVE_CAP 16
#define MOVE_N 50000      /* values per producer */
static struct ins_ring g_ring;
static _Atomic int g_spins;

static void *producer(void *arg) {
  uint64_t who = (uint64_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < MOVE_N; i++)
    while (!push(&g_ring, who << 32 | i)) { /* full, or at its span's end: wait, in a test */
      atomic_fetch_add_explicit(&g_spins, 1, memory_order_relaxed);
      sched_yield();
    }
  return NULL;
}

static void case_moves(void) {
  CHECK(ins_seg_setup(64u << 20) == 0);
  ins_ring_test_spans(MOVE_SHIFT, 1);
  CHECK(ins_ring_init(&g_ring, MOVE_CAP, sizeof(uint64_t)) == 0);
  pthread_t t[2];
  for (uintptr_t k = 0; k < 2; k++) pthread_create(&t[k], NULL, producer, (void *)k);
  uint64_t next[2] = {0, 0}, got = 0, bad = 0, moves = 0;
  uint64_t end = atomic_load(&g_ring.end);
  while (got < 2 * MOVE_N) {
    uint64_t *p;
    int n = 0;
    while ((p = ins_ring_peek(&g_ring))) {
      uint64_t v = *p, who = v >> 32;
      if (who > 1 || (v & 0xffffffffu) != next[who]) bad++;
      else next[who]++;
      ins_ring_release(&g_ring, p);
      got++, n++;
    }
    ins_ring_trim(&g_ring); /* as the dump thread, after each drain */
    uint64_t e = atomic_load(&g_ring.end);
    if (e != end) {
      moves++;
      if (e < end || e - end < (1u << MOVE_SHIFT)) bad++; /* always to a later span */
      end = e;
    }
    if (!n) sched_yield();
  }
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  CHECK_EQ_U(bad, 0);
  CHECK_EQ_U(next[0], MOVE_N);
  CHECK_EQ_U(next[1], MOVE_N);
  /* 100,000 values through spans of 1,024 (a move at half of each, at the earliest) */
  CHECK(moves >= 2 * MOVE_N / (1u << MOVE_SHIFT));
  printf("moves: %llu, producers' waits: %d\n", (unsigned long long)moves, atomic_load(&g_spins));
  ins_ring_free(&g_ring);
}

static const struct proc_case g_cases[] = {
    {"wrap", case_wrap},
    {"span_end", case_span_end},
    {"last_span", case_last_span},
    {"moves", case_moves, "threads"},
};

int main(int argc, char **argv) {
  return run_one_case(argc, argv, g_cases, sizeof g_cases / sizeof *g_cases);
}
