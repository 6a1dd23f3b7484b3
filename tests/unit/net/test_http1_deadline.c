/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http1_deadline.c - the plain HTTP/1.1 client's deadline (src/net/http1.c, through the
 * connection of net/http.c) against a server of the test's own on 127.0.0.1 that answers
 * without end: interim (1xx) answers without end are refused after a few, long before the
 * timeout; a chunked body without end ends at the timeout, as a timeout; and a deadline that
 * passes while the rest of an answer is already there to be read (the stream's end
 * included) ends the request as timed out (the network code's clock injected:
 * ins_net_test_hooks.now_ns).
 *
 * The two coarse time checks cannot be failed by a slow machine: a request to a server that
 * answers without end must end within its timeout and 3 s, not the server's 20 s (where the
 * rule can be held exactly, answer_ready_past_deadline does it on the injected clock).
 *
 *   inspector-unit-http1_deadline --list | --case NAME   (main: otlp_cases.h)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "otlp_cases.h"
#include "core/clock.h"
#include "net/http.h"
#include "net/url.h"
#include "sink/otlp/otlp_rules.h"

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

static const struct otlp_case k_cases[] = {
    {"endless_interim_answers", case_endless_interim_answers, false, "threads"},
    {"endless_answer_body", case_endless_answer_body, false, "threads"},
    {"answer_ready_past_deadline", case_answer_ready_past_deadline, false, "threads"},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "http1_deadline");
}
