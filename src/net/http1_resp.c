/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http1_resp.c - the HTTP/1.1 response parser (see http1_resp.h). Every limit
 * (line, header bytes, interim answers) is a bound on what a server can make a
 * client hold or loop over; the parser keeps the start of the body only.
 */
#include "net/http1_resp.h"

#include <assert.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "net/net.h"

void ins_http_resp_init(struct ins_http_resp *r) {
  r->state = INS_RESP_HEAD;
  r->status = 0;
  r->keep_alive = false;
  r->chunked = false;
  r->saw_status = false;
  r->http11 = false;
  r->conn_close = r->conn_keep = r->te_other = false;
  r->content_length = -1;
  r->left = 0;
  r->head_bytes = 0;
  r->interim = 0;
  r->retry_after[0] = r->content_type[0] = '\0';
  r->error = NULL;
  r->line_len = 0;
  r->body_len = 0;
  r->body_total = 0;
}

static void resp_fail(struct ins_http_resp *r, const char *why) {
  r->state = INS_RESP_ERROR;
  r->error = why;
}

static void resp_keep(struct ins_http_resp *r, const char *p, size_t n) {
  size_t room = INS_HTTP_RESP_KEEP - r->body_len;
  memcpy(r->body + r->body_len, p, n < room ? n : room);
  r->body_len += n < room ? n : room;
  r->body_total += n;
}

/* Case-insensitive "does the comma-separated list v hold token t". */
static bool list_has(const char *v, const char *t) {
  size_t tl = strlen(t);
  for (const char *p = v; *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    size_t n = strcspn(p, ",");
    size_t m = n;
    while (m && (p[m - 1] == ' ' || p[m - 1] == '\t')) m--;
    if (m == tl && !strncasecmp(p, t, tl)) return true;
    p += n;
  }
  return false;
}

/* The last coding of a Transfer-Encoding list is "chunked" (RFC 9112 6.3). */
static bool last_is_chunked(const char *v) {
  const char *c = strrchr(v, ',');
  c = c ? c + 1 : v;
  while (*c == ' ' || *c == '\t') c++;
  return !strncasecmp(c, "chunked", 7) && (c[7] == '\0' || c[7] == ' ' || c[7] == '\t');
}

static void resp_status_line(struct ins_http_resp *r, const char *l) {
  /* HTTP/1.x SP 3DIGIT [SP reason] */
  if (strncmp(l, "HTTP/1.", 7) || !isdigit((unsigned char)l[7]) || l[8] != ' ' ||
      !isdigit((unsigned char)l[9]) || !isdigit((unsigned char)l[10]) || !isdigit((unsigned char)l[11]) ||
      (l[12] != '\0' && l[12] != ' ')) {
    resp_fail(r, "not an HTTP/1.x status line");
    return;
  }
  r->http11 = l[7] != '0';
  r->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
  if (r->status < 100) resp_fail(r, "a status below 100");
  r->saw_status = true;
}

static void resp_field(struct ins_http_resp *r, char *l) {
  if (*l == ' ' || *l == '\t') return; /* obs-fold: a continuation; nothing we read folds */
  char *colon = strchr(l, ':');
  if (!colon || colon == l) {
    resp_fail(r, "a header line without a name");
    return;
  }
  *colon = '\0';
  char *v = colon + 1;
  while (*v == ' ' || *v == '\t') v++;
  size_t vl = strlen(v);
  while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) v[--vl] = '\0';
  if (!strcasecmp(l, "Content-Length")) {
    int64_t n = 0;
    if (!*v) { resp_fail(r, "an empty Content-Length"); return; }
    for (const char *p = v; *p; p++) {
      if (!isdigit((unsigned char)*p) || n > INT64_MAX / 10 - 10) {
        resp_fail(r, "a bad Content-Length");
        return;
      }
      n = n * 10 + (*p - '0');
    }
    if (r->content_length >= 0 && r->content_length != n) {
      resp_fail(r, "two different Content-Lengths");
      return;
    }
    r->content_length = n;
  } else if (!strcasecmp(l, "Transfer-Encoding")) {
    r->chunked = last_is_chunked(v);
    r->te_other = !r->chunked;
  } else if (!strcasecmp(l, "Connection")) {
    if (list_has(v, "close")) r->conn_close = true;
    if (list_has(v, "keep-alive")) r->conn_keep = true;
  } else if (!strcasecmp(l, "Retry-After")) {
    ins_net_copy_text(r->retry_after, sizeof r->retry_after, v, vl);
  } else if (!strcasecmp(l, "Content-Type")) {
    ins_net_copy_text(r->content_type, sizeof r->content_type, v, vl);
  }
}

