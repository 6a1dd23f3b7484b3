/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_config.c - the OTLP sink's environment (see otlp_config.h).
 *
 * The signal-specific variable (..._METRICS_...) wins over the general one,
 * as the OTLP exporter spec says. Lists (headers, resource attributes) use the
 * W3C Baggage-like form the spec gives: comma-separated key=value pairs,
 * whitespace around them ignored, values percent-decoded; a pair that does
 * not parse is skipped with a warning that says which one (by position, never
 * by content for headers). A header the exporter writes itself (Host,
 * Content-Length, ...: ins_http_header_reserved) is dropped, with one warning
 * naming such headers, never their values.
 *
 * Each warning is a notice (core/log.h: seen whatever NCCL_DEBUG says): the exporter
 * then runs with a setting the user did not ask for. Read once per process (the sink's
 * start), so each is said once.
 *
 * Every warning that shows an endpoint shows it through ins_otlp_url_redact
 * (net/url.h's rule), any other value through core/redact.h's ins_redact_value:
 * an endpoint may carry credentials in its userinfo, path or query, and a value
 * meant for one variable may land in another.
 */
#include "sink/otlp/otlp_config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/redact.h"
#include "net/http.h"
#include "net/url.h"

#define OTLP_HTTP_PORT "4318" /* OTLP/HTTP's default port (the OTLP specification) */
#define DEFAULT_BASE "http://localhost:" OTLP_HTTP_PORT
#define METRICS_PATH INS_OTLP_METRICS_PATH
#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_INTERVAL_MS 10000
#define MAX_MS (3600LL * 1000) /* an hour: longer is a typo */

/* The signal-specific variable if set, else the general one; *name says which. */
static const char *env2(const char *specific, const char *general, const char **name) {
  const char *v = getenv(specific);
  *name = specific;
  if (v && *v) return v;
  *name = general;
  v = general ? getenv(general) : NULL;
  return v && *v ? v : NULL;
}

int ins_otlp_url_decode(const char *s, size_t n, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2])) return -1;
      char hex[3] = {s[i + 1], s[i + 2], 0};
      c = (char)strtol(hex, NULL, 16);
      i += 2;
    }
    if (o + 1 >= cap) return -1;
    out[o++] = c;
  }
  out[o] = 0;
  return 0;
}

const char *ins_otlp_url_redact(const char *url, char *out, size_t cap) {
  return ins_net_url_shown(url, INS_OTLP_METRICS_PATH, out, cap);
}

static bool is_scheme_ok(const char *url) {
  return ins_net_url_scheme(url) != INS_NET_NOT_HTTP;
}

/*
 * An endpoint whose port is empty ("http://collector:/", "http://collector:") gets OTLP's port,
 * 4318, with a warning naming the variable: RFC 3986 would read it as the scheme's default (80,
 * 443), where no collector listens unless told to, so the exporter would fail quietly at every
 * export; an empty port is a port left out, and the one the SDKs default to is 4318. Returns
 * url, or the URL with the port in fixed (cap bytes); a URL too long for fixed is returned as
 * it is, and refused as too long by the caller.
 */
static const char *empty_port(const char *name, const char *url, char *fixed, size_t cap) {
  if (!is_scheme_ok(url)) return url;
  struct ins_net_url_parts p;
  ins_net_url_split(url, &p);
  if (p.path == p.auth || url[p.path - 1] != ':' || p.end + sizeof OTLP_HTTP_PORT > cap) return url;
  snprintf(fixed, cap, "%.*s" OTLP_HTTP_PORT "%s", (int)p.path, url, url + p.path);
  char shown[INS_OTLP_URL_SHOWN], used[INS_OTLP_URL_SHOWN];
  ins_notice(NULL, NULL, "%s='%s' has an empty port; using port " OTLP_HTTP_PORT " (OTLP/HTTP's "
             "default, not the scheme's %s): '%s'", name, ins_otlp_url_redact(url, shown, sizeof shown),
             ins_net_url_scheme(url) == INS_NET_HTTPS ? "443" : "80",
             ins_otlp_url_redact(fixed, used, sizeof used));
  return fixed;
}

