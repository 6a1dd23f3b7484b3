/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http1.c - the plain HTTP/1.1 client (see http1.h). One request at a time on
 * one keep-alive connection (its caller never has two in flight, so pipelining
 * would buy nothing). Non-blocking sockets and poll() bound every step by the
 * request's deadline, and every read and write looks at it first, not only when
 * it would block: a server that always has the next byte ready (an answer
 * without end, interim 1xx answers without end, which are also counted) never
 * makes a call block.
 */
#include "net/http1.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

void ins_http1_init(struct ins_http1 *h) {
  memset(h, 0, sizeof *h);
  h->fd = -1;
}

static void why_errno(struct ins_http_result *res, const char *what, int err) {
  snprintf(res->why, sizeof res->why, "%s: %s", what, strerror(err));
}

static void why_timeout(struct ins_http_result *res, const char *what) {
  snprintf(res->why, sizeof res->why, "%s", what);
  res->timed_out = true;
}

void ins_http1_close(struct ins_http1 *h) {
  if (h->fd >= 0) close(h->fd);
  h->fd = -1;
  h->reused = false;
}

void ins_http1_free(struct ins_http1 *h) {
  ins_http1_close(h);
  ins_net_lookup_free(&h->dns);
  free(h->head);
  h->head = NULL;
  h->head_len = h->head_cap = 0;
}

/* An idle keep-alive connection the server has closed (or written to unasked)
 * shows as readable: better found now than by a failed request. */
static bool idle_ok(struct ins_http1 *h) {
  struct pollfd p = {.fd = h->fd, .events = POLLIN};
  return poll(&p, 1, 0) == 0;
}

static int plain_connect(struct ins_http1 *h, const struct ins_net_url *u, const struct ins_net_cut *cut,
                         uint64_t deadline, struct ins_http_result *res) {
  int fd = ins_net_connect(&h->dns, u->host, u->port, cut, deadline, res->why, sizeof res->why,
                           &res->timed_out);
  if (fd < 0) return -1;
  /* One request at a time, each written whole: Nagle would only hold back its tail. */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  h->fd = fd;
  h->reused = false;
  return 0;
}

/* ---- the request's head: room reserved once, then appends that never check ---- */

static int head_reserve(struct ins_http1 *h, size_t more) {
  if (h->head_len + more <= h->head_cap) return 0;
  size_t cap = h->head_cap ? h->head_cap : 4096;
  while (cap < h->head_len + more) cap *= 2;
  char *d = realloc(h->head, cap);
  if (!d) return -1;
  h->head = d;
  h->head_cap = cap;
  return 0;
}

static void head_mem(struct ins_http1 *h, const char *s, size_t n) {
  memcpy(h->head + h->head_len, s, n);
  h->head_len += n;
}
/* s must be a string literal ("" s "" makes anything else a compile error) */
#define head_lit(h, s) head_mem((h), "" s "", sizeof(s) - 1)

static int build_head(struct ins_http1 *h, const struct ins_net_url *u, const struct ins_http_req *req) {
  const char *hs = req->headers ? req->headers : "";
  size_t hl = strlen(hs);
  h->head_len = 0;
  size_t fixed = strlen(u->path) + strlen(u->host_hdr) + strlen(req->content_type) + strlen(INS_NET_USER_AGENT);
  /* 256: the names, CRLFs, a length; 2 * hl: each extra line ends in CRLF as it is
   * copied, even one that ended in a bare LF or nothing */
  if (head_reserve(h, fixed + 2 * hl + 256)) return -1;
  head_lit(h, "POST ");
  head_mem(h, u->path, strlen(u->path));
  head_lit(h, " HTTP/1.1\r\nHost: ");
  head_mem(h, u->host_hdr, strlen(u->host_hdr));
  head_lit(h, "\r\nUser-Agent: " INS_NET_USER_AGENT "\r\nContent-Type: ");
  head_mem(h, req->content_type, strlen(req->content_type));
  if (req->gzip) head_lit(h, "\r\nContent-Encoding: gzip");
  head_lit(h, "\r\nContent-Length: ");
  char len[24];
  int n = snprintf(len, sizeof len, "%zu", req->len);
  head_mem(h, len, (size_t)n);
  head_lit(h, "\r\n");
  for (const char *line = hs; *line;) {
    size_t ln = strcspn(line, "\r\n");
    if (ln && !ins_http_line_reserved(line, ln)) {
      head_mem(h, line, ln);
      head_lit(h, "\r\n");
    }
    line += ln;
    line += strspn(line, "\r\n");
  }
  head_lit(h, "\r\n");
  return 0;
}

