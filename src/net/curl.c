/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl.c - https:// through libcurl (see curl.h). The multi interface rather
 * than curl_easy_perform, because curl_multi_wait also watches our stop
 * descriptor: a transfer is cut the moment stop is called, where
 * curl_easy_perform would only look at a progress callback about once a second.
 */
#include "net/curl.h"

#include <curl/curl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/dynlib.h"
#include "net/resolve.h"

/* libcurl's functions, typed by its own header (<curl/curl.h>, compiled against, never
 * linked: INS_DYNLIB_SYM refuses a pointer of another type). Constants, CURLMsg and
 * curl_waitfd come from the header too: curl keeps its ABI (https://curl.se/libcurl/
 * abi.html: options are never renumbered, structs never change within soname 4), so the
 * header of any libcurl 7.x or 8.x describes the library found at run time. */
static struct {
  __typeof__(curl_easy_init) *easy_init;
  __typeof__(curl_easy_setopt) *easy_setopt;
  __typeof__(curl_easy_getinfo) *easy_getinfo;
  __typeof__(curl_easy_cleanup) *easy_cleanup;
  __typeof__(curl_easy_strerror) *easy_strerror;
  __typeof__(curl_slist_append) *slist_append;
  __typeof__(curl_slist_free_all) *slist_free_all;
  __typeof__(curl_multi_init) *multi_init;
  __typeof__(curl_multi_add_handle) *multi_add_handle;
  __typeof__(curl_multi_remove_handle) *multi_remove_handle;
  __typeof__(curl_multi_perform) *multi_perform;
  __typeof__(curl_multi_wait) *multi_wait; /* 7.28.0, 2012: the newest we call */
  __typeof__(curl_multi_info_read) *multi_info_read;
  __typeof__(curl_multi_cleanup) *multi_cleanup;
} g_curl;
static struct ins_dynlib g_curl_lib = INS_DYNLIB_INIT;

/* Loads libcurl once per process (io/dynlib.h: it stays loaded, RTLD_NODELETE; its
 * resolver threads may outlive any transfer of ours): 0, or -1 with the reason in why. */
static int curl_load(char *why, size_t whylen) {
  static const struct ins_dynlib_sym syms[] = {
      INS_DYNLIB_SYM(curl_easy_init, g_curl.easy_init),
      INS_DYNLIB_SYM(curl_easy_setopt, g_curl.easy_setopt),
      INS_DYNLIB_SYM(curl_easy_getinfo, g_curl.easy_getinfo),
      INS_DYNLIB_SYM(curl_easy_cleanup, g_curl.easy_cleanup),
      INS_DYNLIB_SYM(curl_easy_strerror, g_curl.easy_strerror),
      INS_DYNLIB_SYM(curl_slist_append, g_curl.slist_append),
      INS_DYNLIB_SYM(curl_slist_free_all, g_curl.slist_free_all),
      INS_DYNLIB_SYM(curl_multi_init, g_curl.multi_init),
      INS_DYNLIB_SYM(curl_multi_add_handle, g_curl.multi_add_handle),
      INS_DYNLIB_SYM(curl_multi_remove_handle, g_curl.multi_remove_handle),
      INS_DYNLIB_SYM(curl_multi_perform, g_curl.multi_perform),
      INS_DYNLIB_SYM(curl_multi_wait, g_curl.multi_wait),
      INS_DYNLIB_SYM(curl_multi_info_read, g_curl.multi_info_read),
      INS_DYNLIB_SYM(curl_multi_cleanup, g_curl.multi_cleanup),
  };
  const char *lib = ins_net_test_hooks.curl_lib ? ins_net_test_hooks.curl_lib : INS_NET_CURL_LIB;
  enum ins_dynlib_status st = ins_dynlib_load(&g_curl_lib, lib, syms, sizeof syms / sizeof *syms, why, whylen);
  if (st == INS_DYNLIB_NO_SYMBOL) { /* a libcurl.so.4 without one: older than curl_multi_wait */
    size_t used = strlen(why);
    snprintf(why + used, whylen - used, " (libcurl older than 7.28?)");
  }
  return st == INS_DYNLIB_LOADED ? 0 : -1;
}

