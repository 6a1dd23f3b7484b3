/*
 * test_otlp_export.c - the OTLP exporter (src/sink/otlp/otlp_export.c) and its
 * transport (src/net/: URL, Retry-After, response parser, clients) and the
 * spec's rules (src/sink/otlp/otlp_rules.c), one behaviour per case:
 *
 *   inspector-unit-otlp_export --list | --case NAME [--python PY --receiver tests/otlp_receiver.py]
 *
 * The rules are held to the spec as pure functions (no network, no clock):
 * the retry schedule with an injected random number, Retry-After in both
 * forms against a fixed "now", URLs, the response parser fed byte by byte,
 * partial successes. The delivery cases run the exporter against
 * tests/otlp_receiver.py on 127.0.0.1, which records every request (with its
 * connection, for keep-alive) and answers as the test says while it runs.
 *
 * Nothing here judges how long something took, with coarse exceptions that a
 * slow machine cannot fail: stop() with a collector that never answers must
 * return long before the request's own 60 s timeout, and a request to a
 * server of the test's own that answers without end must end within its
 * timeout and 3 s, not the server's 20 s (where the rule can be held exactly,
 * answer_ready_past_deadline does it on an injected clock). The one
 * rule about time between requests (Retry-After) is checked as "not earlier
 * than", on the receiver's clock. Waits for an event poll with a generous
 * bound that only a failure reaches. Temporary directories are removed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "otlp_receiver.h"
#include "core/clock.h"
#include "core/log.h"
#include "net/curl.h"
#include "net/http.h"
#include "net/httpdate.h"
#include "net/resolve.h"
#include "net/url.h"
#include "io/buf.h"
#include "sink/otlp/otlp_config.h"
#include "sink/otlp/otlp_export.h"
#include "sink/otlp/otlp_rules.h"

extern char **environ;

#define WAIT_S 60 /* the most any event is waited for: only a failure gets there */


static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the plugin's messages, captured ---- */

#define MAX_MSGS 256
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_msgs[MAX_MSGS][1100];
static int g_nmsgs;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char text[1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[log %d] %s\n", level, text);
  pthread_mutex_lock(&g_log_lock);
  if (g_nmsgs < MAX_MSGS) snprintf(g_msgs[g_nmsgs++], sizeof g_msgs[0], "%s", text);
  pthread_mutex_unlock(&g_log_lock);
}

/* Messages holding every one of the (NULL-terminated) substrings. */
static int count_msgs(const char *s, ...) {
  int n = 0;
  pthread_mutex_lock(&g_log_lock);
  for (int i = 0; i < g_nmsgs; i++) {
    bool all = true;
    va_list ap;
    va_start(ap, s);
    for (const char *p = s; p; p = va_arg(ap, const char *))
      if (!strstr(g_msgs[i], p)) all = false;
    va_end(ap);
    n += all;
  }
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

static int count_all_msgs(void) {
  pthread_mutex_lock(&g_log_lock);
  int n = g_nmsgs;
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

/* ---- the sink's side: bodies the test hands to collect ---- */

#define SUPPLY_MAX 64
static struct {
  pthread_mutex_t lock;
  char *body[SUPPLY_MAX];
  size_t len[SUPPLY_MAX];
  int head, count;
} g_supply = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void supply_push(const char *data, size_t len) {
  pthread_mutex_lock(&g_supply.lock);
  if (g_supply.count < SUPPLY_MAX) {
    int i = (g_supply.head + g_supply.count++) % SUPPLY_MAX;
    g_supply.body[i] = malloc(len);
    memcpy(g_supply.body[i], data, len);
    g_supply.len[i] = len;
  }
  pthread_mutex_unlock(&g_supply.lock);
}

static void supply_pushf(const char *fmt, ...) {
  char b[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  supply_push(b, (size_t)n);
}

static int supply_left(void) {
  pthread_mutex_lock(&g_supply.lock);
  int n = g_supply.count;
  pthread_mutex_unlock(&g_supply.lock);
  return n;
}

static int collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg, (void)fresh;
  *more = false; /* each call's bodies are an export of their own */
  int n = 0;
  pthread_mutex_lock(&g_supply.lock);
  while (n < max && g_supply.count) {
    int i = g_supply.head;
    if (ins_buf_reserve(&bodies[n].data, g_supply.len[i]) == 0) {
      memcpy(bodies[n].data.data, g_supply.body[i], g_supply.len[i]);
      bodies[n].data.len = g_supply.len[i];
      n++;
    }
    free(g_supply.body[i]);
    g_supply.head = (i + 1) % SUPPLY_MAX;
    g_supply.count--;
  }
  pthread_mutex_unlock(&g_supply.lock);
  return n;
}

/* ---- the exporter under test ---- */

static struct ins_otlp_endpoint g_ep;

static void endpoint(struct receiver *r, const char *path) {
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "http://127.0.0.1:%d%s", r ? r->port : 1, path ? path : "/v1/metrics");
  g_ep.timeout_ms = 5000;
}

static uint64_t zero_random(void) { return 0; }

/* A fast schedule for the tests (the rule is the same: ins_otlp_retry_delay_ms). */
static void fast_backoff(void) {
  ins_otlp_test_hooks.backoff_base_ms = 20;
  ins_otlp_test_hooks.backoff_cap_ms = 100;
}

static struct ins_otlp_exporter *start(int queue) {
  return ins_otlp_exporter_start(&g_ep, 20, queue, collect, NULL, NULL);
}

static bool wait_dropped(struct ins_otlp_exporter *e, uint64_t n) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (ins_otlp_exporter_dropped(e) >= n) return true;
    sleep_ms(10);
  }
  return false;
}

static bool wait_msgs(const char *s, int n) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (count_msgs(s, NULL) >= n) return true;
    sleep_ms(10);
  }
  return false;
}

static bool wait_supply_empty(void) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (!supply_left()) return true;
    sleep_ms(10);
  }
  return false;
}

