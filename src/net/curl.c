/*
 * curl.c - https:// through libcurl (see curl.h). The multi interface rather
 * than curl_easy_perform, because curl_multi_wait also watches our stop
 * descriptor: a transfer is cut the moment stop is called, where
 * curl_easy_perform would only look at a progress callback about once a second.
 */
#include "net/curl.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/resolve.h"

/* What we call, declared here (no curl header is used at build time). The numbers are
 * curl's stable ABI, as its public header include/curl/curl.h defines them and as
 * https://curl.se/libcurl/c/<NAME>.html documents each: CURLOPT(name, type, n) is the
 * type's base + n, with bases LONG 0, OBJECTPOINT 10000, FUNCTIONPOINT 20000, OFF_T
 * 30000; curl never renumbers them (https://curl.se/libcurl/abi.html). */
enum {
  CURLOPT_WRITEDATA_ = 10000 + 1,
  CURLOPT_URL_ = 10000 + 2,
  CURLOPT_WRITEFUNCTION_ = 20000 + 11,
  CURLOPT_POSTFIELDS_ = 10000 + 15,
  CURLOPT_HTTPHEADER_ = 10000 + 23,
  CURLOPT_HEADERDATA_ = 10000 + 29,
  CURLOPT_POST_ = 0 + 47,
  CURLOPT_CAINFO_ = 10000 + 65,
  CURLOPT_HEADERFUNCTION_ = 20000 + 79,
  CURLOPT_NOSIGNAL_ = 0 + 99,            /* never signals (SIGALRM) inside someone's job */
  CURLOPT_POSTFIELDSIZE_LARGE_ = 30000 + 120,
  CURLOPT_TIMEOUT_MS_ = 0 + 155,
  CURLOPT_CONNECTTIMEOUT_MS_ = 0 + 156,
  CURLINFO_RESPONSE_CODE_ = 0x200000 + 2, /* CURLINFO_LONG + 2 */
  CURLMSG_DONE_ = 1,                      /* CURLMSG: NONE, DONE, LAST */
  CURLE_OPERATION_TIMEDOUT_ = 28,
};

struct ins_curl_slist; /* curl's struct curl_slist: we only pass it back */
/* struct curl_waitfd (curl_multi_wait): fd, events, revents, as poll's. */
struct ins_curl_waitfd {
  int fd;
  short events, revents;
};
/* CURLMsg (curl_multi_info_read): the message, the easy handle, then a union whose
 * CURLcode member is what CURLMSG_DONE carries. */
struct ins_curl_msg {
  int msg;
  void *easy;
  union {
    void *whatever;
    int result;
  } data;
};

static struct {
  pthread_mutex_t lock;
  bool ok;
  void *(*easy_init)(void);
  int (*easy_setopt)(void *, int, ...);
  int (*easy_getinfo)(void *, int, ...);
  void (*easy_cleanup)(void *);
  const char *(*easy_strerror)(int);
  struct ins_curl_slist *(*slist_append)(struct ins_curl_slist *, const char *);
  void (*slist_free_all)(struct ins_curl_slist *);
  void *(*multi_init)(void);
  int (*multi_add_handle)(void *, void *);
  int (*multi_remove_handle)(void *, void *);
  int (*multi_perform)(void *, int *);
  int (*multi_wait)(void *, struct ins_curl_waitfd *, unsigned, int, int *);
  struct ins_curl_msg *(*multi_info_read)(void *, int *);
  int (*multi_cleanup)(void *);
} g_curl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Loads libcurl once per process. It stays loaded (RTLD_NODELETE): its resolver
 * threads may outlive any transfer of ours, and must never find their code gone. */
static bool curl_load(char *why, size_t whylen) {
  const char *lib = ins_net_test_hooks.curl_lib ? ins_net_test_hooks.curl_lib : INS_NET_CURL_LIB;
  pthread_mutex_lock(&g_curl.lock);
  if (g_curl.ok) goto out;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    snprintf(why, whylen, "%s cannot be loaded", lib);
    goto out;
  }
  const char *missing = NULL;