static size_t curl_body_cb(char *p, size_t size, size_t n, void *arg) {
  struct ins_http_result *res = arg;
  size_t len = size * n, room = sizeof res->body - res->body_len;
  memcpy(res->body + res->body_len, p, len < room ? len : room);
  res->body_len += len < room ? len : room;
  return len; /* all of it taken: the rest is not needed */
}

/* One header line at a time (status lines too: a 1xx's headers are forgotten). */
static size_t curl_header_cb(char *p, size_t size, size_t n, void *arg) {
  struct ins_http_result *res = arg;
  size_t len = size * n, nl = len;
  while (nl && (p[nl - 1] == '\r' || p[nl - 1] == '\n')) nl--;
  if (nl >= 5 && !strncmp(p, "HTTP/", 5)) {
    res->retry_after[0] = '\0';
    res->json = false;
    return len;
  }
  const char *colon = memchr(p, ':', nl);
  if (!colon) return len;
  size_t name = (size_t)(colon - p);
  const char *v = colon + 1;
  while (v < p + nl && (*v == ' ' || *v == '\t')) v++;
  size_t vl = (size_t)(p + nl - v);
  while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
  if (name == 11 && !strncasecmp(p, "Retry-After", 11))
    ins_net_copy_text(res->retry_after, sizeof res->retry_after, v, vl);
  if (name == 12 && !strncasecmp(p, "Content-Type", 12))
    res->json = vl >= 16 && !strncasecmp(v, "application/json", 16);
  return len;
}

static struct curl_slist *curl_headers(const struct ins_http_req *req) {
  char line[256];
  struct curl_slist *l = NULL, *t;
  snprintf(line, sizeof line, "Content-Type: %s", req->content_type);
  if (!(t = g_curl.slist_append(l, line))) goto fail;
  l = t;
  /* curl asks for "100 Continue" before a large body and waits up to a second for it:
   * an empty Expect turns that off (the endpoints we post to answer the request, not an
   * Expect). */
  const char *fixed[] = {"User-Agent: " INS_NET_USER_AGENT, "Expect:", req->gzip ? "Content-Encoding: gzip" : NULL};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
    if (!fixed[i]) continue;
    if (!(t = g_curl.slist_append(l, fixed[i]))) goto fail;
    l = t;
  }
  for (const char *h = req->headers; h && *h;) {
    size_t n = strcspn(h, "\r\n");
    if (n && !ins_http_line_reserved(h, n)) {
      char *one = strndup(h, n);
      t = one ? g_curl.slist_append(l, one) : NULL;
      free(one);
      if (!t) goto fail;
      l = t;
    }
    h += n;
    h += strspn(h, "\r\n");
  }
  return l;
fail:
  if (l) g_curl.slist_free_all(l);
  return NULL;
}

/* What transfer() returns when the multi interface itself failed, or stopped running with
 * no word on our transfer: never one of curl's codes. */
#define MULTI_FAILED CURL_LAST

/* Runs the transfer added to k's multi handle to its end, the deadline (deadline, or cut's
 * stop) or a failure. The one answer: how it ended, CURLE_OK when curl finished it (its
 * HTTP status is then the response's), curl's error, CURLE_OPERATION_TIMEDOUT at the
 * deadline, MULTI_FAILED. */
