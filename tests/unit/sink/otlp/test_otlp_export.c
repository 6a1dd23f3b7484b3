/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_export.c - the OTLP exporter (src/sink/otlp/otlp_export.c) against
 * tests/lib/otlp_receiver.py on 127.0.0.1, which records every request (with its connection, for
 * keep-alive) and answers as the test says while it runs, one behaviour per case: delivery
 * (keep-alive, gzip, http/json, partial successes, the shapes of answers), a collector down
 * at start or away and back, Retry-After in both forms, slow answers, rejections, retryable
 * statuses, requests refused, stop() with a silent or absent collector and with bodies
 * waiting, two processes, an endpoint's path, headers, an idle connection the server
 * closed, a forked child; and the arguments and endpoints start refuses.
 *
 * Nothing here judges how long something took, with one coarse exception that a slow
 * machine cannot fail: stop() with a collector that never answers must return long before
 * the request's own 60 s timeout. The one rule about time between requests (Retry-After) is
 * checked as "not earlier than", on the receiver's clock. Waits for an event poll with a
 * generous bound that only a failure reaches.
 *
 *   inspector-unit-otlp_export --list | --case NAME [--python PY --receiver tests/lib/otlp_receiver.py]
 *   (main: otlp_cases.h)
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otlp_cases.h"
#include "core/clock.h"
#include "sink/otlp/otlp_export.h"

/* N bodies over one keep-alive connection, intact, with the request's headers. */
static void case_keepalive_delivery(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  struct ins_otlp_exporter *e = start(16);
  CHECK(e != NULL);
  for (int i = 0; i < 6; i++) supply_pushf("body %d of the keep-alive case", i);
  CHECK(wait_requests(&r, 6));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[64];
  int n = receiver_requests(&r, q, 64);
  CHECK_EQ_U(n, 6);
  for (int i = 0; i < n; i++) {
    char want[64];
    snprintf(want, sizeof want, "body %d of the keep-alive case", i);
    CHECK(body_is_str(&r, q[i].seq, want));
    CHECK_EQ_U(q[i].conn, q[0].conn); /* one connection for all */
    CHECK_STR(q[i].method, "POST");
    CHECK_STR(q[i].path, "/v1/metrics");
    CHECK_STR(q[i].ctype, "application/x-protobuf");
    CHECK_STR(q[i].enc, "-");
  }
  char *h = receiver_file(&r, q[0].seq, "headers", NULL);
  char host[64];
  snprintf(host, sizeof host, "Host: 127.0.0.1:%d\n", r.port);
  CHECK(h && strstr(h, host));
  CHECK(h && strstr(h, "User-Agent: nccl-inspector/"));
  free(h);
  CHECK_EQ_U(count_msgs("OTLP", NULL), 0); /* nothing to say when all goes well */
  receiver_stop(&r);
}

static void gzip_case(bool gzip, bool zlib_missing) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  g_ep.gzip = gzip;
  if (zlib_missing) ins_otlp_test_hooks.zlib_lib = "libz-missing-for-a-test.so.1";
  struct ins_otlp_exporter *e = start(16);
  CHECK(e != NULL);
  /* compressible text, and bytes of every value */
  static char text[20000], bin[4096];
  for (size_t i = 0; i < sizeof text; i++) text[i] = "metric_name{rank=\"3\"} "[i % 22];
  for (size_t i = 0; i < sizeof bin; i++) bin[i] = (char)(i * 7 + (i >> 8));
  supply_push(text, sizeof text);
  supply_push(bin, sizeof bin);
  supply_push("x", 1);
  CHECK(wait_requests(&r, 3));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 3);
  CHECK(body_is(&r, q[0].seq, text, sizeof text));
  CHECK(body_is(&r, q[1].seq, bin, sizeof bin));
  CHECK(body_is(&r, q[2].seq, "x", 1));
  bool gz = gzip && !zlib_missing;
  for (int i = 0; i < 3; i++) {
    CHECK_STR(q[i].enc, gz ? "gzip" : "-");
    CHECK_STR(q[i].action, "200"); /* not "badgzip" */
  }
  if (gz) CHECK(q[0].raw_len < sizeof text / 10); /* it was compressed on the wire */
  else CHECK_EQ_U(q[0].raw_len, sizeof text);
  CHECK_EQ_U(count_msgs("zlib", NULL), zlib_missing ? 1 : 0);
  if (zlib_missing) CHECK_EQ_U(count_msgs("uncompressed", "libz-missing-for-a-test.so.1", NULL), 1);
  receiver_stop(&r);
}