static void endpoint(struct ins_otlp_config *c) {
  char fixed[sizeof c->ep.url + sizeof OTLP_HTTP_PORT];
  const char *url = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  if (url && *url) {
    url = empty_port("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", url, fixed, sizeof fixed);
    if (is_scheme_ok(url) && strlen(url) < sizeof c->ep.url) {
      snprintf(c->ep.url, sizeof c->ep.url, "%s", url);
      return;
    }
    char shown[INS_OTLP_URL_SHOWN];
    ins_notice(NULL, NULL, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT='%s' is not an http:// or https:// URL "
               "(or is too long); using " DEFAULT_BASE METRICS_PATH,
               ins_otlp_url_redact(url, shown, sizeof shown));
    snprintf(c->ep.url, sizeof c->ep.url, DEFAULT_BASE METRICS_PATH);
    return;
  }
  const char *base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!base || !*base) base = DEFAULT_BASE;
  base = empty_port("OTEL_EXPORTER_OTLP_ENDPOINT", base, fixed, sizeof fixed);
  if (!is_scheme_ok(base) || strlen(base) + sizeof METRICS_PATH >= sizeof c->ep.url) {
    char shown[INS_OTLP_URL_SHOWN];
    ins_notice(NULL, NULL, "OTEL_EXPORTER_OTLP_ENDPOINT='%s' is not an http:// or https:// URL (or is "
               "too long); using " DEFAULT_BASE, ins_otlp_url_redact(base, shown, sizeof shown));
    base = DEFAULT_BASE;
  }
  /* the path is appended to the base's path, before a query ("http://h:4318?tenant=a") */
  struct ins_net_url_parts p;
  ins_net_url_split(base, &p);
  size_t n = p.query;
  const char *after = base + n;
  while (n && base[n - 1] == '/') n--; /* "http://h:4318/" + "/v1/metrics": one slash */
  snprintf(c->ep.url, sizeof c->ep.url, "%.*s" METRICS_PATH "%s", (int)n, base, after);
}

/*
 * Walks "k=v, k2=v2" calling fn for each decoded pair; `what` names the variable
 * in warnings; secret: never print a value (headers).
 */
static void pairs(const char *name, const char *list, bool secret,
                  void (*fn)(void *arg, const char *k, const char *v), void *arg) {
  /* one warning for all the bad entries, naming the first: a list of thousands must not
   * log thousands of lines */
  int pos = 0, bad = 0, first_pos = 0;
  const char *first = NULL;
  size_t first_len = 0;
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    pos++;
    const char *eq = memchr(p, '=', len);
    char key[128], val[1024];
    const char *ks = p, *ke = eq ? eq : p + len;
    while (ks < ke && isspace((unsigned char)*ks)) ks++;
    while (ke > ks && isspace((unsigned char)ke[-1])) ke--;
    const char *vs = eq ? eq + 1 : p + len, *ve = p + len;
    while (vs < ve && isspace((unsigned char)*vs)) vs++;
    while (ve > vs && isspace((unsigned char)ve[-1])) ve--;
    bool ok = eq && ke > ks && (size_t)(ke - ks) < sizeof key &&
              ins_otlp_url_decode(vs, (size_t)(ve - vs), val, sizeof val) == 0;
    if (ok) {
      memcpy(key, ks, (size_t)(ke - ks));
      key[ke - ks] = 0;
      fn(arg, key, val);
    } else if (len && !bad++) {
      first = p, first_len = len, first_pos = pos;
    }
    p += len;
    if (*p == ',') p++;
  }
  char shown[INS_REDACT_VALUE_SHOWN];
  if (bad && !secret) ins_redact_value(shown, sizeof shown, first, first_len);
  if (bad == 1 && secret)
    ins_notice(NULL, NULL, "%s: entry %d is not key=value (URL-encoded); it is skipped", name, first_pos);
  else if (bad == 1)
    ins_notice(NULL, NULL, "%s: entry %d %s is not key=value (URL-encoded); it is skipped", name,
               first_pos, shown);
  else if (bad && secret)
    ins_notice(NULL, NULL, "%s: %d entries are not key=value (URL-encoded), the first entry %d; they "
               "are skipped", name, bad, first_pos);
  else if (bad)
    ins_notice(NULL, NULL, "%s: %d entries are not key=value (URL-encoded), the first entry %d %s; "
               "they are skipped", name, bad, first_pos, shown);
}

struct hdr_acc {
  char *buf;
  size_t len;
  const char *name;
  char reserved[256]; /* the names of the reserved headers dropped, for one warning */
  size_t nres;
};

static void add_header(void *arg, const char *k, const char *v) {
  struct hdr_acc *h = arg;
  /* a header line must not be split by what it carries */
  for (const char *p = k; *p; p++)
    if (*p == ':' || *p == '\r' || *p == '\n' || isspace((unsigned char)*p)) goto bad;
  for (const char *p = v; *p; p++)
    if (*p == '\r' || *p == '\n') goto bad;
  if (ins_http_header_reserved(k, strlen(k))) { /* named in one warning at the end */
    size_t used = strlen(h->reserved);
    /* names only (a key has no secret; the value may); ", ..." when they do not all fit */
    if (used + strlen(k) + 8 < sizeof h->reserved)
      snprintf(h->reserved + used, sizeof h->reserved - used, "%s%s", used ? ", " : "", k);
    else if (!strstr(h->reserved, ", ..."))
      snprintf(h->reserved + used, sizeof h->reserved - used, ", ...");
    h->nres++;
    return;
  }
  size_t more = strlen(k) + strlen(v) + 4;
  char *nb = realloc(h->buf, h->len + more + 1);
  if (!nb) return;
  h->buf = nb;
  h->len += (size_t)snprintf(h->buf + h->len, more + 1, "%s: %s\r\n", k, v);
  return;
bad:
  ins_notice(NULL, NULL, "%s: a header name or value holds a character a header cannot carry; it is "
             "skipped", h->name);
}

