/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_rules.c - the OTLP transport's rules at their edges (src/sink/otlp/otlp_rules.c,
 * src/net/httpdate.c, src/net/http1_resp.c, otlp_export.c), where tools/dev/mutate.py's
 * off-by-one mutants survived the modules' own tests (test_otlp_rules_spec.c,
 * net/test_httpdate.c, net/test_http1_resp.c, test_otlp_export.c):
 *   verdicts         299 is a success, 300 is not (OTLP/HTTP: 2xx only), 199 neither
 *   rfc850_century   an RFC 850 date's two-digit year: 70 is 1970, 69 is 2069 (RFC 9110:
 *                    more than 50 years ahead is the past century)
 *   chunk_sizes      chunked bodies whose sizes have hex letters: a, A, 1f
 *   partial_varint   a protobuf partial success rejecting 300 points (a two-byte varint)
 *   reject_afresh    a rejected body (400) is an answer: the failures counted before it
 *                    do not carry over; the message when delivery resumes counts the
 *                    failed attempts since, against a collector of the test's own on
 *                    127.0.0.1 that answers 503, 503, 400, 503, then 200
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "net/http.h"
#include "net/http1_resp.h"
#include "net/httpdate.h"
#include "sink/otlp/otlp_export.h"
#include "sink/otlp/otlp_rules.h"

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_verdicts(void) {
  struct ins_http_result r;
  memset(&r, 0, sizeof r);
  r.status = 299;
  CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_DELIVERED);
  r.status = 300;
  CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_REJECTED);
  r.status = 199;
  CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_REJECTED);
}

static void test_rfc850_century(void) {
  /* 1970-01-01 00:00:10 is 10 s after the epoch; 2069-12-31 23:59:59 is 3155759999 */
  CHECK_EQ_U(ins_http_retry_after_ms("Thursday, 01-Jan-70 00:00:10 GMT", 0), 10000);
  CHECK_EQ_U(ins_http_retry_after_ms("Tuesday, 31-Dec-69 23:59:59 GMT", 3155759990LL), 9000);
}

/* A whole answer through the parser; its state and body. */
static void feed(struct ins_http_resp *r, const char *text) {
  ins_http_resp_init(r);
  ins_http_resp_feed(r, text, strlen(text));
}

static void test_chunk_sizes(void) {
  static struct ins_http_resp r; /* large */
  feed(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           "a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n");
  CHECK(r.state == INS_RESP_DONE);
  CHECK_EQ_U(r.body_len, 20);
  CHECK(r.body_len == 20 && !memcmp(r.body, "0123456789abcdefghij", 20));
  char text[256], body[32];
  memset(body, 'x', 31);
  body[31] = '\0';
  snprintf(text, sizeof text, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f\r\n%s\r\n0\r\n\r\n", body);
  feed(&r, text);
  CHECK(r.state == INS_RESP_DONE);
  CHECK_EQ_U(r.body_len, 31);
}

static void test_partial_varint(void) {
  int64_t rejected = 0;
  char msg[64];
  /* ExportMetricsServiceResponse { partial_success { rejected_data_points: 300 } } */
  const char pb[] = {0x0a, 0x03, 0x08, (char)0xac, 0x02};
  CHECK(ins_otlp_partial_success(pb, sizeof pb, false, &rejected, msg, sizeof msg) == 1);
  CHECK_EQ_U(rejected, 300);
}

/* ---- reject_afresh: a collector of our own, one answer per connection ---- */

static const int k_answers[] = {503, 503, 400, 503, 200};
#define NANSWERS ((int)(sizeof k_answers / sizeof *k_answers))

static struct {
  int fd, port;
  atomic_int served;
  pthread_t thread;
} g_srv;

/* Reads one request (its head, then Content-Length bytes of body); false on EOF or error. */
static bool read_request(int c) {
  char buf[65536];
  size_t got = 0;
  char *end = NULL;
  while (!(end = memmem(buf, got, "\r\n\r\n", 4))) {
    if (got == sizeof buf) return false;
    ssize_t n = recv(c, buf + got, sizeof buf - got, 0);
    if (n <= 0) return false;
    got += (size_t)n;
  }
  size_t head = (size_t)(end - buf) + 4, len = 0;
  for (char *p = buf; p < end; p++)
    if (!strncasecmp(p, "\r\nContent-Length:", 17)) len = strtoull(p + 17, NULL, 10);
  for (size_t have = got - head; have < len;) {
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) return false;
    have += (size_t)n;
  }
  return true;
}

