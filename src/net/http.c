/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c - the connection (see http.h): which client carries a request, the
 * reserved header names both clients skip, and the result every post starts
 * from. The clients are http1.c (plain) and curl.c (libcurl).
 */
#include "net/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/curl.h"
#include "net/http1.h"

/* The fields the clients write themselves (http1.c build_head, curl.c curl_headers)
 * and the ones that say how a message is framed or carried hop by hop (RFC 9110
 * 7.6.1, RFC 9112 6-7). */
static const char *const k_reserved[] = {
    "Host", "Content-Length", "Transfer-Encoding", "Connection", "Content-Type", "Content-Encoding",
    "User-Agent", "Expect", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Connection",
};

bool ins_http_header_reserved(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof k_reserved / sizeof *k_reserved; i++)
    if (strlen(k_reserved[i]) == len && !strncasecmp(name, k_reserved[i], len)) return true;
  return false;
}

bool ins_http_line_reserved(const char *line, size_t n) {
  const char *colon = memchr(line, ':', n);
  size_t len = colon ? (size_t)(colon - line) : n;
  while (len && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
  return ins_http_header_reserved(line, len);
}

struct ins_http_conn {
  struct ins_net_url u;
  char url[sizeof(((struct ins_net_url *)0)->origin) + sizeof(((struct ins_net_url *)0)->path)];
  bool use_curl;
  struct ins_http1 plain;
  struct ins_curl curl;
};

struct ins_http_conn *ins_http_conn_new(const struct ins_net_url *u, bool use_curl, char *why,
                                        size_t whylen) {
  struct ins_http_conn *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  c->u = *u;
  ins_http1_init(&c->plain);
  c->use_curl = use_curl;
  snprintf(c->url, sizeof c->url, "%s%s", u->origin, u->path);
  if (!use_curl) return c;
  if (ins_curl_open(&c->curl, why, whylen) != 0) goto fail;
  return c;
fail:
  ins_http_conn_free(c);
  return NULL;
}

void ins_http_conn_post(struct ins_http_conn *c, const struct ins_http_req *req,
                        const struct ins_net_cut *cut, uint64_t deadline_ns, struct ins_http_result *res) {
  res->status = 0;
  res->timed_out = false;
  res->why[0] = res->retry_after[0] = '\0';
  res->json = false;
  res->body_len = 0;
  if (c->use_curl) ins_curl_post(&c->curl, c->url, req, cut, deadline_ns, res);
  else ins_http1_post(&c->plain, &c->u, req, cut, deadline_ns, res);
}

void ins_http_conn_close(struct ins_http_conn *c) {
  if (!c->use_curl) ins_http1_close(&c->plain);
  /* libcurl closes a connection it cannot reuse by itself; a transfer we cut was
   * removed unfinished, which closed it */
}

void ins_http_conn_free(struct ins_http_conn *c) {
  if (!c) return;
  ins_http1_free(&c->plain);
  ins_curl_free(&c->curl);
  free(c);
}