/* The attributes past INS_OTLP_MAX_ATTRS are counted for one warning at the end, not
 * one each (a list of 5,000 gave 4,968 lines). */
struct attr_acc {
  struct ins_otlp_config *c;
  int skipped;
  char first[128]; /* the first skipped key */
};

static void add_attr(void *arg, const char *k, const char *v) {
  struct attr_acc *a = arg;
  struct ins_otlp_config *c = a->c;
  if (c->nattrs == INS_OTLP_MAX_ATTRS) {
    if (!a->skipped++) snprintf(a->first, sizeof a->first, "%s", k);
    return;
  }
  snprintf(c->attrs[c->nattrs].key, sizeof c->attrs[0].key, "%s", k);
  snprintf(c->attrs[c->nattrs].value, sizeof c->attrs[0].value, "%s", v);
  c->nattrs++;
}

static uint32_t env_ms(const char *specific, const char *general, long long def) {
  const char *name;
  const char *s = env2(specific, general, &name);
  long long v = def;
  if (s && ins_parse_ll(s, 1, MAX_MS, &v) != 0) {
    char shown[INS_REDACT_VALUE_SHOWN];
    ins_notice(NULL, NULL, "%s=%s is not a number of milliseconds in [1, %lld]; using %lld", name,
               ins_redact_value(shown, sizeof shown, s, strlen(s)), MAX_MS, def);
    v = def;
  }
  return (uint32_t)v;
}

void ins_otlp_config_load(struct ins_otlp_config *c) {
  memset(c, 0, sizeof *c);
  endpoint(c);
  const char *name;
  const char *s = env2("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS", &name);
  if (s) {
    struct hdr_acc h = {.name = name};
    pairs(name, s, true, add_header, &h);
    c->ep.headers = h.buf;
    if (h.nres)
      ins_notice(NULL, NULL, "%s: %s: the OTLP exporter writes these headers itself (or they frame the "
                 "request); sent twice they would corrupt it, so they are dropped (values not logged)",
                 name, h.reserved);
  }
  char shown[INS_REDACT_VALUE_SHOWN];
  s = env2("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL", &name);
  if (s && !strcmp(s, "http/json")) c->ep.json = true;
  else if (s && strcmp(s, "http/protobuf"))
    ins_notice(NULL, NULL, "%s=%s is not http/protobuf or http/json (grpc is not supported); using "
               "http/protobuf", name, ins_redact_value(shown, sizeof shown, s, strlen(s)));
  s = env2("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION", &name);
  if (s && !strcmp(s, "gzip")) c->ep.gzip = true;
  else if (s && strcmp(s, "none"))
    ins_notice(NULL, NULL, "%s=%s is not gzip or none; using none", name,
               ins_redact_value(shown, sizeof shown, s, strlen(s)));
  c->ep.timeout_ms = env_ms("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT_MS);
  c->interval_ms = env_ms("OTEL_METRIC_EXPORT_INTERVAL", NULL, DEFAULT_INTERVAL_MS);
  s = getenv("OTEL_RESOURCE_ATTRIBUTES");
  if (s && *s) {
    struct attr_acc acc = {.c = c};
    pairs("OTEL_RESOURCE_ATTRIBUTES", s, false, add_attr, &acc);
    if (acc.skipped)
      ins_notice(NULL, NULL, "OTEL_RESOURCE_ATTRIBUTES: more than %d attributes: the %d from %s on are "
                 "skipped", INS_OTLP_MAX_ATTRS, acc.skipped,
                 ins_redact_value(shown, sizeof shown, acc.first, strlen(acc.first)));
  }
  s = getenv("OTEL_SERVICE_NAME");
  /* OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES (the SDK spec) */
  const char *from_attrs = NULL;
  for (int i = 0; i < c->nattrs; i++)
    if (!strcmp(c->attrs[i].key, "service.name")) from_attrs = c->attrs[i].value;
  snprintf(c->service_name, sizeof c->service_name, "%s",
           s && *s ? s : from_attrs ? from_attrs : "nccl-inspector");
}

void ins_otlp_config_free(struct ins_otlp_config *c) {
  free(c->ep.headers);
  c->ep.headers = NULL;
}
