/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http1.h - the plain HTTP/1.1 client, for http:// (libc only): one request at
 * a time on one keep-alive connection. Internal to the connection (http.c),
 * which embeds its state; the answer is read by the parser (http1_resp.c), the
 * socket opened and every wait bounded by resolve.c.
 */
#ifndef INS_NET_HTTP1_H
#define INS_NET_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"
#include "net/http1_resp.h"
#include "net/resolve.h"
#include "net/url.h"

struct ins_http1 {
  int fd;
  bool reused; /* fd has carried an answer: a failure before any answer byte may be the
                * server closing it while idle */
  struct ins_net_lookup *dns;
  char *head; /* the request's head, rebuilt for every request */
  size_t head_len, head_cap;
  struct ins_http_resp resp;
};

void ins_http1_init(struct ins_http1 *h);
/* Fills res as ins_http_conn_post says (res starts cleared). */
void ins_http1_post(struct ins_http1 *h, const struct ins_net_url *u, const struct ins_http_req *req,
                    const struct ins_net_cut *cut, uint64_t deadline, struct ins_http_result *res);
void ins_http1_close(struct ins_http1 *h);
/* Closes, cancels a lookup in flight, frees the head. */
void ins_http1_free(struct ins_http1 *h);

#endif
