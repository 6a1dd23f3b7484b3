/*
 * otlp_http.c - the OTLP exporter's transport and the spec's rules for an
 * answer (see otlp_http.h). It is not the exporter: no queue, no thread, no
 * logging; it answers "what happened to this POST" and "what do the rules say
 * about that answer".
 *
 * Two clients behind one connection type:
 * - plain http://: our own HTTP/1.1 client on libc alone. One request at a
 *   time on one keep-alive connection (the exporter never has two in flight,
 *   so pipelining would buy nothing). Non-blocking sockets and poll() bound
 *   every step by the request's deadline, and every read and write looks at
 *   it first, not only when it would block: a server that always has the next
 *   byte ready (an answer without end, interim 1xx answers without end, which
 *   are also counted) never makes a call block. Name lookup goes through
 *   glibc's getaddrinfo_a (libc's own since 2.34, libanl.so.1 before), waited
 *   for in slices, because getaddrinfo itself cannot be bounded (a resolver
 *   that does not answer holds it for timeout x attempts x search domains:
 *   tens of seconds, minutes at worst); numeric hosts never look anything up.
 *   Only without getaddrinfo_a (a libc other than glibc) is it getaddrinfo.
 * - https://: libcurl, loaded with dlopen at run time so that the plugin links
 *   nothing beyond libc and a job without https never loads it. The multi
 *   interface rather than curl_easy_perform, because curl_multi_wait also
 *   watches our stop descriptor: a transfer is cut the moment stop is called,
 *   where curl_easy_perform would only look at a progress callback about once
 *   a second.
 *
 * Neither client follows redirects: a metrics endpoint that redirects is
 * misconfigured, and following would resend bodies (and headers with
 * credentials) to wherever it points. A 3xx is a rejection like any non-
 * retryable answer.
 */
#include "sink/otlp_http.h"

#include <assert.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/clock.h"
#include "sink/buf.h"

#ifndef INSPECTOR_VERSION
#define INSPECTOR_VERSION "0"
#endif
#define USER_AGENT "nccl-inspector/" INSPECTOR_VERSION

struct ins_otlp_test_hooks ins_otlp_test_hooks;

/* ============================================================================
 * The endpoint URL
 * ========================================================================= */

static int fail_why(char *why, size_t n, const char *msg) {
  snprintf(why, n, "%s", msg);
  return -1;
}

/* Characters that may stand in a request-target as we send it: visible ASCII. A
 * space or a control character would end the request line early. */
static bool target_char_ok(unsigned char ch) { return ch > 0x20 && ch < 0x7f; }

static bool host_char_ok(unsigned char ch) { return isalnum(ch) || ch == '-' || ch == '.' || ch == '_'; }

int ins_otlp_url_parse(struct ins_otlp_url *u, const char *url, char *why, size_t whylen) {
  memset(u, 0, sizeof *u);
  const char *p;
  if (!strncasecmp(url, "http://", 7)) {
    p = url + 7;
  } else if (!strncasecmp(url, "https://", 8)) {
    u->https = true;
    p = url + 8;
  } else {
    return fail_why(why, whylen, "the scheme is neither http:// nor https://");
  }
  size_t alen = strcspn(p, "/?#");
  const char *aend = p + alen;
  if (memchr(p, '@', alen))
    return fail_why(why, whylen, "user:password@ in the URL is not supported (give credentials as headers)");
  const char *hend; /* end of the host text; the port (if any) follows a ':' there */
  if (*p == '[') {
    const char *rb = memchr(p, ']', alen);
    if (!rb || rb == p + 1) return fail_why(why, whylen, "an IPv6 address without its closing ']'");
    size_t n = (size_t)(rb - p - 1);
    if (n >= sizeof u->host) return fail_why(why, whylen, "the host is too long");
    /* hex digits, ':' and '.' (an IPv4 tail), then maybe a zone: "%25" and a name (RFC 6874) */
    const char *zone = memchr(p + 1, '%', n);
    size_t addr_n = zone ? (size_t)(zone - p - 1) : n;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)p[1 + i];
      bool ok = i < addr_n ? isxdigit(ch) || ch == ':' || ch == '.' : i < addr_n + 3 || host_char_ok(ch);
      if (!ok) return fail_why(why, whylen, "a character that is not part of an IPv6 address");
    }
    if (zone && (n < addr_n + 4 || strncmp(zone, "%25", 3)))
      return fail_why(why, whylen, "an IPv6 zone not written %25name");
    memcpy(u->host, p + 1, n);
    hend = rb + 1;
    if (hend != aend && *hend != ':') return fail_why(why, whylen, "text after the IPv6 address");
  } else {
    hend = memchr(p, ':', alen);
    if (!hend) hend = aend;
    size_t n = (size_t)(hend - p);
    if (n == 0) return fail_why(why, whylen, "no host");
    if (n >= sizeof u->host) return fail_why(why, whylen, "the host is too long");
    for (size_t i = 0; i < n; i++)
      if (!host_char_ok((unsigned char)p[i]))
        return fail_why(why, whylen, "a character that may not stand in a host name");
    memcpy(u->host, p, n);
  }
  unsigned long port = u->https ? 443 : 80;
  if (hend < aend) { /* ":port", or ":" alone (the default, RFC 3986 3.2.3) */
    const char *q = hend + 1;
    if (q < aend) {
      port = 0;
      for (; q < aend; q++) {
        if (!isdigit((unsigned char)*q)) return fail_why(why, whylen, "the port is not a number");
        port = port * 10 + (unsigned long)(*q - '0');
        if (port > 65535) return fail_why(why, whylen, "the port is above 65535");
      }
      if (port == 0) return fail_why(why, whylen, "port 0");
    }
  }
  snprintf(u->port, sizeof u->port, "%lu", port);
  bool v6 = strchr(u->host, ':') != NULL;
  bool dflt = port == (u->https ? 443u : 80u);
  snprintf(u->host_hdr, sizeof u->host_hdr, "%s%s%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "",
           dflt ? "" : ":", dflt ? "" : u->port);
  snprintf(u->origin, sizeof u->origin, "%s://%s%s%s:%s", u->https ? "https" : "http", v6 ? "[" : "",
           u->host, v6 ? "]" : "", u->port);
  /* The path is kept as given (the sink has appended /v1/metrics where the spec says);
   * the fragment is the client's own and never sent (RFC 9110 7.1). */
  size_t plen = strcspn(aend, "#");
  if (plen == 0) {
    strcpy(u->path, "/");
  } else {
    bool slash = aend[0] == '/'; /* "host?x=1": the path is empty, the target is "/?x=1" */
    if (plen + !slash >= sizeof u->path) return fail_why(why, whylen, "the path is too long");
    for (size_t i = 0; i < plen; i++)
      if (!target_char_ok((unsigned char)aend[i]))
        return fail_why(why, whylen, "a space or control character in the path");
    snprintf(u->path, sizeof u->path, "%s%.*s", slash ? "" : "/", (int)plen, aend);
  }
  /* A zone in a link-local address is written %25 in a URL (RFC 6874), % for getaddrinfo. */
  char *z = strstr(u->host, "%25");
  if (z) memmove(z + 1, z + 3, strlen(z + 3) + 1);
  return 0;
}