/* 0 sent, -1 failed (errno in *err), -2 deadline. */
static int plain_send(struct ins_http1 *h, const struct ins_http_req *req, const struct ins_net_cut *cut,
                      uint64_t deadline, int *err) {
  struct iovec iov[2] = {{h->head, h->head_len}, {(void *)req->body, req->len}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  while (m.msg_iovlen) {
    if (ins_net_past_deadline(cut, deadline)) return -2;
    ssize_t n = sendmsg(h->fd, &m, MSG_NOSIGNAL); /* a closed peer is an error, not SIGPIPE */
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        *err = errno;
        return -1;
      }
      int w = ins_net_wait_fd(h->fd, POLLOUT, cut, deadline);
      if (w == 0) return -2;
      if (w < 0) {
        *err = errno;
        return -1;
      }
      continue;
    }
    size_t left = (size_t)n;
    while (m.msg_iovlen && left >= m.msg_iov[0].iov_len) {
      left -= m.msg_iov[0].iov_len;
      m.msg_iov++;
      m.msg_iovlen--;
    }
    if (m.msg_iovlen) {
      m.msg_iov[0].iov_base = (char *)m.msg_iov[0].iov_base + left;
      m.msg_iov[0].iov_len -= left;
    }
  }
  return 0;
}

/* Reads the answer into h->resp. 0 complete; -1 failed (errno in *err, 0 when the
 * parser said why); -2 deadline. *got: any byte arrived. *extra: bytes after it. */
static int plain_recv(struct ins_http1 *h, const struct ins_net_cut *cut, uint64_t deadline, int *err,
                      bool *got, bool *extra) {
  char buf[16384];
  ins_http_resp_init(&h->resp);
  for (;;) {
    if (ins_net_past_deadline(cut, deadline)) return -2;
    ssize_t n = recv(h->fd, buf, sizeof buf, 0);
    if (n > 0) {
      *got = true;
      size_t used = ins_http_resp_feed(&h->resp, buf, (size_t)n);
      if (h->resp.state == INS_RESP_DONE) {
        *extra = used < (size_t)n;
        return 0;
      }
      if (h->resp.state == INS_RESP_ERROR) {
        *err = 0;
        return -1;
      }
      continue;
    }
    if (n == 0) {
      ins_http_resp_eof(&h->resp);
      if (h->resp.state == INS_RESP_DONE) {
        h->resp.keep_alive = false;
        return 0;
      }
      *err = 0;
      return -1;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      return -1;
    }
    int w = ins_net_wait_fd(h->fd, POLLIN, cut, deadline);
    if (w == 0) return -2;
    if (w < 0) {
      *err = errno;
      return -1;
    }
  }
}

void ins_http1_post(struct ins_http1 *h, const struct ins_net_url *u, const struct ins_http_req *req,
                    const struct ins_net_cut *cut, uint64_t deadline, struct ins_http_result *res) {
  if (build_head(h, u, req) != 0) {
    snprintf(res->why, sizeof res->why, "out of memory");
    return;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    if (h->fd >= 0 && !idle_ok(h)) ins_http1_close(h);
    bool reused = h->fd >= 0;
    if (!reused && plain_connect(h, u, cut, deadline, res) != 0) return;
    int err = 0, rc = plain_send(h, req, cut, deadline, &err);
    if (rc == -2) {
      ins_http1_close(h);
      why_timeout(res, "the request could not be sent within the timeout");
      return;
    }
    /* A send that failed may have met an early answer (a 413 before the body was read,
     * then a close): read what the server said before calling it a connection error. */
    int send_err = rc == -1 ? err : 0;
    bool got = false, extra = false;
    rc = plain_recv(h, cut, deadline, &err, &got, &extra);
    if (rc == 0) {
      res->status = h->resp.status;
      ins_net_copy_text(res->retry_after, sizeof res->retry_after, h->resp.retry_after, strlen(h->resp.retry_after));
      res->json = !strncasecmp(h->resp.content_type, "application/json", 16);
      res->body_len = h->resp.body_len;
      memcpy(res->body, h->resp.body, h->resp.body_len);
      /* "Connection: close", a body delimited by the close, or bytes nobody asked for:
       * the connection cannot carry the next request */
      if (!h->resp.keep_alive || extra) ins_http1_close(h);
      else h->reused = true;
      return;
    }
    ins_http1_close(h);
    if (rc == -2) {
      why_timeout(res, got ? "the answer did not complete within the timeout"
                           : "no answer within the timeout");
      return;
    }
    /* The server closed an idle keep-alive connection as we reused it: a fresh one, at
     * once (RFC 9112 9.3.1: a client MAY retry when no part of the answer arrived). */
    if (reused && !got && attempt == 0) continue;
    if (h->resp.error && got) snprintf(res->why, sizeof res->why, "a malformed answer: %s", h->resp.error);
    else if (send_err) why_errno(res, "the request could not be sent", send_err);
    else if (err) why_errno(res, "the connection failed", err);
    else snprintf(res->why, sizeof res->why, "%s", h->resp.error ? h->resp.error : "the connection failed");
    return;
  }
}