static void *serve(void *arg) {
  (void)arg;
  for (;;) {
    int c = accept(g_srv.fd, NULL, NULL);
    if (c < 0) return NULL; /* the socket was shut down: the test is over */
    if (read_request(c)) {
      int i = atomic_fetch_add(&g_srv.served, 1);
      char ans[128];
      int n = snprintf(ans, sizeof ans, "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                       i < NANSWERS ? k_answers[i] : 200);
      if (send(c, ans, (size_t)n, MSG_NOSIGNAL) != n) fprintf(stderr, "answer not sent\n");
    }
    close(c);
  }
}

static bool serve_start(void) {
  g_srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (g_srv.fd < 0 || bind(g_srv.fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(g_srv.fd, 8) != 0 ||
      getsockname(g_srv.fd, (struct sockaddr *)&a, &len) != 0)
    return false;
  g_srv.port = ntohs(a.sin_port);
  return pthread_create(&g_srv.thread, NULL, serve, NULL) == 0;
}

static void serve_stop(void) {
  shutdown(g_srv.fd, SHUT_RDWR);
  pthread_join(g_srv.thread, NULL);
  close(g_srv.fd);
}

/* The plugin's messages: the last one that holds `want`, copied. */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_resumed[1100];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char text[1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[log %d] %s\n", level, text);
  pthread_mutex_lock(&g_log_lock);
  if (strstr(text, " again after ")) snprintf(g_resumed, sizeof g_resumed, "%s", text);
  pthread_mutex_unlock(&g_log_lock);
}

/* Two bodies, one export each. */
static atomic_int g_bodies = 2;

static int collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg, (void)fresh;
  *more = false;
  if (max < 1 || atomic_load(&g_bodies) <= 0 || ins_buf_reserve(&bodies[0].data, 4) != 0) return 0;
  memcpy(bodies[0].data.data, "body", 4);
  bodies[0].data.len = 4;
  atomic_fetch_sub(&g_bodies, 1);
  return 1;
}

static uint64_t zero_random(void) { return 0; } /* no jitter: each retry at once */

static void test_reject_afresh(void) {
  ins_log_set_logger(logger);
  CHECK(serve_start());
  ins_otlp_test_hooks.backoff_base_ms = 1;
  ins_otlp_test_hooks.backoff_cap_ms = 4;
  ins_otlp_test_hooks.random = zero_random;
  struct ins_otlp_endpoint ep;
  memset(&ep, 0, sizeof ep);
  snprintf(ep.url, sizeof ep.url, "http://127.0.0.1:%d/v1/metrics", g_srv.port);
  ep.timeout_ms = 5000;
  struct ins_otlp_exporter *e = ins_otlp_exporter_start(&ep, 10, 4, collect, NULL, NULL);
  CHECK(e != NULL);
  /* 503, 503, 400 (the first body dropped), then the second body: 503, 200 */
  for (int ms = 0; e && ms < 60000 && atomic_load(&g_srv.served) < NANSWERS; ms += 5) sleep_ms(5);
  CHECK_EQ_U(atomic_load(&g_srv.served), NANSWERS);
  for (int ms = 0; ms < 60000; ms += 5) { /* the message follows the answer */
    pthread_mutex_lock(&g_log_lock);
    bool have = g_resumed[0] != '\0';
    pthread_mutex_unlock(&g_log_lock);
    if (have) break;
    sleep_ms(5);
  }
  if (e) {
    CHECK_EQ_U(ins_otlp_exporter_dropped(e), 1);
    ins_otlp_exporter_stop(e, 2000);
  }
  serve_stop();
  pthread_mutex_lock(&g_log_lock);
  CHECK(strstr(g_resumed, " again after 1 failed attempt;") != NULL);
  if (!strstr(g_resumed, " again after 1 failed attempt;")) fprintf(stderr, "message: '%s'\n", g_resumed);
  pthread_mutex_unlock(&g_log_lock);
}

int main(void) {
  test_verdicts();
  test_rfc850_century();
  test_chunk_sizes();
  test_partial_varint();
  test_reject_afresh();
  return check_report("otlp_rules");
}
