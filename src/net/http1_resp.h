/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http1_resp.h - an HTTP/1.1 response parser (RFC 9112: status line, fields,
 * message body length), incremental and without allocation. It reads what a
 * client needs of an answer: the final status (interim 1xx answers skipped and
 * counted), whether the connection may carry the next request, Retry-After and
 * Content-Type, and the start of the body. Owns parsing only: no socket (the
 * plain client, http1.c, feeds it), no meaning of a status (the caller's rules).
 */
#ifndef INS_NET_HTTP1_RESP_H
#define INS_NET_HTTP1_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INS_HTTP_RESP_KEEP 4096  /* body bytes kept: a Status or partial success is far smaller */
#define INS_HTTP_RESP_LINE 8192  /* the longest status, header or chunk-size line */
#define INS_HTTP_RESP_HEAD (64 * 1024) /* the most header bytes accepted in a response, interim
                                          * (1xx) answers included */
/* The most interim (1xx) answers before the final one: a real server sends one or two
 * (100 Continue, 103 Early Hints); more is a server holding the request open. */
#define INS_HTTP_RESP_MAX_INTERIM 8

enum ins_http_resp_state {
  INS_RESP_HEAD,      /* status line and headers */
  INS_RESP_BODY_LEN,  /* Content-Length bytes */
  INS_RESP_BODY_EOF,  /* until the server closes (neither length nor chunked) */
  INS_RESP_CHUNK_SIZE,
  INS_RESP_CHUNK_DATA,
  INS_RESP_CHUNK_END, /* the CRLF after a chunk's data */
  INS_RESP_TRAILERS,
  INS_RESP_DONE,
  INS_RESP_ERROR,
};

struct ins_http_resp {
  enum ins_http_resp_state state;
  int status;             /* of the final (non-1xx) response */
  bool keep_alive;        /* the connection may carry the next request */
  bool chunked;
  bool saw_status;        /* a status line was parsed (for the current response) */
  bool http11;            /* HTTP/1.1 or later: keep-alive unless "Connection: close" */
  bool conn_close, conn_keep; /* the Connection header's tokens */
  bool te_other;          /* a Transfer-Encoding that does not end in chunked */
  int64_t content_length; /* -1: none */
  uint64_t left;          /* of the body or of the current chunk */
  size_t head_bytes;
  unsigned interim;       /* interim (1xx) answers before this one */
  char retry_after[64];   /* the header's value, "" when absent */
  char content_type[96];
  const char *error;      /* why INS_RESP_ERROR, for messages */
  size_t line_len;
  char line[INS_HTTP_RESP_LINE];
  size_t body_len;        /* bytes kept in body (at most INS_HTTP_RESP_KEEP) */
  uint64_t body_total;
  char body[INS_HTTP_RESP_KEEP];
};

void ins_http_resp_init(struct ins_http_resp *r);
/* Feeds n bytes; returns how many were consumed (fewer than n only once the response
 * is DONE: bytes after it belong to no request of ours, or on ERROR). */
size_t ins_http_resp_feed(struct ins_http_resp *r, const char *p, size_t n);
/* The server closed the connection: DONE if the body was delimited by the close. */
void ins_http_resp_eof(struct ins_http_resp *r);

#endif