/* ============================================================================
 * Retry-After
 * ========================================================================= */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static bool take_num(const char **p, int min_digits, int max_digits, int *v) {
  int n = 0, x = 0;
  while (n < max_digits && isdigit((unsigned char)(*p)[n])) x = x * 10 + ((*p)[n++] - '0');
  if (n < min_digits) return false;
  *p += n;
  *v = x;
  return true;
}

static bool take_lit(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n)) return false;
  *p += n;
  return true;
}

static bool take_month(const char **p, int *m) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  for (int i = 0; i < 12; i++)
    if (!strncmp(*p, months + 3 * i, 3)) {
      *p += 3;
      *m = i + 1;
      return true;
    }
  return false;
}

static bool take_time(const char **p, int *h, int *mi, int *s) {
  return take_num(p, 2, 2, h) && take_lit(p, ":") && take_num(p, 2, 2, mi) && take_lit(p, ":") &&
         take_num(p, 2, 2, s);
}

/* An HTTP-date (RFC 9110 5.6.7) as Unix seconds; false if it is none. */
static bool parse_http_date(const char *p, int64_t *out) {
  int y = 0, m = 0, d = 0, h = 0, mi = 0, s = 0;
  size_t wlen = 0;
  while (isalpha((unsigned char)p[wlen])) wlen++;
  if (wlen < 3) return false;
  p += wlen;
  if (take_lit(&p, ", ")) {
    if (!take_num(&p, 2, 2, &d)) return false;
    if (take_lit(&p, " ")) { /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
      if (!take_month(&p, &m) || !take_lit(&p, " ") || !take_num(&p, 4, 4, &y) || !take_lit(&p, " ") ||
          !take_time(&p, &h, &mi, &s) || !take_lit(&p, " GMT"))
        return false;
    } else if (take_lit(&p, "-")) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
      if (!take_month(&p, &m) || !take_lit(&p, "-") || !take_num(&p, 2, 2, &y) || !take_lit(&p, " ") ||
          !take_time(&p, &h, &mi, &s) || !take_lit(&p, " GMT"))
        return false;
      /* RFC 9110: a two-digit year more than 50 years ahead is in the past century;
       * with today's clocks that is 19yy for yy >= 70. */
      y += y >= 70 ? 1900 : 2000;
    } else {
      return false;
    }
  } else if (take_lit(&p, " ")) { /* asctime: Sun Nov  6 08:49:37 1994 */
    if (!take_month(&p, &m) || !take_lit(&p, " ")) return false;
    if (*p == ' ') p++;
    if (!take_num(&p, 1, 2, &d) || !take_lit(&p, " ") || !take_time(&p, &h, &mi, &s) || !take_lit(&p, " ") ||
        !take_num(&p, 4, 4, &y))
      return false;
  } else {
    return false;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  *out = days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

int64_t ins_otlp_retry_after_ms(const char *v, int64_t now_unix_s) {
  if (!v) return INS_OTLP_NO_RETRY_AFTER;
  while (*v == ' ' || *v == '\t') v++;
  if (isdigit((unsigned char)*v)) { /* delay-seconds = 1*DIGIT */
    int64_t s = 0;
    for (; isdigit((unsigned char)*v); v++)
      if (s < INT64_MAX / 10000) s = s * 10 + (*v - '0'); /* saturates far above any cap */
    while (*v == ' ' || *v == '\t') v++;
    return *v ? INS_OTLP_NO_RETRY_AFTER : s * 1000;
  }
  int64_t t;
  if (!parse_http_date(v, &t)) return INS_OTLP_NO_RETRY_AFTER;
  return t > now_unix_s ? (t - now_unix_s) * 1000 : 0;
}

/* ============================================================================
 * The rules for an answer
 * ========================================================================= */

enum ins_otlp_verdict ins_otlp_verdict_of(const struct ins_otlp_result *res) {
  int s = res->status;
  if (s == 0) return INS_OTLP_RETRY; /* "Failures": no answer, retry the same request */
  if (s >= 200 && s < 300) return INS_OTLP_DELIVERED;
  if (s == 429 || s == 502 || s == 503 || s == 504) return INS_OTLP_RETRY;
  return INS_OTLP_REJECTED;
}

/* Why these numbers:
 * - base 1 s: the first retry comes soon enough to ride out a collector restart or
 *   a dropped idle connection without a visible gap in a 10-60 s export interval;
 * - doubling to a 30 s cap: a collector that stays away sees at most one attempt
 *   per 30 s from each process (thousands of ranks of a job share one collector:
 *   full jitter spreads them over the whole window instead of synchronised waves,
 *   the scheme AWS measured best for contended retries);
 * - Retry-After is honoured as a floor (the spec's "Throttling": SHOULD honour it),
 *   capped at 5 minutes: a larger value is taken as a misconfiguration; the data are
 *   cumulative, so waiting longer would only let the queue drop more of them. */
uint64_t ins_otlp_retry_delay_ms(const struct ins_otlp_backoff *b, unsigned failures,
                                 int64_t retry_after_ms, uint64_t random) {
  assert(b->base_ms >= 1 && b->cap_ms >= b->base_ms);
  uint64_t ceiling = b->base_ms;
  for (unsigned i = 1; i < failures && ceiling < b->cap_ms; i++) ceiling *= 2;
  if (ceiling > b->cap_ms) ceiling = b->cap_ms;
  uint64_t delay = random % (ceiling + 1);
  if (retry_after_ms >= 0) {
    uint64_t ra = retry_after_ms > INS_OTLP_RETRY_AFTER_MAX_MS ? INS_OTLP_RETRY_AFTER_MAX_MS
                                                               : (uint64_t)retry_after_ms;
    if (ra > delay) delay = ra;
  }
  return delay;
}

/* ---- reading the answer's body: a few protobuf fields, or a JSON key ---- */

static bool pb_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    unsigned char b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

/* The next field: its number and wire type; a varint's value in *v, a LEN field's
 * bytes in data and dlen. False at the end or on malformed input. */
static bool pb_next(const unsigned char **p, const unsigned char *end, uint32_t *field, int *wt, uint64_t *v,
                    const unsigned char **data, size_t *dlen) {
  uint64_t key;
  if (*p >= end || !pb_varint(p, end, &key)) return false;
  *field = (uint32_t)(key >> 3);
  *wt = (int)(key & 7);
  switch (*wt) {
  case 0: return pb_varint(p, end, v);
  case 1: if (end - *p < 8) return false; *p += 8; return true;
  case 5: if (end - *p < 4) return false; *p += 4; return true;
  case 2:
    if (!pb_varint(p, end, v) || *v > (uint64_t)(end - *p)) return false;
    *data = *p;
    *dlen = (size_t)*v;
    *p += *v;
    return true;
  default: return false;
  }
}

static void copy_text(char *out, size_t cap, const char *s, size_t n) {
  if (!cap) return;
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

/* The string value of "key" in a JSON text (the first occurrence; escapes other than
 * \" and \\ are kept as written: this is for a log message). */
static bool json_string(const char *body, size_t len, const char *key, char *out, size_t cap) {
  size_t klen = strlen(key);
  for (const char *p = body; p + klen + 2 < body + len; p++) {
    if (*p != '"' || strncmp(p + 1, key, klen) || p[1 + klen] != '"') continue;
    const char *q = p + klen + 2, *end = body + len;
    while (q < end && (*q == ' ' || *q == ':' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
    if (q >= end) return false;
    if (*q != '"') { /* a number, for int64 fields written without quotes */
      size_t n = 0;
      while (q + n < end && (isdigit((unsigned char)q[n]) || q[n] == '-')) n++;
      if (!n) return false;
      copy_text(out, cap, q, n);
      return true;
    }
    size_t o = 0;
    for (q++; q < end && *q != '"'; q++) {
      if (*q == '\\' && q + 1 < end && (q[1] == '"' || q[1] == '\\')) q++;
      if (o + 1 < cap) out[o++] = *q;
    }
    if (cap) out[o] = '\0';
    return true;
  }
  return false;
}

int ins_otlp_partial_success(const char *body, size_t len, bool json, int64_t *rejected, char *msg,
                             size_t msglen) {
  *rejected = 0;
  copy_text(msg, msglen, "", 0);
  if (json) {
    char num[32];
    bool have = json_string(body, len, "rejectedDataPoints", num, sizeof num);
    if (have) *rejected = strtoll(num, NULL, 10);
    bool have_msg = json_string(body, len, "errorMessage", msg, msglen);
    return *rejected > 0 || (have_msg && msglen && msg[0]);
  }
  /* ExportMetricsServiceResponse { ExportMetricsPartialSuccess partial_success = 1; }
   * ExportMetricsPartialSuccess { int64 rejected_data_points = 1; string error_message = 2; } */
  const unsigned char *p = (const unsigned char *)body, *end = p + len, *d = NULL;
  uint32_t f;
  int wt;
  uint64_t v;
  size_t dl = 0;
  while (pb_next(&p, end, &f, &wt, &v, &d, &dl)) {
    if (f != 1 || wt != 2) continue;
    const unsigned char *q = d, *qe = d + dl, *s = NULL;
    size_t sl = 0;
    while (pb_next(&q, qe, &f, &wt, &v, &s, &sl)) {
      if (f == 1 && wt == 0) *rejected = (int64_t)v;
      if (f == 2 && wt == 2) copy_text(msg, msglen, (const char *)s, sl);
    }
  }
  return *rejected > 0 || (msglen && msg[0]);
}

int ins_otlp_status_message(const char *body, size_t len, bool json, char *msg, size_t msglen) {
  copy_text(msg, msglen, "", 0);
  if (json) return json_string(body, len, "message", msg, msglen) && msglen && msg[0];
  /* google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; } */
  const unsigned char *p = (const unsigned char *)body, *end = p + len, *d = NULL;
  uint32_t f;
  int wt;
  uint64_t v;
  size_t dl = 0;
  while (pb_next(&p, end, &f, &wt, &v, &d, &dl))
    if (f == 2 && wt == 2) copy_text(msg, msglen, (const char *)d, dl);
  return msglen && msg[0];
}

/* ============================================================================
 * The response parser (RFC 9112: status line, fields, message body length)
 * ========================================================================= */

void ins_otlp_resp_init(struct ins_otlp_resp *r) {
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

static void resp_fail(struct ins_otlp_resp *r, const char *why) {
  r->state = INS_RESP_ERROR;
  r->error = why;
}

static void resp_keep(struct ins_otlp_resp *r, const char *p, size_t n) {
  size_t room = INS_OTLP_RESP_KEEP - r->body_len;
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

static void resp_status_line(struct ins_otlp_resp *r, const char *l) {
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

static void resp_field(struct ins_otlp_resp *r, char *l) {
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
    copy_text(r->retry_after, sizeof r->retry_after, v, vl);
  } else if (!strcasecmp(l, "Content-Type")) {
    copy_text(r->content_type, sizeof r->content_type, v, vl);
  }
}

/* The empty line after the fields: how the body is delimited (RFC 9112 6.3). */
static void resp_head_end(struct ins_otlp_resp *r) {
  if (r->status < 200) { /* 1xx: an interim answer; the final one follows */
    if (r->status == 101) { resp_fail(r, "101 Switching Protocols"); return; }
    /* A server that sends interim answers without end would hold the request as long
     * as it likes: their number is bounded, and their header bytes count towards the
     * answer's (neither is reset with the rest of the state). */
    unsigned interim = r->interim + 1;
    size_t head_bytes = r->head_bytes;
    bool http11 = r->http11;
    ins_otlp_resp_init(r);
    r->http11 = http11;
    r->interim = interim;
    r->head_bytes = head_bytes;
    if (interim > INS_OTLP_RESP_MAX_INTERIM) resp_fail(r, "too many interim (1xx) answers");
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

static void resp_line(struct ins_otlp_resp *r, char *l) {
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

static bool line_state(enum ins_otlp_resp_state s) {
  return s == INS_RESP_HEAD || s == INS_RESP_CHUNK_SIZE || s == INS_RESP_CHUNK_END || s == INS_RESP_TRAILERS;
}

size_t ins_otlp_resp_feed(struct ins_otlp_resp *r, const char *p, size_t n) {
  size_t i = 0;
  while (i < n && r->state != INS_RESP_DONE && r->state != INS_RESP_ERROR) {
    if (line_state(r->state)) {
      const char *nl = memchr(p + i, '\n', n - i);
      size_t take = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
      if (r->state == INS_RESP_HEAD || r->state == INS_RESP_TRAILERS) {
        r->head_bytes += take;
        if (r->head_bytes > INS_OTLP_RESP_HEAD) {
          resp_fail(r, "the answer's headers are too large");
          break;
        }
      }
      if (r->line_len + take > INS_OTLP_RESP_LINE) {
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

void ins_otlp_resp_eof(struct ins_otlp_resp *r) {
  if (r->state == INS_RESP_BODY_EOF) {
    r->state = INS_RESP_DONE;
  } else if (r->state != INS_RESP_DONE && r->state != INS_RESP_ERROR) {
    resp_fail(r, r->saw_status || r->head_bytes ? "the connection closed in the middle of the answer"
                                                : "the connection closed without an answer");
  }
}

/* ============================================================================
 * Waiting, bounded by the deadline and by stop
 * ========================================================================= */

/* The transport's clock (CLOCK_MONOTONIC); a test may put its own in (the hooks). */
static uint64_t now_ns(void) {
  return ins_otlp_test_hooks.now_ns ? ins_otlp_test_hooks.now_ns() : ins_mono_ns();
}

/* The deadline in force: the request's, or stop's when that is sooner. */
static uint64_t cut_deadline(const struct ins_otlp_cut *cut, uint64_t deadline, bool *stopping) {
  uint64_t s = cut && cut->stop_ns ? atomic_load(cut->stop_ns) : 0;
  *stopping = s != 0;
  return s && s < deadline ? s : deadline;
}

static int ms_until(uint64_t deadline, uint64_t now) {
  uint64_t ms = (deadline - now + 999999) / 1000000; /* rounded up: never a busy 0 ms poll */
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Waits until fd has `ev`: 1 ready (or in error: the caller's read/write says which),
 * 0 the deadline (or stop's) passed, -1 poll failed. The stop descriptor is watched
 * only until stop is seen: it stays readable afterwards, and stop's deadline rules. */
static int wait_fd(int fd, short ev, const struct ins_otlp_cut *cut, uint64_t deadline) {
  for (;;) {
    bool stopping;
    uint64_t d = cut_deadline(cut, deadline, &stopping), now = now_ns();
    if (now >= d) return 0;
    struct pollfd p[2] = {{.fd = fd, .events = ev}, {.fd = cut ? cut->wake_fd : -1, .events = POLLIN}};
    int np = !stopping && cut && cut->wake_fd >= 0 ? 2 : 1;
    int r = poll(p, (nfds_t)np, ms_until(d, now));
    if (r < 0 && errno != EINTR) return -1;
    if (r > 0 && p[0].revents) return 1;
  }
}

/* The deadline (or stop's) has passed. Looked at before every read and write, not
 * only when one would block: a peer that always has the next byte ready (an endless
 * answer, interim answers without end) never makes a socket call block. */
static bool past_deadline(const struct ins_otlp_cut *cut, uint64_t deadline) {
  bool stopping;
  return now_ns() >= cut_deadline(cut, deadline, &stopping);
}

/* ============================================================================
 * The plain HTTP/1.1 client
 * ========================================================================= */

/* glibc's asynchronous lookup: in libc itself since 2.34, in libanl.so.1 before.
 * Looked up at run time so that the plugin needs neither at link time: first in the
 * process's global scope (RTLD_DEFAULT: libc >= 2.34, or a program linked with
 * libanl), then in libanl.so.1, which stays loaded (RTLD_NODELETE: its helper threads
 * may outlive any request of ours). Only where neither has it (a libc other than
 * glibc) is the lookup a plain getaddrinfo, which nothing can bound: the exporter's
 * thread, and stop, then wait for the resolver's own timeouts. g_anl.source says which
 * (tests read it through ins_otlp_lookup_kind). */
typedef int (*gai_a_fn)(int, struct gaicb *[], int, struct sigevent *);
typedef int (*gai_suspend_fn)(const struct gaicb *const[], int, const struct timespec *);
typedef int (*gai_job_fn)(struct gaicb *);
static struct {
  pthread_once_t once;
  gai_a_fn start;
  gai_suspend_fn suspend;
  gai_job_fn error, cancel;
  const char *source;
} g_anl = {.once = PTHREAD_ONCE_INIT, .source = "getaddrinfo"};

/* The four functions from one handle (RTLD_DEFAULT or libanl's); false if any is missing. */
static bool anl_take(void *h) {
  void *s[4] = {dlsym(h, "getaddrinfo_a"), dlsym(h, "gai_suspend"), dlsym(h, "gai_error"),
                dlsym(h, "gai_cancel")};
  if (!s[0] || !s[1] || !s[2] || !s[3]) return false;
  /* object to function pointer: POSIX allows (as for libcurl's symbols) */
  memcpy(&g_anl.start, &s[0], sizeof s[0]);
  memcpy(&g_anl.suspend, &s[1], sizeof s[1]);
  memcpy(&g_anl.error, &s[2], sizeof s[2]);
  memcpy(&g_anl.cancel, &s[3], sizeof s[3]);
  return true;
}

static void anl_load(void) {
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer builds (tests only): getaddrinfo_a's thread is started inside glibc,
   * where TSan cannot see it, and it crashes in the interceptors; the plain, unbounded
   * lookup is used there (the bound itself is tested in the other builds). */
  return;
#endif
  const char *lib = ins_otlp_test_hooks.anl_lib;
  /* RTLD_DEFAULT is the null handle: it must not be mistaken for a failed dlopen */
  if (!lib && anl_take(RTLD_DEFAULT)) {
    g_anl.source = "getaddrinfo_a (libc)";
    return;
  }
  void *h = dlopen(lib ? lib : "libanl.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h && anl_take(h)) g_anl.source = "getaddrinfo_a (libanl.so.1)";
}

const char *ins_otlp_lookup_kind(void) {
  pthread_once(&g_anl.once, anl_load);
  return g_anl.source;
}

/* A lookup in flight. Heap-allocated and never freed while libc may still write into
 * it: a lookup that outlives its request's deadline is waited for again by the next
 * request (no second lookup piles up behind a hung resolver); one still running when
 * the connection is freed is cancelled, or, if libc cannot cancel it, left to libc
 * (a few hundred bytes, once, when the resolver hangs at exit). */
struct dns_job {
  struct gaicb cb;
  struct addrinfo hints;
  char host[256], port[8];
};

struct ins_otlp_conn {
  struct ins_otlp_url u;
  char url[sizeof(((struct ins_otlp_url *)0)->origin) + sizeof(((struct ins_otlp_url *)0)->path)];
  bool curl;
  /* plain */
  int fd;
  bool reused; /* fd has carried an answer: a failure before any answer byte may be the
                * server closing it while idle */
  struct dns_job *dns;
  struct ins_buf head;
  struct ins_otlp_resp resp;
  /* curl */
  void *easy, *multi;
};

static void why_errno(struct ins_otlp_result *res, const char *what, int err) {
  snprintf(res->why, sizeof res->why, "%s: %s", what, strerror(err));
}

static void why_timeout(struct ins_otlp_result *res, const char *what) {
  snprintf(res->why, sizeof res->why, "%s", what);
  res->timed_out = true;
}

static int resolve(struct ins_otlp_conn *c, const struct ins_otlp_cut *cut, uint64_t deadline,
                   struct addrinfo **out, struct ins_otlp_result *res) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
  int e = getaddrinfo(c->u.host, c->u.port, &hints, out); /* a literal: no lookup, no wait */
  if (e != EAI_NONAME) goto done;
  pthread_once(&g_anl.once, anl_load);
  hints.ai_flags = AI_NUMERICSERV;
  if (!g_anl.start) {
    e = getaddrinfo(c->u.host, c->u.port, &hints, out);
    goto done;
  }
  if (!c->dns) {
    struct dns_job *j = calloc(1, sizeof *j);
    if (!j) {
      snprintf(res->why, sizeof res->why, "out of memory");
      return -1;
    }
    j->hints = hints;
    snprintf(j->host, sizeof j->host, "%s", c->u.host);
    snprintf(j->port, sizeof j->port, "%s", c->u.port);
    j->cb = (struct gaicb){.ar_name = j->host, .ar_service = j->port, .ar_request = &j->hints};
    struct gaicb *list[1] = {&j->cb};
    if ((e = g_anl.start(GAI_NOWAIT, list, 1, NULL)) != 0) {
      free(j);
      goto done;
    }
    c->dns = j;
  }
  const struct gaicb *const list[1] = {&c->dns->cb};
  while ((e = g_anl.error(&c->dns->cb)) == EAI_INPROGRESS) {
    bool stopping;
    uint64_t d = cut_deadline(cut, deadline, &stopping), now = now_ns();
    if (now >= d) {
      why_timeout(res, "the name lookup did not finish within the timeout");
      return -1; /* c->dns stays: the next request waits for this lookup */
    }
    /* gai_suspend watches no descriptor: slices of 50 ms let stop cut the wait */
    uint64_t ns = d - now < 50000000ull ? d - now : 50000000ull;
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    g_anl.suspend(list, 1, &ts);
  }
  *out = e == 0 ? c->dns->cb.ar_result : NULL;
  free(c->dns);
  c->dns = NULL;
done:
  if (e == 0) return 0;
  snprintf(res->why, sizeof res->why, "cannot resolve %.80s: %s", c->u.host,
           e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
  return -1;
}

static void dns_free(struct ins_otlp_conn *c) {
  if (!c->dns) return;
  int e = g_anl.cancel(&c->dns->cb);
  if (e == EAI_NOTCANCELED) return; /* libc still writes into it: left to libc (above) */
  if (e == EAI_ALLDONE && g_anl.error(&c->dns->cb) == 0) freeaddrinfo(c->dns->cb.ar_result);
  free(c->dns);
  c->dns = NULL;
}

static void plain_close(struct ins_otlp_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->reused = false;
}

/* An idle keep-alive connection the server has closed (or written to unasked)
 * shows as readable: better found now than by a failed request. */
static bool plain_idle_ok(struct ins_otlp_conn *c) {
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  return poll(&p, 1, 0) == 0;
}

static int plain_connect(struct ins_otlp_conn *c, const struct ins_otlp_cut *cut, uint64_t deadline,
                         struct ins_otlp_result *res) {
  struct addrinfo *ai = NULL;
  if (resolve(c, cut, deadline, &ai, res) != 0) return -1;
  int fd = -1, err = 0;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    err = errno;
    if (err == EINPROGRESS) {
      int w = wait_fd(fd, POLLOUT, cut, deadline);
      socklen_t len = sizeof err;
      if (w == 0) {
        close(fd);
        fd = -1;
        why_timeout(res, "no connection within the timeout");
        break;
      }
      if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err == 0) break;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0) {
    if (!res->timed_out) why_errno(res, "cannot connect", err ? err : ECONNREFUSED);
    return -1;
  }
  /* One request at a time, each written whole: Nagle would only hold back its tail. */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->fd = fd;
  c->reused = false;
  return 0;
}

/* The fields this client writes itself (build_head, curl_headers) and the ones that
 * say how a message is framed or carried hop by hop (RFC 9110 7.6.1, RFC 9112 6-7). */
static const char *const k_reserved[] = {
    "Host", "Content-Length", "Transfer-Encoding", "Connection", "Content-Type", "Content-Encoding",
    "User-Agent", "Expect", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Connection",
};

bool ins_otlp_header_reserved(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof k_reserved / sizeof *k_reserved; i++)
    if (strlen(k_reserved[i]) == len && !strncasecmp(name, k_reserved[i], len)) return true;
  return false;
}

/* A "Name: value" line (n bytes) whose name is reserved. */
static bool line_reserved(const char *line, size_t n) {
  const char *colon = memchr(line, ':', n);
  size_t len = colon ? (size_t)(colon - line) : n;
  while (len && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
  return ins_otlp_header_reserved(line, len);
}

static int build_head(struct ins_otlp_conn *c, const struct ins_otlp_req *req) {
  const char *h = req->headers ? req->headers : "";
  size_t hl = strlen(h);
  c->head.len = 0;
  size_t fixed = strlen(c->u.path) + strlen(c->u.host_hdr) + strlen(req->content_type) + strlen(USER_AGENT);
  /* 256: the names, CRLFs, a length; 2 * hl: each extra line ends in CRLF as it is
   * copied, even one that ended in a bare LF or nothing */
  if (ins_buf_reserve(&c->head, fixed + 2 * hl + 256)) return -1;
  struct ins_buf *b = &c->head;
  ins_buf_lit(b, "POST ");
  ins_buf_mem(b, c->u.path, strlen(c->u.path));
  ins_buf_lit(b, " HTTP/1.1\r\nHost: ");
  ins_buf_mem(b, c->u.host_hdr, strlen(c->u.host_hdr));
  ins_buf_lit(b, "\r\nUser-Agent: " USER_AGENT "\r\nContent-Type: ");
  ins_buf_mem(b, req->content_type, strlen(req->content_type));
  if (req->gzip) ins_buf_lit(b, "\r\nContent-Encoding: gzip");
  ins_buf_lit(b, "\r\nContent-Length: ");
  ins_buf_u64(b, req->len);
  ins_buf_lit(b, "\r\n");
  for (const char *line = h; *line;) {
    size_t n = strcspn(line, "\r\n");
    if (n && !line_reserved(line, n)) {
      ins_buf_mem(b, line, n);
      ins_buf_lit(b, "\r\n");
    }
    line += n;
    line += strspn(line, "\r\n");
  }
  ins_buf_lit(b, "\r\n");
  return 0;
}

/* 0 sent, -1 failed (errno in *err), -2 deadline. */
static int plain_send(struct ins_otlp_conn *c, const struct ins_otlp_req *req, const struct ins_otlp_cut *cut,
                      uint64_t deadline, int *err) {
  struct iovec iov[2] = {{c->head.data, c->head.len}, {(void *)req->body, req->len}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  while (m.msg_iovlen) {
    if (past_deadline(cut, deadline)) return -2;
    ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL); /* a closed peer is an error, not SIGPIPE */
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        *err = errno;
        return -1;
      }
      int w = wait_fd(c->fd, POLLOUT, cut, deadline);
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

/* Reads the answer into c->resp. 0 complete; -1 failed (errno in *err, 0 when the
 * parser said why); -2 deadline. *got: any byte arrived. *extra: bytes after it. */
static int plain_recv(struct ins_otlp_conn *c, const struct ins_otlp_cut *cut, uint64_t deadline, int *err,
                      bool *got, bool *extra) {
  char buf[16384];
  ins_otlp_resp_init(&c->resp);
  for (;;) {
    if (past_deadline(cut, deadline)) return -2;
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      *got = true;
      size_t used = ins_otlp_resp_feed(&c->resp, buf, (size_t)n);
      if (c->resp.state == INS_RESP_DONE) {
        *extra = used < (size_t)n;
        return 0;
      }
      if (c->resp.state == INS_RESP_ERROR) {
        *err = 0;
        return -1;
      }
      continue;
    }
    if (n == 0) {
      ins_otlp_resp_eof(&c->resp);
      if (c->resp.state == INS_RESP_DONE) {
        c->resp.keep_alive = false;
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
    int w = wait_fd(c->fd, POLLIN, cut, deadline);
    if (w == 0) return -2;
    if (w < 0) {
      *err = errno;
      return -1;
    }
  }
}

static void plain_post(struct ins_otlp_conn *c, const struct ins_otlp_req *req,
                       const struct ins_otlp_cut *cut, uint64_t deadline, struct ins_otlp_result *res) {
  if (build_head(c, req) != 0) {
    snprintf(res->why, sizeof res->why, "out of memory");
    return;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c->fd >= 0 && !plain_idle_ok(c)) plain_close(c);
    bool reused = c->fd >= 0;
    if (!reused && plain_connect(c, cut, deadline, res) != 0) return;
    int err = 0, rc = plain_send(c, req, cut, deadline, &err);
    if (rc == -2) {
      plain_close(c);
      why_timeout(res, "the request could not be sent within the timeout");
      return;
    }
    /* A send that failed may have met an early answer (a 413 before the body was read,
     * then a close): read what the server said before calling it a connection error. */
    int send_err = rc == -1 ? err : 0;
    bool got = false, extra = false;
    rc = plain_recv(c, cut, deadline, &err, &got, &extra);
    if (rc == 0) {
      res->status = c->resp.status;
      copy_text(res->retry_after, sizeof res->retry_after, c->resp.retry_after, strlen(c->resp.retry_after));
      res->json = !strncasecmp(c->resp.content_type, "application/json", 16);
      res->body_len = c->resp.body_len;
      memcpy(res->body, c->resp.body, c->resp.body_len);
      /* "Connection: close", a body delimited by the close, or bytes nobody asked for:
       * the connection cannot carry the next request */
      if (!c->resp.keep_alive || extra) plain_close(c);
      else c->reused = true;
      return;
    }
    plain_close(c);
    if (rc == -2) {
      why_timeout(res, got ? "the answer did not complete within the timeout"
                           : "no answer within the timeout");
      return;
    }
    /* The server closed an idle keep-alive connection as we reused it: a fresh one, at
     * once (RFC 9112 9.3.1: a client MAY retry when no part of the answer arrived). */
    if (reused && !got && attempt == 0) continue;
    if (c->resp.error && got) snprintf(res->why, sizeof res->why, "a malformed answer: %s", c->resp.error);
    else if (send_err) why_errno(res, "the request could not be sent", send_err);
    else if (err) why_errno(res, "the connection failed", err);
    else snprintf(res->why, sizeof res->why, "%s", c->resp.error ? c->resp.error : "the connection failed");
    return;
  }
}

/* ============================================================================
 * libcurl, for https://
 * ========================================================================= */

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
  const char *lib = ins_otlp_test_hooks.curl_lib ? ins_otlp_test_hooks.curl_lib : INS_OTLP_CURL_LIB;
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
  struct ins_otlp_result *res = arg;
  size_t len = size * n, room = sizeof res->body - res->body_len;
  memcpy(res->body + res->body_len, p, len < room ? len : room);
  res->body_len += len < room ? len : room;
  return len; /* all of it taken: the rest is not needed */
}

/* One header line at a time (status lines too: a 1xx's headers are forgotten). */
static size_t curl_header_cb(char *p, size_t size, size_t n, void *arg) {
  struct ins_otlp_result *res = arg;
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
    copy_text(res->retry_after, sizeof res->retry_after, v, vl);
  if (name == 12 && !strncasecmp(p, "Content-Type", 12))
    res->json = vl >= 16 && !strncasecmp(v, "application/json", 16);
  return len;
}

static struct ins_curl_slist *curl_headers(const struct ins_otlp_req *req) {
  char line[256];
  struct ins_curl_slist *l = NULL, *t;
  snprintf(line, sizeof line, "Content-Type: %s", req->content_type);
  if (!(t = g_curl.slist_append(l, line))) goto fail;
  l = t;
  /* curl asks for "100 Continue" before a large body and waits up to a second for it:
   * an empty Expect turns that off (OTLP servers answer the request, not an Expect). */
  const char *fixed[] = {"User-Agent: " USER_AGENT, "Expect:", req->gzip ? "Content-Encoding: gzip" : NULL};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
    if (!fixed[i]) continue;
    if (!(t = g_curl.slist_append(l, fixed[i]))) goto fail;
    l = t;
  }
  for (const char *h = req->headers; h && *h;) {
    size_t n = strcspn(h, "\r\n");
    if (n && !line_reserved(h, n)) {
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

static void curl_post(struct ins_otlp_conn *c, const struct ins_otlp_req *req, const struct ins_otlp_cut *cut,
                      uint64_t deadline, struct ins_otlp_result *res) {
  struct ins_curl_slist *hdrs = curl_headers(req);
  if (!hdrs) {
    snprintf(res->why, sizeof res->why, "out of memory");
    return;
  }
  bool stopping;
  uint64_t now = now_ns(), d = cut_deadline(cut, deadline, &stopping);
  long ms = now < d ? ms_until(d, now) : 1;
  void *e = c->easy;
  g_curl.easy_setopt(e, CURLOPT_URL_, c->url);
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
  if (ins_otlp_test_hooks.ca_file) g_curl.easy_setopt(e, CURLOPT_CAINFO_, ins_otlp_test_hooks.ca_file);
  if (g_curl.multi_add_handle(c->multi, e) != 0) {
    snprintf(res->why, sizeof res->why, "libcurl refused the transfer");
    goto out;
  }
  int running = 1, result = -1;
  for (;;) {
    if (g_curl.multi_perform(c->multi, &running) != 0) break;
    int q;
    struct ins_curl_msg *m;
    while ((m = g_curl.multi_info_read(c->multi, &q)))
      if (m->msg == CURLMSG_DONE_ && m->easy == e) result = m->data.result;
    if (result >= 0 || !running) break;
    now = now_ns();
    d = cut_deadline(cut, deadline, &stopping);
    if (now >= d) {
      result = CURLE_OPERATION_TIMEDOUT_;
      break;
    }
    struct ins_curl_waitfd w = {.fd = cut ? cut->wake_fd : -1, .events = POLLIN};
    int nfds;
    g_curl.multi_wait(c->multi, &w, !stopping && w.fd >= 0 ? 1u : 0u, ms_until(d, now), &nfds);
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
  g_curl.multi_remove_handle(c->multi, e);
out:
  g_curl.easy_setopt(e, CURLOPT_HTTPHEADER_, (void *)NULL);
  g_curl.slist_free_all(hdrs);
}

/* ============================================================================
 * The connection
 * ========================================================================= */

struct ins_otlp_conn *ins_otlp_conn_new(const struct ins_otlp_url *u, bool use_curl, char *why,
                                        size_t whylen) {
  struct ins_otlp_conn *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  c->u = *u;
  c->fd = -1;
  c->curl = use_curl;
  snprintf(c->url, sizeof c->url, "%s%s", u->origin, u->path);
  if (!use_curl) return c;
  /* On the caller's thread (the sink's start, at init): curl_easy_init runs
   * curl_global_init the first time, which older libcurls do not make thread-safe. */
  if (!curl_load(why, whylen)) goto fail;
  c->easy = g_curl.easy_init();
  c->multi = c->easy ? g_curl.multi_init() : NULL;
  if (!c->multi) {
    snprintf(why, whylen, "libcurl could not make a transfer handle");
    goto fail;
  }
  return c;
fail:
  ins_otlp_conn_free(c);
  return NULL;
}

void ins_otlp_conn_post(struct ins_otlp_conn *c, const struct ins_otlp_req *req,
                        const struct ins_otlp_cut *cut, uint64_t deadline_ns, struct ins_otlp_result *res) {
  res->status = 0;
  res->timed_out = false;
  res->why[0] = res->retry_after[0] = '\0';
  res->json = false;
  res->body_len = 0;
  if (c->curl) curl_post(c, req, cut, deadline_ns, res);
  else plain_post(c, req, cut, deadline_ns, res);
}

void ins_otlp_conn_close(struct ins_otlp_conn *c) {
  if (!c->curl) plain_close(c);
  /* libcurl closes a connection it cannot reuse by itself; a transfer we cut was
   * removed unfinished, which closed it */
}

void ins_otlp_conn_free(struct ins_otlp_conn *c) {
  if (!c) return;
  plain_close(c);
  dns_free(c);
  ins_buf_free(&c->head);
  if (c->multi) g_curl.multi_cleanup(c->multi);
  if (c->easy) g_curl.easy_cleanup(c->easy);
  free(c);
}
