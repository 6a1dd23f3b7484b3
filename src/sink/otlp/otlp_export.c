/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_export.c - the OTLP exporter (see otlp_export.h): its thread, its
 * queue, the delivery rules applied (retry or drop, when to try again), gzip
 * (zlib, loaded at run time through io/dynlib.h), and every message the
 * exporter writes. The wire is src/net/'s (net/http.h),
 * the spec's rules for an answer otlp_rules.c's.
 *
 * One thread per exporter owns everything that moves: the queue, the
 * connection, the backoff state. Nothing is shared with other threads but the
 * drop counter (atomic), stop's deadline (atomic) and the descriptor stop
 * writes to wake it; so there is no lock, and NCCL's threads and the dump
 * thread never meet the network (the sink's collect callback runs here too).
 *
 * Delivery follows OTLP/HTTP (https://opentelemetry.io/docs/specs/otlp/): a
 * 2xx is delivered (a partial success too: never retried); 429, 502, 503,
 * 504 and no answer at all (refused, reset, timed out) are retried, after
 * ins_otlp_retry_delay_ms (otlp_rules.h: backoff from 1 s doubling to 30 s,
 * full jitter, never before a Retry-After); any other status drops the body.
 * One body is in flight at a time, the head of the queue: bodies are sent in
 * the order the sink made them.
 *
 * The queue is one batch from the sink, and nothing is ever dropped from it to
 * make room: collect is called only when the queue is empty, for at most
 * queue_max bodies (a ring of queue_max slots allocated at start: memory stays
 * at queue_max bodies whatever the number of series). The sink's bodies are
 * turns of a round-robin over its series (ins_otlp_collect_fn): a turn holds
 * every series once, in as many bodies as it takes (thousands of
 * communicators: tens of bodies), taken a queueful at a time. A new turn is
 * due every interval; it starts once the turn before it has been made whole
 * and its bodies are out of the queue. So a collector slower than the interval
 * gets turns back to back, and what it costs is staleness: a body's values are
 * those of its making, at most a queueful of deliveries earlier, and a later
 * body of a series supersedes the earlier (cumulative values). It never costs
 * a series: bodies go in the order made and none is dropped for room, so from
 * any moment every series reaches a collector that accepts bodies at any
 * positive rate within two turns of bodies (the rest of the turn in progress,
 * then the next: 2 x ceil(series / series per body)), or with the next
 * interval's turn when it keeps up.
 *
 * The roads not taken. Until issue 32 each interval asked for a queueful and a
 * full queue dropped its oldest bodies, to keep the newest: but those held
 * the series of the same turn not yet delivered, and the turn went on past
 * them, so with a collector slower than the interval the same series were
 * dropped every turn and never arrived (178 of 300 in a minute at 200 ms).
 * Re-making the waiting bodies every interval from the oldest undelivered
 * series would keep their values fresher while the collector is away, at the
 * price of encoding a queueful per interval (up to 64 MiB, the sink's lock
 * taken per body) for a collector that takes none: the job's machine pays,
 * for nothing. As it is, a collector away for an hour costs one queueful of
 * encoding; back, it first gets that queueful (values of when it left), then
 * the turns go on with the newest values. Who waits on whom is unchanged:
 * collect takes the sink's lock a body at a time (otlp.c), and there are fewer
 * collects than before, never more, so the dump thread meets that lock less.
 *
 * Rejected bodies (a status other than 2xx that is not retried) and bodies
 * the sink could not make are dropped and counted; their series come again in
 * the next turn.
 *
 * Stop: the bodies waiting go first (they hold the series undelivered
 * longest, with the values of their making), then one last turn (fresh), which
 * the sink begins where its making stopped and wraps round: every series once,
 * those delivered longest ago first, the ones just sent last, with their final
 * values; all within stop's deadline.
 *
 * Messages, because thousands of ranks may log the same thing: one warning
 * when delivery starts failing (with the reason), one INFO when it works
 * again (with what was dropped meanwhile), never one per attempt; a
 * rejected body (a non-retryable status) warns once per status; a partial
 * success is logged once; a summary at stop when anything was lost. They show
 * the endpoint only as ins_otlp_url_redact does, the collector's own text only
 * as core/redact.h's ins_redact_text does (a collector may echo the headers we
 * sent: their words are withheld), Retry-After as the delay read from it, and
 * never a header.
 *
 * A delivered body is handed back to the sink (`delivered`, with what it held),
 * so that the sink can say at exit which series never reached the collector.
 *
 * Fork: the child of a fork has none of our threads, and its copy of the
 * exporter is whatever the thread was in the middle of: it must never be
 * used. Nothing runs it (no thread), and stop() in a child only closes the
 * wake descriptor and returns; it neither joins, nor frees what the vanished
 * thread may have been changing, nor touches libcurl (whose cleanup would
 * write a TLS close_notify into the parent's connection). As in
 * abi/lifecycle.c, the child is told by its pid. Sockets are close-on-exec.
 */
#include "sink/otlp/otlp_export.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/redact.h"
#include "io/dynlib.h"
#include "net/http.h"
#include "net/httpdate.h"
#include "net/url.h"
#include "sink/otlp/otlp_config.h" /* ins_otlp_url_redact */
#include "sink/otlp/otlp_rules.h"

struct ins_otlp_test_hooks ins_otlp_test_hooks;

/* ============================================================================
 * zlib, loaded at run time
 * ========================================================================= */

/* zlib's functions, typed by its own header (<zlib.h>, compiled against, never linked:
 * INS_DYNLIB_SYM refuses a pointer of another type). */
static struct {
  __typeof__(deflateInit2_) *deflate_init2;
  __typeof__(deflate) *deflate;
  __typeof__(deflateReset) *deflate_reset;
  __typeof__(deflateEnd) *deflate_end;
  __typeof__(deflateBound) *deflate_bound;
  __typeof__(zlibCompileFlags) *compile_flags;
} g_z;
static struct ins_dynlib g_z_lib = INS_DYNLIB_INIT;

/* windowBits 15 (32 KiB, the most) + 16: a gzip wrapper instead of zlib's (deflateInit2
 * in the manual); Content-Encoding: gzip names exactly that format. */
#define GZIP_WINDOW_BITS 31
#define GZIP_MEM_LEVEL 8 /* zlib's default */
/* zlib's default level (6), as the OpenTelemetry SDKs use: a metrics body of a few
 * hundred KB compresses in a few ms, on this thread only, once per interval. */
#define GZIP_LEVEL Z_DEFAULT_COMPRESSION

/* zlibCompileFlags(): two bits per type size, 0: 16 bits, 1: 32, 2: 64, 3: other. */
static bool zlib_size_is(uLong flags, int shift, size_t bytes) {
  static const size_t sizes[4] = {2, 4, 8, 0};
  return sizes[(flags >> shift) & 3] == bytes;
}

/* Loads zlib once per process (io/dynlib.h: it stays loaded, RTLD_NODELETE, like
 * libcurl). The zlib found at run time is the job machine's, not the one whose header we
 * were compiled against, so how it was built is checked, twice: here zlibCompileFlags
 * gives the width of its uInt, uLong and pointers one by one, and deflateInit2_ (at
 * start) compares its major version and its sizeof(z_stream) with ours and refuses
 * (Z_VERSION_ERROR) when they differ. The second alone would pass a zlib built with other
 * types whose z_stream is as large in all; both cost nothing, once. */
static bool zlib_load(char *why, size_t whylen) {
  static const struct ins_dynlib_sym syms[] = {
      INS_DYNLIB_SYM(deflateInit2_, g_z.deflate_init2),
      INS_DYNLIB_SYM(deflate, g_z.deflate),
      INS_DYNLIB_SYM(deflateReset, g_z.deflate_reset),
      INS_DYNLIB_SYM(deflateEnd, g_z.deflate_end),
      INS_DYNLIB_SYM(deflateBound, g_z.deflate_bound),
      INS_DYNLIB_SYM(zlibCompileFlags, g_z.compile_flags),
  };
  const char *lib = ins_otlp_test_hooks.zlib_lib ? ins_otlp_test_hooks.zlib_lib : INS_OTLP_ZLIB_LIB;
  if (ins_dynlib_load(&g_z_lib, lib, syms, sizeof syms / sizeof *syms, why, whylen) != INS_DYNLIB_LOADED)
    return false;
  uLong f = g_z.compile_flags();
  if (!zlib_size_is(f, 0, sizeof(uInt)) || !zlib_size_is(f, 2, sizeof(uLong)) ||
      !zlib_size_is(f, 4, sizeof(voidpf))) {
    snprintf(why, whylen, "%s was built with other type sizes (zlibCompileFlags 0x%lx)", lib, f);
    return false;
  }
  return true;
}

/* ============================================================================
 * The exporter
 * ========================================================================= */

struct queued {
  struct ins_buf body;
  bool gzip;
  struct ins_otlp_held held; /* handed back to `delivered` */
};

struct ins_otlp_exporter {
  /* Set at start, read-only afterwards. */
  struct ins_net_url url;
  char log_url[INS_OTLP_URL_SHOWN]; /* the endpoint as messages show it (ins_otlp_url_redact) */
  char *headers;
  const char *content_type;
  bool gzip; /* zlib is loaded and our stream initialised */
  uint32_t timeout_ms, interval_ms;
  int queue_max;
  ins_otlp_collect_fn collect;
  ins_otlp_delivered_fn delivered_fn;
  void *arg;
  pid_t pid;
  struct ins_otlp_backoff backoff;
  uint64_t (*random)(void);
  pthread_t thread;

  /* Between stop and the thread. */
  int wake_fd;              /* written once by stop */
  _Atomic uint64_t stop_ns; /* stop's deadline (CLOCK_MONOTONIC), 0 until stop */
  /* Any thread. */
  _Atomic uint64_t dropped;

  /* The exporter thread's own. */
  struct ins_http_conn *conn;
  struct queued *q;
  int qhead, qcount;
  struct ins_otlp_body *scratch; /* handed to collect */
  bool more;               /* the sink has more bodies of the turn in progress */
  bool due;                /* an interval has passed since that turn began: the next one
                            * starts once it is made and out of the queue */
  unsigned failures;       /* consecutive attempts without an answer or with a retryable one */
  bool failing;            /* warned that delivery fails; an INFO when it works again */
  uint64_t next_try_ns;    /* the head's next attempt */
  uint64_t not_before_ns;  /* the collector's own Retry-After: honoured even at stop */
  uint64_t dropped_at_fail, delivered;
  uint64_t rng;
  bool partial_logged, gzip_warned;
  int warned_status[8];
  int nwarned_status;
  z_stream zs; /* zalloc, zfree, opaque NULL (calloc): zlib's own allocator */
  struct ins_http_result res;
};

static uint64_t next_random(struct ins_otlp_exporter *e) {
  if (e->random) return e->random();
  uint64_t z = (e->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void drop(struct ins_otlp_exporter *e, struct queued *b) {
  ins_buf_free(&b->body);
  atomic_fetch_add(&e->dropped, 1);
}

static void pop_head(struct ins_otlp_exporter *e) {
  assert(e->qcount > 0);
  e->qhead = (e->qhead + 1) % e->queue_max;
  e->qcount--;
}

/* Never past the queue's end: collect fills an empty queue, at most queue_max (see the
 * top: nothing is dropped to make room). */
static void enqueue(struct ins_otlp_exporter *e, struct queued b) {
  assert(e->qcount < e->queue_max && b.body.len);
  e->q[(e->qhead + e->qcount) % e->queue_max] = b;
  e->qcount++;
}

static bool gzip_body(struct ins_otlp_exporter *e, const struct ins_buf *in, struct ins_buf *out) {
  if (in->len > UINT_MAX / 2 || g_z.deflate_reset(&e->zs) != Z_OK) return false;
  uLong bound = g_z.deflate_bound(&e->zs, (uLong)in->len);
  if (bound > UINT_MAX || ins_buf_reserve(out, bound) != 0) return false;
  e->zs.next_in = (Bytef *)in->data;
  e->zs.avail_in = (uInt)in->len;
  e->zs.next_out = (Bytef *)out->data;
  e->zs.avail_out = (uInt)bound;
  if (g_z.deflate(&e->zs, Z_FINISH) != Z_STREAM_END) return false;
  out->len = bound - e->zs.avail_out;
  /* The queue holds bodies for as long as the collector is away: hold what was
   * compressed, not the bound reserved for it (often 10x more). */
  char *d = realloc(out->data, out->len);
  if (d) out->data = d, out->cap = out->len;
  return true;
}

/* Bodies from the sink, into the empty queue (compressed when asked): a new turn's first
 * (fresh), or the next ones of the turn in progress. */
static void collect_bodies(struct ins_otlp_exporter *e, bool fresh) {
  assert(e->qcount == 0);
  memset(e->scratch, 0, (size_t)e->queue_max * sizeof *e->scratch);
  bool more = false;
  int n = e->collect(e->arg, e->scratch, e->queue_max, fresh, &more);
  if (n < 0) n = 0;
  if (n > e->queue_max) n = e->queue_max; /* NEVER: collect fills at most max */
  e->more = more && n > 0; /* a sink that made nothing has nothing more either */
  for (int i = 0; i < e->queue_max; i++) {
    struct queued b = {e->scratch[i].data, false, e->scratch[i].held};
    if (i >= n || !b.body.len) {
      if (i < n) atomic_fetch_add(&e->dropped, 1); /* the sink could not make it */
      ins_buf_free(&b.body);
      continue;
    }
    if (e->gzip) {
      struct ins_buf z = {0};
      if (gzip_body(e, &b.body, &z)) {
        ins_buf_free(&b.body);
        b = (struct queued){z, true, b.held};
      } else {
        ins_buf_free(&z);
        if (!e->gzip_warned)
          ins_warn("OTLP exporter: a metrics body could not be compressed with zlib; it is sent "
                   "uncompressed (later ones too when this recurs; not logged again)");
        e->gzip_warned = true;
      }
    }
    enqueue(e, b);
  }
}

/* Once per status code (a few kept): a collector rejecting every body must not
 * log once per body. */
static bool first_time_status(struct ins_otlp_exporter *e, int status) {
  for (int i = 0; i < e->nwarned_status; i++)
    if (e->warned_status[i] == status) return false;
  if (e->nwarned_status < (int)(sizeof e->warned_status / sizeof *e->warned_status))
    e->warned_status[e->nwarned_status++] = status;
  return true;
}

/* The collector's own text (an error or partial-success message) as a message may show
 * it: a short excerpt of plain words, none that looks like a credential or holds any part
 * of the headers we send (a collector may echo them: core/redact.h). */
#define COLLECTOR_TEXT_SHOWN 160
static const char *collector_text(const struct ins_otlp_exporter *e, const char *msg, char *out, size_t cap) {
  return ins_redact_text(out, cap, msg, strlen(msg), e->headers);
}

static void on_delivered(struct ins_otlp_exporter *e, uint64_t now) {
  struct ins_http_result *r = &e->res;
  int64_t rejected;
  char msg[256], shown[COLLECTOR_TEXT_SHOWN];
  if (!e->partial_logged && r->body_len &&
      ins_otlp_partial_success(r->body, r->body_len, r->json, &rejected, msg, sizeof msg)) {
    /* "Partial Success": accepted, MUST NOT be retried; the rejected points are lost */
    collector_text(e, msg, shown, sizeof shown);
    ins_info("OTLP exporter: the collector at %s accepted a metrics body partially: %lld data points "
             "rejected%s%s (not retried, as the OTLP spec says; later partial successes are not logged)",
             e->log_url, (long long)rejected, shown[0] ? ": " : "", shown);
    e->partial_logged = true;
  }
  if (e->delivered_fn) e->delivered_fn(e->arg, &e->q[e->qhead].held);
  ins_buf_free(&e->q[e->qhead].body);
  pop_head(e);
  e->delivered++;
  if (e->failing)
    ins_info("OTLP exporter: delivering to %s again after %u failed attempt%s; %llu metrics bodies were "
             "dropped meanwhile", e->log_url, e->failures, e->failures == 1 ? "" : "s",
             (unsigned long long)(atomic_load(&e->dropped) - e->dropped_at_fail));
  e->failing = false;
  e->failures = 0;
  e->next_try_ns = e->not_before_ns = now;
}

static void on_rejected(struct ins_otlp_exporter *e, uint64_t now) {
  struct ins_http_result *r = &e->res;
  if (first_time_status(e, r->status)) {
    char raw[256], msg[COLLECTOR_TEXT_SHOWN];
    ins_otlp_status_message(r->body, r->body_len, r->json, raw, sizeof raw);
    collector_text(e, raw, msg, sizeof msg);
    ins_warn("OTLP exporter: the collector at %s rejected a metrics body with status %d%s%s%s: it is "
             "dropped, not retried (OTLP/HTTP retries only 429, 502, 503 and 504); later rejections with "
             "%d are counted, not logged",
             e->log_url, r->status, msg[0] ? " (\"" : "", msg, msg[0] ? "\")" : "", r->status);
  }
  drop(e, &e->q[e->qhead]);
  pop_head(e);
  /* The collector answered: the next body goes at once, and a later failure starts
   * its backoff afresh. Whether delivery "works again" is for a delivery to say. */
  e->failures = 0;
  e->next_try_ns = e->not_before_ns = now;
}

static void on_retry(struct ins_otlp_exporter *e, uint64_t now) {
  struct ins_http_result *r = &e->res;
  int64_t ra = ins_http_retry_after_ms(r->retry_after, (int64_t)time(NULL));
  e->failures++;
  uint64_t delay = ins_otlp_retry_delay_ms(&e->backoff, e->failures, ra, next_random(e));
  e->next_try_ns = now + delay * 1000000ull;
  if (ra > INS_OTLP_RETRY_AFTER_MAX_MS) ra = INS_OTLP_RETRY_AFTER_MAX_MS;
  e->not_before_ns = ra >= 0 ? now + (uint64_t)ra * 1000000ull : now;
  /* Once stop is called the summary at the end tells what was lost: a warning for an
   * attempt that stop itself cut short would only alarm. */
  if (e->failing || atomic_load(&e->stop_ns)) return;
  e->failing = true;
  e->dropped_at_fail = atomic_load(&e->dropped);
  char what[200];
  if (r->status && ra >= 0) /* the delay read from Retry-After, not its text: the collector's */
    snprintf(what, sizeof what, "the collector answered %d, Retry-After %lld s", r->status,
             (long long)(ra + 999) / 1000);
  else if (r->status)
    snprintf(what, sizeof what, "the collector answered %d%s", r->status,
             r->retry_after[0] ? " (with a Retry-After that cannot be read)" : "");
  else
    snprintf(what, sizeof what, "%s", r->why[0] ? r->why : "no answer");
  unsigned cap = e->backoff.cap_ms;
  ins_warn("OTLP exporter: cannot deliver metrics to %s: %s. Retrying with backoff (at most %u %s apart, "
           "longer if the collector asks); meanwhile the bodies waiting (at most %d) are kept and no new "
           "ones are made: the metrics are cumulative, the next ones carry everything since. One message "
           "when delivery resumes.",
           e->log_url, what, cap % 1000 ? cap : cap / 1000, cap % 1000 ? "ms" : "s", e->queue_max);
}

/* One attempt at the head of the queue, bounded by deadline (and by stop's). */
static void deliver_head(struct ins_otlp_exporter *e, uint64_t deadline) {
  struct queued *b = &e->q[e->qhead];
  struct ins_http_req req = {.content_type = e->content_type, .gzip = b->gzip, .headers = e->headers,
                             .body = b->body.data, .len = b->body.len};
  struct ins_net_cut cut = {.wake_fd = e->wake_fd, .stop_ns = &e->stop_ns};
  ins_http_conn_post(e->conn, &req, &cut, deadline, &e->res);
  uint64_t now = ins_mono_ns();
  switch (ins_otlp_verdict_of(&e->res)) {
  case INS_OTLP_DELIVERED: on_delivered(e, now); break;
  case INS_OTLP_REJECTED: on_rejected(e, now); break;
  case INS_OTLP_RETRY: on_retry(e, now); break;
  }
}

static int ms_until(uint64_t t, uint64_t now) {
  if (t <= now) return 0;
  uint64_t ms = (t - now + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* After stop (see the top): the bodies waiting first, then one last turn, whole (fresh,
 * its bodies made as the queue empties), until all is delivered or stop's deadline. Our
 * own backoff is skipped (the collector may be back by now: one more try is worth it); a
 * Retry-After the collector gave is not. */
static void final_delivery(struct ins_otlp_exporter *e) {
  uint64_t deadline = atomic_load(&e->stop_ns);
  if (e->next_try_ns > e->not_before_ns) e->next_try_ns = e->not_before_ns;
  bool last_begun = false;
  while (e->qcount || !last_begun || e->more) {
    uint64_t now = ins_mono_ns();
    if (!e->qcount) { /* the last turn's first bodies, or its next */
      if (now >= deadline) break;
      collect_bodies(e, !last_begun);
      last_begun = true;
      continue;
    }
    if (now >= deadline || e->next_try_ns >= deadline) break;
    if (now < e->next_try_ns) {
      poll(NULL, 0, ms_until(e->next_try_ns, now));
      continue;
    }
    uint64_t d = now + (uint64_t)e->timeout_ms * 1000000ull;
    deliver_head(e, d < deadline ? d : deadline);
  }
  uint64_t left = (uint64_t)e->qcount;
  while (e->qcount) {
    drop(e, &e->q[e->qhead]);
    pop_head(e);
  }
  if (e->more) { /* bodies the sink never made: one, at least */
    atomic_fetch_add(&e->dropped, 1);
    left++;
    e->more = false;
  }
  uint64_t dropped = atomic_load(&e->dropped);
  /* A collector that took nothing all along: every metric of the job is lost, and the user
   * must hear it whatever NCCL_DEBUG says (a notice, core/log.h; the process has one
   * exporter). Otherwise the counts are information. */
  if (dropped && !e->delivered)
    ins_notice(NULL, NULL, "OTLP exporter for %s stopped, and the collector accepted nothing in the "
               "whole job: %llu metrics bodies delivered, %llu dropped in all (%llu of them still "
               "queued at stop); the earlier warnings say why (NCCL_DEBUG=WARN "
               "NCCL_DEBUG_SUBSYS=PROFILE)", e->log_url, (unsigned long long)e->delivered,
               (unsigned long long)dropped, (unsigned long long)left);
  else if (dropped)
    ins_info("OTLP exporter for %s stopped: %llu metrics bodies delivered, %llu dropped in all (%llu of "
             "them still queued at stop)", e->log_url, (unsigned long long)e->delivered,
             (unsigned long long)dropped, (unsigned long long)left);
}

static void *exporter_thread(void *arg) {
  struct ins_otlp_exporter *e = arg;
  uint64_t interval = (uint64_t)e->interval_ms * 1000000ull;
  uint64_t next_tick = ins_mono_ns() + interval;
  while (!atomic_load(&e->stop_ns)) {
    uint64_t now = ins_mono_ns();
    if (now >= next_tick) {
      e->due = true; /* a new turn, once this one is out (see the top) */
      next_tick += interval;
      if (next_tick <= now) next_tick = now + interval; /* late (a long delivery): no burst */
    }
    if (!e->qcount && (e->more || e->due)) {
      /* the queue is empty: the turn in progress goes on, however slow the collector; a
       * finished one is followed by a fresh one when due */
      bool fresh = !e->more;
      collect_bodies(e, fresh);
      if (fresh) e->due = false;
      continue;
    }
    if (e->qcount && now >= e->next_try_ns) {
      deliver_head(e, now + (uint64_t)e->timeout_ms * 1000000ull);
      continue;
    }
    /* waiting: for the head's next attempt, or (queue empty, turn out) for the next tick */
    uint64_t wake = e->qcount && e->next_try_ns < next_tick ? e->next_try_ns : next_tick;
    struct pollfd p = {.fd = e->wake_fd, .events = POLLIN};
    poll(&p, 1, ms_until(wake, now)); /* stop makes it readable: the loop then ends */
  }
  final_delivery(e);
  return NULL;
}

/* ---- start and stop ---- */

/* "Key: value\r\n" lines, as the header says: nothing that would end the request's
 * header block early or smuggle a line in (a bare CR or LF, an empty line). */
static bool headers_ok(const char *h) {
  if (!h) return true;
  for (const char *p = h; *p; p++) {
    if (*p == '\r' && p[1] != '\n') return false;
    if (*p == '\n' && (p == h || p[-1] != '\r')) return false;
    if (*p == '\n' && (p[1] == '\r' || p[1] == '\n')) return false;
  }
  return h[0] != '\r' && h[0] != '\n';
}

static void exporter_free(struct ins_otlp_exporter *e) {
  if (!e) return;
  ins_http_conn_free(e->conn);
  if (e->q)
    for (int i = 0; i < e->qcount; i++) ins_buf_free(&e->q[(e->qhead + i) % e->queue_max].body);
  free(e->q);
  free(e->scratch);
  free(e->headers);
  if (e->gzip) g_z.deflate_end(&e->zs);
  if (e->wake_fd >= 0) close(e->wake_fd);
  free(e);
}

struct ins_otlp_exporter *ins_otlp_exporter_start(const struct ins_otlp_endpoint *ep, uint32_t interval_ms,
                                                  int queue_max, ins_otlp_collect_fn collect,
                                                  ins_otlp_delivered_fn delivered, void *arg) {
  char why[200] = "";
  struct ins_otlp_exporter *e = NULL;
  bool oom = false;
  if (!ep || !collect || queue_max < 1 || interval_ms < 1 || ep->timeout_ms < 1) {
    ins_warn("OTLP exporter: not started (an interval, a timeout and a queue of at least 1 are needed)");
    return NULL;
  }
  struct ins_net_url url;
  /* every message shows the endpoint this way: the userinfo, path and query may hold
   * credentials, and so may a host that is a token (net/url.h) */
  char shown[INS_OTLP_URL_SHOWN];
  ins_otlp_url_redact(ep->url, shown, sizeof shown);
  if (ins_net_url_parse(&url, ep->url, why, sizeof why) != 0) {
    ins_notice(NULL, NULL, "OTLP exporter: the endpoint %s is not a URL we can use: %s; the OTLP "
               "exporter is off", shown, why);
    return NULL;
  }
  if (!headers_ok(ep->headers)) {
    ins_notice(NULL, NULL, "OTLP exporter: the extra headers for %s are not \"Key: value\" lines "
               "(never logged: they may hold credentials); the OTLP exporter is off", shown);
    return NULL;
  }
  if (!(e = calloc(1, sizeof *e))) {
    oom = true;
    goto fail;
  }
  e->wake_fd = -1;
  e->url = url;
  snprintf(e->log_url, sizeof e->log_url, "%s", shown);
  e->content_type = ep->json ? "application/json" : "application/x-protobuf";
  e->timeout_ms = ep->timeout_ms;
  e->interval_ms = interval_ms;
  e->queue_max = queue_max;
  e->collect = collect;
  e->delivered_fn = delivered;
  e->arg = arg;
  e->pid = getpid();
  const struct ins_otlp_test_hooks *th = &ins_otlp_test_hooks;
  e->backoff.base_ms = th->backoff_base_ms ? th->backoff_base_ms : INS_OTLP_BACKOFF_BASE_MS;
  e->backoff.cap_ms = th->backoff_cap_ms ? th->backoff_cap_ms : INS_OTLP_BACKOFF_CAP_MS;
  if (e->backoff.cap_ms < e->backoff.base_ms) e->backoff.cap_ms = e->backoff.base_ms;
  e->random = th->random;
  /* each process its own sequence: ranks that lost the collector together must not
   * retry in step */
  e->rng = ins_wall_ns() ^ ((uint64_t)e->pid << 32) ^ (uint64_t)(uintptr_t)e;
  if ((ep->headers && !(e->headers = strdup(ep->headers))) ||
      !(e->q = calloc((size_t)queue_max, sizeof *e->q)) ||
      !(e->scratch = calloc((size_t)queue_max, sizeof *e->scratch))) {
    oom = true;
    goto fail;
  }

  bool use_curl = url.https || th->curl_for_http;
  if (!(e->conn = ins_http_conn_new(&url, use_curl, why, sizeof why))) {
    if (use_curl)
      ins_notice(NULL, NULL, "OTLP exporter: the endpoint %s is https://, which needs libcurl, and %s. "
                 "Install libcurl (Debian/Ubuntu: libcurl4, RHEL/Fedora/SUSE: libcurl) or give an "
                 "http:// endpoint; the OTLP exporter is off", e->log_url, why);
    else
      ins_notice(NULL, NULL, "OTLP exporter: %s; the OTLP exporter is off", why);
    goto fail;
  }
  if (ep->gzip) {
    int zr = Z_VERSION_ERROR;
    if (zlib_load(why, sizeof why)) {
      /* the arguments zlib.h's deflateInit2 macro adds: the version and z_stream's size
       * we were compiled with, for the library to compare with its own */
      zr = g_z.deflate_init2(&e->zs, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
                             Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof(z_stream));
      if (zr != Z_OK)
        snprintf(why, sizeof why, "%s (%d)",
                 zr == Z_VERSION_ERROR ? "its major version or z_stream is not that of the zlib " ZLIB_VERSION
                                         " we were built with"
                                       : "deflateInit2_ failed", zr);
    }
    e->gzip = zr == Z_OK;
    if (!e->gzip)
      ins_warn("OTLP exporter: gzip was asked for %s but zlib cannot be used: %s. Metrics are sent "
               "uncompressed (install zlib: Debian/Ubuntu zlib1g, RHEL/Fedora zlib)", e->log_url, why);
  }
  if ((e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    ins_notice(NULL, NULL, "OTLP exporter: cannot make its wake-up descriptor (%s); the OTLP "
               "exporter is off", strerror(errno));
    goto fail;
  }
  /* The thread takes no signal: the job's handlers run on the job's threads, and a
   * SIGPIPE from a TLS write into a closed connection stays pending here, harmless. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&e->thread, NULL, exporter_thread, e);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    ins_notice(NULL, NULL, "OTLP exporter: cannot start its thread (%s); the OTLP exporter is off",
               strerror(rc));
    goto fail;
  }
  pthread_setname_np(e->thread, "ins-otlp");
  return e;
fail:
  if (oom) ins_notice(NULL, NULL, "OTLP exporter: out of memory; the OTLP exporter is off");
  exporter_free(e);
  return NULL;
}

void ins_otlp_exporter_stop(struct ins_otlp_exporter *e, uint32_t deadline_ms) {
  if (!e) return;
  if (getpid() != e->pid) { /* a forked child: see the top of this file */
    close(e->wake_fd);
    return;
  }
  uint64_t d = ins_mono_ns() + (uint64_t)deadline_ms * 1000000ull;
  atomic_store(&e->stop_ns, d ? d : 1);
  uint64_t one = 1;
  ssize_t w = write(e->wake_fd, &one, sizeof one); /* after the store: a woken wait sees it */
  (void)w;
  pthread_join(e->thread, NULL);
  exporter_free(e);
}

uint64_t ins_otlp_exporter_dropped(const struct ins_otlp_exporter *e) {
  return e ? atomic_load(&((struct ins_otlp_exporter *)e)->dropped) : 0;
}