static void case_gzip_on(void) { gzip_case(true, false); }
static void case_gzip_off(void) { gzip_case(false, false); }
static void case_gzip_without_zlib(void) { gzip_case(true, true); }

/* http/json: the content type, and a JSON partial success read (and logged once). */
static void case_json_and_partial_success(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"200partial:5\", \"200partial:6\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  g_ep.json = true;
  struct ins_otlp_exporter *e = start(16);
  CHECK(e != NULL);
  supply_pushf("{\"resourceMetrics\":[%d]}", 1);
  supply_pushf("{\"resourceMetrics\":[%d]}", 2);
  supply_pushf("{\"resourceMetrics\":[%d]}", 3);
  CHECK(wait_requests(&r, 3));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 3); /* a partial success is not retried */
  CHECK_STR(q[0].ctype, "application/json");
  CHECK(body_is_str(&r, q[2].seq, "{\"resourceMetrics\":[3]}"));
  CHECK_EQ_U(count_msgs("partially", "5 data points rejected", "test rejects 5 points", NULL), 1);
  CHECK_EQ_U(count_msgs("partially", NULL), 1); /* once */
  receiver_stop(&r);
}

/* A protobuf partial success, and answers in the shapes a server may choose: chunked,
 * "Connection: close" (the next request opens a new connection). */
static void case_answer_shapes(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"200partial:7\", \"chunked\", \"close200\", \"200\"]}"));
  endpoint(&r, NULL);
  struct ins_otlp_exporter *e = start(16);
  CHECK(e != NULL);
  for (int i = 0; i < 4; i++) supply_pushf("shape %d", i);
  CHECK(wait_requests(&r, 4));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 4);
  CHECK_EQ_U(q[1].conn, q[0].conn); /* after a partial success and a chunked answer: same connection */
  CHECK_EQ_U(q[2].conn, q[0].conn);
  CHECK(q[3].conn != q[2].conn); /* after Connection: close, a new one */
  CHECK_EQ_U(count_msgs("partially", "7 data points rejected", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 0);
  receiver_stop(&r);
}

/* Nothing listens at start: one warning; delivered once the collector is up; one INFO. */
static void case_down_at_start(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"listen\": false}"));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("early 1");
  supply_pushf("early 2");
  CHECK(wait_msgs("cannot deliver", 1));
  sleep_ms(300); /* more failed attempts (10 ms - 100 ms apart): still one warning */
  CHECK(receiver_control(&r, "{\"listen\": true}"));
  CHECK(wait_requests(&r, 2));
  CHECK(wait_msgs("delivering to", 1));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 2);
  CHECK(body_is_str(&r, q[0].seq, "early 1"));
  CHECK(body_is_str(&r, q[1].seq, "early 2"));
  CHECK_EQ_U(count_msgs("cannot deliver", "Connection refused", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", "again", "0 metrics bodies were dropped", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", NULL), 1);
  receiver_stop(&r);
}

/* The collector goes away mid-run and comes back. The queue is made only when empty, a
 * queueful at a time: it keeps the first Q bodies and takes no more from the sink while
 * they wait (P - Q stay with it); nothing is dropped, and once the collector is back all
 * P arrive, in order. (Until issue 32 a full queue dropped its oldest bodies to make room
 * at every interval: with turns of a sink's series, the same series never arrived.) */
static void case_away_and_back(void) {
  enum { Q = 3, P = 8 };
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = start(Q);
  CHECK(e != NULL);
  supply_pushf("before 0");
  supply_pushf("before 1");
  CHECK(wait_requests(&r, 2));
  CHECK(receiver_control(&r, "{\"listen\": false}"));
  pthread_mutex_lock(&g_supply.lock); /* all P at once: the next collect finds them all */
  for (int i = 0; i < P; i++) {
    int k = (g_supply.head + g_supply.count++) % SUPPLY_MAX;
    char b[32];
    g_supply.len[k] = (size_t)snprintf(b, sizeof b, "while away %d", i);
    g_supply.body[k] = strdup(b);
  }
  pthread_mutex_unlock(&g_supply.lock);
  CHECK(wait_msgs("cannot deliver", 1)); /* the first Q were taken, and failed */
  CHECK_EQ_U(supply_left(), P - Q);
  sleep_ms(300); /* retries, 20-100 ms apart: still nothing more taken, nothing dropped */
  CHECK_EQ_U(supply_left(), P - Q);
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  CHECK(receiver_control(&r, "{\"listen\": true}"));
  CHECK(wait_requests(&r, 2 + P));
  CHECK(wait_msgs("delivering to", 1));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  supply_pushf("after");
  CHECK(wait_requests(&r, 2 + P + 1));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[32];
  CHECK_EQ_U(receiver_requests(&r, q, 32), 2 + P + 1);
  for (int i = 0; i < P; i++) {
    char want[32];
    snprintf(want, sizeof want, "while away %d", i); /* every one, in order */
    CHECK(body_is_str(&r, q[2 + i].seq, want));
  }
  CHECK(body_is_str(&r, q[2 + P].seq, "after"));
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", "no new ones are made", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", "0 metrics bodies were dropped meanwhile", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", NULL), 1);
  receiver_stop(&r);
}

