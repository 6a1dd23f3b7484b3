/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http1_conn.c - the plain HTTP/1.1 client's connection (src/net/http1.c) and its
 * answer's length (http1_resp.c, RFC 9112 6.3), against a server of the test's own on
 * 127.0.0.1 that answers each request with bytes the case gives:
 *   extra_same_read    an answer followed, in the same write, by a second answer nobody
 *                      asked for, or by garbage past its Content-Length: the next request
 *                      goes on a new connection and gets its own answer;
 *   unasked_later      a second answer written after the first was read, while the
 *                      connection is idle: the same (it is not taken for the next answer);
 *   te_not_chunked     Transfer-Encoding gzip, or chunked then gzip (chunked not last),
 *                      even beside a Content-Length: the body runs to the close, which
 *                      ends the connection; "gzip, chunked" is delimited by its chunks.
 * Every wait is bounded and for a condition (a byte readable, a request counted), never for
 * a time. Runs with OTLP on (src/net/ is built only then).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"
#include "net/http1.h"
#include "net/http1_resp.h"
#include "net/url.h"

#define MAXC 8

/* The server: answers request k with answer[k] (one write), then closes the connection if
 * close_after[k]. Which connection (1, 2, ...) each request came on. */
struct srv {
  int lfd, port;
  pthread_mutex_t mu;
  const char *answer[MAXC];
  bool close_after[MAXC];
  int fd[MAXC + 1];       /* by connection number; -1 closed */
  char buf[MAXC + 1][8192];
  size_t got[MAXC + 1];
  int conns, nreq, send_failed;
  int req_conn[MAXC];
  atomic_bool stop;
  pthread_t thread;
};

/* A whole request at the start of b (head and Content-Length body): its length, or 0. */
static size_t request_len(const char *b, size_t n) {
  const char *end = memmem(b, n, "\r\n\r\n", 4);
  if (!end) return 0;
  size_t head = (size_t)(end - b) + 4, body = 0;
  const char *cl = memmem(b, head, "Content-Length: ", 16);
  if (cl) body = strtoul(cl + 16, NULL, 10);
  return n >= head + body ? head + body : 0;
}

static void *srv_main(void *arg) {
  struct srv *s = arg;
  while (!atomic_load(&s->stop)) {
    struct pollfd p[MAXC + 2];
    int np = 0, which[MAXC + 2];
    p[np] = (struct pollfd){.fd = s->lfd, .events = POLLIN}, which[np++] = 0;
    pthread_mutex_lock(&s->mu);
    for (int c = 1; c <= s->conns; c++)
      if (s->fd[c] >= 0) p[np] = (struct pollfd){.fd = s->fd[c], .events = POLLIN}, which[np++] = c;
    pthread_mutex_unlock(&s->mu);
    if (poll(p, (nfds_t)np, 50) <= 0) continue; /* 50 ms: to look at stop */
    for (int i = 0; i < np; i++) {
      if (!p[i].revents) continue;
      int c = which[i];
      pthread_mutex_lock(&s->mu);
      if (c == 0) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd >= 0 && s->conns < MAXC) s->fd[++s->conns] = fd;
        else if (fd >= 0) close(fd);
      } else {
        ssize_t n = recv(s->fd[c], s->buf[c] + s->got[c], sizeof s->buf[c] - s->got[c], 0);
        if (n <= 0) {
          close(s->fd[c]);
          s->fd[c] = -1;
        } else {
          s->got[c] += (size_t)n;
          size_t len;
          while (s->fd[c] >= 0 && (len = request_len(s->buf[c], s->got[c])) && s->nreq < MAXC) {
            int k = s->nreq++;
            s->req_conn[k] = c;
            memmove(s->buf[c], s->buf[c] + len, s->got[c] - len);
            s->got[c] -= len;
            const char *a = s->answer[k] ? s->answer[k] : "HTTP/1.1 503 No Answer Given\r\nContent-Length: 0\r\n\r\n";
            /* (no CHECK on this thread: check.h's counts are the main thread's) */
            if (send(s->fd[c], a, strlen(a), MSG_NOSIGNAL) != (ssize_t)strlen(a)) s->send_failed++;
            if (s->close_after[k]) {
              close(s->fd[c]);
              s->fd[c] = -1;
            }
          }
        }
      }
      pthread_mutex_unlock(&s->mu);
    }
  }
  return NULL;
}

/* Answers a0 (closing after it if close0), then a1, set before the thread starts. */
static bool srv_start(struct srv *s, const char *a0, bool close0, const char *a1) {
  memset(s, 0, sizeof *s);
  s->answer[0] = a0, s->close_after[0] = close0, s->answer[1] = a1;
  for (int c = 0; c <= MAXC; c++) s->fd[c] = -1;
  pthread_mutex_init(&s->mu, NULL);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 8) ||
      getsockname(s->lfd, (struct sockaddr *)&a, &al))
    return false;
  s->port = ntohs(a.sin_port);
  return pthread_create(&s->thread, NULL, srv_main, s) == 0;
}

static void srv_stop(struct srv *s) {
  atomic_store(&s->stop, true);
  pthread_join(s->thread, NULL);
  CHECK_EQ_U(s->send_failed, 0);
  for (int c = 1; c <= s->conns; c++)
    if (s->fd[c] >= 0) close(s->fd[c]);
  close(s->lfd);
  pthread_mutex_destroy(&s->mu);
}