static bool libcurl_here(void) {
  void *h = dlopen(INS_NET_CURL_LIB, RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != NULL;
}

/* ============================================================================
 * The rules, as pure functions
 * ========================================================================= */

/* Exponential backoff with full jitter, floored by Retry-After (otlp_rules.h). */
static void case_retry_schedule(void) {
  struct ins_otlp_backoff b = {INS_OTLP_BACKOFF_BASE_MS, INS_OTLP_BACKOFF_CAP_MS};
  CHECK_EQ_U(b.base_ms, 1000);
  CHECK_EQ_U(b.cap_ms, 30000);
  /* the ceiling doubles from 1 s per failure, up to 30 s: the largest random reaches it */
  const uint64_t ceilings[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000};
  for (unsigned n = 1; n <= 8; n++) {
    uint64_t c = ceilings[n - 1];
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c), c);      /* random = ceiling */
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c + 1), 0);  /* wraps: full jitter */
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, 0), 0);
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c / 2), c / 2);
  }
  /* many failures: no overflow, still the cap */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1000, INS_HTTP_NO_RETRY_AFTER, UINT64_MAX), UINT64_MAX % 30001);
  CHECK(ins_otlp_retry_delay_ms(&b, 4000000000u, INS_HTTP_NO_RETRY_AFTER, UINT64_MAX) <= 30000);
  /* Retry-After is a floor: never earlier, jitter may only add */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 5000, 0), 5000);
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 6, 5000, 20000), 20000);
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 0, 700), 700);
  /* ... capped at 5 minutes */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 86400000, 0), INS_OTLP_RETRY_AFTER_MAX_MS);
  CHECK_EQ_U(INS_OTLP_RETRY_AFTER_MAX_MS, 300000);
  /* every delay lies in [floor, max(floor, ceiling)] whatever the random number */
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 10000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned n = 1 + (unsigned)(x % 12);
    int64_t ra = (x >> 20) % 3 == 0 ? (int64_t)((x >> 24) % 40000) : INS_HTTP_NO_RETRY_AFTER;
    uint64_t d = ins_otlp_retry_delay_ms(&b, n, ra, x);
    uint64_t c = n >= 6 ? 30000 : 1000ull << (n - 1);
    if (ra >= 0 && d < (uint64_t)ra) CHECK(!"below Retry-After");
    if (d > (ra > (int64_t)c ? (uint64_t)ra : c)) CHECK(!"above the ceiling");
  }
}

/* Which answers are retried (OTLP/HTTP "Failures", "Retryable Response Codes"). */
static void case_verdicts(void) {
  struct ins_http_result r;
  memset(&r, 0, sizeof r);
  const int retry[] = {0, 429, 502, 503, 504};
  const int reject[] = {400, 401, 403, 404, 405, 408, 413, 415, 500, 501, 505, 301, 302, 307};
  const int ok[] = {200, 202, 204};
  for (size_t i = 0; i < sizeof retry / sizeof *retry; i++) {
    r.status = retry[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_RETRY);
  }
  for (size_t i = 0; i < sizeof reject / sizeof *reject; i++) {
    r.status = reject[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_REJECTED);
  }
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    r.status = ok[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_DELIVERED);
  }
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3, 5.6.7), against a fixed now. */
static void case_retry_after_parse(void) {
  const int64_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date */
  CHECK_EQ_U(ins_http_retry_after_ms("120", now), 120000);
  CHECK_EQ_U(ins_http_retry_after_ms(" 0 ", now), 0);
  CHECK(ins_http_retry_after_ms("99999999999999999999999", now) >= INS_OTLP_RETRY_AFTER_MAX_MS);
  CHECK(ins_http_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now) == 0);
  CHECK(ins_http_retry_after_ms("Sun, 06 Nov 1994 08:50:07 GMT", now) == 30000);
  CHECK(ins_http_retry_after_ms("Sunday, 06-Nov-94 08:50:07 GMT", now) == 30000); /* RFC 850 */
  CHECK(ins_http_retry_after_ms("Sun Nov  6 08:50:07 1994", now) == 30000);       /* asctime */
  CHECK(ins_http_retry_after_ms("Mon, 07 Nov 1994 08:49:37 GMT", now) == 86400000);
  CHECK(ins_http_retry_after_ms("Sat, 05 Nov 1994 08:49:37 GMT", now) == 0); /* past: at once */
  CHECK(ins_http_retry_after_ms("Thu, 01 Jan 1970 00:00:00 GMT", 0) == 0);
  CHECK(ins_http_retry_after_ms("Fri, 29 Feb 2036 00:00:10 GMT", 2087856000) == 10000); /* leap day */
  const char *bad[] = {"", "-1", "1.5", "12s", "soon", "Sun, 06 Nov 1994 08:49:37 PST",
                       "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Nov 1994 25:00:00 GMT"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(ins_http_retry_after_ms(bad[i], now) == INS_HTTP_NO_RETRY_AFTER);
  CHECK(ins_http_retry_after_ms(NULL, now) == INS_HTTP_NO_RETRY_AFTER);
}

static void case_url_parse(void) {
  struct ins_net_url u;
  char why[200];
  CHECK(ins_net_url_parse(&u, "http://collector:4318/v1/metrics", why, sizeof why) == 0);
  CHECK(!u.https);
  CHECK_STR(u.host, "collector");
  CHECK_STR(u.port, "4318");
  CHECK_STR(u.path, "/v1/metrics");
  CHECK_STR(u.host_hdr, "collector:4318");
  CHECK_STR(u.origin, "http://collector:4318");
  /* default ports; the Host header leaves a default port out */
  CHECK(ins_net_url_parse(&u, "HTTP://10.0.0.7", why, sizeof why) == 0);
  CHECK_STR(u.port, "80");
  CHECK_STR(u.path, "/");
  CHECK_STR(u.host_hdr, "10.0.0.7");
  CHECK(ins_net_url_parse(&u, "https://otel.example.com/prefix/v1/metrics", why, sizeof why) == 0);
  CHECK(u.https);
  CHECK_STR(u.port, "443");
  CHECK_STR(u.host_hdr, "otel.example.com");
  CHECK(ins_net_url_parse(&u, "https://otel.example.com:443/", why, sizeof why) == 0);
  CHECK_STR(u.host_hdr, "otel.example.com");
  CHECK(ins_net_url_parse(&u, "http://h:/x", why, sizeof why) == 0); /* an empty port: the default */
  CHECK_STR(u.port, "80");
  /* IPv6 */
  CHECK(ins_net_url_parse(&u, "http://[::1]:4318/v1/metrics", why, sizeof why) == 0);
  CHECK_STR(u.host, "::1");
  CHECK_STR(u.host_hdr, "[::1]:4318");
  CHECK_STR(u.origin, "http://[::1]:4318");
  CHECK(ins_net_url_parse(&u, "https://[2001:db8::7]/m", why, sizeof why) == 0);
  CHECK_STR(u.host, "2001:db8::7");
  CHECK_STR(u.host_hdr, "[2001:db8::7]");
  CHECK(ins_net_url_parse(&u, "http://[fe80::1%25eth0]:9/", why, sizeof why) == 0);
  CHECK_STR(u.host, "fe80::1%eth0");
  /* the path as given: query kept, fragment not sent */
  CHECK(ins_net_url_parse(&u, "http://h:1/a/b/v1/metrics?tenant=x%20y&k=1#frag", why, sizeof why) == 0);
  CHECK_STR(u.path, "/a/b/v1/metrics?tenant=x%20y&k=1");
  CHECK(ins_net_url_parse(&u, "http://h?x=1", why, sizeof why) == 0);
  CHECK_STR(u.path, "/?x=1");
  /* refused */
  const char *bad[] = {"ftp://h/", "h:4318/v1/metrics", "http://", "http:///x", "http://user:pw@h/",
                       "http://h:65536/", "http://h:0/", "http://h:12a/", "http://[::1/", "http://[]/",
                       "http://h/a b", "http://h/a\r\nX: y", "http://h o/", "http://[::1]x/",
                       "http://[fe80::1%eth0]/", "http://[fe80::1%25]/", "http://[::g]/",
                       /* an '@' anywhere: a password with '/' in it would make "u" the host and
                        * send it the headers; one in a path is refused alike */
                       "http://u:80/pw@collector:4318/", "http://u:pw?x@collector/", "http://h/p@x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = '\0';
    CHECK(ins_net_url_parse(&u, bad[i], why, sizeof why) != 0);
    CHECK(why[0] != '\0');
    CHECK(!strstr(why, "pw") && !strstr(why, "collector")); /* the reason holds none of the URL */
  }
}