/* A sink of turns: each fresh call is a turn of 2 bodies, "turn T body I", none asked for
 * without fresh (more is never set). */
static atomic_int g_turns;

static int turn_collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg;
  *more = false;
  if (!fresh) return 0;
  int t = atomic_fetch_add(&g_turns, 1) + 1, n = 0;
  for (; n < 2 && n < max; n++) {
    char b[32];
    int len = snprintf(b, sizeof b, "turn %d body %d", t, n);
    if (ins_buf_reserve(&bodies[n].data, (size_t)len) != 0) break;
    memcpy(bodies[n].data.data, b, (size_t)len);
    bodies[n].data.len = (size_t)len;
  }
  return n;
}

/* Stop with bodies waiting (a queue of 2, full of the first turn, the collector away): the
 * waiting bodies go first, then the last turn; nothing is dropped. Every body arrives once,
 * in the order made: "turn 1 body 0" first, the last turn's last. (Until issue 32 stop made
 * its last export first, into the full queue, which dropped the waiting ones.) */
static void case_stop_sends_waiting_first(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"listen\": false}"));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = ins_otlp_exporter_start(&g_ep, 20, 2, turn_collect, NULL, NULL);
  CHECK(e != NULL);
  CHECK(wait_msgs("cannot deliver", 1)); /* turn 1 made, its bodies waiting */
  CHECK(receiver_control(&r, "{\"listen\": true}"));
  ins_otlp_exporter_stop(e, 10000); /* a retry may have delivered some already: either way */
  int turns = atomic_load(&g_turns);
  static struct rec q[64];
  int n = receiver_requests(&r, q, 64);
  printf("stop_sends_waiting_first: %d turns made, %d bodies received\n", turns, n);
  CHECK(turns >= 2); /* turn 1, and the last at stop */
  CHECK_EQ_U(n, 2 * turns);
  for (int i = 0; i < n && i < 2 * turns; i++) {
    char want[32];
    snprintf(want, sizeof want, "turn %d body %d", i / 2 + 1, i % 2);
    CHECK(body_is_str(&r, q[i].seq, want));
  }
  CHECK_EQ_U(count_msgs("dropped in all", NULL), 0); /* the summary comes only with a loss */
  receiver_stop(&r);
}

/* 503 with Retry-After: the next attempt is not earlier (the receiver's clock), in
 * both of Retry-After's forms. The jitter is 0 (injected): the wait is Retry-After's. */
static void retry_after_case(const char *action, double at_least_s) {
  struct receiver r;
  char ctl[128];
  snprintf(ctl, sizeof ctl, "{\"actions\": [\"%s\"], \"default\": \"200\"}", action);
  CHECK(receiver_start(&r, ctl));
  endpoint(&r, NULL);
  ins_otlp_test_hooks.random = zero_random;
  fast_backoff(); /* without Retry-After the retry would come within 20 ms */
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("throttled body");
  CHECK(wait_requests(&r, 2));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 2);
  CHECK(body_is_str(&r, q[0].seq, "throttled body") && body_is_str(&r, q[1].seq, "throttled body"));
  CHECK(!strncmp(q[0].action, "503", 3));
  CHECK_STR(q[1].action, "200");
  fprintf(stderr, "retry after %.3f s (asked: %s)\n", q[1].t - q[0].t, action);
  CHECK(q[1].t - q[0].t >= at_least_s);
  CHECK_EQ_U(count_msgs("cannot deliver", "answered 503", "Retry-After", NULL), 1);
  receiver_stop(&r);
}

