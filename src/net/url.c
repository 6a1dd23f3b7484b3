/* SPDX-License-Identifier: Apache-2.0 */
/*
 * url.c - endpoint URLs (see url.h): their parts (RFC 3986's generic syntax), the
 * authority and path as an HTTP client sends them (RFC 9110 7.1), IPv6 literals and
 * their zones (RFC 6874) included, and what a message shows of one. Pure: no
 * lookup, no allocation.
 */
#include "net/url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/redact.h"

#define SCHEME_MAX 16

static int fail_why(char *why, size_t n, const char *msg) {
  snprintf(why, n, "%s", msg);
  return -1;
}

/* Characters that may stand in a request-target as we send it: visible ASCII. A
 * space or a control character would end the request line early. */
static bool target_char_ok(unsigned char ch) { return ch > 0x20 && ch < 0x7f; }

static bool host_char_ok(unsigned char ch) { return isalnum(ch) || ch == '-' || ch == '.' || ch == '_'; }

/* The parts of url from its authority at offset auth on. */
static void split_from(const char *url, size_t auth, struct ins_net_url_parts *p) {
  p->auth = auth;
  p->path = auth + strcspn(url + auth, "/?#");
  p->query = p->path + strcspn(url + p->path, "?#");
  p->fragment = p->query + strcspn(url + p->query, "#");
  p->end = p->fragment + strlen(url + p->fragment);
}

void ins_net_url_split(const char *url, struct ins_net_url_parts *p) {
  memset(p, 0, sizeof *p);
  size_t n = 0;
  if (isalpha((unsigned char)url[0]))
    while (n <= SCHEME_MAX && (isalnum((unsigned char)url[n]) || strchr("+-.", url[n]) != NULL) && url[n])
      n++;
  if (n && n <= SCHEME_MAX && !strncmp(url + n, "://", 3)) {
    p->scheme = n;
    split_from(url, n + 3, p);
  } else {
    p->end = strlen(url);
  }
}

/* The authority of url (its parts pp; the scheme already known) into u: host, port, Host
 * header, origin; *port_at: where the port's ':' is as given (the path's offset when there
 * is none). */
static int parse_authority(struct ins_net_url *u, const char *url, const struct ins_net_url_parts *pp,
                           const char **port_at, char *why, size_t whylen) {
  const char *p = url + pp->auth, *aend = url + pp->path;
  size_t alen = pp->path - pp->auth;
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
  *port_at = hend;
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
  /* A zone in a link-local address is written %25 in a URL (RFC 6874), % for getaddrinfo. */
  char *z = strstr(u->host, "%25");
  if (z) memmove(z + 1, z + 3, strlen(z + 3) + 1);
  return 0;
}

/* The request-target of url (its parts pp) into u->path. */
static int parse_path(struct ins_net_url *u, const char *url, const struct ins_net_url_parts *pp, char *why,
                      size_t whylen) {
  const char *aend = url + pp->path;
  /* The path is kept as given (the sink has appended /v1/metrics where the spec says);
   * the fragment is the client's own and never sent (RFC 9110 7.1). */
  size_t plen = pp->fragment - pp->path;
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
  return 0;
}

/* The scheme of url, whose parts are p. */
static enum ins_net_scheme scheme_of(const char *url, const struct ins_net_url_parts *p) {
  if (p->scheme == 5 && !strncasecmp(url, "https", 5)) return INS_NET_HTTPS;
  if (p->scheme == 4 && !strncasecmp(url, "http", 4)) return INS_NET_HTTP;
  return INS_NET_NOT_HTTP;
}

enum ins_net_scheme ins_net_url_scheme(const char *url) {
  struct ins_net_url_parts p;
  ins_net_url_split(url, &p);
  return scheme_of(url, &p);
}

int ins_net_url_parse(struct ins_net_url *u, const char *url, char *why, size_t whylen) {
  memset(u, 0, sizeof *u);
  struct ins_net_url_parts p;
  ins_net_url_split(url, &p);
  enum ins_net_scheme scheme = scheme_of(url, &p);
  if (scheme == INS_NET_NOT_HTTP) return fail_why(why, whylen, "the scheme is neither http:// nor https://");
  u->https = scheme == INS_NET_HTTPS;
  if (memchr(url + p.auth, '@', p.end - p.auth))
    return fail_why(why, whylen, "an '@' in the URL: user:password@ is not supported (give credentials as "
                                 "headers)");
  const char *port_at;
  if (parse_authority(u, url, &p, &port_at, why, whylen) != 0) return -1;
  return parse_path(u, url, &p, why, whylen);
}

/* Appends n bytes of s to out (cap bytes, *o used); false when they did not all fit. */
static bool put(char *out, size_t cap, size_t *o, const char *s, size_t n) {
  bool all = *o + n < cap;
  if (!all) n = *o + 1 < cap ? cap - 1 - *o : 0;
  memcpy(out + *o, s, n);
  *o += n;
  out[*o] = '\0';
  return all;
}

const char *ins_net_url_shown(const char *url, const char *safe_path, char *out, size_t cap) {
  if (!cap) return "";
  size_t o = 0;
  out[0] = '\0';
  if (!url || !*url) return out;
  struct ins_net_url_parts p;
  ins_net_url_split(url, &p);
  bool all = true;
  if (!p.scheme) {
    all = put(out, cap, &o, "***", 3);
    goto done;
  }
  all = put(out, cap, &o, url, p.scheme) && put(out, cap, &o, "://", 3);
  const char *at = NULL; /* the last '@': whatever comes before it is the userinfo */
  for (const char *c = url + p.auth; *c; c++)
    if (*c == '@') at = c;
  if (at) {
    all = all && put(out, cap, &o, "***@", 4);
    split_from(url, (size_t)(at + 1 - url), &p);
  }
  struct ins_net_url u;
  memset(&u, 0, sizeof u);
  u.https = scheme_of(url, &p) == INS_NET_HTTPS;
  char why[8];
  const char *port; /* the port as given (digits, ":" alone, or none): it parsed, so it is only that */
  if (parse_authority(&u, url, &p, &port, why, sizeof why) != 0) { /* the path is withheld anyway */
    all = all && put(out, cap, &o, "***", 3); /* malformed: nothing beyond the scheme */
    goto done;
  }
  bool v6 = strchr(u.host, ':') != NULL; /* an address: shown as it is */
  bool hide = !v6 && ins_redact_looks_secret(u.host, strlen(u.host));
  const char *host = hide ? "***" : u.host;
  all = all && put(out, cap, &o, "[", v6) && put(out, cap, &o, host, strlen(host)) &&
        put(out, cap, &o, "]", v6);
  const char *aend = url + p.path;
  if (port < aend) all = all && put(out, cap, &o, port, (size_t)(aend - port));
  size_t plen = p.query - p.path;
  const char *path = url + p.path;
  if (plen == 1 || (safe_path && plen == strlen(safe_path) && !strncmp(path, safe_path, plen)))
    all = all && put(out, cap, &o, path, plen); /* "/" alone, or the caller's safe path */
  else if (plen)
    all = all && put(out, cap, &o, "/***", 4);
  if (p.query < p.fragment) all = all && put(out, cap, &o, "?***", 4);
  if (p.fragment < p.end) all = all && put(out, cap, &o, "#***", 4);
done:
  if (!all && cap > 4) memcpy(out + (o > cap - 4 ? cap - 4 : o), "...", 4); /* cut: say so */
  return out;
}