/* Feeds a whole response, then the same one byte at a time: the same result. */
static void parse_both_ways(const char *text, struct ins_http_resp *whole, struct ins_http_resp *bytes,
                            size_t *used_whole) {
  size_t n = strlen(text);
  ins_http_resp_init(whole);
  *used_whole = ins_http_resp_feed(whole, text, n);
  ins_http_resp_init(bytes);
  for (size_t i = 0; i < n && bytes->state != INS_RESP_DONE && bytes->state != INS_RESP_ERROR; i++)
    ins_http_resp_feed(bytes, text + i, 1);
}

static void case_response_parser(void) {
  static struct ins_http_resp w, b; /* 12 KiB each */
  size_t used;
  /* Content-Length, keep-alive (HTTP/1.1's default), Retry-After captured */
  const char *r503 = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: 3\r\n\r\nabc";
  char with_extra[256];
  snprintf(with_extra, sizeof with_extra, "%sEXTRA", r503);
  parse_both_ways(with_extra, &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 503);
  CHECK(w.keep_alive && b.keep_alive);
  CHECK_STR(w.retry_after, "7");
  CHECK_EQ_U(w.body_len, 3);
  CHECK(!memcmp(w.body, "abc", 3) && !memcmp(b.body, "abc", 3));
  CHECK_EQ_U(used, strlen(r503)); /* what follows the answer is not consumed */
  /* chunked, with an extension and trailers; Connection: close */
  parse_both_ways("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                  "Content-Type: application/json\r\n\r\n"
                  "4;x=y\r\n{\"a\"\r\n2\r\n:1\r\n1\r\n}\r\n0\r\nT: v\r\n\r\n",
                  &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK(w.chunked && !w.keep_alive);
  CHECK_STR(w.content_type, "application/json");
  CHECK_EQ_U(w.body_len, 7);
  CHECK(!memcmp(w.body, "{\"a\":1}", 7) && !memcmp(b.body, "{\"a\":1}", 7));
  /* an interim 100 Continue, then the answer; bare LF line ends */
  parse_both_ways("HTTP/1.1 100 Continue\n\nHTTP/1.1 400 Bad Request\nContent-Length: 0\n\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 400);
  /* HTTP/1.0: close unless keep-alive is said */
  parse_both_ways("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && !w.keep_alive);
  parse_both_ways("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && w.keep_alive);
  /* neither length nor chunked: the body ends with the connection */
  parse_both_ways("HTTP/1.1 200 OK\r\n\r\nxyz", &w, &b, &used);
  CHECK(w.state == INS_RESP_BODY_EOF && !w.keep_alive);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_DONE);
  CHECK_EQ_U(w.body_len, 3);
  /* 204: no body even without a length */
  parse_both_ways("HTTP/1.1 204 No Content\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && w.keep_alive);
  /* a close in the middle is an error, not an answer */
  parse_both_ways("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", &w, &b, &used);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_ERROR);
  ins_http_resp_init(&w);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_ERROR);
  /* malformed */
  const char *bad[] = {"HTTP/2 200\r\n\r\n", "SSH-2.0-OpenSSH\r\n", "HTTP/1.1 20 OK\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
                       "HTTP/1.1 101 Switching Protocols\r\n\r\n", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    parse_both_ways(bad[i], &w, &b, &used);
    CHECK(w.state == INS_RESP_ERROR && b.state == INS_RESP_ERROR);
  }
  /* endless headers are refused, not buffered */
  ins_http_resp_init(&w);
  ins_http_resp_feed(&w, "HTTP/1.1 200 OK\r\n", 17);
  char line[1000];
  memset(line, 'a', sizeof line);
  memcpy(line, "X: ", 3);
  line[998] = '\r', line[999] = '\n';
  for (int i = 0; i < 100 && w.state != INS_RESP_ERROR; i++) ins_http_resp_feed(&w, line, sizeof line);
  CHECK(w.state == INS_RESP_ERROR);
  /* a large body: the start kept, all of it consumed */
  ins_http_resp_init(&w);
  const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
  ins_http_resp_feed(&w, h, strlen(h));
  static char big[100000];
  memset(big, 'z', sizeof big);
  CHECK_EQ_U(ins_http_resp_feed(&w, big, sizeof big), sizeof big);
  CHECK(w.state == INS_RESP_DONE);
  CHECK_EQ_U(w.body_len, INS_HTTP_RESP_KEEP);
  CHECK_EQ_U(w.body_total, 100000);
}

static void case_partial_success_parse(void) {
  int64_t rej;
  char msg[64];
  /* protobuf: partial_success { rejected_data_points: 5, error_message: "bad" } */
  const char pb[] = {0x0a, 0x07, 0x08, 0x05, 0x12, 0x03, 'b', 'a', 'd'};
  CHECK(ins_otlp_partial_success(pb, sizeof pb, false, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 5);
  CHECK_STR(msg, "bad");
  /* empty response, empty partial_success: full success */
  CHECK(ins_otlp_partial_success("", 0, false, &rej, msg, sizeof msg) == 0);
  const char empty_ps[] = {0x0a, 0x00};
  CHECK(ins_otlp_partial_success(empty_ps, sizeof empty_ps, false, &rej, msg, sizeof msg) == 0);
  /* a warning only (0 rejected, a message): still worth the one log line */
  const char warn_only[] = {0x0a, 0x04, 0x12, 0x02, 'h', 'i'};
  CHECK(ins_otlp_partial_success(warn_only, sizeof warn_only, false, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 0);
  /* truncated protobuf: no crash, nothing claimed */
  CHECK(ins_otlp_partial_success(pb, 3, false, &rej, msg, sizeof msg) == 0);
  /* JSON, int64 as a string (proto3 JSON) or a number */
  const char *j1 =
      "{\"partialSuccess\":{\"rejectedDataPoints\":\"12\",\"errorMessage\":\"too \\\"old\\\"\"}}";
  CHECK(ins_otlp_partial_success(j1, strlen(j1), true, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 12);
  CHECK_STR(msg, "too \"old\"");
  const char *j2 = "{\"partialSuccess\": {\"rejectedDataPoints\": 3}}";
  CHECK(ins_otlp_partial_success(j2, strlen(j2), true, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 3);
  CHECK(ins_otlp_partial_success("{}", 2, true, &rej, msg, sizeof msg) == 0);
  /* google.rpc.Status { code: 3, message: "no" } */
  const char st[] = {0x08, 0x03, 0x12, 0x02, 'n', 'o'};
  CHECK(ins_otlp_status_message(st, sizeof st, false, msg, sizeof msg) == 1);
  CHECK_STR(msg, "no");
  const char *js = "{\"code\":3,\"message\":\"bad metric\"}";
  CHECK(ins_otlp_status_message(js, strlen(js), true, msg, sizeof msg) == 1);
  CHECK_STR(msg, "bad metric");
  CHECK(ins_otlp_status_message("<html>", 6, false, msg, sizeof msg) == 0);
}

/* ============================================================================
 * Delivery, against the receiver
 * ========================================================================= */

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

/* https:// without libcurl: one warning naming the scheme, the library and the package;
 * no exporter. */
static void case_https_without_libcurl(void) {
  ins_net_test_hooks.curl_lib = "libcurl-missing-for-a-test.so.4";
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "https://127.0.0.1:4318/v1/metrics");
  g_ep.timeout_ms = 1000;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e == NULL);
  CHECK_EQ_U(count_all_msgs(), 1);
  CHECK_EQ_U(count_msgs("https://", "libcurl4", "libcurl-missing-for-a-test.so.4", "is off", NULL), 1);
  ins_otlp_exporter_stop(e, 0); /* NULL: nothing */
}

/* http:// never loads libcurl (nor does anything else in this process). */
static void case_http_does_not_load_libcurl(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  g_ep.gzip = true;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("plain");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(dlopen(INS_NET_CURL_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL);
  CHECK(dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL); /* while zlib was, for gzip */
  receiver_stop(&r);
}

/* The libcurl client (what https:// uses), over http:// (no TLS server here): keep-alive,
 * gzip, a 503 with Retry-After honoured, a 400 not retried, a timeout. */
static void case_libcurl_transport(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"200\", \"503:1\", \"200\", \"400\", \"slow:3\"],"
                           " \"default\": \"200\"}"));
  endpoint(&r, "/prefix/v1/metrics?x=1");
  g_ep.gzip = true;
  g_ep.timeout_ms = 1000;
  g_ep.headers = "X-Tenant: a=b,c=d\r\n";
  ins_otlp_test_hooks.curl_for_http = true;
  ins_otlp_test_hooks.random = zero_random;
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("curl 0");
  CHECK(wait_requests(&r, 1));
  supply_pushf("curl 1"); /* 503, Retry-After 1, then 200 */
  CHECK(wait_requests(&r, 3));
  supply_pushf("curl 2"); /* 400 */
  CHECK(wait_dropped(e, 1));
  supply_pushf("curl 3"); /* slow: a timeout, then 200 */
  CHECK(wait_requests(&r, 6));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 1);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[16];
  int n = receiver_requests(&r, q, 16);
  CHECK_EQ_U(n, 6);
  const char *want[] = {"curl 0", "curl 1", "curl 1", "curl 2", "curl 3", "curl 3"};
  for (int i = 0; i < n && i < 6; i++) {
    CHECK(body_is_str(&r, q[i].seq, want[i]));
    CHECK_STR(q[i].enc, "gzip");
    CHECK_STR(q[i].path, "/prefix/v1/metrics?x=1");
  }
  CHECK(n == 6 && q[2].t - q[1].t >= 1.0);
  CHECK(n == 6 && q[1].conn == q[0].conn && q[2].conn == q[0].conn); /* keep-alive */
  char *h = receiver_file(&r, q[0].seq, "headers", NULL);
  CHECK(h && strstr(h, "\nX-Tenant: a=b,c=d\n") && strstr(h, "Content-Type: application/x-protobuf\n"));
  CHECK(h && !strstr(h, "Expect:"));
  free(h);
  CHECK_EQ_U(count_msgs("with status 400", NULL), 1);
  /* two runs of failures, each ended by a delivery: the 503, then the timeout */
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 2);
  CHECK_EQ_U(count_msgs("cannot deliver", "answered 503, Retry-After 1", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", NULL), 2);
  receiver_stop(&r);
}

/* stop() cuts a libcurl transfer short too (curl_multi_wait watches the stop descriptor). */
static void case_libcurl_stop_with_silent_collector(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  struct receiver r;
  CHECK(receiver_start(&r, "{\"default\": \"slow:120\"}"));
  endpoint(&r, NULL);
  g_ep.timeout_ms = 60000;
  ins_otlp_test_hooks.curl_for_http = true;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("never answered, through libcurl");
  CHECK(wait_requests(&r, 1));
  uint64_t t0 = ins_mono_ns();
  ins_otlp_exporter_stop(e, 200);
  double s = (double)(ins_mono_ns() - t0) / 1e9;
  fprintf(stderr, "stop took %.3f s\n", s);
  CHECK(s < 30.0);
  CHECK_EQ_U(count_msgs("stopped", "1 dropped in all", NULL), 1);
  receiver_stop(&r);
}

static bool run_quiet(char *const argv[]) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int st = -1;
  bool ok = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0;
  posix_spawn_file_actions_destroy(&fa);
  return ok;
}

/* https:// end to end, when libcurl and the openssl tool are here: a self-signed
 * certificate for 127.0.0.1, trusted through the test hook. */
static void case_https_with_libcurl(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  char dir[] = "/tmp/ins-otlp-tls-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char cert[64], key[64];
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  char *argv[] = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                  "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", NULL};
  if (!run_quiet(argv)) {
    printf("SKIP: the openssl tool cannot make a certificate here\n");
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return;
  }
  struct receiver r;
  CHECK(receiver_start_tls(&r, NULL, cert, key));
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "https://127.0.0.1:%d/v1/metrics", r.port);
  g_ep.timeout_ms = 5000;
  ins_net_test_hooks.ca_file = cert;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("over TLS 1");
  supply_pushf("over TLS 2");
  CHECK(wait_requests(&r, 2));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 2);
  CHECK(body_is_str(&r, q[0].seq, "over TLS 1") && body_is_str(&r, q[1].seq, "over TLS 2"));
  CHECK_EQ_U(q[1].conn, q[0].conn);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 0);
  receiver_stop(&r);
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
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