static void case_retry_after_seconds(void) { retry_after_case("503:2", 2.0); }
/* An HTTP-date has whole seconds: "now + 2 s" written down is at least 1 s ahead. */
static void case_retry_after_date(void) { retry_after_case("503date:2", 1.0); }

/* An answer slower than the timeout: a retryable failure, retried, no hang. */
static void case_slow_answer(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"slow:3\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  g_ep.timeout_ms = 300;
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("slowly answered");
  CHECK(wait_msgs("delivering to", 1));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  int n = receiver_requests(&r, q, 8);
  CHECK(n >= 2);
  for (int i = 0; i < n; i++) CHECK(body_is_str(&r, q[i].seq, "slowly answered"));
  CHECK_STR(q[n - 1].action, "200");
  CHECK(q[n - 1].conn != q[0].conn); /* the timed-out connection was not reused */
  CHECK_EQ_U(count_msgs("cannot deliver", "timeout", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 1);
  receiver_stop(&r);
}

/* 400: dropped and counted, never retried, one warning with the status (and the
 * collector's message); the next body goes through. */
static void case_rejected_400(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"400\", \"400\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("bad body 1");
  CHECK(wait_dropped(e, 1));
  supply_pushf("bad body 2");
  CHECK(wait_dropped(e, 2));
  supply_pushf("good body");
  CHECK(wait_requests(&r, 3));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 2);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 3); /* one request per body: nothing retried */
  CHECK(body_is_str(&r, q[0].seq, "bad body 1"));
  CHECK(body_is_str(&r, q[1].seq, "bad body 2"));
  CHECK(body_is_str(&r, q[2].seq, "good body"));
  CHECK_EQ_U(count_msgs("with status 400", "the test collector rejects this body", "not retried", NULL), 1);
  CHECK_EQ_U(count_msgs("with status 400", NULL), 1); /* once per status */
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 0);
  receiver_stop(&r);
}

/* Every retryable status (429, 502, 503, 504 without Retry-After: the backoff) is
 * retried, the same body each time; one warning for the run, one INFO at its end. */
static void case_retryable_statuses(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"429\", \"502\", \"504\", \"503\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("retried body");
  CHECK(wait_requests(&r, 5));
  CHECK(wait_msgs("delivering to", 1));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 5);
  for (int i = 0; i < 5; i++) CHECK(body_is_str(&r, q[i].seq, "retried body"));
  CHECK_EQ_U(count_msgs("cannot deliver", "answered 429", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", "after 4 failed attempts", NULL), 1);
  receiver_stop(&r);
}

/* A collector that takes the request and closes without answering ("refuses") the
 * first N times: retried on a new connection each time, then delivered. */
static void case_refused_requests(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"close\", \"close\", \"close\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("refused thrice");
  CHECK(wait_requests(&r, 4));
  CHECK(wait_msgs("delivering to", 1));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 4);
  for (int i = 0; i < 4; i++) CHECK(body_is_str(&r, q[i].seq, "refused thrice"));
  for (int i = 1; i < 4; i++) CHECK(q[i].conn != q[i - 1].conn);
  CHECK_EQ_U(count_msgs("cannot deliver", "without an answer", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 1);
  receiver_stop(&r);
}

/* stop() with a collector that accepts and never answers, and a 60 s request timeout:
 * it returns (long before 60 s: the one coarse time check), the body counted dropped. */
static void case_stop_with_silent_collector(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"default\": \"slow:120\"}"));
  endpoint(&r, NULL);
  g_ep.timeout_ms = 60000;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("never answered");
  CHECK(wait_requests(&r, 1)); /* the request is in, its answer awaited */
  uint64_t t0 = ins_mono_ns();
  ins_otlp_exporter_stop(e, 200);
  double s = (double)(ins_mono_ns() - t0) / 1e9;
  fprintf(stderr, "stop took %.3f s\n", s);
  CHECK(s < 30.0);
  CHECK_EQ_U(count_msgs("stopped", "1 dropped in all", "1 of them still queued", NULL), 1);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 0); /* stop cut the request: the summary says it */
  receiver_stop(&r);
}

