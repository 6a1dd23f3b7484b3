/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl.h - the libcurl binding, for https:// (and http:// when a test asks):
 * libcurl loaded with dlopen at run time, so that the plugin links nothing
 * beyond libc and a job without https never loads it. Internal to the
 * connection (http.c), which embeds the handles. Owns loading libcurl (through
 * io/dynlib.h; curl.c is compiled against <curl/curl.h>, which types every call,
 * and links nothing of it), and one POST through its multi interface, bounded
 * by the deadline and cut by stop (resolve.h's clock).
 */
#ifndef INS_NET_CURL_H
#define INS_NET_CURL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"

#define INS_NET_CURL_LIB "libcurl.so.4"

struct ins_curl {
  void *easy, *multi; /* CURL *, CURLM *: void in <curl/curl.h> too, which only curl.c includes */
};

/* Loads libcurl (once per process) and makes the handles: 0, or -1 with the reason in
 * why (the handles made so far stay for ins_curl_free). On the caller's thread:
 * curl_easy_init runs curl_global_init the first time, which older libcurls do not
 * make thread-safe. */
int ins_curl_open(struct ins_curl *k, char *why, size_t whylen);
/* Fills res as ins_http_conn_post says (res starts cleared). url: the whole URL. */
void ins_curl_post(struct ins_curl *k, const char *url, const struct ins_http_req *req,
                   const struct ins_net_cut *cut, uint64_t deadline, struct ins_http_result *res);
void ins_curl_free(struct ins_curl *k);

#endif