static CURLcode transfer(struct ins_curl *k, const struct ins_net_cut *cut, uint64_t deadline) {
  for (int running = 1;;) {
    if (g_curl.multi_perform(k->multi, &running) != CURLM_OK) return MULTI_FAILED;
    int q;
    CURLMsg *m;
    while ((m = g_curl.multi_info_read(k->multi, &q)))
      if (m->msg == CURLMSG_DONE && m->easy_handle == k->easy) return m->data.result;
    if (!running) return MULTI_FAILED;
    bool stopping;
    uint64_t now = ins_net_now_ns(), d = ins_net_deadline(cut, deadline, &stopping);
    if (now >= d) return CURLE_OPERATION_TIMEDOUT;
    struct curl_waitfd w = {.fd = cut ? cut->wake_fd : -1, .events = POLLIN};
    int nfds;
    g_curl.multi_wait(k->multi, &w, !stopping && w.fd >= 0 ? 1u : 0u, ins_net_ms_until(d, now), &nfds);
  }
}

void ins_curl_post(struct ins_curl *k, const char *url, const struct ins_http_req *req,
                   const struct ins_net_cut *cut, uint64_t deadline, struct ins_http_result *res) {
  struct curl_slist *hdrs = curl_headers(req);
  if (!hdrs) {
    snprintf(res->why, sizeof res->why, "out of memory");
    return;
  }
  bool stopping;
  uint64_t now = ins_net_now_ns(), d = ins_net_deadline(cut, deadline, &stopping);
  long ms = now < d ? ins_net_ms_until(d, now) : 1;
  CURL *e = k->easy;
  /* typed here: through setopt's "..." the compiler would not check them against curl's */
  curl_write_callback body_cb = curl_body_cb, header_cb = curl_header_cb;
  g_curl.easy_setopt(e, CURLOPT_URL, url);
  g_curl.easy_setopt(e, CURLOPT_POST, 1L);
  g_curl.easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
  g_curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
  g_curl.easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
  g_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, body_cb);
  g_curl.easy_setopt(e, CURLOPT_WRITEDATA, res);
  g_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  g_curl.easy_setopt(e, CURLOPT_HEADERDATA, res);
  g_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* never a signal (SIGALRM) inside someone's job */
  g_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
  g_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms);
  if (ins_net_test_hooks.ca_file) g_curl.easy_setopt(e, CURLOPT_CAINFO, ins_net_test_hooks.ca_file);
  if (g_curl.multi_add_handle(k->multi, e) != CURLM_OK) {
    snprintf(res->why, sizeof res->why, "libcurl refused the transfer");
    goto out;
  }
  CURLcode result = transfer(k, cut, deadline);
  if (result == CURLE_OK) {
    long code = 0;
    g_curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    res->status = (int)code;
  } else {
    res->retry_after[0] = '\0';
    res->body_len = 0;
    res->timed_out = result == CURLE_OPERATION_TIMEDOUT;
    /* curl_easy_strerror's fixed text, never CURLOPT_ERRORBUFFER's (nor CURLOPT_VERBOSE): those
     * name the URL, its host and path, which a message may show only as ins_net_url_shown does */
    snprintf(res->why, sizeof res->why, "%s",
             result == MULTI_FAILED ? "libcurl failed" : g_curl.easy_strerror(result));
  }
  /* Removing a finished transfer keeps its connection in the multi handle's cache for
   * the next request; removing an unfinished one closes it. */
  g_curl.multi_remove_handle(k->multi, e);
out:
  g_curl.easy_setopt(e, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
  g_curl.slist_free_all(hdrs);
}

int ins_curl_open(struct ins_curl *k, char *why, size_t whylen) {
  if (curl_load(why, whylen) != 0) return -1;
  k->easy = g_curl.easy_init();
  k->multi = k->easy ? g_curl.multi_init() : NULL;
  if (!k->multi) {
    snprintf(why, whylen, "libcurl could not make a transfer handle");
    return -1;
  }
  return 0;
}

void ins_curl_free(struct ins_curl *k) {
  if (k->multi) g_curl.multi_cleanup(k->multi);
  if (k->easy) g_curl.easy_cleanup(k->easy);
  k->multi = k->easy = NULL;
}