/* stop() with nothing listening, a body in backoff: returns, the body counted dropped. */
static void case_stop_with_no_collector(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"listen\": false}"));
  endpoint(&r, NULL);
  struct ins_otlp_exporter *e = start(8); /* the real schedule: a retry up to 1 s later */
  CHECK(e != NULL);
  supply_pushf("undeliverable");
  CHECK(wait_msgs("cannot deliver", 1));
  uint64_t t0 = ins_mono_ns();
  ins_otlp_exporter_stop(e, 100);
  CHECK((double)(ins_mono_ns() - t0) / 1e9 < 30.0);
  CHECK_EQ_U(count_msgs("stopped", "0 metrics bodies delivered", "1 dropped in all", NULL), 1);
  CHECK_EQ_U(receiver_count(&r), 0);
  receiver_stop(&r);
}

/* Two processes, each with its exporter, posting to one receiver at once. */
static void case_two_processes(void) {
  enum { K = 8 };
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  pid_t kids[2];
  for (int p = 0; p < 2; p++) {
    kids[p] = fork();
    if (kids[p] == 0) {
      struct ins_otlp_exporter *e = start(K);
      if (!e) _exit(100);
      for (int i = 0; i < K; i++) supply_pushf("process %d body %d", p, i);
      wait_supply_empty();
      ins_otlp_exporter_stop(e, 20000); /* delivers what is queued */
      _exit(0);
    }
  }
  for (int p = 0; p < 2; p++) {
    int st = -1;
    waitpid(kids[p], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  static struct rec q[64];
  int n = receiver_requests(&r, q, 64);
  CHECK_EQ_U(n, 2 * K);
  int seen[2][K] = {{0}}, conn_of[2] = {0, 0};
  bool one_conn_each = true;
  for (int i = 0; i < n; i++) {
    size_t len;
    char *b = receiver_file(&r, q[i].seq, "body", &len);
    int p = -1, k = -1;
    if (b && sscanf(b, "process %d body %d", &p, &k) == 2 && p >= 0 && p < 2 && k >= 0 && k < K) {
      seen[p][k]++;
      if (!conn_of[p]) conn_of[p] = q[i].conn;
      one_conn_each &= conn_of[p] == q[i].conn;
    }
    free(b);
  }
  for (int p = 0; p < 2; p++)
    for (int k = 0; k < K; k++) CHECK_EQ_U(seen[p][k], 1);
  CHECK(one_conn_each && conn_of[0] != conn_of[1]);
  receiver_stop(&r);
}

/* An endpoint with a path (and a query) is POSTed to exactly that. */
static void case_endpoint_with_path(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, "/otlp/tenant-7/v1/metrics?api-version=2&x=a%20b");
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("pathed");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[4];
  CHECK_EQ_U(receiver_requests(&r, q, 4), 1);
  CHECK_STR(q[0].path, "/otlp/tenant-7/v1/metrics?api-version=2&x=a%20b");
  receiver_stop(&r);
}

/* Header values with '=' and ',' (and a base64 '==') arrive as given; a name resolves. */
static void case_headers_intact(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "http://localhost:%d/v1/metrics", r.port);
  g_ep.timeout_ms = 5000;
  g_ep.headers = "X-Scope-OrgID: team=a,env=prod\r\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\r\n"
                 "X-Empty-Ish: ,=,\r\n";
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("with headers");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  char *h = receiver_file(&r, 1, "headers", NULL);
  CHECK(h && strstr(h, "\nX-Scope-OrgID: team=a,env=prod\n"));
  CHECK(h && strstr(h, "\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\n"));
  CHECK(h && strstr(h, "\nX-Empty-Ish: ,=,\n"));
  char host[64];
  snprintf(host, sizeof host, "Host: localhost:%d\n", r.port);
  CHECK(h && strstr(h, host));
  free(h);
  receiver_stop(&r);
  /* headers that would break the request are refused, and never logged */
  endpoint(NULL, NULL);
  const char *bad[] = {"X: a\nY: b\r\n", "X: a\r\n\r\nGET / HTTP/1.1\r\n", "X: a\rY: b\r\n", "\r\nX: a\r\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    g_ep.headers = (char *)bad[i];
    CHECK(start(8) == NULL);
  }
  CHECK_EQ_U(count_msgs("are not \"Key: value\" lines", NULL), 4);
  CHECK_EQ_U(count_msgs("X: a", NULL), 0);
}

/* A server that closes an idle keep-alive connection: the next body goes over a new
 * one, with no warning (it is not a failure of delivery). */
static void case_idle_connection_closed_by_server(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("first");
  CHECK(wait_requests(&r, 1));
  CHECK(receiver_control(&r, "{\"listen\": false}")); /* closes the connection too */
  CHECK(receiver_control(&r, "{\"listen\": true}"));
  supply_pushf("second");
  CHECK(wait_requests(&r, 2));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[4];
  CHECK_EQ_U(receiver_requests(&r, q, 4), 2);
  CHECK(q[1].conn != q[0].conn);
  CHECK_EQ_U(count_msgs("OTLP", NULL), 0);
  receiver_stop(&r);
}