/* Bytes on connection c, from the server, unasked. */
static void srv_send(struct srv *s, int c, const char *bytes) {
  pthread_mutex_lock(&s->mu);
  CHECK(s->fd[c] >= 0 && send(s->fd[c], bytes, strlen(bytes), MSG_NOSIGNAL) == (ssize_t)strlen(bytes));
  pthread_mutex_unlock(&s->mu);
}

static int srv_req_conn(struct srv *s, int k) {
  pthread_mutex_lock(&s->mu);
  int c = k < s->nreq ? s->req_conn[k] : 0;
  pthread_mutex_unlock(&s->mu);
  return c;
}

/* One POST through h, with a deadline 20 s away (only a failure reaches it). */
static void post(struct srv *s, struct ins_http1 *h, struct ins_http_result *res) {
  char url[64], why[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/metrics", s->port);
  struct ins_net_url u;
  CHECK(ins_net_url_parse(&u, url, why, sizeof why) == 0);
  struct ins_http_req req = {.content_type = "application/x-protobuf", .body = "body", .len = 4};
  memset(res, 0, sizeof *res);
  ins_http1_post(h, &u, &req, NULL, ins_mono_ns() + 20000000000ull, res);
}

static const char k_second[] = "HTTP/1.1 202 Accepted\r\nContent-Length: 6\r\n\r\nsecond";

/* The first answer (with what follows it in the same write), then a second request: it
 * must come on a new connection and get its own answer. */
static void after_answer(const char *first) {
  struct srv s;
  CHECK(srv_start(&s, first, false, k_second));
  static struct ins_http1 h;
  ins_http1_init(&h);
  static struct ins_http_result res;
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 200);
  CHECK(res.body_len == 2 && !memcmp(res.body, "ok", 2));
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 202);
  CHECK(res.body_len == 6 && !memcmp(res.body, "second", 6));
  CHECK_EQ_U(srv_req_conn(&s, 0), 1);
  CHECK_EQ_U(srv_req_conn(&s, 1), 2); /* a new connection */
  ins_http1_free(&h);
  srv_stop(&s);
}

static void case_extra_same_read(void) {
  after_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
               "HTTP/1.1 500 Unasked\r\nContent-Length: 0\r\n\r\n");
  after_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE past the length");
}

static void case_unasked_later(void) {
  struct srv s;
  CHECK(srv_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, k_second));
  static struct ins_http1 h;
  ins_http1_init(&h);
  static struct ins_http_result res;
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 200);
  CHECK(h.fd >= 0); /* kept: HTTP/1.1, a delimited answer */
  /* then, on the idle connection, an answer nobody asked for; waited for until it is in
   * the client's socket */
  srv_send(&s, 1, "HTTP/1.1 500 Unasked\r\nContent-Length: 0\r\n\r\n");
  struct pollfd p = {.fd = h.fd, .events = POLLIN};
  CHECK(h.fd >= 0 && poll(&p, 1, 20000) == 1);
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 202);
  CHECK(res.body_len == 6 && !memcmp(res.body, "second", 6));
  CHECK_EQ_U(srv_req_conn(&s, 1), 2);
  ins_http1_free(&h);
  srv_stop(&s);
}

/* The answer has Transfer-Encoding te (and maybe a Content-Length that it overrides) and
 * a body of 6 bytes, then the server closes: the body is all 6, and the next request goes
 * on a new connection. */
static void te_case(const char *first) {
  struct srv s;
  CHECK(srv_start(&s, first, true, k_second));
  static struct ins_http1 h;
  ins_http1_init(&h);
  static struct ins_http_result res;
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 200);
  CHECK_EQ_U(res.body_len, 6);
  CHECK(!memcmp(res.body, "\x1f\x8b" "abcd", 6));
  CHECK(h.fd < 0); /* not kept */
  post(&s, &h, &res);
  CHECK_EQ_U(res.status, 202);
  CHECK_EQ_U(srv_req_conn(&s, 1), 2);
  ins_http1_free(&h);
  srv_stop(&s);
}

static void case_te_not_chunked(void) {
  /* the parser: delimited by the close, not kept, whatever the Content-Length says */
  static const char *const heads[] = {
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
  };
  static struct ins_http_resp r;
  char text[256];
  for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
    snprintf(text, sizeof text, "%s\x1f\x8b" "abcd", heads[i]);
    ins_http_resp_init(&r);
    CHECK_EQ_U(ins_http_resp_feed(&r, text, strlen(text)), strlen(text));
    CHECK(r.state == INS_RESP_BODY_EOF);
    CHECK(!r.keep_alive);
    ins_http_resp_eof(&r);
    CHECK(r.state == INS_RESP_DONE);
    CHECK_EQ_U(r.body_len, 6);
    te_case(text);
  }
  /* gzip then chunked: the chunks delimit it (RFC 9112 6.3: chunked is the final coding),
   * and what follows the last chunk is not the body's */
  const char *gc = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n6\r\n\x1f\x8b" "abcd\r\n0\r\n\r\n";
  snprintf(text, sizeof text, "%sNEXT", gc);
  ins_http_resp_init(&r);
  CHECK_EQ_U(ins_http_resp_feed(&r, text, strlen(text)), strlen(gc));
  CHECK(r.state == INS_RESP_DONE && r.keep_alive);
  CHECK_EQ_U(r.body_len, 6);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"extra_same_read", case_extra_same_read},
               {"unasked_later", case_unasked_later},
               {"te_not_chunked", case_te_not_chunked}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run |= !strcmp(argv[a], cases[i].name);
    if (run) cases[i].fn();
  }
  return check_report("http1_conn");
}
