/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_rules.c - the OTLP/HTTP spec's rules for an answer (see otlp_rules.h):
 * the verdict, the retry schedule, and reading the few fields of an answer's
 * body a message needs. No network, no clock, no logging.
 */
#include "sink/otlp/otlp_rules.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

enum ins_otlp_verdict ins_otlp_verdict_of(const struct ins_http_result *res) {
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
      ins_net_copy_text(out, cap, q, n);
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
  ins_net_copy_text(msg, msglen, "", 0);
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
      if (f == 2 && wt == 2) ins_net_copy_text(msg, msglen, (const char *)s, sl);
    }
  }
  return *rejected > 0 || (msglen && msg[0]);
}

int ins_otlp_status_message(const char *body, size_t len, bool json, char *msg, size_t msglen) {
  ins_net_copy_text(msg, msglen, "", 0);
  if (json) return json_string(body, len, "message", msg, msglen) && msglen && msg[0];
  /* google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; } */
  const unsigned char *p = (const unsigned char *)body, *end = p + len, *d = NULL;
  uint32_t f;
  int wt;
  uint64_t v;
  size_t dl = 0;
  while (pb_next(&p, end, &f, &wt, &v, &d, &dl))
    if (f == 2 && wt == 2) ins_net_copy_text(msg, msglen, (const char *)d, dl);
  return msglen && msg[0];
}