/* ============================================================================
 * Hardening: hostile answers, a resolver that never answers, credentials in
 * messages, headers that would corrupt the request
 * ========================================================================= */

/* Interim (1xx) answers are bounded: INS_HTTP_RESP_MAX_INTERIM of them, then the final
 * answer, parse; one more is an error (a server sending them without end would hold
 * the request for as long as it likes). */
static void case_interim_answers_bounded(void) {
  static struct ins_http_resp w, b;
  static char text[4096];
  size_t used, n = 0;
  for (int i = 0; i < INS_HTTP_RESP_MAX_INTERIM; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "HTTP/1.1 100 Continue\r\n\r\n");
  snprintf(text + n, sizeof text - n, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  parse_both_ways(text, &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 200);
  CHECK_EQ_U(w.interim, INS_HTTP_RESP_MAX_INTERIM);
  n = 0;
  for (int i = 0; i < INS_HTTP_RESP_MAX_INTERIM + 1; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
  snprintf(text + n, sizeof text - n, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  parse_both_ways(text, &w, &b, &used);
  CHECK(w.state == INS_RESP_ERROR && b.state == INS_RESP_ERROR);
  CHECK(w.error && strstr(w.error, "interim"));
  /* the next response starts afresh */
  ins_http_resp_init(&w);
  CHECK_EQ_U(w.interim, 0);
}

/* A server of the test's own (a thread): after the request it sends `head` once, then
 * `unit` over and over, as fast as the socket takes it, until the client goes away, the
 * test ends, or 20 s pass (a bound only a failing client reaches). */
struct endless {
  int lfd, port;
  const char *head, *unit;
  bool burst;           /* head and one block at once, then the end of the stream (FIN) */
  _Atomic bool stop, sent;
  pthread_t thread;
};

/* Burst: at accept, before the request is read, so that all of it (and the FIN) is in the
 * client's socket before the client reads anything; then the request is read and dropped
 * until the test ends. */
static void burst(struct endless *s, int fd) {
  static char block[8192];
  memset(block, 'z', sizeof block);
  if (send(fd, s->head, strlen(s->head), MSG_NOSIGNAL) < 0 || send(fd, block, sizeof block, MSG_NOSIGNAL) < 0)
    return;
  shutdown(fd, SHUT_WR);
  atomic_store(&s->sent, true);
  char sink[4096];
  while (!atomic_load(&s->stop)) {
    ssize_t n = recv(fd, sink, sizeof sink, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
  }
}

static void *endless_main(void *arg) {
  struct endless *s = arg;
  int fd = accept(s->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  struct timeval tv = {0, 100000}; /* sends wake every 100 ms to look at stop */
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (s->burst) {
    burst(s, fd);
    goto out;
  }
  char req[8192];
  size_t got = 0;
  uint64_t t0 = ins_mono_ns();
  while (!memmem(req, got, "\r\n\r\n", 4) && got < sizeof req && !atomic_load(&s->stop) &&
         ins_mono_ns() - t0 < 20000000000ull) {
    ssize_t n = recv(fd, req + got, sizeof req - got, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) goto out;
    if (n > 0) got += (size_t)n;
  }
  static char block[64 * 1024];
  size_t ul = strlen(s->unit), bl = 0;
  while (bl + ul <= sizeof block) memcpy(block + bl, s->unit, ul), bl += ul;
  if (send(fd, s->head, strlen(s->head), MSG_NOSIGNAL) < 0) goto out;
  size_t off = 0; /* a send cut by its timeout goes on where it stopped: the stream stays whole */
  while (!atomic_load(&s->stop) && ins_mono_ns() - t0 < 20000000000ull) {
    ssize_t n = send(fd, block + off, bl - off, MSG_NOSIGNAL);
    if (n > 0) off = (off + (size_t)n) % bl;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break; /* the client left */
  }
out:
  close(fd);
  return NULL;
}

static bool endless_start(struct endless *s, const char *head, const char *unit, bool burst_mode) {
  memset(s, 0, sizeof *s);
  s->head = head, s->unit = unit, s->burst = burst_mode;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 4) ||
      getsockname(s->lfd, (struct sockaddr *)&a, &al))
    return false;
  s->port = ntohs(a.sin_port);
  return pthread_create(&s->thread, NULL, endless_main, s) == 0;
}

static void endless_stop(struct endless *s) {
  atomic_store(&s->stop, true);
  shutdown(s->lfd, SHUT_RDWR); /* wakes an accept that never got its client */
  pthread_join(s->thread, NULL);
  close(s->lfd);
}

/* One POST to the endless server with a timeout of timeout_ms; how long it took (s). */
static double post_to_endless(struct endless *s, uint32_t timeout_ms, struct ins_http_result *res) {
  char url[64], why[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/metrics", s->port);
  struct ins_net_url u;
  CHECK(ins_net_url_parse(&u, url, why, sizeof why) == 0);
  struct ins_http_conn *c = ins_http_conn_new(&u, false, why, sizeof why);
  CHECK(c != NULL);
  if (!c) return -1;
  struct ins_http_req req = {.content_type = "application/x-protobuf", .body = "body", .len = 4};
  uint64_t t0 = ins_mono_ns();
  ins_http_conn_post(c, &req, NULL, t0 + (uint64_t)timeout_ms * 1000000ull, res);
  double took = (double)(ins_mono_ns() - t0) / 1e9;
  ins_http_conn_free(c);
  fprintf(stderr, "post took %.3f s: status %d, timed out %d, %s\n", took, res->status, res->timed_out,
          res->why);
  return took;
}

/* "HTTP/1.1 100 Continue" without end: the answer is refused after a few interim answers,
 * long before the timeout (before the bound, it held until the server stopped: a read
 * that never has to wait never looked at the deadline). */
static void case_endless_interim_answers(void) {
  struct endless s;
  CHECK(endless_start(&s, "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n", false));
  static struct ins_http_result res;
  double took = post_to_endless(&s, 2000, &res);
  endless_stop(&s);
  CHECK_EQ_U(res.status, 0);
  CHECK(strstr(res.why, "interim") != NULL);
  CHECK(took >= 0 && took < 2.0 + 3.0); /* the bound is the behaviour: 20 s without it */
  CHECK_EQ_U(ins_otlp_verdict_of(&res), INS_OTLP_RETRY);
}

/* A 200 whose chunked body never ends (one byte per chunk, sent as fast as it is read):
 * the request ends at its timeout, as a timeout. */
static void case_endless_answer_body(void) {
  struct endless s;
  CHECK(endless_start(&s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\nx\r\n", false));
  static struct ins_http_result res;
  double took = post_to_endless(&s, 1000, &res);
  endless_stop(&s);
  CHECK_EQ_U(res.status, 0);
  CHECK(res.timed_out);
  CHECK(strstr(res.why, "did not complete within the timeout") != NULL);
  CHECK(took >= 0.9 && took < 1.0 + 3.0); /* the bound is the behaviour: 20 s without it */
}

/* The clock of answer_ready_past_deadline: its first call (the connect's wait) waits
 * until the server has sent the whole stream and its end, and a moment for the kernel to
 * hand them to the client's socket; the first two calls say the real time, every later
 * one two hours on: past the request's deadline (an hour away). */
static struct endless *g_burst_srv;
static _Atomic int g_burst_calls;
static uint64_t burst_clock(void) {
  if (atomic_fetch_add(&g_burst_calls, 1) == 0) {
    for (int i = 0; i < WAIT_S * 100 && !atomic_load(&g_burst_srv->sent); i++) sleep_ms(10);
    sleep_ms(50);
  }
  return ins_mono_ns() + (atomic_load(&g_burst_calls) > 2 ? 7200000000000ull : 0);
}

/* The deadline passes while the rest of an answer is already there to be read (the
 * stream's end included, so no read would ever wait): the read loop looks at the deadline
 * before every read, not only when one would block, so the request ends as timed out;
 * before, it read on to the end and never knew (an endless answer: never). */
static void case_answer_ready_past_deadline(void) {
  struct endless s;
  CHECK(endless_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", "-", true));
  g_burst_srv = &s;
  ins_net_test_hooks.now_ns = burst_clock;
  static struct ins_http_result res;
  char url[64], why[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/metrics", s.port);
  struct ins_net_url u;
  CHECK(ins_net_url_parse(&u, url, why, sizeof why) == 0);
  struct ins_http_conn *c = ins_http_conn_new(&u, false, why, sizeof why);
  struct ins_http_req req = {.content_type = "application/x-protobuf", .body = "body", .len = 4};
  ins_http_conn_post(c, &req, NULL, ins_mono_ns() + 3600000000000ull, &res);
  ins_http_conn_free(c);
  ins_net_test_hooks.now_ns = NULL;
  endless_stop(&s);
  fprintf(stderr, "status %d, timed out %d, %s\n", res.status, res.timed_out, res.why);
  CHECK(atomic_load(&s.sent));
  CHECK_EQ_U(res.status, 0);
  CHECK(res.timed_out);
  CHECK(strstr(res.why, "within the timeout") != NULL);
}

/* The bounded lookup is the one in use: glibc has getaddrinfo_a (in libc since 2.34, in
 * libanl.so.1 before); a name still resolves through it. */
static void case_lookup_is_bounded(void) {
#ifdef __GLIBC__
  CHECK(strncmp(ins_net_lookup_kind(), "getaddrinfo_a", 13) == 0);
#endif
  fprintf(stderr, "lookup: %s\n", ins_net_lookup_kind());
}

/* libanl asked for by name (the path of a glibc before 2.34), or missing (the plain
 * getaddrinfo fallback): each says so, and a name resolves either way. */
static void lookup_case(const char *lib, const char *want_kind) {
  ins_net_test_hooks.anl_lib = lib;
  CHECK_STR(ins_net_lookup_kind(), want_kind);
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "http://localhost:%d/v1/metrics", r.port);
  g_ep.timeout_ms = 5000;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("looked up");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(body_is_str(&r, 1, "looked up"));
  receiver_stop(&r);
}

static void case_lookup_through_libanl(void) {
#if defined(__GLIBC__) && !defined(__SANITIZE_THREAD__) /* TSan builds use the plain lookup */
  lookup_case("libanl.so.1", "getaddrinfo_a (libanl.so.1)");
#endif
}

static void case_lookup_fallback(void) { lookup_case("libanl-missing-for-a-test.so.1", "getaddrinfo"); }

/* ins_otlp_url_redact (net/url.h's ins_net_url_shown with OTLP's path): by structure, whatever
 * the parts hold. Nothing between "//" and the last '@' survives, nor a path but "/" and
 * "/v1/metrics", a query, a fragment, a host shaped like a credential, or anything beyond
 * the scheme of a URL that does not parse. */
static void case_url_redact(void) {
  char out[INS_OTLP_URL_SHOWN];
  const char *cases[][2] = {
      /* userinfo, whatever the password holds: '/', '?', '#', '@', ':' (base64 tokens) */
      {"http://user:PASSWORD@host:4318/v1/metrics", "http://***@host:4318/v1/metrics"},
      {"https://TOKEN@collector/v1/metrics", "https://***@collector/v1/metrics"},
      {"http://u:SE/CR?ET#x@host:4318/v1/metrics", "http://***@host:4318/v1/metrics"},
      {"https://u:SE@CR:ET@host/v1/metrics", "https://***@host/v1/metrics"},
      {"http://u:80/SECRET@host:4318", "http://***@host:4318"},
      {"http://u:p@SE/C?R#E+T=@[::1]:4318/v1/metrics", "http://***@[::1]:4318/v1/metrics"},
      {"http://a@b@h/x", "http://***@h/***"},
      {"http://h/path@not-userinfo", "http://***@not-userinfo"}, /* the last '@': shows less */
      {"http://SECRET@", "http://***@***"},
      /* hosts and ports as given */
      {"http://localhost:4318/v1/metrics", "http://localhost:4318/v1/metrics"},
      {"HTTPS://Collector:443/v1/metrics", "HTTPS://Collector:443/v1/metrics"},
      {"http://collector", "http://collector"},
      {"http://collector:/", "http://collector:/"},
      {"http://[::1]:4318/v1/metrics", "http://[::1]:4318/v1/metrics"},
      {"https://[2001:db8::7]/", "https://[2001:db8::7]/"},
      {"http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:9/v1/metrics",
       "http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:9/v1/metrics"},
      {"http://[fe80::1%25eth0]:9/", "http://[fe80::1%eth0]:9/"},
      {"http://otel-collector.monitoring.svc.cluster.local:4318/v1/metrics",
       "http://otel-collector.monitoring.svc.cluster.local:4318/v1/metrics"},
      /* a host that is a credential ("https://TOKEN@collector" without its "@collector") */
      {"https://ghp_16C7e42F292c6912E7710c838347Ae178B4a/v1/metrics", "https://***/v1/metrics"},
      {"http://0123456789abcdef0123456789abcdef:4318", "http://***:4318"},
      {"http://123e4567-e89b-12d3-a456-426614174000/v1/metrics", "http://***/v1/metrics"},
      {"http://secret-token.example/v1/metrics", "http://***/v1/metrics"},
      /* paths, queries, fragments */
      {"http://c:4318/SECRET/v1/metrics", "http://c:4318/***"},
      {"http://c:4318/v1/metrics/SECRET", "http://c:4318/***"},
      {"https://c/v1/metrics?token=SECRET&tenant=a", "https://c/v1/metrics?***"},
      {"http://c:4318?SECRET", "http://c:4318?***"},
      {"http://c/p?a=SECRET;b=SECRET&&c#SECRET", "http://c/***?***#***"},
      {"http://c/#SECRET", "http://c/#***"},
      {"http://h/a\nFORGED", "http://h/***"}, /* no new log line */
      /* malformed: nothing beyond the scheme */
      {"http://token=SECRET/v1/metrics", "http://***"},
      {"http://user:SECRET/v1/metrics", "http://***"},  /* "SECRET" would be a port */
      {"http://c:99999/", "http://***"},
      {"http://[::1/SECRET", "http://***"},
      {"http://h o/SECRET", "http://***"},
      {"http://", "http://***"},
      {"grpc://u:SECRET@h:4317?key=SECRET", "grpc://***@h:4317?***"},
      /* no scheme: nothing */
      {"u:SECRET@h:4318/v1", "***"},
      {"localhost:4318", "***"},
      {"SECRET", "***"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_STR(ins_otlp_url_redact(cases[i][0], out, sizeof out), cases[i][1]);
  CHECK_STR(ins_otlp_url_redact(NULL, out, sizeof out), "");
  CHECK_STR(ins_net_url_shown("http://c/v1/metrics", NULL, out, sizeof out), "http://c/***"); /* no safe path */
  /* very long: cut to the buffer, and says so; what is cut never shows a secret either */
  static char longurl[9000];
  snprintf(longurl, sizeof longurl, "http://u:SECRET/%04000d@", 0);
  size_t n = strlen(longurl);
  for (int i = 0; i < 25; i++) n += (size_t)snprintf(longurl + n, sizeof longurl - n, "abcdefgh.");
  snprintf(longurl + n, sizeof longurl - n, "x:4318/SECRET%04000d?token=SECRET#SECRET", 0);
  CHECK_STR(ins_otlp_url_redact(longurl, out, sizeof out) + 7 + 4 + 225, "x:4318/***?***#***");
  char small[64];
  const char *r = ins_otlp_url_redact(longurl, small, sizeof small);
  CHECK_EQ_U(strlen(r), sizeof small - 1);
  CHECK(!strcmp(r + strlen(r) - 3, "..."));
  CHECK(!strncmp(r, "http://***@abcdefgh.abcdefgh.", 29));
  CHECK(strstr(r, "SECRET") == NULL);
  snprintf(longurl, sizeof longurl, "http://collector:4318/%08000d?token=SECRET", 0); /* a path too long to send */
  CHECK_STR(ins_otlp_url_redact(longurl, out, sizeof out), "http://collector:4318/***?***");
}

/* Every warning that shows an endpoint shows it redacted: the configuration's (a wrong
 * scheme, a URL too long) and the exporter's (a URL it cannot use). */
static void case_endpoint_warnings_redacted(void) {
  struct ins_otlp_config c;
  setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://user:PASSWORD@h:21/v1/metrics?token=TOKEN", 1);
  ins_otlp_config_load(&c);
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  static char longbase[2200];
  snprintf(longbase, sizeof longbase, "http://collector/%02100d?token=TOKEN", 0);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", longbase, 1);
  ins_otlp_config_load(&c);
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  endpoint(NULL, NULL);
  snprintf(g_ep.url, sizeof g_ep.url, "http://user:PASSWORD@collector:4318/v1/metrics?token=TOKEN");
  CHECK(start(4) == NULL);
  CHECK_EQ_U(count_all_msgs(), 3);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT='ftp://***@h:21/v1/metrics?***'", NULL), 1);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_ENDPOINT='http://collector/***?***'", NULL), 1);
  CHECK_EQ_U(count_msgs("the endpoint http://***@collector:4318/v1/metrics?***", "user:password@", NULL), 1);
  CHECK_EQ_U(count_msgs("PASSWORD", NULL), 0);
  CHECK_EQ_U(count_msgs("TOKEN", NULL), 0);
}

/* A base endpoint with a query: /v1/metrics goes to the end of its path, not of the query
 * (which a warning would then show as a value, and the collector would not route). */
static void case_base_endpoint_with_query(void) {
  struct ins_otlp_config c;
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/otlp/?tenant=a#f", 1);
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://collector:4318/otlp/v1/metrics?tenant=a#f");
  ins_otlp_config_free(&c);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318?tenant=a", 1);
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://collector:4318/v1/metrics?tenant=a");
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  CHECK_EQ_U(count_all_msgs(), 0);
}

/* An endpoint with an empty port ("http://collector:/") is sent to OTLP/HTTP's port 4318, not
 * to the scheme's default (80, 443) where no collector listens, with one warning that names the
 * variable, the port used and the URL (redacted); a port that is given stays as it is. */
static void case_endpoint_empty_port(void) {
  static const struct {
    const char *var, *value, *url, *scheme_port, *shown;
  } k[] = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:/", "http://collector:4318/v1/metrics", "80",
       "http://collector:/"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:", "http://collector:4318/v1/metrics", "80",
       "http://collector:"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://[::1]:/otlp", "https://[::1]:4318/otlp/v1/metrics", "443",
       "https://[::1]:/***"}, /* a path other than /v1/metrics is not shown */
      {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:/otlp/v1/metrics",
       "http://collector:4318/otlp/v1/metrics", "80", "http://collector:/***"},
  };
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    int before = count_all_msgs();
    setenv(k[i].var, k[i].value, 1);
    struct ins_otlp_config c;
    ins_otlp_config_load(&c);
    unsetenv(k[i].var);
    CHECK_STR(c.ep.url, k[i].url);
    struct ins_net_url u;
    char why[128] = "";
    CHECK(ins_net_url_parse(&u, c.ep.url, why, sizeof why) == 0);
    CHECK_STR(u.port, "4318");
    ins_otlp_config_free(&c);
    CHECK_EQ_U(count_all_msgs() - before, 1);
    char named[160], scheme[64];
    snprintf(named, sizeof named, "%s='%s' has an empty port", k[i].var, k[i].shown);
    snprintf(scheme, sizeof scheme, "not the scheme's %s", k[i].scheme_port);
    CHECK_EQ_U(count_msgs(named, "using port 4318", scheme, NULL), 1);
  }
  /* credentials in the URL stay out of the warning; a given port is kept, without a word */
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:SECRET@collector:/?token=TOKEN", 1);
  struct ins_otlp_config c;
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://user:SECRET@collector:4318/v1/metrics?token=TOKEN");
  ins_otlp_config_free(&c);
  CHECK_EQ_U(count_msgs("'http://***@collector:/?***' has an empty port", "'http://***@collector:4318/?***'",
                        NULL), 1);
  CHECK_EQ_U(count_msgs("SECRET", NULL) + count_msgs("TOKEN", NULL), 0);
  int before = count_all_msgs();
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:80/", 1);
  ins_otlp_config_load(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  CHECK_STR(c.ep.url, "http://collector:80/v1/metrics");
  ins_otlp_config_free(&c);
  CHECK_EQ_U(count_all_msgs() - before, 0);
}

/* Headers the exporter writes itself are dropped from OTEL_EXPORTER_OTLP_HEADERS with
 * one warning that names them and shows no value; the others are kept as given. */
static void case_reserved_headers_dropped(void) {
  setenv("OTEL_EXPORTER_OTLP_HEADERS",
         "Host=evil.example,content-length=5,Transfer-Encoding=chunked,x-ok=fine%3Dyes,"
         "CONNECTION=close,User-Agent=mine,authorization=Bearer%20tok",
         1);
  struct ins_otlp_config c;
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.headers, "x-ok: fine=yes\r\nauthorization: Bearer tok\r\n");
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
  CHECK_EQ_U(count_all_msgs(), 1);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_HEADERS", "Host, content-length, Transfer-Encoding, CONNECTION, "
                        "User-Agent", "dropped", NULL), 1);
  CHECK_EQ_U(count_msgs("evil", NULL) + count_msgs("chunked", NULL) + count_msgs("mine", NULL), 0);
  CHECK_EQ_U(count_msgs("tok", NULL), 0);
  /* the rule itself: any case, whole names only */
  CHECK(ins_http_header_reserved("HOST", 4) && ins_http_header_reserved("te", 2));
  CHECK(ins_http_header_reserved("Content-Encoding", 16) && ins_http_header_reserved("expect", 6));
  CHECK(!ins_http_header_reserved("Hostname", 8) && !ins_http_header_reserved("X-Host", 6));
  CHECK(!ins_http_header_reserved("Authorization", 13));
}

/* Reserved headers handed to the transport directly (not through the configuration) are
 * never sent: the collector sees one Host and one Content-Length, ours, and the body;
 * through our client, and through libcurl (which would let a given Host or
 * Content-Length replace its own) where it is installed. */
static void reserved_not_sent(bool curl) {
  ins_otlp_test_hooks.curl_for_http = curl;
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  g_ep.headers = "Host: evil.example\r\nContent-Length: 99\r\nX-Ok: 1\r\ntransfer-encoding: chunked\r\n"
                 "Connection: close\r\n";
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("framed once");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(body_is_str(&r, 1, "framed once"));
  char *h = receiver_file(&r, 1, "headers", NULL);
  CHECK(h != NULL);
  char host[64];
  snprintf(host, sizeof host, "\nHost: 127.0.0.1:%d\n", r.port);
  int hosts = 0, lengths = 0, te = 0, conn = 0;
  for (const char *p = h; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
    hosts += !strncasecmp(p, "Host:", 5);
    lengths += !strncasecmp(p, "Content-Length:", 15);
    te += !strncasecmp(p, "Transfer-Encoding:", 18);
    conn += !strncasecmp(p, "Connection:", 11);
  }
  CHECK_EQ_U(hosts, 1);
  CHECK_EQ_U(lengths, 1);
  CHECK_EQ_U(te + conn, 0);
  CHECK(h && (strstr(h, host) || !strncmp(h, host + 1, strlen(host + 1))));
  CHECK(h && strstr(h, "\nContent-Length: 11\n"));
  CHECK(h && strstr(h, "\nX-Ok: 1\n"));
  free(h);
  receiver_stop(&r);
  ins_otlp_test_hooks.curl_for_http = false;
}

static void case_reserved_headers_not_sent(void) {
  reserved_not_sent(false);
  if (libcurl_here()) reserved_not_sent(true);
  else fprintf(stderr, "libcurl is not installed: its path is not checked\n");
}

/* ============================================================================ */

struct test_case {
  const char *name;
  void (*fn)(void);
  bool receiver;      /* needs tests/otlp_receiver.py: listed only with a --python */
  const char *labels; /* its own ctest labels (cases.h list_case): threads where it runs the
                         exporter's thread */
};

static const struct test_case k_cases[] = {
    {"retry_schedule", case_retry_schedule, false},
    {"verdicts", case_verdicts, false},
    {"retry_after_parse", case_retry_after_parse, false},
    {"url_parse", case_url_parse, false},
    {"response_parser", case_response_parser, false},
    {"partial_success_parse", case_partial_success_parse, false},
    {"start_refusals", case_start_refusals, false},
    {"https_without_libcurl", case_https_without_libcurl, false},
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
    {"http_does_not_load_libcurl", case_http_does_not_load_libcurl, true, "threads"},
    {"libcurl_transport", case_libcurl_transport, true, "threads"},
    {"libcurl_stop_with_silent_collector", case_libcurl_stop_with_silent_collector, true, "threads"},
    {"https_with_libcurl", case_https_with_libcurl, true, "threads"},
    {"two_processes", case_two_processes, true, "threads"},
    {"endpoint_with_path", case_endpoint_with_path, true, "threads"},
    {"headers_intact", case_headers_intact, true, "threads"},
    {"idle_connection_closed_by_server", case_idle_connection_closed_by_server, true, "threads"},
    {"fork_child_never_sends", case_fork_child_never_sends, true, "threads"},
    {"interim_answers_bounded", case_interim_answers_bounded, false},
    {"url_redact", case_url_redact, false},
    {"endpoint_warnings_redacted", case_endpoint_warnings_redacted, false},
    {"reserved_headers_dropped", case_reserved_headers_dropped, false},
    {"base_endpoint_with_query", case_base_endpoint_with_query, false},
    {"endpoint_empty_port", case_endpoint_empty_port, false},
    {"lookup_is_bounded", case_lookup_is_bounded, false},
    {"endless_interim_answers", case_endless_interim_answers, false, "threads"},
    {"endless_answer_body", case_endless_answer_body, false, "threads"},
    {"answer_ready_past_deadline", case_answer_ready_past_deadline, false, "threads"},
    {"lookup_through_libanl", case_lookup_through_libanl, true, "threads"},
    {"lookup_fallback", case_lookup_fallback, true, "threads"},
    {"reserved_headers_not_sent", case_reserved_headers_not_sent, true, "threads"},
};

int main(int argc, char **argv) {
  const char *only = NULL;
  bool list = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) list = true;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--python") && i + 1 < argc) g_python = argv[++i];
    else if (!strcmp(argv[i], "--receiver") && i + 1 < argc) g_receiver_py = argv[++i];
    else if (!strcmp(argv[i], "--no-receiver")) g_python = ""; /* no python to run it */
  }
  if (list) { /* the cases this command line can run: a collector needs a python */
    for (size_t k = 0; k < sizeof k_cases / sizeof *k_cases; k++)
      if (!k_cases[k].receiver || *g_python) list_case(k_cases[k].name, k_cases[k].labels);
    return 0;
  }
  ins_log_set_logger(logger);
  int ran = 0;
  for (size_t k = 0; k < sizeof k_cases / sizeof *k_cases; k++) {
    if (only && strcmp(only, k_cases[k].name)) continue;
    ran++;
    if (only) {
      k_cases[k].fn();
      continue;
    }
    /* all cases: each in a child of its own (hooks, captured messages, loaded libraries) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      k_cases[k].fn();
      fflush(NULL);
      _exit(g_fail ? 1 : 0);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("%s: %s\n", k_cases[k].name, ok ? "ok" : "FAILED");
    if (ok) g_pass++;
    else g_fail++;
  }
  if (!ran) {
    fprintf(stderr, "no case named %s (--list)\n", only ? only : "?");
    return 2;
  }
  return check_report(only ? only : "otlp_export");
}