/* A child forked while the exporter has a body in backoff never sends it: its stop()
 * returns at once, it exits cleanly, and the receiver sees only the parent's requests. */
static void case_fork_child_never_sends(void) {
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"200\", \"503:2\"], \"default\": \"200\"}"));
  endpoint(&r, NULL);
  ins_otlp_test_hooks.random = zero_random;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("one");
  CHECK(wait_requests(&r, 1));
  supply_pushf("two");
  CHECK(wait_requests(&r, 2)); /* its 503: "two" waits 2 s in the parent's queue */
  pid_t pid = fork();
  if (pid == 0) {
    ins_otlp_exporter_stop(e, 5000); /* the child's copy: must neither join nor send */
    exit(0);
  }
  int st = -1, waited_ms = 0;
  while (waitpid(pid, &st, WNOHANG) == 0 && waited_ms < WAIT_S * 1000) {
    sleep_ms(10);
    waited_ms += 10;
  }
  if (waited_ms >= WAIT_S * 1000) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(wait_requests(&r, 3)); /* the parent's retry */
  supply_pushf("three");       /* the parent goes on over its connection */
  CHECK(wait_requests(&r, 4));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 0);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 4);
  CHECK(body_is_str(&r, q[1].seq, "two") && body_is_str(&r, q[2].seq, "two"));
  CHECK(body_is_str(&r, q[3].seq, "three"));
  receiver_stop(&r);
}

/* Bad arguments and endpoints: NULL after one warning, nothing started. */
static void case_start_refusals(void) {
  endpoint(NULL, NULL);
  CHECK(ins_otlp_exporter_start(&g_ep, 20, 0, collect, NULL, NULL) == NULL);
  CHECK(ins_otlp_exporter_start(&g_ep, 0, 4, collect, NULL, NULL) == NULL);
  CHECK(ins_otlp_exporter_start(&g_ep, 20, 4, NULL, NULL, NULL) == NULL);
  snprintf(g_ep.url, sizeof g_ep.url, "grpc://collector:4317?token=secret");
  CHECK(start(4) == NULL);
  CHECK_EQ_U(count_all_msgs(), 4);
  CHECK_EQ_U(count_msgs("neither http:// nor https://", "grpc://collector:4317", NULL), 1);
  CHECK_EQ_U(count_msgs("secret", NULL), 0); /* the query is never logged */
  CHECK_EQ_U(ins_otlp_exporter_dropped(NULL), 0);
}

static const struct otlp_case k_cases[] = {
    {"start_refusals", case_start_refusals, false},
    {"keepalive_delivery", case_keepalive_delivery, true, "threads"},
    {"gzip_on", case_gzip_on, true, "threads"},
    {"gzip_off", case_gzip_off, true, "threads"},
    {"gzip_without_zlib", case_gzip_without_zlib, true, "threads"},
    {"json_and_partial_success", case_json_and_partial_success, true, "threads"},
    {"answer_shapes", case_answer_shapes, true, "threads"},
    {"down_at_start", case_down_at_start, true, "threads"},
    {"away_and_back", case_away_and_back, true, "threads"},
    {"retry_after_seconds", case_retry_after_seconds, true, "threads"},
    {"retry_after_date", case_retry_after_date, true, "threads"},
    {"slow_answer", case_slow_answer, true, "threads"},
    {"rejected_400", case_rejected_400, true, "threads"},
    {"retryable_statuses", case_retryable_statuses, true, "threads"},
    {"refused_requests", case_refused_requests, true, "threads"},
    {"stop_with_silent_collector", case_stop_with_silent_collector, true, "threads"},
    {"stop_with_no_collector", case_stop_with_no_collector, true, "threads"},
    {"stop_sends_waiting_first", case_stop_sends_waiting_first, true, "threads"},
    {"two_processes", case_two_processes, true, "threads"},
    {"endpoint_with_path", case_endpoint_with_path, true, "threads"},
    {"headers_intact", case_headers_intact, true, "threads"},
    {"idle_connection_closed_by_server", case_idle_connection_closed_by_server, true, "threads"},
    {"fork_child_never_sends", case_fork_child_never_sends, true, "threads"},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "otlp_export");
}