#define SYM(field, name)                                                      \
  do {                                                                        \
    void *s = dlsym(h, name);                                                 \
    if (!s && !missing) missing = name;                                       \
    memcpy(&g_curl.field, &s, sizeof s); /* object to function pointer: POSIX allows */ \
  } while (0)
  SYM(easy_init, "curl_easy_init");
  SYM(easy_setopt, "curl_easy_setopt");
  SYM(easy_getinfo, "curl_easy_getinfo");
  SYM(easy_cleanup, "curl_easy_cleanup");
  SYM(easy_strerror, "curl_easy_strerror");
  SYM(slist_append, "curl_slist_append");
  SYM(slist_free_all, "curl_slist_free_all");
  SYM(multi_init, "curl_multi_init");
  SYM(multi_add_handle, "curl_multi_add_handle");
  SYM(multi_remove_handle, "curl_multi_remove_handle");
  SYM(multi_perform, "curl_multi_perform");
  SYM(multi_wait, "curl_multi_wait"); /* 7.28.0, 2012 */
  SYM(multi_info_read, "curl_multi_info_read");
  SYM(multi_cleanup, "curl_multi_cleanup");
#undef SYM
  if (missing) snprintf(why, whylen, "%s has no %s (libcurl older than 7.28?)", lib, missing);
  else g_curl.ok = true;
out:;
  bool ok = g_curl.ok;
  pthread_mutex_unlock(&g_curl.lock);
  return ok;
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

static struct ins_curl_slist *curl_headers(const struct ins_http_req *req) {
  char line[256];
  struct ins_curl_slist *l = NULL, *t;
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

void ins_curl_post(struct ins_curl *k, const char *url, const struct ins_http_req *req,
                   const struct ins_net_cut *cut, uint64_t deadline, struct ins_http_result *res) {
  struct ins_curl_slist *hdrs = curl_headers(req);
  if (!hdrs) {
    snprintf(res->why, sizeof res->why, "out of memory");
    return;
  }
  bool stopping;
  uint64_t now = ins_net_now_ns(), d = ins_net_deadline(cut, deadline, &stopping);
  long ms = now < d ? ins_net_ms_until(d, now) : 1;
  void *e = k->easy;
  g_curl.easy_setopt(e, CURLOPT_URL_, url);
  g_curl.easy_setopt(e, CURLOPT_POST_, 1L);
  g_curl.easy_setopt(e, CURLOPT_POSTFIELDS_, req->body);
  g_curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE_, (int64_t)req->len); /* curl_off_t */
  g_curl.easy_setopt(e, CURLOPT_HTTPHEADER_, hdrs);
  g_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION_, curl_body_cb);
  g_curl.easy_setopt(e, CURLOPT_WRITEDATA_, res);
  g_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION_, curl_header_cb);
  g_curl.easy_setopt(e, CURLOPT_HEADERDATA_, res);
  g_curl.easy_setopt(e, CURLOPT_NOSIGNAL_, 1L);
  g_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS_, ms);
  g_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS_, ms);
  if (ins_net_test_hooks.ca_file) g_curl.easy_setopt(e, CURLOPT_CAINFO_, ins_net_test_hooks.ca_file);
  if (g_curl.multi_add_handle(k->multi, e) != 0) {
    snprintf(res->why, sizeof res->why, "libcurl refused the transfer");
    goto out;
  }
  int running = 1, result = -1;
  for (;;) {
    if (g_curl.multi_perform(k->multi, &running) != 0) break;
    int q;
    struct ins_curl_msg *m;
    while ((m = g_curl.multi_info_read(k->multi, &q)))
      if (m->msg == CURLMSG_DONE_ && m->easy == e) result = m->data.result;
    if (result >= 0 || !running) break;
    now = ins_net_now_ns();
    d = ins_net_deadline(cut, deadline, &stopping);
    if (now >= d) {
      result = CURLE_OPERATION_TIMEDOUT_;
      break;
    }
    struct ins_curl_waitfd w = {.fd = cut ? cut->wake_fd : -1, .events = POLLIN};
    int nfds;
    g_curl.multi_wait(k->multi, &w, !stopping && w.fd >= 0 ? 1u : 0u, ins_net_ms_until(d, now), &nfds);
  }
  if (result == 0) {
    long code = 0;
    g_curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE_, &code);
    res->status = (int)code;
  } else {
    res->retry_after[0] = '\0';
    res->body_len = 0;
    res->timed_out = result == CURLE_OPERATION_TIMEDOUT_;
    snprintf(res->why, sizeof res->why, "%s", result > 0 ? g_curl.easy_strerror(result) : "libcurl failed");
  }
  /* Removing a finished transfer keeps its connection in the multi handle's cache for
   * the next request; removing an unfinished one closes it. */
  g_curl.multi_remove_handle(k->multi, e);
out:
  g_curl.easy_setopt(e, CURLOPT_HTTPHEADER_, (void *)NULL);
  g_curl.slist_free_all(hdrs);
}

int ins_curl_open(struct ins_curl *k, char *why, size_t whylen) {
  if (!curl_load(why, whylen)) return -1;
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