/* The empty line after the fields: how the body is delimited (RFC 9112 6.3). */
static void resp_head_end(struct ins_http_resp *r) {
  if (r->status < 200) { /* 1xx: an interim answer; the final one follows */
    if (r->status == 101) { resp_fail(r, "101 Switching Protocols"); return; }
    /* A server that sends interim answers without end would hold the request as long
     * as it likes: their number is bounded, and their header bytes count towards the
     * answer's (neither is reset with the rest of the state). */
    unsigned interim = r->interim + 1;
    size_t head_bytes = r->head_bytes;
    bool http11 = r->http11;
    ins_http_resp_init(r);
    r->http11 = http11;
    r->interim = interim;
    r->head_bytes = head_bytes;
    if (interim > INS_HTTP_RESP_MAX_INTERIM) resp_fail(r, "too many interim (1xx) answers");
    return;
  }
  r->keep_alive = !r->conn_close && (r->http11 || r->conn_keep);
  if (r->status == 204 || r->status == 304) {
    r->state = INS_RESP_DONE;
  } else if (r->chunked) {
    r->state = INS_RESP_CHUNK_SIZE;
  } else if (r->te_other) { /* a coding we cannot delimit: the body ends with the connection */
    r->state = INS_RESP_BODY_EOF;
    r->keep_alive = false;
  } else if (r->content_length >= 0) {
    r->left = (uint64_t)r->content_length;
    r->state = r->left ? INS_RESP_BODY_LEN : INS_RESP_DONE;
  } else {
    r->state = INS_RESP_BODY_EOF;
    r->keep_alive = false;
  }
}

static void resp_line(struct ins_http_resp *r, char *l) {
  switch (r->state) {
  case INS_RESP_HEAD:
    if (!r->saw_status) {
      if (*l) resp_status_line(r, l); /* empty lines before a status line are tolerated */
    } else if (*l) {
      resp_field(r, l);
    } else {
      resp_head_end(r);
    }
    break;
  case INS_RESP_CHUNK_SIZE: {
    uint64_t n = 0;
    const char *p = l;
    if (!isxdigit((unsigned char)*p)) { resp_fail(r, "a bad chunk size"); return; }
    for (; isxdigit((unsigned char)*p); p++) {
      if (n >> 56) { resp_fail(r, "a chunk too large"); return; }
      int digit = isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10;
      n = n * 16 + (uint64_t)digit;
    }
    while (*p == ' ' || *p == '\t') p++;
    if (*p && *p != ';') { resp_fail(r, "a bad chunk size"); return; }
    r->left = n;
    r->state = n ? INS_RESP_CHUNK_DATA : INS_RESP_TRAILERS;
    break;
  }
  case INS_RESP_CHUNK_END:
    if (*l) { resp_fail(r, "no CRLF after a chunk"); return; }
    r->state = INS_RESP_CHUNK_SIZE;
    break;
  case INS_RESP_TRAILERS:
    if (!*l) r->state = INS_RESP_DONE;
    break;
  default:
    assert(!"a line in a body state");
  }
}

static bool line_state(enum ins_http_resp_state s) {
  return s == INS_RESP_HEAD || s == INS_RESP_CHUNK_SIZE || s == INS_RESP_CHUNK_END || s == INS_RESP_TRAILERS;
}

size_t ins_http_resp_feed(struct ins_http_resp *r, const char *p, size_t n) {
  size_t i = 0;
  while (i < n && r->state != INS_RESP_DONE && r->state != INS_RESP_ERROR) {
    if (line_state(r->state)) {
      const char *nl = memchr(p + i, '\n', n - i);
      size_t take = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
      if (r->state == INS_RESP_HEAD || r->state == INS_RESP_TRAILERS) {
        r->head_bytes += take;
        if (r->head_bytes > INS_HTTP_RESP_HEAD) {
          resp_fail(r, "the answer's headers are too large");
          break;
        }
      }
      if (r->line_len + take > INS_HTTP_RESP_LINE) {
        resp_fail(r, "a line of the answer is too long");
        break;
      }
      memcpy(r->line + r->line_len, p + i, take);
      r->line_len += take;
      i += take;
      if (!nl) break;
      size_t len = r->line_len - 1; /* without the LF; a CR before it goes too (bare LF is tolerated) */
      if (len && r->line[len - 1] == '\r') len--;
      r->line[len] = '\0';
      r->line_len = 0;
      if (memchr(r->line, '\0', len)) {
        resp_fail(r, "a NUL byte in the answer's headers");
        break;
      }
      resp_line(r, r->line);
    } else if (r->state == INS_RESP_BODY_EOF) {
      resp_keep(r, p + i, n - i);
      i = n;
    } else { /* BODY_LEN, CHUNK_DATA */
      size_t take = n - i;
      if (take > r->left) take = (size_t)r->left;
      resp_keep(r, p + i, take);
      r->left -= take;
      i += take;
      if (!r->left) r->state = r->state == INS_RESP_BODY_LEN ? INS_RESP_DONE : INS_RESP_CHUNK_END;
    }
  }
  return i;
}

void ins_http_resp_eof(struct ins_http_resp *r) {
  if (r->state == INS_RESP_BODY_EOF) {
    r->state = INS_RESP_DONE;
  } else if (r->state != INS_RESP_DONE && r->state != INS_RESP_ERROR) {
    resp_fail(r, r->saw_status || r->head_bytes ? "the connection closed in the middle of the answer"
                                                : "the connection closed without an answer");
  }
}
