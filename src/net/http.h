/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - one keep-alive HTTP connection to an endpoint, over which a request
 * body is POSTed and the answer reported: a status, a Retry-After, the start of
 * the body, or why nothing came back. Two clients behind it: our own plain
 * HTTP/1.1 client (http1.c, libc only) for http://, libcurl (curl.c, loaded with
 * dlopen) for https://. Every wait is bounded by the request's deadline and cut
 * short by the caller's stop (struct ins_net_cut).
 *
 * It decides nothing: what an answer means (retry, drop, a partial success) is
 * the caller's protocol's (sink/otlp/otlp_rules.c), and so is logging. Neither client
 * follows redirects: an endpoint that redirects is misconfigured, and following
 * would resend bodies (and headers with credentials) to wherever it points.
 */
#ifndef INS_NET_HTTP_H
#define INS_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http1_resp.h"
#include "net/net.h"
#include "net/url.h"

/* What one POST came to. */
struct ins_http_result {
  int status;             /* the HTTP status; 0 when no answer came back */
  bool timed_out;         /* no answer within the deadline (or before stop's) */
  char why[160];          /* no answer: what went wrong (connection refused, ...) */
  char retry_after[64];   /* the Retry-After header's value, "" when absent */
  bool json;              /* the answer's Content-Type is application/json */
  size_t body_len;        /* the start of the answer's body (a protocol's error or */
  char body[INS_HTTP_RESP_KEEP]; /* partial-success message is far shorter) */
};

struct ins_http_req {
  const char *content_type; /* the body's Content-Type */
  bool gzip;                /* Content-Encoding: gzip */
  const char *headers;      /* "Key: value\r\n" each, sent as given (but for the reserved
                             * ones: below); NULL for none */
  const char *body;
  size_t len;
};

/* A header the transport writes itself, or one that says how the request is framed
 * or carried (Host, Content-Length, Transfer-Encoding, Connection, Content-Type,
 * Content-Encoding, User-Agent, Expect and the other hop-by-hop fields; any case).
 * Given again among the extra headers it would stand beside ours and desynchronise
 * the request (two lengths, two hosts, a chunked claim over a counted body): a
 * caller's configuration drops such headers with a warning, and the transport never
 * sends them (a caller that did not ask the configuration). name: len bytes, no colon. */
bool ins_http_header_reserved(const char *name, size_t len);
/* A "Name: value" line (n bytes) whose name is reserved: the clients skip it. */
bool ins_http_line_reserved(const char *line, size_t n);

struct ins_http_conn;

/* A connection to u (nothing is opened until the first post). use_curl: through
 * libcurl (https, or http when a test asks); NULL with the reason in why if libcurl
 * cannot be loaded, or without memory. Call it on a thread where libcurl's global
 * initialisation may run (curl.c). */
struct ins_http_conn *ins_http_conn_new(const struct ins_net_url *u, bool use_curl, char *why,
                                        size_t whylen);
/* POSTs one body, bounded by deadline_ns (CLOCK_MONOTONIC) and the cut: every step
 * (name lookup, connect, send, each read of the answer) looks at the deadline, so a
 * resolver that never answers, or a server that sends without end (an answer that
 * never completes, interim answers) cannot hold it longer. Fills res:
 * a status, or status 0 and why. Reuses the open connection; a reused connection
 * that fails before any byte of an answer (the server closed it while idle) is
 * replaced once, at once, as HTTP clients do. */
void ins_http_conn_post(struct ins_http_conn *c, const struct ins_http_req *req,
                        const struct ins_net_cut *cut, uint64_t deadline_ns,
                        struct ins_http_result *res);
/* Closes the connection (the next post opens a new one). */
void ins_http_conn_close(struct ins_http_conn *c);
void ins_http_conn_free(struct ins_http_conn *c);

#endif
