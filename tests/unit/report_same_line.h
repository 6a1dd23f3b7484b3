/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_same_line.h - field-by-field equality of two parsed log lines (tools/report/parse.h),
 * shared by the scanner's unit test (tests/unit/report/test_report_scan.c) and its fuzz target
 * (tests/fuzz/fuzz_report.c): the fast scanner and the jansson reference must agree exactly.
 */
#ifndef REPORT_SAME_LINE_H
#define REPORT_SAME_LINE_H

#include <stdbool.h>
#include <string.h>

#include "parse.h"

static bool same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool same_opref(const struct rpt_opref *a, const struct rpt_opref *b) {
  return a->present == b->present && a->p2p == b->p2p && !memcmp(a->op, b->op, sizeof a->op) && a->sn == b->sn &&
         a->end_ns == b->end_ns;
}

/* The hang, hang_resolved and comm_idle lines' fields. */
static bool same_hang(const struct rpt_hang_line *a, const struct rpt_hang_line *b) {
  return same_opref(&a->op, &b->op) && a->peer == b->peer && a->bytes == b->bytes &&
         same_double(a->in_flight_s, b->in_flight_s) && a->first_seen_us == b->first_seen_us &&
         a->kernel_started == b->kernel_started && a->channels_started == b->channels_started &&
         a->channels_stopped == b->channels_stopped && a->ops_in_flight == b->ops_in_flight &&
         a->repeat == b->repeat && same_double(a->idle_s, b->idle_s) && same_opref(&a->last, &b->last);
}

/* Every field of a and b (the char arrays whole: both are zero-padded). */
static bool same_line(const struct rpt_line *a, const struct rpt_line *b) {
  const struct rpt_header *h = &a->hdr, *g = &b->hdr;
  const struct rpt_record *r = &a->rec, *q = &b->rec;
  const struct rpt_stats *s = &a->stats, *t = &b->stats;
  return a->kind == b->kind && !memcmp(a->why, b->why, sizeof a->why) &&
         h->comm == g->comm && h->rank == g->rank && h->nranks == g->nranks &&
         h->nnodes == g->nnodes && !memcmp(h->name, g->name, sizeof h->name) &&
         !memcmp(h->host, g->host, sizeof h->host) && h->pid == g->pid &&
         h->dump_us == g->dump_us &&
         r->comm == q->comm && r->sn == q->sn && r->bytes == q->bytes &&
         r->exec_ns == q->exec_ns && r->start_ns == q->start_ns && r->rank == q->rank &&
         r->p2p == q->p2p && r->peer == q->peer && r->nchannels == q->nchannels &&
         r->stale_channels == q->stale_channels && r->stale == q->stale &&
         r->timing == q->timing && same_double(r->busbw, q->busbw) &&
         same_double(r->algbw, q->algbw) && !memcmp(r->op, q->op, sizeof r->op) &&
         !memcmp(r->algo, q->algo, sizeof r->algo) &&
         !memcmp(r->proto, q->proto, sizeof r->proto) &&
         !memcmp(s->written, t->written, sizeof s->written) &&
         !memcmp(s->dropped, t->dropped, sizeof s->dropped) &&
         s->sampling.present == t->sampling.present &&
         s->sampling.time_mode == t->sampling.time_mode && s->sampling.a == t->sampling.a &&
         s->sampling.b == t->sampling.b && same_double(s->sampling.covered, t->sampling.covered) &&
         same_hang(&a->hang, &b->hang);
}

#endif /* REPORT_SAME_LINE_H */
